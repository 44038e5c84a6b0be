//! The run's key figures in one small answer, as XProf's agent CLI gives them with
//! `get_kpi_metrics`: mean step time, device duty cycle, roofline utilization and where its
//! FLOPs come from, peak memory, and the accelerator; and the verdict the overview and the
//! report give (what bounds the steps, what to try, the worst step's window). Each figure is XProf's definition, in
//! XProf's units (ms, percent, GiB); a figure the profile cannot give is `null`, and `notes` says
//! why (XProf prints `0.0%` or `-1` there).

use serde::Serialize;
use std::collections::BTreeMap;

use crate::base::advice::{advise, run_advice, Advice, Bottleneck};
use crate::base::context::Run;
use crate::base::device::DeviceKind;
use crate::base::hlo::program::ProgramRoofline;
use crate::base::ops::duty_cycle::{tpu_duty_cycle, DutyCycle};
use crate::base::peaks::UserPeaks;
use crate::base::tool::{NoParams, Tool, ToolError};

const GIB: f64 = (1u64 << 30) as f64;

/// The accelerator of the run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Accelerator {
    /// `TPU`, `GPU` or `CPU` (no accelerator).
    pub kind: DeviceKind,
    /// The model as the profile names it (e.g. `TPU v6 Lite`).
    pub model: String,
    /// Device planes (TPU cores, GPUs) over every host.
    pub cores: usize,
}

/// What bounds the steps: the overview's and the report's advice, in short.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The host it is of (the first host read; `run_summary` covers them all).
    pub host: String,
    pub bottleneck: Bottleneck,
    /// The verdict and the figure that decided it.
    pub summary: String,
    /// What to try.
    pub suggestion: String,
    /// The tool that shows it.
    pub tool: &'static str,
    /// The step where the deciding figure is largest, and its window on the trace (for
    /// `trace_viewer --start-ps --end-ps`).
    pub worst_step: Option<String>,
    pub window_ps: Option<(i64, i64)>,
    /// With several hosts: how many agree, and on what.
    pub run_summary: Option<String>,
}

/// The key figures of a run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Kpi {
    pub run: String,
    pub hosts: usize,
    /// Hosts that could not be read: `host: error`.
    pub host_errors: Vec<String>,
    /// Mean step time (XProf's steps: the first and last dropped when more than 5 remain); with
    /// several hosts, each step's longest host.
    pub step_time_ms: Option<f64>,
    pub step_count: usize,
    /// `host` (one host), `per_step_max_across_hosts`, or `none` (no steps).
    pub step_time_scope: &'static str,
    /// Each host's mean step time, with several hosts.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_host_step_time_ms: BTreeMap<String, f64>,
    /// TPU: time some core of a chip runs an on-duty op over the chips' spans (XProf's device
    /// duty cycle).
    pub duty_cycle_percent: Option<f64>,
    /// Matrix-unit utilization from TPU performance counters.
    pub mxu_utilization_percent: Option<f64>,
    /// The program's roofline efficiency: the larger of its FLOP rate and HBM bandwidth as
    /// shares of the device's peaks (XProf's roofline `Program` row).
    pub roofline_utilization_percent: Option<f64>,
    pub flops_utilization_percent: Option<f64>,
    pub hbm_utilization_percent: Option<f64>,
    /// Where the program's FLOPs come from: `xla_cost_model` (XLA's figures in the profile),
    /// `xlens_cost_model` (xlens's model over the HLO), `mixed`, or `none`.
    pub flops_provenance: &'static str,
    /// Share of the ops with FLOPs that take them from xlens's model (0 to 1).
    pub derived_flops_fraction: f64,
    /// The largest allocator peak (bytes in use) of any host, and in GiB to two places.
    pub peak_memory_bytes: Option<i64>,
    pub peak_memory_gib: Option<f64>,
    pub accelerator: Accelerator,
    /// What bounds the steps and what to try (null when no host could be advised on).
    pub verdict: Option<Verdict>,
    /// Why a figure is null, and what else to know to read them.
    pub notes: Vec<String>,
}

pub struct KpiTool;

impl Tool for KpiTool {
    const NAME: &'static str = "kpi";
    const TITLE: &'static str = "Key figures";
    const DESCRIPTION: &'static str = "The run in one small answer, as XProf's `get_kpi_metrics`: mean step time, device duty cycle, roofline utilization and FLOP provenance, peak memory, accelerator; nulls say why in notes.";
    type Params = NoParams;
    type Output = Kpi;

    fn run(run: &Run, _: &NoParams) -> Result<Kpi, ToolError> {
        Ok(kpi(run))
    }
    fn text(k: &Kpi) -> String {
        let mut t = String::new();
        for (key, v) in rows(k) {
            t.push_str(&format!("{key}: {v}\n"));
        }
        for n in &k.notes {
            t.push_str(&format!("note: {n}\n"));
        }
        t
    }
    fn csv(k: &Kpi) -> Option<String> {
        let mut t = String::from("metric,value\n");
        for (key, v) in rows(k) {
            t.push_str(&format!("{key},{}\n", crate::base::fmt::csv_field(&v)));
        }
        Some(t)
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "null".to_string(), |x| format!("{x:.digits$}"))
}

