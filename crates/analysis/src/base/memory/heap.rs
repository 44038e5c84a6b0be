//! Memory viewer: the heap of one compiled program over its execution, from XLA's buffer
//! assignment (no runtime data involved).
//!
//! XLA records, per module, the buffer allocations it made, the logical buffers placed in them and
//! heap simulator traces: ALLOC / FREE / SHARE_WITH events in program order. Replaying the trace
//! gives the heap size at every program point and the buffers live at the peak. The replay and
//! its conventions are XProf's (`hlo_proto_to_memory_visualization_utils.cc`), so the numbers can
//! be compared with XProf's memory viewer:
//!
//! * **Trace.** The trace of the memory space's temporary allocation: every trace is attributed to
//!   the allocation of the buffer of its first event, and the first non-indefinite allocation of
//!   the memory space that has one gives it. Failing that, the trace with most events on buffers
//!   of the memory space. (When several temporary allocations have a trace, XProf's pick depends
//!   on hash-map order; we take the one with most events and say so in `warnings`.)
//! * **Reference counts.** ALLOC adds one to the buffer's canonical (root) buffer and the buffer's
//!   size to the heap. SHARE_WITH makes the buffer an alias of another one and adds one to the
//!   root; when that revives a root whose count had dropped to zero, the root's size is added
//!   again and the sharer is shown in its place. FREE subtracts one from the root and removes the
//!   root's size when the count reaches zero.
//! * **Positions.** `heap_series[k]` is the heap after the first `k` events (so there are
//!   `events + 1` points, the first before any event). `peak_position` is XProf's
//!   `peakHeapSizePosition`: the index of the event that first raised the heap to its maximum, so
//!   the peak value is at `heap_series[peak_position + 1]`.
//! * **Indefinite allocations.** Allocations live for the whole program — entry parameters,
//!   constants and maybe-live-out ones — are not in the trace. The size of each such allocation
//!   (of the memory space, with at least one known logical buffer) is added to every point of the
//!   series and to the peak, and its largest logical buffer is listed among the peak buffers
//!   (memory space 0 only). Thread-local allocations are left out of the heap and of the totals
//!   (only `non_reusable_bytes` counts them), as XProf 2.24 does.
//! * **Lifetimes** run from a buffer's ALLOC to the FREE that releases its memory. When a
//!   SHARE_WITH revives a released buffer, the revived stretch is the sharer's lifetime.
//! * **Unpadded** sizes are the sizes of the buffers' shapes with the default dense layout.

use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use xlens_proto::xla::heap_simulator_trace::event::Kind;
use xlens_proto::xla::{
    BufferAllocationProto, BufferAssignmentProto, HeapSimulatorTrace, HloInstructionProto,
};

use crate::base::hlo::modules::{
    buffer_subshape, dtype_name, shape_text, shape_unpadded_bytes, HloIndex, HloModule,
    SourceLocation,
};

mod buffers;
mod replay;
use buffers::*;
pub use replay::{replay, Replay, TraceBuffer};

/// Buffers smaller than this are grouped at the peak (XProf's threshold).
pub const SMALL_BUFFER_BYTES: i64 = 16 * 1024;
/// Above this many points the heap series is sampled for drawing.
pub const MAX_SERIES_POINTS: usize = 4096;

/// Peak memory against device capacity ([`crate::base::memory::headroom`] computes it).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Headroom {
    pub peak_bytes: i64,
    /// Where the peak comes from, e.g. `memory viewer: module jit_f(…)`.
    pub peak_source: String,
    pub capacity_bytes: i64,
    /// Where the capacity comes from.
    pub capacity_source: String,
    /// `peak / capacity`.
    pub used_fraction: f64,
    /// `capacity / peak`: how far the batch could grow if memory grew linearly with it.
    pub growth_factor: f64,
    /// The answer in one sentence.
    pub statement: String,
}

/// The memory viewer of one host: every module with its peak, and the selected module in detail.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemoryViewer {
    /// XLA memory space (color) analysed: 0 is device memory (HBM), 1 is often on-chip (VMEM).
    pub memory_space: i64,
    /// Every module, largest peak first.
    pub modules: Vec<ModuleSummary>,
    /// The module asked for (or the only one), in detail.
    pub selected: Option<ModuleMemory>,
    /// Why no module was selected when one was asked for.
    pub selection_error: Option<String>,
    /// Modules whose HLO could not be decoded.
    pub hlo_errors: Vec<String>,
    /// The selected module's peak (else the largest module's) against the device memory the
    /// profile states; `None` when it states none (see [`crate::base::memory::headroom`]).
    pub headroom: Option<Headroom>,
}

