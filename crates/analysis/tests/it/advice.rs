//! Advice on profiles whose bottleneck is known by construction
//! (`fixtures/logdir_bottlenecks/`, written by `tests/gen/bottlenecks.py`: see its README for
//! how each was made and what XProf 2.24.2 says about them) and on the other real fixtures.

use crate::common;

use common::{analysis, root};
use xlens_analysis::base::advice::{
    advise, Advice, Bottleneck, BUSY_PCT, COLLECTIVE_PCT, IDLE_PCT, INPUT_PCT,
};

fn advice_of(rel: &str) -> Advice {
    let dir = root().join(rel);
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".xplane.pb"))
        .unwrap();
    let p = xlens_loader::load_path(&file, xlens_store::Format::XSpace).unwrap();
    let a = advise(&analysis(p)).expect("advice");
    // The tool the advice sends the reader to is one `xlens tool` runs.
    assert!(
        xlens_analysis::tools::find(a.tool.name()).is_ok(),
        "{rel}: no tool {}",
        a.tool
    );
    a
}

fn figure(a: &Advice, name: &str) -> f64 {
    a.figures.iter().find(|f| f.name == name).unwrap().percent
}

#[test]
fn input_bound_by_construction() {
    // Each step sleeps 30 ms inside `IteratorGetNext` before a tiny jitted step: XProf says
    // "HIGHLY input-bound, 97.9%".
    let a = advice_of("fixtures/logdir_bottlenecks/plugins/profile/input_bound");
    assert_eq!(a.bottleneck, Bottleneck::InputBound, "{}", a.summary);
    assert!(figure(&a, "input_pct") > 90.0);
    assert_eq!(a.tool.name(), "input_pipeline_analyzer");
    // The worst step's trace window is a real step of the profile.
    let (s, e) = a.window_ps.unwrap();
    assert!(e - s > 30_000_000_000, "a step holds the 30 ms sleep");
    // Every step sleeps: one range over the 8 XProf-compatible steps (train 1 to train 8).
    assert_eq!(a.step_ranges.len(), 1);
    let r = &a.step_ranges[0];
    assert_eq!(
        (r.first_step.as_str(), r.last_step.as_str(), r.steps),
        ("train 1", "train 8", 8)
    );
    assert_eq!(r.bottleneck, Bottleneck::InputBound);
}

#[test]
fn host_bound_by_construction() {
    // 200 tiny jitted ops dispatched one by one per step: XProf's input analysis calls it
    // "potentially input-bound" (18% All others); the ops run a small share of the step.
    let a = advice_of("fixtures/logdir_bottlenecks/plugins/profile/host_bound");
    assert_eq!(a.bottleneck, Bottleneck::HostBound, "{}", a.summary);
    assert!(figure(&a, "device_busy_pct") < BUSY_PCT);
    assert!(figure(&a, "input_pct") < INPUT_PCT);
}

#[test]
fn compute_bound_by_construction() {
    // One large jitted MLP step per step; with async dispatch the step breakdown puts half of
    // it in "All others", but the ops' own time covers the steps either way.
    for run in ["compute_bound", "compute_bound_sync"] {
        let a = advice_of(&format!(
            "fixtures/logdir_bottlenecks/plugins/profile/{run}"
        ));
        assert_eq!(
            a.bottleneck,
            Bottleneck::ComputeBound,
            "{run}: {}",
            a.summary
        );
        assert!(figure(&a, "device_busy_pct") >= BUSY_PCT, "{run}");
    }
}

#[test]
fn every_fixture_gets_advice_with_its_figures() {
    for run in [
        "jax_mlp_small",
        "jax_tfm_small",
        "tf_keras_cnn_small",
        "tf_keras_mlp_xla_small",
        "tpu_inference",
        "gpu_multi_worker",
    ] {
        let a = advice_of(&format!("fixtures/logdir/plugins/profile/{run}"));
        assert!(!a.summary.is_empty() && !a.suggestion.is_empty(), "{run}");
        assert!(
            a.figures.iter().all(|f| (0.0..=100.0).contains(&f.percent)),
            "{run}"
        );
    }
}

