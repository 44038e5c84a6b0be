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

pub mod gunzip;
#[cfg(feature = "cloud")]
mod remote;
#[cfg(feature = "cloud")]
pub use remote::{set_anonymous, set_progress, upload, Progress};

use serde::Serialize;
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

/// What the start of a JSON file says: whether it is a Chrome trace, and the rank in its
/// `distributedInfo` when that comes first (the PyTorch profiler writes it before the events).
/// Reads at most 256 KiB (decompressed).
fn sniff_json(path: &Path) -> (bool, Option<i64>) {
    let Ok(f) = fs::File::open(path) else {
        return (false, None);
    };
    // Read as it is inflated: a few KiB settle most traces ([`sniff_head`]).
    sniff_from(std::io::BufReader::with_capacity(
        SNIFF_FIRST_STEP as usize,
        f,
    ))
}

const SNIFF_BYTES: u64 = 256 << 10;

/// The first piece of a head that [`sniff_head`] reads (then twice as much each time).
const SNIFF_FIRST_STEP: u64 = 16 << 10;

/// [`sniff_json`] on the first bytes of a file (gzip or not).
///
/// A head is read (and inflated, if gzip) a piece at a time, up to [`SNIFF_BYTES`], and no
/// further once what is read settles both answers: it is a trace and its `distributedInfo`
/// object has closed (what more text cannot change). A PyTorch trace writes both within its
/// first few KiB: the NCCL sample settles in 16 KiB, where reading and inflating 256 KiB was most
/// of a `discover` of it.
#[cfg(any(test, feature = "cloud"))]
pub(crate) fn sniff_head(raw: &[u8]) -> (bool, Option<i64>) {
    sniff_from(raw)
}

/// [`sniff_head`] of the bytes `raw` yields, read no further than it needs.
fn sniff_from(mut raw: impl std::io::BufRead) -> (bool, Option<i64>) {
    let gz = match raw.fill_buf() {
        Ok(b) => b.starts_with(&[0x1f, 0x8b]),
        Err(_) => return (false, None),
    };
    let raw = raw.take(SNIFF_BYTES);
    if gz {
        sniff_pieces(gunzip::Gunzip::new(raw).take(SNIFF_BYTES))
    } else {
        sniff_pieces(raw)
    }
}

/// [`sniff_text`] of what `z` yields, read a piece at a time until it settles.
fn sniff_pieces(mut z: impl Read) -> (bool, Option<i64>) {
    let mut unzipped = Vec::new();
    let mut step = SNIFF_FIRST_STEP;
    let mut rank = RankSettled::default();
    loop {
        let before = unzipped.len();
        let r = (&mut z).take(step).read_to_end(&mut unzipped);
        if r.is_err() {
            if unzipped.is_empty() {
                return (false, None);
            }
            break;
        }
        if unzipped.len() == before {
            break;
        }
        if rank.settled(&unzipped, before) {
            let found = sniff_text(&unzipped);
            if found.0 {
                return found;
            }
        }
        step *= 2;
    }
    sniff_text(&unzipped)
}

/// Whether a growing head holds a `distributedInfo` key and a `}` after it: the rank
/// [`sniff_text`] finds in it is then the one it finds in any longer head. Each call looks only
/// at what was added since the last (from `before`).
#[derive(Default)]
struct RankSettled {
    /// Where the key starts, once found.
    key: Option<usize>,
    /// A `}` after it was found.
    closed: bool,
}

impl RankSettled {
    const KEY: &'static [u8] = b"\"distributedInfo\"";

    fn settled(&mut self, head: &[u8], before: usize) -> bool {
        if self.closed {
            return true;
        }
        let from = match self.key {
            Some(at) => before.max(at),
            None => {
                // The key may straddle the old end.
                let from = before.saturating_sub(Self::KEY.len() - 1);
                let Some(k) = head[from..]
                    .windows(Self::KEY.len())
                    .position(|w| w == Self::KEY)
                else {
                    return false;
                };
                self.key = Some(from + k);
                from + k
            }
        };
        self.closed = head[from..].contains(&b'}');
        self.closed
    }
}

