//! The analysis context: each derived analysis is computed once and shared, by every tool and
//! thread, and what it shares equals computing it directly.

use std::sync::Arc;
use xlens_analysis::base::ops::op_metrics::op_metrics;
use xlens_analysis::base::peaks::UserPeaks;
use xlens_analysis::base::steps::step_db::step_db;

use crate::common;
use common::{load, load_analysis, open_run, root, run_tool};

#[test]
fn steps_and_ops_side_by_side_equal_each_alone() {
    for run in ["jax_mlp_small", "tpu_inference", "gpu_multi_worker"] {
        let a = load_analysis(run);
        let (db, ops) = a.steps_and_ops();
        let p = load(run);
        let alone_ops = serde_json::to_value(op_metrics(&p)).unwrap();
        assert_eq!(serde_json::to_value(&*ops).unwrap(), alone_ops, "{run}");
        let alone_db = step_db(&p);
        assert_eq!(db.steps.len(), alone_db.steps.len(), "{run}");
        assert_eq!(
            serde_json::to_value(&db.steps).unwrap(),
            serde_json::to_value(&alone_db.steps).unwrap(),
            "{run}"
        );
        // Kept: asking again gives the same values, not new ones.
        assert!(Arc::ptr_eq(&ops, &a.op_metrics()), "{run}");
        assert!(Arc::ptr_eq(&db, &a.step_db()), "{run}");
    }
}

#[test]
fn concurrent_askers_share_one_value() {
    let a = load_analysis("tpu_inference");
    let (x, y) = std::thread::scope(|s| {
        let t1 = s.spawn(|| a.hlo_ops(UserPeaks::default()));
        let t2 = s.spawn(|| a.hlo_ops(UserPeaks::default()));
        (t1.join().unwrap(), t2.join().unwrap())
    });
    assert!(Arc::ptr_eq(&x, &y));
    // Other stated peaks are another table.
    let z = a.hlo_ops(UserPeaks {
        flops_per_second: Some(1e12),
        bytes_per_second: Some(1e11),
    });
    assert!(!Arc::ptr_eq(&x, &z));
    assert_eq!(z.peaks.flops_per_second, Some(1e12));
}

#[test]
fn a_second_tool_uses_what_the_first_computed() {
    let sessions: Vec<_> = xlens_store::discover(&root().join("fixtures/logdir"))
        .unwrap()
        .into_iter()
        .filter(|s| s.name == "tpu_inference")
        .collect();
    let run = open_run(sessions);
    let a = run.hosts[0].analysis.as_ref().unwrap().clone();
    run_tool("op_profile", &run, &[]);
    let table = a.hlo_ops(UserPeaks::default());
    let hlo = a.hlo();
    run_tool("hlo_stats", &run, &[]);
    run_tool("roofline_model", &run, &[]);
    run_tool("memory_viewer", &run, &[]);
    assert!(Arc::ptr_eq(&table, &a.hlo_ops(UserPeaks::default())));
    assert!(Arc::ptr_eq(&hlo, &a.hlo()));
    // Warming computes the rest, and the trace index once.
    run.warm();
    let idx = run.trace_index().unwrap();
    run.warm();
    assert!(Arc::ptr_eq(&idx, &run.trace_index().unwrap()));
}
