//! XProf-compatible steps: step grouping, per-step event breakdown and the step summary that
//! XProf's `overview_page` and `input_pipeline_analyzer` show.
//!
//! The rules follow XProf 2.24.2 (see `bench-data/notes/overview_steps.md`):
//! * **grouping** (when the file is not already grouped): every root event (an `_r` stat, or
//!   `TraceContext`) starts a group, roots ordered by level (higher first) then start time; a group
//!   takes the root and, breadth first, every not-yet-grouped descendant. Descendants are events
//!   nested in it on the same thread and events linked to it by producer/consumer context stats
//!   (`_pt`/`_p` → `_ct`/`_c`), by `correlation_id` (kernel launch → kernel) and by
//!   `ExecutorState::Process` → `IteratorGetNext*::DoCompute` (`id`, `iter_num`).
//! * **step span**: the longest marker of the group (host `train*`/`test*`/`TraceContext` or a
//!   named root on CPU; the device `Steps` line on GPU). Time between steps belongs to no step.
//! * **breakdown**: the group's events are cut into non-overlapping pieces, each piece getting the
//!   highest-priority category active, clipped to the step span; uncovered time is "other".
//! * a step counts only if well formed (CPU: some host compute; GPU: some device compute).
//! * **XProf drops the first and the last step when more than 5 remain**. xlens reports both:
//!   [`StepDb::steps`] (XProf-compatible) and [`StepDb::steps_all`] (every well-formed step).

use serde::Serialize;
use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};
use xlens_model::{Plane, Profile, StatValue, StrId};

use crate::device::{device_planes, DeviceKind};

/// A small, fast hasher for integer keys (FxHash).
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<Fx>>;
type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<Fx>>;

/// XProf's event types (`xprof/utils/event_span.h`); the value is the priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EventType {
    Unknown = 0,
    HostCompute = 1,
    HostPreprocess = 2,
    HostPostprocess = 3,
    HostBatchFormation = 4,
    HostRuntime = 5,
    HostCompile = 6,
    HostToHost = 7,
    HostToDevice = 8,
    HostPrepare = 9,
    DeviceCollectives = 10,
    HostWaitInput = 11,
    DeviceToDevice = 12,
    DeviceToHost = 13,
    DeviceCompute32 = 14,
    DeviceCompute16 = 15,
    DeviceWaitDevice = 16,
    DeviceWaitHost = 17,
}

const N_TYPES: usize = 18;

/// One column of the step-time breakdown.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Category {
    /// Stable id (also the JSON key of the per-step value).
    pub id: &'static str,
    pub label: &'static str,
    /// What it counts.
    pub explanation: &'static str,
    #[serde(skip)]
    pub types: &'static [EventType],
}

/// The breakdown columns, in XProf's order (generic CPU/GPU step table).
pub const CATEGORIES: &[Category] = &[
    Category {
        id: "device_compute",
        label: "Device compute",
        explanation: "GPU kernels (16-bit when the kernel's shapes or name say half precision, else 32-bit) grouped into the step.",
        types: &[EventType::DeviceCompute16, EventType::DeviceCompute32],
    },
    Category {
        id: "device_to_device",
        label: "Device to device",
        explanation: "MemcpyDtoD copies and device waits for other devices.",
        types: &[EventType::DeviceToDevice, EventType::DeviceWaitDevice],
    },
    Category {
        id: "device_collectives",
        label: "Device collective communication",
        explanation: "NCCL kernels (names starting with `nccl`).",
        types: &[EventType::DeviceCollectives],
    },
    Category {
        id: "host_compute",
        label: "Host compute",
        explanation: "Host events of the step (nested in the step marker on its thread, or linked to it by producer/consumer ids) that are not input, copies or eager/function wrappers.",
        types: &[EventType::HostCompute],
    },
    Category {
        id: "kernel_launch",
        label: "Kernel launch",
        explanation: "Host time preparing and launching device work (XProf never produces it for host threads in 2.24.2; kept for the column).",
        types: &[EventType::HostPrepare],
    },
    Category {
        id: "input",
        label: "Input",
        explanation: "Host waiting for input (`IteratorGetNext*` events, root tf.data pipeline stages), host-to-device copies (`MemcpyHToD*`, `InfeedEnqueue*`) and device waits for the host.",
        types: &[
            EventType::HostWaitInput,
            EventType::HostToDevice,
            EventType::DeviceWaitHost,
        ],
    },
    Category {
        id: "output",
        label: "Output",
        explanation: "Device-to-host copies (`MemcpyDtoH*`).",
        types: &[EventType::DeviceToHost],
    },
    Category {
        id: "compile",
        label: "Compilation",
        explanation: "Host compilation events.",
        types: &[EventType::HostCompile],
    },
    Category {
        id: "other",
        label: "All others",
        explanation: "Time inside the step span covered by none of the above: gaps between the step's events (e.g. Python between ops, work on XLA worker threads that the profile does not link to the step).",
        types: &[EventType::Unknown],
    },
];

/// One step as XProf computes it.
#[derive(Debug, Clone, Serialize)]
pub struct StepRow {
    /// XProf's group id (the step's order among the roots).
    pub group_id: i64,
    /// The step name XProf shows (`train 3`).
    pub name: String,
    pub begin_ps: i64,
    pub duration_ps: i64,
    /// Picoseconds per [`CATEGORIES`] entry, in that order.
    pub breakdown_ps: Vec<i64>,
    #[serde(skip)]
    pub type_ps: [i64; N_TYPES],
}