/// One module in the list.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleSummary {
    /// The producer's program name, e.g. `jit_f(12190760917235803885)`; select modules by it.
    pub name: String,
    pub module_name: String,
    pub program_id: Option<u64>,
    /// Peak heap including indefinite allocations (XProf's `peakHeapMib`, in bytes).
    pub peak_heap_bytes: i64,
    pub peak_position: usize,
    pub peak_instruction: Option<String>,
    pub trace_events: usize,
    /// Set when the module could not be analysed (no buffer assignment, inconsistent trace).
    pub error: Option<String>,
}

/// Which heap simulator trace was replayed and why.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TraceInfo {
    /// Index in `BufferAssignmentProto.heap_simulator_traces`.
    pub index: usize,
    pub events: usize,
    pub whole_module_simulation: bool,
    /// `allocation` (the trace of the memory space's temporary allocation) or `most_events`.
    pub chosen_by: &'static str,
    /// The allocation the trace belongs to, when chosen by allocation.
    pub allocation_index: Option<i64>,
    /// How many traces the buffer assignment holds.
    pub traces_in_module: usize,
}

/// Sums over the buffer allocations of the memory space (XProf's header figures).
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct AllocationTotals {
    /// Every allocation but the thread-local ones.
    pub total_allocation_bytes: i64,
    pub entry_parameters_bytes: i64,
    /// Thread-local and tuple allocations (XProf's "non-reusable").
    pub non_reusable_bytes: i64,
    pub maybe_live_out_bytes: i64,
    /// Entry-parameter, constant and maybe-live-out allocations (not thread-local).
    pub indefinite_allocation_bytes: i64,
    /// Thread-local allocations: counted as non-reusable, left out of every other figure.
    pub thread_local_bytes: i64,
    pub allocations: usize,
    pub indefinite_allocations: usize,
}

/// A logical buffer live at the peak.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PeakBuffer {
    pub logical_buffer_id: i64,
    pub size_bytes: i64,
    pub unpadded_size_bytes: i64,
    /// Defining instruction, with the shape index when the value is a tuple element: `fusion.3{1}`.
    pub instruction: String,
    pub opcode: String,
    pub shape: String,
    pub dtype: String,
    /// The framework op (`OpMetadata.op_name`), e.g. `jit(f)/jit(main)/dot_general`.
    pub op_name: String,
    pub source: Option<SourceLocation>,
    /// Parameter, Output, Thread-local, Constant or Temporary (from its allocation).
    pub category: &'static str,
    pub allocation_index: i64,
    /// Live for the whole program (not in the trace): no lifetime.
    pub indefinite: bool,
    /// First and last program point (trace event index) of its lifetime in the trace.
    pub lifetime_start: Option<usize>,
    pub lifetime_end: Option<usize>,
    /// Place in XProf's max-heap list (whole-program buffers first, then those live at the
    /// peak as the simulation allocated them): the order XProf keeps among equal sizes.
    #[serde(skip)]
    pub heap_order: usize,
}

/// Buffers below [`SMALL_BUFFER_BYTES`] live at the peak, grouped.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SmallBuffers {
    pub threshold_bytes: i64,
    pub count: usize,
    pub bytes: i64,
}

/// One point of the heap series.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SeriesPoint {
    /// Number of trace events applied (0 = before the first).
    pub index: usize,
    /// Heap including indefinite allocations.
    pub heap_bytes: i64,
    pub unpadded_heap_bytes: i64,
    /// The instruction of the next event (empty for the last point).
    pub instruction: String,
}

