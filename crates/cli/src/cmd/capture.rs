//! `xlens capture`: on-demand capture from running jobs' profiler servers.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use xlens_capture::{CaptureError, CaptureOptions, Source};

/// Parses `2s`, `500ms`, `1.5s`, `1m`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration; use e.g. 2s, 500ms, 1m"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}` is not a duration; use e.g. 2s, 500ms, 1m"));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

/// Capture from running jobs' profiler servers (jax.profiler.start_server(PORT) and the like).
#[derive(clap::Args)]
pub struct Args {
    /// HOST:PORT[,HOST:PORT...]; several are captured in parallel into one session.
    addrs: String,
    /// Log directory; the capture goes to LOGDIR/plugins/profile/SESSION/HOST_PORT.xplane.pb.
    #[arg(long)]
    logdir: PathBuf,
    /// Capture window, e.g. 2s, 500ms, 1m.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    duration: Duration,
    /// Session name (default: a YYYY_MM_DD_HH_MM_SS timestamp, as XProf).
    #[arg(long)]
    session: Option<String>,
    /// Host tracer level: 0 off, 1 user annotations, 2 runtime activity, 3 more.
    #[arg(long, default_value_t = 2)]
    host_tracer_level: u32,
    /// Device tracer level: 0 off, 1 on.
    #[arg(long, default_value_t = 1)]
    device_tracer_level: u32,
    /// Python tracer level: 0 off, 1 on.
    #[arg(long, default_value_t = 0)]
    python_tracer_level: u32,
    /// Start the window this many milliseconds after the request (same start on every host).
    #[arg(long, default_value_t = 0, conflicts_with = "start_at")]
    delay: u64,
    /// Start the window at this Unix time in milliseconds (one start for captures run on
    /// several machines, as `xlens cloud capture` does); a time already past starts at once.
    #[arg(long)]
    start_at: Option<u64>,
    /// Name the host's file NAME.xplane.pb instead of HOST_PORT.xplane.pb (one address only;
    /// `xlens cloud capture` gives each worker its own host name).
    #[arg(long)]
    host_name: Option<String>,
    /// TCP connect timeout, e.g. 5s.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    connect_timeout: Duration,
}

/// Milliseconds from now until `start_at_ms` (Unix time), 0 when it has passed.
fn delay_until(start_at_ms: u64) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    start_at_ms.saturating_sub(now)
}

