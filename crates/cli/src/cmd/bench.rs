//! `xlens bench`: decode speed, peak memory and tool time on one profile, measured in-process.
//!
//! Peak RSS is the process's high-water mark (`VmHWM`), so run one file per process; the figure
//! includes the binary itself (a few MB, printed as the baseline).

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use xlens_analysis::base::context::{Analysis, Run};
use xlens_analysis::tools;

pub(super) fn status_kib(field: &str) -> Option<u64> {
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

/// Measure decode speed, memory and tool time on a profile (see PERFORMANCE.md).
#[derive(clap::Args)]
pub struct Args {
    /// A profile file: .xplane.pb or a PyTorch trace .json[.gz].
    file: PathBuf,
    /// Repetitions (the fastest is reported; peak RSS covers all).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Also time this tool on the decoded model.
    #[arg(long, default_value = "report")]
    tool: String,
    /// Then time every other tool on the same open profile (what switching tools costs).
    #[arg(long)]
    then_all: bool,
    #[arg(long)]
    json: bool,
}

/// With `then_all`, also times every other tool on the same open run afterwards (what switching
/// tools costs once the profile and its shared analyses are there).
pub fn run(a: Args) -> Result<()> {
    let (file, reps, tool, then_all, json) = (
        a.file.as_path(),
        a.reps,
        a.tool.as_str(),
        a.then_all,
        a.json,
    );
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
        xlens_loader::Reads::Everything
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
        // As `xlens tool` reads it.
        let (profile, timing) = xlens_loader::open_timed(
            &host.path,
            host.format,
            xlens_loader::Policy::command(reads),
        )?;
        read_with_decode = timing.read_s.is_none();
        bytes_len = timing.bytes;
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
        best_read = best_read.min(timing.read_s.unwrap_or(0.0));
        best_decode = best_decode.min(timing.decode_s);
        decodes.push(timing.decode_s);
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

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
