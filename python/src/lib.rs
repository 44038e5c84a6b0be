//! `xlens._native`: the Rust side of `import xlens`.
//!
//! * `main(argv)`: the `xlens` command line (the same code as the binary).
//! * `NativeRun`: a run opened once (host files memory-mapped and decoded, in parallel, with the
//!   GIL released), whose tools answer exactly what `xlens tool NAME --json` prints, and whose
//!   tables are Arrow record batches built from the tools' typed rows (no JSON on the way),
//!   handed to pyarrow through the Arrow C stream interface (`__arrow_c_stream__`), so the
//!   buffers are shared, not copied.
//! * `capture(...)`, `serve(...)`.
//!
//! Errors raise `ProfileError` (with `file` and `offset`), `CaptureError` (with `code` and
//! `kind`, as the CLI's exit codes) or `ToolError`; nothing unwinds into Python (a panic becomes
//! pyo3's `PanicException`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::types::UInt32Type;
use arrow_array::{
    ArrayRef, DictionaryArray, Int64Array, RecordBatch, RecordBatchIterator, StringArray,
    UInt16Array, UInt32Array,
};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use serde::Serialize;
use serde_arrow::schema::{SchemaLike, TracingOptions};
use xlens_analysis::base::context::{Analysis, Run};
use xlens_analysis::base::tool::PerHost;
use xlens_analysis::tools::{self, ToolOutput};
use xlens_store::{HostFile, Session};

pyo3::create_exception!(
    _native,
    ProfileError,
    PyException,
    "A profile file could not be read."
);
pyo3::create_exception!(_native, CaptureError, PyException, "A capture failed.");
pyo3::create_exception!(_native, ToolError, PyException, "A tool could not answer.");

/// The byte offset an importer's message names (`... at byte N ...`).
fn byte_offset(msg: &str) -> Option<u64> {
    let i = msg.find("at byte ")?;
    let digits: String = msg[i + 8..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

fn profile_error(py: Python<'_>, file: &str, msg: &str) -> PyErr {
    let e = ProfileError::new_err(msg.to_string());
    let v = e.value(py);
    let _ = v.setattr("file", file);
    let _ = v.setattr("offset", byte_offset(msg));
    e
}

fn tool_error(msg: impl Into<String>) -> PyErr {
    ToolError::new_err(msg.into())
}

/// Runs the command line on `argv` (program name first). Exits the process as the binary does
/// when a command ends with an exit code other than 0.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) {
    py.detach(|| xlens::main_from(argv));
}

/// A run: every host of one session (or of every session below a path).
#[pyclass(frozen)]
struct NativeRun {
    path: PathBuf,
    sessions: Vec<Session>,
    /// Every host file decoded, shared by the narrowed runs.
    analyses: HashMap<PathBuf, Result<Arc<Analysis>, String>>,
    all: Arc<Run>,
}

impl NativeRun {
    /// The run narrowed to `host` (every host when `None`).
    fn narrowed(&self, host: Option<&str>) -> PyResult<Arc<Run>> {
        let Some(h) = host else {
            return Ok(self.all.clone());
        };
        let sessions =
            tools::select_host(&self.sessions, Some(h)).map_err(|e| tool_error(e.to_string()))?;
        Ok(Arc::new(Run::new(sessions, |f: &HostFile| {
            self.analyses
                .get(&f.path)
                .cloned()
                .unwrap_or_else(|| Err(format!("{}: not loaded", f.path.display())))
        })))
    }

    fn output(
        &self,
        py: Python<'_>,
        name: &str,
        host: Option<&str>,
        params: Vec<(String, String)>,
    ) -> PyResult<ToolOutput> {
        let run = self.narrowed(host)?;
        let tool = tools::find(name).map_err(|e| tool_error(e.to_string()))?;
        py.detach(|| tool.run_query(&run, &params))
            .map_err(|e| tool_error(e.to_string()))
    }
}

/// `**params` as the query pairs the server and `run_query` take.
fn params_of(params: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    if let Some(d) = params {
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let value = if let Ok(b) = v.extract::<bool>() {
                b.to_string()
            } else {
                v.str()?.to_string()
            };
            out.push((key, value));
        }
    }
    Ok(out)
}

