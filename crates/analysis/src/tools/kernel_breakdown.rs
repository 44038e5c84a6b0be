//! GPU kernel breakdown (HTA's `get_gpu_kernel_breakdown`): per rank, the GPU time of each kernel
//! type and of their overlaps, and the kernels of each type with their statistics.
//!
//! As HTA 0.5.0 computes it (`base::hta` loads the events by its rules): the union of each type's
//! kernels (computation, communication, memory); every stretch of time is labelled by the types
//! running then (`COMPUTATION overlapping COMMUNICATION`, ...), and each label's time summed,
//! with its share of all labelled time rounded to 1 decimal. Per kernel name within a type: sum,
//! max, min, mean and sample standard deviation of the durations (µs), by sum.
//!
//! One difference on purpose: with more than `num_kernels` names in a type, HTA names "others" the
//! kernels past the first `num_kernels` or whose running sum exceeds the `duration_ratio` quantile
//! of the running sums, and then re-aggregates over each name's *sum*, so a kept kernel shows
//! max = min = mean = sum and "others" gets statistics of sums. xlens keeps the same names and
//! gives every row (and "others") the statistics of its kernels' durations.

use serde::Serialize;

use crate::base::context::{Analysis, Run};
use crate::base::pytorch::hta::{kernel_type, union, KernelType};
use crate::base::tool::{PerHost, Tool, ToolError};

/// The kernel breakdown's parameters (HTA's, with the same defaults except memory kernels,
/// which are included).
#[derive(Debug, Clone, clap::Args, serde::Deserialize)]
pub struct KernelBreakdownParams {
    /// Kernels listed per type before the rest become "others" (HTA's default 10).
    #[arg(long, default_value_t = 10)]
    #[serde(default = "default_num_kernels")]
    pub num_kernels: usize,
    /// Quantile of the running sums beyond which kernels become "others" (HTA's default 0.8).
    #[arg(long, default_value_t = 0.8)]
    #[serde(default = "default_ratio")]
    pub duration_ratio: f64,
    /// Leave memory kernels (Memcpy, Memset) out, as HTA does by default.
    #[arg(long)]
    #[serde(default)]
    pub no_memory_kernels: bool,
}

fn default_num_kernels() -> usize {
    10
}

fn default_ratio() -> f64 {
    0.8
}

impl Default for KernelBreakdownParams {
    fn default() -> Self {
        KernelBreakdownParams {
            num_kernels: 10,
            duration_ratio: 0.8,
            no_memory_kernels: false,
        }
    }
}

/// Time of one kernel type, or of types overlapping.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TypeTime {
    /// `COMPUTATION`, `COMMUNICATION`, `MEMORY`, or types joined by ` overlapping `.
    pub kernel_type: String,
    pub sum_ps: i64,
    /// Share of all labelled time, rounded to 1 decimal as HTA does.
    pub percentage: f64,
}

/// The kernels of one name (or "others") in one type.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct KernelRow {
    pub name: String,
    pub kernel_type: KernelType,
    pub count: usize,
    pub sum_ps: i64,
    pub max_ps: i64,
    pub min_ps: i64,
    pub mean_ps: f64,
    /// Sample standard deviation (0 for one kernel).
    pub stddev_ps: f64,
    /// The same figures in HTA's float microseconds, as its CSV states them (and as its
    /// "others" grouping compares them).
    #[serde(skip)]
    pub us: KernelUs,
}

/// A kernel row's figures in HTA's float microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelUs {
    pub sum: f64,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    pub stddev: f64,
}

/// One rank's breakdown.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct KernelBreakdown {
    pub rank: i64,
    pub kernel_type_breakdown: Vec<TypeTime>,
    pub kernels: Vec<KernelRow>,
    /// Names per type before grouping into "others".
    pub names_total: usize,
    pub last_step_dropped: bool,
}

/// The label HTA gives a set of running types (bits in `types` order).
fn label(mask: u32, types: &[KernelType]) -> String {
    let name = |t: &KernelType| match t {
        KernelType::Computation => "COMPUTATION",
        KernelType::Communication => "COMMUNICATION",
        KernelType::Memory => "MEMORY",
        KernelType::Other => "OTHER",
    };
    types
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, t)| name(t))
        .collect::<Vec<_>>()
        .join(" overlapping ")
}

