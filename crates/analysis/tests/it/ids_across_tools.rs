//! The names and times one tool answers are what the next tool takes: an HLO op and its program
//! from `hlo_stats` open the graph around it, a module from `peak_allocations` opens the memory
//! viewer, a step's window from `step_trace` and the verdict's window from `kpi` open the trace
//! there, and an async op from `async_overlap` is found by `events` at the time it gives.

use crate::common::{open_run, root, run_tool};
use serde_json::Value;

fn run_of(rel: &str) -> xlens_analysis::base::context::Run {
    open_run(xlens_store::discover(&root().join(rel)).expect("discover"))
}

fn json(name: &str, run: &xlens_analysis::base::context::Run, q: &[(&str, &str)]) -> Value {
    run_tool(name, run, q).json().unwrap()
}

#[test]
fn hlo_ops_and_modules_are_named_as_the_next_tool_takes_them() {
    let run = run_of("fixtures/logdir/plugins/profile/tpu_inference");
    let stats = json("hlo_stats", &run, &[]);
    let rows = stats["hosts"][0]["rows"].as_array().unwrap();
    assert!(rows.len() >= 10);
    for r in rows.iter().take(5) {
        let (op, module) = (
            r["hlo_op_name"].as_str().unwrap(),
            r["program"].as_str().unwrap(),
        );
        let g = json("graph_viewer", &run, &[("op", op), ("module", module)]);
        assert_eq!(g["focus"], op, "{g}");
        assert_eq!(g["module"], module);
        assert!(g["nodes"].as_array().unwrap().len() >= 2, "{op}");
    }
    let peaks = json("peak_allocations", &run, &[]);
    for m in peaks["hosts"][0]["modules"].as_array().unwrap() {
        let name = m["module_name"].as_str().unwrap();
        let v = json("memory_viewer", &run, &[("module", name)]);
        let sel = &v["hosts"][0]["selected"];
        assert_eq!(sel["name"], name);
        let mib = sel["peak_heap_bytes"].as_f64().unwrap() / (1u64 << 20) as f64;
        assert!(
            (mib - m["peak_heap_mib"].as_f64().unwrap()).abs() < 1e-9,
            "{name}"
        );
    }
}

#[test]
fn windows_open_the_trace_where_they_say() {
    for rel in [
        "fixtures/logdir/plugins/profile/jax_mlp_small",
        "fixtures/pytorch/tb_plugin/resnet50_num_workers_0.pt.trace.json.gz",
    ] {
        let run = run_of(rel);
        let steps = json("step_trace", &run, &[("limit", "0")]);
        let s = &steps["hosts"][0]["step_breakdown"][1];
        let (b, e) = (
            s["begin_ps"].as_i64().unwrap(),
            s["end_ps"].as_i64().unwrap(),
        );
        // (step_time_ms is rounded to 4 decimals.)
        let ms = s["step_time_ms"].as_f64().unwrap();
        assert!(
            ((e - b) as f64 / 1e9 - ms).abs() <= 0.5e-4,
            "{rel}: the window is the step"
        );
        let (bs, es) = (b.to_string(), e.to_string());
        let t = json("trace_viewer", &run, &[("start_ps", &bs), ("end_ps", &es)]);
        assert_eq!(
            (t["start_ps"].as_i64(), t["end_ps"].as_i64()),
            (Some(b), Some(e))
        );
        assert!(t["events"].as_array().unwrap().len() > 10, "{rel}");
        // The verdict's window is one of the steps.
        let kpi = json("kpi", &run, &[]);
        if let Some(w) = kpi["verdict"]["window_ps"].as_array() {
            let (b, e) = (w[0].as_i64().unwrap(), w[1].as_i64().unwrap());
            let all = json("step_trace", &run, &[("limit", "0"), ("all_steps", "true")]);
            let found = all["hosts"][0]["step_breakdown"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["begin_ps"].as_i64() == Some(b) && s["end_ps"].as_i64() == Some(e));
            assert!(found, "{rel}: {w:?}");
        }
    }
}

#[test]
fn an_async_op_is_found_by_events_where_it_starts() {
    let run = run_of("fixtures/logdir/plugins/profile/tpu_inference");
    let a = json("async_overlap", &run, &[("top", "3")]);
    for w in a["hosts"][0]["top_exposed"].as_array().unwrap() {
        let start = w["start_ps"].as_i64().unwrap().to_string();
        let plane = format!("^{}$", w["plane"].as_str().unwrap());
        let name = format!("^%?{}( |$)", regex_escape(w["name"].as_str().unwrap()));
        let ev = json(
            "events",
            &run,
            &[
                ("plane", &plane),
                ("name", &name),
                ("start_ps", &start),
                ("limit", "1"),
            ],
        );
        let first = &ev["hosts"][0]["events"][0];
        assert_eq!(first["start_ps"].to_string(), start, "{w}");
    }
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}
