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
use xlens_model::{FlowRef, Profile, StatValue, StrId};

use crate::base::device::{device_planes, DeviceKind};
use crate::base::steps::input_marks::is_input_annotation;

type HashMap<K, V> = crate::base::fx::FxMap<K, V>;
type HashSet<K> = crate::base::fx::FxSet<K>;

use crate::base::steps::step_rows::{breakdown_of, N_TYPES};
pub use crate::base::steps::step_rows::{
    Category, EventType, StepRow, Summary, CATEGORIES, N_CATEGORIES,
};

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
    /// How the steps were formed, which says the breakdown's columns.
    #[serde(skip)]
    pub model: StepModel,
    /// PyTorch traces: the steps as the PyTorch TensorBoard plugin forms them, with its GPU
    /// figures ([`crate::base::pytorch::torch_steps`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torch: Option<TorchFigures>,
    /// Host annotations of the loop's data stage that the breakdown counts as input (XProf
    /// files them as host compute; [`crate::base::steps::input_marks`]), by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_annotations: Vec<String>,
}

/// How a host's steps are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepModel {
    /// XProf's step grouping and breakdown ([`CATEGORIES`]).
    #[default]
    Xprof,
    /// The PyTorch TensorBoard plugin's ([`crate::base::pytorch::torch_steps`]).
    Pytorch,
}

impl StepModel {
    /// The breakdown's columns: `breakdown_ps[i]` of a step is `categories()[i]`.
    pub fn categories(self) -> &'static [Category] {
        match self {
            StepModel::Xprof => CATEGORIES,
            StepModel::Pytorch => crate::base::pytorch::torch_steps::TORCH_CATEGORIES,
        }
    }

    /// The model whose columns include the category `id` only it has.
    pub fn of_category(id: &str) -> Option<StepModel> {
        [StepModel::Xprof, StepModel::Pytorch]
            .into_iter()
            .find(|m| m.categories().iter().any(|c| c.id == id))
    }
}

/// What a PyTorch trace's steps carry beyond the rows.
#[derive(Debug, Clone, Serialize)]
pub struct TorchFigures {
    pub gpus: Vec<crate::base::pytorch::torch_steps::TorchGpu>,
    pub comm_overlap: Vec<crate::base::pytorch::torch_steps::CommOverlap>,
    pub has_device: bool,
    /// The collective ops, in time order.
    #[serde(skip)]
    pub comm_ops: Vec<crate::base::pytorch::torch_steps::CommOp>,
}

impl StepDb {
    /// The index of the breakdown column with id `id` in this host's [`StepDb::categories`].
    pub fn category(&self, id: &str) -> Option<usize> {
        self.categories().iter().position(|c| c.id == id)
    }

    /// The breakdown's columns.
    pub fn categories(&self) -> &'static [Category] {
        self.model.categories()
    }

    /// A PyTorch trace's steps as [`crate::base::pytorch::torch_steps::torch_steps`] forms them.
    pub fn of_torch(t: crate::base::pytorch::torch_steps::TorchSteps) -> StepDb {
        let hardware = if t.has_device {
            Hardware::Gpu
        } else {
            Hardware::CpuOnly
        };
        // (How the steps are formed is stated by the overview's `pytorch.step_definition`.)
        let notes = t.notes;
        StepDb {
            hardware,
            pre_grouped: false,
            groups: t.rows.len(),
            steps: t.rows.clone(),
            steps_all: t.rows,
            dropped_edges: false,
            notes,
            model: StepModel::Pytorch,
            torch: Some(TorchFigures {
                gpus: t.gpus,
                comm_overlap: t.comm_overlap,
                has_device: t.has_device,
                comm_ops: t.comm_ops,
            }),
            input_annotations: Vec::new(),
        }
    }
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

// What a stat key means to grouping (`Keys::slots`); 0: nothing.
const S_R: u8 = 1;
const S_A: u8 = 2;
const S_CORR: u8 = 3;
const S_ID: u8 = 4;
const S_ITER: u8 = 5;
const S_STEP: u8 = 6;
const S_GRAPH: u8 = 7;
const S_GROUP: u8 = 8;
const S_STEP_NAME: u8 = 9;
const S_IPL: u8 = 10;
const S_SHAPE: u8 = 11;
/// Slots from here on are flow ids, kept out of [`Ctx`] (most events of a JAX or TF profile have
/// them, few have anything else).
const S_FLOW: u8 = 12;
const S_P: u8 = 12;
const S_PT: u8 = 13;
const S_C: u8 = 14;
const S_CT: u8 = 15;
const S_PID: u8 = 16;

/// Stat keys the grouping reads, as a table from interned key to slot (one load per stat).
struct Keys {
    slots: Vec<u8>,
    /// The keys grouping reads other than flow types and ids (rare ones, and `_pid`).
    others: Vec<StrId>,
    group_id: Option<StrId>,
    process_id: Option<StrId>,
}

impl Keys {
    fn new(p: &Profile) -> Keys {
        let slots = crate::base::ops::events::stat_slots(
            p,
            &[
                ("_r", S_R),
                ("_a", S_A),
                ("correlation_id", S_CORR),
                ("id", S_ID),
                ("iter_num", S_ITER),
                ("step_num", S_STEP),
                ("graph_type", S_GRAPH),
                ("group_id", S_GROUP),
                ("step_name", S_STEP_NAME),
                ("_ipl_stage_name", S_IPL),
                ("shape", S_SHAPE),
                ("_p", S_P),
                ("_pt", S_PT),
                ("_c", S_C),
                ("_ct", S_CT),
                ("_pid", S_PID),
            ],
        );
        let others = (0..slots.len())
            .filter(|&k| matches!(slots[k], 1..S_FLOW | S_PID))
            .map(|k| StrId(k as u32))
            .collect();
        Keys {
            slots,
            others,
            group_id: p.key("group_id"),
            process_id: p.key("process_id"),
        }
    }
    #[inline(always)]
    fn slot(&self, key: StrId) -> u8 {
        self.slots.get(key.0 as usize).copied().unwrap_or(0)
    }
}

/// The stats (other than flow ids) of one event that grouping and classification read: metadata
/// stats, overridden by the event's own. Kept only for the events that have any.
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    r: Option<i64>,
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

/// Flow ids of one event (`_p`/`_pt`/`_c`/`_ct`/`_pid`); bit `slot - S_FLOW` of `set` says
/// which are present.
#[derive(Debug, Clone, Copy, Default)]
struct Flow {
    v: [u64; 5],
    set: u8,
}

impl Flow {
    #[inline(always)]
    fn put(&mut self, slot: u8, v: Option<u64>) {
        let b = slot - S_FLOW;
        match v {
            Some(x) => {
                self.v[b as usize] = x;
                self.set |= 1 << b;
            }
            None => self.set &= !(1 << b),
        }
    }
    #[inline(always)]
    fn get(&self, slot: u8) -> Option<u64> {
        let b = slot - S_FLOW;
        (self.set & (1 << b) != 0).then(|| self.v[b as usize])
    }
}

/// Reads the flow ids of `stats` into `f`; returns whether any other stat grouping reads is there.
#[inline(always)]
fn scan_stats(k: &Keys, stats: xlens_model::Stats<'_>, f: &mut Flow) -> bool {
    let mut rare = false;
    stats.select(
        |key| match k.slot(key) {
            0 => None,
            slot if slot >= S_FLOW => Some(slot),
            _ => {
                rare = true;
                None
            }
        },
        |slot, v| f.put(slot, v.as_id_bits()),
    );
    rare
}

/// Reads the non-flow stats grouping needs into `c` (overriding what is there).
fn read_ctx(k: &Keys, stats: xlens_model::Stats<'_>, c: &mut Ctx) {
    stats.select(
        |key| Some(k.slot(key)).filter(|&s| s != 0 && s < S_FLOW),
        |slot, v| {
            c.any = true;
            match slot {
                S_R => c.r = v.as_i64(),
                S_A => c.a = v.as_i64().unwrap_or(0) != 0,
                S_CORR => c.corr = v.as_id_bits(),
                S_ID => c.id = v.as_id_bits(),
                S_ITER => c.iter_num = v.as_i64(),
                S_STEP => c.step_num = v.as_i64(),
                S_GRAPH => c.graph_type = Some(v),
                S_GROUP => c.group_id = v.as_i64(),
                S_STEP_NAME => c.step_name = v.as_str_id(),
                S_IPL => c.ipl_stage = v.as_str_id().is_some(),
                _ => c.shape = v.as_str_id(),
            }
        },
    );
}

