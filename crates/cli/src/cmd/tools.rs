//! `xlens tools`: the registry's tools, by name, with their descriptions (and with `--json`
//! their parameters).

use anyhow::Result;
use xlens_analysis::tools;

/// List the tools.
#[derive(clap::Args)]
pub struct Args {
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&tools::infos()).unwrap_or_default()
        );
    } else {
        for t in tools::infos() {
            println!("{:<20} {}", t.name, t.description);
        }
    }
    Ok(())
}