/// Each figure as a name and its printed value, in the order the text form lists them.
pub fn rows(k: &Kpi) -> Vec<(String, String)> {
    let mut r = vec![
        ("run".to_string(), k.run.clone()),
        ("hosts".into(), k.hosts.to_string()),
        ("step_time_ms".into(), opt(k.step_time_ms, 3)),
        ("step_count".into(), k.step_count.to_string()),
        ("step_time_scope".into(), k.step_time_scope.to_string()),
    ];
    for (h, v) in &k.per_host_step_time_ms {
        r.push((format!("step_time_ms[{h}]"), format!("{v:.3}")));
    }
    r.extend([
        ("duty_cycle_percent".into(), opt(k.duty_cycle_percent, 2)),
        (
            "mxu_utilization_percent".into(),
            opt(k.mxu_utilization_percent, 2),
        ),
        (
            "roofline_utilization_percent".into(),
            opt(k.roofline_utilization_percent, 2),
        ),
        (
            "flops_utilization_percent".into(),
            opt(k.flops_utilization_percent, 4),
        ),
        (
            "hbm_utilization_percent".into(),
            opt(k.hbm_utilization_percent, 2),
        ),
        ("flops_provenance".into(), k.flops_provenance.to_string()),
        (
            "derived_flops_fraction".into(),
            format!("{:.3}", k.derived_flops_fraction),
        ),
        ("peak_memory_gib".into(), opt(k.peak_memory_gib, 2)),
        (
            "accelerator".into(),
            format!(
                "{} {} ({} cores)",
                k.accelerator.kind.as_str(),
                k.accelerator.model,
                k.accelerator.cores
            ),
        ),
    ]);
    if let Some(v) = &k.verdict {
        r.push(("verdict".into(), v.summary.clone()));
        r.push(("suggestion".into(), v.suggestion.clone()));
        r.push(("next_tool".into(), v.tool.to_string()));
        if let (Some(s), Some((a, b))) = (&v.worst_step, v.window_ps) {
            r.push(("worst_step".into(), format!("{s} ({a} to {b} ps)")));
        }
        if let Some(s) = &v.run_summary {
            r.push(("run_verdict".into(), s.clone()));
        }
    }
    r
}

/// What one host gives.
struct HostKpi {
    host: String,
    kind: DeviceKind,
    model: String,
    cores: usize,
    steps: Vec<(String, i64)>,
    duty: Option<DutyCycle>,
    program: ProgramRoofline,
    peak_memory: Option<i64>,
    advice: Option<Advice>,
}

