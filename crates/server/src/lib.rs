//! The xlens server: a JSON API per tool and server-rendered HTML pages, over one log directory.
//!
//! Routes (GET unless marked POST):
//! * `/` — the HTML shell; `?run=R&tool=T&host=H` selects what it shows (deep-linkable).
//! * `/api/runs` — sessions, newest first, with their hosts and tools; sessions of one capture
//!   written by several hosts also as one run `A + B` ahead of them (`runs`).
//! * `/api/tools` — every tool xlens has.
//! * `/api/tool/{tool}?run=R[&host=H][&format=csv|text]` — one tool's output (JSON by default).
//! * `/capture`, `POST /api/capture`, `/api/capture/{id}` — capture from running jobs' profiler
//!   servers into the log dir, with progress (see `capture_api`).
//! * `/static/{file}` — the embedded CSS and JavaScript modules (`assets/`, listed in `ASSETS`).
//!
//! Each page is its tool's view of the tool's typed result (`views`: one view per tool, found by
//! the tool's name; tools without one show their text).
//!
//! Each host file is decoded once, on first use, and shared by all tools. A file that fails to
//! load keeps its error in the cache and shows it; other runs keep working.

pub mod access;
pub mod cache;
mod capture_api;
pub mod export;
pub mod mcp;
pub mod runs;
mod trace_api;
mod views;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use maud::Markup;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use xlens_analysis::tools::{self, Run, ToolInfo};
use xlens_store::Session;

pub use access::{Access, CapturePolicy};
pub use cache::ProfileCache;

/// Shared server state.
pub struct AppState {
    pub logdir: PathBuf,
    /// Shown in the page header (e.g. "bundled demo").
    pub label: String,
    pub cache: ProfileCache,
    /// A bucket's last listing and when it was made: listing a bucket costs round trips, so
    /// requests within [`listing_ttl`] share one (new sessions still show up after it).
    listing: std::sync::Mutex<Option<(std::time::Instant, Vec<Session>)>>,
    /// Sessions offered as one run ([`runs`]), and the candidates they were found among.
    groups: std::sync::Mutex<Option<(String, Vec<runs::Grouped>)>>,
    pub limits: Limits,
    /// Token and capture policy ([`access`]).
    pub access: Access,
}

/// How long a bucket listing is reused: `XLENS_LISTING_TTL_S` seconds, else 10.
fn listing_ttl() -> std::time::Duration {
    let s = std::env::var("XLENS_LISTING_TTL_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    std::time::Duration::from_secs(s)
}

/// Seconds from an environment variable (fractions allowed), when set and positive.
fn seconds_from_env(name: &str) -> Option<std::time::Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| std::time::Duration::from_secs_f64(s.min(1e6)))
}

/// What one request and one connection may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request taking longer is answered 503 (its work goes on in the background, so a retry
    /// answers from what it computed): `XLENS_REQUEST_TIMEOUT_S`, else 120 s.
    pub request: std::time::Duration,
    /// A client must send a request's headers within this (`XLENS_HEADER_READ_TIMEOUT_S`, else
    /// 30 s), so a slow or silent client cannot hold a connection open.
    pub header_read: std::time::Duration,
    /// Resident memory the loaded profiles may bring the process to, in bytes (0: no budget):
    /// least recently used files are evicted past it ([`cache::ProfileCache`]). Default: half
    /// of this machine's memory.
    pub memory_budget: u64,
}

/// Bytes from `4G`, `512M`, `1.5GiB`, `300MB`, `1024` (K, M, G, T: powers of 1024).
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let cut = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(cut);
    let n: f64 = num.trim().parse().ok()?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    (n.is_finite() && n >= 0.0).then_some((n * scale as f64) as u64)
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request: seconds_from_env("XLENS_REQUEST_TIMEOUT_S")
                .unwrap_or(std::time::Duration::from_secs(120)),
            header_read: seconds_from_env("XLENS_HEADER_READ_TIMEOUT_S")
                .unwrap_or(std::time::Duration::from_secs(30)),
            memory_budget: std::env::var("XLENS_MEMORY_BUDGET")
                .ok()
                .and_then(|v| parse_size(&v))
                .unwrap_or(cache::physical_memory() / 2),
        }
    }
}

impl AppState {
    pub fn new(logdir: PathBuf, label: impl Into<String>) -> Shared {
        Self::with_limits(logdir, label, Limits::default())
    }

    /// [`AppState::new`] with other limits.
    pub fn with_limits(logdir: PathBuf, label: impl Into<String>, limits: Limits) -> Shared {
        Self::with_access(logdir, label, limits, Access::default())
    }

