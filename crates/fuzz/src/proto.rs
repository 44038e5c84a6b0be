//! Structure-aware protobuf mutation for XSpace: a field tree that knows the XSpace schema
//! (which length-delimited fields are which sub-messages), seeds cut down from real profiles,
//! mutations that keep the framing valid (values, field numbers, wire types, duplicates,
//! deletions, nesting, subtrees spliced from other inputs) and mutations that break it on purpose
//! by walking the wire format (lengths, tags, unterminated and overlong varints).

use crate::rng::Rng;

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

/// How much of a real profile a derived seed keeps.
#[derive(Debug, Clone, Copy)]
pub struct Shrink {
    /// Planes skipped from the start, then planes kept.
    pub skip_planes: usize,
    pub planes: usize,
    /// Lines kept per plane, events kept per line.
    pub lines: usize,
    pub events: usize,
    /// Event metadata kept per plane that has no lines (e.g. `/host:metadata`).
    pub orphan_metadata: usize,
    /// `XEventMetadata.metadata` (serialized HLO) larger than this is dropped.
    pub max_blob: usize,
}

fn varint_of(fields: &[Field], num: u64) -> Option<u64> {
    fields.iter().find_map(|f| match f.val {
        Val::Varint(v) if f.num == num => Some(v),
        _ => None,
    })
}

/// Collects the stat metadata ids `stats` refer to (`metadata_id`, and `ref_value`).
fn stat_refs(fields: &[Field], out: &mut Vec<u64>) {
    for f in fields {
        if let Val::Msg(ty, inner) = &f.val {
            if *ty == Ty::Stat {
                out.extend(varint_of(inner, 1));
                out.extend(varint_of(inner, 7));
            } else {
                stat_refs(inner, out);
            }
        }
    }
}

/// A smaller XSpace made from `space`: a few planes, lines and events, and the metadata those
/// refer to (so the seed is still a realistic profile, only shorter).
pub fn shrink(space: &[Field], s: &Shrink) -> Vec<Field> {
    let mut out = Vec::new();
    let mut plane_no = 0;
    for f in space {
        let Val::Msg(Ty::Plane, plane) = &f.val else {
            out.push(f.clone());
            continue;
        };
        plane_no += 1;
        if plane_no <= s.skip_planes || plane_no > s.skip_planes + s.planes {
            continue;
        }
        out.push(Field {
            num: f.num,
            val: Val::Msg(Ty::Plane, shrink_plane(plane, s)),
        });
    }
    out
}

fn shrink_plane(plane: &[Field], s: &Shrink) -> Vec<Field> {
    let mut kept: Vec<Field> = Vec::new();
    let mut lines = 0;
    let mut has_lines = false;
    for f in plane {
        match &f.val {
            Val::Msg(Ty::Line, line) => {
                has_lines = true;
                lines += 1;
                if lines > s.lines {
                    continue;
                }
                let mut events = 0;
                let line: Vec<Field> = line
                    .iter()
                    .filter(|e| {
                        if matches!(e.val, Val::Msg(Ty::Event, _)) {
                            events += 1;
                            events <= s.events
                        } else {
                            true
                        }
                    })
                    .cloned()
                    .collect();
                kept.push(Field {
                    num: f.num,
                    val: Val::Msg(Ty::Line, line),
                });
            }
            Val::Msg(Ty::EventMetaEntry | Ty::StatMetaEntry, _) => {}
            _ => kept.push(f.clone()),
        }
    }
    // Event metadata the kept events use (and their children), or the first few when the
    // plane has no lines.
    let mut used: Vec<u64> = Vec::new();
    for f in &kept {
        if let Val::Msg(Ty::Line, line) = &f.val {
            for e in line {
                if let Val::Msg(Ty::Event, ev) = &e.val {
                    used.extend(varint_of(ev, 1));
                }
            }
        }
    }
    let mut orphans = 0;
    let mut metas: Vec<Field> = Vec::new();
    for f in plane {
        let Val::Msg(Ty::EventMetaEntry, entry) = &f.val else {
            continue;
        };
        let key = varint_of(entry, 1).unwrap_or(0);
        let keep = if has_lines {
            used.contains(&key)
        } else {
            orphans += 1;
            orphans <= s.orphan_metadata
        };
        if !keep {
            continue;
        }
        let entry: Vec<Field> = entry
            .iter()
            .map(|x| match &x.val {
                Val::Msg(Ty::EventMeta, m) => Field {
                    num: x.num,
                    val: Val::Msg(
                        Ty::EventMeta,
                        m.iter()
                            .filter(|y| {
                                !(y.num == 3
                                    && matches!(&y.val, Val::Bytes(b) if b.len() > s.max_blob))
                            })
                            .cloned()
                            .collect(),
                    ),
                },
                _ => x.clone(),
            })
            .collect();
        metas.push(Field {
            num: f.num,
            val: Val::Msg(Ty::EventMetaEntry, entry),
        });
    }
    let mut stats = Vec::new();
    stat_refs(&kept, &mut stats);
    stat_refs(&metas, &mut stats);
    kept.extend(metas);
    for f in plane {
        if let Val::Msg(Ty::StatMetaEntry, entry) = &f.val {
            if stats.contains(&varint_of(entry, 1).unwrap_or(u64::MAX)) {
                kept.push(f.clone());
            }
        }
    }
    kept
}

