//! Memory profile: the allocator timeline of a host, from the `MemoryAllocation` and
//! `MemoryDeallocation` events that TensorFlow's and PJRT's allocators write on the host plane.
//!
//! Each such event carries the allocator's state right after the (de)allocation: `bytes_allocated`
//! (heap in use), `bytes_reserved` (stack / reserved regions), `bytes_available` (free),
//! `fragmentation`, `peak_bytes_in_use` (the allocator's own lifetime peak), and what was
//! (de)allocated: `requested_bytes`, `allocation_bytes`, `addr`, `tf_op`, `region_type`,
//! `data_type`, `shape`, `group_id` (the step). Which allocator: `allocator_name`, else
//! `device_ordinal` / `index_on_host` (TPU); the last of these on an event names it, as in XProf.
//!
//! The conventions are XProf's (`xplane_to_memory_profile.cc`), so peaks compare with XProf's
//! memory profile:
//!
//! * **In use** is `bytes_allocated + bytes_reserved`. The **peak** is the event with the largest
//!   in-use figure, the last one on ties, visiting lines in file order and events in time order;
//!   capacity at the peak is in use plus `bytes_available`. Peak and totals are computed on every
//!   event; only the drawn `samples` are thinned.
//! * **Steps.** An event without `group_id` takes the step after the last known one (0 at the
//!   start). The peak's step is the step of the last event (in time) whose in-use figure equals
//!   the peak.
//! * **Live at the peak** are the allocations of the peak's step up to the peak that were not
//!   deallocated before it (matched by address). What is in use but not explained by them is
//!   shown as `unused preallocated device memory` (heap) and `stack` (reserved) rows. Identical
//!   allocations (same bytes, requested bytes, op, region, type, shape) are merged with a count.
//! * **Deallocations** inherit op, region, type and shape from the allocation at their address.
//!
//! Times are on the profile's axis (`time_ps`); `time_offset_ps` is XProf's figure (the event's
//! offset from its line's timestamp) for comparison.

use serde::Serialize;
use std::collections::HashMap;
use xlens_model::{Line, Profile, StatValue, Stats, StrId};

/// Plane XProf reads the allocator events from.
pub const HOST_PLANE: &str = "/host:CPU";
/// Above this many events per allocator the drawn timeline is sampled.
pub const MAX_SAMPLES: usize = 2000;
/// Live allocations listed at the peak (after merging identical ones); the rest are counted.
pub const MAX_ACTIVE_ROWS: usize = 500;

/// Memory statistics of one op name on one device (the TensorBoard plugin's table; PyTorch
/// traces, [`crate::base::pytorch::torch_memory`]).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct OpMemory {
    pub device: String,
    pub name: String,
    /// Operator slices of this name (on every thread).
    pub calls: u64,
    /// Sum of `Bytes` of the events directly in the op (allocations minus releases).
    pub self_increase_bytes: i64,
    pub self_allocation_bytes: i64,
    pub self_allocations: u64,
    /// The same, counting the events of the ops nested in it.
    pub increase_bytes: i64,
    pub allocation_bytes: i64,
    pub allocations: u64,
}

/// The allocators of one host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemoryProfile {
    /// Allocators, in name order (XProf's `memoryIds`).
    pub allocators: Vec<AllocatorProfile>,
    /// `MemoryAllocation` + `MemoryDeallocation` events read.
    pub events_total: usize,
    /// Which plane the events come from.
    pub plane: String,
    /// What kind of events: XSpace allocator events or PyTorch `[memory]` events.
    pub source: String,
    /// What the figures cannot show for this profile (e.g. no totals in an old PyTorch trace).
    pub notes: Vec<String>,
    /// PyTorch traces: memory per op and device ([`crate::base::pytorch::torch_memory`]); empty for XSpace.
    pub op_stats: Vec<OpMemory>,
    /// PyTorch traces: `[memory]` events in no op.
    pub op_stats_unattributed: usize,
}

