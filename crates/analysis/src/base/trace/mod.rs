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

mod counters;
mod details;
mod export;
mod query;
use counters::*;
pub use export::MAX_EXPORT_EVENTS;
use query::*;
pub use xlens_model::synthetic::synthetic_profile;

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

/// Where each flow id appears: producers (`_p`), consumers (`_c`) and GPU `correlation_id`s.
#[derive(Default)]
struct FlowIndex {
    producers: std::collections::HashMap<(u32, i64), Vec<(u32, u32)>>,
    consumers: std::collections::HashMap<(u32, i64), Vec<(u32, u32)>>,
    correlation: std::collections::HashMap<(u32, i64), Vec<(u32, u32)>>,
}

/// One end of a flow arrow attached to the selected event.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
}

/// A drawable event (at least about one pixel wide).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SearchHit {
    pub track: u32,
    pub index: u32,
    pub start_ps: i64,
    pub dur_ps: i64,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SearchResult {
    pub query: String,
    /// All matches in the trace.
    pub total: u64,
    /// Matches listed in `hits` (the first ones in track order, then sorted by time).
    pub shown: u64,
    pub hits: Vec<SearchHit>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RangeRow {
    pub name: String,
    pub occurrences: u64,
    pub time_ps: i64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RangeStats {
    pub start_ps: i64,
    pub end_ps: i64,
    pub events: u64,
    pub rows: Vec<RangeRow>,
}

#[cfg(test)]
mod tests;
