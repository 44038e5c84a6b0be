//! The tool registry: one entry per tool, run the same way by the server and by `xlens tool`.

use serde::Serialize;
use std::sync::Arc;
use xlens_model::Profile;
use xlens_store::{HostFile, Session};

use crate::report::{self, Report};

/// A tool as listed to users.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ToolInfo {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
}

/// Every tool xlens has.
pub const TOOLS: &[ToolInfo] = &[
    ToolInfo {
        name: "report",
        title: "Report",
        description: "What the profile holds: device, span, events per plane and line, steps, top ops by self time, recorded errors.",
    },
    ToolInfo {
        name: "trace_viewer",
        title: "Trace viewer",
        description: "Host threads and device streams on one timeline; every event reachable by zooming, narrow ones merged into counted boxes.",
    },
    ToolInfo {
        name: "overview_page",
        title: "Overview",
        description: "Steps (XProf-compatible and all) with mean, std dev, min, max and a per-step breakdown; run environment, device duty cycle, op placement, FLOP rate, top ops, recommendations with evidence.",
    },
    ToolInfo {
        name: "input_pipeline_analyzer",
        title: "Input pipeline",
        description: "Input-bound share of each step and overall; host input events (tf.data iterators, IteratorGetNext, data-loading annotations).",
    },
    ToolInfo {
        name: "framework_op_stats",
        title: "Framework op stats",
        description: "Every framework op, host and device side, with self time, occurrences and FLOP rate, plus IDLE rows (no top-N cut).",
    },
    ToolInfo {
        name: "kernel_stats",
        title: "Kernel stats",
        description: "GPU kernels: registers, shared memory, grid and block, tensor-core use, occurrences and durations.",
    },
    ToolInfo {
        name: "memory_viewer",
        title: "Memory viewer",
        description: "Per HLO module: peak heap from XLA's buffer assignment, where it occurs, and the buffers live there (select with --module).",
    },
    ToolInfo {
        name: "memory_profile",
        title: "Memory profile",
        description: "Allocator timeline from host allocation events: heap allocated, reserved, free and fragmentation per allocator; the peak, when, and the allocations live there.",
    },
    ToolInfo {
        name: "op_profile",
        title: "Op profile",
        description: "Every HLO op by program → category (or by category, or by framework provenance): time, FLOP rate, FLOPs and HBM utilisation, bound by, wasted time; fusion bodies; CPU profiles from the cost model (--peak-flops/--peak-bw).",
    },
    ToolInfo {
        name: "hlo_stats",
        title: "HLO op stats",
        description: "One row per HLO op with XProf's hlo_stats columns (occurrences, total/avg/self time, FLOP rate, memory bandwidth, operational intensity, bound by, source); CSV with XProf's column ids.",
    },
    ToolInfo {
        name: "roofline_model",
        title: "Roofline",
        description: "Operational intensity vs FLOP rate against the device's compute and HBM roofs: the whole program, each program, each step and each op, compute- or memory-bound.",
    },
    ToolInfo {
        name: "graph_viewer",
        title: "Graph viewer",
        description: "An HLO op's neighbourhood (search by name with --op; --radius hops of operands and users; fusions drawn with their bodies) as a server-laid-out SVG.",
    },
];

/// The tools that apply to a session (all of them, for now: each says itself when it finds nothing).
pub fn tools_for(_session: &Session) -> Vec<ToolInfo> {
    TOOLS.to_vec()
}

/// What a tool produced. Each form (JSON, text, CSV) is rendered from the tool's typed result
/// when asked for, so a caller that wants one form does not pay for the others, and JSON is
/// written straight from the result (fields in the result's order).
pub struct ToolOutput {
    forms: Box<dyn Forms + Send + Sync>,
}

impl ToolOutput {
    /// The result as a JSON value (for callers that read fields).
    pub fn json(&self) -> Result<serde_json::Value, ToolError> {
        self.forms.json()
    }

    /// The result as JSON text, indented when `pretty`.
    pub fn json_string(&self, pretty: bool) -> Result<String, ToolError> {
        self.forms.json_string(pretty)
    }

    /// A human-readable rendering.
    pub fn text(&self) -> String {
        self.forms.text()
    }

    /// The main table as CSV, for tools that have one.
    pub fn csv(&self) -> Option<String> {
        self.forms.csv()
    }

    /// A typed result and how to render it as text and CSV.
    fn typed<T: Serialize + Send + Sync + 'static>(
        r: T,
        text: fn(&T) -> String,
        csv: fn(&T) -> String,
    ) -> ToolOutput {
        ToolOutput {
            forms: Box::new(Typed { r, text, csv }),
        }
    }

    /// Forms already rendered.
    fn ready(json: serde_json::Value, text: String, csv: Option<String>) -> ToolOutput {
        ToolOutput {
            forms: Box::new(Ready { json, text, csv }),
        }
    }
}