    /// [`AppState::with_limits`] with access settings (an exposed server's token).
    pub fn with_access(
        logdir: PathBuf,
        label: impl Into<String>,
        limits: Limits,
        access: Access,
    ) -> Shared {
        Arc::new(AppState {
            logdir,
            label: label.into(),
            cache: ProfileCache::with_budget(limits.memory_budget),
            listing: Default::default(),
            groups: Default::default(),
            limits,
            access,
        })
    }
}

/// Answers 503 when a request takes longer than the state's time limit.
async fn time_limit(
    State(state): State<Shared>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let limit = state.limits.request;
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => error_json(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the request took longer than the server's limit of {:.1} s (XLENS_REQUEST_TIMEOUT_S); what it started goes on in the background, so asking again later may answer at once",
                limit.as_secs_f64()
            ),
        ),
    }
}

pub type Shared = Arc<AppState>;

/// Builds the router (used by [`serve`] and by tests).
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/runs", get(api_runs))
        .route("/api/tools", get(api_tools))
        .route("/api/downloads", get(api_downloads))
        .route("/api/status", get(api_status))
        .route("/api/tool/{tool}", get(api_tool))
        .route("/api/diff", get(api_diff))
        .route("/api/trace/viewport", get(trace_api::viewport))
        .route("/api/trace/event", get(trace_api::event))
        .route("/api/trace/search", get(trace_api::search))
        .route("/api/trace/range", get(trace_api::range))
        .route("/api/trace/export", get(trace_api::export))
        .route("/static/{name}", get(asset))
        .merge(capture_api::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            time_limit,
        ))
        // MCP over streamable HTTP (a tool call may take as long as the tool does).
        .route_service("/mcp", mcp::http_service(state.clone()))
        // Outermost: nothing runs for a request without the token.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            access::guard,
        ))
        .with_state(state)
}

/// Serves on `bind` until the process is stopped.
pub async fn serve(state: Shared, bind: SocketAddr) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(bind).await?;
    serve_on(listener, state).await
}

/// Serves on an already bound listener (tests bind port 0).
///
/// Each connection is its own task; a client must send a request's headers within
/// [`Limits::header_read`], so a slow or silent client cannot hold a connection open forever. Accept errors (too many open files) pause the loop briefly
/// instead of ending it.
pub async fn serve_on(listener: tokio::net::TcpListener, state: Shared) -> std::io::Result<()> {
    let header_timeout = state.limits.header_read;
    let app = router(state);
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let _ = b
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        });
    }
}

#[derive(Serialize)]
struct RunInfo {
    name: String,
    dir: String,
    modified_s: u64,
    hosts: Vec<xlens_store::HostFile>,
    tools: Vec<&'static str>,
    /// A run of several sessions ([`runs`]): its sessions and how they were matched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sessions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matched: Option<String>,
}

/// The group `run` names, when it is a run of several sessions.
fn group_of(state: &Shared, run: Option<&str>) -> Option<runs::Grouped> {
    let run = run?;
    let g = state.groups.lock().ok()?;
    g.as_ref()?
        .1
        .iter()
        .find(|g| g.session.name == run)
        .cloned()
}

fn error_json(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": msg.into() }))).into_response()
}

/// Memory in use and budget, files loaded and evicted.
async fn api_status(State(state): State<Shared>) -> Response {
    Json(state.cache.status()).into_response()
}

/// Downloads from buckets in progress: URL → (bytes done, bytes in all).
static DOWNLOADS: std::sync::Mutex<std::collections::BTreeMap<String, (u64, u64)>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Notes a bucket download's progress (the store's progress hook calls this), for the page that
/// waits on it.
pub fn record_download(url: &str, done: u64, total: u64) {
    if let Ok(mut d) = DOWNLOADS.lock() {
        if done >= total {
            d.remove(url);
        } else {
            d.insert(url.to_string(), (done, total));
        }
    }
}

/// The hosts of `run` (narrowed to `host`) in `sessions`, when some of them still have to be
/// loaded from a bucket; `None` when the page can be answered at once.
fn hosts_to_fetch(
    state: &Shared,
    sessions: &[Session],
    run: Option<&str>,
    host: Option<&str>,
) -> Option<Vec<xlens_store::HostFile>> {
    xlens_store::bucket_url(&state.logdir)?;
    let session = sessions.iter().find(|s| Some(s.name.as_str()) == run)?;
    let hosts: Vec<_> = session
        .hosts
        .iter()
        .filter(|h| host.is_none_or(|w| w == h.host))
        .cloned()
        .collect();
    hosts
        .iter()
        .any(|h| !state.cache.is_loaded(h))
        .then_some(hosts)
}

