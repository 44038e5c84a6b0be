//! CUDA kernel launch statistics (HTA's `get_cuda_kernel_launch_stats`): per rank, each kernel
//! launch's CPU-side duration, the kernel's GPU duration and the delay between them, with the
//! launches that stand out.
//!
//! As HTA 0.5.0 computes it (`base::hta` loads the events by its rules): launches are the
//! correlations of `cudaLaunchKernel`, `cudaLaunchKernelExC` (and MTIA's submit call), with
//! `cudaMemcpyAsync` and `cudaMemsetAsync` unless memory events are left out; each CPU call
//! (no stream) is joined to the GPU events (with a stream) of its correlation; the launch delay
//! is the GPU start minus the CPU call's end, 0 when negative. The categories are those HTA's
//! plot draws: short kernels (CPU duration at most `runtime_cutoff` and GPU duration below the
//! CPU duration), runtime outliers (CPU duration above `runtime_cutoff`), launch delay outliers
//! (delay above `launch_delay_cutoff`). Other launch calls (`cuLaunchKernel`,
//! `hipLaunchKernel`) are not counted, as in HTA.

use serde::Serialize;
use std::collections::HashMap;

use crate::base::context::{Analysis, Run};
use crate::base::tool::{PerHost, Tool, ToolError};

/// The launch statistics' parameters (HTA's defaults).
#[derive(Debug, Clone, clap::Args, serde::Deserialize)]
pub struct LaunchStatsParams {
    /// CPU durations above this (µs) are runtime outliers.
    #[arg(long, default_value_t = 50)]
    #[serde(default = "default_runtime")]
    pub runtime_cutoff: i64,
    /// Launch delays above this (µs) are outliers.
    #[arg(long, default_value_t = 100)]
    #[serde(default = "default_delay")]
    pub launch_delay_cutoff: i64,
    /// Leave cudaMemcpyAsync and cudaMemsetAsync out.
    #[arg(long)]
    #[serde(default)]
    pub no_memory_events: bool,
    /// Launches listed, longest delay first (all are counted).
    #[arg(long, default_value_t = 100)]
    #[serde(default = "default_top")]
    pub top: usize,
}

fn default_runtime() -> i64 {
    50
}
fn default_delay() -> i64 {
    100
}
fn default_top() -> usize {
    100
}

impl Default for LaunchStatsParams {
    fn default() -> Self {
        LaunchStatsParams {
            runtime_cutoff: 50,
            launch_delay_cutoff: 100,
            no_memory_events: false,
            top: 100,
        }
    }
}

/// Sum, mean, min and max of one quantity (ps) over the launches.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub sum: f64,
    pub mean: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl Summary {
    fn of(v: &[f64]) -> Summary {
        let sum: f64 = v.iter().sum();
        let n = v.len();
        Summary {
            sum,
            mean: (n > 0).then(|| sum / n as f64),
            min: v.iter().copied().reduce(f64::min),
            max: v.iter().copied().reduce(f64::max),
        }
    }
}

/// One launch.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Launch {
    pub correlation: i64,
    pub cpu_name: String,
    pub gpu_name: String,
    pub cpu_duration_ps: i64,
    pub gpu_duration_ps: i64,
    pub launch_delay_ps: i64,
}

/// One rank's launch statistics.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LaunchStats {
    pub rank: i64,
    pub num_launches: usize,
    pub short_kernels: usize,
    pub runtime_outliers: usize,
    pub launch_delay_outliers: usize,
    pub cpu_duration_ps: Summary,
    pub gpu_duration_ps: Summary,
    pub launch_delay_ps: Summary,
    /// The `top` launches with the longest delay (of `num_launches`).
    pub launches: Vec<Launch>,
    pub last_step_dropped: bool,
}

