//! `xlens report`: the report tool over every session and host below a path.

use crate::out::{exit_if_unread, print_output, Format};
use anyhow::Result;
use std::path::PathBuf;
use xlens_analysis::tools;

/// Summarise every session and host below PATH: device, span, events, steps, top ops, errors.
#[derive(clap::Args)]
pub struct Args {
    /// A log directory, session directory or profile file (.xplane.pb, or a PyTorch trace
    /// .json[.gz]).
    path: PathBuf,
    /// Print stable JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    let run = crate::open::open_run(&a.path, None, None)?;
    let out = tools::find("report")?.run_query(&run, &[])?;
    let f = if a.json { Format::Json } else { Format::Text };
    print_output("report", &out, f)?;
    exit_if_unread(&run);
    Ok(())
}
