//! Server-rendered HTML: the page shell (run / tool / host selectors) and each tool's view.

use serde_json::Value;
use std::fmt::Write;
use xlens_analysis::base::fmt::fmt_ps;
use xlens_analysis::tools::{self, ToolOutput};
use xlens_store::Session;

/// Escapes text for HTML element content and attribute values (the SVG views share it).
pub use xlens_analysis::base::fmt::esc;

/// Percent-encodes a query-string value.
pub fn url_enc(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

pub fn error_box(msg: &str) -> String {
    format!("<div class=\"error\" role=\"alert\">{}</div>", esc(msg))
}

/// The page: header with selectors, then `body`.
pub fn shell(
    label: &str,
    sessions: &[Session],
    current: Option<&Session>,
    tool: &str,
    host: Option<&str>,
    body: &str,
) -> String {
    let mut runs = String::new();
    for s in sessions {
        let sel = if current.is_some_and(|c| c.name == s.name) {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            runs,
            "<option value=\"{v}\"{sel}>{v}</option>",
            v = esc(&s.name)
        );
    }
    let mut tool_opts = String::new();
    for t in tools::infos() {
        let sel = if t.name == tool { " selected" } else { "" };
        let _ = write!(
            tool_opts,
            "<option value=\"{}\"{sel} title=\"{}\">{}</option>",
            t.name,
            esc(t.description),
            esc(t.title)
        );
    }
    let mut host_opts = String::from("<option value=\"\">all hosts</option>");
    if let Some(c) = current {
        for h in &c.hosts {
            let sel = if Some(h.host.as_str()) == host {
                " selected"
            } else {
                ""
            };
            let _ = write!(
                host_opts,
                "<option value=\"{v}\"{sel}>{v}</option>",
                v = esc(&h.host)
            );
        }
    }
    let api = current
        .map(|c| {
            let mut q = format!("run={}", url_enc(&c.name));
            if let Some(h) = host {
                let _ = write!(q, "&host={}", url_enc(h));
            }
            format!(
                "<a href=\"/api/tool/{t}?{q}\">JSON</a> · <a href=\"/api/tool/{t}?{q}&format=csv\" download>CSV</a>",
                t = url_enc(tool)
            )
        })
        .unwrap_or_default();
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>xlens · {title}</title><link rel="stylesheet" href="/static/app.css"></head>
<body>
<header><form id="nav" method="get" action="/">
<span class="brand">xlens</span><span class="label">{label}</span>
<label>Run <select name="run">{runs}</select></label>
<label>Tool <select name="tool">{tool_opts}</select></label>
<label>Host <select name="host">{host_opts}</select></label>
<noscript><button type="submit">Show</button></noscript>
<a href="/capture" class="capture-link">Capture…</a>
<span class="api">{api}</span>
</form></header>
<main class="{main_class}">{body}</main>
<script type="module" src="/static/app.js"></script>
</body></html>"#,
        title = esc(tool),
        label = esc(label),
        main_class = if tool == "trace_viewer" { "wide" } else { "" },
    )
}

/// The trace viewer's page body; `trace.js` fills it.
pub fn trace_body() -> String {
    r#"<div id="trace" class="tv">
<div class="tv-bar"><form class="tv-search"><input type="search" placeholder="Search all events by name" aria-label="search"><button>Search</button></form>
<span class="dim">W/S zoom · A/D pan · wheel scroll · ctrl+wheel zoom · drag pan · shift+drag select range · click: details · 0: whole trace</span>
<a href="" class="tv-export">Export whole trace (Chrome JSON)</a></div>
<div class="tv-results"></div>
<div class="tv-main"><div class="tv-canvas-wrap"><canvas></canvas><div class="tv-tooltip" hidden></div></div>
<aside id="tv-details" class="tv-details"><p class="dim">Click an event to pin its details here; shift+drag to measure a range.</p></aside></div>
<div class="tv-status dim"></div>
</div>
<script type="module" src="/static/trace.js"></script>"#
        .to_string()
}

/// The view of one tool's output.
pub fn tool_body(tool: &str, out: &ToolOutput) -> String {
    let json = || out.json().unwrap_or(Value::Null);
    let csv = || out.csv().unwrap_or_default();
    match tool {
        "report" => report_view(&json()),
        "overview_page" => overview_view(&json(), &csv()),
        "input_pipeline_analyzer" => input_pipeline_view(&json(), &csv()),
        "framework_op_stats" | "kernel_stats" => format!(
            "<pre class=\"dim\">{}</pre>{}",
            esc(out.text().lines().next().unwrap_or("")),
            csv_table(&csv())
        ),
        "graph_viewer" => graph_view(&json()),
        "memory_viewer" => crate::memory_html::memory_viewer_view(&json()),
        "memory_profile" => crate::memory_html::memory_profile_view(&json()),
        _ => format!("<pre>{}</pre>", esc(&out.text())),
    }
}

