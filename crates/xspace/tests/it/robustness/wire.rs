//! A protobuf wire-format writer and reader, and small valid XSpaces cut out of real ones.

use super::rng::Rng;

// ------------------------------------------------------------------------------------------------
// Protobuf wire-format writer (for hand-built and random inputs).

pub(super) const VARINT: u64 = 0;
pub(super) const FIXED64: u64 = 1;
pub(super) const LEN: u64 = 2;
pub(super) const FIXED32: u64 = 5;

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A message being written, field by field.
#[derive(Clone, Default)]
pub(super) struct Pb(pub(super) Vec<u8>);

impl Pb {
    pub(super) fn new() -> Self {
        Pb(Vec::new())
    }

    pub(super) fn tag(mut self, field: u64, wire: u64) -> Self {
        put_varint(&mut self.0, (field << 3) | wire);
        self
    }

    pub(super) fn varint(self, field: u64, v: u64) -> Self {
        let mut s = self.tag(field, VARINT);
        put_varint(&mut s.0, v);
        s
    }

    pub(super) fn int(self, field: u64, v: i64) -> Self {
        self.varint(field, v as u64)
    }

    pub(super) fn bytes(self, field: u64, b: &[u8]) -> Self {
        let mut s = self.tag(field, LEN);
        put_varint(&mut s.0, b.len() as u64);
        s.0.extend_from_slice(b);
        s
    }

    pub(super) fn str(self, field: u64, v: &str) -> Self {
        self.bytes(field, v.as_bytes())
    }

    pub(super) fn msg(self, field: u64, m: Pb) -> Self {
        self.bytes(field, &m.0)
    }

    pub(super) fn fixed64(mut self, field: u64, v: u64) -> Self {
        self = self.tag(field, FIXED64);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(super) fn fixed32(mut self, field: u64, v: u32) -> Self {
        self = self.tag(field, FIXED32);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

/// `XPlane.event_metadata` map entry.
pub(super) fn event_md(id: i64, name: &str) -> Pb {
    Pb::new()
        .int(1, id)
        .msg(2, Pb::new().int(1, id).str(2, name))
}

/// `XPlane.stat_metadata` map entry.
pub(super) fn stat_md(id: i64, name: &str) -> Pb {
    Pb::new()
        .int(1, id)
        .msg(2, Pb::new().int(1, id).str(2, name))
}

pub(super) fn event(md: i64, offset_ps: i64, dur_ps: i64) -> Pb {
    Pb::new().int(1, md).int(2, offset_ps).int(3, dur_ps)
}

pub(super) fn stat_i64(key: i64, v: i64) -> Pb {
    Pb::new().int(1, key).int(4, v)
}

pub(super) fn space(planes: impl IntoIterator<Item = Pb>) -> Vec<u8> {
    planes.into_iter().fold(Pb::new(), |s, p| s.msg(1, p)).0
}

// ------------------------------------------------------------------------------------------------
// Protobuf wire-format reader (for valid real data only: it panics on anything else).

#[derive(Clone, Copy)]
pub(super) struct Field<'a> {
    pub(super) num: u64,
    /// Offsets within the parsed buffer: the tag, the payload (after the length for `LEN`), the end.
    pub(super) tag_at: usize,
    pub(super) body_at: usize,
    pub(super) end: usize,
    /// The value of a varint field.
    value: u64,
    /// The payload of a length-delimited field.
    body: &'a [u8],
    /// The whole field, tag included.
    raw: &'a [u8],
}

fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

pub(super) fn parse(buf: &[u8]) -> Vec<Field<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let tag_at = pos;
        let tag = get_varint(buf, &mut pos);
        let (num, wire) = (tag >> 3, tag & 7);
        let mut f = Field {
            num,
            tag_at,
            body_at: pos,
            end: pos,
            value: 0,
            body: &[],
            raw: &[],
        };
        match wire {
            VARINT => f.value = get_varint(buf, &mut pos),
            FIXED64 => pos += 8,
            FIXED32 => pos += 4,
            LEN => {
                let n = get_varint(buf, &mut pos) as usize;
                f.body_at = pos;
                f.body = &buf[pos..pos + n];
                pos += n;
            }
            w => panic!("wire type {w} at {tag_at} in data assumed valid"),
        }
        f.end = pos;
        f.raw = &buf[tag_at..pos];
        out.push(f);
    }
    out
}

