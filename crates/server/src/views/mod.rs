//! The HTML pages: one view per tool, rendering the tool's typed result (never its JSON), found
//! by the tool's name in [`VIEWS`]; a tool without a view shows its text form.
//!
//! A view is a function `fn(&Tool::Output, &Cx) -> Markup` registered for the tool type (so the
//! name and the output type come from the tool itself, and a view of the wrong type does not
//! compile). [`ui`] holds what views share (tables, links, formatting), [`chart`] the SVG
//! drawing, [`page`] the page shell.

pub mod chart;
pub mod diff;
mod graph;
mod input_pipeline;
mod memory;
mod op_stats;
mod ops;
mod overview;
pub mod page;
mod report;
pub mod ui;

use maud::{html, Markup};
use std::marker::PhantomData;
use xlens_analysis::tools::{self, Tool, ToolOutput};

/// What a view knows besides the tool's output.
pub struct Cx<'a> {
    /// The run (session) shown.
    pub session: &'a str,
    /// The host selected in the page header, if any.
    pub host: Option<&'a str>,
    /// The page's query string (tool parameters and view options such as `group`).
    pub query: &'a [(String, String)],
}

impl Cx<'_> {
    /// The query value of `key`, when given and not blank.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, v)| k == key && !v.trim().is_empty())
            .map(|(_, v)| v.as_str())
    }
}

/// A tool's page.
pub trait View: Sync {
    /// The tool's name ([`Tool::NAME`]).
    fn tool(&self) -> &'static str;
    /// The page body when it needs no tool output (the trace viewer draws itself from its API).
    fn body_without_output(&self) -> Option<Markup> {
        None
    }
    /// A parameter to run the tool with again before rendering `out` (the memory viewer shows
    /// the module with the largest peak rather than none).
    fn refine(&self, _out: &ToolOutput, _query: &[(String, String)]) -> Option<(String, String)> {
        None
    }
    fn render(&self, out: &ToolOutput, cx: &Cx) -> Markup;
}

type RenderFn<T> = fn(&<T as Tool>::Output, &Cx) -> Markup;
type RefineFn<T> = fn(&<T as Tool>::Output, &[(String, String)]) -> Option<(String, String)>;

/// The view of tool `T`: a function of its typed output.
pub struct Typed<T: Tool> {
    render: RenderFn<T>,
    refine: Option<RefineFn<T>>,
    tool: PhantomData<fn() -> T>,
}

impl<T: Tool> Typed<T> {
    pub const fn new(render: RenderFn<T>) -> Self {
        Typed {
            render,
            refine: None,
            tool: PhantomData,
        }
    }

    pub const fn refined(render: RenderFn<T>, refine: RefineFn<T>) -> Self {
        Typed {
            render,
            refine: Some(refine),
            tool: PhantomData,
        }
    }
}

impl<T: Tool> View for Typed<T> {
    fn tool(&self) -> &'static str {
        T::NAME
    }
    fn refine(&self, out: &ToolOutput, query: &[(String, String)]) -> Option<(String, String)> {
        (self.refine?)(out.get::<T::Output>()?, query)
    }
    fn render(&self, out: &ToolOutput, cx: &Cx) -> Markup {
        match out.get::<T::Output>() {
            Some(o) => (self.render)(o, cx),
            None => text_view(out),
        }
    }
}

/// The trace viewer: its page is drawn by `assets/trace.js` from the trace API.
struct TraceView;

impl View for TraceView {
    fn tool(&self) -> &'static str {
        <tools::trace_viewer::TraceViewer as Tool>::NAME
    }
    fn body_without_output(&self) -> Option<Markup> {
        Some(page::trace_body())
    }
    fn render(&self, out: &ToolOutput, _: &Cx) -> Markup {
        text_view(out)
    }
}

/// Every tool's page.
pub static VIEWS: &[&dyn View] = &[
    &Typed::<tools::report::ReportTool>::new(report::view),
    &Typed::<tools::capture_check::CaptureCheckTool>::new(op_stats::capture_check_view),
    &TraceView,
    &Typed::<tools::events::EventsTool>::new(op_stats::events_view),
    &Typed::<tools::async_overlap::AsyncOverlapTool>::new(op_stats::async_overlap_view),
    &Typed::<tools::overview::OverviewPage>::new(overview::view),
    &Typed::<tools::kpi::KpiTool>::new(overview::kpi_view),
    &Typed::<tools::step_trace::StepTraceTool>::new(op_stats::step_trace_view),
    &Typed::<tools::input_pipeline::InputPipelineAnalyzer>::new(input_pipeline::view),
    &Typed::<tools::framework_op_stats::FrameworkOpStatsTool>::new(op_stats::framework_view),
    &Typed::<tools::kernel_stats::KernelStatsTool>::new(op_stats::kernel_view),
    &Typed::<tools::pytorch_views::PytorchOperators>::new(op_stats::pytorch_operators_view),
    &Typed::<tools::pytorch_views::PytorchKernels>::new(op_stats::pytorch_kernels_view),
    &Typed::<tools::pytorch_views::PytorchDistributed>::new(op_stats::pytorch_distributed_view),
    &Typed::<tools::temporal_breakdown::TemporalBreakdownTool>::new(op_stats::temporal_view),
    &Typed::<tools::comm_comp_overlap::CommCompOverlapTool>::new(op_stats::overlap_view),
    &Typed::<tools::kernel_breakdown::KernelBreakdownTool>::new(op_stats::kernel_breakdown_view),
    &Typed::<tools::idle_time::IdleTimeTool>::new(op_stats::idle_time_view),
    &Typed::<tools::launch_stats::LaunchStatsTool>::new(op_stats::launch_stats_view),
    &Typed::<tools::memory_viewer::MemoryViewerTool>::refined(
        memory::viewer_view,
        memory::largest_module,
    ),
    &Typed::<tools::memory_profile::MemoryProfileTool>::new(memory::profile_view),
    &Typed::<tools::peak_allocations::PeakAllocationsTool>::new(op_stats::peak_allocations_view),
    &Typed::<tools::op_profile::OpProfile>::new(ops::op_profile_view),
    &Typed::<tools::hlo_modules::HloModulesTool>::new(op_stats::hlo_modules_view),
    &Typed::<tools::hlo_stats::HloStats>::new(ops::hlo_stats_view),
    &Typed::<tools::roofline::RooflineModel>::new(ops::roofline_view),
    &Typed::<tools::graph_viewer::GraphViewerTool>::new(graph::view),
];

/// The default view: the tool's text form.
struct TextView;

impl View for TextView {
    fn tool(&self) -> &'static str {
        ""
    }
    fn render(&self, out: &ToolOutput, _: &Cx) -> Markup {
        text_view(out)
    }
}

/// The view of tool `name` (the text view for a tool without one).
pub fn view_for(name: &str) -> &'static dyn View {
    VIEWS
        .iter()
        .copied()
        .find(|v| v.tool() == name)
        .unwrap_or(&TextView)
}

fn text_view(out: &ToolOutput) -> Markup {
    html! { pre { (out.text()) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_view_and_every_view_a_tool() {
        for t in tools::infos() {
            let n = VIEWS.iter().filter(|v| v.tool() == t.name).count();
            assert_eq!(n, 1, "{} has {n} views", t.name);
        }
        for v in VIEWS {
            assert!(
                tools::find(v.tool()).is_ok(),
                "view of unknown tool {}",
                v.tool()
            );
        }
        assert_eq!(view_for("no such tool").tool(), "");
    }
}
