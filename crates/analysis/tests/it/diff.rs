//! Comparing two runs (`xlens diff`): the op-level diff of the real PyTorch pair against HTA
//! 0.5.0's `TraceDiff.compare_traces` (`fixtures/expected/hta/trace_diff-control-test.json`,
//! written by `tests/hta/trace_diff_reference.py`), step statistics and the bootstrap interval
//! by hand, `--fail-if` conditions true and false on real pairs.

use crate::common;

use common::{open_run, root};
use serde_json::Value;
use std::path::{Path, PathBuf};
use xlens_analysis::compare::{self, cond, Diff, OpsScope};

/// The shared samples when they are here; in CI (`CI=true`) their absence fails.
fn pytorch_pair() -> Option<(PathBuf, PathBuf)> {
    let dir = root().join("../shared/samples/pytorch");
    let (c, t) = (
        dir.join("hta-trace_diff-control.json.gz"),
        dir.join("hta-trace_diff-test.json.gz"),
    );
    if c.is_file() && t.is_file() {
        return Some((c, t));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "../shared/samples/pytorch is missing in CI"
    );
    eprintln!("SKIPPED: ../shared/samples/pytorch is not beside the checkout");
    None
}

fn run_of(path: &Path) -> xlens_analysis::base::context::Run {
    open_run(xlens_store::discover(path).expect("discover"))
}

fn diff_of(base: &Path, new: &Path, scope: OpsScope) -> Diff {
    compare::diff(
        &base.display().to_string(),
        &run_of(base),
        &new.display().to_string(),
        &run_of(new),
        scope,
    )
}

#[test]
fn pytorch_op_diff_matches_hta_trace_diff() {
    let Some((control, test)) = pytorch_pair() else {
        return;
    };
    let d = diff_of(&control, &test, OpsScope::FirstStep);
    let exp: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/expected/hta/trace_diff-control-test.json"))
            .unwrap(),
    )
    .unwrap();
    let rows = exp["compare_traces"]["rows"].as_array().unwrap();
    assert_eq!(d.ops.rows.len(), rows.len(), "one row per name, as HTA");
    // HTA's durations are trace microseconds (whole ones in this pair); xlens's picoseconds.
    let us = |v: &Value| (v.as_f64().unwrap() * 1e6).round() as i64;
    for r in rows {
        let name = r["name"].as_str().unwrap();
        let x = d
            .ops
            .rows
            .iter()
            .find(|o| o.key == name)
            .unwrap_or_else(|| panic!("no row `{name}`"));
        assert_eq!(
            x.base_count as f64,
            r["Control_counts"].as_f64().unwrap(),
            "{name}"
        );
        assert_eq!(
            x.new_count as f64,
            r["Test_counts"].as_f64().unwrap(),
            "{name}"
        );
        assert_eq!(x.base_ps, us(&r["Control_total_duration"]), "{name}");
        assert_eq!(x.new_ps, us(&r["Test_total_duration"]), "{name}");
        assert_eq!(x.delta_ps, us(&r["diff_duration"]), "{name}");
        // HTA's count categories are the sign of the count change.
        let sign = match x.new_count.cmp(&x.base_count) {
            std::cmp::Ordering::Greater => "+",
            std::cmp::Ordering::Less => "-",
            std::cmp::Ordering::Equal => "=",
        };
        assert_eq!(
            sign,
            r["counts_change_categories"].as_str().unwrap(),
            "{name}"
        );
    }
    // HTA's ops_diff lists: added and deleted names are ours.
    let names = |k: &str| -> Vec<String> {
        let mut v: Vec<String> = exp["ops_diff"][k]
            .as_array()
            .unwrap_or_else(|| panic!("ops_diff {k}"))
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    let ours = |c: &str| -> Vec<String> {
        let mut v: Vec<String> = d
            .ops
            .rows
            .iter()
            .filter(|r| r.change == c)
            .map(|r| r.key.clone())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ours("added"), names("added"));
    assert_eq!(ours("removed"), names("deleted"));
}

