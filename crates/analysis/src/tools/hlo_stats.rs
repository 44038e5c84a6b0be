//! HLO op stats: one row per HLO op with XProf's `hlo_stats` columns — occurrences, total / avg /
//! self time, FLOP rate, memory bandwidth, operational intensity, bound by, source — every op (no
//! cut), sorted by self time. The CSV header is XProf 2.24.2's column ids, in its units
//! (times in µs, FLOP rates in GFLOP/s, bandwidths in GiB/s, percentages 0–100), followed by
//! `source_stack` (older XProf) and xlens's own extras (`flops`, `bytes_accessed`,
//! `flops_utilization`, `hbm_utilization`, `cost_source`).
//!
//! Built on the op rows of [`crate::base::hlo::hlo_ops`], so its figures are the op profile's: XLA's FLOPs
//! and bytes where the profile has them, else the cost model (CPU-only profiles, where XProf's
//! `hlo_stats` is empty).

use serde::Serialize;

use crate::base::context::{Analysis, Run};
use crate::base::fmt::csv_field;
use crate::base::hlo::hlo_ops::CostSource;
use crate::base::hlo::hlo_ops::OpRow;
use crate::base::peaks::{PeakParams, PeakSpec, UserPeaks};
use crate::base::tool::{Tool, ToolError};

/// XProf 2.24.2's `hlo_stats` column ids, in its order.
pub const XPROF_COLUMNS: &[&str] = &[
    "rank",
    "program_id",
    "category",
    "hlo_op_name",
    "hlo_op_expression",
    "tf_op_name",
    "occurrences",
    "total_time",
    "avg_time",
    "total_self_time",
    "avg_self_time",
    "total_self_time_percent",
    "cumulative_total_self_time_percent",
    "dma_stall_percent",
    "model_flop_rate",
    "normalized_flop_rate",
    "measured_memory_bw",
    "hbm_bw",
    "cmem_read_bw",
    "cmem_write_bw",
    "operational_intensity",
    "bound_by",
    "hlo_rematerialization",
    "outside_compilation",
    "autotuned",
    "source_info",
    "core_type",
    "parent_op_name",
    "vdd_energy",
];

/// Columns xlens adds after XProf's.
pub const EXTRA_COLUMNS: &[&str] = &[
    "source_stack",
    "flops",
    "bytes_accessed",
    "flops_utilization",
    "hbm_utilization",
    "cost_source",
];

/// One HLO op: XProf's `hlo_stats` row, with the unit in each field's name (picoseconds for
/// times; the CSV gives XProf's µs under XProf's column ids).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HloStatsRow {
    pub rank: usize,
    pub program_id: String,
    pub program: String,
    pub category: String,
    pub hlo_op_name: String,
    pub hlo_op_expression: String,
    pub tf_op_name: String,
    pub occurrences: u64,
    pub total_time_ps: i64,
    pub avg_time_ps: f64,
    pub total_self_time_ps: i64,
    pub avg_self_time_ps: f64,
    /// XProf's column: self time as a percentage of op time plus IDLE.
    pub total_self_time_percent: f64,
    pub cumulative_total_self_time_percent: f64,
    /// Self time as a percentage of op time (the ops' self time, IDLE left out): the share every
    /// tool gives an op.
    pub self_time_percent_of_op_time: f64,
    pub model_flop_rate_gflops: f64,
    pub normalized_flop_rate_gflops: f64,
    pub measured_memory_bw_gibps: f64,
    pub hbm_bw_gibps: f64,
    /// FLOP/byte.
    pub operational_intensity: f64,
    pub bound_by: &'static str,
    /// Set when a utilisation is shown capped at 100%: by how much it exceeds the peak, and why
    /// (always present, `null` when within the peaks, so that every row has the same columns).
    pub over_peak: Option<String>,
    pub source_info: String,
    pub source_stack: String,
    pub flops: f64,
    pub bytes_accessed: f64,
    pub flops_utilization: f64,
    pub hbm_utilization: f64,
    pub cost_source: CostSource,
}

/// The HLO op stats of one host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostHloStats {
    pub host: String,
    pub error: Option<String>,
    pub cost_source: CostSource,
    pub peaks: Option<PeakSpec>,
    pub op_count: usize,
    /// The ops' summed self time: the denominator of `self_time_percent_of_op_time`.
    pub op_time_ps: i64,
    /// Time no op covers, beside the ops (XProf's IDLE; in the denominator of XProf's
    /// `total_self_time_percent` only).
    pub idle_ps: i64,
    pub rows: Vec<HloStatsRow>,
    pub notes: Vec<String>,
}

