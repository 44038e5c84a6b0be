//! Per-line event columns: start, duration, metadata, nesting depth and stats, sorted by start.

use crate::stats::{encode_stat, Stats};
use crate::strings::StrId;
use crate::StatValue;

/// The events of one line (one thread, stream or derived track), stored as columns.
///
/// Invariant after [`EventsBuilder::finish`]: events are sorted by start time ascending and, for
/// equal starts, by duration descending, so that an enclosing event precedes what it encloses.
/// `depths()[i]` is the number of earlier events of the line that still cover `start[i]`
/// (computed on first use: only the trace viewer asks).
#[derive(Default, Debug, Clone)]
pub struct Events {
    start: Vec<i64>,
    dur: Vec<i64>,
    meta: Vec<u32>,
    depth: std::sync::OnceLock<Vec<u16>>,
    /// [`Events::span`], computed on first use (reset by [`Events::shift`]).
    span: std::sync::OnceLock<Option<(i64, i64)>>,
    /// `stat_off[i]..stat_off[i+1]` is event `i`'s range in `stats`; has `len() + 1` entries.
    stat_off: Vec<u32>,
    stats: Vec<u8>,
    /// Events that stand for several occurrences (XPlane `num_occurrences`): (event index, count).
    occurrences: Vec<(u32, i64)>,
    /// The distinct keys of the events' stats, sorted, when the importer knows them (`None`:
    /// unknown, any key may occur).
    stat_keys: Option<Vec<StrId>>,
    /// The flow ends among the events' own stats, by event, when the importer listed them.
    flows: Option<Flows>,
}

/// One end of a flow on an event: the event's index in its line, the flow's type and its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowRef {
    pub event: u32,
    pub ty: u32,
    pub id: u64,
}

/// The flow ends that events carry as stats (XPlane: a producer is a `_pt` type with a `_p` id,
/// a consumer a `_ct` type with a `_c` id), listed by the importer as it reads them so that
/// readers that follow flows need not scan every stat. The stats themselves stay as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flows {
    /// Producer ends, by event (at most one per event).
    pub producers: Vec<FlowRef>,
    /// Consumer ends, by event (at most one per event).
    pub consumers: Vec<FlowRef>,
    /// The importer left the flow stats out of the events' stats, at the request of a reader
    /// that only follows flows ([`EventsBuilder::list_flows_only`]): this list is their only
    /// record, and the events' stats hold none.
    pub not_in_stats: bool,
}

impl Events {
    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Start times in picoseconds relative to the profile origin.
    pub fn starts(&self) -> &[i64] {
        &self.start
    }

    pub fn durations(&self) -> &[i64] {
        &self.dur
    }

    /// Index of each event's metadata in its plane's `event_metadata`.
    pub fn metadata_indices(&self) -> &[u32] {
        &self.meta
    }

    pub fn depths(&self) -> &[u16] {
        self.depth.get_or_init(|| self.compute_depths())
    }

    #[inline]
    pub fn start(&self, i: usize) -> i64 {
        self.start[i]
    }

    #[inline]
    pub fn dur(&self, i: usize) -> i64 {
        self.dur[i]
    }

    #[inline]
    pub fn end(&self, i: usize) -> i64 {
        self.start[i].saturating_add(self.dur[i])
    }

    #[inline]
    pub fn meta(&self, i: usize) -> u32 {
        self.meta[i]
    }

    #[inline]
    pub fn depth(&self, i: usize) -> u16 {
        self.depths()[i]
    }

    /// Nesting depth: how many earlier events still cover each event's start.
    fn compute_depths(&self) -> Vec<u16> {
        let n = self.len();
        let mut depth = Vec::with_capacity(n);
        let mut open_ends: Vec<i64> = Vec::new();
        for i in 0..n {
            let s = self.start[i];
            while let Some(&e) = open_ends.last() {
                if e <= s {
                    open_ends.pop();
                } else {
                    break;
                }
            }
            depth.push(open_ends.len().min(u16::MAX as usize) as u16);
            open_ends.push(self.end(i));
        }
        depth
    }

