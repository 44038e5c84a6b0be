//! The memory viewer and memory profile pages: server-rendered SVG charts and tables, made
//! interactive by `assets/memory.js` (module selector, hover highlight, pinned buffer details).

use serde_json::Value;
use std::fmt::Write;
use xlens_analysis::base::fmt::fmt_bytes;
use xlens_analysis::base::fmt::fmt_ps;

use crate::html::{arr, error_box, esc, n, s, url_enc};

/// Bars drawn for the buffers live at the peak; the table lists all of them.
const MAX_BARS: usize = 120;
/// Live allocations listed per allocator on the memory profile page.
const MAX_LIVE_ROWS: usize = 200;

const W: f64 = 1000.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 12.0;

/// JSON safe to embed in a `<script type="application/json">` element.
fn script_json(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A y axis with four gridlines labelled in bytes.
fn y_axis(o: &mut String, top: f64, h: f64, max: f64) {
    for k in 0..=4 {
        let frac = k as f64 / 4.0;
        let y = top + h - frac * h;
        let _ = write!(
            o,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"tick\" x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{label}</text>",
            x2 = W - RIGHT,
            tx = LEFT - 4.0,
            ty = y + 4.0,
            label = esc(&fmt_bytes((max * frac) as i64)),
        );
    }
}

/// A step path through `(x, y)` points (the value holds until the next point).
fn step_path(pts: &[(f64, f64)]) -> String {
    let mut d = String::new();
    for (i, (x, y)) in pts.iter().enumerate() {
        if i == 0 {
            let _ = write!(d, "M{x:.1},{y:.1}");
        } else {
            let _ = write!(d, "H{x:.1}V{y:.1}");
        }
    }
    d
}

/// The memory viewer page.
pub fn memory_viewer_view(r: &Value) -> String {
    let mut o = String::from("<section class=\"mv\"><h1>Memory viewer</h1>");
    let hosts = arr(r, "hosts");
    let space = n(r, "memory_space");
    // One module selector over the modules of every host, largest peak first.
    let mut mods: Vec<(String, i64, usize, Option<String>)> = Vec::new();
    for h in hosts {
        for m in arr(h, "modules") {
            let name = s(m, "name").to_string();
            let err = m.get("error").and_then(Value::as_str).map(str::to_string);
            match mods.iter_mut().find(|x| x.0 == name) {
                Some(x) => x.1 = x.1.max(n(m, "peak_heap_bytes")),
                None => mods.push((
                    name,
                    n(m, "peak_heap_bytes"),
                    n(m, "trace_events") as usize,
                    err,
                )),
            }
        }
    }
    mods.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    // The resolved name of the module shown (the query may be a prefix or a program id).
    let chosen = hosts
        .iter()
        .find_map(|h| h.get("selected").and_then(|m| m.get("name")))
        .and_then(Value::as_str)
        .or_else(|| r.get("module").and_then(Value::as_str))
        .unwrap_or("");
    if !mods.is_empty() {
        let _ = write!(
            o,
            "<div class=\"mv-selbar\"><label>Module <select name=\"module\" form=\"nav\" class=\"mv-module\" aria-label=\"HLO module\">"
        );
        for (name, peak, events, err) in &mods {
            let sel = if name == chosen { " selected" } else { "" };
            let note = match err {
                Some(_) => " · not analysable".to_string(),
                None if *events == 0 => " · no heap trace".to_string(),
                None => String::new(),
            };
            let _ = write!(
                o,
                "<option value=\"{v}\"{sel}>{v} — peak {p}{note}</option>",
                v = esc(name),
                p = esc(&fmt_bytes(*peak))
            );
        }
        let _ = write!(
            o,
            "</select></label> <span class=\"dim\">{} modules, largest peak first · memory space {space}</span>\
<input type=\"hidden\" name=\"memory_space\" form=\"nav\" value=\"{space}\">\
<noscript><button type=\"submit\" form=\"nav\">Show</button></noscript></div>",
            mods.len()
        );
    }
    for h in hosts {
        let _ = write!(
            o,
            "<article class=\"host mv-host\"><h2>Host {}</h2>",
            esc(s(h, "host"))
        );
        if let Some(e) = h.get("error").and_then(Value::as_str) {
            o.push_str(&error_box(e));
            o.push_str("</article>");
            continue;
        }
        for e in arr(h, "hlo_errors") {
            o.push_str(&error_box(&format!(
                "HLO not decoded: {}",
                e.as_str().unwrap_or("")
            )));
        }
        if let Some(hr) = h.get("headroom").filter(|v| !v.is_null()) {
            let _ = write!(
                o,
                "<p class=\"mv-headroom\"><b>Headroom:</b> {} <span class=\"dim\">(peak from {}; capacity from {})</span></p>",
                esc(s(hr, "statement")),
                esc(s(hr, "peak_source")),
                esc(s(hr, "capacity_source"))
            );
        }
        if arr(h, "modules").is_empty() {
            o.push_str("<p>No HLO module with a buffer assignment in this profile (the memory viewer needs the compiled programs' HLO, which JAX / TF-XLA profiles carry on <code>/host:metadata</code>).</p></article>");
            continue;
        }
        if let Some(e) = h.get("selection_error").and_then(Value::as_str) {
            o.push_str(&error_box(e));
        }
        match h.get("selected").filter(|v| !v.is_null()) {
            Some(m) => module_view(&mut o, m, s(h, "session"), s(h, "host")),
            None => o.push_str("<p>Choose a module above.</p>"),
        }
        o.push_str("</article>");
    }
    o.push_str("</section><script type=\"module\" src=\"/static/memory.js\"></script>");
    o
}

fn source_text(b: &Value) -> String {
    match b.get("source").filter(|v| !v.is_null()) {
        Some(src) => format!("{}:{}", s(src, "file"), n(src, "line")),
        None => String::new(),
    }
}

fn module_view(o: &mut String, m: &Value, session: &str, host: &str) {
    let name = s(m, "name");
    let t = &m["totals"];
    let trace_events = m
        .get("trace")
        .filter(|v| !v.is_null())
        .map(|t| n(t, "events"));
    let _ = write!(
        o,
        "<h3>{} <span class=\"dim\">entry {}</span></h3>\
<p class=\"dim\"><a href=\"/api/tool/memory_viewer?run={r}&host={h}&module={mq}\">JSON</a> · <a href=\"/api/tool/memory_viewer?run={r}&host={h}&module={mq}&format=csv\" download>CSV</a> of this module</p>",
        esc(name),
        esc(s(m, "entry_computation")),
        r = url_enc(session),
        h = url_enc(host),
        mq = url_enc(name),
    );
    let peak_at = match trace_events {
        Some(ev) => format!(
            "event {} of {ev} · <code>{}</code> in <code>{}</code>",
            n(m, "peak_position"),
            esc(s(m, "peak_instruction")),
            esc(s(m, "peak_computation"))
        ),
        None => "no heap simulator trace for this memory space: whole-program buffers only".into(),
    };
    let small = &m["small_buffers"];
    let _ = write!(
        o,
        "<dl class=\"facts mv-totals\">\
<dt>Peak heap</dt><dd><b>{}</b> ({} bytes; unpadded {}) = temporaries {} + whole-program {}</dd>\
<dt>Peak at</dt><dd>{peak_at}</dd>\
<dt>Entry parameters</dt><dd>{}</dd><dt>Maybe live out</dt><dd>{}</dd>\
<dt>Non-reusable</dt><dd>{}</dd><dt>Indefinite lifetime</dt><dd>{} in {} allocations</dd>\
<dt>All allocations</dt><dd>{} in {} allocations</dd>\
<dt>Buffers at the peak</dt><dd>{} of at least {} shown; {} smaller ones grouped: {}</dd></dl>",
        fmt_bytes(n(m, "peak_heap_bytes")),
        n(m, "peak_heap_bytes"),
        fmt_bytes(n(m, "peak_unpadded_heap_bytes")),
        fmt_bytes(n(m, "peak_temp_heap_bytes")),
        fmt_bytes(n(m, "indefinite_bytes")),
        fmt_bytes(n(t, "entry_parameters_bytes")),
        fmt_bytes(n(t, "maybe_live_out_bytes")),
        fmt_bytes(n(t, "non_reusable_bytes")),
        fmt_bytes(n(t, "indefinite_allocation_bytes")),
        n(t, "indefinite_allocations"),
        fmt_bytes(n(t, "total_allocation_bytes")),
        n(t, "allocations"),
        arr(m, "peak_buffers").len(),
        fmt_bytes(n(small, "threshold_bytes")),
        n(small, "count"),
        fmt_bytes(n(small, "bytes")),
    );
    if let Some(sc) = m.get("max_scoped_allocation").filter(|v| !v.is_null()) {
        let _ = write!(
            o,
            "<p class=\"dim\">Largest scoped allocation: {} by <code>{}</code> (not in the peak).</p>",
            fmt_bytes(n(sc, "bytes")),
            esc(s(sc, "instruction"))
        );
    }
    for w in arr(m, "warnings") {
        let _ = write!(
            o,
            "<div class=\"warn\">{}</div>",
            esc(w.as_str().unwrap_or(""))
        );
    }

    let bufs = arr(m, "peak_buffers");
    // Details for memory.js (one entry per buffer, same order as the bars and rows).
    let data: Vec<Value> = bufs
        .iter()
        .map(|b| {
            serde_json::json!({
                "instruction": s(b, "instruction"),
                "opcode": s(b, "opcode"),
                "shape": s(b, "shape"),
                "dtype": s(b, "dtype"),
                "size": fmt_bytes(n(b, "size_bytes")),
                "size_bytes": n(b, "size_bytes"),
                "unpadded": fmt_bytes(n(b, "unpadded_size_bytes")),
                "category": s(b, "category"),
                "op_name": s(b, "op_name"),
                "source": source_text(b),
                "stack": b.get("source").map(|x| s(x, "stack")).unwrap_or(""),
                "lifetime": match (b["lifetime_start"].as_i64(), b["lifetime_end"].as_i64()) {
                    (Some(a), Some(z)) => format!("events {a} to {z}"),
                    _ => "whole program".to_string(),
                },
                "logical_buffer_id": n(b, "logical_buffer_id"),
                "allocation_index": n(b, "allocation_index"),
            })
        })
        .collect();
    let _ = write!(
        o,
        "<script type=\"application/json\" class=\"mv-data\">{}</script>",
        script_json(&Value::Array(data))
    );

    // The chart: heap over program order, the peak, and the lifetimes of the peak buffers.
    let series = arr(m, "heap_series");
    let points = (n(m, "series_points_total").max(2) - 1) as f64;
    let max = series
        .iter()
        .map(|p| n(p, "heap_bytes"))
        .max()
        .unwrap_or(0)
        .max(n(m, "peak_heap_bytes"))
        .max(1) as f64;
    let (top, ch) = (14.0, 200.0);
    let shown_bars = bufs.len().min(MAX_BARS);
    let bar_h = 9.0;
    let bars_top = top + ch + 34.0;
    let height = bars_top + shown_bars as f64 * (bar_h + 2.0) + 16.0;
    let pw = W - LEFT - RIGHT;
    let x = |i: f64| LEFT + i / points * pw;
    let y = |b: f64| top + ch - b / max * ch;
    let _ = write!(
        o,
        "<div class=\"mv-main\"><div class=\"mv-chart-wrap\"><svg class=\"mv-chart\" viewBox=\"0 0 {W} {height:.0}\" width=\"100%\" role=\"img\" aria-label=\"heap size over program order\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    y_axis(o, top, ch, max);
    if !series.is_empty() {
        let pts: Vec<(f64, f64)> = series
            .iter()
            .map(|p| (x(n(p, "index") as f64), y(n(p, "heap_bytes") as f64)))
            .collect();
        let unp: Vec<(f64, f64)> = series
            .iter()
            .map(|p| {
                (
                    x(n(p, "index") as f64),
                    y(n(p, "unpadded_heap_bytes") as f64),
                )
            })
            .collect();
        let path = step_path(&pts);
        let _ = write!(
            o,
            "<path class=\"mv-area\" d=\"{path}H{x1:.1}V{yb:.1}H{x0:.1}Z\"/><path class=\"mv-heap\" d=\"{path}\"/><path class=\"mv-unpadded\" d=\"{}\"/>",
            step_path(&unp),
            x0 = LEFT,
            x1 = pts.last().map_or(LEFT, |p| p.0),
            yb = top + ch,
        );
    }
    let px = if trace_events.is_some() {
        x((n(m, "peak_position") + 1) as f64)
    } else {
        LEFT
    };
    let py = y(n(m, "peak_heap_bytes") as f64);
    let _ = write!(
        o,
        "<line class=\"mv-peakline\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{top}\" y2=\"{yb:.1}\"/><circle class=\"mv-peak\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"4\"><title>peak {} at event {}</title></circle>\
<text class=\"mv-peaklabel\" x=\"{lx:.1}\" y=\"{ly:.1}\" text-anchor=\"{anchor}\">peak {}</text>\
<text class=\"tick\" x=\"{LEFT}\" y=\"{ax:.1}\">0</text><text class=\"tick\" x=\"{xr:.1}\" y=\"{ax:.1}\" text-anchor=\"end\">{} events (program order)</text>\
<text class=\"tick\" x=\"{LEFT}\" y=\"{bl:.1}\">Lifetimes of the buffers live at the peak (largest first; bar = ALLOC to FREE, full width = whole program)</text>",
        esc(&fmt_bytes(n(m, "peak_heap_bytes"))),
        n(m, "peak_position"),
        esc(&fmt_bytes(n(m, "peak_heap_bytes"))),
        trace_events.unwrap_or(0),
        yb = height - 14.0,
        lx = if px > W / 2.0 { px - 8.0 } else { px + 8.0 },
        ly = (py + 14.0).min(top + ch - 4.0),
        anchor = if px > W / 2.0 { "end" } else { "start" },
        ax = top + ch + 14.0,
        xr = W - RIGHT,
        bl = bars_top - 6.0,
    );
    for (i, b) in bufs.iter().take(shown_bars).enumerate() {
        let (x0, x1, cls) = match (b["lifetime_start"].as_i64(), b["lifetime_end"].as_i64()) {
            // Event k takes effect at point k + 1 of the heap series.
            (Some(a), Some(z)) => (x((a + 1) as f64), x((z + 1) as f64), "mv-bar"),
            _ => (LEFT, W - RIGHT, "mv-bar mv-indef"),
        };
        let by = bars_top + i as f64 * (bar_h + 2.0);
        let _ = write!(
            o,
            "<rect class=\"{cls}\" data-b=\"{i}\" x=\"{x0:.1}\" y=\"{by:.1}\" width=\"{w:.1}\" height=\"{bar_h}\"><title>{t}</title></rect>",
            w = (x1 - x0).max(2.0),
            t = esc(&format!(
                "{} {} {}",
                s(b, "instruction"),
                s(b, "shape"),
                fmt_bytes(n(b, "size_bytes"))
            )),
        );
    }
    o.push_str("</svg>");
    let _ = write!(
        o,
        "<p class=\"dim\">{} of {} program points drawn ({}){}. Hover a bar or row to highlight the buffer; click to pin its details.</p></div>",
        n(m, "series_points_shown"),
        n(m, "series_points_total"),
        esc(s(m, "series_sampling")),
        if bufs.len() > shown_bars {
            format!(
                "; bars for the {shown_bars} largest of {} buffers (all in the table)",
                bufs.len()
            )
        } else {
            String::new()
        }
    );
    o.push_str("<aside class=\"mv-details\" aria-live=\"polite\"><p class=\"dim\">Click a buffer (bar or row) to pin its details here; the text can be selected and copied and stays until you click another buffer.</p></aside></div>");

    // Table of the buffers at the peak, then the grouped small ones.
    let _ = write!(
        o,
        "<h3>Buffers live at the peak</h3><table class=\"mv-table\"><thead><tr><th>#</th><th class=\"num\">Size</th><th class=\"num\">Unpadded</th><th>Category</th><th>Instruction</th><th>Shape</th><th>Op name</th><th>Source</th><th>Lifetime</th></tr></thead><tbody>"
    );
    for (i, b) in bufs.iter().enumerate() {
        let life = match (b["lifetime_start"].as_i64(), b["lifetime_end"].as_i64()) {
            (Some(a), Some(z)) => format!("{a}–{z}"),
            _ => "whole program".to_string(),
        };
        let _ = write!(
            o,
            "<tr data-b=\"{i}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"name\">{}</td><td class=\"name\">{}</td><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{life}</td></tr>",
            i + 1,
            fmt_bytes(n(b, "size_bytes")),
            fmt_bytes(n(b, "unpadded_size_bytes")),
            esc(s(b, "category")),
            esc(s(b, "instruction")),
            esc(s(b, "shape")),
            esc(s(b, "op_name")),
            esc(&source_text(b)),
        );
    }
    if n(small, "count") > 0 {
        let _ = write!(
            o,
            "<tr class=\"mv-small\"><td></td><td class=\"num\">{}</td><td></td><td colspan=\"6\">{} smaller buffers (under {} each), grouped</td></tr>",
            fmt_bytes(n(small, "bytes")),
            n(small, "count"),
            fmt_bytes(n(small, "threshold_bytes"))
        );
    }
    o.push_str("</tbody></table>");
}

/// The memory profile page: per host and allocator, the timeline chart and the live allocations.
pub fn memory_profile_view(r: &Value) -> String {
    let mut o = String::from("<section class=\"mp\"><h1>Memory profile</h1>");
    for h in arr(r, "hosts") {
        let _ = write!(
            o,
            "<article class=\"host\"><h2>Host {}</h2>",
            esc(s(h, "host"))
        );
        if let Some(e) = h.get("error").and_then(Value::as_str) {
            o.push_str(&error_box(e));
            o.push_str("</article>");
            continue;
        }
        let allocs = arr(h, "allocators");
        if allocs.is_empty() {
            let _ = write!(
                o,
                "<p>No <code>MemoryAllocation</code> / <code>MemoryDeallocation</code> events on <code>{}</code>: the profile was taken without allocator tracing, or the runtime does not record it (JAX on CPU does not).</p></article>",
                esc(s(h, "plane"))
            );
            continue;
        }
        let _ = write!(
            o,
            "<p class=\"dim\">{} allocator events; peaks and totals use every event, the charts a sample.</p>",
            n(h, "events_total")
        );
        for a in allocs {
            allocator_view(&mut o, a);
        }
        o.push_str("</article>");
    }
    o.push_str("</section>");
    o
}

fn allocator_view(o: &mut String, a: &Value) {
    let pk = &a["peak"];
    let _ = write!(
        o,
        "<section class=\"mp-alloc\"><h3>Allocator {}</h3><dl class=\"facts\">\
<dt>Peak in use</dt><dd><b>{}</b> (heap {} + reserved {}) at {} · step {}</dd>\
<dt>At the peak</dt><dd>free {} of capacity {} · fragmentation {:.2}%</dd>\
<dt>Lifetime peak</dt><dd>{} <span class=\"dim\">(as the allocator reports it; may predate the profile)</span></dd>\
<dt>Fragmentation</dt><dd>{}</dd>\
<dt>Events</dt><dd>{} allocations, {} deallocations; {} of {} drawn ({})</dd></dl>",
        esc(s(a, "name")),
        fmt_bytes(n(pk, "bytes_in_use")),
        fmt_bytes(n(pk, "heap_allocated_bytes")),
        fmt_bytes(n(pk, "stack_reserved_bytes")),
        fmt_ps(n(pk, "time_ps")),
        n(pk, "step_id"),
        fmt_bytes(n(pk, "free_bytes")),
        fmt_bytes(n(pk, "memory_capacity_bytes")),
        pk["fragmentation"].as_f64().unwrap_or(0.0) * 100.0,
        fmt_bytes(n(a, "peak_bytes_usage_lifetime")),
        match a["max_fragmentation"].as_f64().unwrap_or(0.0) {
            f if f > 0.0 => format!(
                "max {:.2}% at {}",
                f * 100.0,
                fmt_ps(n(a, "max_fragmentation_time_ps"))
            ),
            _ => "none recorded".to_string(),
        },
        n(a, "allocations"),
        n(a, "deallocations"),
        n(a, "samples_shown"),
        n(a, "samples_total"),
        esc(s(a, "sampling")),
    );
    // Chart: in use (heap + reserved) as an area, heap and reserved as lines, fragmentation below.
    let samples = arr(a, "samples");
    if !samples.is_empty() {
        let t0 = samples.iter().map(|p| n(p, "time_ps")).min().unwrap_or(0);
        let t1 = samples
            .iter()
            .map(|p| n(p, "time_ps"))
            .max()
            .unwrap_or(0)
            .max(t0 + 1);
        let in_use = |p: &Value| n(p, "heap_allocated_bytes") + n(p, "stack_reserved_bytes");
        let max = samples
            .iter()
            .map(in_use)
            .max()
            .unwrap_or(0)
            .max(n(pk, "bytes_in_use"))
            .max(1) as f64;
        let (top, ch, fh) = (14.0, 180.0, 40.0);
        let height = top + ch + 24.0 + fh + 22.0;
        let pw = W - LEFT - RIGHT;
        let x = |t: i64| LEFT + (t - t0) as f64 / (t1 - t0) as f64 * pw;
        let y = |b: f64| top + ch - b / max * ch;
        let _ = write!(
            o,
            "<svg class=\"mp-chart\" viewBox=\"0 0 {W} {height:.0}\" width=\"100%\" role=\"img\" aria-label=\"allocator memory over time\" xmlns=\"http://www.w3.org/2000/svg\">"
        );
        y_axis(o, top, ch, max);
        let pts = |f: &dyn Fn(&Value) -> i64| -> Vec<(f64, f64)> {
            samples
                .iter()
                .map(|p| (x(n(p, "time_ps")), y(f(p) as f64)))
                .collect()
        };
        let use_pts = pts(&in_use);
        let path = step_path(&use_pts);
        let _ = write!(
            o,
            "<path class=\"mv-area\" d=\"{path}V{yb:.1}H{x0:.1}Z\"/><path class=\"mp-inuse\" d=\"{path}\"/><path class=\"mp-heap\" d=\"{}\"/><path class=\"mp-reserved\" d=\"{}\"/>",
            step_path(&pts(&|p| n(p, "heap_allocated_bytes"))),
            step_path(&pts(&|p| n(p, "stack_reserved_bytes"))),
            yb = top + ch,
            x0 = use_pts.first().map_or(LEFT, |p| p.0),
        );
        let ft = top + ch + 24.0;
        let frag: Vec<(f64, f64)> = samples
            .iter()
            .map(|p| {
                (
                    x(n(p, "time_ps")),
                    ft + fh - p["fragmentation"].as_f64().unwrap_or(0.0).clamp(0.0, 1.0) * fh,
                )
            })
            .collect();
        let px = x(n(pk, "time_ps"));
        let py = y(n(pk, "bytes_in_use") as f64);
        let _ = write!(
            o,
            "<rect class=\"mp-fragbox\" x=\"{LEFT}\" y=\"{ft:.1}\" width=\"{pw:.1}\" height=\"{fh}\"/><path class=\"mp-frag\" d=\"{}\"/>\
<text class=\"tick\" x=\"{tx:.1}\" y=\"{fy:.1}\" text-anchor=\"end\">frag. %</text>\
<line class=\"mv-peakline\" x1=\"{px:.1}\" x2=\"{px:.1}\" y1=\"{top}\" y2=\"{fb:.1}\"/><circle class=\"mv-peak\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"4\"><title>peak {}</title></circle>\
<text class=\"mv-peaklabel\" x=\"{lx:.1}\" y=\"{ly:.1}\" text-anchor=\"{anchor}\">peak {}</text>\
<text class=\"tick\" x=\"{LEFT}\" y=\"{ax:.1}\">{}</text><text class=\"tick\" x=\"{xr:.1}\" y=\"{ax:.1}\" text-anchor=\"end\">{}</text></svg>",
            step_path(&frag),
            esc(&fmt_bytes(n(pk, "bytes_in_use"))),
            esc(&fmt_bytes(n(pk, "bytes_in_use"))),
            fmt_ps(t0),
            fmt_ps(t1),
            tx = LEFT - 4.0,
            fy = ft + fh / 2.0 + 4.0,
            fb = ft + fh,
            lx = if px > W / 2.0 { px - 8.0 } else { px + 8.0 },
            ly = (py + 14.0).min(top + ch - 4.0),
            anchor = if px > W / 2.0 { "end" } else { "start" },
            ax = ft + fh + 16.0,
            xr = W - RIGHT,
        );
        o.push_str("<p class=\"legend dim\"><span class=\"sw mp-sw-inuse\"></span>in use (heap + reserved) <span class=\"sw mp-sw-heap\"></span>heap allocated <span class=\"sw mp-sw-reserved\"></span>reserved (stack) <span class=\"sw mp-sw-frag\"></span>fragmentation</p>");
    }
    let live = arr(a, "live_at_peak");
    let _ = write!(
        o,
        "<h4>Allocations live at the peak: {} rows, {}</h4><table class=\"mp-table\"><thead><tr><th>#</th><th class=\"num\">Bytes</th><th class=\"num\">Requested</th><th class=\"num\">×</th><th>Op</th><th>Shape</th><th>Type</th><th>Region</th><th class=\"num\">Step</th><th class=\"num\">Allocated at</th></tr></thead><tbody>",
        n(a, "live_at_peak_total"),
        fmt_bytes(n(a, "live_at_peak_bytes")),
    );
    for (i, l) in live.iter().take(MAX_LIVE_ROWS).enumerate() {
        let cls = if l["special"].as_bool().unwrap_or(false) {
            " class=\"mp-special\""
        } else {
            ""
        };
        let _ = write!(
            o,
            "<tr{cls}><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            i + 1,
            fmt_bytes(n(l, "allocation_bytes")),
            fmt_bytes(n(l, "requested_bytes")),
            n(l, "occurrences"),
            esc(s(l, "op")),
            esc(s(l, "shape")),
            esc(s(l, "data_type")),
            esc(s(l, "region_type")),
            n(l, "step_id"),
            l["time_ps"].as_i64().map(fmt_ps).unwrap_or_default(),
        );
    }
    o.push_str("</tbody></table>");
    let total = n(a, "live_at_peak_total") as usize;
    if total > live.len().min(MAX_LIVE_ROWS) {
        let _ = write!(
            o,
            "<p class=\"dim\">{} more rows not shown here (JSON and CSV list up to 500).</p>",
            total - live.len().min(MAX_LIVE_ROWS)
        );
    }
    o.push_str("</section>");
}
