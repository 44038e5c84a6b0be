//! `xlens report`: the report tool over every session and host below a path.

use crate::out::{exit_if_unread, print_bounded, Format};
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
    /// At most this many rows in each table of the answer (as `xlens tool --max-rows`).
    #[arg(long, value_name = "N")]
    max_rows: Option<usize>,
    /// At most this many bytes of output (as `xlens tool --max-bytes`).
    #[arg(long, value_name = "BYTES")]
    max_bytes: Option<usize>,
}

pub fn run(a: Args) -> Result<()> {
    let run = crate::open::open_run(&a.path, None, None)?;
    let out = tools::find("report")?.run_query(&run, &[])?;
    let f = if a.json { Format::Json } else { Format::Text };
    let bounds = tools::Bounds {
        rows: a.max_rows,
        bytes: a.max_bytes,
    };
    print_bounded("report", &out, f, bounds)?;
    exit_if_unread(&run);
    Ok(())
}
