//! The op table: one row per HLO op of a host (time over all occurrences, FLOPs, bytes, HBM
//! bytes, utilisations, bound-by, the HLO text and fusion body), with the peaks and totals it
//! was computed against. Shared by the `op_profile`, `hlo_stats` and `roofline_model` tools.
//!
//! * **FLOPs and bytes**: XLA's own `flops` / `bytes_accessed` where the profile carries them
//!   (TPU `XLA Ops` metadata, summed over occurrences), else xlens's cost model over the HLO
//!   module ([`crate::base::hlo::cost_model`]). [`HostOps::cost_source`] says which.
//! * **HBM bytes**: the HBM part of the op's `memory_access_breakdown` when it has one, else all
//!   bytes accessed (the rule XProf's `hlo_stats` and roofline use).
//! * **Utilisation**: FLOP rate over the peak FLOP rate, HBM bandwidth over the peak bandwidth
//!   ([`crate::base::peaks`]), each capped at 1 as XProf does; **bound by** is the larger.

use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use xlens_model::{Profile, StatValue, StrId};
use xlens_proto::xla::HloInstructionProto;
use xlens_wire::{fields, Value};

use crate::base::device::DeviceKind;
use crate::base::hlo::cost_model::{instruction_name_of, Cost, ModuleCosts};
use crate::base::hlo::modules::{shape_text, shape_text_no_layout, HloIndex, HloModule};
use crate::base::ops::events::{op_lines, OpSource};
use crate::base::ops::op_metrics::{OpMetric, OpMetricsDb};
use crate::base::peaks::PeakSpec;

/// Where an op's FLOPs and bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// XLA's own figures, carried by the profile.
    Xla,
    /// xlens's cost model over the HLO module.
    CostModel,
    /// Neither (no HLO instruction found for the op).
    None,
}

/// One instruction of a fusion body.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FusedChild {
    pub name: String,
    pub opcode: String,
    pub expression: String,
    /// Per execution of the fusion, from the cost model.
    pub flops: i64,
    pub transcendentals: i64,
    pub bytes_accessed: i64,
    /// Instructions of a nested fusion.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<FusedChild>,
}

/// One HLO op (aggregated over its occurrences on all devices of a host).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpRow {
    pub program_id: Option<u64>,
    /// The program (HLO module) as XProf names it: `jit_f(123)`; `main` when unknown.
    pub program: String,
    pub name: String,
    /// The full HLO expression (`%fusion.3 = f32[..] fusion(..), kind=kLoop, calls=..`).
    pub expression: String,
    pub opcode: Option<String>,
    pub category: String,
    /// Output shape with layout, and the operands' shapes (copyable text).
    pub shape: Option<String>,
    pub operand_shapes: Vec<String>,
    /// Framework provenance (TF op or JAX name-scope path), when known.
    pub provenance: Option<String>,
    /// The HLO metadata `op_name`, when the module has it.
    pub op_name: Option<String>,
    /// `file:line`, and the stack when recorded.
    pub source: Option<String>,
    pub source_stack: Option<String>,
    /// XLA's `deduplicated_name` (ops with the same code), when present.
    pub deduplicated_name: Option<String>,
    pub occurrences: u64,
    pub total_time_ps: i64,
    pub self_time_ps: i64,
    pub avg_time_ps: f64,
    pub avg_self_time_ps: f64,
    pub flops: f64,
    pub bytes_accessed: f64,
    pub hbm_bytes: f64,
    /// Whether `hbm_bytes` comes from XLA's memory access breakdown (else it is every byte
    /// accessed).
    #[serde(skip)]
    pub hbm_from_breakdown: bool,
    pub cost_source: CostSource,
    /// FLOPs / total time (GFLOP/s).
    pub flop_rate_gflops: f64,
    /// Bytes accessed / total time (GiB/s).
    pub memory_bw_gibps: f64,
    /// HBM bytes / total time (GiB/s).
    pub hbm_bw_gibps: f64,
    /// FLOPs / byte.
    pub operational_intensity: f64,
    pub hbm_operational_intensity: f64,
    pub flops_utilization: f64,
    pub hbm_utilization: f64,
    /// `Compute`, `HBM` or `Unknown`.
    pub bound_by: &'static str,
    /// Set when a utilisation is capped at 100%: by how much it exceeds the peak, and why
    /// ([`over_peak`]).
    pub over_peak: Option<String>,
    /// Total time / (host op time + IDLE).
    pub time_fraction: f64,
    pub self_time_fraction: f64,
    pub wasted_time_fraction: f64,
    /// Fusion body (direct instructions, nested fusions inside), by FLOPs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fused: Vec<FusedChild>,
}

