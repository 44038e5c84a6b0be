//! Memory profile of a PyTorch (Kineto) trace: the `[memory]` instant events that
//! `torch.profiler.profile(profile_memory=True)` writes on the thread that (de)allocated.
//!
//! Each event's `args`: `Bytes` (positive for an allocation, negative for a release),
//! `Device Type` (c10's enum: 0 CPU, 1 CUDA) and `Device Id`; since PyTorch 1.10 also `Addr`,
//! `Total Allocated` and `Total Reserved` (the caching allocator's figures after the event).
//!
//! * **Allocators** are devices, named as the PyTorch TensorBoard plugin names them (`CPU`,
//!   `GPU0`, ...). In use is `Total Allocated`; where the trace has it, `Total Reserved` minus
//!   that is the free (cached) memory, so capacity at the peak is what the allocator reserved.
//!   A trace without `Total Allocated` (before 1.10) gives only deltas: in use is then the
//!   running sum of `Bytes` from the first event, memory allocated before the capture is not in
//!   it (it can go below zero), and the profile says so in `notes`.
//! * **Peak**: the largest in use, the last one on ties, in time order.
//! * **Ops**: an event belongs to the innermost slice of its thread open at its time (start
//!   inclusive, end exclusive). When that slice is an operator (category `cpu_op` / `Operator`,
//!   except `ProfilerStep#N`, `Optimizer.*` and the `(Distributed)DataParallel.forward`
//!   wrappers), the op's *self* figures count it, and every enclosing operator's *total* figures
//!   too; events in no op (or whose innermost slice is something else, e.g. a Python function)
//!   are counted as unattributed. These are the TensorBoard plugin's "memory statistics"
//!   (self / total size increase, allocation size, allocation count, calls).
//! * **Live at the peak** (traces with `Addr`): allocations made before the peak, in any step,
//!   not released by then (matched by address), with the op that made them; in use at the peak
//!   beyond them was allocated before the capture began.

use std::collections::HashMap;
use xlens_model::{Profile, StatValue};

pub use crate::base::memory::allocators::OpMemory;
use crate::base::memory::allocators::{
    cut_live_rows, sample_indices, Activity, AllocatorProfile, AllocatorState, LiveAllocation,
    MemoryProfile, Peak, Sample, HOST_PLANE,
};

/// The device name of a `[memory]` event, as the TensorBoard plugin writes it.
fn device_name(ty: i64, id: i64) -> String {
    match ty {
        0 => "CPU".to_string(),
        1 => format!("GPU{id}"),
        _ => format!("device type {ty} id {id}"),
    }
}

/// Whether a slice is a node of the op tree that memory events are attributed in: operators,
/// `ProfilerStep#N`, Python (`python`) events, and Python functions that are modules (with a
/// `Python module id`), as in the TensorBoard plugin. Runtime calls (`cudaMalloc`), kernels,
/// plain Python functions and other user annotations are not: an event inside one belongs to
/// what encloses it.
fn is_tree_node(cat: &str, name: &str, module: bool) -> bool {
    match cat {
        "cpu_op" | "Operator" | "operator" | "python" | "Python" => true,
        "user_annotation" => name.starts_with("ProfilerStep#"),
        "python_function" => module,
        _ => false,
    }
}

/// Whether a slice named `name` with category `cat` is an operator for the memory tables.
fn is_operator(cat: &str, name: &str) -> bool {
    let excluded = name.starts_with("ProfilerStep#")
        || name.starts_with("Optimizer.")
        || (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__"))
        || name.starts_with("enumerate(DataPipe)#")
        || name == "DataParallel.forward"
        || name == "DistributedDataParallel.forward";
    matches!(cat, "cpu_op" | "Operator" | "operator") && !excluded
}

/// A slice of the op tree of one thread.
struct Node<'a> {
    name: &'a str,
    /// Category `cpu_op` / `Operator` (the merge rule's test).
    operator_cat: bool,
    /// Counts in the op table ([`is_operator`]).
    operator: bool,
    parent: Option<usize>,
    children: u32,
}

struct Record {
    time_ps: i64,
    device: String,
    bytes: i64,
    total_allocated: Option<i64>,
    total_reserved: Option<i64>,
    addr: Option<u64>,
    op: Option<String>,
}

