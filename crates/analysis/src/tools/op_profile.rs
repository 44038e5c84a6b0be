//! Op profile: every HLO op of a host with its time, FLOPs, bytes, FLOP rate, FLOPs and HBM
//! bandwidth utilisation, what bounds it and the time it wastes, as a tree by program → category
//! → op (also by category alone, and by framework provenance), with fusion bodies expandable.
//!
//! The per-op rows ([`OpRow`]) are shared with `hlo_stats` and `roofline_model`.
//!
//! * **Time**: an op's time is its total time over all occurrences on all devices of the host
//!   (XProf's `time_ps`); groups add their ops' self time. Time fractions are of the host's op
//!   time plus IDLE (as XProf's root).
//! * **FLOPs and bytes**: XLA's own `flops` / `bytes_accessed` where the profile carries them
//!   (TPU `XLA Ops` metadata, summed over occurrences), else xlens's cost model over the HLO
//!   module ([`crate::base::hlo::cost_model`]) — XProf leaves op profile empty for CPU-only profiles; xlens
//!   fills it from the XLA ops run on host threads. [`HostOpProfile::cost_source`] says which.
//! * **HBM bytes**: the HBM part of the op's `memory_access_breakdown` when it has one, else all
//!   bytes accessed (the rule XProf's `hlo_stats` and roofline use; XProf's op profile instead
//!   counts 0 for ops with an empty breakdown — a named difference in the agreement test).
//! * **Utilisation**: FLOP rate (FLOPs / time) over the peak FLOP rate, HBM bandwidth over the
//!   peak bandwidth ([`crate::base::peaks`], whose source is reported), each capped at 1 as XProf does.
//!   **Bound by** is the larger of the two (`Compute` or `HBM`, `Unknown` when both are 0).
//!   **Wasted time** = time fraction × (1 − max(FLOPs utilisation, HBM utilisation)).

use serde::Serialize;
use std::collections::HashMap;

use crate::base::context::{Analysis, Run};
use crate::base::device::DeviceKind;
use crate::base::hlo::hlo_ops::*;
use crate::base::ops::events::OpSource;
use crate::base::peaks::PeakParams;
use crate::base::peaks::{PeakSpec, UserPeaks};
use crate::base::tool::{Tool, ToolError};

#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct NodeMetrics {
    pub time_ps: i64,
    pub self_time_ps: i64,
    pub occurrences: u64,
    pub flops: f64,
    pub bytes_accessed: f64,
    pub hbm_bytes: f64,
    pub time_fraction: f64,
    pub flop_rate_gflops: f64,
    pub hbm_bw_gibps: f64,
    pub flops_utilization: f64,
    pub hbm_utilization: f64,
    pub bound_by: &'static str,
    pub wasted_time_fraction: f64,
    /// Set when a utilisation is shown capped at 100%: by how much it exceeds the peak, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_peak: Option<String>,
    /// Time as a percentage of op time (the ops' self time, IDLE left out): the share every
    /// tool gives an op. `time_fraction` is XProf's, of op time plus IDLE. Not set on IDLE and
    /// on the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent_of_op_time: Option<f64>,
}

/// A node of an op-profile tree. Leaves point at [`HostOpProfile::ops`] by index.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Node {
    pub name: String,
    /// `root`, `program`, `category`, `provenance`, `idle` or `op`.
    pub kind: &'static str,
    pub metrics: NodeMetrics,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<usize>,
    /// Every child (never cut), by time.
    pub children: Vec<Node>,
}

/// The op profile of one host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostOpProfile {
    pub host: String,
    pub error: Option<String>,
    pub device_kind: Option<DeviceKind>,
    pub op_source: Option<OpSource>,
    pub op_source_description: Option<&'static str>,
    pub cost_source: CostSource,
    pub peaks: Option<PeakSpec>,
    /// FLOP/byte where the compute and HBM roofs meet.
    pub ridge_point: Option<f64>,
    /// Host op time (sum of op self time) plus IDLE.
    pub total_time_ps: i64,
    pub idle_ps: i64,
    pub op_count: usize,
    /// Every op, by total time.
    pub ops: std::sync::Arc<Vec<OpRow>>,
    pub by_program: Node,
    pub by_category: Node,
    pub by_provenance: Node,
    pub notes: Vec<String>,
}

/// The op profile of every selected host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpProfileReport {
    pub tool: &'static str,
    pub hosts: Vec<HostOpProfile>,
    /// Two hosts or more: each category's and each op's total time (µs) over the hosts, with
    /// its per-host min, mean and max.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_hosts: Option<OpProfileAcrossHosts>,
}

