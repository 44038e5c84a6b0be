//! Stat keys: lines know theirs, common ones get one-byte ids, and stats left out are counted.

use xlens_model::Profile;
use xlens_xspace::decode;

use super::fixtures;
use super::wire::{event, event_md, space, stat_i64, stat_md, Pb};

#[test]
fn decoded_lines_know_their_stat_keys() {
    // Readers skip lines by `may_have_stat`: on real profiles it must be exact (true for every
    // key some event of the line has, false for every other key of the profile).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
    for (file, gz) in [
        ("plugins/profile/jax_mlp_small/vm.xplane.pb", false),
        ("plugins/profile/tf_keras_cnn_small/vm.xplane.pb.gz", true),
    ] {
        let raw = std::fs::read(root.join(file)).unwrap();
        let bytes = if gz {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut out)
                .unwrap();
            out
        } else {
            raw
        };
        let p = xlens_xspace::decode(&bytes).unwrap();
        let mut all = std::collections::BTreeSet::new();
        for plane in &p.planes {
            for line in &plane.lines {
                for i in 0..line.events.len() {
                    all.extend(line.events.stats(i).iter().map(|s| s.key));
                }
            }
        }
        assert!(all.len() > 3, "{file}");
        let mut skippable = 0;
        for plane in &p.planes {
            for line in &plane.lines {
                let ev = &line.events;
                let has: std::collections::BTreeSet<_> = (0..ev.len())
                    .flat_map(|i| ev.stats(i).iter().map(|s| s.key))
                    .collect();
                for k in &all {
                    assert_eq!(ev.may_have_stat(*k), has.contains(k), "{file}");
                    skippable += usize::from(!has.contains(k));
                }
            }
        }
        assert!(skippable > 0, "{file}");
    }
}

#[test]
fn flow_and_op_stat_names_get_one_byte_ids() {
    // The stat names events carry most are interned first: ids below 16 keep each of their
    // stats' headers to one byte in the model.
    let mut seen = 0;
    for (file, bytes) in fixtures() {
        let p = decode(bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        for name in [
            "_p",
            "_c",
            "_pt",
            "_ct",
            "hlo_op",
            "correlation_id",
            "group_id",
        ] {
            if let Some(k) = p.key(name) {
                assert!(k.0 < 16, "{file}: {name} has id {}", k.0);
                seen += 1;
            }
        }
    }
    assert!(seen >= 4, "the fixtures carry flow and op stats");
}

#[test]
fn stats_left_out_are_counted_and_only_they_are_missing() {
    let e = event(1, 0, 10)
        // One-byte key, integer: the fast path.
        .msg(4, stat_i64(5, 1_234_567))
        // A two-byte key: the general path.
        .msg(4, stat_i64(200, 7))
        // A string value: the general path.
        .msg(4, Pb::new().int(1, 6).str(5, "gpu:0"))
        .msg(4, stat_i64(7, 3))
        // A flow stat: always read, even when asked to leave it out.
        .msg(4, Pb::new().int(1, 1).varint(3, 99));
    let plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(5, stat_md(1, "_p"))
        .msg(5, stat_md(5, "run_id"))
        .msg(5, stat_md(6, "device_ordinal"))
        .msg(5, stat_md(7, "kept"))
        .msg(5, stat_md(200, "_src"))
        .msg(4, event_md(1, "op"))
        .msg(3, Pb::new().str(2, "line").msg(4, e));
    let bytes = space([plane]);
    let names = |p: &Profile| -> Vec<String> {
        p.planes[0].lines[0]
            .events
            .stats(0)
            .iter()
            .map(|s| p.str(s.key).to_string())
            .collect()
    };
    let full = decode(&bytes).unwrap();
    assert_eq!(
        names(&full),
        ["run_id", "_src", "device_ordinal", "kept", "_p"]
    );
    assert_eq!(
        (full.stats_left_out, full.partial_read.is_none()),
        (0, true)
    );
    let left = ["run_id", "_src", "device_ordinal", "_p", "absent"];
    let leave = xlens_xspace::LeaveOut {
        stats: &left,
        flow_stats: false,
        lines: false,
        planes: None,
    };
    let part =
        xlens_xspace::decode_leaving_out(&bytes, &|_, _| {}, leave, xlens_xspace::Release::Lines)
            .unwrap();
    assert_eq!(names(&part), ["kept", "_p"]);
    assert_eq!(part.stats_left_out, 3);
    let note = part.partial_read.clone().unwrap_or_default();
    assert!(
        note.starts_with("3 event stats not read (run_id, _src"),
        "{note}"
    );
    // On several threads (every plane's lines decoded in parallel) the same.
    let par = xlens_xspace::decode_options(
        &bytes,
        &|_, _| {},
        4,
        0,
        leave,
        xlens_xspace::Release::Lines,
    )
    .unwrap();
    assert_eq!((names(&par), par.stats_left_out), (names(&part), 3));
}