/// Mean and sample standard deviation (0 for one value).
fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n.max(1) as f64;
    let var = if n > 1 {
        v.iter().map(|d| (d - mean) * (d - mean)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    (mean, var.sqrt())
}

/// A row's statistics of the kernels' durations `ps`.
fn stats(name: String, kernel_type: KernelType, ps: &[i64]) -> KernelRow {
    let durs: Vec<f64> = ps.iter().map(|&d| d as f64 / 1e6).collect();
    let (mean, sd) = mean_sd(&durs);
    let exact: Vec<f64> = ps.iter().map(|&d| d as f64).collect();
    let (mean_ps, sd_ps) = mean_sd(&exact);
    KernelRow {
        name,
        kernel_type,
        count: ps.len(),
        sum_ps: ps.iter().copied().fold(0, i64::saturating_add),
        max_ps: ps.iter().copied().max().unwrap_or(0),
        min_ps: ps.iter().copied().min().unwrap_or(0),
        mean_ps,
        stddev_ps: sd_ps,
        us: KernelUs {
            sum: durs.iter().sum(),
            max: durs.iter().copied().fold(f64::MIN, f64::max),
            min: durs.iter().copied().fold(f64::MAX, f64::min),
            mean,
            stddev: sd,
        },
    }
}

/// pandas' default quantile (linear interpolation between order statistics).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub fn kernel_breakdown(a: &Analysis, prm: &KernelBreakdownParams) -> KernelBreakdown {
    let p = a.profile();
    let t = a.hta();
    let mut types = vec![KernelType::Computation, KernelType::Communication];
    if !prm.no_memory_kernels {
        types.push(KernelType::Memory);
    }
    // Labelled time: boundaries of every type's union, each stretch by the types covering it.
    let unions: Vec<Vec<(i64, i64)>> = types
        .iter()
        .map(|ty| {
            union(
                t.gpu()
                    .filter(|e| kernel_type(p.str(e.name)) == *ty)
                    .map(|e| (e.start_ps, e.end_ps))
                    .collect(),
            )
        })
        .collect();
    let mut marks: Vec<(i64, i32)> = Vec::new();
    for (i, u) in unions.iter().enumerate() {
        for &(s, e) in u {
            marks.push((s, 1 << i));
            marks.push((e, -(1 << i)));
        }
    }
    marks.sort_unstable();
    let mut by_mask: Vec<(u32, i64)> = Vec::new();
    let mut running = 0i32;
    for w in 0..marks.len() {
        running += marks[w].1;
        if let Some(next) = marks.get(w + 1) {
            let len = next.0 - marks[w].0;
            if running > 0 && len > 0 {
                let m = running as u32;
                match by_mask.iter_mut().find(|x| x.0 == m) {
                    Some(x) => x.1 += len,
                    None => by_mask.push((m, len)),
                }
            }
        }
    }
    let all: i64 = by_mask.iter().map(|x| x.1).sum();
    by_mask.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kernel_type_breakdown = by_mask
        .iter()
        .map(|&(m, ps)| {
            let v = if all > 0 {
                ps as f64 / all as f64 * 100.0
            } else {
                0.0
            };
            TypeTime {
                kernel_type: label(m, &types),
                sum_ps: ps,
                percentage: format!("{v:.1}").parse().unwrap_or(v),
            }
        })
        .collect();
    // Per kernel name within each type.
    let mut kernels = Vec::new();
    let mut names_total = 0;
    for ty in &types {
        let mut by_name: std::collections::HashMap<xlens_model::StrId, Vec<i64>> =
            std::collections::HashMap::new();
        for e in t.gpu().filter(|e| kernel_type(p.str(e.name)) == *ty) {
            by_name
                .entry(e.name)
                .or_default()
                .push(e.end_ps - e.start_ps);
        }
        let mut rows: Vec<KernelRow> = by_name
            .into_iter()
            .map(|(n, d)| stats(p.str(n).to_string(), *ty, &d))
            .collect();
        rows.sort_by(|a, b| {
            b.us.sum
                .total_cmp(&a.us.sum)
                .then_with(|| a.name.cmp(&b.name))
        });
        names_total += rows.len();
        if rows.len() > prm.num_kernels {
            let mut cum = Vec::with_capacity(rows.len());
            let mut acc = 0.0;
            for r in &rows {
                acc += r.us.sum;
                cum.push(acc);
            }
            let mut sorted = cum.clone();
            sorted.sort_by(f64::total_cmp);
            let q = quantile(&sorted, prm.duration_ratio);
            let mut kept = Vec::new();
            let mut grouped = false;
            for (i, r) in rows.into_iter().enumerate() {
                if i >= prm.num_kernels || cum[i] > q {
                    grouped = true;
                } else {
                    kept.push(r);
                }
            }
            if grouped {
                // "others": the statistics of the grouped kernels' own durations.
                let keep: Vec<&str> = kept.iter().map(|r| r.name.as_str()).collect();
                let durs: Vec<i64> = t
                    .gpu()
                    .filter(|e| kernel_type(p.str(e.name)) == *ty)
                    .filter(|e| !keep.contains(&p.str(e.name)))
                    .map(|e| e.end_ps - e.start_ps)
                    .collect();
                kept.push(stats("others".to_string(), *ty, &durs));
            }
            kernels.extend(kept);
        } else {
            kernels.extend(rows);
        }
    }
    KernelBreakdown {
        rank: t.rank,
        kernel_type_breakdown,
        kernels,
        names_total,
        last_step_dropped: t.last_step_dropped,
    }
}

fn render_csv(k: &KernelBreakdown) -> String {
    let mut o = String::from("kernel_type,name,count,sum_us,max_us,min_us,mean_us,stddev_us\n");
    for r in &k.kernels {
        o.push_str(&format!(
            "{:?},{},{},{},{},{},{},{}\n",
            r.kernel_type,
            crate::base::fmt::csv_field(&r.name),
            r.count,
            r.us.sum,
            r.us.max,
            r.us.min,
            r.us.mean,
            r.us.stddev
        ));
    }
    o
}

/// The kernel breakdown tool.
pub struct KernelBreakdownTool;

impl Tool for KernelBreakdownTool {
    const NAME: &'static str = "kernel_breakdown";
    const TITLE: &'static str = "Kernel breakdown";
    const DESCRIPTION: &'static str = "Per rank, GPU time by kernel type (computation, communication, memory) and their overlaps, and the top kernels of each type (HTA's kernel breakdown, for PyTorch traces).";
    type Params = KernelBreakdownParams;
    type Output = PerHost<KernelBreakdown>;

    fn run(run: &Run, prm: &KernelBreakdownParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| kernel_breakdown(a, prm)))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}
