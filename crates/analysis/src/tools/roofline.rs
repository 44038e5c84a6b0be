//! Roofline model: operational intensity (FLOP per HBM byte) against FLOP rate, with the device's
//! compute roof, HBM roof and ridge point; a point for the whole host (over all time, IDLE
//! included, as XProf's `Program` row), for each program, for each step (when the profile has
//! steps) and for each op, over the whole profile or, with a step chosen, within that step; the
//! table of records; compute- vs memory-bound per op.
//!
//! The op figures are those of [`crate::base::hlo::hlo_ops`] (XLA's FLOPs and bytes where the profile has
//! them, else the cost model), the roofs those of [`crate::base::peaks`] (with their source).

use serde::Serialize;
use std::collections::HashMap;

use crate::base::context::{Analysis, Run};
use crate::base::fmt::csv_field;
use crate::base::hlo::hlo_ops::{CostSource, OpRow, GIB_PER_GB};
use crate::base::ops::events::{op_lines, op_name, OpSource};
use crate::base::peaks::{PeakSpec, UserPeaks};
use crate::base::steps::step_ops::{program_id, StepBins, StepTotals};
use crate::base::tool::{Tool, ToolError};

/// One point of the plot (and one record of the table).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RooflinePoint {
    /// `Total` or the step number.
    pub step: String,
    /// `host`, `program`, `step` or `op`.
    pub kind: &'static str,
    pub name: String,
    pub program: String,
    pub category: String,
    pub occurrences: u64,
    pub time_ps: i64,
    pub self_time_ps: i64,
    pub flops: f64,
    pub hbm_bytes: f64,
    pub bytes_accessed: f64,
    /// FLOP / HBM byte (0 when no bytes).
    pub operational_intensity: f64,
    /// GFLOP/s.
    pub flop_rate_gflops: f64,
    /// GiB/s.
    pub hbm_bw_gibps: f64,
    /// What the roofline allows at this intensity (GFLOP/s).
    pub roof_gflops: Option<f64>,
    /// FLOP rate / roof.
    pub roofline_efficiency: Option<f64>,
    pub flops_utilization: f64,
    pub hbm_utilization: f64,
    /// `Compute`, `HBM` or `Unknown` (from the utilisations, as XProf).
    pub bound_by: &'static str,
    /// Set when a utilisation is shown capped at 100%: by how much it exceeds the peak, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_peak: Option<String>,
    /// Left (`HBM`) or right (`Compute`) of the ridge point.
    pub side_of_ridge: Option<&'static str>,
    pub source: String,
}

/// The roofline of one host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostRoofline {
    pub host: String,
    pub error: Option<String>,
    pub peaks: Option<PeakSpec>,
    /// GFLOP/s and GiB/s, as XProf states them.
    pub peak_flop_rate_gflops: Option<f64>,
    pub peak_hbm_bw_gibps: Option<f64>,
    /// FLOP per byte.
    pub ridge_point: Option<f64>,
    pub cost_source: CostSource,
    pub op_count: usize,
    pub step_count: usize,
    /// The step whose ops the op points describe (`None`: the whole profile).
    pub selected_step: Option<String>,
    /// Whole host, programs, steps, then every op (by self time).
    pub points: Vec<RooflinePoint>,
    pub compute_bound_ops: usize,
    pub memory_bound_ops: usize,
    pub notes: Vec<String>,
}

/// Each op's operational intensity against its FLOP rate and the device's roofs, per host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RooflineReport {
    pub tool: &'static str,
    pub hosts: Vec<HostRoofline>,
}

