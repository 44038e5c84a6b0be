//! Where a JSON string's plain run of bytes stops, 16 bytes at a time.
//!
//! Trace strings are short (keys, kernel and operator names): a general search (`memchr2`) paid
//! its setup for each, and a byte-at-a-time look paid a branch a byte. One 16-byte compare finds
//! most of them at once.

/// The first index at or after `from` whose byte is a quote, a backslash or a control character
/// (below 0x20): where a string ends, has an escape, or is not JSON. `None` when there is none.
#[inline]
pub(super) fn string_stop(b: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    #[cfg(target_arch = "x86_64")]
    while j + 16 <= b.len() {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of every x86_64 target; the load reads `b[j..j + 16]`, inside
        // `b` (checked by the loop condition), unaligned loads being allowed.
        let hits = unsafe {
            let v = _mm_loadu_si128(b.as_ptr().add(j).cast());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // `v <= 0x1f` as unsigned bytes: the smaller of the two is `v` itself.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        };
        if hits != 0 {
            return Some(j + hits.trailing_zeros() as usize);
        }
        j += 16;
    }
    b.get(j..)?
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|k| j + k)
}

/// Past JSON white space from `i`.
#[inline]
pub(super) fn ws(b: &[u8], mut i: usize) -> usize {
    // Most runs are none or one space (`": "`, `", "`); line breaks and indents are longer.
    if !matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        return i;
    }
    i += 1;
    if !matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        return i;
    }
    ws_end(b, i)
}

/// Past the JSON white space (space, tab, line feed, carriage return) from `from`, 16 bytes at a
/// time (the line breaks and indents between members).
#[inline]
pub(super) fn ws_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    #[cfg(target_arch = "x86_64")]
    while j + 16 <= b.len() {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of every x86_64 target; the load reads `b[j..j + 16]`, inside
        // `b` (checked by the loop condition), unaligned loads being allowed.
        let ws = unsafe {
            let v = _mm_loadu_si128(b.as_ptr().add(j).cast());
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let ws = _mm_or_si128(
                _mm_or_si128(eq(b' '), eq(b'\n')),
                _mm_or_si128(eq(b'\r'), eq(b'\t')),
            );
            _mm_movemask_epi8(ws) as u32
        };
        if ws != 0xffff {
            return j + (!ws).trailing_zeros() as usize;
        }
        j += 16;
    }
    while matches!(b.get(j), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        j += 1;
    }
    j
}

/// The first index at or after `from` whose byte is not ASCII (`b.len()` when there is none), 64
/// bytes at a time: where a check of the text as UTF-8 has work to do (a trace is nearly all
/// ASCII; checking the NCCL trace's 9.8 MB took 1.96 M instructions this way against 4.28 M with
/// `std::str::from_utf8` alone, PERFORMANCE.md).
#[inline]
pub(super) fn ascii_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    #[cfg(target_arch = "x86_64")]
    while j + 64 <= b.len() {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128};
        // SAFETY: SSE2 is part of every x86_64 target; the loads read `b[j..j + 64]`, inside `b`
        // (checked by the loop condition), unaligned loads being allowed.
        let high = unsafe {
            let p = b.as_ptr().add(j);
            let v = |k: usize| _mm_loadu_si128(p.add(k).cast());
            _mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(v(0), v(16)),
                _mm_or_si128(v(32), v(48)),
            ))
        };
        if high != 0 {
            break;
        }
        j += 64;
    }
    while b.get(j).is_some_and(u8::is_ascii) {
        j += 1;
    }
    j
}

