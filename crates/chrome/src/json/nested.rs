//! Finding where a nested JSON value ends, 64 bytes at a time: the skim of a left-out event
//! passes its `args` this way. Only strings and brackets matter (what the byte-at-a-time skim
//! looked at): a block's quotes, brackets and backslashes become bit masks, the bytes inside
//! strings a prefix XOR of the quotes, and only the brackets outside strings are visited one by
//! one. Blocks with a backslash (rare: escapes) are walked a byte at a time, as before.
//!
//! Why: the byte-at-a-time skim was a third of the single-threaded import of a PyTorch trace
//! whose operator events, left out for the first answer, are half its bytes.

/// The deepest nesting a skim follows, the event object itself counted (deeper: `None`, and the
/// event is read in full, where serde_json says what is wrong).
pub(super) const MAX_DEPTH: u32 = 64;

/// Just past the bracket that closes the `{` or `[` at `b[at]`, which opens at nesting depth
/// `outer + 1`. `None` when the text ends first, a bracket closes one of the other kind, or the
/// nesting would pass [`MAX_DEPTH`]. Strings run from a quote to the next quote not escaped by a
/// backslash; nothing else is checked.
pub(super) fn value_end(b: &[u8], at: usize, outer: u32) -> Option<usize> {
    let mut s = State::new(outer);
    let mut at = at;
    while at < b.len() {
        let chunk = &b[at..b.len().min(at + 64)];
        let found = if chunk.len() == 64 && !s.escape {
            let m = Masks::of(chunk);
            if m.backslash == 0 {
                s.block(&m)
            } else {
                s.bytes(chunk)
            }
        } else {
            s.bytes(chunk)
        };
        match found {
            Step::Closed(k) => return Some(at + k + 1),
            Step::Bad => return None,
            Step::Open => at += chunk.len(),
        }
    }
    None
}

struct State {
    /// One bit per open bracket, 1 for `{`; the lowest is the innermost.
    stack: u64,
    depth: u32,
    outer: u32,
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escape: bool,
}

enum Step {
    /// The value closed at this index of the block.
    Closed(usize),
    /// A bracket closed one of the other kind, or the nesting got too deep.
    Bad,
    /// Still open at the block's end.
    Open,
}

impl State {
    fn new(outer: u32) -> State {
        State {
            stack: 0,
            depth: 0,
            outer,
            in_string: false,
            escape: false,
        }
    }

    /// A bracket outside strings; `Some` when it decides the walk.
    #[inline]
    fn bracket(&mut self, c: u8, k: usize) -> Option<Step> {
        let curly = c & 0x20 != 0; // `{` 0x7b, `}` 0x7d; `[` 0x5b, `]` 0x5d
        if c & 0x02 != 0 {
            // `{` or `[` (0x7b, 0x5b; `}` and `]` are 0x7d, 0x5d)
            if self.outer + self.depth >= MAX_DEPTH {
                return Some(Step::Bad);
            }
            self.stack = (self.stack << 1) | u64::from(curly);
            self.depth += 1;
            None
        } else {
            if self.depth == 0 || (self.stack & 1 == 1) != curly {
                return Some(Step::Bad);
            }
            self.stack >>= 1;
            self.depth -= 1;
            (self.depth == 0).then_some(Step::Closed(k))
        }
    }

    /// A block of 64 bytes without backslashes, no escape pending.
    #[inline]
    fn block(&mut self, m: &Masks) -> Step {
        let carry = if self.in_string { u64::MAX } else { 0 };
        let inside = prefix_xor(m.quote) ^ carry;
        self.in_string = inside >> 63 == 1;
        let mut brackets = m.bracket & !inside;
        while brackets != 0 {
            let k = brackets.trailing_zeros() as usize;
            brackets &= brackets - 1;
            if let Some(step) = self.bracket(m.bytes[k], k) {
                return step;
            }
        }
        Step::Open
    }

    /// Any block, a byte at a time.
    fn bytes(&mut self, chunk: &[u8]) -> Step {
        for (k, &c) in chunk.iter().enumerate() {
            if self.escape {
                self.escape = false;
            } else if self.in_string {
                match c {
                    b'\\' => self.escape = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
            } else {
                match c {
                    b'"' => self.in_string = true,
                    b'{' | b'[' | b'}' | b']' => {
                        if let Some(step) = self.bracket(c, k) {
                            return step;
                        }
                    }
                    _ => {}
                }
            }
        }
        Step::Open
    }
}

/// Bit `k` set where byte `k` or any before it in the word is set an odd number of times: which
/// bytes follow an odd number of quotes.
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Where a block's quotes, backslashes and brackets are, one bit per byte.
struct Masks<'b> {
    bytes: &'b [u8],
    quote: u64,
    backslash: u64,
    bracket: u64,
}