/// [`sniff_head`] on the (decompressed) text of a head.
fn sniff_text(head: &[u8]) -> (bool, Option<i64>) {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    // A bare array of events is empty or starts with an object, and its events have phases;
    // other JSON arrays (lists of names, or of records such as the many-hosts generator's
    // truth file) are not traces.
    let bare_array =
        t.strip_prefix('[')
            .is_some_and(|rest| match rest.trim_start().chars().next() {
                Some(']') => true,
                Some('{') => text.contains("\"ph\""),
                _ => false,
            });
    let is_trace = bare_array || (t.starts_with('{') && text.contains("\"traceEvents\""));
    let rank = text.find("\"distributedInfo\"").and_then(|at| {
        let rest = &text[at..];
        let end = rest.find('}').unwrap_or(rest.len());
        let obj = &rest[..end];
        let r = obj.find("\"rank\"")?;
        let after = obj[r + 6..].trim_start().strip_prefix(':')?.trim_start();
        let digits: String = after
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().ok()
    });
    (is_trace, rank)
}

/// A rank written in a file name: `rank-3`, `rank_3`, `rank3` (any case).
pub(crate) fn rank_in_name(name: &str) -> Option<i64> {
    let l = name.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = l[from..].find("rank") {
        let rest = l[from + i + 4..].trim_start_matches(['-', '_', '.']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse() {
            return Some(n);
        }
        from += i + 4;
    }
    None
}

/// Names the Chrome-trace hosts of one session by rank where that is known and unique, and
/// drops a Chrome trace whose host also has an XSpace file (JAX and TensorFlow write
/// `<host>.trace.json.gz` beside `<host>.xplane.pb`: the same profile, with less in it).
fn settle_hosts(hosts: &mut Vec<HostFile>) {
    let xspace: Vec<String> = hosts
        .iter()
        .filter(|h| h.format != Format::ChromeTrace)
        .map(|h| h.host.clone())
        .collect();
    hosts.retain(|h| h.format != Format::ChromeTrace || !xspace.contains(&h.host));
    let ranks: Vec<i64> = hosts.iter().filter_map(|h| h.rank).collect();
    for h in hosts.iter_mut() {
        if let Some(r) = h.rank {
            if ranks.iter().filter(|&&x| x == r).count() == 1 {
                h.host = format!("rank{r}");
            }
        }
    }
}

/// The bucket URL that `path` spells (`gs://`, `s3://`, `az://`, ...), if it is one.
pub fn bucket_url(path: &Path) -> Option<&str> {
    let s = path.to_str()?;
    let (scheme, _) = s.split_once("://")?;
    matches!(
        scheme,
        "gs" | "s3" | "s3a" | "az" | "abfs" | "abfss" | "azure"
    )
    .then_some(s)
}

/// `file:///a/b` as `/a/b`; any other path unchanged.
fn local(path: &Path) -> &Path {
    path.to_str()
        .and_then(|s| s.strip_prefix("file://"))
        .map_or(path, Path::new)
}

/// Finds the sessions at or below `path` (a local path or a bucket URL), newest first.
pub fn discover(path: &Path) -> Result<Vec<Session>, StoreError> {
    if let Some(url) = bucket_url(path) {
        #[cfg(feature = "cloud")]
        return settle(path, remote::discover(url)?);
        #[cfg(not(feature = "cloud"))]
        return Err(StoreError::NoCloud { url: url.into() });
    }
    let path = local(path);
    let meta = fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound {
            path: path.to_path_buf(),
        },
        _ => StoreError::Io {
            path: path.to_path_buf(),
            source: e,
        },
    })?;
    if meta.is_file() {
        let name = file_name(path);
        let (host, format) = classify(&name).ok_or_else(|| StoreError::NotAProfile {
            path: path.to_path_buf(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let session_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| host.clone());
        return Ok(vec![Session {
            name: session_name,
            dir,
            modified_s: mtime(&meta),
            hosts: vec![HostFile {
                host,
                path: path.to_path_buf(),
                bytes: meta.len(),
                format,
                rank: (format == Format::ChromeTrace)
                    .then(|| sniff_json(path).1.or_else(|| rank_in_name(&name)))
                    .flatten(),
            }],
        }]);
    }
    let mut found = Found::default();
    walk(path, 0, &mut found)?;
    settle(path, found)
}

/// Sessions from what a walk found: hosts named and deduplicated, newest session first.
fn settle(path: &Path, found: Found) -> Result<Vec<Session>, StoreError> {
    if found.sessions.is_empty() {
        return Err(StoreError::NoProfiles {
            path: path.to_path_buf(),
            found: found.describe_other(),
        });
    }
    let mut sessions: Vec<Session> = found
        .sessions
        .into_iter()
        .map(|(dir, mut hosts, modified_s)| {
            settle_hosts(&mut hosts);
            hosts.sort_by(|a, b| a.host.cmp(&b.host));
            // One file per host: prefer the uncompressed file when both exist.
            hosts.dedup_by(|later, earlier| {
                if later.host == earlier.host {
                    if later.path.extension().is_some_and(|e| e == "pb")
                        && later.format == Format::XSpace
                    {
                        std::mem::swap(later, earlier);
                    }
                    true
                } else {
                    false
                }
            });
            Session {
                name: session_name(path, &dir),
                dir,
                hosts,
                modified_s,
            }
        })
        .collect();
    sessions.sort_by(|a, b| {
        b.modified_s
            .cmp(&a.modified_s)
            .then_with(|| b.name.cmp(&a.name))
    });
    Ok(sessions)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn mtime(meta: &fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn session_name(root: &Path, dir: &Path) -> String {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let comps: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    // `.../plugins/profile/<session>`: the session is what follows `profile`.
    if let Some(i) = comps
        .windows(2)
        .position(|w| w[0] == "plugins" && w[1] == "profile")
    {
        let rest = &comps[i + 2..];
        if !rest.is_empty() {
            let prefix = &comps[..i];
            return if prefix.is_empty() {
                rest.join("/")
            } else {
                format!("{}/{}", prefix.join("/"), rest.join("/"))
            };
        }
    }
    if comps.is_empty() {
        file_name(dir)
    } else {
        comps.join("/")
    }
}

#[derive(Default)]
pub(crate) struct Found {
    pub(crate) sessions: Vec<(PathBuf, Vec<HostFile>, u64)>,
    pub(crate) other_files: usize,
    pub(crate) examples: Vec<String>,
    pub(crate) dirs: usize,
    /// Folders walked, by canonical path: a symbolic link back up the tree is walked once.
    pub(crate) seen: std::collections::HashSet<PathBuf>,
}

impl Found {
    fn describe_other(&self) -> String {
        if self.other_files == 0 {
            format!(
                "found {} folder(s) and no files below it",
                self.dirs.saturating_sub(1)
            )
        } else {
            format!(
                "found {} other file(s) in {} folder(s), e.g. {}",
                self.other_files,
                self.dirs,
                self.examples.join(", ")
            )
        }
    }
}

pub(crate) const MAX_DEPTH: usize = 12;

/// Walks `dir` and the folders below it, following symbolic links (to folders and to files)
/// but entering each real folder once.
fn walk(dir: &Path, depth: usize, found: &mut Found) -> Result<(), StoreError> {
    if let Ok(real) = fs::canonicalize(dir) {
        if !found.seen.insert(real) {
            return Ok(());
        }
    }
    found.dirs += 1;
    let rd = fs::read_dir(dir).map_err(|e| StoreError::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let mut hosts = Vec::new();
    let mut newest = 0;
    let mut subdirs = Vec::new();
    for entry in rd.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(ft) = entry.file_type() else { continue };
        let path = entry.path();
        // A link counts as what it points to (a dangling link as nothing).
        let is_dir = ft.is_dir() || (ft.is_symlink() && path.is_dir());
        if is_dir {
            if !name.starts_with('.') && depth < MAX_DEPTH {
                subdirs.push(path);
            }
            continue;
        }
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let mut class = classify(&name);
        let mut rank = None;
        if let Some((_, Format::ChromeTrace)) = class {
            // A JSON file in a folder is a profile only if it holds a trace.
            let (is_trace, r) = sniff_json(&path);
            if is_trace {
                rank = r.or_else(|| rank_in_name(&name));
            } else {
                class = None;
            }
        }
        match class {
            Some((host, format)) => {
                newest = newest.max(mtime(&meta));
                hosts.push(HostFile {
                    host,
                    path,
                    bytes: meta.len(),
                    format,
                    rank,
                });
            }
            None => {
                found.other_files += 1;
                if found.examples.len() < 3 {
                    found.examples.push(name);
                }
            }
        }
    }
    if !hosts.is_empty() {
        found.sessions.push((dir.to_path_buf(), hosts, newest));
    }
    subdirs.sort();
    for d in subdirs {
        // Unreadable subfolders are skipped rather than failing the whole log dir.
        let _ = walk(&d, depth + 1, found);
    }
    Ok(())
}

/// A file's bytes, decompressed if needed.
pub struct FileBytes {
    inner: Inner,
    pub path: PathBuf,
    /// Size on disk (compressed size for gzip files).
    pub stored_bytes: u64,
}

enum Inner {
    Anon(memmap2::MmapMut),
    Heap(Vec<u8>),
    Mapped(memmap2::Mmap, Paging),
}

impl FileBytes {
    pub fn bytes(&self) -> &[u8] {
        match &self.inner {
            Inner::Anon(m) => m,
            Inner::Heap(v) => v,
            Inner::Mapped(m, _) => m,
        }
    }

    /// Whether bytes given back with [`FileBytes::release_range`] still read as they were (a file
    /// mapping faults them in again from the page cache; a copy's read as zeros).
    pub fn rereadable(&self) -> bool {
        !matches!(self.inner, Inner::Anon(_))
    }

    /// Brings the pages of `start..end` in at once, where they would otherwise come in one
    /// fault at a time (a mapping with [`Paging::OnDemand`]); a hint, a no-op elsewhere.
    pub fn bring_in(&self, start: usize, end: usize) {
        if let Inner::Mapped(m, Paging::OnDemand) = &self.inner {
            let page = 4096;
            let from = start / page * page;
            let to = end.min(m.len());
            if to > from {
                // Only a hint: on a kernel without it, the pages fault in as they are read.
                let _ = m.advise_range(memmap2::Advice::PopulateRead, from, to - from);
            }
        }
    }

    /// Gives back to the OS the memory of the whole pages inside `start..end`, which the caller
    /// will not read again (afterwards a copy reads as zeros, a mapped file as its contents, faulted
    /// in again). A no-op where that is not possible.
    /// Pages shared with bytes outside the range are kept, so disjoint ranges may be released
    /// from different threads while the rest is being read.
    pub fn release_range(&self, start: usize, end: usize) {
        let len = self.bytes().len();
        let page = 4096;
        let from = start.div_ceil(page) * page;
        let to = end.min(len) / page * page;
        if to <= from {
            return;
        }
        match &self.inner {
            // SAFETY: the mapping is private and anonymous; DONTNEED only makes the released
            // pages read as zeros, and callers promise not to read them again.
            Inner::Anon(m) => unsafe {
                let _ =
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from);
            },
            // SAFETY: a read-only file mapping: DONTNEED only unmaps the pages from this process
            // (the page cache keeps them; a later read would fault them back in), and callers
            // promise not to read them again.
            Inner::Mapped(m, _) => unsafe {
                let _ =
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from);
            },
            Inner::Heap(_) => {}
        }
    }
}

/// Reads a host file fully into memory (decompressing gzip).
pub fn read(file: &HostFile) -> Result<FileBytes, StoreError> {
    read_path(&file.path, file.format)
}

/// The local file holding `path`'s bytes: `path` itself, or for a bucket URL its copy in the
/// local cache, fetched first when missing or stale.
fn local_copy(path: &Path) -> Result<PathBuf, StoreError> {
    match bucket_url(path) {
        #[cfg(feature = "cloud")]
        Some(url) => remote::fetch(url),
        #[cfg(not(feature = "cloud"))]
        Some(url) => Err(StoreError::NoCloud { url: url.into() }),
        None => Ok(local(path).to_path_buf()),
    }
}

/// Reads any path (or bucket URL) as a profile of `format`.
pub fn read_path(path: &Path, format: Format) -> Result<FileBytes, StoreError> {
    if format == Format::XSpaceRiegeli {
        return Err(StoreError::Unsupported {
            path: path.to_path_buf(),
            what: "Riegeli (.xplane.riegeli)",
        });
    }
    let copy = local_copy(path)?;
    let mut fb = read_local(&copy, format).map_err(|e| e.at(path))?;
    fb.path = path.to_path_buf();
    Ok(fb)
}

fn read_local(path: &Path, format: Format) -> Result<FileBytes, StoreError> {
    if format == Format::XSpaceRiegeli {
        return Err(StoreError::Unsupported {
            path: path.to_path_buf(),
            what: "Riegeli (.xplane.riegeli)",
        });
    }
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let (len, gz) = size_and_gzip(path, path)?;
    let mut f = fs::File::open(path).map_err(io)?;
    if gz {
        let mut out = Vec::with_capacity(gzip_size_hint(&mut f, len));
        gunzip::Gunzip::new(std::io::BufReader::with_capacity(GZ_READ, f))
            .read_to_end(&mut out)
            .map_err(|e| StoreError::Gzip {
                path: path.to_path_buf(),
                source: e,
            })?;
        return Ok(FileBytes {
            inner: Inner::Heap(out),
            path: path.to_path_buf(),
            stored_bytes: len,
        });
    }
    let size = usize::try_from(len).map_err(|_| {
        io(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            "file too large for this platform",
        ))
    })?;
    let inner = if size == 0 {
        Inner::Heap(Vec::new())
    } else {
        let mut m = memmap2::MmapMut::map_anon(size).map_err(io)?;
        // Huge pages where the kernel offers them: a few hundred page faults fewer per 100 MB,
        // which is a good part of the read time. Only a hint; failure changes nothing.
        #[cfg(target_os = "linux")]
        let _ = m.advise(memmap2::Advice::HugePage);
        read_all(&mut f, &mut m[..]).map_err(io)?;
        Inner::Anon(m)
    };
    Ok(FileBytes {
        inner,
        path: path.to_path_buf(),
        stored_bytes: len,
    })
}

