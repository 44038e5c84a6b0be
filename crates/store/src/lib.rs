//! Log-directory access: the only place in xlens that touches profile files.
//!
//! * [`discover`] turns a path (a log directory, one session directory, or one file) into
//!   [`Session`]s, newest first, each with one [`HostFile`] per host.
//! * [`read`] returns a file's bytes as a [`FileBytes`] (decompressed if gzip), whose pages can be
//!   released as an importer walks through them, so decoding a large file does not hold it twice.
//!
//! Profiles are XSpace files (`<host>.xplane.pb[.gz]`) or Chrome trace JSON (the PyTorch
//! profiler's `*.pt.trace.json[.gz]`, one per rank).
//!
//! A path may also be a bucket URL (`gs://`, `s3://`, `az://`; `file://` is a local path), read
//! through object_store when built with the `cloud` feature ([`remote`]): the same two
//! functions list the bucket and fetch a host file into the local cache, so no caller knows where
//! bytes came from. A [`HostFile`]'s and a [`Session`]'s paths are then the URLs.

mod bytes;
mod find;
pub mod gunzip;
#[cfg(feature = "cloud")]
mod remote;
#[cfg(feature = "cloud")]
pub use remote::{set_anonymous, set_progress, upload, Progress};
mod sniff;

pub use bytes::{
    inflated_size_hint, map, map_path, open_gzip, read, read_path, FileBytes, Inflating, Paging,
};
use find::*;
pub use find::{bucket_url, discover};
use serde::Serialize;
use sniff::*;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Errors from discovery and reading, each naming the path concerned.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: does not exist")]
    NotFound { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: no profiles found. Expected `<logdir>/plugins/profile/<session>/<host>.xplane.pb` (or a session folder, or one .xplane.pb file), or PyTorch profiler traces (`*.pt.trace.json[.gz]`); {found}")]
    NoProfiles { path: PathBuf, found: String },
    #[error("{path}: {what} files are not supported yet; save the profile as .xplane.pb (XProf and JAX/TensorFlow write that by default)")]
    Unsupported { path: PathBuf, what: &'static str },
    #[error("{path}: not a profile file; expected a name ending in .xplane.pb (or .xplane.pb.gz), or a Chrome trace ending in .json (or .json.gz)")]
    NotAProfile { path: PathBuf },
    #[error("{url}: {what}")]
    Remote { url: String, what: String },
    #[error("{url}: this xlens was built without bucket support (the `cloud` feature)")]
    NoCloud { url: String },
    #[error("{path}: gzip data is corrupt or truncated: {source}")]
    Gzip {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The same error naming `shown` (a bucket URL) instead of the local copy it was read from.
    fn at(self, shown: &Path) -> Self {
        let p = shown.to_path_buf();
        match self {
            StoreError::NotFound { .. } => StoreError::NotFound { path: p },
            StoreError::Io { source, .. } => StoreError::Io { path: p, source },
            StoreError::Gzip { source, .. } => StoreError::Gzip { path: p, source },
            other => other,
        }
    }
}

/// What a host file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `*.xplane.pb`, possibly gzip-compressed.
    XSpace,
    /// `*.xplane.riegeli`: recognised, not read yet.
    XSpaceRiegeli,
    /// Chrome trace JSON (`*.pt.trace.json` from the PyTorch profiler, `*.trace.json`, any
    /// `*.json` holding `traceEvents`), possibly gzip-compressed.
    ChromeTrace,
}

/// One host's file in a session.
#[derive(Debug, Clone, Serialize)]
pub struct HostFile {
    /// Host name, from the file name (`<host>.xplane.pb`); for a Chrome trace of a distributed
    /// job, `rank<N>` when the rank is known and no other file of the session has it.
    pub host: String,
    pub path: PathBuf,
    pub bytes: u64,
    pub format: Format,
    /// The rank of a PyTorch trace: from its `distributedInfo`, else from its file name
    /// (`rank-3`, `rank_3`, `rank3`); `None` when neither says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<i64>,
}

/// One profiling session: a folder holding one file per host.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    /// Display name: the folder under `plugins/profile/`, else the folder's path below the root.
    pub name: String,
    pub dir: PathBuf,
    pub hosts: Vec<HostFile>,
    /// Newest modification time of its files, in seconds since the Unix epoch.
    pub modified_s: u64,
}

/// The session folder name profilers give a capture taken at `secs` since the Unix epoch (UTC):
/// `YYYY_MM_DD_HH_MM_SS`, so that names sort by time.
pub fn session_id_at(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (the days-from-civil inverse).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}_{m:02}_{d:02}_{:02}_{:02}_{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

const SUFFIXES: &[(&str, Format)] = &[
    (".xplane.pb", Format::XSpace),
    (".xplane.pb.gz", Format::XSpace),
    (".xplane.riegeli", Format::XSpaceRiegeli),
    (".pt.trace.json", Format::ChromeTrace),
    (".pt.trace.json.gz", Format::ChromeTrace),
    (".trace.json", Format::ChromeTrace),
    (".trace.json.gz", Format::ChromeTrace),
    (".json", Format::ChromeTrace),
    (".json.gz", Format::ChromeTrace),
];

/// Host name and format of a profile file name, if it is one. Any `.json` (or `.json.gz`) name
/// counts as a Chrome trace here; [`discover`] also looks inside those of a folder.
pub fn classify(file_name: &str) -> Option<(String, Format)> {
    SUFFIXES.iter().find_map(|(suf, fmt)| {
        file_name
            .strip_suffix(suf)
            .filter(|h| !h.is_empty())
            .map(|h| (h.to_string(), *fmt))
    })
}

/// The local cache folder: `XLENS_CACHE_DIR`, else `$XDG_CACHE_HOME/xlens`, else
/// `~/.cache/xlens`.
pub fn cache_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("XLENS_CACHE_DIR") {
        return std::path::PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("xlens")
}

#[cfg(test)]
mod tests;