impl<'b> Masks<'b> {
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn of(bytes: &'b [u8]) -> Self {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        assert!(bytes.len() >= 64);
        let (mut quote, mut backslash, mut bracket) = (0u64, 0u64, 0u64);
        // SAFETY: SSE2 is part of every x86_64 target; each load reads 16 bytes inside `bytes`
        // (64 or more long, checked above), unaligned loads being allowed.
        unsafe {
            let q = _mm_set1_epi8(b'"' as i8);
            let bs = _mm_set1_epi8(b'\\' as i8);
            // `{`/`[` and `}`/`]` differ only in bit 0x20: set it and compare with `{` and `}`.
            let lower = _mm_set1_epi8(0x20);
            let open = _mm_set1_epi8(b'{' as i8);
            let close = _mm_set1_epi8(b'}' as i8);
            for part in 0..4 {
                let v = _mm_loadu_si128(bytes.as_ptr().add(part * 16).cast());
                let shift = part * 16;
                let bits = |x| u64::from(_mm_movemask_epi8(x) as u16) << shift;
                quote |= bits(_mm_cmpeq_epi8(v, q));
                backslash |= bits(_mm_cmpeq_epi8(v, bs));
                let l = _mm_or_si128(v, lower);
                bracket |= bits(_mm_or_si128(
                    _mm_cmpeq_epi8(l, open),
                    _mm_cmpeq_epi8(l, close),
                ));
            }
        }
        Masks {
            bytes,
            quote,
            backslash,
            bracket,
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    fn of(bytes: &'b [u8]) -> Self {
        let (mut quote, mut backslash, mut bracket) = (0u64, 0u64, 0u64);
        for (k, &c) in bytes.iter().take(64).enumerate() {
            quote |= u64::from(c == b'"') << k;
            backslash |= u64::from(c == b'\\') << k;
            bracket |= u64::from(matches!(c | 0x20, b'{' | b'}')) << k;
        }
        Masks {
            bytes,
            quote,
            backslash,
            bracket,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-at-a-time walk, as the skim did it before: the reference.
    fn reference(b: &[u8], at: usize, outer: u32) -> Option<usize> {
        let mut s = State::new(outer);
        match s.bytes(&b[at..]) {
            Step::Closed(k) => Some(at + k + 1),
            _ => None,
        }
    }

    #[test]
    fn ends_of_values_by_hand() {
        let cases: &[(&str, Option<usize>)] = &[
            ("{}", Some(2)),
            ("[]", Some(2)),
            ("[[], [], {\"a\": [1]}] tail", Some(20)),
            ("{\"a\": \"}\"}", Some(10)),
            ("{\"a\": \"\\\"}\"}", Some(12)),
            ("{\"a\": \"\\\\\"}", Some(11)),
            ("[}", None),
            ("{]", None),
            ("{\"a\": [1, 2}", None),
            ("{\"a\": \"}", None),
            ("[[[", None),
        ];
        for (text, end) in cases {
            assert_eq!(value_end(text.as_bytes(), 0, 1), *end, "{text}");
        }
    }

    #[test]
    fn nesting_stops_at_the_limit() {
        let ok = format!("{}{}", "[".repeat(63), "]".repeat(63));
        assert_eq!(value_end(ok.as_bytes(), 0, 1), Some(126));
        let deep = format!("{}{}", "[".repeat(64), "]".repeat(64));
        assert_eq!(value_end(deep.as_bytes(), 0, 1), None);
    }

    /// Values longer than a block, with strings, escapes and brackets falling on every offset
    /// and across block edges: the same end as the byte-at-a-time walk, whatever the cut.
    #[test]
    fn blocks_agree_with_the_byte_walk() {
        let pieces = [
            "\"Input Dims\": [[], [1, 2], [], []], ",
            "\"s\": \"a [ string { with ] brackets }\", ",
            "\"e\": \"esc \\\" quote \\\\\", ",
            "\"n\": {\"x\": [{\"y\": null}]}, ",
            "\"u\": \"\u{e9}t\u{e9} \u{1f600}\", ",
        ];
        for lead in 0..70 {
            for order in 0..pieces.len() {
                let mut t = String::from("{");
                t.push_str(&" ".repeat(lead));
                for k in 0..12 {
                    t.push_str(pieces[(order + k) % pieces.len()]);
                }
                t.push_str("\"z\": 0} ,[");
                let b = t.as_bytes();
                let want = reference(b, 0, 1);
                assert!(want.is_some());
                assert_eq!(value_end(b, 0, 1), want, "lead {lead} order {order}");
                // Every cut and every one-byte change into a bracket, quote or backslash.
                for cut in (1..b.len()).step_by(7) {
                    assert_eq!(value_end(&b[..cut], 0, 1), reference(&b[..cut], 0, 1));
                    for c in [b'"', b'\\', b'{', b']', b'x'] {
                        let mut m = b.to_vec();
                        m[cut] = c;
                        assert_eq!(value_end(&m, 0, 1), reference(&m, 0, 1), "{cut} {c}");
                    }
                }
            }
        }
    }
}