/// Allocator state right after one event.
#[derive(Debug, Clone, Copy, Default, Serialize, schemars::JsonSchema)]
pub struct AllocatorState {
    /// `bytes_allocated`.
    pub heap_allocated_bytes: i64,
    /// `bytes_reserved`.
    pub stack_reserved_bytes: i64,
    /// `bytes_available`.
    pub free_bytes: i64,
    pub fragmentation: f64,
    /// The allocator's own lifetime peak (`peak_bytes_in_use` stat).
    pub allocator_peak_bytes: i64,
}

impl AllocatorState {
    /// Heap plus reserved: what XProf calls in use.
    pub fn in_use(&self) -> i64 {
        self.heap_allocated_bytes
            .saturating_add(self.stack_reserved_bytes)
    }
}

/// One point of the drawn timeline.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Sample {
    pub time_ps: i64,
    pub allocation: bool,
    /// `allocation_bytes` of the event.
    pub bytes: i64,
    #[serde(flatten)]
    pub state: AllocatorState,
}

/// One (de)allocation.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Activity {
    pub requested_bytes: i64,
    pub allocation_bytes: i64,
    pub address: u64,
    pub op: String,
    pub region_type: String,
    pub data_type: String,
    pub shape: String,
    pub step_id: i64,
}

/// An allocation live at the peak (identical ones merged).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LiveAllocation {
    #[serde(flatten)]
    pub activity: Activity,
    /// When it was allocated (the first of merged ones; `None` for the synthetic rows).
    pub time_ps: Option<i64>,
    pub occurrences: u64,
    /// `unused preallocated device memory` or `stack` rows, not real allocations.
    pub special: bool,
}

/// The peak of one allocator.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Peak {
    /// Heap plus reserved at the peak.
    pub bytes_in_use: i64,
    #[serde(flatten)]
    pub state: AllocatorState,
    pub time_ps: i64,
    /// XProf's `peakStatsTimePs`: the event's offset from its line's timestamp.
    pub time_offset_ps: i64,
    pub step_id: i64,
    /// In use plus free at the peak (XProf's `memoryCapacity`).
    pub memory_capacity_bytes: i64,
}

/// One allocator's timeline.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AllocatorProfile {
    pub name: String,
    pub allocations: usize,
    pub deallocations: usize,
    /// `peak_bytes_in_use` as the allocator reported it on its last event (its lifetime peak,
    /// which may predate the profile; XProf's `peakBytesUsageLifetime`).
    pub peak_bytes_usage_lifetime: i64,
    pub peak: Peak,
    /// Largest fragmentation seen (0..1) and when.
    pub max_fragmentation: f64,
    pub max_fragmentation_time_ps: i64,
    /// Allocations live at the peak, largest first (special rows included).
    pub live_at_peak: Vec<LiveAllocation>,
    /// Rows of `live_at_peak` before the cut to [`MAX_ACTIVE_ROWS`].
    pub live_at_peak_total: usize,
    /// Sum of bytes × occurrences over every live row (special rows included).
    pub live_at_peak_bytes: i64,
    /// Events of this allocator, and how many are in `samples`.
    pub samples_total: usize,
    pub samples_shown: usize,
    pub sampling: String,
    pub samples: Vec<Sample>,
}

struct Keys {
    alloc: Option<StrId>,
    dealloc: Option<StrId>,
    stats: HashMap<StrId, Field>,
}

#[derive(Clone, Copy)]
enum Field {
    MemoryId,
    Reserved,
    Allocated,
    Available,
    Fragmentation,
    PeakInUse,
    Requested,
    AllocationBytes,
    Address,
    TfOp,
    GroupId,
    RegionType,
    DataType,
    Shapes,
}