/// Metrics of a tree node.
/// HBM memory space in XLA's `MemoryAccessed` messages.
const MEMORY_SPACE_HBM: u64 = 1;

/// HBM bytes of a serialized `MemoryAccessBreakdown` (`repeated MemoryAccessed memory_accessed =
/// 1`, each `operation_type = 1, memory_space = 2, bytes_accessed = 3`): `None` when it lists no
/// access (or does not decode).
pub fn hbm_bytes_of_breakdown(b: &[u8]) -> Option<f64> {
    let mut any = false;
    let mut hbm = 0.0;
    for f in fields(b) {
        let (1, Value::Len(access)) = f.ok()? else {
            continue;
        };
        any = true;
        let mut space = 0;
        let mut bytes = 0;
        for g in fields(access) {
            match g.ok()? {
                (2, Value::Varint(v)) => space = v,
                (3, Value::Varint(v)) => bytes = v,
                _ => {}
            }
        }
        if space == MEMORY_SPACE_HBM {
            hbm += bytes as f64;
        }
    }
    any.then_some(hbm)
}

/// Per op-event metadata facts the op-metrics layer does not keep.
#[derive(Default, Clone)]
struct MetaFacts {
    /// HBM bytes per occurrence (`None`: no breakdown, use all bytes).
    hbm_per_occurrence: Option<f64>,
    deduplicated_name: Option<String>,
    source_stack: Option<String>,
}

/// XLA-style text of an instruction: `%name = shape opcode(shape %operand, ...), extra`.
pub fn instruction_text(m: &HloModule, ins: &HloInstructionProto) -> String {
    let shape = ins.shape.as_ref().map(shape_text).unwrap_or_default();
    let ops: Vec<String> = ins
        .operand_ids
        .iter()
        .map(|&id| match m.instruction(id) {
            Some(o) => format!(
                "{} %{}",
                o.shape.as_ref().map(shape_text).unwrap_or_default(),
                o.name
            ),
            None => format!("%<{id}>"),
        })
        .collect();
    let mut s = format!(
        "%{} = {} {}({})",
        ins.name,
        shape,
        ins.opcode,
        ops.join(", ")
    );
    if ins.opcode == "fusion" && !ins.fusion_kind.is_empty() {
        s.push_str(&format!(", kind={}", ins.fusion_kind));
    }
    let called: Vec<String> = ins
        .called_computation_ids
        .iter()
        .filter_map(|&c| m.computation(c).map(|c| format!("%{}", c.name)))
        .collect();
    if !called.is_empty() {
        s.push_str(&format!(", calls={}", called.join(", ")));
    }
    s
}

/// XProf-like category of an instruction when the profile gives none.
pub fn category_of(ins: &HloInstructionProto) -> String {
    match ins.opcode.as_str() {
        "fusion" => match ins.fusion_kind.as_str() {
            "kLoop" => "loop fusion".into(),
            "kInput" => "input fusion".into(),
            "kOutput" => "output fusion".into(),
            "kCustom" => "custom fusion".into(),
            _ => "fusion".into(),
        },
        "dot" => "matmul".into(),
        "convolution" => "convolution".into(),
        op if crate::base::hlo::cost_model::is_elementwise(op)
            || crate::base::hlo::cost_model::is_transcendental(op) =>
        {
            "non-fusion elementwise".into()
        }
        op => op.to_string(),
    }
}

fn fused_children(
    m: &HloModule,
    costs: &HashMap<i64, Cost>,
    ins: &HloInstructionProto,
    depth: usize,
) -> Vec<FusedChild> {
    if ins.opcode != "fusion" || depth > 8 {
        return Vec::new();
    }
    let Some(body) = ins
        .called_computation_ids
        .first()
        .and_then(|&c| m.computation(c))
    else {
        return Vec::new();
    };
    let mut out: Vec<FusedChild> = body
        .instructions
        .iter()
        .map(|x| {
            let c = costs.get(&x.id).copied().unwrap_or_default();
            FusedChild {
                name: x.name.clone(),
                opcode: x.opcode.clone(),
                expression: instruction_text(m, x),
                flops: c.flops,
                transcendentals: c.transcendentals,
                bytes_accessed: c.bytes_accessed,
                children: fused_children(m, costs, x, depth + 1),
            }
        })
        .collect();
    out.sort_by(|a, b| b.flops.cmp(&a.flops).then_with(|| a.name.cmp(&b.name)));
    out
}