/// Number of fields in `fields` and below.
fn size(fields: &[Field]) -> usize {
    fields
        .iter()
        .map(|f| {
            1 + match &f.val {
                Val::Msg(_, inner) => size(inner),
                _ => 0,
            }
        })
        .sum()
}

/// Number of fields in the tree (for minimizing).
pub fn node_count(fields: &[Field]) -> usize {
    size(fields)
}

/// The tree without its `n`-th field (preorder), or `None` past the end.
pub fn without_nth(fields: &[Field], n: usize) -> Option<Vec<Field>> {
    fn go(fields: &mut Vec<Field>, n: &mut usize) -> bool {
        let mut i = 0;
        while i < fields.len() {
            if *n == 0 {
                fields.remove(i);
                return true;
            }
            *n -= 1;
            if let Val::Msg(_, inner) = &mut fields[i].val {
                if go(inner, n) {
                    return true;
                }
            }
            i += 1;
        }
        false
    }
    let mut out = fields.to_vec();
    let mut n = n;
    go(&mut out, &mut n).then_some(out)
}

/// The path (index at each level) of a field drawn uniformly from the tree; empty when the tree
/// is empty.
fn pick_path(fields: &[Field], rng: &mut Rng) -> Vec<usize> {
    let total = size(fields);
    let mut n = rng.below(total);
    let mut path = Vec::new();
    let mut level = fields;
    'outer: while !level.is_empty() {
        for (i, f) in level.iter().enumerate() {
            if n == 0 {
                path.push(i);
                return path;
            }
            n -= 1;
            if let Val::Msg(_, inner) = &f.val {
                let s = size(inner);
                if n < s {
                    path.push(i);
                    level = inner;
                    continue 'outer;
                }
                n -= s;
            }
        }
        break;
    }
    path
}

/// A path to a field for which `want` holds (a few draws; `None` when none was found).
fn pick_where(
    fields: &[Field],
    rng: &mut Rng,
    want: impl Fn(&Field) -> bool,
) -> Option<Vec<usize>> {
    for _ in 0..12 {
        let p = pick_path(fields, rng);
        if let Some(f) = field_at(fields, &p) {
            if want(f) {
                return Some(p);
            }
        }
    }
    None
}

fn field_at<'a>(fields: &'a [Field], path: &[usize]) -> Option<&'a Field> {
    let (&last, up) = path.split_last()?;
    let mut level = fields;
    for &i in up {
        match &level.get(i)?.val {
            Val::Msg(_, inner) => level = inner,
            _ => return None,
        }
    }
    level.get(last)
}

/// The message holding the field at `path`, and the field's index in it.
fn parent_mut<'a>(
    fields: &'a mut Vec<Field>,
    path: &[usize],
) -> Option<(&'a mut Vec<Field>, usize)> {
    let (&last, up) = path.split_last()?;
    let mut level = fields;
    for &i in up {
        match &mut level.get_mut(i)?.val {
            Val::Msg(_, inner) => level = inner,
            _ => return None,
        }
    }
    (last < level.len()).then_some((level, last))
}

/// Varints worth trying: boundaries, negative numbers as protobuf writes them, and the ids the
/// input already uses (so references can be pointed at other existing entries).
fn interesting_varint(rng: &mut Rng, tree: &[Field]) -> u64 {
    match rng.below(14) {
        0 => 0,
        1 => 1,
        2 => u64::MAX, // -1 as an int64
        3 => i64::MAX as u64,
        4 => i64::MIN as u64,
        5 => u64::MAX - rng.below(1000) as u64,
        6 => (1u64 << rng.below(64))
            .wrapping_add(rng.below(3) as u64)
            .wrapping_sub(1),
        7 => rng.below(256) as u64,
        8 => rng.next_u64(),
        9 => u64::from(u32::MAX),
        10 => 1 << 53,
        _ => {
            // An id already used somewhere in the input, maybe off by one.
            match pick_where(tree, rng, |f| matches!(f.val, Val::Varint(_))) {
                Some(p) => match field_at(tree, &p).map(|f| &f.val) {
                    Some(Val::Varint(v)) => v.wrapping_add(rng.below(3) as u64).wrapping_sub(1),
                    _ => 0,
                },
                None => 0,
            }
        }
    }
}

