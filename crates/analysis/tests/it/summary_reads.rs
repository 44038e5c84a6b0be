//! A host's summary from a read that leaves out the event stats no summary reads
//! (`Reads::Summary`) and keeps flow stats only in the lines' flow lists equals the summary from
//! a full read, on every XSpace fixture; the stats left out are counted, and they and the flow
//! stats (whose ends the lists hold) are the only ones missing.

use crate::common;

use xlens_analysis::base::context::Analysis;
use xlens_analysis::base::hosts::summary::{heap_bytes_of_all, HostSummary, SharedText};
use xlens_loader::{Policy, Reads, SUMMARY_UNUSED_STATS};

/// Loads `h` reading only what `reads` says.
fn load_host_for(
    h: &xlens_store::HostFile,
    reads: Reads,
) -> Result<xlens_model::Profile, xlens_loader::LoadError> {
    xlens_loader::open(
        h,
        Policy {
            reads,
            ..Policy::default()
        },
    )
}
use xlens_model::Profile;

/// Every stat of every event, by name and value (as text), in order; without flow stats on the
/// lines where `listed_only` (a read of the same file) keeps them in the flow lists only.
fn event_stats(p: &Profile, listed_only: Option<&Profile>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (pi, plane) in p.planes.iter().enumerate() {
        for (li, line) in plane.lines.iter().enumerate() {
            let ev = &line.events;
            let skip_flows = listed_only.is_some_and(|q| {
                q.planes[pi].lines[li]
                    .events
                    .flows()
                    .is_some_and(|f| f.not_in_stats)
            });
            for i in 0..ev.len() {
                for s in ev.stats(i).iter() {
                    let key = p.strings.get(s.key);
                    if skip_flows && ["_p", "_pt", "_c", "_ct"].contains(&key) {
                        continue;
                    }
                    out.push((key.to_string(), s.value.display(&p.strings)));
                }
            }
        }
    }
    out
}

#[test]
fn summaries_from_a_read_without_unused_stats_equal_full_reads() {
    let mut hosts = 0;
    let mut left_out_somewhere = 0;
    let mut flows_listed_only = 0;
    for logdir in [
        "fixtures/logdir",
        "fixtures/logdir_bottlenecks",
        "fixtures/diff_pair",
    ] {
        let sessions = xlens_store::discover(&common::root().join(logdir)).expect("sessions");
        for s in &sessions {
            for h in &s.hosts {
                if !matches!(h.format, xlens_store::Format::XSpace) {
                    continue;
                }
                let full = load_host_for(h, Reads::Everything).expect("full read");
                let part = load_host_for(h, Reads::Summary).expect("summary read");
                let (all, kept) = (event_stats(&full, Some(&part)), event_stats(&part, None));
                // The flow lists hold what the full read lists.
                let mut listed_only = 0;
                for (a, b) in full.planes.iter().zip(&part.planes) {
                    for (la, lb) in a.lines.iter().zip(&b.lines) {
                        let fb = lb.events.flows().expect("flows listed");
                        listed_only += usize::from(fb.not_in_stats);
                        let fa = la.events.flows().expect("flows listed");
                        assert_eq!(
                            (&fa.producers, &fa.consumers),
                            (&fb.producers, &fb.consumers),
                            "{}",
                            h.path.display()
                        );
                    }
                }
                flows_listed_only += listed_only;
                // What is missing is exactly the stats of those names, counted.
                let unused =
                    |(k, _): &&(String, String)| SUMMARY_UNUSED_STATS.contains(&k.as_str());
                let want: Vec<_> = all.iter().filter(|x| !unused(x)).cloned().collect();
                assert_eq!(kept, want, "{}", h.path.display());
                let n = all.iter().filter(unused).count() as u64;
                assert_eq!(part.stats_left_out, n, "{}", h.path.display());
                assert_eq!(full.stats_left_out, 0);
                assert_eq!(part.partial_read.is_some(), n > 0 || listed_only > 0);
                left_out_somewhere += usize::from(n > 0);
                let a = HostSummary::of(&s.name, h, &Analysis::new(full.into()));
                let b = HostSummary::of(&s.name, h, &Analysis::new(part.into()));
                assert_eq!(a, b, "{}", h.path.display());
                assert!(a.error.is_none());
                hosts += 1;
            }
        }
    }
    // JAX and TensorFlow on CPU, a TPU inference, the bottleneck fixtures: most carry them.
    assert!(hosts >= 14, "{hosts} hosts");
    assert!(
        left_out_somewhere >= 10,
        "{left_out_somewhere} hosts with stats left out"
    );
    assert!(
        flows_listed_only >= 50,
        "{flows_listed_only} lines with flows listed only"
    );
}

