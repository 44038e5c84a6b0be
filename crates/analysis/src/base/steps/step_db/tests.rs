use super::*;

#[test]
fn merging_runs_sorts_like_the_standard_sort() {
    // Pairs ordered by the first field only would show an unstable merge; the second field
    // numbers the input.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct K(u32, u32);
    impl PartialOrd for K {
        fn partial_cmp(&self, o: &K) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for K {
        fn cmp(&self, o: &K) -> std::cmp::Ordering {
            self.0.cmp(&o.0)
        }
    }
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as u32
    };
    let mut scratch = Vec::new();
    for case in 0..300 {
        let runs = 1 + case % 9;
        let mut v = Vec::new();
        for _ in 0..runs {
            let len = next() % 60;
            let mut x = next() % 20;
            for _ in 0..len {
                x += next() % 3;
                v.push(x);
            }
        }
        if case % 7 == 0 {
            v.iter_mut().for_each(|x| *x = next() % 10);
        }
        let mut a: Vec<K> = v.iter().enumerate().map(|(i, &x)| K(x, i as u32)).collect();
        let mut b = a.clone();
        sort_runs(&mut a, &mut scratch);
        b.sort();
        assert_eq!(
            a.iter().map(|k| (k.0, k.1)).collect::<Vec<_>>(),
            b.iter().map(|k| (k.0, k.1)).collect::<Vec<_>>(),
            "case {case}"
        );
    }
}

#[test]
fn links_give_each_events_children_and_parents_in_link_order() {
    // Parents spread over several words of the bit set, some with many children, event 0
    // and the last event among them; a few links out of child order.
    let n = 300u32;
    let mut x = 12345u64;
    let mut next = |m: u32| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 33) % m as u64) as u32
    };
    let mut links: Vec<(u32, u32)> = vec![(0, 5), (n - 1, 3), (63, 64), (64, 63)];
    for _ in 0..500 {
        let a = if next(4) == 0 { 130 } else { next(n) };
        links.push((a, next(n)));
    }
    let l = Links::new(n as usize, links.clone());
    for g in 0..n {
        let want: Vec<u32> = links.iter().filter(|x| x.0 == g).map(|x| x.1).collect();
        assert_eq!(l.children(g), &want[..], "children of {g}");
        let want: Vec<u32> = links.iter().filter(|x| x.1 == g).map(|x| x.0).collect();
        assert_eq!(l.parents(g).collect::<Vec<_>>(), want, "parents of {g}");
    }
    assert!(l.children(n + 100).is_empty());
}

#[test]
fn galloping_search_agrees_with_binary_search() {
    // Sorted keys with duplicates and gaps; every start position and every probe key.
    let ids = [1u64, 1, 2, 5, 5, 5, 8, 13, 13, 21, 34, 34, 34, 34, 55];
    let v: Vec<FlowEnd> = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| FlowEnd {
            tp: 1,
            id,
            g: i as u32,
        })
        .collect();
    for tp in 0..3 {
        for probe in 0..60u64 {
            let key = (tp, probe);
            let want = v.partition_point(|x| x.key() < key);
            for from in 0..=v.len() + 2 {
                assert_eq!(lower_bound_near(&v, from, key), want, "{key:?} from {from}");
            }
        }
    }
    assert_eq!(lower_bound_near(&[], 0, (0, 1)), 0);
}

#[test]
fn flattening_from_the_flow_lists_equals_reading_the_stats() {
    let p = crate::jax_fixture();
    let k = Keys::new(&p);
    let listed = p
        .planes
        .iter()
        .flat_map(|pl| &pl.lines)
        .filter_map(|l| l.events.flows())
        .map(|f| f.producers.len() + f.consumers.len())
        .sum::<usize>();
    assert!(listed > 1000, "{listed} flow ends listed");
    let a = flatten_with(&p, &k, true).merge();
    let b = flatten_with(&p, &k, false).merge();
    assert_eq!(a.flows.types, b.flows.types);
    assert_eq!(a.flows.prods, b.flows.prods);
    assert_eq!(
        a.flows.consumers().collect::<Vec<_>>(),
        b.flows.consumers().collect::<Vec<_>>()
    );
    assert!(a.flows.prods.len() + a.flows.consumers().count() >= listed);
    assert_eq!(format!("{:?}", a.ctxs), format!("{:?}", b.ctxs));
    assert_eq!(a.nest_parent, b.nest_parent);
    assert_eq!(a.last_desc, b.last_desc);
}

