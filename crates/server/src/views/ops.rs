//! The op profile, HLO op stats and roofline pages: every op in sortable, paged tables (with the
//! counts said), op details with links to the graph viewer, and a log-log roofline SVG drawn
//! here.

use maud::{html, Markup};
use xlens_analysis::base::hlo::hlo_ops::{CostSource, FusedChild, OpRow};
use xlens_analysis::base::hosts::across::{OpAcrossHosts, OpsAcrossHosts};
use xlens_analysis::base::peaks::{PeakSource, PeakSpec};
use xlens_analysis::tools::hlo_stats::{HloStatsReport, HloStatsRow};
use xlens_analysis::tools::op_profile::{Node, OpProfileReport};
use xlens_analysis::tools::roofline::{HostRoofline, RooflinePoint, RooflineReport};

use super::ui::{error_box, fixed, fmt_ps, graph_link, pct, Cell, Table};
use super::Cx;

/// Rows shown per page; `tables.js` pages through all of them.
const PAGE: usize = 100;

/// A peak figure's source as the tools name it.
fn peak_source(s: PeakSource) -> &'static str {
    match s {
        PeakSource::Profile => "profile",
        PeakSource::DerivedFromProfile => "derived from profile",
        PeakSource::Table => "table",
        PeakSource::UserGiven => "user given",
        PeakSource::MeasuredHere => "measured here",
        PeakSource::Unknown => "unknown",
    }
}

/// Where FLOPs and bytes came from, as the tools name it (`cost_model`).
fn cost_source(c: CostSource) -> &'static str {
    match c {
        CostSource::Xla => "xla",
        CostSource::CostModel => "cost_model",
        CostSource::None => "none",
    }
}

fn peaks_line(pk: Option<&PeakSpec>, ridge: Option<f64>) -> Markup {
    let Some(pk) = pk else {
        return html! {};
    };
    html! {
        p {
            "Device " b { (pk.kind.as_str()) " " (pk.model) }
            " · peak FLOP rate "
            (pk.flops_per_second.map_or("unknown".to_string(), |v| format!("{:.3} TFLOP/s", v / 1e12)))
            " " span class="dim" { "(" (peak_source(pk.flops_source)) ")" }
            " · peak memory bandwidth "
            (pk.bytes_per_second.map_or("unknown".to_string(), |v| format!("{:.1} GB/s", v / 1e9)))
            " " span class="dim" { "(" (peak_source(pk.bandwidth_source)) ")" }
            @if let Some(r) = ridge { " · ridge point " (fixed(r, 3)) " FLOP/byte" }
        }
        @if !pk.note.is_empty() { p class="dim" { "Peaks: " (pk.note) } }
    }
}

fn notes(notes: &[String]) -> Markup {
    html! { @for m in notes { p class="dim" { (m) } } }
}

