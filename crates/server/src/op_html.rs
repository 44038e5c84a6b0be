//! The op profile, HLO op stats and roofline pages: server-rendered tables (every op, paged and
//! sortable in the browser by a small inline script, with the counts said) and a log-log roofline
//! SVG drawn here, offline.

use serde_json::Value;
use std::fmt::Write;
use xlens_analysis::base::fmt::fmt_ps;

use crate::html::{arr, error_box, esc, f, n, s, url_enc};

fn pct(x: f64) -> String {
    format!("{:.2}%", 100.0 * x)
}

/// Rows shown per page; the script pages through all of them.
const PAGE: usize = 100;

/// Sorting (click a header; numeric cells sort by `data-v`) and paging of every `table.paged`.
const TABLE_JS: &str = r#"<script>(() => {
for (const t of document.querySelectorAll('table.paged')) {
  const body = t.tBodies[0]; if (!body) continue;
  const per = +t.dataset.page || 100; let page = 0;
  const nav = document.createElement('div'); nav.className = 'pager'; t.after(nav);
  const rows = () => [...body.rows];
  const show = () => { const r = rows(); const pages = Math.max(1, Math.ceil(r.length / per));
    page = Math.min(page, pages - 1);
    r.forEach((x, i) => { x.hidden = Math.floor(i / per) !== page; });
    nav.innerHTML = `rows ${r.length ? page * per + 1 : 0}–${Math.min(r.length, (page + 1) * per)} of ${r.length} · page ${page + 1} of ${pages} `;
    for (const [lbl, p] of [['« first', 0], ['‹ prev', page - 1], ['next ›', page + 1], ['last »', pages - 1]]) {
      const b = document.createElement('button'); b.type = 'button'; b.textContent = lbl;
      b.disabled = p < 0 || p >= pages || p === page; b.onclick = () => { page = p; show(); }; nav.append(b); } };
  t.tHead.addEventListener('click', (e) => { const th = e.target.closest('th'); if (!th) return;
    const i = [...th.parentNode.cells].indexOf(th); const dir = th.dataset.dir === 'desc' ? 1 : -1;
    for (const c of th.parentNode.cells) delete c.dataset.dir; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    const key = (r) => { const c = r.cells[i]; if (!c) return ''; return c.dataset.v !== undefined ? +c.dataset.v : c.textContent; };
    const r = rows(); r.sort((a, b) => { const x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * dir; });
    r.forEach((x) => body.append(x)); page = 0; show(); });
  show(); }
})();</script>"#;

fn graph_link(run: &str, host: &str, op: &str, program: &str) -> String {
    let mut q = format!(
        "/?run={}&tool=graph_viewer&op={}",
        url_enc(run),
        url_enc(op)
    );
    if !host.is_empty() {
        let _ = write!(q, "&host={}", url_enc(host));
    }
    if !program.is_empty() {
        let _ = write!(q, "&module={}", url_enc(program));
    }
    q
}

fn peaks_line(o: &mut String, pk: &Value, ridge: Option<f64>) {
    if pk.is_null() {
        return;
    }
    let _ = write!(
        o,
        "<p>Device <b>{} {}</b> · peak FLOP rate {} <span class=\"dim\">({})</span> · peak memory bandwidth {} <span class=\"dim\">({})</span>{}</p>",
        esc(s(pk, "kind")),
        esc(s(pk, "model")),
        pk.get("flops_per_second")
            .and_then(Value::as_f64)
            .map_or("unknown".to_string(), |v| format!("{:.3} TFLOP/s", v / 1e12)),
        esc(&s(pk, "flops_source").replace('_', " ")),
        pk.get("bytes_per_second")
            .and_then(Value::as_f64)
            .map_or("unknown".to_string(), |v| format!("{:.1} GB/s", v / 1e9)),
        esc(&s(pk, "bandwidth_source").replace('_', " ")),
        ridge.map_or(String::new(), |r| format!(" · ridge point {r:.3} FLOP/byte")),
    );
    let note = s(pk, "note");
    if !note.is_empty() {
        let _ = write!(o, "<p class=\"dim\">Peaks: {}</p>", esc(note));
    }
}