    #[inline]
    pub fn stats(&self, i: usize) -> Stats<'_> {
        let a = self.stat_off[i] as usize;
        let b = self.stat_off[i + 1] as usize;
        // The whole line's buffer, so that readers may load ahead across the event's end.
        Stats::within(&self.stats, a, b)
    }

    /// Events that aggregate several occurrences, as (event index, occurrences).
    pub fn occurrences(&self) -> &[(u32, i64)] {
        &self.occurrences
    }

    /// Whether some event of the line may have a stat with this key: `false` only when the line
    /// certainly has none, so a reader looking for the key can skip the line.
    pub fn may_have_stat(&self, key: StrId) -> bool {
        match &self.stat_keys {
            Some(keys) => keys.binary_search(&key).is_ok(),
            None => true,
        }
    }

    /// The flow ends of the events' own stats (not their metadata's), when the importer listed
    /// them (`None`: a reader must find flows in the stats).
    pub fn flows(&self) -> Option<&Flows> {
        self.flows.as_ref()
    }

    /// Bytes the events' stats take in the model's encoding (a measure of the work of reading
    /// them all).
    pub fn stats_bytes(&self) -> usize {
        self.stats.len()
    }

    /// Bytes of heap this line holds.
    pub fn heap_bytes(&self) -> usize {
        self.start.capacity() * 8
            + self.dur.capacity() * 8
            + self.meta.capacity() * 4
            + self.depth.get().map_or(0, |d| d.capacity() * 2)
            + self.stat_off.capacity() * 4
            + self.flows.as_ref().map_or(0, |f| {
                (f.producers.capacity() + f.consumers.capacity()) * std::mem::size_of::<FlowRef>()
            })
            + self.stats.capacity()
            + self.occurrences.capacity() * 16
    }

    /// Earliest start and latest end, if any event exists (computed once: a profile's span
    /// reads every event, and a summary asks for it after the parallel part of its work).
    pub fn span(&self) -> Option<(i64, i64)> {
        *self.span.get_or_init(|| {
            let first = *self.start.first()?;
            let end = (0..self.len()).map(|i| self.end(i)).max()?;
            Some((first, end))
        })
    }

    /// Index of the first event whose start is `>= t`.
    pub fn lower_bound(&self, t: i64) -> usize {
        self.start.partition_point(|&s| s < t)
    }

    /// Self time of every event: its duration minus the time covered by its direct children.
    pub fn self_times(&self) -> Vec<i64> {
        let mut out = Vec::new();
        self.self_times_into(&mut out);
        out
    }

    /// [`Events::self_times`] into `out` (its old contents replaced), for a caller that reuses
    /// one buffer line after line.
    /// The self time of event `i` alone, as [`Events::self_times`] gives it, in time
    /// proportional to the events it encloses (for readers that need few events' self times).
    pub fn self_time(&self, i: usize) -> i64 {
        let (Some(&s), Some(&d)) = (self.start.get(i), self.dur.get(i)) else {
            return 0;
        };
        let end = s.saturating_add(d);
        let mut t = d;
        // The end of the latest direct child and of the events open inside it, as in
        // `self_times_into`'s stack above event `i`.
        let mut open: Vec<i64> = Vec::new();
        for (&cs, &cd) in self.start[i + 1..].iter().zip(&self.dur[i + 1..]) {
            if cs >= end {
                break;
            }
            while open.last().is_some_and(|&e| e <= cs) {
                open.pop();
            }
            let ce = cs.saturating_add(cd);
            if open.is_empty() {
                t -= ce.min(end) - cs;
            }
            open.push(ce);
        }
        t.max(0)
    }

    pub fn self_times_into(&self, out: &mut Vec<i64>) {
        out.clear();
        out.extend_from_slice(&self.dur);
        let self_time = out;
        // Stack of open ancestors (end, index); a child is an event nested directly under the
        // top.
        let mut stack: Vec<(i64, usize)> = Vec::new();
        for (i, (&s, &d)) in self.start.iter().zip(&self.dur).enumerate() {
            while let Some(&(end, _)) = stack.last() {
                if end <= s {
                    stack.pop();
                } else {
                    break;
                }
            }
            let e = s.saturating_add(d);
            if let Some(&(parent_end, parent)) = stack.last() {
                // Only the part of the child that lies inside the parent counts against it.
                let overlap = e.min(parent_end) - s;
                if overlap > 0 {
                    if let Some(t) = self_time.get_mut(parent) {
                        *t -= overlap;
                    }
                }
            }
            stack.push((e, i));
        }
        for v in self_time.iter_mut() {
            if *v < 0 {
                *v = 0;
            }
        }
    }

    /// Shifts every start by `delta` picoseconds (saturating at the ends of the `i64` range).
    pub fn shift(&mut self, delta: i64) {
        self.span = std::sync::OnceLock::new();
        // Starts are sorted: when neither end overflows no start does, and a plain add (which
        // vectorises) gives what the saturating one would.
        let fits = |s: Option<&i64>| s.is_none_or(|s| s.checked_add(delta).is_some());
        if fits(self.start.first()) && fits(self.start.last()) {
            for s in &mut self.start {
                *s = s.wrapping_add(delta);
            }
        } else {
            for s in &mut self.start {
                *s = s.saturating_add(delta);
            }
        }
    }
}

