//! Log directories in buckets: `gs://`, `s3://` (`s3a://`), `az://` (`abfs[s]://`, `azure://`),
//! through the `object_store` crate.
//!
//! Discovery lists and never downloads a profile: folders are walked with prefix + delimiter
//! listings, many in flight, and below a `plugins/profile/` folder one flat listing returns every
//! session at once. Only the start of JSON files (256 KiB, one ranged GET) is read, to tell a
//! Chrome trace and its rank, as for local files.
//!
//! Reading a host file downloads it with parallel ranged GETs (all pinned to the ETag seen by a
//! HEAD, so a rewrite during the download fails instead of mixing versions), written at their
//! offsets straight into a file of the local cache; the caller then reads or maps that file as
//! any local file. The cache is keyed by URL, ETag and size, capped in size, least recently used
//! out: reopening is local-speed, a rewritten object is fetched again.
//!
//! Credentials and endpoints come the standard ways, from the variables the object_store
//! builders read (`AWS_*`, `GOOGLE_*`, `AZURE_*`; `GOOGLE_BASE_URL` / `AWS_ENDPOINT` /
//! `AZURE_STORAGE_USE_EMULATOR` point at emulators), plus [`set_anonymous`] for public buckets.

use crate::cache_dir;
use crate::{classify, rank_in_name, sniff_head, Format, Found, HostFile, StoreError};
use futures::stream::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjPath;
use object_store::{GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Bytes per ranged GET while downloading (`XLENS_FETCH_CHUNK_BYTES` overrides it, so that
/// tests on small files still download in many ranges).
const CHUNK: u64 = 8 << 20;

fn chunk_bytes() -> u64 {
    std::env::var("XLENS_FETCH_CHUNK_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &u64| n >= 4096)
        .unwrap_or(CHUNK)
}
/// Ranged GETs in flight for one file.
const IN_FLIGHT: usize = 8;
/// Listings in flight while walking folders.
const LIST_IN_FLIGHT: usize = 16;
/// Objects listed before discovery stops (and says so).
const MAX_OBJECTS: usize = 1_000_000;
/// How much of a JSON file is read to tell whether it is a trace.
const SNIFF: u64 = 256 << 10;

static ANONYMOUS: AtomicBool = AtomicBool::new(false);

/// Read buckets without credentials (public buckets): requests are not signed.
pub fn set_anonymous(yes: bool) {
    ANONYMOUS.store(yes, Ordering::Relaxed);
}

/// Progress of one download, as reported to the hook set with [`set_progress`].
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    pub url: &'a str,
    pub done: u64,
    pub total: u64,
}

type Hook = Box<dyn Fn(&Progress<'_>) + Send + Sync>;
static PROGRESS: OnceLock<Hook> = OnceLock::new();

/// Installs the function told about download progress (a terminal bar, a server's status).
/// Only the first call has an effect.
pub fn set_progress(hook: impl Fn(&Progress<'_>) + Send + Sync + 'static) {
    let _ = PROGRESS.set(Box::new(hook));
}

fn report(url: &str, done: u64, total: u64) {
    if let Some(h) = PROGRESS.get() {
        h(&Progress { url, done, total });
    }
}

fn runtime() -> Result<&'static tokio::runtime::Runtime, StoreError> {
    static RT: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("xlens-store")
            .enable_all()
            .build()
            .ok()
    })
    .as_ref()
    .ok_or_else(|| StoreError::Remote {
        url: String::new(),
        what: "could not start the threads that talk to the bucket".into(),
    })
}

/// Runs `fut` on the store's own runtime and waits for it; callable from any thread, including
/// one of another runtime (a server's blocking task).
fn block_on<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, StoreError> {
    let rt = runtime()?;
    let (tx, rx) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().map_err(|_| StoreError::Remote {
        url: String::new(),
        what: "the bucket request was abandoned".into(),
    })
}

/// A parsed bucket URL.
struct Url {
    /// `gs://bucket`, without a trailing slash.
    base: String,
    /// The key prefix inside the bucket, without leading or trailing slashes.
    key: String,
    store: Arc<dyn ObjectStore>,
}

impl Url {
    fn of(&self, key: &str) -> String {
        format!("{}/{}", self.base, key)
    }
}

/// The scheme and rest of `s` when it is a bucket URL this build can read.
pub(crate) fn split_url(s: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = s.split_once("://")?;
    matches!(
        scheme,
        "gs" | "s3" | "s3a" | "az" | "abfs" | "abfss" | "azure"
    )
    .then_some((scheme, rest))
}

fn explicit_credentials(scheme: &str) -> bool {
    let has = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    match scheme {
        "gs" => {
            [
                "GOOGLE_SERVICE_ACCOUNT",
                "GOOGLE_SERVICE_ACCOUNT_PATH",
                "GOOGLE_SERVICE_ACCOUNT_KEY",
                "GOOGLE_APPLICATION_CREDENTIALS",
                "GOOGLE_BEARER_TOKEN",
                "SERVICE_ACCOUNT",
            ]
            .iter()
            .any(|k| has(k))
                || std::env::var("GOOGLE_SKIP_SIGNATURE").is_ok_and(|v| v == "true")
                || std::env::var_os("HOME").is_some_and(|h| {
                    Path::new(&h)
                        .join(".config/gcloud/application_default_credentials.json")
                        .is_file()
                })
        }
        "s3" | "s3a" => {
            has("AWS_ACCESS_KEY_ID")
                || std::env::var("AWS_SKIP_SIGNATURE").is_ok_and(|v| v == "true")
        }
        _ => {
            [
                "AZURE_STORAGE_ACCOUNT_KEY",
                "AZURE_STORAGE_ACCESS_KEY",
                "AZURE_STORAGE_SAS_KEY",
                "AZURE_STORAGE_TOKEN",
                "AZURE_CLIENT_SECRET",
            ]
            .iter()
            .any(|k| has(k))
                || std::env::var("AZURE_STORAGE_USE_EMULATOR").is_ok_and(|v| v == "true")
                || std::env::var("AZURE_SKIP_SIGNATURE").is_ok_and(|v| v == "true")
        }
    }
}

fn open(url: &str) -> Result<Url, StoreError> {
    let err = |what: String| StoreError::Remote {
        url: url.to_string(),
        what,
    };
    let (scheme, rest) = split_url(url).ok_or_else(|| err("not a bucket URL".into()))?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(err("no bucket name after the scheme".into()));
    }
    let anonymous = ANONYMOUS.load(Ordering::Relaxed);
    // Tests set this so that a client never falls back to a cloud metadata address for
    // credentials (it is not on this machine).
    if !anonymous
        && std::env::var_os("XLENS_NO_METADATA_CREDENTIALS").is_some()
        && !explicit_credentials(scheme)
    {
        return Err(err(
            "no credentials found in the environment, and XLENS_NO_METADATA_CREDENTIALS forbids asking a metadata server"
                .into(),
        ));
    }
    let base = format!("{scheme}://{bucket}");
    type Clients = Mutex<HashMap<(String, bool), Arc<dyn ObjectStore>>>;
    static CLIENTS: OnceLock<Clients> = OnceLock::new();
    let clients = CLIENTS.get_or_init(Default::default);
    let cached = clients
        .lock()
        .ok()
        .and_then(|m| m.get(&(base.clone(), anonymous)).cloned());
    let store: Arc<dyn ObjectStore> = match cached {
        Some(s) => s,
        None => {
            let root = format!("{base}/");
            // TLS through ring. Said once for the process, so that a build in which another
            // crate turns on a second rustls provider still has one to use.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let built: Result<Arc<dyn ObjectStore>, object_store::Error> = match scheme {
                "gs" => object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_url(&root)
                    .with_skip_signature(anonymous)
                    .build()
                    .map(|s| Arc::new(s) as _),
                "s3" | "s3a" => object_store::aws::AmazonS3Builder::from_env()
                    .with_url(&root)
                    .with_skip_signature(anonymous)
                    .build()
                    .map(|s| Arc::new(s) as _),
                _ => object_store::azure::MicrosoftAzureBuilder::from_env()
                    .with_url(&root)
                    .with_skip_signature(anonymous)
                    .build()
                    .map(|s| Arc::new(s) as _),
            };
            let s = built.map_err(|e| err(describe(&e)))?;
            if let Ok(mut m) = clients.lock() {
                m.insert((base.clone(), anonymous), s.clone());
            }
            s
        }
    };
    Ok(Url {
        base,
        key: key.trim_matches('/').to_string(),
        store,
    })
}

