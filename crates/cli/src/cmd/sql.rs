//! `xlens sql`: SQL over the per-host summary tables, with DataFusion in this process or on a
//! Ballista cluster (each behind its feature).

use crate::out::Format;
use crate::summaries;
use anyhow::{Context, Result};
use std::path::PathBuf;
use xlens_store::Session;

/// SQL over the per-host summary tables (hosts, steps, step_breakdown, ops, modules; see
/// docs/src/summary-tables.md) with Apache DataFusion embedded. Each PATH is a folder of
/// summaries (what `xlens summarize --out` or `--write-summaries` wrote) or a log
/// directory / session, whose hosts are summarised first (cached). Needs a build with
/// `--features sql`.
#[derive(clap::Args)]
pub struct Args {
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
}

/// The tables' files, from summary folders as they are and from profiles through the summary
/// cache; then the query.
pub fn run(a: Args) -> Result<()> {
    let mut files: Vec<(&'static str, Vec<PathBuf>)> = xlens_tables::TABLES
        .iter()
        .map(|t| (*t, Vec::new()))
        .collect();
    for p in &a.paths {
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
        let mut sessions = crate::open::discover(p)?;
        if let Some(r) = &a.run {
            sessions.retain(|s| &s.name == r);
        }
        summaries::check_hosts(&sessions, p)?;
        let cache = summaries::SummaryCache {
            dir: Some(summaries::SummaryCache::default_dir()),
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
        let plan = summaries::plan(a.jobs, &missing);
        let (done, _) = summaries::summarize(&missing, plan.jobs, &cache);
        for s in done.iter().filter(|s| s.error.is_some()) {
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
    query(&a.query, files, a.format, a.ballista.as_deref())
}

#[cfg(feature = "sql")]
fn query(
    query: &str,
    files: Vec<(&'static str, Vec<PathBuf>)>,
    format: Format,
    ballista: Option<&str>,
) -> Result<()> {
    use anyhow::bail;
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
        Some(url) => distributed(url, query, &tables).map_err(|e| {
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
    crate::out::write_stdout(&out)
}

#[cfg(feature = "distributed")]
fn distributed(
    url: &str,
    query: &str,
    tables: &[xlens_sql::Table],
) -> Result<Vec<xlens_sql::RecordBatch>> {
    Ok(xlens_distributed::query(url, query, tables)?)
}

#[cfg(all(feature = "sql", not(feature = "distributed")))]
fn distributed(_: &str, _: &str, _: &[xlens_sql::Table]) -> Result<Vec<xlens_sql::RecordBatch>> {
    anyhow::bail!("this xlens was built without Ballista: build it with `cargo build --release -p xlens --features distributed`")
}

#[cfg(not(feature = "sql"))]
fn query(_: &str, _: Vec<(&'static str, Vec<PathBuf>)>, _: Format, _: Option<&str>) -> Result<()> {
    anyhow::bail!("this xlens was built without SQL: build it with `cargo build --release -p xlens --features sql` (Apache DataFusion)")
}
