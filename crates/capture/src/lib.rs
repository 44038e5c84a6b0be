//! On-demand capture from running jobs: the client side of the gRPC service
//! `tensorflow.ProfilerService` that `jax.profiler.start_server(port)`,
//! `torch_xla.debug.profiler.start_server(port)`, `tf.profiler.experimental.server.start(port)`
//! and `xlens_profiler::start_server(port)` expose.
//!
//! [`capture`] sends the same `Profile` request as XProf's capture button (duration, tools,
//! `ProfileOptions`, repository root, session id, host name) plus `emit_xspace`, so the server
//! returns the capture and we write it ourselves: the log dir need not be reachable from the
//! profiled host. Several addresses are captured in parallel with one shared start time into
//! one session directory, one file per host.
//!
//! Everything that goes wrong is a [`CaptureError`] with a specific message, the likely fix
//! and a distinct process exit code ([`CaptureError::exit_code`]): the capture doctor.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xlens_proto::grpc::profiler_service_client::ProfilerServiceClient;
use xlens_proto::tensorflow::profiler::XSpace;
use xlens_proto::tensorflow::{ProfileOptions, ProfileRequest, ProfileResponse};

pub use xlens_proto::grpc;

/// The tools XProf's capture client names in every request (same order).
pub const XPROF_TOOLS: [&str; 10] = [
    "trace_viewer",
    "op_profile",
    "input_pipeline",
    "kernel_stats",
    "memory_viewer",
    "memory_profile",
    "overview_page",
    "pod_viewer",
    "tensorflow_stats",
    "xplane.pb",
];

/// The event cap XProf's capture client sends.
pub const XPROF_MAX_EVENTS: u64 = 1_000_000;

/// What to record and where to put it.
#[derive(Clone, Debug)]
pub struct CaptureOptions {
    /// The log directory; the session goes to `<logdir>/plugins/profile/<session>/`.
    pub logdir: PathBuf,
    /// Length of the capture window.
    pub duration: Duration,
    /// Session (run) name; a `YYYY_MM_DD_HH_MM_SS` UTC timestamp when `None`, as XProf does.
    pub session: Option<String>,
    /// Host TraceMe level: 0 off, 1 user annotations, 2 (default) adds runtime activity, 3 more.
    pub host_tracer_level: u32,
    /// Device tracer: 0 off, 1 (default) on.
    pub device_tracer_level: u32,
    /// Python function tracing: 0 (default) off, 1 on.
    pub python_tracer_level: u32,
    /// Start this long after the request is sent (the same start time for every host).
    pub delay: Duration,
    /// How long to wait for a TCP connection.
    pub connect_timeout: Duration,
    /// How long past `delay + duration` to wait for the answer before giving up.
    pub margin: Duration,
    /// Event cap sent to the server.
    pub max_events: u64,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            logdir: PathBuf::from("."),
            duration: Duration::from_secs(2),
            session: None,
            host_tracer_level: 2,
            device_tracer_level: 1,
            python_tracer_level: 0,
            delay: Duration::ZERO,
            connect_timeout: Duration::from_secs(5),
            margin: Duration::from_secs(30),
            max_events: XPROF_MAX_EVENTS,
        }
    }
}

/// Where a host's capture came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The server returned the XSpace (`emit_xspace`) and we wrote it.
    Returned,
    /// The server did not return it but wrote it itself, to a path we can read here.
    WrittenByServer,
}

/// One host's capture.
#[derive(Clone, Debug)]
pub struct HostCapture {
    /// The address as given.
    pub addr: String,
    /// The `.xplane.pb` file.
    pub file: PathBuf,
    pub bytes: u64,
    /// Events in the XSpace (0 when the server wrote the file itself and it was not read).
    pub events: u64,
    pub source: Source,
    /// Time from sending the request to having the file.
    pub elapsed: Duration,
}

/// What a capture produced.
#[derive(Debug)]
pub struct CaptureReport {
    pub session_id: String,
    pub session_dir: PathBuf,
    /// Shared start time sent to every host (Unix ns).
    pub start_timestamp_ns: u64,
    /// One entry per address, in the order given.
    pub hosts: Vec<Result<HostCapture, CaptureError>>,
}

impl CaptureReport {
    /// The first failure, if any host failed.
    pub fn first_error(&self) -> Option<&CaptureError> {
        self.hosts.iter().find_map(|h| h.as_ref().err())
    }
}

