//! The decoder's other paths (parallel lines, lines given back in steps) agree with a plain decode.

use xlens_model::{Profile, StatValue};
use xlens_xspace::{decode, decode_with, decode_with_threads};

use super::rng::{mutate, Rng};
use super::wire::{event, event_md, shrink, space, stat_i64, stat_md, Pb};
use super::{fixtures, key};

/// Everything a decoded profile holds, with strings resolved (so it compares across string
/// tables built in a different order).
fn canonical(p: &Profile) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let val = |v: StatValue| match v {
        StatValue::Str(s) | StatValue::Ref(s) => format!("{:?}", p.str(s)),
        StatValue::Bytes(b) => format!("bytes {:?}", p.blob(b)),
        other => format!("{other:?}"),
    };
    let stats = |st: xlens_model::Stats<'_>| {
        st.iter()
            .map(|s| format!("{}={}", p.str(s.key), val(s.value)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let _ = writeln!(
        out,
        "origin {} {} errors {:?} warnings {:?} hosts {:?} import {:?}",
        p.origin_ps, p.origin_is_wall_clock, p.errors, p.warnings, p.hostnames, p.import_warnings
    );
    for pl in &p.planes {
        let _ = writeln!(
            out,
            "plane {} {:?} [{}]",
            pl.id,
            p.str(pl.name),
            stats(pl.stats())
        );
        for m in &pl.event_metadata {
            let _ = writeln!(
                out,
                " md {} {:?} {:?} {:?} {:?} [{}]",
                m.id,
                p.str(m.name),
                p.str(m.display_name),
                m.metadata.map(|b| p.blob(b).len()),
                m.child_ids,
                stats(m.stats())
            );
        }
        for l in &pl.lines {
            let ev = &l.events;
            let _ = writeln!(
                out,
                " line {} {} {:?} {:?} {} {} occ {:?}",
                l.id,
                l.display_id,
                p.str(l.name),
                p.str(l.display_name),
                l.timestamp_ns,
                l.duration_ps,
                ev.occurrences()
            );
            for i in 0..ev.len() {
                let _ = writeln!(
                    out,
                    "  {} {} {} {} [{}]",
                    ev.start(i),
                    ev.dur(i),
                    ev.meta(i),
                    ev.depth(i),
                    stats(ev.stats(i))
                );
            }
        }
    }
    out
}

/// Decodes on one thread and on two (every plane split by line); both must give the same profile
/// or the same error.
fn same_both_ways(bytes: &[u8], what: &str) -> bool {
    let seq = decode_with_threads(bytes, &|_, _| {}, 1, usize::MAX);
    let par = decode_with_threads(bytes, &|_, _| {}, 2, 0);
    match (&seq, &par) {
        (Ok(a), Ok(b)) => assert_eq!(canonical(a), canonical(b), "{what}"),
        (Err(a), Err(b)) => assert_eq!(a, b, "{what}"),
        _ => panic!(
            "{what}: sequential {:?}, parallel {:?}",
            seq.is_ok(),
            par.is_ok()
        ),
    }
    seq.is_ok()
}

#[test]
fn parallel_line_decoding_gives_the_sequential_result() {
    let mut ok = 0;
    let mut err = 0;
    for (fi, (name, bytes)) in fixtures().iter().enumerate() {
        assert!(same_both_ways(bytes, name), "{name} decodes");
        let mut rng = Rng::new(0x9a4a_11e1 + fi as u64);
        for s in 0..3 {
            let (sample, _) = shrink(bytes, &mut rng, 4, 40);
            for k in 0..40 {
                let (m, d) = mutate(&mut rng, &sample);
                if same_both_ways(&m, &format!("{name} sample {s} mutation {k}: {d}")) {
                    ok += 1;
                } else {
                    err += 1;
                }
            }
        }
    }
    // Both outcomes must occur (errors in some line, and line-level changes that still decode).
    assert!(ok > 20 && err > 20, "{ok} decoded, {err} rejected");
}

#[test]
fn consumed_ranges_lie_in_the_file_and_never_overlap() {
    for (name, bytes) in fixtures() {
        let seen = std::sync::Mutex::new(Vec::new());
        decode_with(bytes, &|a, b| seen.lock().unwrap().push((a, b))).unwrap();
        let mut seen = seen.into_inner().unwrap();
        assert!(!seen.is_empty(), "{name}");
        seen.sort_unstable();
        assert!(
            seen.iter().all(|&(a, b)| a <= b && b <= bytes.len()),
            "{name}: {seen:?}"
        );
        // Lines are released inside their plane, planes after their lines: ranges nest or are
        // disjoint, never partly overlap.
        for (i, &(a, b)) in seen.iter().enumerate() {
            for &(c, d) in &seen[i + 1..] {
                assert!(d <= b || c >= b, "{name}: {a}..{b} and {c}..{d}");
            }
        }
    }
}

#[test]
fn large_lines_whose_events_change_size_decode_whole() {
    // Lines above the decoder's sampling size, whose first part has events of another size
    // than the rest: the columns reserved from the sample are too large or too small, and
    // every event must still come out, with its stats.
    for small_first in [true, false] {
        let mut line = Pb::new().str(2, "line");
        let n = 40_000;
        for i in 0..n {
            let big = (i < n / 2) != small_first;
            let mut e = event(1, i as i64 * 10, 5).msg(4, stat_i64(1, i as i64));
            if big {
                e = e.msg(4, Pb::new().int(1, 2).str(5, &"x".repeat(40 + i % 7)));
            }
            line = line.msg(4, e);
        }
        assert!(line.len() > 1 << 20);
        let plane = Pb::new()
            .str(2, "/host:CPU")
            .msg(4, event_md(1, "op"))
            .msg(5, stat_md(1, "i"))
            .msg(5, stat_md(2, "s"))
            .msg(3, line);
        for threads in [1, 2] {
            let p = decode_with_threads(&space([plane.clone()]), &|_, _| {}, threads, 0).unwrap();
            let ev = &p.planes[0].lines[0].events;
            assert_eq!(ev.len(), n, "small first: {small_first}");
            let ki = key(&p, "i");
            for i in [0, 1, n / 2 - 1, n / 2, n - 1] {
                assert_eq!(ev.start(i), i as i64 * 10);
                assert_eq!(ev.stats(i).get(ki), Some(StatValue::I64(i as i64)));
            }
        }
    }
}

#[test]
fn a_line_is_given_back_in_steps_as_it_is_read_when_asked() {
    // One plane with a 10 MB line (500,000 events with a stat each) and a small one.
    let mut big = Pb::new().str(2, "big");
    for i in 0..500_000 {
        big = big.msg(
            4,
            event(1 + i % 2, i * 1000, 500).msg(4, stat_i64(1, i * 7)),
        );
    }
    let plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(5, stat_md(1, "x"))
        .msg(4, event_md(1, "a"))
        .msg(4, event_md(2, "b"))
        .msg(3, big)
        .msg(3, Pb::new().str(2, "small").msg(4, event(1, 0, 5)));
    let bytes = space([plane]);
    assert!(
        bytes.len() > 2 * xlens_xspace::RELEASE_STEP,
        "{}",
        bytes.len()
    );
    let lines = canonical(&decode(&bytes).unwrap());
    for threads in [1, 2] {
        for as_read in [false, true] {
            let seen = std::sync::Mutex::new(Vec::new());
            let announced = std::sync::Mutex::new(Vec::new());
            let ahead = |a, b| announced.lock().unwrap().push((a, b));
            let release = if as_read {
                xlens_xspace::Release::AsRead {
                    ahead: Some(&ahead),
                }
            } else {
                xlens_xspace::Release::Lines
            };
            let p = xlens_xspace::decode_options(
                &bytes,
                &|a, b| seen.lock().unwrap().push((a, b)),
                threads,
                0,
                xlens_xspace::LeaveOut::default(),
                release,
            )
            .unwrap();
            assert!(
                canonical(&p) == lines,
                "as read {as_read}, {threads} threads"
            );
            let seen = seen.into_inner().unwrap();
            let announced = announced.into_inner().unwrap();
            // Given back before the line's end: ranges of one step or more, one after the
            // other, from the line's start, each announced before it was read.
            let partial: Vec<_> = seen
                .iter()
                .filter(|&&(a, b)| b - a < bytes.len() / 2 && b - a >= xlens_xspace::RELEASE_STEP)
                .collect();
            assert_eq!(!partial.is_empty(), as_read, "{seen:?}");
            assert_eq!(announced.is_empty(), !as_read, "{announced:?}");
            for w in partial.windows(2) {
                assert_eq!(w[0].1, w[1].0, "{seen:?}");
            }
            for &&(a, _) in &partial {
                assert!(
                    announced
                        .iter()
                        .any(|&(s, e)| s == a && e - s == xlens_xspace::RELEASE_STEP),
                    "{a} not announced: {announced:?}"
                );
            }
        }
    }
}
