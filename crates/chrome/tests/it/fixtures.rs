//! The importer on the PyTorch traces committed under `fixtures/pytorch/`. Expected figures were
//! counted from the JSON with Python's `json` module (event counts by phase and category) or
//! worked out by hand from the file's text (times).

use std::io::Read;
use std::path::PathBuf;
use xlens_model::{Profile, StatValue};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/pytorch")
        .join(name);
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn plane_events(p: &Profile, name: &str) -> usize {
    p.plane(name).map_or(0, |pl| pl.event_count())
}

/// Every value of stat `key` over every event of the profile.
fn stat_values(p: &Profile, key: &str) -> Vec<StatValue> {
    let Some(k) = p.key(key) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for pl in &p.planes {
        for l in &pl.lines {
            for i in 0..l.events.len() {
                if let Some(v) = l.events.stats(i).get(k) {
                    out.push(v);
                }
            }
        }
    }
    out
}

#[test]
fn two_ranks_of_a_job_become_host_and_gpu_planes() {
    let p = xlens_chrome::decode(&fixture(
        "two_ranks/hta-trace_filter-sampled_rank-0.json.gz",
    ))
    .unwrap();
    // cpu_op 2329 + cuda_runtime 1204 + user_annotation 73 on the host; kernel 1154 +
    // gpu_memcpy 40 + gpu_memset 10 on device 0.
    assert_eq!(plane_events(&p, "/host:CPU"), 3606);
    assert_eq!(plane_events(&p, "/device:GPU:0"), 1204);
    let host = p.plane("/host:CPU").unwrap();
    let rank = p.key("rank").and_then(|k| host.stats().get(k));
    assert_eq!(rank, Some(StatValue::I64(0)));
    let world = p.key("world_size").and_then(|k| host.stats().get(k));
    assert_eq!(world, Some(StatValue::I64(128)));
    // Two steps, ProfilerStep#551 and #552, marked as step roots.
    let mut steps: Vec<i64> = stat_values(&p, "step_num")
        .iter()
        .filter_map(|v| v.as_i64())
        .collect();
    steps.sort();
    assert_eq!(steps, vec![551, 552]);
    assert_eq!(stat_values(&p, "_r").len(), 2);
    // Every kernel and copy carries its correlation as `correlation_id` (1204 on the device,
    // 1204 runtime calls on the host).
    assert_eq!(stat_values(&p, "correlation_id").len(), 2408);
    // Wall clock: the file's times are epoch microseconds (2023-04-29).
    assert!(p.origin_is_wall_clock);
    assert_eq!(p.origin_ps / 1_000_000_000_000, 1_682_725_897);
    assert!(p.import_warnings.is_empty(), "{:?}", p.import_warnings);
}

#[test]
fn fractional_microseconds_are_kept_to_the_picosecond() {
    let p = xlens_chrome::decode(&fixture("hta-triton_example-triton_example.json.gz")).unwrap();
    // The earliest time is 2413668742269.099 us after baseTimeNanoseconds 1727743122000000000.
    assert_eq!(
        p.origin_ps,
        1_727_743_122_000_000_000_000 + 2_413_668_742_269_099_000
    );
    let gpu = p.plane("/device:GPU:0").expect("device 0");
    let line = &gpu.lines[0];
    assert_eq!(p.str(line.name), "Stream #7");
    // The kernel: ts 2413669097444.592, dur 1.760 (us).
    assert_eq!(line.events.len(), 1);
    assert_eq!(line.events.start(0), 355_175_493_000);
    assert_eq!(line.events.dur(0), 1_760_000);
    let kd = p.key("kernel_details").unwrap();
    let details = line
        .events
        .stats(0)
        .get(kd)
        .and_then(|v| v.as_str_id())
        .unwrap();
    assert_eq!(
        p.str(details),
        "regs:16 static_shared:0 dynamic_shared:0 grid:1,1,1 block:128,1,1 occ_pct:0"
    );
}

