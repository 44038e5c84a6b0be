//! Temporal breakdown (HTA's `get_temporal_breakdown`): per rank, how the GPU's time from its
//! first to its last event splits into idle, computation and other (non-compute) work.
//!
//! As HTA 0.5.0 computes it (`base::hta` loads the events by its rules): the GPU events' union
//! gives the busy time, `kernel_time` runs from the union's first start to its last end, idle is
//! `kernel_time` minus busy, compute is the union of computation kernels, non-compute the rest of
//! busy. Percentages are rounded to 2 decimals as HTA rounds them; the microseconds are exact.

use serde::Serialize;

use crate::base::context::{Analysis, Run};
use crate::base::pytorch::hta::{total, union, KernelType};
use crate::base::tool::{NoParams, PerHost, Tool, ToolError};

/// One rank's breakdown.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TemporalBreakdown {
    pub rank: i64,
    pub idle_time_ps: i64,
    pub compute_time_ps: i64,
    pub non_compute_time_ps: i64,
    /// From the first GPU event's start to the last one's end.
    pub kernel_time_ps: i64,
    pub idle_time_pctg: f64,
    pub compute_time_pctg: f64,
    pub non_compute_time_pctg: f64,
    /// GPU events counted (events with a stream).
    pub gpu_events: usize,
    /// Whether the last profiler step was left out, as HTA does with two or more steps.
    pub last_step_dropped: bool,
    /// Why there is nothing to break down, when so.
    pub note: Option<String>,
}

/// HTA's percentage: `round(100 * (part / whole), 2)`, Python's `round` (the exact binary value
/// rounded half to even, as Rust's formatting does).
fn pctg(part: i64, whole: i64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    let v = 100.0 * (part as f64 / whole as f64);
    format!("{v:.2}").parse().unwrap_or(v)
}

pub fn temporal_breakdown(a: &Analysis) -> TemporalBreakdown {
    let t = a.hta();
    let all: Vec<(i64, i64)> = t.gpu().map(|e| (e.start_ps, e.end_ps)).collect();
    let compute: Vec<(i64, i64)> = t
        .gpu()
        .filter(|e| t.kernel_type(e) == KernelType::Computation)
        .map(|e| (e.start_ps, e.end_ps))
        .collect();
    let n = all.len();
    let busy = union(all);
    let kernel_time = match (busy.first(), busy.last()) {
        (Some(f), Some(l)) => l.1 - f.0,
        _ => 0,
    };
    let idle = kernel_time - total(&busy);
    let compute = total(&union(compute));
    let non_compute = kernel_time - compute - idle;
    TemporalBreakdown {
        rank: t.rank,
        idle_time_ps: idle,
        compute_time_ps: compute,
        non_compute_time_ps: non_compute,
        kernel_time_ps: kernel_time,
        idle_time_pctg: pctg(idle, kernel_time),
        compute_time_pctg: pctg(compute, kernel_time),
        non_compute_time_pctg: pctg(non_compute, kernel_time),
        gpu_events: n,
        last_step_dropped: t.last_step_dropped,
        note: (n == 0).then(|| {
            "No GPU events (events with a `stream` arg, as in PyTorch profiler traces): nothing to break down.".to_string()
        }),
    }
}

/// µs from ps, as HTA states times (the CSV keeps HTA's columns).
fn us(ps: i64) -> f64 {
    ps as f64 / 1e6
}

fn render_csv(t: &TemporalBreakdown) -> String {
    format!(
        "rank,idle_time_us,compute_time_us,non_compute_time_us,kernel_time_us,idle_time_pctg,compute_time_pctg,non_compute_time_pctg,gpu_events\n{},{},{},{},{},{},{},{},{}\n",
        t.rank,
        us(t.idle_time_ps),
        us(t.compute_time_ps),
        us(t.non_compute_time_ps),
        us(t.kernel_time_ps),
        t.idle_time_pctg,
        t.compute_time_pctg,
        t.non_compute_time_pctg,
        t.gpu_events
    )
}

/// The temporal breakdown tool.
pub struct TemporalBreakdownTool;

impl Tool for TemporalBreakdownTool {
    const NAME: &'static str = "temporal_breakdown";
    const TITLE: &'static str = "Temporal breakdown";
    const DESCRIPTION: &'static str = "Per rank, the GPU's time split into idle, computation and non-compute work (HTA's temporal breakdown, for PyTorch traces).";
    type Params = NoParams;
    type Output = PerHost<TemporalBreakdown>;
    /// GPU events, the launches they join to, and `ProfilerStep` annotations (see
    /// [`crate::base::pytorch::hta`]); host operator slices are not used.
    const READS: xlens_loader::Reads = xlens_loader::Reads::GpuActivity;

    fn run(run: &Run, _: &NoParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, temporal_breakdown))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}