fn notes(o: &mut String, h: &Value) {
    for m in arr(h, "notes") {
        let _ = write!(o, "<p class=\"dim\">{}</p>", esc(m.as_str().unwrap_or("")));
    }
}

fn fused_list(o: &mut String, kids: &[Value]) {
    o.push_str("<table class=\"ops\"><thead><tr><th>Instruction</th><th class=\"num\">FLOPs</th><th class=\"num\">Bytes</th><th>Expression</th></tr></thead><tbody>");
    for c in kids {
        let _ = write!(
            o,
            "<tr><td class=\"name\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><code>{}</code>",
            esc(s(c, "name")),
            n(c, "flops"),
            n(c, "bytes_accessed"),
            esc(s(c, "expression"))
        );
        let sub = arr(c, "children");
        if !sub.is_empty() {
            o.push_str("<details><summary>fused body</summary>");
            fused_list(o, sub);
            o.push_str("</details>");
        }
        o.push_str("</td></tr>");
    }
    o.push_str("</tbody></table>");
}

/// Details of one op: expression, shapes, op_name, source, fusion body, graph link.
fn op_details(o: &mut String, op: &Value, run: &str, host: &str) {
    let _ = write!(
        o,
        "<details><summary>{name}</summary><div class=\"op-details\"><p><a href=\"{link}\">Open in the graph viewer</a> · program <code>{prog}</code> · category {cat} · costs: {cs}</p><pre class=\"copy\">{expr}</pre>",
        name = esc(s(op, "name")),
        link = esc(&graph_link(run, host, s(op, "name"), s(op, "program"))),
        prog = esc(s(op, "program")),
        cat = esc(s(op, "category")),
        cs = esc(s(op, "cost_source")),
        expr = esc(s(op, "expression"))
    );
    let shape = s(op, "shape");
    if !shape.is_empty() {
        let operands: Vec<&str> = arr(op, "operand_shapes")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let _ = write!(
            o,
            "<p>Shapes:</p><pre class=\"copy\">{} ← ({})</pre>",
            esc(shape),
            esc(&operands.join(", "))
        );
    }
    for (k, label) in [
        ("op_name", "op_name"),
        ("provenance", "Framework op"),
        ("source", "Source"),
        ("deduplicated_name", "Deduplicated name"),
    ] {
        let v = s(op, k);
        if !v.is_empty() {
            let _ = write!(o, "<p>{label}: <code>{}</code></p>", esc(v));
        }
    }
    let stack = s(op, "source_stack");
    if !stack.is_empty() {
        let _ = write!(
            o,
            "<details><summary>stack</summary><pre class=\"copy\">{}</pre></details>",
            esc(stack)
        );
    }
    let fused = arr(op, "fused");
    if !fused.is_empty() {
        let _ = write!(
            o,
            "<details><summary>fusion body: {} instructions (by FLOPs)</summary>",
            fused.len()
        );
        fused_list(o, fused);
        o.push_str("</details>");
    }
    o.push_str("</div></details>");
}

const METRIC_HEADS: &str = "<th class=\"num\">Time</th><th class=\"num\">Time %</th><th class=\"num\">Self time</th><th class=\"num\">GFLOP/s</th><th class=\"num\">FLOPs util</th><th class=\"num\">HBM GiB/s</th><th class=\"num\">HBM util</th><th>Bound by</th><th class=\"num\">Wasted %</th>";

