//! The shared op-metrics layer: per op (and per device), occurrences, total and self time, FLOPs
//! and bytes accessed, HLO category and program, framework provenance, and explicit IDLE time.
//! Built on [`crate::base::ops::events::op_lines`] (which lines hold ops); used by `overview_page`,
//! `framework_op_stats` and `input_pipeline_analyzer`.
//!
//! * **Device ops** come from TPU/GPU `XLA Ops` lines, else GPU stream lines (kernels, copies),
//!   else (CPU-only profiles) XLA ops executed on host threads (events with an `hlo_op` stat).
//! * **Framework provenance** of a device op: its `tf_op` stat, else GPU `level 0` annotation,
//!   else the `op_name` of the HLO instruction's metadata (the JAX name-scope path, looked up in the
//!   profile's HLO modules), else none (the framework op is then the HLO op itself, type `Unknown`,
//!   as XProf does).
//! * **Host framework ops**: events on `/host:CPU` threads named `scope/name:Type` (TensorFlow),
//!   `Iterator::...` (tf.data, type `Dataset`) or `Memcpy*`; self time is taken among these events
//!   only (an op's time minus the framework ops nested in it on the same thread).
//! * **IDLE**: per thread (host) or device, the time from the first op's start to the last op's end
//!   not covered by op self time, summed. On host threads, as in XProf, the ops are "TF
//!   activities": events named like TF ops and events carrying a `tf_op` stat (instant ones, such as
//!   memory allocations, bound the span without being listed), and an op's end closes any op
//!   opened after it and still open.

use crate::base::fx::FxMap;
use serde::Serialize;
use std::collections::HashMap;
use xlens_model::{Line, Plane, Profile, StatValue, StrId};

use crate::base::hlo::modules::OpNames;
use crate::base::ops::events::{op_lines, op_name, OpSource};
mod framework;
pub use framework::{device_framework_ops, framework_op_times, host_framework_ops};

/// One op (aggregated over its occurrences on all devices of a host).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpMetric {
    pub name: String,
    /// The producer's long name when it differs (TPU: the HLO expression).
    pub long_name: Option<String>,
    pub module: Option<String>,
    pub program_id: Option<u64>,
    /// `hlo_category` stat (e.g. `convolution fusion`), when present.
    pub category: Option<String>,
    /// `source` stat (file:line), when present.
    pub source: Option<String>,
    /// Framework op (TF op name, or JAX name-scope path), when known.
    pub framework_op: Option<String>,
    /// Framework op type (TF type, or the last JAX path component); `Unknown` when none.
    pub framework_type: String,
    /// Number of device planes it ran on.
    pub devices: usize,
    pub occurrences: u64,
    pub total_time_ps: i64,
    pub self_time_ps: i64,
    pub min_time_ps: i64,
    /// FLOPs over all occurrences (`flops` stat × occurrences); 0 when the profile has none.
    pub flops: f64,
    /// Bytes accessed over all occurrences (`bytes_accessed` stat × occurrences).
    pub bytes_accessed: f64,
}

/// Busy and idle time of one device plane (or, on CPU-only profiles, one host thread with ops).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DeviceTime {
    pub name: String,
    pub ops: u64,
    /// First op start to last op end.
    pub span_ps: i64,
    /// Sum of op self time.
    pub busy_ps: i64,
    pub idle_ps: i64,
}

/// All device ops of a host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpMetricsDb {
    pub source: Option<OpSource>,
    pub source_description: Option<&'static str>,
    /// Every op, by self time (largest first).
    pub ops: Vec<OpMetric>,
    pub devices: Vec<DeviceTime>,
    pub total_self_time_ps: i64,
    /// Explicit IDLE entry: summed over [`OpMetricsDb::devices`].
    pub idle_ps: i64,
    pub total_flops: f64,
    pub total_bytes_accessed: f64,
}

pub use crate::base::ops::events::FrameworkOp;