/// Utilisations and bound-by from FLOPs, HBM bytes and time.
pub fn rates(
    flops: f64,
    hbm: f64,
    time_ps: i64,
    peaks: Option<&PeakSpec>,
) -> (f64, f64, &'static str) {
    let secs = time_ps as f64 * 1e-12;
    let (mut fu, mut hu) = (0.0, 0.0);
    if secs > 0.0 {
        if let Some(pf) = peaks.and_then(|p| p.flops_per_second).filter(|v| *v > 0.0) {
            fu = (flops / secs / pf).min(1.0);
        }
        if let Some(pb) = peaks.and_then(|p| p.bytes_per_second).filter(|v| *v > 0.0) {
            hu = (hbm / secs / pb).min(1.0);
        }
    }
    let bound = if fu == 0.0 && hu == 0.0 {
        "Unknown"
    } else if fu >= hu {
        "Compute"
    } else {
        "HBM"
    };
    (fu, hu, bound)
}

/// Why a utilisation shown as 100% is not a fact, when the work counted for an op needs more
/// than the peak in the time it took (`None` when both stay within their peaks). Utilisations
/// are shown capped at 100% as XProf shows them; this says by how much the uncapped figure
/// exceeds it and where the peak came from, so that it is read as a flag on the cost model or
/// the peak, not as a saturated device.
pub fn over_peak(flops: f64, hbm: f64, time_ps: i64, peaks: Option<&PeakSpec>) -> Option<String> {
    let secs = time_ps as f64 * 1e-12;
    let p = peaks?;
    if secs <= 0.0 {
        return None;
    }
    let checks = [
        (
            flops,
            p.flops_per_second,
            p.flops_source,
            "FLOPs counted need",
            "peak FLOP rate",
            "the cost model counts more work than ran, or the peak is too low",
        ),
        (
            hbm,
            p.bytes_per_second,
            p.bandwidth_source,
            "bytes counted need",
            "peak bandwidth",
            "the traffic needs more time than the op takes (an asynchronous start whose transfer runs until its done op), the cost model counts traffic that never reaches memory (cache hits), or the peak is too low",
        ),
    ];
    let mut why = Vec::new();
    for (amount, peak, source, what, of, reasons) in checks {
        let Some(peak) = peak.filter(|v| *v > 0.0) else {
            continue;
        };
        let u = amount / secs / peak;
        if u > 1.0 + 1e-9 {
            why.push(format!(
                "the {what} {:.0}% of the {of} ({}); {reasons}",
                100.0 * u,
                source_words(source)
            ));
        }
    }
    (!why.is_empty()).then(|| format!("over the peak, shown capped at 100%: {}", why.join("; ")))
}

fn source_words(s: crate::base::peaks::PeakSource) -> &'static str {
    use crate::base::peaks::PeakSource as S;
    match s {
        S::Profile => "peak stated by the profile",
        S::DerivedFromProfile => "peak derived from the profile's device stats",
        S::Table => "peak from the built-in table of devices",
        S::UserGiven => "peak given by the user",
        S::MeasuredHere => "peak measured on the machine running xlens",
        S::Unknown => "peak of unknown origin",
    }
}

/// Bytes per ns (GB/s) to GiB/s.
pub const GIB_PER_GB: f64 = 1e9 / (1u64 << 30) as f64;

pub fn per_ns(x: f64, time_ps: i64) -> f64 {
    if time_ps > 0 {
        x / (time_ps as f64 / 1000.0)
    } else {
        0.0
    }
}

/// The op rows of one host, with the peaks and totals they were computed against.
pub struct HostOps {
    pub device_kind: DeviceKind,
    pub op_source: Option<OpSource>,
    pub cost_source: CostSource,
    pub peaks: PeakSpec,
    pub total_time_ps: i64,
    pub idle_ps: i64,
    /// Every op, by total time (shared with the results that list them).
    pub ops: std::sync::Arc<Vec<OpRow>>,
    pub notes: Vec<String>,
}

fn stat_u64(v: Option<StatValue>) -> Option<u64> {
    match v? {
        StatValue::U64(u) => Some(u),
        StatValue::I64(i) => Some(i as u64),
        _ => None,
    }
}