/// Everything that can go wrong, each with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("`{addr}` is not an address: {why}; give HOST:PORT, e.g. 127.0.0.1:9999")]
    BadAddress { addr: String, why: String },
    #[error("no address given; give HOST:PORT[,HOST:PORT...]")]
    NoAddress,
    #[error(
        "nothing listens on {addr}: start the profiler server in the job with \
         jax.profiler.start_server({port}) (PyTorch/XLA: torch_xla.debug.profiler.start_server({port}); \
         TensorFlow: tf.profiler.experimental.server.start({port}); Rust: xlens_profiler::start_server({port})), \
         or check the host and port"
    )]
    Refused { addr: String, port: u16 },
    #[error(
        "no connection to {addr} within {secs:.1}s: the host is unreachable or a firewall drops the \
         packets; check the host name, that the port is open between here and the job, and that \
         the job is still running"
    )]
    ConnectTimeout { addr: String, secs: f64 },
    #[error("cannot connect to {addr}: {detail}")]
    Connect { addr: String, detail: String },
    #[error(
        "{addr} is not a gRPC profiler server ({detail}): wrong port? Use the port given to \
         start_server in the job, not a web UI's port (TensorBoard 6006, XProf 8791)"
    )]
    NotGrpc { addr: String, detail: String },
    #[error(
        "{addr} speaks gRPC but has no tensorflow.ProfilerService ({detail}): wrong port? Use the \
         port given to jax.profiler.start_server in the job"
    )]
    NotProfiler { addr: String, detail: String },
    #[error(
        "{addr} did not answer within {secs:.1}s (capture window plus {margin_s:.0}s margin): the \
         job may be stuck, overloaded or still busy with another capture; check that it is alive, \
         then try a shorter --duration"
    )]
    Deadline {
        addr: String,
        secs: f64,
        margin_s: f64,
    },
    #[error("{addr} refused the capture: {code}: {message}{hint}")]
    Rpc {
        addr: String,
        code: String,
        message: String,
        hint: String,
    },
    #[error(
        "{addr} recorded nothing in the capture window{}: the job did no traced work then (idle, \
         finished, or between phases), or the tracer levels are 0; capture while steps run, \
         lengthen --duration, or raise --host-tracer-level",
        file.as_ref().map(|f| format!(" (written anyway: {})", f.display())).unwrap_or_default()
    )]
    EmptyTrace { addr: String, file: Option<PathBuf> },
    #[error(
        "{addr} did not return the capture and wrote it to its own disk at {path}, which is not \
         here: copy that file into {} (or give --logdir a directory that the job can also reach, \
         e.g. a shared file system); the server does not support emit_xspace (upgrade jax/tensorflow)",
        local_dir.display()
    )]
    ServerDisk {
        addr: String,
        path: String,
        local_dir: PathBuf,
    },
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl CaptureError {
    /// The process exit code for this failure (documented in docs/src/capture.md).
    pub fn exit_code(&self) -> i32 {
        match self {
            CaptureError::BadAddress { .. } | CaptureError::NoAddress => 2,
            CaptureError::Refused { .. } => 10,
            CaptureError::ConnectTimeout { .. } | CaptureError::Connect { .. } => 11,
            CaptureError::NotGrpc { .. } | CaptureError::NotProfiler { .. } => 12,
            CaptureError::Deadline { .. } => 13,
            CaptureError::EmptyTrace { .. } => 14,
            CaptureError::ServerDisk { .. } => 15,
            CaptureError::Rpc { .. } => 16,
            CaptureError::Io { .. } => 17,
        }
    }

    /// A short machine-readable name of the failure kind.
    pub fn kind(&self) -> &'static str {
        match self {
            CaptureError::BadAddress { .. } | CaptureError::NoAddress => "bad_address",
            CaptureError::Refused { .. } => "refused",
            CaptureError::ConnectTimeout { .. } | CaptureError::Connect { .. } => "connect",
            CaptureError::NotGrpc { .. } | CaptureError::NotProfiler { .. } => "wrong_port",
            CaptureError::Deadline { .. } => "deadline",
            CaptureError::EmptyTrace { .. } => "empty_trace",
            CaptureError::ServerDisk { .. } => "server_disk",
            CaptureError::Rpc { .. } => "rpc",
            CaptureError::Io { .. } => "io",
        }
    }
}

