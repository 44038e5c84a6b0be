//! Many hosts in bounded memory: `xlens hosts` and `xlens summarize`.
//!
//! Each host file is decoded on one of `jobs` worker threads, reduced to its
//! [`HostSummary`] and dropped before the worker takes the next file, so at most `jobs` decoded
//! profiles exist at once whatever the host count. Summaries are cached as Parquet
//! (`<cache>/summaries/v<N>/<key>/<table>.parquet`, the key from the file's path, size and
//! modification time), so a second open decodes nothing.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use xlens_analysis::base::context::{Analysis, SharedHlo};
use xlens_analysis::base::fmt::{fmt_ps, short_name, NAME_WIDTH};
use xlens_analysis::base::hosts::summary::{HostSummary, SharedText, SUMMARY_VERSION};
use xlens_store::{HostFile, Session};

/// Sessions whose files were written within this many seconds of each other may be one
/// capture written by several hosts (`xlens hosts` then matches them on their profile windows).
pub const SAME_CAPTURE_S: u64 = 600;

/// How one host's summary was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Decoded,
    Cached,
}

/// Timing of one host, for the benchmark and `--timings`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostTiming {
    pub host: String,
    pub source: Source,
    pub ms: f64,
    /// Event stats the decode left out as no summary reads them
    /// ([`xlens_loader::SUMMARY_UNUSED_STATS`]).
    pub stats_left_out: u64,
}

/// Where summaries are cached; `None` turns the cache off.
pub struct SummaryCache {
    pub dir: Option<PathBuf>,
}

impl SummaryCache {
    pub fn default_dir() -> PathBuf {
        xlens_store::cache_dir()
            .join("summaries")
            .join(format!("v{SUMMARY_VERSION}"))
    }

    fn key(file: &HostFile, session: &Session) -> String {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let path = std::fs::canonicalize(&file.path).unwrap_or_else(|_| file.path.clone());
        path.hash(&mut h);
        file.bytes.hash(&mut h);
        match std::fs::metadata(&file.path).and_then(|m| m.modified()) {
            Ok(t) => t
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
                .hash(&mut h),
            // A bucket object: the session's newest modification time stands in.
            Err(_) => session.modified_s.hash(&mut h),
        }
        session.name.hash(&mut h);
        format!("{:016x}", h.finish())
    }

    fn get(&self, file: &HostFile, session: &Session, shared: &SharedText) -> Option<HostSummary> {
        let d = self.dir.as_ref()?.join(Self::key(file, session));
        xlens_tables::from_parquet_sharing(
            |t| std::fs::read(d.join(format!("{t}.parquet"))),
            shared,
        )
        .ok()
    }

    /// The cached Parquet file of `table` for this host, when there is one.
    pub fn file_of(&self, file: &HostFile, session: &Session, table: &str) -> Option<PathBuf> {
        let p = self
            .dir
            .as_ref()?
            .join(Self::key(file, session))
            .join(format!("{table}.parquet"));
        p.is_file().then_some(p)
    }

    fn put(&self, file: &HostFile, session: &Session, s: &HostSummary) {
        let Some(dir) = &self.dir else { return };
        let d = dir.join(Self::key(file, session));
        let write = || -> Result<()> {
            std::fs::create_dir_all(&d)?;
            for (t, bytes) in xlens_tables::to_parquet(s)? {
                let tmp = d.join(format!(".{t}.{}", std::process::id()));
                std::fs::write(&tmp, bytes)?;
                std::fs::rename(&tmp, d.join(format!("{t}.parquet")))?;
            }
            Ok(())
        };
        // A cache that cannot be written only costs time later.
        if let Err(e) = write() {
            eprintln!(
                "xlens: not caching the summary of {}: {e:#}",
                file.path.display()
            );
        }
    }
}

