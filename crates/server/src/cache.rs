//! What the server keeps between requests: each host file's analysis (its decoded profile and
//! everything derived from it, computed once on first use and shared by every tool and request),
//! and each selection of hosts as a [`Run`] (which holds what is derived from all its hosts
//! together, such as the trace index).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use xlens_analysis::base::context::{Analysis, Run};
use xlens_store::{HostFile, Session};

type Slot = Arc<OnceLock<Result<Arc<Analysis>, String>>>;
type SlotKey = (PathBuf, u64);
/// A run, and the files it was built on.
type RunEntry = (Arc<Run>, Vec<SlotKey>);

/// Caches the result of loading each host file (its analysis, or the error to show), keyed by
/// path and size so a rewritten file is loaded again, and the runs built from them.
///
/// Under a memory budget (bytes of resident memory, 0 for none), each new load is followed by
/// evictions of the least recently used host files (and the runs built on them) while the
/// process's resident memory is over the budget; the file just loaded is never evicted, so a run
/// larger than the budget is still served, alone (with a warning). An evicted file is loaded
/// again when asked for.
#[derive(Default)]
pub struct ProfileCache {
    slots: Mutex<HashMap<SlotKey, Slot>>,
    runs: Mutex<HashMap<String, RunEntry>>,
    /// Last use of each slot, in ticks of `clock`.
    used: Mutex<HashMap<SlotKey, u64>>,
    clock: std::sync::atomic::AtomicU64,
    budget: u64,
    loads: std::sync::atomic::AtomicU64,
    evictions: std::sync::atomic::AtomicU64,
    over_budget_warned: std::sync::atomic::AtomicBool,
    /// `xlens serve --no-align`: runs show their hosts on raw clocks.
    pub no_align: std::sync::atomic::AtomicBool,
}

/// What `/api/status` reports of the cache.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CacheStatus {
    pub resident_bytes: u64,
    pub budget_bytes: u64,
    pub loaded_files: usize,
    pub cached_runs: usize,
    pub loads: u64,
    pub evictions: u64,
}