/// The session of the committed JAX profile.
fn jax_fixture() -> xlens_store::Session {
    xlens_store::discover(&common::root().join("fixtures/logdir"))
        .expect("sessions")
        .into_iter()
        .find(|s| s.name == "jax_mlp_small")
        .expect("the JAX fixture")
}

#[test]
fn a_summary_counts_the_memory_it_holds() {
    let s = jax_fixture();
    let h = &s.hosts[0];
    let p = load_host_for(h, Reads::Summary).expect("summary read");
    let mut sum = HostSummary::of(&s.name, h, &Analysis::new(p.into()));
    assert!(!sum.steps.is_empty() && !sum.ops.is_empty());
    // At least every string's bytes (a shared one once) and every row.
    let mut distinct: Vec<&str> = sum
        .ops
        .iter()
        .flat_map(|o| [&*o.program, &*o.category])
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    let text: usize = distinct.iter().map(|t| t.len()).sum::<usize>()
        + sum.ops.iter().map(|o| o.name.len()).sum::<usize>()
        + sum.steps.iter().map(|r| r.name.len()).sum::<usize>();
    let before = sum.heap_bytes();
    assert!(before > text + sum.ops.len() * 64, "{before} for {text}");
    // The ops of one program share its name, those of one category its text.
    let programs: std::collections::HashSet<*const u8> =
        sum.ops.iter().map(|o| o.program.as_ptr()).collect();
    assert!(programs.len() < distinct.len() && distinct.len() < sum.ops.len());
    // One more op: its row's room, then exactly its name's capacity and the bytes of a text
    // not shared with any op before (16 for the counts of its `Arc`); its category is shared.
    let cap = sum.ops.capacity();
    sum.ops.reserve_exact(1);
    let grown = sum.heap_bytes();
    assert_eq!(
        grown - before,
        (sum.ops.capacity() - cap) * std::mem::size_of_val(&sum.ops[0])
    );
    let mut op = sum.ops[0].clone();
    (op.program, op.name) = ("a new program".into(), "n".repeat(200).into());
    sum.ops.push(op);
    assert_eq!(sum.heap_bytes() - grown, (16 + 13) + (16 + 200));
    // The same text again, not shared: counted again, as it takes memory again.
    let mut op = sum.ops[0].clone();
    op.category = std::sync::Arc::from(&*sum.ops[0].category);
    let third = sum.heap_bytes();
    let extra = 16 + op.category.len();
    sum.ops.push(op);
    let row = (sum.ops.capacity() - cap - 1) * std::mem::size_of_val(&sum.ops[0]);
    assert_eq!(sum.heap_bytes() - third, extra + row);
}

#[test]
fn the_hosts_of_a_run_share_their_ops_texts_and_count_them_once() {
    let s = jax_fixture();
    let h = &s.hosts[0];
    let summarize = |shared: &SharedText| {
        let p = load_host_for(h, Reads::Summary).expect("summary read");
        HostSummary::of_sharing(&s.name, h, &Analysis::new(p.into()), shared)
    };
    // Two hosts of one run (the same file twice) through one `SharedText`.
    let shared = SharedText::default();
    let (a, b) = (summarize(&shared), summarize(&shared));
    // The same summaries as made on their own ...
    let alone = HostSummary::of(
        &s.name,
        h,
        &Analysis::new(load_host_for(h, Reads::Summary).expect("read").into()),
    );
    assert!(a == alone && b == alone);
    // ... whose op texts are one copy for both hosts,
    assert!(a
        .ops
        .iter()
        .zip(&b.ops)
        .all(|(x, y)| std::sync::Arc::ptr_eq(&x.name, &y.name)
            && std::sync::Arc::ptr_eq(&x.program, &y.program)
            && std::sync::Arc::ptr_eq(&x.category, &y.category)));
    // counted once in all: the second host adds its own rows and strings only.
    let texts: usize = {
        let mut t: Vec<&str> = a
            .ops
            .iter()
            .flat_map(|o| [&*o.name, &*o.program, &*o.category])
            .collect();
        t.sort_unstable();
        t.dedup();
        t.iter().map(|x| 16 + x.len()).sum()
    };
    let (ha, hb) = (a.heap_bytes(), b.heap_bytes());
    let both = [a, b];
    assert_eq!(heap_bytes_of_all(&both), ha + hb - texts);
    assert_eq!(heap_bytes_of_all(&both[..1]), ha);
}