/// What the hosts of a run share: the texts of their ops (mostly the same ops), kept once for
/// all, and the HLO modules of one host with what was derived from them, which the next host
/// adopts when its modules are the same (hosts of one program).
#[derive(Default)]
struct Sharing {
    text: SharedText,
    hlo: SharedHlo,
}

/// One host file of a run on its way to its summary: done (cached, or unreadable), or decoded
/// and summarised, with its analysis still to drop and its summary to cache.
enum Head {
    Done(HostSummary, Source, u64),
    Decoded(HostSummary, Box<Analysis>, u64),
}

/// The first part of [`summarize_one`]: the cache, else the decode and the summary.
fn head(session: &Session, file: &HostFile, cache: &SummaryCache, shared: &Sharing) -> Head {
    if let Some(s) = cache.get(file, session, &shared.text) {
        return Head::Done(s, Source::Cached, 0);
    }
    // Pages come in as the decoder reaches them and go as it passes them: a host's file is
    // never resident all at once beside the pages kept from the host before.
    match xlens_loader::open(file, xlens_loader::Policy::summary()) {
        Ok(p) => {
            let left_out = p.stats_left_out;
            let a = Analysis::new(std::sync::Arc::new(p));
            a.adopt_hlo(&shared.hlo);
            let s = HostSummary::of_sharing(&session.name, file, &a, &shared.text);
            a.offer_hlo(&shared.hlo);
            Head::Decoded(s, Box::new(a), left_out)
        }
        // Unreadable files are not cached: the next run says again what is wrong.
        Err(e) => Head::Done(
            HostSummary::failed(&session.name, file, e.to_string()),
            Source::Decoded,
            0,
        ),
    }
}

/// The rest of [`summarize_one`] for a decoded host: its analysis and profile dropped, its
/// summary cached.
fn tail(
    session: &Session,
    file: &HostFile,
    cache: &SummaryCache,
    s: &HostSummary,
    a: Box<Analysis>,
) {
    drop(a);
    cache.put(file, session, s);
}

/// One host file of a run, reduced to its summary (decoding it when not cached).
/// Also the number of event stats its decode left out.
fn summarize_one(
    session: &Session,
    file: &HostFile,
    cache: &SummaryCache,
    shared: &Sharing,
) -> (HostSummary, Source, u64) {
    match head(session, file, cache, shared) {
        Head::Done(s, source, left_out) => (s, source, left_out),
        Head::Decoded(s, a, left_out) => {
            tail(session, file, cache, &s, a);
            (s, Source::Decoded, left_out)
        }
    }
}

type Slots = Mutex<Vec<Option<(HostSummary, HostTiming)>>>;

fn record(out: &Slots, i: usize, h: &HostFile, s: HostSummary, src: Source, ms: f64, lo: u64) {
    let timing = HostTiming {
        host: h.host.clone(),
        source: src,
        ms,
        stats_left_out: lo,
    };
    if let Ok(mut o) = out.lock() {
        o[i] = Some((s, timing));
    }
}

