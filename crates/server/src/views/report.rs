//! The report: per session and host, the device, span, events, steps, recorded errors, the top
//! ops by self time and the events per plane and line.

use maud::{html, Markup};
use xlens_analysis::base::device::DeviceKind;
use xlens_analysis::base::ops::events::OpTime;
use xlens_analysis::tools::report::{HostReport, LineSummary, PlaneSummary, Report};

use super::ui::{error_box, fmt_ps, Cell, RowAttrs, Table};
use super::Cx;

pub fn view(r: &Report, _: &Cx) -> Markup {
    html! {
        @for sess in &r.sessions {
            section class="session" {
                h1 { "Run " (sess.name) }
                p class="dim" { (sess.dir) }
                @for h in &sess.hosts { (host(h)) }
            }
        }
    }
}

fn device_text(h: &HostReport) -> String {
    let Some(d) = &h.device else {
        return " ".to_string();
    };
    let mut s = if d.count == 0 && d.kind == DeviceKind::Cpu {
        "CPU only (no accelerator planes in this profile)".to_string()
    } else {
        format!("{} {}", d.kind.as_str(), d.model)
    };
    if d.count > 0 {
        s.push_str(&format!(" × {} ({} with events)", d.count, d.active));
    }
    s
}

/// A row of the planes table: a plane, or one of its lines.
enum PlaneRow<'a> {
    Plane(&'a PlaneSummary),
    Line(&'a LineSummary),
}

fn host(h: &HostReport) -> Markup {
    let total = h.total_op_self_time_ps.max(1) as f64;
    let ops = Table::new("ops")
        .col("#", |(i, _): &(usize, &OpTime)| Cell::text(i + 1))
        .col("Op", |(_, op)| Cell::name(&op.name))
        .col("Module", |(_, op)| {
            Cell::name(op.module.as_deref().unwrap_or(""))
        })
        .num("Occurrences", |(_, op)| Cell::int(op.occurrences))
        .num("Self time", |(_, op)| Cell::time(op.self_time_ps))
        .num("% of op time", |(_, op)| {
            let p = 100.0 * op.self_time_ps as f64 / total;
            Cell::num(p, format!("{p:.2}%"))
        })
        .num("Total time", |(_, op)| Cell::time(op.total_time_ps));
    let planes = Table::new("planes")
        .col("Plane / line", |r: &PlaneRow| match r {
            PlaneRow::Plane(p) => Cell::text(&p.name),
            PlaneRow::Line(l) => Cell::text(&l.name).class("line"),
        })
        .num("Events", |r| match r {
            PlaneRow::Plane(p) => Cell::int(p.events),
            PlaneRow::Line(l) => Cell::int(l.events),
        })
        .rows_with(|_, r| RowAttrs {
            class: matches!(r, PlaneRow::Plane(_)).then_some("plane"),
            data_b: None,
        });
    let plane_rows = h.planes.iter().flat_map(|p| {
        std::iter::once(PlaneRow::Plane(p)).chain(p.lines.iter().map(PlaneRow::Line))
    });
    let messages = [
        ("errors", "error", &h.errors),
        ("warnings", "warn", &h.warnings),
        ("import warnings", "warn", &h.import_warnings),
    ];
    html! {
        article class="host" {
            h2 { "Host " (h.host) }
            p class="dim" { (h.file) " · " (h.file_bytes) " bytes" }
            @if let Some(e) = &h.error {
                (error_box(e))
            } @else {
                dl class="facts" {
                    dt { "Device" } dd { (device_text(h)) }
                    dt { "Span" } dd { (fmt_ps(h.span_ps)) }
                    dt { "Events" } dd { (h.total_events) }
                    dt { "Steps" } dd {
                        @match &h.steps {
                            Some(st) if st.count > 0 => {
                                (st.count) " steps (" code { (st.name.as_deref().unwrap_or("")) } "): mean "
                                (fmt_ps(st.mean_ps)) ", min " (fmt_ps(st.min_ps)) ", max " (fmt_ps(st.max_ps))
                            }
                            _ => {
                                "none found (no " code { "step_num" } " annotations, no device " code { "Steps" } " line)"
                            }
                        }
                    }
                }
                @for (label, class, list) in messages {
                    @for m in list.iter() { div class=(class) { (label) ": " (m) } }
                }
                @if h.top_ops.is_empty() {
                    h3 { "Ops" }
                    p { "No ops found in this profile." }
                } @else {
                    h3 { "Top " (h.top_ops.len()) " of " (h.op_count) " ops by self time" }
                    p class="dim" { "From " (h.top_ops_source_description.unwrap_or("")) "." }
                    (ops.render(h.top_ops.iter().enumerate()))
                }
                h3 { "Planes and lines" }
                (planes.render(plane_rows))
            }
        }
    }
}
