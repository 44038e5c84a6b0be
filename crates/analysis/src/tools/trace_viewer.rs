//! Trace viewer tool: one level-of-detail window of the run's timeline
//! ([`crate::base::trace::TraceIndex`]): the events at least about a pixel wide, and every run of
//! narrower ones merged into a counted box. The server's canvas viewer asks the same index for
//! windows as the user pans and zooms.

use serde::Serialize;

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::tool::{Tool, ToolError};
use crate::base::trace::Viewport;

/// The trace viewer's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct TraceViewerParams {
    /// Window start, picoseconds on the session's time axis (default: the trace's start).
    #[arg(long)]
    pub start_ps: Option<i64>,
    /// Window end, picoseconds (default: the trace's end).
    #[arg(long)]
    pub end_ps: Option<i64>,
    /// Pixel width deciding the level of detail (default 1500).
    #[arg(long)]
    pub width: Option<u32>,
}

/// One window of the timeline, names written inline.
pub struct TraceWindow(pub Viewport);

impl Serialize for TraceWindow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.to_json(true).serialize(s)
    }
}

/// The trace viewer tool.
pub struct TraceViewer;

impl Tool for TraceViewer {
    const NAME: &'static str = "trace_viewer";
    const TITLE: &'static str = "Trace viewer";
    const DESCRIPTION: &'static str = "Host threads and device streams on one timeline; every event reachable by zooming, narrow ones merged into counted boxes.";
    type Params = TraceViewerParams;
    type Output = TraceWindow;

    fn run(run: &Run, p: &TraceViewerParams) -> Result<TraceWindow, ToolError> {
        let idx = run.trace_index().map_err(ToolError::Load)?;
        Ok(TraceWindow(idx.query(
            p.start_ps.unwrap_or(idx.span.0),
            p.end_ps.unwrap_or(idx.span.1),
            p.width.unwrap_or(1500),
        )))
    }

    fn text(w: &TraceWindow) -> String {
        let v = &w.0;
        format!(
            "{} events in the trace; window {} ps to {} ps at {} px: {} events drawn, {} merged boxes holding {} narrower events, {} tracks\n",
            v.total_events,
            v.start_ps,
            v.end_ps,
            v.width_px,
            v.events.len(),
            v.summaries.len(),
            v.summaries.iter().map(|s| s.count).sum::<u64>(),
            v.tracks.len()
        )
    }

    fn csv(w: &TraceWindow) -> Option<String> {
        let v = &w.0;
        let mut o = String::from("track,track_name,depth,name,start_ps,dur_ps\n");
        for e in &v.events {
            let t = &v.tracks[e.track as usize];
            o.push_str(&format!(
                "{},{},{},{},{},{}\n",
                e.track,
                csv_field(&format!("{} {}", t.group, t.name)),
                e.depth,
                csv_field(&v.names[e.name as usize]),
                e.start_ps,
                e.dur_ps
            ));
        }
        Some(o)
    }
}