/// A decode of `bytes` that keeps flow stats in the flow lists only.
fn flows_listed_only(bytes: &[u8]) -> Profile {
    let leave = xlens_xspace::LeaveOut {
        stats: &[],
        flow_stats: true,
        lines: false,
        planes: None,
    };
    xlens_xspace::decode_leaving_out(bytes, &|_, _| {}, leave, xlens_xspace::Release::Lines)
        .expect("decodes")
}

/// Flattening a read whose flows are in the lists only gives what reading every stat of a
/// full read gives.
fn assert_flattened_alike(full: &Profile, part: &Profile) {
    let (kf, kp) = (Keys::new(full), Keys::new(part));
    let a = flatten_with(full, &kf, false).merge();
    let b = flatten_with(part, &kp, true).merge();
    assert_eq!(a.flows.types, b.flows.types);
    assert_eq!(a.flows.prods, b.flows.prods);
    assert_eq!(
        a.flows.consumers().collect::<Vec<_>>(),
        b.flows.consumers().collect::<Vec<_>>()
    );
    assert_eq!(format!("{:?}", a.ctxs), format!("{:?}", b.ctxs));
    assert_eq!(a.nest_parent, b.nest_parent);
    assert_eq!(a.last_desc, b.last_desc);
}

#[test]
fn flattening_flows_listed_only_equals_reading_every_stat() {
    // The JAX fixture: XLA op threads (flows only) and the Python thread (flows beside
    // step roots and step numbers, read from the stats).
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"
    );
    let bytes = std::fs::read(path).expect("the committed JAX fixture");
    let (full, part) = (
        xlens_xspace::decode(&bytes).unwrap(),
        flows_listed_only(&bytes),
    );
    let lines = |p: &Profile| {
        p.planes
            .iter()
            .flat_map(|pl| &pl.lines)
            .filter(|l| l.events.flows().is_some_and(|f| f.not_in_stats))
            .count()
    };
    assert_eq!(lines(&full), 0);
    assert!(lines(&part) >= 4, "{} lines", lines(&part));
    assert_flattened_alike(&full, &part);

    // Hand-made: flows on another process (`_pid`, on an event and on its metadata)
    // beside flows of the plane's own, and a step root on the same line.
    use xlens_proto::tensorflow::profiler as pb;
    let stat = |id: i64, v: i64| pb::XStat {
        metadata_id: id,
        value: Some(pb::x_stat::Value::Int64Value(v)),
    };
    let ev = |md: i64, at: i64, dur: i64, stats: Vec<pb::XStat>| pb::XEvent {
        metadata_id: md,
        data: Some(pb::x_event::Data::OffsetPs(at)),
        duration_ps: dur,
        stats,
    };
    let names = ["_p", "_pt", "_c", "_ct", "_pid", "_r", "process_id"];
    let mut plane = pb::XPlane {
        id: 1,
        name: "/host:CPU".into(),
        ..Default::default()
    };
    for (i, n) in names.iter().enumerate() {
        let id = i as i64 + 1;
        plane.stat_metadata.insert(
            id,
            pb::XStatMetadata {
                id,
                name: n.to_string(),
                ..Default::default()
            },
        );
    }
    plane.stats.push(stat(7, 40));
    for (id, name, stats) in [
        (1, "step", vec![]),
        (2, "op", vec![]),
        (3, "far", vec![stat(5, 77)]),
    ] {
        plane.event_metadata.insert(
            id,
            pb::XEventMetadata {
                id,
                name: name.into(),
                stats,
                ..Default::default()
            },
        );
    }
    let line = |id: i64, name: &str, events: Vec<pb::XEvent>| pb::XLine {
        id,
        name: name.into(),
        events,
        ..Default::default()
    };
    let main = vec![
        ev(1, 0, 1000, vec![stat(6, 1), stat(1, 10), stat(2, 3)]),
        ev(2, 10, 100, vec![stat(1, 11), stat(2, 3), stat(5, 99)]),
        ev(3, 200, 100, vec![stat(1, 12), stat(2, 3)]),
        ev(2, 400, 100, vec![stat(3, 10), stat(4, 3)]),
    ];
    let worker = vec![
        ev(2, 0, 50, vec![stat(3, 11), stat(4, 3), stat(5, 99)]),
        ev(2, 100, 50, vec![stat(3, 12), stat(4, 3), stat(5, 77)]),
        ev(2, 300, 50, vec![stat(3, 12), stat(4, 3)]),
        ev(2, 400, 50, vec![stat(3, 13), stat(4, 3), stat(5, 77)]),
    ];
    // No stat but flows: the process comes from the metadata alone.
    let third = vec![ev(3, 0, 10, vec![stat(1, 13), stat(2, 3)])];
    plane.lines = vec![
        line(1, "main", main),
        line(2, "worker", worker),
        line(3, "third", third),
    ];
    let space = pb::XSpace {
        planes: vec![plane],
        ..Default::default()
    };
    let bytes = prost::Message::encode_to_vec(&space);
    let (full, part) = (
        xlens_xspace::decode(&bytes).unwrap(),
        flows_listed_only(&bytes),
    );
    assert_eq!(lines(&part), 3);
    assert_flattened_alike(&full, &part);
    // Three flow types: the plane's (40), and process 99's and 77's.
    let kp = Keys::new(&part);
    let b = flatten_with(&part, &kp, true).merge();
    assert_eq!(b.flows.types.len(), 3, "{:?}", b.flows.types);
}

