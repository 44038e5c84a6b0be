//! Framework op stats: every framework op (TF ops, tf.data iterators, JAX name scopes of XLA ops),
//! host and device side, never cut to a top N, plus the IDLE rows, as XProf's `framework_op_stats`.

use serde::Serialize;

use crate::base::context::{Analysis, Run};
use crate::base::tool::{NoParams, PerHost, Tool, ToolError};

use crate::base::ops::op_metrics::{device_framework_ops, FrameworkOp};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FrameworkOpRow {
    #[serde(flatten)]
    pub op: FrameworkOp,
    pub avg_time_ps: i64,
    pub avg_self_time_ps: i64,
    /// Share of the side's (host or device) self time, IDLE included, in percent (XProf's).
    pub self_time_percent: f64,
    /// Share of the side's op time (its ops' self time, IDLE left out), in percent: the share
    /// every tool gives an op. `None` on the IDLE rows.
    pub self_time_percent_of_op_time: Option<f64>,
    /// FLOPs per second of self time, when the profile carries FLOPs.
    pub flop_rate: Option<f64>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FrameworkOpStats {
    /// Every op, IDLE rows included, by self time (largest first).
    pub ops: Vec<FrameworkOpRow>,
    pub op_count: usize,
    pub host_self_time_ps: i64,
    pub device_self_time_ps: i64,
    pub host_idle_ps: i64,
    pub device_idle_ps: i64,
    pub notes: Vec<String>,
}

pub fn framework_op_stats(a: &Analysis) -> FrameworkOpStats {
    let _p = a.profile();
    let fw = a.host_framework_ops();
    let (mut host, host_idle) = (fw.0.clone(), fw.1);
    let db = a.op_metrics();
    let dev = device_framework_ops(&db);
    let has_device = matches!(
        db.source,
        Some(crate::base::ops::events::OpSource::DeviceXlaOps)
            | Some(crate::base::ops::events::OpSource::GpuStreams)
    );
    let mut notes = vec![
        "Host ops: TF `name:Type`, tf.data `Iterator::...` and `MemcpyHToD`-style events on host threads; self time excludes framework ops nested in them. IDLE: per thread (or device), first op start to last op end not covered by op self time; on host threads, instant events tagged with a `tf_op` stat (memory allocations) also bound the span, as in XProf.".to_string(),
    ];
    if host.iter().any(|o| o.launched_device_time_ps.is_some()) {
        notes.push("PyTorch trace: host ops are the `cpu_op` events on host threads (type: the name's namespace), self time excludes `cpu_op`s nested in them; `launched_device_time_ps` is the GPU time of the kernels and copies each op launched (the launch call's correlation, attributed to the innermost `cpu_op` around it). IDLE on a thread: first to last op not covered by op self time.".to_string());
    }
    if dev.iter().any(|o| o.via_xla) {
        notes.push("XLA ops run by the CPU runtime are listed under their framework op (the JAX name scope or TF op in the HLO metadata), marked `via_xla`; XProf shows none for CPU-only XLA profiles.".to_string());
    }
    host.extend(dev);
    let idle = |side: &'static str, ps: i64| FrameworkOp {
        total_time_ps: ps,
        self_time_ps: ps,
        ..FrameworkOp::empty(side, "IDLE", "IDLE")
    };
    host.push(idle("Host", host_idle));
    if has_device {
        host.push(idle("Device", db.idle_ps));
    }
    let side_total = |side: &str| -> i64 {
        host.iter()
            .filter(|o| o.host_or_device == side)
            .map(|o| o.self_time_ps)
            .fold(0i64, i64::saturating_add)
    };
    let (ht, dt) = (side_total("Host"), side_total("Device"));
    let mut ops: Vec<FrameworkOpRow> = host
        .into_iter()
        .map(|op| {
            let (tot, idle) = if op.host_or_device == "Host" {
                (ht, host_idle)
            } else {
                (dt, db.idle_ps)
            };
            let op_time = tot.saturating_sub(idle);
            FrameworkOpRow {
                self_time_percent_of_op_time: (op.op_type != "IDLE" && op_time > 0)
                    .then(|| 100.0 * op.self_time_ps as f64 / op_time as f64),
                avg_time_ps: op.total_time_ps / op.occurrences.max(1) as i64,
                avg_self_time_ps: op.self_time_ps / op.occurrences.max(1) as i64,
                self_time_percent: if tot > 0 {
                    100.0 * op.self_time_ps as f64 / tot as f64
                } else {
                    0.0
                },
                flop_rate: (op.flops > 0.0 && op.self_time_ps > 0)
                    .then(|| op.flops / (op.self_time_ps as f64 / 1e12)),
                op,
            }
        })
        .collect();
    ops.sort_by(|a, b| {
        b.op.self_time_ps
            .cmp(&a.op.self_time_ps)
            .then_with(|| a.op.name.cmp(&b.op.name))
    });
    FrameworkOpStats {
        op_count: ops.len(),
        ops,
        host_self_time_ps: ht,
        device_self_time_ps: dt,
        host_idle_ps: host_idle,
        device_idle_ps: if has_device { db.idle_ps } else { 0 },
        notes,
    }
}

pub fn render_csv(s: &FrameworkOpStats) -> String {
    let mut o = String::from("rank,host_or_device,type,operation,occurrences,total_time_us,avg_time_us,total_self_time_us,avg_self_time_us,self_time_percent,flop_rate_gflops,via_xla\n");
    for (i, r) in s.ops.iter().enumerate() {
        o.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{:.4},{},{}\n",
            i + 1,
            r.op.host_or_device,
            crate::base::fmt::csv_field(&r.op.op_type),
            crate::base::fmt::csv_field(&r.op.name),
            r.op.occurrences,
            r.op.total_time_ps as f64 / 1e6,
            r.avg_time_ps as f64 / 1e6,
            r.op.self_time_ps as f64 / 1e6,
            r.avg_self_time_ps as f64 / 1e6,
            r.self_time_percent,
            r.flop_rate
                .map(|f| format!("{:.3}", f / 1e9))
                .unwrap_or_default(),
            r.op.via_xla
        ));
    }
    o
}

/// The framework op stats tool.
pub struct FrameworkOpStatsTool;

impl Tool for FrameworkOpStatsTool {
    const NAME: &'static str = "framework_op_stats";
    const TITLE: &'static str = "Framework op stats";
    const DESCRIPTION: &'static str = "Every framework op, host and device side, with self time, occurrences and FLOP rate, plus IDLE rows (no top-N cut).";
    type Params = NoParams;
    type Output = PerHost<FrameworkOpStats>;

    fn run(run: &Run, _: &NoParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, framework_op_stats))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}
