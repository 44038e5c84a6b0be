//! `xlens diff`: two runs compared, with conditions a CI job can fail on.

use crate::out::{write_stdout, EXIT_UNREAD};
use anyhow::{Context, Result};
use clap::ValueEnum;
use std::path::PathBuf;
use xlens_analysis::compare::{self, cond, OpsScope};

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

/// Compare two runs: step time (with a 95% interval, so noise is not called a change),
/// breakdown, duty cycle, FLOP utilisation, ops added/removed/slower/faster, memory peaks.
/// Exit codes: 0 compared; 1 a --fail-if condition held; 2 compared but some host files
/// could not be read; 3 no comparison (bad path or condition).
#[derive(clap::Args)]
pub struct Args {
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
}

/// Prints the comparison and exits with its code (see [`Args`]).
pub fn run(a: Args) -> ! {
    match diff(&a) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("xlens: {e:#}");
            std::process::exit(3);
        }
    }
}

fn diff(a: &Args) -> Result<i32> {
    let f = a.format.unwrap_or(if a.json {
        DiffFormat::Json
    } else {
        DiffFormat::Text
    });
    let scope = match a.ops {
        OpsScopeArg::All => OpsScope::All,
        OpsScopeArg::FirstStep => OpsScope::FirstStep,
    };
    let conds = a
        .fail_if
        .iter()
        .map(|c| cond::parse(c))
        .collect::<Result<Vec<_>, _>>()?;
    let host = a.host.as_deref();
    let open = crate::open::open_run;
    let b = open(&a.base, host, a.base_run.as_deref())
        .with_context(|| format!("BASE {}", a.base.display()))?;
    let n = open(&a.new, host, a.new_run.as_deref())
        .with_context(|| format!("NEW {}", a.new.display()))?;
    let d = compare::diff(
        &a.base.display().to_string(),
        &b,
        &a.new.display().to_string(),
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
