//! The step trace: each step's time split into compute, communication, input, output and the
//! rest, with the step's bottleneck and a summary over the steps. What XProf's agent CLI answers
//! with `get_step_trace`, from the host's own steps ([`crate::base::steps::step_db`], the
//! overview's, so the first and last are left out as the overview leaves them out; `--all-steps`
//! keeps them, as XProf's pod viewer, which `get_step_trace` reads first, does): XProf's generic
//! step table folded into its five groups. Input includes the loop's data-stage annotations,
//! as the overview counts them (XProf files them as host compute). Each step also keeps the
//! step model's own columns and its window on the timeline, for `trace_viewer`.

use serde::Serialize;
use std::collections::BTreeMap;

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::steps::step_db::{StepDb, StepModel};
use crate::base::tool::{PerHost, Tool, ToolError};

/// Steps listed when no limit is given, as XProf.
pub const DEFAULT_LIMIT: usize = 20;

/// The five groups, in the order a tie for the bottleneck is decided.
const GROUPS: [&str; 5] = [
    "Compute",
    "Communication",
    "Input / Infeed",
    "Output / Outfeed",
    "Idle / Other",
];

/// The group (index in [`GROUPS`]) of a breakdown column: XProf's generic step table
/// (`deviceComputeTimeMs` is compute; device-to-device and collectives are communication;
/// `infeedTimeMs` input; `outfeedTimeMs` output; host compute, kernel launch, compilation and
/// all others the rest), and for PyTorch traces the plugin's (Kernel is compute, DataLoader
/// input).
fn group(model: StepModel, id: &str) -> usize {
    match (model, id) {
        (StepModel::Xprof, "device_compute") => 0,
        (StepModel::Xprof, "device_to_device" | "device_collectives") => 1,
        (StepModel::Xprof, "input") => 2,
        (StepModel::Xprof, "output") => 3,
        (StepModel::Pytorch, "kernel") => 0,
        (StepModel::Pytorch, "communication") => 1,
        (StepModel::Pytorch, "dataloader") => 2,
        _ => 4,
    }
}

/// One step.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepInfo {
    /// The step's number (XProf's step group id).
    pub step_num: i64,
    /// The step's name (`train 3`), as the overview names it.
    pub step_name: String,
    /// The step's duration, ms (4 decimals).
    pub step_time_ms: f64,
    /// Device compute (PyTorch: kernels), ms.
    pub compute_time_ms: f64,
    /// Compute's share of the step, % (2 decimals).
    pub compute_percent: f64,
    /// Device-to-device copies and collectives (PyTorch: communication), ms.
    pub communication_time_ms: f64,
    /// Communication's share of the step, %.
    pub communication_percent: f64,
    /// Input: host waits for input, host-to-device copies, the loop's data-stage annotations
    /// (PyTorch: DataLoader), ms.
    pub infeed_time_ms: f64,
    /// Input's share of the step, %.
    pub infeed_percent: f64,
    /// Output: device-to-host copies, ms.
    pub outfeed_time_ms: f64,
    /// Output's share of the step, %.
    pub outfeed_percent: f64,
    /// The group that took the most of the step (the first of equals, in the order above).
    pub bottleneck: &'static str,
    /// The step time outside compute, communication, input and output.
    pub idle_time_ms: f64,
    /// Idle/other's share of the step, %.
    pub idle_percent: f64,
    /// The step's window on the timeline (`trace_viewer --start-ps --end-ps`).
    pub begin_ps: i64,
    /// End of the step on the session's axis, ps.
    pub end_ps: i64,
    /// The step model's own columns, in ms (the overview's breakdown).
    pub breakdown_ms: BTreeMap<&'static str, f64>,
}

/// Averages over the steps.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Summary {
    /// Steps summarized (all of them, whatever `--limit` lists).
    pub total_steps: usize,
    /// Mean step time, ms.
    pub step_time_ms_average: f64,
    /// Shortest step, ms.
    pub step_time_ms_min: f64,
    /// Longest step, ms.
    pub step_time_ms_max: f64,
    /// Sample standard deviation (0 for one step).
    pub step_time_ms_stddev: f64,
    /// Mean compute per step, ms.
    pub compute_time_ms_average: f64,
    /// Mean compute over mean step time, %.
    pub compute_percent: f64,
    /// Mean communication per step, ms.
    pub communication_time_ms_average: f64,
    /// Mean communication over mean step time, %.
    pub communication_percent: f64,
    /// Mean input per step, ms.
    pub infeed_time_ms_average: f64,
    /// Mean input over mean step time, %.
    pub infeed_percent: f64,
    /// Mean output per step, ms.
    pub outfeed_time_ms_average: f64,
    /// Mean output over mean step time, %.
    pub outfeed_percent: f64,
    /// The bottleneck of most steps (the first to reach that count, on a tie).
    pub primary_bottleneck: &'static str,
    /// Mean idle/other per step, ms.
    pub idle_time_ms_average: f64,
    /// Mean idle/other over mean step time, %.
    pub idle_percent: f64,
}

