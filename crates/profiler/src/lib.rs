//! A profiling API for Rust ML programs (candle, burn, custom kernels) whose output xlens and
//! XProf read: the same `<logdir>/plugins/profile/<session>/<host>.xplane.pb` files that
//! `jax.profiler.start_trace` writes.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! xlens_profiler::start_trace("/tmp/logdir")?;
//! for i in 0..10 {
//!     let _step = xlens_profiler::step("train", i);
//!     {
//!         let _f = xlens_profiler::trace("forward");
//!         // ...
//!     }
//!     let _b = xlens_profiler::trace("backward");
//!     // ...
//! }
//! let file = xlens_profiler::stop_trace()?;
//! println!("wrote {}", file.display());
//! # Ok(())
//! # }
//! ```
//!
//! * [`trace`] returns a guard that records a span from its creation to its drop on the
//!   calling thread; [`step`] does the same for a training step, with the `step_num` and `_r`
//!   stats of JAX's `StepTraceAnnotation`, so step-time tools find the steps.
//! * [`start_server`] serves `tensorflow.ProfilerService/Profile` over gRPC, so `xlens capture`
//!   and XProf's "Capture profile" button can record a running program on demand.
//!
//! The output is one `/host:CPU` plane with one line per thread (named after the thread),
//! event metadata interned by name, and a `Task Environment` plane with `profile_start_time` and
//! `profile_stop_time`, as TSL writes them.
//!
//! Cost: when no trace is running a span is one relaxed atomic load. When tracing, a span takes
//! two clock reads and a push of a 40-byte record into a per-thread buffer that keeps its
//! capacity between traces (no allocation per span in the steady state); names are
//! `&'static str` and are interned into event metadata once, when the trace is written. See the
//! `overhead` example and PERFORMANCE.md for measured numbers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;
use xlens_proto::tensorflow::profiler::{
    x_event, x_stat, XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata,
};

/// Why a trace or the server could not do what was asked.
#[derive(Debug)]
pub enum ProfilerError {
    /// A trace is already running (from `start_trace` or a capture through the server).
    AlreadyTracing,
    /// `stop_trace` without `start_trace`.
    NotTracing,
    /// Writing the profile or binding the server failed.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for ProfilerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProfilerError::AlreadyTracing => {
                f.write_str("another profiling session is active (start_trace or a capture)")
            }
            ProfilerError::NotTracing => f.write_str("no trace is running; call start_trace first"),
            ProfilerError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for ProfilerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProfilerError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

// ------------------------------------------------------------------------------------- clock
//
// Spans are timed in "ticks": the CPU's time-stamp counter on x86_64 when it is invariant
// (a few ns to read, against tens of ns for `Instant::now` on virtual machines), else
// nanoseconds from `Instant`. Each trace converts ticks to nanoseconds with the two
// (ticks, Instant) pairs taken at its start and stop.

struct Clock {
    base: Instant,
    /// Wall-clock ns since the Unix epoch at `base`.
    base_wall_ns: u64,
}

fn clock() -> &'static Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK.get_or_init(|| {
        USE_TSC.store(tsc_is_invariant(), Ordering::Relaxed);
        Clock {
            base: Instant::now(),
            base_wall_ns: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0),
        }
    })
}

static USE_TSC: AtomicBool = AtomicBool::new(false);

#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)] // `__cpuid` is safe from Rust 1.87 on
fn tsc_is_invariant() -> bool {
    if std::env::var_os("XLENS_PROFILER_NO_TSC").is_some() {
        return false;
    }
    // CPUID.80000007H:EDX[8] = invariant TSC.
    // SAFETY: cpuid is available on every x86_64 CPU.
    let max_ext = unsafe { std::arch::x86_64::__cpuid(0x8000_0000) }.eax;
    max_ext >= 0x8000_0007 && unsafe { std::arch::x86_64::__cpuid(0x8000_0007) }.edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn tsc_is_invariant() -> bool {
    false
}

/// Monotonic ns since the profiler's clock was first used.
fn mono_ns() -> u64 {
    clock().base.elapsed().as_nanos() as u64
}

/// The current tick (see above); never [`NOT_RECORDING`].
#[inline]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if USE_TSC.load(Ordering::Relaxed) {
        // SAFETY: rdtsc has no preconditions.
        return unsafe { std::arch::x86_64::_rdtsc() } | 1;
    }
    mono_ns() + 1
}