trait Forms {
    fn json(&self) -> Result<serde_json::Value, ToolError>;
    fn json_string(&self, pretty: bool) -> Result<String, ToolError>;
    fn text(&self) -> String;
    fn csv(&self) -> Option<String>;
}

struct Typed<T> {
    r: T,
    text: fn(&T) -> String,
    csv: fn(&T) -> String,
}

impl<T: Serialize> Forms for Typed<T> {
    fn json(&self) -> Result<serde_json::Value, ToolError> {
        to_json(&self.r)
    }
    fn json_string(&self, pretty: bool) -> Result<String, ToolError> {
        let s = if pretty {
            to_string_readable(&self.r)
        } else {
            serde_json::to_string(&self.r)
        };
        s.map_err(|e| ToolError::Serialize(e.to_string()))
    }
    fn text(&self) -> String {
        (self.text)(&self.r)
    }
    fn csv(&self) -> Option<String> {
        Some((self.csv)(&self.r))
    }
}

/// JSON for people: one object key per line, indented, and arrays on the line they start on
/// (a step's breakdown or a row of numbers stays one line; objects inside arrays still open
/// their keys one per line). Half the size of fully indented JSON for tables of numbers, and
/// written in half the time.
fn to_string_readable<T: Serialize + ?Sized>(v: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(1 << 16);
    v.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out,
        Readable::default(),
    ))?;
    // serde_json writes valid UTF-8 only.
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

#[derive(Default)]
struct Readable {
    /// Objects open around the next key.
    depth: usize,
    /// Whether the innermost open object or array has a value yet.
    has_value: bool,
}

impl serde_json::ser::Formatter for Readable {
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            indent(w, self.depth)?;
        }
        w.write_all(b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        indent(w, self.depth)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.has_value = false;
        w.write_all(b"[")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

fn indent<W: ?Sized + std::io::Write>(w: &mut W, depth: usize) -> std::io::Result<()> {
    for _ in 0..depth {
        w.write_all(b"  ")?;
    }
    Ok(())
}

struct Ready {
    json: serde_json::Value,
    text: String,
    csv: Option<String>,
}

impl Forms for Ready {
    fn json(&self) -> Result<serde_json::Value, ToolError> {
        Ok(self.json.clone())
    }
    fn json_string(&self, pretty: bool) -> Result<String, ToolError> {
        Typed {
            r: &self.json,
            text: |_| String::new(),
            csv: |_| String::new(),
        }
        .json_string(pretty)
    }
    fn text(&self) -> String {
        self.text.clone()
    }
    fn csv(&self) -> Option<String> {
        self.csv.clone()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool `{0}`; tools: {list}", list = TOOLS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "))]
    UnknownTool(String),
    #[error("no host `{host}` in this session; hosts: {hosts}")]
    UnknownHost { host: String, hosts: String },
    #[error("{0}")]
    Serialize(String),
    #[error("{0}")]
    Load(String),
}

/// Loads a host (possibly from a cache); errors are already human-readable.
pub type Loader<'a> = dyn FnMut(&HostFile) -> Result<Arc<Profile>, String> + 'a;

/// Keeps only the hosts named `host` (all when `None`); errors when no session has it.
pub fn select_host(sessions: &[Session], host: Option<&str>) -> Result<Vec<Session>, ToolError> {
    let Some(h) = host else {
        return Ok(sessions.to_vec());
    };
    let out: Vec<Session> = sessions
        .iter()
        .filter_map(|s| {
            let hosts: Vec<HostFile> = s.hosts.iter().filter(|x| x.host == h).cloned().collect();
            (!hosts.is_empty()).then(|| Session { hosts, ..s.clone() })
        })
        .collect();
    if out.is_empty() {
        let mut all: Vec<&str> = sessions
            .iter()
            .flat_map(|s| s.hosts.iter().map(|x| x.host.as_str()))
            .collect();
        all.sort();
        all.dedup();
        return Err(ToolError::UnknownHost {
            host: h.to_string(),
            hosts: all.join(", "),
        });
    }
    Ok(out)
}