/// Builds an [`Events`] column set from events in any order.
pub struct EventsBuilder {
    ev: Events,
    /// Stats were written through [`EventsBuilder::stats_buf`] or
    /// [`EventsBuilder::stats_encoded`], whose keys the builder does not see.
    raw_stats: bool,
    /// The keys of those stats, as the importer declared them.
    declared_keys: Option<Vec<StrId>>,
}

impl Default for EventsBuilder {
    fn default() -> Self {
        Self::with_capacity(0, 0)
    }
}

impl EventsBuilder {
    pub fn with_capacity(events: usize, stat_bytes: usize) -> Self {
        let mut ev = Events {
            start: Vec::with_capacity(events),
            dur: Vec::with_capacity(events),
            meta: Vec::with_capacity(events),
            depth: std::sync::OnceLock::new(),
            span: std::sync::OnceLock::new(),
            stat_off: Vec::with_capacity(events + 1),
            stats: Vec::with_capacity(stat_bytes),
            occurrences: Vec::new(),
            stat_keys: Some(Vec::new()),
            flows: None,
        };
        ev.stat_off.push(0);
        EventsBuilder {
            ev,
            raw_stats: false,
            declared_keys: None,
        }
    }

    /// Adds an event. Its stats are the bytes written through [`EventsBuilder::stats_buf`] since
    /// the previous event (importers that read an event's stats before its time, in one pass),
    /// and those added afterwards with [`EventsBuilder::stat`] or
    /// [`EventsBuilder::stats_encoded`].
    #[inline]
    pub fn push(&mut self, start_ps: i64, dur_ps: i64, meta: u32) {
        if self.ev.stat_off.is_empty() {
            self.ev.stat_off.push(0);
        }
        self.ev.start.push(start_ps);
        self.ev.dur.push(dur_ps);
        self.ev.meta.push(meta);
        self.ev.stat_off.push(self.ev.stats.len() as u32);
    }

    /// The stats buffer, to encode the next event's stats into directly (with
    /// [`crate::encode_stat`] and the like) before [`EventsBuilder::push`] adds it.
    #[inline]
    pub fn stats_buf(&mut self) -> &mut Vec<u8> {
        self.raw_stats = true;
        &mut self.ev.stats
    }

    /// Declares the distinct keys of the stats written through [`EventsBuilder::stats_buf`] or
    /// [`EventsBuilder::stats_encoded`] (which the builder does not see), so that readers can
    /// skip lines without a key ([`Events::may_have_stat`]). Without it those lines count as
    /// possibly having any key. The list must be complete.
    pub fn declare_stat_keys(&mut self, mut keys: Vec<StrId>) {
        keys.sort_unstable();
        keys.dedup();
        self.declared_keys = Some(keys);
    }

