//! `xlens bench`: decode speed, peak memory and tool time on one profile, measured in-process.
//!
//! Peak RSS is the process's high-water mark (`VmHWM`), so run one file per process; the figure
//! includes the binary itself (a few MB, printed as the baseline).

use anyhow::{Context, Result};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
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

pub fn run(file: &Path, reps: usize, tool: &str, json: bool) -> Result<()> {
    let baseline_kib = status_kib("VmHWM:").unwrap_or(0);
    let sessions = xlens_store::discover(file)?;
    let host = sessions
        .first()
        .and_then(|s| s.hosts.first())
        .cloned()
        .context("no profile file found")?;
    let reps = reps.max(1);
    let mut best_read = f64::MAX;
    let mut best_decode = f64::MAX;
    let mut best_tool = f64::MAX;
    let mut events = 0;
    let mut model_bytes = 0;
    let mut bytes_len = 0usize;
    for _ in 0..reps {
        let t0 = Instant::now();
        let bytes = xlens_store::read(&host)?;
        let t1 = Instant::now();
        let profile = xlens_analysis::load::decode_bytes(&bytes)
            .map_err(|e| anyhow::anyhow!("{}: {e}", host.path.display()))?;
        let t2 = Instant::now();
        bytes_len = bytes.bytes().len();
        drop(bytes);
        events = profile.event_count();
        model_bytes = profile.heap_bytes();
        let profile = Arc::new(profile);
        let one = vec![xlens_store::Session {
            hosts: vec![host.clone()],
            ..sessions[0].clone()
        }];
        let p2 = profile.clone();
        let mut load = move |_: &xlens_store::HostFile| Ok(p2.clone());
        let t3 = Instant::now();
        let out = tools::run_tool(tool, &one, &mut load)?;
        let t4 = Instant::now();
        std::hint::black_box(out.json);
        best_read = best_read.min((t1 - t0).as_secs_f64());
        best_decode = best_decode.min((t2 - t1).as_secs_f64());
        best_tool = best_tool.min((t4 - t3).as_secs_f64());
    }
    let peak_kib = status_kib("VmHWM:").unwrap_or(0);
    let mb = bytes_len as f64 / 1e6;
    let result = serde_json::json!({
        "file": host.path.display().to_string(),
        "bytes": bytes_len,
        "events": events,
        "reps": reps,
        "read_s": best_read,
        "decode_s": best_decode,
        "decode_mb_per_s": mb / best_decode,
        "read_and_decode_mb_per_s": mb / (best_read + best_decode),
        "tool": tool,
        "tool_s": best_tool,
        "first_response_s": best_read + best_decode + best_tool,
        "model_heap_bytes": model_bytes,
        "model_to_file_ratio": model_bytes as f64 / bytes_len.max(1) as f64,
        "peak_rss_bytes": peak_kib * 1024,
        "baseline_rss_bytes": baseline_kib * 1024,
        "peak_rss_to_file_ratio": (peak_kib * 1024) as f64 / bytes_len.max(1) as f64,
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        println!("file            {}", host.path.display());
        println!("size            {:.1} MB, {} events", mb, events);
        println!("read            {:.3} s", best_read);
        println!(
            "decode + model  {:.3} s  ({:.0} MB/s; read+decode {:.0} MB/s)",
            best_decode,
            mb / best_decode,
            mb / (best_read + best_decode)
        );
        println!("tool `{tool}`   {:.3} s", best_tool);
        println!(
            "first response  {:.3} s  (read + decode + tool)",
            best_read + best_decode + best_tool
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
    }
    Ok(())
}
