//! Viewport queries: per track and depth, the events at least about a pixel wide and merged
//! summary boxes for the runs of narrower ones.

use super::*;

impl TraceIndex {
    /// A window kept within 2^60 ps (13 days) of the trace's span on either side, where no event
    /// is: the arithmetic on times (window widths, times relative to a host) then cannot
    /// overflow, whatever a client asks for.
    pub(super) fn clamp_window(&self, start: i64, end: i64) -> (i64, i64) {
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
    pub(super) fn query_split(
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
}

/// What [`RunCtx::summarize`] needs to merge one run of narrow events.
pub(super) struct RunCtx<'a> {
    pub(super) p: &'a Profile,
    pub(super) plane: &'a Plane,
    pub(super) line: &'a Line,
    pub(super) di: &'a DepthIndex,
    pub(super) track: u32,
    pub(super) depth: u16,
    pub(super) off: i64,
    pub(super) ls: i64,
    pub(super) ps_per_px: f64,
}

impl RunCtx<'_> {
    pub(super) fn px(&self, ts: i64) -> i64 {
        ((ts - self.ls) as f64 / self.ps_per_px).floor() as i64
    }

    /// Merges the narrow events `idx[a..b]` pixel by pixel into summary boxes; adjacent pixels
    /// join one box. Each non-empty pixel costs a galloping search from the previous one, and each
    /// box one longest-event query, however many events they hold.
    pub(super) fn summarize(
        &self,
        a: usize,
        b: usize,
        names: &mut NameTable,
        out: &mut Vec<Summary>,
    ) {
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

/// Galloping search: the first `k` in `0..n` for which `pred(k)` is false, cheap when it is near 0.
#[inline]
pub(super) fn gallop(n: usize, pred: impl Fn(usize) -> bool) -> usize {
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
pub(super) fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
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

/// Above about this many events in the window a query walks its tracks on two threads.
pub(super) const PARALLEL_QUERY_EVENTS: usize = 200_000;

/// Names interned per response.
#[derive(Default)]
pub(super) struct NameTable {
    pub(super) names: Vec<String>,
    pub(super) map: std::collections::HashMap<(usize, u32), u32>,
}

impl NameTable {
    /// Takes in `other`'s names that are not here yet, in `other`'s order (as if its walk had
    /// continued this one's); returns what each of `other`'s ids became.
    pub(super) fn absorb(&mut self, other: NameTable) -> Vec<u32> {
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

    pub(super) fn id(&mut self, p: &Profile, plane: &Plane, line: &Line, i: usize) -> u32 {
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