impl FrameworkOp {
    /// An op of `op_type` and `name` on `side` (`Host` or `Device`) with nothing counted yet.
    pub fn empty(side: &'static str, op_type: &str, name: &str) -> FrameworkOp {
        FrameworkOp {
            host_or_device: side,
            op_type: op_type.to_string(),
            name: name.to_string(),
            occurrences: 0,
            total_time_ps: 0,
            self_time_ps: 0,
            flops: 0.0,
            bytes_accessed: 0.0,
            via_xla: false,
            launched_device_time_ps: None,
        }
    }
}

/// Splits a framework op full name into (type, name), the way XProf's `ParseTfOpFullname` does
/// for the kinds it shows: `Iterator::...` → `Dataset`; `Memcpy*` → itself; `name:Type` with a TF
/// type (`[A-Z_][A-Za-z0-9_]*`) and a TF name (`[A-Za-z0-9.][A-Za-z0-9_./>-]*`).
pub fn parse_tf_op(full: &str) -> Option<(&str, &str)> {
    if full.starts_with("Iterator::") {
        return Some(("Dataset", full));
    }
    if ["MemcpyHToD", "MemcpyDToH", "MemcpyDToD", "MemcpyHToH"]
        .iter()
        .any(|m| full.starts_with(m))
        && !full.contains(':')
    {
        return Some((full, full));
    }
    let (name, ty) = full.split_once(':')?;
    if ty.contains(':') || name.is_empty() || ty.is_empty() {
        return None;
    }
    let mut tc = ty.chars();
    let ty_ok = tc
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && tc.all(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut nc = name.chars();
    let name_ok = nc
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.')
        && nc.all(|c| c.is_ascii_alphanumeric() || "_./>-".contains(c));
    (ty_ok && name_ok).then_some((ty, name))
}

/// Type and name of a device op's framework provenance string.
fn framework_of(prov: &str) -> (String, String) {
    let prov = prov.split('#').next().unwrap_or(prov);
    let prov = prov.strip_suffix(':').unwrap_or(prov);
    if let Some((t, n)) = parse_tf_op(prov) {
        return (t.to_string(), n.to_string());
    }
    // JAX name-scope path: `jit(f)/jit(main)/add` → type `add`.
    let last = prov.rsplit('/').next().unwrap_or(prov);
    let ty = last.split('[').next().unwrap_or(last);
    (ty.to_string(), prov.to_string())
}

fn str_of(p: &Profile, v: Option<StatValue>) -> Option<StrId> {
    v.and_then(|v| v.as_str_id())
        .filter(|s| !p.str(*s).is_empty())
}

// Positions of the stats this layer reads in a per-event value array.
const F_FLOPS: usize = 0;
const F_BYTES: usize = 1;
const F_CATEGORY: usize = 2;
const F_PROGRAM: usize = 3;
const F_TF_OP: usize = 4;
const F_LEVEL0: usize = 5;
const F_SOURCE: usize = 6;
const F_HLO_OP: usize = 7;
const F_MODULE: usize = 8;
const N_FIELDS: usize = 9;
type Vals = [Option<StatValue>; N_FIELDS];

/// The stat keys this layer reads: a table from interned key to field + 1 (0: not read).
struct Keys {
    slots: Vec<u8>,
    tf_op: Option<StrId>,
    level0: Option<StrId>,
}

impl Keys {
    fn new(p: &Profile) -> Keys {
        let slots = crate::base::ops::events::stat_slots(
            p,
            &[
                ("flops", F_FLOPS as u8 + 1),
                ("bytes_accessed", F_BYTES as u8 + 1),
                ("hlo_category", F_CATEGORY as u8 + 1),
                ("program_id", F_PROGRAM as u8 + 1),
                ("tf_op", F_TF_OP as u8 + 1),
                ("level 0", F_LEVEL0 as u8 + 1),
                ("source", F_SOURCE as u8 + 1),
                ("hlo_op", F_HLO_OP as u8 + 1),
                ("hlo_module", F_MODULE as u8 + 1),
            ],
        );
        Keys {
            slots,
            tf_op: p.key("tf_op"),
            level0: p.key("level 0"),
        }
    }
    #[inline(always)]
    fn read(&self, stats: xlens_model::Stats<'_>, into: &mut Vals) {
        stats.select(
            |key| {
                let f = self.slots.get(key.0 as usize).copied().unwrap_or(0);
                (f != 0).then(|| f as usize - 1)
            },
            |f, v| into[f] = Some(v),
        );
    }
}

/// Provenance without allocating: an interned string, or an HLO op_name by index.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Prov {
    None,
    Str(StrId),
    Hlo(u32),
}