fn metric_cells(o: &mut String, m: &Value) {
    let _ = write!(
        o,
        "<td class=\"num\" data-v=\"{t}\">{tt}</td><td class=\"num\" data-v=\"{tf}\">{tfp}</td><td class=\"num\" data-v=\"{st}\">{stt}</td><td class=\"num\" data-v=\"{fr}\">{fr:.3}</td><td class=\"num\" data-v=\"{fu}\">{fup}</td><td class=\"num\" data-v=\"{bw}\">{bw:.3}</td><td class=\"num\" data-v=\"{hu}\">{hup}</td><td>{bb}</td><td class=\"num\" data-v=\"{w}\">{wp}</td>",
        t = n(m, "time_ps"),
        tt = fmt_ps(n(m, "time_ps")),
        tf = f(m, "time_fraction"),
        tfp = pct(f(m, "time_fraction")),
        st = n(m, "self_time_ps"),
        stt = fmt_ps(n(m, "self_time_ps")),
        fr = f(m, "flop_rate_gflops"),
        fu = f(m, "flops_utilization"),
        fup = pct(f(m, "flops_utilization")),
        bw = f(m, "hbm_bw_gibps"),
        hu = f(m, "hbm_utilization"),
        hup = pct(f(m, "hbm_utilization")),
        bb = esc(s(m, "bound_by")),
        w = f(m, "wasted_time_fraction"),
        wp = pct(f(m, "wasted_time_fraction")),
    );
}

/// One tree level as nested `<details>`; the ops of a group in one sortable, paged table.
fn tree(o: &mut String, node: &Value, ops: &[Value], run: &str, host: &str, depth: usize) {
    let kids = arr(node, "children");
    let (groups, leaves): (Vec<&Value>, Vec<&Value>) =
        kids.iter().partition(|c| s(c, "kind") != "op");
    for g in groups {
        let m = &g["metrics"];
        let count = arr(g, "children").len();
        let _ = write!(
            o,
            "<details class=\"grp\"{open}><summary><b>{name}</b> <span class=\"dim\">{kind}{cnt}</span> · {time} ({tf}) · FLOPs util {fu} · HBM util {hu} · {bb} · wasted {w}</summary><div style=\"margin-left:1.2em\">",
            open = if depth == 0 { " open" } else { "" },
            name = esc(s(g, "name")),
            kind = esc(s(g, "kind")),
            cnt = if count > 0 { format!(", {count} children") } else { String::new() },
            time = fmt_ps(n(m, "time_ps")),
            tf = pct(f(m, "time_fraction")),
            fu = pct(f(m, "flops_utilization")),
            hu = pct(f(m, "hbm_utilization")),
            bb = esc(s(m, "bound_by")),
            w = pct(f(m, "wasted_time_fraction")),
        );
        tree(o, g, ops, run, host, depth + 1);
        o.push_str("</div></details>");
    }
    if !leaves.is_empty() {
        let _ = write!(
            o,
            "<p class=\"dim\">{} ops</p><table class=\"ops paged\" data-page=\"{PAGE}\"><thead><tr><th>Op</th>{METRIC_HEADS}<th class=\"num\">Occurrences</th></tr></thead><tbody>",
            leaves.len()
        );
        for l in leaves {
            o.push_str("<tr><td class=\"name\">");
            let op = l
                .get("op")
                .and_then(Value::as_u64)
                .and_then(|i| ops.get(i as usize));
            match op {
                Some(op) => op_details(o, op, run, host),
                None => o.push_str(&esc(s(l, "name"))),
            }
            o.push_str("</td>");
            metric_cells(o, &l["metrics"]);
            let _ = write!(
                o,
                "<td class=\"num\" data-v=\"{0}\">{0}</td></tr>",
                n(&l["metrics"], "occurrences")
            );
        }
        o.push_str("</tbody></table>");
    }
}

