//! "% of op time" means one thing in every tool: an op's self time over the ops' summed self
//! time, IDLE left out (XProf's own columns, which count IDLE in, are kept under their names and
//! say so). Checked on every XSpace sample:
//! - XLA ops on host threads and on TPU: the report's top ops and `hlo_stats` give each op the
//!   same share, and `report`, `hlo_stats`, `op_profile` and `diff` the same op time;
//! - GPU, XSpace and PyTorch: the report ranks kernels by name; each has the summed time and
//!   share of its `hlo_stats` rows (and of its `kernel_stats` and `pytorch_kernels` rows);
//! - TensorFlow ops on host threads: against `framework_op_stats` (the HLO tools list none);
//! - every sample: the overview's largest op is the report's, with the same share.

use serde_json::Value;
use std::path::PathBuf;

use crate::common::{open_run, root, run_tool};

fn samples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [
        "jax_mlp_small",
        "jax_tfm_small",
        "tf_keras_mlp_xla_small",
        "tpu_inference",
    ]
    .iter()
    .map(|r| root().join("fixtures/logdir/plugins/profile").join(r))
    .collect();
    let shared = root().join("../shared/samples/jax/plugins/profile/capture_1s");
    if shared.is_dir() {
        v.push(shared);
    } else {
        assert!(
            std::env::var("CI").is_err(),
            "{} is missing",
            shared.display()
        );
    }
    v
}

#[test]
fn an_op_has_one_share_of_op_time_in_every_tool() {
    for dir in samples() {
        let run = open_run(xlens_store::discover(&dir).expect("discover"));
        let rep = run_tool("report", &run, &[]).json().unwrap();
        let r = &rep["sessions"][0]["hosts"][0];
        let source = r["top_ops_source"].as_str().unwrap();
        assert!(
            ["host_xla_ops", "device_xla_ops"].contains(&source),
            "{}: {source}",
            dir.display()
        );
        let op_time = r["total_op_self_time_ps"].as_i64().unwrap();
        let hlo = run_tool("hlo_stats", &run, &[]).json().unwrap();
        let h = &hlo["hosts"][0];
        assert_eq!(
            h["op_time_ps"].as_i64().unwrap(),
            op_time,
            "{}",
            dir.display()
        );
        assert_eq!(diff_op_time(&dir), op_time, "{}: diff", dir.display());
        assert!(h["idle_ps"].as_i64().unwrap() > 0, "idle is shown beside");
        let op = run_tool("op_profile", &run, &[]).json().unwrap();
        let o = &op["hosts"][0];
        assert_eq!(
            o["total_time_ps"].as_i64().unwrap() - o["idle_ps"].as_i64().unwrap(),
            op_time,
            "{}",
            dir.display()
        );
        let rows: Vec<&Value> = h["rows"].as_array().unwrap().iter().collect();
        let mut matched = 0;
        for t in r["top_ops"].as_array().unwrap() {
            // (TPU ops carry no module stat: one name, one op.)
            let (name, module) = (t["name"].as_str().unwrap(), t["module"].as_str());
            let row = rows
                .iter()
                .find(|x| {
                    x["hlo_op_name"] == name
                        && (module.is_none()
                            || x["program"].as_str().unwrap().split('(').next() == module)
                })
                .unwrap_or_else(|| panic!("{}: {module:?} {name} not in hlo_stats", dir.display()));
            let ours = 100.0 * t["self_time_ps"].as_i64().unwrap() as f64 / op_time as f64;
            let theirs = row["self_time_percent_of_op_time"].as_f64().unwrap();
            assert!(
                (ours - theirs).abs() < 1e-9,
                "{name}: report {ours}%, hlo_stats {theirs}%"
            );
            // XProf's column counts IDLE in, and is never larger.
            assert!(row["total_self_time_percent"].as_f64().unwrap() <= theirs + 1e-12);
            matched += 1;
        }
        assert!(
            matched >= 10.min(rows.len()),
            "{}: {matched} ops compared",
            dir.display()
        );
    }
}