#[derive(Deserialize)]
struct WaitQuery {
    run: Option<String>,
    host: Option<String>,
}

/// What a page waiting on a bucket shows: the downloads in flight, and whether `run` (narrowed
/// to `host`) is loaded.
async fn api_downloads(State(state): State<Shared>, Query(q): Query<WaitQuery>) -> Response {
    let downloads: Vec<serde_json::Value> = DOWNLOADS
        .lock()
        .map(|d| {
            d.iter()
                .map(|(url, (done, total))| {
                    serde_json::json!({ "url": url, "done": done, "total": total })
                })
                .collect()
        })
        .unwrap_or_default();
    let ready = match &q.run {
        Some(run) => match discover(&state).await {
            Ok(sessions) => {
                hosts_to_fetch(&state, &sessions, Some(run), q.host.as_deref()).is_none()
            }
            Err(_) => true,
        },
        None => downloads.is_empty(),
    };
    Json(serde_json::json!({ "downloads": downloads, "ready": ready })).into_response()
}

/// Discovers sessions off the async runtime (the walk touches the disk).
/// A bucket's listing is reused for a few seconds (see [`AppState::listing`]); a local folder is
/// walked every time.
async fn discover(state: &Shared) -> Result<Vec<Session>, String> {
    let remote = xlens_store::bucket_url(&state.logdir).is_some();
    if remote {
        if let Ok(g) = state.listing.lock() {
            if let Some((at, sessions)) = g.as_ref() {
                if at.elapsed() < listing_ttl() {
                    return Ok(sessions.clone());
                }
            }
        }
    }
    let dir = state.logdir.clone();
    let sessions =
        tokio::task::spawn_blocking(move || xlens_store::discover(&dir).map_err(|e| e.to_string()))
            .await
            .map_err(|e| format!("internal error while listing runs: {e}"))??;
    let sessions = with_groups(state, sessions, remote).await;
    if remote {
        if let Ok(mut g) = state.listing.lock() {
            *g = Some((std::time::Instant::now(), sessions.clone()));
        }
    }
    Ok(sessions)
}

/// `sessions` with the sessions of one capture also offered as one run ([`runs`]). In a
/// bucket, only once every candidate's files are downloaded (their windows are read from the
/// profiles); until then the sessions are listed on their own.
async fn with_groups(state: &Shared, sessions: Vec<Session>, remote: bool) -> Vec<Session> {
    let key = runs::candidates_key(&sessions);
    if key.is_empty() {
        return sessions;
    }
    if let Ok(g) = state.groups.lock() {
        if let Some((k, groups)) = g.as_ref() {
            if *k == key {
                return runs::with_groups(sessions, groups);
            }
        }
    }
    if remote
        && runs::candidate_files(&sessions)
            .iter()
            .any(|h| !state.cache.is_loaded(h))
    {
        return sessions;
    }
    let st = state.clone();
    let listed = sessions.clone();
    let groups = tokio::task::spawn_blocking(move || runs::groups(&st.cache, &listed))
        .await
        .unwrap_or_default();
    if let Ok(mut g) = state.groups.lock() {
        *g = Some((key, groups.clone()));
    }
    runs::with_groups(sessions, &groups)
}

/// Every run with its hosts and tools, newest first (`/api/runs`, MCP's `runs`).
async fn runs_json(state: &Shared) -> Result<serde_json::Value, String> {
    let sessions = discover(state).await?;
    let runs: Vec<RunInfo> = sessions
        .into_iter()
        .map(|s| {
            let g = group_of(state, Some(&s.name));
            RunInfo {
                tools: tools::tools_for(&s).iter().map(|t| t.name).collect(),
                sessions: g.as_ref().map(|g| g.members.clone()).unwrap_or_default(),
                matched: g.map(|g| g.matched),
                name: s.name,
                dir: s.dir.display().to_string(),
                modified_s: s.modified_s,
                hosts: s.hosts,
            }
        })
        .collect();
    serde_json::to_value(runs).map_err(|e| e.to_string())
}

async fn api_runs(State(state): State<Shared>) -> Response {
    match runs_json(&state).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => error_json(StatusCode::NOT_FOUND, e),
    }
}

async fn api_tools() -> Json<Vec<ToolInfo>> {
    Json(tools::infos())
}

/// The query keys the server reads itself; every other key is a tool parameter.
#[derive(Deserialize, Default)]
pub struct ToolQuery {
    pub run: Option<String>,
    pub host: Option<String>,
    pub format: Option<String>,
}

