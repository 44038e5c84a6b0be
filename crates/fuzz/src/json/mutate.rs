//! Mutations of a document that keep it JSON: of any node, and of trace events as the importer reads them.

use super::*;

/// Applies one structure-aware edit to a trace document; `other` (another input's tree) feeds
/// splices.
pub fn mutate_tree(rng: &mut Rng, doc: &mut J, other: Option<&J>) {
    match rng.below(22) {
        // Any number: an odd one.
        0 | 1 => with_random_node(doc, rng, |n, rng| {
            if matches!(n, J::Num(_)) || rng.chance(1, 4) {
                *n = J::Num(interesting_number(rng));
            }
        }),
        // Any string: escapes, unicode, long.
        2 => with_random_node(doc, rng, |n, rng| {
            if matches!(n, J::Str(_)) || rng.chance(1, 4) {
                *n = J::Str(interesting_string(rng));
            }
        }),
        // Any node: another type.
        3 => with_random_node(doc, rng, |n, rng| *n = other_type(rng)),
        // Any node: deeply nested.
        4 => {
            let depth = *rng.pick(&[10usize, 100, 127, 128, 129, 200, 1000, 5000]);
            with_random_node(doc, rng, |n, rng| *n = deep(rng, depth));
        }
        // Top-level keys.
        5 => {
            if let J::Obj(_) = doc {
                let (k, v) = match rng.below(7) {
                    0 => (
                        "displayTimeUnit",
                        J::Str(rng.pick(&["ns", "ms", "us", "", "s"]).to_string()),
                    ),
                    1 => ("baseTimeNanoseconds", J::Num(interesting_number(rng))),
                    2 => (
                        "deviceProperties",
                        J::Arr(vec![J::Obj(vec![
                            ("id".into(), J::Num(interesting_number(rng))),
                            ("name".into(), J::Str(interesting_string(rng))),
                            ("totalGlobalMem".into(), J::Num(interesting_number(rng))),
                            ("computeMajor".into(), J::Num(interesting_number(rng))),
                            ("numSms".into(), other_type(rng)),
                        ])]),
                    ),
                    3 => (
                        "distributedInfo",
                        J::Obj(vec![
                            ("rank".into(), J::Num(interesting_number(rng))),
                            ("world_size".into(), other_type(rng)),
                            ("backend".into(), J::Str(interesting_string(rng))),
                            ("pg_config".into(), other_type(rng)),
                        ]),
                    ),
                    4 => ("traceEvents", other_type(rng)),
                    5 => ("schemaVersion", other_type(rng)),
                    _ => ("traceName", J::Str(interesting_string(rng))),
                };
                set(doc, k, v);
            } else if let Some(evs) = events_mut(doc) {
                // A bare events array: wrap it into the object form.
                let evs = std::mem::take(evs);
                *doc = J::Obj(vec![("traceEvents".into(), J::Arr(evs))]);
            }
        }
        // The object form unwrapped into a bare array.
        6 if rng.chance(1, 4) => {
            if let (J::Obj(_), Some(evs)) = (&*doc, events(doc)) {
                *doc = J::Arr(evs.clone());
            }
        }
        _ => mutate_events(rng, doc, other),
    }
}

