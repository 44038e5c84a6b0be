//! `xlens`: serve, report on, and benchmark ML profiles (XSpace `.xplane.pb` log directories).
//!
//! The command line lives here as a library, [`main_from`], so the binary (`main.rs`) and the
//! Python package's `xlens` command run the same code; [`open_run`] opens a path as the tools
//! see it (files memory-mapped).

pub mod alloc;
mod bench;
mod capture;
mod cloud;
mod hosts;
mod mapped;

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use xlens_analysis::base::context::{Analysis, Run};
use xlens_analysis::base::load::Reads;
use xlens_analysis::tools;
use xlens_store::Session;

/// A small real JAX (CPU) training profile, served by `xlens serve` when no log dir is given.
const DEMO: &[u8] =
    include_bytes!("../../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb");

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

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Csv,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum DiffFormat {
    Text,
    Json,
    Md,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum OpsScopeArg {
    All,
    FirstStep,
}

/// What every `xlens tool NAME` takes besides the tool's own parameters.
#[derive(clap::Args)]
struct ToolCommon {
    /// A log directory, one session directory, or one profile file.
    path: PathBuf,
    /// Only this host.
    #[arg(long)]
    host: Option<String>,
    /// Only this session (default: every session found below PATH).
    #[arg(long)]
    run: Option<String>,
    /// Shorthand for --format json.
    #[arg(long)]
    json: bool,
    #[arg(long, value_enum)]
    format: Option<Format>,
}

/// `xlens tool`: one subcommand per tool of the registry, each with the common arguments and the
/// tool's own parameters.
fn tool_command() -> clap::Command {
    let mut c = clap::Command::new("tool")
        .about("Run one tool (what the server serves) and print its output.")
        .subcommand_required(true)
        .subcommand_value_name("TOOL")
        // An unknown name reaches `run_tool_command`, which lists the tools.
        .allow_external_subcommands(true);
    for t in tools::TOOLS {
        let i = t.info();
        let sub = t.args(<ToolCommon as clap::Args>::augment_args(
            clap::Command::new(i.name),
        ));
        // After the parameters' own derive, which sets the struct's doc comment as `about`.
        c = c.subcommand(sub.about(i.description));
    }
    c
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the web UI and JSON API over a log directory (the bundled demo profile without one).
    Serve {
        /// A log directory, one session directory, or one profile file (.xplane.pb, or a PyTorch trace .json[.gz]).
        logdir: Option<PathBuf>,
        /// Address to listen on. Any address but loopback requires a token (see --token).
        #[arg(long, default_value = "127.0.0.1:8791")]
        bind: SocketAddr,
        /// The token every request must carry (`?token=`, a cookie set on the first visit, or
        /// `Authorization: Bearer`). Default on a non-loopback --bind: a random one, printed in
        /// the URL; on loopback: none.
        #[arg(long, conflicts_with_all = ["token_file", "no_auth"])]
        token: Option<String>,
        /// Read the token from this file (surrounding whitespace ignored).
        #[arg(long, conflicts_with = "no_auth")]
        token_file: Option<PathBuf>,
        /// Serve a non-loopback --bind without a token (anyone who can reach the port sees the
        /// profiles).
        #[arg(long)]
        no_auth: bool,
        /// On a non-loopback --bind, allow the capture form and API (the server then connects
        /// to addresses visitors type; link-local and cloud metadata addresses stay refused).
        #[arg(long)]
        allow_capture: bool,
        /// Show several hosts on their raw clocks in the trace viewer instead of aligning them on
        /// their step ends.
        #[arg(long)]
        no_align: bool,
        /// Resident memory the loaded profiles may use (e.g. 8G, 500M; 0 for no budget); least
        /// recently used files are evicted past it and loaded again when asked for. Default:
        /// half of this machine's memory (or XLENS_MEMORY_BUDGET).
        #[arg(long, value_parser = parse_budget)]
        memory_budget: Option<u64>,
    },
    /// List the sessions (runs) below PATH and their host files with sizes and times, without
    /// reading any profile (a bucket is only listed).
    Runs {
        /// A log directory or session directory, local or a gs://, s3://, az:// URL.
        path: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compare two runs: step time (with a 95% interval, so noise is not called a change),
    /// breakdown, duty cycle, FLOP utilisation, ops added/removed/slower/faster, memory peaks.
    /// Exit codes: 0 compared; 1 a --fail-if condition held; 2 compared but some host files
    /// could not be read; 3 no comparison (bad path or condition).
    Diff {
        /// The baseline: a log directory, session directory or profile file (any format).
        base: PathBuf,
        /// The run to compare with it.
        new: PathBuf,
        /// Only this session below BASE.
        #[arg(long)]
        base_run: Option<String>,
        /// Only this session below NEW.
        #[arg(long)]
        new_run: Option<String>,
        /// Compare this host (default: the first readable host of each).
        #[arg(long)]
        host: Option<String>,
        /// Shorthand for --format json.
        #[arg(long)]
        json: bool,
        #[arg(long, value_enum)]
        format: Option<DiffFormat>,
        /// Exit 1 when this holds, e.g. `step_time.mean > +3%`, `peak_memory > +100MiB`,
        /// `op:*fusion* > +10%`, `duty_cycle < 50` (repeatable; see docs/src/diff.md).
        #[arg(long = "fail-if")]
        fail_if: Vec<String>,
        /// PyTorch traces: which events the op diff counts (`first-step`: the first profiler
        /// step only, as HTA's TraceDiff).
        #[arg(long, value_enum, default_value = "all")]
        ops: OpsScopeArg,
    },
    /// Summarise every session and host below PATH: device, span, events, steps, top ops, errors.
    Report {
        /// A log directory, session directory or profile file (.xplane.pb, or a PyTorch trace
        /// .json[.gz]).
        path: PathBuf,
        /// Print stable JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compare every host of a run in bounded memory: each host file is decoded (--jobs at
    /// once), reduced to a summary (steps, breakdown, ops, module peaks) and dropped;
    /// per-host step statistics, stragglers, clocks, ops and memory across hosts. Summaries are
    /// cached as Parquet, so a second run decodes nothing. Exit 2 when a host file could not be
    /// read.
    Hosts {
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
    },
    /// The map step of a pod-scale analysis: summarise host files (or every host below a
    /// directory) into Parquet tables, OUT/TABLE/HOST.parquet (OUT a folder or a gs://, s3://,
    /// az:// URL); any scheduler can run one per file. Schema: docs/src/summary-tables.md.
    Summarize {
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
    },
    /// SQL over the per-host summary tables (hosts, steps, step_breakdown, ops, modules; see
    /// docs/src/summary-tables.md) with Apache DataFusion embedded. Each PATH is a folder of
    /// summaries (what `xlens summarize --out` or `--write-summaries` wrote) or a log
    /// directory / session, whose hosts are summarised first (cached). Needs a build with
    /// `--features sql`.
    Sql {
        /// The query, e.g. "SELECT host, avg(duration_ps) FROM steps GROUP BY host".
        query: String,
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Only this session of a log directory.
        #[arg(long)]
        run: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Hosts decoded at once for summarising (default as for `xlens hosts`).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run the query on an Apache DataFusion Ballista cluster, given its scheduler
        /// (df://HOST:PORT), instead of in this process; its executors read the tables' files
        /// (the same paths, or bucket URLs). Needs a build with `--features distributed`.
        #[arg(long, value_name = "URL")]
        ballista: Option<String>,
    },
    /// A process of an Apache DataFusion Ballista cluster for `xlens sql --ballista`:
    /// `xlens ballista scheduler --bind-port 50050`, `xlens ballista executor --scheduler-port
    /// 50050 --bind-port 50051`, with Ballista's own flags (`xlens ballista scheduler --help`).
    /// Needs a build with `--features distributed`.
    Ballista {
        #[arg(value_enum)]
        role: BallistaRole,
        /// Ballista's flags for that process.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Measure the trace viewer: index build and viewport query times (see PERFORMANCE.md).
    BenchTrace {
        /// A profile file: .xplane.pb or a PyTorch trace .json[.gz] (or use --synthetic).
        file: Option<PathBuf>,
        /// Generate a synthetic profile of this many events instead.
        #[arg(long)]
        synthetic: Option<usize>,
        #[arg(long, default_value_t = 1920)]
        width: u32,
        #[arg(long, default_value_t = 200)]
        queries: usize,
        #[arg(long)]
        json: bool,
    },
    /// List the tools.
    Tools {
        #[arg(long)]
        json: bool,
    },
    /// Capture from running jobs' profiler servers (jax.profiler.start_server(PORT) and the like).
    Capture {
        /// HOST:PORT[,HOST:PORT...]; several are captured in parallel into one session.
        addrs: String,
        /// Log directory; the capture goes to LOGDIR/plugins/profile/SESSION/HOST_PORT.xplane.pb.
        #[arg(long)]
        logdir: PathBuf,
        /// Capture window, e.g. 2s, 500ms, 1m.
        #[arg(long, default_value = "2s", value_parser = capture::parse_duration)]
        duration: std::time::Duration,
        /// Session name (default: a YYYY_MM_DD_HH_MM_SS timestamp, as XProf).
        #[arg(long)]
        session: Option<String>,
        /// Host tracer level: 0 off, 1 user annotations, 2 runtime activity, 3 more.
        #[arg(long, default_value_t = 2)]
        host_tracer_level: u32,
        /// Device tracer level: 0 off, 1 on.
        #[arg(long, default_value_t = 1)]
        device_tracer_level: u32,
        /// Python tracer level: 0 off, 1 on.
        #[arg(long, default_value_t = 0)]
        python_tracer_level: u32,
        /// Start the window this many milliseconds after the request (same start on every host).
        #[arg(long, default_value_t = 0, conflicts_with = "start_at")]
        delay: u64,
        /// Start the window at this Unix time in milliseconds (one start for captures run on
        /// several machines, as `xlens cloud capture` does); a time already past starts at once.
        #[arg(long)]
        start_at: Option<u64>,
        /// Name the host's file NAME.xplane.pb instead of HOST_PORT.xplane.pb (one address only;
        /// `xlens cloud capture` gives each worker its own host name).
        #[arg(long)]
        host_name: Option<String>,
        /// TCP connect timeout, e.g. 5s.
        #[arg(long, default_value = "5s", value_parser = capture::parse_duration)]
        connect_timeout: std::time::Duration,
    },
    /// Write one self-contained HTML file of a run (report, overview, advice, op profile, HLO op
    /// stats, memory viewer of the largest module, and the trace viewer over one window with its
    /// events embedded) to attach to a bug or a pull request; it opens from disk without network.
    Export {
        /// A log directory, session directory or profile file.
        path: PathBuf,
        /// The session (default: the newest below PATH).
        #[arg(long)]
        run: Option<String>,
        /// Only this host.
        #[arg(long)]
        host: Option<String>,
        /// The file to write.
        #[arg(long)]
        html: PathBuf,
        /// The trace window's start, in ps on the trace viewer's axis (as its URL's start_ps);
        /// default: the median step.
        #[arg(long, requires = "end_ps")]
        start_ps: Option<i64>,
        #[arg(long, requires = "start_ps")]
        end_ps: Option<i64>,
        /// Embed at most this many trace events (a window holding more is narrowed, and the file
        /// says so).
        #[arg(long, default_value_t = 200_000)]
        max_events: usize,
        /// Embed the details (stats, flows) of at most this many events, the earliest first;
        /// the others show their name and times.
        #[arg(long, default_value_t = 5_000)]
        max_details: usize,
    },
    /// A viewer for a gs:// log directory hosted on a Compute Engine VM (create, list, delete,
    /// connect), and capture from every worker of a TPU VM, through the gcloud CLI.
    Cloud {
        #[command(subcommand)]
        cmd: cloud::CloudCmd,
    },
    /// Measure decode speed, memory and tool time on a profile (see PERFORMANCE.md).
    Bench {
        /// A profile file: .xplane.pb or a PyTorch trace .json[.gz].
        file: PathBuf,
        /// Repetitions (the fastest is reported; peak RSS covers all).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Also time this tool on the decoded model.
        #[arg(long, default_value = "report")]
        tool: String,
        /// Then time every other tool on the same open profile (what switching tools costs).
        #[arg(long)]
        then_all: bool,
        #[arg(long)]
        json: bool,
    },
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

/// Runs the command line on `args` (the program name first), exiting the process as the
/// `xlens` binary does.
pub fn main_from<I, T>(args: I)
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = Cli::command()
        .subcommand(tool_command())
        .get_matches_from(args);
    let anonymous = matches.get_flag("anonymous")
        || matches
            .subcommand()
            .and_then(|(_, m)| m.try_get_one::<bool>("anonymous").ok().flatten().copied())
            .unwrap_or(false);
    buckets(anonymous);
    exit_on_error(process_peaks(&matches));
    if let Some(("tool", m)) = matches.subcommand() {
        keep_freed_memory();
        exit_on_error(run_tool_command(m));
        return;
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if !matches!(cli.cmd, Cmd::Serve { .. } | Cmd::Capture { .. }) {
        keep_freed_memory();
    }
    let res = match cli.cmd {
        Cmd::Serve {
            logdir,
            bind,
            token,
            token_file,
            no_auth,
            allow_capture,
            no_align,
            memory_budget,
        } => serve_access(bind, token, token_file, no_auth, allow_capture)
            .and_then(|access| serve(logdir, bind, access, memory_budget, no_align)),
        Cmd::Runs { path, json } => list_runs(&path, json),
        Cmd::Diff {
            base,
            new,
            base_run,
            new_run,
            host,
            json,
            format,
            fail_if,
            ops,
        } => {
            let f = format.unwrap_or(if json {
                DiffFormat::Json
            } else {
                DiffFormat::Text
            });
            let scope = match ops {
                OpsScopeArg::All => xlens_analysis::compare::OpsScope::All,
                OpsScopeArg::FirstStep => xlens_analysis::compare::OpsScope::FirstStep,
            };
            match diff(
                &base,
                base_run.as_deref(),
                &new,
                new_run.as_deref(),
                host.as_deref(),
                f,
                &fail_if,
                scope,
            ) {
                Ok(code) => std::process::exit(code),
                Err(e) => {
                    eprintln!("xlens: {e:#}");
                    std::process::exit(3);
                }
            }
        }
        Cmd::Report { path, json } => (|| {
            let run = open_run(&path, None, None)?;
            let out = tools::find("report")?.run_query(&run, &[])?;
            print_output(
                "report",
                &out,
                if json { Format::Json } else { Format::Text },
            )?;
            exit_if_unread(&run);
            Ok(())
        })(),
        Cmd::Hosts {
            path,
            run,
            jobs,
            json,
            no_cache,
            write_summaries,
            timings,
        } => hosts_command(
            &path,
            run.as_deref(),
            jobs,
            json,
            no_cache,
            write_summaries,
            timings,
        ),
        Cmd::Summarize { paths, out, jobs } => summarize_command(&paths, &out, jobs),
        Cmd::Sql {
            query,
            paths,
            run,
            format,
            jobs,
            ballista,
        } => sql_command(
            &query,
            &paths,
            run.as_deref(),
            format,
            jobs,
            ballista.as_deref(),
        ),
        Cmd::Ballista { role, args } => ballista_command(role, args),
        Cmd::BenchTrace {
            file,
            synthetic,
            width,
            queries,
            json,
        } => bench::trace(file.as_deref(), synthetic, width, queries.max(1), json),
        Cmd::Tools { json } => {
            if json {
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
        Cmd::Capture {
            addrs,
            logdir,
            duration,
            session,
            host_tracer_level,
            device_tracer_level,
            python_tracer_level,
            delay,
            start_at,
            host_name,
            connect_timeout,
        } => std::process::exit(capture::run(capture::Args {
            addrs,
            logdir,
            duration,
            session,
            host_tracer_level,
            device_tracer_level,
            python_tracer_level,
            delay_ms: delay,
            start_at_ms: start_at,
            host_name,
            connect_timeout,
        })),
        Cmd::Cloud { cmd } => cloud::run(cmd),
        Cmd::Export {
            path,
            run,
            host,
            html,
            start_ps,
            end_ps,
            max_events,
            max_details,
        } => export(
            &path,
            run.as_deref(),
            host.as_deref(),
            &html,
            start_ps.zip(end_ps),
            (max_events, max_details),
        ),
        Cmd::Bench {
            file,
            reps,
            tool,
            then_all,
            json,
        } => bench::run(&file, reps, &tool, then_all, json),
    };
    exit_on_error(res);
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

fn exit_on_error(res: Result<()>) {
    if let Err(e) = res {
        eprintln!("xlens: {e:#}");
        std::process::exit(1);
    }
}

/// `xlens tool NAME PATH ...`.
fn run_tool_command(m: &clap::ArgMatches) -> Result<()> {
    let Some((name, m)) = m.subcommand() else {
        bail!("name a tool; `xlens tools` lists them");
    };
    let tool = tools::find(name)?;
    let common =
        <ToolCommon as clap::FromArgMatches>::from_arg_matches(m).unwrap_or_else(|e| e.exit());
    let reads = tool.info().reads;
    let run = open_run_reading(
        &common.path,
        common.host.as_deref(),
        common.run.as_deref(),
        reads,
    )?;
    let out = tool.run_args(&run, m)?;
    for h in &run.hosts {
        if let Some(note) = h
            .analysis
            .as_ref()
            .ok()
            .and_then(|a| a.profile().partial_read.clone())
        {
            eprintln!("xlens: {}: read for {name}: {note}", h.path().display());
        }
    }
    let f = common.format.unwrap_or(if common.json {
        Format::Json
    } else {
        Format::Text
    });
    print_output(name, &out, f)?;
    exit_if_unread(&run);
    Ok(())
}

/// Exit code of a command that printed its answer while some of its host files could not be
/// read (each named on stderr; the answer names them too): scripts can tell a partial answer.
const EXIT_UNREAD: i32 = 2;

/// After an answer is printed: when any host file of `run` failed to load, names each on stderr
/// and exits with [`EXIT_UNREAD`].
fn exit_if_unread(run: &Run) {
    let failed: Vec<&str> = run
        .hosts
        .iter()
        .filter_map(|h| h.analysis.as_ref().err().map(String::as_str))
        .collect();
    if failed.is_empty() {
        return;
    }
    eprintln!(
        "xlens: {} of {} host files could not be read:",
        failed.len(),
        run.hosts.len()
    );
    for e in failed {
        eprintln!("  {e}");
    }
    std::process::exit(EXIT_UNREAD);
}

/// `xlens diff`: prints the comparison and returns the exit code (see `Cmd::Diff`).
#[allow(clippy::too_many_arguments)]
fn diff(
    base: &Path,
    base_run: Option<&str>,
    new: &Path,
    new_run: Option<&str>,
    host: Option<&str>,
    f: DiffFormat,
    fail_if: &[String],
    scope: xlens_analysis::compare::OpsScope,
) -> Result<i32> {
    use xlens_analysis::compare::{self, cond};
    let conds = fail_if
        .iter()
        .map(|c| cond::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    let b = open_run(base, host, base_run).with_context(|| format!("BASE {}", base.display()))?;
    let n = open_run(new, host, new_run).with_context(|| format!("NEW {}", new.display()))?;
    let d = compare::diff(
        &base.display().to_string(),
        &b,
        &new.display().to_string(),
        &n,
        scope,
    );
    let results: Vec<cond::CondResult> = conds.iter().map(|c| cond::check(c, &d)).collect();
    match f {
        DiffFormat::Json => {
            let mut v = serde_json::to_value(&d)?;
            if let Some(o) = v.as_object_mut() {
                o.insert("conditions".to_string(), serde_json::to_value(&results)?);
            }
            let s = serde_json::to_string_pretty(&v)?;
            write_stdout(&format!("{s}\n"))?;
        }
        DiffFormat::Text | DiffFormat::Md => {
            let md = f == DiffFormat::Md;
            let mut t = if md {
                compare::render_markdown(&d)
            } else {
                compare::render_text(&d)
            };
            if !results.is_empty() {
                t.push_str(if md {
                    "\n### Conditions\n\n"
                } else {
                    "\n== Conditions\n"
                });
                for r in &results {
                    t.push_str(&format!(
                        "{}{} {}: {}\n",
                        if md { "- " } else { "  " },
                        if r.holds { "FAIL" } else { "ok  " },
                        r.condition,
                        r.evidence
                    ));
                }
            }
            write_stdout(&t)?;
        }
    }
    for r in results.iter().filter(|r| r.holds) {
        eprintln!("xlens: --fail-if {} holds: {}", r.condition, r.evidence);
    }
    if results.iter().any(|r| r.holds) {
        return Ok(1);
    }
    let unread = d.base.errors.len() + d.new.errors.len();
    if unread > 0 {
        for e in d.base.errors.iter().chain(&d.new.errors) {
            eprintln!("xlens: could not read {e}");
        }
        return Ok(EXIT_UNREAD);
    }
    Ok(0)
}

/// `xlens hosts`.
fn hosts_command(
    path: &Path,
    run: Option<&str>,
    jobs: Option<usize>,
    json: bool,
    no_cache: bool,
    write_summaries: bool,
    timings: bool,
) -> Result<()> {
    let all = discover(path)?;
    // The run: the named session (default: the newest) and the sessions written within
    // [`hosts::SAME_CAPTURE_S`] of it, which may be other hosts' sessions of the same capture
    // (matched below on their profile windows).
    let chosen = match run {
        Some(r) => all.iter().find(|s| s.name == r).with_context(|| {
            format!(
                "no run `{r}` below {}; runs: {}",
                path.display(),
                all.iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?,
        None => all
            .iter()
            .max_by_key(|s| s.modified_s)
            .with_context(|| format!("no profiles below {}", path.display()))?,
    };
    let chosen_name = chosen.name.clone();
    let near = |s: &Session| s.modified_s.abs_diff(chosen.modified_s) <= hosts::SAME_CAPTURE_S;
    let sessions: Vec<Session> = all.iter().filter(|s| near(s)).cloned().collect();
    hosts::check_hosts(&sessions, path)?;
    let cache = hosts::SummaryCache {
        dir: (!no_cache).then(hosts::SummaryCache::default_dir),
    };
    let plan = hosts::plan(jobs, &sessions);
    let t = std::time::Instant::now();
    let (mut summaries, mut times) = hosts::summarize(&sessions, plan.jobs, &cache);
    let (files, decoded) = (
        times.len(),
        times
            .iter()
            .filter(|t| t.source == hosts::Source::Decoded)
            .count(),
    );
    let groups = xlens_analysis::base::hosts::summary::group_sessions(&summaries);
    if let Some(g) = groups.iter().find(|g| g.sessions.contains(&chosen_name)) {
        let keep: Vec<bool> = summaries
            .iter()
            .map(|s| g.sessions.contains(&s.session))
            .collect();
        let mut k = keep.iter();
        summaries.retain(|_| *k.next().unwrap_or(&false));
        let mut k = keep.iter();
        times.retain(|_| *k.next().unwrap_or(&false));
        if !g.matched.is_empty() {
            eprintln!("xlens: {}", g.matched);
        }
    }
    let others: Vec<&str> = all
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !summaries.iter().any(|x| x.session == *n))
        .collect();
    if !others.is_empty() {
        eprintln!(
            "xlens: run {chosen_name}; {} other session(s) below {} not in it (--run picks one): {}",
            others.len(),
            path.display(),
            others.join(", ")
        );
    }
    if timings {
        for t in &times {
            eprintln!("xlens: {:<32} {:>9.1} ms  {:?}", t.host, t.ms, t.source);
        }
    }
    let left_out: u64 = times.iter().map(|t| t.stats_left_out).sum();
    let left_out = if left_out > 0 {
        format!(
            "; {left_out} event stats that no summary reads ({}) left out of the decodes",
            xlens_analysis::base::load::SUMMARY_UNUSED_STATS.join(", ")
        )
    } else {
        String::new()
    };
    eprintln!(
        "xlens: {files} host file(s) summarised in {:.2} s: {decoded} decoded, {} from the cache{left_out}",
        t.elapsed().as_secs_f64(),
        files - decoded
    );
    if decoded > 0 {
        eprintln!("xlens: {}", plan.why);
    }
    // The figures the memory bound is stated in (peak RSS under twice the largest host file
    // plus the summaries, with one host decoded at a time).
    let largest = summaries.iter().map(|s| s.file_bytes).max().unwrap_or(0);
    let held = xlens_analysis::base::hosts::summary::heap_bytes_of_all(&summaries);
    eprintln!(
        "xlens: largest host file {:.1} MB; the summaries hold {:.1} MB",
        largest as f64 / 1e6,
        held as f64 / 1e6
    );
    if plan.largest_read > plan.largest_read_stored {
        // A gzip file: its decoder reads (and the bound is about) the inflated text.
        eprintln!(
            "xlens: inflated, the largest host file ({:.1} MB gzip) is {:.1} MB",
            plan.largest_read_stored as f64 / 1e6,
            plan.largest_read as f64 / 1e6
        );
    }
    if write_summaries {
        for s in sessions
            .iter()
            .filter(|s| summaries.iter().any(|x| x.session == s.name))
        {
            let mine: Vec<_> = summaries
                .iter()
                .filter(|x| x.session == s.name)
                .cloned()
                .collect();
            let out = hosts::beside(s);
            let n = hosts::write_summaries(&mine, &out)?;
            eprintln!("xlens: wrote {n} Parquet file(s) under {out}");
        }
    }
    let report = xlens_analysis::base::hosts::summary::hosts_report(&summaries);
    if json {
        // Compact: a pod's host × step matrices are millions of numbers.
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        serde_json::to_writer(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| std::io::Write::write_all(&mut out, b"\n"))
            .and_then(|()| std::io::Write::flush(&mut out))
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .context("writing the output")?;
    } else {
        write_stdout(&hosts::render_text(&report))?;
    }
    if !report.unread.is_empty() {
        std::process::exit(EXIT_UNREAD);
    }
    Ok(())
}

/// `xlens sql`: the tables' files, from summary folders as they are and from profiles through
/// the summary cache.
fn sql_command(
    query: &str,
    paths: &[PathBuf],
    run: Option<&str>,
    format: Format,
    jobs: Option<usize>,
    ballista: Option<&str>,
) -> Result<()> {
    let mut files: Vec<(&'static str, Vec<PathBuf>)> = xlens_tables::TABLES
        .iter()
        .map(|t| (*t, Vec::new()))
        .collect();
    for p in paths {
        if p.join("hosts").is_dir() {
            for (t, f) in files.iter_mut() {
                let dir = p.join(t);
                let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
                    .with_context(|| format!("reading {}", dir.display()))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
                    .collect();
                found.sort();
                f.extend(found);
            }
            continue;
        }
        let mut sessions = discover(p)?;
        if let Some(r) = run {
            sessions.retain(|s| s.name == r);
        }
        hosts::check_hosts(&sessions, p)?;
        let cache = hosts::SummaryCache {
            dir: Some(hosts::SummaryCache::default_dir()),
        };
        // Only hosts not cached yet are summarised (a cached host's files are used as they are).
        let cached = |s: &Session, h: &xlens_store::HostFile| {
            xlens_tables::TABLES
                .iter()
                .all(|t| cache.file_of(h, s, t).is_some())
        };
        let missing: Vec<Session> = sessions
            .iter()
            .map(|s| Session {
                hosts: s.hosts.iter().filter(|h| !cached(s, h)).cloned().collect(),
                ..s.clone()
            })
            .filter(|s| !s.hosts.is_empty())
            .collect();
        let (summaries, _) = hosts::summarize(&missing, hosts::plan(jobs, &missing).jobs, &cache);
        for s in summaries.iter().filter(|s| s.error.is_some()) {
            eprintln!(
                "xlens: could not read {}: {} (not in the tables)",
                s.file,
                s.error.as_deref().unwrap_or("")
            );
        }
        for (t, f) in files.iter_mut() {
            f.extend(
                sessions
                    .iter()
                    .flat_map(|s| s.hosts.iter().map(move |h| (s, h)))
                    .filter_map(|(s, h)| cache.file_of(h, s, t)),
            );
        }
    }
    sql_run(query, files, format, ballista)
}

/// Which process of a Ballista cluster `xlens ballista` runs.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum BallistaRole {
    Scheduler,
    Executor,
}

#[cfg(feature = "distributed")]
fn ballista_command(role: BallistaRole, args: Vec<std::ffi::OsString>) -> Result<()> {
    let r = match role {
        BallistaRole::Scheduler => xlens_distributed::scheduler(args),
        BallistaRole::Executor => xlens_distributed::executor(args),
    };
    match r {
        // Ballista's --help and --version.
        Err(xlens_distributed::DistributedError::Arguments(e)) => e.exit(),
        r => Ok(r.with_context(|| format!("Ballista {role:?}"))?),
    }
}

#[cfg(not(feature = "distributed"))]
fn ballista_command(_: BallistaRole, _: Vec<std::ffi::OsString>) -> Result<()> {
    bail!("this xlens was built without Ballista: build it with `cargo build --release -p xlens --features distributed`")
}

#[cfg(feature = "sql")]
fn sql_run(
    query: &str,
    files: Vec<(&'static str, Vec<PathBuf>)>,
    format: Format,
    ballista: Option<&str>,
) -> Result<()> {
    let tables: Vec<xlens_sql::Table> = files
        .into_iter()
        .map(|(t, files)| xlens_sql::Table {
            name: t.to_string(),
            files,
        })
        .collect();
    let hint = || {
        format!(
            "(tables: {}; their columns: docs/src/summary-tables.md)",
            xlens_tables::TABLES.join(", ")
        )
    };
    // One message (DataFusion's errors nest the same text as their sources).
    let batches = match ballista {
        None => xlens_sql::query(query, &tables).map_err(|e| anyhow::anyhow!("{e}\n{}", hint()))?,
        Some(url) if !url.starts_with("df://") => {
            bail!("--ballista takes the scheduler's address as df://HOST:PORT, not `{url}`")
        }
        Some(url) => sql_distributed(url, query, &tables).map_err(|e| {
            anyhow::anyhow!(
                "on the Ballista cluster at {url}: {e}\n(is a scheduler listening there, \
                 `xlens ballista scheduler`, with executors registered?)\n{}",
                hint()
            )
        })?,
    };
    let out = match format {
        Format::Text => xlens_sql::to_text(&batches)? + "\n",
        Format::Csv => xlens_sql::to_csv(&batches)?,
        Format::Json => xlens_sql::to_json(&batches)? + "\n",
    };
    write_stdout(&out)
}

#[cfg(feature = "distributed")]
fn sql_distributed(
    url: &str,
    query: &str,
    tables: &[xlens_sql::Table],
) -> Result<Vec<xlens_sql::RecordBatch>> {
    Ok(xlens_distributed::query(url, query, tables)?)
}

#[cfg(all(feature = "sql", not(feature = "distributed")))]
fn sql_distributed(
    _: &str,
    _: &str,
    _: &[xlens_sql::Table],
) -> Result<Vec<xlens_sql::RecordBatch>> {
    bail!("this xlens was built without Ballista: build it with `cargo build --release -p xlens --features distributed`")
}

#[cfg(not(feature = "sql"))]
fn sql_run(
    _: &str,
    _: Vec<(&'static str, Vec<PathBuf>)>,
    _: Format,
    _: Option<&str>,
) -> Result<()> {
    bail!("this xlens was built without SQL: build it with `cargo build --release -p xlens --features sql` (Apache DataFusion)")
}

/// `xlens summarize`.
fn summarize_command(paths: &[PathBuf], out: &str, jobs: Option<usize>) -> Result<()> {
    let mut sessions = Vec::new();
    for p in paths {
        let found = discover(p)?;
        hosts::check_hosts(&found, p)?;
        sessions.extend(found);
    }
    let cache = hosts::SummaryCache { dir: None };
    let (summaries, _) = hosts::summarize(&sessions, hosts::plan(jobs, &sessions).jobs, &cache);
    let n = hosts::write_summaries(&summaries, out)?;
    let unread: Vec<_> = summaries.iter().filter(|s| s.error.is_some()).collect();
    eprintln!(
        "xlens: {} host file(s) summarised, {n} Parquet file(s) under {out}",
        summaries.len() - unread.len()
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

fn discover(path: &Path) -> Result<Vec<Session>> {
    Ok(xlens_store::discover(path)?)
}

/// `xlens runs`: sessions newest first, each with its hosts' files, sizes and formats.
fn list_runs(path: &Path, json: bool) -> Result<()> {
    use std::io::Write;
    let sessions = discover(path)?;
    let when = |secs: u64| {
        let p: Vec<String> = xlens_store::session_id_at(secs)
            .split('_')
            .map(str::to_string)
            .collect();
        match p.as_slice() {
            [y, mo, d, h, mi, se] => format!("{y}-{mo}-{d} {h}:{mi}:{se} UTC"),
            _ => secs.to_string(),
        }
    };
    let mut out = std::io::stdout().lock();
    let r = if json {
        serde_json::to_writer_pretty(&mut out, &sessions)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        (|| {
            for s in &sessions {
                let bytes: u64 = s.hosts.iter().map(|h| h.bytes).sum();
                writeln!(
                    out,
                    "{}  {} host(s), {:.1} MB, modified {}  ({})",
                    s.name,
                    s.hosts.len(),
                    bytes as f64 / 1e6,
                    when(s.modified_s),
                    s.dir.display()
                )?;
                for h in &s.hosts {
                    writeln!(
                        out,
                        "  {:<24} {:>12} bytes  {}",
                        h.host,
                        h.bytes,
                        h.path.display()
                    )?;
                }
            }
            Ok(())
        })()
    };
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the output"),
    }
}

/// The sessions below `path` (only `run` when given, each narrowed to `host` when given), their
/// hosts loaded as `xlens tool` reads them (mapped).
/// `xlens export --html`.
fn export(
    path: &Path,
    run: Option<&str>,
    host: Option<&str>,
    out: &Path,
    window: Option<(i64, i64)>,
    (max_events, max_details): (usize, usize),
) -> Result<()> {
    let sessions = discover(path)?;
    let session = match run {
        Some(r) => sessions.iter().find(|s| s.name == r).with_context(|| {
            format!(
                "no run `{r}` below {}; runs: {}",
                path.display(),
                sessions
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?,
        None => {
            let s = sessions
                .first()
                .with_context(|| format!("no runs below {}", path.display()))?;
            if sessions.len() > 1 {
                eprintln!(
                    "xlens: exporting the newest of {} runs, {} (--run picks another)",
                    sessions.len(),
                    s.name
                );
            }
            s
        }
    };
    let r = open_run(path, host, Some(&session.name))?;
    let opts = xlens_server::export::ExportOptions {
        window_ps: window,
        max_events,
        max_details,
    };
    let e = xlens_server::export::export_html(session, &r, host, &opts)
        .map_err(|e| anyhow::anyhow!("cannot export {}: {e}", session.name))?;
    std::fs::write(out, &e.html).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "xlens: wrote {} ({:.1} MB): run {}, trace window {}..{} ps ({}), {} of {} events embedded, details of {}",
        out.display(),
        e.html.len() as f64 / 1e6,
        session.name,
        e.window_ps.0,
        e.window_ps.1,
        e.window_note,
        e.events,
        e.total_events,
        e.details
    );
    exit_if_unread(&r);
    Ok(())
}

/// The run below `path` (narrowed to `run` and `host`), its host files memory-mapped and
/// decoded on first use.
pub fn open_run(path: &Path, host: Option<&str>, run: Option<&str>) -> Result<Run> {
    open_run_reading(path, host, run, Reads::Everything)
}

/// [`open_run`], each file read only as far as `reads` says (for one tool run alone).
pub fn open_run_reading(
    path: &Path,
    host: Option<&str>,
    run: Option<&str>,
    reads: Reads,
) -> Result<Run> {
    let mut sessions = discover(path)?;
    if let Some(r) = run {
        let names: Vec<String> = sessions.iter().map(|s| s.name.clone()).collect();
        sessions.retain(|s| s.name == r);
        if sessions.is_empty() {
            bail!(
                "no run `{r}` below {}; runs: {}",
                path.display(),
                names.join(", ")
            );
        }
    }
    let sessions = tools::select_host(&sessions, host)?;
    Ok(Run::new(sessions, move |h| {
        mapped::load_for(h, reads, xlens_store::Paging::Ahead)
            .map(|p| Arc::new(Analysis::new(Arc::new(p))))
            .map_err(|e| e.to_string())
    }))
}

fn print_output(name: &str, out: &tools::ToolOutput, f: Format) -> Result<()> {
    let text = match f {
        Format::Text => out.text(),
        Format::Json => return write_json_stdout(out),
        Format::Csv => match out.csv() {
            Some(c) => c,
            None => bail!("tool `{name}` has no CSV output; use --json"),
        },
    };
    write_stdout(&text)
}

/// Writes a tool's JSON to stdout as it is made (not held whole first), ending with a newline;
/// a reader that stops early ends the command quietly, as in [`write_stdout`].
fn write_json_stdout(out: &tools::ToolOutput) -> Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let r = out.write_json(&mut w, true).and_then(|()| {
        w.write_all(b"\n")
            .and_then(|()| w.flush())
            .map_err(|e| tools::ToolError::Write(e.kind()))
    });
    match r {
        Err(tools::ToolError::Write(std::io::ErrorKind::BrokenPipe)) => Ok(()),
        r => r.context("writing the JSON answer"),
    }
}

/// Writes a command's output. A reader that stops early (`| head`) ends the command quietly,
/// as it does other command-line tools, rather than with a panic.
fn write_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the output"),
    }
}

fn parse_budget(s: &str) -> Result<u64, String> {
    xlens_server::parse_size(s)
        .ok_or_else(|| format!("`{s}` is not a size; use e.g. 8G, 500M, 0 for no budget"))
}

/// The access settings of `xlens serve`'s flags.
fn serve_access(
    bind: SocketAddr,
    token: Option<String>,
    token_file: Option<PathBuf>,
    no_auth: bool,
    allow_capture: bool,
) -> Result<xlens_server::Access> {
    let token = match (token, token_file) {
        (Some(t), _) => Some(t),
        (None, Some(f)) => Some(
            std::fs::read_to_string(&f)
                .with_context(|| format!("reading the token file {}", f.display()))?
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    xlens_server::Access::for_bind(bind, token, no_auth, allow_capture)
        .context("cannot use this token")
}

fn serve(
    logdir: Option<PathBuf>,
    bind: SocketAddr,
    access: xlens_server::Access,
    memory_budget: Option<u64>,
    no_align: bool,
) -> Result<()> {
    let (logdir, label) = match logdir {
        Some(d) => {
            // Fail early with the store's explanation when nothing is there.
            discover(&d).with_context(|| format!("cannot serve {}", d.display()))?;
            let label = d.display().to_string();
            (d, label)
        }
        None => {
            let dir = std::env::temp_dir().join(format!("xlens-demo-{}", std::process::id()));
            let session = dir.join("plugins/profile/demo_jax_mlp_small");
            std::fs::create_dir_all(&session)
                .with_context(|| format!("creating {}", session.display()))?;
            std::fs::write(session.join("vm.xplane.pb"), DEMO)
                .with_context(|| format!("writing the demo profile into {}", session.display()))?;
            (
                dir,
                "bundled demo: a real JAX CPU training profile (MLP, 10 steps)".to_string(),
            )
        }
    };
    // The CPU's peak FLOP rate and bandwidth (for CPU profiles' roofline tools) are measured once
    // per process: here, before any request or background warm-up competes for the cores.
    xlens_analysis::base::peaks::measure_host();
    let mut limits = xlens_server::Limits::default();
    if let Some(b) = memory_budget {
        limits.memory_budget = b;
    }
    if limits.memory_budget > 0 {
        eprintln!(
            "xlens: memory budget {:.1} GB (least recently used profiles are evicted past it; --memory-budget to change)",
            limits.memory_budget as f64 / 1e9
        );
    }
    let exposed = !bind.ip().is_loopback();
    if exposed && access.token.is_none() {
        eprintln!(
            "xlens: WARNING: no token (--no-auth): anyone who can reach {bind} sees the profiles"
        );
    }
    if exposed && access.capture == xlens_server::CapturePolicy::Exposed {
        eprintln!("xlens: capture allowed for visitors (--allow-capture); link-local and metadata addresses are refused");
    }
    // The URL to open: with the token, and a dialable host for an unspecified bind.
    let shown = if bind.ip().is_unspecified() {
        let lo: std::net::IpAddr = if bind.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        };
        SocketAddr::new(lo, bind.port())
    } else {
        bind
    };
    let url = match &access.token {
        Some(t) => format!("http://{shown}/?token={t}"),
        None => format!("http://{shown}/"),
    };
    let state = xlens_server::AppState::with_access(logdir, label, limits, access);
    state
        .cache
        .no_align
        .store(no_align, std::sync::atomic::Ordering::Relaxed);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .with_context(|| format!("cannot listen on {bind}"))?;
        if bind.ip().is_unspecified() {
            eprintln!(
                "xlens: listening on every interface ({bind}): use this machine's name or address in place of {}",
                shown.ip()
            );
        }
        eprintln!("xlens: serving {} on {url}", state.logdir.display());
        axum_serve(listener, state).await
    })
}

async fn axum_serve(listener: tokio::net::TcpListener, state: xlens_server::Shared) -> Result<()> {
    xlens_server::serve_on(listener, state)
        .await
        .context("server stopped")
}