/// A host's step trace.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepTrace {
    /// `xprof` (XProf's step grouping and table) or `pytorch` (the plugin's steps).
    pub step_model: StepModel,
    /// Null when there are no steps.
    pub summary: Option<Summary>,
    /// The steps, at most `limit` of them (the summary covers all).
    pub step_breakdown: Vec<StepInfo>,
    /// Whether `--limit` left steps out of `step_breakdown`.
    pub truncated: bool,
    /// Steps there are.
    pub total_records: usize,
    /// Steps listed in `step_breakdown`.
    pub returned_records: usize,
    /// Why there are no steps, and how the steps were formed.
    pub notes: Vec<String>,
}

/// The tool's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct StepTraceParams {
    /// Most steps listed (default 20; 0 lists every one). The summary covers every step.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only the step of this number or name (`12`, `train 3`).
    #[arg(long)]
    pub step: Option<String>,
    /// Every step, the first and last included (the overview, and so by default this tool, leaves
    /// them out when more than 5 remain).
    #[arg(long)]
    #[serde(default)]
    pub all_steps: bool,
}

pub struct StepTraceTool;

impl Tool for StepTraceTool {
    const NAME: &'static str = "step_trace";
    const TITLE: &'static str = "Step trace";
    const DESCRIPTION: &'static str = "Each step's time as compute, communication, input, output and idle, its bottleneck and window on the timeline, and a summary over the steps, as XProf's `get_step_trace`.";
    type Params = StepTraceParams;
    type Output = PerHost<StepTrace>;

    fn run(run: &Run, p: &StepTraceParams) -> Result<Self::Output, ToolError> {
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
        Ok(PerHost::of(Self::NAME, run, |a| {
            step_trace(&a.step_db(), limit, p.step.as_deref(), p.all_steps)
        }))
    }
    fn text(r: &Self::Output) -> String {
        r.each_text(|s| {
            let mut t = String::new();
            for n in &s.notes {
                t.push_str(&format!("  {n}\n"));
            }
            if let Some(m) = &s.summary {
                t.push_str(&format!(
                    "  {} steps, mean {:.4} ms (min {:.4}, max {:.4}, sd {:.4}); bottleneck of most steps: {}\n  mean: compute {:.4} ms ({}%), communication {:.4} ({}%), input {:.4} ({}%), output {:.4} ({}%), idle/other {:.4} ({}%)\n",
                    m.total_steps, m.step_time_ms_average, m.step_time_ms_min, m.step_time_ms_max,
                    m.step_time_ms_stddev, m.primary_bottleneck,
                    m.compute_time_ms_average, m.compute_percent,
                    m.communication_time_ms_average, m.communication_percent,
                    m.infeed_time_ms_average, m.infeed_percent,
                    m.outfeed_time_ms_average, m.outfeed_percent,
                    m.idle_time_ms_average, m.idle_percent,
                ));
            }
            if s.truncated {
                t.push_str(&format!(
                    "  the first {} of {} steps:\n",
                    s.returned_records, s.total_records
                ));
            }
            for st in &s.step_breakdown {
                t.push_str(&format!(
                    "  step {} ({}): {:.4} ms, {} (compute {}%, communication {}%, input {}%, output {}%, idle {}%)\n",
                    st.step_num, st.step_name, st.step_time_ms, st.bottleneck, st.compute_percent,
                    st.communication_percent, st.infeed_percent, st.outfeed_percent, st.idle_percent
                ));
            }
            t
        })
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}

/// Rounded as Python's `round(x, digits)`: to the nearest, ties to even, of the exact value.
fn round(x: f64, digits: usize) -> f64 {
    format!("{x:.digits$}").parse().unwrap_or(x)
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        round(part / whole * 100.0, 2)
    } else {
        0.0
    }
}

