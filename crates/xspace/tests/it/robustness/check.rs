//! Checking one decode: no panic, errors that say where, profiles that keep the model's invariants.

use std::panic::{catch_unwind, AssertUnwindSafe};

use xlens_model::{Profile, StatValue, StrId};
use xlens_xspace::{decode, DecodeError};

// ------------------------------------------------------------------------------------------------
// Checking one input.

/// Saves a failing input where it can be replayed, and fails the test.
fn fail(input: &[u8], what: &str, why: &str) -> ! {
    let h = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let path = format!("{}/robustness-{h:016x}.pb", env!("CARGO_TARGET_TMPDIR"));
    let saved = std::fs::write(&path, input).is_ok();
    panic!(
        "{why}: {what} ({} bytes{})",
        input.len(),
        if saved {
            format!(", saved to {path}")
        } else {
            String::new()
        }
    );
}

pub(super) fn check_error(e: &DecodeError, len: usize) -> Result<(), String> {
    let text = e.to_string();
    if e.offset > len as u64 {
        return Err(format!(
            "error offset {} past the input's {len} bytes: {text}",
            e.offset
        ));
    }
    if !text.contains("at byte") || e.message.is_empty() {
        return Err(format!("error does not say where or why: {text:?}"));
    }
    Ok(())
}

/// Walks everything a reader of the model may touch, checking the model's invariants.
fn check_profile(p: &Profile) {
    assert!(!p.planes.is_empty(), "Ok with no planes");
    let _ = p.heap_bytes();
    let _ = p.span();
    let touch_stats = |stats: xlens_model::Stats<'_>| {
        for s in stats {
            let _ = p.str(s.key);
            match s.value {
                StatValue::Str(id) | StatValue::Ref(id) => {
                    let _ = p.str(id);
                }
                StatValue::Bytes(b) => {
                    let _ = p.blob(b);
                }
                v => {
                    let _ = (v.as_i64(), v.as_f64());
                }
            }
        }
    };
    for plane in &p.planes {
        let _ = p.str(plane.name);
        touch_stats(plane.stats());
        for md in &plane.event_metadata {
            let _ = (p.str(md.name), p.str(md.display_name));
            if let Some(b) = md.metadata {
                let _ = p.blob(b);
            }
            touch_stats(md.stats());
        }
        for line in &plane.lines {
            let _ = (p.str(line.name), p.str(line.display_name));
            let ev = &line.events;
            let n = ev.len();
            assert_eq!(ev.durations().len(), n);
            assert_eq!(ev.metadata_indices().len(), n);
            assert_eq!(ev.depths().len(), n);
            assert!(
                ev.starts().windows(2).all(|w| w[0] <= w[1]),
                "starts not sorted"
            );
            assert!(ev.starts().iter().all(|&s| s >= 0), "negative start");
            for i in 0..n {
                assert!(plane.metadata_of(line, i).is_some(), "dangling metadata");
                let _ = ev.end(i);
                touch_stats(ev.stats(i));
            }
            for &(i, _) in ev.occurrences() {
                assert!((i as usize) < n, "occurrence of a missing event");
            }
            // The listed flow ends are exactly those the events' stats give (unless the
            // list is their only record).
            if let Some(listed) = ev.flows().filter(|f| !f.not_in_stats) {
                assert_eq!(
                    listed,
                    &flows_in_stats(p, ev),
                    "flow list of {:?}",
                    p.str(line.name)
                );
            }
            assert_eq!(ev.self_times().len(), n);
            let _ = ev.span();
        }
    }
}

/// The flow ends of a line's events read from their stats, as the grouping reads them: per
/// event the last `_p`/`_pt`/`_c`/`_ct` stat of each key, integers as their 64 bits, integral
/// floats through `i64`, any other value removing the key; a producer or consumer where both its
/// id and type are there.
fn flows_in_stats(p: &Profile, ev: &xlens_model::Events) -> xlens_model::Flows {
    let mut out = xlens_model::Flows::default();
    for (consumer, event, ty, id) in flows_in_stats_wide(p, ev) {
        let ty = u32::try_from(ty).expect("a listed flow type fits 32 bits");
        let end = xlens_model::FlowRef { event, ty, id };
        if consumer {
            out.consumers.push(end);
        } else {
            out.producers.push(end);
        }
    }
    out
}

/// Flow stats of a line's events as the importer lists them, types in 64 bits (a full read
/// gives up its list for a type beyond 32 bits).
fn flows_in_stats_wide(p: &Profile, ev: &xlens_model::Events) -> Vec<(bool, u32, u64, u64)> {
    let names = ["_p", "_pt", "_c", "_ct"];
    let mut out = Vec::new();
    for i in 0..ev.len() {
        let mut v: [Option<u64>; 4] = [None; 4];
        for s in ev.stats(i) {
            if let Some(k) = names.iter().position(|n| p.str(s.key) == *n) {
                v[k] = match s.value {
                    StatValue::I64(x) => Some(x as u64),
                    StatValue::U64(x) => Some(x),
                    StatValue::F64(x) if x.fract() == 0.0 => Some(x as i64 as u64),
                    _ => None,
                };
            }
        }
        for (consumer, id, ty) in [(false, v[0], v[1]), (true, v[2], v[3])] {
            if let (Some(id), Some(ty)) = (id, ty) {
                out.push((consumer, i as u32, ty, id));
            }
        }
    }
    out
}