#[test]
fn the_memory_roof_split_needs_stated_roofs() {
    // TPU v6 Lite (roofs from the profile and the published table): the op time is almost all
    // `copy-done` moving 5x1024x1024x256 f32 buffers (see the op profile), under the memory roof.
    let tpu = advice_of("fixtures/logdir/plugins/profile/tpu_inference");
    assert_eq!(
        tpu.bottleneck,
        Bottleneck::MemoryBandwidthBound,
        "{}",
        tpu.summary
    );
    assert!(figure(&tpu, "memory_bound_op_pct") >= 50.0);
    // CPU profiles: xlens measures the roofs on the machine it runs on, which varies between
    // runs (a report over a bucket and over the disk differed); no split, the same answer twice.
    let a = advice_of("fixtures/logdir_bottlenecks/plugins/profile/compute_bound_sync");
    assert!(a.figures.iter().all(|f| f.name != "memory_bound_op_pct"));
    let b = advice_of("fixtures/logdir_bottlenecks/plugins/profile/compute_bound_sync");
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn collective_bound_by_construction() {
    // Each step all-reduces a 16 MiB shard across 4 CPU devices (shard_map + psum) around one
    // multiply-add per element: the all-reduce (`psum_invariant.*`, HLO opcode `all-reduce`)
    // runs on host threads while no other XLA op does for much of the step.
    let a = advice_of("fixtures/logdir_bottlenecks/plugins/profile/collective_bound");
    assert_eq!(a.bottleneck, Bottleneck::CollectiveBound, "{}", a.summary);
    assert!(figure(&a, "exposed_collective_pct") >= COLLECTIVE_PCT);
    assert!(figure(&a, "input_pct") < INPUT_PCT);
    // The profiles without collectives have no exposed collective time.
    for run in [
        "input_bound",
        "host_bound",
        "compute_bound",
        "compute_bound_sync",
        "idle",
    ] {
        let b = advice_of(&format!(
            "fixtures/logdir_bottlenecks/plugins/profile/{run}"
        ));
        assert_eq!(figure(&b, "exposed_collective_pct"), 0.0, "{run}");
    }
}

#[test]
fn idle_by_construction() {
    // Each step sleeps 30 ms in no annotation, then runs one tiny jitted op: XProf's input
    // analysis calls it "potentially input-bound" (98.2% All others); nothing is busy.
    let a = advice_of("fixtures/logdir_bottlenecks/plugins/profile/idle");
    assert_eq!(a.bottleneck, Bottleneck::Idle, "{}", a.summary);
    assert!(figure(&a, "device_busy_pct") < IDLE_PCT);
    assert!(figure(&a, "host_compute_pct") < IDLE_PCT);
    assert!(figure(&a, "input_pct") < INPUT_PCT);
    assert_eq!(a.tool.name(), "trace_viewer");
}

#[test]
fn a_run_of_hosts_gets_the_verdict_most_of_them_have() {
    // One session of three hosts made of the purpose-made profiles: two input-bound, one idle.
    let dir = std::env::temp_dir().join(format!("xlens-run-advice-{}", std::process::id()));
    let session = dir.join("plugins/profile/mixed");
    std::fs::create_dir_all(&session).unwrap();
    for (host, from) in [
        ("worker0", "input_bound"),
        ("worker1", "idle"),
        ("worker2", "input_bound"),
    ] {
        std::fs::copy(
            root().join(format!(
                "fixtures/logdir_bottlenecks/plugins/profile/{from}/vm.xplane.pb.gz"
            )),
            session.join(format!("{host}.xplane.pb.gz")),
        )
        .unwrap();
    }
    let run = common::open_run(xlens_store::discover(&session).unwrap());
    let o = xlens_analysis::tools::overview::overview(&run);
    let r = o.run_advice.expect("run advice");
    assert_eq!(r.bottleneck, Bottleneck::InputBound);
    assert_eq!((r.agreeing, r.hosts), (2, 3));
    assert_eq!(
        r.verdicts[1],
        (Bottleneck::Idle, vec!["worker1".to_string()])
    );
    assert_eq!(
        r.summary,
        "input-bound on 2 of 3 hosts; idle on 1 host (worker1)"
    );
    // The report says the same.
    let rep = xlens_analysis::tools::report::report(&run);
    assert_eq!(rep.run_advice.unwrap().summary, r.summary);
    // A log directory of that session and an unrelated one is not one run: no verdict over
    // both; the session of three hosts keeps its own, whatever order the hosts are listed in.
    let other = dir.join("plugins/profile/other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(
        root().join("fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"),
        other.join("worker9.xplane.pb"),
    )
    .unwrap();
    let mut sessions = xlens_store::discover(&dir).unwrap();
    assert_eq!(sessions.len(), 2);
    for s in &mut sessions {
        s.hosts.reverse();
    }
    let rep = xlens_analysis::tools::report::report(&common::open_run(sessions));
    assert!(rep.run_advice.is_none(), "{:?}", rep.run_advice);
    let mixed = rep.sessions.iter().find(|s| s.name == "mixed").unwrap();
    assert_eq!(mixed.run_advice.as_ref().unwrap().summary, r.summary);
    assert_eq!(
        mixed.run_advice.as_ref().unwrap().verdicts[0].1,
        ["worker0", "worker2"]
    );
    let lone = rep.sessions.iter().find(|s| s.name == "other").unwrap();
    assert!(lone.run_advice.is_none(), "one host: no run verdict");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every tool the advice can point to is one `xlens tool` runs, under the name its JSON gives.
#[test]
fn every_advice_link_is_a_registered_tool() {
    use xlens_analysis::base::advice::ToolLink;
    for l in ToolLink::ALL {
        assert!(xlens_analysis::tools::find(l.name()).is_ok(), "{l}");
        assert_eq!(
            serde_json::to_value(l).unwrap(),
            serde_json::Value::String(l.name().to_string())
        );
    }
}
