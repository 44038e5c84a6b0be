//! Structure-aware protobuf mutation for XSpace: a field tree that knows the XSpace schema
//! (which length-delimited fields are which sub-messages), seeds cut down from real profiles,
//! mutations that keep the framing valid (values, field numbers, wire types, duplicates,
//! deletions, nesting, subtrees spliced from other inputs) and mutations that break it on purpose
//! by walking the wire format (lengths, tags, unterminated and overlong varints).

use crate::rng::Rng;

mod mutate;
mod shrink;
mod wire;
pub use mutate::*;
pub use shrink::*;
pub use wire::*;

/// The XSpace message types (`crates/proto/proto/xplane.proto`), and the map entries of
/// `XPlane.event_metadata` / `XPlane.stat_metadata`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Space,
    Plane,
    Line,
    Event,
    Stat,
    EventMeta,
    StatMeta,
    EventMetaEntry,
    StatMetaEntry,
}

/// The sub-message type of field `num` of a `ty` message, if it is one.
fn child(ty: Ty, num: u64) -> Option<Ty> {
    use Ty::*;
    Some(match (ty, num) {
        (Space, 1) => Plane,
        (Plane, 3) => Line,
        (Plane, 4) => EventMetaEntry,
        (Plane, 5) => StatMetaEntry,
        (Plane, 6) => Stat,
        (Line, 4) => Event,
        (Event, 4) => Stat,
        (EventMeta, 5) => Stat,
        (EventMetaEntry, 2) => EventMeta,
        (StatMetaEntry, 2) => StatMeta,
        _ => return None,
    })
}

/// A field's value, by wire type.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Varint(u64),
    I64(u64),
    I32(u32),
    Bytes(Vec<u8>),
    /// A length-delimited field holding a sub-message of this type.
    Msg(Ty, Vec<Field>),
    /// A wire type with no payload of its own (3 and 4, the deprecated groups) or none at all
    /// (6, 7): the tag, then these bytes as they are.
    Odd(u8, Vec<u8>),
}

/// One field of a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub num: u64,
    pub val: Val,
}

/// Nesting deeper than this is kept as bytes when parsing.
const MAX_PARSE_DEPTH: usize = 24;

/// Reads a varint at `*pos` (at most 10 bytes); `None` when it does not end in time.
pub fn read_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Appends `v` as a minimal varint.
pub fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Parses a `ty` message; `None` when the bytes are not well-formed protobuf.
pub fn parse(bytes: &[u8], ty: Ty) -> Option<Vec<Field>> {
    parse_at(bytes, ty, 0)
}