impl StepRow {
    pub fn ps_of(&self, types: &[EventType]) -> i64 {
        types.iter().map(|t| self.type_ps[*t as usize]).sum()
    }
}

/// Mean, sample standard deviation, min and max (XProf's `Stat<double>`), in ps.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Summary {
    pub count: usize,
    pub mean_ps: i64,
    pub std_dev_ps: i64,
    pub min_ps: i64,
    pub max_ps: i64,
    pub mean_ms: f64,
    pub std_dev_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Summary {
    pub fn of(ps: &[i64]) -> Summary {
        if ps.is_empty() {
            return Summary::default();
        }
        let ms: Vec<f64> = ps.iter().map(|v| *v as f64 / 1e9).collect();
        let n = ms.len() as f64;
        let s: f64 = ms.iter().sum();
        let sq: f64 = ms.iter().map(|v| v * v).sum();
        let mn = ms.iter().cloned().fold(f64::INFINITY, f64::min);
        let mx = ms.iter().cloned().fold(f64::MIN_POSITIVE, f64::max);
        let var = if mn == mx || ms.len() < 2 {
            0.0
        } else {
            ((sq - s * s / n) / (n - 1.0)).max(0.0)
        };
        let mean = s / n;
        let std = var.sqrt();
        Summary {
            count: ps.len(),
            mean_ps: (ps.iter().map(|v| *v as i128).sum::<i128>() / ps.len() as i128) as i64,
            std_dev_ps: (std * 1e9).round() as i64,
            min_ps: ps.iter().copied().min().unwrap_or(0),
            max_ps: ps.iter().copied().max().unwrap_or(0),
            mean_ms: mean,
            std_dev_ms: std,
            min_ms: mn,
            max_ms: ps.iter().copied().max().unwrap_or(0) as f64 / 1e9,
        }
    }
}

/// The hardware path XProf takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Hardware {
    #[serde(rename = "CPU_ONLY")]
    CpuOnly,
    #[serde(rename = "GPU")]
    Gpu,
    #[serde(rename = "TPU")]
    Tpu,
}

/// Steps of one host.
#[derive(Debug, Clone, Serialize)]
pub struct StepDb {
    pub hardware: Hardware,
    /// Whether the file already carried group ids (grouping then comes from the file).
    pub pre_grouped: bool,
    /// How many root groups grouping produced (before well-formedness and the edge rule).
    pub groups: usize,
    /// XProf-compatible steps (first and last dropped when more than 5 well-formed steps exist).
    pub steps: Vec<StepRow>,
    /// Every well-formed step, none dropped.
    pub steps_all: Vec<StepRow>,
    /// Whether the first and last step were dropped from [`StepDb::steps`].
    pub dropped_edges: bool,
    pub notes: Vec<String>,
}

const STEPS_LINE_ID: i64 = -559038737; // 0xdeadbeef as i32: XProf's derived "Steps" line.
const DERIVED_MAX: i64 = STEPS_LINE_ID + 64;
const DROP_THRESHOLD: usize = 5;
const NONE: u32 = u32::MAX;
const IMPLICIT_ROOTS: [&str; 4] = [
    "FunctionRun",
    "SessionRun",
    "RunGraph",
    "ExecutorState::Process",
];
const LOOP_OPS: [&str; 5] = [
    "WhileOp-EvalCond",
    "WhileOp-StartBody",
    "ForOp",
    "ParallelForOp",
    "ForeverOp",
];
const TF_DATA_FUNCS: [&str; 4] = [
    "InstantiatedCapturedFunction::Run",
    "InstantiatedCapturedFunction::RunWithBorrowedArgs",
    "InstantiatedCapturedFunction::RunInstantiated",
    "InstantiatedCapturedFunction::RunAsync",
];

fn as_u64(v: StatValue) -> Option<u64> {
    match v {
        StatValue::I64(x) => Some(x as u64),
        StatValue::U64(x) => Some(x),
        StatValue::F64(x) if x.fract() == 0.0 => Some(x as i64 as u64),
        _ => None,
    }
}

/// Stat keys the grouping reads (interned ids; `None` when no event has the stat).
struct Keys {
    r: Option<StrId>,
    p: Option<StrId>,
    pt: Option<StrId>,
    c: Option<StrId>,
    ct: Option<StrId>,
    pid: Option<StrId>,
    a: Option<StrId>,
    corr: Option<StrId>,
    id: Option<StrId>,
    iter_num: Option<StrId>,
    step_num: Option<StrId>,
    graph_type: Option<StrId>,
    group_id: Option<StrId>,
    step_name: Option<StrId>,
    ipl_stage: Option<StrId>,
    shape: Option<StrId>,
    process_id: Option<StrId>,
}

impl Keys {
    fn new(p: &Profile) -> Keys {
        Keys {
            r: p.key("_r"),
            p: p.key("_p"),
            pt: p.key("_pt"),
            c: p.key("_c"),
            ct: p.key("_ct"),
            pid: p.key("_pid"),
            a: p.key("_a"),
            corr: p.key("correlation_id"),
            id: p.key("id"),
            iter_num: p.key("iter_num"),
            step_num: p.key("step_num"),
            graph_type: p.key("graph_type"),
            group_id: p.key("group_id"),
            step_name: p.key("step_name"),
            ipl_stage: p.key("_ipl_stage_name"),
            shape: p.key("shape"),
            process_id: p.key("process_id"),
        }
    }
}