#[test]
fn amd_trace_keeps_annotations_apart_and_binds_fwdbwd_flows() {
    let p = xlens_chrome::decode(&fixture(
        "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    ))
    .unwrap();
    // Device 2: 14 kernels, 2 copies and 2 GPU user annotations.
    let gpu = p.plane("/device:GPU:2").expect("device 2");
    let count = |prefix: &str| -> usize {
        gpu.lines
            .iter()
            .filter(|l| p.str(l.name).starts_with(prefix))
            .map(|l| l.events.len())
            .sum()
    };
    assert_eq!(count("Stream #"), 16);
    assert_eq!(count("Annotations, stream "), 2);
    // Four fwdbwd flows, each bound at both ends; the 16 + 21 launch flows (ac2g) are links
    // through correlation_id instead.
    assert_eq!(stat_values(&p, "_p").len(), 4);
    assert_eq!(stat_values(&p, "_c").len(), 4);
}

#[test]
fn cpu_only_trace_has_no_device_and_reads_its_rank() {
    let p = xlens_chrome::decode(&fixture(
        "hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    ))
    .unwrap();
    // user_annotation 11 + cpu_op 4 on the host.
    assert_eq!(plane_events(&p, "/host:CPU"), 15);
    assert!(p
        .planes
        .iter()
        .all(|pl| !p.str(pl.name).starts_with("/device:")));
    let host = p.plane("/host:CPU").unwrap();
    let rank = p.key("rank").and_then(|k| host.stats().get(k));
    assert_eq!(rank, Some(StatValue::I64(34)));
}

#[test]
fn malformed_input_is_an_error_or_a_warning_never_a_panic() {
    // Truncated: an error that says so.
    let bytes = fixture("two_ranks/hta-trace_filter-sampled_rank-1.json.gz");
    let e = xlens_chrome::decode(&bytes[..bytes.len() / 2])
        .unwrap_err()
        .to_string();
    assert!(e.contains("ends early"), "{e}");
    // Not a trace.
    let e = xlens_chrome::decode(br#"{"foo": 1}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("traceEvents"), "{e}");
    // NaN is not JSON.
    let e = xlens_chrome::decode(br#"[{"ph":"X","ts":NaN,"dur":1,"pid":1,"tid":1}]"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid JSON"), "{e}");
    // An unmatched E, an unclosed B, an event without ts, an unknown phase, overlapping slices
    // that do not nest: imported, each counted in a warning.
    let p = xlens_chrome::decode(
        br#"[
        {"ph":"E","ts":1,"pid":1,"tid":1},
        {"ph":"B","name":"open","ts":2,"pid":1,"tid":1},
        {"ph":"X","name":"a","ts":10,"dur":10,"pid":1,"tid":2},
        {"ph":"X","name":"b","ts":15,"dur":10,"pid":1,"tid":2},
        {"ph":"X","name":"no time","dur":10,"pid":1,"tid":2},
        {"ph":"Q","name":"odd","ts":3,"pid":1,"tid":2}
    ]"#,
    )
    .unwrap();
    let w = p.import_warnings.join("\n");
    for want in [
        "1 end events",
        "1 begin events",
        "1 events without a readable `ts`",
        "1 events of phase `Q`",
        "1 extra lines",
    ] {
        assert!(w.contains(want), "{want} in {w}");
    }
    let host = p.plane("/host:CPU").unwrap();
    // `open` (closed at the trace's end), `a`, and `b` on a line of its own.
    assert_eq!(host.event_count(), 3);
    assert!(host
        .lines
        .iter()
        .any(|l| p.str(l.name) == "thread 2 (overlap 1)"));
}

#[test]
fn cut_or_corrupted_files_never_panic() {
    let bytes = fixture("hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    let mut seed = 12345u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for k in 0..400 {
        let mut b = bytes.clone();
        if k % 2 == 0 {
            b.truncate(next() % b.len());
        } else {
            for _ in 0..4 {
                let at = next() % b.len();
                let alphabet = b"{}[]\":,0123456789-.eE XBEisftbenMC";
                b[at] = alphabet[next() % alphabet.len()];
            }
        }
        let full = xlens_chrome::decode(&b);
        // A partial read skims past host slices (their brackets and strings checked, not every
        // JSON rule): it never panics, and where it reads a file a full read reads, its GPU
        // planes are the same.
        let partial = xlens_chrome::decode_with(&b, Some(xlens_chrome::GPU_ACTIVITY));
        if let (Ok(f), Ok(p)) = (&full, &partial) {
            let gpu = |x: &xlens_model::Profile| -> Vec<usize> {
                x.planes
                    .iter()
                    .filter(|pl| x.str(pl.name).starts_with("/device:GPU"))
                    .map(|pl| pl.event_count())
                    .collect()
            };
            assert_eq!(gpu(f), gpu(p), "mutation {k}");
        }
    }
}

/// A read for the GPU's activity keeps only the `stream` and `correlation` args of the slices it
/// reads, and says how many others it did not import. Expected counts: Python's `json` module
/// over the file, counting the args of every timed event that is not metadata, a counter, a
/// flow or a left-out operator slice, less those two keys (166 and 29).
#[test]
fn a_gpu_activity_read_keeps_only_the_args_htas_loaders_read() {
    for (name, not_read) in [
        (
            "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            166,
        ),
        ("hta-triton_example-triton_example.json.gz", 29),
    ] {
        let b = fixture(name);
        let full = xlens_chrome::decode(&b).unwrap();
        let part = xlens_chrome::decode_with(&b, Some(xlens_chrome::GPU_ACTIVITY)).unwrap();
        // GPU events (with a stream) are all read, with their stream and correlation.
        let gpu = |p: &Profile, key: &str| -> Vec<String> {
            let Some(k) = p.key(key) else {
                return Vec::new();
            };
            p.planes
                .iter()
                .filter(|pl| p.str(pl.name).starts_with("/device:GPU"))
                .flat_map(|pl| &pl.lines)
                .flat_map(|l| (0..l.events.len()).filter_map(move |i| l.events.stats(i).get(k)))
                .map(|v| match v {
                    StatValue::Str(s) => p.str(s).to_string(),
                    v => format!("{v:?}"),
                })
                .collect()
        };
        assert!(!gpu(&full, "correlation").is_empty(), "{name}");
        assert_eq!(
            gpu(&part, "correlation"),
            gpu(&full, "correlation"),
            "{name}"
        );
        assert_eq!(gpu(&part, "correlation_id"), gpu(&full, "correlation_id"));
        assert_eq!(gpu(&part, "stream"), gpu(&full, "stream"), "{name}");
        assert!(stat_values(&part, "External id").is_empty(), "{name}");
        assert!(!stat_values(&full, "External id").is_empty(), "{name}");
        // No flow is bound: the forward→backward ones join operator slices, which it leaves
        // out (the ROCm trace has four, bound at both ends in a full read).
        for key in ["_p", "_c"] {
            assert!(stat_values(&part, key).is_empty(), "{name}");
        }
        if name.contains("amd_trace") {
            assert_eq!(stat_values(&full, "_p").len(), 4);
            assert_eq!(stat_values(&full, "_c").len(), 4);
        }
        let note = part.partial_read.clone().unwrap_or_default();
        assert!(
            note.contains(&format!(
                "{not_read} args other than stream, correlation not read"
            )),
            "{name}: {note}"
        );
    }
}

/// A read for the GPU's activity leaves a slice's unkept args out as it reads them when `ph`
/// comes first (as Kineto writes it), and in the importer when `ph` comes after `args`: the
/// profile and its note are the same either way. Counted by hand: two kernels, each with two of
/// its four args not kept.
#[test]
fn unkept_args_are_left_out_alike_whatever_the_order_of_members() {
    let args = r#""args": {"queued": 0, "stream": 7, "grid": [1, 1, 1], "correlation": 5}"#;
    let head = r#""cat": "kernel", "name": "k", "pid": 0, "tid": 7"#;
    let ph_first = format!(
        r#"{{"traceEvents": [{{"ph": "X", {head}, "ts": 10.5, "dur": 2, {args}}}, {{"ph": "X", {head}, "ts": 20, "dur": 1.25, {args}}}]}}"#
    );
    let args_first = format!(
        r#"{{"traceEvents": [{{{args}, "ph": "X", {head}, "ts": 10.5, "dur": 2}}, {{{args}, {head}, "ph": "X", "ts": 20, "dur": 1.25}}]}}"#
    );
    let mut seen = Vec::new();
    for text in [&ph_first, &args_first] {
        let p = xlens_chrome::decode_with(text.as_bytes(), Some(xlens_chrome::GPU_ACTIVITY))
            .expect("a valid trace");
        let note = p.partial_read.clone().unwrap_or_default();
        assert!(
            note.contains("4 args other than stream, correlation not read"),
            "{note}"
        );
        assert_eq!(
            stat_values(&p, "stream"),
            vec![StatValue::I64(7), StatValue::I64(7)]
        );
        assert_eq!(stat_values(&p, "correlation").len(), 2);
        assert!(stat_values(&p, "grid").is_empty());
        assert!(stat_values(&p, "queued").is_empty());
        seen.push(note);
    }
    assert_eq!(seen[0], seen[1]);
}
