//! The overview page: steps (XProf-compatible and all), per-step breakdown, run environment,
//! device duty cycle, op placement, FLOP rate, top ops and recommendations with their evidence.

use serde::Serialize;

use crate::base::context::{Analysis, Run};
use crate::base::tool::{NoParams, Tool, ToolError};

use crate::base::device::DeviceInfo;
use crate::base::ops::events::OpSource;
use crate::base::ops::op_metrics::OpMetric;
use crate::base::steps::step_db::{Category, StepRow, Summary, CATEGORIES};

pub const TOP_OPS: usize = 10;

/// Step time over a set of steps.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepFigures {
    pub count: usize,
    pub mean_ps: i64,
    pub std_dev_ps: i64,
    pub min_ps: i64,
    pub max_ps: i64,
    pub summary: Summary,
    /// Mean per breakdown category over these steps, ps (same order as `categories`).
    pub mean_breakdown_ps: Vec<i64>,
}

/// Steps and their figures.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepTable {
    #[serde(flatten)]
    pub figures: StepFigures,
    pub rows: Vec<StepRow>,
}

impl StepTable {
    pub fn of(rows: &[StepRow]) -> StepTable {
        Self::from_rows(rows.to_vec())
    }

    /// [`StepTable::of`] with the breakdown's columns `categories` (the rows' host's).
    pub fn of_categories(rows: &[StepRow], categories: &[Category]) -> StepTable {
        let mut t = Self::from_rows(rows.to_vec());
        t.figures.mean_breakdown_ps.truncate(categories.len());
        t
    }

    /// [`StepTable::of`] rows the caller gives up.
    pub fn from_rows(rows: Vec<StepRow>) -> StepTable {
        let s = Summary::of(&rows.iter().map(|r| r.duration_ps).collect::<Vec<_>>());
        let n = rows.len().max(1) as i64;
        let figures = StepFigures {
            count: s.count,
            mean_ps: s.mean_ps,
            std_dev_ps: s.std_dev_ps,
            min_ps: s.min_ps,
            max_ps: s.max_ps,
            summary: s,
            mean_breakdown_ps: (0..CATEGORIES.len())
                .map(|i| {
                    rows.iter()
                        .map(|r| r.breakdown_ps.get(i).copied().unwrap_or(0))
                        .fold(0i64, i64::saturating_add)
                        / n
                })
                .collect(),
        };
        StepTable { figures, rows }
    }
}

/// A host's step figures without its rows: the run-level copy of the first host's table (the
/// rows are in that host's entry, `hosts[i].steps.rows`; a run of many steps would otherwise
/// print them twice).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunSteps {
    #[serde(flatten)]
    pub figures: StepFigures,
    /// Which host's table these are (an index into `hosts`), where its rows are.
    pub host_index: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Placement {
    /// Framework/host op occurrences on the host and ops on the device.
    pub host_ops: u64,
    pub device_ops: u64,
    pub device_ops_percent: f64,
    pub host_self_time_ps: i64,
    pub device_self_time_ps: i64,
    pub device_time_percent: f64,
    pub explanation: &'static str,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    pub text: String,
    pub evidence: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostOverview {
    pub host: String,
    pub error: Option<String>,
    pub hardware: Option<crate::base::steps::step_db::Hardware>,
    pub device: Option<DeviceInfo>,
    /// XProf-compatible steps (XProf drops the first and last when more than 5 remain).
    pub steps: StepTable,
    /// Every well-formed annotated step, none dropped.
    pub steps_all: StepTable,
    pub steps_notes: Vec<String>,
    /// Busy share of each device (op self time / first-to-last op span), percent.
    pub device_duty_cycle_percent: Option<f64>,
    pub devices: Vec<crate::base::ops::op_metrics::DeviceTime>,
    pub placement: Placement,
    pub op_source: Option<&'static str>,
    pub total_flops: f64,
    pub flop_rate_per_second: Option<f64>,
    pub peak_flop_rate_per_second: Option<f64>,
    pub flop_utilization_percent: Option<f64>,
    pub top_ops: Vec<OpMetric>,
    pub op_count: usize,
    pub recommendations: Vec<Recommendation>,
    /// Peak memory against the device's capacity, when the profile states the capacity.
    pub memory_headroom: Option<crate::base::memory::headroom::Headroom>,
    /// What bounds the steps ([`crate::base::advice`]).
    pub advice: Option<crate::base::advice::Advice>,
    /// The breakdown's columns of this host's steps (`breakdown_ps[i]` is `categories[i]`).
    #[serde(skip)]
    pub categories: &'static [Category],
    /// PyTorch traces: the PyTorch TensorBoard plugin's overview figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pytorch: Option<TorchOverview>,
}

/// What the PyTorch TensorBoard plugin's overview shows beyond the step table.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TorchOverview {
    /// How the steps are formed.
    pub step_definition: &'static str,
    /// The breakdown's columns (the plugin's).
    pub categories: &'static [Category],
    /// Per GPU: utilization, estimated SM efficiency and achieved occupancy over the steps.
    pub gpus: Vec<crate::base::pytorch::torch_steps::TorchGpu>,
    /// Per step: computation, communication, their overlap and the rest (the plugin's
    /// distributed view).
    pub comm_overlap: Vec<crate::base::pytorch::torch_steps::CommOverlap>,
}

