//! The tools, one module each, and the registry built from their list.
//!
//! A tool is a type implementing [`Tool`]: its name and description, its typed parameters (one
//! struct whose derives serve both the command line, `clap::Args`, and the query string,
//! `serde::Deserialize`), a typed result computed from a [`Run`], and its text and CSV forms.
//! [`TOOLS`] lists them; `xlens tool`, `xlens tools`, the JSON API and the pages are all derived
//! from that list. Adding a tool is one new module plus one line in [`TOOLS`].
//!
//! Tools import only the base layer (`crate::base`), never each other or this registry.

pub mod async_overlap;
pub mod capture_check;
pub mod comm_comp_overlap;
pub mod events;
pub mod framework_op_stats;
pub mod graph_viewer;
pub mod hlo_modules;
pub mod hlo_stats;
pub mod idle_time;
pub mod input_pipeline;
pub mod kernel_breakdown;
pub mod kernel_stats;
pub mod kpi;
pub mod launch_stats;
pub mod memory_profile;
pub mod memory_viewer;
pub mod op_profile;
mod output;
pub mod overview;
pub mod peak_allocations;
pub mod pytorch_views;
pub mod report;
pub mod roofline;
pub mod step_trace;
pub mod temporal_breakdown;
pub mod trace_viewer;

use serde::Serialize;
use std::marker::PhantomData;
use xlens_store::{HostFile, Session};

pub use crate::base::context::Run;
pub use crate::base::tool::{NoParams, Tool, ToolError, ToolParams};
pub use output::{bound_json, Bounds, Cut, ToolOutput};

/// Every tool xlens has, in the order users see them.
pub static TOOLS: &[&dyn AnyTool] = &[
    &Entry::<report::ReportTool>(PhantomData),
    &Entry::<capture_check::CaptureCheckTool>(PhantomData),
    &Entry::<trace_viewer::TraceViewer>(PhantomData),
    &Entry::<events::EventsTool>(PhantomData),
    &Entry::<async_overlap::AsyncOverlapTool>(PhantomData),
    &Entry::<overview::OverviewPage>(PhantomData),
    &Entry::<kpi::KpiTool>(PhantomData),
    &Entry::<step_trace::StepTraceTool>(PhantomData),
    &Entry::<input_pipeline::InputPipelineAnalyzer>(PhantomData),
    &Entry::<framework_op_stats::FrameworkOpStatsTool>(PhantomData),
    &Entry::<kernel_stats::KernelStatsTool>(PhantomData),
    &Entry::<pytorch_views::PytorchOperators>(PhantomData),
    &Entry::<pytorch_views::PytorchKernels>(PhantomData),
    &Entry::<pytorch_views::PytorchDistributed>(PhantomData),
    &Entry::<temporal_breakdown::TemporalBreakdownTool>(PhantomData),
    &Entry::<comm_comp_overlap::CommCompOverlapTool>(PhantomData),
    &Entry::<kernel_breakdown::KernelBreakdownTool>(PhantomData),
    &Entry::<idle_time::IdleTimeTool>(PhantomData),
    &Entry::<launch_stats::LaunchStatsTool>(PhantomData),
    &Entry::<memory_viewer::MemoryViewerTool>(PhantomData),
    &Entry::<memory_profile::MemoryProfileTool>(PhantomData),
    &Entry::<peak_allocations::PeakAllocationsTool>(PhantomData),
    &Entry::<op_profile::OpProfile>(PhantomData),
    &Entry::<hlo_modules::HloModulesTool>(PhantomData),
    &Entry::<hlo_stats::HloStats>(PhantomData),
    &Entry::<roofline::RooflineModel>(PhantomData),
    &Entry::<graph_viewer::GraphViewerTool>(PhantomData),
];

/// A tool as listed to users.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct ToolInfo {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// What it needs read of a file when it runs alone.
    #[serde(skip)]
    pub reads: xlens_loader::Reads,
}

/// A tool behind the registry, its types erased.
pub trait AnyTool: Sync {
    fn info(&self) -> ToolInfo;
    /// The JSON Schema of the tool's `--json` answer, from its output types and their doc
    /// comments.
    fn output_schema(&self) -> serde_json::Value;
    /// The tool's command-line arguments added to `cmd`.
    fn args(&self, cmd: clap::Command) -> clap::Command;
    /// Runs with parameters from command-line matches of [`AnyTool::args`].
    fn run_args(&self, run: &Run, m: &clap::ArgMatches) -> Result<ToolOutput, ToolError>;
    /// Runs with parameters from query-string pairs (empty values, as HTML forms send them,
    /// count as unset; keys the tool does not take are ignored).
    fn run_query(&self, run: &Run, query: &[(String, String)]) -> Result<ToolOutput, ToolError>;
}

