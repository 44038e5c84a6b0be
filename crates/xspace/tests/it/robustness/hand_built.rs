//! Hand-built XSpaces whose decoded values are checked field by field.

use std::time::Instant;

use xlens_model::StatValue;
use xlens_xspace::decode;

use super::check::check;
use super::key;
use super::wire::{event, event_md, put_varint, space, stat_i64, stat_md, Pb, VARINT};

#[test]
fn event_with_unknown_metadata_id_gets_a_placeholder_and_a_warning() {
    let plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(4, event_md(1, "known"))
        .msg(
            3,
            Pb::new()
                .str(2, "thread")
                .msg(4, event(1, 0, 10))
                .msg(4, event(99, 20, 10))
                .msg(4, event(99, 40, 10))
                .msg(4, event(-7, 60, 10)),
        );
    let p = check(&space([plane]), &|| "unknown metadata".into()).unwrap();
    let plane = &p.planes[0];
    let line = &plane.lines[0];
    let names: Vec<&str> = (0..line.events.len())
        .map(|i| p.str(plane.metadata_of(line, i).unwrap().name))
        .collect();
    assert_eq!(
        names,
        ["known", "<metadata 99>", "<metadata 99>", "<metadata -7>"]
    );
    assert_eq!(plane.event_metadata.len(), 3);
    assert_eq!(plane.event_metadata[1].id, 99);
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    let w = &p.import_warnings[0];
    assert!(w.contains("event metadata id"), "{w}");
    assert!(w.contains("2 event metadata ids"), "{w}");
}

#[test]
fn many_distinct_unknown_metadata_ids_do_not_take_quadratic_time() {
    // A plane whose metadata map was lost: every event refers to an id nobody defines.
    const N: i64 = 20_000;
    let mut line = Pb::new().str(2, "thread");
    for i in 0..N {
        line = line.msg(4, event(i * 3 + 1_000_000, i * 10, 5));
    }
    let bytes = space([Pb::new().str(2, "/host:CPU").msg(3, line)]);
    let t = Instant::now();
    let p = check(&bytes, &|| "many unknown ids".into()).unwrap();
    let took = t.elapsed();
    assert_eq!(p.planes[0].event_metadata.len(), N as usize);
    let line = &p.planes[0].lines[0];
    let last = p.planes[0].metadata_of(line, N as usize - 1).unwrap();
    assert_eq!(
        p.str(last.name),
        format!("<metadata {}>", (N - 1) * 3 + 1_000_000)
    );
    // Generous: linear work is a few milliseconds even unoptimised; quadratic was seconds.
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");
}

