//! Every non-TPU line flattened into one index (on two threads for large profiles): the events'
//! contexts, flow producers and consumers joined across lines, and each event's category.

use super::*;

/// One end of a flow: the flow's (type, process id) as an index into [`Flows::types`], its id,
/// and the event. Ordered by (type, id, event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct FlowEnd {
    pub(super) tp: u32,
    pub(super) id: u64,
    pub(super) g: u32,
}

impl FlowEnd {
    pub(super) fn key(&self) -> (u32, u64) {
        (self.tp, self.id)
    }
}

/// Flow producers (sorted) and consumers (in event order) of the whole profile.
#[derive(Default)]
pub(super) struct Flows<'a> {
    /// (flow type, process id) of each `tp`.
    pub(super) types: Vec<(u64, u64)>,
    pub(super) prods: Vec<FlowEnd>,
    /// Per line, in line order (the lines' own lists, not copied into one: megabytes of fresh
    /// memory on large profiles).
    pub(super) cons: Vec<LineCons<'a>>,
}

impl Flows<'_> {
    /// The consumers, in event order.
    pub(super) fn consumers(&self) -> impl Iterator<Item = FlowEnd> + Clone + '_ {
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

    pub(super) fn consumer_count(&self) -> usize {
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
pub(super) enum LineCons<'a> {
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
pub(super) fn pid_at(pids: &[(u32, u64)], event: u32, plane_pid: u64) -> u64 {
    if pids.is_empty() {
        return plane_pid;
    }
    match pids.binary_search_by_key(&event, |p| p.0) {
        Ok(at) => pids[at].1,
        Err(_) => plane_pid,
    }
}

/// A line's listed consumers, and what makes each a [`FlowEnd`].
pub(super) struct ListedCons<'a> {
    pub(super) refs: &'a [FlowRef],
    /// The line's first global event id.
    pub(super) base: u32,
    pub(super) plane_pid: u64,
    /// Events whose `_pid` names another process than the plane's, by event.
    pub(super) pids: Vec<(u32, u64)>,
    /// (flow type, process id) -> `tp`: the line's own numbering until [`merge_flows`] makes
    /// it the profile's.
    pub(super) tps: Vec<((u64, u64), u32)>,
}

impl ListedCons<'_> {
    #[inline]
    pub(super) fn end(&self, x: &FlowRef) -> FlowEnd {
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
pub(super) struct Flat<'a> {
    pub(super) p: &'a Profile,
    /// (plane index, line index, first global id) per line.
    pub(super) lines: Vec<(usize, usize, u32)>,
    pub(super) n: usize,
    /// Events with any non-flow stat, by event.
    pub(super) ctxs: Vec<(u32, Ctx)>,
    pub(super) flows: Flows<'a>,
    /// The enclosing event on the same line (NONE: none, or an async event).
    pub(super) nest_parent: Vec<u32>,
    /// The last event of the line nested (at any depth) in this one; descendants are exactly the
    /// non-async events up to it.
    pub(super) last_desc: Vec<u32>,
    /// Dense group index per event (NONE: no group; empty until [`Flat::ungroup`]) and the
    /// group id of each index.
    pub(super) group: Vec<u32>,
    pub(super) group_ids: Vec<i64>,
    /// Consumers of a flow whose producer exists (input-pipeline stages only), found once the
    /// flows are joined; the flow ends are then dropped.
    pub(super) async_child: HashSet<u32>,
}

impl<'a> Flat<'a> {
    pub(super) fn locate(&self, g: u32) -> (usize, usize, usize) {
        let i = self.lines.partition_point(|l| l.2 <= g) - 1;
        let (pl, li, base) = self.lines[i];
        (pl, li, (g - base) as usize)
    }
    pub(super) fn name(&self, g: u32) -> &'a str {
        let (pl, li, i) = self.locate(g);
        let plane = &self.p.planes[pl];
        plane
            .metadata_of(&plane.lines[li], i)
            .map(|m| self.p.str(m.name))
            .unwrap_or("")
    }
    pub(super) fn start(&self, g: u32) -> i64 {
        let (pl, li, i) = self.locate(g);
        self.p.planes[pl].lines[li].events.start(i)
    }
    pub(super) fn ctx(&self, g: u32) -> &Ctx {
        static NO_CTX: Ctx = Ctx::EMPTY;
        self.get_ctx(g).unwrap_or(&NO_CTX)
    }
    pub(super) fn get_ctx(&self, g: u32) -> Option<&Ctx> {
        let i = self.ctxs.binary_search_by_key(&g, |x| x.0).ok()?;
        self.ctxs.get(i).map(|x| &x.1)
    }
    /// The group id of event `g`, if grouped.
    pub(super) fn group_id(&self, g: u32) -> Option<i64> {
        match self.group[g as usize] {
            NONE => None,
            d => self.group_ids.get(d as usize).copied(),
        }
    }
}