fn parse_at(b: &[u8], ty: Ty, depth: usize) -> Option<Vec<Field>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < b.len() {
        let tag = read_varint(b, &mut pos)?;
        let num = tag >> 3;
        let val = match tag & 7 {
            0 => Val::Varint(read_varint(b, &mut pos)?),
            1 => {
                let v = b.get(pos..pos + 8)?;
                pos += 8;
                Val::I64(u64::from_le_bytes(v.try_into().ok()?))
            }
            2 => {
                let len = usize::try_from(read_varint(b, &mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                let content = b.get(pos..end)?;
                pos = end;
                match child(ty, num) {
                    Some(c) if depth < MAX_PARSE_DEPTH => match parse_at(content, c, depth + 1) {
                        Some(fields) => Val::Msg(c, fields),
                        None => Val::Bytes(content.to_vec()),
                    },
                    _ => Val::Bytes(content.to_vec()),
                }
            }
            5 => {
                let v = b.get(pos..pos + 4)?;
                pos += 4;
                Val::I32(u32::from_le_bytes(v.try_into().ok()?))
            }
            _ => return None,
        };
        out.push(Field { num, val });
    }
    Some(out)
}

/// Encodes `fields` as protobuf.
pub fn encode(fields: &[Field], out: &mut Vec<u8>) {
    for f in fields {
        encode_field(f, out);
    }
}

fn tag(num: u64, wire: u8, out: &mut Vec<u8>) {
    put_varint((num << 3) | u64::from(wire & 7), out);
}

fn encode_field(f: &Field, out: &mut Vec<u8>) {
    match &f.val {
        Val::Varint(v) => {
            tag(f.num, 0, out);
            put_varint(*v, out);
        }
        Val::I64(v) => {
            tag(f.num, 1, out);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Val::I32(v) => {
            tag(f.num, 5, out);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Val::Bytes(b) => {
            tag(f.num, 2, out);
            put_varint(b.len() as u64, out);
            out.extend_from_slice(b);
        }
        Val::Msg(_, fields) => {
            let mut inner = Vec::new();
            encode(fields, &mut inner);
            tag(f.num, 2, out);
            put_varint(inner.len() as u64, out);
            out.extend_from_slice(&inner);
        }
        Val::Odd(wire, raw) => {
            tag(f.num, *wire, out);
            out.extend_from_slice(raw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Field> {
        // XSpace { planes: [XPlane { id: 1, name: "p", lines: [XLine { events: [XEvent {
        // metadata_id: 7, offset_ps: 5, stats: [XStat { metadata_id: 2, int64_value: -1 }]}]}],
        // event_metadata: {7: {id: 7, name: "e"}} }], hostnames: ["h"] }
        let stat = vec![
            Field {
                num: 1,
                val: Val::Varint(2),
            },
            Field {
                num: 4,
                val: Val::Varint(u64::MAX),
            },
        ];
        let event = vec![
            Field {
                num: 1,
                val: Val::Varint(7),
            },
            Field {
                num: 2,
                val: Val::Varint(5),
            },
            Field {
                num: 4,
                val: Val::Msg(Ty::Stat, stat),
            },
        ];
        let line = vec![Field {
            num: 4,
            val: Val::Msg(Ty::Event, event),
        }];
        let meta = vec![
            Field {
                num: 1,
                val: Val::Varint(7),
            },
            Field {
                num: 2,
                val: Val::Bytes(b"e".to_vec()),
            },
        ];
        let entry = vec![
            Field {
                num: 1,
                val: Val::Varint(7),
            },
            Field {
                num: 2,
                val: Val::Msg(Ty::EventMeta, meta),
            },
        ];
        let plane = vec![
            Field {
                num: 1,
                val: Val::Varint(1),
            },
            Field {
                num: 2,
                val: Val::Bytes(b"p".to_vec()),
            },
            Field {
                num: 3,
                val: Val::Msg(Ty::Line, line),
            },
            Field {
                num: 4,
                val: Val::Msg(Ty::EventMetaEntry, entry),
            },
        ];
        vec![
            Field {
                num: 1,
                val: Val::Msg(Ty::Plane, plane),
            },
            Field {
                num: 4,
                val: Val::Bytes(b"h".to_vec()),
            },
        ]
    }

    #[test]
    fn parse_encode_round_trip() {
        let tree = sample();
        let mut bytes = Vec::new();
        encode(&tree, &mut bytes);
        assert_eq!(parse(&bytes, Ty::Space).unwrap(), tree);
        assert!(xlens_xspace::decode(&bytes).is_ok());
    }

    #[test]
    fn shrink_keeps_referenced_metadata() {
        let s = Shrink {
            skip_planes: 0,
            planes: 1,
            lines: 1,
            events: 1,
            orphan_metadata: 0,
            max_blob: 10,
        };
        assert_eq!(shrink(&sample(), &s), sample());
        let none = Shrink { events: 0, ..s };
        let small = shrink(&sample(), &none);
        let mut bytes = Vec::new();
        encode(&small, &mut bytes);
        assert!(bytes.len() < 20, "{bytes:?}");
    }

    #[test]
    fn mutations_run() {
        let mut rng = Rng::new(5);
        let other = sample();
        for _ in 0..3000 {
            let mut t = sample();
            for _ in 0..3 {
                mutate_tree(&mut rng, &mut t, Some(&other));
            }
            let mut bytes = Vec::new();
            encode(&t, &mut bytes);
            tamper_wire(&mut rng, &mut bytes);
        }
    }
}