/// How a mapped file's pages come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paging {
    /// All at once, as the file is mapped: fastest to read (on the 207 MB JAX profile, 11 ms
    /// for the mapping against 22 ms more decoding on demand), but the whole file is resident
    /// until the decoder gives pages back.
    Ahead,
    /// As the decoder reaches them: only the part being read is resident, as the decoder gives
    /// pages back behind it (for decoding host after host in bounded memory).
    OnDemand,
}

/// Maps a host file into memory instead of copying it ([`map_path`]).
///
/// # Safety
/// See [`map_path`].
pub unsafe fn map(file: &HostFile, paging: Paging) -> Result<FileBytes, StoreError> {
    map_path(&file.path, file.format, paging)
}

/// Maps `path` into memory instead of copying it: no copy and no fresh pages, so a large file is
/// ready in a fraction of [`read_path`]'s time. Compressed and empty files are read as by
/// [`read_path`].
///
/// # Safety
/// The bytes are the file's page cache: if another process truncates the file while they are
/// in use, touching a page past its new end raises SIGBUS, which ends the process unless it
/// handles that signal. Only for short-lived processes that install such a handler (the CLI turns
/// it into an error naming the file); a long-running server must use [`read`].
pub unsafe fn map_path(
    path: &Path,
    format: Format,
    paging: Paging,
) -> Result<FileBytes, StoreError> {
    let copy = local_copy(path)?;
    // SAFETY: passed on to the caller.
    let mut fb = unsafe { map_local(&copy, format, paging) }.map_err(|e| e.at(path))?;
    fb.path = path.to_path_buf();
    Ok(fb)
}

