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
pub const TOOLS: &[ToolInfo] = &[ToolInfo {
    name: "report",
    title: "Report",
    description: "What the profile holds: device, span, events per plane and line, steps, top ops by self time, recorded errors.",
}];

/// The tools that apply to a session (all of them, for now: each says itself when it finds nothing).
pub fn tools_for(_session: &Session) -> Vec<ToolInfo> {
    TOOLS.to_vec()
}

/// What a tool produced, in every output form.
pub struct ToolOutput {
    pub json: serde_json::Value,
    pub text: String,
    /// The main table as CSV, for tools that have one.
    pub csv: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool `{0}`; tools: {list}", list = TOOLS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "))]
    UnknownTool(String),
    #[error("no host `{host}` in this session; hosts: {hosts}")]
    UnknownHost { host: String, hosts: String },
    #[error("{0}")]
    Serialize(String),
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

/// Runs tool `name` over `sessions` (already narrowed to the wanted hosts).
pub fn run_tool(
    name: &str,
    sessions: &[Session],
    load: &mut Loader<'_>,
) -> Result<ToolOutput, ToolError> {
    match name {
        "report" => {
            let r = report::report(sessions, &mut *load);
            Ok(ToolOutput {
                text: report::render_text(&r),
                csv: Some(report_csv(&r)),
                json: to_json(&r)?,
            })
        }
        other => Err(ToolError::UnknownTool(other.to_string())),
    }
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