/// The op profile page; `group` is `program` (default), `category` or `provenance`.
pub fn op_profile_view(r: &Value, run: &str, group: Option<&str>) -> String {
    let mut o = String::from("<section class=\"op-profile\"><h1>Op profile</h1>");
    let group = match group {
        Some("category") => "category",
        Some("provenance") => "provenance",
        _ => "program",
    };
    let _ = write!(
        o,
        "<p>Group by: <select name=\"group\" form=\"nav\" onchange=\"this.form.submit()\">{}</select> <span class=\"dim\">wasted time = time fraction × (1 − max(FLOPs util, HBM util)); click a column to sort, an op for its details</span></p>",
        ["program", "category", "provenance"]
            .iter()
            .map(|g| format!(
                "<option value=\"{g}\"{}>{g}</option>",
                if *g == group { " selected" } else { "" }
            ))
            .collect::<String>()
    );
    for h in arr(r, "hosts") {
        let host = s(h, "host");
        let _ = write!(o, "<article class=\"host\"><h2>Host {}</h2>", esc(host));
        if let Some(e) = h.get("error").and_then(Value::as_str) {
            o.push_str(&error_box(e));
            o.push_str("</article>");
            continue;
        }
        peaks_line(
            &mut o,
            &h["peaks"],
            h.get("ridge_point").and_then(Value::as_f64),
        );
        let ops = arr(h, "ops");
        let _ = write!(
            o,
            "<p>{} ops (all listed) from {} · total time {} (IDLE {}) · FLOPs and bytes: {}</p>",
            n(h, "op_count"),
            esc(s(h, "op_source_description")),
            fmt_ps(n(h, "total_time_ps")),
            fmt_ps(n(h, "idle_ps")),
            esc(&s(h, "cost_source").replace('_', " "))
        );
        notes(&mut o, h);
        if ops.is_empty() {
            o.push_str("<p>No ops found in this profile.</p></article>");
            continue;
        }
        let root = &h[format!("by_{group}").as_str()];
        let m = &root["metrics"];
        let _ = write!(
            o,
            "<p>Whole host: FLOPs util {} · HBM util {} · bound by {}</p>",
            pct(f(m, "flops_utilization")),
            pct(f(m, "hbm_utilization")),
            esc(s(m, "bound_by"))
        );
        tree(&mut o, root, ops, run, host, 0);
        o.push_str("</article>");
    }
    o.push_str(TABLE_JS);
    o.push_str("</section>");
    o
}

/// The HLO op stats page: every op in one sortable, paged table.
pub fn hlo_stats_view(r: &Value, run: &str) -> String {
    let mut o = String::from("<section class=\"hlo-stats\"><h1>HLO op stats</h1>");
    for h in arr(r, "hosts") {
        let host = s(h, "host");
        let _ = write!(o, "<article class=\"host\"><h2>Host {}</h2>", esc(host));
        if let Some(e) = h.get("error").and_then(Value::as_str) {
            o.push_str(&error_box(e));
            o.push_str("</article>");
            continue;
        }
        peaks_line(&mut o, &h["peaks"], None);
        notes(&mut o, h);
        let rows = arr(h, "rows");
        let _ = write!(
            o,
            "<p>{} HLO ops, all listed (times in µs, FLOP rates in GFLOP/s, bandwidths in GiB/s, as XProf)</p>",
            rows.len()
        );
        if rows.is_empty() {
            o.push_str("</article>");
            continue;
        }
        let _ = write!(
            o,
            "<table class=\"ops paged\" data-page=\"{PAGE}\"><thead><tr><th class=\"num\">Rank</th><th>Program</th><th>Category</th><th>HLO op</th><th>Framework op</th><th class=\"num\">Occurrences</th><th class=\"num\">Total time</th><th class=\"num\">Avg time</th><th class=\"num\">Self time</th><th class=\"num\">Avg self</th><th class=\"num\">Self %</th><th class=\"num\">Cum. %</th><th class=\"num\">GFLOP/s</th><th class=\"num\">Mem GiB/s</th><th class=\"num\">HBM GiB/s</th><th class=\"num\">FLOP/byte</th><th>Bound by</th><th>Source</th></tr></thead><tbody>"
        );
        for x in rows {
            let name = s(x, "hlo_op_name");
            let _ = write!(
                o,
                "<tr><td class=\"num\" data-v=\"{rank}\">{rank}</td><td class=\"name\">{prog}</td><td>{cat}</td><td class=\"name\"><a href=\"{link}\" title=\"{expr}\">{name}</a></td><td class=\"name\">{tf}</td><td class=\"num\" data-v=\"{occ}\">{occ}</td>",
                rank = n(x, "rank"),
                prog = esc(s(x, "program")),
                cat = esc(s(x, "category")),
                link = esc(&graph_link(run, host, name, s(x, "program"))),
                expr = esc(s(x, "hlo_op_expression")),
                name = esc(name),
                tf = esc(s(x, "tf_op_name")),
                occ = n(x, "occurrences"),
            );
            for k in [
                "total_time",
                "avg_time",
                "total_self_time",
                "avg_self_time",
                "total_self_time_percent",
                "cumulative_total_self_time_percent",
                "model_flop_rate",
                "measured_memory_bw",
                "hbm_bw",
                "operational_intensity",
            ] {
                let v = f(x, k);
                let _ = write!(o, "<td class=\"num\" data-v=\"{v}\">{v:.3}</td>");
            }
            let _ = write!(
                o,
                "<td>{}</td><td class=\"name\" title=\"{}\">{}</td></tr>",
                esc(s(x, "bound_by")),
                esc(s(x, "source_stack")),
                esc(s(x, "source_info"))
            );
        }
        o.push_str("</tbody></table></article>");
    }
    o.push_str(TABLE_JS);
    o.push_str("</section>");
    o
}