#[pymethods]
impl NativeRun {
    /// Opens `path` (a log directory, session directory or profile file; `run` narrows to one
    /// session). Raises ProfileError naming the first file that cannot be read unless
    /// `partial`, when those hosts are left out and listed by `errors`.
    #[new]
    #[pyo3(signature = (path, run=None, partial=false))]
    fn open(py: Python<'_>, path: PathBuf, run: Option<String>, partial: bool) -> PyResult<Self> {
        let opened = py.detach(|| xlens::open_run(&path, None, run.as_deref()));
        let all = opened
            .map_err(|e| profile_error(py, &path.display().to_string(), &format!("{e:#}")))?;
        if !partial {
            if let Some(h) = all.hosts.iter().find(|h| h.analysis.is_err()) {
                let msg = h.analysis.as_ref().err().cloned().unwrap_or_default();
                return Err(profile_error(py, &h.file.path.display().to_string(), &msg));
            }
        }
        let analyses = all
            .hosts
            .iter()
            .map(|h| (h.file.path.clone(), h.analysis.clone()))
            .collect();
        Ok(NativeRun {
            path,
            sessions: all.sessions.clone(),
            analyses,
            all: Arc::new(all),
        })
    }

    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// Session names.
    #[getter]
    fn sessions(&self) -> Vec<String> {
        self.sessions.iter().map(|s| s.name.clone()).collect()
    }

    /// Host names, in order.
    #[getter]
    fn hosts(&self) -> Vec<String> {
        self.all
            .hosts
            .iter()
            .map(|h| h.host().to_string())
            .collect()
    }

    /// (file, message) of each host file that could not be read.
    #[getter]
    fn errors(&self) -> Vec<(String, String)> {
        self.all
            .hosts
            .iter()
            .filter_map(|h| {
                h.analysis
                    .as_ref()
                    .err()
                    .map(|e| (h.file.path.display().to_string(), e.clone()))
            })
            .collect()
    }

    /// The tools that apply to this run.
    #[getter]
    fn tools(&self) -> Vec<&'static str> {
        self.sessions
            .iter()
            .flat_map(tools::tools_for)
            .map(|t| t.name)
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            })
    }

    /// What `xlens tool NAME --json` prints, as JSON text.
    #[pyo3(signature = (name, host=None, **params))]
    fn tool_json(
        &self,
        py: Python<'_>,
        name: &str,
        host: Option<&str>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        let out = self.output(py, name, host, params_of(params)?)?;
        py.detach(|| out.json_string(true))
            .map_err(|e| tool_error(e.to_string()))
    }

    /// What `xlens tool NAME` prints as text.
    #[pyo3(signature = (name, host=None, **params))]
    fn tool_text(
        &self,
        py: Python<'_>,
        name: &str,
        host: Option<&str>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        let out = self.output(py, name, host, params_of(params)?)?;
        Ok(py.detach(|| out.text()))
    }

    /// A table as an Arrow C stream (`pyarrow.table(...)` takes it without copying).
    #[pyo3(signature = (name, host=None, **params))]
    fn table_stream(
        &self,
        py: Python<'_>,
        name: &str,
        host: Option<&str>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<ArrowStream> {
        let params = params_of(params)?;
        let batch = match name {
            "trace_events" => {
                let run = self.narrowed(host)?;
                py.detach(|| trace_events(&run, &params))
            }
            "steps" => {
                let out = self.output(py, "overview_page", host, vec![])?;
                py.detach(|| steps(&out))
            }
            "memory_viewer" => {
                let mut params = params;
                if !params.iter().any(|(k, _)| k == "module") {
                    // The largest module, as the memory viewer page opens.
                    let out = self.output(py, "memory_viewer", host, params.clone())?;
                    if let Some(m) = largest_module(&out) {
                        params.push(("module".into(), m));
                    }
                }
                let out = self.output(py, "memory_viewer", host, params)?;
                py.detach(|| memory_buffers(&out))
            }
            "op_profile" | "hlo_stats" | "framework_op_stats" | "kernel_stats"
            | "pytorch_operators" | "pytorch_kernels" => {
                let out = self.output(py, name, host, params)?;
                py.detach(|| rows_table(name, &out))
            }
            other => {
                return Err(tool_error(format!(
                    "no table `{other}`; tables: {}",
                    TABLES.join(", ")
                )))
            }
        }
        .map_err(tool_error)?;
        Ok(ArrowStream {
            schema: batch.schema(),
            batches: std::sync::Mutex::new(Some(vec![batch])),
        })
    }
}

