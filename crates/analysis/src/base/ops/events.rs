//! Which events are "ops", and their time aggregated per op (occurrences, total and self time).

use serde::Serialize;
use xlens_model::{Line, Plane, Profile, StrId};

use crate::base::device::{device_planes, DeviceKind};

/// Where the ops of a profile were taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpSource {
    /// TPU or GPU `XLA Ops` lines.
    DeviceXlaOps,
    /// GPU stream lines (kernels and memory copies).
    GpuStreams,
    /// XLA ops executed by the CPU runtime on host threads (events with an `hlo_op` stat).
    HostXlaOps,
    /// Framework ops on host threads (TensorFlow `name:Type` events).
    HostFrameworkOps,
}

impl OpSource {
    pub fn describe(self) -> &'static str {
        match self {
            OpSource::DeviceXlaOps => "device `XLA Ops` lines",
            OpSource::GpuStreams => "GPU stream lines (kernels and copies)",
            OpSource::HostXlaOps => "XLA ops run on host threads (events with an `hlo_op` stat)",
            OpSource::HostFrameworkOps => "TensorFlow ops on host threads (`name:Type` events)",
        }
    }
}

/// Aggregated time of one op.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpTime {
    pub name: String,
    /// The producer's long name when it differs (e.g. the full HLO expression on TPU).
    pub long_name: Option<String>,
    /// HLO module (program) the op belongs to, when known.
    pub module: Option<String>,
    pub occurrences: u64,
    pub total_time_ps: i64,
    pub self_time_ps: i64,
}

/// One framework op (host or device side).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FrameworkOp {
    /// `Host` or `Device`.
    pub host_or_device: &'static str,
    #[serde(rename = "type")]
    pub op_type: String,
    pub name: String,
    pub occurrences: u64,
    pub total_time_ps: i64,
    pub self_time_ps: i64,
    pub flops: f64,
    pub bytes_accessed: f64,
    /// An XLA op run by the CPU runtime on a host thread, listed under its framework op (XProf
    /// shows nothing for these).
    pub via_xla: bool,
    /// PyTorch traces: the GPU time of the kernels this op launched (directly, or through ops
    /// nested in it that are not themselves `cpu_op`s), by launch correlation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launched_device_time_ps: Option<i64>,
}

/// All ops of a host, sorted by self time (largest first), and where they came from.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpTimes {
    pub source: Option<OpSource>,
    pub ops: Vec<OpTime>,
    /// Sum of self time over all ops.
    pub total_self_time_ps: i64,
}

/// The lines whose events are ops, by priority: device XLA ops, GPU streams, host XLA ops, TF ops.
pub fn op_lines(p: &Profile) -> (Option<OpSource>, Vec<(&Plane, &Line)>) {
    let mut xla = Vec::new();
    let mut streams = Vec::new();
    for kind in [DeviceKind::Tpu, DeviceKind::Gpu] {
        for (_, plane) in device_planes(p, kind) {
            for line in &plane.lines {
                let name = p.str(line.name);
                if name == "XLA Ops" {
                    xla.push((plane, line));
                } else if kind == DeviceKind::Gpu && name.starts_with("Stream #") {
                    streams.push((plane, line));
                }
            }
        }
    }
    if xla.iter().any(|(_, l)| !l.events.is_empty()) {
        return (Some(OpSource::DeviceXlaOps), xla);
    }
    if streams.iter().any(|(_, l)| !l.events.is_empty()) {
        return (Some(OpSource::GpuStreams), streams);
    }
    let host: Vec<&Plane> = p
        .planes
        .iter()
        .filter(|pl| p.str(pl.name) == "/host:CPU")
        .collect();
    if let Some(hlo_op) = p.key("hlo_op") {
        let lines: Vec<(&Plane, &Line)> = host
            .iter()
            .flat_map(|pl| pl.lines.iter().map(move |l| (*pl, l)))
            .filter(|(_, l)| {
                l.events.may_have_stat(hlo_op)
                    && (0..l.events.len()).any(|i| l.events.stats(i).get(hlo_op).is_some())
            })
            .collect();
        if !lines.is_empty() {
            return (Some(OpSource::HostXlaOps), lines);
        }
    }
    let lines: Vec<(&Plane, &Line)> = host
        .iter()
        .flat_map(|pl| pl.lines.iter().map(move |l| (*pl, l)))
        .filter(|(pl, l)| (0..l.events.len()).any(|i| is_tf_op(p, pl, l, i)))
        .collect();
    if !lines.is_empty() {
        return (Some(OpSource::HostFrameworkOps), lines);
    }
    (None, Vec::new())
}

