use super::*;
use xlens_model::{EventMetadata, EventsBuilder, Strings};

/// A one-line profile with `n` tiny events and a few wide ones.
fn synthetic(n: usize) -> Profile {
    let mut strings = Strings::new();
    let plane_name = strings.intern("/host:CPU");
    let line_name = strings.intern("thread");
    let small = strings.intern("small");
    let wide = strings.intern("wide");
    let mut b = EventsBuilder::with_capacity(n + 2, 0);
    b.push(0, (n as i64) * 100, 1); // one wide parent over everything
    for i in 0..n {
        b.push(i as i64 * 100, 10, 0);
    }
    let events = b.finish();
    let plane = Plane {
        name: plane_name,
        event_metadata: vec![
            EventMetadata {
                id: 1,
                name: small,
                ..Default::default()
            },
            EventMetadata {
                id: 2,
                name: wide,
                ..Default::default()
            },
        ],
        lines: vec![Line {
            name: line_name,
            events,
            ..Default::default()
        }],
        ..Default::default()
    };
    Profile {
        strings,
        planes: vec![plane],
        ..Default::default()
    }
}

#[test]
fn zoomed_out_merges_and_zoomed_in_reaches_every_event() {
    let n = 100_000;
    let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(n)))]);
    assert_eq!(idx.total_events, n as u64 + 1);
    let span = (n as i64) * 100;
    let v = idx.query(0, span, 1000);
    assert_eq!(
        v.events.len() as u64 + v.summaries.iter().map(|s| s.count).sum::<u64>(),
        idx.total_events
    );
    // The parent is drawn; the 100k small events are merged, none dropped.
    assert_eq!(v.events.len(), 1);
    let merged: u64 = v.summaries.iter().map(|s| s.count).sum();
    assert_eq!(merged, n as u64);
    assert!(v.summaries.len() <= 1000, "{}", v.summaries.len());
    let covered: i64 = v.summaries.iter().map(|s| s.covered_ps).sum();
    assert_eq!(covered, n as i64 * 10);
    // Zoomed to 51 events in 1000 px (the window's end is inclusive): each drawn individually.
    let v = idx.query(1_000_000, 1_005_000, 1000);
    assert_eq!(v.events.iter().filter(|e| e.depth == 1).count(), 51);
    assert!(v.summaries.is_empty());
    let d = idx.details(0, v.events[1].index).unwrap();
    assert_eq!(d.name, "small");
    assert_eq!(d.dur_ps, 10);
}

#[test]
fn a_window_over_the_whole_i64_range_is_drawn_like_the_span() {
    let n = 100_000;
    let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(n)))]);
    // `end - start` overflows i64 here; it used to give 1e-9 ps per pixel, so every event
    // was sent one by one (a 70 MB answer on a large profile).
    let v = idx.query(i64::MIN + 1, i64::MAX, 1000);
    assert!(
        v.events.len() + v.summaries.len() <= 2 * 1000,
        "{}",
        v.events.len()
    );
    let drawn = v.events.len() as u64 + v.summaries.iter().map(|s| s.count).sum::<u64>();
    assert_eq!(drawn, idx.total_events, "nothing dropped");
    // An empty window at the very end of the range does not overflow either, nor range
    // statistics over the whole range.
    let v = idx.query(i64::MAX, i64::MAX, u32::MAX);
    assert!(v.events.is_empty());
    assert_eq!(
        (v.width_px, v.width_capped_from),
        (MAX_WIDTH_PX, Some(u32::MAX)),
        "the cap is stated"
    );
    let all = idx.range_stats(i64::MIN, i64::MAX);
    assert_eq!(all.events, idx.total_events);
}

#[test]
fn search_and_range_stats_cover_the_whole_trace() {
    let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(1000)))]);
    let r = idx.search("SMA", 10);
    assert_eq!(r.total, 1000);
    assert_eq!(r.shown, 10);
    let rs = idx.range_stats(0, 500);
    let small = rs.rows.iter().find(|r| r.name == "small").unwrap();
    assert_eq!(small.occurrences, 5);
    assert_eq!(small.time_ps, 50);
    let wide = rs.rows.iter().find(|r| r.name == "wide").unwrap();
    assert_eq!(wide.time_ps, 500);
}