/// The step trace of a host's steps.
pub fn step_trace(db: &StepDb, limit: usize, only: Option<&str>, all_steps: bool) -> StepTrace {
    let cats = db.categories();
    let mut notes = db.notes.clone();
    let rows = if all_steps { &db.steps_all } else { &db.steps };
    let steps: Vec<StepInfo> = rows
        .iter()
        .filter(|s| only.is_none_or(|q| s.name == q || s.group_id.to_string() == q))
        .map(|s| {
            let mut sums = [0.0f64; 5];
            let mut breakdown_ms = BTreeMap::new();
            for (c, ps) in cats.iter().zip(s.breakdown_ps.iter()) {
                let ms = *ps as f64 / 1e9;
                sums[group(db.model, c.id)] += ms;
                breakdown_ms.insert(c.id, ms);
            }
            let total = round(s.duration_ps as f64 / 1e9, 4);
            let [comp, comm, infeed, outfeed, other] = sums;
            // Python's max keeps the first of equal values.
            let mut b = 0;
            for (i, v) in sums.iter().enumerate() {
                if *v > sums[b] {
                    b = i;
                }
            }
            let idle = round(other.max(total - (comp + comm + infeed + outfeed)), 4);
            StepInfo {
                step_num: s.group_id,
                step_name: s.name.clone(),
                step_time_ms: total,
                compute_time_ms: round(comp, 4),
                compute_percent: percent(comp, total),
                communication_time_ms: round(comm, 4),
                communication_percent: percent(comm, total),
                infeed_time_ms: round(infeed, 4),
                infeed_percent: percent(infeed, total),
                outfeed_time_ms: round(outfeed, 4),
                outfeed_percent: percent(outfeed, total),
                bottleneck: GROUPS[b],
                idle_time_ms: idle,
                idle_percent: percent(idle, total),
                begin_ps: s.begin_ps,
                end_ps: s.begin_ps + s.duration_ps,
                breakdown_ms,
            }
        })
        .collect();
    if steps.is_empty() {
        notes.push(match only {
            Some(q) if !rows.is_empty() => format!("No step {q}: the steps are named {}.", rows.iter().map(|s| s.name.as_str()).take(10).collect::<Vec<_>>().join(", ")),
            _ => "No steps: the profile has no step markers the step grouping recognizes (see the overview's steps_notes); `tool events` finds timeline events by name.".to_string(),
        });
    }
    if db.model == StepModel::Pytorch {
        notes.push("PyTorch steps (the plugin's): compute is Kernel, communication Communication, input DataLoader; Memcpy, Memset, Runtime, CPU Exec and Other are idle/other (breakdown_ms has each).".to_string());
    }
    let summary = summary(&steps);
    let total_records = steps.len();
    let kept = if limit > 0 {
        limit.min(total_records)
    } else {
        total_records
    };
    let mut steps = steps;
    steps.truncate(kept);
    StepTrace {
        step_model: db.model,
        summary,
        truncated: kept < total_records,
        total_records,
        returned_records: kept,
        step_breakdown: steps,
        notes,
    }
}

fn summary(steps: &[StepInfo]) -> Option<Summary> {
    if steps.is_empty() {
        return None;
    }
    let n = steps.len() as f64;
    let avg = |f: fn(&StepInfo) -> f64| round(steps.iter().map(f).sum::<f64>() / n, 4);
    let step = avg(|s| s.step_time_ms);
    let comp = avg(|s| s.compute_time_ms);
    let comm = avg(|s| s.communication_time_ms);
    let infeed = avg(|s| s.infeed_time_ms);
    let outfeed = avg(|s| s.outfeed_time_ms);
    let idle = avg(|s| s.idle_time_ms);
    let times: Vec<f64> = steps.iter().map(|s| s.step_time_ms).collect();
    let mean = times.iter().sum::<f64>() / n;
    let sd = if steps.len() > 1 {
        (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    // The most common bottleneck; on a tie, the one seen first.
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for s in steps {
        match counts.iter_mut().find(|c| c.0 == s.bottleneck) {
            Some(c) => c.1 += 1,
            None => counts.push((s.bottleneck, 1)),
        }
    }
    let mut primary = counts[0];
    for c in &counts {
        if c.1 > primary.1 {
            primary = *c;
        }
    }
    Some(Summary {
        total_steps: steps.len(),
        step_time_ms_average: step,
        step_time_ms_min: round(times.iter().cloned().fold(f64::INFINITY, f64::min), 4),
        step_time_ms_max: round(times.iter().cloned().fold(f64::NEG_INFINITY, f64::max), 4),
        step_time_ms_stddev: round(sd, 4),
        compute_time_ms_average: comp,
        compute_percent: percent(comp, step),
        communication_time_ms_average: comm,
        communication_percent: percent(comm, step),
        infeed_time_ms_average: infeed,
        infeed_percent: percent(infeed, step),
        outfeed_time_ms_average: outfeed,
        outfeed_percent: percent(outfeed, step),
        primary_bottleneck: primary.0,
        idle_time_ms_average: idle,
        idle_percent: percent(idle, step),
    })
}

fn render_csv(s: &StepTrace) -> String {
    let mut out = String::from("step_num,step_name,step_time_ms,compute_time_ms,communication_time_ms,infeed_time_ms,outfeed_time_ms,idle_time_ms,bottleneck,begin_ps,end_ps\n");
    for st in &s.step_breakdown {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            st.step_num,
            csv_field(&st.step_name),
            st.step_time_ms,
            st.compute_time_ms,
            st.communication_time_ms,
            st.infeed_time_ms,
            st.outfeed_time_ms,
            st.idle_time_ms,
            csv_field(st.bottleneck),
            st.begin_ps,
            st.end_ps
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_as_python() {
        assert_eq!(round(6.19451, 4), 6.1945);
        assert_eq!(round(2.675, 2), 2.67); // 2.67499999... in binary
        assert_eq!(round(0.125, 2), 0.12);
    }
}