/// Every host of `sessions` summarised on `jobs` threads, in order. From here on the process
/// keeps freed big blocks for the next host ([`crate::alloc::keep_freed_blocks`]) and gives them
/// back at the end ([`crate::alloc::give_back_kept_blocks`]).
///
/// With one job, hosts are decoded one at a time, each with every core, and each decoded host's
/// single-threaded rest (its summary from the analysis, the cache write, the drop) runs on a
/// second thread beside the next host's decode, on the core that decode leaves idle at first.
/// At most one host waits there: the next one is handed over only once it is free.
pub fn summarize(
    sessions: &[Session],
    jobs: usize,
    cache: &SummaryCache,
) -> (Vec<HostSummary>, Vec<HostTiming>) {
    crate::alloc::keep_freed_blocks();
    let work: Vec<(&Session, &HostFile)> = sessions
        .iter()
        .flat_map(|s| s.hosts.iter().map(move |h| (s, h)))
        .collect();
    let next = AtomicUsize::new(0);
    let out: Slots = Mutex::new((0..work.len()).map(|_| None).collect());
    let jobs = jobs.clamp(1, work.len().max(1));
    let shared = Sharing::default();
    if jobs == 1 {
        std::thread::scope(|sc| {
            // A rendezvous: `send` returns once the rest thread has taken the host, that is once
            // it is done with the one before.
            type Handed = (usize, HostSummary, Box<Analysis>, u64, f64);
            let (tx, rx) = std::sync::mpsc::sync_channel::<Handed>(0);
            let (work, out, shared) = (&work, &out, &shared);
            // A decoded host's rest: dropped, cached, its timing recorded. (The C heap is not
            // trimmed after each host: over 256 hosts of the 207 MB profile that cost 5.7 s,
            // 7.7 %, for 6 MB less at the peak; PERFORMANCE.md.)
            let rest = move |(i, summary, a, left_out, head_ms): Handed| {
                let (s, h) = work[i];
                let t = Instant::now();
                tail(s, h, cache, &summary, a);
                let ms = head_ms + t.elapsed().as_secs_f64() * 1e3;
                record(out, i, h, summary, Source::Decoded, ms, left_out);
            };
            sc.spawn(move || rx.into_iter().for_each(rest));
            for (i, (s, h)) in work.iter().enumerate() {
                let t = Instant::now();
                match head(s, h, cache, shared) {
                    Head::Done(summary, source, left_out) => {
                        let ms = t.elapsed().as_secs_f64() * 1e3;
                        record(out, i, h, summary, source, ms, left_out);
                    }
                    Head::Decoded(summary, a, left_out) => {
                        let head_ms = t.elapsed().as_secs_f64() * 1e3;
                        if let Err(back) = tx.send((i, summary, a, left_out, head_ms)) {
                            // The rest thread is gone: this host's rest runs here.
                            rest(back.0);
                        }
                    }
                }
            }
            drop(tx);
        });
    } else {
        let work_on = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some((s, h)) = work.get(i) else { break };
            let t = Instant::now();
            let (summary, source, left_out) = summarize_one(s, h, cache, &shared);
            record(
                &out,
                i,
                h,
                summary,
                source,
                t.elapsed().as_secs_f64() * 1e3,
                left_out,
            );
        };
        // With several hosts at once, each host's decode and analysis stay on its worker's
        // thread: their helper threads would only compete with the other hosts for the cores.
        let worker = || {
            xlens_model::threads::one_per_profile(true);
            work_on();
            xlens_model::threads::one_per_profile(false);
        };
        std::thread::scope(|sc| {
            for _ in 1..jobs {
                sc.spawn(worker);
            }
            worker();
        });
    }
    // Every host is decoded: what comes next (the report) has no use for pages kept for them.
    crate::alloc::give_back_kept_blocks();
    out.into_inner()
        .unwrap_or_default()
        .into_iter()
        .zip(&work)
        .map(|(r, (s, h))| {
            r.unwrap_or_else(|| {
                (
                    HostSummary::failed(&s.name, h, "a worker thread stopped".into()),
                    HostTiming {
                        host: h.host.clone(),
                        source: Source::Decoded,
                        ms: 0.0,
                        stats_left_out: 0,
                    },
                )
            })
        })
        .unzip()
}

/// What one host decoded and summarised holds at its peak, per byte of its file: 1.7 for the
/// 207 MB `make_profiles.sh large` profile (one host at a time peaks at 450 MB, of which 80 MB
/// are 256 hosts' summaries and ~20 MB the process before any file), rounded up.
pub const PEAK_PER_FILE_BYTE: f64 = 1.8;

/// Under this, twice the largest host file is less than the process holds before any file (its
/// code, buffers and threads): memory is not what limits the hosts at once there.
pub const BOUND_FLOOR: u64 = 256 << 20;