/// How much of a gzip file is read from disk at a time.
const GZ_READ: usize = 64 << 10;

/// A gzip file opened to be inflated while it is read (see [`open_gzip`]).
pub struct Inflating {
    /// The inflated bytes, read as they are inflated.
    pub reader: gunzip::Gunzip<std::io::BufReader<fs::File>>,
    /// The uncompressed size the file states, when plausible; 0 otherwise.
    pub size: usize,
    /// The path (or bucket URL) asked for.
    pub path: PathBuf,
    /// Size on disk.
    pub stored_bytes: u64,
}

/// Opens `path` (a bucket URL through its local copy) to be inflated while it is read, so that
/// a decoder can work on the start of the file before the end is inflated; `None` when the file
/// is not gzip (read it with [`read_path`] or [`map_path`]).
pub fn open_gzip(path: &Path) -> Result<Option<Inflating>, StoreError> {
    let copy = local_copy(path)?;
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let (len, gz) = size_and_gzip(&copy, path)?;
    if !gz {
        return Ok(None);
    }
    let mut f = fs::File::open(&copy).map_err(io)?;
    let size = gzip_size_hint(&mut f, len);
    // From the start, whatever the size's lookup left the position at.
    let f = fs::File::open(&copy).map_err(io)?;
    Ok(Some(Inflating {
        reader: gunzip::Gunzip::new(std::io::BufReader::with_capacity(GZ_READ, f)),
        size,
        path: path.to_path_buf(),
        stored_bytes: len,
    }))
}