    /// Starts a list of the events' flow ends ([`Events::flows`]): the importer promises to add
    /// every flow end of the events' stats with [`EventsBuilder::flow`], or to call
    /// [`EventsBuilder::unlist_flows`].
    pub fn list_flows(&mut self) {
        self.ev.flows.get_or_insert_with(Flows::default);
    }

    /// [`EventsBuilder::list_flows`] for an importer that keeps flow stats out of the events'
    /// stats ([`Flows::not_in_stats`]): it promises to add every flow end to the list, and
    /// never to call [`EventsBuilder::unlist_flows`].
    pub fn list_flows_only(&mut self) {
        self.ev
            .flows
            .get_or_insert_with(Flows::default)
            .not_in_stats = true;
    }

    /// Whether the flows are listed and the list is their only record
    /// ([`EventsBuilder::list_flows_only`]).
    pub fn flows_only_listed(&self) -> bool {
        self.ev.flows.as_ref().is_some_and(|f| f.not_in_stats)
    }

    /// Gives up the list of flow ends (for a flow the list cannot hold): readers then find
    /// flows in the stats.
    pub fn unlist_flows(&mut self) {
        debug_assert!(
            !self.ev.flows.as_ref().is_some_and(|f| f.not_in_stats),
            "a list that is the only record of the flows is never given up"
        );
        self.ev.flows = None;
    }

    /// Adds a flow end (a producer, or a consumer) to the last pushed event, when flows are
    /// listed.
    #[inline]
    pub fn flow(&mut self, consumer: bool, ty: u32, id: u64) {
        let Some(last) = self.ev.start.len().checked_sub(1) else {
            return;
        };
        let Some(f) = &mut self.ev.flows else {
            return;
        };
        let end = FlowRef {
            event: last as u32,
            ty,
            id,
        };
        if consumer {
            f.consumers.push(end);
        } else {
            f.producers.push(end);
        }
    }

    /// Marks the last pushed event as standing for `n` occurrences.
    pub fn set_occurrences(&mut self, n: i64) {
        if let Some(last) = self.ev.start.len().checked_sub(1) {
            self.ev.occurrences.push((last as u32, n));
        }
    }

    /// Adds a stat to the last pushed event.
    #[inline]
    pub fn stat(&mut self, key: StrId, value: StatValue) {
        if self.ev.start.is_empty() {
            return;
        }
        encode_stat(&mut self.ev.stats, key, value);
        if let Some(last) = self.ev.stat_off.last_mut() {
            *last = self.ev.stats.len() as u32;
        }
        if let Some(keys) = &mut self.ev.stat_keys {
            if let Err(at) = keys.binary_search(&key) {
                keys.insert(at, key);
            }
        }
    }

    /// Adds stats already in the model's encoding (see [`crate::encode_stat`]) to the last event.
    #[inline]
    pub fn stats_encoded(&mut self, encoded: &[u8]) {
        if self.ev.start.is_empty() {
            return;
        }
        self.raw_stats = true;
        self.ev.stats.extend_from_slice(encoded);
        if let Some(last) = self.ev.stat_off.last_mut() {
            *last = self.ev.stats.len() as u32;
        }
    }

    /// Number of events pushed so far.
    pub fn len(&self) -> usize {
        self.ev.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ev.start.is_empty()
    }

