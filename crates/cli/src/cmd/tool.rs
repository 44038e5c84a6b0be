//! `xlens tool NAME PATH`: one tool of the registry, with the common arguments and the tool's
//! own parameters, printed as text, JSON or CSV.

use crate::answers;
use crate::out::{exit_if_unread, print_bounded, Format};
use anyhow::{bail, Result};
use std::path::PathBuf;
use xlens_analysis::tools;

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
    /// At most this many rows in each table of the answer (JSON: each array of objects; CSV:
    /// rows below the header). The JSON's `bounded` object says what was left out.
    #[arg(long, value_name = "N")]
    max_rows: Option<usize>,
    /// At most this many bytes of output: JSON rows are halved until it fits (its `bounded`
    /// object says what was left out and whether it fits); text and CSV keep the whole lines
    /// that fit.
    #[arg(long, value_name = "BYTES")]
    max_bytes: Option<usize>,
    /// Compute the answer even when the same question was answered before over unchanged
    /// files (kept answers are reused otherwise; `XLENS_NO_ANSWER_CACHE=1` turns that off).
    #[arg(long)]
    fresh: bool,
}

/// The `tool` command: one subcommand per tool of the registry, each with the common arguments
/// and the tool's own parameters.
pub fn command() -> clap::Command {
    let mut c = clap::Command::new("tool")
        .about("Run one tool (what the server serves) and print its output.")
        .subcommand_required(true)
        .subcommand_value_name("TOOL")
        // An unknown name reaches `run`, which lists the tools.
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

/// Runs the tool that `m` (the `tool` command's matches) names.
pub fn run(m: &clap::ArgMatches) -> Result<()> {
    let Some((name, m)) = m.subcommand() else {
        bail!("name a tool; `xlens tools` lists them");
    };
    let tool = tools::find(name)?;
    let common =
        <ToolCommon as clap::FromArgMatches>::from_arg_matches(m).unwrap_or_else(|e| e.exit());
    let sessions =
        crate::open::select_sessions(&common.path, common.host.as_deref(), common.run.as_deref())?;
    let f = common.format.unwrap_or(if common.json {
        Format::Json
    } else {
        Format::Text
    });
    // The same question over the same files: the answer printed before. Not for a bounded
    // text or CSV answer, whose note of what was left out goes to stderr (a bounded JSON answer
    // says it inside).
    let bounded_text =
        f != Format::Json && (common.max_rows.is_some() || common.max_bytes.is_some());
    let key = (answers::enabled() && !common.fresh && !bounded_text)
        .then(|| answers::key(crate::ARGS.get().map_or(&[][..], |a| &a[..]), &sessions))
        .flatten();
    if let Some(k) = &key {
        if let Some(bytes) = answers::get(k) {
            return crate::out::write_stdout_bytes(&bytes);
        }
    }
    let run = crate::open::run_of(sessions, tool.info().reads);
    let out = tool.run_args(&run, m)?;
    let mut whole = true;
    for h in &run.hosts {
        if let Some(note) = h
            .analysis
            .as_ref()
            .ok()
            .and_then(|a| a.profile().partial_read.clone())
        {
            whole = false;
            eprintln!("xlens: {}: read for {name}: {note}", h.path().display());
        }
    }
    let bounds = tools::Bounds {
        rows: common.max_rows,
        bytes: common.max_bytes,
    };
    let read = run.hosts.iter().all(|h| h.analysis.is_ok());
    if let Some(k) = key.filter(|_| whole && read) {
        answers::record(k);
    }
    let printed = print_bounded(name, &out, f, bounds);
    answers::finish(printed.is_ok());
    printed?;
    exit_if_unread(&run);
    // The process ends next: freeing the profile and its analyses block by block would only
    // cost time (on the 207 MB profile's HLO modules, a tenth of `hlo_modules`).
    std::mem::forget(run);
    Ok(())
}