/// The stats of one event that grouping and classification read (metadata stats, overridden by
/// the event's own).
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    r: Option<i64>,
    p: Option<u64>,
    pt: Option<u64>,
    c: Option<u64>,
    ct: Option<u64>,
    pid: Option<u64>,
    a: bool,
    corr: Option<u64>,
    id: Option<u64>,
    iter_num: Option<i64>,
    step_num: Option<i64>,
    graph_type: Option<StatValue>,
    group_id: Option<i64>,
    step_name: Option<StrId>,
    ipl_stage: bool,
    shape: Option<StrId>,
    any: bool,
}

impl Ctx {
    const EMPTY: Ctx = Ctx {
        r: None,
        p: None,
        pt: None,
        c: None,
        ct: None,
        pid: None,
        a: false,
        corr: None,
        id: None,
        iter_num: None,
        step_num: None,
        graph_type: None,
        group_id: None,
        step_name: None,
        ipl_stage: false,
        shape: None,
        any: false,
    };
}

fn read_ctx(k: &Keys, stats: xlens_model::Stats<'_>, c: &mut Ctx) {
    for s in stats.iter() {
        let key = Some(s.key);
        let v = s.value;
        if key == k.r {
            c.r = v.as_i64();
        } else if key == k.p {
            c.p = as_u64(v);
        } else if key == k.pt {
            c.pt = as_u64(v);
        } else if key == k.c {
            c.c = as_u64(v);
        } else if key == k.ct {
            c.ct = as_u64(v);
        } else if key == k.pid {
            c.pid = as_u64(v);
        } else if key == k.a {
            c.a = v.as_i64().unwrap_or(0) != 0;
        } else if key == k.corr {
            c.corr = as_u64(v);
        } else if key == k.id {
            c.id = as_u64(v);
        } else if key == k.iter_num {
            c.iter_num = v.as_i64();
        } else if key == k.step_num {
            c.step_num = v.as_i64();
        } else if key == k.graph_type {
            c.graph_type = Some(v);
        } else if key == k.group_id {
            c.group_id = v.as_i64();
        } else if key == k.step_name {
            c.step_name = v.as_str_id();
        } else if key == k.ipl_stage {
            c.ipl_stage = v.as_str_id().is_some();
        } else if key == k.shape {
            c.shape = v.as_str_id();
        } else {
            continue;
        }
        c.any = true;
    }
}

/// A flat index of the events that take part in grouping.
struct Flat<'a> {
    p: &'a Profile,
    /// (plane index, line index, first global id) per line.
    lines: Vec<(usize, usize, u32)>,
    n: usize,
    /// Stats of events that have any relevant stat: `ctx_idx[g]` indexes `ctxs` (NONE: no stat).
    ctx_idx: Vec<u32>,
    ctxs: Vec<(u32, Ctx)>,
    /// Per-event visit stamp for breadth-first searches.
    stamp: Vec<u32>,
    nest_parent: Vec<u32>,
    group: Vec<i64>,
}

impl<'a> Flat<'a> {
    fn locate(&self, g: u32) -> (usize, usize, usize) {
        let i = self.lines.partition_point(|l| l.2 <= g) - 1;
        let (pl, li, base) = self.lines[i];
        (pl, li, (g - base) as usize)
    }
    fn name(&self, g: u32) -> &'a str {
        let (pl, li, i) = self.locate(g);
        let plane = &self.p.planes[pl];
        plane
            .metadata_of(&plane.lines[li], i)
            .map(|m| self.p.str(m.name))
            .unwrap_or("")
    }
    fn ctx(&self, g: u32) -> &Ctx {
        static NO_CTX: Ctx = Ctx::EMPTY;
        self.get_ctx(g).unwrap_or(&NO_CTX)
    }
    fn get_ctx(&self, g: u32) -> Option<&Ctx> {
        match self.ctx_idx.get(g as usize) {
            Some(&i) if i != NONE => self.ctxs.get(i as usize).map(|x| &x.1),
            _ => None,
        }
    }
}

fn metadata_ctx(k: &Keys, plane: &Plane) -> Vec<Ctx> {
    plane
        .event_metadata
        .iter()
        .map(|m| {
            let mut c = Ctx::default();
            read_ctx(k, m.stats(), &mut c);
            c
        })
        .collect()
}

fn is_explicit_marker(name: &str) -> bool {
    (name.starts_with("train") || name.starts_with("test") || name.starts_with("TraceContext"))
        && !name.contains('/')
}

fn is_real_cpu_compute(name: &str) -> bool {
    !(name.starts_with("EagerExecute")
        || name.starts_with("EagerLocalExecute")
        || name.starts_with("EagerKernelExecute")
        || name.starts_with("FunctionRun")
        || is_explicit_marker(name))
}

fn memcpy_kind(name: &str) -> Option<&'static str> {
    if name.contains(':') {
        return None;
    }
    let u = name.get(..10).unwrap_or(name).to_ascii_uppercase();
    ["MEMCPYHTOD", "MEMCPYDTOH", "MEMCPYDTOD", "MEMCPYHTOH"]
        .into_iter()
        .find(|k| u.starts_with(k))
}

fn classify_cpu(name: &str, root_stage: bool) -> EventType {
    let ty = name.split_once(':').map(|x| x.1).unwrap_or("");
    let mk = memcpy_kind(name);
    if ty == "InfeedEnqueue" || ty == "InfeedEnqueueTuple" || mk == Some("MEMCPYHTOD") {
        EventType::HostToDevice
    } else if mk == Some("MEMCPYHTOH") {
        EventType::HostToHost
    } else if name
        .get(..15)
        .is_some_and(|h| h.eq_ignore_ascii_case("iteratorgetnext"))
        || root_stage
    {
        EventType::HostWaitInput
    } else {
        EventType::HostCompute
    }
}

