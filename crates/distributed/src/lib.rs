//! The reduce of a pod-scale analysis run distributed, on Apache DataFusion Ballista.
//!
//! The map is `xlens summarize` (one Parquet summary per host file, runnable by any scheduler);
//! the reduce is the SQL of `xlens sql`, the same DataFusion plan over the same listing tables,
//! here planned by a Ballista scheduler and executed by its executors. Three entry points:
//!
//! * [`query`]: a client session on a scheduler (`df://HOST:PORT`) with the summary tables
//!   registered, returning the result batches (`xlens sql --ballista URL`);
//! * [`scheduler`] and [`executor`]: Ballista's own scheduler and executor processes, with
//!   Ballista's command-line flags (`xlens ballista scheduler|executor ...`), so one xlens binary
//!   is the whole cluster.
//!
//! Executors read the tables' files themselves: local paths must be the same on every
//! executor (a shared file system), bucket URLs need the executors' credentials.

use std::ffi::OsString;
use std::sync::Arc;

use ballista::prelude::SessionContextExt;
use clap::Parser;
use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::SessionContext;
use xlens_sql::Table;

use ballista::datafusion;

#[derive(Debug, thiserror::Error)]
pub enum DistributedError {
    #[error("{0}")]
    Sql(#[from] xlens_sql::SqlError),
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("{0}")]
    Ballista(#[from] ballista_core::error::BallistaError),
    #[error("{0}")]
    Arguments(#[from] clap::Error),
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

fn runtime() -> Result<tokio::runtime::Runtime, DistributedError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Ballista's binaries use deep stacks for deeply nested plans.
        .thread_stack_size(32 * 1024 * 1024)
        .build()
        .map_err(DistributedError::Runtime)
}

/// Runs `sql` over `tables` on the Ballista cluster whose scheduler is at `url`
/// (`df://HOST:PORT`).
pub fn query(url: &str, sql: &str, tables: &[Table]) -> Result<Vec<RecordBatch>, DistributedError> {
    runtime()?.block_on(async {
        let ctx = SessionContext::remote(url).await?;
        xlens_sql::register(&ctx, tables).await?;
        Ok(ctx.sql(sql).await?.collect().await?)
    })
}

/// Logs to stderr at `RUST_LOG`'s level (default `default`).
fn logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // A second call (tests that start both in one process) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

/// Ballista's processes bind every interface unless told otherwise; xlens's bind loopback
/// unless `--bind-host` says where.
fn loopback_unless_told(args: Vec<OsString>) -> impl Iterator<Item = OsString> {
    let told = args.iter().any(|a| {
        a.to_str()
            .is_some_and(|a| a == "--bind-host" || a.starts_with("--bind-host="))
    });
    let default = if told {
        Vec::new()
    } else {
        vec![OsString::from("--bind-host"), OsString::from("127.0.0.1")]
    };
    default.into_iter().chain(args)
}

/// A Ballista scheduler with Ballista's flags (`args` without the program name), on loopback
/// unless `--bind-host` is given; runs until the process ends.
pub fn scheduler(args: Vec<OsString>) -> Result<(), DistributedError> {
    use ballista_scheduler::cluster::BallistaCluster;
    use ballista_scheduler::config::{Config, SchedulerConfig};
    let opt = Config::try_parse_from(
        std::iter::once(OsString::from("xlens ballista scheduler"))
            .chain(loopback_unless_told(args)),
    )?;
    logging(&opt.log_level_setting);
    let addr = format!("{}:{}", opt.bind_host, opt.bind_port);
    let addr = addr.parse().map_err(|e: std::net::AddrParseError| {
        ballista_core::error::BallistaError::Configuration(format!("{addr}: {e}"))
    })?;
    let config: SchedulerConfig = opt.try_into()?;
    runtime()?.block_on(async {
        let cluster = BallistaCluster::new_from_config(&config).await?;
        ballista_scheduler::scheduler_process::start_server(cluster, addr, Arc::new(config))
            .await?;
        Ok(())
    })
}

/// A Ballista executor with Ballista's flags (`args` without the program name), on loopback
/// unless `--bind-host` is given, working for the scheduler they name; runs until the process
/// ends.
pub fn executor(args: Vec<OsString>) -> Result<(), DistributedError> {
    use ballista_executor::config::Config;
    use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
    let opt = Config::try_parse_from(
        std::iter::once(OsString::from("xlens ballista executor"))
            .chain(loopback_unless_told(args)),
    )?;
    logging(&opt.log_level_setting);
    let config: ExecutorProcessConfig = opt.try_into()?;
    runtime()?.block_on(async { Ok(start_executor_process(Arc::new(config)).await?) })
}
