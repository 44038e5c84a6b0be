//! The events of each step group, on the host and the device, cut into non-overlapping typed
//! pieces.

use super::*;

#[derive(Default, Debug)]
pub(super) struct StepEvents {
    /// (is_device, begin, end)
    pub(super) markers: Vec<(bool, i64, i64)>,
    pub(super) events: Vec<(EventType, i64, i64)>,
    pub(super) name: Option<String>,
    /// (plane, metadata) of the input annotations among `events`, each once.
    pub(super) annotations: Vec<(usize, u32)>,
}

/// How a host event's name classifies it (computed once per metadata).
#[derive(Clone, Copy)]
pub(super) struct HostKind {
    pub(super) marker: bool,
    pub(super) compute: bool,
    /// Type when not a root input stage / when it is.
    pub(super) plain: EventType,
    pub(super) stage: EventType,
    pub(super) trace_context: bool,
    /// A data-stage annotation ([`is_input_annotation`]), counted as input.
    pub(super) annotation: bool,
}

/// Host step events (CPU-only profiles). Each host line gives its events' part of the steps;
/// large profiles have their lines shared between two threads, and the parts are joined in line
/// order (so each step lists its events as one pass over the lines would).
/// Consumers of a flow whose (type, id) some producer has, by event: the events an
/// input-pipeline stage reaches asynchronously. Empty when no event is a stage (nothing asks).
pub(super) fn async_children(flat: &Flat<'_>) -> HashSet<u32> {
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

pub(super) fn host_step_events(
    flat: &Flat<'_>,
    root_names: &HashMap<u32, String>,
) -> Vec<StepEvents> {
    host_step_events_with(flat, root_names, PARALLEL_MIN_EVENTS as usize)
}

/// [`host_step_events`], on two threads from `parallel_min_events` events.
pub(super) fn host_step_events_with(
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
pub(super) fn host_line_step_events(
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
pub(super) fn gpu_step_events(flat: &Flat<'_>) -> HashMap<i64, StepEvents> {
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
pub(super) fn non_overlapped(events: &[(EventType, i64, i64)]) -> Vec<(EventType, i64, i64)> {
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

pub(super) const ALL_TYPES: [EventType; N_TYPES] = [
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

pub(super) fn step_span(markers: &[(bool, i64, i64)]) -> (i64, i64) {
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
