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
    /// Several hosts: show their raw clocks instead of aligning them on the ends of the steps
    /// and collectives they share.
    #[arg(long)]
    #[serde(default)]
    pub no_align: bool,
}

/// One window of the timeline, names written inline.
pub struct TraceWindow(pub Viewport);

impl schemars::JsonSchema for TraceWindow {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TraceWindow".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Window::<'static>::json_schema(g)
    }
}

/// The window as `Viewport::to_json(true)` writes it (keys in name order, names inline), written
/// straight from the viewport instead of through a JSON value tree.
impl Serialize for TraceWindow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let v = &self.0;
        let name = |i: u32| v.names.get(i as usize).map_or("", String::as_str);
        Window {
            clocks: &v.clocks,
            counters: v
                .counters
                .iter()
                .map(|c| Counter {
                    group: &c.group,
                    id: c.id,
                    max: c.max,
                    min: c.min,
                    name: &c.name,
                    points_total: c.points_total,
                    times_ps: &c.times_ps,
                    values: &c.values,
                })
                .collect(),
            end_ps: v.end_ps,
            events: v
                .events
                .iter()
                .map(|e| Event {
                    depth: e.depth,
                    dur_ps: e.dur_ps,
                    index: e.index,
                    name: name(e.name),
                    start_ps: e.start_ps,
                    track: e.track,
                })
                .collect(),
            names: &v.names,
            ps_per_px: v.ps_per_px,
            span_end_ps: v.span_end_ps,
            span_start_ps: v.span_start_ps,
            start_ps: v.start_ps,
            summaries: v
                .summaries
                .iter()
                .map(|b| Boxed {
                    count: b.count,
                    covered_ps: b.covered_ps,
                    depth: b.depth,
                    end_ps: b.end_ps,
                    longest_ps: b.longest_ps,
                    name: name(b.name),
                    start_ps: b.start_ps,
                    track: b.track,
                })
                .collect(),
            total_events: v.total_events,
            tracks: v
                .tracks
                .iter()
                .map(|t| Track {
                    depths: t.depths,
                    events: t.events,
                    group: &t.group,
                    host: &t.host,
                    id: t.id,
                    name: &t.name,
                })
                .collect(),
            width_px: v.width_px,
        }
        .serialize(s)
    }
}

// The viewport's parts with their fields in name order (as a JSON value tree would write them).
/// One window of the timeline: events at least about a pixel wide, narrower runs merged into
/// counted boxes, counters, and names written inline.
#[derive(Serialize, schemars::JsonSchema)]
struct Window<'a> {
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    clocks: &'a [crate::base::hosts::align::HostClock],
    counters: Vec<Counter<'a>>,
    end_ps: i64,
    events: Vec<Event<'a>>,
    names: &'a [String],
    ps_per_px: f64,
    span_end_ps: i64,
    span_start_ps: i64,
    start_ps: i64,
    summaries: Vec<Boxed<'a>>,
    total_events: u64,
    tracks: Vec<Track<'a>>,
    width_px: u32,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Counter<'a> {
    group: &'a str,
    id: u32,
    max: f64,
    min: f64,
    name: &'a str,
    points_total: u64,
    times_ps: &'a [i64],
    values: &'a [f64],
}

#[derive(Serialize, schemars::JsonSchema)]
struct Event<'a> {
    depth: u16,
    dur_ps: i64,
    index: u32,
    name: &'a str,
    start_ps: i64,
    track: u32,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Boxed<'a> {
    count: u64,
    covered_ps: i64,
    depth: u16,
    end_ps: i64,
    longest_ps: i64,
    name: &'a str,
    start_ps: i64,
    track: u32,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Track<'a> {
    depths: u16,
    events: u64,
    group: &'a str,
    host: &'a str,
    id: u32,
    name: &'a str,
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
        let idx = if p.no_align && run.hosts.len() > 1 {
            // Not the run's (aligned) index: one on the raw clocks, for this answer.
            let mut hosts = Vec::with_capacity(run.hosts.len());
            for h in &run.hosts {
                let a = h
                    .analysis
                    .as_ref()
                    .map_err(|e| ToolError::Load(e.clone()))?;
                hosts.push((h.host().to_string(), a.profile_arc()));
            }
            std::sync::Arc::new(crate::base::trace::TraceIndex::build(hosts))
        } else {
            run.trace_index().map_err(ToolError::Load)?
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::trace::TraceIndex;
    use std::sync::Arc;

    #[test]
    fn written_as_the_json_value_tree_writes_it() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/logdir/plugins/profile"
        );
        for run in [
            "jax_mlp_small",
            "tpu_inference",
            "gpu_multi_worker",
            "tf_keras_cnn_small",
        ] {
            let sessions = xlens_store::discover(std::path::Path::new(&format!("{dir}/{run}")))
                .unwrap_or_default();
            let Some(h) = sessions.first().and_then(|s| s.hosts.first()) else {
                panic!("{run}: no fixture");
            };
            let p = xlens_loader::load_host(h).expect("fixture loads");
            let idx = TraceIndex::build(vec![("h".into(), Arc::new(p))]);
            let (s, e) = idx.span;
            for (a, b, w) in [(s, e, 1500), (s + (e - s) / 3, s + (e - s) / 2, 400)] {
                let v = idx.query(a, b, w);
                let tree = serde_json::to_string(&v.to_json(true)).unwrap();
                let direct = serde_json::to_string(&TraceWindow(v)).unwrap();
                assert_eq!(direct, tree, "{run} {a}..{b}");
            }
        }
    }
}