/// How many hosts are decoded at once, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub jobs: usize,
    pub why: String,
    /// The most bytes one host's decoder reads (a gzip file's inflated size,
    /// [`xlens_store::inflated_size_hint`]), and the size on disk of that file.
    pub largest_read: u64,
    pub largest_read_stored: u64,
}

/// Hosts decoded at once: `--jobs`, else as many as the machine has cores while their peaks
/// ([`PEAK_PER_FILE_BYTE`] times the largest file, inflated where it is gzip: what its decoder
/// reads) fit within twice that (at least [`BOUND_FLOOR`]), so that the memory stays within the
/// bound whatever the host count. One host at a time still uses every core for that host.
pub fn plan(arg: Option<usize>, sessions: &[Session]) -> Plan {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (largest, stored) = sessions
        .iter()
        .flat_map(|s| &s.hosts)
        .map(|h| (xlens_store::inflated_size_hint(h), h.bytes))
        .max()
        .unwrap_or((0, 0));
    let hosts = sessions.iter().map(|s| s.hosts.len()).sum();
    let mut plan = match arg {
        Some(n) => {
            let n = n.max(1);
            Plan {
                jobs: n,
                why: format!("{n} host(s) at a time (--jobs)"),
                largest_read: 0,
                largest_read_stored: 0,
            }
        }
        None => plan_for(cores, hosts, largest),
    };
    plan.largest_read = largest;
    plan.largest_read_stored = stored;
    plan
}

fn plan_for(cores: usize, hosts: usize, largest: u64) -> Plan {
    let budget = (2 * largest).max(BOUND_FLOOR) as f64;
    let peak = PEAK_PER_FILE_BYTE * largest as f64;
    let fit = if peak > 0.0 {
        (budget / peak).floor() as usize
    } else {
        cores
    };
    let most = cores.min(hosts).max(1);
    let jobs = fit.clamp(1, most);
    let mb = |b: f64| b / 1e6;
    let hosts_text = |n: usize| {
        if n == 1 {
            "1 host".to_string()
        } else {
            format!("{n} hosts")
        }
    };
    let why = if jobs < most {
        format!(
            "{} at a time on {cores} cores: a host peaks at ~{:.0} MB ({PEAK_PER_FILE_BYTE}x the \
             largest file's {:.1} MB), and {} at once would pass the bound of {:.0} MB; \
             --jobs {cores} is faster and takes more memory",
            hosts_text(jobs),
            mb(peak),
            mb(largest as f64),
            jobs + 1,
            mb(budget)
        )
    } else if jobs == 1 {
        format!("1 host at a time, on every core ({cores})")
    } else {
        format!("{} at a time, one per core", hosts_text(jobs))
    };
    Plan {
        jobs,
        why,
        largest_read: largest,
        largest_read_stored: largest,
    }
}

/// Writes each summary's tables under `out` (a folder or a bucket URL):
/// `<out>/<table>/<host>.parquet`.
pub fn write_summaries(summaries: &[HostSummary], out: &str) -> Result<usize> {
    let bucket = xlens_store::bucket_url(Path::new(out)).is_some();
    let local = if bucket {
        let d = std::env::temp_dir().join(format!("xlens-summaries-{}", std::process::id()));
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        d
    } else {
        PathBuf::from(out)
    };
    let mut files = 0;
    for s in summaries.iter().filter(|s| s.error.is_none()) {
        let stem = file_stem(&s.host);
        xlens_tables::write_dir(s, &local, &stem)
            .with_context(|| format!("writing the summary of {}", s.file))?;
        files += xlens_tables::TABLES.len();
        if bucket {
            upload_tables(&local, out, &stem)?;
        }
    }
    if bucket {
        let _ = std::fs::remove_dir_all(&local);
    }
    Ok(files)
}

#[cfg(feature = "cloud")]
fn upload_tables(local: &Path, out: &str, stem: &str) -> Result<()> {
    for t in xlens_tables::TABLES {
        let from = local.join(t).join(format!("{stem}.parquet"));
        let to = format!("{}/{t}/{stem}.parquet", out.trim_end_matches('/'));
        xlens_store::upload(&from, &to).with_context(|| format!("uploading {to}"))?;
    }
    Ok(())
}

