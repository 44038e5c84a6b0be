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

/// Past the ASCII digits from `i`, eight at a time (timestamps have sixteen).
#[inline]
pub(super) fn digits_end(b: &[u8], mut i: usize) -> usize {
    while let Some(w) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        let x = u64::from_le_bytes(word);
        // Every byte 0x30..=0x39: its high nibble is 3, and adding 6 leaves it below 0x40.
        let high = 0xf0f0_f0f0_f0f0_f0f0u64;
        let threes = 0x3030_3030_3030_3030u64;
        let carried = x.wrapping_add(0x0606_0606_0606_0606) & high;
        if x & high == threes && carried == threes {
            i += 8;
        } else {
            break;
        }
    }
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
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
