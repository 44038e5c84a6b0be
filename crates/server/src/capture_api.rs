//! Capture from the browser: `/capture` (a form), `POST /api/capture` (starts a capture into the
//! served log dir, answers `{"job": ID}`), `GET /api/capture/{id}` (progress, then the result
//! with a link to the new session). The capture is `xlens capture`'s, doctor included.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use xlens_capture::{CaptureOptions, Phase, Progress};

use crate::{CapturePolicy, Shared};

/// The capture routes, merged into the main router.
pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/capture", get(page))
        .route("/api/capture", post(start))
        .route("/api/capture/{id}", get(status))
}

/// What the form sends.
#[derive(Deserialize)]
pub struct CaptureForm {
    /// `HOST:PORT[,HOST:PORT...]`
    pub addrs: String,
    #[serde(default = "default_duration_ms")]
    pub duration_ms: u64,
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default = "two")]
    pub host_tracer_level: u32,
    #[serde(default = "one")]
    pub device_tracer_level: u32,
    #[serde(default)]
    pub python_tracer_level: u32,
    #[serde(default)]
    pub delay_ms: u64,
}

fn default_duration_ms() -> u64 {
    2000
}
fn two() -> u32 {
    2
}
fn one() -> u32 {
    1
}

#[derive(Serialize, Clone)]
struct HostResult {
    addr: String,
    ok: bool,
    file: Option<String>,
    bytes: Option<u64>,
    /// Failure kind (`refused`, `wrong_port`, `empty_trace`, ...), as the CLI's exit codes.
    error_kind: Option<&'static str>,
    error: Option<String>,
}

#[derive(Serialize, Clone, Default)]
struct JobState {
    phase: &'static str,
    elapsed_s: f64,
    window_s: f64,
    hosts_done: usize,
    hosts: usize,
    done: bool,
    /// Set when nothing was captured at all.
    error: Option<String>,
    error_kind: Option<&'static str>,
    session: Option<String>,
    /// Where the new session opens.
    link: Option<String>,
    results: Vec<HostResult>,
}

type Jobs = Mutex<HashMap<u64, Arc<Mutex<JobState>>>>;

fn jobs() -> &'static Jobs {
    static JOBS: OnceLock<Jobs> = OnceLock::new();
    JOBS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Waiting => "waiting",
        Phase::Recording => "recording",
        Phase::Collecting => "collecting",
        Phase::Done => "done",
    }
}

const OFF: &str = "capture is off on a server exposed beyond this machine (it would connect to addresses a visitor types); start `xlens serve` with --allow-capture to allow it";

fn forbidden(msg: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        Json(serde_json::json!({ "error": msg })),
    )
        .into_response()
}

fn bad_request(msg: impl Into<String>) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(serde_json::json!({ "error": msg.into() })),
    )
        .into_response()
}

async fn start(State(state): State<Shared>, Json(f): Json<CaptureForm>) -> Response {
    let addrs = xlens_capture::parse_addrs(&f.addrs);
    if state.access.capture == CapturePolicy::Off {
        return forbidden(OFF);
    }
    if addrs.is_empty() {
        return bad_request("give at least one HOST:PORT");
    }
    let addrs = match crate::access::check_capture_addrs(&addrs, state.access.capture).await {
        Ok(a) => a,
        Err(msg) => return forbidden(&msg),
    };
    if f.duration_ms == 0 || f.duration_ms > 3_600_000 {
        return bad_request("duration_ms must be between 1 and 3600000");
    }
    let session = f.session.filter(|s| !s.trim().is_empty());
    if let Some(s) = &session {
        if s.contains(['/', '\\']) || s.starts_with('.') {
            return bad_request("a session name cannot contain slashes or start with a dot");
        }
    }
    let opts = CaptureOptions {
        logdir: state.logdir.clone(),
        duration: Duration::from_millis(f.duration_ms),
        session,
        host_tracer_level: f.host_tracer_level,
        device_tracer_level: f.device_tracer_level,
        python_tracer_level: f.python_tracer_level,
        delay: Duration::from_millis(f.delay_ms),
        ..Default::default()
    };
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let job = Arc::new(Mutex::new(JobState {
        phase: "starting",
        window_s: (opts.delay + opts.duration).as_secs_f64(),
        hosts: addrs.len(),
        ..Default::default()
    }));
    lock(jobs()).insert(id, job.clone());
    let j2 = job.clone();
    let progress: xlens_capture::ProgressFn = Arc::new(move |p: &Progress| {
        let mut s = lock(&j2);
        s.phase = phase_name(p.phase);
        s.elapsed_s = p.elapsed.as_secs_f64();
        s.window_s = p.window.as_secs_f64();
        s.hosts_done = p.hosts_done;
        s.hosts = p.hosts;
    });
    tokio::spawn(async move {
        let res = xlens_capture::capture(&addrs, &opts, Some(progress)).await;
        let mut s = lock(&job);
        s.done = true;
        s.phase = "done";
        match res {
            Ok(r) => {
                s.link = Some(format!(
                    "/?run={}",
                    crate::views::ui::url_enc(&r.session_id)
                ));
                s.session = Some(r.session_id);
                s.results = r
                    .hosts
                    .iter()
                    .zip(&addrs)
                    .map(|(h, a)| match h {
                        Ok(h) => HostResult {
                            addr: h.addr.clone(),
                            ok: true,
                            file: Some(h.file.display().to_string()),
                            bytes: Some(h.bytes),
                            error_kind: None,
                            error: None,
                        },
                        Err(e) => HostResult {
                            addr: a.clone(),
                            ok: false,
                            file: None,
                            bytes: None,
                            error_kind: Some(e.kind()),
                            error: Some(e.to_string()),
                        },
                    })
                    .collect();
            }
            Err(e) => {
                s.error_kind = Some(e.kind());
                s.error = Some(e.to_string());
            }
        }
    });
    Json(serde_json::json!({ "job": id })).into_response()
}

async fn status(UrlPath(id): UrlPath<u64>) -> Response {
    let job = lock(jobs()).get(&id).cloned();
    match job {
        Some(j) => Json(lock(&j).clone()).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({ "error": format!("no capture job {id}") })),
        )
            .into_response(),
    }
}

async fn page(State(state): State<Shared>) -> Response {
    if state.access.capture == CapturePolicy::Off {
        let body = crate::views::ui::error_box(OFF);
        let html = crate::views::page::shell(&state.label, &[], None, "capture", None, None, body);
        return (StatusCode::FORBIDDEN, Html(html.into_string())).into_response();
    }
    let logdir = state.logdir.join("plugins/profile").display().to_string();
    Html(crate::views::page::capture(&logdir).into_string()).into_response()
}
