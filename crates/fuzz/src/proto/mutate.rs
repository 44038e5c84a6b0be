//! Mutations of a field tree that keep the framing valid.

use super::*;

/// The path (index at each level) of a field drawn uniformly from the tree; empty when the tree
/// is empty.
pub(super) fn pick_path(fields: &[Field], rng: &mut Rng) -> Vec<usize> {
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
pub(super) fn pick_where(
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

pub(super) fn field_at<'a>(fields: &'a [Field], path: &[usize]) -> Option<&'a Field> {
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
pub(super) fn parent_mut<'a>(
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
pub(super) fn interesting_varint(rng: &mut Rng, tree: &[Field]) -> u64 {
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
pub(super) fn interesting_double(rng: &mut Rng) -> u64 {
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