const PW: f64 = 900.0;
const PH: f64 = 480.0;
const PL: f64 = 70.0;
const PR: f64 = 20.0;
const PT: f64 = 16.0;
const PB: f64 = 44.0;

/// Log-log roofline SVG: x = FLOP/byte, y = GFLOP/s.
pub fn roofline_svg(h: &Value) -> String {
    let peak = h.get("peak_flop_rate_gflops").and_then(Value::as_f64);
    let ridge = h.get("ridge_point").and_then(Value::as_f64);
    let pts: Vec<&Value> = arr(h, "points")
        .iter()
        .filter(|p| f(p, "operational_intensity") > 0.0 && f(p, "flop_rate_gflops") > 0.0)
        .collect();
    let mut xs: Vec<f64> = pts.iter().map(|p| f(p, "operational_intensity")).collect();
    let mut ys: Vec<f64> = pts.iter().map(|p| f(p, "flop_rate_gflops")).collect();
    if let Some(r) = ridge {
        xs.push(r);
    }
    if let Some(p) = peak {
        ys.push(p);
    }
    if xs.is_empty() || ys.is_empty() {
        return "<p class=\"dim\">Nothing to plot: no op has both FLOPs and bytes.</p>".into();
    }
    let lo = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min).log10().floor();
    let hi = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max).log10().ceil();
    let (x0, x1) = (lo(&xs) - 1.0, hi(&xs) + 1.0);
    let (y0, y1) = (lo(&ys) - 1.0, hi(&ys) + 0.5);
    let sx = |x: f64| PL + (x.log10() - x0) / (x1 - x0) * (PW - PL - PR);
    let sy = |y: f64| PT + (1.0 - (y.log10() - y0) / (y1 - y0)) * (PH - PT - PB);
    let mut o = format!(
        "<svg class=\"roofline\" viewBox=\"0 0 {PW} {PH}\" width=\"{PW}\" height=\"{PH}\" role=\"img\" aria-label=\"roofline\" style=\"font:11px sans-serif;background:#fff\">"
    );
    for e in (x0 as i64)..=(x1 as i64) {
        let x = sx(10f64.powi(e as i32));
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{PT}\" y2=\"{yb}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{ty}\" text-anchor=\"middle\">1e{e}</text>",
            yb = PH - PB,
            ty = PH - PB + 14.0
        );
    }
    for e in (y0 as i64)..=(y1 as i64) {
        let y = sy(10f64.powi(e as i32));
        let _ = write!(
            o,
            "<line x1=\"{PL}\" x2=\"{xr}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">1e{e}</text>",
            xr = PW - PR,
            tx = PL - 4.0,
            ty = y + 4.0
        );
    }
    let _ = write!(
        o,
        "<text x=\"{cx}\" y=\"{by}\" text-anchor=\"middle\">Operational intensity (FLOP / HBM byte)</text><text transform=\"translate(14 {cy}) rotate(-90)\" text-anchor=\"middle\">FLOP rate (GFLOP/s)</text>",
        cx = (PL + PW - PR) / 2.0,
        by = PH - 8.0,
        cy = (PT + PH - PB) / 2.0
    );
    // Roofs: memory roof y = OI × BW up to the ridge, then the compute roof.
    if let (Some(p), Some(r)) = (peak, ridge) {
        let xa = 10f64.powf(x0);
        let xb = 10f64.powf(x1);
        let bw = p / r; // GFLOP/s per FLOP/byte = GB/s
        let ya = (xa * bw).max(10f64.powf(y0));
        let xa2 = ya / bw;
        let _ = write!(
            o,
            "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"2\" points=\"{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}\"><title>HBM roof {:.1} GB/s, compute roof {:.1} GFLOP/s</title></polyline>",
            sx(xa2), sy(ya), sx(r), sy(p), sx(xb), sy(p), bw, p
        );
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y:.1}\" y2=\"{yb}\" stroke=\"#c33\" stroke-dasharray=\"4 3\"/><text x=\"{tx:.1}\" y=\"{ty:.1}\" fill=\"#c33\">ridge {r:.3}</text><text x=\"{cx:.1}\" y=\"{cy:.1}\" fill=\"#c33\" text-anchor=\"end\">compute roof {p:.0} GFLOP/s</text>",
            x = sx(r),
            y = sy(p),
            yb = PH - PB,
            tx = sx(r) + 4.0,
            ty = PH - PB - 6.0,
            cx = PW - PR - 4.0,
            cy = sy(p) - 4.0
        );
    }
    for p in &pts {
        let (color, rad) = match s(p, "kind") {
            "host" => ("#000", 6.0),
            "program" => ("#7a3", 5.0),
            "step" => ("#d80", 4.0),
            _ => ("#36c", 3.0),
        };
        let _ = write!(
            o,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{rad}\" fill=\"{color}\" fill-opacity=\"0.7\"><title>{} ({}): {:.4} FLOP/byte, {:.3} GFLOP/s, {} · {}</title></circle>",
            sx(f(p, "operational_intensity")),
            sy(f(p, "flop_rate_gflops")),
            esc(s(p, "name")),
            esc(s(p, "kind")),
            f(p, "operational_intensity"),
            f(p, "flop_rate_gflops"),
            esc(s(p, "bound_by")),
            fmt_ps(n(p, "time_ps"))
        );
    }
    o.push_str("</svg><p class=\"dim\">● black: whole host · green: programs · orange: steps · blue: ops. Hover a point for its figures.</p>");
    o
}