/// Runs the capture, prints a progress bar on stderr and a summary per host on stdout, and
/// returns the process exit code (0, or the first failure's code; see README).
pub fn run(a: Args) -> i32 {
    let addrs = xlens_capture::parse_addrs(&a.addrs);
    if let Some(name) = &a.host_name {
        if addrs.len() != 1 {
            eprintln!("xlens capture: --host-name names one host's file; give one address");
            return 3;
        }
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            eprintln!("xlens capture: --host-name `{name}` cannot be a file name (empty, a slash, or a leading dot)");
            return 3;
        }
    }
    let delay_ms = match a.start_at {
        Some(t) => {
            let d = delay_until(t);
            if d > 3_600_000 {
                eprintln!("xlens capture: --start-at is more than an hour away ({d} ms)");
                return 3;
            }
            d
        }
        None => a.delay,
    };
    // A bucket log directory: capture into a local staging folder, then upload the session.
    let bucket = xlens_store::bucket_url(&a.logdir).map(|u| u.trim_end_matches('/').to_string());
    let staging = bucket
        .as_ref()
        .map(|_| std::env::temp_dir().join(format!("xlens-capture-{}", std::process::id())));
    let opts = CaptureOptions {
        logdir: staging.clone().unwrap_or_else(|| a.logdir.clone()),
        duration: a.duration,
        session: a.session,
        host_tracer_level: a.host_tracer_level,
        device_tracer_level: a.device_tracer_level,
        python_tracer_level: a.python_tracer_level,
        delay: Duration::from_millis(delay_ms),
        connect_timeout: a.connect_timeout,
        ..Default::default()
    };
    eprintln!(
        "xlens: capturing {:.1}s from {} into {}",
        opts.duration.as_secs_f64(),
        addrs.join(", "),
        match &bucket {
            Some(b) => format!("{b}/plugins/profile"),
            None => opts.logdir.join("plugins/profile").display().to_string(),
        }
    );
    // A bar redrawn in place on a terminal; only the final state in a log.
    let tty = std::io::stderr().is_terminal();
    let progress: xlens_capture::ProgressFn = Arc::new(move |p: &xlens_capture::Progress| {
        let done = p.phase == xlens_capture::Phase::Done;
        if !tty && !done {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{:<78}", p.bar(20));
        if done {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    });
    let mut report = match xlens_capture::capture_blocking(&addrs, &opts, Some(progress)) {
        Ok(r) => r,
        Err(e) => {
            if let Some(dir) = &staging {
                let _ = std::fs::remove_dir_all(dir);
            }
            return fail(&e);
        }
    };
    let mut code = 0;
    if let Some(name) = &a.host_name {
        for h in report.hosts.iter_mut().flatten() {
            let to = h.file.with_file_name(format!("{name}.xplane.pb"));
            match std::fs::rename(&h.file, &to) {
                Ok(()) => h.file = to,
                Err(e) => {
                    eprintln!("xlens capture: cannot name the file {}: {e}", to.display());
                    code = 17;
                }
            }
        }
    }
    let shown_dir = match &bucket {
        Some(b) => {
            let dir = format!("{b}/plugins/profile/{}", report.session_id);
            if let Err(c) = upload_session(&report, &dir) {
                code = c;
            }
            dir
        }
        None => report.session_dir.display().to_string(),
    };
    println!("session {} in {shown_dir}", report.session_id);
    for h in &report.hosts {
        match h {
            Ok(h) => {
                let how = match h.source {
                    Source::Returned => "returned by the server",
                    Source::WrittenByServer => "written by the server",
                };
                let shown = match &bucket {
                    Some(_) => format!(
                        "{shown_dir}/{}",
                        h.file
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_default()
                    ),
                    None => h.file.display().to_string(),
                };
                println!(
                    "{}: {shown} ({} bytes, {how}, {:.1}s)",
                    h.addr,
                    h.bytes,
                    h.elapsed.as_secs_f64()
                );
                println!("  {}", summary(&h.file));
            }
            Err(e) => {
                let c = fail(e);
                if code == 0 {
                    code = c;
                }
            }
        }
    }
    if let Some(dir) = &staging {
        let _ = std::fs::remove_dir_all(dir);
    }
    code
}

/// Uploads each captured host file into the bucket folder `dir`; the exit code 18 on failure.
fn upload_session(report: &xlens_capture::CaptureReport, dir: &str) -> Result<(), i32> {
    let mut result = Ok(());
    for h in report.hosts.iter().flatten() {
        let name = h
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let url = format!("{dir}/{name}");
        #[cfg(feature = "cloud")]
        let r = xlens_store::upload(&h.file, &url);
        #[cfg(not(feature = "cloud"))]
        let r: Result<(), xlens_store::StoreError> =
            Err(xlens_store::StoreError::NoCloud { url: url.clone() });
        match r {
            Ok(()) => eprintln!("xlens: uploaded {} bytes to {url}", h.bytes),
            Err(e) => {
                eprintln!("xlens capture: uploading to the bucket failed: {e}");
                result = Err(18);
            }
        }
    }
    result
}

fn fail(e: &CaptureError) -> i32 {
    eprintln!("xlens capture: {e}");
    if let CaptureError::EmptyTrace { file: Some(f), .. } = e {
        eprintln!("  {}", summary(f));
    }
    e.exit_code()
}

/// One line from the loader, so an empty capture shows at once.
fn summary(file: &std::path::Path) -> String {
    match xlens_loader::load_path(file, xlens_store::Format::XSpace) {
        Ok(p) => {
            let a = xlens_analysis::base::context::Analysis::new(std::sync::Arc::new(p));
            let r =
                xlens_analysis::tools::report::host_report("", &file.display().to_string(), 0, &a);
            let (steps, step_name) = r
                .steps
                .as_ref()
                .map(|s| (s.count, s.name.clone().unwrap_or_default()))
                .unwrap_or((0, String::new()));
            let ops = match r.top_ops_source {
                _ if r.op_count == 0 => "no ops".to_string(),
                Some(xlens_analysis::base::ops::events::OpSource::DeviceXlaOps)
                | Some(xlens_analysis::base::ops::events::OpSource::HostXlaOps) => {
                    format!("{} XLA ops", r.op_count)
                }
                Some(s) => format!("{} ops ({s:?})", r.op_count),
                None => format!("{} ops", r.op_count),
            };
            let mut line = format!(
                "{} events, {ops}, {steps} steps{}",
                r.total_events,
                if step_name.is_empty() {
                    String::new()
                } else {
                    format!(" (`{step_name}`)")
                }
            );
            if r.total_events == 0 {
                line.push_str(" — the capture is empty");
            } else if steps == 0 {
                line.push_str(" — no step annotations found");
            }
            line
        }
        Err(e) => format!("cannot read it back: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
