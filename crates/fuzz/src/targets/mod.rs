//! The three fuzz targets, and what they share: running tools over a decoded profile, and a
//! profile's shape as a signature.

pub mod chrome;
pub mod query;
pub mod xspace;

use std::path::PathBuf;
use std::sync::Arc;
use xlens_analysis::base::context::{Analysis, Run};
use xlens_analysis::tools;
use xlens_model::Profile;
use xlens_store::{Format, HostFile, Session};

use crate::engine::{category, log2_bucket, run_caught, signature};

/// The shape of a decoded profile, bucketed: planes, lines and events (log2), import warnings
/// (log2) and the distinct kinds of warning (each one's category, cut to 40 characters).
pub fn profile_shape(p: &Profile) -> u64 {
    let lines: usize = p.planes.iter().map(|pl| pl.lines.len()).sum();
    let warnings: std::collections::BTreeSet<String> = p
        .import_warnings
        .iter()
        .take(64)
        .map(|w| category(w).chars().take(40).collect())
        .collect();
    signature((
        p.planes.len().min(16),
        log2_bucket(lines),
        log2_bucket(p.event_count()),
        log2_bucket(p.import_warnings.len()),
        warnings,
    ))
}

/// A one-host run over `profile`, as `xlens tool` and the server build it.
pub fn single_run(profile: Profile, format: Format) -> Run {
    let analysis = Arc::new(Analysis::new(Arc::new(profile)));
    let host = HostFile {
        host: "fuzz".into(),
        path: PathBuf::from("fuzz/fuzz.input"),
        bytes: 0,
        format,
        rank: None,
    };
    let session = Session {
        name: "fuzz".into(),
        dir: PathBuf::from("fuzz"),
        hosts: vec![host],
        modified_s: 0,
    };
    Run::new(vec![session], |_| Ok(analysis.clone()))
}

/// Runs `report`, `overview_page` and the tool at `*cursor` (then moves the cursor, so every
/// tool gets its turn) with default parameters over `profile`, renders their JSON (and the
/// rotating tool's text and CSV), and queries the trace index; returns a signature of the
/// outcomes.
pub fn run_tools(profile: Profile, format: Format, cursor: &mut usize) -> u64 {
    let run = single_run(profile, format);
    let rotating = tools::TOOLS[*cursor % tools::TOOLS.len()].info().name;
    *cursor += 1;
    let mut outcomes = Vec::new();
    for (i, name) in ["report", "overview_page", rotating]
        .into_iter()
        .enumerate()
    {
        let outcome = match tools::find(name).and_then(|t| t.run_query(&run, &[])) {
            Ok(out) => {
                let json = out.json_string(false).map(|s| s.len()).unwrap_or(0);
                if i == 2 {
                    let _ = out.text();
                    let _ = out.csv();
                }
                format!("{name}: ok {}", log2_bucket(json))
            }
            Err(e) => format!("{name}: {}", category(&e.to_string())),
        };
        outcomes.push(outcome);
    }
    match run.trace_index() {
        Ok(idx) => {
            let (a, b) = idx.span;
            let vp = idx.query(a, b, 300);
            let hits = idx.search("a", 20);
            let _ = idx.details(0, 0);
            let _ = idx.range_stats(a, b);
            outcomes.push(format!(
                "trace {} {}",
                log2_bucket(vp.events.len()),
                log2_bucket(hits.total as usize)
            ));
        }
        Err(e) => outcomes.push(category(&e)),
    }
    signature(outcomes)
}

/// Runs every tool with default parameters over `profile` (rendering JSON, text and CSV) and
/// queries the trace index, each step with its panics caught apart; returns every panic.
pub fn replay_tools(profile: Profile, format: Format) -> Vec<String> {
    let mut panics = Vec::new();
    let run = match run_caught(|| single_run(profile, format)) {
        Ok(r) => r,
        Err(p) => return p,
    };
    for t in tools::TOOLS {
        let step = run_caught(|| {
            if let Ok(out) = t.run_query(&run, &[]) {
                let _ = out.json_string(false);
                let _ = out.text();
                let _ = out.csv();
            }
        });
        panics.extend(step.err().unwrap_or_default());
    }
    let trace = run_caught(|| {
        if let Ok(idx) = run.trace_index() {
            let (a, b) = idx.span;
            let _ = idx.query(a, b, 300);
            let _ = idx.search("a", 20);
            let _ = idx.details(0, 0);
            let _ = idx.range_stats(a, b);
            let mut out = Vec::new();
            idx.export_chrome(None, &mut out);
        }
    });
    panics.extend(trace.err().unwrap_or_default());
    panics
}