fn classify_gpu(name: &str, shape: Option<&str>) -> EventType {
    match memcpy_kind(name) {
        Some("MEMCPYHTOD") => return EventType::HostToDevice,
        Some("MEMCPYDTOH") => return EventType::DeviceToHost,
        Some("MEMCPYDTOD") => return EventType::DeviceToDevice,
        _ => {}
    }
    if name
        .get(..4)
        .is_some_and(|h| h.eq_ignore_ascii_case("nccl"))
    {
        return EventType::DeviceCollectives;
    }
    let half = match shape.filter(|s| !s.is_empty()) {
        Some(s) => s.contains("half"),
        None => name.contains("half") || name.contains("fp16"),
    };
    if half {
        EventType::DeviceCompute16
    } else {
        EventType::DeviceCompute32
    }
}

/// Builds the flat event index over all non-TPU planes, with per-line nesting parents.
fn flatten<'a>(p: &'a Profile, k: &Keys) -> Flat<'a> {
    let mut lines = Vec::new();
    let mut n: u32 = 0;
    for (pi, plane) in p.planes.iter().enumerate() {
        if p.str(plane.name).starts_with("/device:TPU:") {
            continue;
        }
        for (li, line) in plane.lines.iter().enumerate() {
            if line.events.is_empty() {
                continue;
            }
            lines.push((pi, li, n));
            n = n.saturating_add(line.events.len() as u32);
        }
    }
    let mut flat = Flat {
        p,
        lines,
        n: n as usize,
        ctx_idx: vec![NONE; n as usize],
        ctxs: Vec::new(),
        stamp: vec![0; n as usize],
        nest_parent: vec![NONE; n as usize],
        group: vec![-1; n as usize],
    };
    let mut stack: Vec<u32> = Vec::new();
    let mut md_cache: (usize, Vec<Ctx>) = (usize::MAX, Vec::new());
    for li in 0..flat.lines.len() {
        let (pi, lj, base) = flat.lines[li];
        let plane = &p.planes[pi];
        let line = &plane.lines[lj];
        if md_cache.0 != pi {
            md_cache = (pi, metadata_ctx(k, plane));
        }
        let md_ctx = &md_cache.1;
        let ev = &line.events;
        stack.clear();
        for i in 0..ev.len() {
            let g = base + i as u32;
            let mut c = md_ctx.get(ev.meta(i) as usize).copied().unwrap_or_default();
            read_ctx(k, ev.stats(i), &mut c);
            let is_async = c.a;
            if c.any {
                flat.ctx_idx[g as usize] = flat.ctxs.len() as u32;
                flat.ctxs.push((g, c));
            }
            if is_async {
                continue;
            }
            let (s, e) = (ev.start(i), ev.end(i));
            while let Some(&top) = stack.last() {
                let t = (top - base) as usize;
                if ev.start(t) <= s && e <= ev.end(t) {
                    flat.nest_parent[g as usize] = top;
                    break;
                }
                stack.pop();
            }
            stack.push(g);
        }
    }
    flat
}