/// What a host's op table is made of ([`host_ops_with`]).
pub struct OpTableInputs<'a> {
    pub profile: &'a Profile,
    /// The peaks (computed first: on a CPU-only profile that measures the machine with two
    /// 4 MiB buffers, which are gone again before the HLO modules are decoded).
    pub peaks: PeakSpec,
    pub hlo: &'a HloIndex,
    pub op_metrics: &'a OpMetricsDb,
    /// Module `k`'s costs (by its index in `hlo`), computed once by the caller.
    pub module_costs: &'a dyn Fn(usize) -> Option<Arc<ModuleCosts>>,
}

/// How much of each op row [`host_ops_with`] fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything the op tools show.
    Full,
    /// Times, costs, rates and category only: no HLO text (expression, shapes, fused children,
    /// source location), which a per-host summary does not keep.
    Figures,
}

/// [`host_ops`] with rows filled as far as `detail` says.
pub fn host_ops_with(inputs: OpTableInputs<'_>, detail: Detail) -> HostOps {
    let OpTableInputs {
        profile: p,
        peaks,
        hlo: idx,
        op_metrics: db,
        module_costs,
    } = inputs;
    let mut notes: Vec<String> = Vec::new();
    // XLA's own figures when device ops carry them.
    let xla_figures = db.source == Some(OpSource::DeviceXlaOps)
        && (p.key("flops").is_some() || p.key("bytes_accessed").is_some());
    let cost_source = if xla_figures {
        CostSource::Xla
    } else if idx.modules.is_empty() {
        CostSource::None
    } else {
        CostSource::CostModel
    };
    match cost_source {
        CostSource::Xla => notes.push("FLOPs and bytes are XLA's own figures, as the profile carries them.".into()),
        CostSource::CostModel => notes.push("FLOPs and bytes come from xlens's cost model over the profile's HLO modules (the profile carries no XLA figures); transcendentals are not counted as FLOPs, as in XLA.".into()),
        CostSource::None => notes.push("No XLA cost figures and no HLO modules in this profile: FLOPs and bytes are unknown (0).".into()),
    }
    if db.source == Some(OpSource::HostXlaOps) {
        notes.push("CPU-only profile: ops are the XLA ops the CPU runtime ran on host threads (XProf shows no op profile here).".into());
    }
    // TensorFlow ops without XLA are no HLO ops: framework_op_stats lists them, with XProf's
    // self time (which leaves nested TF ops out, not every nested event).
    let tf_only = db.source == Some(OpSource::HostFrameworkOps);
    if tf_only {
        notes.push("No XLA ops in this profile: its ops are TensorFlow ops on host threads, which framework_op_stats lists with XProf's self times (XProf lists no HLO ops here either).".into());
    }
    let listed: &[OpMetric] = if tf_only { &[] } else { &db.ops };
    let (idle_ps, total_time_ps) = if tf_only {
        (0, 0)
    } else {
        (db.idle_ps, db.total_self_time_ps.saturating_add(db.idle_ps))
    };
    let facts = meta_facts(p);
    let device_totals = device_total_times(p);
    let mut ops: Vec<OpRow> = Vec::with_capacity(listed.len());
    for o in listed {
        ops.push(op_row(
            p,
            o,
            module_costs,
            idx,
            &facts,
            &device_totals,
            cost_source,
            &peaks,
            total_time_ps,
            detail,
        ));
    }
    ops.sort_by(|a, b| {
        b.total_time_ps
            .cmp(&a.total_time_ps)
            .then_with(|| a.program.cmp(&b.program))
            .then_with(|| a.name.cmp(&b.name))
    });
    for e in &idx.errors {
        notes.push(e.clone());
    }
    HostOps {
        device_kind: peaks.kind,
        op_source: db.source,
        cost_source,
        peaks,
        total_time_ps,
        idle_ps,
        ops: std::sync::Arc::new(ops),
        notes,
    }
}

