//! The input pipeline: per host the verdict, the host input time by category and every input op
//! (which ones XProf lists), then the input share of every step.

use maud::{html, Markup};
use xlens_analysis::tools::input_pipeline::{HostInput, InputOp, InputPipeline, StepInput};

use super::ui::{error_box, fixed, Cell, Table};
use super::Cx;

pub fn view(v: &InputPipeline, _: &Cx) -> Markup {
    let ms = |ps: i64| Cell::float(ps as f64 / 1e9, 3);
    let ops = Table::new("sortable")
        .filter()
        .col("Op", |op: &&InputOp| Cell::name(&op.name))
        .col("Category", |op| Cell::text(op.category))
        .col("In XProf", |op| {
            Cell::text(if op.in_xprof { "yes" } else { "no" })
        })
        .num("Count", |op| Cell::int(op.count))
        .num("Time (ms)", move |op| ms(op.total_time_ps))
        .num("Self time (ms)", move |op| ms(op.self_time_ps))
        .num("Self time %", |op| Cell::float(op.self_time_percent, 1));
    let steps = Table::new("sortable")
        .filter()
        .col("host", |(h, _): &(&HostInput, &StepInput)| {
            Cell::text(&h.host)
        })
        .col("step", |(_, s)| Cell::text(&s.name))
        .col("duration_ps", |(_, s)| Cell::int(s.duration_ps))
        .col("input_ps", |(_, s)| Cell::int(s.input_ps))
        .col("input_percent", |(_, s)| Cell::float(s.input_percent, 3));
    html! {
        @for h in &v.hosts {
            h2 { "Host " (h.host) }
            @if let Some(e) = &h.error {
                (error_box(e))
            } @else {
                p { b { (h.verdict) } }
                p class="dim" { (h.explanation) }
                @let b = &h.host_breakdown;
                @let ms3 = |ps: i64| fixed(ps as f64 / 1e9, 3);
                p {
                    "Host input time (self time of the input ops XProf lists): enqueue " (ms3(b.enqueue_ps))
                    " ms · demanded file read " (ms3(b.demanded_file_read_ps))
                    " ms · advanced file read " (ms3(b.advanced_file_read_ps))
                    " ms · preprocessing " (ms3(b.preprocessing_ps))
                    " ms · unclassified " (ms3(b.unclassified_ps)) " ms"
                }
                h3 { "Input ops (" (h.input_ops.len()) " rows, all listed)" }
                (ops.render(h.input_ops.iter()))
            }
        }
        h3 { "Steps" }
        (steps.render(v.hosts.iter().flat_map(|h| h.steps.iter().map(move |s| (h, s)))))
    }
}