    /// Sorts the events and returns the finished columns.
    pub fn finish(mut self) -> Events {
        if self.raw_stats {
            // Keys written raw are known only if declared; with `stat` keys too, the union.
            self.ev.stat_keys = match (self.declared_keys.take(), self.ev.stat_keys.take()) {
                (Some(mut d), Some(k)) => {
                    d.extend(k);
                    d.sort_unstable();
                    d.dedup();
                    Some(d)
                }
                _ => None,
            };
        }
        let ev = &mut self.ev;
        if ev.stat_off.is_empty() {
            ev.stat_off.push(0);
        }
        let n = ev.start.len();
        let sorted = (1..n).all(|i| {
            let (a, b) = (i - 1, i);
            ev.start[a] < ev.start[b] || (ev.start[a] == ev.start[b] && ev.dur[a] >= ev.dur[b])
        });
        if !sorted {
            let mut perm: Vec<u32> = (0..n as u32).collect();
            perm.sort_by(|&a, &b| {
                let (a, b) = (a as usize, b as usize);
                ev.start[a]
                    .cmp(&ev.start[b])
                    .then(ev.dur[b].cmp(&ev.dur[a]))
            });
            ev.start = perm.iter().map(|&i| ev.start[i as usize]).collect();
            ev.dur = perm.iter().map(|&i| ev.dur[i as usize]).collect();
            ev.meta = perm.iter().map(|&i| ev.meta[i as usize]).collect();
            let mut stats = Vec::with_capacity(ev.stats.len());
            let mut off = Vec::with_capacity(n + 1);
            off.push(0u32);
            for &i in &perm {
                let (a, b) = (
                    ev.stat_off[i as usize] as usize,
                    ev.stat_off[i as usize + 1] as usize,
                );
                stats.extend_from_slice(&ev.stats[a..b]);
                off.push(stats.len() as u32);
            }
            ev.stats = stats;
            ev.stat_off = off;
            if !ev.occurrences.is_empty() {
                let mut inverse = vec![0u32; n];
                for (new, &old) in perm.iter().enumerate() {
                    inverse[old as usize] = new as u32;
                }
                for o in &mut ev.occurrences {
                    o.0 = inverse[o.0 as usize];
                }
                ev.occurrences.sort_unstable();
            }
            if let Some(f) = &mut ev.flows {
                let mut inverse = vec![0u32; n];
                for (new, &old) in perm.iter().enumerate() {
                    inverse[old as usize] = new as u32;
                }
                for list in [&mut f.producers, &mut f.consumers] {
                    for e in list.iter_mut() {
                        e.event = inverse[e.event as usize];
                    }
                    list.sort_by_key(|e| e.event);
                }
            }
        }
        // Importers reserve generously from the input's size; give back what was not used.
        ev.start.shrink_to_fit();
        ev.dur.shrink_to_fit();
        ev.meta.shrink_to_fit();
        ev.stat_off.shrink_to_fit();
        ev.stats.shrink_to_fit();
        if let Some(f) = &mut ev.flows {
            f.producers.shrink_to_fit();
            f.consumers.shrink_to_fit();
        }
        self.ev
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_keys_let_readers_skip_lines_only_when_known() {
        let mut b = EventsBuilder::default();
        b.push(0, 10, 0);
        b.stat(StrId(7), StatValue::I64(1));
        b.stat(StrId(3), StatValue::I64(2));
        let ev = b.finish();
        assert!(ev.may_have_stat(StrId(7)) && ev.may_have_stat(StrId(3)));
        assert!(!ev.may_have_stat(StrId(5)));
        // Stats written raw: unknown keys unless declared.
        let mut b = EventsBuilder::default();
        encode_stat(b.stats_buf(), StrId(9), StatValue::U64(1));
        b.push(0, 10, 0);
        assert!(b.finish().may_have_stat(StrId(5)));
        let mut b = EventsBuilder::default();
        encode_stat(b.stats_buf(), StrId(9), StatValue::U64(1));
        b.push(0, 10, 0);
        b.declare_stat_keys(vec![StrId(9)]);
        let ev = b.finish();
        assert!(ev.may_have_stat(StrId(9)) && !ev.may_have_stat(StrId(5)));
        assert_eq!(ev.stats(0).get(StrId(9)), Some(StatValue::U64(1)));
    }

    #[test]
    fn flow_ends_follow_their_events_when_sorted() {
        let end = |event, ty, id| FlowRef { event, ty, id };
        // Not listed unless the importer says so.
        let mut b = EventsBuilder::default();
        b.push(0, 1, 0);
        b.flow(false, 1, 2);
        assert!(b.finish().flows().is_none());
        // Recorded in end order; the enclosing event (pushed last) comes first once sorted.
        let mut b = EventsBuilder::default();
        b.list_flows();
        b.push(10, 5, 0);
        b.flow(false, 1, 100);
        b.push(20, 5, 1);
        b.flow(true, 1, 100);
        b.flow(false, 2, 7);
        b.push(0, 100, 2);
        b.flow(true, 2, 7);
        let ev = b.finish();
        assert_eq!(ev.metadata_indices(), &[2, 0, 1]);
        let f = ev.flows().expect("listed");
        assert_eq!(f.producers, [end(1, 1, 100), end(2, 2, 7)]);
        assert_eq!(f.consumers, [end(0, 2, 7), end(2, 1, 100)]);
        // Given up: none.
        let mut b = EventsBuilder::default();
        b.list_flows();
        b.push(0, 1, 0);
        b.flow(false, 1, 2);
        b.unlist_flows();
        b.push(1, 1, 0);
        b.flow(false, 1, 3);
        assert!(b.finish().flows().is_none());
    }

    fn build(evs: &[(i64, i64)]) -> Events {
        let mut b = EventsBuilder::with_capacity(evs.len(), 0);
        for (k, &(s, d)) in evs.iter().enumerate() {
            b.push(s, d, k as u32);
            b.stat(StrId(1), StatValue::I64(k as i64));
        }
        b.finish()
    }

    #[test]
    fn sorts_and_keeps_stats_with_their_event() {
        // Recorded in end order, as host tracers do: children end before their parent.
        let ev = build(&[(10, 5), (20, 5), (0, 100), (200, 1)]);
        assert_eq!(ev.starts(), &[0, 10, 20, 200]);
        assert_eq!(ev.metadata_indices(), &[2, 0, 1, 3]);
        for i in 0..ev.len() {
            let k = ev.meta(i) as i64;
            assert_eq!(ev.stats(i).get(StrId(1)), Some(StatValue::I64(k)));
        }
        assert_eq!(ev.depths(), &[0, 1, 1, 0]);
        assert_eq!(ev.self_times(), vec![90, 5, 5, 1]);
    }

    #[test]
    fn self_time_of_one_event_equals_the_whole_computation() {
        // Nesting, equal starts, children that run past their parent, zero-length events.
        let ev = build(&[
            (0, 100),
            (0, 50),
            (10, 5),
            (40, 30),
            (45, 2),
            (60, 0),
            (90, 20),
            (95, 30),
            (130, 10),
            (130, 10),
            (135, 1),
        ]);
        let all = ev.self_times();
        for (i, &want) in all.iter().enumerate() {
            assert_eq!(ev.self_time(i), want, "event {i}");
        }
        assert_eq!(ev.self_time(99), 0);
    }

    #[test]
    fn deep_nesting_and_equal_starts() {
        let ev = build(&[(0, 10), (0, 100), (0, 50), (60, 10), (65, 2)]);
        assert_eq!(ev.durations(), &[100, 50, 10, 10, 2]);
        assert_eq!(ev.depths(), &[0, 1, 2, 1, 2]);
        assert_eq!(ev.self_times(), vec![40, 40, 10, 8, 2]);
        assert_eq!(ev.lower_bound(60), 3);
        assert_eq!(ev.span(), Some((0, 100)));
    }

    #[test]
    fn span_follows_shifts() {
        // The latest end is not the last event's: (10, 50) ends at 60, after (40, 5).
        let mut ev = build(&[(10, 50), (40, 5)]);
        assert_eq!(ev.span(), Some((10, 60)));
        ev.shift(-10);
        assert_eq!(ev.span(), Some((0, 50)));
        ev.shift(i64::MAX);
        // Starts saturate at i64::MAX, and so do the ends.
        assert_eq!(ev.span(), Some((i64::MAX, i64::MAX)));
        assert_eq!(build(&[]).span(), None);
    }
}
