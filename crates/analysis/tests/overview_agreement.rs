//! Agreement with XProf 2.24.2's `overview_page`, `framework_op_stats`, `hlo_stats` and
//! `kernel_stats` on the real fixtures. Expectations are compact extracts of XProf's own output
//! (`fixtures/expected/xprof/overview/`, see its README); `live_xprof_agreement` regenerates them
//! with XProf itself when `XLENS_PYTHON` names a Python that has `xprof` installed.
//!
//! Deliberate differences from XProf, named where they are tested:
//! * XProf drops the first and the last step when more than 5 steps remain; xlens's `steps`
//!   does the same (and is compared here), `steps_all` keeps every annotated step.
//! * XProf shows no ops for CPU-only JAX profiles (its `hlo_stats` and `framework_op_stats` are
//!   empty there); xlens lists the XLA ops executed on host threads, so those runs are not compared
//!   op by op.

use serde_json::Value;
use std::path::{Path, PathBuf};
use xlens_analysis::step_db::step_db;
use xlens_model::Profile;

const RUNS: &[&str] = &[
    "jax_mlp_small",
    "jax_tfm_small",
    "tf_keras_cnn_small",
    "tf_keras_mlp_xla_small",
    "tpu_inference",
    "gpu_multi_worker",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(run: &str) -> Profile {
    let dir = root().join("fixtures/logdir/plugins/profile").join(run);
    let file = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".xplane.pb"))
        .expect("xplane file");
    xlens_analysis::load::load_path(&file, xlens_store::Format::XSpace).expect("load")
}

fn expected(run: &str) -> Value {
    let f = root().join(format!("fixtures/expected/xprof/overview/{run}.json"));
    serde_json::from_str(&std::fs::read_to_string(f).expect("expectation")).expect("json")
}

fn within(ours: f64, theirs: f64, rel: f64) -> bool {
    (ours - theirs).abs() <= rel * theirs.abs().max(1e-9)
}

#[test]
fn steps_match_xprof() {
    for run in RUNS {
        let p = load(run);
        let db = step_db(&p);
        let want = expected(run);
        let s = db.summary();
        eprintln!(
            "{run}: ours {} steps mean {:.6} std {:.6} min {:.6} max {:.6} ms (all: {}); xprof {} mean {} std {} min {} max {}",
            s.count, s.mean_ms, s.std_dev_ms, s.min_ms, s.max_ms, db.steps_all.len(),
            want["step_count"], want["mean_ms"], want["std_ms"], want["min_ms"], want["max_ms"]
        );
        assert_eq!(
            s.count as u64,
            want["step_count"].as_u64().unwrap_or(0),
            "{run}: step count"
        );
        let names: Vec<&str> = db.steps.iter().map(|r| r.name.as_str()).collect();
        let want_names: Vec<&str> = want["step_names"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            &names[..want_names.len().min(names.len())],
            &want_names[..],
            "{run}: names"
        );
        for (k, v) in [
            ("mean_ms", s.mean_ms),
            ("std_ms", s.std_dev_ms),
            ("min_ms", s.min_ms),
            ("max_ms", s.max_ms),
        ] {
            let w = want[k].as_f64().unwrap_or(0.0);
            assert!(within(v, w, 0.01), "{run}: {k} ours {v} xprof {w}");
        }
        // Per-step breakdown, column by column (XProf's generic CPU/GPU table; ms), to 1 ns.
        let rows = want["step_breakdown_ms"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (row, w) in db.steps.iter().zip(rows.iter()) {
            let w = w.as_array().cloned().unwrap_or_default();
            assert_eq!(row.breakdown_ps.len(), w.len(), "{run}: breakdown columns");
            for (i, (ours, theirs)) in row.breakdown_ps.iter().zip(w.iter()).enumerate() {
                let t = theirs.as_f64().unwrap_or(0.0);
                assert!(
                    (*ours as f64 / 1e9 - t).abs() < 1e-6,
                    "{run} {} column {i}: ours {} ms, xprof {t} ms",
                    row.name,
                    *ours as f64 / 1e9
                );
            }
        }
    }
}