pub fn kpi(run: &Run) -> Kpi {
    let mut errors = Vec::new();
    let hosts: Vec<HostKpi> = run
        .map_hosts(
            |h, a| {
                let dev = a.device();
                let on_device = dev.kind != DeviceKind::Cpu;
                // The passes below are independent: both cores take them as each comes free.
                let chrome = a.profile().key("cat").is_some();
                crate::base::par::each(&[
                    &|| {
                        a.steps_and_ops();
                    },
                    &|| {
                        if on_device {
                            a.hlo_ops(UserPeaks::default());
                        }
                    },
                    &|| {
                        a.allocators();
                    },
                    &|| {
                        if chrome {
                            a.hta();
                        }
                    },
                    &|| {
                        if chrome {
                            a.torch_views();
                        }
                    },
                ]);
                let db = a.step_db();
                Some(HostKpi {
                    host: h.host().to_string(),
                    kind: dev.kind,
                    model: dev.model.clone(),
                    cores: dev.count,
                    steps: db
                        .steps
                        .iter()
                        .map(|s| (s.name.clone(), s.duration_ps))
                        .collect(),
                    duty: tpu_duty_cycle(a.profile()),
                    program: if on_device {
                        ProgramRoofline::of(&a.hlo_ops(UserPeaks::default()))
                    } else {
                        ProgramRoofline::default()
                    },
                    peak_memory: a
                        .allocators()
                        .allocators
                        .iter()
                        .map(|x| x.peak.bytes_in_use)
                        .filter(|b| *b > 0)
                        .max(),
                    advice: advise(a),
                })
            },
            |h, e| {
                errors.push(format!("{}: {e}", h.host()));
                None
            },
        )
        .into_iter()
        .flatten()
        .collect();
    let mut notes = Vec::new();
    let first = hosts.first();
    let kind = first.map_or(DeviceKind::Cpu, |h| h.kind);

    // Steps: one host's mean, or the mean over steps of the longest host (steps by name, those
    // every host has).
    let mut per_host = BTreeMap::new();
    let (step_time_ms, step_count, scope) = match hosts.len() {
        0 => (None, 0, "none"),
        1 => {
            let s = &hosts[0].steps;
            let mean = mean_ms(s.iter().map(|x| x.1));
            (mean, s.len(), if mean.is_some() { "host" } else { "none" })
        }
        _ => {
            for h in &hosts {
                if let Some(m) = mean_ms(h.steps.iter().map(|x| x.1)) {
                    per_host.insert(h.host.clone(), m);
                }
            }
            let maxima: Vec<i64> = hosts[0]
                .steps
                .iter()
                .filter_map(|(name, _)| {
                    hosts
                        .iter()
                        .map(|h| h.steps.iter().find(|s| &s.0 == name).map(|s| s.1))
                        .try_fold(0i64, |m, d| d.map(|d| m.max(d)))
                })
                .collect();
            let mean = mean_ms(maxima.iter().copied());
            let scope = if mean.is_some() {
                "per_step_max_across_hosts"
            } else {
                "none"
            };
            (mean, maxima.len(), scope)
        }
    };
    if step_time_ms.is_none() {
        notes.push("step_time_ms: no steps found (no step markers, or too few steps); see the overview's steps_notes.".to_string());
    }

    let duty = hosts
        .iter()
        .filter_map(|h| h.duty)
        .reduce(DutyCycle::plus)
        .filter(|d| d.chips > 0);
    if duty.is_none() {
        notes.push(match kind {
            DeviceKind::Tpu => "duty_cycle_percent: no TPU op events.".to_string(),
            _ => "duty_cycle_percent: stated for TPUs only (XProf gives N/A on GPUs and 0.0% without an accelerator); see temporal_breakdown or the overview's devices for GPU busy time.".to_string(),
        });
    }
    notes.push("mxu_utilization_percent: needs TPU performance counters, which xlens does not read (XProf shows 0.0% without them).".to_string());

    let program = hosts
        .iter()
        .map(|h| h.program)
        .reduce(ProgramRoofline::plus)
        .unwrap_or_default();
    let efficiency = program.efficiency();
    if kind == DeviceKind::Cpu {
        notes.push("roofline_utilization_percent: no accelerator, so no roofline (XProf shows 0.0%); op_profile takes --peak-flops/--peak-bw for a CPU roofline.".to_string());
    } else if efficiency.is_none() {
        notes.push("roofline_utilization_percent: the profile states neither the device's peak FLOP rate nor its memory bandwidth; roofline_model takes --peak-flops/--peak-bw.".to_string());
    }
    let with_flops = program.xla_cost_ops + program.model_cost_ops;
    let provenance = match (program.xla_cost_ops, program.model_cost_ops) {
        (0, 0) => "none",
        (_, 0) => "xla_cost_model",
        (0, _) => "xlens_cost_model",
        _ => "mixed",
    };

    let peak = hosts.iter().filter_map(|h| h.peak_memory).max();
    if peak.is_none() {
        notes.push("peak_memory_gib: no allocator events in the profile (XProf shows -1); memory_viewer gives XLA's planned peak per module.".to_string());
    }
    if hosts.len() > 1 {
        notes.push("peak_memory_gib: the largest allocator peak of any host.".to_string());
    }

    let run_summary = (hosts.len() > 1)
        .then(|| {
            run_advice(
                hosts
                    .iter()
                    .filter_map(|h| h.advice.as_ref().map(|a| (h.host.as_str(), a))),
            )
        })
        .flatten()
        .map(|r| r.summary);
    let verdict = hosts.iter().find_map(|h| {
        let a = h.advice.as_ref()?;
        Some(Verdict {
            host: h.host.clone(),
            bottleneck: a.bottleneck,
            summary: a.summary.clone(),
            suggestion: a.suggestion.clone(),
            tool: a.tool.name(),
            worst_step: a.worst_step.clone(),
            window_ps: a.window_ps,
            run_summary: run_summary.clone(),
        })
    });

    Kpi {
        run: run.name().to_string(),
        hosts: hosts.len() + errors.len(),
        host_errors: errors,
        step_time_ms,
        step_count,
        step_time_scope: scope,
        per_host_step_time_ms: per_host,
        duty_cycle_percent: duty.map(|d| d.percent()),
        mxu_utilization_percent: None,
        roofline_utilization_percent: efficiency.map(|e| e * 100.0),
        flops_utilization_percent: program.flops_utilization().map(|e| e * 100.0),
        hbm_utilization_percent: program.hbm_utilization().map(|e| e * 100.0),
        flops_provenance: provenance,
        derived_flops_fraction: if with_flops > 0 {
            program.model_cost_ops as f64 / with_flops as f64
        } else {
            0.0
        },
        peak_memory_bytes: peak,
        peak_memory_gib: peak.map(|b| (b as f64 / GIB * 100.0).round() / 100.0),
        accelerator: Accelerator {
            kind,
            model: first.map(|h| h.model.clone()).unwrap_or_default(),
            cores: hosts.iter().map(|h| h.cores).sum(),
        },
        verdict,
        notes,
    }
}

fn mean_ms(ps: impl Iterator<Item = i64>) -> Option<f64> {
    let (n, sum) = ps.fold((0u64, 0i128), |(n, s), x| (n + 1, s + x as i128));
    (n > 0).then(|| sum as f64 / n as f64 / 1e9)
}
