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

/// Caches the result of loading each host file (its analysis, or the error to show), keyed by
/// path and size so a rewritten file is loaded again, and the runs built from them.
#[derive(Default)]
pub struct ProfileCache {
    slots: Mutex<HashMap<(PathBuf, u64), Slot>>,
    runs: Mutex<HashMap<String, Arc<Run>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl ProfileCache {
    /// The analysis of `file`, loading it on first use. Concurrent callers wait for one load.
    pub fn get(&self, file: &HostFile) -> Result<Arc<Analysis>, String> {
        let key = (file.path.clone(), file.bytes);
        let slot = lock(&self.slots).entry(key).or_default().clone();
        slot.get_or_init(|| {
            let path = file.path.clone();
            // A bug in an importer must not take the server down: report it as this file's error.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                xlens_analysis::base::load::load_host(file)
            })) {
                Ok(Ok(p)) => Ok(Arc::new(Analysis::new(Arc::new(p)))),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!(
                    "{}: the importer crashed on this file (a bug in xlens; please report it)",
                    path.display()
                )),
            }
        })
        .clone()
    }

    /// Whether `file` has been loaded (or failed to load) already.
    pub fn is_loaded(&self, file: &HostFile) -> bool {
        lock(&self.slots)
            .get(&(file.path.clone(), file.bytes))
            .is_some_and(|s| s.get().is_some())
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
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.warm())).is_ok() {
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
        if let Some(r) = lock(&self.runs).get(&key) {
            return r.clone();
        }
        let run = Arc::new(Run::new(sessions, |h| self.get(h)));
        lock(&self.runs).entry(key).or_insert(run).clone()
    }
}

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