pub(super) fn is_explicit_marker(name: &str) -> bool {
    (name.starts_with("train") || name.starts_with("test") || name.starts_with("TraceContext"))
        && !name.contains('/')
}

pub(super) fn is_real_cpu_compute(name: &str) -> bool {
    !(name.starts_with("EagerExecute")
        || name.starts_with("EagerLocalExecute")
        || name.starts_with("EagerKernelExecute")
        || name.starts_with("FunctionRun")
        || is_explicit_marker(name))
}

pub(super) fn memcpy_kind(name: &str) -> Option<&'static str> {
    if name.contains(':') {
        return None;
    }
    let head = name.as_bytes().get(..10).unwrap_or(name.as_bytes());
    ["MEMCPYHTOD", "MEMCPYDTOH", "MEMCPYDTOD", "MEMCPYHTOH"]
        .into_iter()
        .find(|k| head.len() >= k.len() && head[..k.len()].eq_ignore_ascii_case(k.as_bytes()))
}

pub(super) fn classify_cpu(name: &str, root_stage: bool) -> EventType {
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

pub(super) fn classify_gpu(name: &str, shape: Option<&str>) -> EventType {
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
pub(super) fn flatten<'a>(p: &'a Profile, k: &Keys) -> Unmerged<'a> {
    flatten_with(p, k, true)
}

/// [`flatten`]; with `tables` false, flows are always read from the stats.
pub(super) fn flatten_with<'a>(p: &'a Profile, k: &Keys, tables: bool) -> Unmerged<'a> {
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
pub(super) struct Unmerged<'a> {
    pub(super) p: &'a Profile,
    pub(super) lines: Vec<(usize, usize, u32)>,
    pub(super) n: usize,
    pub(super) parts: Vec<LinePart<'a>>,
    pub(super) nest_parent: Vec<u32>,
    pub(super) last_desc: Vec<u32>,
}

impl Flat<'_> {
    /// Drops the flow ends (the async children must be taken first) and makes the group column,
    /// every event ungrouped: the two are not needed at the same time, and together they were
    /// the peak of a first overview.
    pub(super) fn ungroup(&mut self) {
        self.flows = Flows::default();
        self.group = vec![NONE; self.n];
    }
}

impl<'a> Unmerged<'a> {
    pub(super) fn merge(self) -> Flat<'a> {
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
pub(super) fn merge_flows<'a>(parts: &mut [LinePart<'a>]) -> Flows<'a> {
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
pub(super) fn sort_runs<T: Ord + Copy>(v: &mut [T], scratch: &mut Vec<T>) {
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
pub(super) fn merge_runs<T: Ord + Copy>(w: &mut [T], mid: usize, scratch: &mut Vec<T>) {
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
pub(super) const PARALLEL_MIN_EVENTS: u32 = 200_000;

/// Metadata stats of one plane (has non-flow stats, ctx, flow), whether any metadata has
/// flow stats, and the plane's process id.
pub(super) struct PlaneInfo {
    pub(super) md: Vec<(bool, Ctx, Flow)>,
    /// `md`'s first field alone: what every event asks, in a table that stays in cache (`md`'s
    /// entries are ~200 bytes each).
    pub(super) md_rare: Vec<bool>,
    pub(super) md_flows: bool,
    pub(super) pid: u64,
}

/// What flattening one line finds besides its nesting.
#[derive(Default)]
pub(super) struct LinePart<'a> {
    pub(super) ctxs: Vec<(u32, Ctx)>,
    /// Flow ends; `tp` indexes this line's `types`.
    pub(super) prods: Vec<FlowEnd>,
    pub(super) cons: LineCons<'a>,
    pub(super) types: Vec<(u64, u64)>,
}

impl LinePart<'_> {
    pub(super) fn flow_type(&mut self, t: u64, pid: u64) -> u32 {
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
pub(super) fn flatten_line<'a>(
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
pub(super) fn join_flows(
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
pub(super) fn lower_bound_near(v: &[FlowEnd], from: usize, key: (u32, u64)) -> usize {
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
