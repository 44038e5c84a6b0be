//! `xlens mcp PATH`: the tools over the Model Context Protocol on stdin and stdout, for agent
//! harnesses that start a server per session. Over HTTP the same tools are at `/mcp` of
//! `xlens serve`.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// Serve the tools over MCP (stdio) for a log directory, session or profile file.
///
/// Each tool of `xlens tools` is an MCP tool of the same name (arguments: its parameters, `run`,
/// `host`, `max_rows`, `max_bytes`; answers bounded to 32,000 bytes unless `max_bytes` says
/// otherwise), and `runs` lists the runs. Runs stay loaded between calls. Over HTTP, `xlens
/// serve PATH` answers the same at `/mcp` (with its token when exposed).
#[derive(clap::Args)]
pub struct Args {
    /// A log directory, one session directory, one profile file, or a bucket URL.
    path: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    // A wrong path is the command's error, not every tool call's later.
    if xlens_store::bucket_url(&a.path).is_none() && !a.path.exists() {
        bail!("{}: does not exist", a.path.display());
    }
    xlens_server::ProfileCache::quiet();
    let label = a.path.display().to_string();
    let state = xlens_server::AppState::new(a.path, label);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(xlens_server::mcp::serve_stdio(state))
        .context("MCP on stdio")
}