#[allow(clippy::too_many_arguments)]
fn point(
    step: &str,
    kind: &'static str,
    name: &str,
    program: &str,
    category: &str,
    occurrences: u64,
    time_ps: i64,
    self_time_ps: i64,
    flops: f64,
    hbm: f64,
    bytes: f64,
    peaks: Option<&PeakSpec>,
    source: &str,
) -> RooflinePoint {
    let ns = time_ps as f64 / 1000.0;
    let rate = if ns > 0.0 { flops / ns } else { 0.0 };
    let bw = if ns > 0.0 { hbm / ns } else { 0.0 };
    let oi = if hbm > 0.0 { flops / hbm } else { 0.0 };
    let pf = peaks.and_then(|p| p.flops_per_second).filter(|v| *v > 0.0);
    let pb = peaks.and_then(|p| p.bytes_per_second).filter(|v| *v > 0.0);
    let fu = pf.map_or(0.0, |p| (rate * 1e9 / p).min(1.0));
    let hu = pb.map_or(0.0, |p| (bw * 1e9 / p).min(1.0));
    let roof = match (pf, pb) {
        (Some(f), Some(b)) if oi > 0.0 => Some((oi * b).min(f) / 1e9),
        (Some(f), _) if oi == 0.0 && hbm == 0.0 && flops > 0.0 => Some(f / 1e9),
        _ => None,
    };
    let ridge = match (pf, pb) {
        (Some(f), Some(b)) => Some(f / b),
        _ => None,
    };
    RooflinePoint {
        step: step.to_string(),
        kind,
        name: name.to_string(),
        program: program.to_string(),
        category: category.to_string(),
        occurrences,
        time_ps,
        self_time_ps,
        flops,
        hbm_bytes: hbm,
        bytes_accessed: bytes,
        operational_intensity: oi,
        flop_rate_gflops: rate,
        hbm_bw_gibps: bw * GIB_PER_GB,
        roof_gflops: roof,
        // With FLOPs, the FLOP rate under the roof; without, as XProf, the HBM bandwidth's share
        // of the peak (not capped: an async copy's bytes over its short time can exceed it).
        roofline_efficiency: match roof.filter(|r| *r > 0.0) {
            Some(r) if flops > 0.0 => Some(rate / r),
            _ => pb.filter(|_| hbm > 0.0).map(|p| bw * 1e9 / p),
        },
        flops_utilization: fu,
        hbm_utilization: hu,
        bound_by: if fu == 0.0 && hu == 0.0 {
            "Unknown"
        } else if fu >= hu {
            "Compute"
        } else {
            "HBM"
        },
        over_peak: crate::base::hlo::hlo_ops::over_peak(flops, hbm, time_ps, peaks),
        side_of_ridge: ridge
            .filter(|_| oi > 0.0)
            .map(|r| if oi < r { "HBM" } else { "Compute" }),
        source: source.to_string(),
    }
}

fn op_point(o: &OpRow, peaks: Option<&PeakSpec>) -> RooflinePoint {
    point(
        "Total",
        "op",
        &o.name,
        &o.program,
        &o.category,
        o.occurrences,
        o.total_time_ps,
        o.self_time_ps,
        o.flops,
        o.hbm_bytes,
        o.bytes_accessed,
        peaks,
        o.source.as_deref().unwrap_or(""),
    )
}

/// Per-step totals (time of the ops starting in the step, their FLOPs and HBM bytes), from each
/// op's per-occurrence figures.
fn step_points(
    bins: Option<&StepBins>,
    totals: Option<&[StepTotals]>,
    peaks: Option<&PeakSpec>,
) -> Vec<RooflinePoint> {
    let Some(bins) = bins else {
        return Vec::new();
    };
    let acc = totals.unwrap_or_default();
    bins.steps
        .steps
        .iter()
        .zip(
            acc.iter()
                .copied()
                .chain(std::iter::repeat(StepTotals::default())),
        )
        .enumerate()
        .map(|(i, (s, t))| {
            let label = s.step_num.map_or_else(|| i.to_string(), |v| v.to_string());
            point(
                &label,
                "step",
                &format!("step {label}"),
                "",
                "Step",
                t.occurrences,
                t.time_ps,
                t.time_ps,
                t.flops,
                t.hbm_bytes,
                t.bytes_accessed,
                peaks,
                "",
            )
        })
        .collect()
}