/// Doubles on the edges (NaN, infinities, negative zero, subnormals, extremes), as bits.
fn interesting_double(rng: &mut Rng) -> u64 {
    let v: f64 = *rng.pick(&[
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::MIN,
        1e300,
        -1.0,
        0.5,
        9.3e18,
        -9.3e18,
        1e-9,
    ]);
    v.to_bits()
}

/// Strings and bytes on the edges: empty, invalid UTF-8, NULs, unicode, long, names the tools
/// look for.
pub fn interesting_bytes(rng: &mut Rng) -> Vec<u8> {
    match rng.below(12) {
        0 => Vec::new(),
        1 => vec![0xff, 0xfe, 0x80, 0xc3],
        2 => b"\0\0\0".to_vec(),
        3 => "漢字🚀é\u{202e}".as_bytes().to_vec(),
        4 => vec![b'A'; rng.small_len(64 * 1024)],
        5 => (0..rng.small_len(256))
            .map(|_| rng.next_u64() as u8)
            .collect(),
        6 => rng
            .pick(&[
                "/host:CPU",
                "/device:GPU:0",
                "/device:TPU:0",
                "/host:metadata",
                "XLA Ops",
                "XLA Modules",
                "Steps",
                "TensorFlow Ops",
                "Framework Ops",
                "Stream #1(MemcpyH2D)",
                "python3",
                "jit_f(123)",
                "$core.py:1 f",
                "ProfilerStep#1",
                "step_num",
                "hlo_op",
                "hlo_module",
                "program_id",
                "flops",
                "bytes_accessed",
                "correlation_id",
                "kernel_details",
                "memory_size",
                "_r",
                "_p",
                "_c",
                "tf_op",
                "long_name",
                "group_id",
                "device_type_string",
                "peak_teraflops_per_second",
                "peak_hbm_bw_gigabytes_per_second",
            ])
            .as_bytes()
            .to_vec(),
        7 => b"%s%n%x{}\\\"".to_vec(),
        8 => vec![0x0a, 0x05, 0x12, 0x03, 0x61, 0x62],
        9 => "a".repeat(rng.small_len(5000)).into_bytes(),
        10 => b"regs:32 static_shared:0 dynamic_shared:4096 grid:1,1,1 block:256,1,1 occ_pct:50"
            .to_vec(),
        _ => rng.next_u64().to_string().into_bytes(),
    }
}