/// The overview of every host: steps and their breakdown, device, top ops, advice.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Overview {
    pub run: String,
    pub host_count: usize,
    pub device_type: String,
    /// Device planes that recorded events, over all hosts.
    pub devices_participated: usize,
    pub categories: &'static [Category],
    /// The figures of the first host that loaded (what `xlens report` shows per host), for
    /// convenience; its per-step rows are in its entry of `hosts`.
    pub steps: Option<RunSteps>,
    pub steps_all: Option<RunSteps>,
    pub hosts: Vec<HostOverview>,
    /// With two hosts or more with steps: the hosts compared (per-host step statistics, host ×
    /// step matrices, stragglers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_hosts: Option<crate::base::hosts::across::AllHosts>,
    /// With two hosts or more with advice: the run's verdict over its hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_advice: Option<crate::base::advice::RunAdvice>,
}

fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        100.0 * a / b
    } else {
        0.0
    }
}

fn ms(ps: i64) -> String {
    format!("{:.3} ms", ps as f64 / 1e9)
}

pub fn host_overview(host: &str, a: &Analysis) -> HostOverview {
    // A Chrome trace's passes of its own (the operator tree, memory, the events as HTA reads
    // them, host ops) are independent of the step grouping and of each other: both cores take
    // them, and the step grouping, as each comes free.
    let (db, ops) = if a.profile().key("cat").is_some() {
        crate::base::par::each(&[
            &|| {
                a.steps_and_ops();
            },
            &|| {
                a.torch_views();
            },
            &|| {
                a.headroom();
            },
            &|| {
                a.host_framework_ops();
            },
            &|| {
                a.hta();
            },
        ]);
        a.steps_and_ops()
    } else {
        a.steps_and_ops()
    };
    let steps = StepTable::of_categories(&db.steps, db.categories());
    let steps_all = StepTable::of_categories(&db.steps_all, db.categories());
    let dev = a.device().clone();
    let host_ops = a.host_framework_ops();
    let host_ops = &host_ops.0;
    let on_device = matches!(
        ops.source,
        Some(OpSource::DeviceXlaOps) | Some(OpSource::GpuStreams)
    );
    let (device_ops, device_self) = if on_device {
        (
            ops.ops.iter().map(|o| o.occurrences).sum(),
            ops.total_self_time_ps,
        )
    } else {
        (0, 0)
    };
    let host_count: u64 = host_ops.iter().map(|o| o.occurrences).sum::<u64>()
        + if on_device {
            0
        } else {
            ops.ops.iter().map(|o| o.occurrences).sum::<u64>()
        };
    let host_self: i64 = host_ops
        .iter()
        .map(|o| o.self_time_ps)
        .fold(0i64, i64::saturating_add)
        .saturating_add(
            if on_device || ops.source == Some(OpSource::HostFrameworkOps) {
                0
            } else {
                ops.total_self_time_ps
            },
        );
    let placement = Placement {
        host_ops: host_count,
        device_ops,
        device_ops_percent: pct(device_ops as f64, (device_ops + host_count) as f64),
        host_self_time_ps: host_self,
        device_self_time_ps: device_self,
        device_time_percent: pct(device_self as f64, device_self.saturating_add(host_self) as f64),
        explanation: "Host: framework ops on host threads (TF ops, tf.data iterators) and, on CPU-only profiles, XLA ops run by the CPU runtime. Device: ops on TPU/GPU. % of ops counts occurrences (as XProf's host/device TF-op percent); % of time uses self time.",
    };
    let span: i64 = ops
        .devices
        .iter()
        .map(|d| d.span_ps)
        .fold(0, i64::saturating_add);
    let busy: i64 = ops
        .devices
        .iter()
        .map(|d| d.busy_ps)
        .fold(0, i64::saturating_add);
    let duty = (on_device && span > 0).then(|| pct(busy as f64, span as f64));
    let peak = dev
        .peak_teraflops_per_second
        .map(|t| t * 1e12 * dev.active.max(1) as f64);
    let rate = (ops.total_flops > 0.0 && ops.total_self_time_ps > 0).then(|| {
        ops.total_flops / (ops.total_self_time_ps as f64 / 1e12) * ops.devices.len().max(1) as f64
    });
    let util = match (rate, peak) {
        (Some(r), Some(pk)) if pk > 0.0 => Some(pct(r, pk)),
        _ => None,
    };
    let mut rec = Vec::new();
    if steps.figures.count > 0 {
        let total: i64 = steps
            .rows
            .iter()
            .map(|r| r.duration_ps)
            .fold(0, i64::saturating_add);
        let cat = |id: &str| match db.category(id) {
            Some(i) => steps
                .rows
                .iter()
                .map(|r| r.breakdown_ps.get(i).copied().unwrap_or(0))
                .fold(0i64, i64::saturating_add),
            None => 0,
        };
        if db.torch.is_some() {
            torch_recommendations(&mut rec, db.torch.as_ref(), &cat, total, &steps);
            tensor_core_recommendation(&mut rec, a);
        }
        let input = pct(cat("input") as f64, total as f64);
        let other = pct(cat("other") as f64, total as f64);
        if db.torch.is_none() {
            // The input pipeline's verdict, word for word.
            let (class, verdict) = crate::base::steps::input_marks::input_verdict(
                steps.figures.count,
                input,
                other,
                &db.input_annotations,
            );
            let text = if class == "HIGHLY" || class == "MODERATELY" {
                format!("{verdict} Prefetch, parallelise or cache the input pipeline (see input_pipeline_analyzer).")
            } else {
                verdict
            };
            rec.push(Recommendation {
                text,
                evidence: format!(
                    "input is {input:.1}% of step time over {} steps",
                    steps.figures.count
                ),
            });
        }
        if other >= 20.0 && db.torch.is_none() {
            rec.push(Recommendation { text: "Much of the step is covered by no event of the step (framework overhead, Python, or work the profile does not link to the step); look at the trace viewer between ops.".into(), evidence: format!("'All others' is {other:.1}% of step time") });
        }
        let cv = if steps.figures.mean_ps > 0 {
            100.0 * steps.figures.std_dev_ps as f64 / steps.figures.mean_ps as f64
        } else {
            0.0
        };
        if cv >= 20.0 && steps.figures.count >= 3 {
            rec.push(Recommendation { text: "Step time varies a lot between steps; look for periodic work (checkpoints, evaluation, logging, recompilation).".into(), evidence: format!("std dev {} is {cv:.0}% of mean {}; min {}, max {}", ms(steps.figures.std_dev_ps), ms(steps.figures.mean_ps), ms(steps.figures.min_ps), ms(steps.figures.max_ps)) });
        }
    } else {
        rec.push(Recommendation { text: "No steps found: annotate steps (JAX `jax.profiler.StepTraceAnnotation('train', step_num=i)`, TF `tf.profiler.experimental.Trace('train', step_num=i, _r=1)`) to get step time and its breakdown.".into(), evidence: db.notes.join(" ") });
    }
    if let Some(d) = duty {
        if d < 50.0 {
            rec.push(Recommendation { text: "Devices are idle much of the time between their first and last op; overlap host work and input with device execution.".into(), evidence: format!("device duty cycle {d:.1}%") });
        }
    }
    // (Not for PyTorch: its host operators are what launch the kernels.)
    if on_device && placement.device_ops_percent < 50.0 && host_count > 0 && db.torch.is_none() {
        rec.push(Recommendation {
            text: "Many ops run on the host; move them to the device if possible.".into(),
            evidence: format!(
                "{:.1}% of op occurrences on the device",
                placement.device_ops_percent
            ),
        });
    }
    let headroom = a.headroom().cloned();
    if let Some(h) = &headroom {
        rec.push(Recommendation {
            text: if h.growth_factor >= 1.5 {
                "Memory has room: a larger batch could raise device utilisation.".to_string()
            } else {
                "Memory is nearly full: a larger batch needs less memory per example first (see the memory viewer).".to_string()
            },
            evidence: h.statement.clone(),
        });
    }
    // The report's op times (TensorFlow ops: XProf's framework-op self time; TPU: XProf's
    // device op times; GPU: kernels by name), so that the largest op and its share are the same
    // in both.
    let times = a.op_times();
    let largest = times
        .ops
        .first()
        .map(|o| (o.name.as_str(), o.self_time_ps, times.total_self_time_ps));
    if let Some((name, self_ps, total_ps)) = largest {
        rec.push(Recommendation {
            text: format!("Largest op by self time: `{name}`; start optimising there."),
            evidence: format!(
                "{} of {} op self time ({:.1}%)",
                ms(self_ps),
                ms(total_ps),
                pct(self_ps as f64, total_ps as f64)
            ),
        });
    }
    HostOverview {
        host: host.to_string(),
        error: None,
        hardware: Some(db.hardware),
        device: Some(dev),
        steps,
        steps_all,
        steps_notes: db.notes.clone(),
        device_duty_cycle_percent: duty,
        devices: ops.devices.clone(),
        placement,
        op_source: ops.source_description,
        total_flops: ops.total_flops,
        flop_rate_per_second: rate,
        peak_flop_rate_per_second: peak,
        flop_utilization_percent: util,
        op_count: ops.ops.len(),
        top_ops: ops.ops.iter().take(TOP_OPS).cloned().collect(),
        recommendations: rec,
        memory_headroom: headroom,
        advice: crate::base::advice::advise(a),
        categories: db.categories(),
        pytorch: db.torch.as_ref().map(|t| TorchOverview {
            step_definition: TORCH_STEP_DEFINITION,
            categories: db.categories(),
            gpus: t.gpus.clone(),
            comm_overlap: t.comm_overlap.clone(),
        }),
    }
}