/// Past the ASCII digits from `i`, eight at a time (timestamps have sixteen).
#[inline]
pub(super) fn digits_end(b: &[u8], mut i: usize) -> usize {
    while let Some(w) = b.get(i..i + 8) {
        let not_digit = not_digits(word(w));
        if not_digit != 0 {
            return i + (not_digit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// Eight bytes as one word, the first the lowest byte (`w` is eight long).
#[inline]
pub(super) fn word(w: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(w);
    u64::from_le_bytes(bytes)
}

/// Eight ASCII zeros in a word.
pub(super) const ZEROS: u64 = 0x3030_3030_3030_3030;

/// A word with a high bit set in the first byte of `x` that is not an ASCII digit (and maybe in
/// later ones); zero when all eight are digits.
#[inline]
pub(super) fn not_digits(x: u64) -> u64 {
    // A byte is a digit (0x30..=0x39) when its high nibble is 3 and stays 3 once 6 is added.
    // Past the first byte that is not one, an addition's carry may spoil the test: only the
    // first such byte is to be used.
    let high = 0xf0f0_f0f0_f0f0_f0f0u64;
    ((x & high) ^ ZEROS) | ((x.wrapping_add(0x0606_0606_0606_0606) & high) ^ ZEROS)
}

/// The value of eight ASCII digits in a word, the first the lowest byte.
#[inline]
pub(super) fn word_value(x: u64) -> u64 {
    // Pairs, then fours, then all eight combined.
    let x = x.wrapping_sub(ZEROS);
    let x = (x.wrapping_mul(10) + (x >> 8)) & 0x00ff_00ff_00ff_00ff;
    let x = (x.wrapping_mul(100) + (x >> 16)) & 0x0000_ffff_0000_ffff;
    (x.wrapping_mul(10000) + (x >> 32)) & 0xffff_ffff
}

/// The value of `d`, ASCII digits only and at most 19 of them, eight at a time.
#[inline]
pub(super) fn digits_value(d: &[u8]) -> u64 {
    debug_assert!(d.len() <= 19 && d.iter().all(u8::is_ascii_digit));
    let head = d.len() % 8;
    let mut v = 0u64;
    for &c in &d[..head] {
        v = v * 10 + u64::from(c - b'0');
    }
    for w in d[head..].chunks_exact(8) {
        v = v
            .wrapping_mul(100_000_000)
            .wrapping_add(word_value(word(w)));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_where_a_byte_at_a_time_would() {
        let mut text: Vec<u8> = b"plain text of a name, \xc3\xa9t\xc3\xa9 and more".to_vec();
        text.extend_from_slice(&[b'x'; 40]);
        for at in 0..text.len() {
            for stop in [b'"', b'\\', b'\n', 0x00, 0x1f] {
                let mut t = text.clone();
                t[at] = stop;
                for from in 0..t.len() {
                    let want = t[from..]
                        .iter()
                        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                        .map(|k| from + k);
                    assert_eq!(string_stop(&t, from), want, "{at} {stop} {from}");
                }
            }
        }
        // 0x20 and bytes above 0x7f are not stops.
        assert_eq!(string_stop(&text, 0), None);
        assert_eq!(string_stop(b"", 0), None);
        assert_eq!(string_stop(b"ab", 5), None);
    }

    #[test]
    fn ascii_ends_where_a_byte_at_a_time_would() {
        let base: Vec<u8> = (0..200u32).map(|i| b' ' + (i % 90) as u8).collect();
        for at in (0..base.len()).chain([base.len()]) {
            for c in [0x80u8, 0xc3, 0xff] {
                let mut t = base.clone();
                if at < t.len() {
                    t[at] = c;
                }
                for from in [0, 1, 63, 64, 65, 130, t.len()] {
                    let want = from + t[from..].iter().take_while(|c| c.is_ascii()).count();
                    assert_eq!(ascii_end(&t, from), want, "{at} {c} {from}");
                }
            }
        }
    }

    #[test]
    fn ws_end_where_a_byte_at_a_time_would() {
        let base = b"  \n\t  \r\n      \t\t  \n\n    \r  x".to_vec();
        for at in 0..base.len() {
            for c in [b'x', b'"', b'\n', 0x0b, 0x0c, 0xa0, 0x00] {
                let mut t = base.clone();
                t[at] = c;
                for from in 0..=t.len() {
                    let want = from
                        + t[from..]
                            .iter()
                            .take_while(|c| matches!(c, b' ' | b'\n' | b'\r' | b'\t'))
                            .count();
                    assert_eq!(ws_end(&t, from), want, "{at} {c} {from}");
                }
            }
        }
    }

    #[test]
    fn digits_value_as_parse_reads_them() {
        let all = b"9876543210123456789";
        for from in 0..all.len() {
            for to in from..=all.len() {
                let d = &all[from..to];
                let want: u64 = String::from_utf8_lossy(d).parse().unwrap_or(0);
                assert_eq!(digits_value(d), want, "{from}..{to}");
            }
        }
        assert_eq!(
            digits_value(b"9999999999999999999"),
            9_999_999_999_999_999_999
        );
        assert_eq!(digits_value(b"00000000"), 0);
    }

    #[test]
    fn digits_end_where_a_byte_at_a_time_would() {
        let base = b"1661203462598738012345678901234567".to_vec();
        for at in 0..base.len() {
            for c in [
                b'/',
                b':',
                b'0',
                b'9',
                b'.',
                b'e',
                b'"',
                0xb0,
                0x39 + 0x80,
                b' ',
            ] {
                let mut t = base.clone();
                t[at] = c;
                for from in 0..=t.len() {
                    let want = from + t[from..].iter().take_while(|c| c.is_ascii_digit()).count();
                    assert_eq!(digits_end(&t, from), want, "{at} {c} {from}");
                }
            }
        }
    }
}
