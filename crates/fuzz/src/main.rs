//! `xlens-fuzz TARGET --execs N [--seed S] [--out DIR]`: fuzzes one target for N executions and
//! prints what it found (see the crate docs for how).

use anyhow::{bail, Context, Result};
use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;
use xlens_fuzz::engine::{fuzz, minimize, replay, Config, Report, Target};
use xlens_fuzz::targets::{chrome::ChromeTarget, query::QueryTarget, xspace::XSpaceTarget};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Which {
    Xspace,
    Chrome,
    Query,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Xspace => "xspace",
            Which::Chrome => "chrome",
            Which::Query => "query",
        }
    }
}

/// Fuzzes an xlens importer or the HTTP query parsers on stable Rust.
#[derive(Debug, Parser)]
#[command(name = "xlens-fuzz")]
struct Args {
    /// What to fuzz.
    target: Which,
    /// Executions to run (seeds included).
    #[arg(long, default_value_t = 100_000)]
    execs: u64,
    /// PRNG seed (the same seed replays the same run).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where crashing inputs go (default /tmp/xlens-fuzz-crashes/<target>/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The repository's fixtures folder (default: the one next to this crate).
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// Run the tools on every Nth decoded profile (0: never).
    #[arg(long, default_value_t = 16)]
    tools_every: u64,
    /// Query target: also parse every Nth tool request as command-line arguments (0: never).
    #[arg(long, default_value_t = 4)]
    cli_every: u64,
    /// Corpus size limit.
    #[arg(long, default_value_t = 4096)]
    max_corpus: usize,
    /// Instead of fuzzing: replay this input (or every file in this folder) through every path
    /// of the target and say whether it panics.
    #[arg(long, conflicts_with = "minimize")]
    replay: Option<PathBuf>,
    /// Instead of fuzzing: shrink this crashing input to a small one that panics at the same
    /// place, written next to it as `<file>.min`.
    #[arg(long)]
    minimize: Option<PathBuf>,
    /// With --minimize: keep the panic at this site (`crates/...rs:line:col`), not the first.
    #[arg(long)]
    site: Option<String>,
    /// Print the first N mutated inputs and what they did (debugging the harness).
    #[arg(long, default_value_t = 0)]
    show: u64,
    /// An execution that grows resident memory by more than this many MB is a finding (its
    /// input kept, like a panic's); 0: no check.
    #[arg(long, default_value_t = 256)]
    max_rss_growth_mb: u64,
    /// Stop the run (a finding) when resident memory passes this many MB.
    #[arg(long, default_value_t = 4096)]
    max_rss_mb: u64,
    /// An execution running longer than this many seconds is a hang: its input is saved and
    /// the run ends with exit code 3 (0: no watchdog).
    #[arg(long, default_value_t = 20)]
    timeout_s: u64,
    /// Seconds between progress lines (0: none).
    #[arg(long, default_value_t = 10)]
    progress: u64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let fixtures = args
        .fixtures
        .clone()
        .unwrap_or_else(xlens_fuzz::seeds::fixtures_dir);
    let cfg = Config {
        execs: args.execs,
        seed: args.seed,
        out: args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from("/tmp/xlens-fuzz-crashes").join(args.target.name())),
        progress: (args.progress > 0).then(|| Duration::from_secs(args.progress)),
        max_corpus: args.max_corpus,
        max_entry_len: xlens_fuzz::seeds::MAX_SEED,
        show: args.show,
        max_rss_growth: args.max_rss_growth_mb << 20,
        max_rss: args.max_rss_mb << 20,
        timeout: (args.timeout_s > 0).then(|| Duration::from_secs(args.timeout_s)),
    };
    let report = match args.target {
        Which::Xspace => dispatch(XSpaceTarget::new(&fixtures, args.tools_every)?, &args, &cfg)?,
        Which::Chrome => dispatch(ChromeTarget::new(&fixtures, args.tools_every)?, &args, &cfg)?,
        Which::Query => dispatch(QueryTarget::new(&fixtures, args.cli_every)?, &args, &cfg)?,
    };
    let Some(report) = report else {
        return Ok(());
    };
    print(&report, &cfg);
    if !report.crashes.is_empty() {
        bail!(
            "{} distinct panic(s); inputs in {}",
            report.crashes.len(),
            cfg.out.display()
        );
    }
    Ok(())
}

/// Fuzzes, or replays or minimizes when asked to (then `None`).
fn dispatch<T: Target>(mut target: T, args: &Args, cfg: &Config) -> Result<Option<Report>> {
    if let Some(path) = &args.replay {
        let files = if path.is_dir() {
            xlens_fuzz::seeds::files_under(path, &|_| true)?
        } else {
            vec![path.clone()]
        };
        let mut failed = 0;
        for f in &files {
            let input = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
            let panics = replay(&mut target, &input);
            if panics.is_empty() {
                println!("ok     {}", f.display());
            } else {
                failed += 1;
                println!("PANIC  {}: {}", f.display(), panics.join(" | "));
            }
        }
        if failed > 0 {
            bail!("{failed} of {} input(s) panic", files.len());
        }
        return Ok(None);
    }
    if let Some(path) = &args.minimize {
        let input = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let Some((small, panics)) = minimize(&mut target, &input, args.site.as_deref()) else {
            bail!("{} does not panic (there)", path.display());
        };
        let mut out = path.clone().into_os_string();
        out.push(".min");
        std::fs::write(&out, &small)?;
        println!(
            "{} bytes -> {} bytes ({}): {}",
            input.len(),
            small.len(),
            PathBuf::from(out).display(),
            panics.join(" | ")
        );
        return Ok(None);
    }
    Ok(Some(run(target, cfg)))
}

fn run<T: Target>(mut target: T, cfg: &Config) -> Report {
    eprintln!(
        "[{}] {} seeds; {} execs from seed {}",
        target.name(),
        target.seeds().len(),
        cfg.execs,
        cfg.seed
    );
    fuzz(&mut target, cfg)
}

fn print(r: &Report, cfg: &Config) {
    for c in &r.crashes {
        println!(
            "panic x{}: {}\n  input ({} bytes): {}",
            c.count,
            c.message,
            c.input_len,
            c.input
                .as_deref()
                .map_or("(not saved)".into(), |p| p.display().to_string())
        );
    }
    println!(
        "target={} execs={} secs={:.1} execs/s={:.0} panics={} distinct_panics={} seeds={} corpus={} signatures={} slowest_ms={:.1} (input {} bytes: {}) seed={}",
        r.target,
        r.execs,
        r.elapsed.as_secs_f64(),
        r.execs_per_sec(),
        r.panics(),
        r.crashes.len(),
        r.seeds,
        r.corpus,
        r.signatures,
        r.slowest.as_secs_f64() * 1e3,
        r.slowest_len,
        r.slowest_input
            .as_deref()
            .map_or("-".into(), |p| p.display().to_string()),
        cfg.seed
    );
}