/// Returns the allocator's free pages to the OS, so that resident memory shows what an eviction
/// freed (glibc keeps freed small blocks otherwise).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The process's resident memory in bytes (0 where it cannot be read).
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// This machine's memory in bytes (0 where it cannot be read).
pub fn physical_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl ProfileCache {
    /// A cache that keeps the process's resident memory within `budget` bytes (0: no budget).
    pub fn with_budget(budget: u64) -> ProfileCache {
        ProfileCache {
            budget,
            ..Default::default()
        }
    }

    /// Memory, budget, and what was loaded and evicted.
    pub fn status(&self) -> CacheStatus {
        use std::sync::atomic::Ordering::Relaxed;
        CacheStatus {
            resident_bytes: resident_bytes(),
            budget_bytes: self.budget,
            loaded_files: self.held_keys().len(),
            cached_runs: lock(&self.runs).len(),
            loads: self.loads.load(Relaxed),
            evictions: self.evictions.load(Relaxed),
        }
    }

    /// Whether a request (or a background warm-up) holds `key`'s analysis now: evicting it then
    /// would free nothing, and the next request would load a second copy beside it.
    fn in_use(&self, key: &SlotKey) -> bool {
        let mut held_by_runs = 0;
        for (run, keys) in lock(&self.runs).values() {
            if keys.contains(key) {
                if Arc::strong_count(run) > 1 {
                    return true;
                }
                held_by_runs += 1;
            }
        }
        let slots = lock(&self.slots);
        match slots.get(key).and_then(|s| s.get()) {
            // The slot's own reference, and one per cached run built on it.
            Some(Ok(a)) => Arc::strong_count(a) > 1 + held_by_runs,
            _ => false,
        }
    }

    /// Files whose analyses the cache holds: loaded slots and the files of cached runs.
    fn held_keys(&self) -> std::collections::HashSet<SlotKey> {
        let mut held: std::collections::HashSet<SlotKey> = lock(&self.slots)
            .iter()
            .filter(|(_, s)| s.get().is_some())
            .map(|(k, _)| k.clone())
            .collect();
        for (_, keys) in lock(&self.runs).values() {
            held.extend(keys.iter().cloned());
        }
        held
    }

    fn touch(&self, key: &SlotKey) {
        let t = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.used).insert(key.clone(), t);
    }

    /// The analysis of `file`, loading it on first use. Concurrent callers wait for one load.
    pub fn get(&self, file: &HostFile) -> Result<Arc<Analysis>, String> {
        let key = (file.path.clone(), file.bytes);
        self.touch(&key);
        let slot = lock(&self.slots).entry(key.clone()).or_default().clone();
        let mut loaded_now = false;
        let r = slot
            .get_or_init(|| {
                loaded_now = true;
                self.load(file)
            })
            .clone();
        if loaded_now {
            self.loads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.enforce_budget(std::slice::from_ref(&key));
        }
        r
    }

    /// Evicts least recently used files (and their runs) while resident memory is over the
    /// budget, never those in `keep` nor any a request is using (so no file is ever in memory
    /// twice). Stops when an eviction frees nothing at once.
    fn enforce_budget(&self, keep: &[SlotKey]) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.budget == 0 {
            return;
        }
        loop {
            let before = resident_bytes();
            if before <= self.budget {
                return;
            }
            // The least recently used file that is loaded or held by a cached run (a run built
            // while its files were being evicted holds them without a slot).
            let victim = {
                let held = self.held_keys();
                let used = lock(&self.used);
                held.into_iter()
                    .filter(|k| !keep.contains(k) && !self.in_use(k))
                    .min_by_key(|k| used.get(k).copied().unwrap_or(0))
            };
            let Some(victim) = victim else {
                if !self.over_budget_warned.swap(true, Relaxed) {
                    eprintln!(
                        "xlens: {} alone needs more memory ({:.0} MB resident) than the budget ({:.0} MB); served anyway",
                        keep.first().map(|k| k.0.display().to_string()).unwrap_or_default(),
                        before as f64 / 1e6,
                        self.budget as f64 / 1e6
                    );
                }
                return;
            };
            lock(&self.runs).retain(|_, (_, keys)| !keys.contains(&victim));
            lock(&self.slots).remove(&victim);
            lock(&self.used).remove(&victim);
            self.evictions.fetch_add(1, Relaxed);
            give_back_freed_memory();
            if resident_bytes() >= before {
                return;
            }
        }
    }

    fn load(&self, file: &HostFile) -> Result<Arc<Analysis>, String> {
        // Copied (files may change under a long-running server), and a bug in an importer
        // reported as this file's error rather than taking the server down.
        xlens_loader::open(file, xlens_loader::Policy::server())
            .map(|p| Arc::new(Analysis::new(Arc::new(p))))
            .map_err(|e| e.to_string())
    }

    /// Whether `file` has been loaded (or failed to load) already.
    pub fn is_loaded(&self, file: &HostFile) -> bool {
        lock(&self.slots)
            .get(&(file.path.clone(), file.bytes))
            .is_some_and(|s| s.get().is_some())
    }

    /// Stops the server's progress lines on stderr (`xlens mcp`, whose client reads stderr as
    /// the server's log).
    pub fn quiet() {
        QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Computes in the background what `run`'s other tools will need (once per run), so that
    /// switching tools on an open run answers from what is already there.
    pub fn warm_in_background(run: Arc<Run>) {
        if run.warm_started() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("xlens-warm".into())
            .spawn(move || {
                // A bug in an analysis must not take the server down; the request that needs
                // the value will meet the same bug and report it.
                let t0 = std::time::Instant::now();
                let warmed =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.warm())).is_ok();
                if warmed && !QUIET.load(std::sync::atomic::Ordering::Relaxed) {
                    eprintln!(
                        "xlens: run {} warm (every shared analysis computed) in {:.2} s",
                        run.name(),
                        t0.elapsed().as_secs_f64()
                    );
                }
            });
        drop(spawned);
    }

    /// The run over `sessions` (already narrowed to the wanted hosts), loading its hosts on first
    /// use; the same run (and what it has derived) for the same files afterwards.
    pub fn run(&self, sessions: Vec<Session>) -> Arc<Run> {
        let mut key = String::new();
        for s in &sessions {
            key.push_str(&s.name);
            for h in &s.hosts {
                key.push_str(&format!("\u{0}{}:{}", h.path.display(), h.bytes));
            }
            key.push('\u{1}');
        }
        let keys: Vec<SlotKey> = sessions
            .iter()
            .flat_map(|s| s.hosts.iter().map(|h| (h.path.clone(), h.bytes)))
            .collect();
        let cached = lock(&self.runs).get(&key).map(|(r, _)| r.clone());
        if let Some(r) = cached {
            keys.iter().for_each(|k| self.touch(k));
            // What the run derived since (trace index, warm-up) counts too: checked on every use.
            self.enforce_budget(&keys);
            return r;
        }
        let run = Arc::new(Run::new(sessions, |h| self.get(h)));
        run.set_align(!self.no_align.load(std::sync::atomic::Ordering::Relaxed));
        let run = lock(&self.runs)
            .entry(key)
            .or_insert((run, keys.clone()))
            .0
            .clone();
        // Its files were loaded one by one (and may have been evicted meanwhile by another
        // request): now the run holds them, recently used; the others go if over the budget.
        keys.iter().for_each(|k| self.touch(k));
        self.enforce_budget(&keys);
        run
    }
}

/// Whether progress lines are left out ([`ProfileCache::quiet`]).
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[cfg(test)]
mod tests {
    use super::*;

    /// Concurrent first opens of one file wait for a single load and share its result.
    #[test]
    fn concurrent_first_opens_decode_once() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/logdir/plugins/profile/jax_mlp_small");
        let sessions = xlens_store::discover(&dir).expect("fixture");
        let file = sessions[0].hosts[0].clone();
        let cache = ProfileCache::default();
        let loaded: Vec<Arc<Analysis>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| cache.get(&file).expect("loads")))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("thread"))
                .collect()
        });
        assert!(loaded.iter().all(|a| Arc::ptr_eq(a, &loaded[0])));
        assert!(cache.is_loaded(&file));
        assert_eq!(lock(&cache.slots).len(), 1);
    }
}