/// Groups events the way XProf's `GroupTfEvents` does; returns the step name XProf writes on each
/// (non-implicit) root event, by event, and the number of groups.
fn group_events(flat: &mut Flat<'_>, k: &Keys) -> (HashMap<u32, String>, usize) {
    let p = flat.p;
    let mut names = HashMap::default();
    // CheckLoopOp: any loop op in the metadata disables grouping.
    for plane in &p.planes {
        if plane
            .event_metadata
            .iter()
            .any(|m| LOOP_OPS.contains(&p.str(m.name)))
        {
            return (names, 0);
        }
    }
    // Links (parent -> child) other than nesting.
    let mut links: Vec<(u32, u32)> = Vec::new();
    // (type, id, pid) -> event, sorted and joined below (no allocation per key).
    let mut prods: Vec<((u64, u64, u64), u32)> = Vec::new();
    let mut cons: Vec<((u64, u64, u64), u32)> = Vec::new();
    let mut launches: HashMap<u64, u32> = HashMap::default();
    let mut executes: Vec<(u64, u32)> = Vec::new();
    let mut executors: HashMap<(u64, i64), u32> = HashMap::default();
    let mut get_next: Vec<((u64, i64), u32)> = Vec::new();
    let mut tf_data_ids: Vec<u64> = Vec::new();
    let mut loop_events: Vec<(u64, i64, u32)> = Vec::new();
    let mut roots: Vec<(i64, i64, u32)> = Vec::new();
    let trace_context = p.key("TraceContext");
    for li in 0..flat.lines.len() {
        let (pi, lj, base) = flat.lines[li];
        let plane = &p.planes[pi];
        let is_host = p.str(plane.name) == "/host:CPU";
        let plane_pid = k
            .process_id
            .and_then(|key| plane.stats().get(key))
            .and_then(as_u64)
            .unwrap_or(0);
        let line = &plane.lines[lj];
        for i in 0..line.events.len() {
            let g = base + i as u32;
            let Some(c) = flat.get_ctx(g) else {
                if trace_context.is_some()
                    && plane.metadata_of(line, i).map(|m| m.name) == trace_context
                {
                    roots.push((1, line.events.start(i), g));
                }
                continue;
            };
            let name = plane
                .metadata_of(line, i)
                .map(|m| p.str(m.name))
                .unwrap_or("");
            if let Some(cid) = c.corr {
                if !IMPLICIT_ROOTS.contains(&name) {
                    if is_host {
                        launches.insert(cid, g);
                    } else {
                        executes.push((cid, g));
                    }
                }
            }
            let pid = c.pid.unwrap_or(plane_pid);
            if let (Some(t), Some(id)) = (c.pt, c.p) {
                prods.push(((t, id, pid), g));
            }
            if let (Some(t), Some(id)) = (c.ct, c.c) {
                cons.push(((t, id, pid), g));
            }
            if let (Some(id), Some(it)) = (c.id, c.iter_num) {
                if name == "ExecutorState::Process" {
                    executors.insert((id, it), g);
                    loop_events.push((id, it, g));
                } else if name == "IteratorGetNextOp::DoCompute"
                    || name == "IteratorGetNextAsOptionalOp::DoCompute"
                {
                    get_next.push(((id, it), g));
                }
            }
            if let Some(id) = c.id {
                if TF_DATA_FUNCS.contains(&name) {
                    tf_data_ids.push(id);
                }
            }
            if let Some(r) = c.r {
                roots.push((r, line.events.start(i), g));
            } else if name == "TraceContext" {
                roots.push((1, line.events.start(i), g));
            }
        }
    }
    for (cid, g) in executes {
        if let Some(&l) = launches.get(&cid) {
            links.push((l, g));
        }
    }
    for (key, g) in get_next {
        if let Some(&e) = executors.get(&key) {
            links.push((e, g));
        }
    }
    prods.sort_unstable();
    cons.sort_unstable();
    let (mut i, mut j) = (0, 0);
    while i < prods.len() && j < cons.len() {
        let key = prods[i].0;
        match key.cmp(&cons[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                let i_end = i + prods[i..].partition_point(|x| x.0 == key);
                let j_end = j + cons[j..].partition_point(|x| x.0 == key);
                let (ps, cs) = (&prods[i..i_end], &cons[j..j_end]);
                if ps.len() < 64 || cs.len() < 64 {
                    for &(_, a) in ps {
                        for &(_, b) in cs {
                            links.push((a, b));
                        }
                    }
                }
                i = i_end;
                j = j_end;
            }
        }
    }
    tf_data_ids.sort_unstable();
    let is_tf_data = |c: &Ctx| {
        c.id.is_some_and(|id| tf_data_ids.binary_search(&id).is_ok())
    };
    // TF while-loops: each iteration's first executor event is a root.
    let mut loops: HashMap<u64, HashMap<i64, Vec<u32>>> = HashMap::default();
    for &(id, it, g) in &loop_events {
        if tf_data_ids.binary_search(&id).is_ok() {
            continue;
        }
        loops.entry(id).or_default().entry(it).or_default().push(g);
    }
    let start_of = |flat: &Flat<'_>, g: u32| {
        let (pl, li, i) = flat.locate(g);
        p.planes[pl].lines[li].events.start(i)
    };
    let mut loop_roots: Vec<(i64, u32)> = Vec::new();
    for iters in loops.values() {
        if iters.len() == 1 && iters.contains_key(&0) {
            continue;
        }
        for evs in iters.values() {
            let Some(&first) = evs.iter().min_by_key(|g| start_of(flat, **g)) else {
                continue;
            };
            loop_roots.push((start_of(flat, first), first));
            for &e in evs {
                if e != first {
                    links.push((first, e));
                }
            }
        }
    }
    // Adjacency (children, CSR) including nesting.
    let n = flat.n;
    let mut deg = vec![0u32; n + 1];
    for (c, &par) in flat.nest_parent.iter().enumerate() {
        if par != NONE && c < n {
            deg[par as usize] += 1;
        }
    }
    for &(a, _) in &links {
        deg[a as usize] += 1;
    }
    let mut off = vec![0u32; n + 1];
    for i in 0..n {
        off[i + 1] = off[i] + deg[i];
    }
    let mut fill = off.clone();
    let mut adj = vec![0u32; off[n] as usize];
    for (c, &par) in flat.nest_parent.iter().enumerate() {
        if par != NONE {
            adj[fill[par as usize] as usize] = c as u32;
            fill[par as usize] += 1;
        }
    }
    // Link parents of each event, as CSR too.
    let mut pdeg = vec![0u32; n + 1];
    for &(a, b) in &links {
        adj[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
        pdeg[b as usize] += 1;
    }
    let mut poff = vec![0u32; n + 1];
    for i in 0..n {
        poff[i + 1] = poff[i] + pdeg[i];
    }
    let mut pfill = poff.clone();
    let mut padj = vec![0u32; links.len()];
    for &(a, b) in &links {
        padj[pfill[b as usize] as usize] = a;
        pfill[b as usize] += 1;
    }
    let parents_of = |flat: &Flat<'_>, g: u32, out: &mut Vec<u32>| {
        out.clear();
        let np = flat.nest_parent[g as usize];
        if np != NONE {
            out.push(np);
        }
        out.extend_from_slice(&padj[poff[g as usize] as usize..poff[g as usize + 1] as usize]);
    };
    // Breadth-first search over ancestors for the first event with a stat.
    let ancestor_ctx = |flat: &Flat<'_>, g: u32, f: &dyn Fn(&Ctx) -> bool| -> Option<Ctx> {
        let mut seen = HashSet::default();
        let mut q = VecDeque::from([g]);
        seen.insert(g);
        let mut ps = Vec::new();
        while let Some(x) = q.pop_front() {
            let c = flat.ctx(x);
            if f(c) {
                return Some(*c);
            }
            parents_of(flat, x, &mut ps);
            for &pp in &ps {
                if seen.insert(pp) {
                    q.push_back(pp);
                }
            }
        }
        None
    };
    let mut order: Vec<u32> = Vec::new();
    if !loop_roots.is_empty() {
        loop_roots.sort_by_key(|x| x.0);
        order = loop_roots.iter().map(|x| x.1).collect();
    } else {
        roots.retain(|&(_, _, g)| !is_tf_data(flat.ctx(g)));
        roots.sort_by_key(|&(lvl, t, _)| (-lvl, t));
        let mut ps = Vec::new();
        for &(lvl, _, g) in &roots {
            if flat.group[g as usize] >= 0 {
                continue;
            }
            // Not grouped when an ancestor is a root of the same level.
            let mut blocked = false;
            let mut seen = HashSet::default();
            parents_of(flat, g, &mut ps);
            let mut q: VecDeque<u32> = ps.iter().copied().collect();
            seen.extend(ps.iter().copied());
            while let Some(x) = q.pop_front() {
                let c = flat.ctx(x);
                let xl =
                    c.r.or_else(|| (flat.name(x) == "TraceContext").then_some(1));
                if xl == Some(lvl) {
                    blocked = true;
                    break;
                }
                parents_of(flat, x, &mut ps);
                for &pp in &ps {
                    if seen.insert(pp) {
                        q.push_back(pp);
                    }
                }
            }
            if blocked {
                continue;
            }
            order.push(g);
            assign(flat, &off, &adj, g, order.len() as i64 - 1);
        }
    }
    if !loop_roots.is_empty() {
        for (gid, &g) in order.iter().enumerate() {
            assign(flat, &off, &adj, g, gid as i64);
        }
    }
    for (gid, &g) in order.iter().enumerate() {
        let gt = ancestor_ctx(flat, g, &|c| c.graph_type.is_some()).and_then(|c| c.graph_type);
        let name = flat.name(g);
        let implicit = IMPLICIT_ROOTS.contains(&name);
        let mut s = match gt {
            Some(v) => format!("{} ", v.display(&p.strings)),
            None if !implicit => format!("{name} "),
            None => String::new(),
        };
        let num = ancestor_ctx(flat, g, &|c| c.iter_num.is_some())
            .and_then(|c| c.iter_num)
            .or_else(|| ancestor_ctx(flat, g, &|c| c.step_num.is_some()).and_then(|c| c.step_num))
            .unwrap_or(gid as i64);
        s.push_str(&num.to_string());
        if !implicit {
            names.insert(g, s);
        }
    }
    (names, order.len())
}

