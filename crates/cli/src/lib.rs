//! `xlens`: serve, report on, and benchmark ML profiles (XSpace `.xplane.pb` log directories).
//!
//! The command line lives here as a library, [`main_from`], so the binary (`main.rs`) and the
//! Python package's `xlens` command run the same code; [`open_run`] opens a path as the tools
//! see it (files memory-mapped). Each command is one file under [`cmd`]; this file holds the
//! options every command takes and the dispatch.

pub mod alloc;
mod answers;
mod cmd;
mod open;
mod out;
mod summaries;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
pub use open::{open_run, open_run_reading};
use out::exit_on_error;

#[derive(Parser)]
#[command(
    name = "xlens",
    version,
    about = "A fast ML performance profiler for XProf/TensorBoard profiles (.xplane.pb) and PyTorch profiler traces (.pt.trace.json[.gz])"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Read gs://, s3://, az:// buckets without credentials (public buckets).
    #[arg(long, global = true)]
    anonymous: bool,
    /// Peak FLOP rate in FLOP/s (e.g. 1.5e12) that every tool, the advice, the diff and the
    /// summaries use for the roofs and FLOP utilisation (default: the profile's, the device
    /// table's, or for CPU profiles measured once on this machine and kept in the cache).
    #[arg(long, global = true)]
    peak_flops: Option<f64>,
    /// Peak memory bandwidth in bytes/s (e.g. 2e11), used as --peak-flops is.
    #[arg(long, global = true)]
    peak_bw: Option<f64>,
}

/// The commands; `xlens tool NAME` is added to them by [`cmd::tool::command`].
#[derive(Subcommand)]
enum Cmd {
    Serve(cmd::serve::Args),
    Runs(cmd::runs::Args),
    Diff(cmd::diff::Args),
    Report(cmd::report::Args),
    Hosts(cmd::hosts::Args),
    Summarize(cmd::summarize::Args),
    Sql(cmd::sql::Args),
    Ballista(cmd::ballista::Args),
    BenchTrace(cmd::bench_trace::Args),
    Tools(cmd::tools::Args),
    Skill(cmd::skill::Args),
    Mcp(cmd::mcp::Args),
    Capture(cmd::capture::Args),
    Export(cmd::export::Args),
    Cloud(cmd::cloud::Args),
    Bench(cmd::bench::Args),
}

/// The command line this process runs (for the answer cache's key).
static ARGS: std::sync::OnceLock<Vec<std::ffi::OsString>> = std::sync::OnceLock::new();

/// Runs the command line on `args` (the program name first), exiting the process as the
/// `xlens` binary does.
pub fn main_from<I, T>(args: I)
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let _ = ARGS.set(args.clone());
    out::set_json_errors(out::asks_for_json(&args));
    let matches = Cli::command()
        .subcommand(cmd::tool::command())
        .try_get_matches_from(args)
        .unwrap_or_else(|e| out::exit_on_bad_arguments(e));
    let anonymous = matches.get_flag("anonymous")
        || matches
            .subcommand()
            .and_then(|(_, m)| m.try_get_one::<bool>("anonymous").ok().flatten().copied())
            .unwrap_or(false);
    buckets(anonymous);
    exit_on_error(process_peaks(&matches));
    if let Some(("tool", m)) = matches.subcommand() {
        keep_freed_memory();
        exit_on_error(cmd::tool::run(m));
        return;
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if !matches!(cli.cmd, Cmd::Serve(_) | Cmd::Capture(_) | Cmd::Mcp(_)) {
        keep_freed_memory();
    }
    exit_on_error(match cli.cmd {
        Cmd::Serve(a) => cmd::serve::run(a),
        Cmd::Runs(a) => cmd::runs::run(a),
        Cmd::Diff(a) => cmd::diff::run(a),
        Cmd::Report(a) => cmd::report::run(a),
        Cmd::Hosts(a) => cmd::hosts::run(a),
        Cmd::Summarize(a) => cmd::summarize::run(a),
        Cmd::Sql(a) => cmd::sql::run(a),
        Cmd::Ballista(a) => cmd::ballista::run(a),
        Cmd::BenchTrace(a) => cmd::bench_trace::run(a),
        Cmd::Tools(a) => cmd::tools::run(a),
        Cmd::Skill(a) => cmd::skill::run(a),
        Cmd::Mcp(a) => cmd::mcp::run(a),
        Cmd::Capture(a) => std::process::exit(cmd::capture::run(a)),
        Cmd::Export(a) => cmd::export::run(a),
        Cmd::Cloud(a) => cmd::cloud::run(a.cmd),
        Cmd::Bench(a) => cmd::bench::run(a),
    });
}

/// The peaks given on the command line (at any level of it), for every tool of this process.
fn process_peaks(matches: &clap::ArgMatches) -> anyhow::Result<()> {
    let (mut flops, mut bw) = (None, None);
    let mut m = Some(matches);
    while let Some(cur) = m {
        if let Ok(Some(v)) = cur.try_get_one::<f64>("peak_flops") {
            flops = Some(*v);
        }
        if let Ok(Some(v)) = cur.try_get_one::<f64>("peak_bw") {
            bw = Some(*v);
        }
        m = cur.subcommand().map(|(_, s)| s);
    }
    let u = xlens_analysis::base::peaks::UserPeaks::checked(flops, bw)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    xlens_analysis::base::peaks::set_process_peaks(u);
    Ok(())
}

/// One-shot commands keep the memory the system allocator frees for their own later allocations
/// (blocks below 1 MiB: larger ones are `alloc::HugeAlloc`'s) instead of glibc's default of
/// mapping blocks from 128 KiB on separately and giving them and the heap's free top back at
/// once, which makes the next allocation fault its pages in again: on the 49 MB JAX profile's
/// overview, 4,300 page faults instead of 7,000, at about 2 µs each on the VM measured, and a
/// lower peak (120 MB instead of 130 MB). The server, which lives on and loads one run after
/// another, keeps the defaults.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator thresholds; it runs before any other thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// Bucket access for this process: signed or anonymous requests, and a download bar on a
/// terminal.
fn buckets(anonymous: bool) {
    #[cfg(feature = "cloud")]
    {
        use std::io::{IsTerminal, Write};
        xlens_store::set_anonymous(anonymous);
        let tty = std::io::stderr().is_terminal();
        let last = std::sync::Mutex::new((String::new(), u64::MAX));
        xlens_store::set_progress(move |p| {
            // For a served page waiting on the download.
            xlens_server::record_download(p.url, p.done, p.total);
            if tty {
                let pct = (p.done * 100).checked_div(p.total).unwrap_or(100);
                let Ok(mut l) = last.lock() else { return };
                if l.0 == p.url && l.1 == pct {
                    return;
                }
                *l = (p.url.to_string(), pct);
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\rxlens: fetching {} {pct:>3}% ({:.1} of {:.1} MB)",
                    p.url,
                    p.done as f64 / 1e6,
                    p.total as f64 / 1e6
                );
                if p.done >= p.total {
                    let _ = writeln!(err);
                }
                let _ = err.flush();
            }
        });
    }
    #[cfg(not(feature = "cloud"))]
    let _ = anonymous;
}