/// The short name of an op: TPU ops carry the whole HLO expression (`%x = f32[..] op(..)`) as name
/// and the instruction name as display name; other producers' names are kept as they are.
pub fn op_name(p: &Profile, md: &xlens_model::EventMetadata) -> StrId {
    if md.display_name != StrId::EMPTY && p.str(md.name).contains(" = ") {
        md.display_name
    } else {
        md.name
    }
}

/// A TensorFlow op event: `scope/name:Type` with a capitalised type and no spaces.
fn is_tf_op(p: &Profile, plane: &Plane, line: &Line, i: usize) -> bool {
    let Some(md) = plane.metadata_of(line, i) else {
        return false;
    };
    let name = p.str(md.name);
    match name.rsplit_once(':') {
        Some((op, ty)) => {
            !op.is_empty()
                && !ty.is_empty()
                && ty.starts_with(|c: char| c.is_ascii_uppercase())
                && ty.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.contains(' ')
                && !name.contains("::")
        }
        None => false,
    }
}

/// Aggregates op time over the op lines of a profile.
pub fn op_times(p: &Profile) -> OpTimes {
    let (source, lines) = op_lines(p);
    let hlo_op = p.key("hlo_op");
    let hlo_module = p.key("hlo_module");
    let host_xla = source == Some(OpSource::HostXlaOps);
    let mut agg: crate::base::fx::FxMap<(StrId, StrId), OpTime> = Default::default();
    let mut self_times = Vec::new();
    for (plane, line) in lines {
        let ev = &line.events;
        ev.self_times_into(&mut self_times);
        for (i, &self_time) in self_times.iter().enumerate() {
            let stats = ev.stats(i);
            // XLA ops on host threads are the events with an `hlo_op` stat: most host events
            // have no stats at all.
            if host_xla && stats.is_empty() {
                continue;
            }
            let Some(md) = plane.metadata_of(line, i) else {
                continue;
            };
            // One pass over the event's stats for `hlo_op` and `hlo_module`.
            let (hlo, module) = stats.two(hlo_op, hlo_module);
            let has_hlo_op = hlo.is_some();
            let is_op = match source {
                Some(OpSource::HostXlaOps) => has_hlo_op,
                Some(OpSource::HostFrameworkOps) => is_tf_op(p, plane, line, i),
                _ => true,
            };
            if !is_op {
                continue;
            }
            let module = module
                .or_else(|| hlo_module.and_then(|k| md.stats().get(k)))
                .and_then(|v| v.as_str_id())
                .unwrap_or_default();
            let e = agg.entry((md.name, module)).or_insert_with(|| OpTime {
                name: p.str(op_name(p, md)).to_string(),
                long_name: (op_name(p, md) != md.name).then(|| p.str(md.name).to_string()),
                module: (module != StrId::EMPTY).then(|| p.str(module).to_string()),
                occurrences: 0,
                total_time_ps: 0,
                self_time_ps: 0,
            });
            e.occurrences += 1;
            e.total_time_ps = e.total_time_ps.saturating_add(ev.dur(i));
            e.self_time_ps = e.self_time_ps.saturating_add(self_time);
        }
    }
    // Ops of one self time and name (in different modules) in a fixed order.
    let mut ops: Vec<OpTime> = agg.into_values().collect();
    ops.sort_by(|a, b| (&a.name, &a.module, &a.long_name).cmp(&(&b.name, &b.module, &b.long_name)));
    OpTimes::of(source, ops)
}

impl OpTimes {
    /// `ops` sorted by self time (largest first, then by name), with their total.
    pub fn of(source: Option<OpSource>, mut ops: Vec<OpTime>) -> OpTimes {
        ops.sort_by(|a, b| {
            b.self_time_ps
                .cmp(&a.self_time_ps)
                .then_with(|| a.name.cmp(&b.name))
        });
        let total_self_time_ps = ops
            .iter()
            .map(|o| o.self_time_ps)
            .fold(0i64, i64::saturating_add);
        OpTimes {
            source,
            ops,
            total_self_time_ps,
        }
    }
}

/// A table from interned stat key to a reader's slot (0: a key the reader does not want), so that
/// a per-event stat loop costs one load per stat.
pub(crate) fn stat_slots(p: &Profile, keys: &[(&str, u8)]) -> Vec<u8> {
    let mut slots = vec![0u8; p.strings.len()];
    for &(name, slot) in keys {
        if let Some(s) = p.key(name).and_then(|k| slots.get_mut(k.0 as usize)) {
            *s = slot;
        }
    }
    slots
}