/// The size of the local file `local` and whether it starts as gzip does; errors name `path`.
fn size_and_gzip(local: &Path, path: &Path) -> Result<(u64, bool), StoreError> {
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let mut f = fs::File::open(local).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound {
            path: path.to_path_buf(),
        },
        _ => io(e),
    })?;
    let len = f.metadata().map_err(io)?.len();
    let mut magic = [0u8; 2];
    let n = f.read(&mut magic).map_err(io)?;
    Ok((len, n == 2 && magic == [0x1f, 0x8b]))
}

/// How many bytes a host file's decoder reads: for a local gzip file, the size its trailer states
/// (when plausible; modulo 4 GiB, so a larger text may count less), else its size as listed (a
/// bucket's gzip files too, whose trailer is not fetched for this).
pub fn inflated_size_hint(file: &HostFile) -> u64 {
    if bucket_url(&file.path).is_some() {
        return file.bytes;
    }
    let Ok((len, true)) = size_and_gzip(&file.path, &file.path) else {
        return file.bytes;
    };
    let Ok(mut f) = fs::File::open(&file.path) else {
        return file.bytes;
    };
    match gzip_size_hint(&mut f, len) {
        0 => file.bytes,
        n => n as u64,
    }
}

/// The uncompressed size a gzip file states in its last four bytes (modulo 4 GiB, of its last
/// member), when plausible, to size the output once instead of growing (and copying) it while
/// inflating; 0 otherwise. Leaves `f` at its start.
fn gzip_size_hint(f: &mut fs::File, len: u64) -> usize {
    use std::io::{Seek, SeekFrom};
    let mut tail = [0u8; 4];
    let stated =
        if len >= 18 && f.seek(SeekFrom::End(-4)).is_ok() && f.read_exact(&mut tail).is_ok() {
            u64::from(u32::from_le_bytes(tail))
        } else {
            0
        };
    if f.seek(SeekFrom::Start(0)).is_err() {
        return 0;
    }
    // Deflate expands at most about 1032 times; a larger claim is not the size.
    if stated < len / 2 || stated > len.saturating_mul(1032) {
        return 0;
    }
    usize::try_from(stated).unwrap_or(0)
}