/// One end of a flow: the flow's (type, process id) as an index into [`Flows::types`], its id,
/// and the event. Ordered by (type, id, event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct FlowEnd {
    tp: u32,
    id: u64,
    g: u32,
}

impl FlowEnd {
    fn key(&self) -> (u32, u64) {
        (self.tp, self.id)
    }
}

/// Flow producers (sorted) and consumers (in event order) of the whole profile.
#[derive(Default)]
struct Flows<'a> {
    /// (flow type, process id) of each `tp`.
    types: Vec<(u64, u64)>,
    prods: Vec<FlowEnd>,
    /// Per line, in line order (the lines' own lists, not copied into one: megabytes of fresh
    /// memory on large profiles).
    cons: Vec<LineCons<'a>>,
}

impl Flows<'_> {
    /// The consumers, in event order.
    fn consumers(&self) -> impl Iterator<Item = FlowEnd> + Clone + '_ {
        self.cons.iter().flat_map(|c| {
            let (owned, listed): (&[FlowEnd], Option<&ListedCons<'_>>) = match c {
                LineCons::Found(v) => (v, None),
                LineCons::Listed(l) => (&[], Some(l)),
            };
            owned.iter().copied().chain(
                listed
                    .into_iter()
                    .flat_map(|l| l.refs.iter().map(move |x| l.end(x))),
            )
        })
    }

    fn consumer_count(&self) -> usize {
        self.cons
            .iter()
            .map(|c| match c {
                LineCons::Found(v) => v.len(),
                LineCons::Listed(l) => l.refs.len(),
            })
            .sum()
    }
}

/// One line's flow consumers: found in the events' stats, or the importer's list of the line's
/// flow ends, read where it is (on a JAX CPU profile of 207 MB, 1.5 million consumers: 23 MB
/// that copying them took at the grouping's peak).
enum LineCons<'a> {
    Found(Vec<FlowEnd>),
    Listed(ListedCons<'a>),
}

impl Default for LineCons<'_> {
    fn default() -> Self {
        LineCons::Found(Vec::new())
    }
}

/// The process of a listed flow end on `event`: its own `_pid` where `pids` (by event) names one,
/// else the plane's.
#[inline]
fn pid_at(pids: &[(u32, u64)], event: u32, plane_pid: u64) -> u64 {
    if pids.is_empty() {
        return plane_pid;
    }
    match pids.binary_search_by_key(&event, |p| p.0) {
        Ok(at) => pids[at].1,
        Err(_) => plane_pid,
    }
}

/// A line's listed consumers, and what makes each a [`FlowEnd`].
struct ListedCons<'a> {
    refs: &'a [FlowRef],
    /// The line's first global event id.
    base: u32,
    plane_pid: u64,
    /// Events whose `_pid` names another process than the plane's, by event.
    pids: Vec<(u32, u64)>,
    /// (flow type, process id) -> `tp`: the line's own numbering until [`merge_flows`] makes
    /// it the profile's.
    tps: Vec<((u64, u64), u32)>,
}

impl ListedCons<'_> {
    #[inline]
    fn end(&self, x: &FlowRef) -> FlowEnd {
        let key = (x.ty as u64, pid_at(&self.pids, x.event, self.plane_pid));
        let tp = self.tps.iter().find(|t| t.0 == key).map_or_else(
            || {
                debug_assert!(false, "a listed consumer's flow type was not numbered");
                0
            },
            |t| t.1,
        );
        FlowEnd {
            tp,
            id: x.id,
            g: self.base + x.event,
        }
    }
}

/// A flat index of the events that take part in grouping (every event of every non-TPU plane,
/// numbered line after line).
struct Flat<'a> {
    p: &'a Profile,
    /// (plane index, line index, first global id) per line.
    lines: Vec<(usize, usize, u32)>,
    n: usize,
    /// Events with any non-flow stat, by event.
    ctxs: Vec<(u32, Ctx)>,
    flows: Flows<'a>,
    /// The enclosing event on the same line (NONE: none, or an async event).
    nest_parent: Vec<u32>,
    /// The last event of the line nested (at any depth) in this one; descendants are exactly the
    /// non-async events up to it.
    last_desc: Vec<u32>,
    /// Dense group index per event (NONE: no group; empty until [`Flat::ungroup`]) and the
    /// group id of each index.
    group: Vec<u32>,
    group_ids: Vec<i64>,
    /// Consumers of a flow whose producer exists (input-pipeline stages only), found once the
    /// flows are joined; the flow ends are then dropped.
    async_child: HashSet<u32>,
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
    fn start(&self, g: u32) -> i64 {
        let (pl, li, i) = self.locate(g);
        self.p.planes[pl].lines[li].events.start(i)
    }
    fn ctx(&self, g: u32) -> &Ctx {
        static NO_CTX: Ctx = Ctx::EMPTY;
        self.get_ctx(g).unwrap_or(&NO_CTX)
    }
    fn get_ctx(&self, g: u32) -> Option<&Ctx> {
        let i = self.ctxs.binary_search_by_key(&g, |x| x.0).ok()?;
        self.ctxs.get(i).map(|x| &x.1)
    }
    /// The group id of event `g`, if grouped.
    fn group_id(&self, g: u32) -> Option<i64> {
        match self.group[g as usize] {
            NONE => None,
            d => self.group_ids.get(d as usize).copied(),
        }
    }
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
    let head = name.as_bytes().get(..10).unwrap_or(name.as_bytes());
    ["MEMCPYHTOD", "MEMCPYDTOH", "MEMCPYDTOD", "MEMCPYHTOH"]
        .into_iter()
        .find(|k| head.len() >= k.len() && head[..k.len()].eq_ignore_ascii_case(k.as_bytes()))
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
        || is_input_annotation(name)
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

/// Flattens every non-TPU line (on two threads for large profiles): non-flow stats of the events
/// that have any, flow producers/consumers and per-line nesting, to be merged into the flat index.
fn flatten<'a>(p: &'a Profile, k: &Keys) -> Unmerged<'a> {
    flatten_with(p, k, true)
}

/// [`flatten`]; with `tables` false, flows are always read from the stats.
fn flatten_with<'a>(p: &'a Profile, k: &Keys, tables: bool) -> Unmerged<'a> {
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
    // Per plane: metadata stats (has non-flow stats, ctx, flow) and the process id.
    let infos: Vec<Option<PlaneInfo>> = p
        .planes
        .iter()
        .enumerate()
        .map(|(pi, plane)| {
            lines.iter().any(|l| l.0 == pi).then(|| {
                let md: Vec<(bool, Ctx, Flow)> = plane
                    .event_metadata
                    .iter()
                    .map(|m| {
                        let (mut c, mut f) = (Ctx::default(), Flow::default());
                        let rare = scan_stats(k, m.stats(), &mut f);
                        read_ctx(k, m.stats(), &mut c);
                        (rare, c, f)
                    })
                    .collect();
                PlaneInfo {
                    md_flows: md.iter().any(|x| x.2.set != 0),
                    md_rare: md.iter().map(|x| x.0).collect(),
                    md,
                    pid: k
                        .process_id
                        .and_then(|key| plane.stats().get(key))
                        .and_then(|v| v.as_id_bits())
                        .unwrap_or(0),
                }
            })
        })
        .collect();
    // No parent yet, and each event its own last descendant (ids are global, so that is the
    // identity): written once here, not zeroed first (kept pages of `xlens hosts` are zeroed by
    // a memset) and then set by each line's job.
    let mut nest_parent = vec![NONE; n as usize];
    let mut last_desc: Vec<u32> = (0..n).collect();
    // One job per line, with its parts of the per-event columns; large profiles in two halves of
    // about equal event counts, one of them on another thread.
    let mut jobs: Vec<(usize, &mut [u32], &mut [u32])> = Vec::with_capacity(lines.len());
    {
        let (mut np, mut ld) = (&mut nest_parent[..], &mut last_desc[..]);
        for (li, &(pi, lj, _)) in lines.iter().enumerate() {
            let len = p.planes[pi].lines[lj].events.len();
            let (a, rest) = std::mem::take(&mut np).split_at_mut(len);
            np = rest;
            let (b, rest) = std::mem::take(&mut ld).split_at_mut(len);
            ld = rest;
            jobs.push((li, a, b));
        }
    }
    let run = |jobs: Vec<(usize, &mut [u32], &mut [u32])>| -> Vec<(usize, LinePart<'a>)> {
        jobs.into_iter()
            .map(|(li, np, ld)| {
                let (pi, lj, base) = lines[li];
                let info = infos[pi].as_ref();
                (
                    li,
                    flatten_line(
                        k,
                        info,
                        &p.planes[pi].lines[lj].events,
                        base,
                        tables,
                        np,
                        ld,
                    ),
                )
            })
            .collect()
    };
    let mut parts: Vec<(usize, LinePart<'a>)> = if n >= PARALLEL_MIN_EVENTS && jobs.len() > 1 {
        // Balanced by an estimate of the work: a line's events, and its flow ends where the
        // importer listed them (else the bytes of its stats, which are read then). Measured on
        // a JAX CPU profile: about 22 ns per event, 4 per flow end; counting stats bytes on
        // lines whose flows are listed left one thread idle for 40 % of the flattening.
        let costs: Vec<usize> = jobs
            .iter()
            .map(|j| {
                let (pi, lj, _) = lines[j.0];
                let ev = &p.planes[pi].lines[lj].events;
                ev.len() * 6
                    + ev.flows()
                        .map_or(ev.stats_bytes(), |f| f.producers.len() + f.consumers.len())
            })
            .collect();
        crate::base::par::run_split(jobs, &costs, run)
    } else {
        run(jobs)
    };
    parts.sort_unstable_by_key(|x| x.0);
    Unmerged {
        p,
        lines,
        n: n as usize,
        parts: parts.into_iter().map(|x| x.1).collect(),
        nest_parent,
        last_desc,
    }
}

