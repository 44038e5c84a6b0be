//! One event's details and flows, search by name, and the statistics of a time range.

use super::*;

impl TraceIndex {
    pub(super) fn flow_index(&self) -> &FlowIndex {
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
    pub(super) fn step_at(&self, host: u32, t: i64) -> Option<(Option<i64>, String)> {
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