/// [`map_path`] of a local file.
///
/// # Safety
/// See [`map_path`].
unsafe fn map_local(path: &Path, format: Format, paging: Paging) -> Result<FileBytes, StoreError> {
    let io = |e| StoreError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let f = fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => StoreError::NotFound {
            path: path.to_path_buf(),
        },
        _ => io(e),
    })?;
    let len = f.metadata().map_err(io)?.len();
    if format == Format::XSpaceRiegeli || len < 2 {
        return read_local(path, format);
    }
    let mut options = memmap2::MmapOptions::new();
    if paging == Paging::Ahead {
        options.populate();
    }
    // SAFETY: the caller guarantees a SIGBUS from a concurrent truncation is handled.
    let m = unsafe { options.map(&f) }.map_err(io)?;
    if m.get(..2) == Some(&[0x1f, 0x8b][..]) {
        return read_local(path, format);
    }
    Ok(FileBytes {
        inner: Inner::Mapped(m, paging),
        path: path.to_path_buf(),
        stored_bytes: len,
    })
}

/// Files at least this large are read by two threads, one half each: copying out of the page
/// cache (and faulting in the buffer) is most of the read time, and it scales with cores.
const PARALLEL_READ_MIN: usize = 16 << 20;

/// Fills `buf` from the start of `f`, in two halves on two threads for large files.
fn read_all(f: &mut fs::File, buf: &mut [u8]) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if buf.len() >= PARALLEL_READ_MIN && cores > 1 {
            let half = buf.len() / 2;
            let (a, b) = buf.split_at_mut(half);
            let file: &fs::File = f;
            // The second half waits in a cell, so that it can still be read here if no thread
            // can be started.
            let cell = std::sync::Mutex::new(Some(b));
            return std::thread::scope(|s| {
                let cell = &cell;
                let read_b = move || match cell.lock().ok().and_then(|mut g| g.take()) {
                    Some(b) => file.read_exact_at(b, half as u64),
                    None => Ok(()),
                };
                let other = std::thread::Builder::new().spawn_scoped(s, read_b);
                let here = file.read_exact_at(a, 0);
                let there = match other {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("reading thread panicked"))),
                    Err(_) => read_b(),
                };
                here.and(there)
            });
        }
    }
    f.read_exact(buf)
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
mod tests {
    use super::*;

