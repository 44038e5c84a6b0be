//! Per-host summaries ([`HostSummary`]) as six Parquet tables that any engine reads (DataFusion
//! in `xlens sql`, pandas, DuckDB, Spark), and back.
//!
//! One host file gives one Parquet file per table; a run's table is the union of its hosts'
//! files (a folder per table: `<dir>/<table>/<host>.parquet`). Every table starts with
//! `session` and `host`, so the files of many hosts and sessions can be read as one table. The
//! schema is in `docs/src/summary-tables.md`; [`SCHEMA_VERSION`] is written in `hosts`.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use xlens_analysis::base::hosts::summary::{
    HostSummary, ModuleSummary, OpSummary, SharedText, SUMMARY_VERSION,
};
use xlens_analysis::base::steps::step_db::{StepModel, StepRow, N_CATEGORIES};

/// The tables, in the order [`to_parquet`] returns them.
pub const TABLES: [&str; 6] = [
    "hosts",
    "steps",
    "step_breakdown",
    "ops",
    "modules",
    "collective_ends",
];

/// The version of the tables' schema, in `hosts.schema_version` (the summary's version: a
/// change of either makes cached summaries stale).
pub const SCHEMA_VERSION: u32 = SUMMARY_VERSION;

#[derive(Debug, thiserror::Error)]
pub enum TablesError {
    #[error("Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("Arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("table `{table}`: {what}")]
    Shape { table: &'static str, what: String },
}

fn utf8(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

fn i64f(name: &str) -> Field {
    Field::new(name, DataType::Int64, false)
}

/// The schema of `table` (one of [`TABLES`]).
pub fn schema(table: &str) -> Option<SchemaRef> {
    let key = [utf8("session", false), utf8("host", false)];
    let rest: Vec<Field> = match table {
        "hosts" => vec![
            utf8("file", false),
            Field::new("file_bytes", DataType::UInt64, false),
            utf8("error", true),
            utf8("device_kind", false),
            utf8("device_model", false),
            Field::new("devices", DataType::UInt32, false),
            Field::new("devices_active", DataType::UInt32, false),
            Field::new("origin_ns", DataType::Int64, true),
            Field::new("origin_ps_of_ns", DataType::Int64, true),
            Field::new("span_begin_ps", DataType::Int64, true),
            Field::new("span_end_ps", DataType::Int64, true),
            Field::new("dropped_edges", DataType::Boolean, false),
            Field::new("schema_version", DataType::UInt32, false),
        ],
        "steps" => vec![
            utf8("step", false),
            Field::new("step_index", DataType::UInt32, false),
            i64f("group_id"),
            Field::new("xprof", DataType::Boolean, false),
            i64f("begin_ps"),
            i64f("duration_ps"),
        ],
        "step_breakdown" => vec![
            utf8("step", false),
            Field::new("step_index", DataType::UInt32, false),
            utf8("category", false),
            i64f("ps"),
        ],
        "ops" => vec![
            utf8("program", false),
            utf8("op", false),
            utf8("category", false),
            Field::new("occurrences", DataType::UInt64, false),
            i64f("total_time_ps"),
            i64f("self_time_ps"),
            Field::new("flops", DataType::Float64, false),
            Field::new("bytes_accessed", DataType::Float64, false),
        ],
        "modules" => vec![
            utf8("module", false),
            Field::new("program_id", DataType::UInt64, true),
            i64f("memory_space"),
            i64f("peak_heap_bytes"),
            i64f("peak_temp_heap_bytes"),
            i64f("indefinite_bytes"),
        ],
        "collective_ends" => vec![utf8("collective", false), i64f("end_ps")],
        _ => return None,
    };
    Some(Arc::new(Schema::new(
        key.into_iter().chain(rest).collect::<Vec<_>>(),
    )))
}

fn batch(table: &'static str, columns: Vec<ArrayRef>) -> Result<RecordBatch, TablesError> {
    let schema = schema(table).ok_or(TablesError::Shape {
        table,
        what: "unknown table".into(),
    })?;
    Ok(RecordBatch::try_new(schema, columns)?)
}

fn repeat(v: &str, n: usize) -> ArrayRef {
    Arc::new(StringArray::from(vec![v; n]))
}

/// The summary as one record batch per table, in [`TABLES`] order.
pub fn to_batches(s: &HostSummary) -> Result<Vec<(&'static str, RecordBatch)>, TablesError> {
    let key = |n: usize| (repeat(&s.session, n), repeat(&s.host, n));
    let mut out = Vec::with_capacity(TABLES.len());

    let (se, ho) = key(1);
    out.push((
        "hosts",
        batch(
            "hosts",
            vec![
                se,
                ho,
                repeat(&s.file, 1),
                Arc::new(UInt64Array::from(vec![s.file_bytes])),
                Arc::new(StringArray::from(vec![s.error.as_deref()])),
                repeat(&s.device_kind, 1),
                repeat(&s.device_model, 1),
                Arc::new(UInt32Array::from(vec![s.devices])),
                Arc::new(UInt32Array::from(vec![s.devices_active])),
                Arc::new(Int64Array::from(vec![s
                    .origin_ps
                    .and_then(|o| i64::try_from(o.div_euclid(1000)).ok())])),
                Arc::new(Int64Array::from(vec![s
                    .origin_ps
                    .map(|o| o.rem_euclid(1000) as i64)])),
                Arc::new(Int64Array::from(vec![s.span_ps.map(|x| x.0)])),
                Arc::new(Int64Array::from(vec![s.span_ps.map(|x| x.1)])),
                Arc::new(BooleanArray::from(vec![s.dropped_edges])),
                Arc::new(UInt32Array::from(vec![SCHEMA_VERSION])),
            ],
        )?,
    ));

    let n = s.steps.len();
    let skip = usize::from(s.dropped_edges && n > 2);
    let (se, ho) = key(n);
    let mut step = StringBuilder::new();
    let mut idx = UInt32Builder::new();
    let mut gid = Int64Builder::new();
    let mut xp = BooleanBuilder::new();
    let mut begin = Int64Builder::new();
    let mut dur = Int64Builder::new();
    for (i, r) in s.steps.iter().enumerate() {
        step.append_value(&r.name);
        idx.append_value(u32::try_from(i).unwrap_or(u32::MAX));
        gid.append_value(r.group_id);
        xp.append_value(i >= skip && i + skip < n);
        begin.append_value(r.begin_ps);
        dur.append_value(r.duration_ps);
    }
    out.push((
        "steps",
        batch(
            "steps",
            vec![
                se,
                ho,
                Arc::new(step.finish()),
                Arc::new(idx.finish()),
                Arc::new(gid.finish()),
                Arc::new(xp.finish()),
                Arc::new(begin.finish()),
                Arc::new(dur.finish()),
            ],
        )?,
    ));

    let mut step = StringBuilder::new();
    let mut idx = UInt32Builder::new();
    let mut cat = StringBuilder::new();
    let mut ps = Int64Builder::new();
    let mut rows = 0;
    for (i, r) in s.steps.iter().enumerate() {
        for (c, v) in s.step_model.categories().iter().zip(r.breakdown()) {
            step.append_value(&r.name);
            idx.append_value(u32::try_from(i).unwrap_or(u32::MAX));
            cat.append_value(c.id);
            ps.append_value(*v);
            rows += 1;
        }
    }
    let (se, ho) = key(rows);
    out.push((
        "step_breakdown",
        batch(
            "step_breakdown",
            vec![
                se,
                ho,
                Arc::new(step.finish()),
                Arc::new(idx.finish()),
                Arc::new(cat.finish()),
                Arc::new(ps.finish()),
            ],
        )?,
    ));

    let (se, ho) = key(s.ops.len());
    let mut program = StringBuilder::new();
    let mut op = StringBuilder::new();
    let mut cat = StringBuilder::new();
    let mut occ = UInt64Builder::new();
    let mut total = Int64Builder::new();
    let mut selft = Int64Builder::new();
    let mut flops = Float64Builder::new();
    let mut bytes = Float64Builder::new();
    for o in &s.ops {
        program.append_value(&o.program);
        op.append_value(&o.name);
        cat.append_value(&o.category);
        occ.append_value(o.occurrences);
        total.append_value(o.total_time_ps);
        selft.append_value(o.self_time_ps);
        flops.append_value(o.flops);
        bytes.append_value(o.bytes_accessed);
    }
    out.push((
        "ops",
        batch(
            "ops",
            vec![
                se,
                ho,
                Arc::new(program.finish()),
                Arc::new(op.finish()),
                Arc::new(cat.finish()),
                Arc::new(occ.finish()),
                Arc::new(total.finish()),
                Arc::new(selft.finish()),
                Arc::new(flops.finish()),
                Arc::new(bytes.finish()),
            ],
        )?,
    ));

    let (se, ho) = key(s.modules.len());
    let m = &s.modules;
    out.push((
        "modules",
        batch(
            "modules",
            vec![
                se,
                ho,
                Arc::new(StringArray::from_iter_values(m.iter().map(|m| &m.module))),
                Arc::new(UInt64Array::from_iter(m.iter().map(|m| m.program_id))),
                Arc::new(Int64Array::from_iter_values(
                    m.iter().map(|m| m.memory_space),
                )),
                Arc::new(Int64Array::from_iter_values(
                    m.iter().map(|m| m.peak_heap_bytes),
                )),
                Arc::new(Int64Array::from_iter_values(
                    m.iter().map(|m| m.peak_temp_heap_bytes),
                )),
                Arc::new(Int64Array::from_iter_values(
                    m.iter().map(|m| m.indefinite_bytes),
                )),
            ],
        )?,
    ));

    let (se, ho) = key(s.collective_ends.len());
    let c = &s.collective_ends;
    out.push((
        "collective_ends",
        batch(
            "collective_ends",
            vec![
                se,
                ho,
                Arc::new(StringArray::from_iter_values(c.iter().map(|c| &c.0))),
                Arc::new(Int64Array::from_iter_values(c.iter().map(|c| c.1))),
            ],
        )?,
    ));
    Ok(out)
}

/// The summary as one Parquet file (bytes) per table, in [`TABLES`] order.
pub fn to_parquet(s: &HostSummary) -> Result<Vec<(&'static str, Vec<u8>)>, TablesError> {
    to_batches(s)?
        .into_iter()
        .map(|(t, b)| {
            let mut buf = Vec::new();
            let mut w = ArrowWriter::try_new(&mut buf, b.schema(), None)?;
            w.write(&b)?;
            w.close()?;
            Ok((t, buf))
        })
        .collect()
}

/// Every row of one table's Parquet file, as one batch.
fn read_table(table: &'static str, bytes: Vec<u8>) -> Result<RecordBatch, TablesError> {
    let want = schema(table).ok_or(TablesError::Shape {
        table,
        what: "unknown table".into(),
    })?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))?.build()?;
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    let b = arrow_select_concat(&want, &batches)?;
    if b.schema().fields() != want.fields() {
        return Err(TablesError::Shape {
            table,
            what: format!("columns {:?}, expected {:?}", b.schema(), want),
        });
    }
    Ok(b)
}