/// The graph viewer: a search form (submitted with the page's run / host selectors) and the
/// server-laid-out SVG; selecting a node draws that op.
fn graph_view(g: &Value) -> String {
    let mut o = String::new();
    let empty = Vec::new();
    let radius = g.get("radius").and_then(Value::as_u64).unwrap_or(2);
    let _ = write!(
        o,
        "<section class=\"graph\" data-module=\"{drawn}\"><h1>Graph viewer</h1><div class=\"graph-form\">\
<input type=\"hidden\" name=\"module\" form=\"nav\" value=\"\">\
<label>HLO op <input type=\"search\" name=\"op\" form=\"nav\" value=\"{op}\" placeholder=\"e.g. fusion.3\" aria-label=\"HLO op name\"></label> \
<label>Radius <input type=\"number\" name=\"radius\" form=\"nav\" min=\"0\" max=\"16\" value=\"{radius}\" style=\"width:4em\"></label> \
<button type=\"submit\" form=\"nav\">Show</button></div>",
        drawn = esc(g.get("module").and_then(Value::as_str).unwrap_or("")),
        op = esc(s(g, "query")),
    );
    for m in g["messages"].as_array().unwrap_or(&empty) {
        let _ = write!(o, "<p class=\"dim\">{}</p>", esc(m.as_str().unwrap_or("")));
    }
    if let (Some(m), Some(f)) = (
        g.get("module").and_then(Value::as_str),
        g.get("focus").and_then(Value::as_str),
    ) {
        let _ = write!(
            o,
            "<p><b>{}</b> in module <code>{}</code> · {} ops, {} edges · radius {} · select an op to centre on it</p>",
            esc(f),
            esc(m),
            g["nodes"].as_array().map_or(0, Vec::len),
            g["edges"].as_array().map_or(0, Vec::len),
            radius
        );
        let also = g["also_in"].as_array().unwrap_or(&empty);
        if !also.is_empty() {
            o.push_str("<p class=\"dim\">Also in: ");
            for a in also {
                let _ = write!(
                    o,
                    "<a href=\"#\" data-op=\"{n}\" data-module=\"{m}\">{m}</a> ",
                    n = esc(s(a, "name")),
                    m = esc(s(a, "module"))
                );
            }
            o.push_str("</p>");
        }
        let _ = write!(
            o,
            "<div class=\"graph-svg\" style=\"overflow:auto;border:1px solid #ddd;max-height:80vh\">{}</div>",
            s(g, "svg")
        );
    }
    let cands = g["candidates"].as_array().unwrap_or(&empty);
    if !cands.is_empty() {
        let _ = write!(
            o,
            "<h3>{} of {} ops whose name contains it</h3><ul class=\"candidates\">",
            cands.len(),
            n(g, "candidate_count")
        );
        for c in cands {
            let _ = write!(
                o,
                "<li><a href=\"#\" data-op=\"{name}\" data-module=\"{module}\">{name}</a> <span class=\"dim\">{opcode} · {module}</span></li>",
                name = esc(s(c, "name")),
                opcode = esc(s(c, "opcode")),
                module = esc(s(c, "module"))
            );
        }
        o.push_str("</ul>");
    }
    o.push_str(
        "<script>document.querySelector('section.graph').addEventListener('click', (e) => {\
const t = e.target.closest('[data-op]'); if (!t) return; e.preventDefault();\
const f = document.getElementById('nav'); if (!f) return;\
f.querySelector('[name=op]').value = t.dataset.op;\
f.querySelector('[name=module]').value = t.dataset.module || e.currentTarget.dataset.module || '';\
const p = new URLSearchParams(new FormData(f)); for (const [k, v] of [...p]) if (!v) p.delete(k);\
location.search = p.toString(); });</script></section>",
    );
    o
}