/// One row per HLO op, per host, with XProf's columns.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HloStatsReport {
    pub tool: &'static str,
    pub columns: Vec<&'static str>,
    pub hosts: Vec<HostHloStats>,
    /// Two hosts or more: each op's total time (µs) over the hosts, with its per-host min, mean
    /// and max.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_hosts: Option<crate::base::hosts::across::OpsAcrossHosts>,
}

/// The HLO op stats of one host.
pub fn host_hlo_stats(host: &str, a: &Analysis, user: UserPeaks) -> HostHloStats {
    let h = a.hlo_ops(user);
    let mut ops: Vec<&OpRow> = h.ops.iter().collect();
    ops.sort_by(|a, b| {
        b.self_time_ps
            .cmp(&a.self_time_ps)
            .then_with(|| a.program.cmp(&b.program))
            .then_with(|| a.name.cmp(&b.name))
    });
    let total = h.total_time_ps.max(1) as f64;
    let op_time = h.total_time_ps.saturating_sub(h.idle_ps).max(1) as f64;
    let mut cum = 0.0;
    let rows: Vec<HloStatsRow> = ops
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let pct = 100.0 * o.self_time_ps as f64 / total;
            cum += pct;
            HloStatsRow {
                rank: i + 1,
                program_id: o.program_id.map(|v| v.to_string()).unwrap_or_default(),
                program: o.program.clone(),
                category: o.category.clone(),
                hlo_op_name: o.name.clone(),
                hlo_op_expression: o.expression.clone(),
                tf_op_name: o.provenance.clone().unwrap_or_default(),
                occurrences: o.occurrences,
                total_time_ps: o.total_time_ps,
                avg_time_ps: o.avg_time_ps,
                total_self_time_ps: o.self_time_ps,
                avg_self_time_ps: o.avg_self_time_ps,
                total_self_time_percent: pct,
                cumulative_total_self_time_percent: cum,
                self_time_percent_of_op_time: 100.0 * o.self_time_ps as f64 / op_time,
                model_flop_rate_gflops: o.flop_rate_gflops,
                normalized_flop_rate_gflops: o.flop_rate_gflops,
                measured_memory_bw_gibps: o.memory_bw_gibps,
                hbm_bw_gibps: o.hbm_bw_gibps,
                operational_intensity: o.operational_intensity,
                bound_by: o.bound_by,
                over_peak: o.over_peak.clone(),
                source_info: o.source.clone().unwrap_or_default(),
                source_stack: o.source_stack.clone().unwrap_or_default(),
                flops: o.flops,
                bytes_accessed: o.bytes_accessed,
                flops_utilization: o.flops_utilization,
                hbm_utilization: o.hbm_utilization,
                cost_source: o.cost_source,
            }
        })
        .collect();
    HostHloStats {
        host: host.to_string(),
        error: None,
        cost_source: h.cost_source,
        peaks: Some(h.peaks.clone()),
        op_count: rows.len(),
        op_time_ps: h.total_time_ps.saturating_sub(h.idle_ps),
        idle_ps: h.idle_ps,
        rows,
        notes: h.notes.clone(),
    }
}

/// The HLO op stats tool.
pub struct HloStats;

impl Tool for HloStats {
    const NAME: &'static str = "hlo_stats";
    const TITLE: &'static str = "HLO op stats";
    const DESCRIPTION: &'static str = "One row per HLO op with XProf's hlo_stats columns (occurrences, total/avg/self time, FLOP rate, memory bandwidth, operational intensity, bound by, source); CSV with XProf's column ids.";
    type Params = PeakParams;
    type Output = HloStatsReport;

    fn run(run: &Run, p: &PeakParams) -> Result<HloStatsReport, ToolError> {
        Ok(report(run, p.user()?))
    }
    fn text(r: &HloStatsReport) -> String {
        render_text(r)
    }
    fn csv(r: &HloStatsReport) -> Option<String> {
        Some(render_csv(r))
    }
}