/// Op lines with fewer events in all are aggregated on one thread.
const PARALLEL_MIN_EVENTS: usize = 200_000;

/// What tells merged ops apart: metadata name, module, and provenance (kind and text).
type MergeKey = (StrId, StrId, u8, String);

/// The ops and devices of some op lines.
struct Partial {
    metrics: Vec<(MergeKey, OpMetric, Vec<StrId>)>,
    devices: Vec<DeviceTime>,
}

/// Aggregates `lines` (a part of the host's op lines, in order).
fn partial_metrics(
    p: &Profile,
    source: Option<OpSource>,
    k: &Keys,
    hlo: Option<&OpNames<'_>>,
    lines: &[(&Plane, &Line)],
) -> Partial {
    // HLO op_name per (module, op), as an index into `hlo_names` (computed once per op).
    let mut op_name_cache: FxMap<(StrId, StrId), Option<u32>> = FxMap::default();
    let mut hlo_names: Vec<String> = Vec::new();

    type Key = (StrId, StrId, Prov);
    type RawKey = (StrId, StrId, StrId, StrId, StrId);
    let mut index: FxMap<Key, u32> = FxMap::default();
    let mut raw_index: FxMap<RawKey, u32> = FxMap::default();
    // In front of `raw_index`: the last key seen per HLO op name (or event name), by interned id.
    let mut by_name: Vec<(RawKey, u32)> = Vec::new();
    let mut agg: Vec<(OpMetric, Vec<StrId>)> = Vec::new();
    let mut devices: Vec<DeviceTime> = Vec::new();
    let mut md_vals: (*const Plane, Vec<(bool, Vals)>) = (std::ptr::null(), Vec::new());
    // `md_vals`'s first fields alone, which every event asks (a table that stays in cache).
    let mut md_any_of: Vec<bool> = Vec::new();
    // Self times of the line at hand (one buffer for all lines).
    let mut self_buf: Vec<i64> = Vec::new();
    let hlo_op_key = p.key("hlo_op");
    for &(plane, line) in lines {
        let ev = &line.events;
        let device_st = device_self_times(p, line);
        // Host threads whose events mostly carry no stat (the Python thread of JAX profiles:
        // hundreds of thousands of events, a few of them XLA ops) have the self times of their
        // few ops computed one by one.
        let sparse = device_st.is_none()
            && source == Some(OpSource::HostXlaOps)
            && ev.stats_bytes() < ev.len();
        let self_times: &[i64] = match &device_st {
            Some(v) => v,
            None if sparse => &[],
            None => {
                ev.self_times_into(&mut self_buf);
                &self_buf
            }
        };
        let dev_name = if source == Some(OpSource::HostXlaOps) {
            format!("{} / {}", p.str(plane.name), p.str(line.name))
        } else {
            p.str(plane.name).to_string()
        };
        let dev_idx = match devices.iter().position(|d| d.name == dev_name) {
            Some(i) => i,
            None => {
                devices.push(DeviceTime {
                    name: dev_name,
                    ops: 0,
                    span_ps: 0,
                    busy_ps: 0,
                    idle_ps: 0,
                });
                devices.len() - 1
            }
        };
        let mut first = i64::MAX;
        let mut last = i64::MIN;
        // The stats this layer reads, per metadata (once per plane) and per event.
        if !std::ptr::eq(md_vals.0, plane) {
            md_vals = (
                plane,
                plane
                    .event_metadata
                    .iter()
                    .map(|m| {
                        let mut v = [None; N_FIELDS];
                        k.read(m.stats(), &mut v);
                        (v.iter().any(|x| x.is_some()), v)
                    })
                    .collect(),
            );
            md_any_of = md_vals.1.iter().map(|x| x.0).collect();
        }
        let (starts, durs, metas) = (ev.starts(), ev.durations(), ev.metadata_indices());
        let mut last_raw: Option<(RawKey, u32)> = None;
        for i in 0..ev.len() {
            let Some(&md_any) = md_any_of.get(metas[i] as usize) else {
                continue;
            };
            let stats = ev.stats(i);
            // Host threads: most events are no XLA op (no `hlo_op` stat), and many carry no
            // stats at all.
            if source == Some(OpSource::HostXlaOps)
                && !md_any
                && (stats.is_empty() || !hlo_op_key.is_some_and(|k| stats.has(k)))
            {
                continue;
            }
            let Some(md) = plane.event_metadata.get(metas[i] as usize) else {
                continue;
            };
            let mut vals: Vals = if md_any {
                md_vals.1[metas[i] as usize].1
            } else {
                [None; N_FIELDS]
            };
            k.read(stats, &mut vals);
            if source == Some(OpSource::HostXlaOps) && vals[F_HLO_OP].is_none() {
                continue;
            }
            if source == Some(OpSource::HostFrameworkOps) && parse_tf_op(p.str(md.name)).is_none() {
                continue;
            }
            let self_time = match self_times.get(i) {
                Some(&t) => t,
                None => ev.self_time(i),
            };
            let dur = durs[i];
            first = first.min(starts[i]);
            last = last.max(starts[i].saturating_add(dur));
            // The stats that decide which op this is, as interned ids: one map lookup per event
            // (none when it repeats the previous event's), the op's key derived once.
            let sid = |f: usize| vals[f].and_then(|v| v.as_str_id()).unwrap_or_default();
            let raw = (
                md.name,
                sid(F_MODULE),
                sid(F_TF_OP),
                sid(F_LEVEL0),
                sid(F_HLO_OP),
            );
            let slot = match last_raw {
                Some((lk, at)) if lk == raw => at,
                _ => {
                    let name_id = if raw.4 == StrId::default() {
                        raw.0
                    } else {
                        raw.4
                    };
                    let near = by_name
                        .get(name_id.0 as usize)
                        .filter(|x| x.1 != u32::MAX && x.0 == raw);
                    let at = match near.map(|x| x.1).or_else(|| raw_index.get(&raw).copied()) {
                        Some(at) => at,
                        None => {
                            let module = str_of(p, vals[F_MODULE]).unwrap_or_default();
                            let prov_key = provenance(
                                p,
                                &vals,
                                module,
                                hlo,
                                &mut op_name_cache,
                                &mut hlo_names,
                            );
                            let key = (md.name, module, prov_key);
                            let at = *index.entry(key).or_insert_with(|| {
                                agg.push((
                                    new_metric(p, md, module, prov_key, &hlo_names, &vals),
                                    Vec::new(),
                                ));
                                agg.len() as u32 - 1
                            });
                            raw_index.insert(raw, at);
                            at
                        }
                    };
                    last_raw = Some((raw, at));
                    let i = name_id.0 as usize;
                    if i < p.strings.len() {
                        if by_name.len() <= i {
                            by_name.resize(p.strings.len(), (Default::default(), u32::MAX));
                        }
                        by_name[i] = (raw, at);
                    }
                    at
                }
            };
            let (m, devs) = &mut agg[slot as usize];
            m.occurrences += 1;
            m.total_time_ps = m.total_time_ps.saturating_add(dur);
            m.self_time_ps = m.self_time_ps.saturating_add(self_time);
            m.min_time_ps = m.min_time_ps.min(dur);
            m.flops += vals[F_FLOPS].and_then(|v| v.as_f64()).unwrap_or(0.0);
            m.bytes_accessed += vals[F_BYTES].and_then(|v| v.as_f64()).unwrap_or(0.0);
            if !devs.contains(&plane.name) {
                devs.push(plane.name);
            }
            let d = &mut devices[dev_idx];
            d.ops += 1;
            d.busy_ps = d.busy_ps.saturating_add(self_time);
        }
        if first <= last {
            let span = &mut devices[dev_idx].span_ps;
            *span = span.saturating_add(last.saturating_sub(first));
        }
    }
    let mut keys: Vec<(Key, u32)> = index.into_iter().collect();
    keys.sort_unstable_by_key(|x| x.1);
    let metrics = keys
        .into_iter()
        .zip(agg)
        .map(|((key, _), (m, devs))| {
            let (kind, text) = match key.2 {
                Prov::None => (0, String::new()),
                Prov::Str(s) => (1, p.str(s).to_string()),
                Prov::Hlo(h) => (2, hlo_names.get(h as usize).cloned().unwrap_or_default()),
            };
            ((key.0, key.1, kind, text), m, devs)
        })
        .collect();
    Partial { metrics, devices }
}

