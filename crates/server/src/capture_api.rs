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

use crate::Shared;

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

fn bad_request(msg: impl Into<String>) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(serde_json::json!({ "error": msg.into() })),
    )
        .into_response()
}

async fn start(State(state): State<Shared>, Json(f): Json<CaptureForm>) -> Response {
    let addrs = xlens_capture::parse_addrs(&f.addrs);
    if addrs.is_empty() {
        return bad_request("give at least one HOST:PORT");
    }
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
                s.link = Some(format!("/?run={}", urlencode(&r.session_id)));
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

fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

async fn page(State(state): State<Shared>) -> Html<String> {
    Html(PAGE.replace(
        "{LOGDIR}",
        &crate::html::esc(&state.logdir.join("plugins/profile").display().to_string()),
    ))
}

const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>xlens · capture</title>
<link rel="stylesheet" href="/static/app.css">
<style>
 .cap form{display:grid;grid-template-columns:max-content 22em;gap:.5em 1em;align-items:center;margin:1em 0}
 .cap .bar{font-family:monospace;white-space:pre}
 .cap .err{color:#b00020;white-space:pre-wrap}
 .cap .ok{color:#1b5e20}
</style></head>
<body class="cap"><main style="padding:1em 2em">
<p><a href="/">← xlens</a></p>
<h1>Capture a profile</h1>
<p>From running jobs' profiler servers (<code>jax.profiler.start_server(9999)</code>,
<code>torch_xla.debug.profiler.start_server(9012)</code>, <code>tf.profiler.experimental.server.start(6009)</code>,
<code>xlens_profiler::start_server(port)</code>). Several addresses are captured in parallel with one
start time. The capture is written to <code>{LOGDIR}</code>.</p>
<form id="f">
 <label for="addrs">Addresses (HOST:PORT, comma-separated)</label><input id="addrs" name="addrs" value="127.0.0.1:9999" required>
 <label for="duration">Duration (s)</label><input id="duration" name="duration" type="number" min="0.01" step="0.01" value="2">
 <label for="session">Session name (optional)</label><input id="session" name="session" placeholder="timestamp">
 <label for="host">Host tracer level</label><select id="host"><option value="0">0 off</option><option value="1">1 user annotations</option><option value="2" selected>2 + runtime</option><option value="3">3 verbose</option></select>
 <label for="device">Device tracer level</label><select id="device"><option value="0">0 off</option><option value="1" selected>1 on</option></select>
 <label for="python">Python tracer level</label><select id="python"><option value="0" selected>0 off</option><option value="1">1 on</option></select>
 <label for="delay">Delay (ms)</label><input id="delay" type="number" min="0" value="0">
 <span></span><button id="go" type="submit">Capture</button>
</form>
<div id="out"></div>
</main>
<script>
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
function bar(s) {
  const w = 30, f = s.window_s > 0 ? Math.min(1, s.elapsed_s / s.window_s) : 1;
  const n = Math.round(f * w);
  return '[' + '#'.repeat(n) + '.'.repeat(w - n) + '] ' + s.elapsed_s.toFixed(1) + 's / ' +
    s.window_s.toFixed(1) + 's ' + s.phase + ' (' + s.hosts_done + '/' + s.hosts + ' hosts done)';
}
$('f').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('go').disabled = true;
  const body = {
    addrs: $('addrs').value, duration_ms: Math.round(parseFloat($('duration').value) * 1000),
    session: $('session').value || null, host_tracer_level: +$('host').value,
    device_tracer_level: +$('device').value, python_tracer_level: +$('python').value,
    delay_ms: +$('delay').value,
  };
  const out = $('out');
  const r = await fetch('/api/capture', {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify(body)});
  const j = await r.json();
  if (!r.ok) { out.innerHTML = '<p class="err">' + esc(j.error) + '</p>'; $('go').disabled = false; return; }
  const poll = async () => {
    const s = await (await fetch('/api/capture/' + j.job)).json();
    let h = '<p class="bar">' + esc(bar(s)) + '</p>';
    if (s.done) {
      if (s.error) h += '<p class="err">' + esc(s.error) + '</p>';
      for (const x of s.results) {
        h += x.ok ? '<p class="ok">' + esc(x.addr) + ': ' + esc(x.file) + ' (' + x.bytes + ' bytes)</p>'
                  : '<p class="err">' + esc(x.error) + '</p>';
      }
      if (s.link) h += '<p><a id="open" href="' + esc(s.link) + '">Open session ' + esc(s.session) + '</a></p>';
      out.innerHTML = h;
      $('go').disabled = false;
      if (s.link && s.results.every((x) => x.ok)) window.location.href = s.link;
      return;
    }
    out.innerHTML = h;
    setTimeout(poll, 200);
  };
  poll();
});
</script></body></html>
"#;