/// Op points within one step (the step labelled `label` in the step points): each op's
/// occurrences starting in the step, their summed duration and self time, and their
/// per-occurrence FLOPs and bytes. `None` when no step has that label.
fn step_op_points(
    a: &Analysis,
    ops: &[&OpRow],
    peaks: Option<&PeakSpec>,
    label: &str,
) -> Option<Vec<RooflinePoint>> {
    let p = a.profile();
    let steps = a.steps();
    let (_, step) = steps
        .steps
        .iter()
        .enumerate()
        .find(|(i, s)| s.step_num.map_or_else(|| i.to_string(), |v| v.to_string()) == label)?;
    let (from, to) = (step.start_ps, step.start_ps + step.dur_ps);
    let index: HashMap<(&str, Option<u64>), usize> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| ((o.name.as_str(), o.program_id), i))
        .collect();
    let (source, lines) = op_lines(p);
    let kp = p.key("program_id");
    let kh = p.key("hlo_op");
    // Per op row: (time, self time, occurrences).
    let mut acc: Vec<(i64, i64, u64)> = vec![(0, 0, 0); ops.len()];
    for (plane, line) in lines {
        let ev = &line.events;
        let lo = ev.lower_bound(from);
        let hi = ev.lower_bound(to);
        if lo >= hi {
            continue;
        }
        let self_times = ev.self_times();
        for i in lo..hi {
            let Some(md) = plane.metadata_of(line, i) else {
                continue;
            };
            let st = ev.stats(i);
            if source == Some(OpSource::HostXlaOps) && kh.is_none_or(|k| st.get(k).is_none()) {
                continue;
            }
            let pid = program_id(kp, st, md);
            let name = p.str(op_name(p, md));
            let Some(&row) = index.get(&(name, pid)).or_else(|| index.get(&(name, None))) else {
                continue;
            };
            let a = &mut acc[row];
            a.0 += ev.dur(i);
            a.1 += self_times.get(i).copied().unwrap_or(0);
            a.2 += 1;
        }
    }
    let mut points: Vec<RooflinePoint> = ops
        .iter()
        .zip(acc)
        .filter(|(_, a)| a.2 > 0)
        .map(|(o, (t, st, n))| {
            let per = o.occurrences.max(1) as f64;
            let k = n as f64 / per;
            point(
                label,
                "op",
                &o.name,
                &o.program,
                &o.category,
                n,
                t,
                st,
                o.flops * k,
                o.hbm_bytes * k,
                o.bytes_accessed * k,
                peaks,
                o.source.as_deref().unwrap_or(""),
            )
        })
        .collect();
    points.sort_by(|a, b| {
        b.self_time_ps
            .cmp(&a.self_time_ps)
            .then_with(|| a.name.cmp(&b.name))
    });
    Some(points)
}

/// The roofline of one host, with op points over the whole profile.
pub fn host_roofline(host: &str, a: &Analysis, user: UserPeaks) -> HostRoofline {
    host_roofline_at(host, a, user, None)
}

