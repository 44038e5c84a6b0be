//! The fuzzing loop: pick a corpus entry, mutate it, execute it under `catch_unwind` with a
//! quiet panic hook that records every panic (including ones on helper threads that the code
//! under test catches itself), save crashing inputs, and keep inputs that produce a new
//! signature (the coverage proxy, see the crate docs).

use crate::rng::Rng;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a fuzz target supplies: real seeds, a structured form for mutation, and one execution.
pub trait Target {
    /// The input's structured form (a protobuf field tree, a JSON tree, a query's pairs).
    type Tree: Clone;

    /// `xspace`, `chrome` or `query`.
    fn name(&self) -> &'static str;

    /// The initial corpus.
    fn seeds(&self) -> Vec<Vec<u8>>;

    /// The structured form of an input, when it has one.
    fn parse(&self, input: &[u8]) -> Option<Self::Tree>;

    /// A new input made from `base` (and `other`, another corpus entry, for splices).
    fn mutate(&self, rng: &mut Rng, base: &Entry<Self::Tree>, other: &Entry<Self::Tree>)
        -> Vec<u8>;

    /// Runs the code under test on `input` and returns its signature: a hash of what the run
    /// did (error category, or the shape of what was decoded). Must not panic; the loop catches
    /// it if it does.
    fn execute(&mut self, input: &[u8]) -> u64;

    /// What the last execution did, in words (for `--show`); empty when the target has nothing
    /// to say.
    fn describe_last(&self) -> String {
        String::new()
    }

    /// Everything the target can do with `input`, not only what one fuzzing execution samples
    /// (every tool, both decoding paths), each step with its panics caught apart so that one
    /// panic does not hide the next: what replaying, minimizing and regression tests run.
    /// Returns every panic (empty: none).
    fn replay(&mut self, input: &[u8]) -> Vec<String> {
        run_caught(|| self.execute(input)).err().unwrap_or_default()
    }

    /// Number of nodes of a tree, for minimizing.
    fn nodes(&self, _tree: &Self::Tree) -> usize {
        0
    }

    /// The input written from `tree` without its node `n` (in the order [`Target::nodes`]
    /// counts), for minimizing; `None` when there is no such node.
    fn without(&self, _tree: &Self::Tree, _n: usize) -> Option<Vec<u8>> {
        None
    }
}

/// One corpus input and its structured form.
pub struct Entry<T> {
    pub data: Vec<u8>,
    pub tree: Option<T>,
}

/// Loop settings.
#[derive(Debug, Clone)]
pub struct Config {
    pub execs: u64,
    pub seed: u64,
    /// Where crashing inputs are written (created on the first crash).
    pub out: PathBuf,
    /// Print a progress line this often (`None`: quiet).
    pub progress: Option<Duration>,
    /// Corpus size limit (seeds included); new entries then replace random non-seed ones.
    pub max_corpus: usize,
    /// Inputs longer than this run but do not join the corpus (executions stay fast).
    pub max_entry_len: usize,
    /// Print the first this many mutated inputs and what they did (debugging the harness).
    pub show: u64,
    /// An execution after which resident memory grew by more than this is a finding (like a
    /// panic: its input is kept), and above [`Config::max_rss`] the run stops, so one hungry
    /// input cannot take the machine down. 0: no check.
    pub max_rss_growth: u64,
    pub max_rss: u64,
    /// An execution running longer than this is a hang: a watchdog writes its input to
    /// `out/timeout-input`, says so and ends the process with exit code 3. `None`: no watchdog.
    pub timeout: Option<Duration>,
}

/// The input being executed and when it started (ms since the loop began; `u64::MAX` between
/// executions), for the hang watchdog.
struct Current {
    input: Mutex<Vec<u8>>,
    started_ms: std::sync::atomic::AtomicU64,
}

fn watchdog(
    cur: std::sync::Arc<Current>,
    t0: Instant,
    timeout: Duration,
    out: PathBuf,
    name: &'static str,
) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(500));
        let s = cur.started_ms.load(Ordering::Relaxed);
        if s == u64::MAX {
            continue;
        }
        let now = t0.elapsed().as_millis() as u64;
        if now.saturating_sub(s) > timeout.as_millis() as u64 {
            let input = cur.input.lock().map(|g| g.clone()).unwrap_or_default();
            let _ = std::fs::create_dir_all(&out);
            let path = out.join("timeout-input");
            let _ = std::fs::write(&path, &input);
            eprintln!(
                "[{name}] HANG: one execution ran over {} s ({} bytes, input saved to {})",
                timeout.as_secs(),
                input.len(),
                path.display()
            );
            std::process::exit(3);
        }
    });
}

