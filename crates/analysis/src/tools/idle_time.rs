//! Idle time breakdown (HTA's `get_idle_time_breakdown`): per rank and stream, the gaps between
//! consecutive kernels, by why the GPU waited.
//!
//! As HTA 0.5.0 computes it (`base::hta` loads the events by its rules): on each stream, the
//! kernels, copies and memsets in start order; a gap is a kernel's start minus the previous one's
//! end (negative when they overlap). It is *host wait* when the CPU call that launched the kernel
//! (same correlation) started after the previous kernel ended, else *kernel wait* when under
//! `consecutive_kernel_delay` (30 µs), else *other*; the first kernel of a stream has no gap
//! (counted as other, with none). Times and ratios rounded to 2 decimals as HTA rounds them.
//!
//! One difference: a kernel whose launching call is not in the trace has no launch time here
//! (never host wait); HTA then takes the time of the trace's row 0.

use serde::Serialize;
use std::collections::HashMap;

use crate::base::context::{Analysis, Run};
use crate::base::pytorch::hta::is_gpu_kernel;
use crate::base::tool::{PerHost, Tool, ToolError};

/// The idle time breakdown's parameters.
#[derive(Debug, Clone, clap::Args, serde::Deserialize)]
pub struct IdleTimeParams {
    /// Gaps shorter than this (µs) count as kernel wait (HTA's default 30).
    #[arg(long, default_value_t = 30)]
    #[serde(default = "default_delay")]
    pub consecutive_kernel_delay: i64,
}

fn default_delay() -> i64 {
    30
}

impl Default for IdleTimeParams {
    fn default() -> Self {
        IdleTimeParams {
            consecutive_kernel_delay: 30,
        }
    }
}

/// Why the GPU waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdleCategory {
    HostWait,
    KernelWait,
    Other,
}

/// One stream's idle time of one category.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct IdleRow {
    pub stream: i64,
    pub idle_category: IdleCategory,
    /// Exact (HTA states µs rounded to 2 decimals; the CSV does too).
    pub idle_time_ps: i64,
    /// Share of the stream's idle time, rounded to 2 decimals (HTA); `None` when the stream has
    /// no idle time.
    pub idle_time_ratio: Option<f64>,
    /// Gaps counted.
    pub gaps: usize,
}

/// One rank's breakdown.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct IdleTime {
    pub rank: i64,
    pub rows: Vec<IdleRow>,
    pub last_step_dropped: bool,
}

fn round2(v: f64) -> f64 {
    format!("{v:.2}").parse().unwrap_or(v)
}

pub fn idle_time(a: &Analysis, prm: &IdleTimeParams) -> IdleTime {
    let p = a.profile();
    let t = a.hta();
    const KERNEL_CATS: [&str; 7] = [
        "kernel",
        "Kernel",
        "gpu_memset",
        "Memset",
        "gpu_memcpy",
        "Memcpy",
        "mtia_ccp_events",
    ];
    // The launching call's start, by correlation (the last such call, as HTA's assignment).
    let mut launch: HashMap<i64, i64> = HashMap::new();
    for e in t.events.iter() {
        if e.correlation != -1 && !is_gpu_kernel(p, e) {
            launch.insert(e.correlation, e.start_ps);
        }
    }
    // Streams in order of first appearance.
    // (stream, [(start, end, correlation)]).
    type Kernels = Vec<(i64, i64, i64)>;
    let mut streams: Vec<(i64, Kernels)> = Vec::new();
    for e in t.gpu() {
        if !KERNEL_CATS.contains(&p.str(e.cat)) {
            continue;
        }
        let i = match streams.iter().position(|s| s.0 == e.stream) {
            Some(i) => i,
            None => {
                streams.push((e.stream, Vec::new()));
                streams.len() - 1
            }
        };
        streams[i].1.push((e.start_ps, e.end_ps, e.correlation));
    }
    let delay_ps = prm.consecutive_kernel_delay.saturating_mul(1_000_000);
    let mut rows = Vec::new();
    for (stream, mut ks) in streams {
        ks.sort_by_key(|k| k.0);
        // (sum in ps, gaps) per category.
        let mut sums: Vec<(IdleCategory, i64, usize)> = Vec::new();
        let mut add = |c: IdleCategory, v: Option<i64>| {
            let at = match sums.iter().position(|x| x.0 == c) {
                Some(i) => i,
                None => {
                    sums.push((c, 0, 0));
                    sums.len() - 1
                }
            };
            if let Some(v) = v {
                sums[at].1 += v;
                sums[at].2 += 1;
            }
        };
        for w in 0..ks.len() {
            let Some(prev_end) = w.checked_sub(1).map(|i| ks[i].1) else {
                add(IdleCategory::Other, None);
                continue;
            };
            let gap = ks[w].0 - prev_end;
            let host = launch.get(&ks[w].2).is_some_and(|&l| l > prev_end);
            let c = if host {
                IdleCategory::HostWait
            } else if gap < delay_ps {
                IdleCategory::KernelWait
            } else {
                IdleCategory::Other
            };
            add(c, Some(gap));
        }
        sums.sort_by_key(|x| x.0);
        let total: i64 = sums.iter().map(|x| x.1).sum();
        for (c, ps, n) in sums {
            rows.push(IdleRow {
                stream,
                idle_category: c,
                idle_time_ps: ps,
                idle_time_ratio: (total != 0).then(|| round2(ps as f64 / total as f64)),
                gaps: n,
            });
        }
    }
    IdleTime {
        rank: t.rank,
        rows,
        last_step_dropped: t.last_step_dropped,
    }
}

fn render_csv(t: &IdleTime) -> String {
    let mut o = String::from("rank,stream,idle_category,idle_time_us,idle_time_ratio,gaps\n");
    for r in &t.rows {
        o.push_str(&format!(
            "{},{},{:?},{},{},{}\n",
            t.rank,
            r.stream,
            r.idle_category,
            round2(r.idle_time_ps as f64 / 1e6),
            r.idle_time_ratio.map(|v| v.to_string()).unwrap_or_default(),
            r.gaps
        ));
    }
    o
}

/// The idle time breakdown tool.
pub struct IdleTimeTool;

impl Tool for IdleTimeTool {
    const NAME: &'static str = "idle_time_breakdown";
    const TITLE: &'static str = "Idle time";
    const DESCRIPTION: &'static str = "Per rank and GPU stream, the gaps between kernels by cause: host wait, kernel (launch) wait, other (HTA's idle time breakdown, for PyTorch traces).";
    type Params = IdleTimeParams;
    type Output = PerHost<IdleTime>;

    fn run(run: &Run, prm: &IdleTimeParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| idle_time(a, prm)))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}