fn assign(flat: &mut Flat<'_>, off: &[u32], adj: &[u32], root: u32, gid: i64) {
    let mark = (gid as u32).wrapping_add(1);
    let mut q = VecDeque::from([root]);
    flat.stamp[root as usize] = mark;
    while let Some(x) = q.pop_front() {
        if flat.group[x as usize] >= 0 {
            continue;
        }
        flat.group[x as usize] = gid;
        for &c in &adj[off[x as usize] as usize..off[x as usize + 1] as usize] {
            if flat.stamp[c as usize] != mark {
                flat.stamp[c as usize] = mark;
                q.push_back(c);
            }
        }
    }
}

#[derive(Default)]
struct StepEvents {
    /// (is_device, begin, end)
    markers: Vec<(bool, i64, i64)>,
    events: Vec<(EventType, i64, i64)>,
    name: Option<String>,
}

/// Host step events (CPU-only profiles).
fn host_step_events(
    flat: &Flat<'_>,
    root_names: &HashMap<u32, String>,
) -> HashMap<i64, StepEvents> {
    let p = flat.p;
    let mut out: HashMap<i64, StepEvents> = HashMap::default();
    let mut async_parents = HashSet::default();
    for (_, c) in &flat.ctxs {
        if let (Some(t), Some(id)) = (c.pt, c.p) {
            async_parents.insert((t, id));
        }
    }
    for &(pi, lj, base) in &flat.lines {
        let plane = &p.planes[pi];
        if p.str(plane.name) != "/host:CPU" {
            continue;
        }
        let line = &plane.lines[lj];
        let ev = &line.events;
        // (is_stage, is_descendant, begin, end)
        let mut stack: Vec<(bool, bool, i64, i64)> = Vec::new();
        for i in 0..ev.len() {
            let g = base + i as u32;
            let c = flat.ctx(g);
            let (s, e) = (ev.start(i), ev.end(i));
            let mut is_desc =
                matches!((c.ct, c.c), (Some(t), Some(id)) if async_parents.contains(&(t, id)));
            while let Some(top) = stack.last() {
                if top.2 <= s && e <= top.3 {
                    break;
                }
                stack.pop();
            }
            if let Some(top) = stack.last() {
                is_desc = is_desc || top.1 || top.0;
            }
            stack.push((c.ipl_stage, is_desc, s, e));
            let gid = flat.group[g as usize];
            if gid < 0 {
                continue;
            }
            let name = plane
                .metadata_of(line, i)
                .map(|m| p.str(m.name))
                .unwrap_or("");
            let sd = out.entry(gid).or_default();
            let step_name = c
                .step_name
                .map(|x| p.str(x))
                .or_else(|| root_names.get(&g).map(|s| s.as_str()))
                .filter(|x| !x.is_empty());
            if is_explicit_marker(name) || step_name.is_some() {
                sd.markers.push((false, s, e));
            } else if is_real_cpu_compute(name) {
                sd.events
                    .push((classify_cpu(name, c.ipl_stage && !is_desc), s, e));
            }
            if let Some(n) = step_name {
                sd.name = Some(n.to_string());
            }
        }
    }
    out
}