#[test]
fn stat_values_and_references_resolve_to_names() {
    let stats = [
        stat_i64(1, -5),
        Pb::new().int(1, 2).varint(3, u64::MAX),
        Pb::new().int(1, 3).fixed64(2, 2.5f64.to_bits()),
        Pb::new().int(1, 4).str(5, "hello"),
        Pb::new().int(1, 5).bytes(6, &[0, 1, 2]),
        Pb::new().int(1, 6).int(7, 7),
        Pb::new().int(1, 6).int(7, 12_345),
        stat_i64(99, 1),
        // Integers of 1 to 8 bytes take the decoder's copy-through path.
        Pb::new().int(1, 8).int(4, 1 << 34),
        Pb::new().int(1, 9).varint(3, (1 << 56) - 1),
        Pb::new().int(1, 3),
    ];
    let mut e = event(1, 0, 10);
    for s in &stats {
        e = e.msg(4, s.clone());
    }
    let mut plane = Pb::new().str(2, "/device:TPU:0");
    for (id, name) in [
        (1, "i"),
        (2, "u"),
        (3, "d"),
        (4, "s"),
        (5, "b"),
        (6, "r"),
        (8, "i2"),
        (9, "u2"),
    ] {
        plane = plane.msg(5, stat_md(id, name));
    }
    plane = plane.msg(5, stat_md(7, "fusion.1"));
    for s in &stats {
        plane = plane.msg(6, s.clone());
    }
    let md = Pb::new()
        .int(1, 1)
        .str(2, "op")
        .str(4, "op display")
        .bytes(3, b"\x08\x01")
        .msg(5, Pb::new().int(1, 6).int(7, 7));
    plane = plane
        .msg(4, Pb::new().int(1, 1).msg(2, md))
        .msg(3, Pb::new().str(2, "line").msg(4, e));
    let p = check(&space([plane]), &|| "stat values".into()).unwrap();

    let plane = &p.planes[0];
    let blob = |v: Option<StatValue>| match v {
        Some(StatValue::Bytes(b)) => p.blob(b).to_vec(),
        v => panic!("not bytes: {v:?}"),
    };
    let ref_name = |v: Option<StatValue>| match v {
        Some(StatValue::Ref(s)) => p.str(s).to_string(),
        v => panic!("not a reference: {v:?}"),
    };
    for (where_, st) in [
        ("event", plane.lines[0].events.stats(0)),
        ("plane", plane.stats()),
    ] {
        let all: Vec<_> = st.iter().collect();
        assert_eq!(all.len(), stats.len(), "{where_}");
        assert_eq!(st.get(key(&p, "i")), Some(StatValue::I64(-5)), "{where_}");
        assert_eq!(
            st.get(key(&p, "u")),
            Some(StatValue::U64(u64::MAX)),
            "{where_}"
        );
        assert_eq!(st.get(key(&p, "d")), Some(StatValue::F64(2.5)), "{where_}");
        assert_eq!(
            st.get(key(&p, "i2")),
            Some(StatValue::I64(1 << 34)),
            "{where_}"
        );
        assert_eq!(
            st.get(key(&p, "u2")),
            Some(StatValue::U64((1 << 56) - 1)),
            "{where_}"
        );
        match st.get(key(&p, "s")) {
            Some(StatValue::Str(s)) => assert_eq!(p.str(s), "hello"),
            v => panic!("{where_}: not a string: {v:?}"),
        }
        assert_eq!(blob(st.get(key(&p, "b"))), [0, 1, 2], "{where_}");
        let refs: Vec<String> = all
            .iter()
            .filter(|s| s.key == key(&p, "r"))
            .map(|s| ref_name(Some(s.value)))
            .collect();
        assert_eq!(refs, ["fusion.1", "<stat 12345>"], "{where_}");
        assert_eq!(
            st.get(key(&p, "<stat 99>")),
            Some(StatValue::I64(1)),
            "{where_}"
        );
        // A stat with a key and no value: the last one with key 3.
        assert_eq!(all.last().unwrap().key, key(&p, "d"));
        assert_eq!(all.last().unwrap().value, StatValue::None);
    }
    let md = &plane.event_metadata[0];
    assert_eq!((md.id, p.str(md.name)), (1, "op"));
    assert_eq!(p.str(md.display_name), "op display");
    assert_eq!(p.blob(md.metadata.unwrap()), b"\x08\x01");
    assert_eq!(ref_name(md.stats().get(key(&p, "r"))), "fusion.1");

    // Two unknown ids (99, 12345) in the event and two in the plane stats.
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    let w = &p.import_warnings[0];
    assert!(
        w.starts_with("4 stats") && w.contains("stat metadata id"),
        "{w}"
    );
}