struct Entry<T>(PhantomData<T>);

impl<T: Tool> Entry<T> {
    fn output(run: &Run, p: &T::Params) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::typed(T::run(run, p)?, T::text, T::csv))
    }
}

impl<T: Tool> AnyTool for Entry<T> {
    fn info(&self) -> ToolInfo {
        ToolInfo {
            name: T::NAME,
            title: T::TITLE,
            description: T::DESCRIPTION,
            reads: T::READS,
        }
    }
    fn output_schema(&self) -> serde_json::Value {
        // As serialized: fields skipped when empty are optional.
        let schema = schemars::generate::SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<T::Output>();
        serde_json::to_value(schema).unwrap_or_default()
    }
    fn args(&self, cmd: clap::Command) -> clap::Command {
        <T::Params as clap::Args>::augment_args(cmd)
    }
    fn run_args(&self, run: &Run, m: &clap::ArgMatches) -> Result<ToolOutput, ToolError> {
        let p = <T::Params as clap::FromArgMatches>::from_arg_matches(m)
            .map_err(|e| ToolError::Params(e.to_string()))?;
        Self::output(run, &p)
    }
    fn run_query(&self, run: &Run, query: &[(String, String)]) -> Result<ToolOutput, ToolError> {
        let set: Vec<(&str, &str)> = query
            .iter()
            .map(|(k, v)| (k.as_str(), v.trim()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let parse = |pairs: &[(&str, &str)]| -> Result<T::Params, String> {
            let encoded = serde_urlencoded::to_string(pairs).map_err(|e| e.to_string())?;
            serde_urlencoded::from_str(&encoded).map_err(|e| e.to_string())
        };
        let p = parse(&set).map_err(|e| {
            // Name the value that does not parse (the deserializer's message does not).
            match set
                .iter()
                .find(|kv| parse(std::slice::from_ref(*kv)).is_err())
            {
                Some((k, v)) => ToolError::Params(format!("{}: {k}=`{v}`: {e}", T::NAME)),
                None => ToolError::Params(format!("{}: {e}", T::NAME)),
            }
        })?;
        Self::output(run, &p)
    }
}

/// One parameter of a tool: its command-line flag and its query-string key (`/api/tool/NAME`,
/// `Run.tool` in Python).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Parameter {
    pub flag: String,
    pub key: String,
    pub help: String,
    /// Whether it takes a value (else it is a switch).
    pub takes_value: bool,
    /// The values accepted, where only some are.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A tool's own parameters, as its command line declares them.
pub fn parameters(t: &dyn AnyTool) -> Vec<Parameter> {
    let cmd = t.args(clap::Command::new(t.info().name));
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set())
        .map(|a| {
            let key = a.get_id().to_string();
            let default: Vec<String> = a
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect();
            Parameter {
                flag: a
                    .get_long()
                    .map_or_else(|| key.clone(), |l| format!("--{l}")),
                help: a.get_help().map(|h| h.to_string()).unwrap_or_default(),
                takes_value: a.get_action().takes_values(),
                values: a
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_string())
                    .collect(),
                default: (!default.is_empty()).then(|| default.join(",")),
                key,
            }
        })
        .collect()
}

/// Every tool's name, title and description.
pub fn infos() -> Vec<ToolInfo> {
    TOOLS.iter().map(|t| t.info()).collect()
}

/// The tool called `name`.
pub fn find(name: &str) -> Result<&'static dyn AnyTool, ToolError> {
    TOOLS
        .iter()
        .copied()
        .find(|t| t.info().name == name)
        .ok_or_else(|| ToolError::UnknownTool {
            name: name.to_string(),
            tools: TOOLS
                .iter()
                .map(|t| t.info().name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The tools that apply to a session (all of them, for now: each says itself when it finds nothing).
pub fn tools_for(_session: &Session) -> Vec<ToolInfo> {
    infos()
}

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

/// Runs tool `name` over `run` with its default parameters.
pub fn run_default(name: &str, run: &Run) -> Result<ToolOutput, ToolError> {
    find(name)?.run_query(run, &[])
}
