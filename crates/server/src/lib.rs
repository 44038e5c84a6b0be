//! The xlens server: a JSON API per tool and server-rendered HTML pages, over one log directory.
//!
//! Routes (GET unless marked POST):
//! * `/` — the HTML shell; `?run=R&tool=T&host=H` selects what it shows (deep-linkable).
//! * `/api/runs` — sessions, newest first, with their hosts and tools.
//! * `/api/tools` — every tool xlens has.
//! * `/api/tool/{tool}?run=R[&host=H][&format=csv|text]` — one tool's output (JSON by default).
//! * `/capture`, `POST /api/capture`, `/api/capture/{id}` — capture from running jobs' profiler
//!   servers into the log dir, with progress (see `capture_api`).
//! * `/static/*` — the embedded CSS and JavaScript.
//!
//! Each host file is decoded once, on first use, and shared by all tools. A file that fails to
//! load keeps its error in the cache and shows it; other runs keep working.

mod cache;
mod capture_api;
mod html;
mod memory_html;
mod op_html;
mod trace_api;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use xlens_analysis::tools::{self, ToolInfo};
use xlens_store::Session;

pub use cache::ProfileCache;

/// Shared server state.
pub struct AppState {
    pub logdir: PathBuf,
    /// Shown in the page header (e.g. "bundled demo").
    pub label: String,
    pub cache: ProfileCache,
}

impl AppState {
    pub fn new(logdir: PathBuf, label: impl Into<String>) -> Shared {
        Arc::new(AppState {
            logdir,
            label: label.into(),
            cache: ProfileCache::default(),
        })
    }
}

pub type Shared = Arc<AppState>;

/// Builds the router (used by [`serve`] and by tests).
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/runs", get(api_runs))
        .route("/api/tools", get(api_tools))
        .route("/api/tool/{tool}", get(api_tool))
        .route("/api/trace/viewport", get(trace_api::viewport))
        .route("/api/trace/event", get(trace_api::event))
        .route("/api/trace/search", get(trace_api::search))
        .route("/api/trace/range", get(trace_api::range))
        .route("/api/trace/export", get(trace_api::export))
        .route("/static/app.css", get(css))
        .route("/static/app.js", get(js))
        .route("/static/trace.js", get(trace_js))
        .route("/static/memory.js", get(memory_js))
        .merge(capture_api::routes())
        .with_state(state)
}

/// Serves on `bind` until the process is stopped.
pub async fn serve(state: Shared, bind: SocketAddr) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(bind).await?;
    serve_on(listener, state).await
}

/// Serves on an already bound listener (tests bind port 0).
pub async fn serve_on(listener: tokio::net::TcpListener, state: Shared) -> std::io::Result<()> {
    axum::serve(listener, router(state)).await
}

#[derive(Serialize)]
struct RunInfo {
    name: String,
    dir: String,
    modified_s: u64,
    hosts: Vec<xlens_store::HostFile>,
    tools: Vec<&'static str>,
}

fn error_json(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(serde_json::json!({ "error": msg.into() }))).into_response()
}

/// Discovers sessions off the async runtime (the walk touches the disk).
async fn discover(state: &Shared) -> Result<Vec<Session>, String> {
    let dir = state.logdir.clone();
    tokio::task::spawn_blocking(move || xlens_store::discover(&dir).map_err(|e| e.to_string()))
        .await
        .map_err(|e| format!("internal error while listing runs: {e}"))?
}

async fn api_runs(State(state): State<Shared>) -> Response {
    match discover(&state).await {
        Ok(sessions) => Json(
            sessions
                .into_iter()
                .map(|s| RunInfo {
                    tools: tools::tools_for(&s).iter().map(|t| t.name).collect(),
                    name: s.name,
                    dir: s.dir.display().to_string(),
                    modified_s: s.modified_s,
                    hosts: s.hosts,
                })
                .collect::<Vec<_>>(),
        )
        .into_response(),
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

/// Runs a tool on the blocking pool; never lets a panic escape.
async fn run_tool(
    state: &Shared,
    tool: String,
    run: Option<String>,
    host: Option<String>,
    params: Vec<(String, String)>,
) -> Result<(Session, tools::ToolOutput), (StatusCode, String)> {
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
    let s2 = session.clone();
    let out = tokio::task::spawn_blocking(move || {
        let narrowed = tools::select_host(std::slice::from_ref(&s2), host.as_deref())
            .map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
        let t = tools::find(&tool).map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
        let run = st.cache.run(narrowed);
        let out = t.run_query(&run, &params).map_err(|e| match e {
            tools::ToolError::Params(_) => (StatusCode::BAD_REQUEST, e.to_string()),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        });
        ProfileCache::warm_in_background(run);
        out
    })
    .await
    .map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the tool failed unexpectedly: {e}"),
        )
    })??;
    Ok((session, out))
}

