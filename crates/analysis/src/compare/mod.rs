//! Comparing two runs: `xlens diff BASE NEW`. A layer above the tools: it reads their typed
//! results (the overview's steps, breakdown, duty cycle and FLOP utilisation) and the base
//! layer (op metrics, host framework ops, module heaps, allocator peaks) of each run, and
//! puts the two side by side with deltas. No tool imports it.
//!
//! * **Hosts**: every readable host of each run. Step time: one host's steps, or on several
//!   hosts each step's slowest host (a synchronous job waits for it); breakdown, duty cycle and
//!   FLOP utilisation: the mean over hosts; ops: summed over hosts; memory: the largest peak.
//! * **Step time**: XProf-compatible steps (all annotated steps when there are none), count,
//!   mean, median and p90, and a 95%
//!   bootstrap confidence interval for the relative change of the mean (2,000 resamples of
//!   each side, a fixed seed: the same inputs give the same interval). A change whose interval
//!   holds 0 is reported as noise, not as a regression.
//! * **Breakdown**: the mean per step of each category of the step-time breakdown.
//! * **Ops** ([`ops`]): per op key, occurrences and time on each side; added, removed, slower
//!   and faster ops (a change counts when it is over [`OP_CHANGE_PCT`] of the op's base time
//!   and over [`OP_CHANGE_MIN_PS`]).
//! * **Memory**: the peak heap of each XLA module (numeric suffixes of module names removed to
//!   match them), and the allocator peak per allocator or device.
//! * **Verdict**: the step-time change and its largest contributors (breakdown categories and
//!   ops, by absolute change).
//!
//! `--fail-if` conditions ([`cond`]) are checked against the result.

pub mod cond;
pub mod ops;

use serde::Serialize;
use std::collections::BTreeMap;

use crate::base::context::Run;
use crate::base::fmt::{fmt_bytes, fmt_ps};
use crate::tools::overview::{overview, HostOverview};

pub use ops::{OpDiff, OpsDiff, OpsScope};

/// Bootstrap resamples for the confidence interval of the step-time change.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// One run as compared.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Side {
    /// What the user named (a path or URL).
    pub path: String,
    pub run: String,
    pub hosts: usize,
    /// The readable hosts compared (steps: each step's slowest host; breakdown, duty cycle and
    /// FLOP utilisation: the mean over hosts; ops: sums over hosts; memory: the largest peak).
    pub hosts_compared: usize,
    /// The first readable host (whose advice is shown).
    pub host: Option<String>,
    pub device: String,
    /// Host files that could not be read.
    pub errors: Vec<String>,
    /// What bounds the first compared host's steps.
    pub advice: Option<crate::base::advice::Advice>,
    /// With several hosts: the run's verdict over them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_advice: Option<crate::base::advice::RunAdvice>,
}

/// Step-time figures of one side.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct StepStats {
    pub count: usize,
    pub mean_ps: i64,
    pub median_ps: i64,
    pub p90_ps: i64,
    pub min_ps: i64,
    pub max_ps: i64,
    /// `xprof` (steps as XProf groups them), `pytorch` (as the PyTorch TensorBoard plugin
    /// forms them) or `annotated` (every annotated step).
    pub steps_from: String,
}

/// The step-time change.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepTimeDiff {
    pub base: StepStats,
    pub new: StepStats,
    pub delta_mean_ps: i64,
    /// Relative change of the mean, percent (`None` without steps on both sides).
    pub delta_mean_pct: Option<f64>,
    /// 95% bootstrap interval of the relative change of the mean, percent.
    pub ci95_pct: Option<(f64, f64)>,
    /// `slower`, `faster`, `noise` (the interval holds 0) or `unknown` (too few steps).
    pub verdict: String,
    pub delta_median_ps: i64,
    pub delta_p90_ps: i64,
}

/// Two values of one figure and the change.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Delta {
    pub base: Option<f64>,
    pub new: Option<f64>,
    pub delta: Option<f64>,
    pub delta_pct: Option<f64>,
}

