//! Flow ends listed from the events' stats, and flow stats kept in those lists only when asked.

use xlens_xspace::decode;

use super::check::{agrees_with_flows_only, check};
use super::wire::{event, event_md, space, stat_i64, stat_md, Pb};

#[test]
fn flow_ends_are_listed_as_the_stats_give_them() {
    let (p_, pt, c, ct, other) = (1, 2, 300, 4, 5);
    let line = Pb::new()
        .str(2, "worker")
        // Recorded in end order: the enclosing event comes after its children.
        .msg(
            4,
            event(1, 10, 5)
                .msg(4, stat_i64(pt, 2))
                .msg(4, stat_i64(p_, 5)),
        )
        .msg(
            4,
            event(1, 0, 100)
                .msg(4, stat_i64(ct, 2))
                .msg(4, stat_i64(c, 5))
                .msg(4, stat_i64(other, 77))
                // A negative id (ten bytes) and an integral float type: the general path.
                .msg(4, stat_i64(p_, -3))
                .msg(4, Pb::new().int(1, pt).fixed64(2, 1.0f64.to_bits())),
        )
        // A reference where an id should be: no producer.
        .msg(
            4,
            event(1, 20, 5)
                .msg(4, stat_i64(pt, 7))
                .msg(4, Pb::new().int(1, p_).int(7, other)),
        )
        // An id without a type: no consumer.
        .msg(4, event(1, 30, 5).msg(4, stat_i64(c, 9)))
        // The last of two ids counts.
        .msg(
            4,
            event(1, 40, 5)
                .msg(4, stat_i64(pt, 3))
                .msg(4, stat_i64(p_, 1))
                .msg(4, stat_i64(p_, 1 << 40)),
        );
    // A type that does not fit 32 bits: that line has no list.
    let wide = Pb::new().str(2, "wide").msg(
        4,
        event(1, 0, 5)
            .msg(4, stat_i64(pt, 1 << 40))
            .msg(4, stat_i64(p_, 1)),
    );
    let mut plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(4, event_md(1, "op"))
        .msg(3, line)
        .msg(3, wide);
    for (id, name) in [
        (p_, "_p"),
        (pt, "_pt"),
        (c, "_c"),
        (ct, "_ct"),
        (other, "x"),
    ] {
        plane = plane.msg(5, stat_md(id, name));
    }
    let p = check(&space([plane]), &|| "flows".into()).unwrap();
    let ev = &p.planes[0].lines[0].events;
    assert_eq!(ev.starts(), &[0, 10, 20, 30, 40]);
    let f = ev.flows().expect("flows listed");
    let end = |event, ty, id| xlens_model::FlowRef { event, ty, id };
    assert_eq!(
        f.producers,
        [end(0, 1, -3i64 as u64), end(1, 2, 5), end(4, 3, 1 << 40)]
    );
    assert_eq!(f.consumers, [end(0, 2, 5)]);
    assert!(p.planes[0].lines[1].events.flows().is_none());
}

#[test]
fn flow_stats_kept_in_the_flow_lists_only_when_asked() {
    // Plane 1: producers and consumers as one-byte ids, a large id (10-byte varint, the
    // general path), a type beyond 32 bits, and another stat. Plane 2: its event metadata
    // carry a flow type, so its events' flow stats stay among the stats.
    let (p, pt, c, ct, x) = (1, 2, 3, 4, 5);
    let stats_md = || {
        [(p, "_p"), (pt, "_pt"), (c, "_c"), (ct, "_ct"), (x, "x")]
            .into_iter()
            .fold(Pb::new(), |pl, (id, n)| pl.msg(5, stat_md(id, n)))
    };
    let flow_event = |at: i64, stats: &[(i64, i64)]| {
        stats
            .iter()
            .fold(event(1, at, 10), |e, &(k, v)| e.msg(4, stat_i64(k, v)))
    };
    let events: [(i64, &[(i64, i64)]); 4] = [
        (0, &[(p, 7), (pt, 1)]),
        (20, &[(x, 3), (c, 7), (ct, 1)]),
        (40, &[(p, -5), (pt, 2)]),
        (60, &[(p, 9), (pt, 1 << 40)]),
    ];
    let line = events
        .into_iter()
        .fold(Pb::new().str(2, "thread"), |l, (at, st)| {
            l.msg(4, flow_event(at, st))
        });
    let one = stats_md()
        .str(2, "/host:CPU")
        .msg(4, event_md(1, "a"))
        .msg(3, line.clone());
    let md_flow = Pb::new()
        .int(1, 1)
        .msg(2, Pb::new().int(1, 1).str(2, "b").msg(5, stat_i64(pt, 1)));
    let two = stats_md()
        .str(2, "/host:other")
        .msg(4, md_flow)
        .msg(3, line);
    let bytes = space([one, two]);
    let full = decode(&bytes);
    let leave = xlens_xspace::LeaveOut {
        stats: &[],
        flow_stats: true,
        lines: false,
        planes: None,
    };
    let part =
        xlens_xspace::decode_leaving_out(&bytes, &|_, _| {}, leave, xlens_xspace::Release::Lines);
    agrees_with_flows_only(&full, &part).unwrap();
    let (full, part) = (full.unwrap(), part.unwrap());
    // Plane 1: the list is the flows' only record; the wide type is left out and counted.
    let ev = &part.planes[0].lines[0].events;
    let f = ev.flows().unwrap();
    assert!(f.not_in_stats);
    let ends =
        |v: &[xlens_model::FlowRef]| v.iter().map(|x| (x.event, x.ty, x.id)).collect::<Vec<_>>();
    assert_eq!(ends(&f.producers), [(0, 1, 7), (2, 2, -5i64 as u64)]);
    assert_eq!(ends(&f.consumers), [(1, 1, 7)]);
    let keys = |i| {
        ev.stats(i)
            .iter()
            .map(|s| part.str(s.key).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (keys(0), keys(1), keys(3)),
        (vec![], vec!["x".to_string()], vec![])
    );
    assert!(!ev.may_have_stat(part.strings.find("_p").unwrap()));
    assert_eq!(
        part.import_warnings
            .iter()
            .filter(|w| w.starts_with("1 flow ends had a type beyond 32 bits"))
            .count(),
        1,
        "{:?}",
        part.import_warnings
    );
    // The full read gave up its list for the wide type, and keeps every flow stat.
    assert!(full.planes[0].lines[0].events.flows().is_none());
    assert!(full.import_warnings.iter().all(|w| !w.contains("32 bits")));
    // Plane 2 keeps its flow stats, and lists them as usual.
    let ev2 = &part.planes[1].lines[0].events;
    assert_eq!(ev2.stats(0).iter().count(), 2);
    assert!(ev2.flows().is_none_or(|f| !f.not_in_stats));
    let note = part.partial_read.clone().unwrap_or_default();
    assert!(note.contains("flow lists of 1 lines"), "{note}");
    assert_eq!(part.stats_left_out, 0);
}