/// The median step (by duration, then start) of the first host with steps: its name and
/// window, for a trace window that shows a typical step.
pub fn median_step(o: &Overview) -> Option<(String, (i64, i64))> {
    let rows = &o
        .hosts
        .iter()
        .find(|h| !h.steps.rows.is_empty())?
        .steps
        .rows;
    let mut by_dur: Vec<_> = rows.iter().collect();
    by_dur.sort_by_key(|r| (r.duration_ps, r.begin_ps));
    let m = by_dur[(by_dur.len() - 1) / 2];
    Some((
        m.name.clone(),
        (m.begin_ps, m.begin_ps.saturating_add(m.duration_ps.max(1))),
    ))
}

/// How a PyTorch trace's steps are formed, as the page says it.
pub const TORCH_STEP_DEFINITION: &str = "Steps as the PyTorch profiler's TensorBoard plugin (torch-tb-profiler) forms them: each ProfilerStep#N, from the previous step's end to the later of its own end and the end of the device work launched inside it; all steps kept.";

/// The PyTorch TensorBoard plugin's Tensor Core rule: on a GPU that has them (compute
/// capability 7.0 or more), no kernel time on Tensor Cores while operators that could use them
/// launched some.
fn tensor_core_recommendation(rec: &mut Vec<Recommendation>, a: &Analysis) {
    let p = a.profile();
    let major = p.key("compute_cap_major").and_then(|k| {
        p.planes
            .iter()
            .filter(|pl| p.str(pl.name).starts_with("/device:GPU:"))
            .find_map(|pl| pl.stats().get(k).and_then(|v| v.as_i64()))
    });
    let Some(v) = a.torch_views() else { return };
    if major.is_some_and(|m| m >= 7)
        && v.tc_used_ratio == Some(0.0)
        && v.tc_eligible_ops_kernel_ratio > 0.0
    {
        rec.push(Recommendation {
            text: "Operators that can run on Tensor Cores launched kernels that do not use them: run them in lower precision with torch.autocast (bf16, or fp16 with a GradScaler), or allow TF32 (torch.backends.cuda.matmul.allow_tf32 = True).".into(),
            evidence: format!(
                "{:.0}% of the operators' kernel time is launched by Tensor-Core-eligible operators; 0% of kernel time is on Tensor Cores (compute capability {}.x)",
                100.0 * v.tc_eligible_ops_kernel_ratio,
                major.unwrap_or(0)
            ),
        });
    }
}

