//! The model from what was read: metadata applied, flows bound, each track's events laid out in
//! non-overlapping lanes, and the planes' stats.

use super::*;

impl Importer {
    pub(super) fn complete_on(
        &mut self,
        t: usize,
        name: &str,
        cat: &str,
        args: Option<Args<'_, '_>>,
        start: i64,
        dur: i64,
    ) {
        let stats = self.stats(t, name, cat, args);
        // (Short names, as the runtime's and most CPU ops', through the table of short strings.)
        let name = self.ids.short(&mut self.p, name);
        self.tracks[t].events.push(Ev {
            start,
            dur,
            name,
            stats,
        });
        self.note_time(start);
        self.note_time(start.saturating_add(dur));
    }

    pub(super) fn metadata(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
        let name = e.name.as_deref().unwrap_or("");
        let arg = |k: &str| -> Option<serde_json::Value> {
            serde_json::from_str(args?.get(k)?.get()).ok()
        };
        let (pid, tid) = (Key::of(e.pid), Key::of(e.tid));
        match name {
            "process_name" => {
                if let Some(serde_json::Value::String(s)) = arg("name") {
                    self.process_names.insert(pid, s);
                }
            }
            "thread_name" => {
                if let Some(serde_json::Value::String(s)) = arg("name") {
                    self.thread_names.insert((pid, tid), s);
                }
            }
            "thread_sort_index" => {
                if let Some(n) = arg("sort_index").and_then(|v| v.as_i64()) {
                    self.thread_sort.insert((pid, tid), n);
                }
            }
            "process_sort_index" => {
                if let Some(n) = arg("sort_index").and_then(|v| v.as_i64()) {
                    self.process_sort.insert(pid, n);
                }
            }
            _ => {}
        }
    }

    /// Binds flow points to slices (after every slice is known) as extra stats.
    pub(super) fn bind_flows(&mut self) {
        for t in &mut self.tracks {
            t.events
                .sort_by(|a, b| a.start.cmp(&b.start).then(b.dur.cmp(&a.dur)));
        }
        let keys = [
            self.p.strings.intern("_p"),
            self.p.strings.intern("_pt"),
            self.p.strings.intern("_c"),
            self.p.strings.intern("_ct"),
        ];
        let mut types: HashMap<StrId, i64> = HashMap::new();
        let flows = std::mem::take(&mut self.flows);
        // Made for a track when a flow point first looks for its enclosing slice there.
        let mut ends: Vec<Option<BlockEnds>> = (0..self.tracks.len()).map(|_| None).collect();
        for f in flows {
            if LAUNCH_FLOW_CATS.contains(&self.p.str(f.cat)) {
                continue;
            }
            let n = types.len() as i64 + 1;
            let ty = *types.entry(f.cat).or_insert(n);
            let ev = &self.tracks[f.track].events;
            let i = ev.partition_point(|e| e.start <= f.ts);
            let at = if f.enclosing {
                // The deepest slice covering ts: the latest-starting one that still covers it.
                match ends.get_mut(f.track) {
                    Some(e) => e.get_or_insert_with(|| BlockEnds::of(ev)).last(ev, i, f.ts),
                    None => (0..i).rev().find(|&k| ev[k].start + ev[k].dur >= f.ts),
                }
            } else {
                let j = ev.partition_point(|e| e.start < f.ts);
                (j < ev.len()).then_some(j)
            };
            let Some(at) = at else {
                self.unbound_flows += 1;
                continue;
            };
            let (kid, kty) = if f.ph == b's' {
                (keys[0], keys[1])
            } else {
                (keys[2], keys[3])
            };
            let extra = &mut self.tracks[f.track].extra;
            extra.push((at as u32, kid, StatValue::U64(f.id)));
            extra.push((at as u32, kty, StatValue::I64(ty)));
        }
    }

    pub(super) fn finish_skipped(self, skip: Option<Skip>) -> Profile {
        let (skipped, args_not_read) = (self.skipped, self.args_not_read);
        let mut p = self.finish();
        if let (Some(s), true) = (skip, skipped > 0 || args_not_read > 0) {
            let args = match s.args_kept {
                Some(kept) if args_not_read > 0 => format!(
                    "; of the events read, {args_not_read} args other than {} not read",
                    kept.join(", ")
                ),
                _ => String::new(),
            };
            p.partial_read = Some(format!(
                "{skipped} events not read (complete events of {}; flows of {}){args}: the tool asked for does not use them",
                s.complete_cats.join(", "),
                s.flow_cats.join(", ")
            ));
        }
        p
    }

