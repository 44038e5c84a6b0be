//! Host clocks put back on one axis by step and collective ends, and two jobs left unaligned.

use serde_json::Value;
use std::process::Command;

use super::{generate, generate_from};

/// Four copies with only their clocks shifted (known offsets, no jitter): the trace viewer puts
/// them back on one axis by their step ends, exactly; `--no-align` shows the raw clocks.
#[test]
fn shifted_clocks_are_aligned_on_step_ends() {
    let (dir, session, truth) = generate(
        "four",
        &["--hosts", "4", "--seed", "3", "--jitter-pct", "0"],
    );
    let offset = |i: usize| truth[i]["offset_ns"].as_i64().unwrap() * 1000;
    let clocks = |extra: &[&str]| -> Vec<Value> {
        let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .args(["tool", "trace_viewer", "--json", "--width", "10"])
            .args(extra)
            .arg(&session)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["clocks"].as_array().unwrap().clone()
    };
    let aligned = clocks(&[]);
    assert_eq!(aligned.len(), 4);
    assert_eq!(aligned[0]["basis"], "reference");
    for (i, c) in aligned.iter().enumerate().skip(1) {
        assert_eq!(c["basis"], "step ends");
        assert_eq!(c["matched_steps"], 10);
        // The shift the generator made, undone to the picosecond.
        assert_eq!(
            c["correction_ps"].as_i64().unwrap(),
            -(offset(i) - offset(0))
        );
        assert_eq!(c["residual_ps"], 0);
    }
    // `xlens hosts` places the hosts from their summaries alone, the same way.
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["hosts", "--json", "--no-cache", "--verbose"])
        .arg(&session)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["clocks"].as_array().unwrap(), &aligned);
    // Without --jobs, files this small (far under the bound's floor) go one per core.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_core = match cores {
        1 => "xlens: 1 host at a time, on every core (1)".to_string(),
        n => format!("xlens: {n} hosts at a time, one per core"),
    };
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(log.contains(&per_core), "{log}");
    let raw = clocks(&["--no-align"]);
    for (i, c) in raw.iter().enumerate() {
        assert_eq!(c["basis"], "raw clock");
        assert_eq!(c["correction_ps"], 0);
        assert_eq!(
            c["raw_offset_ps"].as_i64().unwrap() - raw[0]["raw_offset_ps"].as_i64().unwrap(),
            offset(i) - offset(0)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `clocks` of `xlens ARGS... SESSION --json`.
fn clocks_of(args: &[&str], session: &std::path::Path) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(args)
        .arg("--json")
        .arg(session)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["clocks"].as_array().unwrap().clone()
}

/// The real JAX profile of a `psum` over 4 devices (`collective_bound`: one all-reduce per step,
/// 10 steps annotated) copied to three hosts with known clock shifts. With its step annotations
/// removed (a program that marks no steps), the hosts are still put back on one axis, exactly,
/// by the ends of the all-reduces alone: every one of the 10 runs of `psum_invariant.7` (4
/// devices' events each) matched. With the annotations, by steps and all-reduces together.
#[test]
fn shifted_clocks_are_aligned_on_collective_ends() {
    let file = "fixtures/logdir_bottlenecks/plugins/profile/collective_bound/vm.xplane.pb.gz";
    for strip in [true, false] {
        let mut args = vec!["--hosts", "3", "--seed", "5", "--jitter-pct", "0"];
        if strip {
            args.push("--strip-steps");
        }
        let name = if strip { "nosteps" } else { "withsteps" };
        let (dir, session, truth) = generate_from(name, &args, file);
        let offset = |i: usize| truth[i]["offset_ns"].as_i64().unwrap() * 1000;
        let aligned = clocks_of(&["tool", "trace_viewer", "--width", "10"], &session);
        assert_eq!(aligned.len(), 3);
        assert_eq!(aligned[0]["basis"], "reference");
        for (i, c) in aligned.iter().enumerate().skip(1) {
            assert_eq!(
                c["basis"],
                if strip {
                    "collective ends"
                } else {
                    "step and collective ends"
                },
                "{c}"
            );
            assert_eq!(c["matched_steps"], if strip { 0 } else { 10 }, "{c}");
            assert_eq!(c["matched_collectives"], 10, "{c}");
            assert_eq!(
                c["correction_ps"].as_i64().unwrap(),
                -(offset(i) - offset(0)),
                "{c}"
            );
            assert_eq!(c["residual_ps"], 0);
        }
        // `xlens hosts` places the hosts from their summaries alone, the same way.
        assert_eq!(clocks_of(&["hosts", "--no-cache"], &session), aligned);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Two runs of one program captured a day apart (the PyTorch TensorBoard plugin's ResNet-50
/// samples) in one folder are two jobs: their `ProfilerStep#N` share names, but no clock is
/// moved to align them.
#[test]
fn runs_a_day_apart_in_one_folder_are_not_aligned() {
    let dir = std::env::temp_dir().join(format!("xlens-two-jobs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pytorch/tb_plugin");
    for (f, to) in [
        (
            "resnet50_num_workers_0.pt.trace.json.gz",
            "a.pt.trace.json.gz",
        ),
        (
            "resnet50_num_workers_4.pt.trace.json.gz",
            "b.pt.trace.json.gz",
        ),
    ] {
        std::fs::copy(src.join(f), dir.join(to)).unwrap();
    }
    let clocks = clocks_of(&["tool", "trace_viewer", "--width", "10"], &dir);
    assert_eq!(clocks.len(), 2, "{clocks:?}");
    assert_eq!(clocks[0]["basis"], "reference");
    assert!(
        clocks[1]["basis"]
            .as_str()
            .unwrap()
            .starts_with("raw clock (another job"),
        "{clocks:?}"
    );
    assert_eq!(clocks[1]["correction_ps"], 0);
    // The raw clocks are about 19 hours apart.
    let apart = (clocks[1]["raw_offset_ps"].as_i64().unwrap()
        - clocks[0]["raw_offset_ps"].as_i64().unwrap())
    .abs();
    assert!(apart > 3600 * 1_000_000_000_000, "{apart}");
    let _ = std::fs::remove_dir_all(&dir);
}