    #[test]
    fn a_gzip_files_inflated_size_from_its_trailer() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pytorch/two_ranks");
        let host = |name: &str, bytes: u64| HostFile {
            host: "h".into(),
            path: dir.join(name),
            bytes,
            format: Format::ChromeTrace,
            rank: None,
        };
        // `gunzip -c FILE | wc -c`: 1,759,570 bytes from 124,247.
        let gz = host("hta-trace_filter-sampled_rank-0.json.gz", 124_247);
        assert_eq!(inflated_size_hint(&gz), 1_759_570);
        // Not gzip, or not there: the size as listed.
        let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/README.md");
        let plain = HostFile {
            path: readme,
            ..host("x", 77)
        };
        assert_eq!(inflated_size_hint(&plain), 77);
        assert_eq!(inflated_size_hint(&host("missing.json.gz", 5)), 5);
        let bucket = HostFile {
            path: PathBuf::from("gs://b/p/h.pt.trace.json.gz"),
            ..host("x", 9)
        };
        assert_eq!(inflated_size_hint(&bucket), 9);
    }

    #[test]
    fn classifies_profile_names() {
        assert_eq!(
            classify("127.0.0.1_9998.xplane.pb"),
            Some(("127.0.0.1_9998".into(), Format::XSpace))
        );
        assert_eq!(
            classify("vm.xplane.pb.gz"),
            Some(("vm".into(), Format::XSpace))
        );
        assert_eq!(
            classify("h.xplane.riegeli"),
            Some(("h".into(), Format::XSpaceRiegeli))
        );
        // Chrome traces: the PyTorch profiler's names keep everything before the suffix.
        assert_eq!(
            classify("worker0.1700000000.pt.trace.json.gz"),
            Some(("worker0.1700000000".into(), Format::ChromeTrace))
        );
        assert_eq!(
            classify("vm.trace.json.gz"),
            Some(("vm".into(), Format::ChromeTrace))
        );
        assert_eq!(
            classify("rank_3.json"),
            Some(("rank_3".into(), Format::ChromeTrace))
        );
        assert_eq!(classify(".xplane.pb"), None);
        assert_eq!(classify("notes.txt"), None);
    }

    #[test]
    fn a_gzip_file_opens_to_inflate_and_others_do_not() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let gz = root.join("pytorch/hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
        let mut g = open_gzip(&gz).expect("opens").expect("is gzip");
        let mut text = Vec::new();
        g.reader.read_to_end(&mut text).expect("inflates");
        // The size it states is the inflated size; the bytes are read_path's.
        assert_eq!(g.size, text.len());
        assert_eq!(g.stored_bytes, fs::metadata(&gz).expect("stat").len());
        assert_eq!(
            text,
            read_path(&gz, Format::ChromeTrace).expect("reads").bytes()
        );
        let plain = root.join("logdir/plugins/profile/jax_mlp_small/vm.xplane.pb");
        assert!(open_gzip(&plain).expect("opens").is_none());
        let missing = root.join("pytorch/no-such.json.gz");
        match open_gzip(&missing) {
            Err(e @ StoreError::NotFound { .. }) => {
                assert!(e.to_string().contains("no-such.json.gz"), "{e}")
            }
            other => panic!("{:?}", other.map(|o| o.is_some())),
        }
    }

    /// A gzip head inflated a piece at a time answers as inflating the whole 256 KiB would: the
    /// rank found wherever its object falls (in the first piece, across the first piece's end,
    /// later), none past 256 KiB, and an object still open at the end of a piece read on.
    #[test]
    fn a_gzip_head_read_in_pieces_finds_what_a_whole_head_finds() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let gz = |text: &str| {
            let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(text.as_bytes()).expect("gzip");
            e.finish().expect("gzip")
        };
        let key = "\"distributedInfo\"";
        let step = SNIFF_FIRST_STEP as usize;
        for (pad, want) in [
            (0, (true, Some(7))),
            (step - 40, (true, Some(7))),
            // The key across the first piece's end, then its `}` in the next piece.
            (step - 8, (true, Some(7))),
            (step - 24, (true, Some(7))),
            (3 * step, (true, Some(7))),
            // Past 256 KiB: not looked at (nor is `traceEvents`, after it).
            (300 << 10, (false, None)),
        ] {
            // Padding as a member before the events (no `}` in it).
            let text = format!(
                "{{\"schemaVersion\": 1, \"pad\": \"{}\", {key}: {{\"backend\": \"nccl\", \"rank\": 7, \"world_size\": 8}}, \"traceEvents\": [{{\"ph\": \"X\"}}]}}",
                "x".repeat(pad)
            );
            assert_eq!(sniff_head(&gz(&text)), want, "pad {pad}");
            assert_eq!(sniff_head(text.as_bytes()), want, "pad {pad}, plain");
        }
        // The object's `}` far after the key (a long member in it): found, in a later piece.
        let text = format!(
            "{{{key}: {{\"backend\": \"nccl\", \"pad\": \"{}\", \"rank\": 3}}, \"traceEvents\": []}}",
            "y".repeat(2 * step)
        );
        assert_eq!(sniff_head(&gz(&text)), (true, Some(3)));
        // `traceEvents` after the settled rank, in a later piece: still a trace.
        let text = format!(
            "{{{key}: {{\"rank\": 5}}, \"pad\": \"{}\", \"traceEvents\": []}}",
            "z".repeat(2 * step)
        );
        assert_eq!(sniff_head(&gz(&text)), (true, Some(5)));
        // Not a trace: read to the end of what it holds.
        let text = format!("{{{key}: {{\"rank\": 5}}, \"runs\": [1, 2]}}");
        assert_eq!(sniff_head(&gz(&text)), (false, Some(5)));
    }

    #[test]
    fn json_that_is_not_a_trace_is_not_a_profile() {
        assert!(sniff_head(br#"[{"ph": "X", "ts": 1}]"#).0);
        assert!(sniff_head(b" [ ]").0);
        assert!(sniff_head(br#"{"traceEvents": []}"#).0);
        assert!(!sniff_head(br#"["tpu-training", "tpu-inference"]"#).0);
        assert!(!sniff_head(br#"{"runs": [1, 2]}"#).0);
        // Records that are not events (what examples/many_hosts.rs writes beside a session).
        assert!(!sniff_head(br#"[{"host": "host000", "offset_ns": 2662463}]"#).0);
    }

    #[test]
    fn ranks_in_file_names() {
        assert_eq!(
            rank_in_name("hta-cpu_only-rank-34.Jul_15.pt.trace.json"),
            Some(34)
        );
        assert_eq!(rank_in_name("trace_rank_3.json"), Some(3));
        assert_eq!(rank_in_name("RANK7.json"), Some(7));
        assert_eq!(rank_in_name("ranking.json"), None);
        assert_eq!(rank_in_name("worker0.json"), None);
    }

    #[test]
    fn follows_symbolic_links_once() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
            let root = fs::canonicalize(root).expect("fixtures");
            let tmp = std::env::temp_dir().join(format!("xlens-links-{}", std::process::id()));
            let _ = fs::remove_dir_all(&tmp);
            let profile = tmp.join("logs/plugins/profile");
            fs::create_dir_all(profile.join("by_file")).expect("mkdir");
            // A session folder reached through a link, a host file through a link, a loop, and
            // a dangling link.
            symlink(
                root.join("plugins/profile/jax_mlp_small"),
                profile.join("linked_session"),
            )
            .expect("link");
            symlink(
                root.join("plugins/profile/jax_tfm_small/vm.xplane.pb.gz"),
                profile.join("by_file/worker.xplane.pb.gz"),
            )
            .expect("link");
            symlink(&tmp, profile.join("loop")).expect("link");
            symlink(tmp.join("missing"), profile.join("dangling")).expect("link");
            let sessions = discover(&tmp.join("logs")).expect("discover");
            let mut names: Vec<(String, Vec<String>)> = sessions
                .iter()
                .map(|s| {
                    (
                        s.name.clone(),
                        s.hosts.iter().map(|h| h.host.clone()).collect(),
                    )
                })
                .collect();
            names.sort();
            assert_eq!(
                names,
                [
                    ("by_file".to_string(), vec!["worker".to_string()]),
                    ("linked_session".to_string(), vec!["vm".to_string()]),
                ]
            );
            let _ = fs::remove_dir_all(&tmp);
        }
    }

    #[test]
    fn session_names() {
        let root = Path::new("/logs");
        assert_eq!(
            session_name(root, Path::new("/logs/plugins/profile/2024_01_01")),
            "2024_01_01"
        );
        assert_eq!(
            session_name(root, Path::new("/logs/train/plugins/profile/run1")),
            "train/run1"
        );
        assert_eq!(session_name(root, Path::new("/logs/a/b")), "a/b");
        assert_eq!(session_name(root, Path::new("/logs")), "logs");
    }
}
