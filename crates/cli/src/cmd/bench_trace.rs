//! `xlens bench-trace`: the trace viewer's index build and viewport query times.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Measure the trace viewer: index build and viewport query times (see PERFORMANCE.md).
#[derive(clap::Args)]
pub struct Args {
    /// A profile file: .xplane.pb or a PyTorch trace .json[.gz] (or use --synthetic).
    file: Option<PathBuf>,
    /// Generate a synthetic profile of this many events instead.
    #[arg(long)]
    synthetic: Option<usize>,
    #[arg(long, default_value_t = 1920)]
    width: u32,
    #[arg(long, default_value_t = 200)]
    queries: usize,
    #[arg(long)]
    json: bool,
}

/// `xlens bench-trace`: trace viewer index build and viewport query times, on a real file or on a
/// synthetic profile of `synthetic` events.
pub fn run(a: Args) -> Result<()> {
    let (file, synthetic, width, queries, json) = (
        a.file.as_deref(),
        a.synthetic,
        a.width,
        a.queries.max(1),
        a.json,
    );
    use xlens_analysis::base::trace::{synthetic_profile, TraceIndex};
    let t0 = Instant::now();
    let (label, profile) = match (file, synthetic) {
        (_, Some(n)) => (format!("synthetic, {n} events"), synthetic_profile(n, 8)),
        (Some(f), None) => {
            let sessions = xlens_store::discover(f)?;
            let host = sessions
                .first()
                .and_then(|s| s.hosts.first())
                .cloned()
                .context("no profile file found")?;
            let p = xlens_loader::load_host(&host)?;
            (host.path.display().to_string(), p)
        }
        (None, None) => anyhow::bail!("give a FILE or --synthetic N"),
    };
    let load_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let idx = TraceIndex::build(vec![("host".to_string(), Arc::new(profile))]);
    let build_s = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let first = idx.query(idx.span.0, idx.span.1, width);
    let first_s = t2.elapsed().as_secs_f64();
    let first_json = serde_json::to_vec(&first.to_json(false))?.len();
    // Random windows at every zoom level, from the whole trace down to ~1 µs.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut times = Vec::with_capacity(queries);
    let mut max_items = 0usize;
    let span = (idx.span.1 - idx.span.0).max(1);
    for _ in 0..queries {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let zoom = (rng % 24) as u32;
        let w = (span >> zoom).max(1_000_000);
        let s = idx.span.0 + ((rng >> 20) as i64).rem_euclid((span - w).max(1));
        let t = Instant::now();
        let v = idx.query(s, s + w, width);
        times.push(t.elapsed().as_secs_f64());
        max_items = max_items.max(v.events.len() + v.summaries.len());
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| times[((times.len() - 1) as f64 * p) as usize] * 1e3;
    let r = serde_json::json!({
        "profile": label,
        "events": idx.total_events,
        "tracks": idx.tracks.len(),
        "load_s": load_s,
        "index_build_s": build_s,
        "first_viewport_s": first_s,
        "first_viewport_json_bytes": first_json,
        "first_response_s": load_s + build_s + first_s,
        "width_px": width,
        "queries": queries,
        "query_ms_p50": pct(0.5),
        "query_ms_p99": pct(0.99),
        "query_ms_max": pct(1.0),
        "max_boxes_in_a_response": max_items,
        "peak_rss_bytes": super::bench::status_kib("VmHWM:").unwrap_or(0) * 1024,
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!("profile          {label}");
        println!(
            "events           {} in {} tracks",
            idx.total_events,
            idx.tracks.len()
        );
        println!("load             {load_s:.3} s");
        println!("index build      {build_s:.3} s");
        println!(
            "first viewport   {:.1} ms ({} KB JSON)",
            first_s * 1e3,
            first_json / 1000
        );
        println!(
            "first response   {:.3} s (load + index + first viewport)",
            load_s + build_s + first_s
        );
        println!("viewport query   p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms over {queries} random windows at {width} px", pct(0.5), pct(0.99), pct(1.0));
        println!("largest response {max_items} boxes");
    }
    Ok(())
}