/// The decoder's copy-through path takes integers of up to 10 bytes and references to ids of one
/// and two bytes; what it copies must read back as the general path would decode it.
#[test]
fn long_integers_and_two_byte_references_read_back_as_written() {
    // A tenth byte with bits beyond 64 (no producer writes one): they are dropped.
    let mut overlong = Pb::new().int(1, 6).tag(4, VARINT);
    overlong.0.extend_from_slice(&[0xff; 9]);
    overlong.0.push(0x7f);
    let stats = [
        stat_i64(1, i64::MIN),
        Pb::new().int(1, 2).varint(3, 1 << 60),
        Pb::new().int(1, 3).int(7, 200),
        Pb::new().int(1, 4).int(7, 300),
        Pb::new().int(1, 5).int(7, 127),
        Pb::new().int(1, 7).int(7, 128),
        stat_i64(200, -7),
        overlong,
        Pb::new().int(1, 8).int(7, 16_000),
    ];
    let mut e = event(1, 0, 10);
    for s in &stats {
        e = e.msg(4, s.clone());
    }
    let mut plane = Pb::new().str(2, "/host:CPU");
    for id in 1..=300 {
        plane = plane.msg(5, stat_md(id, &format!("k{id}")));
    }
    plane = plane
        .msg(4, event_md(1, "op"))
        .msg(3, Pb::new().str(2, "line").msg(4, e));
    let p = check(&space([plane]), &|| "long integers".into()).unwrap();
    let st = p.planes[0].lines[0].events.stats(0);
    let get = |name: &str| st.get(key(&p, name));
    let ref_name = |name: &str| match get(name) {
        Some(StatValue::Ref(s)) => p.str(s).to_string(),
        v => panic!("{name}: not a reference: {v:?}"),
    };
    assert_eq!(st.iter().count(), stats.len());
    assert_eq!(get("k1"), Some(StatValue::I64(i64::MIN)));
    assert_eq!(get("k2"), Some(StatValue::U64(1 << 60)));
    assert_eq!(ref_name("k3"), "k200");
    assert_eq!(ref_name("k4"), "k300");
    assert_eq!(ref_name("k5"), "k127");
    assert_eq!(ref_name("k7"), "k128");
    assert_eq!(get("k200"), Some(StatValue::I64(-7)));
    assert_eq!(get("k6"), Some(StatValue::I64(-1)));
    assert_eq!(ref_name("k8"), "<stat 16000>");
}