/// Applies one framing-preserving mutation to `tree`; `other` (another input's tree) feeds
/// splices.
pub fn mutate_tree(rng: &mut Rng, tree: &mut Vec<Field>, other: Option<&[Field]>) {
    if tree.is_empty() {
        tree.push(Field {
            num: 1,
            val: Val::Msg(Ty::Plane, Vec::new()),
        });
        return;
    }
    let snapshot_for_ids = if rng.chance(1, 4) {
        Some(tree.clone())
    } else {
        None
    };
    let path = pick_path(tree, rng);
    match rng.below(16) {
        // A new value of the same wire type.
        0..=3 => {
            let id_src: &[Field] = snapshot_for_ids.as_deref().unwrap_or(&[]);
            let new_varint = interesting_varint(rng, id_src);
            let Some((parent, i)) = parent_mut(tree, &path) else {
                return;
            };
            let f = &mut parent[i];
            match &mut f.val {
                Val::Varint(v) => *v = new_varint,
                Val::I64(v) => {
                    *v = if rng.chance(1, 2) {
                        interesting_double(rng)
                    } else {
                        new_varint
                    }
                }
                Val::I32(v) => *v = (interesting_double(rng) >> 32) as u32,
                Val::Bytes(b) => {
                    if rng.chance(1, 3) {
                        crate::havoc::havoc(rng, b, &[], &[], 2);
                    } else {
                        *b = interesting_bytes(rng);
                    }
                }
                Val::Msg(_, inner) => {
                    if rng.chance(1, 2) {
                        inner.clear();
                    } else {
                        let mut raw = Vec::new();
                        encode(inner, &mut raw);
                        crate::havoc::havoc(rng, &mut raw, &[], &[], 1);
                        f.val = Val::Bytes(raw);
                    }
                }
                Val::Odd(_, raw) => raw.push(rng.next_u64() as u8),
            }
        }
        // Delete the field.
        4 => {
            if let Some((parent, i)) = parent_mut(tree, &path) {
                parent.remove(i);
            }
        }
        // Duplicate it, once or many times.
        5 | 6 => {
            if let Some((parent, i)) = parent_mut(tree, &path) {
                let copies = if rng.chance(1, 4) {
                    rng.small_len(256)
                } else {
                    1
                };
                let f = parent[i].clone();
                let at = rng.below(parent.len() + 1);
                for _ in 0..copies {
                    parent.insert(at, f.clone());
                }
            }
        }
        // Reorder.
        7 => {
            if let Some((parent, i)) = parent_mut(tree, &path) {
                if rng.chance(1, 3) {
                    parent.reverse();
                } else {
                    let j = rng.below(parent.len());
                    parent.swap(i, j);
                }
            }
        }
        // Another field number.
        8 => {
            let num = match rng.below(5) {
                0 => 0,
                1 => (1 << 29) - 1,
                2 => 1 << 29,
                3 => rng.next_u64() >> 3,
                _ => rng.range(1, 12) as u64,
            };
            if let Some((parent, i)) = parent_mut(tree, &path) {
                parent[i].num = num;
            }
        }
        // Another wire type.
        9 => {
            let val = match rng.below(7) {
                0 => Val::Varint(interesting_varint(rng, &[])),
                1 => Val::I64(interesting_double(rng)),
                2 => Val::I32(rng.next_u64() as u32),
                3 => Val::Bytes(interesting_bytes(rng)),
                4 => Val::Odd(3, Vec::new()),
                5 => Val::Odd(4, Vec::new()),
                _ => Val::Odd(if rng.chance(1, 2) { 6 } else { 7 }, vec![0; rng.below(4)]),
            };
            if let Some((parent, i)) = parent_mut(tree, &path) {
                parent[i].val = val;
            }
        }
        // Nest the field inside copies of itself.
        10 => {
            if let Some((parent, i)) = parent_mut(tree, &path) {
                let depth = rng.small_len(64);
                let mut f = parent[i].clone();
                let ty = match &f.val {
                    Val::Msg(t, _) => *t,
                    _ => Ty::Space,
                };
                for _ in 0..depth {
                    f = Field {
                        num: f.num,
                        val: Val::Msg(ty, vec![f]),
                    };
                }
                parent[i] = f;
            }
        }
        // A subtree of another input in place of one of the same type, or added next to it.
        11..=13 => {
            let Some(other) = other else { return };
            let Some(op) = pick_where(other, rng, |f| matches!(f.val, Val::Msg(..))) else {
                return;
            };
            let Some(donor) = field_at(other, &op).cloned() else {
                return;
            };
            let Val::Msg(donor_ty, _) = donor.val else {
                return;
            };
            let same = pick_where(
                tree,
                rng,
                |f| matches!(f.val, Val::Msg(t, _) if t == donor_ty),
            );
            if let Some((parent, i)) = same.as_deref().and_then(|p| parent_mut(tree, p)) {
                if rng.chance(1, 2) {
                    parent[i] = donor;
                } else {
                    parent.insert(i, donor);
                }
            } else if let Some((parent, i)) = parent_mut(tree, &path) {
                parent.insert(i, donor);
            }
        }
        // A field added where there was none.
        _ => {
            let num = rng.range(1, 12) as u64;
            let val = match rng.below(3) {
                0 => Val::Varint(interesting_varint(rng, &[])),
                1 => Val::Bytes(interesting_bytes(rng)),
                _ => Val::I64(interesting_double(rng)),
            };
            if let Some((parent, i)) = parent_mut(tree, &path) {
                parent.insert(i, Field { num, val });
            }
        }
    }
}

/// Where a field sits in encoded bytes (found by walking the wire format).
#[derive(Debug, Clone, Copy)]
struct Site {
    tag_at: usize,
    tag_len: usize,
    /// For length-delimited fields: where the length varint is, how long, and its value.
    len_at: usize,
    len_len: usize,
    len: u64,
    wire: u8,
}

/// Walks `b[start..end]` as a `ty` message as far as it is well-formed, recording every field.
fn walk(b: &[u8], start: usize, end: usize, ty: Option<Ty>, depth: usize, out: &mut Vec<Site>) {
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