/// Builds the op-metrics database of one host on two threads (see [`OpMetricsJob`]).
pub fn op_metrics(p: &Profile) -> OpMetricsDb {
    let job = OpMetricsJob::new(p);
    if job.events >= PARALLEL_MIN_EVENTS && job.lines.len() > 1 {
        crate::base::par::join(|| job.help(), || job.help());
    }
    job.finish()
}

/// The op metrics of one host as a queue of jobs, one per op line, that any number of threads
/// take from ([`OpMetricsJob::help`]) while they have nothing else to do; the lines' results
/// are merged in line order ([`OpMetricsJob::finish`]), so the result does not depend on which
/// thread took which line, nor on how many helped. The overview runs it beside the step
/// grouping: one thread starts on the lines while the other groups steps, then joins in.
pub struct OpMetricsJob<'a> {
    p: &'a Profile,
    source: Option<OpSource>,
    k: Keys,
    /// The HLO instructions' op names when ops carry no framework op of their own (JAX name
    /// scopes), read by the first thread that needs them.
    needs_hlo: bool,
    hlo: std::sync::OnceLock<OpNames<'a>>,
    lines: Vec<(&'a Plane, &'a Line)>,
    events: usize,
    /// Line indices, most work first (the last lines taken are the shortest).
    order: Vec<usize>,
    next: std::sync::atomic::AtomicUsize,
    parts: std::sync::Mutex<Vec<Option<Partial>>>,
}

