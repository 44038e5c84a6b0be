//! Sessions and host files below a path: a log directory, one session, one file or a bucket URL.

use super::*;

/// Names the Chrome-trace hosts of one session by rank where that is known and unique, and
/// drops a Chrome trace whose host also has an XSpace file (JAX and TensorFlow write
/// `<host>.trace.json.gz` beside `<host>.xplane.pb`: the same profile, with less in it).
pub(super) fn settle_hosts(hosts: &mut Vec<HostFile>) {
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
pub(super) fn local(path: &Path) -> &Path {
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
pub(super) fn settle(path: &Path, found: Found) -> Result<Vec<Session>, StoreError> {
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

pub(super) fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(super) fn mtime(meta: &fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(super) fn session_name(root: &Path, dir: &Path) -> String {
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
    pub(super) fn describe_other(&self) -> String {
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
pub(super) fn walk(dir: &Path, depth: usize, found: &mut Found) -> Result<(), StoreError> {
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
