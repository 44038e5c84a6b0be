//! The overview of a PyTorch trace equals the PyTorch TensorBoard plugin's (torch-tb-profiler
//! 0.4.3, run by `tests/tb_profiler/overview_reference.py` on the same files; its figures are in
//! `fixtures/expected/tb_profiler/overview/`): the steps, each step's Kernel, Memcpy, Memset,
//! Communication, Runtime, DataLoader, CPU Exec and Other to 1 µs, and each GPU's utilization,
//! estimated SM efficiency and achieved occupancy. The plugin's figures are those of its
//! "normalized" run: the trace with the category names of PyTorch 1.10+ read as the plugin
//! reads those of 1.8/1.9 (see tests/tb_profiler/README.md).

use std::path::PathBuf;

use crate::common::{open_run, root, run_tool};
use crate::step_model::pytorch_traces;

/// The plugin's cost names and ours, in the plugin's order.
const COSTS: [(&str, &str); 8] = [
    ("Kernel", "kernel"),
    ("Memcpy", "memcpy"),
    ("Memset", "memset"),
    ("Communication", "communication"),
    ("Runtime", "runtime"),
    ("DataLoader", "dataloader"),
    ("CpuOp", "cpu_exec"),
    ("Other", "other"),
];

/// 1 µs, in ps.
const US: f64 = 1e6;

/// Whether the plugin linked no runtime call to an operator (its log says so): traces whose
/// launches carry their own External ids.
fn unlinked(exp: &serde_json::Value) -> bool {
    exp["plugin_log"].as_array().is_some_and(|l| {
        l.iter().any(|m| {
            m["message"]
                .as_str()
                .unwrap_or("")
                .contains("don't correlate to any operator")
        })
    })
}

