//! `xlens tools`: the registry's tools, by name, with their descriptions (and with `--json`
//! their parameters and the JSON Schema of their answers).

use anyhow::Result;
use serde::Serialize;
use xlens_analysis::tools;

/// List the tools.
#[derive(clap::Args)]
pub struct Args {
    /// Only this tool.
    name: Option<String>,
    /// Each tool's name, title, description, parameters and the JSON Schema of its answer.
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
    parameters: Vec<tools::Parameter>,
    /// The JSON Schema of the tool's `--json` answer (every field, with its description).
    output: serde_json::Value,
}

pub fn run(a: Args) -> Result<()> {
    let chosen: Vec<&dyn tools::AnyTool> = tools::TOOLS
        .iter()
        .copied()
        .filter(|t| a.name.as_deref().is_none_or(|n| t.info().name == n))
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = tools::TOOLS.iter().map(|t| t.info().name).collect();
        return Err(tools::ToolError::UnknownTool {
            name: a.name.unwrap_or_default(),
            tools: names.join(", "),
        }
        .into());
    }
    if a.json {
        let all: Vec<Described> = chosen
            .iter()
            .map(|t| Described {
                info: t.info(),
                parameters: tools::parameters(*t),
                output: t.output_schema(),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        for t in chosen.iter().map(|t| t.info()) {
            println!("{:<20} {}", t.name, t.description);
        }
    }
    Ok(())
}
