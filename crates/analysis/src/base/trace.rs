//! Trace viewer: a level-of-detail index over every line of every host of a session.
//!
//! For a time window and a pixel width, [`TraceIndex::query`] returns, per track and nesting depth,
//! every event at least about one pixel wide and, for runs of narrower events, merged summary boxes
//! (count, covered time, name of the longest). Its cost and size are bounded by width × tracks ×
//! depths, whatever the trace size; zooming in always reaches individual events, so nothing is
//! unreachable.
//!
//! How: events at one depth of one line never overlap (see `EventsBuilder::finish`), so in any
//! window at most `width + 1` of them can be a pixel wide. Per depth the index keeps the event
//! indices in start order, a prefix sum of durations (covered time of any run in O(1)), and a
//! max-tree over each event's duration class (⌈log2 dur⌉) that finds the wide events of a window in
//! O(k log n) and the longest event of a run in O(log n).

use serde::Serialize;
use std::sync::Arc;
use xlens_model::{Line, Plane, Profile, StatValue};

use crate::base::device::{device_ordinal, DeviceKind};

/// One host's profile as the trace viewer sees it.
pub struct TraceHost {
    pub name: String,
    pub profile: Arc<Profile>,
    /// Added to this host's times to place it on the session's common axis.
    pub offset_ps: i64,
}

/// One drawable timeline: a line of a plane of a host.
pub struct Track {
    pub id: u32,
    pub host: u32,
    pub plane: u32,
    pub line: u32,
    /// Group shown above the track's rows (e.g. `vm /device:TPU:0`).
    pub group: String,
    pub name: String,
    depths: Vec<DepthIndex>,
}

struct DepthIndex {
    /// Indices into the line's events, in start order.
    idx: Vec<u32>,
    /// `prefix[k]` = sum of durations of `idx[..k]`.
    prefix: Vec<i64>,
    tree: MaxTree,
}

/// Duration class: 0 for 0 ps, else ⌈log2⌉-ish (bit length), so class ≥ c means dur ≥ 2^(c-1).
#[inline]
fn class(d: i64) -> u8 {
    if d <= 0 {
        0
    } else {
        (64 - (d as u64).leading_zeros()) as u8
    }
}

/// A segment tree of maxima over duration classes.
struct MaxTree {
    size: usize,
    t: Vec<u8>,
}

impl MaxTree {
    fn new(vals: impl ExactSizeIterator<Item = u8>) -> MaxTree {
        let n = vals.len();
        let size = n.next_power_of_two().max(1);
        let mut t = vec![0u8; 2 * size];
        for (i, v) in vals.enumerate() {
            t[size + i] = v;
        }
        for i in (1..size).rev() {
            t[i] = t[2 * i].max(t[2 * i + 1]);
        }
        MaxTree { size, t }
    }

    /// Leaves in `[lo, hi)` whose value is `>= c`, in order.
    fn at_least(&self, lo: usize, hi: usize, c: u8, out: &mut Vec<usize>) {
        if lo >= hi {
            return;
        }
        // Explicit stack of (node, node_lo, node_hi), right child pushed first.
        let mut stack = vec![(1usize, 0usize, self.size)];
        while let Some((node, a, b)) = stack.pop() {
            if b <= lo || a >= hi || self.t[node] < c {
                continue;
            }
            if b - a == 1 {
                out.push(a);
                continue;
            }
            let m = (a + b) / 2;
            stack.push((2 * node + 1, m, b));
            stack.push((2 * node, a, m));
        }
    }