/// The memory profile from `[memory]` events; `None` when the host plane has none.
pub fn torch_memory_profile(p: &Profile) -> Option<MemoryProfile> {
    let plane = p.plane(HOST_PLANE)?;
    let mem_meta: Vec<bool> = plane
        .event_metadata
        .iter()
        .map(|m| p.str(m.name) == "[memory]")
        .collect();
    if !mem_meta.iter().any(|&b| b) {
        return None;
    }
    let key = |n: &str| p.key(n);
    let k_module = key("Python module id");
    let (k_bytes, k_type, k_id, k_addr, k_total, k_reserved, k_cat) = (
        key("Bytes"),
        key("Device Type"),
        key("Device Id"),
        key("Addr"),
        key("Total Allocated"),
        key("Total Reserved"),
        key("cat"),
    );
    let int = |v: StatValue| match v {
        StatValue::U64(u) => i64::try_from(u).ok(),
        StatValue::F64(f) if f.is_finite() => Some(f as i64),
        other => other.as_i64(),
    };
    let mut records: Vec<Record> = Vec::new();
    // (device, op name) -> figures; calls by op name.
    let mut ops: HashMap<(String, String), OpMemory> = HashMap::new();
    let mut calls: HashMap<String, u64> = HashMap::new();
    let mut unattributed = 0usize;
    for line in &plane.lines {
        let ev = &line.events;
        // The line's op tree (tree nodes only), and its memory events with the innermost node
        // open at their time.
        let mut nodes: Vec<Node> = Vec::new();
        let mut open: Vec<(i64, usize)> = Vec::new();
        let mut mem: Vec<(Option<usize>, Record)> = Vec::new();
        for i in 0..ev.len() {
            let mi = ev.meta(i) as usize;
            let name = plane.event_metadata.get(mi).map_or("", |m| p.str(m.name));
            let t = ev.start(i);
            while open.last().is_some_and(|&(end, _)| end <= t) {
                open.pop();
            }
            let stats = ev.stats(i);
            if !mem_meta.get(mi).copied().unwrap_or(false) {
                let cat = k_cat
                    .and_then(|k| stats.get(k))
                    .and_then(|v| v.as_str_id())
                    .map_or("", |s| p.str(s));
                let module = k_module.is_some_and(|k| stats.has(k));
                if is_tree_node(cat, name, module) {
                    let parent = open.last().map(|&(_, n)| n);
                    if let Some(pn) = parent {
                        nodes[pn].children += 1;
                    }
                    nodes.push(Node {
                        name,
                        operator_cat: matches!(cat, "cpu_op" | "Operator" | "operator"),
                        operator: is_operator(cat, name),
                        parent,
                        children: 0,
                    });
                    open.push((ev.end(i), nodes.len() - 1));
                }
                continue;
            }
            let (mut bytes, mut ty, mut id) = (0i64, -1i64, -1i64);
            let (mut addr, mut total, mut reserved) = (None, None, None);
            for s in stats.iter() {
                let k = Some(s.key);
                if k == k_bytes {
                    bytes = int(s.value).unwrap_or(0);
                } else if k == k_type {
                    ty = int(s.value).unwrap_or(-1);
                } else if k == k_id {
                    id = int(s.value).unwrap_or(-1);
                } else if k == k_addr {
                    addr = int(s.value).map(|a| a as u64);
                } else if k == k_total {
                    total = int(s.value);
                } else if k == k_reserved {
                    reserved = int(s.value);
                }
            }
            let rec = Record {
                time_ps: t,
                device: device_name(ty, id),
                bytes,
                total_allocated: total,
                total_reserved: reserved,
                addr,
                op: None,
            };
            mem.push((open.last().map(|&(_, n)| n), rec));
        }
        // An operator that is its parent operator's only child, under the same name, is merged
        // into it (the autograd profiler's and the TensorBoard plugin's rule).
        let mut alias: Vec<usize> = Vec::with_capacity(nodes.len());
        for (n, node) in nodes.iter().enumerate() {
            let merged = node.parent.filter(|&pn| {
                let pa = &nodes[pn];
                pa.children == 1 && pa.name == node.name && pa.operator_cat && node.operator_cat
            });
            alias.push(merged.map_or(n, |pn| alias[pn]));
        }
        for (n, node) in nodes.iter().enumerate() {
            if node.operator && alias[n] == n {
                *calls.entry(node.name.to_string()).or_default() += 1;
            }
        }
        for (innermost, mut rec) in mem {
            let owner = innermost.map(|n| alias[n]).filter(|&n| nodes[n].operator);
            let Some(owner) = owner else {
                unattributed += 1;
                records.push(rec);
                continue;
            };
            let bytes = rec.bytes;
            let alloc = bytes > 0;
            let mut add = |name: &str, own: bool| {
                let e = ops
                    .entry((rec.device.clone(), name.to_string()))
                    .or_insert_with(|| OpMemory {
                        device: rec.device.clone(),
                        name: name.to_string(),
                        ..OpMemory::default()
                    });
                if own {
                    e.self_increase_bytes = e.self_increase_bytes.saturating_add(bytes);
                }
                e.increase_bytes = e.increase_bytes.saturating_add(bytes);
                if alloc {
                    if own {
                        e.self_allocation_bytes = e.self_allocation_bytes.saturating_add(bytes);
                        e.self_allocations += 1;
                    }
                    e.allocation_bytes = e.allocation_bytes.saturating_add(bytes);
                    e.allocations += 1;
                }
            };
            add(nodes[owner].name, true);
            // Every enclosing operator (merged nodes once).
            let mut cur = nodes[owner].parent;
            let mut last = owner;
            while let Some(n) = cur {
                let a = alias[n];
                if a != last && nodes[a].operator {
                    add(nodes[a].name, false);
                }
                last = a;
                cur = nodes[n].parent;
            }
            if alloc {
                rec.op = Some(nodes[owner].name.to_string());
            }
            records.push(rec);
        }
    }
    let events_total = records.len();
    let mut notes = Vec::new();
    if records.iter().any(|r| r.total_allocated.is_none()) {
        notes.push(format!(
            "{} of {} [memory] events have no `Total Allocated` (PyTorch before 1.10): in use is the running sum of `Bytes` from the first event of each device, so memory allocated before the capture is not in it and it can go below zero",
            records.iter().filter(|r| r.total_allocated.is_none()).count(),
            events_total
        ));
    }
    if records.iter().any(|r| r.addr.is_none()) {
        notes.push(
            "events without `Addr` (PyTorch before 1.10) cannot be matched to their release: no allocations are listed as live at the peak"
                .to_string(),
        );
    }
    if unattributed > 0 {
        notes.push(format!(
            "{unattributed} of {events_total} [memory] events are in no operator (outside ops, or directly in a Python function or annotation): counted in the timeline, not in the op table"
        ));
    }
    // Steps from `ProfilerStep#N` slices, for the peak's step.
    let steps = profiler_steps(p);
    let mut by_device: Vec<(String, Vec<Record>)> = Vec::new();
    {
        let mut index: HashMap<String, usize> = HashMap::new();
        for r in records {
            let slot = *index.entry(r.device.clone()).or_insert_with(|| {
                by_device.push((r.device.clone(), Vec::new()));
                by_device.len() - 1
            });
            by_device[slot].1.push(r);
        }
    }
    let mut allocators: Vec<AllocatorProfile> = by_device
        .into_iter()
        .map(|(name, recs)| device_profile(name, recs, &steps))
        .collect();
    allocators.sort_by(|a, b| a.name.cmp(&b.name));
    let mut op_stats: Vec<OpMemory> = ops
        .into_values()
        .filter(|o| {
            o.self_increase_bytes != 0
                || o.self_allocation_bytes != 0
                || o.self_allocations != 0
                || o.increase_bytes != 0
                || o.allocation_bytes != 0
                || o.allocations != 0
        })
        .map(|mut o| {
            o.calls = calls.get(&o.name).copied().unwrap_or(0);
            o
        })
        .collect();
    op_stats.sort_by(|a, b| {
        a.device
            .cmp(&b.device)
            .then(b.increase_bytes.cmp(&a.increase_bytes))
            .then_with(|| a.name.cmp(&b.name))
    });
    Some(MemoryProfile {
        allocators,
        events_total,
        plane: HOST_PLANE.to_string(),
        source: "PyTorch profiler [memory] events".to_string(),
        notes,
        op_stats_unattributed: unattributed,
        op_stats,
    })
}