/// Phase of a running capture, for progress displays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the shared start time (`--delay`).
    Waiting,
    /// Inside the capture window.
    Recording,
    /// The window is over; the servers are sending their captures.
    Collecting,
    /// Every host has answered.
    Done,
}

/// A progress tick (about ten a second while a capture runs).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub phase: Phase,
    /// Time since the request was sent.
    pub elapsed: Duration,
    /// Delay plus duration.
    pub window: Duration,
    pub hosts_done: usize,
    pub hosts: usize,
}

impl Progress {
    /// A plain-text progress line: `[#####.....] 1.2s / 2.0s recording (0/2 hosts done)`.
    pub fn bar(&self, width: usize) -> String {
        let frac = if self.window.is_zero() {
            1.0
        } else {
            (self.elapsed.as_secs_f64() / self.window.as_secs_f64()).min(1.0)
        };
        let filled = (frac * width as f64).round() as usize;
        let what = match self.phase {
            Phase::Waiting => "waiting for the start time",
            Phase::Recording => "recording",
            Phase::Collecting => "receiving the capture",
            Phase::Done => "done",
        };
        format!(
            "[{}{}] {:.1}s / {:.1}s {what} ({}/{} hosts done)",
            "#".repeat(filled),
            ".".repeat(width.saturating_sub(filled)),
            self.elapsed.as_secs_f64(),
            self.window.as_secs_f64(),
            self.hosts_done,
            self.hosts
        )
    }
}