impl Delta {
    pub fn of(base: Option<f64>, new: Option<f64>) -> Delta {
        let delta = base.zip(new).map(|(b, n)| n - b);
        let delta_pct = base
            .zip(delta)
            .and_then(|(b, d)| (b != 0.0).then(|| d / b.abs() * 100.0));
        Delta {
            base,
            new,
            delta,
            delta_pct,
        }
    }
}

/// One category of the step breakdown: mean per step on each side.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CategoryDiff {
    pub id: String,
    pub label: String,
    pub base_ps: i64,
    pub new_ps: i64,
    pub delta_ps: i64,
}

/// Peak memory of one module or allocator.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemoryDiff {
    /// `module` (XLA buffer assignment heap) or `allocator` (allocator / device peak in use).
    pub kind: String,
    pub name: String,
    pub base_bytes: Option<i64>,
    pub new_bytes: Option<i64>,
    pub delta_bytes: Option<i64>,
}

/// Everything `xlens diff` prints.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Diff {
    pub base: Side,
    pub new: Side,
    pub step_time: StepTimeDiff,
    pub breakdown: Vec<CategoryDiff>,
    pub duty_cycle_percent: Delta,
    pub flop_utilization_percent: Delta,
    pub ops: OpsDiff,
    /// Host framework ops (TensorFlow ops, PyTorch CPU ops, ...), matched by name.
    pub framework_ops: OpsDiff,
    pub memory: Vec<MemoryDiff>,
    /// Largest peak over [`Diff::memory`] on each side (modules when there are any, else
    /// allocators).
    pub peak_memory: Delta,
    pub verdict: Vec<String>,
}

fn percentile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    // Linear interpolation between closest ranks (numpy's default).
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let f = pos - lo as f64;
    (sorted[lo] as f64 + (sorted[hi] as f64 - sorted[lo] as f64) * f).round() as i64
}

fn step_stats(steps: &[i64], from: &str) -> StepStats {
    let mut s = steps.to_vec();
    s.sort_unstable();
    let n = s.len();
    StepStats {
        count: n,
        mean_ps: if n == 0 {
            0
        } else {
            (s.iter().map(|&v| v as i128).sum::<i128>() / n as i128) as i64
        },
        median_ps: percentile(&s, 0.5),
        p90_ps: percentile(&s, 0.9),
        min_ps: s.first().copied().unwrap_or(0),
        max_ps: s.last().copied().unwrap_or(0),
        steps_from: from.to_string(),
    }
}

/// splitmix64: a small fixed-seed generator for the bootstrap.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize % n.max(1)
    }
}

/// 95% percentile-bootstrap interval of `(mean(new) - mean(base)) / mean(base)`, percent.
pub fn bootstrap_ci(base: &[i64], new: &[i64]) -> Option<(f64, f64)> {
    if base.len() < 2 || new.len() < 2 {
        return None;
    }
    let mut rng = Rng(0x005E_ED0F_D1FF);
    let mean = |xs: &[i64], rng: &mut Rng| {
        let mut s = 0f64;
        for _ in 0..xs.len() {
            s += xs[rng.below(xs.len())] as f64;
        }
        s / xs.len() as f64
    };
    let mut d: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .filter_map(|_| {
            let b = mean(base, &mut rng);
            let n = mean(new, &mut rng);
            (b != 0.0).then(|| (n - b) / b * 100.0)
        })
        .collect();
    if d.is_empty() {
        return None;
    }
    d.sort_by(f64::total_cmp);
    let at = |q: f64| d[((q * (d.len() - 1) as f64).round() as usize).min(d.len() - 1)];
    Some((at(0.025), at(0.975)))
}

/// The steps (durations) of a host's overview, and where they come from.
fn host_steps(h: &HostOverview) -> (Vec<i64>, &'static str) {
    let x: Vec<i64> = h.steps.rows.iter().map(|r| r.duration_ps).collect();
    if !x.is_empty() {
        return (
            x,
            if h.pytorch.is_some() {
                "pytorch"
            } else {
                "xprof"
            },
        );
    }
    (
        h.steps_all.rows.iter().map(|r| r.duration_ps).collect(),
        "annotated",
    )
}