/// Resident memory of this process (Linux `/proc/self/statm`; 0 elsewhere).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// A distinct panic: its message and location, how often it happened, and the first input.
#[derive(Debug, Clone)]
pub struct Crash {
    pub message: String,
    pub count: u64,
    pub input: Option<PathBuf>,
    pub input_len: usize,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Report {
    pub target: &'static str,
    pub execs: u64,
    pub elapsed: Duration,
    pub seeds: usize,
    pub corpus: usize,
    pub signatures: usize,
    pub crashes: Vec<Crash>,
    /// The slowest execution, its input size, and where that input was written.
    pub slowest: Duration,
    pub slowest_len: usize,
    pub slowest_input: Option<PathBuf>,
}

impl Report {
    pub fn execs_per_sec(&self) -> f64 {
        self.execs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Total panics (every occurrence of every distinct panic).
    pub fn panics(&self) -> u64 {
        self.crashes.iter().map(|c| c.count).sum()
    }
}

/// Panics recorded by the hook while a loop runs.
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Loops running now; the hook is quiet only while one runs.
static ARMED: AtomicUsize = AtomicUsize::new(0);
static HOOK: std::sync::Once = std::sync::Once::new();

/// Installs (once) a panic hook that records panics quietly while a fuzz loop runs and defers
/// to the previous hook otherwise.
pub fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if ARMED.load(Ordering::SeqCst) == 0 {
                previous(info);
                return;
            }
            let payload = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(non-string panic payload)".into());
            let mut at = info
                .location()
                .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                .unwrap_or_default();
            if !at.starts_with("crates/") {
                // Inside the standard library or a dependency (an iterator's `sum`, a slice
                // index): name the project's frame that called it.
                if let Some(caller) = project_frame() {
                    at = format!("{caller} (via {at})");
                }
            }
            let mut p = match PANICS.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            if p.len() < 64 {
                p.push(format!("{at}: {payload}"));
            }
        }));
    });
}

/// The innermost frame of the project's code (outside this crate) on the current stack, as
/// `crates/...:line:col`.
fn project_frame() -> Option<String> {
    let bt = std::backtrace::Backtrace::force_capture().to_string();
    bt.lines()
        .filter_map(|l| l.trim().strip_prefix("at "))
        .filter_map(|l| l.find("crates/").map(|i| &l[i..]))
        .find(|l| !l.starts_with("crates/fuzz/"))
        .map(str::to_string)
}

fn take_panics() -> Vec<String> {
    let mut p = match PANICS.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    std::mem::take(&mut *p)
}

/// Arms the quiet hook for as long as it lives.
struct Armed;

impl Armed {
    fn new() -> Armed {
        install_hook();
        ARMED.fetch_add(1, Ordering::SeqCst);
        Armed
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        ARMED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` with the quiet hook armed, returning its value or the panics it raised (any thread).
pub fn run_caught<R>(f: impl FnOnce() -> R) -> Result<R, Vec<String>> {
    let _armed = Armed::new();
    take_panics();
    let r = std::panic::catch_unwind(AssertUnwindSafe(f));
    let mut panics = take_panics();
    match r {
        Ok(v) if panics.is_empty() => Ok(v),
        Ok(_) => Err(panics),
        Err(payload) => {
            if panics.is_empty() {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                panics.push(msg);
            }
            Err(panics)
        }
    }
}

/// A panic message with the digits taken out, so one bug at different values counts once.
fn crash_key(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or("");
    let mut out = String::with_capacity(first.len());
    let mut in_digits = false;
    for c in first.chars().take(300) {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    // Keep the location (`file:line:col: `) exact.
    match first.split_once(": ") {
        Some((loc, _)) if loc.contains(".rs:") => {
            format!("{loc}: {}", out.split_once(": ").map_or("", |x| x.1))
        }
        _ => out,
    }
}

/// Hashes anything into a signature.
pub fn signature(parts: impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// A message with its digits and quoted values (between backticks or double quotes) removed,
/// cut short: an error's category, the same whatever values the input held.
pub fn category(msg: &str) -> String {
    let mut out = String::new();
    let mut quote = None;
    for c in msg.chars() {
        match (quote, c) {
            (None, '`' | '"') => {
                quote = Some(c);
                out.push(c);
            }
            (Some(q), c) if c == q => {
                quote = None;
                out.push(c);
            }
            (Some(_), _) => {}
            (None, c) if c.is_ascii_digit() => {}
            (None, c) => out.push(c),
        }
        if out.len() >= 120 {
            break;
        }
    }
    out
}

/// `floor(log2(n)) + 1` (0 for 0): sizes in buckets.
pub fn log2_bucket(n: usize) -> u32 {
    usize::BITS - n.leading_zeros()
}