#[test]
fn events_out_of_order_are_sorted_with_their_stats_and_occurrences() {
    let ev = |md, off, dur| event(md, off, dur).msg(4, stat_i64(1, off));
    let line = Pb::new()
        .int(1, 7)
        .str(2, "python3")
        .int(3, 1_000)
        .int(9, 300)
        .int(10, 8)
        .str(11, "Python")
        .msg(4, ev(1, 10, 5))
        .msg(4, ev(2, 20, 5).int(5, 3))
        .msg(4, ev(1, 0, 100))
        .msg(4, ev(2, 200, 1).int(5, 7));
    let plane = Pb::new()
        .int(1, 42)
        .str(2, "/host:CPU")
        .msg(5, stat_md(1, "at"))
        .msg(4, event_md(1, "a"))
        .msg(4, event_md(2, "b"))
        .msg(3, line);
    let p = check(&space([plane]), &|| "out of order".into()).unwrap();
    assert!(p.import_warnings.is_empty(), "{:?}", p.import_warnings);
    let plane = &p.planes[0];
    assert_eq!((plane.id, p.str(plane.name)), (42, "/host:CPU"));
    let line = &plane.lines[0];
    assert_eq!((line.id, line.display_id), (7, 8));
    assert_eq!(
        (p.str(line.name), p.str(line.display_name)),
        ("python3", "Python")
    );
    assert_eq!((line.timestamp_ns, line.duration_ps), (1_000, 300));
    let e = &line.events;
    assert_eq!(e.starts(), [0, 10, 20, 200]);
    assert!(e.starts().windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(e.durations(), [100, 5, 5, 1]);
    assert_eq!(e.depths(), [0, 1, 1, 0]);
    let names: Vec<&str> = (0..4)
        .map(|i| p.str(plane.metadata_of(line, i).unwrap().name))
        .collect();
    assert_eq!(names, ["a", "a", "b", "b"]);
    for i in 0..4 {
        assert_eq!(
            e.stats(i).get(key(&p, "at")),
            Some(StatValue::I64(e.start(i))),
            "event {i} lost its stats"
        );
    }
    assert_eq!(e.occurrences(), [(2, 3), (3, 7)]);
    // The line starts 1000 ns into the producer's clock and its first event is at its start.
    assert_eq!(p.origin_ps, 1_000_000);
    assert!(!p.origin_is_wall_clock);
}

#[test]
fn lines_are_placed_on_one_time_axis() {
    let line =
        |name: &str, ts: i64, off: i64| Pb::new().str(2, name).int(3, ts).msg(4, event(1, off, 10));
    // Two relative lines: 5 ns apart.
    let plane = Pb::new()
        .str(2, "p")
        .msg(4, event_md(1, "op"))
        .msg(3, line("a", 100, 0))
        .msg(3, line("b", 105, 0))
        .msg(3, Pb::new().str(2, "empty").int(3, 1));
    let p = check(&space([plane]), &|| "relative lines".into()).unwrap();
    let starts: Vec<&[i64]> = p.planes[0]
        .lines
        .iter()
        .map(|l| l.events.starts())
        .collect();
    assert_eq!(starts, [&[0][..], &[5_000], &[]]);
    assert_eq!(p.origin_ps, 100_000);
    assert!(p.import_warnings.is_empty(), "{:?}", p.import_warnings);

    // A line at 0 next to a wall-clock one: too far apart for one i64 picosecond axis. The
    // decoder keeps the wall-clock line's events at their offsets and says so.
    let epoch_ns = 1_700_000_000_000_000_000;
    let plane = Pb::new()
        .str(2, "p")
        .msg(4, event_md(1, "op"))
        .msg(3, line("relative", 0, 5_000))
        .msg(3, line("wall", epoch_ns, 7_000));
    let p = check(&space([plane]), &|| "relative and wall-clock lines".into()).unwrap();
    let lines = &p.planes[0].lines;
    assert_eq!(lines[0].events.starts(), [0]);
    assert_eq!(lines[1].events.starts(), [2_000]);
    assert_eq!(lines[1].timestamp_ns, epoch_ns);
    assert!(!p.origin_is_wall_clock);
    assert_eq!(p.origin_ps, 5_000);
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    assert!(
        p.import_warnings[0].contains("`wall`") && p.import_warnings[0].contains("too far"),
        "{:?}",
        p.import_warnings
    );

    // Extreme offsets: nothing overflows and every start stays non-negative.
    for (ts, offs) in [
        (0, [i64::MIN, i64::MAX]),
        (i64::MAX, [i64::MIN, 0]),
        (i64::MIN, [-1, i64::MAX]),
        (-5, [i64::MIN + 1, i64::MIN]),
    ] {
        let plane = Pb::new()
            .str(2, "p")
            .msg(3, line("x", ts, offs[0]))
            .msg(3, line("y", 0, offs[1]));
        let p = check(&space([plane]), &|| format!("extreme times {ts} {offs:?}")).unwrap();
        let (min, _) = p.span().unwrap();
        assert_eq!(min, 0, "{ts} {offs:?}");
    }
}

#[test]
fn child_ids_packed_and_unpacked() {
    let mut packed = Vec::new();
    for v in [3u64, 300, 70_000, (-2i64) as u64] {
        put_varint(&mut packed, v);
    }
    let md = Pb::new()
        .int(1, 5)
        .str(2, "fusion")
        .int(6, 1)
        .int(6, 2)
        .bytes(6, &packed)
        .int(6, 4)
        .bytes(6, &[]);
    let plane = Pb::new().str(2, "p").msg(4, Pb::new().int(1, 5).msg(2, md));
    let p = check(&space([plane]), &|| "child ids".into()).unwrap();
    let md = &p.planes[0].event_metadata[0];
    assert_eq!(md.child_ids, [1, 2, 3, 300, 70_000, -2, 4]);

    // A packed list that ends inside a varint is an error at that varint.
    let md = Pb::new().int(1, 5).bytes(6, &[0x05, 0x80]);
    let bytes = space([Pb::new().msg(4, Pb::new().int(1, 5).msg(2, md))]);
    let e = decode(&bytes).unwrap_err();
    assert_eq!(e.offset as usize, bytes.len() - 1, "{e}");
    assert!(e.message.contains("truncated varint"), "{e}");
}

#[test]
fn empty_messages_and_map_entry_fallbacks() {
    // An empty plane, an empty stat, an empty metadata entry, an empty line and an empty event.
    let plane = Pb::new()
        .msg(6, Pb::new())
        .msg(4, Pb::new())
        .msg(3, Pb::new())
        .msg(3, Pb::new().msg(4, Pb::new()));
    // Entries whose key is missing (the value's id is used) or differs from it (the key wins).
    let keyless = Pb::new().msg(2, Pb::new().int(1, 9).str(2, "from value"));
    let keyed = Pb::new()
        .int(1, 10)
        .msg(2, Pb::new().int(1, 11).str(2, "from key"));
    let named = Pb::new()
        .str(2, "named")
        .msg(4, keyless)
        .msg(4, keyed)
        .msg(5, Pb::new().msg(2, Pb::new().int(1, 3).str(2, "k3")))
        .msg(6, stat_i64(3, 1))
        .msg(3, Pb::new().msg(4, event(9, 0, 1)).msg(4, event(10, 1, 1)));
    let p = check(&space([Pb::new(), plane, named]), &|| {
        "empty messages".into()
    })
    .unwrap();
    assert_eq!(p.planes.len(), 3);
    let empty = &p.planes[0];
    assert_eq!((empty.id, p.str(empty.name)), (0, ""));
    assert!(empty.lines.is_empty() && empty.event_metadata.is_empty());

    let plane = &p.planes[1];
    let stats: Vec<_> = plane.stats().iter().collect();
    assert_eq!(stats.len(), 1);
    assert_eq!(p.str(stats[0].key), "<stat 0>");
    assert_eq!(stats[0].value, StatValue::None);
    assert_eq!(plane.event_metadata.len(), 1);
    assert_eq!(
        (
            plane.event_metadata[0].id,
            p.str(plane.event_metadata[0].name)
        ),
        (0, "")
    );
    assert_eq!(plane.lines.len(), 2);
    assert!(plane.lines[0].events.is_empty());
    let line = &plane.lines[1];
    assert_eq!(line.events.len(), 1);
    assert_eq!((line.events.start(0), line.events.dur(0)), (0, 0));
    assert_eq!(plane.metadata_of(line, 0).unwrap().id, 0);

    let plane = &p.planes[2];
    let line = &plane.lines[0];
    let md: Vec<(i64, &str)> = (0..2)
        .map(|i| plane.metadata_of(line, i).unwrap())
        .map(|m| (m.id, p.str(m.name)))
        .collect();
    assert_eq!(md, [(9, "from value"), (10, "from key")]);
    assert_eq!(plane.stats().get(key(&p, "k3")), Some(StatValue::I64(1)));
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    assert!(p.import_warnings[0].starts_with("1 stats"));
}

#[test]
fn producer_errors_hostnames_and_unknown_fields() {
    // Unknown fields of every wire type in every message are skipped.
    let junk = |m: Pb| {
        m.varint(100, 1)
            .fixed64(101, 2)
            .str(102, "x")
            .fixed32(103, 3)
    };
    let plane = junk(
        Pb::new()
            .str(2, "p")
            .msg(4, junk(event_md(1, "op")))
            .msg(5, junk(stat_md(2, "s")))
            .msg(
                3,
                junk(Pb::new().msg(4, junk(event(1, 0, 5)).msg(4, junk(stat_i64(2, 8))))),
            ),
    );
    let bytes = junk(
        Pb::new()
            .str(2, "producer error")
            .msg(1, plane)
            .str(3, "producer warning")
            .str(4, "host-a")
            .bytes(4, b"host-\xff"),
    );
    let p = check(&bytes.0, &|| "unknown fields".into()).unwrap();
    assert_eq!(p.errors, ["producer error"]);
    assert_eq!(p.warnings, ["producer warning"]);
    assert_eq!(p.hostnames, ["host-a", "host-\u{fffd}"]);
    let plane = &p.planes[0];
    assert_eq!(plane.event_count(), 1);
    let line = &plane.lines[0];
    assert_eq!(p.str(plane.metadata_of(line, 0).unwrap().name), "op");
    assert_eq!(
        line.events.stats(0).get(key(&p, "s")),
        Some(StatValue::I64(8))
    );
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    assert!(p.import_warnings[0].contains("UTF-8"));
}
