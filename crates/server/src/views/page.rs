//! The page shell (header with the run / tool / host selectors, then the tool's view), the trace
//! viewer's body and the capture page.

use maud::{html, Markup, DOCTYPE};
use xlens_analysis::tools;
use xlens_store::Session;

use super::ui::Url;

/// The page: header with selectors, then `body`.
pub fn shell(
    label: &str,
    sessions: &[Session],
    current: Option<&Session>,
    tool: &str,
    host: Option<&str>,
    base: Option<&str>,
    body: Markup,
) -> Markup {
    let api = current.map(|c| Url::api(tool, &c.name).with_opt("host", host));
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "xlens · " (tool) }
                link rel="stylesheet" href="/static/app.css";
            }
            body {
                header {
                    form id="nav" method="get" action="/" {
                        span class="brand" { "xlens" }
                        span class="label" { (label) }
                        label { "Run " select name="run" {
                            @for s in sessions {
                                option value=(s.name) selected[current.is_some_and(|c| c.name == s.name)] { (s.name) }
                            }
                        } }
                        " "
                        label { "Tool " select name="tool" {
                            @for t in tools::infos() {
                                option value=(t.name) selected[t.name == tool] title=(t.description) { (t.title) }
                            }
                        } }
                        " "
                        label { "Host " select name="host" {
                            option value="" { "all hosts" }
                            @if let Some(c) = current {
                                @for h in &c.hosts {
                                    option value=(h.host) selected[Some(h.host.as_str()) == host] { (h.host) }
                                }
                            }
                        } }
                        @if super::diff::COMPARABLE.contains(&tool) {
                            " "
                            label title="Show this run's changes against another run (base=)" { "Compare with " select name="base" {
                                option value="" { "—" }
                                @for s in sessions.iter().filter(|s| current.is_none_or(|c| c.name != s.name)) {
                                    option value=(s.name) selected[base == Some(s.name.as_str())] { (s.name) }
                                }
                            } }
                        }
                        noscript { button type="submit" { "Show" } }
                        a href="/capture" class="capture-link" { "Capture…" }
                        " "
                        button type="button" id="copy-link" title="Copy a link to exactly this view (run, tool, host, options, trace window and selected event)" { "Copy link" }
                        input id="share-url" type="text" readonly hidden aria-label="Link to this view";
                        span class="api" {
                            @if let Some(api) = &api {
                                a href=(api) { "JSON" }
                                " · "
                                a href=(format!("{}&format=csv", api.as_str())) download { "CSV" }
                            }
                        }
                    }
                }
                main class=(if tool == "trace_viewer" { "wide" } else { "" }) { (body) }
                script type="module" src="/static/app.js" {}
            }
        }
    }
}

/// The trace viewer's page body; `trace.js` fills it.
pub fn trace_body() -> Markup {
    html! {
        div id="trace" class="tv" {
            div class="tv-bar" {
                form class="tv-search" {
                    input type="search" placeholder="Search all events by name" aria-label="search";
                    button { "Search" }
                }
                " "
                span class="dim" { "W/S zoom · A/D pan · wheel scroll · ctrl+wheel zoom · drag pan · shift+drag select range · click: details · 0: whole trace" }
                " "
                a href="" class="tv-export" { "Export whole trace (Chrome JSON)" }
            }
            div class="tv-results" {}
            div class="tv-main" {
                div class="tv-canvas-wrap" { canvas {} div class="tv-tooltip" hidden {} }
                aside id="tv-details" class="tv-details" {
                    p class="dim" { "Click an event to pin its details here; shift+drag to measure a range." }
                }
            }
            div class="tv-status dim" {}
        }
        script type="module" src="/static/trace.js" {}
    }
}

/// The capture page: a form that `capture.js` posts to `/api/capture`, then follows.
pub fn capture(logdir: &str) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "xlens · capture" }
                link rel="stylesheet" href="/static/app.css";
            }
            body class="cap" {
                main {
                    p { a href="/" { "← xlens" } }
                    h1 { "Capture a profile" }
                    p {
                        "From running jobs' profiler servers ("
                        code { "jax.profiler.start_server(9999)" } ", "
                        code { "torch_xla.debug.profiler.start_server(9012)" } ", "
                        code { "tf.profiler.experimental.server.start(6009)" } ", "
                        code { "xlens_profiler::start_server(port)" }
                        "). Several addresses are captured in parallel with one start time. The capture is written to "
                        code { (logdir) } "."
                    }
                    form id="f" action="/api/capture" method="post" {
                        label for="addrs" { "Addresses (HOST:PORT, comma-separated)" }
                        input id="addrs" name="addrs" value="127.0.0.1:9999" required;
                        label for="duration" { "Duration (s)" }
                        input id="duration" name="duration" type="number" min="0.01" step="0.01" value="2";
                        label for="session" { "Session name (optional)" }
                        input id="session" name="session" placeholder="timestamp";
                        label for="host" { "Host tracer level" }
                        select id="host" {
                            option value="0" { "0 off" }
                            option value="1" { "1 user annotations" }
                            option value="2" selected { "2 + runtime" }
                            option value="3" { "3 verbose" }
                        }
                        label for="device" { "Device tracer level" }
                        select id="device" {
                            option value="0" { "0 off" }
                            option value="1" selected { "1 on" }
                        }
                        label for="python" { "Python tracer level" }
                        select id="python" {
                            option value="0" selected { "0 off" }
                            option value="1" { "1 on" }
                        }
                        label for="delay" { "Delay (ms)" }
                        input id="delay" type="number" min="0" value="0";
                        span {}
                        button id="go" type="submit" { "Capture" }
                    }
                    div id="out" {}
                }
                script type="module" src="/static/capture.js" {}
            }
        }
    }
}