/// What [`flatten`] leaves for a single thread: the lines' contexts and flow ends, merged by
/// [`Unmerged::merge`] (a caller can run other work alongside that).
struct Unmerged<'a> {
    p: &'a Profile,
    lines: Vec<(usize, usize, u32)>,
    n: usize,
    parts: Vec<LinePart<'a>>,
    nest_parent: Vec<u32>,
    last_desc: Vec<u32>,
}

impl Flat<'_> {
    /// Drops the flow ends (the async children must be taken first) and makes the group column,
    /// every event ungrouped: the two are not needed at the same time, and together they were
    /// the peak of a first overview.
    fn ungroup(&mut self) {
        self.flows = Flows::default();
        self.group = vec![NONE; self.n];
    }
}

impl<'a> Unmerged<'a> {
    fn merge(self) -> Flat<'a> {
        let mut parts = self.parts;
        // Each line's lists are dropped as soon as they are copied, and the group column is made
        // after: on a 20 MB profile this moment was the grouping's (and the overview's) peak.
        let mut ctxs = Vec::with_capacity(parts.iter().map(|x| x.ctxs.len()).sum());
        for part in &mut parts {
            ctxs.extend(std::mem::take(&mut part.ctxs));
        }
        let flows = merge_flows(&mut parts);
        drop(parts);
        Flat {
            p: self.p,
            lines: self.lines,
            n: self.n,
            ctxs,
            flows,
            nest_parent: self.nest_parent,
            last_desc: self.last_desc,
            // Made once the flow ends are dropped (`ungroup`), where the grouping needs it.
            group: Vec::new(),
            group_ids: Vec::new(),
            async_child: HashSet::default(),
        }
    }
}

/// The flow ends of all lines, with one table of flow types: producers sorted, consumers in event
/// order. Each thread writes the flows of one type with growing ids, so after a partition by type
/// the producers are a few sorted runs (one per thread), which the run-merging stable sort orders
/// in a few linear passes. The consumers are taken from the lines' parts.
fn merge_flows<'a>(parts: &mut [LinePart<'a>]) -> Flows<'a> {
    let mut types: Vec<(u64, u64)> = parts.iter().flat_map(|x| x.types.iter().copied()).collect();
    types.sort_unstable();
    types.dedup();
    let remap = |part: &LinePart<'_>| -> Vec<u32> {
        part.types
            .iter()
            .map(|t| types.binary_search(t).unwrap_or(0) as u32)
            .collect()
    };
    let maps: Vec<Vec<u32>> = parts.iter().map(remap).collect();
    let mut start = vec![0usize; types.len() + 1];
    for (part, map) in parts.iter().zip(&maps) {
        for e in &part.prods {
            start[map[e.tp as usize] as usize + 1] += 1;
        }
    }
    for b in 1..start.len() {
        start[b] += start[b - 1];
    }
    let total = start.last().copied().unwrap_or(0);
    let mut prods = vec![FlowEnd { tp: 0, id: 0, g: 0 }; total];
    let mut at = start.clone();
    for (part, map) in parts.iter_mut().zip(&maps) {
        for e in std::mem::take(&mut part.prods) {
            let tp = map[e.tp as usize];
            prods[at[tp as usize]] = FlowEnd { tp, ..e };
            at[tp as usize] += 1;
        }
    }
    let mut scratch = Vec::new();
    for w in start.windows(2) {
        sort_runs(&mut prods[w[0]..w[1]], &mut scratch);
    }
    let mut cons = Vec::with_capacity(parts.len());
    for (part, map) in parts.iter_mut().zip(&maps) {
        let mut c = std::mem::take(&mut part.cons);
        match &mut c {
            LineCons::Found(v) => {
                for e in v.iter_mut() {
                    e.tp = map[e.tp as usize];
                }
            }
            LineCons::Listed(l) => {
                l.tps = part
                    .types
                    .iter()
                    .copied()
                    .zip(map.iter().copied())
                    .collect();
            }
        }
        cons.push(c);
    }
    Flows { types, prods, cons }
}

/// Sorts a slice that is a few ascending runs (the flow ends of one type, written line by line)
/// by merging neighbouring runs, a pass at a time. Each merge sets aside only its shorter run,
/// so `scratch` holds at most half the slice; the standard library's stable sort takes a copy
/// of all of it for slices of this size (2 MB on a 20 MB profile, at the grouping's peak).
fn sort_runs<T: Ord + Copy>(v: &mut [T], scratch: &mut Vec<T>) {
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend((1..v.len()).filter(|&i| v[i] < v[i - 1]));
    bounds.push(v.len());
    while bounds.len() > 2 {
        for j in (0..bounds.len() - 2).step_by(2) {
            let (lo, mid, hi) = (bounds[j], bounds[j + 1], bounds[j + 2]);
            merge_runs(&mut v[lo..hi], mid - lo, scratch);
        }
        let last = v.len();
        bounds = bounds.iter().copied().step_by(2).collect();
        if bounds.last() != Some(&last) {
            bounds.push(last);
        }
    }
    scratch.clear();
}

/// Merges the ascending runs `w[..mid]` and `w[mid..]` in place, stably, setting aside the
/// shorter one.
fn merge_runs<T: Ord + Copy>(w: &mut [T], mid: usize, scratch: &mut Vec<T>) {
    if mid == 0 || mid == w.len() || w[mid - 1] <= w[mid] {
        return;
    }
    scratch.clear();
    if mid <= w.len() - mid {
        // Forward: the left run aside; on ties the left element goes first.
        scratch.extend_from_slice(&w[..mid]);
        let (mut i, mut j, mut k) = (0, mid, 0);
        while i < scratch.len() && j < w.len() {
            if w[j] < scratch[i] {
                w[k] = w[j];
                j += 1;
            } else {
                w[k] = scratch[i];
                i += 1;
            }
            k += 1;
        }
        w[k..k + scratch.len() - i].copy_from_slice(&scratch[i..]);
    } else {
        // Backward: the right run aside; on ties the right element goes last.
        scratch.extend_from_slice(&w[mid..]);
        let (mut i, mut j, mut k) = (mid, scratch.len(), w.len());
        while i > 0 && j > 0 {
            if scratch[j - 1] < w[i - 1] {
                w[k - 1] = w[i - 1];
                i -= 1;
            } else {
                w[k - 1] = scratch[j - 1];
                j -= 1;
            }
            k -= 1;
        }
        w[..j].copy_from_slice(&scratch[..j]);
    }
}

/// Profiles with fewer events are flattened on one thread.
const PARALLEL_MIN_EVENTS: u32 = 200_000;

/// Metadata stats of one plane (has non-flow stats, ctx, flow), whether any metadata has
/// flow stats, and the plane's process id.
struct PlaneInfo {
    md: Vec<(bool, Ctx, Flow)>,
    /// `md`'s first field alone: what every event asks, in a table that stays in cache (`md`'s
    /// entries are ~200 bytes each).
    md_rare: Vec<bool>,
    md_flows: bool,
    pid: u64,
}