fn save_crash(out: &Path, input: &[u8]) -> Option<PathBuf> {
    std::fs::create_dir_all(out).ok()?;
    let name = format!("crash-{:016x}", signature(input));
    let path = out.join(name);
    std::fs::write(&path, input).ok()?;
    Some(path)
}

/// Runs the loop for `cfg.execs` executions of `target`.
pub fn fuzz<T: Target>(target: &mut T, cfg: &Config) -> Report {
    let mut rng = Rng::new(cfg.seed);
    let mut corpus: Vec<Entry<T::Tree>> = Vec::new();
    let mut sigs: HashSet<u64> = HashSet::new();
    let mut crashes: BTreeMap<String, Crash> = BTreeMap::new();
    let (mut slowest, mut slowest_input) = (Duration::ZERO, Vec::new());
    let started = Instant::now();
    let mut last_report = started;

    let record = |crashes: &mut BTreeMap<String, Crash>, panics: Vec<String>, input: &[u8]| {
        for msg in panics {
            let key = crash_key(&msg);
            let c = crashes.entry(key).or_insert_with(|| Crash {
                message: msg.clone(),
                count: 0,
                input: None,
                input_len: input.len(),
            });
            c.count += 1;
            if c.input.is_none() {
                c.input = save_crash(&cfg.out, input);
                if cfg.progress.is_some() {
                    eprintln!(
                        "[{}] PANIC ({} bytes, saved to {}): {msg}",
                        target_name_of(&cfg.out),
                        input.len(),
                        c.input
                            .as_deref()
                            .map_or("-".into(), |p| p.display().to_string())
                    );
                }
            }
        }
    };

    // Seeds run first, unmutated; each is kept whatever its signature.
    let seeds = target.seeds();
    let n_seeds = seeds.len();
    let mut execs = 0u64;
    for s in seeds {
        if execs >= cfg.execs {
            break;
        }
        execs += 1;
        match run_caught(|| target.execute(&s)) {
            Ok(sig) => {
                sigs.insert(sig);
            }
            Err(p) => record(&mut crashes, p, &s),
        }
        let tree = target.parse(&s);
        corpus.push(Entry { data: s, tree });
    }
    if corpus.is_empty() {
        corpus.push(Entry {
            data: Vec::new(),
            tree: target.parse(&[]),
        });
    }
    let fixed = corpus.len();

    let current = cfg.timeout.map(|t| {
        let c = std::sync::Arc::new(Current {
            input: Mutex::new(Vec::new()),
            started_ms: std::sync::atomic::AtomicU64::new(u64::MAX),
        });
        watchdog(c.clone(), started, t, cfg.out.clone(), target.name());
        c
    });
    while execs < cfg.execs {
        execs += 1;
        let a = rng.below(corpus.len());
        let b = rng.below(corpus.len());
        let input = target.mutate(&mut rng, &corpus[a], &corpus[b]);
        if let Some(c) = &current {
            if let Ok(mut g) = c.input.lock() {
                g.clone_from(&input);
            }
            c.started_ms
                .store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
        }
        let rss0 = if cfg.max_rss_growth > 0 {
            rss_bytes()
        } else {
            0
        };
        let t0 = Instant::now();
        let r = run_caught(|| target.execute(&input));
        let dt = t0.elapsed();
        if let Some(c) = &current {
            c.started_ms.store(u64::MAX, Ordering::Relaxed);
        }
        if cfg.max_rss_growth > 0 {
            let rss1 = rss_bytes();
            let grew = rss1.saturating_sub(rss0);
            if grew > cfg.max_rss_growth || rss1 > cfg.max_rss {
                record(
                    &mut crashes,
                    vec![format!(
                        "memory: resident memory grew by {} MB to {} MB in one execution (limits: {} MB growth, {} MB in all)",
                        grew >> 20,
                        rss1 >> 20,
                        cfg.max_rss_growth >> 20,
                        cfg.max_rss >> 20
                    )],
                    &input,
                );
                if rss1 > cfg.max_rss {
                    eprintln!(
                        "[{}] stopping: resident memory {} MB",
                        target.name(),
                        rss1 >> 20
                    );
                    break;
                }
            }
        }
        if execs <= n_seeds as u64 + cfg.show {
            eprintln!(
                "[{}] input {:?} -> {}",
                target.name(),
                String::from_utf8_lossy(&input[..input.len().min(300)]),
                target.describe_last()
            );
        }
        if dt > slowest {
            slowest = dt;
            slowest_input.clone_from(&input);
        }
        match r {
            Ok(sig) => {
                if sigs.insert(sig) && input.len() <= cfg.max_entry_len {
                    let tree = target.parse(&input);
                    let e = Entry { data: input, tree };
                    if corpus.len() < cfg.max_corpus {
                        corpus.push(e);
                    } else {
                        let i = fixed + rng.below(corpus.len() - fixed);
                        corpus[i] = e;
                    }
                }
            }
            Err(p) => record(&mut crashes, p, &input),
        }
        if let Some(every) = cfg.progress {
            if last_report.elapsed() >= every {
                last_report = Instant::now();
                let secs = started.elapsed().as_secs_f64();
                eprintln!(
                    "[{}] {execs} execs, {:.0} execs/s, corpus {}, signatures {}, panics {}",
                    target.name(),
                    execs as f64 / secs,
                    corpus.len(),
                    sigs.len(),
                    crashes.values().map(|c| c.count).sum::<u64>()
                );
            }
        }
    }

    Report {
        target: target.name(),
        execs,
        elapsed: started.elapsed(),
        seeds: n_seeds,
        corpus: corpus.len(),
        signatures: sigs.len(),
        crashes: crashes.into_values().collect(),
        slowest,
        slowest_len: slowest_input.len(),
        slowest_input: (!slowest_input.is_empty())
            .then(|| {
                std::fs::create_dir_all(&cfg.out).ok()?;
                let path = cfg.out.join("slowest");
                std::fs::write(&path, &slowest_input).ok()?;
                Some(path)
            })
            .flatten(),
    }
}