/// GPU (an XSpace profile and a PyTorch trace): the report ranks kernels (and copies) by name;
/// each has the time, and the share of op time, of its `hlo_stats` rows summed, and kernels the
/// time of their `kernel_stats` rows (and, on the PyTorch trace, of `pytorch_kernels`).
#[test]
fn a_gpu_kernel_has_one_share_in_every_tool() {
    for dir in [
        root().join("fixtures/logdir/plugins/profile/gpu_multi_worker"),
        root().join("fixtures/pytorch/tb_plugin/resnet50_num_workers_4.pt.trace.json.gz"),
    ] {
        gpu_kernel_shares(&dir);
    }
}

/// The op time `xlens diff` of a run against itself gives its ops.
fn diff_op_time(dir: &std::path::Path) -> i64 {
    let run = open_run(xlens_store::discover(dir).expect("discover"));
    let again = open_run(xlens_store::discover(dir).expect("discover"));
    let d = xlens_analysis::compare::diff(
        "base",
        &run,
        "new",
        &again,
        xlens_analysis::compare::OpsScope::All,
    );
    assert_eq!(d.ops.base_total_ps, d.ops.new_total_ps);
    d.ops.base_total_ps
}

fn gpu_kernel_shares(dir: &std::path::Path) {
    let run = open_run(xlens_store::discover(dir).expect("discover"));
    let rep = run_tool("report", &run, &[]).json().unwrap();
    let hlo = run_tool("hlo_stats", &run, &[]).json().unwrap();
    let ks = run_tool("kernel_stats", &run, &[]).json().unwrap();
    let torch = dir
        .to_string_lossy()
        .ends_with(".json.gz")
        .then(|| run_tool("pytorch_kernels", &run, &[]).json().unwrap());
    let hosts = rep["sessions"][0]["hosts"].as_array().unwrap();
    assert!(!hosts.is_empty());
    let mut kernels = 0;
    for (i, r) in hosts.iter().enumerate() {
        assert_eq!(r["top_ops_source"], "gpu_streams");
        let (h, k) = (&hlo["hosts"][i], &ks["hosts"][i]);
        assert_eq!((&h["host"], &k["host"]), (&r["host"], &r["host"]));
        let op_time = r["total_op_self_time_ps"].as_i64().unwrap();
        assert_eq!(h["op_time_ps"].as_i64().unwrap(), op_time);
        if hosts.len() == 1 && torch.is_none() {
            assert_eq!(diff_op_time(dir), op_time, "diff");
        }
        for t in r["top_ops"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            let self_ps = t["self_time_ps"].as_i64().unwrap();
            let of_name = |rows: &Value, key: &str| -> Vec<Value> {
                rows.as_array()
                    .unwrap()
                    .iter()
                    .filter(|x| x[key] == name)
                    .cloned()
                    .collect()
            };
            let rows = of_name(&h["rows"], "hlo_op_name");
            assert!(!rows.is_empty(), "{name} not in hlo_stats");
            let sum: i64 = rows
                .iter()
                .map(|x| x["total_self_time_ps"].as_i64().unwrap())
                .sum();
            assert_eq!(sum, self_ps, "{name}");
            let share: f64 = rows
                .iter()
                .map(|x| x["self_time_percent_of_op_time"].as_f64().unwrap())
                .sum();
            let ours = 100.0 * self_ps as f64 / op_time as f64;
            assert!((share - ours).abs() < 1e-9, "{name}: {ours}% vs {share}%");
            let krows = of_name(&k["kernels"], "kernel_name");
            if !name.starts_with("Memcpy") && !name.starts_with("Memset") {
                let ksum: i64 = krows
                    .iter()
                    .map(|x| x["total_duration_ps"].as_i64().unwrap())
                    .sum();
                assert_eq!(ksum, self_ps, "{name} in kernel_stats");
                if let Some(t) = &torch {
                    let row = t["hosts"][i]["by_name"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|x| x["name"] == name)
                        .unwrap_or_else(|| panic!("{name} not in pytorch_kernels"));
                    assert_eq!(row["total_ps"].as_i64().unwrap(), self_ps, "{name}");
                }
                kernels += 1;
            }
        }
    }
    assert!(
        kernels >= 10,
        "{}: {kernels} kernels compared",
        dir.display()
    );
}