/// What went wrong, in words for a person; the store's own message follows.
fn describe(e: &object_store::Error) -> String {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } => format!("no such object or bucket ({e})"),
        E::PermissionDenied { .. } => format!(
            "permission denied: the credentials in use may not read this bucket ({e})"
        ),
        E::Unauthenticated { .. } => format!(
            "not authenticated: no valid credentials (set them as for gcloud/aws/az, or pass --anonymous for a public bucket) ({e})"
        ),
        E::Precondition { .. } => {
            "the object changed while it was being read; open it again".to_string()
        }
        E::UnknownConfigurationKey { .. } => format!("bad configuration ({e})"),
        _ if asked_metadata(&e.to_string()) => format!(
            "no credentials: none set in the environment, and this machine's cloud metadata server (which gives a cloud VM its own) did not give any (set them as for gcloud/aws/az, or pass --anonymous for a public bucket) ({e})"
        ),
        _ => e.to_string(),
    }
}

/// Whether a client's message says it asked a cloud metadata server (the last place the
/// clients look for credentials): AWS's and Azure's link-local address, ECS's, or GCE's name.
fn asked_metadata(message: &str) -> bool {
    [
        "169.254.169.254",
        "169.254.170.2",
        "metadata.google.internal",
    ]
    .iter()
    .any(|a| message.contains(a))
}

