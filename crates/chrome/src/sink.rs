//! The importer as the JSON reader's sink: each trace event, field and string table as the
//! reader meets it.

use super::*;

impl Sink for Importer {
    fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
        let ph = e.ph.as_deref().unwrap_or("");
        if ph == "M" {
            self.metadata(e, args);
            return;
        }
        let Some(ts) = e.ts.and_then(micros_to_ps).and_then(|t| self.rel(t)) else {
            self.no_time += 1;
            return;
        };
        if e.skipped {
            // Left out, but its times still set the trace's span (as a full read's do).
            self.skipped += 1;
            if ph == "X" {
                let dur = e
                    .dur
                    .and_then(micros_to_ps)
                    .and_then(|d| i64::try_from(d).ok())
                    .unwrap_or(0)
                    .max(0);
                self.note_time(ts);
                self.note_time(ts.saturating_add(dur));
            }
            return;
        }
        match ph {
            "X" => {
                let mut dur = e
                    .dur
                    .and_then(micros_to_ps)
                    .and_then(|d| i64::try_from(d).ok())
                    .unwrap_or(0);
                if dur < 0 {
                    self.negative_dur += 1;
                    dur = 0;
                }
                self.args_not_read += e.args_left_out as usize;
                self.complete(e, args, ts, dur);
            }
            "B" => {
                let t = self.track_of(e.pid, e.tid, Class::Thread);
                let name = e.name.as_deref().unwrap_or("");
                let cat = e.cat.as_deref().unwrap_or("");
                let stats = self.stats(t, name, cat, args);
                let name = self.p.strings.intern(name);
                self.tracks[t].open.push((ts, name, stats));
                self.note_time(ts);
            }
            "E" => {
                let key = TrackKey {
                    pid: Key::of(e.pid),
                    tid: Key::of(e.tid),
                    class: Class::Thread,
                };
                let opened = self
                    .by_key
                    .get(&key)
                    .copied()
                    .and_then(|t| Some((t, self.tracks[t].open.pop()?)));
                match opened {
                    Some((t, (start, name, stats))) => {
                        let mut stats = stats;
                        // Args on the `E` are the slice's too.
                        if let Some(args) = args {
                            let (lo, _) = stats;
                            let mut out = std::mem::take(&mut self.tracks[t].stats);
                            if lo as usize + (stats.1 - lo) as usize == out.len() {
                                self.args_not_read += encode_args(
                                    &mut self.p,
                                    &mut out,
                                    args,
                                    false,
                                    self.args_kept,
                                    &self.read_ahead,
                                    &mut self.ids,
                                );
                                stats.1 = out.len() as u32;
                            }
                            self.tracks[t].stats = out;
                        }
                        self.tracks[t].events.push(Ev {
                            start,
                            dur: (ts - start).max(0),
                            name,
                            stats,
                        });
                        self.note_time(ts);
                    }
                    None => self.unmatched_end += 1,
                }
            }
            "i" | "I" | "R" => self.complete(e, args, ts, 0),
            "C" => {
                let name = e.name.as_deref().unwrap_or("counter");
                let t = self.track(TrackKey {
                    pid: Key::of(e.pid),
                    tid: Key::Str(name.to_string()),
                    class: Class::Counter,
                });
                // A counter's args are its values: always read.
                let stats = self.stats_keeping(t, "", "", args, None);
                let name = self.p.strings.intern(name);
                self.tracks[t].events.push(Ev {
                    start: ts,
                    dur: 0,
                    name,
                    stats,
                });
                self.note_time(ts);
            }
            "b" | "e" | "n" | "S" | "F" => {
                let cat = e.cat.as_deref().unwrap_or("").to_string();
                let name = e.name.as_deref().unwrap_or("").to_string();
                let id =
                    e.id.or(e.id2)
                        .map(|r| Key::of(Some(r)).to_string())
                        .unwrap_or_default();
                let pid = Key::of(e.pid);
                let t = self.track(TrackKey {
                    pid: pid.clone(),
                    tid: Key::Str(if cat.is_empty() {
                        "async".into()
                    } else {
                        cat.clone()
                    }),
                    class: Class::Async,
                });
                match ph {
                    "b" | "S" => {
                        let stats = self.stats(t, &name, &cat, args);
                        let n = self.p.strings.intern(&name);
                        self.async_open
                            .insert((pid, cat, id, name), (ts, t, n, stats));
                        self.note_time(ts);
                    }
                    "n" => self.complete_on(t, &name, &cat, args, ts, 0),
                    _ => {
                        // An end names its begin by (category, id) and usually the name.
                        let found = self
                            .async_open
                            .remove(&(pid.clone(), cat.clone(), id.clone(), name.clone()))
                            .or_else(|| {
                                let k = self
                                    .async_open
                                    .keys()
                                    .find(|k| k.0 == pid && k.1 == cat && k.2 == id)
                                    .cloned()?;
                                self.async_open.remove(&k)
                            });
                        match found {
                            Some((start, t, n, stats)) => {
                                self.tracks[t].events.push(Ev {
                                    start,
                                    dur: (ts - start).max(0),
                                    name: n,
                                    stats,
                                });
                                self.note_time(ts);
                            }
                            None => self.unmatched_end += 1,
                        }
                    }
                }
            }
            "s" | "t" | "f" => {
                let t = self.track_of(e.pid, e.tid, Class::Thread);
                let id = match e.id.or(e.id2).map(|r| Key::of(Some(r))) {
                    Some(Key::Num(n)) => n as u64,
                    Some(Key::Str(s)) => fnv(&s),
                    None => {
                        self.unbound_flows += 1;
                        return;
                    }
                };
                let cat = self.ids.short(&mut self.p, e.cat.as_deref().unwrap_or(""));
                self.flows.push(FlowPoint {
                    track: t,
                    ts,
                    id,
                    cat,
                    ph: ph.as_bytes()[0],
                    enclosing: ph != "f" || e.bp.as_deref() == Some("e"),
                });
            }
            other => *self.unknown_phase.entry(other.to_string()).or_default() += 1,
        }
    }

    fn strings(&mut self, new: &[std::borrow::Cow<'_, str>]) {
        for s in new {
            let id = self.p.strings.intern(s);
            self.read_ahead.push(id);
        }
    }

    fn field(&mut self, key: &str, value: &RawValue) {
        match key {
            "deviceProperties" => self.device_properties = serde_json::from_str(value.get()).ok(),
            "distributedInfo" => self.distributed_info = serde_json::from_str(value.get()).ok(),
            "baseTimeNanoseconds" => {
                self.base_time_ns = value.get().trim_matches('"').parse::<i64>().ok()
            }
            _ => {}
        }
    }
}