/// Total time per (program id, op name) on the device's own clock (`device_duration_ps`, which
/// TPU ops carry and XProf times them by); empty when op events lack it.
fn device_total_times(p: &Profile) -> HashMap<(Option<u64>, String), i64> {
    let mut out: HashMap<(Option<u64>, String), i64> = HashMap::new();
    let (Some(kd), kp) = (p.key("device_duration_ps"), p.key("program_id")) else {
        return out;
    };
    let (_, lines) = op_lines(p);
    for (plane, line) in lines {
        let ev = &line.events;
        let mut names: HashMap<u32, (Option<u64>, String)> = HashMap::new();
        for i in 0..ev.len() {
            let Some(d) = ev.stats(i).get(kd).and_then(|v| v.as_i64()) else {
                continue;
            };
            let mi = ev.meta(i);
            let key = names
                .entry(mi)
                .or_insert_with(|| match plane.metadata_of(line, i) {
                    Some(md) => (
                        stat_u64(kp.and_then(|k| md.stats().get(k))),
                        instruction_name_of(p.str(md.name), p.str(md.display_name)),
                    ),
                    None => (None, String::new()),
                });
            let total = out.entry(key.clone()).or_default();
            *total = total.saturating_add(d);
        }
    }
    out
}

/// Facts per (program id, op name) from the op lines' event metadata.
fn meta_facts(p: &Profile) -> HashMap<(Option<u64>, String), MetaFacts> {
    let mut out = HashMap::new();
    let (_, lines) = op_lines(p);
    let kb = p.key("memory_access_breakdown");
    let kd = p.key("deduplicated_name");
    let ks = p.key("source_stack");
    let kp = p.key("program_id");
    if kb.is_none() && kd.is_none() && ks.is_none() {
        return out;
    }
    let mut planes_seen: Vec<*const xlens_model::Plane> = Vec::new();
    for (plane, _) in lines {
        let ptr = plane as *const xlens_model::Plane;
        if planes_seen.contains(&ptr) {
            continue;
        }
        planes_seen.push(ptr);
        for md in &plane.event_metadata {
            let st = md.stats();
            let get = |k: Option<StrId>| k.and_then(|k| st.get(k));
            let f = MetaFacts {
                hbm_per_occurrence: match get(kb) {
                    Some(StatValue::Bytes(b)) => hbm_bytes_of_breakdown(p.blob(b)),
                    _ => None,
                },
                deduplicated_name: get(kd)
                    .and_then(|v| v.as_str_id())
                    .map(|s| p.str(s).to_string())
                    .filter(|s| !s.is_empty()),
                source_stack: get(ks)
                    .and_then(|v| v.as_str_id())
                    .map(|s| p.str(s).to_string())
                    .filter(|s| !s.is_empty()),
            };
            let name = instruction_name_of(p.str(md.name), p.str(md.display_name));
            out.insert((stat_u64(get(kp)), name), f);
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn op_row(
    p: &Profile,
    o: &OpMetric,
    module_costs: &dyn Fn(usize) -> Option<Arc<ModuleCosts>>,
    idx: &HloIndex,
    facts: &HashMap<(Option<u64>, String), MetaFacts>,
    device_totals: &HashMap<(Option<u64>, String), i64>,
    cost_source: CostSource,
    peaks: &PeakSpec,
    total_ps: i64,
    detail: Detail,
) -> OpRow {
    let _ = p;
    let text = detail == Detail::Full;
    let ins_name = instruction_name_of(o.long_name.as_deref().unwrap_or(&o.name), &o.name);
    let mi = idx
        .modules
        .iter()
        .position(|m| o.program_id.is_some() && m.program_id == o.program_id)
        .or_else(|| {
            let q = o.module.as_deref()?;
            let m = idx.find(q).ok()?;
            idx.modules.iter().position(|x| std::ptr::eq(x, m))
        });
    let module = mi.and_then(|i| idx.modules.get(i));
    let ins = module.and_then(|m| m.instruction_by_name(&ins_name));
    let program = match (module, o.program_id) {
        (Some(m), _) => m.name.clone(),
        (None, Some(id)) => o
            .module
            .as_ref()
            .map(|n| format!("{n}({id})"))
            .unwrap_or_else(|| format!("program({id})")),
        (None, None) => o.module.clone().unwrap_or_else(|| "main".to_string()),
    };
    let occ = o.occurrences.max(1) as f64;
    let fact = facts
        .get(&(o.program_id, ins_name.clone()))
        .cloned()
        .unwrap_or_default();
    let (flops, bytes, row_cost_source, fused) = match (cost_source, module, ins) {
        (CostSource::Xla, m, i) => {
            let fused = match (m, i, mi) {
                (Some(m), Some(i), Some(k)) if text && i.opcode == "fusion" => {
                    match module_costs(k) {
                        Some(c) => fused_children(m, &c, i, 0),
                        None => Vec::new(),
                    }
                }
                _ => Vec::new(),
            };
            (o.flops, o.bytes_accessed, CostSource::Xla, fused)
        }
        (_, Some(m), Some(i)) => {
            let c = module_costs(mi.unwrap_or(0)).unwrap_or_default();
            let cost = c.get(&i.id).copied().unwrap_or_default();
            (
                cost.flops as f64 * occ,
                cost.bytes_accessed as f64 * occ,
                CostSource::CostModel,
                if text {
                    fused_children(m, &c, i, 0)
                } else {
                    Vec::new()
                },
            )
        }
        _ => (o.flops, o.bytes_accessed, CostSource::None, Vec::new()),
    };
    let hbm = fact.hbm_per_occurrence.map(|h| h * occ).unwrap_or(bytes);
    // The device's own clock when every occurrence has it (TPU), as XProf times ops.
    let t = device_totals
        .get(&(o.program_id, ins_name.clone()))
        .copied()
        .filter(|_| o.devices > 0)
        .unwrap_or(o.total_time_ps);
    let (fu, hu, bound) = rates(flops, hbm, t, Some(peaks));
    let tf = if total_ps > 0 {
        t as f64 / total_ps as f64
    } else {
        0.0
    };
    let stf = if total_ps > 0 {
        o.self_time_ps as f64 / total_ps as f64
    } else {
        0.0
    };
    let md = ins.and_then(|i| i.metadata.as_ref());
    let loc = match (module, ins) {
        (Some(m), Some(i)) if text => m.source_location(i),
        _ => None,
    };
    let expression = match (&o.long_name, module, ins) {
        _ if !text => String::new(),
        (Some(l), _, _) if l.contains(" = ") => l.clone(),
        (_, Some(m), Some(i)) => instruction_text(m, i),
        (Some(l), _, _) => l.clone(),
        _ => o.name.clone(),
    };
    OpRow {
        program_id: o.program_id.or(module.and_then(|m| m.program_id)),
        program,
        name: o.name.clone(),
        expression,
        opcode: ins.map(|i| i.opcode.clone()),
        category: o
            .category
            .clone()
            .or_else(|| ins.map(category_of))
            .unwrap_or_else(|| "unknown".to_string()),
        shape: ins
            .and_then(|i| i.shape.as_ref())
            .filter(|_| text)
            .map(shape_text),
        operand_shapes: match (module, ins) {
            (Some(m), Some(i)) if text => i
                .operand_ids
                .iter()
                .map(|&id| {
                    m.instruction(id)
                        .and_then(|x| x.shape.as_ref())
                        .map(shape_text_no_layout)
                        .unwrap_or_default()
                })
                .collect(),
            _ => Vec::new(),
        },
        provenance: o.framework_op.clone(),
        op_name: md.map(|m| m.op_name.clone()).filter(|s| !s.is_empty()),
        source: o
            .source
            .clone()
            .or_else(|| loc.as_ref().map(|l| format!("{}:{}", l.file, l.line))),
        source_stack: fact
            .source_stack
            .clone()
            .or_else(|| loc.map(|l| l.stack).filter(|s| !s.is_empty())),
        deduplicated_name: fact.deduplicated_name.clone(),
        occurrences: o.occurrences,
        total_time_ps: t,
        self_time_ps: o.self_time_ps,
        avg_time_ps: t as f64 / occ,
        avg_self_time_ps: o.self_time_ps as f64 / occ,
        flops,
        bytes_accessed: bytes,
        hbm_bytes: hbm,
        hbm_from_breakdown: fact.hbm_per_occurrence.is_some(),
        cost_source: row_cost_source,
        flop_rate_gflops: per_ns(flops, t),
        memory_bw_gibps: per_ns(bytes, t) * GIB_PER_GB,
        hbm_bw_gibps: per_ns(hbm, t) * GIB_PER_GB,
        operational_intensity: if bytes > 0.0 { flops / bytes } else { 0.0 },
        hbm_operational_intensity: if hbm > 0.0 { flops / hbm } else { 0.0 },
        flops_utilization: fu,
        hbm_utilization: hu,
        bound_by: bound,
        over_peak: over_peak(flops, hbm, t, Some(peaks)),
        time_fraction: tf,
        self_time_fraction: stf,
        wasted_time_fraction: tf * (1.0 - fu.max(hu)),
        fused,
    }
}
