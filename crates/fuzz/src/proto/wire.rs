//! Mutations that break the wire format on purpose: lengths, tags, varints.

use super::*;

/// Where a field sits in encoded bytes (found by walking the wire format).
#[derive(Debug, Clone, Copy)]
pub(super) struct Site {
    pub(super) tag_at: usize,
    pub(super) tag_len: usize,
    /// For length-delimited fields: where the length varint is, how long, and its value.
    pub(super) len_at: usize,
    pub(super) len_len: usize,
    pub(super) len: u64,
    pub(super) wire: u8,
}

/// Walks `b[start..end]` as a `ty` message as far as it is well-formed, recording every field.
pub(super) fn walk(
    b: &[u8],
    start: usize,
    end: usize,
    ty: Option<Ty>,
    depth: usize,
    out: &mut Vec<Site>,
) {
    let mut pos = start;
    while pos < end && out.len() < 100_000 {
        let tag_at = pos;
        let Some(tag) = read_varint(&b[..end], &mut pos) else {
            return;
        };
        let mut site = Site {
            tag_at,
            tag_len: pos - tag_at,
            len_at: 0,
            len_len: 0,
            len: 0,
            wire: (tag & 7) as u8,
        };
        match site.wire {
            0 => {
                if read_varint(&b[..end], &mut pos).is_none() {
                    return;
                }
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                site.len_at = pos;
                let Some(len) = read_varint(&b[..end], &mut pos) else {
                    return;
                };
                site.len_len = pos - site.len_at;
                site.len = len;
                let Some(inner_end) = usize::try_from(len).ok().and_then(|l| pos.checked_add(l))
                else {
                    return;
                };
                if inner_end > end {
                    return;
                }
                out.push(site);
                let c = ty.and_then(|t| child(t, tag >> 3));
                if c.is_some() && depth < 32 {
                    walk(b, pos, inner_end, c, depth + 1, out);
                }
                pos = inner_end;
                continue;
            }
            _ => return,
        }
        out.push(site);
    }
}

/// Breaks the framing of encoded XSpace bytes in one place: a length prefix made wrong, a tag
/// given another field number or wire type, a varint left unterminated or made overlong, or a
/// cut inside a nested message.
pub fn tamper_wire(rng: &mut Rng, bytes: &mut Vec<u8>) {
    let mut sites = Vec::new();
    walk(bytes, 0, bytes.len(), Some(Ty::Space), 0, &mut sites);
    if sites.is_empty() {
        return;
    }
    let lens: Vec<&Site> = sites.iter().filter(|s| s.wire == 2).collect();
    let s = if !lens.is_empty() && rng.chance(2, 3) {
        **rng.pick(&lens)
    } else {
        *rng.pick(&sites)
    };
    match rng.below(6) {
        // A wrong length.
        0 | 1 if s.wire == 2 => {
            let remaining = (bytes.len() - s.len_at) as u64;
            let new = match rng.below(10) {
                0 => 0,
                1 => s.len.wrapping_sub(1),
                2 => s.len + 1,
                3 => s.len + rng.small_len(64) as u64,
                4 => remaining,
                5 => 1 << 31,
                6 => 1 << 32,
                7 => 1 << 63,
                8 => u64::MAX,
                _ => rng.next_u64() >> rng.below(64),
            };
            let mut enc = Vec::new();
            put_varint(new, &mut enc);
            if rng.chance(1, 4) && enc.len() < 10 {
                // Non-minimal: padded with continuation bytes.
                let last = enc.len() - 1;
                enc[last] |= 0x80;
                while enc.len() < 9 {
                    enc.push(0x80);
                }
                enc.push(0);
            }
            bytes.splice(s.len_at..s.len_at + s.len_len, enc);
        }
        // Another field number or wire type in the tag.
        2 => {
            let old = {
                let mut p = s.tag_at;
                read_varint(bytes, &mut p).unwrap_or(0)
            };
            let new = if rng.chance(1, 2) {
                (old & !7) | rng.below(8) as u64
            } else {
                ((rng.below(40) as u64) << 3) | (old & 7)
            };
            let mut enc = Vec::new();
            put_varint(new, &mut enc);
            bytes.splice(s.tag_at..s.tag_at + s.tag_len, enc);
        }
        // An unterminated varint (continuation bit on its last byte).
        3 => {
            let last = s.tag_at + s.tag_len - 1;
            bytes[last] |= 0x80;
            if rng.chance(1, 2) {
                bytes.truncate(last + 1);
            }
        }
        // An overlong varint: eleven bytes, or ten whose value overflows 64 bits.
        4 => {
            let mut enc = vec![0xff; 9];
            enc.push(if rng.chance(1, 2) { 0x7f } else { 0xff });
            if enc[9] == 0xff {
                enc.push(0x01);
            }
            let (at, len) = if s.wire == 2 {
                (s.len_at, s.len_len)
            } else {
                (s.tag_at, s.tag_len)
            };
            bytes.splice(at..at + len, enc);
        }
        // Cut inside the field.
        _ => {
            let end = if s.wire == 2 {
                (s.len_at + s.len_len + s.len as usize).min(bytes.len())
            } else {
                (s.tag_at + s.tag_len + 1).min(bytes.len())
            };
            let cut = rng.range(s.tag_at, end);
            bytes.truncate(cut);
        }
    }
}

/// Tokens for byte-level mutation of protobuf: common tags, lengths and varints.
pub const DICT: &[&[u8]] = &[
    &[0x0a],
    &[0x12],
    &[0x1a],
    &[0x22],
    &[0x2a],
    &[0x32],
    &[0x08],
    &[0x10],
    &[0x18],
    &[0x20],
    &[0x11],
    &[0x15],
    &[0x38],
    &[0x00],
    &[0x80, 0x80, 0x80, 0x80, 0x10],
    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    &[0xff, 0xff, 0xff, 0xff, 0x0f],
    &[0x0a, 0x00],
    &[0x1a, 0x02, 0x22, 0x00],
];