/// The PyTorch TensorBoard plugin's recommendations, with their figures: DataLoader over 5% of
/// the step, GPU utilization under 50%, and communication over 10%.
fn torch_recommendations(
    rec: &mut Vec<Recommendation>,
    t: Option<&crate::base::steps::step_db::TorchFigures>,
    cat: &dyn Fn(&str) -> i64,
    total: i64,
    steps: &StepTable,
) {
    let n = steps.figures.count;
    let loader = pct(cat("dataloader") as f64, total as f64);
    if loader > 5.0 {
        rec.push(Recommendation { text: "Input-bound: the DataLoader takes a large part of each step. Set `num_workers` on the DataLoader (multi-process loading), `pin_memory=True`, and a `prefetch_factor` so batches are ready before the step asks.".into(), evidence: format!("DataLoader is {loader:.1}% of step time over {n} steps") });
    } else {
        rec.push(Recommendation {
            text: "Not input-bound.".into(),
            evidence: format!("DataLoader is {loader:.1}% of step time over {n} steps"),
        });
    }
    let comm = pct(cat("communication") as f64, total as f64);
    if comm > 10.0 {
        rec.push(Recommendation { text: "Much of the step is communication: overlap it with computation (DDP bucketing, async collectives), compress gradients, accumulate gradients over more steps, or raise the batch size.".into(), evidence: format!("communication is {comm:.1}% of step time") });
    }
    for g in t.map(|t| t.gpus.as_slice()).unwrap_or(&[]) {
        if g.utilization_percent < 50.0 {
            rec.push(Recommendation { text: format!("GPU {} has low utilization: raise the batch size, or cut launch overhead with CUDA graphs (`torch.compile(mode=\"reduce-overhead\")`).", g.device), evidence: format!("a kernel runs {:.1}% of the steps' time on GPU {}", g.utilization_percent, g.device) });
        }
    }
}