/// One module in detail.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleMemory {
    pub name: String,
    pub module_name: String,
    pub program_id: Option<u64>,
    pub entry_computation: String,
    pub memory_space: i64,
    /// `None` when the module has no trace for the memory space (only indefinite allocations).
    pub trace: Option<TraceInfo>,
    /// Peak heap: the trace's peak plus `indefinite_bytes`.
    pub peak_heap_bytes: i64,
    pub peak_unpadded_heap_bytes: i64,
    /// Peak of the trace alone (temporaries).
    pub peak_temp_heap_bytes: i64,
    /// Added to every point: sizes of the indefinite allocations (see the module docs).
    pub indefinite_bytes: i64,
    /// Index of the trace event at which the heap first reached its peak (0 without a trace).
    pub peak_position: usize,
    /// Instruction and computation of that event.
    pub peak_instruction: Option<String>,
    pub peak_computation: Option<String>,
    /// Buffers live at the peak of at least [`SMALL_BUFFER_BYTES`], largest first (ties by id).
    pub peak_buffers: Vec<PeakBuffer>,
    /// The smaller ones, grouped.
    pub small_buffers: SmallBuffers,
    pub totals: AllocationTotals,
    /// Heap series length before sampling (`trace events + 1`, 0 without a trace).
    pub series_points_total: usize,
    pub series_points_shown: usize,
    /// How `heap_series` was sampled from the full series.
    pub series_sampling: String,
    pub heap_series: Vec<SeriesPoint>,
    /// Largest scoped allocation an instruction asks for in this memory space (TPU backend
    /// configs' `used_scoped_memory_configs`; computed for memory space 1, as XProf does). Not
    /// included in the peak.
    pub max_scoped_allocation: Option<ScopedAllocation>,
    /// Inconsistencies met (and worked around) in the buffer assignment.
    pub warnings: Vec<String>,
}

/// A scoped (per-instruction scratch) allocation.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ScopedAllocation {
    pub bytes: i64,
    pub instruction: String,
}

/// The memory space whose scoped allocations are reported (on-chip VMEM on TPU).
const SCOPED_MEMORY_SPACE: i64 = 1;

/// The instruction with the largest `used_scoped_memory_configs` entry of `memory_space` in its
/// JSON backend config (first one on ties).
pub fn max_scoped_allocation(m: &HloModule, memory_space: i64) -> Option<ScopedAllocation> {
    fn int(v: Option<&serde_json::Value>) -> i64 {
        match v {
            Some(serde_json::Value::Number(n)) => n.as_i64().unwrap_or(0),
            Some(serde_json::Value::String(s)) => s.parse().unwrap_or(0),
            _ => 0,
        }
    }
    let mut best: Option<ScopedAllocation> = None;
    for c in &m.proto.hlo_module.as_ref()?.computations {
        for ins in &c.instructions {
            let cfg = &ins.backend_config;
            if cfg.is_empty() || cfg[0] != b'{' {
                continue;
            }
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(cfg) else {
                continue;
            };
            let Some(list) = v
                .get("used_scoped_memory_configs")
                .and_then(|x| x.as_array())
            else {
                continue;
            };
            for e in list {
                if int(e.get("memory_space")) != memory_space {
                    continue;
                }
                let size = int(e.get("size"));
                if size > best.as_ref().map_or(0, |b| b.bytes) {
                    best = Some(ScopedAllocation {
                        bytes: size,
                        instruction: ins.name.clone(),
                    });
                }
            }
        }
    }
    best
}

/// XProf's category of an allocation.
pub fn allocation_category(a: &BufferAllocationProto) -> &'static str {
    if a.is_entry_computation_parameter {
        "Parameter"
    } else if a.maybe_live_out {
        "Output"
    } else if a.is_thread_local {
        "Thread-local"
    } else if a.is_constant {
        "Constant"
    } else {
        "Temporary"
    }
}

/// Live for the whole program, hence not in the heap simulation: entry parameters, constants and
/// maybe-live-out allocations. Thread-local allocations (scratch of fused or called computations)
/// are left out of the heap altogether, as XProf does.
pub fn is_indefinite(a: &BufferAllocationProto) -> bool {
    !a.is_thread_local && (a.is_entry_computation_parameter || a.is_constant || a.maybe_live_out)
}