/// `ProfilerStep#N` slices of the host plane: (start, end, N), by start.
fn profiler_steps(p: &Profile) -> Vec<(i64, i64, i64)> {
    let mut out = Vec::new();
    let Some(plane) = p.plane(HOST_PLANE) else {
        return out;
    };
    for line in &plane.lines {
        let ev = &line.events;
        for i in 0..ev.len() {
            let name = plane.metadata_of(line, i).map_or("", |m| p.str(m.name));
            if let Some(n) = name
                .strip_prefix("ProfilerStep#")
                .and_then(|n| n.parse::<i64>().ok())
            {
                out.push((ev.start(i), ev.end(i), n));
            }
        }
    }
    out.sort_unstable();
    out
}

/// The step whose `ProfilerStep#N` slice holds `t`; -1 outside every step.
fn step_at(steps: &[(i64, i64, i64)], t: i64) -> i64 {
    let k = steps.partition_point(|s| s.0 <= t);
    steps[..k]
        .iter()
        .rev()
        .find(|s| t < s.1)
        .map_or(-1, |s| s.2)
}

fn device_profile(
    name: String,
    mut recs: Vec<Record>,
    steps: &[(i64, i64, i64)],
) -> AllocatorProfile {
    recs.sort_by_key(|r| r.time_ps);
    // In use after each event.
    let mut running = 0i64;
    let states: Vec<AllocatorState> = recs
        .iter()
        .map(|r| {
            running = running.saturating_add(r.bytes);
            let heap = r.total_allocated.unwrap_or(running);
            AllocatorState {
                heap_allocated_bytes: heap,
                stack_reserved_bytes: 0,
                free_bytes: r
                    .total_reserved
                    .map_or(0, |res| res.saturating_sub(heap).max(0)),
                fragmentation: 0.0,
                allocator_peak_bytes: 0,
            }
        })
        .collect();
    let mut peak_i = 0usize;
    for (i, s) in states.iter().enumerate() {
        if s.in_use() >= states[peak_i].in_use() {
            peak_i = i;
        }
    }
    let peak_state = states.get(peak_i).copied().unwrap_or_default();
    let peak_time = recs.get(peak_i).map_or(0, |r| r.time_ps);
    let peak_step = step_at(steps, peak_time);
    let lifetime = states.iter().map(|s| s.in_use()).max().unwrap_or(0);

    // Live at the peak, by address.
    let mut live: HashMap<u64, usize> = HashMap::new();
    let with_addr = recs.iter().all(|r| r.addr.is_some());
    if with_addr {
        for (i, r) in recs.iter().enumerate().take(peak_i + 1) {
            let Some(a) = r.addr else { continue };
            if r.bytes > 0 {
                live.insert(a, i);
            } else {
                live.remove(&a);
            }
        }
    }
    let mut rows: Vec<LiveAllocation> = live
        .values()
        .map(|&i| {
            let r = &recs[i];
            LiveAllocation {
                activity: Activity {
                    requested_bytes: r.bytes,
                    allocation_bytes: r.bytes,
                    address: r.addr.unwrap_or(0),
                    op: r.op.clone().unwrap_or_else(|| "<unknown>".to_string()),
                    region_type: String::new(),
                    data_type: String::new(),
                    shape: String::new(),
                    step_id: step_at(steps, r.time_ps),
                },
                time_ps: Some(r.time_ps),
                occurrences: 1,
                special: false,
            }
        })
        .collect();
    let listed: i64 = rows
        .iter()
        .map(|r| r.activity.allocation_bytes)
        .fold(0, i64::saturating_add);
    let before = peak_state.heap_allocated_bytes.saturating_sub(listed);
    if with_addr && before > 0 {
        rows.push(LiveAllocation {
            activity: Activity {
                requested_bytes: before,
                allocation_bytes: before,
                address: 0,
                op: "allocated before the capture".to_string(),
                region_type: String::new(),
                data_type: String::new(),
                shape: String::new(),
                step_id: -1,
            },
            time_ps: None,
            occurrences: 1,
            special: true,
        });
    }
    // Merge identical rows (bytes and op), largest first.
    rows.sort_by(|a, b| {
        (b.activity.allocation_bytes, &a.activity.op, a.time_ps).cmp(&(
            a.activity.allocation_bytes,
            &b.activity.op,
            b.time_ps,
        ))
    });
    let mut merged: Vec<LiveAllocation> = Vec::new();
    for r in rows {
        match merged.last_mut() {
            Some(m)
                if m.special == r.special
                    && m.activity.allocation_bytes == r.activity.allocation_bytes
                    && m.activity.op == r.activity.op =>
            {
                m.occurrences += 1
            }
            _ => merged.push(r),
        }
    }
    let (live_at_peak_total, live_at_peak_bytes) = cut_live_rows(&mut merged);

    let (shown, sampling) = sample_indices(states.len(), |i| states[i].in_use(), peak_i);
    let samples: Vec<Sample> = shown
        .iter()
        .map(|&i| Sample {
            time_ps: recs[i].time_ps,
            allocation: recs[i].bytes > 0,
            bytes: recs[i].bytes.saturating_abs(),
            state: states[i],
        })
        .collect();
    AllocatorProfile {
        name,
        allocations: recs.iter().filter(|r| r.bytes > 0).count(),
        deallocations: recs.iter().filter(|r| r.bytes < 0).count(),
        peak_bytes_usage_lifetime: lifetime,
        peak: Peak {
            bytes_in_use: peak_state.in_use(),
            state: peak_state,
            time_ps: peak_time,
            time_offset_ps: peak_time,
            step_id: peak_step,
            memory_capacity_bytes: peak_state.in_use().saturating_add(peak_state.free_bytes),
        },
        max_fragmentation: 0.0,
        max_fragmentation_time_ps: 0,
        live_at_peak: merged,
        live_at_peak_total,
        live_at_peak_bytes,
        samples_total: recs.len(),
        samples_shown: samples.len(),
        sampling,
        samples,
    }
}
