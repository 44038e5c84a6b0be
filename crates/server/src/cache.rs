//! Decoded profiles, built once per host file and shared by every tool and request.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use xlens_model::Profile;
use xlens_store::HostFile;

type Slot = Arc<OnceLock<Result<Arc<Profile>, String>>>;

/// Caches the result of loading each host file (success or the error to show), keyed by path,
/// size and modification time so a rewritten file is loaded again.
#[derive(Default)]
pub struct ProfileCache {
    slots: Mutex<HashMap<(PathBuf, u64), Slot>>,
}

impl ProfileCache {
    /// The profile of `file`, loading it on first use. Concurrent callers wait for one load.
    pub fn get(&self, file: &HostFile) -> Result<Arc<Profile>, String> {
        let key = (file.path.clone(), file.bytes);
        let slot = {
            let mut slots = match self.slots.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            slots.entry(key).or_default().clone()
        };
        slot.get_or_init(|| {
            let path = file.path.clone();
            // A bug in an importer must not take the server down: report it as this file's error.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                xlens_analysis::load::load_host(file)
            })) {
                Ok(Ok(p)) => Ok(Arc::new(p)),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!(
                    "{}: the importer crashed on this file (a bug in xlens; please report it)",
                    path.display()
                )),
            }
        })
        .clone()
    }
}