/// The op profile's categories and ops across the hosts of a run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpProfileAcrossHosts {
    pub categories: crate::base::hosts::across::OpsAcrossHosts,
    pub ops: crate::base::hosts::across::OpsAcrossHosts,
}

#[allow(clippy::too_many_arguments)]
fn node_metrics(
    time_ps: i64,
    self_time_ps: i64,
    occurrences: u64,
    flops: f64,
    bytes: f64,
    hbm: f64,
    total_ps: i64,
    peaks: Option<&PeakSpec>,
) -> NodeMetrics {
    let (fu, hu, bound) = rates(flops, hbm, time_ps, peaks);
    let tf = if total_ps > 0 {
        time_ps as f64 / total_ps as f64
    } else {
        0.0
    };
    NodeMetrics {
        time_ps,
        self_time_ps,
        occurrences,
        flops,
        bytes_accessed: bytes,
        hbm_bytes: hbm,
        time_fraction: tf,
        flop_rate_gflops: per_ns(flops, time_ps),
        hbm_bw_gibps: per_ns(hbm, time_ps) * GIB_PER_GB,
        flops_utilization: fu,
        hbm_utilization: hu,
        bound_by: bound,
        wasted_time_fraction: tf * (1.0 - fu.max(hu)),
        over_peak: crate::base::hlo::hlo_ops::over_peak(flops, hbm, time_ps, peaks),
        percent_of_op_time: None,
    }
}

/// A group under construction.
#[derive(Default)]
struct Group {
    name: String,
    kind: &'static str,
    ops: Vec<usize>,
    children: Vec<Group>,
    index: HashMap<String, usize>,
}

impl Group {
    fn new(name: &str, kind: &'static str) -> Group {
        Group {
            name: name.to_string(),
            kind,
            ..Default::default()
        }
    }

    fn child(&mut self, name: &str, kind: &'static str) -> &mut Group {
        let key = format!("{kind}\u{1}{name}");
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                self.children.push(Group::new(name, kind));
                self.index.insert(key, self.children.len() - 1);
                self.children.len() - 1
            }
        };
        &mut self.children[i]
    }

    fn build(self, ops: &[OpRow], total_ps: i64, peaks: Option<&PeakSpec>) -> Node {
        let mut children: Vec<Node> = self
            .children
            .into_iter()
            .map(|g| g.build(ops, total_ps, peaks))
            .collect();
        for &i in &self.ops {
            if let Some(o) = ops.get(i) {
                children.push(Node {
                    name: o.name.clone(),
                    kind: "op",
                    metrics: node_metrics(
                        o.total_time_ps,
                        o.self_time_ps,
                        o.occurrences,
                        o.flops,
                        o.bytes_accessed,
                        o.hbm_bytes,
                        total_ps,
                        peaks,
                    ),
                    op: Some(i),
                    children: Vec::new(),
                });
            }
        }
        children.sort_by(|a, b| {
            b.metrics
                .time_ps
                .cmp(&a.metrics.time_ps)
                .then_with(|| a.name.cmp(&b.name))
        });
        // A group's time is its ops' self time (XProf's rule: nested ops are not counted twice).
        let (mut t, mut st, mut occ, mut f, mut b, mut h) = (0i64, 0i64, 0u64, 0.0, 0.0, 0.0);
        for c in &children {
            if c.kind == "op" {
                let o = c.op.and_then(|i| ops.get(i));
                let s = o.map_or(0, |o| o.self_time_ps);
                t = t.saturating_add(s);
                st = st.saturating_add(s);
            } else {
                t = t.saturating_add(c.metrics.time_ps);
                st = st.saturating_add(c.metrics.self_time_ps);
            }
            occ += c.metrics.occurrences;
            f += c.metrics.flops;
            b += c.metrics.bytes_accessed;
            h += c.metrics.hbm_bytes;
        }
        Node {
            name: self.name,
            kind: self.kind,
            metrics: node_metrics(t, st, occ, f, b, h, total_ps, peaks),
            op: None,
            children,
        }
    }
}

fn idle_node(idle_ps: i64, total_ps: i64) -> Node {
    Node {
        name: "IDLE".into(),
        kind: "idle",
        metrics: node_metrics(idle_ps, idle_ps, 0, 0.0, 0.0, 0.0, total_ps, None),
        op: None,
        children: Vec::new(),
    }
}