impl<'a> OpMetricsJob<'a> {
    pub fn new(p: &'a Profile) -> Self {
        let k = Keys::new(p);
        let needs_hlo = k.tf_op.is_none() && k.level0.is_none();
        let (source, lines) = op_lines(p);
        // The work of a line: its events, and the bytes of their stats (host threads of JAX
        // profiles have lines of stat-less events, which cost little, next to lines of ops
        // with several stats each).
        let costs: Vec<usize> = lines
            .iter()
            .map(|(_, l)| l.events.len() * 8 + l.events.stats_bytes())
            .collect();
        let mut order: Vec<usize> = (0..lines.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(costs[i]));
        let events = lines.iter().map(|(_, l)| l.events.len()).sum();
        let parts = std::sync::Mutex::new((0..lines.len()).map(|_| None).collect());
        OpMetricsJob {
            p,
            source,
            k,
            needs_hlo,
            hlo: std::sync::OnceLock::new(),
            lines,
            events,
            order,
            next: std::sync::atomic::AtomicUsize::new(0),
            parts,
        }
    }

    fn hlo(&self) -> Option<&OpNames<'a>> {
        self.needs_hlo
            .then(|| self.hlo.get_or_init(|| OpNames::of(self.p)))
    }

    /// Aggregates lines nobody has taken yet, until none is left.
    pub fn help(&self) {
        loop {
            let at = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&i) = self.order.get(at) else {
                return;
            };
            let part = partial_metrics(
                self.p,
                self.source,
                &self.k,
                self.hlo(),
                &self.lines[i..i + 1],
            );
            if let Ok(mut parts) = self.parts.lock() {
                parts[i] = Some(part);
            }
        }
    }

    /// Aggregates what is left on this thread and merges the lines' results.
    pub fn finish(self) -> OpMetricsDb {
        self.help();
        let source = self.source;
        let parts: Vec<Partial> = match self.parts.into_inner() {
            Ok(parts) => parts.into_iter().flatten().collect(),
            // A helper panicked holding the lock (its panic reached its caller already).
            Err(poisoned) => poisoned.into_inner().into_iter().flatten().collect(),
        };
        merge_partials(source, parts)
    }
}