/// Edits that work on the events.
pub(super) fn mutate_events(rng: &mut Rng, doc: &mut J, other: Option<&J>) {
    let donor = other
        .and_then(events)
        .and_then(|o| (!o.is_empty()).then(|| o[rng.below(o.len())].clone()));
    let Some(evs) = events_mut(doc) else {
        return;
    };
    let at = rng.below(evs.len() + 1);
    let Some(i) = some_event(rng, evs) else {
        evs.push(new_event(rng, "X", None));
        return;
    };
    match rng.below(18) {
        // Another phase.
        0 | 1 => set(&mut evs[i], "ph", J::Raw(rng.pick(PHASES).to_string())),
        // Drop events.
        2 => {
            let n = rng.small_len(evs.len() - i);
            evs.drain(i..i + n);
        }
        // Duplicate one (maybe many times).
        3 => {
            let copies = if rng.chance(1, 4) {
                rng.small_len(500)
            } else {
                1
            };
            let e = evs[i].clone();
            for _ in 0..copies {
                evs.insert(at.min(evs.len()), e.clone());
            }
        }
        // Unmatched B or E, or an unclosed B.
        4 => {
            let ph = *rng.pick(&["B", "E", "B", "E", "X", "i"]);
            let e = new_event(rng, ph, Some(&evs[i]));
            evs.insert(at, e);
        }
        // Negative or odd durations.
        5 => {
            let d = match rng.below(3) {
                0 => format!("-{}", rng.below(1_000_000)),
                1 => interesting_number(rng),
                _ => "-0.001".to_string(),
            };
            set(&mut evs[i], "dur", J::Num(d));
        }
        // Times: odd numbers, or a string.
        6 => {
            let v = if rng.chance(1, 4) {
                J::Str(interesting_number(rng))
            } else {
                J::Num(interesting_number(rng))
            };
            set(&mut evs[i], "ts", v);
        }
        // Ids as strings instead of numbers, or the other way round.
        7 => {
            let key = *rng.pick(&["pid", "tid", "id", "bind_id", "id2"]);
            let v = match get(&evs[i], key) {
                Some(J::Num(n)) => J::Str(n.clone()),
                Some(J::Str(s)) if s.bytes().all(|c| c.is_ascii_digit()) && !s.is_empty() => {
                    J::Num(s.clone())
                }
                _ => match rng.below(4) {
                    0 => J::Str(interesting_string(rng)),
                    1 => J::Str(format!("0x{:x}", rng.next_u64())),
                    _ => J::Num(interesting_number(rng)),
                },
            };
            set(&mut evs[i], key, v);
        }
        // Keys renamed, deleted or repeated.
        8 => {
            if let J::Obj(fields) = &mut evs[i] {
                if !fields.is_empty() {
                    let k = rng.below(fields.len());
                    match rng.below(3) {
                        0 => fields[k].0 = rng.pick(KEYS).to_string(),
                        1 => {
                            fields.remove(k);
                        }
                        _ => {
                            let (name, _) = fields[k].clone();
                            fields.push((name, other_type(rng)));
                        }
                    }
                }
            }
        }
        // Args the importer reads, with odd values.
        9 | 10 => {
            let key = rng.pick(ARG_KEYS).to_string();
            let v = match rng.below(4) {
                0 => J::Num(interesting_number(rng)),
                1 => J::Str(interesting_string(rng)),
                2 => J::Arr(vec![
                    J::Num(interesting_number(rng)),
                    J::Num(interesting_number(rng)),
                    J::Num(interesting_number(rng)),
                ]),
                _ => other_type(rng),
            };
            match &mut evs[i] {
                J::Obj(fields) => match fields.iter_mut().find(|(k, _)| k == "args") {
                    Some((_, J::Obj(args))) => args.push((key, v)),
                    Some((_, slot)) => *slot = J::Obj(vec![(key, v)]),
                    None => fields.push(("args".into(), J::Obj(vec![(key, v)]))),
                },
                other => *other = J::Obj(vec![("args".into(), J::Obj(vec![(key, v)]))]),
            }
        }
        // Category: the ones the importer gives meaning to, or junk.
        11 => set(&mut evs[i], "cat", J::Str(interesting_string(rng))),
        // Metadata events.
        12 => {
            let name = *rng.pick(&[
                "process_name",
                "thread_name",
                "process_sort_index",
                "thread_sort_index",
                "process_labels",
                "junk",
            ]);
            let mut e = new_event(rng, "M", Some(&evs[i]));
            set(&mut e, "name", J::Str(name.into()));
            let v = if rng.chance(1, 2) {
                J::Str(interesting_string(rng))
            } else {
                J::Num(interesting_number(rng))
            };
            let arg = if rng.chance(3, 4) {
                "name"
            } else {
                "sort_index"
            };
            set(&mut e, "args", J::Obj(vec![(arg.into(), v)]));
            evs.insert(at, e);
        }
        // A flow: start, step and end sharing an id, maybe with a binding point.
        13 => {
            let id = if rng.chance(1, 2) {
                J::Num(rng.below(8).to_string())
            } else {
                J::Str(format!("{}", rng.below(8)))
            };
            let cat = J::Str(
                rng.pick(&["ac2g", "fwdbwd", "async_cpu_to_gpu", "x"])
                    .to_string(),
            );
            for ph in ["s", "t", "f"] {
                if rng.chance(3, 4) {
                    let j = rng.below(evs.len());
                    let mut e = new_event(rng, ph, Some(&evs[j]));
                    set(&mut e, "id", id.clone());
                    set(&mut e, "cat", cat.clone());
                    if ph == "f" && rng.chance(1, 2) {
                        set(&mut e, "bp", J::Str("e".into()));
                    }
                    let k = rng.below(evs.len() + 1);
                    evs.insert(k, e);
                }
            }
        }
        // Async slices and counters.
        14 => {
            let ph = *rng.pick(&["b", "e", "n", "S", "F", "C"]);
            let mut e = new_event(rng, ph, Some(&evs[i]));
            set(&mut e, "id", J::Num(rng.below(4).to_string()));
            if ph == "C" {
                set(
                    &mut e,
                    "args",
                    J::Obj(vec![
                        ("value".into(), J::Num(interesting_number(rng))),
                        ("other".into(), other_type(rng)),
                    ]),
                );
            }
            evs.insert(at, e);
        }
        // An event from another trace.
        15 => {
            if let Some(d) = donor {
                evs.insert(at, d);
            }
        }
        // Move an event.
        16 => {
            let e = evs.remove(i);
            evs.insert(at.min(evs.len()), e);
        }
        // The event itself replaced by something that is not an event.
        _ => evs[i] = other_type(rng),
    }
}