/// Picks the trace to replay for a memory space; see the module docs.
fn choose_trace(
    ba: &BufferAssignmentProto,
    bufs: &Buffers<'_>,
    color: i64,
    warnings: &mut Vec<String>,
) -> Option<TraceInfo> {
    let mut alloc_trace: Vec<Option<usize>> = vec![None; ba.buffer_allocations.len()];
    for (i, t) in ba.heap_simulator_traces.iter().enumerate() {
        let Some(first) = t.events.first() else {
            continue;
        };
        if let Some(&b) = bufs.by_id.get(&first.buffer_id) {
            alloc_trace[bufs.list[b].alloc] = Some(i);
        }
    }
    let events_of_color = |t: &HeapSimulatorTrace| {
        t.events
            .iter()
            .filter(|e| {
                bufs.by_id
                    .get(&e.buffer_id)
                    .is_some_and(|&b| bufs.list[b].color == color)
            })
            .count()
    };
    let candidates: Vec<(usize, usize)> = ba
        .buffer_allocations
        .iter()
        .enumerate()
        .filter(|(_, a)| a.color == color && !is_indefinite(a))
        .filter_map(|(ai, _)| alloc_trace[ai].map(|t| (ai, t)))
        .collect();
    let info = |index: usize, chosen_by, allocation_index| {
        let t = &ba.heap_simulator_traces[index];
        TraceInfo {
            index,
            events: t.events.len(),
            whole_module_simulation: t.whole_module_simulation,
            chosen_by,
            allocation_index,
            traces_in_module: ba.heap_simulator_traces.len(),
        }
    };
    if !candidates.is_empty() {
        let &(ai, ti) = candidates
            .iter()
            .max_by(|a, b| {
                let (ea, eb) = (
                    ba.heap_simulator_traces[a.1].events.len(),
                    ba.heap_simulator_traces[b.1].events.len(),
                );
                ea.cmp(&eb).then(b.1.cmp(&a.1))
            })
            .unwrap_or(&candidates[0]);
        if candidates.len() > 1 {
            warnings.push(format!(
                "{} temporary allocations of memory space {color} have a heap simulator trace; \
                 showing trace {ti} (most events). XProf's pick among them depends on hash-map order",
                candidates.len()
            ));
        }
        return Some(info(
            ti,
            "allocation",
            Some(ba.buffer_allocations[ai].index),
        ));
    }
    let mut best: Option<(usize, usize)> = None;
    for (i, t) in ba.heap_simulator_traces.iter().enumerate() {
        let n = events_of_color(t);
        if n > best.map_or(0, |b| b.1) {
            best = Some((i, n));
        }
    }
    best.map(|(i, _)| info(i, "most_events", None))
}