pub fn launch_stats(a: &Analysis, prm: &LaunchStatsParams) -> LaunchStats {
    let p = a.profile();
    let t = a.hta();
    let mut calls = vec![
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "runFunction - job_prep_and_submit_for_execution",
    ];
    if !prm.no_memory_events {
        calls.extend(["cudaMemcpyAsync", "cudaMemsetAsync"]);
    }
    let mut corr: Vec<i64> = t
        .events
        .iter()
        .filter(|e| calls.contains(&p.str(e.name)))
        .map(|e| e.correlation)
        .collect();
    corr.sort_unstable();
    corr.dedup();
    let has = |c: i64| corr.binary_search(&c).is_ok();
    let mut gpu: HashMap<i64, Vec<usize>> = HashMap::new();
    for (i, e) in t.events.iter().enumerate() {
        if e.stream != -1 && has(e.correlation) {
            gpu.entry(e.correlation).or_default().push(i);
        }
    }
    let mut launches = Vec::new();
    for c in t
        .events
        .iter()
        .filter(|e| e.stream == -1 && has(e.correlation))
    {
        for &g in gpu.get(&c.correlation).map(Vec::as_slice).unwrap_or(&[]) {
            let g = &t.events[g];
            let delay = (g.start_ps - c.start_ps - (c.end_ps - c.start_ps)).max(0);
            launches.push(Launch {
                correlation: c.correlation,
                cpu_name: p.str(c.name).to_string(),
                gpu_name: p.str(g.name).to_string(),
                cpu_duration_ps: c.end_ps - c.start_ps,
                gpu_duration_ps: g.end_ps - g.start_ps,
                launch_delay_ps: delay,
            });
        }
    }
    // The cutoffs are in µs, as HTA's.
    let (rc, lc) = (
        prm.runtime_cutoff.saturating_mul(1_000_000),
        prm.launch_delay_cutoff.saturating_mul(1_000_000),
    );
    let col = |f: fn(&Launch) -> i64| launches.iter().map(|l| f(l) as f64).collect::<Vec<f64>>();
    let out = LaunchStats {
        rank: t.rank,
        num_launches: launches.len(),
        short_kernels: launches
            .iter()
            .filter(|l| l.cpu_duration_ps <= rc && l.gpu_duration_ps < l.cpu_duration_ps)
            .count(),
        runtime_outliers: launches.iter().filter(|l| l.cpu_duration_ps > rc).count(),
        launch_delay_outliers: launches.iter().filter(|l| l.launch_delay_ps > lc).count(),
        cpu_duration_ps: Summary::of(&col(|l| l.cpu_duration_ps)),
        gpu_duration_ps: Summary::of(&col(|l| l.gpu_duration_ps)),
        launch_delay_ps: Summary::of(&col(|l| l.launch_delay_ps)),
        launches: Vec::new(),
        last_step_dropped: t.last_step_dropped,
    };
    launches.sort_by(|a, b| {
        b.launch_delay_ps
            .cmp(&a.launch_delay_ps)
            .then(a.correlation.cmp(&b.correlation))
    });
    launches.truncate(prm.top);
    LaunchStats { launches, ..out }
}

fn render_csv(s: &LaunchStats) -> String {
    let mut o = format!(
        "# rank {}: {} launches, {} short kernels, {} runtime outliers, {} launch delay outliers; the {} longest delays:\ncorrelation,cpu_name,gpu_name,cpu_duration_us,gpu_duration_us,launch_delay_us\n",
        s.rank,
        s.num_launches,
        s.short_kernels,
        s.runtime_outliers,
        s.launch_delay_outliers,
        s.launches.len()
    );
    for l in &s.launches {
        o.push_str(&format!(
            "{},{},{},{},{},{}\n",
            l.correlation,
            crate::base::fmt::csv_field(&l.cpu_name),
            crate::base::fmt::csv_field(&l.gpu_name),
            l.cpu_duration_ps as f64 / 1e6,
            l.gpu_duration_ps as f64 / 1e6,
            l.launch_delay_ps as f64 / 1e6
        ));
    }
    o
}

/// The CUDA launch statistics tool.
pub struct LaunchStatsTool;

impl Tool for LaunchStatsTool {
    const NAME: &'static str = "cuda_launch_stats";
    const TITLE: &'static str = "Launch stats";
    const DESCRIPTION: &'static str = "Per rank, CUDA kernel launches: CPU call and GPU kernel durations, launch delays, short kernels and outliers (HTA's CUDA kernel launch stats, for PyTorch traces).";
    type Params = LaunchStatsParams;
    type Output = PerHost<LaunchStats>;

    fn run(run: &Run, prm: &LaunchStatsParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| launch_stats(a, prm)))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}