/// Ticks to ns since `clock().base`, by the line through a trace's start and stop points.
#[derive(Clone, Copy)]
struct TickScale {
    t0: u64,
    ns0: u64,
    ns_per_tick: f64,
}

impl TickScale {
    fn new(t0: u64, ns0: u64, t1: u64, ns1: u64) -> TickScale {
        let ns_per_tick = if t1 > t0 && ns1 > ns0 {
            (ns1 - ns0) as f64 / (t1 - t0) as f64
        } else {
            1.0
        };
        TickScale {
            t0,
            ns0,
            ns_per_tick,
        }
    }

    /// ps since `clock().base`.
    fn ps(&self, t: u64) -> i64 {
        let dt = t as f64 - self.t0 as f64;
        ((self.ns0 as f64 + dt * self.ns_per_tick) * 1000.0).round() as i64
    }
}

// ---------------------------------------------------------------------------------- records

/// Marks a span created while no trace ran.
const NOT_RECORDING: u64 = 0;
/// `step` of a plain span.
const NO_STEP: i64 = i64::MIN;

#[derive(Clone, Copy)]
struct Record {
    name: &'static str,
    start: u64,
    end: u64,
    step: i64,
}

/// Records reserved when a thread first records a span (the buffer grows past it if needed, and
/// keeps its capacity for later traces).
const RESERVE: usize = 1 << 10;

struct ThreadBuf {
    tid: i64,
    name: String,
    records: Mutex<Vec<Record>>,
    /// The thread has ended: the buffer leaves the registry once its records are collected.
    ended: AtomicBool,
}

/// This thread's buffer; marks it ended when the thread exits.
struct Local(Arc<ThreadBuf>);

impl Drop for Local {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::Release);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn registry() -> &'static Mutex<Vec<Arc<ThreadBuf>>> {
    static REG: OnceLock<Mutex<Vec<Arc<ThreadBuf>>>> = OnceLock::new();
    REG.get_or_init(|| Mutex::new(Vec::new()))
}

fn register_thread() -> Local {
    static NEXT_TID: AtomicU64 = AtomicU64::new(1);
    let tid = NEXT_TID.fetch_add(1, Ordering::Relaxed) as i64;
    let t = std::thread::current();
    let name = match t.name() {
        Some(n) => n.to_string(),
        None => format!("thread-{tid}"),
    };
    let buf = Arc::new(ThreadBuf {
        tid,
        name,
        records: Mutex::new(Vec::with_capacity(RESERVE)),
        ended: AtomicBool::new(false),
    });
    lock(registry()).push(buf.clone());
    Local(buf)
}

thread_local! {
    static LOCAL: Local = register_thread();
}

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether a trace is running.
#[inline]
pub fn is_tracing() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// A running span; records itself when dropped. Made by [`trace`] and [`step`].
#[must_use = "a span records from its creation to its drop; bind it: `let _s = trace(..)`"]
pub struct Span {
    name: &'static str,
    start: u64,
    step: i64,
}

/// Starts a span named `name` on this thread; it ends when the guard is dropped.
#[inline]
pub fn trace(name: &'static str) -> Span {
    Span {
        name,
        start: if is_tracing() { ticks() } else { NOT_RECORDING },
        step: NO_STEP,
    }
}

/// Starts step `n` of a loop named `name` (e.g. `step("train", i)`): a span carrying the
/// `step_num` and `_r` stats of JAX's `StepTraceAnnotation`.
#[inline]
pub fn step(name: &'static str, n: i64) -> Span {
    Span {
        name,
        start: if is_tracing() { ticks() } else { NOT_RECORDING },
        step: n,
    }
}

impl Drop for Span {
    #[inline]
    fn drop(&mut self) {
        if self.start == NOT_RECORDING || !is_tracing() {
            return;
        }
        let rec = Record {
            name: self.name,
            start: self.start,
            end: ticks(),
            step: self.step,
        };
        let _ = LOCAL.try_with(|b| lock(&b.0.records).push(rec));
    }
}

// --------------------------------------------------------------------------------- sessions

struct Active {
    logdir: Option<PathBuf>,
    /// Ticks and ns at the start.
    start: u64,
    start_ns: u64,
    /// Started by the server's `Profile` (else by `start_trace`).
    by_server: bool,
}

