//! Trace viewer routes: level-of-detail viewports, event details, search, range statistics and
//! Chrome-trace export, over the trace index of the run (one per host selection, built once).

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use std::sync::Arc;
use xlens_analysis::base::trace::TraceIndex;

use crate::{discover, error_json, Shared};

#[derive(Deserialize, Default)]
pub struct TraceQuery {
    pub run: Option<String>,
    pub host: Option<String>,
    pub start_ps: Option<i64>,
    pub end_ps: Option<i64>,
    pub width: Option<u32>,
    pub track: Option<u32>,
    pub index: Option<u32>,
    pub q: Option<String>,
    pub limit: Option<usize>,
    /// `inline`: names as strings in events and summaries (as the CLI prints them).
    pub names: Option<String>,
}

/// The index for the query's run and host, building it on first use (off the async runtime).
pub async fn index_for(
    state: &Shared,
    q: &TraceQuery,
) -> Result<Arc<TraceIndex>, (StatusCode, String)> {
    let sessions = discover(state)
        .await
        .map_err(|e| (StatusCode::NOT_FOUND, e))?;
    let session = match q.run.as_deref().filter(|r| !r.is_empty()) {
        Some(r) => sessions.iter().find(|s| s.name == r),
        None => sessions.first(),
    }
    .cloned()
    .ok_or_else(|| {
        (
            StatusCode::NOT_FOUND,
            format!("no run `{}`", q.run.as_deref().unwrap_or("")),
        )
    })?;
    let hosts: Vec<xlens_store::HostFile> = session
        .hosts
        .iter()
        .filter(|h| {
            q.host
                .as_deref()
                .is_none_or(|x| x.is_empty() || x == h.host)
        })
        .cloned()
        .collect();
    if hosts.is_empty() {
        return Err((
            StatusCode::NOT_FOUND,
            format!(
                "no host `{}` in run `{}`",
                q.host.as_deref().unwrap_or(""),
                session.name
            ),
        ));
    }
    let narrowed = xlens_store::Session { hosts, ..session };
    let st = state.clone();
    tokio::task::spawn_blocking(move || {
        let run = st.cache.run(vec![narrowed]);
        let idx = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.trace_index()))
            .unwrap_or_else(
                |_| Err("building the trace index failed (a bug in xlens)".to_string()),
            );
        crate::ProfileCache::warm_in_background(run);
        idx
    })
    .await
    .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| (StatusCode::UNPROCESSABLE_ENTITY, e))
}

pub async fn viewport(State(state): State<Shared>, Query(q): Query<TraceQuery>) -> Response {
    let idx = match index_for(&state, &q).await {
        Ok(i) => i,
        Err((c, m)) => return error_json(c, m),
    };
    let start = q.start_ps.unwrap_or(idx.span.0);
    let end = q.end_ps.unwrap_or(idx.span.1);
    let width = q.width.unwrap_or(1500);
    let inline = q.names.as_deref() == Some("inline");
    // Written straight from the typed viewport (a JSON value tree first doubled the time on
    // whole-trace windows of a few MB); names inline goes through the value to rewrite them.
    let v = tokio::task::spawn_blocking(move || {
        let vp = idx.query(start, end, width);
        if inline {
            serde_json::to_vec(&vp.to_json(true))
        } else {
            serde_json::to_vec(&vp)
        }
    })
    .await;
    match v {
        Ok(Ok(body)) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Ok(Err(e)) => error_json(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error_json(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub async fn event(State(state): State<Shared>, Query(q): Query<TraceQuery>) -> Response {
    let idx = match index_for(&state, &q).await {
        Ok(i) => i,
        Err((c, m)) => return error_json(c, m),
    };
    match idx.details(q.track.unwrap_or(0), q.index.unwrap_or(0)) {
        Some(d) => Json(d).into_response(),
        None => error_json(StatusCode::NOT_FOUND, "no such event"),
    }
}

pub async fn search(State(state): State<Shared>, Query(q): Query<TraceQuery>) -> Response {
    let idx = match index_for(&state, &q).await {
        Ok(i) => i,
        Err((c, m)) => return error_json(c, m),
    };
    let text = q.q.clone().unwrap_or_default();
    let limit = q.limit.unwrap_or(500).min(100_000);
    match tokio::task::spawn_blocking(move || idx.search(&text, limit)).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => error_json(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub async fn range(State(state): State<Shared>, Query(q): Query<TraceQuery>) -> Response {
    let idx = match index_for(&state, &q).await {
        Ok(i) => i,
        Err((c, m)) => return error_json(c, m),
    };
    let (a, b) = (
        q.start_ps.unwrap_or(idx.span.0),
        q.end_ps.unwrap_or(idx.span.1),
    );
    match tokio::task::spawn_blocking(move || idx.range_stats(a, b)).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => error_json(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub async fn export(State(state): State<Shared>, Query(q): Query<TraceQuery>) -> Response {
    let idx = match index_for(&state, &q).await {
        Ok(i) => i,
        Err((c, m)) => return error_json(c, m),
    };
    let range = match (q.start_ps, q.end_ps) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let name = format!(
        "{}{}.trace.json",
        q.run
            .as_deref()
            .unwrap_or("trace")
            .replace(['/', '\\', '"'], "_"),
        if range.is_some() { "-range" } else { "" }
    );
    match tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        idx.export_chrome(range, &mut out);
        out
    })
    .await
    {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, "application/json".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{name}\""),
                ),
            ],
            body,
        )
            .into_response(),
        Err(e) => error_json(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