#[test]
fn host_step_events_on_two_threads_equal_one_pass() {
    let p = crate::jax_fixture();
    let k = Keys::new(&p);
    let mut flat = flatten(&p, &k).merge();
    let (names, groups) = group_events(&mut flat);
    assert_eq!(groups, 10);
    let one = host_step_events_with(&flat, &names, usize::MAX);
    let two = host_step_events_with(&flat, &names, 0);
    assert_eq!(format!("{one:?}"), format!("{two:?}"));
    // Several lines give events to the same steps.
    let with_events = one.iter().filter(|s| s.events.len() > 1).count();
    assert_eq!(with_events, 10);
    assert!(one
        .iter()
        .all(|s| s.name.is_some() && !s.markers.is_empty()));
}

#[test]
fn flows_join_every_producer_with_its_consumers() {
    // Two lines: flow types interleaved as threads write them (two process ids), a key with
    // two producers, a consumer whose producer is missing, and one whose producer is in
    // another process.
    let end = |tp, id, g| FlowEnd { tp, id, g };
    let a = LinePart {
        prods: vec![end(0, 20, 0), end(1, 3, 1), end(0, 14, 2)],
        cons: LineCons::Found(vec![end(1, 4, 5)]),
        types: vec![(15, 7), (0, 7)],
        ..Default::default()
    };
    let b = LinePart {
        prods: vec![end(0, 4, 3), end(0, 4, 4), end(1, 14, 6)],
        cons: LineCons::Found(vec![end(1, 14, 10), end(0, 9, 11), end(1, 20, 12)]),
        types: vec![(0, 7), (15, 8)],
        ..Default::default()
    };
    let flows = merge_flows(&mut [a, b]);
    assert_eq!(flows.types, vec![(0, 7), (15, 7), (15, 8)]);
    assert!(flows.prods.windows(2).all(|w| w[0] <= w[1]));
    let mut links = Vec::new();
    join_flows(&flows.prods, flows.consumers(), &mut links);
    // (0,4) in line a's table is type (0,7): producers 3 and 4. (15,14) of process 8 has
    // producer 6; (15,20) of process 8 has none (producer 0 is process 7).
    assert_eq!(links, vec![(3, 5), (4, 5), (6, 10)]);
}