impl Keys {
    fn new(p: &Profile) -> Keys {
        let mut stats = HashMap::new();
        for (name, f) in [
            ("index_on_host", Field::MemoryId),
            ("device_ordinal", Field::MemoryId),
            ("allocator_name", Field::MemoryId),
            ("bytes_reserved", Field::Reserved),
            ("bytes_allocated", Field::Allocated),
            ("bytes_available", Field::Available),
            ("fragmentation", Field::Fragmentation),
            ("peak_bytes_in_use", Field::PeakInUse),
            ("requested_bytes", Field::Requested),
            ("allocation_bytes", Field::AllocationBytes),
            ("addr", Field::Address),
            ("tf_op", Field::TfOp),
            ("group_id", Field::GroupId),
            ("region_type", Field::RegionType),
            ("data_type", Field::DataType),
            ("shape", Field::Shapes),
        ] {
            if let Some(k) = p.key(name) {
                stats.insert(k, f);
            }
        }
        Keys {
            alloc: p.key("MemoryAllocation"),
            dealloc: p.key("MemoryDeallocation"),
            stats,
        }
    }
}

/// TensorFlow `DataType` names (`DataTypeString`), by enum value.
pub fn tf_data_type_name(v: i64) -> String {
    const NAMES: [&str; 31] = [
        "INVALID",
        "float",
        "double",
        "int32",
        "uint8",
        "int16",
        "int8",
        "string",
        "complex64",
        "int64",
        "bool",
        "qint8",
        "quint8",
        "qint32",
        "bfloat16",
        "qint16",
        "quint16",
        "uint16",
        "complex128",
        "half",
        "resource",
        "variant",
        "uint32",
        "uint64",
        "float8_e5m2",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e4m3b11fnuz",
        "float8_e5m2fnuz",
        "int4",
        "uint4",
    ];
    usize::try_from(v)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("unknown ({v})"))
}

/// One event as read.
struct Ev {
    time_ps: i64,
    offset_ps: i64,
    allocation: bool,
    state: AllocatorState,
    act: Activity,
    /// `group_id` was present.
    has_step: bool,
}

fn int(v: StatValue) -> i64 {
    match v {
        StatValue::U64(u) => u as i64,
        other => other.as_i64().unwrap_or(0),
    }
}

fn text(p: &Profile, v: StatValue) -> String {
    match v.as_str_id() {
        Some(s) => p.str(s).to_string(),
        None => v.display(&p.strings),
    }
}

/// The line's zero on the profile axis, so that `start - base` is XProf's `OffsetPs`.
fn line_base_ps(p: &Profile, line: &Line, profile_start_ns: Option<i64>) -> i64 {
    let mut abs = line.timestamp_ns as i128 * 1000;
    if p.origin_is_wall_clock && line.timestamp_ns < 1_000_000_000_000_000 {
        abs += profile_start_ns.unwrap_or(0) as i128 * 1000;
    }
    i64::try_from(abs - p.origin_ps).unwrap_or(0)
}

