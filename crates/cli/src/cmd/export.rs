//! `xlens export --html`: one self-contained HTML file of a run, to attach to a bug or a pull
//! request.

use crate::open::{discover, named_session, open_run};
use anyhow::{Context, Result};
use std::path::PathBuf;

/// Write one self-contained HTML file of a run (report, overview, advice, op profile, HLO op
/// stats, memory viewer of the largest module, and the trace viewer over one window with its
/// events embedded) to attach to a bug or a pull request; it opens from disk without network.
#[derive(clap::Args)]
pub struct Args {
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
}

pub fn run(a: Args) -> Result<()> {
    let path = &a.path;
    let sessions = discover(path)?;
    let session = match &a.run {
        Some(r) => named_session(&sessions, r, path)?,
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
    let host = a.host.as_deref();
    let r = open_run(path, host, Some(&session.name))?;
    let opts = xlens_server::export::ExportOptions {
        window_ps: a.start_ps.zip(a.end_ps),
        max_events: a.max_events,
        max_details: a.max_details,
    };
    let e = xlens_server::export::export_html(session, &r, host, &opts)
        .map_err(|e| anyhow::anyhow!("cannot export {}: {e}", session.name))?;
    let out = &a.html;
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
    crate::out::exit_if_unread(&r);
    Ok(())
}