/// Runs `f` on the blocking pool over run `run` (the newest when `None`) narrowed to `host`,
/// then warms the run's other analyses in the background; never lets a panic escape.
async fn on_run<T: Send + 'static>(
    state: &Shared,
    run: Option<String>,
    host: Option<String>,
    f: impl FnOnce(&Session, &Run) -> Result<T, (StatusCode, String)> + Send + 'static,
) -> Result<T, (StatusCode, String)> {
    let sessions = discover(state)
        .await
        .map_err(|e| (StatusCode::NOT_FOUND, e))?;
    let run = run.filter(|r| !r.is_empty());
    let session = match &run {
        Some(r) => sessions
            .iter()
            .find(|s| &s.name == r)
            .cloned()
            .ok_or_else(|| {
                (
                    StatusCode::NOT_FOUND,
                    format!(
                        "no run `{r}`; runs: {}",
                        sessions
                            .iter()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
        None => sessions
            .first()
            .cloned()
            .ok_or((StatusCode::NOT_FOUND, "no runs".to_string()))?,
    };
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        let narrowed = tools::select_host(std::slice::from_ref(&session), host.as_deref())
            .map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
        let run = st.cache.run(narrowed);
        let out = f(&session, &run);
        ProfileCache::warm_in_background(run);
        out
    })
    .await
    .map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the tool failed unexpectedly: {e}"),
        )
    })?
}

fn tool_error(e: tools::ToolError) -> (StatusCode, String) {
    match e {
        tools::ToolError::Params(_) => (StatusCode::BAD_REQUEST, e.to_string()),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Runs a tool with query-string parameters.
async fn run_tool(
    state: &Shared,
    tool: String,
    run: Option<String>,
    host: Option<String>,
    params: Vec<(String, String)>,
) -> Result<tools::ToolOutput, (StatusCode, String)> {
    on_run(state, run, host, move |_, run| {
        let t = tools::find(&tool).map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
        t.run_query(run, &params).map_err(tool_error)
    })
    .await
}

async fn api_tool(
    State(state): State<Shared>,
    UrlPath(tool): UrlPath<String>,
    Query(q): Query<ToolQuery>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    match run_tool(&state, tool, q.run, q.host, params).await {
        Ok(out) => match q.format.as_deref() {
            Some("csv") => match out.csv() {
                Some(csv) => {
                    ([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], csv).into_response()
                }
                None => error_json(StatusCode::BAD_REQUEST, "this tool has no CSV output"),
            },
            Some("text") => (
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                out.text(),
            )
                .into_response(),
            Some("json") | None => match out.json_string(false) {
                Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
                Err(e) => error_json(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            },
            Some(other) => error_json(
                StatusCode::BAD_REQUEST,
                format!("unknown format `{other}`; use json, csv or text"),
            ),
        },
        Err((code, msg)) => error_json(code, msg),
    }
}

#[derive(Deserialize, Default)]
struct PageQuery {
    run: Option<String>,
    tool: Option<String>,
    host: Option<String>,
    /// "Compare with": the baseline run.
    base: Option<String>,
}

/// The comparison of `run` (NEW; the first run when `None`) against `base`, both narrowed to
/// `host` when given.
async fn diff_of(
    state: &Shared,
    base: String,
    run: Option<String>,
    host: Option<String>,
) -> Result<xlens_analysis::compare::Diff, (StatusCode, String)> {
    let sessions = discover(state)
        .await
        .map_err(|e| (StatusCode::NOT_FOUND, e))?;
    let find = |name: Option<&str>| -> Result<Session, (StatusCode, String)> {
        let s = match name {
            Some(n) => sessions.iter().find(|s| s.name == n),
            None => sessions.first(),
        };
        s.cloned().ok_or_else(|| {
            (
                StatusCode::NOT_FOUND,
                format!(
                    "no run `{}`; runs: {}",
                    name.unwrap_or_default(),
                    sessions
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    };
    let (b, n) = (find(Some(&base))?, find(run.as_deref())?);
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        let narrow = |s: &Session| {
            tools::select_host(std::slice::from_ref(s), host.as_deref())
                .map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))
        };
        let (rb, rn) = (st.cache.run(narrow(&b)?), st.cache.run(narrow(&n)?));
        Ok(xlens_analysis::compare::diff(
            &b.name,
            &rb,
            &n.name,
            &rn,
            xlens_analysis::compare::OpsScope::All,
        ))
    })
    .await
    .map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the comparison failed unexpectedly: {e}"),
        )
    })?
}