/// Hosts of a run pass their HLO modules, and what was derived from them, on through one
/// `SharedHlo`: a host takes them only when its serialized modules are the same (here: the same
/// file read again, or another with the same modules), and every host's summary is what it is
/// alone, whichever host came before.
#[test]
fn a_host_adopts_the_hlo_of_the_host_before_only_when_its_modules_are_the_same() {
    use xlens_analysis::base::context::SharedHlo;
    let mut files = Vec::new();
    for logdir in [
        "fixtures/logdir",
        "fixtures/logdir_bottlenecks",
        "fixtures/diff_pair",
    ] {
        for s in xlens_store::discover(&common::root().join(logdir)).expect("sessions") {
            for h in &s.hosts {
                if matches!(h.format, xlens_store::Format::XSpace) {
                    files.push((s.name.clone(), h.clone()));
                }
            }
        }
    }
    // Every serialized module of a profile, read here from its metadata plane's stats.
    let modules_of = |p: &Profile| -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for plane in p
            .planes
            .iter()
            .filter(|pl| p.str(pl.name) == "/host:metadata")
        {
            for m in &plane.event_metadata {
                for st in m.stats().iter() {
                    if let (true, xlens_model::StatValue::Bytes(b)) =
                        (p.strings.get(st.key) == "Hlo Proto", st.value)
                    {
                        out.push((p.str(m.name).to_string(), p.blob(b).to_vec()));
                    }
                }
            }
        }
        out
    };
    let shared = SharedHlo::default();
    let (mut adopted, mut with_modules, mut from_another_file) = (0, 0, 0);
    let mut held: Option<Vec<(String, Vec<u8>)>> = None;
    let mut last_path: Option<std::path::PathBuf> = None;
    // Each file twice in a row, then the next: the second read adopts the first's.
    for (session, h) in files.iter().flat_map(|x| [x, x]) {
        let alone = {
            let p = load_host_for(h, Reads::Summary).expect("summary read");
            HostSummary::of(session, h, &Analysis::new(p.into()))
        };
        let p = load_host_for(h, Reads::Summary).expect("summary read");
        let mine = modules_of(&p);
        let a = Analysis::new(p.into());
        // Taken exactly when the modules last offered (by a host that had some, and not let go
        // since by a host of another program) are these, under the same names.
        let same = !mine.is_empty() && held.as_ref() == Some(&mine);
        let took = a.adopt_hlo(&shared);
        if !took && !mine.is_empty() {
            held = None;
        }
        let sum = HostSummary::of_sharing(session, h, &a, &SharedText::default());
        assert!(sum == alone, "{}: adopted {took}", h.path.display());
        assert_eq!(a.hlo().modules.len(), mine.len());
        assert_eq!(took, same, "{}", h.path.display());
        adopted += usize::from(took);
        with_modules += usize::from(!mine.is_empty());
        from_another_file += usize::from(took && last_path.as_ref() != Some(&h.path));
        a.offer_hlo(&shared);
        if !mine.is_empty() {
            held = Some(mine);
        }
        last_path = Some(h.path.clone());
    }
    assert!(with_modules >= 6, "{with_modules} reads with HLO modules");
    // Every second read of a file, and the first of a file whose modules are those of the
    // file before.
    assert_eq!(adopted * 2, with_modules + from_another_file);
}