/// What flattening one line finds besides its nesting.
#[derive(Default)]
struct LinePart<'a> {
    ctxs: Vec<(u32, Ctx)>,
    /// Flow ends; `tp` indexes this line's `types`.
    prods: Vec<FlowEnd>,
    cons: LineCons<'a>,
    types: Vec<(u64, u64)>,
}

impl LinePart<'_> {
    fn flow_type(&mut self, t: u64, pid: u64) -> u32 {
        match self.types.iter().position(|x| *x == (t, pid)) {
            Some(i) => i as u32,
            None => {
                self.types.push((t, pid));
                self.types.len() as u32 - 1
            }
        }
    }
}

/// Flattens one line whose first event has global id `base`: fills its nesting parents and last
/// descendants (global ids; given as `NONE` and as each event's own id) and returns its contexts
/// and flow endpoints.
fn flatten_line<'a>(
    k: &Keys,
    info: Option<&PlaneInfo>,
    ev: &'a xlens_model::Events,
    base: u32,
    tables: bool,
    nest_parent: &mut [u32],
    last_desc: &mut [u32],
) -> LinePart<'a> {
    let mut part = LinePart::default();
    // Consumers found in the stats (without the importer's list).
    let mut found_cons: Vec<FlowEnd> = Vec::new();
    let md: &[(bool, Ctx, Flow)] = info.map_or(&[], |x| &x.md);
    let md_rare: &[bool] = info.map_or(&[], |x| &x.md_rare);
    let plane_pid = info.map_or(0, |x| x.pid);
    // The importer's list of flow ends stands for the stats when the events' flows are all
    // their own (no metadata flows, no `_pid`) and no other stat grouping reads can be there:
    // then no event's stats need reading. Where the importer kept flows in the list only, the
    // list it is, and the other stats (`_pid` too) are read from the events.
    let others = k.others.iter().any(|&key| ev.may_have_stat(key));
    let md_flows = info.is_some_and(|x| x.md_flows);
    let only_listed = ev.flows().is_some_and(|f| f.not_in_stats);
    let table = ev
        .flows()
        .filter(|_| only_listed || (tables && !md_flows && !others));
    // Events of a listed-only line whose `_pid` names another process than the plane's.
    let mut pids: Vec<(u32, u64)> = Vec::new();
    let (starts, durs, metas) = (ev.starts(), ev.durations(), ev.metadata_indices());
    debug_assert!(nest_parent.iter().all(|&x| x == NONE));
    debug_assert!(last_desc
        .iter()
        .enumerate()
        .all(|(i, &d)| d == base + i as u32));
    // Open enclosing events: (start, end, index).
    let mut stack: Vec<(i64, i64, u32)> = Vec::new();
    for i in 0..ev.len() {
        let g = base + i as u32;
        let mdv = || md.get(metas[i] as usize);
        let md_is_rare = md_rare.get(metas[i] as usize).copied().unwrap_or(false);
        let mut f = Flow::default();
        let read_stats = table.is_none() || others;
        if read_stats || md_flows {
            // (With the list, only a metadata `_pid` counts: the importer keeps flows in
            // the stats on planes whose metadata have them.)
            if let Some(x) = mdv() {
                f = x.2;
            }
        }
        let rare = if read_stats {
            scan_stats(k, ev.stats(i), &mut f) || md_is_rare
        } else {
            md_is_rare
        };
        let mut is_async = false;
        if rare {
            // The event's own stats override its metadata's.
            let mut c = mdv().map(|x| x.1).unwrap_or_default();
            if read_stats {
                read_ctx(k, ev.stats(i), &mut c);
            }
            is_async = c.a;
            part.ctxs.push((g, c));
        }
        if table.is_some() {
            // Flow ends come from the list; only the process id from here.
            if let Some(pid) = f.get(S_PID).filter(|&x| x != plane_pid) {
                pids.push((i as u32, pid));
            }
        } else if f.set != 0 {
            let pid = f.get(S_PID).unwrap_or(plane_pid);
            if let (Some(t), Some(id)) = (f.get(S_PT), f.get(S_P)) {
                let tp = part.flow_type(t, pid);
                part.prods.push(FlowEnd { tp, id, g });
            }
            if let (Some(t), Some(id)) = (f.get(S_CT), f.get(S_C)) {
                let tp = part.flow_type(t, pid);
                found_cons.push(FlowEnd { tp, id, g });
            }
        }
        if is_async {
            continue;
        }
        let (s, e) = (starts[i], starts[i].saturating_add(durs[i]));
        while let Some(&(ts, te, top)) = stack.last() {
            if ts <= s && e <= te {
                nest_parent[i] = base + top;
                break;
            }
            stack.pop();
        }
        stack.push((s, e, i as u32));
    }
    if let Some(t) = table {
        let pid_of = |event: u32| pid_at(&pids, event, plane_pid);
        part.prods.reserve_exact(t.producers.len());
        for x in &t.producers {
            let tp = part.flow_type(x.ty as u64, pid_of(x.event));
            part.prods.push(FlowEnd {
                tp,
                id: x.id,
                g: base + x.event,
            });
        }
        // The consumers stay in the list; only their (type, process) pairs are numbered here.
        for x in &t.consumers {
            part.flow_type(x.ty as u64, pid_of(x.event));
        }
        part.cons = LineCons::Listed(ListedCons {
            refs: &t.consumers,
            base,
            plane_pid,
            pids,
            tps: Vec::new(),
        });
    }
    // Last descendant, children before parents.
    for i in (0..ev.len()).rev() {
        let par = nest_parent[i];
        if par != NONE {
            let d = last_desc[i];
            let pd = &mut last_desc[(par - base) as usize];
            *pd = (*pd).max(d);
        }
    }
    // Kept until the flows are joined: no room left over from growing.
    part.prods.shrink_to_fit();
    if table.is_none() {
        found_cons.shrink_to_fit();
        part.cons = LineCons::Found(found_cons);
    }
    part
}