fn read_events(p: &Profile, keys: &Keys) -> (Vec<(String, Vec<Ev>)>, usize) {
    let mut by_alloc: Vec<(String, Vec<Ev>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut total = 0;
    let Some(plane) = p.plane(HOST_PLANE) else {
        return (by_alloc, 0);
    };
    if keys.alloc.is_none() && keys.dealloc.is_none() {
        return (by_alloc, 0);
    }
    let profile_start_ns = p.key("profile_start_time").and_then(|k| {
        p.planes
            .iter()
            .find(|pl| p.str(pl.name) == "Task Environment")
            .and_then(|pl| pl.stats().get(k))
            .and_then(|v| v.as_i64())
    });
    // Which metadata entries are (de)allocations.
    let kind: Vec<Option<bool>> = plane
        .event_metadata
        .iter()
        .map(|m| {
            if Some(m.name) == keys.alloc {
                Some(true)
            } else if Some(m.name) == keys.dealloc {
                Some(false)
            } else {
                None
            }
        })
        .collect();
    if kind.iter().all(Option::is_none) {
        return (by_alloc, 0);
    }
    for line in &plane.lines {
        let base = line_base_ps(p, line, profile_start_ns);
        let ev = &line.events;
        for i in 0..ev.len() {
            let mi = ev.meta(i) as usize;
            let Some(allocation) = kind.get(mi).copied().flatten() else {
                continue;
            };
            total += 1;
            let mut e = Ev {
                time_ps: ev.start(i),
                offset_ps: ev.start(i).saturating_sub(base),
                allocation,
                state: AllocatorState::default(),
                act: Activity {
                    requested_bytes: 0,
                    allocation_bytes: 0,
                    address: 0,
                    op: String::new(),
                    region_type: String::new(),
                    data_type: String::new(),
                    shape: String::new(),
                    step_id: -1,
                },
                has_step: false,
            };
            let mut memory_id = String::new();
            let meta_stats = plane
                .event_metadata
                .get(mi)
                .map(|m| m.stats())
                .unwrap_or_else(|| Stats::new(&[]));
            for st in ev.stats(i).iter().chain(meta_stats.iter()) {
                let Some(f) = keys.stats.get(&st.key) else {
                    continue;
                };
                let v = st.value;
                match f {
                    Field::MemoryId => {
                        memory_id = match v.as_str_id() {
                            Some(s) => p.str(s).to_string(),
                            None => int(v).to_string(),
                        }
                    }
                    Field::Reserved => e.state.stack_reserved_bytes = int(v),
                    Field::Allocated => e.state.heap_allocated_bytes = int(v),
                    Field::Available => e.state.free_bytes = int(v),
                    Field::Fragmentation => e.state.fragmentation = v.as_f64().unwrap_or(0.0),
                    Field::PeakInUse => e.state.allocator_peak_bytes = int(v),
                    Field::Requested => e.act.requested_bytes = int(v),
                    Field::AllocationBytes => e.act.allocation_bytes = int(v),
                    Field::Address => e.act.address = int(v) as u64,
                    Field::TfOp => e.act.op = text(p, v),
                    Field::GroupId => {
                        e.act.step_id = int(v);
                        e.has_step = true;
                    }
                    Field::RegionType => e.act.region_type = text(p, v),
                    Field::DataType => {
                        e.act.data_type = match v.as_str_id() {
                            Some(s) => p.str(s).to_string(),
                            None => tf_data_type_name(int(v)),
                        }
                    }
                    Field::Shapes => e.act.shape = text(p, v),
                }
            }
            if e.act.data_type.is_empty() {
                e.act.data_type = tf_data_type_name(0);
            }
            let slot = *index.entry(memory_id.clone()).or_insert_with(|| {
                by_alloc.push((memory_id, Vec::new()));
                by_alloc.len() - 1
            });
            by_alloc[slot].1.push(e);
        }
    }
    (by_alloc, total)
}

/// Which of `n` events (in time order) to draw: the min and max `in_use` of each run of
/// consecutive events, and the peak; and how that was chosen.
pub fn sample_indices(
    n: usize,
    in_use: impl Fn(usize) -> i64,
    peak: usize,
) -> (Vec<usize>, String) {
    if n <= MAX_SAMPLES {
        return ((0..n).collect(), "none: every event".to_string());
    }
    let run = n.div_ceil(MAX_SAMPLES / 2 - 1);
    let mut out = Vec::with_capacity(MAX_SAMPLES);
    for start in (0..n).step_by(run) {
        let end = (start + run).min(n);
        let (mut lo, mut hi) = (start, start);
        for k in start..end {
            if in_use(k) < in_use(lo) {
                lo = k;
            }
            if in_use(k) > in_use(hi) {
                hi = k;
            }
        }
        if (start..end).contains(&peak) {
            hi = peak;
        }
        let (a, b) = (lo.min(hi), lo.max(hi));
        out.push(a);
        if b != a {
            out.push(b);
        }
    }
    (
        out,
        format!("min and max in use of each run of {run} consecutive events (the peak is kept)"),
    )
}

fn allocator_profile(name: String, evs: Vec<Ev>) -> AllocatorProfile {
    // Peak and lifetime figure in XProf's visiting order (lines in file order, events in time).
    let mut peak_i = 0usize;
    let mut peak_bytes = 0i64;
    for (i, e) in evs.iter().enumerate() {
        if e.state.in_use() >= peak_bytes {
            peak_bytes = e.state.in_use();
            peak_i = i;
        }
    }
    let peak_bytes_usage_lifetime = evs.last().map_or(0, |e| e.state.allocator_peak_bytes);
    let peak_event_time = evs.get(peak_i).map_or(0, |e| e.time_ps);
    let peak_state = evs.get(peak_i).map(|e| e.state).unwrap_or_default();
    let peak_offset = evs.get(peak_i).map_or(0, |e| e.offset_ps);

    // Time order (stable: ties keep the visiting order).
    let mut order: Vec<usize> = (0..evs.len()).collect();
    order.sort_by_key(|&i| evs[i].time_ps);
    let peak_pos = order.iter().position(|&i| i == peak_i).unwrap_or(0);
    let mut evs: Vec<Option<Ev>> = evs.into_iter().map(Some).collect();
    let mut evs: Vec<Ev> = order.iter().filter_map(|&i| evs[i].take()).collect();

    // Steps: fill the missing ones; deallocations inherit the allocation's description.
    let mut last_step = -1i64;
    for e in evs.iter_mut() {
        if e.has_step {
            last_step = e.act.step_id;
        } else {
            e.act.step_id = last_step + 1;
        }
    }
    let mut by_addr: HashMap<u64, usize> = HashMap::new();
    for i in 0..evs.len() {
        let addr = evs[i].act.address;
        if evs[i].allocation {
            by_addr.entry(addr).or_insert(i);
        } else if let Some(a) = by_addr.remove(&addr) {
            let (op, region, dtype, shape) = {
                let x = &evs[a].act;
                (
                    x.op.clone(),
                    x.region_type.clone(),
                    x.data_type.clone(),
                    x.shape.clone(),
                )
            };
            let d = &mut evs[i].act;
            d.op = op;
            d.region_type = region;
            d.data_type = dtype;
            d.shape = shape;
        }
    }
    let peak_step = evs
        .iter()
        .rev()
        .find(|e| e.state.in_use() == peak_bytes)
        .map_or(0, |e| e.act.step_id);

    // Live at the peak.
    let mut unmapped_alloc = peak_state.heap_allocated_bytes;
    let mut unmapped_dealloc = 0i64;
    let mut live: HashMap<u64, usize> = HashMap::new();
    for (i, e) in evs.iter().enumerate() {
        if e.time_ps > peak_event_time {
            break;
        }
        if e.act.step_id != peak_step {
            continue;
        }
        // Saturating: the figures come from the file as written (any i64).
        if e.allocation {
            live.insert(e.act.address, i);
            unmapped_alloc = unmapped_alloc.saturating_sub(e.act.allocation_bytes);
        } else {
            if live.remove(&e.act.address).is_none() {
                unmapped_dealloc = unmapped_dealloc.saturating_add(e.act.allocation_bytes);
            }
            unmapped_alloc = unmapped_alloc.saturating_add(e.act.allocation_bytes);
        }
    }
    unmapped_alloc = unmapped_alloc.saturating_sub(unmapped_dealloc);
    let mut rows: Vec<LiveAllocation> = live
        .values()
        .map(|&i| LiveAllocation {
            activity: evs[i].act.clone(),
            time_ps: Some(evs[i].time_ps),
            occurrences: 1,
            special: false,
        })
        .collect();
    let special = |bytes: i64, op: &str, region: &str| LiveAllocation {
        activity: Activity {
            requested_bytes: bytes,
            allocation_bytes: bytes,
            address: 0,
            op: op.to_string(),
            region_type: region.to_string(),
            data_type: tf_data_type_name(0),
            shape: "unknown".to_string(),
            step_id: peak_step,
        },
        time_ps: None,
        occurrences: 1,
        special: true,
    };
    if unmapped_alloc > 0 {
        rows.push(special(
            unmapped_alloc,
            "unused preallocated device memory",
            "persist/dynamic",
        ));
    }
    if peak_state.stack_reserved_bytes > 0 {
        rows.push(special(peak_state.stack_reserved_bytes, "stack", "stack"));
    }
    let key = |r: &LiveAllocation| {
        let a = &r.activity;
        (
            std::cmp::Reverse(a.allocation_bytes),
            std::cmp::Reverse(a.requested_bytes),
            a.op.clone(),
            a.region_type.clone(),
            a.data_type.clone(),
            a.shape.clone(),
        )
    };
    rows.sort_by(|a, b| key(a).cmp(&key(b)).then(a.time_ps.cmp(&b.time_ps)));
    let mut merged: Vec<LiveAllocation> = Vec::new();
    for r in rows {
        match merged.last_mut() {
            Some(m) if key(m) == key(&r) => m.occurrences += 1,
            _ => merged.push(r),
        }
    }
    let (live_at_peak_total, live_at_peak_bytes) = cut_live_rows(&mut merged);

    let (mut max_frag, mut max_frag_t) = (0.0f64, 0i64);
    for e in &evs {
        if e.state.fragmentation > max_frag {
            max_frag = e.state.fragmentation;
            max_frag_t = e.time_ps;
        }
    }
    let (shown, sampling) = sample_indices(evs.len(), |i| evs[i].state.in_use(), peak_pos);
    let samples: Vec<Sample> = shown
        .iter()
        .map(|&i| Sample {
            time_ps: evs[i].time_ps,
            allocation: evs[i].allocation,
            bytes: evs[i].act.allocation_bytes,
            state: evs[i].state,
        })
        .collect();
    AllocatorProfile {
        name,
        allocations: evs.iter().filter(|e| e.allocation).count(),
        deallocations: evs.iter().filter(|e| !e.allocation).count(),
        peak_bytes_usage_lifetime,
        peak: Peak {
            bytes_in_use: peak_bytes,
            state: peak_state,
            time_ps: peak_event_time,
            time_offset_ps: peak_offset,
            step_id: peak_step,
            memory_capacity_bytes: peak_bytes.saturating_add(peak_state.free_bytes),
        },
        max_fragmentation: max_frag,
        max_fragmentation_time_ps: max_frag_t,
        live_at_peak: merged,
        live_at_peak_total,
        live_at_peak_bytes,
        samples_total: evs.len(),
        samples_shown: samples.len(),
        sampling,
        samples,
    }
}

/// Counts the merged rows live at a peak and their bytes (each row's bytes × occurrences), then
/// keeps the first [`MAX_ACTIVE_ROWS`]: (rows before the cut, bytes).
pub fn cut_live_rows(merged: &mut Vec<LiveAllocation>) -> (usize, i64) {
    let total = merged.len();
    let bytes = merged
        .iter()
        .map(|r| {
            r.activity
                .allocation_bytes
                .saturating_mul(r.occurrences as i64)
        })
        .fold(0i64, i64::saturating_add);
    merged.truncate(MAX_ACTIVE_ROWS);
    (total, bytes)
}

/// The memory profile of one host's XSpace allocator events (no allocators when it has none;
/// [`crate::base::memory::profile::memory_profile`] then reads PyTorch `[memory]` events).
pub fn xspace_memory_profile(p: &Profile) -> MemoryProfile {
    let keys = Keys::new(p);
    let (by_alloc, events_total) = read_events(p, &keys);
    let mut allocators: Vec<AllocatorProfile> = by_alloc
        .into_iter()
        .map(|(name, evs)| allocator_profile(name, evs))
        .collect();
    allocators.sort_by(|a, b| a.name.cmp(&b.name));
    MemoryProfile {
        allocators,
        events_total,
        plane: HOST_PLANE.to_string(),
        source: "XSpace allocator events (MemoryAllocation / MemoryDeallocation)".to_string(),
        notes: Vec::new(),
        op_stats: Vec::new(),
        op_stats_unattributed: 0,
    }
}

/// Largest `bytes_in_use + bytes_available` any allocator reported at its peak: the device
/// memory the allocators saw (e.g. HBM of a TPU core), when the profile has allocator events.
pub fn allocator_capacity_bytes(mp: &MemoryProfile) -> Option<i64> {
    mp.allocators
        .iter()
        .map(|a| a.peak.memory_capacity_bytes)
        .filter(|&c| c > 0)
        .max()
}