/// The tables `table()` makes.
const TABLES: &[&str] = &[
    "steps",
    "op_profile",
    "hlo_stats",
    "framework_op_stats",
    "kernel_stats",
    "pytorch_operators",
    "pytorch_kernels",
    "memory_viewer",
    "trace_events",
];

#[pyfunction]
fn tables() -> Vec<&'static str> {
    TABLES.to_vec()
}

fn arrow_err(e: impl std::fmt::Display) -> String {
    format!("building the table: {e}")
}

/// One batch from named columns.
fn batch(cols: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, String> {
    let fields: Vec<Field> = cols
        .iter()
        .map(|(n, a)| {
            Field::new(
                *n,
                a.data_type().clone(),
                a.null_count() > 0 || matches!(a.data_type(), DataType::Null),
            )
        })
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        cols.into_iter().map(|(_, a)| a).collect(),
    )
    .map_err(arrow_err)
}

/// `rows` (any serializable row type) as a batch, with a leading `host` column.
///
/// The columns come from the rows themselves, so a table without rows has only `host`.
fn serde_rows<T: Serialize>(hosts: Vec<&str>, rows: &[T]) -> Result<RecordBatch, String> {
    if rows.is_empty() {
        return batch(vec![(
            "host",
            Arc::new(StringArray::from(Vec::<&str>::new())) as ArrayRef,
        )]);
    }
    let opts = TracingOptions::default()
        .allow_null_fields(true)
        .enums_without_data_as_strings(true)
        .coerce_numbers(true);
    let fields = Vec::<arrow_schema::FieldRef>::from_samples(rows, opts).map_err(arrow_err)?;
    let b = serde_arrow::to_record_batch(&fields, &rows).map_err(arrow_err)?;
    let mut cols: Vec<(String, ArrayRef)> = vec![(
        "host".into(),
        Arc::new(StringArray::from(hosts)) as ArrayRef,
    )];
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        cols.push((f.name().clone(), c.clone()));
    }
    batch(cols.iter().map(|(n, a)| (n.as_str(), a.clone())).collect())
}

/// The rows `rows` finds in each host's answer of a per-host tool, as one table.
fn per_host_rows<T, R: Serialize>(
    out: Option<&PerHost<T>>,
    rows: impl Fn(&T) -> &Vec<R>,
) -> Result<RecordBatch, String> {
    let out = out.ok_or("the tool gave another output")?;
    let mut hosts = Vec::new();
    let mut all = Vec::new();
    for (h, s) in &out.hosts {
        if let Ok(s) = s {
            for row in rows(s) {
                hosts.push(h.as_str());
                all.push(row);
            }
        }
    }
    serde_rows(hosts, &all)
}