#[test]
fn pytorch_pair_step_time_and_conditions() {
    let Some((control, test)) = pytorch_pair() else {
        return;
    };
    let d = diff_of(&control, &test, OpsScope::All);
    // The A100 run against the V100 run of the same workload: ProfilerStep#1009..1014, all six
    // as the PyTorch TensorBoard plugin keeps them; NEW is about twice as slow, far beyond noise.
    assert_eq!(d.step_time.base.count, 6);
    assert_eq!(d.step_time.new.count, 6);
    assert_eq!(d.step_time.base.steps_from, "pytorch");
    assert_eq!(d.step_time.verdict, "slower");
    let (lo, _) = d.step_time.ci95_pct.unwrap();
    assert!(lo > 40.0, "{:?}", d.step_time.ci95_pct);
    let holds = |s: &str| cond::check(&cond::parse(s).unwrap(), &d).holds;
    assert!(holds("step_time.mean > +3%"));
    assert!(!holds("step_time.mean > +300%"));
    assert!(!holds("step_time.mean < -3%"));
    assert!(holds("op:nccl* > +10%"));
    assert!(!holds("op:nccl* > +1000%"));
    assert!(holds("ops.added >= 1"));
    // The reverse comparison is faster.
    let r = diff_of(&test, &control, OpsScope::All);
    assert_eq!(r.step_time.verdict, "faster");
    assert!(!cond::check(&cond::parse("step_time.mean > +3%").unwrap(), &r).holds);
}

#[test]
fn a_run_against_itself_changes_nothing() {
    let f = common::fixture_file("jax_mlp_small");
    let d = diff_of(&f, &f, OpsScope::All);
    assert_eq!(d.step_time.delta_mean_ps, 0);
    assert_eq!(d.step_time.verdict, "noise");
    assert_eq!(
        d.step_time.ci95_pct.map(|c| c.0 <= 0.0 && c.1 >= 0.0),
        Some(true)
    );
    assert!(d.ops.rows.iter().all(|r| r.change == "unchanged"));
    assert!(d.ops.rows.len() > 10);
    assert!(d.memory.iter().all(|m| m.delta_bytes == Some(0)));
    for c in [
        "step_time.mean > +3%",
        "peak_memory > +1B",
        "op:* > +0%",
        "ops.added > 0",
        "duty_cycle < 0",
    ] {
        assert!(!cond::check(&cond::parse(c).unwrap(), &d).holds, "{c}");
    }
}

#[test]
fn framework_ops_are_matched_by_name() {
    // TensorFlow: the Keras CNN against itself (every op unchanged), then against the XLA MLP
    // (different models: the CNN's conv ops are removed).
    let (cnn, mlp) = (
        common::fixture_file("tf_keras_cnn_small"),
        common::fixture_file("tf_keras_mlp_xla_small"),
    );
    let same = diff_of(&cnn, &cnn, OpsScope::All);
    assert!(same.framework_ops.rows.len() > 10);
    assert!(same
        .framework_ops
        .rows
        .iter()
        .all(|r| r.change == "unchanged" && r.delta_ps == 0));
    let d = diff_of(&cnn, &mlp, OpsScope::All);
    assert!(d
        .framework_ops
        .rows
        .iter()
        .any(|r| r.key.contains("conv2d") && r.change == "removed"));
    assert!(compare::render_text(&d).contains("== Framework ops"));
}

#[test]
fn two_jax_profiles_of_different_models() {
    // An MLP against a transformer (both JAX on CPU): different programs, so their ops are
    // added and removed rather than matched; peak memory per module is listed on both sides.
    let (a, b) = (
        common::fixture_file("jax_mlp_small"),
        common::fixture_file("jax_tfm_small"),
    );
    let d = diff_of(&a, &b, OpsScope::All);
    assert!(d.ops.added > 0 && d.ops.removed > 0);
    assert!(d.peak_memory.base.is_some() && d.peak_memory.new.is_some());
    // By hand: 10 steps in mlp_small's trace annotations and 8 in tfm_small's (the
    // XProf-compatible grouping drops edge steps, so at most that many).
    assert!(d.step_time.base.count <= 10 && d.step_time.base.count > 0);
    assert!(d.step_time.new.count <= 8 && d.step_time.new.count > 0);
    let text = compare::render_text(&d);
    assert!(text.contains("== Step time") && text.contains("== Ops"));
    let md = compare::render_markdown(&d);
    assert!(md.contains("| mean |"));
}

