//! "Compare with": a comparison of the shown run (NEW) against a baseline run (`base=` in the
//! URL) above the overview, op profile, HLO op stats, framework op stats and memory viewer
//! pages, from [`xlens_analysis::compare`]: both values and the change in columns, every table
//! sortable (by delta too) like the others.

use maud::{html, Markup};
use xlens_analysis::compare::{CategoryDiff, Diff, MemoryDiff, OpDiff};

use super::ui::{fmt_bytes, fmt_ps, Cell, Table};

/// The pages that offer "compare with".
pub const COMPARABLE: &[&str] = &[
    "overview_page",
    "op_profile",
    "hlo_stats",
    "framework_op_stats",
    "memory_viewer",
];

/// Op rows shown in the panel (the JSON of `/api/diff` has all).
const MAX_OP_ROWS: usize = 200;

fn signed_ps(ps: i64) -> String {
    if ps >= 0 {
        format!("+{}", fmt_ps(ps))
    } else {
        format!("-{}", fmt_ps(-ps))
    }
}

fn pct(base: f64, new: f64) -> Cell {
    if base == 0.0 {
        Cell::num(0, "–")
    } else {
        let p = (new - base) / base.abs() * 100.0;
        Cell::num(p, format!("{p:+.1}%"))
    }
}

/// The comparison panel for `tool`'s page.
pub fn panel(d: &Diff, tool: &str) -> Markup {
    let st = &d.step_time;
    let steps = Table::new("sortable diff-table")
        .col("", |r: &(&str, i64, i64)| Cell::text(r.0))
        .num("BASE", |r| Cell::time(r.1))
        .num("NEW", |r| Cell::time(r.2))
        .num("Delta", |r| Cell::num(r.2 - r.1, signed_ps(r.2 - r.1)))
        .num("%", |r| pct(r.1 as f64, r.2 as f64));
    let cats = Table::new("sortable diff-table")
        .col("Category", |c: &&CategoryDiff| Cell::text(&c.label))
        .num("BASE", |c| Cell::time(c.base_ps))
        .num("NEW", |c| Cell::time(c.new_ps))
        .num("Delta", |c| Cell::num(c.delta_ps, signed_ps(c.delta_ps)))
        .num("%", |c| pct(c.base_ps as f64, c.new_ps as f64));
    let ops = Table::new("sortable diff-table")
        .col("Op", |o: &&OpDiff| Cell::name(o.label()))
        .num("BASE time", |o| {
            absent_or(o.base_count, Cell::time(o.base_ps))
        })
        .num("BASE ×", |o| {
            absent_or(o.base_count, Cell::int(o.base_count))
        })
        .num("NEW time", |o| absent_or(o.new_count, Cell::time(o.new_ps)))
        .num("NEW ×", |o| absent_or(o.new_count, Cell::int(o.new_count)))
        .num("Delta", |o| Cell::num(o.delta_ps, signed_ps(o.delta_ps)))
        .num("%", |o| pct(o.base_ps as f64, o.new_ps as f64))
        .col("Change", |o| Cell::text(&o.change));
    let mem = Table::new("sortable diff-table")
        .col("Module / allocator", |m: &&MemoryDiff| {
            Cell::name(format!("{} {}", m.kind, m.name))
        })
        .num("BASE", |m| {
            m.base_bytes.map_or(Cell::num(-1, "–"), Cell::bytes)
        })
        .num("NEW", |m| {
            m.new_bytes.map_or(Cell::num(-1, "–"), Cell::bytes)
        })
        .num("Delta", |m| {
            m.delta_bytes.map_or(Cell::num(0, "–"), |b| {
                Cell::num(
                    b,
                    if b >= 0 {
                        format!("+{}", fmt_bytes(b))
                    } else {
                        fmt_bytes(b)
                    },
                )
            })
        });
    let show_steps = tool == "overview_page";
    let show_ops = matches!(
        tool,
        "overview_page" | "op_profile" | "hlo_stats" | "framework_op_stats"
    );
    let show_mem = matches!(tool, "overview_page" | "memory_viewer");
    html! {
        section class="diff" id="diff" {
            h2 { "Compared with " code { (d.base.run) } }
            ul class="verdict" {
                @for l in &d.verdict { li { (l) } }
            }
            @if show_steps {
                h3 { "Step time" }
                p class="dim" {
                    (st.base.count) " steps in BASE, " (st.new.count) " in NEW"
                    @if let Some((lo, hi)) = st.ci95_pct {
                        "; 95% interval of the change of the mean " (format!("{lo:+.1}% … {hi:+.1}%")) " (" (st.verdict) ")"
                    }
                }
                (steps.render([
                    ("mean", st.base.mean_ps, st.new.mean_ps),
                    ("median", st.base.median_ps, st.new.median_ps),
                    ("p90", st.base.p90_ps, st.new.p90_ps),
                ]))
                h3 { "Step breakdown (mean per step)" }
                (cats.render(d.breakdown.iter().filter(|c| c.base_ps != 0 || c.new_ps != 0)))
                h3 { "Device" }
                dl class="facts" {
                    dt { "Duty cycle" }
                    dd { (opt(d.duty_cycle_percent.base)) " → " (opt(d.duty_cycle_percent.new)) }
                    dt { "FLOP utilisation" }
                    dd { (opt(d.flop_utilization_percent.base)) " → " (opt(d.flop_utilization_percent.new)) }
                }
            }
            @if show_ops {
                @let od = if tool == "framework_op_stats" && !d.framework_ops.rows.is_empty() { &d.framework_ops } else { &d.ops };
                h3 { "Ops (" (od.source) ")" }
                p class="dim" {
                    (od.matched) " matched"
                    @if od.by_fingerprint > 0 { " (" (od.by_fingerprint) " by fingerprint)" }
                    ", " (od.added) " added, " (od.removed) " removed, "
                    (od.slower) " slower, " (od.faster) " faster, " (od.unchanged) " unchanged"
                    @if od.rows.len() > MAX_OP_ROWS {
                        "; the " (MAX_OP_ROWS) " largest changes of " (od.rows.len()) " shown (all in the JSON)"
                    }
                }
                (ops.render(od.rows.iter().take(MAX_OP_ROWS)))
            }
            @if show_mem && !d.memory.is_empty() {
                h3 { "Memory peaks" }
                (mem.render(d.memory.iter()))
            }
        }
    }
}

/// A dash for an op a run does not have (it sorts as 0).
fn absent_or(count: u64, c: Cell) -> Cell {
    if count == 0 {
        Cell::num(0, "–")
    } else {
        c
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or("–".to_string(), |x| format!("{x:.2}%"))
}
