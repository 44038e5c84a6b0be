//! The report: what is in a profile, per session and host, at a glance.

use serde::Serialize;
use xlens_model::{Profile, StatValue};

use crate::base::context::{Analysis, Run};
use crate::base::fmt::{csv_field, fmt_ps, short_name, NAME_WIDTH};
use crate::base::tool::{NoParams, Tool, ToolError};

use crate::base::device::DeviceInfo;
use crate::base::ops::events::{OpSource, OpTime};
use crate::base::steps::annotations::Steps;

/// The steps every view shows (the overview's): a PyTorch trace's as the PyTorch plugin forms
/// them; XProf's step table where it has steps; else the annotated steps or a device line's.
fn report_steps(a: &Analysis) -> Steps {
    let found = a.steps();
    if found.source == Some(crate::base::steps::annotations::StepSource::TorchProfilerSteps) {
        return found.as_ref().clone();
    }
    let db = a.step_db();
    if db.steps.is_empty() {
        return found.as_ref().clone();
    }
    Steps::of_step_db(&db, found.name.clone())
}

/// How many ops the report lists (the op tools list them all).
pub const TOP_OPS: usize = 20;

/// What each session and host file holds: device, span, events per plane and line, steps,
/// top ops by self time and recorded errors.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// Sessions that are one capture written by several hosts (overlapping wall-clock windows,
    /// no host in two), and how they were matched; absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<crate::base::hosts::summary::SessionGroup>,
    /// When the report covers one run (one session, or sessions matched as one capture) of two
    /// hosts or more with advice: the verdict over its hosts. Sessions that are not one run get
    /// no common verdict (unrelated profiles in one log directory are not a run); each session
    /// of several hosts has its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_advice: Option<crate::base::advice::RunAdvice>,
    pub sessions: Vec<SessionReport>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SessionReport {
    pub name: String,
    pub dir: String,
    pub hosts: Vec<HostReport>,
    /// When the report covers several runs: the verdict over this session's hosts (two or
    /// more with advice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_advice: Option<crate::base::advice::RunAdvice>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LineSummary {
    pub name: String,
    pub events: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PlaneSummary {
    pub name: String,
    pub events: usize,
    pub lines: Vec<LineSummary>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostReport {
    pub host: String,
    pub file: String,
    pub file_bytes: u64,
    /// Set when the file could not be read; everything else is then empty.
    pub error: Option<String>,
    pub device: Option<DeviceInfo>,
    /// Wall-clock time of the first event, nanoseconds since the Unix epoch.
    pub start_time_ns: Option<i64>,
    /// From the first event's start to the last event's end.
    pub span_ps: i64,
    pub total_events: usize,
    pub planes: Vec<PlaneSummary>,
    pub steps: Option<Steps>,
    pub top_ops_source: Option<OpSource>,
    pub top_ops_source_description: Option<&'static str>,
    /// What bounds the steps ([`crate::base::advice`]).
    pub advice: Option<crate::base::advice::Advice>,
    /// The ops with most self time, at most [`TOP_OPS`]; `op_count` says how many there are.
    pub top_ops: Vec<OpTime>,
    pub op_count: usize,
    pub total_op_self_time_ps: i64,
    /// What the producer recorded (XSpace errors and warnings).
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// What the importer worked around.
    pub import_warnings: Vec<String>,
    pub hostnames: Vec<String>,
}

impl HostReport {
    /// A host whose file failed to load.
    pub fn failed(host: &str, file: &str, bytes: u64, error: String) -> HostReport {
        HostReport {
            host: host.to_string(),
            file: file.to_string(),
            file_bytes: bytes,
            error: Some(error),
            device: None,
            start_time_ns: None,
            span_ps: 0,
            total_events: 0,
            planes: Vec::new(),
            steps: None,
            top_ops_source: None,
            top_ops_source_description: None,
            advice: None,
            top_ops: Vec::new(),
            op_count: 0,
            total_op_self_time_ps: 0,
            errors: Vec::new(),
            warnings: Vec::new(),
            import_warnings: Vec::new(),
            hostnames: Vec::new(),
        }
    }
}

/// Summarises one host's profile.
pub fn host_report(host: &str, file: &str, bytes: u64, a: &Analysis) -> HostReport {
    // The steps, op metrics and op times the report and its advice read, on both cores.
    a.steps_and_ops();
    let p = a.profile();
    let planes = p
        .planes
        .iter()
        .map(|pl| PlaneSummary {
            name: p.str(pl.name).to_string(),
            events: pl.event_count(),
            lines: pl
                .lines
                .iter()
                .map(|l| LineSummary {
                    name: p.str(l.name).to_string(),
                    events: l.events.len(),
                })
                .collect(),
        })
        .collect();
    let span = p.span();
    let ops = a.op_times();
    let op_count = ops.ops.len();
    HostReport {
        host: host.to_string(),
        file: file.to_string(),
        file_bytes: bytes,
        error: None,
        device: Some(a.device().clone()),
        start_time_ns: span
            .filter(|_| p.origin_is_wall_clock)
            .map(|(s, _)| ((p.origin_ps + s as i128) / 1000) as i64),
        span_ps: span.map(|(s, e)| e - s).unwrap_or(0),
        total_events: p.event_count(),
        planes,
        steps: Some(report_steps(a)),
        top_ops_source: ops.source,
        top_ops_source_description: ops.source.map(|s| s.describe()),
        advice: crate::base::advice::advise(a),
        top_ops: ops.ops.iter().take(TOP_OPS).cloned().collect(),
        op_count,
        total_op_self_time_ps: ops.total_self_time_ps,
        errors: p.errors.clone(),
        warnings: p.warnings.clone(),
        import_warnings: p.import_warnings.clone(),
        hostnames: p.hostnames.clone(),
    }
}

/// The report tool.
pub struct ReportTool;

impl Tool for ReportTool {
    const NAME: &'static str = "report";
    const TITLE: &'static str = "Report";
    const DESCRIPTION: &'static str = "What the profile holds: device, span, events per plane and line, steps, top ops by self time, recorded errors.";
    type Params = NoParams;
    type Output = Report;

    fn run(run: &Run, _: &NoParams) -> Result<Report, ToolError> {
        Ok(report(run))
    }
    fn text(r: &Report) -> String {
        render_text(r)
    }
    fn csv(r: &Report) -> Option<String> {
        Some(render_csv(r))
    }
}

/// The report of every session and host of a run.
pub fn report(run: &Run) -> Report {
    let mut hosts = run.hosts.iter();
    let windows = run.hosts.iter().filter_map(|h| {
        let p = h.analysis.as_ref().ok()?.profile();
        Some(crate::base::hosts::summary::HostWindow {
            session: &h.session,
            host: h.host(),
            origin_ps: p.origin_is_wall_clock.then_some(p.origin_ps),
            span_ps: p.span(),
        })
    });
    let mut r = Report {
        runs: crate::base::hosts::summary::group_windows(windows)
            .into_iter()
            .filter(|g| g.sessions.len() > 1)
            .collect(),
        sessions: run
            .sessions
            .iter()
            .map(|s| SessionReport {
                name: s.name.clone(),
                dir: s.dir.display().to_string(),
                hosts: hosts
                    .by_ref()
                    .take(s.hosts.len())
                    .map(|h| {
                        let file = h.path().display().to_string();
                        match &h.analysis {
                            Ok(a) => host_report(h.host(), &file, h.file.bytes, a),
                            Err(e) => HostReport::failed(h.host(), &file, h.file.bytes, e.clone()),
                        }
                    })
                    .collect(),
                run_advice: None,
            })
            .collect(),
        run_advice: None,
    };
    let verdict = |hosts: &mut dyn Iterator<Item = &HostReport>| {
        crate::base::advice::run_advice(
            hosts.filter_map(|h| h.advice.as_ref().map(|a| (h.host.as_str(), a))),
        )
    };
    let one_run =
        r.sessions.len() == 1 || r.runs.len() == 1 && r.runs[0].sessions.len() == r.sessions.len();
    if one_run {
        r.run_advice = verdict(&mut r.sessions.iter().flat_map(|s| &s.hosts));
    } else {
        for s in &mut r.sessions {
            s.run_advice = verdict(&mut s.hosts.iter());
        }
    }
    r
}

/// The top ops of every host as CSV.
pub fn render_csv(r: &Report) -> String {
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

/// Renders the report as plain text.
pub fn render_text(r: &Report) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for g in &r.runs {
        let _ = writeln!(o, "run: {}", g.matched);
    }
    if let Some(a) = &r.run_advice {
        let _ = writeln!(o, "run advice: {}", a.summary);
    }
    for s in &r.sessions {
        let _ = writeln!(o, "session {}  ({})", s.name, s.dir);
        if let Some(a) = &s.run_advice {
            let _ = writeln!(o, "  session advice: {}", a.summary);
        }
        for h in &s.hosts {
            let _ = writeln!(o, "  host {}  {}  {} bytes", h.host, h.file, h.file_bytes);
            if let Some(e) = &h.error {
                let _ = writeln!(o, "    ERROR: {e}");
                continue;
            }
            if let Some(d) = &h.device {
                let _ = write!(o, "    device: {} {}", d.kind.as_str(), d.model);
                if d.count > 0 {
                    let _ = write!(o, " × {} ({} with events)", d.count, d.active);
                }
                if let Some(t) = d.peak_teraflops_per_second {
                    let _ = write!(o, ", peak {t} TFLOP/s");
                }
                if let Some(b) = d.peak_hbm_gigabytes_per_second {
                    let _ = write!(o, ", {b:.0} GB/s");
                }
                let _ = writeln!(o);
            }
            let _ = writeln!(
                o,
                "    span: {}   events: {}",
                fmt_ps(h.span_ps),
                h.total_events
            );
            for p in &h.planes {
                let _ = writeln!(o, "    plane {}: {} events", p.name, p.events);
                for l in &p.lines {
                    let _ = writeln!(o, "      {:<60} {:>10}", l.name, l.events);
                }
            }
            match &h.steps {
                Some(st) if st.count > 0 => {
                    let _ = writeln!(
                        o,
                        "    steps: {} from {} `{}`; mean {}, min {}, max {}",
                        st.count,
                        match st.source {
                            Some(crate::base::steps::annotations::StepSource::StepAnnotation) =>
                                "step annotations",
                            Some(crate::base::steps::annotations::StepSource::XprofSteps) =>
                                "XProf's step table (first and last dropped past five) of",
                            Some(crate::base::steps::annotations::StepSource::TorchProfilerSteps) =>
                                "the PyTorch profiler's steps (as torch-tb-profiler extends them to their device work)",
                            _ => "device line",
                        },
                        st.name.as_deref().unwrap_or(""),
                        fmt_ps(st.mean_ps),
                        fmt_ps(st.min_ps),
                        fmt_ps(st.max_ps)
                    );
                }
                _ => {
                    let _ = writeln!(
                        o,
                        "    steps: none found (no `step_num` annotations, no device `Steps` line)"
                    );
                }
            }
            if let Some(a) = &h.advice {
                let _ = writeln!(
                    o,
                    "    advice: {} (over {}); see `{}`",
                    a.summary, a.basis, a.tool
                );
            }
            match h.top_ops_source {
                Some(src) => {
                    let names: Vec<(String, bool)> = h
                        .top_ops
                        .iter()
                        .map(|op| short_name(&op.name, NAME_WIDTH))
                        .collect();
                    let _ = writeln!(
                        o,
                        "    top ops by self time (of {} ops, from {}{}):",
                        h.op_count,
                        src.describe(),
                        if names.iter().any(|(_, cut)| *cut) {
                            "; long names shortened, whole in --json"
                        } else {
                            ""
                        }
                    );
                    let _ = writeln!(
                        o,
                        "      {:>12} {:>7} {:>8}  name",
                        "self time", "%", "count"
                    );
                    for (op, (name, _)) in h.top_ops.iter().zip(&names) {
                        let pct = if h.total_op_self_time_ps > 0 {
                            100.0 * op.self_time_ps as f64 / h.total_op_self_time_ps as f64
                        } else {
                            0.0
                        };
                        let _ = writeln!(
                            o,
                            "      {:>12} {:>6.2}% {:>8}  {}{}",
                            fmt_ps(op.self_time_ps),
                            pct,
                            op.occurrences,
                            name,
                            op.module
                                .as_deref()
                                .map(|m| format!("  [{m}]"))
                                .unwrap_or_default()
                        );
                    }
                }
                None => {
                    let _ = writeln!(o, "    ops: none found");
                }
            }
            for e in &h.errors {
                let _ = writeln!(o, "    profiler error: {e}");
            }
            for w in &h.warnings {
                let _ = writeln!(o, "    profiler warning: {w}");
            }
            for w in &h.import_warnings {
                let _ = writeln!(o, "    import warning: {w}");
            }
        }
    }
    o
}

/// A plane stat rendered as text, for details views.
pub fn stat_text(p: &Profile, v: StatValue) -> String {
    match v {
        StatValue::Bytes(b) => format!("<{} bytes>", p.blob(b).len()),
        other => other.display(&p.strings),
    }
}
