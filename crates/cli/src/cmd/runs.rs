//! `xlens runs`: the sessions below a path, newest first, each with its hosts' files, sizes and
//! formats, without reading any profile.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;

/// List the sessions (runs) below PATH and their host files with sizes and times, without
/// reading any profile (a bucket is only listed).
#[derive(clap::Args)]
pub struct Args {
    /// A log directory or session directory, local or a gs://, s3://, az:// URL.
    path: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    let sessions = crate::open::discover(&a.path)?;
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
    let r = if a.json {
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