/// Module names without their numeric suffixes (`jit_step.123` and `jit_step(4)` are both
/// `jit_step`), so the same program matches across compilations.
pub fn normalize_module(name: &str) -> String {
    let s = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let s = s
        .strip_suffix('.')
        .or_else(|| s.strip_suffix('_'))
        .unwrap_or(s);
    let s = match s.strip_suffix('(') {
        Some(x) => x,
        None => match name.rfind('(') {
            Some(i) if name.ends_with(')') => &name[..i],
            _ => s,
        },
    };
    s.to_string()
}

/// Peaks per module (XLA heaps) and per allocator of a run's compared host.
/// Peak heap per module and peak in use per allocator, the largest over `hosts`.
fn memory_peaks(run: &Run, hosts: &[usize]) -> (BTreeMap<String, i64>, BTreeMap<String, i64>) {
    let mut modules = BTreeMap::new();
    let mut allocators = BTreeMap::new();
    for &i in hosts {
        let Some(Ok(a)) = run.hosts.get(i).map(|h| &h.analysis) else {
            continue;
        };
        for m in a.module_memories(0).iter().flatten() {
            let e = modules
                .entry(normalize_module(&m.module_name))
                .or_insert(0i64);
            *e = (*e).max(m.peak_heap_bytes);
        }
        for al in &a.allocators().allocators {
            let e = allocators.entry(al.name.clone()).or_insert(0i64);
            *e = (*e).max(al.peak.bytes_in_use);
        }
    }
    (modules, allocators)
}

/// Step durations of a run over its readable hosts `idx`: one host's steps; on several, each
/// step's slowest host (the k-th step of every host, over the steps every host has), as a
/// synchronous job waits for it.
fn run_steps(o: &crate::tools::overview::Overview, idx: &[usize]) -> (Vec<i64>, String) {
    let per: Vec<(Vec<i64>, &str)> = idx.iter().map(|&i| host_steps(&o.hosts[i])).collect();
    match per.as_slice() {
        [] => (Vec::new(), "xprof".to_string()),
        [(x, from)] => (x.clone(), from.to_string()),
        _ => {
            let n = per.iter().map(|(x, _)| x.len()).min().unwrap_or(0);
            let steps = (0..n)
                .map(|k| per.iter().map(|(x, _)| x[k]).max().unwrap_or(0))
                .collect();
            let from = if per.iter().all(|(_, f)| *f == "xprof") {
                "xprof"
            } else if per.iter().all(|(_, f)| *f == "pytorch") {
                "pytorch"
            } else {
                "annotated"
            };
            (
                steps,
                format!("{from}, the slowest of {} hosts per step", per.len()),
            )
        }
    }
}

fn side(
    path: &str,
    run: &Run,
    o: &crate::tools::overview::Overview,
    host: Option<&HostOverview>,
    compared: usize,
) -> Side {
    Side {
        advice: host.and_then(|h| h.advice.clone()),
        run_advice: o.run_advice.clone(),
        path: path.to_string(),
        run: run.name().to_string(),
        hosts: run.hosts.len(),
        hosts_compared: compared,
        host: host.map(|h| h.host.clone()),
        device: o.device_type.clone(),
        errors: run
            .hosts
            .iter()
            .filter_map(|h| h.analysis.as_ref().err().cloned())
            .collect(),
    }
}