/// The row tables of tools whose output holds a list of rows per host.
fn rows_table(name: &str, out: &ToolOutput) -> Result<RecordBatch, String> {
    use xlens_analysis::tools::{framework_op_stats, hlo_stats, kernel_stats, op_profile, pytorch_views};
    match name {
        "hlo_stats" => {
            let r = out
                .get::<hlo_stats::HloStatsReport>()
                .ok_or("hlo_stats gave another output")?;
            let mut hosts = Vec::new();
            let mut rows = Vec::new();
            for h in &r.hosts {
                for row in &h.rows {
                    hosts.push(h.host.as_str());
                    rows.push(row);
                }
            }
            serde_rows(hosts, &rows)
        }
        "framework_op_stats" => per_host_rows(
            out.get::<PerHost<framework_op_stats::FrameworkOpStats>>(),
            |s| &s.ops,
        ),
        "kernel_stats" => per_host_rows(out.get::<PerHost<kernel_stats::KernelStats>>(), |s| {
            &s.kernels
        }),
        // The PyTorch TensorBoard plugin's views, grouped as `group_by` asks.
        "pytorch_operators" => per_host_rows(
            out.get::<PerHost<pytorch_views::Operators>>(),
            |s| &s.operators,
        ),
        "pytorch_kernels" => {
            let r = out
                .get::<PerHost<pytorch_views::Kernels>>()
                .ok_or("pytorch_kernels gave another output")?;
            if r.hosts
                .iter()
                .any(|(_, k)| k.as_ref().is_ok_and(|k| k.by_name_and_op.is_some()))
            {
                static NONE: Vec<xlens_analysis::base::pytorch::torch_views::KernelOpRow> = Vec::new();
                per_host_rows(Some(r), |k| k.by_name_and_op.as_ref().unwrap_or(&NONE))
            } else {
                static NONE: Vec<xlens_analysis::base::pytorch::torch_views::KernelRow> = Vec::new();
                per_host_rows(Some(r), |k| k.by_name.as_ref().unwrap_or(&NONE))
            }
        }
        "op_profile" => {
            let r = out
                .get::<op_profile::OpProfileReport>()
                .ok_or("op_profile gave another output")?;
            let mut rows = Vec::new();
            for h in &r.hosts {
                leaves(&h.by_program, None, &mut |program, n| {
                    let Some(op) = n.op.and_then(|i| h.ops.get(i)) else {
                        return;
                    };
                    rows.push(OpProfileRow {
                        host: &h.host,
                        program,
                        name: &n.name,
                        category: &op.category,
                        opcode: op.opcode.as_deref(),
                        provenance: op.provenance.as_deref(),
                        time_ps: n.metrics.time_ps,
                        self_time_ps: n.metrics.self_time_ps,
                        occurrences: n.metrics.occurrences,
                        flops: n.metrics.flops,
                        bytes_accessed: n.metrics.bytes_accessed,
                        hbm_bytes: n.metrics.hbm_bytes,
                        time_fraction: n.metrics.time_fraction,
                        percent_of_op_time: n.metrics.percent_of_op_time,
                        flop_rate_gflops: n.metrics.flop_rate_gflops,
                        hbm_bw_gibps: n.metrics.hbm_bw_gibps,
                        flops_utilization: n.metrics.flops_utilization,
                        hbm_utilization: n.metrics.hbm_utilization,
                        bound_by: n.metrics.bound_by,
                        wasted_time_fraction: n.metrics.wasted_time_fraction,
                        over_peak: n.metrics.over_peak.as_deref(),
                    });
                });
            }
            let opts = TracingOptions::default().allow_null_fields(true);
            let fields = Vec::<arrow_schema::FieldRef>::from_type::<OpProfileRow>(opts)
                .map_err(arrow_err)?;
            serde_arrow::to_record_batch(&fields, &rows).map_err(arrow_err)
        }
        _ => Err(format!("no table for {name}")),
    }
}