/// The memory of one module in one memory space.
pub fn module_memory(m: &HloModule, memory_space: i64) -> Result<ModuleMemory, String> {
    let ba = m
        .buffer_assignment()
        .ok_or_else(|| "the module has no buffer assignment".to_string())?;
    let mut warnings = Vec::new();
    let bufs = index_buffers(m, ba, &mut warnings);
    let color = memory_space;

    let trace = choose_trace(ba, &bufs, color, &mut warnings);
    let rep = match &trace {
        Some(t) => {
            let tb: Vec<TraceBuffer> = bufs
                .list
                .iter()
                .map(|x| TraceBuffer {
                    id: x.id,
                    size: x.size,
                    unpadded: x.unpadded,
                    allocation: x.alloc,
                })
                .collect();
            let r = replay(&ba.heap_simulator_traces[t.index], &tb)
                .map_err(|e| format!("heap simulator trace {}: {e}", t.index))?;
            if r.allocations_seen != 1 {
                warnings.push(format!(
                    "the trace's events touch {} allocations, not one; XProf refuses such a module",
                    r.allocations_seen
                ));
            }
            r
        }
        None => Replay::default(),
    };

    // Allocation totals and the indefinite allocations' largest buffers.
    let mut totals = AllocationTotals::default();
    let mut indefinite_bytes = 0i64;
    let mut peak_ids: Vec<(usize, bool)> = Vec::new();
    for a in &ba.buffer_allocations {
        if a.color != color {
            continue;
        }
        totals.allocations += 1;
        if a.is_thread_local || a.is_tuple {
            totals.non_reusable_bytes += a.size;
        }
        if a.is_thread_local {
            totals.thread_local_bytes += a.size;
            continue;
        }
        totals.total_allocation_bytes += a.size;
        if a.is_entry_computation_parameter {
            totals.entry_parameters_bytes += a.size;
        }
        if a.maybe_live_out {
            totals.maybe_live_out_bytes += a.size;
        }
        if !is_indefinite(a) {
            continue;
        }
        totals.indefinite_allocations += 1;
        totals.indefinite_allocation_bytes += a.size;
        let mut best: Option<usize> = None;
        for asg in &a.assigned {
            if let Some(&b) = bufs.by_id.get(&asg.logical_buffer_id) {
                if bufs.list[b].size > best.map_or(0, |x| bufs.list[x].size) {
                    best = Some(b);
                }
            }
        }
        if let Some(b) = best {
            indefinite_bytes += a.size;
            if color == 0 {
                peak_ids.push((b, true));
            }
        }
    }
    for id in &rep.live_at_peak {
        if let Some(&b) = bufs.by_id.get(id) {
            peak_ids.push((b, false));
        }
    }

    let mut peak_buffers = Vec::new();
    let mut small = SmallBuffers {
        threshold_bytes: SMALL_BUFFER_BYTES,
        count: 0,
        bytes: 0,
    };
    for (heap_order, (b, indefinite)) in peak_ids.into_iter().enumerate() {
        let x = &bufs.list[b];
        if x.size < SMALL_BUFFER_BYTES {
            small.count += 1;
            small.bytes += x.size;
            continue;
        }
        let alloc = &ba.buffer_allocations[x.alloc];
        let shape = x
            .instr
            .shape
            .as_ref()
            .map(|s| buffer_subshape(s, x.shape_index));
        let span = if indefinite {
            None
        } else {
            rep.spans.get(&x.id)
        };
        peak_buffers.push(PeakBuffer {
            logical_buffer_id: x.id,
            size_bytes: x.size,
            unpadded_size_bytes: x.unpadded,
            instruction: instruction_with_index(&x.instr.name, x.shape_index),
            opcode: x.instr.opcode.clone(),
            shape: shape.map(shape_text).unwrap_or_default(),
            dtype: shape
                .map(|s| dtype_name(s.element_type).to_string())
                .unwrap_or_default(),
            op_name: x
                .instr
                .metadata
                .as_ref()
                .map(|md| md.op_name.clone())
                .unwrap_or_default(),
            source: m.source_location(x.instr),
            category: allocation_category(alloc),
            allocation_index: alloc.index,
            indefinite,
            lifetime_start: span.map(|s| s.0),
            lifetime_end: span.map(|s| s.1),
            heap_order,
        });
    }
    peak_buffers.sort_by(|a, b| {
        b.size_bytes
            .cmp(&a.size_bytes)
            .then(a.logical_buffer_id.cmp(&b.logical_buffer_id))
    });

    let (peak_instruction, peak_computation) = match &trace {
        Some(t) => {
            let ev = ba.heap_simulator_traces[t.index]
                .events
                .get(rep.peak_position);
            (
                ev.map(|e| e.instruction_name.clone()),
                ev.map(|e| e.computation_name.clone()),
            )
        }
        None => (None, None),
    };
    let names: Vec<&str> = match &trace {
        Some(t) => ba.heap_simulator_traces[t.index]
            .events
            .iter()
            .map(|e| e.instruction_name.as_str())
            .collect(),
        None => Vec::new(),
    };
    let total = rep.heap.len();
    let (shown, sampling) = sample_series(&rep.heap, rep.peak_position + 1);
    let heap_series = shown
        .into_iter()
        .map(|k| SeriesPoint {
            index: k,
            heap_bytes: rep.heap[k] + indefinite_bytes,
            unpadded_heap_bytes: rep.unpadded[k] + indefinite_bytes,
            instruction: names.get(k).map(|s| s.to_string()).unwrap_or_default(),
        })
        .collect::<Vec<_>>();

    Ok(ModuleMemory {
        name: m.name.clone(),
        module_name: m.module_name.clone(),
        program_id: m.program_id,
        entry_computation: m
            .proto
            .hlo_module
            .as_ref()
            .map(|h| h.entry_computation_name.clone())
            .unwrap_or_default(),
        memory_space,
        trace,
        peak_heap_bytes: rep.peak_bytes + indefinite_bytes,
        peak_unpadded_heap_bytes: rep.peak_unpadded_bytes + indefinite_bytes,
        peak_temp_heap_bytes: rep.peak_bytes,
        indefinite_bytes,
        peak_position: rep.peak_position,
        peak_instruction,
        peak_computation,
        peak_buffers,
        small_buffers: small,
        totals,
        series_points_total: total,
        series_points_shown: heap_series.len(),
        series_sampling: sampling,
        heap_series,
        max_scoped_allocation: (memory_space == SCOPED_MEMORY_SPACE)
            .then(|| max_scoped_allocation(m, memory_space))
            .flatten(),
        warnings,
    })
}