/// Compares `new` against `base` (`base_path`/`new_path` are what the user named).
pub fn diff(base_path: &str, base: &Run, new_path: &str, new: &Run, scope: OpsScope) -> Diff {
    let (ob, on) = (overview(base), overview(new));
    let readable = |o: &crate::tools::overview::Overview| -> Vec<usize> {
        o.hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| h.error.is_none())
            .map(|(i, _)| i)
            .collect()
    };
    let (ib, inew) = (readable(&ob), readable(&on));
    let (hb, hn) = (
        ib.first().map(|&i| &ob.hosts[i]),
        inew.first().map(|&i| &on.hosts[i]),
    );
    let (sb, fb) = run_steps(&ob, &ib);
    let (sn, fn_) = run_steps(&on, &inew);
    let (base_stats, new_stats) = (step_stats(&sb, &fb), step_stats(&sn, &fn_));
    let delta_mean_pct = (base_stats.count > 0 && new_stats.count > 0 && base_stats.mean_ps != 0)
        .then(|| {
            (new_stats.mean_ps - base_stats.mean_ps) as f64 / base_stats.mean_ps as f64 * 100.0
        });
    let ci = bootstrap_ci(&sb, &sn);
    let verdict = match (delta_mean_pct, ci) {
        (Some(_), Some((lo, _))) if lo > 0.0 => "slower",
        (Some(_), Some((_, hi))) if hi < 0.0 => "faster",
        (Some(_), Some(_)) => "noise",
        _ => "unknown",
    };
    let step_time = StepTimeDiff {
        delta_mean_ps: new_stats.mean_ps - base_stats.mean_ps,
        delta_median_ps: new_stats.median_ps - base_stats.median_ps,
        delta_p90_ps: new_stats.p90_ps - base_stats.p90_ps,
        base: base_stats,
        new: new_stats,
        delta_mean_pct,
        ci95_pct: ci,
        verdict: verdict.to_string(),
    };

    // Mean breakdown per step, over the compared steps of each host, averaged over the hosts;
    // by category id, the columns of both runs' step models (XProf's, or the PyTorch plugin's).
    let mean_breakdown = |o: &crate::tools::overview::Overview, idx: &[usize]| -> Vec<i64> {
        let mut sum = vec![0i128; o.categories.len()];
        for &i in idx {
            let h = &o.hosts[i];
            let t = if h.steps.rows.is_empty() {
                &h.steps_all
            } else {
                &h.steps
            };
            for (s, v) in sum.iter_mut().zip(&t.figures.mean_breakdown_ps) {
                *s += i128::from(*v);
            }
        }
        let n = idx.len().max(1) as i128;
        sum.into_iter().map(|s| (s / n) as i64).collect()
    };
    let (bb, bn) = (mean_breakdown(&ob, &ib), mean_breakdown(&on, &inew));
    let mut columns: Vec<&crate::base::steps::step_db::Category> = ob.categories.iter().collect();
    for c in on.categories {
        if !columns.iter().any(|x| x.id == c.id) {
            columns.push(c);
        }
    }
    let value = |o: &crate::tools::overview::Overview, v: &[i64], id: &str| {
        o.categories
            .iter()
            .position(|c| c.id == id)
            .and_then(|i| v.get(i).copied())
            .unwrap_or(0)
    };
    let breakdown: Vec<CategoryDiff> = columns
        .iter()
        .map(|c| {
            let (b, n) = (value(&ob, &bb, c.id), value(&on, &bn, c.id));
            CategoryDiff {
                id: c.id.to_string(),
                label: c.label.to_string(),
                base_ps: b,
                new_ps: n,
                delta_ps: n - b,
            }
        })
        .collect();

    // The mean over the hosts that have the figure.
    let mean_of = |o: &crate::tools::overview::Overview,
                   idx: &[usize],
                   f: fn(&HostOverview) -> Option<f64>| {
        let v: Vec<f64> = idx.iter().filter_map(|&i| f(&o.hosts[i])).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let duty = Delta::of(
        mean_of(&ob, &ib, |h| h.device_duty_cycle_percent),
        mean_of(&on, &inew, |h| h.device_duty_cycle_percent),
    );
    let flops = Delta::of(
        mean_of(&ob, &ib, |h| h.flop_utilization_percent),
        mean_of(&on, &inew, |h| h.flop_utilization_percent),
    );

    let ops = ops::diff(base, &ib, new, &inew, scope);
    let framework_ops = ops::framework_diff(base, &ib, new, &inew);

    let (mb, ab) = memory_peaks(base, &ib);
    let (mn, an) = memory_peaks(new, &inew);
    let mut memory = Vec::new();
    let mut push = |kind: &str, b: &BTreeMap<String, i64>, n: &BTreeMap<String, i64>| {
        let names: std::collections::BTreeSet<&String> = b.keys().chain(n.keys()).collect();
        for name in names {
            let (x, y) = (b.get(name).copied(), n.get(name).copied());
            memory.push(MemoryDiff {
                kind: kind.to_string(),
                name: name.clone(),
                base_bytes: x,
                new_bytes: y,
                delta_bytes: x.zip(y).map(|(x, y)| y - x),
            });
        }
    };
    push("module", &mb, &mn);
    push("allocator", &ab, &an);
    let peak = |m: &BTreeMap<String, i64>, a: &BTreeMap<String, i64>| {
        m.values()
            .max()
            .or_else(|| a.values().max())
            .map(|&v| v as f64)
    };
    let peak_memory = Delta::of(peak(&mb, &ab), peak(&mn, &an));

    let mut d = Diff {
        base: side(base_path, base, &ob, hb, ib.len()),
        new: side(new_path, new, &on, hn, inew.len()),
        step_time,
        breakdown,
        duty_cycle_percent: duty,
        flop_utilization_percent: flops,
        ops,
        framework_ops,
        memory,
        peak_memory,
        verdict: Vec::new(),
    };
    d.verdict = verdict_lines(&d);
    d
}