/// One op of the op profile (a leaf of its by-program tree) with its metrics.
#[derive(Serialize, serde::Deserialize)]
struct OpProfileRow<'a> {
    host: &'a str,
    program: &'a str,
    name: &'a str,
    category: &'a str,
    opcode: Option<&'a str>,
    provenance: Option<&'a str>,
    time_ps: i64,
    self_time_ps: i64,
    occurrences: u64,
    flops: f64,
    bytes_accessed: f64,
    hbm_bytes: f64,
    /// XProf's share: of op time plus IDLE.
    time_fraction: f64,
    /// The share every tool gives an op: of op time, IDLE left out.
    percent_of_op_time: Option<f64>,
    flop_rate_gflops: f64,
    hbm_bw_gibps: f64,
    flops_utilization: f64,
    hbm_utilization: f64,
    bound_by: &'a str,
    wasted_time_fraction: f64,
    over_peak: Option<&'a str>,
}

/// Calls `f` on every op leaf below `n`, with the program it is in.
fn leaves<'a>(
    n: &'a xlens_analysis::tools::op_profile::Node,
    program: Option<&'a str>,
    f: &mut impl FnMut(&'a str, &'a xlens_analysis::tools::op_profile::Node),
) {
    let program = if n.kind == "program" {
        Some(n.name.as_str())
    } else {
        program
    };
    if n.kind == "op" {
        f(program.unwrap_or(""), n);
    }
    for c in &n.children {
        leaves(c, program, f);
    }
}

/// The overview's steps (as XProf lists them) with a column per breakdown category.
fn steps(out: &ToolOutput) -> Result<RecordBatch, String> {
    let o = out
        .get::<xlens_analysis::tools::overview::Overview>()
        .ok_or("overview_page gave another output")?;
    let rows: Vec<(&str, &xlens_analysis::base::steps::step_db::StepRow)> = o
        .hosts
        .iter()
        .flat_map(|h| h.steps.rows.iter().map(move |r| (h.host.as_str(), r)))
        .collect();
    let mut cols: Vec<(String, ArrayRef)> = vec![
        (
            "host".into(),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
        ),
        (
            "step".into(),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.1.name.as_str()),
            )),
        ),
        (
            "group_id".into(),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.1.group_id),
            )),
        ),
        (
            "begin_ps".into(),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.1.begin_ps),
            )),
        ),
        (
            "duration_ps".into(),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.1.duration_ps),
            )),
        ),
    ];
    for (i, c) in o.categories.iter().enumerate() {
        cols.push((
            format!("{}_ps", c.id),
            Arc::new(Int64Array::from_iter_values(
                rows.iter()
                    .map(|r| r.1.breakdown_ps.get(i).copied().unwrap_or(0)),
            )),
        ));
    }
    batch(cols.iter().map(|(n, a)| (n.as_str(), a.clone())).collect())
}

fn largest_module(out: &ToolOutput) -> Option<String> {
    let r = out.get::<xlens_analysis::tools::memory_viewer::MemoryViewerReport>()?;
    r.hosts
        .iter()
        .filter_map(|h| h.viewer.as_ref()?.modules.first())
        .max_by_key(|m| m.peak_heap_bytes)
        .map(|m| m.name.clone())
}

/// The buffers live at the selected module's peak.
fn memory_buffers(out: &ToolOutput) -> Result<RecordBatch, String> {
    let r = out
        .get::<xlens_analysis::tools::memory_viewer::MemoryViewerReport>()
        .ok_or("memory_viewer gave another output")?;
    let mut hosts = Vec::new();
    let mut rows = Vec::new();
    for h in &r.hosts {
        if let Some(m) = h.viewer.as_ref().and_then(|v| v.selected.as_ref()) {
            for b in &m.peak_buffers {
                hosts.push(h.host.as_str());
                rows.push(b);
            }
        }
    }
    serde_rows(hosts, &rows)
}