async fn api_tool(
    State(state): State<Shared>,
    UrlPath(tool): UrlPath<String>,
    Query(q): Query<ToolQuery>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    match run_tool(&state, tool, q.run, q.host, params).await {
        Ok((_, out)) => match q.format.as_deref() {
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
    /// `op_profile`: grouping (`program`, `category` or `provenance`).
    group: Option<String>,
}

/// The memory viewer's module with the largest peak (the listing is sorted that way).
async fn largest_module(
    state: &Shared,
    run: &Option<String>,
    host: &Option<String>,
    params: &[(String, String)],
) -> Option<String> {
    let (_, out) = run_tool(
        state,
        "memory_viewer".to_string(),
        run.clone(),
        host.clone(),
        params.to_vec(),
    )
    .await
    .ok()?;
    out.json().ok()?["hosts"]
        .as_array()?
        .iter()
        .filter_map(|h| h["modules"].as_array()?.first())
        .max_by_key(|m| m["peak_heap_bytes"].as_i64().unwrap_or(0))
        .and_then(|m| m["name"].as_str())
        .map(str::to_string)
}

async fn page(
    State(state): State<Shared>,
    Query(q): Query<PageQuery>,
    Query(mut params): Query<Vec<(String, String)>>,
) -> Response {
    let sessions = match discover(&state).await {
        Ok(s) => s,
        Err(e) => {
            return (
                StatusCode::NOT_FOUND,
                Html(html::shell(
                    &state.label,
                    &[],
                    None,
                    "",
                    None,
                    &html::error_box(&e),
                )),
            )
                .into_response()
        }
    };
    let run = q
        .run
        .clone()
        .or_else(|| sessions.first().map(|s| s.name.clone()));
    let tool = q.tool.clone().unwrap_or_else(|| "report".to_string());
    let host = q.host.clone().filter(|h| !h.is_empty());
    let body = if tool == "trace_viewer" {
        // The trace viewer draws itself from the level-of-detail API.
        html::trace_body()
    } else {
        let has_module = params
            .iter()
            .any(|(k, v)| k == "module" && !v.trim().is_empty());
        if tool == "memory_viewer" && !has_module {
            // Show the module with the largest peak rather than none.
            if let Some(m) = largest_module(&state, &run, &host, &params).await {
                params.push(("module".to_string(), m));
            }
        }
        match run_tool(&state, tool.clone(), run.clone(), host.clone(), params).await {
            Ok((sess, out)) => match tool.as_str() {
                "op_profile" => op_html::op_profile_view(
                    &out.json().unwrap_or_default(),
                    &sess.name,
                    q.group.as_deref(),
                ),
                "hlo_stats" => op_html::hlo_stats_view(&out.json().unwrap_or_default(), &sess.name),
                "roofline_model" => {
                    op_html::roofline_view(&out.json().unwrap_or_default(), &sess.name)
                }
                _ => html::tool_body(&tool, &out),
            },
            Err((_, msg)) => html::error_box(&msg),
        }
    };
    let current = sessions.iter().find(|s| Some(&s.name) == run.as_ref());
    Html(html::shell(
        &state.label,
        &sessions,
        current,
        &tool,
        host.as_deref(),
        &body,
    ))
    .into_response()
}

async fn css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../assets/app.css"),
    )
        .into_response()
}

async fn trace_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../assets/trace.js"),
    )
        .into_response()
}

async fn memory_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../assets/memory.js"),
    )
        .into_response()
}

async fn js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../assets/app.js"),
    )
        .into_response()
}