    pub(super) fn finish(mut self) -> Profile {
        // Close what was left open at the trace's end.
        let end = self.max_ts;
        for t in &mut self.tracks {
            while let Some((start, name, stats)) = t.open.pop() {
                self.unclosed += 1;
                t.events.push(Ev {
                    start,
                    dur: (end - start).max(0),
                    name,
                    stats,
                });
            }
        }
        for (_, (start, t, name, stats)) in std::mem::take(&mut self.async_open) {
            self.unclosed += 1;
            self.tracks[t].events.push(Ev {
                start,
                dur: (end - start).max(0),
                name,
                stats,
            });
        }
        self.bind_flows();
        let origin = self.min_ts;
        let p = &mut self.p;
        p.base_time_ps = self.base_time_ns.map_or(0, |b| i128::from(b) * 1000);
        p.origin_ps = self.anchor.unwrap_or(0) + i128::from(origin) + p.base_time_ps;
        // Kineto writes wall-clock microseconds (since the epoch), or times relative to
        // `baseTimeNanoseconds`, which is.
        p.origin_is_wall_clock =
            self.base_time_ns.is_some() || p.origin_ps > 946_684_800_000_000_000_000;

        // Which processes are devices.
        let mut gpu_pids: Vec<i64> = Vec::new();
        for (k, t) in self.keys.iter().zip(&self.tracks) {
            if let (true, Key::Num(n)) = (t.gpu, &k.pid) {
                if !gpu_pids.contains(n) {
                    gpu_pids.push(*n);
                }
            }
        }
        gpu_pids.sort_unstable();
        let host_pids: Vec<Key> = {
            let mut v: Vec<Key> = self
                .keys
                .iter()
                .map(|k| k.pid.clone())
                .filter(|k| matches!(k, Key::Num(n) if !gpu_pids.contains(n)))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut overlaps = 0usize;
        let mut planes: Vec<(String, Vec<LineOf>)> = Vec::new();
        // (plane name, [(sort key, line name, track)]).
        let mut plane_of: HashMap<String, usize> = HashMap::new();
        for (ti, k) in self.keys.iter().enumerate() {
            if self.tracks[ti].events.is_empty() {
                continue;
            }
            let (plane, line, sort) = match (&k.pid, k.class) {
                (Key::Num(n), class) if gpu_pids.contains(n) => {
                    let line = match class {
                        Class::Annotations => format!("Annotations, stream {}", k.tid),
                        Class::Thread => format!("Stream #{}", k.tid),
                        Class::Async => format!("Async {}", k.tid),
                        Class::Counter => k.tid.to_string(),
                    };
                    let sort = match (&k.tid, class) {
                        (Key::Num(s), Class::Thread) => *s,
                        (Key::Num(s), _) => s.saturating_add(1 << 40),
                        _ => 1 << 50,
                    };
                    (format!("/device:GPU:{n}"), line, sort)
                }
                (Key::Num(_), class) => {
                    let base = match class {
                        Class::Thread | Class::Annotations => self
                            .thread_names
                            .get(&(k.pid.clone(), k.tid.clone()))
                            .cloned()
                            .unwrap_or_else(|| format!("thread {}", k.tid)),
                        Class::Async => format!("Async {}", k.tid),
                        Class::Counter => k.tid.to_string(),
                    };
                    let line = if host_pids.len() > 1 {
                        let pname = self
                            .process_names
                            .get(&k.pid)
                            .cloned()
                            .unwrap_or_else(|| "process".into());
                        format!("{pname} {} / {base}", k.pid)
                    } else {
                        base
                    };
                    let pos = host_pids.iter().position(|x| x == &k.pid).unwrap_or(0) as i64;
                    let within = match class {
                        Class::Thread | Class::Annotations => self
                            .thread_sort
                            .get(&(k.pid.clone(), k.tid.clone()))
                            .copied()
                            .unwrap_or(match k.tid {
                                Key::Num(t) => t,
                                _ => 0,
                            }),
                        _ => 1 << 40,
                    };
                    (
                        "/host:CPU".to_string(),
                        line,
                        (pos << 48) + (within & ((1 << 47) - 1)),
                    )
                }
                (Key::Str(s), _) => (format!("/trace:{s}"), k.tid.to_string(), 0),
            };
            let pi = *plane_of.entry(plane.clone()).or_insert_with(|| {
                planes.push((plane, Vec::new()));
                planes.len() - 1
            });
            planes[pi].1.push((sort, line, ti));
        }
        // Host first, then devices by number, then the rest.
        planes.sort_by_key(|(name, _)| {
            if name == "/host:CPU" {
                (0, 0, String::new())
            } else if let Some(n) = name.strip_prefix("/device:GPU:") {
                (1, n.parse::<i64>().unwrap_or(0), String::new())
            } else {
                (2, 0, name.clone())
            }
        });
        let mut tracks = std::mem::take(&mut self.tracks);
        for (plane_id, (pname, mut lines)) in planes.into_iter().enumerate() {
            lines.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            let mut plane = Plane {
                id: plane_id as i64,
                name: p.strings.intern(&pname),
                ..Plane::default()
            };
            let mut meta_of: HashMap<StrId, u32> = HashMap::new();
            let mut line_id = 0i64;
            for (_, lname, ti) in lines {
                let t = std::mem::take(&mut tracks[ti]);
                let lanes = build_lanes(t, origin, &mut plane, &mut meta_of);
                overlaps += lanes.len().saturating_sub(1);
                for (k, events) in lanes.into_iter().enumerate() {
                    let name = if k == 0 {
                        lname.clone()
                    } else {
                        format!("{lname} (overlap {k})")
                    };
                    let name = p.strings.intern(&name);
                    plane.lines.push(Line {
                        id: line_id,
                        display_id: line_id,
                        name,
                        display_name: name,
                        timestamp_ns: 0,
                        duration_ps: 0,
                        events,
                    });
                    line_id += 1;
                }
            }
            plane_stats(
                p,
                &mut plane,
                &pname,
                &self.device_properties,
                &self.distributed_info,
            );
            p.planes.push(plane);
        }
        let w = &mut p.import_warnings;
        if self.no_time > 0 {
            w.push(format!(
                "{} events without a readable `ts` were skipped",
                self.no_time
            ));
        }
        let mut unknown: Vec<_> = self.unknown_phase.into_iter().collect();
        unknown.sort();
        for (ph, n) in unknown {
            w.push(format!(
                "{n} events of phase `{ph}` (not read) were skipped"
            ));
        }
        if self.unmatched_end > 0 {
            w.push(format!(
                "{} end events (`E`, `e`) had no open begin and were skipped",
                self.unmatched_end
            ));
        }
        if self.unclosed > 0 {
            w.push(format!(
                "{} begin events (`B`, `b`) were never closed; they end at the trace's end",
                self.unclosed
            ));
        }
        if self.unbound_flows > 0 {
            w.push(format!(
                "{} flow events had no id or no slice to attach to and were skipped",
                self.unbound_flows
            ));
        }
        if self.negative_dur > 0 {
            w.push(format!(
                "{} events with a negative `dur` were kept with duration 0",
                self.negative_dur
            ));
        }
        if overlaps > 0 {
            w.push(format!(
                "slices that overlap without nesting were moved to {overlaps} extra lines (named `(overlap N)`)"
            ));
        }
        self.p
    }
}

/// The latest end of each block of [`BlockEnds::BLOCK`] slices of a track, to find the last slice
/// before a place that ends at or after a time (a flow point's enclosing slice) without looking
/// at every slice before it: a point that no recent slice covers (on a thread of short runtime
/// calls, only a step annotation long before does) was a scan back over the whole track.
pub(super) struct BlockEnds(Vec<i64>);

impl BlockEnds {
    const BLOCK: usize = 64;