/// Every trace event of a window (`start_ps`/`end_ps`, default the whole trace), none merged;
/// `host`, `group`, `line` and `name` are dictionary columns.
fn trace_events(run: &Run, params: &[(String, String)]) -> Result<RecordBatch, String> {
    let idx = run.trace_index()?;
    let num = |k: &str| -> Result<Option<i64>, String> {
        match params.iter().find(|(n, _)| n == k) {
            None => Ok(None),
            Some((_, v)) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("{k}=`{v}` is not a whole number of picoseconds")),
        }
    };
    for (k, _) in params {
        if k != "start_ps" && k != "end_ps" {
            return Err(format!("trace_events takes start_ps and end_ps, not `{k}`"));
        }
    }
    let start = num("start_ps")?.unwrap_or(idx.span.0);
    let end = num("end_ps")?.unwrap_or(idx.span.1);
    let vp = idx.query_all(start, end);
    // Names and tracks repeat: dictionary columns (keys into the viewport's own tables).
    let pos: HashMap<u32, u32> = vp
        .tracks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id, i as u32))
        .collect();
    let ev = &vp.events;
    let track_pos: Vec<usize> = ev
        .iter()
        .map(|e| pos.get(&e.track).copied().unwrap_or(0) as usize)
        .collect();
    let per_track = |f: fn(&xlens_analysis::base::trace::TrackInfo) -> &str| {
        let (values, keys) = unique(vp.tracks.iter().map(f));
        dictionary(track_pos.iter().map(|&p| keys[p]), values)
    };
    let (name_values, name_keys) = unique(vp.names.iter().map(String::as_str));
    let names = dictionary(ev.iter().map(|e| name_keys[e.name as usize]), name_values)?;
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("host", per_track(|t| t.host.as_str())?),
        ("group", per_track(|t| t.group.as_str())?),
        ("line", per_track(|t| t.name.as_str())?),
        ("name", names),
        (
            "start_ps",
            Arc::new(Int64Array::from_iter_values(ev.iter().map(|e| e.start_ps))),
        ),
        (
            "dur_ps",
            Arc::new(Int64Array::from_iter_values(ev.iter().map(|e| e.dur_ps))),
        ),
        (
            "depth",
            Arc::new(UInt16Array::from_iter_values(ev.iter().map(|e| e.depth))),
        ),
        (
            "track",
            Arc::new(UInt32Array::from_iter_values(ev.iter().map(|e| e.track))),
        ),
        (
            "index",
            Arc::new(UInt32Array::from_iter_values(ev.iter().map(|e| e.index))),
        ),
    ];
    batch(cols)
}

/// Distinct strings of `items` (first seen first) and each item's position among them.
fn unique<'a>(items: impl Iterator<Item = &'a str>) -> (Vec<&'a str>, Vec<u32>) {
    let mut at: HashMap<&str, u32> = HashMap::new();
    let mut values = Vec::new();
    let keys = items
        .map(|s| {
            *at.entry(s).or_insert_with(|| {
                values.push(s);
                values.len() as u32 - 1
            })
        })
        .collect();
    (values, keys)
}

/// A dictionary column (distinct values, so pandas can make it a categorical).
fn dictionary(keys: impl Iterator<Item = u32>, values: Vec<&str>) -> Result<ArrayRef, String> {
    Ok(Arc::new(
        DictionaryArray::<UInt32Type>::try_new(
            UInt32Array::from_iter_values(keys),
            Arc::new(StringArray::from(values)),
        )
        .map_err(arrow_err)?,
    ))
}

/// Record batches offered through the Arrow C stream interface (taken once).
#[pyclass(frozen)]
struct ArrowStream {
    schema: SchemaRef,
    batches: std::sync::Mutex<Option<Vec<RecordBatch>>>,
}