#[cfg(not(feature = "cloud"))]
fn upload_tables(_: &Path, out: &str, _: &str) -> Result<()> {
    bail!("{out}: this xlens was built without bucket support (feature `cloud`)")
}

/// A host name as a file name (path separators and the like replaced).
fn file_stem(host: &str) -> String {
    host.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where `--write-summaries` puts a session's tables: next to its host files.
pub fn beside(session: &Session) -> String {
    let dir = session.dir.join("xlens-summaries");
    dir.to_string_lossy().into_owned()
}

/// The hosts of `sessions` as `xlens hosts` reads them; an error when there are none.
pub fn check_hosts(sessions: &[Session], path: &Path) -> Result<()> {
    if sessions.iter().all(|s| s.hosts.is_empty()) {
        bail!("no profiles below {}", path.display());
    }
    Ok(())
}

fn ms(ps: i64) -> String {
    format!("{:.3}", ps as f64 / 1e9)
}

/// `xlens hosts` as text: every host's row (none left out), the 20 largest ops and categories.
pub fn render_text(r: &xlens_analysis::base::hosts::summary::HostsReport) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Run {}: {} host file(s), {} read, {} unread",
        r.sessions.join(" + "),
        r.host_files,
        r.hosts_read,
        r.unread.len()
    );
    for d in &r.devices {
        let _ = writeln!(
            o,
            "  {} {}: {} host(s), {} device(s)",
            d.kind, d.model, d.hosts, d.devices
        );
    }
    for u in &r.unread {
        let _ = writeln!(o, "  unread: {} ({}): {}", u.host, u.file, u.error);
    }
    match &r.steps {
        None => {
            let _ = writeln!(
                o,
                "\nSteps: fewer than two hosts with steps, nothing to compare."
            );
        }
        Some(a) => {
            let _ = writeln!(
                o,
                "\nSteps over {} host(s) with steps ({} step names; ms):",
                a.hosts.len(),
                a.steps.len()
            );
            let w = a.hosts.iter().map(|h| h.len()).max().unwrap_or(4).max(4);
            let _ = writeln!(
                o,
                "  {:<w$} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}",
                "host", "steps", "mean", "median", "p90", "min", "max", "vs hosts"
            );
            for s in &a.stats {
                let _ = writeln!(
                    o,
                    "  {:<w$} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>+8.1}%",
                    s.host,
                    s.steps,
                    ms(s.mean_ps),
                    ms(s.median_ps),
                    ms(s.p90_ps),
                    ms(s.min_ps),
                    ms(s.max_ps),
                    s.vs_hosts_percent
                );
            }
            if !a.hosts_without_steps.is_empty() {
                let _ = writeln!(
                    o,
                    "  without steps (not in these figures): {}",
                    a.hosts_without_steps.join(", ")
                );
            }
            if a.stragglers.is_empty() {
                let _ = writeln!(
                    o,
                    "\nStragglers: none (no host {}% above the others' median at any step).",
                    a.straggler_threshold_percent
                );
            } else {
                let _ = writeln!(o, "\nStragglers ({}):", a.stragglers.len());
                for s in &a.stragglers {
                    let _ = writeln!(o, "  {}", s.evidence);
                }
            }
        }
    }
    if !r.clocks.is_empty() {
        let _ = writeln!(
            o,
            "\nClocks (aligned on the ends of steps and collectives):"
        );
        for c in &r.clocks {
            let _ = writeln!(
                o,
                "  {:<24} {:<32} raw {:>13}  correction {:>13}  residual {:>12}  ({} steps, {} collectives)",
                c.host,
                c.basis,
                signed(c.raw_offset_ps),
                signed(c.correction_ps),
                signed(c.residual_ps).trim_start_matches('+').to_string(),
                c.matched_steps,
                c.matched_collectives
            );
        }
    }
    for (title, t) in [
        ("Device ops (HLO ops, or a PyTorch trace's kernels)", &r.ops),
        ("Op categories", &r.op_categories),
        ("Module heap peaks", &r.memory),
    ] {
        let Some(t) = t else { continue };
        let (per, unit) = t.display_unit();
        let shown = &t.ops[..t.ops.len().min(20)];
        let names: Vec<(String, bool)> = shown
            .iter()
            .map(|x| short_name(&format!("{} {}", x.program, x.name), NAME_WIDTH))
            .collect();
        let shortened = if names.iter().any(|(_, cut)| *cut) {
            "; long names shortened, whole in --json"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "\n{title} across {} host(s), {} of {} by total ({unit}; --json for all{shortened}):",
            t.hosts,
            shown.len(),
            t.ops.len()
        );
        let hw = shown
            .iter()
            .flat_map(|x| [x.min_host.len(), x.max_host.len()])
            .max()
            .unwrap_or(0);
        let _ = writeln!(
            o,
            "  {:>5} {:>14} {:>12} {:>12} {:<hw$} {:>12} {:<hw$}  name",
            "hosts", "total", "mean", "min", "", "max", ""
        );
        for (x, (name, _)) in shown.iter().zip(&names) {
            let _ = writeln!(
                o,
                "  {:>5} {:>14.1} {:>12.1} {:>12.1} {:<hw$} {:>12.1} {:<hw$}  {name}",
                x.hosts,
                x.total / per,
                x.mean / per,
                x.min / per,
                x.min_host,
                x.max / per,
                x.max_host
            );
        }
    }
    o
}

