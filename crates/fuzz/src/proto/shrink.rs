//! Cutting a profile's field tree down to a seed: fewer planes, lines, events and the metadata they use.

use super::*;

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

pub(super) fn varint_of(fields: &[Field], num: u64) -> Option<u64> {
    fields.iter().find_map(|f| match f.val {
        Val::Varint(v) if f.num == num => Some(v),
        _ => None,
    })
}

/// Collects the stat metadata ids `stats` refer to (`metadata_id`, and `ref_value`).
pub(super) fn stat_refs(fields: &[Field], out: &mut Vec<u64>) {
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

pub(super) fn shrink_plane(plane: &[Field], s: &Shrink) -> Vec<Field> {
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
pub(super) fn size(fields: &[Field]) -> usize {
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