/// The varint field `num` of a message, or 0.
fn varint_of(msg: &[u8], num: u64) -> i64 {
    parse(msg)
        .iter()
        .rev()
        .find(|f| f.num == num)
        .map_or(0, |f| f.value as i64)
}

/// A map entry's key, falling back on the value's id as the decoder does.
fn entry_id(entry: &[u8]) -> i64 {
    let fields = parse(entry);
    if let Some(k) = fields.iter().rev().find(|f| f.num == 1) {
        return k.value as i64;
    }
    fields
        .iter()
        .rev()
        .find(|f| f.num == 2)
        .map_or(0, |v| varint_of(v.body, 1))
}

/// Stat metadata ids an `XStat` refers to (its key, and its `ref_value`).
fn stat_refs(stat: &[u8], ids: &mut Vec<i64>) {
    ids.push(varint_of(stat, 1));
    for f in parse(stat).iter().filter(|f| f.num == 7) {
        ids.push(f.value as i64);
    }
}

/// A small valid XSpace cut out of a real one: every plane, with at most `max_lines` lines of at
/// most `max_events` consecutive events each, the event and stat metadata those refer to, and
/// everything else as it was. Returns the bytes and the number of events kept.
pub(super) fn shrink(
    space: &[u8],
    rng: &mut Rng,
    max_lines: usize,
    max_events: usize,
) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut n_events = 0;
    for f in parse(space) {
        if f.num != 1 {
            out.extend_from_slice(f.raw);
            continue;
        }
        let fields = parse(f.body);
        let n_lines = fields.iter().filter(|g| g.num == 3).count();
        let first_line = rng.below(n_lines.saturating_sub(max_lines) + 1);
        let mut md_ids = Vec::new();
        let mut stat_ids = Vec::new();
        let mut lines = Vec::new();
        for line in fields
            .iter()
            .filter(|g| g.num == 3)
            .skip(first_line)
            .take(max_lines)
        {
            let lf = parse(line.body);
            let n = lf.iter().filter(|g| g.num == 4).count();
            let first = rng.below(n.saturating_sub(max_events) + 1);
            let mut kept = Pb::new();
            let mut i = 0;
            for g in &lf {
                if g.num == 4 {
                    if i >= first && i < first + max_events {
                        md_ids.push(varint_of(g.body, 1));
                        for s in parse(g.body).iter().filter(|s| s.num == 4) {
                            stat_refs(s.body, &mut stat_ids);
                        }
                        kept.0.extend_from_slice(g.raw);
                        n_events += 1;
                    }
                    i += 1;
                } else {
                    kept.0.extend_from_slice(g.raw);
                }
            }
            lines.push(kept);
        }
        for g in fields.iter().filter(|g| g.num == 6) {
            stat_refs(g.body, &mut stat_ids);
        }
        let event_mds: Vec<&Field> = fields
            .iter()
            .filter(|g| g.num == 4 && md_ids.contains(&entry_id(g.body)))
            .collect();
        for g in &event_mds {
            for v in parse(g.body).iter().filter(|v| v.num == 2) {
                for s in parse(v.body).iter().filter(|s| s.num == 5) {
                    stat_refs(s.body, &mut stat_ids);
                }
            }
        }
        let mut plane = Pb::new();
        for g in &fields {
            match g.num {
                3 | 4 => {}
                5 if !stat_ids.contains(&entry_id(g.body)) => {}
                _ => plane.0.extend_from_slice(g.raw),
            }
        }
        for g in event_mds {
            plane.0.extend_from_slice(g.raw);
        }
        for l in lines {
            plane = plane.msg(3, l);
        }
        out.extend_from_slice(&Pb::new().msg(1, plane).0);
    }
    (out, n_events)
}
