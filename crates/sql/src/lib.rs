//! SQL over the per-host summary tables (`docs/src/summary-tables.md`) with Apache DataFusion.
//!
//! Each table is registered as a DataFusion listing table over its Parquet files (one per
//! host: the cache's, the ones next to the profiles, or a folder that `xlens summarize`
//! wrote), so a query reads every host's rows as one table.

use std::path::PathBuf;
use std::sync::Arc;

pub use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::SessionContext;

#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("{0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error("table `{0}` has no files")]
    Empty(String),
    #[error("cannot start the query runtime: {0}")]
    Runtime(std::io::Error),
}

/// A table to register: its name and its Parquet files.
pub struct Table {
    pub name: String,
    pub files: Vec<PathBuf>,
}

fn url(p: &std::path::Path) -> Result<ListingTableUrl, SqlError> {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    Ok(ListingTableUrl::parse(abs.to_string_lossy())?)
}

/// A DataFusion session with `tables` registered.
pub async fn context(tables: &[Table]) -> Result<SessionContext, SqlError> {
    let ctx = SessionContext::new();
    register(&ctx, tables).await?;
    Ok(ctx)
}

/// Registers `tables` in `ctx`, a local session or a distributed engine's client session (the
/// same listing tables, so the same plan).
pub async fn register(ctx: &SessionContext, tables: &[Table]) -> Result<(), SqlError> {
    for t in tables {
        if t.files.is_empty() {
            return Err(SqlError::Empty(t.name.clone()));
        }
        let urls = t
            .files
            .iter()
            .map(|f| url(f))
            .collect::<Result<Vec<_>, _>>()?;
        let options =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let config = ListingTableConfig::new_with_multi_paths(urls)
            .with_listing_options(options)
            .infer_schema(&ctx.state())
            .await?;
        ctx.register_table(t.name.as_str(), Arc::new(ListingTable::try_new(config)?))?;
    }
    Ok(())
}

/// Runs `sql` over `tables` on a runtime of its own.
pub fn query(sql: &str, tables: &[Table]) -> Result<Vec<RecordBatch>, SqlError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(SqlError::Runtime)?;
    rt.block_on(async {
        let ctx = context(tables).await?;
        Ok(ctx.sql(sql).await?.collect().await?)
    })
}

/// The result as an aligned text table.
pub fn to_text(batches: &[RecordBatch]) -> Result<String, SqlError> {
    Ok(datafusion::arrow::util::pretty::pretty_format_batches(batches)?.to_string())
}

/// The result as CSV with a header.
pub fn to_csv(batches: &[RecordBatch]) -> Result<String, SqlError> {
    let mut buf = Vec::new();
    {
        let mut w = datafusion::arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(&mut buf);
        for b in batches {
            w.write(b)?;
        }
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The result as a JSON array of objects.
pub fn to_json(batches: &[RecordBatch]) -> Result<String, SqlError> {
    let mut w = datafusion::arrow::json::ArrayWriter::new(Vec::new());
    for b in batches {
        w.write(b)?;
    }
    w.finish()?;
    let buf = w.into_inner();
    Ok(if buf.is_empty() {
        "[]".to_string()
    } else {
        String::from_utf8_lossy(&buf).into_owned()
    })
}