/// Splits a provenance path (`jit(f)/jit(main)/add:` or `scope/name:Type`) into its parts.
fn provenance_parts(s: &str) -> Vec<String> {
    let s = s.strip_suffix(':').unwrap_or(s);
    let s = s.split_once(':').map_or(s, |(a, _)| a);
    s.split('/')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// The op profile of one host.
pub fn host_op_profile(host: &str, a: &Analysis, user: UserPeaks) -> HostOpProfile {
    let h = a.hlo_ops(user);
    let peaks = Some(&h.peaks);
    let total = h.total_time_ps;
    let mut by_program = Group::new("by_program", "root");
    let mut by_category = Group::new("by_category", "root");
    let mut by_prov = Group::new("by_provenance", "root");
    for (i, o) in h.ops.iter().enumerate() {
        by_program
            .child(&o.program, "program")
            .child(&o.category, "category")
            .ops
            .push(i);
        by_category.child(&o.category, "category").ops.push(i);
        let mut g = by_prov.child(&o.program, "program");
        if let Some(pv) = &o.provenance {
            for part in provenance_parts(pv) {
                g = g.child(&part, "provenance");
            }
        }
        g.child(&o.category, "category").ops.push(i);
    }
    let op_time = total.saturating_sub(h.idle_ps);
    fn shares(n: &mut Node, op_time: i64) {
        for c in &mut n.children {
            if op_time > 0 {
                c.metrics.percent_of_op_time =
                    Some(100.0 * c.metrics.time_ps as f64 / op_time as f64);
            }
            shares(c, op_time);
        }
    }
    let finish = |g: Group| {
        let mut n = g.build(&h.ops, total, peaks);
        shares(&mut n, op_time);
        if h.idle_ps > 0 {
            n.children.push(idle_node(h.idle_ps, total));
        }
        // The root covers all time (ops and IDLE), as XProf's root does.
        let m = &n.metrics;
        n.metrics = node_metrics(
            total,
            total,
            m.occurrences,
            m.flops,
            m.bytes_accessed,
            m.hbm_bytes,
            total,
            peaks,
        );
        n
    };
    HostOpProfile {
        host: host.to_string(),
        error: None,
        device_kind: Some(h.device_kind),
        op_source: h.op_source,
        op_source_description: h.op_source.map(|s| s.describe()),
        cost_source: h.cost_source,
        ridge_point: h.peaks.ridge_point(),
        total_time_ps: total,
        idle_ps: h.idle_ps,
        op_count: h.ops.len(),
        by_program: finish(by_program),
        by_category: finish(by_category),
        by_provenance: finish(by_prov),
        peaks: Some(h.peaks.clone()),
        ops: h.ops.clone(),
        notes: h.notes.clone(),
    }
}

fn failed(host: &str, e: String) -> HostOpProfile {
    let empty = || Node {
        name: String::new(),
        kind: "root",
        metrics: NodeMetrics::default(),
        op: None,
        children: Vec::new(),
    };
    HostOpProfile {
        host: host.to_string(),
        error: Some(e),
        device_kind: None,
        op_source: None,
        op_source_description: None,
        cost_source: CostSource::None,
        peaks: None,
        ridge_point: None,
        total_time_ps: 0,
        idle_ps: 0,
        op_count: 0,
        ops: Default::default(),
        by_program: empty(),
        by_category: empty(),
        by_provenance: empty(),
        notes: Vec::new(),
    }
}

/// The op profile of every host of `sessions`.
/// The op profile tool.
pub struct OpProfile;

impl Tool for OpProfile {
    const NAME: &'static str = "op_profile";
    const TITLE: &'static str = "Op profile";
    const DESCRIPTION: &'static str = "Every HLO op by program → category (or by category, or by framework provenance): time, FLOP rate, FLOPs and HBM utilisation, bound by, wasted time; fusion bodies; CPU profiles from the cost model (--peak-flops/--peak-bw).";
    type Params = PeakParams;
    type Output = OpProfileReport;

    fn run(run: &Run, p: &PeakParams) -> Result<OpProfileReport, ToolError> {
        Ok(report(run, p.user()?))
    }
    fn text(r: &OpProfileReport) -> String {
        render_text(r)
    }
    fn csv(r: &OpProfileReport) -> Option<String> {
        Some(render_csv(r))
    }
}

/// The op profile of every host of `run`.
pub fn report(run: &Run, user: UserPeaks) -> OpProfileReport {
    let hosts = run.map_hosts(
        |h, a| host_op_profile(h.host(), a, user),
        |h, e| failed(h.host(), e.to_string()),
    );
    let rows = || {
        hosts
            .iter()
            .filter(|h| h.error.is_none())
            .flat_map(|h| h.ops.iter().map(move |o| (h.host.as_str(), o)))
    };
    let categories = crate::base::hosts::across::categories_across_hosts(
        rows().map(|(h, o)| (h, o.category.as_str(), o.total_time_ps as f64)),
        "total_time ps",
    );
    let ops = crate::base::hosts::across::ops_across_hosts(
        rows().map(|(h, o)| {
            (
                h,
                o.program.as_str(),
                o.name.as_str(),
                o.total_time_ps as f64,
            )
        }),
        "total_time ps",
    );
    OpProfileReport {
        tool: "op_profile",
        all_hosts: categories
            .zip(ops)
            .map(|(categories, ops)| OpProfileAcrossHosts { categories, ops }),
        hosts,
    }
}

/// Formats a fraction as a percentage.
fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

/// Plain text: per host, the tree by program and category (ops with all their figures).
pub fn render_text(r: &OpProfileReport) -> String {
    let mut o = String::new();
    for h in &r.hosts {
        o.push_str(&format!("host {}\n", h.host));
        if let Some(e) = &h.error {
            o.push_str(&format!("  error: {e}\n"));
            continue;
        }
        if let Some(pk) = &h.peaks {
            o.push_str(&format!(
                "  device {} {}; peaks {:.3} TFLOP/s ({:?}), {:.1} GB/s ({:?}); {}\n",
                pk.kind.as_str(),
                pk.model,
                pk.flops_per_second.unwrap_or(0.0) / 1e12,
                pk.flops_source,
                pk.bytes_per_second.unwrap_or(0.0) / 1e9,
                pk.bandwidth_source,
                pk.note
            ));
        }
        o.push_str(&format!(
            "  {} ops; total time {} ps (IDLE {} ps); costs: {:?}\n",
            h.op_count, h.total_time_ps, h.idle_ps, h.cost_source
        ));
        if h.op_count == 0 {
            for n in &h.notes {
                o.push_str(&format!("  {n}\n"));
            }
        }
        fn walk(o: &mut String, n: &Node, depth: usize) {
            let m = &n.metrics;
            let share = match m.percent_of_op_time {
                Some(p) => format!("{p:.2}% of op time, {} with idle", pct(m.time_fraction)),
                None => format!("{} with idle", pct(m.time_fraction)),
            };
            o.push_str(&format!(
                "{:indent$}{} [{}] time {} ps ({share}) flops util {} hbm util {} bound {} wasted {}\n",
                "",
                n.name,
                n.kind,
                m.time_ps,
                pct(m.flops_utilization),
                pct(m.hbm_utilization),
                m.bound_by,
                pct(m.wasted_time_fraction),
                indent = 2 + depth * 2
            ));
            if let Some(w) = &m.over_peak {
                o.push_str(&format!("{:indent$}! {w}\n", "", indent = 4 + depth * 2));
            }
            for c in &n.children {
                walk(o, c, depth + 1);
            }
        }
        walk(&mut o, &h.by_program, 0);
    }
    o
}

/// CSV of every op row of every host.
pub fn render_csv(r: &OpProfileReport) -> String {
    use crate::base::fmt::csv_field;
    let mut o = String::from("host,program,category,op,occurrences,total_time_ps,self_time_ps,time_fraction,flops,bytes_accessed,hbm_bytes,flop_rate_gflops,hbm_bw_gibps,flops_utilization,hbm_utilization,bound_by,wasted_time_fraction,provenance,source,cost_source,expression\n");
    for h in &r.hosts {
        for x in h.ops.iter() {
            o.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:?},{}\n",
                csv_field(&h.host),
                csv_field(&x.program),
                csv_field(&x.category),
                csv_field(&x.name),
                x.occurrences,
                x.total_time_ps,
                x.self_time_ps,
                x.time_fraction,
                x.flops,
                x.bytes_accessed,
                x.hbm_bytes,
                x.flop_rate_gflops,
                x.hbm_bw_gibps,
                x.flops_utilization,
                x.hbm_utilization,
                x.bound_by,
                x.wasted_time_fraction,
                csv_field(x.provenance.as_deref().unwrap_or("")),
                csv_field(x.source.as_deref().unwrap_or("")),
                x.cost_source,
                csv_field(&x.expression)
            ));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakdown() {
        // Two accesses: read HBM 5368709120, write HBM 5368709120.
        let b = b"\n\n\x08\x01\x10\x01\x18\x80\x80\x80\x80\x14\n\n\x08\x02\x10\x01\x18\x80\x80\x80\x80\x14";
        assert_eq!(hbm_bytes_of_breakdown(b), Some(2.0 * 5368709120.0));
        assert_eq!(hbm_bytes_of_breakdown(b""), None);
        assert_eq!(hbm_bytes_of_breakdown(b"\xff"), None);
        assert_eq!(
            provenance_parts("jit(f)/jit(main)/add:"),
            vec!["jit(f)", "jit(main)", "add"]
        );
        assert_eq!(
            provenance_parts("a/b/MatMul:MatMul"),
            vec!["a", "b", "MatMul"]
        );
    }
}
