//! The overview: per host the step time (figures and a chart stacked by breakdown category),
//! what each category counts, op placement, duty cycle, FLOP rate, memory headroom,
//! recommendations and the top ops; then every step in one table.

use maud::{html, Markup};
use serde::Serialize;
use xlens_analysis::base::hosts::across::{AllHosts, HostStepStats};
use xlens_analysis::base::ops::op_metrics::OpMetric;
use xlens_analysis::base::steps::step_db::{Category, StepRow};
use xlens_analysis::tools::kpi::{rows as kpi_rows, Kpi};
use xlens_analysis::tools::overview::{HostOverview, Overview};

use super::chart::{f1, stacked_bars, Frame, LEFT, RIGHT, W};
use super::ui::{error_box, fmt_ps, script_json, Cell, Table, Url};
use super::Cx;

/// Colours of the breakdown categories, in order.
const COLORS: [&str; 9] = [
    "#4e79a7", "#59a14f", "#9c755f", "#f28e2b", "#edc948", "#e15759", "#b07aa1", "#76b7b2",
    "#bab0ac",
];

pub fn view(v: &Overview, cx: &Cx) -> Markup {
    html! {
        h1 { "Overview: run " (v.run) }
        p { (v.host_count) " host(s); device " (v.device_type) "; " (v.devices_participated) " device(s) participated." }
        @if let Some(r) = &v.run_advice {
            p class="advice run-advice" {
                "Run advice: " b { (r.bottleneck.as_str()) } " on " (r.agreeing) " of " (r.hosts) " hosts. "
                span class="dim" { (r.summary) }
            }
        }
        @if let Some(a) = &v.all_hosts { (all_hosts(a, cx)) }
        @for h in &v.hosts { (host(h, v.categories, cx)) }
        script type="module" src="/static/stepchart.js" {}
        h3 { "Steps" }
        (steps_table(v))
    }
}

fn legend(cats: &[Category]) -> Markup {
    html! {
        div class="legend" {
            @for (i, c) in cats.iter().enumerate() {
                span title=(c.explanation) { i style=(format!("background:{}", COLORS[i % COLORS.len()])) { "\u{a0}\u{a0}" } " " (c.label) }
                " "
            }
        }
    }
}

/// What `stepchart.js` shows on hover: each step's name, duration and breakdown.
#[derive(Serialize)]
struct ChartData<'a> {
    names: Vec<&'a str>,
    duration_ps: Vec<i64>,
    breakdown_ps: Vec<&'a [i64]>,
    categories: Vec<&'static str>,
    colors: &'static [&'static str],
}

/// Step time per step, stacked by breakdown category: one SVG path per category whatever the
/// number of steps, the numbers of the step under the mouse shown by `stepchart.js`.
fn step_chart(rows: &[StepRow], cats: &[Category], mean_ps: i64) -> Markup {
    let bars: Vec<StepBar> = rows
        .iter()
        .map(|r| StepBar {
            name: &r.name,
            duration_ps: r.duration_ps,
            breakdown_ps: &r.breakdown_ps,
        })
        .collect();
    let labels: Vec<&str> = cats.iter().map(|c| c.label).collect();
    chart_of(&bars, &labels, mean_ps)
}

/// One step of the chart.
struct StepBar<'a> {
    name: &'a str,
    duration_ps: i64,
    breakdown_ps: &'a [i64],
}

