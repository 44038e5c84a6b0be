//! The trace viewer index on real profiles: nothing dropped, tracks in the order users know,
//! flows between producer and consumer events, search over everything.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use xlens_analysis::base::trace::TraceIndex;
use xlens_loader::load_path;
use xlens_store::Format;

fn fixture(run: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/logdir/plugins/profile")
        .join(run);
    std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

fn index(run: &str) -> TraceIndex {
    let p = load_path(&fixture(run), Format::XSpace).unwrap();
    TraceIndex::build(vec![("h".into(), Arc::new(p))])
}

#[test]
fn every_event_is_drawn_or_counted_at_any_zoom() {
    for run in [
        "jax_mlp_small",
        "tpu_inference",
        "gpu_multi_worker",
        "tf_keras_cnn_small",
    ] {
        let idx = index(run);
        let p = load_path(&fixture(run), Format::XSpace).unwrap();
        assert_eq!(idx.total_events, p.event_count() as u64, "{run}");
        for width in [200, 1920] {
            let v = idx.query(idx.span.0, idx.span.1, width);
            let seen = v.events.len() as u64 + v.summaries.iter().map(|s| s.count).sum::<u64>();
            assert_eq!(seen, idx.total_events, "{run} at {width}px");
        }
        // A window in the middle: events overlapping it are drawn or merged; none from far away.
        let (a, b) = idx.span;
        let (s, e) = (a + (b - a) / 3, a + (b - a) / 3 + (b - a) / 50);
        let v = idx.query(s, e, 1000);
        assert!(
            v.events
                .iter()
                .all(|x| x.start_ps <= e && x.start_ps + x.dur_ps >= s),
            "{run}"
        );
    }
}

#[test]
fn device_tracks_come_first_in_familiar_order() {
    let idx = index("tpu_inference");
    let first: Vec<(&str, &str)> = idx
        .tracks
        .iter()
        .take(4)
        .map(|t| (t.group.as_str(), t.name.as_str()))
        .collect();
    assert_eq!(
        first,
        vec![
            ("/device:TPU:0", "XLA Modules"),
            ("/device:TPU:0", "XLA Ops"),
            ("/device:TPU:0", "Async XLA Ops"),
            ("/device:TPU:0", "XLA TraceMe"),
        ]
    );
    assert_eq!(idx.tracks.last().unwrap().group, "/host:CPU");
    // TPU ops show the instruction name, with the HLO expression in the details.
    let v = idx.query(idx.span.0, idx.span.1, 1000);
    let op = v
        .events
        .iter()
        .find(|e| idx.tracks[e.track as usize].name == "XLA Ops")
        .unwrap();
    let d = idx.details(op.track, op.index).unwrap();
    assert!(!d.name.contains(' '), "{}", d.name);
    assert!(
        d.long_name.contains(" = ") && d.long_name.contains(&d.name),
        "{}",
        d.long_name
    );
    assert!(d.stats.iter().any(|(k, _)| k == "bytes_accessed"));
}

#[test]
fn producer_consumer_flows_link_host_events() {
    let idx = index("jax_mlp_small");
    let v = idx.query(idx.span.0, idx.span.1, 100_000);
    let mut linked = 0;
    for e in &v.events {
        let d = idx.details(e.track, e.index).unwrap();
        let p_id = d
            .stats
            .iter()
            .find(|(k, _)| k == "_p")
            .map(|(_, v)| v.clone());
        if let Some(id) = p_id {
            for f in &d.flows {
                assert_eq!(f.direction, "out");
                let other = idx.details(f.track, f.index).unwrap();
                assert!(
                    other.stats.iter().any(|(k, v)| k == "_c" && *v == id),
                    "{other:?}"
                );
                linked += 1;
            }
        }
        if linked > 20 {
            break;
        }
    }
    assert!(linked > 0, "no producer/consumer flow found");
    // Steps: an event inside the first annotated step knows it.
    let train = v
        .events
        .iter()
        .find(|e| v.names[e.name as usize] == "train")
        .unwrap();
    assert_eq!(
        idx.details(train.track, train.index)
            .unwrap()
            .step
            .as_deref(),
        Some("train 0")
    );
}

#[test]
fn search_finds_every_match_and_ranges_add_up() {
    let idx = index("jax_mlp_small");
    let r = idx.search("fusion", 5);
    assert!(r.total > 100 && r.shown == 5, "{} {}", r.total, r.shown);
    let all = idx.search("fusion", 1_000_000);
    assert_eq!(all.total, all.shown);
    assert!(all.hits.windows(2).all(|w| w[0].start_ps <= w[1].start_ps));
    let rs = idx.range_stats(idx.span.0, idx.span.1);
    assert_eq!(rs.events, idx.total_events);
}

#[test]
fn allocator_memory_is_a_counter_track() {
    // The TPU and GPU profiles record MemoryAllocation / MemoryDeallocation events on the host:
    // each allocator's memory in use becomes a counter, with every point kept in the index.
    for (run, allocators) in [("tpu_inference", 4), ("gpu_multi_worker", 4)] {
        let idx = index(run);
        let mem: Vec<_> = idx
            .counters
            .iter()
            .filter(|c| c.name.starts_with("memory in use"))
            .collect();
        assert_eq!(
            mem.len(),
            allocators,
            "{run}: {:?}",
            mem.iter().map(|c| &c.name).collect::<Vec<_>>()
        );
        let v = idx.query(idx.span.0, idx.span.1, 800);
        assert_eq!(v.counters.len(), idx.counters.len());
        for c in &v.counters {
            assert!(c.times_ps.len() as u64 <= c.points_total && c.times_ps.len() <= 4 * 801 + 1);
            assert!(c.max >= c.min);
        }
    }
}
