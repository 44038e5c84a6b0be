//! One step model per run, in every view: the step count and mean step time of the report, the
//! overview (JSON and CSV), the input pipeline, the advice, a host's summary (what the all-hosts
//! views, Parquet summaries and SQL read) and the diff are the same, on every PyTorch trace of
//! `fixtures/pytorch/` and `../shared/samples/pytorch/`, and on JAX profiles.

use std::path::PathBuf;

use crate::common::{self, open_run, root, run_tool};
use xlens_analysis::base::hosts::summary::HostSummary;
use xlens_analysis::compare::{diff, OpsScope};

fn gz_under(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            gz_under(&p, out);
        } else if p.to_string_lossy().ends_with(".json.gz") {
            out.push(p);
        }
    }
}

/// Every PyTorch trace here: the fixtures, and the shared samples (required in CI).
pub fn pytorch_traces() -> Vec<PathBuf> {
    let mut v = Vec::new();
    gz_under(&root().join("fixtures/pytorch"), &mut v);
    let shared = root().join("../shared/samples/pytorch");
    if shared.is_dir() {
        gz_under(&shared, &mut v);
    } else {
        assert!(
            std::env::var("CI").is_err(),
            "{} is missing (CI needs ../shared beside the checkout)",
            shared.display()
        );
    }
    v.sort();
    v
}

/// (count, mean ps) of each view, named.
fn views(path: &std::path::Path) -> Vec<(&'static str, usize, i64)> {
    let sessions = xlens_store::discover(path).expect("discover");
    let session = sessions[0].clone();
    let run = open_run(vec![session.clone()]);
    let mut out = Vec::new();

    let rep = run_tool("report", &run, &[]).json().unwrap();
    let s = &rep["sessions"][0]["hosts"][0]["steps"];
    out.push((
        "report",
        s["count"].as_u64().unwrap_or(0) as usize,
        s["mean_ps"].as_i64().unwrap_or(0),
    ));

    let ov = run_tool("overview_page", &run, &[]);
    let csv_rows = ov.csv().map_or(0, |c| c.lines().count().saturating_sub(1));
    let ov = ov.json().unwrap();
    let s = &ov["hosts"][0]["steps"];
    let (n, mean) = (
        s["count"].as_u64().unwrap() as usize,
        s["mean_ps"].as_i64().unwrap(),
    );
    out.push(("overview_page", n, mean));
    out.push(("overview_page csv", csv_rows, mean));
    let basis = ov["hosts"][0]["advice"]["basis"].as_str().unwrap_or("");
    let advice_n = basis
        .strip_suffix(" steps")
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    out.push(("advice", advice_n, mean));

    let ip = run_tool("input_pipeline_analyzer", &run, &[])
        .json()
        .unwrap();
    let st = ip["hosts"][0]["steps"].as_array().map_or(0, |v| v.len());
    let ip_mean = ip["hosts"][0]["steps"].as_array().map_or(0, |v| {
        let t: i64 = v.iter().map(|s| s["duration_ps"].as_i64().unwrap()).sum();
        if v.is_empty() {
            0
        } else {
            t / v.len() as i64
        }
    });
    out.push(("input_pipeline_analyzer", st, ip_mean));

    let tr = run_tool("step_trace", &run, &[("limit", "0")])
        .json()
        .unwrap();
    let rows = tr["hosts"][0]["step_breakdown"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let tr_mean = if rows.is_empty() {
        0
    } else {
        let t: i64 = rows
            .iter()
            .map(|s| s["end_ps"].as_i64().unwrap() - s["begin_ps"].as_i64().unwrap())
            .sum();
        t / rows.len() as i64
    };
    out.push(("step_trace", rows.len(), tr_mean));

    let h = run.hosts[0].analysis.as_ref().expect("host loads");
    let sum = HostSummary::of(&session.name, &session.hosts[0], h);
    let xs = sum.xprof_steps();
    let m = if xs.is_empty() {
        0
    } else {
        (xs.iter().map(|r| r.duration_ps as i128).sum::<i128>() / xs.len() as i128) as i64
    };
    out.push(("host summary (all hosts, Parquet, SQL)", xs.len(), m));

    let p = path.to_string_lossy();
    let d = diff(&p, &run, &p, &run, OpsScope::All);
    out.push(("diff", d.step_time.base.count, d.step_time.base.mean_ps));
    out
}

fn assert_one_model(path: &std::path::Path) -> (usize, i64) {
    let v = views(path);
    let (_, n, mean) = v[1];
    for (view, vn, vm) in &v {
        assert_eq!(
            (*vn, *vm),
            (n, mean),
            "{}: {view} has {vn} steps of mean {vm} ps, the overview {n} of {mean} ps",
            path.display()
        );
    }
    (n, mean)
}

#[test]
fn every_view_of_a_pytorch_trace_has_the_same_steps() {
    let traces = pytorch_traces();
    assert!(traces.len() >= 7, "{traces:?}");
    let mut with_steps = 0;
    for t in &traces {
        let (n, _) = assert_one_model(t);
        with_steps += usize::from(n > 0);
    }
    assert_eq!(with_steps, traces.len(), "every trace has a step or a span");
}

#[test]
fn every_view_of_a_jax_profile_has_xprofs_steps() {
    // XProf's rule (the first and last of more than five steps dropped) holds for XSpace.
    let (n, mean) = assert_one_model(&common::fixture_file("jax_mlp_small"));
    assert_eq!(n, 8);
    assert!(mean > 0);
}