/// Every sample, PyTorch traces included: the overview names the report's largest op, with
/// the same share of op time.
#[test]
fn the_overview_names_the_reports_largest_op() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/logdir/plugins/profile"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.push(root().join("fixtures/pytorch/tb_plugin/resnet50_num_workers_4.pt.trace.json.gz"));
    for dir in dirs {
        let run = open_run(xlens_store::discover(&dir).expect("discover"));
        let rep = run_tool("report", &run, &[]).json().unwrap();
        let ov = run_tool("overview_page", &run, &[]).json().unwrap();
        for (r, o) in rep["sessions"][0]["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .zip(ov["hosts"].as_array().unwrap())
        {
            let top = &r["top_ops"][0];
            let op_time = r["total_op_self_time_ps"].as_i64().unwrap();
            let pct = 100.0 * top["self_time_ps"].as_i64().unwrap() as f64 / op_time as f64;
            let largest = o["recommendations"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["text"].as_str().unwrap().starts_with("Largest op"))
                .unwrap_or_else(|| panic!("{}: no largest op", dir.display()));
            let name = format!("`{}`", top["name"].as_str().unwrap());
            assert!(
                largest["text"].as_str().unwrap().contains(&name)
                    && largest["evidence"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("({pct:.1}%)")),
                "{}: report {name} {pct:.1}%, overview {largest}",
                dir.display()
            );
        }
    }
}

/// TensorFlow ops on host threads (the Keras CPU samples): the report, the overview's largest op
/// and `framework_op_stats` give each op XProf's framework-op self time and the same share of op
/// time.
#[test]
fn a_tensorflow_op_has_one_share_in_every_tool() {
    let dir = root().join("fixtures/logdir/plugins/profile/tf_keras_cnn_small");
    let run = open_run(xlens_store::discover(&dir).expect("discover"));
    let rep = run_tool("report", &run, &[]).json().unwrap();
    let r = &rep["sessions"][0]["hosts"][0];
    assert_eq!(r["top_ops_source"], "host_framework_ops");
    let op_time = r["total_op_self_time_ps"].as_i64().unwrap();
    let fw = run_tool("framework_op_stats", &run, &[]).json().unwrap();
    let rows: Vec<&Value> = fw["hosts"][0]["ops"].as_array().unwrap().iter().collect();
    let mut matched = 0;
    for t in r["top_ops"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let row = rows
            .iter()
            .find(|x| {
                let (n, ty) = (x["name"].as_str().unwrap(), x["type"].as_str().unwrap());
                name == format!("{n}:{ty}") || (ty == "Dataset" && name == n)
            })
            .unwrap_or_else(|| panic!("{name} not in framework_op_stats"));
        assert_eq!(t["self_time_ps"], row["self_time_ps"], "{name}");
        let ours = 100.0 * t["self_time_ps"].as_i64().unwrap() as f64 / op_time as f64;
        let theirs = row["self_time_percent_of_op_time"].as_f64().unwrap();
        assert!((ours - theirs).abs() < 1e-9, "{name}: {ours}% vs {theirs}%");
        matched += 1;
    }
    assert!(matched >= 10, "{matched} ops compared");
    assert_eq!(diff_op_time(&dir), 0, "diff: no XLA ops");
    // Without XLA there are no HLO ops: the HLO tools list none and point to framework_op_stats
    // (their own self times of TF ops gave other shares).
    for tool in ["hlo_stats", "op_profile"] {
        let j = run_tool(tool, &run, &[]).json().unwrap();
        let h = &j["hosts"][0];
        assert_eq!(h["op_count"], 0, "{tool}");
        assert!(
            h["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().contains("framework_op_stats")),
            "{tool}: {}",
            h["notes"]
        );
    }
    let ov = run_tool("overview_page", &run, &[]).json().unwrap();
    let top = &r["top_ops"][0];
    let pct = 100.0 * top["self_time_ps"].as_i64().unwrap() as f64 / op_time as f64;
    let largest = ov["hosts"][0]["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["text"].as_str().unwrap().starts_with("Largest op"))
        .expect("largest op")
        .clone();
    assert!(
        largest["text"]
            .as_str()
            .unwrap()
            .contains(top["name"].as_str().unwrap())
            && largest["evidence"]
                .as_str()
                .unwrap()
                .contains(&format!("({pct:.1}%)")),
        "{largest}"
    );
}