/// The roofline of one host; with `step`, the op points are those of that step (labelled as in
/// the step points), else of the whole profile.
pub fn host_roofline_at(
    host: &str,
    a: &Analysis,
    user: UserPeaks,
    step: Option<&str>,
) -> HostRoofline {
    let p = a.profile();
    // The machine's peaks are measured (CPU profiles) before anything runs alongside.
    crate::base::peaks::peak_spec(p, user);
    // The op table and the step binning are independent passes over the op events.
    let (bins, h) = crate::base::par::join(|| a.step_ops(), || a.hlo_ops(user));
    let peaks = Some(&h.peaks);
    let mut ops: Vec<&OpRow> = h.ops.iter().collect();
    ops.sort_by(|a, b| {
        b.self_time_ps
            .cmp(&a.self_time_ps)
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut points = Vec::new();
    // XProf's Program row: innermost ops, infeed and outfeed left out, HBM bytes from XLA's
    // breakdowns where ops carry them.
    let prog = crate::base::hlo::program::ProgramRoofline::of(&h);
    points.push(point(
        "Total",
        "host",
        "Program",
        "",
        "Program",
        1,
        prog.time_ps,
        0,
        prog.flops,
        prog.hbm_bytes,
        prog.bytes_accessed,
        peaks,
        "",
    ));
    let mut programs: Vec<(String, i64, f64, f64, f64, u64)> = Vec::new();
    for o in &ops {
        let i = match programs.iter().position(|x| x.0 == o.program) {
            Some(i) => i,
            None => {
                programs.push((o.program.clone(), 0, 0.0, 0.0, 0.0, 0));
                programs.len() - 1
            }
        };
        let x = &mut programs[i];
        x.1 = x.1.saturating_add(o.self_time_ps);
        x.2 += o.flops;
        x.3 += o.hbm_bytes;
        x.4 += o.bytes_accessed;
        x.5 += o.occurrences;
    }
    programs.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (name, t, f, hb, b, n) in &programs {
        points.push(point(
            "Total", "program", name, name, "Program", *n, *t, *t, *f, *hb, *b, peaks, "",
        ));
    }
    let totals = a.step_totals(user);
    let steps = step_points(bins.as_deref(), totals.as_deref(), peaks);
    let step_count = steps.len();
    points.extend(steps);
    let mut notes = h.notes.clone();
    let in_step = step.and_then(|label| {
        let pts = step_op_points(a, &ops, peaks, label);
        if pts.is_none() {
            notes.push(format!(
                "No step `{label}`: op points are over the whole profile."
            ));
        }
        pts.map(|pts| (label.to_string(), pts))
    });
    let (selected_step, op_points) = match in_step {
        Some((label, pts)) => {
            notes.push(format!(
                "Op points of step {label}: each op's occurrences starting in the step, their time and self time, and their share of the op's FLOPs and bytes."
            ));
            (Some(label), pts)
        }
        None => (None, ops.iter().map(|o| op_point(o, peaks)).collect()),
    };
    let mut compute = 0;
    let mut memory = 0;
    for pt in op_points {
        match pt.bound_by {
            "Compute" => compute += 1,
            "HBM" => memory += 1,
            _ => {}
        }
        points.push(pt);
    }
    if step_count > 0 {
        notes.push("Step points: ops starting within each step; time is their summed duration, FLOPs and bytes their per-occurrence figures.".into());
    }
    HostRoofline {
        host: host.to_string(),
        error: None,
        peak_flop_rate_gflops: h.peaks.flops_per_second.map(|f| f / 1e9),
        peak_hbm_bw_gibps: h.peaks.bytes_per_second.map(|b| b / 1e9 * GIB_PER_GB),
        ridge_point: h.peaks.ridge_point(),
        peaks: Some(h.peaks.clone()),
        cost_source: h.cost_source,
        op_count: ops.len(),
        step_count,
        selected_step,
        points,
        compute_bound_ops: compute,
        memory_bound_ops: memory,
        notes,
    }
}

/// The roofline tool's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct RooflineParams {
    /// Peak FLOP rate in FLOP/s (e.g. 1.5e12) for CPU profiles (default: measured on this
    /// machine, labelled as such).
    #[arg(long)]
    pub peak_flops: Option<f64>,
    /// Peak memory bandwidth in bytes/s (e.g. 2e11).
    #[arg(long)]
    pub peak_bw: Option<f64>,
    /// Plot the ops of this step (its label, e.g. 12) instead of the whole profile.
    #[arg(long)]
    pub step: Option<String>,
}

/// The roofline model tool.
pub struct RooflineModel;

impl Tool for RooflineModel {
    const NAME: &'static str = "roofline_model";
    const TITLE: &'static str = "Roofline";
    const DESCRIPTION: &'static str = "Operational intensity vs FLOP rate against the device's compute and HBM roofs: the whole program, each program, each step and each op, compute- or memory-bound.";
    type Params = RooflineParams;
    type Output = RooflineReport;

    fn run(run: &Run, p: &RooflineParams) -> Result<RooflineReport, ToolError> {
        let user = UserPeaks::checked(p.peak_flops, p.peak_bw)?;
        Ok(report(run, user, p.step.as_deref()))
    }
    fn text(r: &RooflineReport) -> String {
        render_text(r)
    }
    fn csv(r: &RooflineReport) -> Option<String> {
        Some(render_csv(r))
    }
}

/// The roofline of every host of `run`.
pub fn report(run: &Run, user: UserPeaks, step: Option<&str>) -> RooflineReport {
    let hosts = run.map_hosts(
        |h, a| host_roofline_at(h.host(), a, user, step),
        |h, e| HostRoofline {
            host: h.host().to_string(),
            error: Some(e.to_string()),
            peaks: None,
            peak_flop_rate_gflops: None,
            peak_hbm_bw_gibps: None,
            ridge_point: None,
            cost_source: CostSource::None,
            op_count: 0,
            step_count: 0,
            selected_step: None,
            points: Vec::new(),
            compute_bound_ops: 0,
            memory_bound_ops: 0,
            notes: Vec::new(),
        },
    );
    RooflineReport {
        tool: "roofline_model",
        hosts,
    }
}

/// CSV of every record (XProf's `roofline_model` column ids where they exist).
pub fn render_csv(r: &RooflineReport) -> String {
    let mut o = String::from("host,step,kind,operation,hlo_module,category,occurrences,total_time,total_self_time,flops,hbm_bytes,bytes_accessed,operational_intensity,measured_flop_rate,hbm_bw,optimal_flop_rate,roofline_efficiency,flops_utilization,hbm_utilization,bound_by,source_info\n");
    for h in &r.hosts {
        for p in &h.points {
            o.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&h.host),
                csv_field(&p.step),
                p.kind,
                csv_field(&p.name),
                csv_field(&p.program),
                csv_field(&p.category),
                p.occurrences,
                p.time_ps as f64 / 1e6,
                p.self_time_ps as f64 / 1e6,
                p.flops,
                p.hbm_bytes,
                p.bytes_accessed,
                p.operational_intensity,
                p.flop_rate_gflops,
                p.hbm_bw_gibps,
                p.roof_gflops.map(|v| v.to_string()).unwrap_or_default(),
                p.roofline_efficiency
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                p.flops_utilization,
                p.hbm_utilization,
                p.bound_by,
                csv_field(&p.source)
            ));
        }
    }
    o
}

/// Plain text: roofs, then the records.
pub fn render_text(r: &RooflineReport) -> String {
    let mut o = String::new();
    for h in &r.hosts {
        o.push_str(&format!("host {}\n", h.host));
        if let Some(e) = &h.error {
            o.push_str(&format!("  error: {e}\n"));
            continue;
        }
        o.push_str(&format!(
            "  peak {:.1} GFLOP/s, HBM {:.1} GiB/s, ridge point {:.3} FLOP/byte; {} ops ({} compute-bound, {} HBM-bound), {} steps\n",
            h.peak_flop_rate_gflops.unwrap_or(0.0),
            h.peak_hbm_bw_gibps.unwrap_or(0.0),
            h.ridge_point.unwrap_or(0.0),
            h.op_count,
            h.compute_bound_ops,
            h.memory_bound_ops,
            h.step_count
        ));
        for p in &h.points {
            o.push_str(&format!(
                "  {:<6} {:<8} {:<40} OI {:>10.4} {:>12.3} GFLOP/s {:>10.3} GiB/s {}\n",
                p.step,
                p.kind,
                p.name,
                p.operational_intensity,
                p.flop_rate_gflops,
                p.hbm_bw_gibps,
                p.bound_by
            ));
        }
    }
    o
}