/// `/api/diff?base=RUN&run=RUN[&host=H]`: what `xlens diff --json` prints (without conditions).
async fn api_diff(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Response {
    let Some(base) = q.base.clone().filter(|b| !b.is_empty()) else {
        return (StatusCode::BAD_REQUEST, "base= names the baseline run").into_response();
    };
    match diff_of(
        &state,
        base,
        q.run.clone(),
        q.host.clone().filter(|h| !h.is_empty()),
    )
    .await
    {
        Ok(d) => axum::Json(d).into_response(),
        Err((code, msg)) => (code, msg).into_response(),
    }
}

/// The page body of `tool` on `run`: the tool's view ([`views::VIEWS`]) of its output, or an
/// error box.
async fn page_body(
    state: &Shared,
    tool: &str,
    run: Option<String>,
    host: Option<String>,
    params: Vec<(String, String)>,
) -> Markup {
    let view = views::view_for(tool);
    if let Some(body) = view.body_without_output() {
        return body;
    }
    let tool = tool.to_string();
    let shown = on_run(state, run, host.clone(), move |session, run| {
        let t = tools::find(&tool).map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
        let mut params = params;
        let mut out = t.run_query(run, &params).map_err(tool_error)?;
        if let Some(p) = view.refine(&out, &params) {
            params.push(p);
            out = t.run_query(run, &params).map_err(tool_error)?;
        }
        let cx = views::Cx {
            session: &session.name,
            host: host.as_deref(),
            query: &params,
        };
        Ok(view.render(&out, &cx))
    })
    .await;
    match shown {
        Ok(body) => body,
        Err((_, msg)) => views::ui::error_box(&msg),
    }
}

async fn page(
    State(state): State<Shared>,
    Query(q): Query<PageQuery>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let sessions = match discover(&state).await {
        Ok(s) => s,
        Err(e) => {
            let body = views::ui::error_box(&e);
            let html = views::page::shell(&state.label, &[], None, "", None, None, body);
            return (StatusCode::NOT_FOUND, Html(html.into_string())).into_response();
        }
    };
    let run = q
        .run
        .clone()
        .or_else(|| sessions.first().map(|s| s.name.clone()));
    let tool = q.tool.clone().unwrap_or_else(|| "report".to_string());
    let host = q.host.clone().filter(|h| !h.is_empty());
    let base = q.base.clone().filter(|b| !b.is_empty());
    // A run whose files are still in the bucket: answer at once with a page that shows the
    // download's progress and reloads when the run is loaded (fetched in the background here).
    let body = match hosts_to_fetch(&state, &sessions, run.as_deref(), host.as_deref()) {
        Some(hosts) => {
            let st = state.clone();
            tokio::task::spawn_blocking(move || {
                for h in &hosts {
                    let _ = st.cache.get(h);
                }
            });
            views::ui::fetching(
                run.as_deref().unwrap_or_default(),
                host.as_deref(),
                &state.logdir.display().to_string(),
            )
        }
        None => {
            let body = page_body(&state, &tool, run.clone(), host.clone(), params).await;
            match base.clone() {
                Some(b) if views::diff::COMPARABLE.contains(&tool.as_str()) => {
                    let panel = match diff_of(&state, b, run.clone(), host.clone()).await {
                        Ok(d) => views::diff::panel(&d, &tool),
                        Err((_, msg)) => views::ui::error_box(&msg),
                    };
                    maud::html! { (panel) (body) }
                }
                _ => body,
            }
        }
    };
    // A run made of several sessions says so, and how they were matched.
    let body = match group_of(&state, run.as_deref()) {
        Some(g) => maud::html! {
            p class="dim run-group" {
                "One run of " (g.members.len()) " sessions written by different hosts: "
                (g.members.join(", ")) " (" (g.matched) ")."
            }
            (body)
        },
        None => body,
    };
    let current = sessions.iter().find(|s| Some(&s.name) == run.as_ref());
    let html = views::page::shell(
        &state.label,
        &sessions,
        current,
        &tool,
        host.as_deref(),
        base.as_deref(),
        body,
    );
    Html(html.into_string()).into_response()
}

/// The embedded stylesheet and scripts: name, content type, text.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../assets/app.css"),
    ),
    ("app.js", JS, include_str!("../assets/app.js")),
    ("tables.js", JS, include_str!("../assets/tables.js")),
    ("trace.js", JS, include_str!("../assets/trace.js")),
    ("memory.js", JS, include_str!("../assets/memory.js")),
    ("graph.js", JS, include_str!("../assets/graph.js")),
    ("stepchart.js", JS, include_str!("../assets/stepchart.js")),
    ("capture.js", JS, include_str!("../assets/capture.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

async fn asset(UrlPath(name): UrlPath<String>) -> Response {
    match ASSETS.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, text)) => ([(header::CONTENT_TYPE, *kind)], *text).into_response(),
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}