fn state() -> &'static Mutex<Option<Active>> {
    static STATE: Mutex<Option<Active>> = Mutex::new(None);
    &STATE
}

fn begin(logdir: Option<PathBuf>, by_server: bool) -> Result<(), ProfilerError> {
    let mut st = lock(state());
    if st.is_some() {
        return Err(ProfilerError::AlreadyTracing);
    }
    let mut reg = lock(registry());
    reg.retain(|b| !b.ended.load(Ordering::Acquire));
    for b in reg.iter() {
        lock(&b.records).clear();
    }
    drop(reg);
    *st = Some(Active {
        logdir,
        start_ns: mono_ns(),
        start: ticks(),
        by_server,
    });
    ENABLED.store(true, Ordering::Release);
    Ok(())
}

/// A finished trace, before it is written.
struct Collected {
    /// ns since `clock().base` at start and stop.
    start_ns: u64,
    stop_ns: u64,
    scale: TickScale,
    logdir: Option<PathBuf>,
    threads: Vec<(i64, String, Vec<Record>)>,
}

fn end(by_server: bool) -> Result<Collected, ProfilerError> {
    let mut st = lock(state());
    if st.as_ref().is_none_or(|a| a.by_server != by_server) {
        return Err(ProfilerError::NotTracing);
    }
    let active = st.take().ok_or(ProfilerError::NotTracing)?;
    ENABLED.store(false, Ordering::Release);
    let stop = ticks();
    let stop_ns = mono_ns();
    let mut reg = lock(registry());
    let threads = reg
        .iter()
        .map(|b| {
            let mut recs = lock(&b.records);
            // Spans begun before this trace started (and ended during it) are left out.
            let kept: Vec<Record> = recs
                .iter()
                .filter(|r| r.start >= active.start && r.end <= stop)
                .copied()
                .collect();
            recs.clear();
            (b.tid, b.name.clone(), kept)
        })
        .filter(|(_, _, r)| !r.is_empty())
        .collect();
    // Ended threads' buffers are no longer needed.
    reg.retain(|b| !b.ended.load(Ordering::Acquire));
    drop(reg);
    Ok(Collected {
        start_ns: active.start_ns,
        stop_ns,
        scale: TickScale::new(active.start, active.start_ns, stop, stop_ns),
        logdir: active.logdir,
        threads,
    })
}

/// Starts recording spans and steps on every thread; [`stop_trace`] writes them under
/// `logdir`.
pub fn start_trace(logdir: impl AsRef<Path>) -> Result<(), ProfilerError> {
    begin(Some(logdir.as_ref().to_path_buf()), false)
}

/// Stops the trace and writes `<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb`;
/// returns that path.
pub fn stop_trace() -> Result<PathBuf, ProfilerError> {
    let c = end(false)?;
    let logdir = c.logdir.clone().unwrap_or_else(|| PathBuf::from("."));
    let wall = clock().base_wall_ns + c.start_ns;
    let session = timestamp_session_id(wall / 1_000_000_000);
    let dir = logdir.join("plugins/profile").join(session);
    let path = dir.join(format!("{}.xplane.pb", hostname()));
    write_xspace(&path, &to_xspace(&c))?;
    Ok(path)
}

/// Writes an XSpace to `path`, creating its directory.
fn write_xspace(path: &Path, xs: &XSpace) -> Result<(), ProfilerError> {
    let io = |source| ProfilerError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(io)?;
    }
    std::fs::write(path, xs.encode_to_vec()).map_err(io)
}

/// This machine's host name (`localhost` when it cannot be read).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

fn timestamp_session_id(secs: u64) -> String {
    xlens_store::session_id_at(secs)
}

// ---------------------------------------------------------------------------------- XSpace

fn stat_i64(id: i64, v: i64) -> XStat {
    XStat {
        metadata_id: id,
        value: Some(x_stat::Value::Int64Value(v)),
    }
}

fn stat_u64(id: i64, v: u64) -> XStat {
    XStat {
        metadata_id: id,
        value: Some(x_stat::Value::Uint64Value(v)),
    }
}

fn stat_md(id: i64, name: &str) -> (i64, XStatMetadata) {
    (
        id,
        XStatMetadata {
            id,
            name: name.to_string(),
            description: String::new(),
        },
    )
}