fn chart_of(rows: &[StepBar], labels: &[&'static str], mean_ps: i64) -> Markup {
    let Some(first) = rows.first() else {
        return html! {};
    };
    let max = rows
        .iter()
        .map(|r| r.duration_ps.max(r.breakdown_ps.iter().sum()))
        .max()
        .unwrap_or(1)
        .max(1);
    let frame = Frame {
        top: 10.0,
        height: 160.0,
        max: max as f64,
    };
    let height = frame.bottom() + 30.0;
    let cols: Vec<&[i64]> = rows.iter().map(|r| r.breakdown_ps).collect();
    let data = ChartData {
        names: rows.iter().map(|r| r.name).collect(),
        duration_ps: rows.iter().map(|r| r.duration_ps).collect(),
        breakdown_ps: cols.clone(),
        categories: labels.to_vec(),
        colors: &COLORS,
    };
    let ym = frame.y(mean_ps as f64);
    let last = rows.last().map_or("", |r| r.name);
    html! {
        div class="stepchart" {
            svg class="sc-chart" viewBox=(format!("0 0 {W} {height:.0}")) width="100%" role="img" data-x0=(LEFT) data-x1=(W - RIGHT)
                aria-label="step time per step, stacked by category" {
                (frame.axis(|v| if v > 0.0 { fmt_ps(v as i64) } else { "0".to_string() }))
                (stacked_bars(&frame, &cols, labels.len(), &COLORS))
                line class="sc-mean" x1=(LEFT) x2=(W - RIGHT) y1=(f1(ym)) y2=(f1(ym)) {
                    title { "mean " (fmt_ps(mean_ps)) }
                }
                text class="tick" x=(LEFT) y=(f1(frame.bottom() + 14.0)) { (first.name) }
                text class="tick" x=(f1(W - RIGHT)) y=(f1(frame.bottom() + 14.0)) text-anchor="end" { (last) }
                text class="tick" x=(f1(LEFT + frame.width() / 2.0)) y=(f1(frame.bottom() + 26.0)) text-anchor="middle" {
                    (rows.len()) " steps · dashed: mean " (fmt_ps(mean_ps))
                }
                rect class="sc-hover" x=(LEFT) y=(frame.top) width="0" height=(frame.height) {}
            }
            div class="sc-tip" hidden {}
            script type="application/json" class="sc-data" { (script_json(&data)) }
        }
    }
}

fn host(h: &HostOverview, cats: &[Category], cx: &Cx) -> Markup {
    let st = &h.steps.figures;
    let top_ops = Table::new("sortable")
        .col("op", |op: &&OpMetric| Cell::text(&op.name))
        .col("framework op", |op| {
            Cell::text(op.framework_op.as_deref().unwrap_or(""))
        })
        .col("category", |op| {
            Cell::text(op.category.as_deref().unwrap_or(""))
        })
        .col("occurrences", |op| Cell::int(op.occurrences))
        .col("self time", |op| Cell::time(op.self_time_ps));
    html! {
        section {
            h2 { "Host " (h.host) }
            @if let Some(e) = &h.error {
                (error_box(e))
            } @else {
                p {
                    b { (st.count) " steps" }
                    @if let Some(t) = &h.pytorch {
                        " (" (t.step_definition) ") "
                    } @else {
                        " (XProf-compatible: XProf drops the first and last step when more than 5 remain; "
                        (h.steps_all.figures.count) " annotated steps in all). "
                    }
                    "Step time mean "
                    (fmt_ps(st.mean_ps)) " ± " (fmt_ps(st.std_dev_ps)) " (sample std dev), min "
                    (fmt_ps(st.min_ps)) ", max " (fmt_ps(st.max_ps)) "."
                }
                @for g in h.pytorch.iter().flat_map(|t| &t.gpus) {
                    p {
                        "GPU " (g.device) ": utilization " (format!("{:.2}", g.utilization_percent)) "%"
                        @if let Some(v) = g.est_sm_efficiency_percent { ", est. SM efficiency " (format!("{v:.2}")) "%" }
                        @if let Some(v) = g.est_achieved_occupancy_percent { ", est. achieved occupancy " (format!("{v:.2}")) "%" }
                        span class="dim" { " (over the steps, as the PyTorch TensorBoard plugin computes them)" }
                    }
                }
                @for note in &h.steps_notes { p class="dim" { (note) } }
                (legend(cats))
                (step_chart(&h.steps.rows, cats, st.mean_ps))
                h3 { "What each category counts" }
                ul { @for c in cats { li { b { (c.label) } ": " (c.explanation) } } }
                p {
                    "Op placement: " (format!("{:.1}", h.placement.device_ops_percent)) "% of ops and "
                    (format!("{:.1}", h.placement.device_time_percent)) "% of op time on the device. "
                    span class="dim" { (h.placement.explanation) }
                }
                @if let Some(d) = h.device_duty_cycle_percent {
                    p { "Device duty cycle: " (format!("{d:.1}")) "%" }
                }
                @if let Some(r) = h.flop_rate_per_second {
                    p {
                        "FLOP rate: " (format!("{:.3}", r / 1e12)) " TFLOP/s"
                        @if let Some(u) = h.flop_utilization_percent { " (" (format!("{u:.1}")) "% of peak)" }
                    }
                }
                @if let Some(m) = &h.memory_headroom { p { "Memory: " (m.statement) } }
                @if let Some(a) = &h.advice {
                    h3 { "Advice" }
                    p class="advice" {
                        b { (a.bottleneck.as_str()) } ": " (a.summary) " " span class="dim" { "(over " (a.basis) ")" }
                    }
                    p { (a.suggestion) " "
                        a href=(Url::page(cx.session, a.tool.name()).with_opt("host", cx.host)) { "Open " (a.tool.name()) }
                        @if let (Some(step), Some((s0, s1))) = (&a.worst_step, a.window_ps) {
                            " · "
                            a href=(Url::page(cx.session, "trace_viewer").with_opt("host", cx.host).with("start_ps", &s0.to_string()).with("end_ps", &s1.to_string())) {
                                "trace of step " (step)
                            }
                        }
                    }
                    @if a.step_ranges.len() > 1 {
                        ul class="advice-ranges" {
                            @for r in &a.step_ranges {
                                li {
                                    a href=(Url::page(cx.session, "trace_viewer").with_opt("host", cx.host).with("start_ps", &r.window_ps.0.to_string()).with("end_ps", &r.window_ps.1.to_string())) {
                                        (r.first_step) " to " (r.last_step)
                                    }
                                    " (" (r.steps) " steps): " (r.bottleneck.as_str())
                                }
                            }
                        }
                    }
                    p class="dim" {
                        @for (i, f) in a.figures.iter().enumerate() {
                            @if i > 0 { " · " }
                            (f.name) " " (format!("{:.1}%", f.percent))
                        }
                    }
                }
                h3 { "Recommendations" }
                ul { @for r in &h.recommendations { li { (r.text) " " span class="dim" { "(" (r.evidence) ")" } } } }
                h3 { "Top ops by self time (" (h.op_count) " ops in all)" }
                (top_ops.render(h.top_ops.iter()))
            }
        }
    }
}

/// Every host's steps (the tool's CSV as a table).
/// Many hosts: stragglers with evidence, per-host step statistics, and host × step heatmaps of
/// step time and of each breakdown category (against each step's median over the hosts).
fn all_hosts(a: &AllHosts, cx: &Cx) -> Markup {
    let n = a.hosts.len();
    html! {
        section class="all-hosts" id="all-hosts" {
            h2 { "All hosts: " (n) " with steps"
                @if !a.hosts_without_steps.is_empty() {
                    " (not counted: " (a.hosts_without_steps.join(", ")) ")"
                }
            }
            @if a.stragglers.is_empty() {
                p { "No straggler: no host's step is " (format!("{:.0}", a.straggler_threshold_percent)) "% or more above the other hosts' median, in any of " (a.steps.len()) " steps." }
            } @else {
                h3 { "Stragglers (" (a.stragglers.len()) " of " (n) " hosts; a step " (format!("{:.0}", a.straggler_threshold_percent)) "% or more above the other hosts' median)" }
                ul class="stragglers" {
                    @for s in &a.stragglers {
                        li {
                            b { (s.host) } ": " (s.evidence) ". Steps: "
                            (s.steps.iter().take(12).cloned().collect::<Vec<_>>().join(", "))
                            @if s.steps.len() > 12 { " and " (s.steps.len() - 12) " more" }
                            " · "
                            a href=(Url::page(cx.session, "overview_page").with("host", &s.host)) { "its overview" }
                        }
                    }
                }
            }
            h3 { "Step time per host (" (n) " hosts)" }
            (Table::new("sortable")
                .col("host", |s: &&HostStepStats| Cell::text(&s.host))
                .num("steps", |s| Cell::int(s.steps))
                .num("mean", |s| Cell::num(s.mean_ps, fmt_ps(s.mean_ps)))
                .num("median", |s| Cell::num(s.median_ps, fmt_ps(s.median_ps)))
                .num("p90", |s| Cell::num(s.p90_ps, fmt_ps(s.p90_ps)))
                .num("min", |s| Cell::num(s.min_ps, fmt_ps(s.min_ps)))
                .num("max", |s| Cell::num(s.max_ps, fmt_ps(s.max_ps)))
                .num("median vs hosts", |s| {
                    // No "-0.0%": within ±0.05% it is even.
                    let p = if s.vs_hosts_percent.abs() < 0.05 { 0.0 } else { s.vs_hosts_percent };
                    Cell::num(s.vs_hosts_percent, format!("{p:+.1}%"))
                })
                .render(a.stats.iter()))
            h3 { "Host × step: step time (" (n) " hosts × " (a.steps.len()) " steps; red: slower than the step's median over hosts)" }
            (heatmap(&a.hosts, &a.steps, &a.step_time_ps, &a.step_time_median_ps, "step time"))
            @for c in &a.categories {
                @if c.ps.iter().flatten().any(|v| v.get().is_some_and(|x| x > 0)) {
                    details {
                        summary { "Host × step: " (c.label) }
                        (heatmap(&a.hosts, &a.steps, &c.ps, &c.median_ps, c.label))
                    }
                }
            }
        }
    }
}

/// A host × step grid coloured by each cell against its step's median over the hosts (white at
/// the median or below, red from +50%), each cell's figures in its tooltip.
fn heatmap(
    hosts: &[String],
    steps: &[String],
    m: &[Vec<xlens_analysis::base::hosts::across::Cell>],
    medians: &[Option<i64>],
    what: &str,
) -> Markup {
    let cw = (900.0 / steps.len().max(1) as f64).clamp(2.0, 24.0);
    let ch = (600.0 / hosts.len().max(1) as f64).clamp(3.0, 18.0);
    let label = 90.0;
    let w = label + cw * steps.len() as f64;
    let h = ch * hosts.len() as f64;
    html! {
        svg class="heatmap" width=(w) height=(h) viewBox=(format!("0 0 {w} {h}")) role="img" aria-label=(format!("{what} per host and step")) {
            @for (hi, host) in hosts.iter().enumerate() {
                @if ch >= 8.0 {
                    text x="0" y=(f1(hi as f64 * ch + ch * 0.75)) font-size=(f1(ch * 0.7)) { (host) }
                }
                @for (si, v) in m[hi].iter().enumerate() {
                    @if let Some(v) = &v.get() {
                        @let med = medians.get(si).copied().flatten().unwrap_or(0);
                        @let ratio = if med > 0 { *v as f64 / med as f64 } else { 1.0 };
                        @let red = ((ratio - 1.0) / 0.5).clamp(0.0, 1.0);
                        rect x=(f1(label + si as f64 * cw)) y=(f1(hi as f64 * ch)) width=(f1(cw)) height=(f1(ch))
                            fill=(format!("rgb(255,{g},{g})", g = (255.0 * (1.0 - red)).round() as u8)) stroke="#ddd" stroke-width="0.5" {
                            title { (host) " · " (steps[si]) ": " (fmt_ps(*v)) " (" (format!("{:+.1}%", (ratio - 1.0) * 100.0)) " against the step's median)" }
                        }
                    }
                }
            }
        }
    }
}

fn steps_table(v: &Overview) -> Markup {
    let mut t = Table::new("sortable")
        .filter()
        .col("host", |(h, _): &(&HostOverview, &StepRow)| {
            Cell::text(&h.host)
        })
        .col("step", |(_, r)| Cell::text(&r.name))
        .col("group_id", |(_, r)| Cell::int(r.group_id))
        .col("begin_ps", |(_, r)| Cell::int(r.begin_ps))
        .col("duration_ps", |(_, r)| Cell::int(r.duration_ps));
    for (i, c) in v.categories.iter().enumerate() {
        t = t.col(format!("{}_ps", c.id), move |(_, r)| {
            Cell::int(r.breakdown_ps.get(i).copied().unwrap_or(0))
        });
    }
    t.render(
        v.hosts
            .iter()
            .flat_map(|h| h.steps.rows.iter().map(move |r| (h, r))),
    )
}

/// The key figures as a two-column table, then why any is null.
pub fn kpi_view(k: &Kpi, _: &Cx) -> Markup {
    let t = Table::new("plain")
        .col("figure", |(name, _): &(String, String)| Cell::text(name))
        .col("value", |(_, v)| Cell::text(v));
    html! {
        h1 { "Key figures: run " (k.run) }
        (t.render(kpi_rows(k)))
        @if !k.notes.is_empty() {
            ul class="notes" { @for n in &k.notes { li { (n) } } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_of_thousands_of_steps_stays_small() {
        let names: Vec<String> = (0..3000).map(|i| format!("train {i}")).collect();
        let breakdowns: Vec<Vec<i64>> = (0..3000)
            .map(|i| vec![0, 0, 0, 4_000_000 + (i % 7) * 100_000, 0, 0, 0, 0, 50_000])
            .collect();
        let bars: Vec<StepBar> = names
            .iter()
            .zip(&breakdowns)
            .map(|(n, b)| StepBar {
                name: n,
                duration_ps: b.iter().sum(),
                breakdown_ps: b,
            })
            .collect();
        let labels = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        let html = chart_of(&bars, &labels, 4_300_000).into_string();
        assert_eq!(
            html.matches("<path").count(),
            2,
            "one path per drawn category"
        );
        assert!(html.contains("3000 steps"));
        assert!(html.len() < 600_000, "{} bytes", html.len());
        assert_eq!(chart_of(&[], &labels, 0).into_string(), "");
    }
}