#[test]
fn step_statistics_by_hand() {
    // Means 10 and 12: +20%, and with no spread the interval is the point.
    let ci = compare::bootstrap_ci(&[10, 10, 10, 10], &[12, 12, 12, 12]).unwrap();
    assert!((ci.0 - 20.0).abs() < 1e-9 && (ci.1 - 20.0).abs() < 1e-9);
    // Overlapping samples: the interval holds 0.
    let ci = compare::bootstrap_ci(&[8, 12, 9, 11, 10], &[9, 13, 8, 12, 10]).unwrap();
    assert!(ci.0 < 0.0 && ci.1 > 0.0, "{ci:?}");
    assert!(compare::bootstrap_ci(&[10], &[12, 13]).is_none());
    assert_eq!(
        compare::normalize_module("jit_train_step(123)"),
        "jit_train_step"
    );
    assert_eq!(compare::normalize_module("jit_step.45"), "jit_step");
    assert_eq!(compare::ops::normalize_op("fusion.12"), "fusion");
    assert_eq!(compare::ops::normalize_op("copy-start.3"), "copy-start");
    assert_eq!(compare::ops::normalize_op("dot"), "dot");
    assert_eq!(
        compare::ops::normalize_op("ncclKernel_AllReduce"),
        "ncclKernel_AllReduce"
    );
}

/// An instruction's structure read from the decoded HLO (the fingerprint reads the serialized
/// bytes instead): opcode, shape, operand shapes, and its called computations' instructions.
fn structure(m: &xlens_analysis::base::hlo::modules::HloModule, name: &str) -> String {
    use xlens_analysis::base::hlo::modules::shape_text;
    let i = m.instruction_by_name(name).expect("instruction");
    let shape = |i: &xlens_proto::xla::HloInstructionProto| {
        i.shape.as_ref().map(shape_text).unwrap_or_default()
    };
    let mut s = format!("{} {}", i.opcode, shape(i));
    for op in &i.operand_ids {
        s.push_str(&format!(
            " ({})",
            shape(m.instruction(*op).expect("operand"))
        ));
    }
    for c in &i.called_computation_ids {
        for x in &m.computation(*c).expect("computation").instructions {
            s.push_str(&format!(" [{} {}]", x.opcode, shape(x)));
        }
    }
    s
}

