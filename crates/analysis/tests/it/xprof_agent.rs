//! xlens against XProf's agent CLI (`xprof`, 2.24.2) on the same sessions: the answers XProf
//! gave, made by `fixtures/expected/xprof/agent/make.py` with `xprof` itself, on the fixtures
//! and on `../shared/samples` (whose absence fails in CI).

use crate::common::{open_run, root, run_tool};
use std::path::PathBuf;

/// The log directory of a reference's tag (see make.py), when it is here.
fn logdir(tag: &str) -> Option<PathBuf> {
    let samples = root().join("../shared/samples");
    let dir = match tag {
        "fixtures" => root().join("fixtures/logdir"),
        "xprof-testdata" => samples.join("xprof-testdata/logdir"),
        "jax" => samples.join("jax"),
        "tf" => samples.join("tf"),
        other => panic!("unknown tag {other}"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing in CI",
        dir.display()
    );
    eprintln!("SKIPPED: {} is not here", dir.display());
    None
}

/// The run of `session` in the log directory of `tag`, when that is here.
fn session_run(tag: &str, session: &str) -> Option<xlens_analysis::base::context::Run> {
    let dir = logdir(tag)?.join("plugins/profile").join(session);
    Some(open_run(xlens_store::discover(&dir).expect("discover")))
}

/// The answer for host `name` in a per-host tool's JSON.
fn host_answer<'a>(out: &'a serde_json::Value, name: &serde_json::Value) -> &'a serde_json::Value {
    let hosts = out["hosts"].as_array().expect("hosts");
    hosts
        .iter()
        .find(|h| &h["host"] == name)
        .unwrap_or_else(|| panic!("no host {name} in {hosts:?}"))
}

/// Each reference of `command`: (tag, session, XProf's answer).
fn references(command: &str) -> Vec<(String, String, serde_json::Value)> {
    let dir = root().join("fixtures/expected/xprof/agent").join(command);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .expect("references")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let tag = ["xprof-testdata", "fixtures", "jax", "tf"]
                .into_iter()
                .find(|t| stem.starts_with(&format!("{t}-")))
                .expect("a known tag");
            let session = stem[tag.len() + 1..].to_string();
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (tag.to_string(), session, v)
        })
        .collect();
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

/// For each reference of `command` whose session is here: `TAG/SESSION`, xlens's answer of
/// `tool` (with `query`) for the host file XProf read first (`files_used`), and XProf's answer.
fn first_host_answers(
    command: &str,
    tool: &str,
    query: &[(&str, &str)],
) -> Vec<(String, serde_json::Value, serde_json::Value)> {
    let mut out = Vec::new();
    for (tag, session, want) in references(command) {
        let Some(run) = session_run(&tag, &session) else {
            continue;
        };
        let answer = run_tool(tool, &run, query).json().unwrap();
        let used = &want["capture"]["files_used"][0];
        let host = host_answer(&answer, used).clone();
        out.push((format!("{tag}/{session}"), host, want));
    }
    out
}