/// A decode that keeps flow stats in the lines' flow lists only agrees with a full one: the
/// same error, or the same events and stats but for the flow stats, whose ends the lists hold
/// (those of a type beyond 32 bits counted in an import warning instead); planes whose event
/// metadata carry flow stats keep them in the stats.
pub(super) fn agrees_with_flows_only(
    full: &Result<Profile, DecodeError>,
    part: &Result<Profile, DecodeError>,
) -> Result<(), String> {
    let (full, part) = match (full, part) {
        (Err(a), Err(b)) if (a.offset, &a.message) == (b.offset, &b.message) => return Ok(()),
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            return Err(format!(
                "full read {:?}, flows-only read {:?}",
                a.as_ref().err(),
                b.as_ref().err()
            ))
        }
    };
    let is_flow = |p: &Profile, k: StrId| ["_p", "_pt", "_c", "_ct"].contains(&p.str(k));
    let stats_text = |p: &Profile, st: xlens_model::Stats<'_>, drop_flows: bool| {
        st.iter()
            .filter(|s| !(drop_flows && is_flow(p, s.key)))
            .map(|s| format!("{}={}", p.str(s.key), s.value.display(&p.strings)))
            .collect::<Vec<_>>()
    };
    if full.planes.len() != part.planes.len() {
        return Err("plane counts differ".into());
    }
    let mut wide = 0u64;
    for (a, b) in full.planes.iter().zip(&part.planes) {
        let md_flows = a
            .event_metadata
            .iter()
            .any(|m| m.stats().iter().any(|s| is_flow(full, s.key)));
        if a.lines.len() != b.lines.len() {
            return Err("line counts differ".into());
        }
        for (la, lb) in a.lines.iter().zip(&b.lines) {
            let (ea, eb) = (&la.events, &lb.events);
            if ea.starts() != eb.starts()
                || ea.durations() != eb.durations()
                || ea.metadata_indices() != eb.metadata_indices()
            {
                return Err(format!("events of line {:?} differ", full.str(la.name)));
            }
            let listed_only = eb.flows().is_some_and(|f| f.not_in_stats);
            if listed_only == md_flows {
                return Err(format!(
                    "line {:?}: flows listed only {listed_only}, metadata flows {md_flows}",
                    full.str(la.name)
                ));
            }
            for i in 0..ea.len() {
                if stats_text(full, ea.stats(i), listed_only)
                    != stats_text(part, eb.stats(i), false)
                {
                    return Err(format!(
                        "stats of event {i} of line {:?} differ",
                        full.str(la.name)
                    ));
                }
            }
            if !listed_only {
                continue;
            }
            let got = eb.flows().map_or_else(Vec::new, |f| {
                let mut v: Vec<_> = f
                    .producers
                    .iter()
                    .map(|x| (false, x.event, x.ty as u64, x.id))
                    .chain(
                        f.consumers
                            .iter()
                            .map(|x| (true, x.event, x.ty as u64, x.id)),
                    )
                    .collect();
                v.sort_unstable();
                v
            });
            let mut want = flows_in_stats_wide(full, ea);
            wide += want.iter().filter(|x| x.2 > u32::MAX as u64).count() as u64;
            want.retain(|x| x.2 <= u32::MAX as u64);
            want.sort_unstable();
            if got != want {
                return Err(format!(
                    "flow list of line {:?} differs from the full read's stats",
                    full.str(la.name)
                ));
            }
        }
    }
    let warned = part
        .import_warnings
        .iter()
        .find(|w| w.contains("type beyond 32 bits"))
        .and_then(|w| w.split(' ').next()?.parse::<u64>().ok())
        .unwrap_or(0);
    if warned != wide {
        return Err(format!(
            "{wide} flow ends of a type beyond 32 bits, {warned} in the import warning"
        ));
    }
    Ok(())
}

/// Decodes `input`; panics (with `what` and a saved copy of the input) if decoding panics, an
/// error is malformed, or an Ok profile breaks the model's invariants.
pub(super) fn check(input: &[u8], what: &dyn Fn() -> String) -> Option<Profile> {
    let res = match catch_unwind(AssertUnwindSafe(|| decode(input))) {
        Ok(r) => r,
        Err(_) => fail(input, &what(), "decode panicked"),
    };
    let flows_only = |input: &[u8]| {
        let leave = xlens_xspace::LeaveOut {
            stats: &[],
            flow_stats: true,
            lines: false,
            planes: None,
        };
        xlens_xspace::decode_leaving_out(input, &|_, _| {}, leave, xlens_xspace::Release::Lines)
    };
    match catch_unwind(AssertUnwindSafe(|| {
        let part = flows_only(input);
        if let Ok(p) = &part {
            check_profile(p);
        }
        agrees_with_flows_only(&res, &part)
    })) {
        Ok(Ok(())) => {}
        Ok(Err(why)) => fail(input, &what(), &why),
        Err(_) => fail(input, &what(), "decode with flows in lists only panicked"),
    }
    match res {
        Ok(p) => {
            if catch_unwind(AssertUnwindSafe(|| check_profile(&p))).is_err() {
                fail(input, &what(), "decoded profile is inconsistent");
            }
            Some(p)
        }
        Err(e) => {
            if let Err(why) = check_error(&e, input.len()) {
                fail(input, &what(), &why);
            }
            None
        }
    }
}