#[test]
fn ops_are_matched_by_structure_across_compilations() {
    // One MLP train step (BASE), then the same step with the input batch standardised in front
    // (NEW; fixtures/diff_pair, tests/gen/diff_pair.py). XLA compiles NEW anew: its new ops get
    // names of the families BASE has (`ynn_fusion.7`, `ynn_fusion.8`), so matching by name
    // alone would fold them into BASE's `ynn_fusion` ops and call those slower.
    let dir = root().join("fixtures/diff_pair/plugins/profile");
    let (base, new) = (dir.join("base"), dir.join("new"));
    let d = diff_of(&base, &new, OpsScope::All);
    let hlo = |p: &Path| {
        let f = p.join("vm.xplane.pb.gz");
        let prof = xlens_loader::load_path(&f, xlens_store::Format::XSpace).unwrap();
        xlens_analysis::base::hlo::modules::hlo_index(&prof)
    };
    let (hb, hn) = (hlo(&base), hlo(&new));
    let (mb, mn) = (
        hb.find("jit_train_step").unwrap(),
        hn.find("jit_train_step").unwrap(),
    );
    // BASE's step is all in NEW: nothing removed; the standardisation's own arithmetic (a
    // subtraction of the broadcast mean, a multiplication and a division) is added.
    assert_eq!(d.ops.removed, 0);
    for name in [
        "broadcast_subtract_fusion",
        "broadcast_multiply_fusion",
        "add_divide_fusion",
    ] {
        let r = d.ops.rows.iter().find(|r| r.name == name).expect(name);
        assert_eq!(r.change, "added", "{name}");
        assert!(mb.instruction_by_name(name).is_none(), "{name}");
    }
    // Every pair matched by fingerprint has the same structure in the decoded HLO.
    let by_fp: Vec<_> = d
        .ops
        .rows
        .iter()
        .filter(|r| r.matched_by == "fingerprint")
        .collect();
    assert_eq!(by_fp.len(), d.ops.by_fingerprint);
    assert!(by_fp.len() >= 20, "{}", by_fp.len());
    let mut grown = 0;
    let mut base_structures = std::collections::BTreeSet::new();
    for r in &by_fp {
        let shapes = |m, names: &[String]| -> std::collections::BTreeSet<String> {
            names.iter().map(|n| structure(m, n)).collect()
        };
        let (sb, sn) = (shapes(mb, &r.base_op_names), shapes(mn, &r.new_op_names));
        assert_eq!(sb.len(), 1, "{}: {sb:?}", r.label());
        assert_eq!(sb, sn, "{}", r.label());
        base_structures.extend(sb);
        // NEW has one more op of a structure BASE has (a reduction over the batch: the
        // standardisation's mean is shaped like the bias gradients).
        if r.new_op_names.len() > r.base_op_names.len() {
            grown += 1;
            assert!(r.new_count > r.base_count, "{}", r.label());
        }
    }
    assert!(grown >= 1);
    // An op added by fingerprint has a structure no op of BASE has, whatever its name.
    for r in d.ops.rows.iter().filter(|r| r.change == "added") {
        assert!(
            !base_structures.contains(&structure(mn, &r.name)),
            "{}",
            r.name
        );
    }
    assert!(d
        .ops
        .rows
        .iter()
        .any(|r| r.change == "added" && r.name.starts_with("ynn_fusion.")));
    // The text and the conditions name ops by either name.
    assert!(compare::render_text(&d).contains(" by fingerprint)"));
    let renamed_row = by_fp.iter().find(|r| r.new_name.is_some()).unwrap();
    assert!(renamed_row.label().contains(" → "));
    let c = cond::parse(&format!(
        "op:{} > -100%",
        renamed_row.new_name.as_deref().unwrap()
    ))
    .unwrap();
    let e = cond::check(&c, &d).evidence;
    assert!(e.contains(&renamed_row.name), "{e}");
}

/// The PyTorch TensorBoard plugin's ResNet-50 samples, `num_workers=0` against `num_workers=4`:
/// the plugin's step fell from 177.6 to 141.1 ms (-20.6%) and its DataLoader from 33.4% to 0.8%
/// (fixtures/expected/tb_profiler/overview/). The diff says faster by that much, with the
/// DataLoader as the largest change, and the first run input-bound, the second not.
#[test]
fn the_num_workers_pair_is_faster_by_the_dataloader() {
    let dir = common::root().join("fixtures/pytorch/tb_plugin");
    let d = diff_of(
        &dir.join("resnet50_num_workers_0.pt.trace.json.gz"),
        &dir.join("resnet50_num_workers_4.pt.trace.json.gz"),
        OpsScope::All,
    );
    assert_eq!(d.step_time.base.count, 6);
    assert_eq!(d.step_time.new.count, 6);
    assert_eq!(d.step_time.base.steps_from, "pytorch");
    let pct = d.step_time.delta_mean_pct.unwrap();
    assert!((pct - -20.57).abs() < 0.05, "{pct}");
    assert_eq!(d.step_time.verdict, "faster");
    let largest = d.breakdown.iter().max_by_key(|c| c.delta_ps.abs()).unwrap();
    assert_eq!(largest.id, "dataloader");
    assert!(largest.delta_ps < -58_000_000_000, "{}", largest.delta_ps);
    let holds = |s: &str| cond::check(&cond::parse(s).unwrap(), &d).holds;
    assert!(!holds("step_time.mean > +3%"));
    assert!(holds("step_time.mean < -15%"));
    let verdict = |a: &Option<xlens_analysis::base::advice::Advice>| {
        a.as_ref().map(|a| a.bottleneck.as_str()).unwrap_or("")
    };
    assert_eq!(verdict(&d.base.advice), "input-bound");
    assert_eq!(verdict(&d.new.advice), "compute-bound");
    assert!(
        d.verdict.iter().any(|l| l.contains("DataLoader")),
        "{:?}",
        d.verdict
    );
}