/// Options some tools take (each ignores those it does not use).
#[derive(Debug, Clone, Default)]
pub struct ToolParams {
    /// HLO module (program) to show, for `memory_viewer`.
    pub module: Option<String>,
    /// XLA memory space (color) for `memory_viewer`; 0 (device memory) when unset.
    pub memory_space: Option<i64>,
    /// Time window for `trace_viewer` (picoseconds on the session's axis; whole trace when unset).
    pub start_ps: Option<i64>,
    pub end_ps: Option<i64>,
    /// Pixel width for `trace_viewer`'s level of detail (default 1500).
    pub width: Option<u32>,
    /// HLO instruction to draw, for `graph_viewer` (e.g. `fusion.3`).
    pub op: Option<String>,
    /// Hops of operands and users `graph_viewer` follows (default 2).
    pub radius: Option<u32>,
    /// Peak FLOP rate (FLOP/s) and memory bandwidth (bytes/s) for `op_profile`, `hlo_stats` and
    /// `roofline_model` (CPU profiles; overrides the profile's own figures when given).
    pub peak_flops: Option<f64>,
    pub peak_bw: Option<f64>,
    /// Step whose ops `roofline_model` plots (the step's label, e.g. `12`); the whole profile when
    /// unset.
    pub step: Option<String>,
}

/// Runs tool `name` over `sessions` (already narrowed to the wanted hosts).
pub fn run_tool(
    name: &str,
    sessions: &[Session],
    load: &mut Loader<'_>,
) -> Result<ToolOutput, ToolError> {
    run_tool_with(name, sessions, load, &ToolParams::default())
}

/// [`run_tool`] with options.
pub fn run_tool_with(
    name: &str,
    sessions: &[Session],
    load: &mut Loader<'_>,
    params: &ToolParams,
) -> Result<ToolOutput, ToolError> {
    match name {
        "memory_viewer" => {
            let r = crate::memory_viewer::report(
                sessions,
                &mut *load,
                params.module.as_deref(),
                params.memory_space.unwrap_or(0),
            );
            Ok(ToolOutput::typed(
                r,
                crate::memory_viewer::render_text,
                crate::memory_viewer::render_csv,
            ))
        }
        "memory_profile" => {
            let r = crate::memory_profile::report(sessions, &mut *load);
            Ok(ToolOutput::typed(
                r,
                crate::memory_profile::render_text,
                crate::memory_profile::render_csv,
            ))
        }
        "trace_viewer" => {
            let mut hosts = Vec::new();
            for s in sessions {
                for h in &s.hosts {
                    match load(h) {
                        Ok(p) => hosts.push((h.host.clone(), p)),
                        Err(e) => return Err(ToolError::Load(e)),
                    }
                }
            }
            let idx = crate::trace::TraceIndex::build(hosts);
            let v = idx.query(
                params.start_ps.unwrap_or(idx.span.0),
                params.end_ps.unwrap_or(idx.span.1),
                params.width.unwrap_or(1500),
            );
            let text = format!(
                "{} events in the trace; window {} ps to {} ps at {} px: {} events drawn, {} merged boxes holding {} narrower events, {} tracks\n",
                v.total_events,
                v.start_ps,
                v.end_ps,
                v.width_px,
                v.events.len(),
                v.summaries.len(),
                v.summaries.iter().map(|s| s.count).sum::<u64>(),
                v.tracks.len()
            );
            let csv = {
                let mut o = String::from("track,track_name,depth,name,start_ps,dur_ps\n");
                for e in &v.events {
                    let t = &v.tracks[e.track as usize];
                    o.push_str(&format!(
                        "{},{},{},{},{},{}\n",
                        e.track,
                        csv_field(&format!("{} {}", t.group, t.name)),
                        e.depth,
                        csv_field(&v.names[e.name as usize]),
                        e.start_ps,
                        e.dur_ps
                    ));
                }
                o
            };
            Ok(ToolOutput::ready(v.to_json(true), text, Some(csv)))
        }
        "overview_page" => {
            let r = crate::overview::overview(sessions, &mut *load);
            Ok(ToolOutput::typed(
                r,
                crate::overview::render_text,
                crate::overview::render_csv,
            ))
        }
        "input_pipeline_analyzer" => {
            let r = crate::input_pipeline::input_pipeline(sessions, &mut *load);
            Ok(ToolOutput::typed(
                r,
                crate::input_pipeline::render_text,
                crate::input_pipeline::render_csv,
            ))
        }
        "framework_op_stats" | "kernel_stats" => per_host_tool(name, sessions, &mut *load),
        "graph_viewer" => {
            let g = crate::graph_viewer::run(
                sessions,
                &mut *load,
                params.op.as_deref(),
                params.module.as_deref(),
                params.radius,
            )
            .map_err(ToolError::Load)?;
            Ok(ToolOutput::typed(
                g,
                crate::graph_viewer::render_text,
                crate::graph_viewer::render_csv,
            ))
        }
        "op_profile" | "hlo_stats" | "roofline_model" => {
            let user = crate::peaks::UserPeaks {
                flops_per_second: params.peak_flops,
                bytes_per_second: params.peak_bw,
            };
            match name {
                "op_profile" => {
                    let r = crate::op_profile::report(sessions, &mut *load, user);
                    Ok(ToolOutput::typed(
                        r,
                        crate::op_profile::render_text,
                        crate::op_profile::render_csv,
                    ))
                }
                "hlo_stats" => {
                    let r = crate::hlo_stats::report(sessions, &mut *load, user);
                    Ok(ToolOutput::typed(
                        r,
                        crate::hlo_stats::render_text,
                        crate::hlo_stats::render_csv,
                    ))
                }
                _ => {
                    let r =
                        crate::roofline::report(sessions, &mut *load, user, params.step.as_deref());
                    Ok(ToolOutput::typed(
                        r,
                        crate::roofline::render_text,
                        crate::roofline::render_csv,
                    ))
                }
            }
        }
        "report" => {
            let r = report::report(sessions, &mut *load);
            Ok(ToolOutput::typed(r, report::render_text, report_csv))
        }
        other => Err(ToolError::UnknownTool(other.to_string())),
    }
}