/// Builds the XSpace: `/host:CPU` with one line per thread, and `Task Environment`.
fn to_xspace(c: &Collected) -> XSpace {
    const STEP_NUM: i64 = 1;
    const ROOT: i64 = 2;
    const PROCESS_ID: i64 = 3;
    let mut names: HashMap<&'static str, i64> = HashMap::new();
    let mut event_metadata = HashMap::new();
    let mut lines = Vec::with_capacity(c.threads.len());
    for (tid, tname, recs) in &c.threads {
        let mut recs = recs.clone();
        // By start; an enclosing span first.
        recs.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        // ps since the trace's start.
        let origin = c.start_ns as i64 * 1000;
        let ps = |t: u64| (c.scale.ps(t) - origin).max(0);
        let first = recs.first().map(|r| ps(r.start)).unwrap_or(0);
        let last = recs.iter().map(|r| ps(r.end)).max().unwrap_or(first);
        // Whole ns, as a line timestamp is.
        let first = first / 1000 * 1000;
        let events = recs
            .iter()
            .map(|r| {
                let next = names.len() as i64 + 1;
                let id = *names.entry(r.name).or_insert_with(|| {
                    event_metadata.insert(
                        next,
                        XEventMetadata {
                            id: next,
                            name: r.name.to_string(),
                            ..Default::default()
                        },
                    );
                    next
                });
                XEvent {
                    metadata_id: id,
                    data: Some(x_event::Data::OffsetPs(ps(r.start) - first)),
                    duration_ps: (ps(r.end) - ps(r.start)).max(0),
                    stats: if r.step == NO_STEP {
                        Vec::new()
                    } else {
                        vec![stat_i64(ROOT, 1), stat_i64(STEP_NUM, r.step)]
                    },
                }
            })
            .collect();
        lines.push(XLine {
            id: *tid,
            display_id: 0,
            name: tname.clone(),
            display_name: tname.clone(),
            // Relative to profile_start_time, as current TSL writes them.
            timestamp_ns: first / 1000,
            duration_ps: last - first,
            events,
        });
    }
    let host = XPlane {
        id: 0,
        name: "/host:CPU".to_string(),
        lines,
        event_metadata,
        stat_metadata: [
            stat_md(STEP_NUM, "step_num"),
            stat_md(ROOT, "_r"),
            stat_md(PROCESS_ID, "process_id"),
        ]
        .into_iter()
        .collect(),
        stats: vec![stat_i64(PROCESS_ID, i64::from(std::process::id()))],
    };
    let base = clock().base_wall_ns;
    let env = XPlane {
        id: 1,
        name: "Task Environment".to_string(),
        lines: Vec::new(),
        event_metadata: HashMap::new(),
        stat_metadata: [
            stat_md(1, "profile_start_time"),
            stat_md(2, "profile_stop_time"),
        ]
        .into_iter()
        .collect(),
        stats: vec![
            stat_u64(1, base + c.start_ns),
            stat_u64(2, base + c.stop_ns),
        ],
    };
    XSpace {
        planes: vec![host, env],
        errors: Vec::new(),
        warnings: Vec::new(),
        hostnames: vec![hostname()],
    }
}

/// Spans recorded in an XSpace's `/host:CPU` plane.
fn event_count(xs: &XSpace) -> usize {
    xs.planes
        .iter()
        .filter(|p| p.name == "/host:CPU")
        .flat_map(|p| &p.lines)
        .map(|l| l.events.len())
        .sum()
}

// ---------------------------------------------------------------------------------- server

mod server;

pub use server::{start_server, start_server_on, ServerHandle};

/// Records for `duration` (after an optional start time), for the server's `Profile`.
async fn record_for(duration: Duration) -> Result<XSpace, ProfilerError> {
    begin(None, true)?;
    /// Ends the trace even when the request is dropped half-way.
    struct EndOnDrop(bool);
    impl Drop for EndOnDrop {
        fn drop(&mut self) {
            if !self.0 {
                let _ = end(true);
            }
        }
    }
    let mut guard = EndOnDrop(false);
    tokio::time::sleep(duration).await;
    guard.0 = true;
    let c = end(true)?;
    Ok(to_xspace(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names() {
        assert_eq!(timestamp_session_id(1_795_969_598), "2026_11_29_16_26_38");
    }
}
