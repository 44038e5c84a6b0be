//! A JAX loop's data-stage annotation counts as input, in the step breakdown, the overview and the
//! input pipeline, and both name it. Expected figures are computed by hand from the annotations
//! with a plain protobuf decoder (`tests/jax_input/annotated_input.py`, which wrote
//! `fixtures/expected/jax_input/`), on the three real JAX profiles in `../shared/samples/jax`,
//! whose loops wrap batch creation in `TraceAnnotation("data")`.

use serde_json::Value;

use crate::common::{open_run, root, run_tool};

const RUNS: &[&str] = &["mlp_small", "tfm_small", "capture_1s"];

fn reference(run: &str) -> Value {
    let f = root().join(format!("fixtures/expected/jax_input/{run}.json"));
    serde_json::from_str(&std::fs::read_to_string(&f).expect("reference")).expect("json")
}

#[test]
fn annotated_data_stage_is_input_in_every_view() {
    for run in RUNS {
        let want = reference(run);
        // `file` is relative to the repository root (`../shared/...`).
        let path = root().join(want["file"].as_str().expect("file"));
        if !path.exists() {
            assert!(
                std::env::var("CI").is_err(),
                "{} is missing (CI needs ../shared)",
                path.display()
            );
            continue;
        }
        let by_name: std::collections::HashMap<&str, &Value> = want["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|s| (s["name"].as_str().unwrap_or(""), s))
            .collect();
        let run_ = open_run(xlens_store::discover(&path).expect("discover"));

        // The input pipeline: per step, input equals the `data` time inside the step.
        let ip = run_tool("input_pipeline_analyzer", &run_, &[])
            .json()
            .unwrap();
        let host = &ip["hosts"][0];
        let steps = host["steps"].as_array().expect("steps");
        assert!(steps.len() >= 6, "{run}: {} steps", steps.len());
        let (mut data, mut total) = (0i64, 0i64);
        for s in steps {
            let name = s["name"].as_str().unwrap_or("");
            let r = by_name
                .get(name)
                .unwrap_or_else(|| panic!("{run}: no reference step {name}"));
            let want_ps = r["data_ps"].as_i64().unwrap();
            assert_eq!(
                s["input_ps"].as_i64().unwrap(),
                want_ps,
                "{run} {name}: input"
            );
            // The step is the `train` slice (XProf's CPU step span).
            assert_eq!(
                s["duration_ps"].as_i64().unwrap(),
                r["duration_ps"].as_i64().unwrap(),
                "{run} {name}: step"
            );
            data += want_ps;
            total += r["duration_ps"].as_i64().unwrap();
        }
        let want_pct = 100.0 * data as f64 / total as f64;
        let got = host["input_percent"].as_f64().unwrap();
        assert!((got - want_pct).abs() < 1e-9, "{run}: {got} vs {want_pct}");
        let verdict = host["verdict"].as_str().unwrap_or("");
        assert!(
            verdict.contains("`data`"),
            "{run}: names the annotation: {verdict}"
        );
        assert!(
            verdict.contains(&format!("{want_pct:.1}%")),
            "{run}: {verdict} ({want_pct:.1}%)"
        );

        // The overview: the same share, the same verdict, and the annotation in its step table.
        let ov = run_tool("overview_page", &run_, &[]).json().unwrap();
        let h = &ov["hosts"][0];
        let recs: Vec<&str> = h["recommendations"]
            .as_array()
            .expect("recommendations")
            .iter()
            .filter_map(|r| r["text"].as_str())
            .collect();
        assert!(
            recs.iter()
                .any(|t| t.starts_with(verdict.trim_end_matches('.'))),
            "{run}: overview {recs:?} vs input pipeline {verdict}"
        );
        let text = run_tool("overview_page", &run_, &[]).text();
        assert!(text.contains("`data`"), "{run}: {text}");
    }
}

/// Every XSpace fixture with steps: the overview gives the input pipeline's verdict.
#[test]
fn the_overview_and_the_input_pipeline_give_one_input_verdict() {
    let mut compared = 0;
    for run in [
        "jax_mlp_small",
        "jax_tfm_small",
        "tf_keras_cnn_small",
        "tf_keras_mlp_xla_small",
        "gpu_multi_worker",
        "tpu_inference",
    ] {
        let dir = root().join("fixtures/logdir/plugins/profile").join(run);
        let r = open_run(xlens_store::discover(&dir).expect("discover"));
        let ip = run_tool("input_pipeline_analyzer", &r, &[]).json().unwrap();
        let verdict = ip["hosts"][0]["verdict"].as_str().unwrap_or("").to_string();
        let ov = run_tool("overview_page", &r, &[]).json().unwrap();
        let recs: Vec<String> = ov["hosts"][0]["recommendations"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x["text"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if ip["hosts"][0]["steps"]
            .as_array()
            .is_none_or(|s| s.is_empty())
        {
            continue;
        }
        assert!(
            recs.iter()
                .any(|t| t.starts_with(verdict.trim_end_matches('.'))),
            "{run}: overview {recs:?} vs input pipeline {verdict}"
        );
        compared += 1;
    }
    assert!(compared >= 4, "{compared} runs compared");
}