/// Tools computed per host from one profile: `{hosts: [{host, error, ...tool}]}`, CSV of all hosts.
fn per_host_tool(
    name: &str,
    sessions: &[Session],
    load: &mut Loader<'_>,
) -> Result<ToolOutput, ToolError> {
    let mut hosts = Vec::new();
    let mut csv = String::new();
    let mut text = String::new();
    for s in sessions {
        for h in &s.hosts {
            let (v, c) = match load(h) {
                Ok(p) if name == "kernel_stats" => {
                    let k = crate::kernel_stats::kernel_stats(&p);
                    (to_json(&k)?, crate::kernel_stats::render_csv(&k))
                }
                Ok(p) => {
                    let f = crate::framework_op_stats::framework_op_stats(&p);
                    (to_json(&f)?, crate::framework_op_stats::render_csv(&f))
                }
                Err(e) => (serde_json::json!({ "error": e }), String::new()),
            };
            let mut v = v;
            if let Some(o) = v.as_object_mut() {
                o.insert("host".into(), serde_json::Value::String(h.host.clone()));
            }
            let rows = c.lines().count().saturating_sub(1);
            text.push_str(&format!("host {}: {rows} rows\n", h.host));
            if csv.is_empty() {
                csv = c;
            } else {
                csv.extend(c.lines().skip(1).map(|l| format!("{l}\n")));
            }
            hosts.push(v);
        }
    }
    text.push_str(&csv);
    Ok(ToolOutput::ready(
        serde_json::json!({ "tool": name, "hosts": hosts }),
        text,
        Some(csv),
    ))
}

fn to_json<T: Serialize>(v: &T) -> Result<serde_json::Value, ToolError> {
    serde_json::to_value(v).map_err(|e| ToolError::Serialize(e.to_string()))
}

/// Quotes a CSV field when needed (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn report_csv(r: &Report) -> String {
    let mut o =
        String::from("session,host,rank,op_name,module,occurrences,self_time_ps,total_time_ps\n");
    for s in &r.sessions {
        for h in &s.hosts {
            for (i, op) in h.top_ops.iter().enumerate() {
                o.push_str(&format!(
                    "{},{},{},{},{},{},{},{}\n",
                    csv_field(&s.name),
                    csv_field(&h.host),
                    i + 1,
                    csv_field(&op.name),
                    csv_field(op.module.as_deref().unwrap_or("")),
                    op.occurrences,
                    op.self_time_ps,
                    op.total_time_ps
                ));
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::to_string_readable;
    use serde_json::json;

    #[test]
    fn readable_json_parses_back_and_keeps_arrays_on_one_line() {
        let v = json!({
            "empty_object": {},
            "empty_array": [],
            "numbers": [1, 2.5, -3],
            "rows": [{"a": 1, "b": [true, null]}, {"a": "x\ny"}],
            "nested": {"deeper": {"k": [[1, 2], [], [{}]]}},
            "text": "quote \" and \\ backslash"
        });
        let s = to_string_readable(&v).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(&s).unwrap(), v);
        assert!(s.contains("\n  \"numbers\": [1, 2.5, -3],\n"), "{s}");
        assert!(s.contains("\"empty_object\": {},"), "{s}");
        assert!(s.contains("\"empty_array\": [],"), "{s}");
        // Keys of an object inside an array are indented one level below the array's key.
        assert!(
            s.contains("  \"rows\": [{\n    \"a\": 1,\n    \"b\": [true, null]\n  }, {"),
            "{s}"
        );
        assert!(s.contains("\"k\": [[1, 2], [], [{}]]"), "{s}");
        assert!(s.starts_with("{\n  \"") && s.ends_with("\n}"), "{s}");
    }
}