    /// Position of (one of) the largest leaves in `[lo, hi)`, without allocating.
    fn argmax(&self, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        // The maximum over the range (standard bottom-up walk)...
        let (mut l, mut r) = (lo + self.size, hi + self.size);
        let mut best = 0u8;
        while l < r {
            if l & 1 == 1 {
                best = best.max(self.t[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                best = best.max(self.t[r]);
            }
            l >>= 1;
            r >>= 1;
        }
        // ...then the leftmost leaf in range reaching it, by depth-first descent.
        let mut stack = [(0usize, 0usize, 0usize); 64];
        let mut sp = 1;
        stack[0] = (1, 0, self.size);
        while sp > 0 {
            sp -= 1;
            let (node, a, b) = stack[sp];
            if b <= lo || a >= hi || self.t[node] < best {
                continue;
            }
            if b - a == 1 {
                return Some(a);
            }
            let m = (a + b) / 2;
            stack[sp] = (2 * node + 1, m, b);
            stack[sp + 1] = (2 * node, a, m);
            sp += 2;
        }
        Some(lo)
    }
}

/// The level-of-detail index of a session.
pub struct TraceIndex {
    pub hosts: Vec<TraceHost>,
    pub tracks: Vec<Track>,
    pub total_events: u64,
    /// Earliest start and latest end on the common axis.
    pub span: (i64, i64),
    /// Counter series drawn as line charts (see [`counter_tracks`]).
    pub counters: Vec<Counter>,
    /// Flow endpoints by id, built on first use (see [`TraceIndex::flows_of`]).
    flows: std::sync::OnceLock<FlowIndex>,
    /// Steps per host, built on first use.
    steps: std::sync::OnceLock<Vec<crate::base::steps::annotations::Steps>>,
    /// How each host was placed on the common axis (several hosts only).
    pub clocks: Vec<crate::base::hosts::align::HostClock>,
}

/// A counter: values over time, drawn as a line chart under its group.
pub struct Counter {
    pub id: u32,
    pub group: String,
    pub name: String,
    /// Sorted times on the common axis, and the value from each time on.
    pub times: Vec<i64>,
    pub values: Vec<f64>,
}

/// Counter series of one host: (1) lines whose events are all instants (zero duration) carrying
/// numeric stats — one series per stat; (2) each allocator's memory in use
/// (`bytes_allocated` + `bytes_reserved`) from host `MemoryAllocation` / `MemoryDeallocation`
/// events.
fn counter_tracks(p: &Profile, offset: i64, host_label: &str, out: &mut Vec<Counter>) {
    let group = |plane: &Plane| {
        if host_label.is_empty() {
            p.str(plane.name).to_string()
        } else {
            format!("{host_label} {}", p.str(plane.name))
        }
    };
    for plane in &p.planes {
        for line in &plane.lines {
            let ev = &line.events;
            if ev.is_empty() || ev.durations().iter().any(|&d| d != 0) {
                continue;
            }
            let mut series: Vec<(xlens_model::StrId, Vec<i64>, Vec<f64>)> = Vec::new();
            for i in 0..ev.len() {
                for st in ev.stats(i) {
                    let Some(v) = st.value.as_f64() else { continue };
                    let k = match series.iter().position(|x| x.0 == st.key) {
                        Some(k) => k,
                        None => {
                            series.push((st.key, Vec::new(), Vec::new()));
                            series.len() - 1
                        }
                    };
                    series[k].1.push(ev.start(i) + offset);
                    series[k].2.push(v);
                }
            }
            for (key, times, values) in series {
                out.push(Counter {
                    id: 0,
                    group: group(plane),
                    name: format!("{} · {}", p.str(line.name), p.str(key)),
                    times,
                    values,
                });
            }
        }
    }
    let (Some(alloc), Some(dealloc), Some(bytes)) = (
        p.key("MemoryAllocation"),
        p.key("MemoryDeallocation"),
        p.key("bytes_allocated"),
    ) else {
        return;
    };
    let reserved = p.key("bytes_reserved");
    // Which allocator: the last of these stats on the event (as the memory profile does).
    let ids = [
        p.key("index_on_host"),
        p.key("device_ordinal"),
        p.key("allocator_name"),
    ];
    for plane in &p.planes {
        if !p.str(plane.name).starts_with("/host:") {
            continue;
        }
        let mut per: Vec<(String, Vec<(i64, f64)>)> = Vec::new();
        for line in &plane.lines {
            let ev = &line.events;
            for i in 0..ev.len() {
                let Some(md) = plane.metadata_of(line, i) else {
                    continue;
                };
                if md.name != alloc && md.name != dealloc {
                    continue;
                }
                let stats = ev.stats(i);
                let Some(b) = stats.get(bytes).and_then(|v| v.as_f64()) else {
                    continue;
                };
                let r = reserved
                    .and_then(|k| stats.get(k))
                    .and_then(|v| v.as_f64())
                    .unwrap_or(0.0);
                let name = stats
                    .iter()
                    .filter(|st| ids.contains(&Some(st.key)))
                    .last()
                    .map(|st| st.value.display(&p.strings))
                    .unwrap_or_else(|| "allocator".to_string());
                let k = match per.iter().position(|x| x.0 == name) {
                    Some(k) => k,
                    None => {
                        per.push((name, Vec::new()));
                        per.len() - 1
                    }
                };
                per[k].1.push((ev.start(i) + offset, b + r));
            }
        }
        for (name, mut pts) in per {
            pts.sort_by_key(|x| x.0);
            out.push(Counter {
                id: 0,
                group: group(plane),
                name: format!("memory in use · {name}"),
                times: pts.iter().map(|x| x.0).collect(),
                values: pts.iter().map(|x| x.1).collect(),
            });
        }
    }
}

/// The points of a counter to draw in a window: per pixel the first, minimum, maximum and last
/// value (so spikes survive), plus the value in force at the window's start. Bounded by 4 × width.
fn counter_points(c: &Counter, start: i64, end: i64, ps_per_px: f64) -> (Vec<i64>, Vec<f64>) {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let lo = c.times.partition_point(|&t| t < start);
    if lo > 0 {
        ts.push(c.times[lo - 1]);
        vs.push(c.values[lo - 1]);
    }
    let hi = c.times.partition_point(|&t| t <= end);
    let mut k = lo;
    while k < hi {
        let px = ((c.times[k] - start) as f64 / ps_per_px).floor();
        let mut e = k + 1;
        while e < hi && ((c.times[e] - start) as f64 / ps_per_px).floor() == px {
            e += 1;
        }
        if e - k <= 4 {
            ts.extend_from_slice(&c.times[k..e]);
            vs.extend_from_slice(&c.values[k..e]);
        } else {
            let seg = &c.values[k..e];
            let (mut imin, mut imax) = (0, 0);
            for (j, v) in seg.iter().enumerate() {
                if *v < seg[imin] {
                    imin = j;
                }
                if *v > seg[imax] {
                    imax = j;
                }
            }
            let mut pick = [0, imin.min(imax), imin.max(imax), e - k - 1];
            pick.sort_unstable();
            let mut last = usize::MAX;
            for j in pick {
                if j != last {
                    ts.push(c.times[k + j]);
                    vs.push(c.values[k + j]);
                    last = j;
                }
            }
        }
        k = e;
    }
    (ts, vs)
}

/// Where each flow id appears: producers (`_p`), consumers (`_c`) and GPU `correlation_id`s.
#[derive(Default)]
struct FlowIndex {
    producers: std::collections::HashMap<(u32, i64), Vec<(u32, u32)>>,
    consumers: std::collections::HashMap<(u32, i64), Vec<(u32, u32)>>,
    correlation: std::collections::HashMap<(u32, i64), Vec<(u32, u32)>>,
}

/// One end of a flow arrow attached to the selected event.
#[derive(Debug, Clone, Serialize)]
pub struct FlowLink {
    /// `out`: the selected event produces (launches) the other; `in`: it consumes it.
    pub direction: &'static str,
    /// `producer/consumer` (`_p`/`_c` stats) or `correlation_id` (GPU launch ↔ kernel).
    pub kind: &'static str,
    pub id: i64,
    pub track: u32,
    pub index: u32,
    pub depth: u16,
    pub start_ps: i64,
    pub dur_ps: i64,
    pub name: String,
}

/// Display rank of a plane: devices first (by kind and ordinal), then host threads.
fn plane_rank(name: &str) -> (u8, u32, String) {
    if let Some(o) = device_ordinal(name, DeviceKind::Tpu) {
        (0, o, String::new())
    } else if let Some(o) = device_ordinal(name, DeviceKind::Gpu) {
        (1, o, String::new())
    } else if name.starts_with("/device:") {
        (2, 0, name.to_string())
    } else {
        (3, 0, name.to_string())
    }
}

/// Display rank of a line within its plane: steps, modules and ops on top, as users know them.
fn line_rank(name: &str) -> u8 {
    match name {
        "Steps" => 0,
        "XLA Modules" => 1,
        "XLA Ops" => 2,
        "Async XLA Ops" => 3,
        "Framework Ops" | "TensorFlow Ops" => 4,
        "Framework Name Scope" | "TensorFlow Name Scope" => 5,
        "Source code" => 6,
        "XLA TraceMe" => 7,
        _ if name.starts_with("Stream #") => 8,
        _ => 9,
    }
}

/// Per host, named ends on its own clock ([`crate::base::hosts::align`]).
pub type HostEnds = Vec<Vec<(String, i64)>>;

impl TraceIndex {
    /// Builds the index over hosts (each loaded once, shared with other tools).
    pub fn build(hosts: Vec<(String, Arc<Profile>)>) -> TraceIndex {
        Self::build_aligned(hosts, None)
    }

    /// [`TraceIndex::build`], the hosts' clocks aligned on the ends they share when `ends` is
    /// given ([`crate::base::hosts::align`]): per host, its step ends (step name, end on the host's
    /// own axis), and per host its collective ends ([`crate::base::hosts::align::collective_ends`]).
    pub fn build_aligned(
        hosts: Vec<(String, Arc<Profile>)>,
        ends: Option<(HostEnds, HostEnds)>,
    ) -> TraceIndex {
        // Common axis: align hosts whose clocks are known; others start at 0.
        let min_origin = hosts
            .iter()
            .filter(|(_, p)| p.origin_is_wall_clock)
            .map(|(_, p)| p.origin_ps)
            .min();
        let hosts: Vec<TraceHost> = hosts
            .into_iter()
            .map(|(name, profile)| {
                let offset_ps = match min_origin {
                    Some(m) if profile.origin_is_wall_clock => {
                        i64::try_from(profile.origin_ps - m).unwrap_or(0)
                    }
                    _ => 0,
                };
                TraceHost {
                    name,
                    profile,
                    offset_ps,
                }
            })
            .collect();
        let mut hosts = hosts;
        let clocks = if hosts.len() > 1 {
            let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
            let raw: Vec<i64> = hosts.iter().map(|h| h.offset_ps).collect();
            match &ends {
                Some((steps, colls)) if steps.len() == hosts.len() => {
                    crate::base::hosts::align::align(&names, &raw, steps, colls)
                }
                _ => crate::base::hosts::align::align::<&str, &str>(
                    &names,
                    &raw,
                    &vec![Vec::new(); hosts.len()],
                    &[],
                ),
            }
        } else {
            Vec::new()
        };
        for (h, c) in hosts.iter_mut().zip(&clocks) {
            h.offset_ps = h.offset_ps.saturating_add(c.correction_ps);
        }
        let mut order = Vec::new();
        for (h, host) in hosts.iter().enumerate() {
            let p = &host.profile;
            for (pi, plane) in p.planes.iter().enumerate() {
                for (li, line) in plane.lines.iter().enumerate() {
                    if line.events.is_empty() {
                        continue;
                    }
                    order.push((
                        plane_rank(p.str(plane.name)),
                        h,
                        pi,
                        line_rank(p.str(line.name)),
                        li,
                    ));
                }
            }
        }
        order.sort_by(|a, b| (&a.0, a.1, a.2, a.3, a.4).cmp(&(&b.0, b.1, b.2, b.3, b.4)));
        let mut tracks = Vec::with_capacity(order.len());
        let mut total = 0u64;
        let mut span: Option<(i64, i64)> = None;
        for (_, h, pi, _, li) in order {
            let host = &hosts[h];
            let p = &host.profile;
            let plane = &p.planes[pi];
            let line = &plane.lines[li];
            let ev = &line.events;
            total += ev.len() as u64;
            if let Some((s, e)) = ev.span() {
                let (s, e) = (s + host.offset_ps, e + host.offset_ps);
                span = Some(span.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
            }
            let max_depth = ev.depths().iter().copied().max().unwrap_or(0) as usize;
            let mut per_depth: Vec<Vec<u32>> = vec![Vec::new(); max_depth + 1];
            for (i, &d) in ev.depths().iter().enumerate() {
                per_depth[d as usize].push(i as u32);
            }
            let depths = per_depth
                .into_iter()
                .map(|idx| {
                    let mut prefix = Vec::with_capacity(idx.len() + 1);
                    let mut acc = 0i64;
                    prefix.push(0);
                    for &i in &idx {
                        // Non-negative and saturating: the sums never fall, so any difference
                        // of two fits (a file may hold any i64 duration).
                        acc = acc.saturating_add(ev.dur(i as usize).max(0));
                        prefix.push(acc);
                    }
                    let tree = MaxTree::new(idx.iter().map(|&i| class(ev.dur(i as usize))));
                    DepthIndex { idx, prefix, tree }
                })
                .collect();
            let line_name = if line.display_name != xlens_model::StrId::EMPTY {
                p.str(line.display_name)
            } else {
                p.str(line.name)
            };
            tracks.push(Track {
                id: tracks.len() as u32,
                host: h as u32,
                plane: pi as u32,
                line: li as u32,
                group: if hosts.len() > 1 {
                    format!("{} {}", host.name, p.str(plane.name))
                } else {
                    p.str(plane.name).to_string()
                },
                name: line_name.to_string(),
                depths,
            });
        }
        let mut counters = Vec::new();
        for h in &hosts {
            let label = if hosts.len() > 1 { h.name.as_str() } else { "" };
            counter_tracks(&h.profile, h.offset_ps, label, &mut counters);
        }
        for (i, c) in counters.iter_mut().enumerate() {
            c.id = i as u32;
        }
        TraceIndex {
            hosts,
            tracks,
            counters,
            total_events: total,
            span: span.unwrap_or((0, 0)),
            flows: Default::default(),
            steps: Default::default(),
            clocks,
        }
    }

    fn line(&self, t: &Track) -> (&Profile, &Plane, &Line) {
        let p = &self.hosts[t.host as usize].profile;
        let plane = &p.planes[t.plane as usize];
        (p, plane, &plane.lines[t.line as usize])
    }

    /// The events and merged boxes of `items` ((track, depth) pairs) in `[start, end)`, with
    /// the names they use numbered in order of first use.
    fn walk(
        &self,
        items: &[(usize, usize)],
        start: i64,
        end: i64,
        ps_per_px: f64,
        min_class: u8,
    ) -> (NameTable, Vec<EventOut>, Vec<Summary>) {
        let mut names = NameTable::default();
        let mut events = Vec::new();
        let mut summaries = Vec::new();
        let mut hits = Vec::new();
        for &(ti, depth) in items {
            let t = &self.tracks[ti];
            let di = &t.depths[depth];
            let (p, plane, line) = self.line(t);
            let ev = &line.events;
            let off = self.hosts[t.host as usize].offset_ps;
            // Work in the line's own time.
            let (ls, le) = (start - off, end - off);
            let n = di.idx.len();
            let start_of = |k: usize| ev.start(di.idx[k] as usize);
            // First event that can overlap the window: the last one starting before it.
            let mut lo = partition(n, |k| start_of(k) < ls);
            if lo > 0 && ev.end(di.idx[lo - 1] as usize) > ls {
                lo -= 1;
            }
            // Inclusive end, so that a query of the whole span holds every event.
            let hi = partition(n, |k| start_of(k) <= le);
            if lo >= hi {
                continue;
            }
            hits.clear();
            di.tree.at_least(lo, hi, min_class, &mut hits);
            // Runs of narrow events lie between consecutive wide ones.
            let ctx = RunCtx {
                p,
                plane,
                line,
                di,
                track: t.id,
                depth: depth as u16,
                off,
                ls,
                ps_per_px,
            };
            let mut run_start = lo;
            for &h in &hits {
                if h > run_start {
                    ctx.summarize(run_start, h, &mut names, &mut summaries);
                }
                let i = di.idx[h] as usize;
                events.push(EventOut {
                    track: t.id,
                    index: i as u32,
                    depth: depth as u16,
                    start_ps: ev.start(i) + off,
                    dur_ps: ev.dur(i),
                    name: names.id(p, plane, line, i),
                });
                run_start = h + 1;
            }
            if run_start < hi {
                ctx.summarize(run_start, hi, &mut names, &mut summaries);
            }
        }
        (names, events, summaries)
    }

    /// A window kept within 2^60 ps (13 days) of the trace's span on either side, where no event
    /// is: the arithmetic on times (window widths, times relative to a host) then cannot
    /// overflow, whatever a client asks for.
    fn clamp_window(&self, start: i64, end: i64) -> (i64, i64) {
        const FAR: i64 = 1 << 60;
        // `max`: a span can end before it starts (events of negative duration).
        let (lo, hi) = (
            self.span.0.saturating_sub(FAR),
            self.span.1.max(self.span.0).saturating_add(FAR),
        );
        (start.clamp(lo, hi), end.clamp(lo, hi))
    }

    /// Everything to draw for `[start, end)` at `width` pixels (at most [`MAX_WIDTH_PX`]).
    pub fn query(&self, start: i64, end: i64, width: u32) -> Viewport {
        self.query_split(start, end, width, PARALLEL_QUERY_EVENTS, false)
    }

    /// Every event and counter point in `[start, end)`, none merged (an exported trace window,
    /// which the page then zooms into without a server).
    pub fn query_all(&self, start: i64, end: i64) -> Viewport {
        self.query_split(start, end, MAX_WIDTH_PX, PARALLEL_QUERY_EVENTS, true)
    }

    /// [`TraceIndex::query`], walking the tracks on two threads when the window holds about
    /// `parallel_from` events or more (the answer is the same either way).
    fn query_split(
        &self,
        start: i64,
        end: i64,
        width: u32,
        parallel_from: usize,
        all: bool,
    ) -> Viewport {
        let (start, end) = self.clamp_window(start, end);
        let asked_width = width;
        let width = width.clamp(1, MAX_WIDTH_PX);
        let end = end.max(start.saturating_add(1));
        // In floating point: `end - start` overflows for windows wider than half the i64 range.
        let window = end as f64 - start as f64;
        let ps_per_px = (window / width as f64).max(1e-9);
        // Class 0 holds events of zero duration: only a query of everything takes them as they are.
        let min_class = if all {
            0
        } else {
            class((ps_per_px / 2.0).ceil() as i64).max(1)
        };
        let counter_ps_per_px = if all { 1e-9 } else { ps_per_px };
        // Every (track, depth), in drawing order; on large traces the two halves (by events)
        // are walked on two threads and joined in order, names renumbered as one walk would.
        let items: Vec<(usize, usize)> = self
            .tracks
            .iter()
            .enumerate()
            .flat_map(|(t, tr)| (0..tr.depths.len()).map(move |d| (t, d)))
            .collect();
        let weight = |&(t, d): &(usize, usize)| self.tracks[t].depths[d].idx.len();
        let total: usize = items.iter().map(weight).sum();
        let walk = |part: &[(usize, usize)]| self.walk(part, start, end, ps_per_px, min_class);
        // Events the window holds, about (as if spread evenly over the trace's span).
        let span = (self.span.1 - self.span.0).max(1) as f64;
        let in_window = total as f64 * (window / span).min(1.0);
        let (names, events, summaries) = if in_window >= parallel_from as f64 && items.len() > 1 {
            let mut acc = 0;
            let cut = items
                .iter()
                .position(|it| {
                    acc += weight(it);
                    acc * 2 >= total
                })
                .map_or(items.len(), |i| i + 1);
            let (a, b) = items.split_at(cut);
            let (first, second) = crate::base::par::join(|| walk(a), || walk(b));
            let (mut names, mut events, mut summaries) = first;
            let (names2, events2, summaries2) = second;
            let remap = names.absorb(names2);
            events.extend(events2.into_iter().map(|mut e| {
                e.name = remap[e.name as usize];
                e
            }));
            summaries.extend(summaries2.into_iter().map(|mut s| {
                s.name = remap[s.name as usize];
                s
            }));
            (names, events, summaries)
        } else {
            walk(&items)
        };
        Viewport {
            start_ps: start,
            end_ps: end,
            width_px: width,
            width_capped_from: (asked_width != width).then_some(asked_width),
            ps_per_px,
            total_events: self.total_events,
            span_start_ps: self.span.0,
            span_end_ps: self.span.1,
            tracks: self
                .tracks
                .iter()
                .map(|t| TrackInfo {
                    id: t.id,
                    host: self.hosts[t.host as usize].name.clone(),
                    group: t.group.clone(),
                    name: t.name.clone(),
                    depths: t.depths.len() as u16,
                    events: t.depths.iter().map(|d| d.idx.len() as u64).sum(),
                })
                .collect(),
            names: names.names,
            events,
            summaries,
            counters: self
                .counters
                .iter()
                .map(|c| {
                    let (times_ps, values) = counter_points(c, start, end, counter_ps_per_px);
                    CounterOut {
                        id: c.id,
                        group: c.group.clone(),
                        name: c.name.clone(),
                        points_total: c.times.len() as u64,
                        min: c.values.iter().copied().fold(f64::INFINITY, f64::min),
                        max: c.values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                        times_ps,
                        values,
                    }
                })
                .collect(),
            clocks: self.clocks.clone(),
        }
    }

    fn flow_index(&self) -> &FlowIndex {
        self.flows.get_or_init(|| {
            let mut f = FlowIndex::default();
            for t in &self.tracks {
                let (p, _, line) = self.line(t);
                let keys = (p.key("_p"), p.key("_c"), p.key("correlation_id"));
                if keys == (None, None, None) {
                    continue;
                }
                let ev = &line.events;
                for i in 0..ev.len() {
                    for st in ev.stats(i) {
                        let Some(id) = st.value.as_i64() else {
                            continue;
                        };
                        let map = if Some(st.key) == keys.0 {
                            &mut f.producers
                        } else if Some(st.key) == keys.1 {
                            &mut f.consumers
                        } else if Some(st.key) == keys.2 {
                            &mut f.correlation
                        } else {
                            continue;
                        };
                        map.entry((t.host, id)).or_default().push((t.id, i as u32));
                    }
                }
            }
            f
        })
    }

    /// The flow arrows of one event: what it produces or launches, and what produced it.
    pub fn flows_of(&self, track: u32, index: u32) -> Vec<FlowLink> {
        let Some(t) = self.tracks.get(track as usize) else {
            return Vec::new();
        };
        let (p, _, line) = self.line(t);
        if index as usize >= line.events.len() {
            return Vec::new();
        }
        let f = self.flow_index();
        let mut out = Vec::new();
        let mut link = |direction, kind, id, hits: Option<&Vec<(u32, u32)>>| {
            for &(tr, ix) in hits.into_iter().flatten() {
                if (tr, ix) == (track, index) {
                    continue;
                }
                let ot = &self.tracks[tr as usize];
                let (op, oplane, oline) = self.line(ot);
                let off = self.hosts[ot.host as usize].offset_ps;
                let i = ix as usize;
                out.push(FlowLink {
                    direction,
                    kind,
                    id,
                    track: tr,
                    index: ix,
                    depth: oline.events.depth(i),
                    start_ps: oline.events.start(i) + off,
                    dur_ps: oline.events.dur(i),
                    name: oplane
                        .metadata_of(oline, i)
                        .map(|m| op.str(crate::base::ops::events::op_name(op, m)).to_string())
                        .unwrap_or_default(),
                });
            }
        };
        let keys = (p.key("_p"), p.key("_c"), p.key("correlation_id"));
        for st in line.events.stats(index as usize) {
            let Some(id) = st.value.as_i64() else {
                continue;
            };
            let k = (t.host, id);
            if Some(st.key) == keys.0 {
                link("out", "producer/consumer", id, f.consumers.get(&k));
            } else if Some(st.key) == keys.1 {
                link("in", "producer/consumer", id, f.producers.get(&k));
            } else if Some(st.key) == keys.2 {
                // Launch (host) → kernel (device): the arrow points from the earlier event.
                let me = line.events.start(index as usize);
                for &(tr, ix) in f.correlation.get(&k).into_iter().flatten() {
                    if (tr, ix) == (track, index) {
                        continue;
                    }
                    let other = self
                        .line(&self.tracks[tr as usize])
                        .2
                        .events
                        .start(ix as usize);
                    let dir = if other >= me { "out" } else { "in" };
                    link(dir, "correlation_id", id, Some(&vec![(tr, ix)]));
                }
            }
        }
        out.sort_by_key(|l| l.start_ps);
        out
    }

    /// The step (of the event's host) whose time range holds `t` (on the common axis).
    fn step_at(&self, host: u32, t: i64) -> Option<(Option<i64>, String)> {
        let steps = self.steps.get_or_init(|| {
            self.hosts
                .iter()
                .map(|h| crate::base::steps::annotations::find_steps(&h.profile))
                .collect()
        });
        let st = steps.get(host as usize)?;
        let local = t.saturating_sub(self.hosts[host as usize].offset_ps);
        st.steps
            .iter()
            .find(|s| s.start_ps <= local && local < s.start_ps.saturating_add(s.dur_ps))
            .map(|s| (s.step_num, st.name.clone().unwrap_or_default()))
    }

    /// Everything known about one event.
    pub fn details(&self, track: u32, index: u32) -> Option<EventDetails> {
        let t = self.tracks.get(track as usize)?;
        let (p, plane, line) = self.line(t);
        let ev = &line.events;
        let i = index as usize;
        if i >= ev.len() {
            return None;
        }
        let off = self.hosts[t.host as usize].offset_ps;
        let md = plane.metadata_of(line, i)?;
        // Self time: duration minus direct children (the next deeper events inside it).
        let (s, e) = (ev.start(i), ev.end(i));
        let d = ev.depth(i);
        let mut children = 0i64;
        let mut j = i + 1;
        while j < ev.len() && ev.start(j) < e {
            if ev.depth(j) == d + 1 {
                children += ev.end(j).min(e) - ev.start(j);
            }
            j += 1;
        }
        let mut stats: Vec<(String, String)> = Vec::new();
        let mut source = None;
        for st in md.stats().iter().chain(ev.stats(i).iter()) {
            let k = p.str(st.key).to_string();
            let v = match st.value {
                StatValue::Bytes(b) => format!("<{} bytes>", p.blob(b).len()),
                other => other.display(&p.strings),
            };
            if (k == "source" || k == "_src" || k == "source_info") && source.is_none() {
                source = Some(v.clone());
            }
            stats.push((k, v));
        }
        let abs = |t: i64| -> Option<i64> {
            p.origin_is_wall_clock
                .then(|| ((p.origin_ps + t as i128) / 1000) as i64)
        };
        Some(EventDetails {
            track,
            index,
            host: self.hosts[t.host as usize].name.clone(),
            plane: p.str(plane.name).to_string(),
            line: t.name.clone(),
            name: p.str(crate::base::ops::events::op_name(p, md)).to_string(),
            long_name: p.str(md.name).to_string(),
            display_name: p.str(md.display_name).to_string(),
            start_ps: s + off,
            dur_ps: ev.dur(i),
            self_ps: ev.dur(i).saturating_sub(children).max(0),
            depth: d,
            wall_clock_start_ns: abs(s),
            step: self.step_at(t.host, s + off).map(|(n, name)| match n {
                Some(n) => format!("{name} {n}"),
                None => name,
            }),
            source,
            stats,
            flows: self.flows_of(track, index),
        })
    }

    /// Events whose name contains `q` (case-insensitive), over the whole trace, in time order.
    /// Returns at most `limit` hits and the total number of matches.
    pub fn search(&self, q: &str, limit: usize) -> SearchResult {
        let ql = q.to_lowercase();
        let mut hits = Vec::new();
        let mut total = 0u64;
        if ql.is_empty() {
            return SearchResult {
                query: q.to_string(),
                total,
                shown: 0,
                hits,
            };
        }
        for t in &self.tracks {
            let (p, plane, line) = self.line(t);
            let matching: Vec<bool> = plane
                .event_metadata
                .iter()
                .map(|m| {
                    p.str(m.name).to_lowercase().contains(&ql)
                        || p.str(m.display_name).to_lowercase().contains(&ql)
                })
                .collect();
            if !matching.iter().any(|&b| b) {
                continue;
            }
            let off = self.hosts[t.host as usize].offset_ps;
            let ev = &line.events;
            for i in 0..ev.len() {
                if matching.get(ev.meta(i) as usize).copied().unwrap_or(false) {
                    total += 1;
                    if hits.len() < limit {
                        let md = plane.metadata_of(line, i);
                        hits.push(SearchHit {
                            track: t.id,
                            index: i as u32,
                            start_ps: ev.start(i) + off,
                            dur_ps: ev.dur(i),
                            name: md
                                .map(|m| p.str(crate::base::ops::events::op_name(p, m)).to_string())
                                .unwrap_or_default(),
                        });
                    }
                }
            }
        }
        hits.sort_by_key(|h| h.start_ps);
        SearchResult {
            query: q.to_string(),
            total,
            shown: hits.len() as u64,
            hits,
        }
    }

    /// The time per event name inside `[start, end)` (clipped to the range), largest first.
    pub fn range_stats(&self, start: i64, end: i64) -> RangeStats {
        let (start, end) = self.clamp_window(start, end);
        let mut agg: std::collections::HashMap<String, (u64, i64)> = Default::default();
        let mut count = 0u64;
        for t in &self.tracks {
            let (p, plane, line) = self.line(t);
            let off = self.hosts[t.host as usize].offset_ps;
            let ev = &line.events;
            let (ls, le) = (start - off, end - off);
            // Events overlapping the range: starts before `le`; scan back over long ones.
            let hi = ev.lower_bound(le);
            for i in 0..hi {
                let (s, e) = (ev.start(i), ev.end(i));
                if e <= ls {
                    continue;
                }
                let clipped = e.min(le) - s.max(ls);
                if clipped <= 0 && !(ev.dur(i) == 0 && s >= ls) {
                    continue;
                }
                count += 1;
                let name = plane
                    .metadata_of(line, i)
                    .map(|m| p.str(crate::base::ops::events::op_name(p, m)).to_string())
                    .unwrap_or_default();
                let a = agg.entry(name).or_default();
                a.0 += 1;
                a.1 = a.1.saturating_add(clipped.max(0));
            }
        }
        let mut rows: Vec<RangeRow> = agg
            .into_iter()
            .map(|(name, (occurrences, time_ps))| RangeRow {
                name,
                occurrences,
                time_ps,
            })
            .collect();
        rows.sort_by(|a, b| b.time_ps.cmp(&a.time_ps).then_with(|| a.name.cmp(&b.name)));
        RangeStats {
            start_ps: start,
            end_ps: end,
            events: count,
            rows,
        }
    }
}

/// What [`RunCtx::summarize`] needs to merge one run of narrow events.
struct RunCtx<'a> {
    p: &'a Profile,
    plane: &'a Plane,
    line: &'a Line,
    di: &'a DepthIndex,
    track: u32,
    depth: u16,
    off: i64,
    ls: i64,
    ps_per_px: f64,
}

impl RunCtx<'_> {
    fn px(&self, ts: i64) -> i64 {
        ((ts - self.ls) as f64 / self.ps_per_px).floor() as i64
    }

    /// Merges the narrow events `idx[a..b]` pixel by pixel into summary boxes; adjacent pixels
    /// join one box. Each non-empty pixel costs a galloping search from the previous one, and each
    /// box one longest-event query, however many events they hold.
    fn summarize(&self, a: usize, b: usize, names: &mut NameTable, out: &mut Vec<Summary>) {
        let ev = &self.line.events;
        let di = self.di;
        let start_of = |k: usize| ev.start(di.idx[k] as usize);
        // The open box: first and one-past-last index, start, end and last pixel.
        let mut open: Option<(usize, usize, i64, i64, i64)> = None;
        let close = |(k0, k1, s_ps, e_ps, _): (usize, usize, i64, i64, i64),
                     names: &mut NameTable,
                     out: &mut Vec<Summary>| {
            let longest = di.tree.argmax(k0, k1).unwrap_or(k0);
            let li = di.idx[longest] as usize;
            out.push(Summary {
                track: self.track,
                depth: self.depth,
                start_ps: s_ps + self.off,
                end_ps: e_ps + self.off,
                count: (k1 - k0) as u64,
                covered_ps: di.prefix[k1].saturating_sub(di.prefix[k0]),
                longest_ps: ev.dur(li),
                name: names.id(self.p, self.plane, self.line, li),
            });
        };
        let mut k = a;
        while k < b {
            let s_ps = start_of(k);
            let p0 = self.px(s_ps);
            let pix_end = self.ls + ((p0 + 1) as f64 * self.ps_per_px).ceil() as i64;
            let e = k + gallop(b - k, |j| start_of(k + j) < pix_end).max(1);
            // Events of one depth never overlap, so the last one ends last.
            let e_ps = ev.end(di.idx[e - 1] as usize).max(s_ps);
            let last_px = self.px(e_ps);
            open = match open {
                Some(o) if p0 <= o.4 + 1 => Some((o.0, e, o.2, o.3.max(e_ps), o.4.max(last_px))),
                other => {
                    if let Some(o) = other {
                        close(o, names, out);
                    }
                    Some((k, e, s_ps, e_ps, last_px.max(p0)))
                }
            };
            k = e;
        }
        if let Some(o) = open {
            close(o, names, out);
        }
    }
}

impl TraceIndex {
    /// Writes the trace (or the events overlapping `range`) as Chrome trace-event JSON, which
    /// Perfetto UI and chrome://tracing open: one process per plane, one thread per track,
    /// complete (`"ph":"X"`) events in microseconds from the session start, stats as `args`.
    /// At most [`MAX_EXPORT_EVENTS`] events are written; past that the file says how many it
    /// holds and how many were in the range (`xlens_export`).
    pub fn export_chrome(&self, range: Option<(i64, i64)>, out: &mut Vec<u8>) {
        self.export_chrome_capped(range, out, MAX_EXPORT_EVENTS);
    }