/// HLO op stats of every host of `run`.
pub fn report(run: &Run, user: UserPeaks) -> HloStatsReport {
    let hosts = run.map_hosts(
        |h, a| host_hlo_stats(h.host(), a, user),
        |h, e| HostHloStats {
            host: h.host().to_string(),
            error: Some(e.to_string()),
            cost_source: CostSource::None,
            peaks: None,
            op_count: 0,
            op_time_ps: 0,
            idle_ps: 0,
            rows: Vec::new(),
            notes: Vec::new(),
        },
    );
    let all_hosts = crate::base::hosts::across::ops_across_hosts(
        hosts.iter().filter(|h| h.error.is_none()).flat_map(|h| {
            h.rows.iter().map(move |r| {
                (
                    h.host.as_str(),
                    r.program.as_str(),
                    r.hlo_op_name.as_str(),
                    r.total_time_ps as f64,
                )
            })
        }),
        "total_time ps",
    );
    HloStatsReport {
        tool: "hlo_stats",
        columns: XPROF_COLUMNS
            .iter()
            .chain(EXTRA_COLUMNS.iter())
            .copied()
            .collect(),
        hosts,
        all_hosts,
    }
}

/// µs from ps, as XProf states times.
fn us(ps: f64) -> f64 {
    ps / 1e6
}

/// CSV: XProf's column ids and units, then xlens's extras; every op of every host (a `host`
/// column is not XProf's, so hosts follow one another; the program id tells programs apart).
pub fn render_csv(r: &HloStatsReport) -> String {
    let mut o = r.columns.join(",");
    o.push('\n');
    for h in &r.hosts {
        for x in &h.rows {
            let fields: Vec<String> = vec![
                x.rank.to_string(),
                csv_field(&x.program_id),
                csv_field(&x.category),
                csv_field(&x.hlo_op_name),
                csv_field(&x.hlo_op_expression),
                csv_field(&x.tf_op_name),
                x.occurrences.to_string(),
                us(x.total_time_ps as f64).to_string(),
                us(x.avg_time_ps).to_string(),
                us(x.total_self_time_ps as f64).to_string(),
                us(x.avg_self_time_ps).to_string(),
                x.total_self_time_percent.to_string(),
                x.cumulative_total_self_time_percent.to_string(),
                "0".into(),
                x.model_flop_rate_gflops.to_string(),
                x.normalized_flop_rate_gflops.to_string(),
                x.measured_memory_bw_gibps.to_string(),
                x.hbm_bw_gibps.to_string(),
                "0".into(),
                "0".into(),
                x.operational_intensity.to_string(),
                x.bound_by.to_string(),
                "No".into(),
                "No".into(),
                "No".into(),
                csv_field(&x.source_info),
                String::new(),
                String::new(),
                "0".into(),
                csv_field(&x.source_stack),
                x.flops.to_string(),
                x.bytes_accessed.to_string(),
                x.flops_utilization.to_string(),
                x.hbm_utilization.to_string(),
                format!("{:?}", x.cost_source),
            ];
            o.push_str(&fields.join(","));
            o.push('\n');
        }
    }
    o
}

/// Plain text summary and the rows.
pub fn render_text(r: &HloStatsReport) -> String {
    let mut o = String::new();
    for h in &r.hosts {
        o.push_str(&format!(
            "host {}: {} HLO ops; op time {}, idle {} beside it (shares are of op time)",
            h.host,
            h.op_count,
            crate::base::fmt::fmt_ps(h.op_time_ps),
            crate::base::fmt::fmt_ps(h.idle_ps)
        ));
        if let Some(e) = &h.error {
            o.push_str(&format!(" (error: {e})"));
        }
        o.push('\n');
        if h.rows.is_empty() {
            for n in &h.notes {
                o.push_str(&format!("  {n}\n"));
            }
        }
        for x in &h.rows {
            o.push_str(&format!(
                "{:>5} {:<40} {:<24} occ {:>6} self {:>14.3} us ({:.2}%) {:>10.3} GFLOP/s {:>10.3} GiB/s OI {:.3} {}\n",
                x.rank,
                x.hlo_op_name,
                x.category,
                x.occurrences,
                us(x.total_self_time_ps as f64),
                x.self_time_percent_of_op_time,
                x.model_flop_rate_gflops,
                x.hbm_bw_gibps,
                x.operational_intensity,
                x.bound_by
            ));
            if let Some(w) = &x.over_peak {
                o.push_str(&format!("      ! {w}\n"));
            }
        }
    }
    o
}