fn signed_ps(ps: i64) -> String {
    if ps >= 0 {
        format!("+{}", fmt_ps(ps))
    } else {
        format!("-{}", fmt_ps(-ps))
    }
}

fn signed_bytes(b: i64) -> String {
    if b >= 0 {
        format!("+{}", fmt_bytes(b))
    } else {
        fmt_bytes(b)
    }
}

/// The short verdict: the step-time change and its largest contributors.
fn verdict_lines(d: &Diff) -> Vec<String> {
    let mut v = Vec::new();
    let st = &d.step_time;
    match (st.delta_mean_pct, st.ci95_pct) {
        (Some(p), Some((lo, hi))) => v.push(format!(
            "step time {} → {} ({:+.1}%, 95% CI {:+.1}% … {:+.1}%): {}",
            fmt_ps(st.base.mean_ps),
            fmt_ps(st.new.mean_ps),
            p,
            lo,
            hi,
            match st.verdict.as_str() {
                "slower" => "NEW is slower",
                "faster" => "NEW is faster",
                _ => "within noise (the interval holds 0)",
            }
        )),
        (Some(p), None) => v.push(format!(
            "step time {} → {} ({p:+.1}%), too few steps for a confidence interval",
            fmt_ps(st.base.mean_ps),
            fmt_ps(st.new.mean_ps)
        )),
        _ => v.push(format!(
            "no step time to compare ({} steps in BASE, {} in NEW)",
            st.base.count, st.new.count
        )),
    }
    let mut cats: Vec<&CategoryDiff> = d.breakdown.iter().filter(|c| c.delta_ps != 0).collect();
    cats.sort_by_key(|c| std::cmp::Reverse(c.delta_ps.unsigned_abs()));
    if !cats.is_empty() {
        let parts: Vec<String> = cats
            .iter()
            .take(3)
            .map(|c| format!("{} {}", c.label, signed_ps(c.delta_ps)))
            .collect();
        v.push(format!("per step, largest changes: {}", parts.join(", ")));
    }
    let mut ops: Vec<&OpDiff> = d.ops.rows.iter().filter(|o| o.delta_ps != 0).collect();
    ops.sort_by_key(|o| std::cmp::Reverse(o.delta_ps.unsigned_abs()));
    if !ops.is_empty() {
        let parts: Vec<String> = ops
            .iter()
            .take(3)
            .map(|o| format!("{} {} ({})", o.label(), signed_ps(o.delta_ps), o.change))
            .collect();
        v.push(format!(
            "ops ({}): {} added, {} removed, {} slower, {} faster; largest: {}",
            d.ops.source,
            d.ops.added,
            d.ops.removed,
            d.ops.slower,
            d.ops.faster,
            parts.join(", ")
        ));
    }
    if d.base.run_advice.is_some() || d.new.run_advice.is_some() {
        let s = |r: &Option<crate::base::advice::RunAdvice>| {
            r.as_ref()
                .map_or("one host".to_string(), |r| r.summary.clone())
        };
        v.push(format!(
            "runs: BASE {}; NEW {}",
            s(&d.base.run_advice),
            s(&d.new.run_advice)
        ));
    }
    match (&d.base.advice, &d.new.advice) {
        (Some(b), Some(n)) if b.bottleneck == n.bottleneck => v.push(format!(
            "both {}: BASE {}; NEW {}",
            n.bottleneck.as_str(),
            b.summary,
            n.summary
        )),
        (b, n) => {
            let s = |a: &Option<crate::base::advice::Advice>| {
                a.as_ref()
                    .map_or("no advice".to_string(), |a| a.summary.clone())
            };
            v.push(format!("BASE {}; NEW {}", s(b), s(n)));
        }
    }
    if d.base.hosts_compared != d.new.hosts_compared {
        v.push(format!(
            "BASE covers {} host(s), NEW {}: op times and counts are sums over the hosts",
            d.base.hosts_compared, d.new.hosts_compared
        ));
    }
    if let Some(delta) = d.peak_memory.delta {
        v.push(format!(
            "peak memory {} → {} ({})",
            fmt_bytes(d.peak_memory.base.unwrap_or(0.0) as i64),
            fmt_bytes(d.peak_memory.new.unwrap_or(0.0) as i64),
            signed_bytes(delta as i64)
        ));
    }
    v
}

