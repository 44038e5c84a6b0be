//! `xlens hosts`: every host of a run compared in bounded memory, through the per-host
//! summaries (decoded or cached).

use crate::open::{discover, named_session};
use crate::out::{write_compact_json, write_stdout, EXIT_UNREAD};
use crate::summaries;
use anyhow::{Context, Result};
use std::path::PathBuf;
use xlens_analysis::base::hosts::summary;
use xlens_store::Session;

/// Compare every host of a run in bounded memory: each host file is decoded (--jobs at
/// once), reduced to a summary (steps, breakdown, ops, module peaks) and dropped;
/// per-host step statistics, stragglers, clocks, ops and memory across hosts. Summaries are
/// cached as Parquet, so a second run decodes nothing. Exit 2 when a host file could not be
/// read.
#[derive(clap::Args)]
pub struct Args {
    /// A log directory, session directory or profile file(s) directory.
    path: PathBuf,
    /// Only this session (default: every session below PATH, hosts named session/host).
    #[arg(long)]
    run: Option<String>,
    /// Hosts decoded at once (default: one per core while their peaks, ~1.8x the largest
    /// host file each, inflated for a .gz, fit within twice that, else one at a time on
    /// every core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Decode every host again, and do not write the cache.
    #[arg(long)]
    no_cache: bool,
    /// Also write the summaries next to the profiles: SESSION/xlens-summaries/TABLE/HOST.parquet.
    #[arg(long)]
    write_summaries: bool,
    /// Print each host's time (decoded or cached) to stderr.
    #[arg(long)]
    timings: bool,
    /// Say on stderr how the hosts were read (decoded or cached, how many at once, the memory
    /// bound's figures), also with --json (without --json it is said anyway).
    #[arg(long)]
    verbose: bool,
}

pub fn run(a: Args) -> Result<()> {
    let path = &a.path;
    // With --json stderr carries errors and what was left out only, unless --verbose.
    let say = !a.json || a.verbose;
    let all = discover(path)?;
    // The run: the named session (default: the newest) and the sessions written within
    // [`summaries::SAME_CAPTURE_S`] of it, which may be other hosts' sessions of the same
    // capture (matched below on their profile windows).
    let chosen = match &a.run {
        Some(r) => named_session(&all, r, path)?,
        None => all
            .iter()
            .max_by_key(|s| s.modified_s)
            .with_context(|| format!("no profiles below {}", path.display()))?,
    };
    let chosen_name = chosen.name.clone();
    let near = |s: &Session| s.modified_s.abs_diff(chosen.modified_s) <= summaries::SAME_CAPTURE_S;
    let sessions: Vec<Session> = all.iter().filter(|s| near(s)).cloned().collect();
    summaries::check_hosts(&sessions, path)?;
    let cache = summaries::SummaryCache {
        dir: (!a.no_cache).then(summaries::SummaryCache::default_dir),
    };
    let plan = summaries::plan(a.jobs, &sessions);
    let t = std::time::Instant::now();
    let (mut found, mut times) = summaries::summarize(&sessions, plan.jobs, &cache);
    let (files, decoded) = (
        times.len(),
        times
            .iter()
            .filter(|t| t.source == summaries::Source::Decoded)
            .count(),
    );
    let groups = summary::group_sessions(&found);
    if let Some(g) = groups.iter().find(|g| g.sessions.contains(&chosen_name)) {
        let keep: Vec<bool> = found
            .iter()
            .map(|s| g.sessions.contains(&s.session))
            .collect();
        let mut k = keep.iter();
        found.retain(|_| *k.next().unwrap_or(&false));
        let mut k = keep.iter();
        times.retain(|_| *k.next().unwrap_or(&false));
        if say && !g.matched.is_empty() {
            eprintln!("xlens: {}", g.matched);
        }
    }
    let others: Vec<&str> = all
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !found.iter().any(|x| x.session == *n))
        .collect();
    if !others.is_empty() {
        eprintln!(
            "xlens: run {chosen_name}; {} other session(s) below {} not in it (--run picks one): {}",
            others.len(),
            path.display(),
            others.join(", ")
        );
    }
    if a.timings {
        for t in &times {
            eprintln!("xlens: {:<32} {:>9.1} ms  {:?}", t.host, t.ms, t.source);
        }
    }
    let left_out: u64 = times.iter().map(|t| t.stats_left_out).sum();
    let left_out = if left_out > 0 {
        format!(
            "; {left_out} event stats that no summary reads ({}) left out of the decodes",
            xlens_loader::SUMMARY_UNUSED_STATS.join(", ")
        )
    } else {
        String::new()
    };
    if say {
        eprintln!(
            "xlens: {files} host file(s) summarised in {:.2} s: {decoded} decoded, {} from the cache{left_out}",
            t.elapsed().as_secs_f64(),
            files - decoded
        );
    }
    if say && decoded > 0 {
        eprintln!("xlens: {}", plan.why);
    }
    // The figures the memory bound is stated in (peak RSS under twice the largest host file
    // plus the summaries, with one host decoded at a time).
    let largest = found.iter().map(|s| s.file_bytes).max().unwrap_or(0);
    let held = summary::heap_bytes_of_all(&found);
    if say {
        eprintln!(
            "xlens: largest host file {:.1} MB; the summaries hold {:.1} MB",
            largest as f64 / 1e6,
            held as f64 / 1e6
        );
    }
    if say && plan.largest_read > plan.largest_read_stored {
        // A gzip file: its decoder reads (and the bound is about) the inflated text.
        eprintln!(
            "xlens: inflated, the largest host file ({:.1} MB gzip) is {:.1} MB",
            plan.largest_read_stored as f64 / 1e6,
            plan.largest_read as f64 / 1e6
        );
    }
    if a.write_summaries {
        for s in sessions
            .iter()
            .filter(|s| found.iter().any(|x| x.session == s.name))
        {
            let mine: Vec<_> = found
                .iter()
                .filter(|x| x.session == s.name)
                .cloned()
                .collect();
            let out = summaries::beside(s);
            let n = summaries::write_summaries(&mine, &out)?;
            if say {
                eprintln!("xlens: wrote {n} Parquet file(s) under {out}");
            }
        }
    }
    let report = summary::hosts_report(&found);
    if a.json {
        // Compact: a pod's host × step matrices are millions of numbers.
        write_compact_json(&report)?;
    } else {
        write_stdout(&summaries::render_text(&report))?;
    }
    if !report.unread.is_empty() {
        std::process::exit(EXIT_UNREAD);
    }
    Ok(())
}