/// Producer → consumer links between events with equal flow keys (`prods` sorted). Like XProf,
/// every pair is linked unless both sides have 64 or more events with the key.
fn join_flows(
    prods: &[FlowEnd],
    cons: impl Iterator<Item = FlowEnd> + Clone,
    links: &mut Vec<(u32, u32)>,
) {
    // Keys with 64 or more producers link only if they have fewer than 64 consumers.
    let mut big: HashMap<(u32, u64), usize> = HashMap::default();
    let mut i = 0;
    while i < prods.len() {
        let key = prods[i].key();
        let n = prods[i..].iter().take_while(|x| x.key() == key).count();
        if n >= 64 {
            big.insert(key, 0);
        }
        i += n;
    }
    if !big.is_empty() {
        for c in cons.clone() {
            if let Some(n) = big.get_mut(&c.key()) {
                *n += 1;
            }
        }
    }
    // Consumers come in event order, the ids of each flow type mostly rising: search from the
    // last position of the consumer's type. (Lines interleave flow types: JAX CPU op threads
    // switch between two types tens of thousands of times, and one position for all made each
    // switch a search across the whole list.) Within a type, ids may also come from several
    // producers that number them apart in their upper 32 bits (JAX's CPU clients and op threads:
    // `thread << 32 | n`), and a consumer thread switches between them: one last position per
    // type and upper half, in a small table indexed by both, keeps each search short (with one
    // per type, a third of the grouping's flow joining went to searches across the list).
    const SLOTS: usize = 64;
    let slot = |key: (u32, u64)| {
        let h = (key.0 as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add((key.1 >> 32).wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
        (h >> 58) as usize % SLOTS
    };
    let mut last_pos = [0usize; SLOTS];
    for c in cons {
        let key = c.key();
        let at = slot(key);
        let pos = lower_bound_near(prods, last_pos[at], key);
        last_pos[at] = pos;
        if big.get(&key).is_some_and(|&n| n >= 64) {
            continue;
        }
        links.extend(
            prods[pos..]
                .iter()
                .take_while(|x| x.key() == key)
                .map(|x| (x.g, c.g)),
        );
    }
}

/// The first index whose key is not below `key`, found by galloping from `from`.
fn lower_bound_near(v: &[FlowEnd], from: usize, key: (u32, u64)) -> usize {
    let from = from.min(v.len());
    let (mut lo, mut hi);
    if from < v.len() && v[from].key() < key {
        // Forward: the answer is in (lo, hi].
        lo = from;
        let mut step = 1;
        hi = from + 1;
        while hi < v.len() && v[hi].key() < key {
            lo = hi;
            step *= 2;
            hi = from + step;
        }
        hi = hi.min(v.len());
        lo += 1;
    } else {
        // Backward: the answer is in [lo, from].
        hi = from;
        let mut step = 1;
        lo = from.saturating_sub(1);
        while lo > 0 && v[lo].key() >= key {
            hi = lo;
            step *= 2;
            lo = from.saturating_sub(step);
        }
        if v.get(lo).is_some_and(|x| x.key() >= key) {
            return lo;
        }
    }
    lo + v[lo..hi].partition_point(|x| x.key() < key)
}

/// Events linked to their parents by something other than nesting: children by parent (CSR over
/// the events that have any) and the links sorted by child (for the few ancestor walks).
struct Links {
    /// Bit `g` is set when event `g` has children.
    has: Vec<u64>,
    /// Events with children before each word of `has`.
    rank: Vec<u32>,
    /// `children[child_off[k]..child_off[k + 1]]` are the children of the `k`-th event that has
    /// any. (An offset per event of the profile took 19 MB on a JAX CPU profile of 207 MB and
    /// 4.8 million events, a third of which have children.)
    child_off: Vec<u32>,
    children: Vec<u32>,
    by_child: Vec<(u32, u32)>,
}

impl Links {
    fn new(n: usize, mut links: Vec<(u32, u32)>) -> Links {
        let mut has = vec![0u64; n.div_ceil(64)];
        for &(a, _) in &links {
            has[a as usize / 64] |= 1 << (a % 64);
        }
        let mut rank = Vec::with_capacity(has.len());
        let mut parents = 0u32;
        for w in &has {
            rank.push(parents);
            parents += w.count_ones();
        }
        let mut links_of = Links {
            has,
            rank,
            child_off: Vec::new(),
            children: Vec::new(),
            by_child: Vec::new(),
        };
        let mut off = vec![0u32; parents as usize + 2];
        for &(a, _) in &links {
            off[links_of.parent_index(a) + 2] += 1;
        }
        for i in 2..off.len() {
            off[i] += off[i - 1];
        }
        let mut children = vec![0u32; links.len()];
        for &(a, b) in &links {
            let slot = &mut off[links_of.parent_index(a) + 1];
            children[*slot as usize] = b;
            *slot += 1;
        }
        off.pop();
        // Stable: a child's parents stay in link order. Flow links arrive in child order already,
        // and then no sort (its buffer is half the links) is needed.
        if !links.is_sorted_by_key(|l| l.1) {
            links.sort_by_key(|l| l.1);
        }
        links.shrink_to_fit();
        links_of.child_off = off;
        links_of.children = children;
        links_of.by_child = links;
        links_of
    }

    /// The index among the events with children of `g`, which has some.
    #[inline]
    fn parent_index(&self, g: u32) -> usize {
        let (w, b) = (g as usize / 64, g % 64);
        let below = self.has[w] & ((1u64 << b) - 1);
        self.rank[w] as usize + below.count_ones() as usize
    }

    fn children(&self, g: u32) -> &[u32] {
        match self.has.get(g as usize / 64) {
            Some(w) if w >> (g % 64) & 1 == 1 => {
                let k = self.parent_index(g);
                &self.children[self.child_off[k] as usize..self.child_off[k + 1] as usize]
            }
            _ => &[],
        }
    }
    fn parents(&self, g: u32) -> impl Iterator<Item = u32> + '_ {
        let from = self.by_child.partition_point(|l| l.1 < g);
        self.by_child[from..]
            .iter()
            .take_while(move |l| l.1 == g)
            .map(|l| l.0)
    }
}

/// Groups events the way XProf's `GroupTfEvents` does; returns the step name XProf writes on each
/// (non-implicit) root event, by event, and the number of groups.
fn group_events(flat: &mut Flat<'_>) -> (HashMap<u32, String>, usize) {
    let p = flat.p;
    let mut names = HashMap::default();
    // CheckLoopOp: any loop op in the metadata disables grouping.
    for plane in &p.planes {
        if plane
            .event_metadata
            .iter()
            .any(|m| LOOP_OPS.contains(&p.str(m.name)))
        {
            flat.ungroup();
            return (names, 0);
        }
    }
    // Links (parent -> child) other than nesting.
    let mut links: Vec<(u32, u32)> = Vec::new();
    let mut launches: HashMap<u64, u32> = HashMap::default();
    let mut executes: Vec<(u64, u32)> = Vec::new();
    let mut executors: HashMap<(u64, i64), u32> = HashMap::default();
    let mut get_next: Vec<((u64, i64), u32)> = Vec::new();
    let mut tf_data_ids: Vec<u64> = Vec::new();
    let mut loop_events: Vec<(u64, i64, u32)> = Vec::new();
    // (level, start, event); sorted by level (higher first), start, then event order.
    let mut roots: Vec<(i64, i64, u32)> = Vec::new();
    for &(g, ref c) in &flat.ctxs {
        let (pl, li, i) = flat.locate(g);
        let plane = &p.planes[pl];
        let line = &plane.lines[li];
        let is_host = p.str(plane.name) == "/host:CPU";
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
        }
    }
    // `TraceContext` events without an `_r` level are roots of level 1.
    for &(pi, lj, base) in &flat.lines {
        let plane = &p.planes[pi];
        let Some(tc) = plane
            .event_metadata
            .iter()
            .position(|m| p.str(m.name) == "TraceContext")
        else {
            continue;
        };
        let ev = &plane.lines[lj].events;
        for (i, &m) in ev.metadata_indices().iter().enumerate() {
            let g = base + i as u32;
            if m as usize == tc && flat.ctx(g).r.is_none() {
                roots.push((1, ev.start(i), g));
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
    // Flows link mostly one producer to each consumer.
    links.reserve(flat.flows.consumer_count());
    join_flows(&flat.flows.prods, flat.flows.consumers(), &mut links);
    flat.ungroup();
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
    let mut loop_roots: Vec<(i64, u32)> = Vec::new();
    for iters in loops.values() {
        if iters.len() == 1 && iters.contains_key(&0) {
            continue;
        }
        for evs in iters.values() {
            let Some(&first) = evs.iter().min_by_key(|g| flat.start(**g)) else {
                continue;
            };
            loop_roots.push((flat.start(first), first));
            for &e in evs {
                if e != first {
                    links.push((first, e));
                }
            }
        }
    }
    let links = Links::new(flat.n, links);
    let parents_of = |flat: &Flat<'_>, g: u32, out: &mut Vec<u32>| {
        out.clear();
        let np = flat.nest_parent[g as usize];
        if np != NONE {
            out.push(np);
        }
        out.extend(links.parents(g));
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
    let mut walk = Walk { todo: Vec::new() };
    if !loop_roots.is_empty() {
        loop_roots.sort_by_key(|x| x.0);
        order = loop_roots.iter().map(|x| x.1).collect();
        for (gid, &g) in order.iter().enumerate() {
            walk.assign(flat, &links, g, gid as u32);
        }
    } else {
        roots.retain(|&(_, _, g)| !is_tf_data(flat.ctx(g)));
        roots.sort_unstable_by_key(|&(lvl, t, g)| (std::cmp::Reverse(lvl), t, g));
        let mut ps = Vec::new();
        for &(lvl, _, g) in &roots {
            if flat.group[g as usize] != NONE {
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
            walk.assign(flat, &links, g, order.len() as u32 - 1);
        }
    }
    flat.group_ids = (0..order.len() as i64).collect();
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

/// Group assignment: from a root, every event reachable through not-yet-grouped events (nested
/// children on its line and linked children). The reachable set does not depend on the visiting
/// order, so a depth-first walk gives XProf's breadth-first result. An event reached twice is
/// skipped the second time (it is grouped by then).
struct Walk {
    todo: Vec<u32>,
}

impl Walk {
    fn assign(&mut self, flat: &mut Flat<'_>, links: &Links, root: u32, gid: u32) {
        self.todo.clear();
        self.todo.push(root);
        while let Some(x) = self.todo.pop() {
            if flat.group[x as usize] != NONE {
                continue;
            }
            flat.group[x as usize] = gid;
            // Nested children: the events up to `x`'s last descendant whose parent is `x`; a
            // child's own descendants are skipped over.
            let last = flat.last_desc[x as usize];
            let mut c = x + 1;
            while c <= last {
                if flat.nest_parent[c as usize] == x {
                    if flat.group[c as usize] == NONE {
                        self.todo.push(c);
                    }
                    c = flat.last_desc[c as usize] + 1;
                } else {
                    c += 1;
                }
            }
            for &c in links.children(x) {
                if flat.group[c as usize] == NONE {
                    self.todo.push(c);
                }
            }
        }
    }
}

#[derive(Default, Debug)]
struct StepEvents {
    /// (is_device, begin, end)
    markers: Vec<(bool, i64, i64)>,
    events: Vec<(EventType, i64, i64)>,
    name: Option<String>,
    /// (plane, metadata) of the input annotations among `events`, each once.
    annotations: Vec<(usize, u32)>,
}

/// How a host event's name classifies it (computed once per metadata).
#[derive(Clone, Copy)]
struct HostKind {
    marker: bool,
    compute: bool,
    /// Type when not a root input stage / when it is.
    plain: EventType,
    stage: EventType,
    trace_context: bool,
    /// A data-stage annotation ([`is_input_annotation`]), counted as input.
    annotation: bool,
}

/// Host step events (CPU-only profiles). Each host line gives its events' part of the steps;
/// large profiles have their lines shared between two threads, and the parts are joined in line
/// order (so each step lists its events as one pass over the lines would).
/// Consumers of a flow whose (type, id) some producer has, by event: the events an
/// input-pipeline stage reaches asynchronously. Empty when no event is a stage (nothing asks).
fn async_children(flat: &Flat<'_>) -> HashSet<u32> {
    let mut out = HashSet::default();
    if !flat.ctxs.iter().any(|c| c.1.ipl_stage) {
        return out;
    }
    let types = &flat.flows.types;
    let mut parents: Vec<(u64, u64)> = flat
        .flows
        .prods
        .iter()
        .map(|e| (types[e.tp as usize].0, e.id))
        .collect();
    parents.sort_unstable();
    parents.dedup();
    for e in flat.flows.consumers() {
        if parents
            .binary_search(&(types[e.tp as usize].0, e.id))
            .is_ok()
        {
            out.insert(e.g);
        }
    }
    out
}

fn host_step_events(flat: &Flat<'_>, root_names: &HashMap<u32, String>) -> Vec<StepEvents> {
    host_step_events_with(flat, root_names, PARALLEL_MIN_EVENTS as usize)
}

/// [`host_step_events`], on two threads from `parallel_min_events` events.
fn host_step_events_with(
    flat: &Flat<'_>,
    root_names: &HashMap<u32, String>,
    parallel_min_events: usize,
) -> Vec<StepEvents> {
    let p = flat.p;
    let stages = flat.ctxs.iter().any(|c| c.1.ipl_stage);
    let async_child = &flat.async_child;
    let lines: Vec<usize> = (0..flat.lines.len())
        .filter(|&li| p.str(p.planes[flat.lines[li].0].name) == "/host:CPU")
        .collect();
    let len = |li: usize| {
        let (pi, lj, _) = flat.lines[li];
        p.planes[pi].lines[lj].events.len()
    };
    let run = |ls: Vec<usize>| -> Vec<(usize, Vec<StepEvents>)> {
        let mut kinds = (usize::MAX, Vec::new());
        ls.into_iter()
            .map(|li| {
                let part =
                    host_line_step_events(flat, root_names, stages, async_child, li, &mut kinds);
                (li, part)
            })
            .collect()
    };
    let events: usize = lines.iter().map(|&li| len(li)).sum();
    let mut parts = if events >= parallel_min_events && lines.len() > 1 {
        let costs: Vec<usize> = lines.iter().map(|&li| len(li)).collect();
        crate::base::par::run_split(lines, &costs, run)
    } else {
        run(lines)
    };
    parts.sort_unstable_by_key(|x| x.0);
    let mut out: Vec<StepEvents> = Vec::new();
    out.resize_with(flat.group_ids.len(), StepEvents::default);
    for (_, part) in parts {
        for (o, sd) in out.iter_mut().zip(part) {
            if o.markers.is_empty() {
                o.markers = sd.markers;
            } else {
                o.markers.extend(sd.markers);
            }
            if o.events.is_empty() {
                o.events = sd.events;
            } else {
                o.events.extend(sd.events);
            }
            if sd.name.is_some() {
                o.name = sd.name;
            }
            for m in sd.annotations {
                if !o.annotations.contains(&m) {
                    o.annotations.push(m);
                }
            }
        }
    }
    out
}

/// One host line's part of the steps: per group, the line's markers and events, and the last
/// step name the line gives (empty when no event of the line is grouped). `kinds` caches the
/// classification of the plane's metadata between lines.
fn host_line_step_events(
    flat: &Flat<'_>,
    root_names: &HashMap<u32, String>,
    stages: bool,
    async_child: &HashSet<u32>,
    li: usize,
    kinds: &mut (usize, Vec<HostKind>),
) -> Vec<StepEvents> {
    let p = flat.p;
    let mut out: Vec<StepEvents> = Vec::new();
    let (pi, lj, base) = flat.lines[li];
    let plane = &p.planes[pi];
    if kinds.0 != pi {
        let v = plane
            .event_metadata
            .iter()
            .map(|m| {
                let name = p.str(m.name);
                HostKind {
                    marker: is_explicit_marker(name),
                    compute: is_real_cpu_compute(name),
                    plain: classify_cpu(name, false),
                    stage: classify_cpu(name, true),
                    trace_context: name == "TraceContext",
                    annotation: is_input_annotation(name),
                }
            })
            .collect();
        *kinds = (pi, v);
    }
    let line = &plane.lines[lj];
    let ev = &line.events;
    let (starts, durs, metas) = (ev.starts(), ev.durations(), ev.metadata_indices());
    // (end, group, type of the enclosing emitted event of the same group or 255, is_stage,
    // is_descendant of an async producer or stage)
    let mut stack: Vec<(i64, u32, u8, bool, bool)> = Vec::new();
    let mut cur = flat.ctxs.partition_point(|x| x.0 < base);
    for i in 0..ev.len() {
        let g = base + i as u32;
        // Contexts are sorted by event: follow them with a cursor.
        while flat.ctxs.get(cur).is_some_and(|x| x.0 < g) {
            cur += 1;
        }
        let c = flat.ctxs.get(cur).filter(|x| x.0 == g).map(|x| &x.1);
        let (s, e) = (starts[i], starts[i].saturating_add(durs[i]));
        let ipl = c.is_some_and(|c| c.ipl_stage);
        let mut is_desc = stages && async_child.contains(&g);
        // Events are sorted by start, so an event that does not contain `s` ends before it.
        while let Some(top) = stack.last() {
            if e <= top.0 {
                break;
            }
            stack.pop();
        }
        let parent = stack.last().copied();
        if let Some(top) = parent {
            is_desc = is_desc || top.4 || top.3;
        }
        let gid = flat.group[g as usize];
        let Some(kind) = kinds.1.get(metas[i] as usize).copied() else {
            stack.push((e, gid, 255, ipl, is_desc));
            continue;
        };
        if gid == NONE {
            stack.push((e, gid, 255, ipl, is_desc));
            continue;
        }
        if out.is_empty() {
            out.resize_with(flat.group_ids.len(), StepEvents::default);
        }
        let Some(sd) = out.get_mut(gid as usize) else {
            stack.push((e, gid, 255, ipl, is_desc));
            continue;
        };
        let step_name = if c.is_some() || kind.trace_context {
            c.and_then(|c| c.step_name)
                .map(|x| p.str(x))
                .or_else(|| root_names.get(&g).map(|s| s.as_str()))
                .filter(|x| !x.is_empty())
        } else {
            None
        };
        let mut emitted = 255u8;
        if kind.marker || step_name.is_some() {
            sd.markers.push((false, s, e));
        } else if kind.compute {
            let ty = if ipl && !is_desc {
                kind.stage
            } else {
                kind.plain
            };
            emitted = ty as u8;
            // An event inside an emitted event of the same step and type adds nothing to the
            // breakdown (the sweep gives the same pieces without it).
            let covered = parent.is_some_and(|t| t.1 == gid && t.2 == emitted);
            if !covered {
                sd.events.push((ty, s, e));
            }
            let mark = (pi, metas[i]);
            if kind.annotation && !sd.annotations.contains(&mark) {
                sd.annotations.push(mark);
            }
        }
        if let Some(n) = step_name {
            sd.name = Some(n.to_string());
        }
        stack.push((e, gid, emitted, ipl, is_desc));
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
                let Some(gid) = c.group_id.or_else(|| flat.group_id(g)) else {
                    continue;
                };
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

/// Step rows from each group's events, `ev` in group-id order.
fn build_rows(ev: Vec<(i64, StepEvents)>, has_device: bool) -> Vec<StepRow> {
    let mut rows = Vec::new();
    for (gid, sd) in ev {
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
        rows.push(StepRow {
            group_id: gid,
            name: sd.name.unwrap_or_else(|| gid.to_string()),
            begin_ps: b,
            duration_ps: e - b,
            breakdown_ps: breakdown_of(&type_ps),
            columns: N_CATEGORIES as u8,
        });
    }
    rows
}

/// Computes the steps of one host's profile as XProf does.
pub fn step_db(p: &Profile) -> StepDb {
    step_db_prepare(p).finish()
}

/// The first, parallel half of [`step_db`] (the flat event index); [`StepDbPrep::finish`] does
/// the mostly sequential rest, so that a caller can run other work alongside it.
pub struct StepDbPrep<'a> {
    p: &'a Profile,
    hardware: Hardware,
    keys: Keys,
    flat: Option<Unmerged<'a>>,
    torch: Option<crate::base::pytorch::torch_steps::TorchSteps>,
}

/// See [`StepDbPrep`].
pub fn step_db_prepare(p: &Profile) -> StepDbPrep<'_> {
    let tpu = device_planes(p, DeviceKind::Tpu);
    let gpu = device_planes(p, DeviceKind::Gpu);
    let hardware = if !tpu.is_empty() {
        Hardware::Tpu
    } else if !gpu.is_empty() {
        Hardware::Gpu
    } else {
        Hardware::CpuOnly
    };
    let keys = Keys::new(p);
    // A PyTorch trace's steps are the PyTorch plugin's.
    let torch = crate::base::pytorch::torch_steps::torch_steps(p);
    let flat = (hardware != Hardware::Tpu && torch.is_none()).then(|| flatten(p, &keys));
    StepDbPrep {
        p,
        hardware,
        keys,
        flat,
        torch,
    }
}

impl StepDbPrep<'_> {
    /// Groups the events into steps and breaks each step down.
    pub fn finish(self) -> StepDb {
        let notes = Vec::new();
        if let Some(t) = self.torch {
            return StepDb::of_torch(t);
        }
        match self.flat {
            Some(flat) => steps_of(self.hardware, &self.keys, flat.merge(), notes),
            None => tpu_steps(self.p, notes),
        }
    }
}

fn steps_of(hardware: Hardware, k: &Keys, mut flat: Flat<'_>, mut notes: Vec<String>) -> StepDb {
    flat.async_child = async_children(&flat);
    let pre_grouped = k.group_id.is_some() && flat.ctxs.iter().any(|c| c.1.group_id.is_some());
    let (root_names, groups) = if pre_grouped {
        let mut gids: Vec<i64> = flat
            .ctxs
            .iter()
            .filter_map(|c| c.1.group_id)
            .filter(|g| *g >= 0)
            .collect();
        gids.sort_unstable();
        gids.dedup();
        flat.ungroup();
        for i in 0..flat.ctxs.len() {
            let (g, c) = flat.ctxs[i];
            if let Some(d) = c.group_id.and_then(|v| gids.binary_search(&v).ok()) {
                flat.group[g as usize] = d as u32;
            }
        }
        flat.group_ids = gids.clone();
        notes.push("The file is already grouped (it carries `group_id` stats); its groups are used as they are.".to_string());
        (HashMap::default(), gids.len())
    } else {
        group_events(&mut flat)
    };
    let mut input_annotations = Vec::new();
    let rows = match hardware {
        Hardware::Gpu => {
            // XProf names device steps by group id only.
            let mut ev: Vec<(i64, StepEvents)> = gpu_step_events(&flat).into_iter().collect();
            ev.sort_unstable_by_key(|x| x.0);
            build_rows(ev, true)
        }
        _ => {
            let ev = host_step_events(&flat, &root_names);
            let mut names: Vec<String> = ev
                .iter()
                .flat_map(|sd| sd.annotations.iter())
                .filter_map(|&(pi, m)| flat.p.planes[pi].event_metadata.get(m as usize))
                .map(|md| flat.p.str(md.name).to_string())
                .collect();
            names.sort_unstable();
            names.dedup();
            input_annotations = names;
            build_rows(flat.group_ids.iter().copied().zip(ev).collect(), false)
        }
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
        model: StepModel::Xprof,
        torch: None,
        input_annotations,
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
            StepRow {
                group_id: i as i64,
                name,
                begin_ps: b,
                duration_ps: d,
                breakdown_ps: breakdown_of(&type_ps),
                columns: N_CATEGORIES as u8,
            }
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
        model: StepModel::Xprof,
        torch: None,
        input_annotations: Vec::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_runs_sorts_like_the_standard_sort() {
        // Pairs ordered by the first field only would show an unstable merge; the second field
        // numbers the input.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        struct K(u32, u32);
        impl PartialOrd for K {
            fn partial_cmp(&self, o: &K) -> Option<std::cmp::Ordering> {
                Some(self.cmp(o))
            }
        }
        impl Ord for K {
            fn cmp(&self, o: &K) -> std::cmp::Ordering {
                self.0.cmp(&o.0)
            }
        }
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        let mut scratch = Vec::new();
        for case in 0..300 {
            let runs = 1 + case % 9;
            let mut v = Vec::new();
            for _ in 0..runs {
                let len = next() % 60;
                let mut x = next() % 20;
                for _ in 0..len {
                    x += next() % 3;
                    v.push(x);
                }
            }
            if case % 7 == 0 {
                v.iter_mut().for_each(|x| *x = next() % 10);
            }
            let mut a: Vec<K> = v.iter().enumerate().map(|(i, &x)| K(x, i as u32)).collect();
            let mut b = a.clone();
            sort_runs(&mut a, &mut scratch);
            b.sort();
            assert_eq!(
                a.iter().map(|k| (k.0, k.1)).collect::<Vec<_>>(),
                b.iter().map(|k| (k.0, k.1)).collect::<Vec<_>>(),
                "case {case}"
            );
        }
    }

    #[test]
    fn links_give_each_events_children_and_parents_in_link_order() {
        // Parents spread over several words of the bit set, some with many children, event 0
        // and the last event among them; a few links out of child order.
        let n = 300u32;
        let mut x = 12345u64;
        let mut next = |m: u32| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) % m as u64) as u32
        };
        let mut links: Vec<(u32, u32)> = vec![(0, 5), (n - 1, 3), (63, 64), (64, 63)];
        for _ in 0..500 {
            let a = if next(4) == 0 { 130 } else { next(n) };
            links.push((a, next(n)));
        }
        let l = Links::new(n as usize, links.clone());
        for g in 0..n {
            let want: Vec<u32> = links.iter().filter(|x| x.0 == g).map(|x| x.1).collect();
            assert_eq!(l.children(g), &want[..], "children of {g}");
            let want: Vec<u32> = links.iter().filter(|x| x.1 == g).map(|x| x.0).collect();
            assert_eq!(l.parents(g).collect::<Vec<_>>(), want, "parents of {g}");
        }
        assert!(l.children(n + 100).is_empty());
    }

    #[test]
    fn galloping_search_agrees_with_binary_search() {
        // Sorted keys with duplicates and gaps; every start position and every probe key.
        let ids = [1u64, 1, 2, 5, 5, 5, 8, 13, 13, 21, 34, 34, 34, 34, 55];
        let v: Vec<FlowEnd> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| FlowEnd {
                tp: 1,
                id,
                g: i as u32,
            })
            .collect();
        for tp in 0..3 {
            for probe in 0..60u64 {
                let key = (tp, probe);
                let want = v.partition_point(|x| x.key() < key);
                for from in 0..=v.len() + 2 {
                    assert_eq!(lower_bound_near(&v, from, key), want, "{key:?} from {from}");
                }
            }
        }
        assert_eq!(lower_bound_near(&[], 0, (0, 1)), 0);
    }

    #[test]
    fn flattening_from_the_flow_lists_equals_reading_the_stats() {
        let p = crate::jax_fixture();
        let k = Keys::new(&p);
        let listed = p
            .planes
            .iter()
            .flat_map(|pl| &pl.lines)
            .filter_map(|l| l.events.flows())
            .map(|f| f.producers.len() + f.consumers.len())
            .sum::<usize>();
        assert!(listed > 1000, "{listed} flow ends listed");
        let a = flatten_with(&p, &k, true).merge();
        let b = flatten_with(&p, &k, false).merge();
        assert_eq!(a.flows.types, b.flows.types);
        assert_eq!(a.flows.prods, b.flows.prods);
        assert_eq!(
            a.flows.consumers().collect::<Vec<_>>(),
            b.flows.consumers().collect::<Vec<_>>()
        );
        assert!(a.flows.prods.len() + a.flows.consumers().count() >= listed);
        assert_eq!(format!("{:?}", a.ctxs), format!("{:?}", b.ctxs));
        assert_eq!(a.nest_parent, b.nest_parent);
        assert_eq!(a.last_desc, b.last_desc);
    }

    /// A decode of `bytes` that keeps flow stats in the flow lists only.
    fn flows_listed_only(bytes: &[u8]) -> Profile {
        let leave = xlens_xspace::LeaveOut {
            stats: &[],
            flow_stats: true,
        };
        xlens_xspace::decode_leaving_out(bytes, &|_, _| {}, leave, xlens_xspace::Release::Lines)
            .expect("decodes")
    }

    /// Flattening a read whose flows are in the lists only gives what reading every stat of a
    /// full read gives.
    fn assert_flattened_alike(full: &Profile, part: &Profile) {
        let (kf, kp) = (Keys::new(full), Keys::new(part));
        let a = flatten_with(full, &kf, false).merge();
        let b = flatten_with(part, &kp, true).merge();
        assert_eq!(a.flows.types, b.flows.types);
        assert_eq!(a.flows.prods, b.flows.prods);
        assert_eq!(
            a.flows.consumers().collect::<Vec<_>>(),
            b.flows.consumers().collect::<Vec<_>>()
        );
        assert_eq!(format!("{:?}", a.ctxs), format!("{:?}", b.ctxs));
        assert_eq!(a.nest_parent, b.nest_parent);
        assert_eq!(a.last_desc, b.last_desc);
    }

    #[test]
    fn flattening_flows_listed_only_equals_reading_every_stat() {
        // The JAX fixture: XLA op threads (flows only) and the Python thread (flows beside
        // step roots and step numbers, read from the stats).
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"
        );
        let bytes = std::fs::read(path).expect("the committed JAX fixture");
        let (full, part) = (
            xlens_xspace::decode(&bytes).unwrap(),
            flows_listed_only(&bytes),
        );
        let lines = |p: &Profile| {
            p.planes
                .iter()
                .flat_map(|pl| &pl.lines)
                .filter(|l| l.events.flows().is_some_and(|f| f.not_in_stats))
                .count()
        };
        assert_eq!(lines(&full), 0);
        assert!(lines(&part) >= 4, "{} lines", lines(&part));
        assert_flattened_alike(&full, &part);

        // Hand-made: flows on another process (`_pid`, on an event and on its metadata)
        // beside flows of the plane's own, and a step root on the same line.
        use xlens_proto::tensorflow::profiler as pb;
        let stat = |id: i64, v: i64| pb::XStat {
            metadata_id: id,
            value: Some(pb::x_stat::Value::Int64Value(v)),
        };
        let ev = |md: i64, at: i64, dur: i64, stats: Vec<pb::XStat>| pb::XEvent {
            metadata_id: md,
            data: Some(pb::x_event::Data::OffsetPs(at)),
            duration_ps: dur,
            stats,
        };
        let names = ["_p", "_pt", "_c", "_ct", "_pid", "_r", "process_id"];
        let mut plane = pb::XPlane {
            id: 1,
            name: "/host:CPU".into(),
            ..Default::default()
        };
        for (i, n) in names.iter().enumerate() {
            let id = i as i64 + 1;
            plane.stat_metadata.insert(
                id,
                pb::XStatMetadata {
                    id,
                    name: n.to_string(),
                    ..Default::default()
                },
            );
        }
        plane.stats.push(stat(7, 40));
        for (id, name, stats) in [
            (1, "step", vec![]),
            (2, "op", vec![]),
            (3, "far", vec![stat(5, 77)]),
        ] {
            plane.event_metadata.insert(
                id,
                pb::XEventMetadata {
                    id,
                    name: name.into(),
                    stats,
                    ..Default::default()
                },
            );
        }
        let line = |id: i64, name: &str, events: Vec<pb::XEvent>| pb::XLine {
            id,
            name: name.into(),
            events,
            ..Default::default()
        };
        let main = vec![
            ev(1, 0, 1000, vec![stat(6, 1), stat(1, 10), stat(2, 3)]),
            ev(2, 10, 100, vec![stat(1, 11), stat(2, 3), stat(5, 99)]),
            ev(3, 200, 100, vec![stat(1, 12), stat(2, 3)]),
            ev(2, 400, 100, vec![stat(3, 10), stat(4, 3)]),
        ];
        let worker = vec![
            ev(2, 0, 50, vec![stat(3, 11), stat(4, 3), stat(5, 99)]),
            ev(2, 100, 50, vec![stat(3, 12), stat(4, 3), stat(5, 77)]),
            ev(2, 300, 50, vec![stat(3, 12), stat(4, 3)]),
            ev(2, 400, 50, vec![stat(3, 13), stat(4, 3), stat(5, 77)]),
        ];
        // No stat but flows: the process comes from the metadata alone.
        let third = vec![ev(3, 0, 10, vec![stat(1, 13), stat(2, 3)])];
        plane.lines = vec![
            line(1, "main", main),
            line(2, "worker", worker),
            line(3, "third", third),
        ];
        let space = pb::XSpace {
            planes: vec![plane],
            ..Default::default()
        };
        let bytes = prost::Message::encode_to_vec(&space);
        let (full, part) = (
            xlens_xspace::decode(&bytes).unwrap(),
            flows_listed_only(&bytes),
        );
        assert_eq!(lines(&part), 3);
        assert_flattened_alike(&full, &part);
        // Three flow types: the plane's (40), and process 99's and 77's.
        let kp = Keys::new(&part);
        let b = flatten_with(&part, &kp, true).merge();
        assert_eq!(b.flows.types.len(), 3, "{:?}", b.flows.types);
    }

    #[test]
    fn host_step_events_on_two_threads_equal_one_pass() {
        let p = crate::jax_fixture();
        let k = Keys::new(&p);
        let mut flat = flatten(&p, &k).merge();
        let (names, groups) = group_events(&mut flat);
        assert_eq!(groups, 10);
        let one = host_step_events_with(&flat, &names, usize::MAX);
        let two = host_step_events_with(&flat, &names, 0);
        assert_eq!(format!("{one:?}"), format!("{two:?}"));
        // Several lines give events to the same steps.
        let with_events = one.iter().filter(|s| s.events.len() > 1).count();
        assert_eq!(with_events, 10);
        assert!(one
            .iter()
            .all(|s| s.name.is_some() && !s.markers.is_empty()));
    }

    #[test]
    fn flows_join_every_producer_with_its_consumers() {
        // Two lines: flow types interleaved as threads write them (two process ids), a key with
        // two producers, a consumer whose producer is missing, and one whose producer is in
        // another process.
        let end = |tp, id, g| FlowEnd { tp, id, g };
        let a = LinePart {
            prods: vec![end(0, 20, 0), end(1, 3, 1), end(0, 14, 2)],
            cons: LineCons::Found(vec![end(1, 4, 5)]),
            types: vec![(15, 7), (0, 7)],
            ..Default::default()
        };
        let b = LinePart {
            prods: vec![end(0, 4, 3), end(0, 4, 4), end(1, 14, 6)],
            cons: LineCons::Found(vec![end(1, 14, 10), end(0, 9, 11), end(1, 20, 12)]),
            types: vec![(0, 7), (15, 8)],
            ..Default::default()
        };
        let flows = merge_flows(&mut [a, b]);
        assert_eq!(flows.types, vec![(0, 7), (15, 7), (15, 8)]);
        assert!(flows.prods.windows(2).all(|w| w[0] <= w[1]));
        let mut links = Vec::new();
        join_flows(&flows.prods, flows.consumers(), &mut links);
        // (0,4) in line a's table is type (0,7): producers 3 and 4. (15,14) of process 8 has
        // producer 6; (15,20) of process 8 has none (producer 0 is process 7).
        assert_eq!(links, vec![(3, 5), (4, 5), (6, 10)]);
    }
}
