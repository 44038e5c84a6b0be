//! `xlens summarize`: host files summarised into Parquet tables, the map step of a pod-scale
//! analysis.

use crate::out::EXIT_UNREAD;
use crate::summaries;
use anyhow::Result;
use std::path::PathBuf;

/// The map step of a pod-scale analysis: summarise host files (or every host below a
/// directory) into Parquet tables, OUT/TABLE/HOST.parquet (OUT a folder or a gs://, s3://,
/// az:// URL); any scheduler can run one per file. Schema: docs/src/summary-tables.md.
#[derive(clap::Args)]
pub struct Args {
    /// Profile files, session directories or log directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Where the tables go.
    #[arg(long)]
    out: String,
    /// Hosts decoded at once (default: one per core while their peaks, ~1.8x the largest
    /// host file each, inflated for a .gz, fit within twice that, else one at a time on
    /// every core).
    #[arg(long)]
    jobs: Option<usize>,
}

pub fn run(a: Args) -> Result<()> {
    let mut sessions = Vec::new();
    for p in &a.paths {
        let found = crate::open::discover(p)?;
        summaries::check_hosts(&found, p)?;
        sessions.extend(found);
    }
    let out = &a.out;
    let cache = summaries::SummaryCache { dir: None };
    let plan = summaries::plan(a.jobs, &sessions);
    let (done, _) = summaries::summarize(&sessions, plan.jobs, &cache);
    let n = summaries::write_summaries(&done, out)?;
    let unread: Vec<_> = done.iter().filter(|s| s.error.is_some()).collect();
    eprintln!(
        "xlens: {} host file(s) summarised, {n} Parquet file(s) under {out}",
        done.len() - unread.len()
    );
    for u in &unread {
        eprintln!(
            "xlens: could not read {}: {}",
            u.file,
            u.error.as_deref().unwrap_or("")
        );
    }
    if !unread.is_empty() {
        std::process::exit(EXIT_UNREAD);
    }
    Ok(())
}