/// `name{i,j}` for a tuple element, `name` otherwise (XProf's display name of a buffer).
fn instruction_with_index(name: &str, shape_index: &[i64]) -> String {
    if shape_index.is_empty() {
        name.to_string()
    } else {
        let idx: Vec<String> = shape_index.iter().map(|i| i.to_string()).collect();
        format!("{name}{{{}}}", idx.join(","))
    }
}

/// Indices of the points to draw: all of them up to [`MAX_SERIES_POINTS`], else the lowest and
/// highest point of each run of consecutive points (plus the peak), in order.
fn sample_series(heap: &[i64], peak_index: usize) -> (Vec<usize>, String) {
    let n = heap.len();
    if n <= MAX_SERIES_POINTS {
        return ((0..n).collect(), "none: every point".to_string());
    }
    let buckets = MAX_SERIES_POINTS / 2 - 1;
    let run = n.div_ceil(buckets);
    let mut out = Vec::with_capacity(MAX_SERIES_POINTS);
    for start in (0..n).step_by(run) {
        let end = (start + run).min(n);
        let (mut lo, mut hi) = (start, start);
        for k in start..end {
            if heap[k] < heap[lo] {
                lo = k;
            }
            if heap[k] > heap[hi] {
                hi = k;
            }
        }
        if (start..end).contains(&peak_index) && heap[peak_index] == heap[hi] {
            hi = peak_index;
        }
        let (a, b) = (lo.min(hi), lo.max(hi));
        out.push(a);
        if b != a {
            out.push(b);
        }
    }
    (
        out,
        format!("min and max of each run of {run} consecutive points (the peak is kept)"),
    )
}

/// Every module of `idx` analysed for `memory_space` ([`module_memory`]), in index order.
pub fn module_memories(idx: &HloIndex, memory_space: i64) -> Vec<Result<ModuleMemory, String>> {
    idx.modules
        .iter()
        .map(|m| module_memory(m, memory_space))
        .collect()
}

/// Every module's peak, and `module` (or the only module) in detail, on an already built index.
pub fn memory_viewer_of(idx: &HloIndex, module: Option<&str>, memory_space: i64) -> MemoryViewer {
    memory_viewer_from(
        idx,
        &module_memories(idx, memory_space),
        module,
        memory_space,
    )
}

/// [`memory_viewer_of`] from modules already analysed (`memories`, as [`module_memories`] gives).
pub fn memory_viewer_from(
    idx: &HloIndex,
    memories: &[Result<ModuleMemory, String>],
    module: Option<&str>,
    memory_space: i64,
) -> MemoryViewer {
    let mut selection_error = None;
    let target: Option<usize> = match module {
        Some(q) => match idx.find(q) {
            Ok(m) => idx.modules.iter().position(|x| std::ptr::eq(x, m)),
            Err(e) => {
                selection_error = Some(e);
                None
            }
        },
        None if idx.modules.len() == 1 => Some(0),
        None => None,
    };
    let mut selected = None;
    let mut modules = Vec::with_capacity(idx.modules.len());
    for (i, (m, mm)) in idx.modules.iter().zip(memories).enumerate() {
        let mut summary = ModuleSummary {
            name: m.name.clone(),
            module_name: m.module_name.clone(),
            program_id: m.program_id,
            peak_heap_bytes: 0,
            peak_position: 0,
            peak_instruction: None,
            trace_events: 0,
            error: None,
        };
        match mm {
            Ok(mm) => {
                summary.peak_heap_bytes = mm.peak_heap_bytes;
                summary.peak_position = mm.peak_position;
                summary.peak_instruction = mm.peak_instruction.clone();
                summary.trace_events = mm.trace.as_ref().map_or(0, |t| t.events);
                if target == Some(i) {
                    selected = Some(mm.clone());
                }
            }
            Err(e) => {
                if target == Some(i) {
                    selection_error = Some(format!("module {}: {e}", m.name));
                }
                summary.error = Some(e.clone());
            }
        }
        modules.push(summary);
    }
    modules.sort_by(|a, b| {
        b.peak_heap_bytes
            .cmp(&a.peak_heap_bytes)
            .then_with(|| a.name.cmp(&b.name))
    });
    MemoryViewer {
        memory_space,
        modules,
        selected,
        selection_error,
        hlo_errors: idx.errors.clone(),
        headroom: None,
    }
}
