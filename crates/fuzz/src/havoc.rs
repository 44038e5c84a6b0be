//! Byte-level mutations ("havoc"), for any input: bit and byte flips, interesting integers,
//! arithmetic, deleting, inserting, duplicating and overwriting ranges, splicing with another
//! corpus entry, truncation, and tokens from a target's dictionary.

use crate::rng::Rng;

/// No input grows past this (256 KiB): executions stay fast and memory stays bounded.
pub const MAX_INPUT: usize = 256 * 1024;

/// Integers that tend to sit on boundaries, as little- or big-endian bytes.
const INTERESTING: &[u64] = &[
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
    u64::MAX - 1,
];

/// An interesting integer's bytes, `width` bytes wide, in either byte order.
fn interesting_bytes(rng: &mut Rng, width: usize) -> Vec<u8> {
    let v = *rng.pick(INTERESTING);
    let le = v.to_le_bytes();
    let mut b = le[..width].to_vec();
    if rng.chance(1, 2) {
        b.reverse();
    }
    b
}

/// A random range `start..start+len` inside `len_total` bytes (empty input: `0..0`).
fn range(rng: &mut Rng, len_total: usize) -> (usize, usize) {
    if len_total == 0 {
        return (0, 0);
    }
    let len = rng.small_len(len_total);
    let start = rng.below(len_total - len + 1);
    (start, start + len)
}

/// Applies `rounds` random byte-level mutations to `data`; `other` (another corpus entry) feeds
/// splices, `dict` holds tokens of the target's format. The result is cut to [`MAX_INPUT`].
pub fn havoc(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8], dict: &[&[u8]], rounds: usize) {
    for _ in 0..rounds {
        mutate_once(rng, data, other, dict);
    }
    data.truncate(MAX_INPUT);
}

fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8], dict: &[&[u8]]) {
    let n = data.len();
    match rng.below(16) {
        // Flip one bit.
        0 if n > 0 => {
            let i = rng.below(n);
            data[i] ^= 1 << rng.below(8);
        }
        // Set a random byte.
        1 if n > 0 => {
            let i = rng.below(n);
            data[i] = rng.next_u64() as u8;
        }
        // Overwrite with an interesting integer.
        2 if n > 0 => {
            let width = *rng.pick(&[1usize, 2, 4, 8]);
            let b = interesting_bytes(rng, width);
            let i = rng.below(n);
            let end = (i + b.len()).min(n);
            data[i..end].copy_from_slice(&b[..end - i]);
        }
        // Add or subtract a small number.
        3 if n > 0 => {
            let i = rng.below(n);
            let d = rng.range(1, 35) as u8;
            data[i] = if rng.chance(1, 2) {
                data[i].wrapping_add(d)
            } else {
                data[i].wrapping_sub(d)
            };
        }
        // Delete a range.
        4 | 5 if n > 0 => {
            let (a, b) = range(rng, n);
            data.drain(a..b);
        }
        // Insert random bytes (or one byte repeated).
        6 => {
            let len = rng.small_len(64);
            let at = rng.below(n + 1);
            let bytes: Vec<u8> = if rng.chance(1, 2) {
                let b = rng.next_u64() as u8;
                vec![b; len]
            } else {
                (0..len).map(|_| rng.next_u64() as u8).collect()
            };
            data.splice(at..at, bytes);
        }
        // Duplicate a range somewhere else.
        7 if n > 0 => {
            let (a, b) = range(rng, n);
            let chunk = data[a..b].to_vec();
            let at = rng.below(n + 1);
            data.splice(at..at, chunk);
        }
        // Overwrite a range with a copy of another.
        8 if n > 1 => {
            let (a, b) = range(rng, n);
            let len = b - a;
            let at = rng.below(n - len + 1);
            data.copy_within(a..b, at);
        }
        // Splice: this input's head, the other's tail.
        9 if !other.is_empty() => {
            let cut = rng.below(n + 1);
            let from = rng.below(other.len());
            data.truncate(cut);
            data.extend_from_slice(&other[from..]);
        }
        // Insert a chunk of the other input.
        10 if !other.is_empty() => {
            let (a, b) = range(rng, other.len());
            let at = rng.below(n + 1);
            data.splice(at..at, other[a..b].iter().copied());
        }
        // Truncate.
        11 if n > 0 => {
            let cut = rng.below(n);
            data.truncate(cut);
        }
        // Insert a dictionary token.
        12 | 13 if !dict.is_empty() => {
            let tok = *rng.pick(dict);
            let at = rng.below(n + 1);
            data.splice(at..at, tok.iter().copied());
        }
        // Overwrite with a dictionary token.
        14 if !dict.is_empty() && n > 0 => {
            let tok = *rng.pick(dict);
            let at = rng.below(n);
            let end = (at + tok.len()).min(n);
            data[at..end].copy_from_slice(&tok[..end - at]);
        }
        // Replace a run of ASCII digits with another number.
        15 if n > 0 => {
            let start = rng.below(n);
            if let Some(off) = data[start..].iter().position(u8::is_ascii_digit) {
                let a = start + off;
                let b = a + data[a..].iter().take_while(|c| c.is_ascii_digit()).count();
                let num = crate::json::interesting_number(rng);
                data.splice(a..b, num.bytes());
            }
        }
        _ => {
            // The chosen mutation needs bytes there are not: add one.
            data.push(rng.next_u64() as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn havoc_stays_bounded_and_changes_things() {
        let mut rng = Rng::new(3);
        let base: Vec<u8> = (0..200u8).collect();
        let mut changed = 0;
        for _ in 0..2000 {
            let mut d = base.clone();
            havoc(&mut rng, &mut d, b"other input", &[b"tok"], 4);
            assert!(d.len() <= MAX_INPUT);
            changed += usize::from(d != base);
        }
        assert!(changed > 1900, "{changed}");
        let mut empty = Vec::new();
        for _ in 0..100 {
            havoc(&mut rng, &mut empty, b"", &[], 3);
        }
    }
}