    /// [`TraceIndex::export_chrome`] with at most `cap` events.
    pub fn export_chrome_capped(&self, range: Option<(i64, i64)>, out: &mut Vec<u8>, cap: u64) {
        use std::io::Write;
        let (mut written, mut matched) = (0u64, 0u64);
        let mut first = true;
        let mut sep = |out: &mut Vec<u8>| {
            if !first {
                out.push(b',');
            }
            first = false;
            out.push(b'\n');
        };
        let us = |ps: i64| ps as f64 / 1e6;
        out.extend_from_slice(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
        let mut pids: Vec<(u32, u32)> = Vec::new();
        for t in &self.tracks {
            let key = (t.host, t.plane);
            let pid = match pids.iter().position(|k| *k == key) {
                Some(i) => i as u32 + 1,
                None => {
                    pids.push(key);
                    let pid = pids.len() as u32;
                    sep(out);
                    let _ = write!(
                        out,
                        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{}}}}}",
                        json_str(&t.group)
                    );
                    sep(out);
                    let _ = write!(
                        out,
                        "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{pid},\"args\":{{\"sort_index\":{pid}}}}}"
                    );
                    pid
                }
            };
            let tid = t.id + 1;
            sep(out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                json_str(&t.name)
            );
            sep(out);
            let _ = write!(
                out,
                "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{tid}}}}}"
            );
            let (p, plane, line) = self.line(t);
            let off = self.hosts[t.host as usize].offset_ps;
            let ev = &line.events;
            for i in 0..ev.len() {
                let (s, e) = (ev.start(i) + off, ev.end(i) + off);
                if let Some((a, b)) = range {
                    if e < a || s > b {
                        continue;
                    }
                }
                matched += 1;
                if written >= cap {
                    continue;
                }
                written += 1;
                let name = plane
                    .metadata_of(line, i)
                    .map(|m| p.str(crate::base::ops::events::op_name(p, m)))
                    .unwrap_or("");
                sep(out);
                let _ = write!(
                    out,
                    "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"name\":{},\"ts\":{},\"dur\":{}",
                    json_str(name),
                    us(s),
                    us(ev.dur(i))
                );
                let stats = ev.stats(i);
                if !stats.is_empty() {
                    out.extend_from_slice(b",\"args\":{");
                    for (k, st) in stats.iter().enumerate() {
                        if k > 0 {
                            out.push(b',');
                        }
                        let v = match st.value {
                            StatValue::Bytes(b) => format!("<{} bytes>", p.blob(b).len()),
                            other => other.display(&p.strings),
                        };
                        let _ = write!(out, "{}:{}", json_str(p.str(st.key)), json_str(&v));
                    }
                    out.push(b'}');
                }
                out.push(b'}');
            }
        }
        out.extend_from_slice(b"\n]");
        if matched > written {
            let _ = write!(
                out,
                ",\"xlens_export\":{{\"events_written\":{written},\"events_in_range\":{matched},\"cap\":{cap},\"note\":\"capped: export a shorter range for the rest\"}}"
            );
        }
        out.extend_from_slice(b"}\n");
    }
}