fn fused_list(kids: &[FusedChild]) -> Markup {
    html! {
        table class="ops" {
            thead { tr { th { "Instruction" } th class="num" { "FLOPs" } th class="num" { "Bytes" } th { "Expression" } } }
            tbody {
                @for c in kids {
                    tr {
                        td class="name" { (c.name) }
                        td class="num" { (c.flops) }
                        td class="num" { (c.bytes_accessed) }
                        td {
                            code { (c.expression) }
                            @if !c.children.is_empty() {
                                details { summary { "fused body" } (fused_list(&c.children)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Details of one op: expression, shapes, op_name, source, fusion body, graph link.
fn op_details(op: &OpRow, run: &str, host: &str) -> Markup {
    let extra = [
        ("op_name", &op.op_name),
        ("Framework op", &op.provenance),
        ("Source", &op.source),
        ("Deduplicated name", &op.deduplicated_name),
    ];
    html! {
        // `data-op`: the page keeps the open op in its address (`op=`), so a link reopens it.
        details data-op=(op.name) data-program=(op.program) {
            summary { (op.name) }
            div class="op-details" {
                p {
                    a href=(graph_link(run, host, &op.name, &op.program)) { "Open in the graph viewer" }
                    " · program " code { (op.program) } " · category " (op.category)
                    " · costs: " (cost_source(op.cost_source))
                }
                pre class="copy" { (op.expression) }
                @if let Some(shape) = op.shape.as_deref().filter(|s| !s.is_empty()) {
                    p { "Shapes:" }
                    pre class="copy" { (shape) " ← (" (op.operand_shapes.join(", ")) ")" }
                }
                @for (label, v) in extra {
                    @if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                        p { (label) ": " code { (v) } }
                    }
                }
                @if let Some(stack) = op.source_stack.as_deref().filter(|s| !s.is_empty()) {
                    details { summary { "stack" } pre class="copy" { (stack) } }
                }
                @if !op.fused.is_empty() {
                    details {
                        summary { "fusion body: " (op.fused.len()) " instructions (by FLOPs)" }
                        (fused_list(&op.fused))
                    }
                }
            }
        }
    }
}

/// The op tree's leaf table: an op's details and its metrics.
fn leaf_table<'a>(ops: &'a [OpRow], run: &'a str, host: &'a str) -> Table<'a, &'a Node> {
    Table::new("ops paged")
        .paged(PAGE)
        .col("Op", move |l: &&Node| match l.op.and_then(|i| ops.get(i)) {
            Some(op) => Cell::html(op_details(op, run, host)).class("name"),
            None => Cell::name(&l.name),
        })
        .num("Time", |l| Cell::time(l.metrics.time_ps))
        .num("% of op time", |l| {
            Cell::pct(l.metrics.percent_of_op_time.unwrap_or(0.0) / 100.0)
        })
        .num("% with idle", |l| Cell::pct(l.metrics.time_fraction))
        .num("Self time", |l| Cell::time(l.metrics.self_time_ps))
        .num("GFLOP/s", |l| Cell::float(l.metrics.flop_rate_gflops, 3))
        .num("FLOPs util", |l| {
            capped(l.metrics.flops_utilization, &l.metrics.over_peak)
        })
        .num("HBM GiB/s", |l| Cell::float(l.metrics.hbm_bw_gibps, 3))
        .num("HBM util", |l| {
            capped(l.metrics.hbm_utilization, &l.metrics.over_peak)
        })
        .col("Bound by", |l| Cell::text(l.metrics.bound_by))
        .num("Wasted %", |l| Cell::pct(l.metrics.wasted_time_fraction))
        .num("Occurrences", |l| Cell::int(l.metrics.occurrences))
}

/// A utilisation; one shown capped at 100% is marked `100%*`, the reason in its tooltip (a
/// flag on the cost model or the peak, not a saturated device).
fn capped(u: f64, over_peak: &Option<String>) -> Cell {
    match over_peak {
        Some(why) if u >= 1.0 => Cell::num(u, format!("{}*", pct(u))).title(why),
        _ => Cell::pct(u),
    }
}

/// One tree level as nested `<details>`; the ops of a group in one sortable, paged table.
fn tree(node: &Node, ops: &[OpRow], run: &str, host: &str, depth: usize) -> Markup {
    let (groups, leaves): (Vec<&Node>, Vec<&Node>) =
        node.children.iter().partition(|c| c.kind != "op");
    html! {
        @for g in groups {
            @let m = &g.metrics;
            details class="grp" open[depth == 0] {
                summary {
                    b { (g.name) } " "
                    span class="dim" { (g.kind) @if !g.children.is_empty() { ", " (g.children.len()) " children" } }
                    " · " (fmt_ps(m.time_ps)) " ("
                    @if let Some(p) = m.percent_of_op_time { (format!("{p:.2}% of op time, ")) }
                    (pct(m.time_fraction)) " with idle) · FLOPs util " (pct(m.flops_utilization))
                    " · HBM util " (pct(m.hbm_utilization)) " · " (m.bound_by) " · wasted " (pct(m.wasted_time_fraction))
                }
                div class="grp-body" { (tree(g, ops, run, host, depth + 1)) }
            }
        }
        @if !leaves.is_empty() {
            p class="dim" { (leaves.len()) " ops" }
            (leaf_table(ops, run, host).render(leaves))
        }
    }
}

/// The op profile page; `group` is `program` (default), `category` or `provenance`.
pub fn op_profile_view(r: &OpProfileReport, cx: &Cx) -> Markup {
    let group = match cx.param("group") {
        Some("category") => "category",
        Some("provenance") => "provenance",
        _ => "program",
    };
    html! {
        section class="op-profile" {
            h1 { "Op profile" }
            p {
                "Group by: "
                select name="group" form="nav" class="autosubmit" {
                    @for g in ["program", "category", "provenance"] {
                        option value=(g) selected[g == group] { (g) }
                    }
                }
                " " span class="dim" { "wasted time = time fraction × (1 − max(FLOPs util, HBM util)); click a column to sort, an op for its details" }
            }
            @if let Some(a) = &r.all_hosts {
                h2 { "All hosts: " (a.categories.ops.len()) " categories over " (a.categories.hosts) " hosts" }
                (across_hosts(&a.categories, false))
                details {
                    summary { (a.ops.ops.len()) " ops over " (a.ops.hosts) " hosts" }
                    (across_hosts(&a.ops, true))
                }
            }
            @for h in &r.hosts {
                article class="host" {
                    h2 { "Host " (h.host) }
                    @if let Some(e) = &h.error {
                        (error_box(e))
                    } @else {
                        (peaks_line(h.peaks.as_ref(), h.ridge_point))
                        p {
                            (h.op_count) " ops (all listed) from " (h.op_source_description.unwrap_or(""))
                            " · total time " (fmt_ps(h.total_time_ps)) " (IDLE " (fmt_ps(h.idle_ps))
                            ") · FLOPs and bytes: " (cost_source(h.cost_source).replace('_', " "))
                        }
                        (notes(&h.notes))
                        @if h.ops.is_empty() {
                            p { "No ops found in this profile." }
                        } @else {
                            @let root = match group {
                                "category" => &h.by_category,
                                "provenance" => &h.by_provenance,
                                _ => &h.by_program,
                            };
                            p {
                                "Whole host: FLOPs util " (pct(root.metrics.flops_utilization)) " · HBM util "
                                (pct(root.metrics.hbm_utilization)) " · bound by " (root.metrics.bound_by)
                            }
                            (tree(root, &h.ops, cx.session, &h.host, 0))
                        }
                    }
                }
            }
        }
    }
}

/// Ops (or categories, without the program column) over the hosts of a run, paged.
fn across_hosts(a: &OpsAcrossHosts, programs: bool) -> Markup {
    let (per, unit) = a.display_unit();
    let mut t = Table::new("ops-hosts paged").paged(PAGE).filter();
    if programs {
        t = t.col("Program", |o: &&OpAcrossHosts| Cell::text(&o.program));
    }
    html! {
        p class="dim" { "Each " (if programs { "op" } else { "category" }) "'s total time (" (unit) ") summed over the hosts that ran it, and its per-host minimum, mean and maximum, with the hosts at either end; largest total first." }
        (t.col(if programs { "HLO op" } else { "Category" }, |o: &&OpAcrossHosts| Cell::text(&o.name).class("name"))
            .num("Hosts", |o| Cell::int(o.hosts))
            .num("Total", |o| Cell::float(o.total / per, 1))
            .num("Min", |o| Cell::float(o.min / per, 1))
            .num("Mean", |o| Cell::float(o.mean / per, 1))
            .num("Max", |o| Cell::float(o.max / per, 1))
            .col("Min host", |o| Cell::text(&o.min_host))
            .col("Max host", |o| Cell::text(&o.max_host))
            .render(a.ops.iter()))
    }
}

/// The HLO op stats page: every op in one sortable, paged table.
pub fn hlo_stats_view(r: &HloStatsReport, cx: &Cx) -> Markup {
    html! {
        section class="hlo-stats" {
            h1 { "HLO op stats" }
            @if let Some(a) = &r.all_hosts {
                h2 { "All hosts: " (a.ops.len()) " ops over " (a.hosts) " hosts" }
                (across_hosts(a, true))
            }
            @for h in &r.hosts {
                article class="host" {
                    h2 { "Host " (h.host) }
                    @if let Some(e) = &h.error {
                        (error_box(e))
                    } @else {
                        (peaks_line(h.peaks.as_ref(), None))
                        (notes(&h.notes))
                        p { (h.rows.len()) " HLO ops, all listed (times in µs, FLOP rates in GFLOP/s, bandwidths in GiB/s, as XProf)" }
                        @if !h.rows.is_empty() {
                            (hlo_table(cx.session, &h.host).render(h.rows.iter()))
                        }
                    }
                }
            }
        }
    }
}

fn hlo_table<'a>(run: &'a str, host: &'a str) -> Table<'a, &'a HloStatsRow> {
    let f3 = |v: f64| Cell::float(v, 3);
    Table::new("ops paged")
        .paged(PAGE)
        .num("Rank", |x: &&HloStatsRow| Cell::int(x.rank))
        .col("Program", |x| Cell::name(&x.program))
        .col("Category", |x| Cell::text(&x.category))
        .col("HLO op", move |x| {
            Cell::html(html! {
                a href=(graph_link(run, host, &x.hlo_op_name, &x.program)) title=(x.hlo_op_expression) { (x.hlo_op_name) }
            })
            .class("name")
        })
        .col("Framework op", |x| Cell::name(&x.tf_op_name))
        .num("Occurrences", |x| Cell::int(x.occurrences))
        .num("Total time", |x| Cell::time(x.total_time_ps))
        .num("Avg time", |x| Cell::time(x.avg_time_ps.round() as i64))
        .num("Self time", |x| Cell::time(x.total_self_time_ps))
        .num("Avg self", |x| Cell::time(x.avg_self_time_ps.round() as i64))
        .num("% of op time", move |x| f3(x.self_time_percent_of_op_time))
        .num("Self % with idle (XProf)", move |x| f3(x.total_self_time_percent))
        .num("Cum. %", move |x| f3(x.cumulative_total_self_time_percent))
        .num("GFLOP/s", move |x| f3(x.model_flop_rate_gflops))
        .num("Mem GiB/s", move |x| f3(x.measured_memory_bw_gibps))
        .num("HBM GiB/s", move |x| f3(x.hbm_bw_gibps))
        .num("FLOP/byte", move |x| f3(x.operational_intensity))
        .col("Bound by", |x| Cell::text(x.bound_by))
        .col("Source", |x| {
            Cell::name(&x.source_info).title(&x.source_stack)
        })
}

const PW: f64 = 900.0;
const PH: f64 = 480.0;
const PL: f64 = 70.0;
const PR: f64 = 20.0;
const PT: f64 = 16.0;
const PB: f64 = 44.0;

/// Log-log roofline SVG: x = FLOP/byte, y = GFLOP/s.
fn roofline_svg(h: &HostRoofline) -> Markup {
    let peak = h.peak_flop_rate_gflops;
    let ridge = h.ridge_point;
    let pts: Vec<&RooflinePoint> = h
        .points
        .iter()
        .filter(|p| {
            p.operational_intensity > 0.0
                && p.flop_rate_gflops > 0.0
                && p.operational_intensity.is_finite()
                && p.flop_rate_gflops.is_finite()
        })
        .collect();
    let mut xs: Vec<f64> = pts.iter().map(|p| p.operational_intensity).collect();
    let mut ys: Vec<f64> = pts.iter().map(|p| p.flop_rate_gflops).collect();
    // Roofs that are not finite positive numbers are not drawn (nor do they set the scale).
    let ok = |v: &f64| v.is_finite() && *v > 0.0;
    xs.extend(ridge.filter(ok));
    ys.extend(peak.filter(ok));
    if xs.is_empty() || ys.is_empty() {
        return html! { p class="dim" { "Nothing to plot: no op has both FLOPs and bytes." } };
    }
    let lo = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min).log10().floor();
    let hi = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max).log10().ceil();
    // At most 60 decades per axis (one grid line each), whatever the figures.
    let (x0, x1) = (lo(&xs) - 1.0, hi(&xs) + 1.0);
    let (y0, y1) = (lo(&ys) - 1.0, hi(&ys) + 0.5);
    let (x0, y0) = (x0.max(x1 - 60.0), y0.max(y1 - 60.0));
    let sx = |x: f64| PL + (x.log10() - x0) / (x1 - x0) * (PW - PL - PR);
    let sy = |y: f64| PT + (1.0 - (y.log10() - y0) / (y1 - y0)) * (PH - PT - PB);
    let f1 = |v: f64| fixed(v, 1);
    html! {
        svg class="roofline" viewBox=(format!("0 0 {PW} {PH}")) width=(PW) height=(PH) role="img" aria-label="roofline" style="font:11px sans-serif;background:#fff" {
            @for e in (x0 as i64)..=(x1 as i64) {
                @let x = sx(10f64.powi(e as i32));
                line x1=(f1(x)) x2=(f1(x)) y1=(PT) y2=(PH - PB) stroke="#eee" {}
                text x=(f1(x)) y=(PH - PB + 14.0) text-anchor="middle" { "1e" (e) }
            }
            @for e in (y0 as i64)..=(y1 as i64) {
                @let y = sy(10f64.powi(e as i32));
                line x1=(PL) x2=(PW - PR) y1=(f1(y)) y2=(f1(y)) stroke="#eee" {}
                text x=(PL - 4.0) y=(f1(y + 4.0)) text-anchor="end" { "1e" (e) }
            }
            text x=((PL + PW - PR) / 2.0) y=(PH - 8.0) text-anchor="middle" { "Operational intensity (FLOP / HBM byte)" }
            text transform=(format!("translate(14 {}) rotate(-90)", (PT + PH - PB) / 2.0)) text-anchor="middle" { "FLOP rate (GFLOP/s)" }
            // Roofs: memory roof y = OI × BW up to the ridge, then the compute roof.
            @if let (Some(p), Some(r)) = (peak.filter(ok), ridge.filter(ok)) {
                @let (xa, xb) = (10f64.powf(x0), 10f64.powf(x1));
                @let bw = p / r;
                @let ya = (xa * bw).max(10f64.powf(y0));
                @let xa2 = ya / bw;
                polyline fill="none" stroke="#c33" stroke-width="2"
                    points=(format!("{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}", sx(xa2), sy(ya), sx(r), sy(p), sx(xb), sy(p))) {
                    title { "HBM roof " (f1(bw)) " GB/s, compute roof " (f1(p)) " GFLOP/s" }
                }
                line x1=(f1(sx(r))) x2=(f1(sx(r))) y1=(f1(sy(p))) y2=(PH - PB) stroke="#c33" stroke-dasharray="4 3" {}
                text x=(f1(sx(r) + 4.0)) y=(f1(PH - PB - 6.0)) fill="#c33" { "ridge " (fixed(r, 3)) }
                text x=(f1(PW - PR - 4.0)) y=(f1(sy(p) - 4.0)) fill="#c33" text-anchor="end" { "compute roof " (fixed(p, 0)) " GFLOP/s" }
            }
            @for p in &pts {
                @let (color, rad) = match p.kind {
                    "host" => ("#000", 6.0),
                    "program" => ("#7a3", 5.0),
                    "step" => ("#d80", 4.0),
                    _ => ("#36c", 3.0),
                };
                circle cx=(f1(sx(p.operational_intensity))) cy=(f1(sy(p.flop_rate_gflops))) r=(rad) fill=(color) fill-opacity="0.7" {
                    title {
                        (p.name) " (" (p.kind) "): " (fixed(p.operational_intensity, 4)) " FLOP/byte, "
                        (fixed(p.flop_rate_gflops, 3)) " GFLOP/s, " (p.bound_by) " · " (fmt_ps(p.time_ps))
                    }
                }
            }
        }
        p class="dim" { "● black: whole host · green: programs · orange: steps · blue: ops. Hover a point for its figures." }
    }
}

/// A form choosing whose ops the roofline plots: the whole profile or one step.
fn step_picker(h: &HostRoofline, run: &str) -> Markup {
    let steps: Vec<&str> = h
        .points
        .iter()
        .filter(|p| p.kind == "step")
        .map(|p| p.step.as_str())
        .collect();
    if steps.is_empty() {
        return html! {};
    }
    let selected = h.selected_step.as_deref();
    html! {
        form class="step-picker" method="get" action="/" {
            input type="hidden" name="run" value=(run);
            input type="hidden" name="tool" value="roofline_model";
            input type="hidden" name="host" value=(h.host);
            label {
                "Op points of "
                select name="step" class="autosubmit" {
                    option value="" { "the whole profile" }
                    @for st in steps { option value=(st) selected[selected == Some(st)] { "step " (st) } }
                }
            }
            " " noscript { button { "Show" } }
        }
    }
}

/// The roofline page: plot, then the table of records.
pub fn roofline_view(r: &RooflineReport, cx: &Cx) -> Markup {
    let run = cx.session;
    html! {
        section class="roofline" {
            h1 { "Roofline" }
            @for h in &r.hosts {
                article class="host" {
                    h2 { "Host " (h.host) }
                    @if let Some(e) = &h.error {
                        (error_box(e))
                    } @else {
                        (peaks_line(h.peaks.as_ref(), h.ridge_point))
                        p {
                            (h.op_count) " ops: " (h.compute_bound_ops) " compute-bound, " (h.memory_bound_ops)
                            " HBM-bound · " (h.step_count) " steps"
                        }
                        (notes(&h.notes))
                        (step_picker(h, run))
                        (roofline_svg(h))
                        p { (h.points.len()) " records, all listed" }
                        (points_table(run, &h.host).render(h.points.iter()))
                    }
                }
            }
        }
    }
}

fn points_table<'a>(run: &'a str, host: &'a str) -> Table<'a, &'a RooflinePoint> {
    Table::new("ops paged")
        .paged(PAGE)
        .col("Step", |p: &&RooflinePoint| Cell::text(&p.step))
        .col("Kind", |p| Cell::text(p.kind))
        .col("Operation", move |p| {
            if p.kind == "op" {
                Cell::html(
                    html! { a href=(graph_link(run, host, &p.name, &p.program)) { (p.name) } },
                )
                .class("name")
            } else {
                Cell::name(&p.name)
            }
        })
        .col("Program", |p| Cell::name(&p.program))
        .col("Category", |p| Cell::text(&p.category))
        .num("Occurrences", |p| Cell::int(p.occurrences))
        .num("Time", |p| Cell::time(p.time_ps))
        .num("FLOP/byte", |p| Cell::float(p.operational_intensity, 4))
        .num("GFLOP/s", |p| Cell::float(p.flop_rate_gflops, 3))
        .num("HBM GiB/s", |p| Cell::float(p.hbm_bw_gibps, 3))
        .num("Roof GFLOP/s", |p| match p.roof_gflops {
            Some(v) => Cell::float(v, 3),
            None => Cell::num(0.0, ""),
        })
        .num("Roofline eff.", |p| match p.roofline_efficiency {
            Some(v) => Cell::pct(v),
            None => Cell::num(0.0, ""),
        })
        .col("Bound by", |p| Cell::text(p.bound_by))
}