/// A progress callback.
pub type ProgressFn = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Splits `a,b,c` into addresses (blank entries dropped).
pub fn parse_addrs(list: &str) -> Vec<String> {
    list.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A `YYYY_MM_DD_HH_MM_SS` (UTC) session name like XProf's.
pub fn timestamp_session_id(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    xlens_store::session_id_at(secs)
}

/// The file name a host's capture gets: the address with `:` made `_` (as XProf names them).
pub fn host_file_name(addr: &str) -> String {
    let host: String = addr
        .chars()
        .map(|c| match c {
            ':' | '/' | '\\' => '_',
            c => c,
        })
        .collect();
    format!("{host}.xplane.pb")
}

/// The request XProf's capture client sends, plus `emit_xspace`.
pub fn profile_request(
    addr: &str,
    opts: &CaptureOptions,
    logdir_abs: &Path,
    session_id: &str,
    start_timestamp_ns: u64,
) -> ProfileRequest {
    let duration_ms = opts.duration.as_millis() as u64;
    ProfileRequest {
        duration_ms,
        max_events: opts.max_events,
        tools: XPROF_TOOLS.iter().map(|s| s.to_string()).collect(),
        tool_options: Default::default(),
        opts: Some(ProfileOptions {
            version: 1,
            include_dataset_ops: true,
            host_tracer_level: opts.host_tracer_level,
            device_tracer_level: opts.device_tracer_level,
            python_tracer_level: opts.python_tracer_level,
            enable_hlo_proto: true,
            start_timestamp_ns,
            duration_ms,
            repository_path: logdir_abs.display().to_string(),
            ..Default::default()
        }),
        repository_root: logdir_abs.join("plugins/profile").display().to_string(),
        session_id: session_id.to_string(),
        host_name: addr.to_string(),
        emit_xspace: true,
    }
}

/// Events in an XSpace, not counting the `Task Environment` plane.
pub fn count_events(xs: &XSpace) -> u64 {
    xs.planes
        .iter()
        .filter(|p| p.name != "Task Environment")
        .flat_map(|p| p.lines.iter())
        .map(|l| l.events.len() as u64)
        .sum()
}

/// Captures from every address in parallel into one new session directory.
///
/// Returns `Err` when nothing could be started (no address, the log dir cannot be made) or
/// when every host failed (the first host's error); otherwise a report with one result per
/// address.
pub async fn capture(
    addrs: &[String],
    opts: &CaptureOptions,
    progress: Option<ProgressFn>,
) -> Result<CaptureReport, CaptureError> {
    if addrs.is_empty() {
        return Err(CaptureError::NoAddress);
    }
    let mut targets = Vec::with_capacity(addrs.len());
    for a in addrs {
        targets.push((a.clone(), resolve(a).await?));
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CaptureError::Io { path, source }
    };
    std::fs::create_dir_all(&opts.logdir).map_err(io(&opts.logdir))?;
    let logdir_abs = std::fs::canonicalize(&opts.logdir).map_err(io(&opts.logdir))?;
    let now = SystemTime::now();
    let session_id = opts
        .session
        .clone()
        .unwrap_or_else(|| timestamp_session_id(now));
    let session_dir = logdir_abs.join("plugins/profile").join(&session_id);
    std::fs::create_dir_all(&session_dir).map_err(io(&session_dir))?;
    let start_timestamp_ns = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        + opts.delay.as_nanos() as u64;

    let window = opts.delay + opts.duration;
    let done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let ticker = progress.clone().map(|p| {
        let done = done.clone();
        let hosts = targets.len();
        let delay = opts.delay;
        tokio::spawn(async move {
            loop {
                let elapsed = t0.elapsed();
                p(&Progress {
                    phase: phase_at(elapsed, delay, window),
                    elapsed,
                    window,
                    hosts_done: done.load(Ordering::Relaxed),
                    hosts,
                });
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    });

    let mut tasks = Vec::with_capacity(targets.len());
    for (addr, sock) in targets {
        let req = profile_request(&addr, opts, &logdir_abs, &session_id, start_timestamp_ns);
        let opts = opts.clone();
        let dir = session_dir.clone();
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let r = capture_host(&addr, sock, req, &opts, &dir).await;
            done.fetch_add(1, Ordering::Relaxed);
            r
        }));
    }
    let mut hosts = Vec::with_capacity(tasks.len());
    for (t, a) in tasks.into_iter().zip(addrs) {
        hosts.push(t.await.unwrap_or_else(|e| {
            Err(CaptureError::Connect {
                addr: a.clone(),
                detail: format!("the capture task failed: {e}"),
            })
        }));
    }
    if let Some(t) = ticker {
        t.abort();
    }
    if let Some(p) = &progress {
        p(&Progress {
            phase: Phase::Done,
            elapsed: t0.elapsed(),
            window,
            hosts_done: hosts.len(),
            hosts: hosts.len(),
        });
    }
    if hosts.iter().all(|h| h.is_err()) {
        // Leave no empty session directory behind.
        let _ = std::fs::remove_dir(&session_dir);
        if let Some(Err(e)) = hosts.into_iter().next() {
            return Err(e);
        }
        return Err(CaptureError::NoAddress);
    }
    Ok(CaptureReport {
        session_id,
        session_dir,
        start_timestamp_ns,
        hosts,
    })
}

fn phase_at(elapsed: Duration, delay: Duration, window: Duration) -> Phase {
    if elapsed < delay {
        Phase::Waiting
    } else if elapsed < window {
        Phase::Recording
    } else {
        Phase::Collecting
    }
}

/// [`capture`] on a private runtime, for synchronous callers.
pub fn capture_blocking(
    addrs: &[String],
    opts: &CaptureOptions,
    progress: Option<ProgressFn>,
) -> Result<CaptureReport, CaptureError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| CaptureError::Io {
            path: PathBuf::from("<runtime>"),
            source,
        })?;
    rt.block_on(capture(addrs, opts, progress))
}

/// Resolves `HOST:PORT` (an optional `grpc://` or `http://` prefix is accepted).
async fn resolve(addr: &str) -> Result<SocketAddr, CaptureError> {
    let bare = addr
        .trim_start_matches("grpc://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    let bad = |why: String| CaptureError::BadAddress {
        addr: addr.to_string(),
        why,
    };
    if !bare.contains(':') {
        return Err(bad("no port".into()));
    }
    let mut it = tokio::net::lookup_host(bare)
        .await
        .map_err(|e| bad(e.to_string()))?;
    it.next()
        .ok_or_else(|| bad("the name resolves to nothing".into()))
}