/// The most events one export writes (a Chrome-trace file of this many events is about a
/// gigabyte, the size trace viewers still open).
pub const MAX_EXPORT_EVENTS: u64 = 5_000_000;

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Galloping search: the first `k` in `0..n` for which `pred(k)` is false, cheap when it is near 0.
#[inline]
fn gallop(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let mut hi = 1;
    while hi < n && pred(hi) {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(n);
    lo + partition(hi - lo, |j| pred(lo + j))
}

/// Binary search: the first `k` in `0..n` for which `pred(k)` is false.
#[inline]
fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let m = (lo + hi) / 2;
        if pred(m) {
            lo = m + 1;
        } else {
            hi = m;
        }
    }
    lo
}

/// A synthetic profile for benchmarks: `lines` threads, each a sequence of steps holding nested
/// ops of assorted widths (from nanoseconds to milliseconds) with ~1,000 distinct names, `n`
/// events in all. Deterministic.
pub fn synthetic_profile(n: usize, lines: usize) -> Profile {
    use xlens_model::{EventMetadata, EventsBuilder, Strings};
    let mut strings = Strings::new();
    let plane_name = strings.intern("/host:CPU");
    let names: Vec<_> = (0..1000)
        .map(|i| strings.intern(&format!("fusion.{i}")))
        .collect();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let per_line = n / lines.max(1);
    let mut out_lines = Vec::new();
    for l in 0..lines.max(1) {
        let mut b = EventsBuilder::with_capacity(per_line, 0);
        let mut t = 0i64;
        let mut made = 0;
        while made < per_line {
            // A parent spanning a batch of children; children of widths 10 ns .. 1 ms.
            let kids = (next() % 200 + 1) as usize;
            let kids = kids.min(per_line.saturating_sub(made + 1));
            let start = t;
            let mut c = t;
            let mut children = Vec::with_capacity(kids);
            for _ in 0..kids {
                let w = 10_000i64 << (next() % 17);
                let gap = (next() % 50_000) as i64;
                children.push((c + gap, w, (1 + next() % 999) as u32));
                c += gap + w;
            }
            b.push(start, c - start + 1000, 0);
            for (s, w, m) in children {
                b.push(s, w, m);
            }
            made += kids + 1;
            t = c + 10_000 + (next() % 1_000_000) as i64;
        }
        out_lines.push(Line {
            id: l as i64,
            name: strings.intern(&format!("thread {l}")),
            events: b.finish(),
            ..Default::default()
        });
    }
    let event_metadata = names
        .iter()
        .enumerate()
        .map(|(i, &name)| EventMetadata {
            id: i as i64,
            name,
            ..Default::default()
        })
        .collect();
    Profile {
        strings,
        planes: vec![Plane {
            name: plane_name,
            event_metadata,
            lines: out_lines,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Names interned per response.
/// Above about this many events in the window a query walks its tracks on two threads.
const PARALLEL_QUERY_EVENTS: usize = 200_000;

#[derive(Default)]
struct NameTable {
    names: Vec<String>,
    map: std::collections::HashMap<(usize, u32), u32>,
}

impl NameTable {
    /// Takes in `other`'s names that are not here yet, in `other`'s order (as if its walk had
    /// continued this one's); returns what each of `other`'s ids became.
    fn absorb(&mut self, other: NameTable) -> Vec<u32> {
        let mut keys = vec![(0usize, 0u32); other.names.len()];
        for (k, &id) in &other.map {
            if let Some(slot) = keys.get_mut(id as usize) {
                *slot = *k;
            }
        }
        other
            .names
            .into_iter()
            .zip(keys)
            .map(|(name, key)| match self.map.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.names.len() as u32;
                    self.names.push(name);
                    self.map.insert(key, id);
                    id
                }
            })
            .collect()
    }

    fn id(&mut self, p: &Profile, plane: &Plane, line: &Line, i: usize) -> u32 {
        let meta = line.events.meta(i);
        let key = (plane as *const Plane as usize, meta);
        if let Some(&id) = self.map.get(&key) {
            return id;
        }
        let name = plane
            .metadata_of(line, i)
            .map(|m| p.str(crate::base::ops::events::op_name(p, m)).to_string())
            .unwrap_or_default();
        let id = self.names.len() as u32;
        self.names.push(name);
        self.map.insert(key, id);
        id
    }
}

/// A drawable event (at least about one pixel wide).
#[derive(Debug, Clone, Serialize)]
pub struct EventOut {
    pub track: u32,
    /// Index of the event in its line (for details).
    pub index: u32,
    pub depth: u16,
    pub start_ps: i64,
    pub dur_ps: i64,
    /// Index into `names`.
    pub name: u32,
}

/// A run of events narrower than a pixel, merged.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub track: u32,
    pub depth: u16,
    pub start_ps: i64,
    pub end_ps: i64,
    pub count: u64,
    /// Sum of the merged events' durations.
    pub covered_ps: i64,
    pub longest_ps: i64,
    /// Name of the longest merged event (index into `names`).
    pub name: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct TrackInfo {
    pub id: u32,
    pub host: String,
    pub group: String,
    pub name: String,
    /// Rows (nesting levels) of the track.
    pub depths: u16,
    /// All events of the track.
    pub events: u64,
}

/// The widest viewport drawn, in pixels (a response's size grows with its width).
pub const MAX_WIDTH_PX: u32 = 20_000;

/// What to draw for one window.
#[derive(Debug, Clone, Serialize)]
pub struct Viewport {
    pub start_ps: i64,
    pub end_ps: i64,
    pub width_px: u32,
    /// The width asked for, when it was outside 1..=[`MAX_WIDTH_PX`] and `width_px` is the cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width_capped_from: Option<u32>,
    pub ps_per_px: f64,
    /// Every event of the selected hosts (nothing is dropped: each is either in `events`, inside a
    /// summary's `count`, or outside the window).
    pub total_events: u64,
    pub span_start_ps: i64,
    pub span_end_ps: i64,
    pub tracks: Vec<TrackInfo>,
    pub names: Vec<String>,
    pub events: Vec<EventOut>,
    pub summaries: Vec<Summary>,
    /// Counter series in the window (per pixel: first, min, max, last; spikes are kept).
    pub counters: Vec<CounterOut>,
    /// How each host was placed on the common axis (several hosts only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clocks: Vec<crate::base::hosts::align::HostClock>,
}

/// A counter's points in one window.
#[derive(Debug, Clone, Serialize)]
pub struct CounterOut {
    pub id: u32,
    pub group: String,
    pub name: String,
    /// All points of the series (those in `times_ps` are the window's, reduced per pixel).
    pub points_total: u64,
    /// Over the whole series, for a stable vertical scale.
    pub min: f64,
    pub max: f64,
    pub times_ps: Vec<i64>,
    pub values: Vec<f64>,
}

impl Viewport {
    /// JSON for scripts and the CLI: like the compact form, with each event's and summary's
    /// `name` given as the string itself instead of an index into `names`.
    pub fn to_json(&self, inline_names: bool) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if inline_names {
            for key in ["events", "summaries"] {
                if let Some(arr) = v.get_mut(key).and_then(|a| a.as_array_mut()) {
                    for e in arr {
                        let idx = e["name"].as_u64().unwrap_or(0) as usize;
                        let name = self.names.get(idx).cloned().unwrap_or_default();
                        e["name"] = serde_json::Value::String(name);
                    }
                }
            }
        }
        v
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EventDetails {
    pub track: u32,
    pub index: u32,
    pub host: String,
    pub plane: String,
    pub line: String,
    pub name: String,
    /// The producer's full name (e.g. the HLO expression).
    pub long_name: String,
    pub display_name: String,
    pub start_ps: i64,
    pub dur_ps: i64,
    pub self_ps: i64,
    pub depth: u16,
    pub wall_clock_start_ns: Option<i64>,
    /// The step (from step annotations or a device `Steps` line) the event starts in.
    pub step: Option<String>,
    pub source: Option<String>,
    /// Metadata stats then event stats, as (name, value).
    pub stats: Vec<(String, String)>,
    /// Flow arrows: producer → consumer (`_p`/`_c`) and launch → kernel (`correlation_id`).
    pub flows: Vec<FlowLink>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub track: u32,
    pub index: u32,
    pub start_ps: i64,
    pub dur_ps: i64,
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    pub query: String,
    /// All matches in the trace.
    pub total: u64,
    /// Matches listed in `hits` (the first ones in track order, then sorted by time).
    pub shown: u64,
    pub hits: Vec<SearchHit>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RangeRow {
    pub name: String,
    pub occurrences: u64,
    pub time_ps: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RangeStats {
    pub start_ps: i64,
    pub end_ps: i64,
    pub events: u64,
    pub rows: Vec<RangeRow>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlens_model::{EventMetadata, EventsBuilder, Strings};

    /// A one-line profile with `n` tiny events and a few wide ones.
    fn synthetic(n: usize) -> Profile {
        let mut strings = Strings::new();
        let plane_name = strings.intern("/host:CPU");
        let line_name = strings.intern("thread");
        let small = strings.intern("small");
        let wide = strings.intern("wide");
        let mut b = EventsBuilder::with_capacity(n + 2, 0);
        b.push(0, (n as i64) * 100, 1); // one wide parent over everything
        for i in 0..n {
            b.push(i as i64 * 100, 10, 0);
        }
        let events = b.finish();
        let plane = Plane {
            name: plane_name,
            event_metadata: vec![
                EventMetadata {
                    id: 1,
                    name: small,
                    ..Default::default()
                },
                EventMetadata {
                    id: 2,
                    name: wide,
                    ..Default::default()
                },
            ],
            lines: vec![Line {
                name: line_name,
                events,
                ..Default::default()
            }],
            ..Default::default()
        };
        Profile {
            strings,
            planes: vec![plane],
            ..Default::default()
        }
    }

    #[test]
    fn zoomed_out_merges_and_zoomed_in_reaches_every_event() {
        let n = 100_000;
        let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(n)))]);
        assert_eq!(idx.total_events, n as u64 + 1);
        let span = (n as i64) * 100;
        let v = idx.query(0, span, 1000);
        assert_eq!(
            v.events.len() as u64 + v.summaries.iter().map(|s| s.count).sum::<u64>(),
            idx.total_events
        );
        // The parent is drawn; the 100k small events are merged, none dropped.
        assert_eq!(v.events.len(), 1);
        let merged: u64 = v.summaries.iter().map(|s| s.count).sum();
        assert_eq!(merged, n as u64);
        assert!(v.summaries.len() <= 1000, "{}", v.summaries.len());
        let covered: i64 = v.summaries.iter().map(|s| s.covered_ps).sum();
        assert_eq!(covered, n as i64 * 10);
        // Zoomed to 51 events in 1000 px (the window's end is inclusive): each drawn individually.
        let v = idx.query(1_000_000, 1_005_000, 1000);
        assert_eq!(v.events.iter().filter(|e| e.depth == 1).count(), 51);
        assert!(v.summaries.is_empty());
        let d = idx.details(0, v.events[1].index).unwrap();
        assert_eq!(d.name, "small");
        assert_eq!(d.dur_ps, 10);
    }

    #[test]
    fn a_window_over_the_whole_i64_range_is_drawn_like_the_span() {
        let n = 100_000;
        let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(n)))]);
        // `end - start` overflows i64 here; it used to give 1e-9 ps per pixel, so every event
        // was sent one by one (a 70 MB answer on a large profile).
        let v = idx.query(i64::MIN + 1, i64::MAX, 1000);
        assert!(
            v.events.len() + v.summaries.len() <= 2 * 1000,
            "{}",
            v.events.len()
        );
        let drawn = v.events.len() as u64 + v.summaries.iter().map(|s| s.count).sum::<u64>();
        assert_eq!(drawn, idx.total_events, "nothing dropped");
        // An empty window at the very end of the range does not overflow either, nor range
        // statistics over the whole range.
        let v = idx.query(i64::MAX, i64::MAX, u32::MAX);
        assert!(v.events.is_empty());
        assert_eq!(
            (v.width_px, v.width_capped_from),
            (MAX_WIDTH_PX, Some(u32::MAX)),
            "the cap is stated"
        );
        let all = idx.range_stats(i64::MIN, i64::MAX);
        assert_eq!(all.events, idx.total_events);
    }

    #[test]
    fn search_and_range_stats_cover_the_whole_trace() {
        let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(1000)))]);
        let r = idx.search("SMA", 10);
        assert_eq!(r.total, 1000);
        assert_eq!(r.shown, 10);
        let rs = idx.range_stats(0, 500);
        let small = rs.rows.iter().find(|r| r.name == "small").unwrap();
        assert_eq!(small.occurrences, 5);
        assert_eq!(small.time_ps, 50);
        let wide = rs.rows.iter().find(|r| r.name == "wide").unwrap();
        assert_eq!(wide.time_ps, 500);
    }

    #[test]
    fn chrome_export_is_valid_json_with_every_event() {
        let idx = TraceIndex::build(vec![("h".into(), Arc::new(synthetic(100)))]);
        let mut out = Vec::new();
        idx.export_chrome(None, &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        assert_eq!(evs.iter().filter(|e| e["ph"] == "X").count(), 101);
        let mut out = Vec::new();
        idx.export_chrome(Some((0, 450)), &mut out);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let n = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .count();
        assert_eq!(n, 6); // the parent and the events starting at 0..400
                          // Over the cap: the first events, and the counts stated.
        let mut out = Vec::new();
        idx.export_chrome_capped(None, &mut out, 10);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let xs = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .count();
        assert_eq!(xs, 10);
        assert_eq!(v["xlens_export"]["events_written"], 10);
        assert_eq!(v["xlens_export"]["events_in_range"], 101);
    }

    #[test]
    fn synthetic_profiles_are_fully_accounted_for_at_every_zoom() {
        let p = synthetic_profile(50_000, 4);
        let idx = TraceIndex::build(vec![("h".into(), Arc::new(p))]);
        assert!(idx.total_events >= 49_000, "{}", idx.total_events);
        let (s, e) = idx.span;
        let v = idx.query(s, e, 1200);
        let shown = v.events.len() as u64 + v.summaries.iter().map(|x| x.count).sum::<u64>();
        assert_eq!(shown, idx.total_events);
        // Bounded output: at most about one box per pixel per row.
        let rows: u64 = v.tracks.iter().map(|t| t.depths as u64).sum();
        assert!((v.events.len() + v.summaries.len()) as u64 <= 2 * 1201 * rows + 16);
        // Zooming into any stretch reaches single events.
        let mid = s + (e - s) / 2;
        let v = idx.query(mid, mid + 2_000_000, 1200);
        assert!(
            v.summaries.iter().all(|x| x.count <= 3),
            "{:?}",
            v.summaries.iter().map(|x| x.count).max()
        );
    }

    #[test]
    fn query_all_merges_nothing() {
        let idx = TraceIndex::build(vec![("h".into(), Arc::new(crate::jax_fixture()))]);
        let (s, e) = idx.span;
        let v = idx.query_all(s, e);
        assert!(v.summaries.is_empty());
        assert_eq!(v.events.len() as u64, idx.total_events);
        // A window: exactly the events that overlap it (counted here from the whole list).
        let (a, b) = (s + (e - s) / 3, s + (e - s) / 2);
        let want = v
            .events
            .iter()
            .filter(|x| x.start_ps <= b && x.start_ps + x.dur_ps > a)
            .count();
        let w = idx.query_all(a, b);
        assert!(w.summaries.is_empty());
        assert_eq!(w.events.len(), want);
    }

    #[test]
    fn two_thread_queries_equal_one_walk() {
        let profiles = [crate::jax_fixture(), synthetic_profile(20_000, 4)];
        for p in profiles {
            let idx = TraceIndex::build(vec![("h".into(), Arc::new(p))]);
            let (s, e) = idx.span;
            let q = (e - s) / 7;
            for (a, b, w) in [
                (s, e, 1500),
                (s + q, s + 3 * q, 800),
                (s + 2 * q, s + 2 * q + 1000, 300),
            ] {
                let one = idx.query_split(a, b, w, usize::MAX, false);
                let two = idx.query_split(a, b, w, 0, false);
                assert_eq!(
                    serde_json::to_value(&one).unwrap(),
                    serde_json::to_value(&two).unwrap(),
                    "window {a}..{b} at {w} px"
                );
            }
        }
    }

    #[test]
    fn counter_points_keep_spikes_and_stay_bounded() {
        let n = 100_000;
        let c = Counter {
            id: 0,
            group: "g".into(),
            name: "c".into(),
            times: (0..n).map(|i| i * 10).collect(),
            values: (0..n)
                .map(|i| if i == 54_321 { 1e9 } else { (i % 7) as f64 })
                .collect(),
        };
        let (ts, vs) = counter_points(&c, 0, n * 10, (n * 10) as f64 / 500.0);
        assert!(ts.len() <= 4 * 500 + 1, "{}", ts.len());
        assert!(vs.contains(&1e9));
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn max_tree_queries() {
        let vals = [1u8, 5, 2, 5, 0, 3, 7, 1, 1];
        let t = MaxTree::new(vals.iter().copied());
        let mut out = Vec::new();
        t.at_least(0, vals.len(), 3, &mut out);
        assert_eq!(out, vec![1, 3, 5, 6]);
        out.clear();
        t.at_least(2, 6, 3, &mut out);
        assert_eq!(out, vec![3, 5]);
        assert_eq!(t.argmax(0, 4), Some(1));
        assert_eq!(t.argmax(4, 9), Some(6));
        assert_eq!(t.argmax(7, 9), Some(7));
    }
}
