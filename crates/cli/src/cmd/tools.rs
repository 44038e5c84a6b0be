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
    parameters: Vec<tools::Parameter>,
}

pub fn run(a: Args) -> Result<()> {
    if a.json {
        let all: Vec<Described> = tools::TOOLS
            .iter()
            .map(|t| Described {
                info: t.info(),
                parameters: tools::parameters(*t),
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