#[pymethods]
impl ArrowStream {
    /// The Arrow PyCapsule protocol: a capsule of an `ArrowArrayStream`.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = self
            .batches
            .lock()
            .map_err(|_| tool_error("the table's lock was poisoned"))?
            .take()
            .ok_or_else(|| tool_error("this table was already taken"))?;
        let reader = RecordBatchIterator::new(
            batches.into_iter().map(Ok::<_, ArrowError>),
            self.schema.clone(),
        );
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    #[getter]
    fn num_rows(&self) -> usize {
        self.batches
            .lock()
            .ok()
            .and_then(|b| {
                b.as_ref()
                    .map(|b| b.iter().map(RecordBatch::num_rows).sum())
            })
            .unwrap_or(0)
    }
}

/// One host of a capture: its address, then its file or its error.
type HostResult = (String, Option<String>, Option<String>);

/// Captures from running jobs' profiler servers into `logdir`; returns the session folder.
#[pyfunction]
#[pyo3(signature = (addrs, logdir, duration_s=2.0, session=None, host_tracer_level=2, device_tracer_level=1, python_tracer_level=0, delay_ms=0))]
#[allow(clippy::too_many_arguments)]
fn capture(
    py: Python<'_>,
    addrs: Vec<String>,
    logdir: PathBuf,
    duration_s: f64,
    session: Option<String>,
    host_tracer_level: u32,
    device_tracer_level: u32,
    python_tracer_level: u32,
    delay_ms: u64,
) -> PyResult<(String, Vec<HostResult>)> {
    if !(duration_s.is_finite() && duration_s > 0.0 && duration_s <= 3600.0) {
        return Err(CaptureError::new_err(
            "duration_s must be between 0 and 3600",
        ));
    }
    let opts = xlens_capture::CaptureOptions {
        logdir,
        duration: std::time::Duration::from_secs_f64(duration_s),
        session,
        host_tracer_level,
        device_tracer_level,
        python_tracer_level,
        delay: std::time::Duration::from_millis(delay_ms),
        ..Default::default()
    };
    let res = py.detach(|| xlens_capture::capture_blocking(&addrs, &opts, None));
    let raise = |e: &xlens_capture::CaptureError| {
        let err = CaptureError::new_err(e.to_string());
        let v = err.value(py);
        let _ = v.setattr("code", e.exit_code());
        let _ = v.setattr("kind", e.kind());
        err
    };
    match res {
        Ok(r) => Ok((
            r.session_dir.display().to_string(),
            r.hosts
                .iter()
                .zip(&addrs)
                .map(|(h, a)| match h {
                    Ok(h) => (a.clone(), Some(h.file.display().to_string()), None),
                    Err(e) => (a.clone(), None, Some(e.to_string())),
                })
                .collect(),
        )),
        Err(e) => Err(raise(&e)),
    }
}

/// Serves `logdir` on 127.0.0.1:`port` (0: any free port) in a background thread; returns the
/// URL. With `background=False`, serves until the process ends.
#[pyfunction]
#[pyo3(signature = (logdir, port=8791, background=true))]
fn serve(py: Python<'_>, logdir: PathBuf, port: u16, background: bool) -> PyResult<String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| tool_error(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| tool_error(e.to_string()))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| tool_error(e.to_string()))?;
    let label = logdir.display().to_string();
    let run = move || {
        let rt = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("xlens: cannot start the server's runtime: {e}");
                return;
            }
        };
        rt.block_on(async move {
            let Ok(l) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let state = xlens_server::AppState::new(logdir, label);
            let _ = xlens_server::serve_on(l, state).await;
        });
    };
    let url = format!("http://{addr}/");
    if background {
        std::thread::Builder::new()
            .name("xlens-serve".into())
            .spawn(run)
            .map_err(|e| tool_error(e.to_string()))?;
    } else {
        py.detach(run);
    }
    Ok(url)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(capture, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(tables, m)?)?;
    m.add_class::<NativeRun>()?;
    m.add_class::<ArrowStream>()?;
    m.add("ProfileError", m.py().get_type::<ProfileError>())?;
    m.add("CaptureError", m.py().get_type::<CaptureError>())?;
    m.add("ToolError", m.py().get_type::<ToolError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