/// Splits one CSV line (RFC 4180 quotes).
fn csv_split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut q = false;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match (c, q) {
            ('"', true) if it.peek() == Some(&'"') => {
                cur.push('"');
                it.next();
            }
            ('"', _) => q = !q,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A tool's CSV as a sortable, filterable table (`app.js` adds the behaviour).
fn csv_table(csv: &str) -> String {
    let mut lines = csv.lines();
    let Some(head) = lines.next() else {
        return "<p class=\"dim\">Nothing to show.</p>".to_string();
    };
    let mut o = String::from("<input type=\"search\" class=\"table-filter\" placeholder=\"Filter rows\" aria-label=\"filter\"><table class=\"sortable\"><thead><tr>");
    for h in csv_split(head) {
        let _ = write!(o, "<th>{}</th>", esc(&h));
    }
    o.push_str("</tr></thead><tbody>");
    for l in lines {
        o.push_str("<tr>");
        for c in csv_split(l) {
            let _ = write!(o, "<td>{}</td>", esc(&c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>");
    o
}

/// Input pipeline: per host the verdict, the host input time by category, the input op table
/// (every row; which ones XProf lists), then the per-step table.
fn input_pipeline_view(v: &Value, csv: &str) -> String {
    let empty = Vec::new();
    let mut o = String::new();
    for h in v["hosts"].as_array().unwrap_or(&empty) {
        let _ = write!(o, "<h2>Host {}</h2>", esc(s(h, "host")));
        if let Some(e) = h.get("error").and_then(Value::as_str) {
            o.push_str(&error_box(e));
            continue;
        }
        let _ = write!(
            o,
            "<p><b>{}</b></p><p class=\"dim\">{}</p>",
            esc(s(h, "verdict")),
            esc(s(h, "explanation"))
        );
        let b = &h["host_breakdown"];
        let us = |k: &str| b.get(k).and_then(Value::as_f64).unwrap_or(0.0) / 1000.0;
        let _ = write!(
            o,
            "<p>Host input time (self time of the input ops XProf lists): enqueue {:.3} ms · demanded file read {:.3} ms · advanced file read {:.3} ms · preprocessing {:.3} ms · unclassified {:.3} ms</p>",
            us("enqueue_us"),
            us("demanded_file_read_us"),
            us("advanced_file_read_us"),
            us("preprocessing_us"),
            us("unclassified_us")
        );
        let ops = h["input_ops"].as_array().unwrap_or(&empty);
        let _ = write!(
            o,
            "<h3>Input ops ({} rows, all listed)</h3><input type=\"search\" class=\"table-filter\" placeholder=\"Filter rows\" aria-label=\"filter\"><table class=\"sortable\"><thead><tr><th>Op</th><th>Category</th><th>In XProf</th><th class=\"num\">Count</th><th class=\"num\">Time (ms)</th><th class=\"num\">Self time (ms)</th><th class=\"num\">Self time %</th></tr></thead><tbody>",
            ops.len()
        );
        for op in ops {
            let ms = |k: &str| n(op, k) as f64 / 1e9;
            let _ = write!(
                o,
                "<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.1}</td></tr>",
                esc(s(op, "name")),
                esc(s(op, "category")),
                if op["in_xprof"].as_bool() == Some(true) { "yes" } else { "no" },
                n(op, "count"),
                ms("total_time_ps"),
                ms("self_time_ps"),
                op["self_time_percent"].as_f64().unwrap_or(0.0)
            );
        }
        o.push_str("</tbody></table>");
    }
    o.push_str("<h3>Steps</h3>");
    o.push_str(&csv_table(csv));
    o
}

fn overview_view(v: &Value, csv: &str) -> String {
    let empty = Vec::new();
    let mut o = String::new();
    let _ = write!(
        o,
        "<h1>Overview: run {}</h1><p>{} host(s); device {}; {} device(s) participated.</p>",
        esc(s(v, "run")),
        n(v, "host_count"),
        esc(s(v, "device_type")),
        n(v, "devices_participated")
    );
    let cats = v["categories"].as_array().unwrap_or(&empty);
    for h in v["hosts"].as_array().unwrap_or(&empty) {
        let _ = write!(o, "<section><h2>Host {}</h2>", esc(s(h, "host")));
        if let Some(e) = h["error"].as_str() {
            o.push_str(&error_box(e));
            continue;
        }
        let st = &h["steps"];
        let _ = write!(
            o,
            "<p><b>{} steps</b> (XProf-compatible: XProf drops the first and last step when more than 5 remain; {} annotated steps in all). Step time mean {} ± {} (sample std dev), min {}, max {}.</p>",
            n(st, "count"),
            n(&h["steps_all"], "count"),
            fmt_ps(n(st, "mean_ps")),
            fmt_ps(n(st, "std_dev_ps")),
            fmt_ps(n(st, "min_ps")),
            fmt_ps(n(st, "max_ps"))
        );
        for note in h["steps_notes"].as_array().unwrap_or(&empty) {
            let _ = write!(
                o,
                "<p class=\"dim\">{}</p>",
                esc(note.as_str().unwrap_or(""))
            );
        }
        // Stacked bar per step.
        let rows = st["rows"].as_array().unwrap_or(&empty);
        let max = rows
            .iter()
            .map(|r| n(r, "duration_ps"))
            .max()
            .unwrap_or(1)
            .max(1);
        const COLORS: [&str; 9] = [
            "#4e79a7", "#59a14f", "#9c755f", "#f28e2b", "#edc948", "#e15759", "#b07aa1", "#76b7b2",
            "#bab0ac",
        ];
        o.push_str("<div class=\"legend\">");
        for (i, c) in cats.iter().enumerate() {
            let _ = write!(
                o,
                "<span title=\"{}\"><i style=\"background:{}\">&nbsp;&nbsp;</i> {}</span> ",
                esc(s(c, "explanation")),
                COLORS[i % 9],
                esc(s(c, "label"))
            );
        }
        o.push_str("</div><div class=\"stepchart\">");
        for r in rows.iter().take(500) {
            let _ = write!(
                o,
                "<div class=\"steprow\" title=\"{} {}\"><span class=\"stepname\">{}</span>",
                esc(s(r, "name")),
                fmt_ps(n(r, "duration_ps")),
                esc(s(r, "name"))
            );
            for (i, b) in r["breakdown_ps"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .enumerate()
            {
                let w = 80.0 * b.as_i64().unwrap_or(0) as f64 / max as f64;
                if w > 0.0 {
                    let _ = write!(o, "<i style=\"display:inline-block;height:10px;width:{w:.2}%;background:{}\"></i>", COLORS[i % 9]);
                }
            }
            o.push_str("</div>");
        }
        o.push_str("</div><h3>What each category counts</h3><ul>");
        for c in cats {
            let _ = write!(
                o,
                "<li><b>{}</b>: {}</li>",
                esc(s(c, "label")),
                esc(s(c, "explanation"))
            );
        }
        o.push_str("</ul>");
        let pl = &h["placement"];
        let _ = write!(
            o,
            "<p>Op placement: {:.1}% of ops and {:.1}% of op time on the device. <span class=\"dim\">{}</span></p>",
            pl["device_ops_percent"].as_f64().unwrap_or(0.0),
            pl["device_time_percent"].as_f64().unwrap_or(0.0),
            esc(s(pl, "explanation"))
        );
        if let Some(d) = h["device_duty_cycle_percent"].as_f64() {
            let _ = write!(o, "<p>Device duty cycle: {d:.1}%</p>");
        }
        if let Some(r) = h["flop_rate_per_second"].as_f64() {
            let _ = write!(o, "<p>FLOP rate: {:.3} TFLOP/s", r / 1e12);
            if let Some(u) = h["flop_utilization_percent"].as_f64() {
                let _ = write!(o, " ({u:.1}% of peak)");
            }
            o.push_str("</p>");
        }
        if let Some(m) = h["memory_headroom"]["statement"].as_str() {
            let _ = write!(o, "<p>Memory: {}</p>", esc(m));
        }
        o.push_str("<h3>Recommendations</h3><ul>");
        for r in h["recommendations"].as_array().unwrap_or(&empty) {
            let _ = write!(
                o,
                "<li>{} <span class=\"dim\">({})</span></li>",
                esc(s(r, "text")),
                esc(s(r, "evidence"))
            );
        }
        let _ = write!(o, "</ul><h3>Top ops by self time ({} ops in all)</h3><table class=\"sortable\"><thead><tr><th>op</th><th>framework op</th><th>category</th><th>occurrences</th><th>self time</th></tr></thead><tbody>", n(h, "op_count"));
        for op in h["top_ops"].as_array().unwrap_or(&empty) {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(s(op, "name")),
                esc(s(op, "framework_op")),
                esc(s(op, "category")),
                n(op, "occurrences"),
                fmt_ps(n(op, "self_time_ps"))
            );
        }
        o.push_str("</tbody></table></section>");
    }
    o.push_str("<h3>Steps</h3>");
    o.push_str(&csv_table(csv));
    o
}

/// JSON field readers for the views: a missing or mistyped field reads as empty / zero.
pub(crate) fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

pub(crate) fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub(crate) fn n(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

fn report_view(r: &Value) -> String {
    let mut o = String::new();
    let empty = Vec::new();
    for sess in r["sessions"].as_array().unwrap_or(&empty) {
        let _ = write!(
            o,
            "<section class=\"session\"><h1>Run {}</h1><p class=\"dim\">{}</p>",
            esc(s(sess, "name")),
            esc(s(sess, "dir"))
        );
        for h in sess["hosts"].as_array().unwrap_or(&empty) {
            host_view(&mut o, h);
        }
        o.push_str("</section>");
    }
    o
}

fn host_view(o: &mut String, h: &Value) {
    let empty = Vec::new();
    let _ = write!(
        o,
        "<article class=\"host\"><h2>Host {}</h2><p class=\"dim\">{} · {} bytes</p>",
        esc(s(h, "host")),
        esc(s(h, "file")),
        n(h, "file_bytes")
    );
    if let Some(e) = h.get("error").and_then(Value::as_str) {
        o.push_str(&error_box(e));
        o.push_str("</article>");
        return;
    }
    // Key figures.
    let d = &h["device"];
    let mut device = if n(d, "count") == 0 && s(d, "kind") == "CPU" {
        "CPU only (no accelerator planes in this profile)".to_string()
    } else {
        format!("{} {}", s(d, "kind"), s(d, "model"))
    };
    if n(d, "count") > 0 {
        let _ = write!(
            device,
            " × {} ({} with events)",
            n(d, "count"),
            n(d, "active")
        );
    }
    let st = &h["steps"];
    let steps = if n(st, "count") > 0 {
        format!(
            "{} steps (<code>{}</code>): mean {}, min {}, max {}",
            n(st, "count"),
            esc(s(st, "name")),
            fmt_ps(n(st, "mean_ps")),
            fmt_ps(n(st, "min_ps")),
            fmt_ps(n(st, "max_ps"))
        )
    } else {
        "none found (no <code>step_num</code> annotations, no device <code>Steps</code> line)"
            .to_string()
    };
    let _ = write!(
        o,
        "<dl class=\"facts\"><dt>Device</dt><dd>{}</dd><dt>Span</dt><dd>{}</dd><dt>Events</dt><dd>{}</dd><dt>Steps</dt><dd>{}</dd></dl>",
        esc(&device),
        fmt_ps(n(h, "span_ps")),
        n(h, "total_events"),
        steps
    );
    for (k, cls) in [
        ("errors", "error"),
        ("warnings", "warn"),
        ("import_warnings", "warn"),
    ] {
        for m in h[k].as_array().unwrap_or(&empty) {
            let _ = write!(
                o,
                "<div class=\"{cls}\">{}: {}</div>",
                k.replace('_', " "),
                esc(m.as_str().unwrap_or(""))
            );
        }
    }
    // Top ops.
    let total = n(h, "total_op_self_time_ps").max(1) as f64;
    let ops = h["top_ops"].as_array().unwrap_or(&empty);
    if ops.is_empty() {
        o.push_str("<h3>Ops</h3><p>No ops found in this profile.</p>");
    } else {
        let _ = write!(
            o,
            "<h3>Top {} of {} ops by self time</h3><p class=\"dim\">From {}.</p><table class=\"ops\"><thead><tr><th>#</th><th>Op</th><th>Module</th><th class=\"num\">Occurrences</th><th class=\"num\">Self time</th><th class=\"num\">% of op time</th><th class=\"num\">Total time</th></tr></thead><tbody>",
            ops.len(),
            n(h, "op_count"),
            esc(s(h, "top_ops_source_description"))
        );
        for (i, op) in ops.iter().enumerate() {
            let st = n(op, "self_time_ps");
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"name\">{}</td><td class=\"name\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}%</td><td class=\"num\">{}</td></tr>",
                i + 1,
                esc(s(op, "name")),
                esc(s(op, "module")),
                n(op, "occurrences"),
                fmt_ps(st),
                100.0 * st as f64 / total,
                fmt_ps(n(op, "total_time_ps"))
            );
        }
        o.push_str("</tbody></table>");
    }
    // Planes and lines.
    o.push_str("<h3>Planes and lines</h3><table class=\"planes\"><thead><tr><th>Plane / line</th><th class=\"num\">Events</th></tr></thead><tbody>");
    for p in h["planes"].as_array().unwrap_or(&empty) {
        let _ = write!(
            o,
            "<tr class=\"plane\"><td>{}</td><td class=\"num\">{}</td></tr>",
            esc(s(p, "name")),
            n(p, "events")
        );
        for l in p["lines"].as_array().unwrap_or(&empty) {
            let _ = write!(
                o,
                "<tr><td class=\"line\">{}</td><td class=\"num\">{}</td></tr>",
                esc(s(l, "name")),
                n(l, "events")
            );
        }
    }
    o.push_str("</tbody></table></article>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(url_enc("a b/c&d"), "a%20b%2Fc%26d");
    }
}