/// The HTTP/2 client preface and an empty SETTINGS frame.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// Checks that something listens on `sock` and speaks HTTP/2 (a gRPC server answers the
/// client preface with its SETTINGS frame at once), so that the common mistakes get their own
/// message instead of a generic transport error.
async fn probe(
    addr: &str,
    sock: SocketAddr,
    connect_timeout: Duration,
) -> Result<(), CaptureError> {
    let conn = tokio::time::timeout(connect_timeout, tokio::net::TcpStream::connect(sock)).await;
    let mut s = match conn {
        Err(_) => {
            return Err(CaptureError::ConnectTimeout {
                addr: addr.to_string(),
                secs: connect_timeout.as_secs_f64(),
            })
        }
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return Err(CaptureError::Refused {
                addr: addr.to_string(),
                port: sock.port(),
            })
        }
        Ok(Err(e)) => {
            return Err(CaptureError::Connect {
                addr: addr.to_string(),
                detail: e.to_string(),
            })
        }
        Ok(Ok(s)) => s,
    };
    let not_grpc = |detail: String| CaptureError::NotGrpc {
        addr: addr.to_string(),
        detail,
    };
    s.write_all(H2_PREFACE)
        .await
        .map_err(|e| not_grpc(format!("the connection failed on an HTTP/2 greeting: {e}")))?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    let wait = connect_timeout.min(Duration::from_secs(3));
    let read = tokio::time::timeout(wait, async {
        while n < 9 {
            match s.read(&mut buf[n..]).await {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })
    .await;
    match read {
        Err(_) => Err(not_grpc(format!(
            "it accepted the connection but sent nothing back to an HTTP/2 greeting in {:.1}s",
            wait.as_secs_f64()
        ))),
        Ok(Err(e)) => Err(not_grpc(format!(
            "it dropped the connection on an HTTP/2 greeting: {e}"
        ))),
        Ok(Ok(())) if n >= 9 && buf[3] == 4 => Ok(()),
        Ok(Ok(())) if buf[..n].starts_with(b"HTTP/") => {
            let text = String::from_utf8_lossy(&buf[..n]);
            let first = text.lines().next().unwrap_or("").to_string();
            Err(not_grpc(format!("an HTTP/1 server answered `{first}`")))
        }
        Ok(Ok(())) if n == 0 => Err(not_grpc(
            "it closed the connection on an HTTP/2 greeting".into(),
        )),
        Ok(Ok(())) => Err(not_grpc(format!(
            "it answered an HTTP/2 greeting with {:?}",
            String::from_utf8_lossy(&buf[..n])
        ))),
    }
}

async fn capture_host(
    addr: &str,
    sock: SocketAddr,
    req: ProfileRequest,
    opts: &CaptureOptions,
    session_dir: &Path,
) -> Result<HostCapture, CaptureError> {
    let t0 = Instant::now();
    probe(addr, sock, opts.connect_timeout).await?;
    let deadline = opts.delay + opts.duration + opts.margin;
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{sock}"))
        .map_err(|e| CaptureError::BadAddress {
            addr: addr.to_string(),
            why: e.to_string(),
        })?
        .connect_timeout(opts.connect_timeout)
        .timeout(deadline);
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| CaptureError::Connect {
            addr: addr.to_string(),
            detail: error_chain(&e),
        })?;
    let mut client = ProfilerServiceClient::new(channel)
        .max_decoding_message_size(usize::MAX)
        .max_encoding_message_size(usize::MAX);
    let deadline_err = || CaptureError::Deadline {
        addr: addr.to_string(),
        secs: deadline.as_secs_f64(),
        margin_s: opts.margin.as_secs_f64(),
    };
    let resp: ProfileResponse =
        match tokio::time::timeout(deadline, client.profile(req.clone())).await {
            Err(_) => return Err(deadline_err()),
            Ok(Err(status)) => return Err(status_error(addr, &status, deadline_err)),
            Ok(Ok(r)) => r.into_inner(),
        };
    let file = session_dir.join(host_file_name(addr));
    match resp.xspace {
        Some(xs) => {
            let events = count_events(&xs);
            let bytes = xs.encode_to_vec();
            std::fs::write(&file, &bytes).map_err(|source| CaptureError::Io {
                path: file.clone(),
                source,
            })?;
            if events == 0 || resp.empty_trace {
                return Err(CaptureError::EmptyTrace {
                    addr: addr.to_string(),
                    file: Some(file),
                });
            }
            Ok(HostCapture {
                addr: addr.to_string(),
                file,
                bytes: bytes.len() as u64,
                events,
                source: Source::Returned,
                elapsed: t0.elapsed(),
            })
        }
        None if resp.empty_trace => Err(CaptureError::EmptyTrace {
            addr: addr.to_string(),
            file: None,
        }),
        None => {
            // An older server: it wrote `<repository_root>/<session_id>/<host>.xplane.pb` itself.
            let remote = format!(
                "{}/{}/{}",
                req.repository_root,
                req.session_id,
                host_file_name(&req.host_name)
            );
            match find_server_file(session_dir, addr) {
                Some(f) => {
                    let bytes = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
                    Ok(HostCapture {
                        addr: addr.to_string(),
                        file: f,
                        bytes,
                        events: 0,
                        source: Source::WrittenByServer,
                        elapsed: t0.elapsed(),
                    })
                }
                None => Err(CaptureError::ServerDisk {
                    addr: addr.to_string(),
                    path: remote,
                    local_dir: session_dir.to_path_buf(),
                }),
            }
        }
    }
}