/// Merges the lines' results in line order.
fn merge_partials(source: Option<OpSource>, parts: Vec<Partial>) -> OpMetricsDb {
    // Merge in line order: the first part's ops first, each op keeping its first occurrence's
    // program, category and source.
    let mut index: HashMap<MergeKey, usize> = HashMap::new();
    let mut agg: Vec<(OpMetric, Vec<StrId>)> = Vec::new();
    let mut devices: Vec<DeviceTime> = Vec::new();
    for part in parts {
        for (key, m, devs) in part.metrics {
            match index.get(&key) {
                Some(&i) => {
                    let (t, tdevs) = &mut agg[i];
                    t.occurrences += m.occurrences;
                    t.total_time_ps = t.total_time_ps.saturating_add(m.total_time_ps);
                    t.self_time_ps = t.self_time_ps.saturating_add(m.self_time_ps);
                    t.min_time_ps = t.min_time_ps.min(m.min_time_ps);
                    t.flops += m.flops;
                    t.bytes_accessed += m.bytes_accessed;
                    for d in devs {
                        if !tdevs.contains(&d) {
                            tdevs.push(d);
                        }
                    }
                }
                None => {
                    index.insert(key, agg.len());
                    agg.push((m, devs));
                }
            }
        }
        for d in part.devices {
            match devices.iter_mut().find(|x| x.name == d.name) {
                Some(t) => {
                    t.ops += d.ops;
                    t.span_ps = t.span_ps.saturating_add(d.span_ps);
                    t.busy_ps = t.busy_ps.saturating_add(d.busy_ps);
                }
                None => devices.push(d),
            }
        }
    }
    for d in &mut devices {
        d.idle_ps = d.span_ps.saturating_sub(d.busy_ps).max(0);
    }
    let mut ops: Vec<OpMetric> = agg
        .into_iter()
        .map(|(mut m, devs)| {
            m.devices = devs.len();
            if m.min_time_ps == i64::MAX {
                m.min_time_ps = 0;
            }
            m
        })
        .collect();
    // Ties broken by name, then by what else tells ops apart, so the order never depends on the
    // order of first appearance.
    ops.sort_by(|a, b| {
        b.self_time_ps
            .cmp(&a.self_time_ps)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.module.cmp(&b.module))
            .then_with(|| a.framework_op.cmp(&b.framework_op))
            .then_with(|| a.long_name.cmp(&b.long_name))
    });
    OpMetricsDb {
        source,
        source_description: source.map(|s| s.describe()),
        total_self_time_ps: ops
            .iter()
            .map(|o| o.self_time_ps)
            .fold(0i64, i64::saturating_add),
        idle_ps: devices
            .iter()
            .map(|d| d.idle_ps)
            .fold(0i64, i64::saturating_add),
        total_flops: ops.iter().map(|o| o.flops).sum(),
        total_bytes_accessed: ops.iter().map(|o| o.bytes_accessed).sum(),
        ops,
        devices,
    }
}