/// Plain text.
pub fn render_text(d: &Diff) -> String {
    render(d, false)
}

/// Markdown (for a pull request comment).
pub fn render_markdown(d: &Diff) -> String {
    render(d, true)
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map_or("–".to_string(), |x| format!("{x:.2}{unit}"))
}

fn render(d: &Diff, md: bool) -> String {
    let mut o = String::new();
    let h = |o: &mut String, t: &str| {
        if md {
            o.push_str(&format!("\n### {t}\n\n"));
        } else {
            o.push_str(&format!("\n== {t}\n"));
        }
    };
    let row = |o: &mut String, cells: &[String]| {
        if md {
            o.push_str(&format!("| {} |\n", cells.join(" | ")));
        } else {
            o.push_str(&format!(
                "  {:<34} {:>14} {:>14} {:>14} {:>9}\n",
                cells.first().map_or("", |s| s.as_str()),
                cells.get(1).map_or("", |s| s.as_str()),
                cells.get(2).map_or("", |s| s.as_str()),
                cells.get(3).map_or("", |s| s.as_str()),
                cells.get(4).map_or("", |s| s.as_str()),
            ));
        }
    };
    let head = |o: &mut String, cells: &[&str]| {
        let c: Vec<String> = cells.iter().map(|s| s.to_string()).collect();
        row(o, &c);
        if md {
            o.push_str(&format!("|{}\n", "---|".repeat(cells.len())));
        }
    };
    if md {
        o.push_str("## xlens diff\n\n");
    }
    for (k, s) in [("BASE", &d.base), ("NEW", &d.new)] {
        o.push_str(&format!(
            "{}{k}: {} (run {}, {} host(s){}, {})\n",
            if md { "- " } else { "" },
            s.path,
            s.run,
            s.hosts,
            match (s.hosts_compared, &s.host) {
                (1, Some(h)) => format!(", compared host {h}"),
                (n, _) if n > 1 => format!(", {n} compared"),
                _ => String::new(),
            },
            if s.device.is_empty() {
                "device unknown"
            } else {
                &s.device
            }
        ));
        for e in &s.errors {
            o.push_str(&format!("  unread: {e}\n"));
        }
    }
    h(&mut o, "Verdict");
    for l in &d.verdict {
        o.push_str(&format!("{}{l}\n", if md { "- " } else { "  " }));
    }
    h(&mut o, "Step time");
    head(&mut o, &["", "BASE", "NEW", "delta", "%"]);
    let st = &d.step_time;
    let pct = |b: i64, n: i64| {
        if b == 0 {
            "–".to_string()
        } else {
            format!("{:+.1}%", (n - b) as f64 / b as f64 * 100.0)
        }
    };
    row(
        &mut o,
        &[
            "steps".into(),
            st.base.count.to_string(),
            st.new.count.to_string(),
            format!("{:+}", st.new.count as i64 - st.base.count as i64),
            String::new(),
        ],
    );
    for (name, b, n) in [
        ("mean", st.base.mean_ps, st.new.mean_ps),
        ("median", st.base.median_ps, st.new.median_ps),
        ("p90", st.base.p90_ps, st.new.p90_ps),
    ] {
        row(
            &mut o,
            &[
                name.into(),
                fmt_ps(b),
                fmt_ps(n),
                signed_ps(n - b),
                pct(b, n),
            ],
        );
    }
    h(&mut o, "Step breakdown (mean per step)");
    head(&mut o, &["category", "BASE", "NEW", "delta", "%"]);
    for c in &d.breakdown {
        if c.base_ps == 0 && c.new_ps == 0 {
            continue;
        }
        row(
            &mut o,
            &[
                c.label.clone(),
                fmt_ps(c.base_ps),
                fmt_ps(c.new_ps),
                signed_ps(c.delta_ps),
                pct(c.base_ps, c.new_ps),
            ],
        );
    }
    h(&mut o, "Device");
    head(&mut o, &["", "BASE", "NEW", "delta", "%"]);
    for (name, x) in [
        ("duty cycle %", &d.duty_cycle_percent),
        ("FLOP utilisation %", &d.flop_utilization_percent),
    ] {
        row(
            &mut o,
            &[
                name.into(),
                opt(x.base, ""),
                opt(x.new, ""),
                opt(x.delta, ""),
                opt(x.delta_pct, "%"),
            ],
        );
    }
    for (title, od) in [("Ops", &d.ops), ("Framework ops", &d.framework_ops)] {
        if od.rows.is_empty() {
            continue;
        }
        h(&mut o, &format!("{title} ({})", od.source));
        o.push_str(&format!(
        "{}{} matched{}, {} added, {} removed, {} slower, {} faster, {} unchanged (a change is over {}% and {}); {} rows{}\n",
        if md { "" } else { "  " },
        od.matched,
        if od.by_fingerprint > 0 {
            format!(" ({} by fingerprint)", od.by_fingerprint)
        } else {
            String::new()
        },
        od.added,
        od.removed,
        od.slower,
        od.faster,
        od.unchanged,
        ops::OP_CHANGE_PCT,
        fmt_ps(ops::OP_CHANGE_MIN_PS),
        od.rows.len(),
        if od.rows.len() > 25 {
            ", the 25 largest changes shown (all in --json)"
        } else {
            ""
        }
    ));
        if md {
            o.push('\n');
        }
        head(&mut o, &["op", "BASE", "NEW", "delta", "change"]);
        let side = |count: u64, ps: i64| {
            if count == 0 {
                "–".to_string()
            } else {
                format!("{} ×{count}", fmt_ps(ps))
            }
        };
        for r in od.rows.iter().take(25) {
            // Kernel names run to kilobytes: the text cuts them (the JSON has them whole).
            let limit = if md { 100 } else { 60 };
            let label = r.label();
            let name = if label.chars().count() <= limit {
                label
            } else {
                format!("{}…", label.chars().take(limit - 1).collect::<String>())
            };
            row(
                &mut o,
                &[
                    if md { name.replace('|', "\\|") } else { name },
                    side(r.base_count, r.base_ps),
                    side(r.new_count, r.new_ps),
                    signed_ps(r.delta_ps),
                    r.change.clone(),
                ],
            );
        }
    }
    if !d.memory.is_empty() {
        h(&mut o, "Memory peaks");
        head(&mut o, &["module / allocator", "BASE", "NEW", "delta", ""]);
        for m in &d.memory {
            let b = |x: Option<i64>| x.map_or("–".to_string(), fmt_bytes);
            row(
                &mut o,
                &[
                    format!("{} {}", m.kind, m.name),
                    b(m.base_bytes),
                    b(m.new_bytes),
                    m.delta_bytes.map_or("–".to_string(), signed_bytes),
                    String::new(),
                ],
            );
        }
    }
    o
}