/// Where a recorded panic happened (`file:line:col`, with the standard library frame it went
/// through, if any), or its key when it has no location.
pub fn site_of(panic: &str) -> String {
    match panic.split_once(": ") {
        Some((loc, _)) if loc.contains(".rs:") => loc.to_string(),
        _ => crash_key(panic),
    }
}

/// Replays `input` through every path of `target`: every panic (empty: none).
pub fn replay<T: Target>(target: &mut T, input: &[u8]) -> Vec<String> {
    target.replay(input)
}

/// A smaller input that still panics at `site` (default: where `input`'s first panic is):
/// nodes of its structured form removed one at a time while the panic stays, then byte ranges,
/// halving their size, until neither pass removes anything. `None` when `input` does not
/// panic there.
pub fn minimize<T: Target>(
    target: &mut T,
    input: &[u8],
    site: Option<&str>,
) -> Option<(Vec<u8>, Vec<String>)> {
    let first = replay(target, input);
    let site = match site {
        Some(s) => s.to_string(),
        None => site_of(first.first()?),
    };
    if !first.iter().any(|p| site_of(p) == site) {
        return None;
    }
    let mut best = input.to_vec();
    let mut panics = first;
    let still = |target: &mut T, cand: &[u8]| -> Option<Vec<String>> {
        let p = replay(target, cand);
        p.iter().any(|x| site_of(x) == site).then_some(p)
    };
    loop {
        let before = best.len();
        // Structure: drop nodes (a node that cannot go is skipped; the same index is tried
        // again after a removal).
        let mut n = 0;
        while let Some(tree) = target.parse(&best) {
            if n >= target.nodes(&tree) {
                break;
            }
            match target.without(&tree, n) {
                Some(cand) if cand.len() < best.len() => match still(target, &cand) {
                    Some(p) => {
                        best = cand;
                        panics = p;
                    }
                    None => n += 1,
                },
                _ => n += 1,
            }
        }
        // Bytes: remove ranges, large ones first.
        let mut chunk = best.len() / 2;
        while chunk >= 1 {
            let mut at = 0;
            while at < best.len() {
                let end = (at + chunk).min(best.len());
                let mut cand = best[..at].to_vec();
                cand.extend_from_slice(&best[end..]);
                match still(target, &cand) {
                    Some(p) => {
                        best = cand;
                        panics = p;
                    }
                    None => at += chunk,
                }
            }
            chunk /= 2;
        }
        if best.len() >= before {
            return Some((best, panics));
        }
    }
}

fn target_name_of(out: &Path) -> String {
    out.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_ignore_values() {
        assert_eq!(
            category("no run `abc12`; runs: a, b"),
            category("no run `zz`; runs: a, b")
        );
        assert_eq!(
            category("invalid type: string \"x\", expected i64 at line 3"),
            "invalid type: string \"\", expected i at line "
        );
    }

    #[test]
    fn crash_keys_ignore_numbers_but_keep_locations() {
        assert_eq!(
            crash_key("src/a.rs:10:5: index out of bounds: the len is 3 but the index is 7"),
            "src/a.rs:10:5: index out of bounds: the len is N but the index is N"
        );
    }

    #[test]
    fn panics_on_other_threads_are_caught() {
        let r = run_caught(|| {
            let _ = std::thread::spawn(|| panic!("boom on a thread")).join();
            1
        });
        let p = r.unwrap_err();
        assert!(p[0].contains("boom on a thread"), "{p:?}");
        assert_eq!(run_caught(|| 2).unwrap(), 2);
    }
}