/// GPU step events per device plane, unioned over planes.
fn gpu_step_events(flat: &Flat<'_>) -> HashMap<i64, StepEvents> {
    let p = flat.p;
    let mut out: HashMap<i64, StepEvents> = HashMap::default();
    for (_, plane) in device_planes(p, DeviceKind::Gpu) {
        let mut markers: HashMap<i64, Vec<(bool, i64, i64)>> = HashMap::default();
        let mut events: HashMap<i64, StepEvents> = HashMap::default();
        let mut has_steps_line = false;
        for &(pi, lj, base) in &flat.lines {
            if !std::ptr::eq(&p.planes[pi], plane) {
                continue;
            }
            let line = &plane.lines[lj];
            let ev = &line.events;
            if line.id == STEPS_LINE_ID {
                has_steps_line = true;
                for i in 0..ev.len() {
                    if let Some(gid) = flat.ctx(base + i as u32).group_id {
                        markers
                            .entry(gid)
                            .or_default()
                            .push((true, ev.start(i), ev.end(i)));
                    }
                }
                continue;
            }
            if (STEPS_LINE_ID..=DERIVED_MAX).contains(&line.id) {
                continue;
            }
            for i in 0..ev.len() {
                let g = base + i as u32;
                let c = flat.ctx(g);
                let gid = c.group_id.unwrap_or(flat.group[g as usize]);
                if c.corr.is_none() || gid < 0 {
                    continue;
                }
                let shape = c.shape.map(|s| p.str(s));
                events.entry(gid).or_default().events.push((
                    classify_gpu(flat.name(g), shape),
                    ev.start(i),
                    ev.end(i),
                ));
            }
        }
        if !has_steps_line {
            // XProf derives the Steps line: one event per group spanning its device events.
            for (gid, sd) in &events {
                let b = sd.events.iter().map(|x| x.1).min().unwrap_or(0);
                let e = sd.events.iter().map(|x| x.2).max().unwrap_or(0);
                markers.entry(*gid).or_default().push((true, b, e));
            }
        }
        for (gid, sd) in events {
            if let Some(m) = markers.remove(&gid) {
                let dst = out.entry(gid).or_default();
                dst.markers.extend(m);
                dst.events.extend(sd.events);
            }
        }
    }
    out
}

/// XProf's `ToNonOverlappedEvents`: pieces typed by the highest-priority active event.
fn non_overlapped(events: &[(EventType, i64, i64)]) -> Vec<(EventType, i64, i64)> {
    let mut bounds: Vec<(i64, bool, EventType)> = Vec::with_capacity(events.len() * 2);
    for &(t, b, e) in events {
        bounds.push((b, true, t));
        bounds.push((e, false, t));
    }
    bounds.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(b.2.cmp(&a.2)));
    let mut counts = [0i64; N_TYPES];
    let mut cur = EventType::Unknown;
    let mut out = Vec::with_capacity(bounds.len());
    for w in bounds.windows(2) {
        let (tm, is_start, typ) = w[0];
        if is_start {
            counts[typ as usize] += 1;
            if typ > cur {
                cur = typ;
            }
        } else {
            counts[typ as usize] -= 1;
            if typ == cur && counts[typ as usize] == 0 {
                cur = ALL_TYPES[..typ as usize]
                    .iter()
                    .rev()
                    .find(|t| counts[**t as usize] > 0)
                    .copied()
                    .unwrap_or(EventType::Unknown);
            }
        }
        out.push((cur, tm, w[1].0));
    }
    out
}

const ALL_TYPES: [EventType; N_TYPES] = [
    EventType::Unknown,
    EventType::HostCompute,
    EventType::HostPreprocess,
    EventType::HostPostprocess,
    EventType::HostBatchFormation,
    EventType::HostRuntime,
    EventType::HostCompile,
    EventType::HostToHost,
    EventType::HostToDevice,
    EventType::HostPrepare,
    EventType::DeviceCollectives,
    EventType::HostWaitInput,
    EventType::DeviceToDevice,
    EventType::DeviceToHost,
    EventType::DeviceCompute32,
    EventType::DeviceCompute16,
    EventType::DeviceWaitDevice,
    EventType::DeviceWaitHost,
];

fn step_span(markers: &[(bool, i64, i64)]) -> (i64, i64) {
    let mut host = (0i64, 0i64);
    let mut dev = (0i64, 0i64);
    for &(is_dev, b, e) in markers {
        let best = if is_dev { &mut dev } else { &mut host };
        if e - b > best.1 - best.0 {
            *best = (b, e);
        }
    }
    if dev == (0, 0) || (host.0 <= dev.0 && dev.1 <= host.1) {
        host
    } else {
        dev
    }
}