/// A form choosing whose ops the roofline plots: the whole profile or one step.
fn step_picker(o: &mut String, h: &Value, run: &str, host: &str) {
    let steps: Vec<&str> = arr(h, "points")
        .iter()
        .filter(|p| s(p, "kind") == "step")
        .map(|p| s(p, "step"))
        .collect();
    if steps.is_empty() {
        return;
    }
    let selected = h.get("selected_step").and_then(Value::as_str);
    let _ = write!(
        o,
        "<form class=\"step-picker\" method=\"get\" action=\"/\"><input type=\"hidden\" name=\"run\" value=\"{}\"><input type=\"hidden\" name=\"tool\" value=\"roofline_model\"><input type=\"hidden\" name=\"host\" value=\"{}\"><label>Op points of <select name=\"step\" onchange=\"this.form.submit()\"><option value=\"\">the whole profile</option>",
        esc(run),
        esc(host)
    );
    for st in steps {
        let _ = write!(
            o,
            "<option value=\"{v}\"{sel}>step {v}</option>",
            v = esc(st),
            sel = if selected == Some(st) {
                " selected"
            } else {
                ""
            }
        );
    }
    o.push_str("</select></label> <noscript><button>Show</button></noscript></form>");
}

/// The roofline page: plot, then the table of records.
pub fn roofline_view(r: &Value, run: &str) -> String {
    let mut o = String::from("<section class=\"roofline\"><h1>Roofline</h1>");
    for h in arr(r, "hosts") {
        let host = s(h, "host");
        let _ = write!(o, "<article class=\"host\"><h2>Host {}</h2>", esc(host));
        if let Some(e) = h.get("error").and_then(Value::as_str) {
            o.push_str(&error_box(e));
            o.push_str("</article>");
            continue;
        }
        peaks_line(
            &mut o,
            &h["peaks"],
            h.get("ridge_point").and_then(Value::as_f64),
        );
        let _ = write!(
            o,
            "<p>{} ops: {} compute-bound, {} HBM-bound · {} steps</p>",
            n(h, "op_count"),
            n(h, "compute_bound_ops"),
            n(h, "memory_bound_ops"),
            n(h, "step_count")
        );
        notes(&mut o, h);
        step_picker(&mut o, h, run, host);
        o.push_str(&roofline_svg(h));
        let pts = arr(h, "points");
        let _ = write!(
            o,
            "<p>{} records, all listed</p><table class=\"ops paged\" data-page=\"{PAGE}\"><thead><tr><th>Step</th><th>Kind</th><th>Operation</th><th>Program</th><th>Category</th><th class=\"num\">Occurrences</th><th class=\"num\">Time</th><th class=\"num\">FLOP/byte</th><th class=\"num\">GFLOP/s</th><th class=\"num\">HBM GiB/s</th><th class=\"num\">Roof GFLOP/s</th><th class=\"num\">Roofline eff.</th><th>Bound by</th></tr></thead><tbody>",
            pts.len()
        );
        for p in pts {
            let name = s(p, "name");
            let name_cell = if s(p, "kind") == "op" {
                format!(
                    "<a href=\"{}\">{}</a>",
                    esc(&graph_link(run, host, name, s(p, "program"))),
                    esc(name)
                )
            } else {
                esc(name)
            };
            let roof = p.get("roof_gflops").and_then(Value::as_f64);
            let eff = p.get("roofline_efficiency").and_then(Value::as_f64);
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td class=\"name\">{}</td><td class=\"name\">{}</td><td>{}</td><td class=\"num\" data-v=\"{occ}\">{occ}</td><td class=\"num\" data-v=\"{t}\">{tt}</td><td class=\"num\" data-v=\"{oi}\">{oi:.4}</td><td class=\"num\" data-v=\"{fr}\">{fr:.3}</td><td class=\"num\" data-v=\"{bw}\">{bw:.3}</td><td class=\"num\" data-v=\"{rf}\">{rfs}</td><td class=\"num\" data-v=\"{ef}\">{efs}</td><td>{bb}</td></tr>",
                esc(s(p, "step")),
                esc(s(p, "kind")),
                name_cell,
                esc(s(p, "program")),
                esc(s(p, "category")),
                occ = n(p, "occurrences"),
                t = n(p, "time_ps"),
                tt = fmt_ps(n(p, "time_ps")),
                oi = f(p, "operational_intensity"),
                fr = f(p, "flop_rate_gflops"),
                bw = f(p, "hbm_bw_gibps"),
                rf = roof.unwrap_or(0.0),
                rfs = roof.map_or(String::new(), |v| format!("{v:.3}")),
                ef = eff.unwrap_or(0.0),
                efs = eff.map_or(String::new(), pct),
                bb = esc(s(p, "bound_by")),
            );
        }
        o.push_str("</tbody></table></article>");
    }
    o.push_str(TABLE_JS);
    o.push_str("</section>");
    o
}