/// Framework provenance of an op: `tf_op`, a GPU `level 0` annotation naming a TF op, else the
/// HLO instruction's `op_name` (the JAX name-scope path), else none.
fn provenance(
    p: &Profile,
    vals: &Vals,
    module: StrId,
    hlo: Option<&OpNames<'_>>,
    cache: &mut FxMap<(StrId, StrId), Option<u32>>,
    hlo_names: &mut Vec<String>,
) -> Prov {
    // GPU annotations (`level 0`) count only when they name a TF op.
    if let Some(s) = str_of(p, vals[F_TF_OP])
        .or_else(|| str_of(p, vals[F_LEVEL0]).filter(|s| parse_tf_op(p.str(*s)).is_some()))
    {
        return Prov::Str(s);
    }
    let (Some(idx), Some(op)) = (hlo, str_of(p, vals[F_HLO_OP])) else {
        return Prov::None;
    };
    let found = *cache.entry((module, op)).or_insert_with(|| {
        let n = idx.op_name(p.str(module), p.str(op))?;
        hlo_names.push(n.to_string());
        Some(hlo_names.len() as u32 - 1)
    });
    found.map_or(Prov::None, Prov::Hlo)
}

/// A new, empty metric for op `md` (its first occurrence's stats give program, category, source).
fn new_metric(
    p: &Profile,
    md: &xlens_model::EventMetadata,
    module: StrId,
    prov_key: Prov,
    hlo_names: &[String],
    vals: &Vals,
) -> OpMetric {
    let prov: Option<String> = match prov_key {
        Prov::None => None,
        Prov::Str(s) => Some(p.str(s).to_string()),
        Prov::Hlo(h) => hlo_names.get(h as usize).cloned(),
    };
    let (fw_type, fw_name) = match &prov {
        Some(s) => {
            let (t, n) = framework_of(s);
            (t, Some(n))
        }
        None => ("Unknown".to_string(), None),
    };
    let program_id = vals[F_PROGRAM].and_then(|v| match v {
        StatValue::U64(u) => Some(u),
        StatValue::I64(i) => Some(i as u64),
        _ => None,
    });
    let name_id = op_name(p, md);
    OpMetric {
        name: p.str(name_id).to_string(),
        long_name: (name_id != md.name).then(|| p.str(md.name).to_string()),
        module: (module != StrId::EMPTY).then(|| p.str(module).to_string()),
        program_id,
        category: str_of(p, vals[F_CATEGORY]).map(|s| p.str(s).to_string()),
        source: str_of(p, vals[F_SOURCE]).map(|s| p.str(s).to_string()),
        framework_op: fw_name,
        framework_type: fw_type,
        devices: 0,
        occurrences: 0,
        total_time_ps: 0,
        self_time_ps: 0,
        min_time_ps: i64::MAX,
        flops: 0.0,
        bytes_accessed: 0.0,
    }
}

/// Self times from the device's own clock (`device_offset_ps` / `device_duration_ps` stats, which
/// TPU ops carry and XProf uses) when every event of the line has them.
fn device_self_times(p: &Profile, line: &Line) -> Option<Vec<i64>> {
    let ko = p.key("device_offset_ps")?;
    let kd = p.key("device_duration_ps")?;
    let ev = &line.events;
    let mut spans = Vec::with_capacity(ev.len());
    for i in 0..ev.len() {
        let st = ev.stats(i);
        let o = st.get(ko)?.as_i64()?;
        let d = st.get(kd)?.as_i64()?;
        spans.push((o, d, i));
    }
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut out = vec![0i64; ev.len()];
    let mut stack: Vec<(usize, i64)> = Vec::new();
    for &(s, d, i) in &spans {
        out[i] = d;
        let e = s.saturating_add(d);
        while let Some(&(_, end)) = stack.last() {
            if end <= s {
                stack.pop();
            } else {
                break;
            }
        }
        if let Some(&(parent, end)) = stack.last() {
            let overlap = e.min(end) - s;
            if overlap > 0 {
                out[parent] -= overlap;
            }
        }
        stack.push((i, e));
    }
    for v in &mut out {
        *v = (*v).max(0);
    }
    Some(out)
}

#[cfg(test)]
mod tests;