    pub(super) fn of(ev: &[Ev]) -> BlockEnds {
        BlockEnds(
            ev.chunks(Self::BLOCK)
                .map(|c| c.iter().map(|e| e.start + e.dur).max().unwrap_or(i64::MIN))
                .collect(),
        )
    }

    /// The greatest `k < i` with `ev[k]` ending at or after `ts`: what
    /// `(0..i).rev().find(|&k| ev[k].start + ev[k].dur >= ts)` finds.
    pub(super) fn last(&self, ev: &[Ev], i: usize, ts: i64) -> Option<usize> {
        let covers = |k: usize| ev[k].start + ev[k].dur >= ts;
        let mut k = i.min(ev.len());
        // The part of a block just below `i`, one slice at a time.
        while !k.is_multiple_of(Self::BLOCK) {
            k -= 1;
            if covers(k) {
                return Some(k);
            }
        }
        // Then whole blocks, skipping those that all end before `ts`.
        let block = (0..k / Self::BLOCK)
            .rev()
            .find(|&b| self.0.get(b).is_some_and(|&m| m >= ts))?;
        (block * Self::BLOCK..(block + 1) * Self::BLOCK)
            .rev()
            .find(|&k| covers(k))
    }
}

/// The events of one track as lines: the first holds every slice that nests; a slice that
/// overlaps without nesting goes to the next line where it nests. The track's events are sorted
/// by start, the longer first at the same start ([`Importer::bind_flows`] sorts them).
pub(super) fn build_lanes(
    t: Track,
    origin: i64,
    plane: &mut Plane,
    meta_of: &mut HashMap<StrId, u32>,
) -> Vec<xlens_model::Events> {
    debug_assert!(t
        .events
        .is_sorted_by(|x, y| x.start < y.start || (x.start == y.start && x.dur >= y.dur)));
    let order = 0..t.events.len() as u32;
    let mut extra = t.extra;
    extra.sort_by_key(|x| x.0);
    // Where each event's extra stats start in `extra` (and end, at the next event's start): found
    // once, in one pass, not searched for per event (which took half of this function's time).
    let extra_from = extra_starts(&extra, t.events.len());
    // Per lane: its open slices' ends, and its events.
    let mut lanes: Vec<(Vec<i64>, Vec<u32>)> = Vec::new();
    for i in order {
        let e = &t.events[i as usize];
        let end = e.start + e.dur;
        let mut placed = false;
        for (ends, evs) in lanes.iter_mut() {
            while ends
                .last()
                .is_some_and(|&x| x <= e.start && !(x == e.start && e.dur == 0))
            {
                ends.pop();
            }
            if ends.last().is_none_or(|&x| end <= x) {
                ends.push(end);
                evs.push(i);
                placed = true;
                break;
            }
        }
        if !placed {
            lanes.push((vec![end], vec![i]));
        }
    }
    let mut out = Vec::with_capacity(lanes.len());
    for (_, evs) in lanes {
        // Room for every stat at once: a buffer grown by doubling writes twice as many fresh
        // pages.
        let stat_bytes = evs
            .iter()
            .map(|&i| {
                let e = &t.events[i as usize];
                (e.stats.1 - e.stats.0) as usize
            })
            .sum();
        let mut b = EventsBuilder::with_capacity(evs.len(), stat_bytes);
        for i in evs {
            let e = &t.events[i as usize];
            let meta = *meta_of.entry(e.name).or_insert_with(|| {
                plane.event_metadata.push(EventMetadata {
                    id: plane.event_metadata.len() as i64,
                    name: e.name,
                    display_name: e.name,
                    ..EventMetadata::default()
                });
                plane.event_metadata.len() as u32 - 1
            });
            b.push(e.start - origin, e.dur, meta);
            b.stats_encoded(&t.stats[e.stats.0 as usize..e.stats.1 as usize]);
            if let Some(range) = extra_from.get(i as usize..i as usize + 2) {
                for &(_, k, v) in &extra[range[0] as usize..range[1] as usize] {
                    b.stat(k, v);
                }
            }
        }
        out.push(b.finish());
    }
    out
}

/// For `extra` sorted by event, the place in it where the extra stats of each of `n` events
/// start, and then its length: event `i`'s are `extra[starts[i]..starts[i + 1]]`. Empty when
/// `extra` is (no event has any). Entries naming no event below `n` are in no range.
pub(super) fn extra_starts(extra: &[(u32, StrId, StatValue)], n: usize) -> Vec<u32> {
    if extra.is_empty() {
        return Vec::new();
    }
    let mut starts = Vec::with_capacity(n + 1);
    let mut j = 0;
    for i in 0..=n {
        while j < extra.len() && (extra[j].0 as usize) < i {
            j += 1;
        }
        starts.push(j as u32);
    }
    starts
}

/// Stats of a plane from the trace's header: device properties on GPU planes, distributed info
/// on the host.
pub(super) fn plane_stats(
    p: &mut Profile,
    plane: &mut Plane,
    name: &str,
    devices: &Option<serde_json::Value>,
    dist: &Option<serde_json::Value>,
) {
    let mut put = |p: &mut Profile, k: &str, v: &serde_json::Value| {
        let key = p.strings.intern(k);
        if let Some(v) = json_stat(p, v) {
            encode_stat(&mut plane.stats, key, v);
        }
    };
    if let Some(n) = name.strip_prefix("/device:GPU:") {
        let id: i64 = n.parse().unwrap_or(-1);
        let props = devices.as_ref().and_then(|d| d.as_array()).and_then(|a| {
            a.iter()
                .find(|x| x.get("id").and_then(|v| v.as_i64()) == Some(id))
        });
        if let Some(serde_json::Value::Object(m)) = props {
            for (k, v) in m {
                put(p, k, v);
            }
            for (from, to) in [
                ("name", "device_name"),
                ("totalGlobalMem", "memory_size"),
                ("numSms", "core_count"),
                ("computeMajor", "compute_cap_major"),
                ("computeMinor", "compute_cap_minor"),
            ] {
                if let Some(v) = m.get(from) {
                    put(p, to, v);
                }
            }
        }
    } else if name == "/host:CPU" {
        if let Some(serde_json::Value::Object(m)) = dist {
            for (k, v) in m {
                put(p, k, v);
            }
        }
    }
}