/// The batches of one file joined (a summary table is written as one batch; a file written by
/// another tool may hold several).
fn arrow_select_concat(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<RecordBatch, TablesError> {
    match batches {
        [] => Ok(RecordBatch::new_empty(schema.clone())),
        [b] => Ok(b.clone()),
        many => {
            let columns = (0..schema.fields().len())
                .map(|c| {
                    let parts: Vec<&dyn Array> =
                        many.iter().map(|b| b.column(c).as_ref()).collect();
                    arrow_select::concat::concat(&parts)
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RecordBatch::try_new(many[0].schema(), columns)?)
        }
    }
}

fn col<'a, T: 'static>(
    b: &'a RecordBatch,
    table: &'static str,
    name: &str,
) -> Result<&'a T, TablesError> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or(TablesError::Shape {
            table,
            what: format!("no column `{name}` of the expected type"),
        })
}

fn text(a: &StringArray, i: usize) -> String {
    a.value(i).to_string()
}

/// A summary back from its tables' Parquet files (`read(table)` gives the bytes of each).
pub fn from_parquet(
    read: impl FnMut(&'static str) -> std::io::Result<Vec<u8>>,
) -> Result<HostSummary, TablesError> {
    from_parquet_sharing(read, &SharedText::default())
}

/// [`from_parquet`], the ops' texts taken from (and added to) `shared`, as the other hosts of
/// a run read back do.
pub fn from_parquet_sharing(
    mut read: impl FnMut(&'static str) -> std::io::Result<Vec<u8>>,
    shared: &SharedText,
) -> Result<HostSummary, TablesError> {
    let io = |table: &'static str, e: std::io::Error| TablesError::Shape {
        table,
        what: e.to_string(),
    };
    let mut get = |t: &'static str| -> Result<RecordBatch, TablesError> {
        read_table(t, read(t).map_err(|e| io(t, e))?)
    };
    let h = get("hosts")?;
    if h.num_rows() != 1 {
        return Err(TablesError::Shape {
            table: "hosts",
            what: format!("{} rows, expected 1", h.num_rows()),
        });
    }
    let t = "hosts";
    let version = col::<UInt32Array>(&h, t, "schema_version")?.value(0);
    if version != SCHEMA_VERSION {
        return Err(TablesError::Shape {
            table: t,
            what: format!("schema version {version}, this xlens writes {SCHEMA_VERSION}"),
        });
    }
    let error = col::<StringArray>(&h, t, "error")?;
    let origin = col::<Int64Array>(&h, t, "origin_ns")?;
    let origin_frac = col::<Int64Array>(&h, t, "origin_ps_of_ns")?;
    let (span_b, span_e) = (
        col::<Int64Array>(&h, t, "span_begin_ps")?,
        col::<Int64Array>(&h, t, "span_end_ps")?,
    );
    let mut s = HostSummary {
        session: text(col(&h, t, "session")?, 0),
        host: text(col(&h, t, "host")?, 0),
        file: text(col(&h, t, "file")?, 0),
        file_bytes: col::<UInt64Array>(&h, t, "file_bytes")?.value(0),
        error: error.is_valid(0).then(|| text(error, 0)),
        device_kind: text(col(&h, t, "device_kind")?, 0),
        device_model: text(col(&h, t, "device_model")?, 0),
        devices: col::<UInt32Array>(&h, t, "devices")?.value(0),
        devices_active: col::<UInt32Array>(&h, t, "devices_active")?.value(0),
        origin_ps: origin.is_valid(0).then(|| {
            i128::from(origin.value(0)) * 1000 + i128::from(origin_frac.value(0).clamp(0, 999))
        }),
        span_ps: (span_b.is_valid(0) && span_e.is_valid(0))
            .then(|| (span_b.value(0), span_e.value(0))),
        dropped_edges: col::<BooleanArray>(&h, t, "dropped_edges")?.value(0),
        steps: Vec::new(),
        step_model: StepModel::Xprof,
        ops: Vec::new(),
        modules: Vec::new(),
        collective_ends: Vec::new(),
    };

    let t = "steps";
    let b = get(t)?;
    let (name, gid, begin, dur) = (
        col::<StringArray>(&b, t, "step")?,
        col::<Int64Array>(&b, t, "group_id")?,
        col::<Int64Array>(&b, t, "begin_ps")?,
        col::<Int64Array>(&b, t, "duration_ps")?,
    );
    let idx = col::<UInt32Array>(&b, t, "step_index")?;
    for i in 0..b.num_rows() {
        if idx.value(i) as usize != i {
            return Err(TablesError::Shape {
                table: t,
                what: format!("row {i} has step_index {}", idx.value(i)),
            });
        }
        s.steps.push(StepRow::from_breakdown(
            gid.value(i),
            text(name, i),
            begin.value(i),
            dur.value(i),
            [0; N_CATEGORIES],
        ));
    }

    let t = "step_breakdown";
    let b = get(t)?;
    let (idx, cat, ps) = (
        col::<UInt32Array>(&b, t, "step_index")?,
        col::<StringArray>(&b, t, "category")?,
        col::<Int64Array>(&b, t, "ps")?,
    );
    for i in 0..b.num_rows() {
        // The step model is the one whose columns these are (XProf's and the PyTorch plugin's
        // share only `other`).
        if StepModel::of_category(cat.value(i)) == Some(StepModel::Pytorch) {
            s.step_model = StepModel::Pytorch;
        }
        let step = s.steps.get_mut(idx.value(i) as usize);
        let c = s
            .step_model
            .categories()
            .iter()
            .position(|c| c.id == cat.value(i));
        match (step, c) {
            (Some(step), Some(c)) => step.breakdown_ps[c] = ps.value(i),
            _ => {
                return Err(TablesError::Shape {
                    table: t,
                    what: format!(
                        "row {i}: step {} / category `{}` unknown",
                        idx.value(i),
                        cat.value(i)
                    ),
                })
            }
        }
    }
    let columns = s.step_model.categories().len();
    for r in &mut s.steps {
        r.columns = u8::try_from(columns).unwrap_or(u8::MAX);
    }

    let t = "ops";
    let b = get(t)?;
    let (program, op, cat) = (
        col::<StringArray>(&b, t, "program")?,
        col::<StringArray>(&b, t, "op")?,
        col::<StringArray>(&b, t, "category")?,
    );
    let (occ, total, selft) = (
        col::<UInt64Array>(&b, t, "occurrences")?,
        col::<Int64Array>(&b, t, "total_time_ps")?,
        col::<Int64Array>(&b, t, "self_time_ps")?,
    );
    let (flops, bytes) = (
        col::<Float64Array>(&b, t, "flops")?,
        col::<Float64Array>(&b, t, "bytes_accessed")?,
    );
    s.ops = (0..b.num_rows())
        .map(|i| OpSummary {
            program: shared.get(program.value(i)),
            name: shared.get(op.value(i)),
            category: shared.get(cat.value(i)),
            occurrences: occ.value(i),
            total_time_ps: total.value(i),
            self_time_ps: selft.value(i),
            flops: flops.value(i),
            bytes_accessed: bytes.value(i),
        })
        .collect();

    let t = "modules";
    let b = get(t)?;
    let (module, pid, space) = (
        col::<StringArray>(&b, t, "module")?,
        col::<UInt64Array>(&b, t, "program_id")?,
        col::<Int64Array>(&b, t, "memory_space")?,
    );
    let (peak, temp, indef) = (
        col::<Int64Array>(&b, t, "peak_heap_bytes")?,
        col::<Int64Array>(&b, t, "peak_temp_heap_bytes")?,
        col::<Int64Array>(&b, t, "indefinite_bytes")?,
    );
    s.modules = (0..b.num_rows())
        .map(|i| ModuleSummary {
            module: text(module, i),
            program_id: pid.is_valid(i).then(|| pid.value(i)),
            memory_space: space.value(i),
            peak_heap_bytes: peak.value(i),
            peak_temp_heap_bytes: temp.value(i),
            indefinite_bytes: indef.value(i),
        })
        .collect();

    let t = "collective_ends";
    let b = get(t)?;
    let (name, end) = (
        col::<StringArray>(&b, t, "collective")?,
        col::<Int64Array>(&b, t, "end_ps")?,
    );
    s.collective_ends = (0..b.num_rows())
        .map(|i| (text(name, i), end.value(i)))
        .collect();
    Ok(s)
}

/// Writes the summary's tables below `dir`: `<dir>/<table>/<stem>.parquet`.
pub fn write_dir(s: &HostSummary, dir: &std::path::Path, stem: &str) -> Result<(), WriteError> {
    for (t, bytes) in to_parquet(s)? {
        let d = dir.join(t);
        std::fs::create_dir_all(&d).map_err(|e| WriteError::Io(d.clone(), e))?;
        let p = d.join(format!("{stem}.parquet"));
        // Written aside and renamed, so a reader never sees half a file.
        let tmp = d.join(format!(".{stem}.parquet.{}", std::process::id()));
        std::fs::write(&tmp, &bytes).map_err(|e| WriteError::Io(tmp.clone(), e))?;
        std::fs::rename(&tmp, &p).map_err(|e| WriteError::Io(p.clone(), e))?;
    }
    Ok(())
}

/// Reads what [`write_dir`] wrote.
pub fn read_dir(dir: &std::path::Path, stem: &str) -> Result<HostSummary, TablesError> {
    from_parquet(|t| std::fs::read(dir.join(t).join(format!("{stem}.parquet"))))
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Tables(#[from] TablesError),
    #[error("{0}: {1}")]
    Io(std::path::PathBuf, std::io::Error),
}