fn build_rows(mut ev: HashMap<i64, StepEvents>, has_device: bool) -> Vec<StepRow> {
    let mut gids: Vec<i64> = ev.keys().copied().collect();
    gids.sort_unstable();
    let mut rows = Vec::new();
    for gid in gids {
        let Some(sd) = ev.remove(&gid) else { continue };
        let (b, e) = step_span(&sd.markers);
        let mut type_ps = [0i64; N_TYPES];
        let mut present = [false; N_TYPES];
        let mut total = 0i64;
        for (t, eb, ee) in non_overlapped(&sd.events) {
            let ov = (e.min(ee) - b.max(eb)).max(0);
            type_ps[t as usize] += ov;
            present[t as usize] = true;
            total += ov;
        }
        if total < e - b {
            type_ps[EventType::Unknown as usize] += (e - b) - total;
        }
        let well = if has_device {
            present[EventType::DeviceCompute16 as usize]
                || present[EventType::DeviceCompute32 as usize]
        } else {
            present[EventType::HostCompute as usize]
        };
        if !well || e - b == 0 {
            continue;
        }
        let mut row = StepRow {
            group_id: gid,
            name: sd.name.unwrap_or_else(|| gid.to_string()),
            begin_ps: b,
            duration_ps: e - b,
            breakdown_ps: Vec::new(),
            type_ps,
        };
        row.breakdown_ps = CATEGORIES.iter().map(|c| row.ps_of(c.types)).collect();
        rows.push(row);
    }
    rows
}

/// Computes the steps of one host's profile as XProf does.
pub fn step_db(p: &Profile) -> StepDb {
    let k = Keys::new(p);
    let tpu = device_planes(p, DeviceKind::Tpu);
    let gpu = device_planes(p, DeviceKind::Gpu);
    let mut notes = Vec::new();
    let hardware = if !tpu.is_empty() {
        Hardware::Tpu
    } else if !gpu.is_empty() {
        Hardware::Gpu
    } else {
        Hardware::CpuOnly
    };
    if hardware == Hardware::Tpu {
        return tpu_steps(p, notes);
    }
    let mut flat = flatten(p, &k);
    let pre_grouped = k.group_id.is_some() && flat.ctxs.iter().any(|c| c.1.group_id.is_some());
    let (root_names, groups) = if pre_grouped {
        for i in 0..flat.ctxs.len() {
            let (g, c) = flat.ctxs[i];
            if let Some(gid) = c.group_id {
                flat.group[g as usize] = gid;
            }
        }
        let mut gids: Vec<i64> = flat.group.iter().copied().filter(|g| *g >= 0).collect();
        gids.sort_unstable();
        gids.dedup();
        notes.push("The file is already grouped (it carries `group_id` stats); its groups are used as they are.".to_string());
        (HashMap::default(), gids.len())
    } else {
        group_events(&mut flat, &k)
    };
    let rows = match hardware {
        Hardware::Gpu => {
            // XProf names device steps by group id only.
            build_rows(gpu_step_events(&flat), true)
        }
        _ => build_rows(host_step_events(&flat, &root_names), false),
    };
    let dropped = rows.len() > DROP_THRESHOLD;
    let steps = if dropped {
        notes.push(format!(
            "XProf drops the first and the last step when more than {DROP_THRESHOLD} steps remain: `steps` omits {} and {}; `steps_all` keeps all {}.",
            rows.first().map(|r| r.name.as_str()).unwrap_or(""),
            rows.last().map(|r| r.name.as_str()).unwrap_or(""),
            rows.len()
        ));
        rows[1..rows.len() - 1].to_vec()
    } else {
        rows.clone()
    };
    StepDb {
        hardware,
        pre_grouped,
        groups,
        steps,
        steps_all: rows,
        dropped_edges: dropped,
        notes,
    }
}

/// TPU: steps only from a core's `Steps` line (step time = max over cores); no breakdown.
fn tpu_steps(p: &Profile, mut notes: Vec<String>) -> StepDb {
    let mut per_step: Vec<(String, i64, i64)> = Vec::new();
    for (_, plane) in device_planes(p, DeviceKind::Tpu) {
        for line in &plane.lines {
            if p.str(line.name) != "Steps" {
                continue;
            }
            let ev = &line.events;
            for i in 0..ev.len() {
                let name = plane
                    .metadata_of(line, i)
                    .map(|m| p.str(m.name).to_string())
                    .unwrap_or_default();
                match per_step.iter_mut().find(|s| s.0 == name) {
                    Some(s) => s.2 = s.2.max(ev.dur(i)),
                    None => per_step.push((name, ev.start(i), ev.dur(i))),
                }
            }
        }
    }
    if per_step.is_empty() {
        notes.push("No step marker observed (no TPU `Steps` line), so the step time is unknown; XProf says the same.".to_string());
    } else {
        notes.push(
            "TPU steps come from the cores' `Steps` lines (step time = the longest core); the TPU per-step breakdown is not computed yet."
                .to_string(),
        );
    }
    let rows: Vec<StepRow> = per_step
        .into_iter()
        .enumerate()
        .map(|(i, (name, b, d))| {
            let mut type_ps = [0i64; N_TYPES];
            type_ps[0] = d;
            let mut r = StepRow {
                group_id: i as i64,
                name,
                begin_ps: b,
                duration_ps: d,
                breakdown_ps: Vec::new(),
                type_ps,
            };
            r.breakdown_ps = CATEGORIES.iter().map(|c| r.ps_of(c.types)).collect();
            r
        })
        .collect();
    StepDb {
        hardware: Hardware::Tpu,
        pre_grouped: false,
        groups: rows.len(),
        steps: rows.clone(),
        steps_all: rows,
        dropped_edges: false,
        notes,
    }
}

impl StepDb {
    pub fn summary(&self) -> Summary {
        Summary::of(&self.steps.iter().map(|s| s.duration_ps).collect::<Vec<_>>())
    }
    pub fn summary_all(&self) -> Summary {
        Summary::of(
            &self
                .steps_all
                .iter()
                .map(|s| s.duration_ps)
                .collect::<Vec<_>>(),
        )
    }
}
