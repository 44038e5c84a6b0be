//! Answers kept for asking again. `xlens tool` keeps what it printed under
//! `<cache>/answers/v1/<key>` (the cache directory of [`xlens_store::cache_dir`]), the key a
//! hash of everything the answer depends on: this binary (its path, size and modification
//! time; the Python package's command keeps none), the command line and working directory, the `XLENS_*` environment, and each host
//! file read (its path, size and modification time; a bucket object's listed time). Asked again
//! with nothing of that changed, a later process prints the kept bytes without reading the
//! profile; a file that changed gives another key, so it is never answered from the cache.
//!
//! Only answers that were printed whole are kept: not when a host file could not be read, a
//! tool read part of a file, or the answer is larger than [`MAX_ANSWER`]. The directory is kept
//! under [`MAX_TOTAL`] bytes, the least recently used answers going first.
//! `XLENS_NO_ANSWER_CACHE=1` or `--fresh` turns it off.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use xlens_store::Session;

/// Answers larger than this are not kept.
pub const MAX_ANSWER: u64 = 16 << 20;
/// The directory is pruned back under this many bytes.
pub const MAX_TOTAL: u64 = 256 << 20;
const VERSION: &str = "v1";

fn dir() -> PathBuf {
    xlens_store::cache_dir().join("answers").join(VERSION)
}

/// Whether answers may be kept and reused in this process.
pub fn enabled() -> bool {
    std::env::var_os("XLENS_NO_ANSWER_CACHE").is_none_or(|v| v.is_empty() || v == "0")
}

fn hash_file(path: &Path, h: &mut impl Hasher) -> bool {
    match std::fs::metadata(path) {
        Ok(m) => {
            m.len().hash(h);
            m.modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
                .hash(h);
            true
        }
        Err(_) => false,
    }
}

/// The key of an answer to `args` over `sessions`; `None` when something it depends on cannot
/// be pinned down (then nothing is kept or reused).
pub fn key(args: &[std::ffi::OsString], sessions: &[Session]) -> Option<String> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    VERSION.hash(&mut h);
    // The xlens binary only (not the Python package's command, whose executable is Python's).
    let exe = std::env::current_exe().ok()?;
    if !exe
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("xlens"))
    {
        return None;
    }
    exe.hash(&mut h);
    if !hash_file(&exe, &mut h) {
        return None;
    }
    args.hash(&mut h);
    std::env::current_dir().ok()?.hash(&mut h);
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("XLENS_"))
        .collect();
    env.sort();
    env.hash(&mut h);
    for s in sessions {
        s.name.hash(&mut h);
        for f in &s.hosts {
            f.path.hash(&mut h);
            f.bytes.hash(&mut h);
            if xlens_store::bucket_url(&f.path).is_some() || !hash_file(&f.path, &mut h) {
                // A bucket object: the listing's time, which a new upload changes.
                s.modified_s.hash(&mut h);
            }
        }
    }
    Some(format!("{:016x}", h.finish()))
}

/// The answer kept under `key`, when there is one (its use noted, for pruning).
pub fn get(key: &str) -> Option<Vec<u8>> {
    let path = dir().join(key);
    let bytes = std::fs::read(&path).ok()?;
    if let Ok(f) = std::fs::File::options().append(true).open(&path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
    Some(bytes)
}

/// What is being printed, kept as it goes for [`finish`].
struct Recording {
    key: String,
    tmp: PathBuf,
    file: std::fs::File,
    bytes: u64,
    failed: bool,
}

static RECORDING: Mutex<Option<Recording>> = Mutex::new(None);

/// Starts keeping what stdout is sent under `key`.
pub fn record(key: String) {
    let d = dir();
    if std::fs::create_dir_all(&d).is_err() {
        return;
    }
    let tmp = d.join(format!(".{key}.{}", std::process::id()));
    if let Ok(file) = std::fs::File::create(&tmp) {
        if let Ok(mut r) = RECORDING.lock() {
            *r = Some(Recording {
                key,
                tmp,
                file,
                bytes: 0,
                failed: false,
            });
        }
    }
}

/// Keeps `bytes` sent to stdout, when recording.
pub fn tee(bytes: &[u8]) {
    let Ok(mut g) = RECORDING.lock() else { return };
    let Some(r) = g.as_mut() else { return };
    if r.failed {
        return;
    }
    r.bytes += bytes.len() as u64;
    if r.bytes > MAX_ANSWER || r.file.write_all(bytes).is_err() {
        r.failed = true;
    }
}

/// What is being recorded was not all printed (a closed pipe): it is not kept.
pub fn spoil() {
    if let Some(r) = RECORDING.lock().ok().as_mut().and_then(|g| g.as_mut()) {
        r.failed = true;
    }
}

/// Stops recording: keeps the answer when `whole`, else drops it.
pub fn finish(whole: bool) {
    let Some(r) = RECORDING.lock().ok().and_then(|mut g| g.take()) else {
        return;
    };
    let Recording {
        key,
        tmp,
        file,
        failed,
        ..
    } = r;
    drop(file);
    if whole && !failed && std::fs::rename(&tmp, tmp.with_file_name(&key)).is_ok() {
        prune(&dir(), MAX_TOTAL);
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Deletes the least recently used answers until the directory holds at most 3/4 of `max`
/// bytes, once it holds more than `max`.
fn prune(d: &Path, max: u64) {
    let Ok(entries) = std::fs::read_dir(d) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    if total <= max {
        return;
    }
    files.sort();
    for (_, len, path) in files {
        if total <= max / 4 * 3 {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruning_drops_the_least_recently_used_first() {
        let d = std::env::temp_dir().join(format!("xlens-answers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let t0 = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        for (i, name) in ["old", "mid", "new"].iter().enumerate() {
            let p = d.join(name);
            std::fs::write(&p, vec![0u8; 100]).unwrap();
            let f = std::fs::File::options().append(true).open(&p).unwrap();
            f.set_modified(t0 + std::time::Duration::from_secs(i as u64))
                .unwrap();
        }
        prune(&d, 1000);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 3);
        prune(&d, 250);
        let mut left: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["new"]);
        let _ = std::fs::remove_dir_all(&d);
    }
}
