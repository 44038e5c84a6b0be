//! `xlens tools`: the registry's tools, by name, with their descriptions (and with `--json`
//! their parameters).

use anyhow::Result;
use serde::Serialize;
use xlens_analysis::tools;

/// List the tools.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    json: bool,
}

/// A tool as `xlens tools --json` describes it.
#[derive(Serialize)]
struct Described {
    #[serde(flatten)]
    info: tools::ToolInfo,
    /// The tool's own parameters (besides what every `xlens tool` takes: PATH, --host, --run,
    /// --json, --format, --max-rows, --max-bytes).
    parameters: Vec<Parameter>,
}

/// One parameter of a tool: its command-line flag and its query-string key (`/api/tool/NAME`,
/// `Run.tool` in Python).
#[derive(Serialize)]
pub(crate) struct Parameter {
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

pub(crate) fn parameters(t: &dyn tools::AnyTool) -> Vec<Parameter> {
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

pub fn run(a: Args) -> Result<()> {
    if a.json {
        let all: Vec<Described> = tools::TOOLS
            .iter()
            .map(|t| Described {
                info: t.info(),
                parameters: parameters(*t),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        for t in tools::infos() {
            println!("{:<20} {}", t.name, t.description);
        }
    }
    Ok(())
}