fn references() -> Vec<(PathBuf, serde_json::Value)> {
    let dir = root().join("fixtures/expected/tb_profiler/overview");
    let mut v: Vec<(PathBuf, serde_json::Value)> = std::fs::read_dir(&dir)
        .expect("references")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".json") && !n.ends_with(".distributed.json")
        })
        .map(|p| {
            let v = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            (p, v)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn overviews_equal_the_tensorboard_plugins() {
    let traces = pytorch_traces();
    let (mut compared, mut steps_checked) = (0, 0);
    let mut missing = Vec::new();
    for (ref_path, r) in references() {
        let name = r["trace"].as_str().unwrap();
        let Some(trace) = traces.iter().find(|t| t.file_name().unwrap() == name) else {
            missing.push(name.to_string());
            continue;
        };
        let exp = &r["normalized"];
        if exp.get("error").is_some() || exp["steps"].as_array().is_none() {
            continue;
        }
        let run = open_run(xlens_store::discover(trace).unwrap());
        let ov = run_tool("overview_page", &run, &[]).json().unwrap();
        let h = &ov["hosts"][0];
        let cats: Vec<&str> = h["pytorch"]["categories"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no PyTorch overview"))
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        let rows = h["steps"]["rows"].as_array().unwrap();
        let want = exp["steps"].as_array().unwrap();
        assert_eq!(
            rows.len(),
            want.len(),
            "{name}: steps ({})",
            ref_path.display()
        );
        let first = rows.first().map_or(0, |r| r["begin_ps"].as_i64().unwrap());
        for (k, (row, w)) in rows.iter().zip(want).enumerate() {
            let at = |f: &str| row[f].as_i64().unwrap() as f64;
            let close = |ours: f64, theirs: f64, what: &str| {
                assert!(
                    (ours - theirs * US).abs() <= US,
                    "{name} step {k} {what}: ours {} µs, plugin {theirs} µs",
                    ours / US
                );
            };
            close(at("duration_ps"), w["dur_us"].as_f64().unwrap(), "duration");
            close(
                at("begin_ps") - first as f64,
                w["start_us"].as_f64().unwrap(),
                "start",
            );
            let costs = &exp["steps_costs"][k];
            for (theirs, ours) in COSTS {
                let i = cats.iter().position(|c| *c == ours).unwrap();
                close(
                    row["breakdown_ps"][i].as_i64().unwrap() as f64,
                    costs[theirs].as_f64().unwrap(),
                    ours,
                );
            }
            steps_checked += 1;
        }
        // Mean per category, over the steps.
        let mean = h["steps"]["mean_breakdown_ps"].as_array().unwrap();
        for (theirs, ours) in COSTS {
            let i = cats.iter().position(|c| *c == ours).unwrap();
            let t = exp["avg_costs"][theirs].as_f64().unwrap();
            assert!(
                (mean[i].as_i64().unwrap() as f64 - t * US).abs() <= US,
                "{name} mean {ours}: ours {mean:?}, plugin {t} µs"
            );
        }
        // GPU utilization, SM efficiency and occupancy.
        let gpus = h["pytorch"]["gpus"].as_array().unwrap();
        let want_gpus = exp["gpu"].as_object().map_or(0, |g| g.len());
        assert_eq!(gpus.len(), want_gpus, "{name}: GPUs");
        for g in gpus {
            let id = g["device"].as_i64().unwrap().to_string();
            let w = &exp["gpu"][&id];
            let near = |ours: &serde_json::Value, theirs: Option<f64>, what: &str| match theirs {
                None => assert!(
                    ours.is_null(),
                    "{name} GPU {id} {what}: ours {ours}, plugin none"
                ),
                Some(t) => {
                    let o = ours.as_f64().unwrap_or(f64::NAN);
                    assert!(
                        (o - t).abs() <= 1e-6,
                        "{name} GPU {id} {what}: ours {o}, plugin {t}"
                    );
                }
            };
            near(
                &g["utilization_percent"],
                w["utilization"].as_f64().map(|x| 100.0 * x),
                "utilization",
            );
            near(
                &g["est_sm_efficiency_percent"],
                w["sm_efficiency"].as_f64().map(|x| 100.0 * x),
                "SM efficiency",
            );
            near(
                &g["est_achieved_occupancy_percent"],
                w["occupancy_percent"].as_f64(),
                "occupancy",
            );
        }
        // The plugin's DataLoader recommendation and ours agree.
        let plugin_loader = exp["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().contains("DataLoader"));
        let ours_loader = h["advice"]["bottleneck"] == "input-bound";
        assert_eq!(ours_loader, plugin_loader, "{name}: input-bound");
        // And its Tensor Core recommendation (AMP).
        let plugin_tc = exp["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().contains("Tensor Cores eligible"));
        let ours_tc = h["recommendations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["text"].as_str().unwrap().contains("Tensor Cores"));
        // (Where the plugin links no launch to an operator, it sees no eligible operator's
        // kernels; xlens links them by nesting and may recommend it.)
        let unlinked = unlinked(exp);
        if !unlinked {
            assert_eq!(ours_tc, plugin_tc, "{name}: Tensor Core recommendation");
        }
        compared += 1;
    }
    if std::env::var("CI").is_ok() {
        assert!(missing.is_empty(), "traces not found: {missing:?}");
    }
    assert!(
        compared >= 15,
        "{compared} traces compared; missing {missing:?}"
    );
    assert!(steps_checked >= 40, "{steps_checked} steps");
}

/// The plugin's operator and kernel tables against ours: operators by name and by name and
/// input shape (calls, host and device self/total to 1 µs, Tensor Core eligibility), kernels
/// by name (calls, total/max/min to 1 µs, weighted blocks per SM and occupancy) and by kernel
/// and operator. Where the plugin attributes no runtime call to an operator (traces whose
/// launches carry their own External ids, which xlens attributes by nesting instead), only the
/// calls and host totals of operators are compared.
#[test]
fn operator_and_kernel_views_equal_the_tensorboard_plugins() {
    let traces = pytorch_traces();
    let (mut op_rows, mut kernel_rows, mut op_kernel_rows, mut full) = (0, 0, 0, 0);
    let mut stack_rows = 0;
    for (_, r) in references() {
        let name = r["trace"].as_str().unwrap();
        let Some(trace) = traces.iter().find(|t| t.file_name().unwrap() == name) else {
            continue;
        };
        let exp = &r["normalized"];
        if exp.get("operators").is_none() {
            continue;
        }
        let unlinked = unlinked(exp);
        let tol = |_: f64| US;
        full += usize::from(!unlinked);
        let run = open_run(xlens_store::discover(trace).unwrap());
        for (group, key) in [("name", "by_name"), ("name_and_shape", "by_name_input")] {
            let v = run_tool("pytorch_operators", &run, &[("group_by", group)])
                .json()
                .unwrap();
            let ours = v["hosts"][0]["operators"].as_array().unwrap();
            let want = exp["operators"][key].as_array().unwrap();
            assert_eq!(ours.len(), want.len(), "{name}: operators by {group}");
            for w in want {
                let o = ours
                    .iter()
                    .find(|o| {
                        o["name"] == w["name"]
                            && (key == "by_name" || o["input_shape"] == w["input_shape"])
                    })
                    .unwrap_or_else(|| {
                        panic!("{name}: no operator {} {}", w["name"], w["input_shape"])
                    });
                assert_eq!(o["calls"], w["calls"], "{name} {}", w["name"]);
                let mut pairs = vec![("host_total_ps", "host_total_duration")];
                if !unlinked {
                    pairs.extend([
                        ("host_self_ps", "host_self_duration"),
                        ("device_self_ps", "device_self_duration"),
                        ("device_total_ps", "device_total_duration"),
                    ]);
                    assert_eq!(o["tc_eligible"], w["tc_eligible"], "{name} {}", w["name"]);
                }
                for (ok, wk) in pairs {
                    let t = w[wk].as_f64().unwrap();
                    let ov = o[ok].as_i64().unwrap() as f64;
                    assert!(
                        (ov - t * US).abs() <= tol(t),
                        "{name} {} {}: {ok} ours {} µs, plugin {t} µs",
                        w["name"],
                        w["input_shape"],
                        ov / US
                    );
                }
                // Per call stack, where recorded.
                let want_stacks = w["call_stacks"]
                    .as_array()
                    .map_or(&[][..], |v| v.as_slice());
                let ours_stacks = o["call_stacks"]
                    .as_array()
                    .map_or(&[][..], |v| v.as_slice());
                assert_eq!(
                    ours_stacks.len(),
                    want_stacks.len(),
                    "{name} {} stacks",
                    w["name"]
                );
                for ws in want_stacks {
                    let text =
                        &exp["operators"]["call_stacks"][ws["stack"].as_u64().unwrap() as usize];
                    let os = ours_stacks
                        .iter()
                        .find(|x| &x["call_stack"] == text)
                        .unwrap_or_else(|| panic!("{name} {}: stack {text}", w["name"]));
                    assert_eq!(os["calls"], ws["calls"], "{name} {}", w["name"]);
                    let t = ws["host_total_duration"].as_f64().unwrap();
                    let ov = os["host_total_ps"].as_i64().unwrap() as f64;
                    assert!(
                        (ov - t * US).abs() <= US,
                        "{name} {} stack host total",
                        w["name"]
                    );
                    if !unlinked {
                        let t = ws["device_total_duration"].as_f64().unwrap();
                        let ov = os["device_total_ps"].as_i64().unwrap() as f64;
                        assert!(
                            (ov - t * US).abs() <= US,
                            "{name} {} stack device total",
                            w["name"]
                        );
                    }
                    stack_rows += 1;
                }
                op_rows += 1;
            }
        }
        let v = run_tool("pytorch_kernels", &run, &[]).json().unwrap();
        let ours = v["hosts"][0]["by_name"].as_array().unwrap();
        let want = exp["kernels"]["by_name"].as_array().unwrap();
        assert_eq!(ours.len(), want.len(), "{name}: kernels");
        for w in want {
            let o = ours.iter().find(|o| o["name"] == w["name"]).unwrap();
            assert_eq!(o["calls"], w["calls"], "{name} {}", w["name"]);
            assert_eq!(o["tc_used"], w["tc_used"], "{name} {}", w["name"]);
            for (ok, wk) in [
                ("total_ps", "total_us"),
                ("max_ps", "max_us"),
                ("min_ps", "min_us"),
            ] {
                let t = w[wk].as_f64().unwrap();
                let ov = o[ok].as_i64().unwrap() as f64;
                assert!((ov - t * US).abs() <= tol(t), "{name} {} {ok}", w["name"]);
            }
            for (ok, wk) in [
                ("mean_blocks_per_sm", "mean_blocks_per_sm"),
                ("mean_occupancy_percent", "mean_occupancy_percent"),
            ] {
                let (t, ov) = (w[wk].as_f64().unwrap(), o[ok].as_f64().unwrap());
                assert!(
                    (ov - t).abs() <= 1e-3 * t.abs().max(1.0),
                    "{name} {} {ok}: {ov} vs {t}",
                    w["name"]
                );
            }
            kernel_rows += 1;
        }
        if unlinked {
            continue;
        }
        let near = |a: &serde_json::Value, b: &serde_json::Value| match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() < 1e-9,
            _ => a.is_null() && b.is_null(),
        };
        assert!(
            near(&v["hosts"][0]["tc_used_ratio"], &exp["tc_used_ratio"]),
            "{name}"
        );
        assert!(
            near(
                &v["hosts"][0]["tc_eligible_ops_kernel_ratio"],
                &exp["tc_eligible_ops_kernel_ratio"]
            ),
            "{name}: {} vs {}",
            v["hosts"][0]["tc_eligible_ops_kernel_ratio"],
            exp["tc_eligible_ops_kernel_ratio"]
        );
        let v = run_tool("pytorch_kernels", &run, &[("group_by", "name_and_op")])
            .json()
            .unwrap();
        let ours = v["hosts"][0]["by_name_and_op"].as_array().unwrap();
        // Traces whose thread ids are JSON strings (PyTorch 1.8 and 1.9): the plugin keys the
        // launches with External id 0 by the string and looks them up by the number, so it
        // loses the kernels they launched, which xlens lists under `CallTreeRoot` (no
        // operator). There the rows of operators are compared, not those of no operator.
        let string_tids = exp["flags"]["string_tids"].as_bool().unwrap_or(false);
        let root = |r: &&serde_json::Value| string_tids && r["op_name"] == "CallTreeRoot";
        let ours: Vec<&serde_json::Value> = ours.iter().filter(|o| !root(o)).collect();
        let want: Vec<&serde_json::Value> = exp["kernels"]["by_name_op"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| !root(w))
            .collect();
        assert_eq!(ours.len(), want.len(), "{name}: kernels by operator");
        for w in want {
            let o = ours
                .iter()
                .find(|o| {
                    o["name"] == w["name"]
                        && o["op_name"] == w["op_name"]
                        && o["grid"] == w["grid"]
                        && o["block"] == w["block"]
                        && o["registers_per_thread"] == w["registers_per_thread"]
                        && o["shared_memory_bytes"] == w["shared_memory"]
                })
                .unwrap_or_else(|| {
                    panic!("{name}: no kernel {} under {}", w["name"], w["op_name"])
                });
            assert_eq!(
                o["calls"], w["calls"],
                "{name} {} {}",
                w["name"], w["op_name"]
            );
            assert_eq!(
                o["op_tc_eligible"], w["op_tc_eligible"],
                "{name} {} {}",
                w["name"], w["op_name"]
            );
            let t = w["total_us"].as_f64().unwrap();
            assert!((o["total_ps"].as_i64().unwrap() as f64 - t * US).abs() <= tol(t));
            op_kernel_rows += 1;
        }
    }
    assert!(full >= 5, "{full} traces with operator-linked launches");
    assert!(stack_rows > 500, "{stack_rows} call-stack rows");
    assert!(
        op_rows > 2000 && kernel_rows > 500 && op_kernel_rows > 500,
        "{op_rows} {kernel_rows} {op_kernel_rows}"
    );
}

/// The distributed view of the two-rank job equals the plugin's: per rank and step the
/// computation / overlapping / communication / other split, its mean, and per collective op
/// the calls, bytes, total latency and data-transfer time.
#[test]
fn the_distributed_view_equals_the_tensorboard_plugins() {
    let r: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            root().join("fixtures/expected/tb_profiler/overview/two_ranks.distributed.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let exp = &r["normalized"];
    let run = open_run(xlens_store::discover(&root().join("fixtures/pytorch/two_ranks")).unwrap());
    let v = run_tool("pytorch_distributed", &run, &[]).json().unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["world_size"], 128);
    let ranks = jobs[0]["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    let mut checked = 0;
    for (worker, w) in exp["per_rank"].as_object().unwrap() {
        let rank = w["distributed_info"]["rank"].as_i64().unwrap();
        let ours = ranks.iter().find(|x| x["rank"] == rank).unwrap();
        let split = |s: &serde_json::Value| -> Vec<f64> {
            [
                "computation_ps",
                "overlapping_ps",
                "communication_ps",
                "other_ps",
            ]
            .iter()
            .map(|k| s[k].as_i64().unwrap() as f64 / US)
            .collect()
        };
        let close = |a: &[f64], b: &serde_json::Value, what: &str| {
            let b: Vec<f64> = b
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    (x - y).abs() <= 1.0,
                    "{worker} {what}: ours {a:?}, plugin {b:?}"
                );
            }
        };
        close(
            &split(&ours["mean"]),
            &exp["overlap"]["data"]["all"][worker],
            "mean",
        );
        for s in ours["steps"].as_array().unwrap() {
            let name = s["step"]
                .as_str()
                .unwrap()
                .trim_start_matches("ProfilerStep#");
            close(&split(s), &exp["overlap"]["data"][name][worker], name);
            checked += 1;
        }
        for (op, want) in w["comm_ops"].as_object().unwrap() {
            let o = ours["comm_ops"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["name"] == op.as_str())
                .unwrap();
            assert_eq!(o["calls"], want["calls"], "{worker} {op}");
            assert_eq!(o["bytes"], want["bytes"], "{worker} {op}");
            for (ok, wk) in [
                ("total_latency_ps", "total_latency_us"),
                ("data_transfer_ps", "data_transfer_us"),
            ] {
                let (a, b) = (o[ok].as_i64().unwrap() as f64, want[wk].as_f64().unwrap());
                assert!((a - b * US).abs() <= US, "{worker} {op} {ok}: {a} vs {b}");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}