/// The file a server wrote into our session directory for `addr`, if it is visible here.
fn find_server_file(session_dir: &Path, addr: &str) -> Option<PathBuf> {
    let want = host_file_name(addr);
    let exact = session_dir.join(&want);
    if exact.is_file() {
        return Some(exact);
    }
    let stem = want.trim_end_matches(".xplane.pb").to_string();
    std::fs::read_dir(session_dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&stem) && n.contains(".xplane.pb"))
        })
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

fn status_error(
    addr: &str,
    status: &tonic::Status,
    deadline: impl Fn() -> CaptureError,
) -> CaptureError {
    use tonic::Code;
    let message = status.message().to_string();
    match status.code() {
        Code::Unimplemented => CaptureError::NotProfiler {
            addr: addr.to_string(),
            detail: format!("Profile is unimplemented: {message}"),
        },
        Code::DeadlineExceeded | Code::Cancelled if message.contains("imeout") => deadline(),
        Code::DeadlineExceeded => deadline(),
        code => {
            let lower = message.to_lowercase();
            let hint = if lower.contains("another") || lower.contains("already") {
                "; another capture or a start_trace is running in the job: wait for it to end and retry"
            } else if lower.contains("h2 protocol")
                || lower.contains("http2")
                || lower.contains("frame")
            {
                "; the server does not speak gRPC correctly: wrong port?"
            } else {
                ""
            };
            CaptureError::Rpc {
                addr: addr.to_string(),
                code: format!("{code:?}"),
                message: if message.is_empty() {
                    std::error::Error::source(status)
                        .map(error_chain)
                        .unwrap_or_default()
                } else {
                    message
                },
                hint: hint.to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_look_like_xprof() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_969_598);
        assert_eq!(timestamp_session_id(t), "2026_11_29_16_26_38");
        assert_eq!(timestamp_session_id(UNIX_EPOCH), "1970_01_01_00_00_00");
    }

    #[test]
    fn file_names_and_addresses() {
        assert_eq!(host_file_name("127.0.0.1:9999"), "127.0.0.1_9999.xplane.pb");
        assert_eq!(parse_addrs(" a:1, ,b:2,"), vec!["a:1", "b:2"]);
    }

    #[test]
    fn progress_bar_is_plain_text() {
        let p = Progress {
            phase: Phase::Recording,
            elapsed: Duration::from_millis(1200),
            window: Duration::from_secs(2),
            hosts_done: 0,
            hosts: 1,
        };
        assert_eq!(
            p.bar(10),
            "[######....] 1.2s / 2.0s recording (0/1 hosts done)"
        );
    }

    #[test]
    fn exit_codes_are_distinct() {
        let a = || "h:1".to_string();
        let errs = [
            CaptureError::NoAddress,
            CaptureError::Refused { addr: a(), port: 1 },
            CaptureError::ConnectTimeout {
                addr: a(),
                secs: 1.0,
            },
            CaptureError::NotGrpc {
                addr: a(),
                detail: String::new(),
            },
            CaptureError::Deadline {
                addr: a(),
                secs: 1.0,
                margin_s: 1.0,
            },
            CaptureError::EmptyTrace {
                addr: a(),
                file: None,
            },
            CaptureError::ServerDisk {
                addr: a(),
                path: String::new(),
                local_dir: PathBuf::new(),
            },
            CaptureError::Rpc {
                addr: a(),
                code: String::new(),
                message: String::new(),
                hint: String::new(),
            },
            CaptureError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other("x"),
            },
        ];
        let mut codes: Vec<i32> = errs.iter().map(|e| e.exit_code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), errs.len());
    }
}