fn failed(host: &str, e: String) -> HostOverview {
    HostOverview {
        host: host.to_string(),
        error: Some(e),
        hardware: None,
        device: None,
        steps: StepTable::of(&[]),
        steps_all: StepTable::of(&[]),
        steps_notes: Vec::new(),
        device_duty_cycle_percent: None,
        devices: Vec::new(),
        placement: Placement {
            host_ops: 0,
            device_ops: 0,
            device_ops_percent: 0.0,
            host_self_time_ps: 0,
            device_self_time_ps: 0,
            device_time_percent: 0.0,
            explanation: "",
        },
        op_source: None,
        total_flops: 0.0,
        flop_rate_per_second: None,
        peak_flop_rate_per_second: None,
        flop_utilization_percent: None,
        top_ops: Vec::new(),
        op_count: 0,
        recommendations: Vec::new(),
        memory_headroom: None,
        advice: None,
        categories: CATEGORIES,
        pytorch: None,
    }
}

/// The overview page of every host of a run.
pub struct OverviewPage;

impl Tool for OverviewPage {
    const NAME: &'static str = "overview_page";
    const TITLE: &'static str = "Overview";
    const DESCRIPTION: &'static str = "Steps (XProf-compatible and all) with mean, std dev, min, max and a per-step breakdown; run environment, device duty cycle, op placement, FLOP rate, top ops, recommendations with evidence.";
    type Params = NoParams;
    type Output = Overview;

    fn run(run: &Run, _: &NoParams) -> Result<Overview, ToolError> {
        Ok(overview(run))
    }
    fn text(o: &Overview) -> String {
        render_text(o)
    }
    fn csv(o: &Overview) -> Option<String> {
        Some(render_csv(o))
    }
}

pub fn overview(run: &Run) -> Overview {
    let hosts = run.map_hosts(
        |h, a| host_overview(h.host(), a),
        |h, e| failed(h.host(), e.to_string()),
    );
    let first_index = hosts.iter().position(|h| h.error.is_none());
    let first = first_index.and_then(|i| hosts.get(i));
    let all_hosts = crate::base::hosts::across::compare_hosts(
        &hosts
            .iter()
            .filter(|h| h.error.is_none())
            .map(|h| crate::base::hosts::across::HostSteps {
                host: &h.host,
                rows: &h.steps.rows,
            })
            .collect::<Vec<_>>(),
        hosts
            .iter()
            .filter(|h| h.error.is_some())
            .map(|h| h.host.clone())
            .collect(),
        hosts
            .iter()
            .find(|h| h.error.is_none())
            .map_or(&CATEGORIES[..], |h| h.categories),
    );
    let run_advice = crate::base::advice::run_advice(
        hosts
            .iter()
            .filter_map(|h| h.advice.as_ref().map(|a| (h.host.as_str(), a))),
    );
    Overview {
        run_advice,
        run: run.name().to_string(),
        host_count: hosts.len(),
        device_type: first
            .and_then(|h| h.device.as_ref())
            .map(|d| format!("{} ({})", d.kind.as_str(), d.model))
            .unwrap_or_default(),
        devices_participated: hosts
            .iter()
            .filter_map(|h| h.device.as_ref())
            .map(|d| d.active)
            .sum(),
        categories: first.map_or(&CATEGORIES[..], |h| h.categories),
        steps: first.zip(first_index).map(|(h, i)| RunSteps {
            figures: h.steps.figures.clone(),
            host_index: i,
        }),
        steps_all: first.zip(first_index).map(|(h, i)| RunSteps {
            figures: h.steps_all.figures.clone(),
            host_index: i,
        }),
        hosts,
        all_hosts,
    }
}