/// Lists everything profile-like at or below `url` and groups it as local discovery does.
pub(crate) fn discover(url: &str) -> Result<Found, StoreError> {
    let u = open(url)?;
    let url_s = url.to_string();
    block_on(async move { discover_async(u, url_s).await })?
}

async fn discover_async(u: Url, url: String) -> Result<Found, StoreError> {
    let err = |e: object_store::Error| StoreError::Remote {
        url: url.clone(),
        what: describe(&e),
    };
    let mut found = Found::default();
    // One object named by the URL itself.
    if !u.key.is_empty() && !url.ends_with('/') && classify(file_tail(&u.key)).is_some() {
        match u.store.head(&ObjPath::from(u.key.as_str())).await {
            Ok(meta) => {
                let files = vec![meta];
                add_objects(&u, files, &mut found).await;
                if !found.sessions.is_empty() {
                    return Ok(found);
                }
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(err(e)),
        }
    }
    let mut objects = Vec::new();
    let mut truncated = false;
    let mut level = vec![(u.key.clone(), 0usize)];
    let mut first = true;
    while !level.is_empty() {
        let store = u.store.clone();
        let results: Vec<_> = futures::stream::iter(level.drain(..).map(|(dir, depth)| {
            let store = store.clone();
            async move {
                let prefix = (!dir.is_empty()).then(|| ObjPath::from(dir.as_str()));
                // Below `plugins/profile/` every session is wanted: one flat listing.
                if dir.ends_with("plugins/profile") {
                    let all: Vec<ObjectMeta> = store
                        .list(prefix.as_ref())
                        .take(MAX_OBJECTS)
                        .try_collect()
                        .await?;
                    Ok::<_, object_store::Error>((all, Vec::new(), depth))
                } else {
                    let r = store.list_with_delimiter(prefix.as_ref()).await?;
                    let dirs = r
                        .common_prefixes
                        .into_iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>();
                    Ok((r.objects, dirs, depth))
                }
            }
        }))
        .buffer_unordered(LIST_IN_FLIGHT)
        .collect()
        .await;
        for r in results {
            match r {
                Ok((objs, dirs, depth)) => {
                    found.dirs += 1 + dirs.len();
                    objects.extend(objs);
                    for d in dirs {
                        let hidden = file_tail(&d).starts_with('.');
                        if !hidden && depth < crate::MAX_DEPTH {
                            level.push((d, depth + 1));
                        }
                    }
                }
                // The folder named by the URL must be listable; below it, an unreadable
                // folder is skipped, as on disk.
                Err(e) if first => return Err(err(e)),
                Err(_) => {}
            }
        }
        first = false;
        if objects.len() >= MAX_OBJECTS {
            truncated = true;
            break;
        }
    }
    level.clear();
    add_objects(&u, objects, &mut found).await;
    if truncated {
        // Rare enough (a million objects below the URL) that a line on stderr is the place.
        eprintln!(
            "xlens: {url}: stopped listing after {MAX_OBJECTS} objects; sessions beyond them are not shown (open a deeper prefix)"
        );
    }
    Ok(found)
}

fn file_tail(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// Turns listed objects into host files grouped by folder, reading the head of JSON files.
async fn add_objects(u: &Url, objects: Vec<ObjectMeta>, found: &mut Found) {
    let mut by_dir: std::collections::BTreeMap<String, Vec<(ObjectMeta, String, Format)>> =
        Default::default();
    let mut chrome = Vec::new();
    for meta in objects {
        let key = meta.location.to_string();
        let name = file_tail(&key).to_string();
        let dir = key
            .rsplit_once('/')
            .map(|(d, _)| d.to_string())
            .unwrap_or_default();
        match classify(&name) {
            Some((host, format)) => {
                if format == Format::ChromeTrace {
                    chrome.push(key.clone());
                }
                by_dir.entry(dir).or_default().push((meta, host, format));
            }
            None => {
                found.other_files += 1;
                if found.examples.len() < 3 {
                    found.examples.push(name);
                }
            }
        }
    }
    // The first 256 KiB of each JSON file: is it a trace, and which rank.
    let store = u.store.clone();
    let heads: HashMap<String, (bool, Option<i64>)> = futures::stream::iter(chrome)
        .map(|key| {
            let store = store.clone();
            async move {
                let p = ObjPath::from(key.as_str());
                let head = match store.head(&p).await {
                    Ok(m) => store.get_range(&p, 0..m.size.min(SNIFF)).await.ok(),
                    Err(_) => None,
                };
                let sniffed = head.map(|b| sniff_head(&b)).unwrap_or((false, None));
                (key, sniffed)
            }
        })
        .buffer_unordered(LIST_IN_FLIGHT)
        .collect()
        .await;
    for (dir, files) in by_dir {
        let mut hosts = Vec::new();
        let mut newest = 0u64;
        for (meta, host, format) in files {
            let key = meta.location.to_string();
            let name = file_tail(&key).to_string();
            let mut rank = None;
            if format == Format::ChromeTrace {
                match heads.get(&key) {
                    Some((true, r)) => rank = r.or_else(|| rank_in_name(&name)),
                    _ => {
                        found.other_files += 1;
                        if found.examples.len() < 3 {
                            found.examples.push(name);
                        }
                        continue;
                    }
                }
            }
            newest = newest.max(u64::try_from(meta.last_modified.timestamp()).unwrap_or(0));
            hosts.push(HostFile {
                host,
                path: PathBuf::from(u.of(&key)),
                bytes: meta.size,
                format,
                rank,
            });
        }
        if !hosts.is_empty() {
            found
                .sessions
                .push((PathBuf::from(u.of(&dir)), hosts, newest));
        }
    }
}

/// The cache's size cap: `XLENS_CACHE_MAX_BYTES`, else 10 GiB.
fn cache_cap() -> u64 {
    std::env::var("XLENS_CACHE_MAX_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10 << 30)
}

/// FNV-1a, 64 bits: a stable name for a cache entry.
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Brings the object at `url` into the local cache (unless the cached copy is current) and
/// returns the cached file's path.
pub(crate) fn fetch(url: &str) -> Result<PathBuf, StoreError> {
    let u = open(url)?;
    let url_s = url.to_string();
    block_on(async move { fetch_async(u, url_s).await })?
}

async fn fetch_async(u: Url, url: String) -> Result<PathBuf, StoreError> {
    let err = |e: object_store::Error| StoreError::Remote {
        url: url.clone(),
        what: describe(&e),
    };
    let io = |e: std::io::Error| StoreError::Io {
        path: cache_dir(),
        source: e,
    };
    let loc = ObjPath::from(u.key.as_str());
    let meta = u.store.head(&loc).await.map_err(err)?;
    let version = meta
        .e_tag
        .clone()
        .or_else(|| meta.version.clone())
        .unwrap_or_else(|| meta.last_modified.to_rfc3339());
    let dir = cache_dir().join("objects");
    std::fs::create_dir_all(&dir).map_err(io)?;
    let url_key = format!("{:016x}", fnv(&[url.as_bytes()]));
    let name = format!(
        "{url_key}-{:016x}",
        fnv(&[version.as_bytes(), &meta.size.to_le_bytes()])
    );
    let path = dir.join(&name);
    if let Ok(m) = std::fs::metadata(&path) {
        if m.len() == meta.size {
            // Touched, so that eviction takes the least recently used first.
            if let Ok(f) = std::fs::File::options().append(true).open(&path) {
                let _ = f.set_modified(std::time::SystemTime::now());
            }
            report(&url, meta.size, meta.size);
            return Ok(path);
        }
    }
    let tmp = dir.join(format!("{name}.part{}", std::process::id()));
    let file = std::fs::File::create(&tmp).map_err(io)?;
    file.set_len(meta.size).map_err(io)?;
    let file = Arc::new(file);
    let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let chunk = chunk_bytes();
    let chunks: Vec<(u64, u64)> = (0..meta.size.div_ceil(chunk))
        .map(|i| (i * chunk, ((i + 1) * chunk).min(meta.size)))
        .collect();
    let etag = meta.e_tag.clone();
    let total = meta.size;
    report(&url, 0, total);
    let results: Vec<Result<(), StoreError>> = futures::stream::iter(chunks)
        .map(|(start, end)| {
            let store = u.store.clone();
            let loc = loc.clone();
            let file = file.clone();
            let done = done.clone();
            let etag = etag.clone();
            let url = url.clone();
            async move {
                let opts = GetOptions {
                    if_match: etag,
                    range: Some((start..end).into()),
                    ..Default::default()
                };
                let r = store
                    .get_opts(&loc, opts)
                    .await
                    .map_err(|e| StoreError::Remote {
                        url: url.clone(),
                        what: describe(&e),
                    })?;
                let mut body = r.into_stream();
                let mut at = start;
                while let Some(piece) = body.next().await {
                    let piece = piece.map_err(|e| StoreError::Remote {
                        url: url.clone(),
                        what: describe(&e),
                    })?;
                    if at + piece.len() as u64 > end {
                        return Err(StoreError::Remote {
                            url: url.clone(),
                            what: "the bucket sent more bytes than were asked for".into(),
                        });
                    }
                    write_at(&file, &piece, at).map_err(|e| StoreError::Io {
                        path: cache_dir(),
                        source: e,
                    })?;
                    at += piece.len() as u64;
                    let d =
                        done.fetch_add(piece.len() as u64, Ordering::Relaxed) + piece.len() as u64;
                    report(&url, d, total);
                }
                if at != end {
                    return Err(StoreError::Remote {
                        url,
                        what: format!(
                            "the download stopped early: {} of {} bytes of a range",
                            at - start,
                            end - start
                        ),
                    });
                }
                Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    if let Some(e) = results.into_iter().find_map(Result::err) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    drop(file);
    // Older versions of this URL go; then the least recently used entries over the cap.
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&url_key) && n != name && !n.contains(".part") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    std::fs::rename(&tmp, &path).map_err(io)?;
    evict(&dir, cache_cap(), &path);
    Ok(path)
}

#[cfg(unix)]
fn write_at(f: &std::fs::File, buf: &[u8], at: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.write_all_at(buf, at)
}

#[cfg(not(unix))]
fn write_at(f: &std::fs::File, buf: &[u8], at: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = f;
    f.seek(SeekFrom::Start(at))?;
    f.write_all(buf)
}

/// Removes the least recently used cache entries until the total is at most `cap` (never
/// `keep`, the entry just written).
fn evict(dir: &Path, cap: u64, keep: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            m.is_file().then(|| {
                (
                    m.modified().unwrap_or(std::time::UNIX_EPOCH),
                    m.len(),
                    e.path(),
                )
            })
        })
        .collect();
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, p) in entries {
        if total <= cap {
            break;
        }
        if p != keep && std::fs::remove_file(&p).is_ok() {
            total -= len;
        }
    }
}

/// Uploads the local file `from` to `url` (multipart, so large files stream).
pub fn upload(from: &Path, url: &str) -> Result<(), StoreError> {
    let u = open(url)?;
    let from = from.to_path_buf();
    let url_s = url.to_string();
    block_on(async move {
        let err = |e: object_store::Error| StoreError::Remote {
            url: url_s.clone(),
            what: describe(&e),
        };
        let io = |e| StoreError::Io {
            path: from.clone(),
            source: e,
        };
        let loc = ObjPath::from(u.key.as_str());
        let upload = u.store.put_multipart(&loc).await.map_err(err)?;
        let mut w = object_store::WriteMultipart::new_with_chunk_size(upload, CHUNK as usize);
        let mut f = std::fs::File::open(&from).map_err(io)?;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = std::io::Read::read(&mut f, &mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            w.wait_for_capacity(IN_FLIGHT).await.map_err(err)?;
            w.write(&buf[..n]);
        }
        w.finish().await.map_err(err)?;
        Ok(())
    })?
}

#[cfg(test)]
mod tests {
    use super::describe;

    fn generic(source: &str) -> object_store::Error {
        object_store::Error::Generic {
            store: "S3",
            source: source.to_string().into(),
        }
    }

    /// A client that found no credentials and was refused by the metadata server (the message
    /// an S3 client gave on a machine with no route to it) is told as missing credentials.
    #[test]
    fn a_refused_metadata_server_reads_as_missing_credentials() {
        let e = generic(
            "Error performing PUT http://169.254.169.254/latest/api/token in 1.1ms - Server returned non-2xx status code: 403 Forbidden",
        );
        let d = describe(&e);
        assert!(d.starts_with("no credentials: "), "{d}");
        assert!(d.contains("--anonymous"), "{d}");
        assert!(d.contains("169.254.169.254/latest/api/token"), "{d}");
        let gce = generic("error sending request for url (http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token)");
        assert!(describe(&gce).starts_with("no credentials: "));
        // Another failure keeps the client's own words alone.
        let other = generic("error sending request for url (http://127.0.0.1:9/b/x)");
        assert_eq!(describe(&other), other.to_string());
    }
}
