//! The trace (or a range of it) as Chrome trace-event JSON, for Perfetto UI and
//! chrome://tracing.

use super::*;

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

pub(super) fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}