pub fn render_text(o: &Overview) -> String {
    let mut t = format!(
        "run {}: {} host(s), device {}, {} device(s) participated\n",
        o.run, o.host_count, o.device_type, o.devices_participated
    );
    if let Some(r) = &o.run_advice {
        t.push_str(&format!("run advice: {}\n", r.summary));
    }
    for h in &o.hosts {
        if let Some(e) = &h.error {
            t.push_str(&format!("host {}: error: {e}\n", h.host));
            continue;
        }
        let s = &h.steps.figures;
        let which = match &h.pytorch {
            Some(_) => "as the PyTorch TensorBoard plugin forms them".to_string(),
            None => format!("XProf-compatible; {} annotated", h.steps_all.figures.count),
        };
        t.push_str(&format!(
            "host {}: {} steps ({which}), mean {} ± {} (min {}, max {})\n",
            h.host,
            s.count,
            ms(s.mean_ps),
            ms(s.std_dev_ps),
            ms(s.min_ps),
            ms(s.max_ps)
        ));
        for (c, v) in h.categories.iter().zip(&s.mean_breakdown_ps) {
            if *v > 0 {
                t.push_str(&format!("  {:<32} {}\n", c.label, ms(*v)));
            }
        }
        if let Some(d) = h.device_duty_cycle_percent {
            t.push_str(&format!("  device duty cycle {d:.1}%\n"));
        }
        for g in h.pytorch.iter().flat_map(|p| &p.gpus) {
            t.push_str(&format!(
                "  GPU {}: utilization {:.2}%, est. SM efficiency {}, est. achieved occupancy {}\n",
                g.device,
                g.utilization_percent,
                g.est_sm_efficiency_percent
                    .map_or("-".to_string(), |v| format!("{v:.2}%")),
                g.est_achieved_occupancy_percent
                    .map_or("-".to_string(), |v| format!("{v:.2}%")),
            ));
        }
        t.push_str(&format!(
            "  ops on device: {:.1}% of ops, {:.1}% of time\n",
            h.placement.device_ops_percent, h.placement.device_time_percent
        ));
        for r in &h.recommendations {
            t.push_str(&format!("  * {} ({})\n", r.text, r.evidence));
        }
        if let Some(a) = &h.advice {
            t.push_str(&format!("  advice: {} (over {})\n", a.summary, a.basis));
            t.push_str(&format!("    {} See `{}`", a.suggestion, a.tool));
            if let (Some(step), Some((s0, s1))) = (&a.worst_step, a.window_ps) {
                t.push_str(&format!(", step {step} [{s0} ps, {s1} ps]"));
            }
            t.push('\n');
            if a.step_ranges.len() > 1 {
                for r in &a.step_ranges {
                    t.push_str(&format!(
                        "    {} to {} ({} steps): {}\n",
                        r.first_step,
                        r.last_step,
                        r.steps,
                        r.bottleneck.as_str()
                    ));
                }
            }
        }
    }
    t
}

pub fn render_csv(o: &Overview) -> String {
    let mut t = String::from("host,step,group_id,begin_ps,duration_ps");
    for c in o.categories {
        t.push_str(&format!(",{}_ps", c.id));
    }
    t.push('\n');
    for h in &o.hosts {
        for r in &h.steps.rows {
            t.push_str(&format!(
                "{},{},{},{},{}",
                crate::base::fmt::csv_field(&h.host),
                crate::base::fmt::csv_field(&r.name),
                r.group_id,
                r.begin_ps,
                r.duration_ps
            ));
            for v in &r.breakdown_ps[..o.categories.len()] {
                t.push_str(&format!(",{v}"));
            }
            t.push('\n');
        }
    }
    t
}
