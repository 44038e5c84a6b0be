//! A path on the command line as the tools see it: its sessions, and the run they make with
//! each host file memory-mapped and decoded on first use.

use anyhow::{bail, Result};
use std::path::Path;
use std::sync::Arc;
use xlens_analysis::base::context::{Analysis, Run};
use xlens_analysis::tools;
use xlens_loader::Reads;
use xlens_store::Session;

/// The sessions below `path` (a log directory, session, profile file or bucket URL).
pub fn discover(path: &Path) -> Result<Vec<Session>> {
    Ok(xlens_store::discover(path)?)
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
    Ok(run_of(select_sessions(path, host, run)?, reads))
}

/// The sessions below `path` that `run` and `host` select (every one when `None`).
pub fn select_sessions(path: &Path, host: Option<&str>, run: Option<&str>) -> Result<Vec<Session>> {
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
    Ok(tools::select_host(&sessions, host)?)
}

/// A run over `sessions`, each host file read as a command reads it for a tool that needs
/// `reads`.
pub fn run_of(sessions: Vec<Session>, reads: Reads) -> Run {
    Run::new(sessions, move |h| {
        xlens_loader::open(h, xlens_loader::Policy::command(reads))
            .map(|p| Arc::new(Analysis::new(Arc::new(p))))
            .map_err(|e| e.to_string())
    })
}

/// The session named `run` below `path`, or an error listing the runs there.
pub fn named_session<'a>(sessions: &'a [Session], run: &str, path: &Path) -> Result<&'a Session> {
    match sessions.iter().find(|s| s.name == run) {
        Some(s) => Ok(s),
        None => bail!(
            "no run `{run}` below {}; runs: {}",
            path.display(),
            sessions
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