/// A time for the clocks' table: `+553 µs`, `-14.9 ms`, `0`.
fn signed(ps: i64) -> String {
    match ps {
        0 => "0".to_string(),
        1.. => format!("+{}", fmt_ps(ps)),
        _ => fmt_ps(ps),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_offsets_read_in_their_unit() {
        // The two ranks of the sampled trace: rank1's raw offset (by hand).
        assert_eq!(signed(553_000_000), "+553 µs");
        assert_eq!(signed(-14_855_000_000), "-14.9 ms");
        assert_eq!(signed(0), "0");
        assert_eq!(signed(7_723_000_000), "+7.72 ms");
    }

    #[test]
    fn hosts_at_once_fit_twice_the_largest_file() {
        // The 207 MB profile: one host peaks at ~372 MB, two would take ~744 MB > 414 MB.
        assert_eq!(plan_for(2, 256, 206_790_527).jobs, 1);
        assert_eq!(plan_for(16, 256, 206_790_527).jobs, 1);
        // A 100 MB file: 180 MB a host, the floor of 256 MiB holds one.
        assert_eq!(plan_for(2, 256, 100_000_000).jobs, 1);
        // 60 MB: 108 MB a host, two fit in 256 MiB (268 MB), not three.
        assert_eq!(plan_for(2, 256, 60_000_000).jobs, 2);
        assert_eq!(plan_for(8, 256, 60_000_000).jobs, 2);
        // The GPU sample's 3 MB hosts: one per core, never more than there are hosts.
        assert_eq!(plan_for(2, 64, 3_000_000).jobs, 2);
        assert_eq!(plan_for(1, 64, 3_000_000).jobs, 1);
        assert_eq!(plan_for(8, 3, 3_000_000).jobs, 3);
        assert_eq!(plan_for(2, 1, 3_000_000).jobs, 1);
        assert!(plan_for(2, 256, 206_790_527).why.contains("--jobs 2"));
        assert_eq!(
            plan_for(2, 1, 3_000_000).why,
            "1 host at a time, on every core (2)"
        );
        // One large host alone is not said to be held back by memory.
        assert!(!plan_for(2, 1, 206_790_527).why.contains("bound"));
    }
}