#[test]
fn hlo_modules_are_the_modules_xprof_lists() {
    assert!(references("list_hlo_modules").len() >= 8);
    let mut compared = 0;
    // XProf reads one host file of a session (`files_used`): the same host here.
    for (what, host, want) in first_host_answers("list_hlo_modules", "hlo_modules", &[]) {
        let host = &host;
        let names: Vec<&str> = host["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        let xprof: Vec<&str> = want["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert_eq!(names, xprof, "{what}");
        assert_eq!(host["count"], want["count"], "{what}");
        assert_eq!(host["errors"], serde_json::json!([]), "{what}");
        // None: it says why.
        assert_eq!(host["note"].is_string(), xprof.is_empty(), "{what}");
        compared += 1;
    }
    eprintln!("{compared} sessions compared");
}

/// `ours` printed as XProf printed `theirs` (as many decimals, and a `%` when it has one).
fn printed_as(ours: f64, theirs: &str) -> String {
    let digits = theirs
        .trim_end_matches('%')
        .split_once('.')
        .map_or(0, |(_, d)| d.len());
    let pct = if theirs.ends_with('%') { "%" } else { "" };
    format!("{ours:.digits$}{pct}")
}

#[test]
fn kpi_figures_are_xprofs() {
    let refs = references("get_kpi_metrics");
    assert!(refs.len() >= 8, "{}", refs.len());
    let mut compared = 0;
    for (tag, session, want) in refs {
        let Some(run) = session_run(&tag, &session) else {
            continue;
        };
        let k = run_tool("kpi", &run, &[]).json().unwrap();
        let at = format!("{tag}/{session}");
        let kind = k["accelerator"]["kind"].as_str().unwrap();
        let text = |key: &str| want[key].as_str().unwrap_or_else(|| panic!("{at}: {key}"));
        // Where XProf prints zero (or -1, or N/A) for a figure the profile cannot give, xlens
        // answers null and says why in a note.
        let same = |ours: &serde_json::Value, theirs: &str, what: &str| {
            let zero = theirs
                .trim_end_matches('%')
                .parse::<f64>()
                .map_or(true, |v| v == 0.0);
            match ours.as_f64() {
                Some(v) => assert_eq!(printed_as(v, theirs), theirs, "{at}: {what}"),
                None => {
                    assert!(zero, "{at}: {what}: null where XProf says {theirs}");
                    let named = k["notes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|n| n.as_str().unwrap().starts_with(what));
                    assert!(named || what == "step_time_ms", "{at}: no note for {what}");
                }
            }
        };
        same(&k["step_time_ms"], text("step_time_ms"), "step_time_ms");
        same(
            &k["duty_cycle_percent"],
            text("duty_cycle_percent"),
            "duty_cycle_percent",
        );
        same(
            &k["mxu_utilization_percent"],
            text("mxu_utilization_percent"),
            "mxu_utilization_percent",
        );
        same(
            &k["roofline_utilization_percent"],
            text("roofline_utilization"),
            "roofline_utilization_percent",
        );
        let peak = want["peak_hbm_gib"].as_f64().unwrap();
        if peak < 0.0 {
            assert!(k["peak_memory_gib"].is_null(), "{at}: peak");
        } else {
            assert_eq!(k["peak_memory_gib"].as_f64(), Some(peak), "{at}: peak");
        }
        if let Some(hosts) = want["per_host_step_time_ms"].as_object() {
            assert_eq!(k["step_time_scope"], want["step_time_scope"], "{at}");
            for (h, v) in hosts {
                let ours = k["per_host_step_time_ms"][h].as_f64().unwrap();
                assert_eq!(
                    printed_as(ours, v.as_str().unwrap()),
                    v.as_str().unwrap(),
                    "{at}: {h}"
                );
            }
        }
        let acc = &want["accelerator_info"];
        let device_type = if kind == "TPU" {
            k["accelerator"]["model"].as_str().unwrap()
        } else {
            kind
        };
        assert_eq!(acc["device_type"].as_str(), Some(device_type), "{at}");
        assert_eq!(
            acc["device_core_count"].as_str(),
            Some(k["accelerator"]["cores"].to_string().as_str()),
            "{at}"
        );
        // XProf names XLA's cost model by default, also where no op has FLOPs; xlens says
        // `none` there.
        if k["flops_provenance"] != "none" && kind != "CPU" {
            assert_eq!(k["flops_provenance"], want["flops_provenance"], "{at}");
        }
        assert_eq!(
            k["derived_flops_fraction"], want["derived_flops_fraction"],
            "{at}"
        );
        // One definition in every view: the verdict is the overview's advice of the same host,
        // and a single host's step count and mean are the overview's.
        let o = run_tool("overview_page", &run, &[]).json().unwrap();
        let host = host_answer(&o, &k["verdict"]["host"]);
        for key in [
            "bottleneck",
            "summary",
            "suggestion",
            "tool",
            "worst_step",
            "window_ps",
        ] {
            assert_eq!(k["verdict"][key], host["advice"][key], "{at}: {key}");
        }
        if k["hosts"] == 1 {
            assert_eq!(k["step_count"], o["steps"]["count"], "{at}: steps");
            let mean_ps = o["steps"]["mean_ps"].as_f64().unwrap();
            let ours = k["step_time_ms"].as_f64().unwrap_or(0.0) * 1e9;
            assert!(
                (ours - mean_ps).abs() <= 1.0,
                "{at}: mean {ours} vs {mean_ps}"
            );
        }
        compared += 1;
    }
    eprintln!("{compared} sessions compared");
    assert!(compared >= 8 || std::env::var("CI").as_deref() != Ok("true"));
}

/// Within `ps` picoseconds (XProf reads times as doubles, a picosecond low at times) or a
/// relative 1e-12.
fn near(ours: &serde_json::Value, theirs: &serde_json::Value, ps: f64) -> bool {
    let (a, b) = (ours.as_f64().unwrap(), theirs.as_f64().unwrap());
    (a - b).abs() <= ps + 1e-12 * b.abs()
}

#[test]
fn events_and_their_aggregates_are_xprofs() {
    let cases: [(&str, &[(&str, &str)]); 3] = [
        ("aggregate_xplane_events", &[("limit", "0")]),
        (
            "aggregate_xplane_events-jit_by_plane_line",
            &[
                ("plane", "TPU|/host:CPU"),
                ("name", "^jit"),
                ("group_by", "plane,line"),
                ("limit", "0"),
            ],
        ),
        (
            "list_xplane_events-jit",
            &[("name", "^jit"), ("limit", "5")],
        ),
    ];
    let mut compared = 0;
    for (folder, params) in cases {
        let refs = references(folder);
        assert!(refs.len() >= 8, "{folder}: {}", refs.len());
        for (tag, session, want) in refs {
            // XProf pools the events of every host file it reads; xlens answers per host.
            let used = want["capture"]["files_used"].as_array().unwrap();
            if used.len() != 1 {
                continue;
            }
            let Some(run) = session_run(&tag, &session) else {
                continue;
            };
            let out = run_tool("events", &run, params).json().unwrap();
            let at = format!("{folder} {tag}/{session}");
            let h = host_answer(&out, &used[0]);
            let Some(rows) = want["aggregates"].as_array() else {
                assert_eq!(h["matched"], want["total_matched"], "{at}");
                compared += 1;
                continue;
            };
            assert_eq!(h["groups"], want["total_matched"], "{at}: groups");
            assert_eq!(h["scanned"], want["events_scanned"], "{at}: scanned");
            let ours = h["aggregates"].as_array().unwrap();
            for (i, (o, w)) in ours.iter().zip(rows).enumerate() {
                for key in ["event", "plane", "line", "count"] {
                    assert_eq!(o.get(key), w.get(key), "{at}: row {i}: {key}");
                }
                let n = w["count"].as_f64().unwrap();
                let sums = near(&o["total_duration_ps"], &w["total_duration_ps"], n);
                assert!(sums, "{at}: row {i}: total {o} {w}");
                for key in [
                    "avg_duration_ps",
                    "min_duration_ps",
                    "p50_duration_ps",
                    "p90_duration_ps",
                    "p99_duration_ps",
                    "max_duration_ps",
                ] {
                    assert!(near(&o[key], &w[key], 1.0), "{at}: row {i}: {key} {o} {w}");
                }
                assert!(
                    near(&o["std_dev_ps"], &w["std_dev_ps"], 1.0 + 1e-9 * n),
                    "{at}: row {i}: std {o} {w}"
                );
            }
            compared += 1;
        }
    }
    eprintln!("{compared} answers compared");
    assert!(compared >= 18 || std::env::var("CI").as_deref() != Ok("true"));
}

#[test]
fn roofline_program_and_ops_are_xprofs() {
    let refs = references("get_roofline_model");
    assert!(!refs.is_empty());
    let mut compared = 0;
    for (tag, session, want) in refs {
        // XProf combines a session's host files; xlens answers per host.
        let used = want["capture"]["files_used"].as_array().unwrap();
        if used.len() != 1 {
            continue;
        }
        let Some(run) = session_run(&tag, &session) else {
            continue;
        };
        let out = run_tool("roofline_model", &run, &[]).json().unwrap();
        let at = format!("{tag}/{session}");
        let h = host_answer(&out, &used[0]);
        let points = h["points"].as_array().unwrap();
        let prog = &points[0];
        let w = &want["program"];
        let eff = w["roofline_efficiency_percent"].as_str().unwrap();
        let ours = prog["roofline_efficiency"].as_f64().unwrap() * 100.0;
        assert_eq!(printed_as(ours, eff), eff, "{at}: program efficiency");
        let bw = prog["hbm_bw_gibps"].as_f64().unwrap();
        assert_eq!(
            format!("{bw:.2}"),
            format!("{:.2}", w["hbm_bw_gibs"].as_f64().unwrap())
        );
        assert_eq!(prog["bound_by"], w["bound_by"], "{at}");
        // The program's time: XProf's is 5.5 ms (0.0015%) shorter on tpu_inference.
        let t = prog["time_ps"].as_f64().unwrap() / 1e9;
        let wt = w["total_time_ms"].as_f64().unwrap();
        assert!(
            (t - wt).abs() <= 1e-4 * wt,
            "{at}: time {t} ms, XProf {wt} ms"
        );
        for op in want["top_operations"].as_array().unwrap() {
            let name = op["name"].as_str().unwrap();
            let ours = points
                .iter()
                .find(|p| p["kind"] == "op" && p["name"] == name)
                .unwrap_or_else(|| panic!("{at}: no op {name}"));
            let eff = op["roofline_efficiency_percent"].as_str().unwrap();
            let v = ours["roofline_efficiency"].as_f64().unwrap() * 100.0;
            assert_eq!(printed_as(v, eff), eff, "{at}: {name}");
            assert_eq!(ours["bound_by"], op["bound_by"], "{at}: {name}");
        }
        compared += 1;
    }
    assert!(compared >= 1 || std::env::var("CI").as_deref() != Ok("true"));
}

/// A module's rows as (instruction, MiB), XProf's label for the grouped small buffers in place of
/// ours (XProf names that group `unknown`: it has no defining instruction).
fn buffer_rows(m: &serde_json::Value) -> Vec<(String, f64)> {
    m["top_buffers"]
        .as_array()
        .expect("top_buffers")
        .iter()
        .map(|b| {
            let name = b["instruction"].as_str().unwrap();
            let name = if name.starts_with("small buffers (") {
                "unknown"
            } else {
                name
            };
            (name.to_string(), b["size_mib"].as_f64().unwrap())
        })
        .collect()
}

fn same_mib(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn peak_allocations_are_xprofs() {
    let mut compared = 0;
    for (folder, flags) in [
        ("get_peak_allocations", vec![]),
        (
            "get_peak_allocations-all",
            vec![
                ("limit", "0"),
                ("min_size_mib", "0.05"),
                ("no_aggregate", "true"),
            ],
        ),
    ] {
        assert!(references(folder).len() >= 6, "{folder}");
        for (session, host, want) in first_host_answers(folder, "peak_allocations", &flags) {
            let what = format!("{folder} {session}");
            assert_eq!(
                host["total_modules"], want["summary"]["total_modules"],
                "{what}"
            );
            let ours = host["modules"].as_array().unwrap();
            let theirs = want["modules"].as_array().unwrap();
            assert_eq!(ours.len(), theirs.len(), "{what}");
            for (o, t) in ours.iter().zip(theirs) {
                assert_eq!(o["module_name"], t["module_name"], "{what}");
                let (a, b) = (o["total_hbm_mib"].as_f64(), t["total_hbm_mib"].as_f64());
                assert!(same_mib(a.unwrap(), b.unwrap()), "{what}: {o} / {t}");
                let (ob, tb) = (buffer_rows(o), buffer_rows(t));
                assert_eq!(ob.len(), tb.len(), "{what}: {ob:?} / {tb:?}");
                for (x, y) in ob.iter().zip(&tb) {
                    assert!(x.0 == y.0 && same_mib(x.1, y.1), "{what}: {ob:?} / {tb:?}");
                }
            }
            compared += 1;
        }
    }
    assert!(compared >= 12 || std::env::var("CI").as_deref() != Ok("true"));
    eprintln!("{compared} answers compared");
}

#[test]
fn step_trace_is_xprofs() {
    let refs = references("get_step_trace-all");
    assert!(refs.len() >= 6, "{}", refs.len());
    let near = |a: &serde_json::Value, b: &serde_json::Value, tol: f64| {
        (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() <= tol
    };
    let mut compared = 0;
    for (tag, session, want) in refs {
        let Some(run) = session_run(&tag, &session) else {
            continue;
        };
        let theirs = want["step_breakdown"].as_array().unwrap();
        // XProf reads its pod viewer first, which lists every step by number; when no step
        // there has device, input or output time it reads the input pipeline's table, which
        // leaves out the first and last step as the overview does and names them.
        let pod = theirs.iter().all(|s| s["step_num"].is_i64());
        let mut flags = vec![("limit", "0")];
        if pod {
            flags.push(("all_steps", "true"));
        }
        let out = run_tool("step_trace", &run, &flags).json().unwrap();
        let used = want["capture"]["files_used"][0].as_str().unwrap();
        let host = host_answer(&out, &serde_json::json!(used));
        let what = format!("{tag}/{session}");
        assert_eq!(host["total_records"], want["total_records"], "{what}");
        let ours = host["step_breakdown"].as_array().unwrap();
        let mut same_input = true;
        for (a, b) in ours.iter().zip(theirs) {
            let w = format!("{what} step {}", b["step_num"]);
            let name = if pod { &a["step_num"] } else { &a["step_name"] };
            assert_eq!(name, &b["step_num"], "{w}");
            for k in [
                "step_time_ms",
                "compute_time_ms",
                "communication_time_ms",
                "outfeed_time_ms",
            ] {
                assert!(near(&a[k], &b[k], 1.01e-4), "{w} {k}: {} / {}", a[k], b[k]);
            }
            // Input here includes the loop's data-stage annotations, which XProf files as host
            // compute: input only grows, and input and idle together are XProf's.
            let (ai, bi) = (
                a["infeed_time_ms"].as_f64().unwrap(),
                b["infeed_time_ms"].as_f64().unwrap(),
            );
            assert!(ai >= bi - 1.01e-4, "{w}: input {ai} / {bi}");
            let sum = |s: &serde_json::Value| {
                s["infeed_time_ms"].as_f64().unwrap() + s["idle_time_ms"].as_f64().unwrap()
            };
            assert!((sum(a) - sum(b)).abs() <= 2.1e-4, "{w}: {a} / {b}");
            if (ai - bi).abs() <= 1.01e-4 {
                for k in ["infeed_percent", "idle_percent", "compute_percent"] {
                    assert!(near(&a[k], &b[k], 0.0101), "{w} {k}: {} / {}", a[k], b[k]);
                }
                assert!(near(&a["idle_time_ms"], &b["idle_time_ms"], 1.01e-4), "{w}");
                assert_eq!(a["bottleneck"], b["bottleneck"], "{w}");
            } else {
                same_input = false;
            }
        }
        let (sa, sb) = (&host["summary"], &want["summary"]);
        assert_eq!(sa["total_steps"], sb["total_steps"], "{what}");
        for k in [
            "step_time_ms_average",
            "step_time_ms_min",
            "step_time_ms_max",
            "step_time_ms_stddev",
            "compute_time_ms_average",
            "communication_time_ms_average",
            "outfeed_time_ms_average",
        ] {
            assert!(
                near(&sa[k], &sb[k], 1.01e-4),
                "{what} {k}: {} / {}",
                sa[k],
                sb[k]
            );
        }
        if same_input {
            for k in ["infeed_time_ms_average", "idle_time_ms_average"] {
                assert!(near(&sa[k], &sb[k], 1.01e-4), "{what} {k}");
            }
            assert_eq!(sa["primary_bottleneck"], sb["primary_bottleneck"], "{what}");
        }
        compared += 1;
    }
    assert!(compared >= 7 || std::env::var("CI").as_deref() != Ok("true"));
    eprintln!("{compared} sessions compared");
}

#[test]
fn async_overlap_is_xprofs() {
    assert!(references("analyze_async_overlap").len() >= 7);
    let mut compared = 0;
    let mut with_ops = 0;
    for (what, host, want) in first_host_answers("analyze_async_overlap", "async_overlap", &[]) {
        let (a, b) = (&host["summary"], &want["summary"]);
        let count = b["count"].as_i64().unwrap();
        // XProf reads times as float nanoseconds and truncates them to ps: within 1 ps an op.
        let near = |x: &serde_json::Value, y: &serde_json::Value, n: i64| {
            (x.as_i64().unwrap() - y.as_i64().unwrap()).abs() <= n
        };
        for k in ["count", "hidden", "partial", "exposed", "unpaired_ops"] {
            assert_eq!(a[k], b[k], "{what} {k}");
        }
        for k in ["span_ps", "exposed_ps"] {
            assert!(near(&a[k], &b[k], count), "{what} {k}: {} / {}", a[k], b[k]);
        }
        assert_eq!(
            a["overlap_ratio"].is_null(),
            b["overlap_ratio"].is_null(),
            "{what}"
        );
        assert_eq!(host["note"].is_string(), count == 0, "{what}");
        // Per plane and per op kind.
        let planes = host["by_plane"].as_array().unwrap();
        let theirs = want["by_plane"].as_object().unwrap();
        assert_eq!(planes.len(), theirs.len(), "{what}");
        for p in planes {
            let q = &theirs[p["plane"].as_str().unwrap()];
            assert_eq!(p["window_source"], q["window_source"], "{what}");
            for k in ["count", "hidden", "partial", "exposed"] {
                assert_eq!(p[k], q[k], "{what} {k}");
            }
            assert!(near(&p["exposed_ps"], &q["exposed_ps"], count), "{what}");
        }
        let ops = host["by_op"].as_array().unwrap();
        let theirs = want["by_op"].as_object().unwrap();
        let names: Vec<&str> = ops.iter().map(|o| o["op"].as_str().unwrap()).collect();
        let want_names: Vec<&str> = theirs.keys().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), want_names.len(), "{what}");
        for o in ops {
            let q = &theirs[o["op"].as_str().unwrap()];
            assert_eq!(o["count"], q["count"], "{what}");
        }
        // The most exposed ops: the same ones, in order; times on the session's axis here
        // (XProf's are absolute), so one offset between them.
        let (top, want_top) = (
            host["top_exposed"].as_array().unwrap(),
            want["top_exposed"].as_array().unwrap(),
        );
        assert_eq!(top.len(), want_top.len(), "{what}");
        let mut offsets = std::collections::BTreeSet::new();
        for (x, y) in top.iter().zip(want_top) {
            for k in ["plane", "name", "op", "class"] {
                assert_eq!(x[k], y[k], "{what} {k}");
            }
            assert!(near(&x["span_ps"], &y["span_ps"], 2), "{what}");
            assert!(near(&x["exposed_ps"], &y["exposed_ps"], 2), "{what}");
            offsets.insert(y["start_ps"].as_i64().unwrap() - x["start_ps"].as_i64().unwrap());
        }
        assert!(offsets.len() <= 1, "{what}: {offsets:?}");
        assert_eq!(
            host["concurrency"].as_array().unwrap().len(),
            want["concurrency"].as_array().unwrap().len(),
            "{what}"
        );
        compared += 1;
        with_ops += usize::from(count > 0);
    }
    assert!(compared >= 8 || std::env::var("CI").as_deref() != Ok("true"));
    assert!(with_ops >= 1 || std::env::var("CI").as_deref() != Ok("true"));
    eprintln!("{compared} sessions compared, {with_ops} with async ops");
}

#[test]
fn device_peaks_are_xprofs_where_xprof_knows_them() {
    assert!(references("get_device_information").len() >= 8);
    let mut known = 0;
    for (what, host, want) in first_host_answers("get_device_information", "roofline_model", &[]) {
        // XProf prints 3 decimals, and 0 where it does not know a peak (CPU profiles, a GPU's
        // FLOP rate): xlens then derives or measures it and says how (`peaks`).
        for (ours, theirs, source) in [
            ("peak_flop_rate_gflops", "peak_flop_rate", "flops_source"),
            ("peak_hbm_bw_gibps", "peak_hbm_bw_gibs", "bandwidth_source"),
        ] {
            let t = want[theirs].as_f64().unwrap();
            let o = host[ours].as_f64().unwrap();
            if t > 0.0 {
                assert!(
                    (o - t).abs() <= 0.0005 + 1e-9 * t,
                    "{what} {ours}: {o} / {t}"
                );
                known += 1;
            } else {
                assert!(
                    host["peaks"][source].is_string(),
                    "{what}: {}",
                    host["peaks"]
                );
            }
        }
        if want["hbm_ridge_point"].as_f64().unwrap() > 0.0 {
            let (o, t) = (
                host["ridge_point"].as_f64().unwrap(),
                want["hbm_ridge_point"].as_f64().unwrap(),
            );
            assert!((o - t).abs() <= 0.0005, "{what}: ridge {o} / {t}");
        }
    }
    assert!(
        known >= 3 || std::env::var("CI").as_deref() != Ok("true"),
        "{known}"
    );
}

#[test]
fn graph_viewer_neighborhood_is_xprofs() {
    let dir = root().join("fixtures/expected/xprof/agent/get_hlo_neighborhood");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("references")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{}", files.len());
    let mut compared = 0;
    for f in files {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let tag = ["xprof-testdata", "jax", "tf"]
            .into_iter()
            .find(|t| stem.starts_with(&format!("{t}-")))
            .unwrap();
        let session = [
            "tpu_inference",
            "mlp_small",
            "tfm_small",
            "keras_mlp_xla_small",
        ]
        .into_iter()
        .find(|s| stem[tag.len() + 1..].starts_with(&format!("{s}-")))
        .unwrap();
        let Some(run) = session_run(tag, session) else {
            continue;
        };
        // XProf's lines: `  [dist=N] [computation] name = shape opcode(...)...`.
        let mut theirs: Vec<(String, u64, String)> = v["text"]
            .as_str()
            .unwrap()
            .lines()
            .filter_map(|l| {
                let l = l.trim().strip_prefix("[dist=")?;
                let (d, rest) = l.split_once("] [")?;
                let (comp, rest) = rest.split_once("] ")?;
                let name = rest.split(" = ").next()?;
                let name = name.strip_prefix("ROOT ").unwrap_or(name);
                Some((name.to_string(), d.parse().ok()?, comp.to_string()))
            })
            .collect();
        let radius = v["radius"].to_string();
        let q = [
            ("op", v["instruction"].as_str().unwrap()),
            ("module", v["module"].as_str().unwrap()),
            ("radius", radius.as_str()),
        ];
        let out = run_tool("graph_viewer", &run, &q).json().unwrap();
        assert_eq!(out["focus"], v["instruction"], "{stem}");
        // The nodes of the instruction's computation (a searched fusion's body is drawn too,
        // inside its box: XProf lists the body only with --follow_calls).
        let mut ours: Vec<(String, u64, String)> = out["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["fusion"].is_null())
            .map(|n| {
                (
                    n["name"].as_str().unwrap().to_string(),
                    n["distance"].as_u64().unwrap(),
                    n["computation"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        theirs.sort();
        ours.sort();
        assert!(!theirs.is_empty(), "{stem}: {}", v["text"]);
        assert_eq!(ours, theirs, "{stem}");
        compared += 1;
    }
    assert!(compared >= 6 || std::env::var("CI").as_deref() != Ok("true"));
    eprintln!("{compared} neighborhoods compared");
}

#[test]
fn capture_check_is_xprofs() {
    let refs = references("list_xplane_lines");
    assert!(refs.len() >= 8, "{}", refs.len());
    let mut compared = 0;
    for (tag, session, want) in refs {
        let Some(run) = session_run(&tag, &session) else {
            continue;
        };
        let out = run_tool("capture_check", &run, &[]).json().unwrap();
        let what = format!("{tag}/{session}");
        // XProf lists the planes of every host file it read, one file after the other.
        let mut planes = Vec::new();
        for used in want["capture"]["files_used"].as_array().unwrap() {
            let host = host_answer(&out, used);
            planes.extend(host["planes"].as_array().unwrap().iter().cloned());
            for k in [
                "capture_valid_for_device_analysis",
                "capture_valid_for_llo_analysis",
                "capture_valid_for_counter_sampling",
            ] {
                assert_eq!(host[k], want[k], "{what} {k}");
                // A closed gate says what to capture with.
                let named = host["missing"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| k.ends_with(m["gate"].as_str().unwrap()));
                assert_eq!(named, want[k] == false, "{what} {k}");
            }
        }
        assert_eq!(serde_json::Value::Array(planes), want["planes"], "{what}");
        compared += 1;
    }
    assert!(compared >= 8 || std::env::var("CI").as_deref() != Ok("true"));
}
