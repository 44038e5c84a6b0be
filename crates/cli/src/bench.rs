//! `xlens bench`: decode speed, peak memory and tool time on one profile, measured in-process.
//!
//! Peak RSS is the process's high-water mark (`VmHWM`), so run one file per process; the figure
//! includes the binary itself (a few MB, printed as the baseline).

use anyhow::{Context, Result};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use xlens_analysis::base::context::{Analysis, Run};
use xlens_analysis::tools;

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A writer that keeps only the number of bytes written.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len();
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// With `then_all`, also times every other tool on the same open run afterwards (what switching
/// tools costs once the profile and its shared analyses are there).
pub fn run(file: &Path, reps: usize, tool: &str, then_all: bool, json: bool) -> Result<()> {
    // (tool, seconds before the run is warm, seconds once it is).
    let mut switch: Vec<(&str, f64, f64)> = Vec::new();
    let baseline_kib = status_kib("VmHWM:").unwrap_or(0);
    // Finding the file's host and rank (for a `.json.gz`, a look inside its head) is part of
    // `xlens tool`'s first answer, as listing and opening the traces is of HTA's load.
    let t_found = Instant::now();
    let sessions = xlens_store::discover(file)?;
    let host = sessions
        .first()
        .and_then(|s| s.hosts.first())
        .cloned()
        .context("no profile file found")?;
    let discover_s = t_found.elapsed().as_secs_f64();
    let reps = reps.max(1);
    // As `xlens tool TOOL` reads the file for that tool alone; everything when others follow.
    let reads = if then_all {
        xlens_analysis::base::load::Reads::Everything
    } else {
        tools::find(tool)?.info().reads
    };
    let mut partial_read = None;
    let mut best_read = f64::MAX;
    let mut best_decode = f64::MAX;
    let mut decodes: Vec<f64> = Vec::with_capacity(reps);
    let mut best_tool = f64::MAX;
    let mut events = 0;
    let mut model_bytes = 0;
    let mut bytes_len = 0usize;
    // A gzip trace is read and decoded at once (its head decoded while the rest inflates): its
    // read time is then counted in the decode's.
    let mut read_with_decode = false;
    for _ in 0..reps {
        let t0 = Instant::now();
        // As `xlens tool` reads it.
        let (profile, t1) =
            match xlens_analysis::base::load::load_inflating(&host.path, host.format, reads)? {
                Some((profile, len)) => {
                    read_with_decode = true;
                    bytes_len = len;
                    (profile, t0)
                }
                None => {
                    let bytes = crate::mapped::map(&host, xlens_store::Paging::Ahead)?;
                    let t1 = Instant::now();
                    let profile =
                        xlens_analysis::base::load::decode_bytes_for(&bytes, host.format, reads)
                            .map_err(|e| anyhow::anyhow!("{}: {e}", host.path.display()))?;
                    bytes_len = bytes.bytes().len();
                    (profile, t1)
                }
            };
        let t2 = Instant::now();
        events = profile.event_count();
        partial_read.clone_from(&profile.partial_read);
        model_bytes = profile.heap_bytes();
        let analysis = Arc::new(Analysis::new(Arc::new(profile)));
        let one = vec![xlens_store::Session {
            hosts: vec![host.clone()],
            ..sessions[0].clone()
        }];
        let run = Run::new(one, |_| Ok(analysis.clone()));
        let t3 = Instant::now();
        // The answer `xlens tool TOOL --json` prints (written out as it is made, here to a
        // sink that counts the bytes).
        let mut sink = Counted(0);
        tools::run_default(tool, &run)?.write_json(&mut sink, true)?;
        let t4 = Instant::now();
        std::hint::black_box(sink.0);
        if then_all {
            // Every other tool on the same open run, as the server answers a switch of tool:
            // first computing what each needs and is not there yet, then again once the run is
            // warm (everything derived), as after the server's background warm-up.
            switch.clear();
            let others: Vec<_> = tools::TOOLS
                .iter()
                .filter(|t| t.info().name != tool)
                .collect();
            let time = |t: &&&dyn tools::AnyTool| -> Result<f64> {
                let t0 = Instant::now();
                let out = t.run_query(&run, &[])?.json_string(false)?;
                std::hint::black_box(out);
                Ok(t0.elapsed().as_secs_f64())
            };
            let mut cold = Vec::new();
            for t in &others {
                cold.push(time(t)?);
            }
            run.warm();
            for (t, c) in others.iter().zip(cold) {
                switch.push((t.info().name, c, time(t)?));
            }
        }
        best_read = best_read.min((t1 - t0).as_secs_f64());
        best_decode = best_decode.min((t2 - t1).as_secs_f64());
        decodes.push((t2 - t1).as_secs_f64());
        best_tool = best_tool.min((t4 - t3).as_secs_f64());
    }
    let peak_kib = status_kib("VmHWM:").unwrap_or(0);
    let mb = bytes_len as f64 / 1e6;
    let result = serde_json::json!({
        "file": host.path.display().to_string(),
        "bytes": bytes_len,
        "events": events,
        "partial_read": partial_read,
        "reps": reps,
        "read_s": best_read,
        "read_with_decode": read_with_decode,
        "decode_s": best_decode,
        "decode_mb_per_s": mb / best_decode,
        // Over every rep (the first a cold import in a fresh process, the others warm).
        "decode_mb_per_s_median": mb / median(&mut decodes),
        "read_and_decode_mb_per_s": mb / (best_read + best_decode),
        "tool": tool,
        "tool_s": best_tool,
        "discover_s": discover_s,
        "first_response_s": discover_s + best_read + best_decode + best_tool,
        "model_heap_bytes": model_bytes,
        "model_to_file_ratio": model_bytes as f64 / bytes_len.max(1) as f64,
        "peak_rss_bytes": peak_kib * 1024,
        "baseline_rss_bytes": baseline_kib * 1024,
        "peak_rss_to_file_ratio": (peak_kib * 1024) as f64 / bytes_len.max(1) as f64,
        "then": switch
            .iter()
            .map(|(t, cold, warm)| serde_json::json!({ "tool": t, "s": cold, "warm_s": warm }))
            .collect::<Vec<_>>(),
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        println!("file            {}", host.path.display());
        println!("size            {:.1} MB, {} events", mb, events);
        println!("discover        {:.4} s", discover_s);
        println!("read            {:.3} s", best_read);
        println!(
            "decode + model  {:.3} s  ({:.0} MB/s; read+decode {:.0} MB/s)",
            best_decode,
            mb / best_decode,
            mb / (best_read + best_decode)
        );
        println!("tool `{tool}`   {:.3} s", best_tool);
        println!(
            "first response  {:.3} s  (discover + read + decode + tool)",
            discover_s + best_read + best_decode + best_tool
        );
        println!(
            "model heap      {:.1} MB  ({:.2}× the file)",
            model_bytes as f64 / 1e6,
            model_bytes as f64 / bytes_len.max(1) as f64
        );
        println!(
            "peak RSS        {:.1} MB  ({:.2}× the file; baseline {:.1} MB)",
            peak_kib as f64 / 1024.0 * 1.048576,
            (peak_kib * 1024) as f64 / bytes_len.max(1) as f64,
            baseline_kib as f64 / 1024.0 * 1.048576
        );
        for (t, cold, warm) in &switch {
            println!(
                "then `{t}`{:w$}{:.1} ms  (warm run: {:.1} ms)",
                "",
                cold * 1e3,
                warm * 1e3,
                w = 24usize.saturating_sub(t.len())
            );
        }
    }
    Ok(())
}

/// `xlens bench-trace`: trace viewer index build and viewport query times, on a real file or on a
/// synthetic profile of `synthetic` events.
pub fn trace(
    file: Option<&Path>,
    synthetic: Option<usize>,
    width: u32,
    queries: usize,
    json: bool,
) -> Result<()> {
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
            let p = xlens_analysis::base::load::load_host(&host)?;
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
        "peak_rss_bytes": status_kib("VmHWM:").unwrap_or(0) * 1024,
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

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