#[test]
fn chrome_export_is_valid_json_with_every_event() {
    let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(100)))]);
    let mut out = Vec::new();
    idx.export_chrome(None, &mut out);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    assert_eq!(evs.iter().filter(|e| e["ph"] == "X").count(), 101);
    let mut out = Vec::new();
    idx.export_chrome(Some((0, 450)), &mut out);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let n = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    assert_eq!(n, 6); // the parent and the events starting at 0..400
                      // Over the cap: the first events, and the counts stated.
    let mut out = Vec::new();
    idx.export_chrome_capped(None, &mut out, 10);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let xs = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .count();
    assert_eq!(xs, 10);
    assert_eq!(v["xlens_export"]["events_written"], 10);
    assert_eq!(v["xlens_export"]["events_in_range"], 101);
}

#[test]
fn synthetic_profiles_are_fully_accounted_for_at_every_zoom() {
    let p = synthetic_profile(50_000, 4);
    let idx = TraceIndex::build(vec![("h".into(), Arc::new(p))]);
    assert!(idx.total_events >= 49_000, "{}", idx.total_events);
    let (s, e) = idx.span;
    let v = idx.query(s, e, 1200);
    let shown = v.events.len() as u64 + v.summaries.iter().map(|x| x.count).sum::<u64>();
    assert_eq!(shown, idx.total_events);
    // Bounded output: at most about one box per pixel per row.
    let rows: u64 = v.tracks.iter().map(|t| t.depths as u64).sum();
    assert!((v.events.len() + v.summaries.len()) as u64 <= 2 * 1201 * rows + 16);
    // Zooming into any stretch reaches single events.
    let mid = s + (e - s) / 2;
    let v = idx.query(mid, mid + 2_000_000, 1200);
    assert!(
        v.summaries.iter().all(|x| x.count <= 3),
        "{:?}",
        v.summaries.iter().map(|x| x.count).max()
    );
}

#[test]
fn query_all_merges_nothing() {
    let idx = TraceIndex::build(vec![("h".into(), Arc::new(crate::jax_fixture()))]);
    let (s, e) = idx.span;
    let v = idx.query_all(s, e);
    assert!(v.summaries.is_empty());
    assert_eq!(v.events.len() as u64, idx.total_events);
    // A window: exactly the events that overlap it (counted here from the whole list).
    let (a, b) = (s + (e - s) / 3, s + (e - s) / 2);
    let want = v
        .events
        .iter()
        .filter(|x| x.start_ps <= b && x.start_ps + x.dur_ps > a)
        .count();
    let w = idx.query_all(a, b);
    assert!(w.summaries.is_empty());
    assert_eq!(w.events.len(), want);
}

#[test]
fn two_thread_queries_equal_one_walk() {
    let profiles = [crate::jax_fixture(), synthetic_profile(20_000, 4)];
    for p in profiles {
        let idx = TraceIndex::build(vec![("h".into(), Arc::new(p))]);
        let (s, e) = idx.span;
        let q = (e - s) / 7;
        for (a, b, w) in [
            (s, e, 1500),
            (s + q, s + 3 * q, 800),
            (s + 2 * q, s + 2 * q + 1000, 300),
        ] {
            let one = idx.query_split(a, b, w, usize::MAX, false);
            let two = idx.query_split(a, b, w, 0, false);
            assert_eq!(
                serde_json::to_value(&one).unwrap(),
                serde_json::to_value(&two).unwrap(),
                "window {a}..{b} at {w} px"
            );
        }
    }
}

#[test]
fn counter_points_keep_spikes_and_stay_bounded() {
    let n = 100_000;
    let c = Counter {
        id: 0,
        group: "g".into(),
        name: "c".into(),
        times: (0..n).map(|i| i * 10).collect(),
        values: (0..n)
            .map(|i| if i == 54_321 { 1e9 } else { (i % 7) as f64 })
            .collect(),
    };
    let (ts, vs) = counter_points(&c, 0, n * 10, (n * 10) as f64 / 500.0);
    assert!(ts.len() <= 4 * 500 + 1, "{}", ts.len());
    assert!(vs.contains(&1e9));
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn max_tree_queries() {
    let vals = [1u8, 5, 2, 5, 0, 3, 7, 1, 1];
    let t = MaxTree::new(vals.iter().copied());
    let mut out = Vec::new();
    t.at_least(0, vals.len(), 3, &mut out);
    assert_eq!(out, vec![1, 3, 5, 6]);
    out.clear();
    t.at_least(2, 6, 3, &mut out);
    assert_eq!(out, vec![3, 5]);
    assert_eq!(t.argmax(0, 4), Some(1));
    assert_eq!(t.argmax(4, 9), Some(6));
    assert_eq!(t.argmax(7, 9), Some(7));
}
