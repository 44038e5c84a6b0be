//! Seeds from the repository's real fixtures: the XSpace profiles and invalid files, and the
//! PyTorch Chrome traces, gunzipped, plus smaller seeds derived from them structurally (so most
//! executions run on a few KB).

use anyhow::{Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::havoc::MAX_INPUT;

/// Derived seeds larger than this are left out (executions stay fast).
pub const MAX_SEED: usize = 96 * 1024;

/// The repository's `fixtures/` folder (`XLENS_FIXTURES` overrides it).
pub fn fixtures_dir() -> PathBuf {
    std::env::var_os("XLENS_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"))
}

/// A file's bytes, gunzipped when its name ends in `.gz`.
pub fn read_maybe_gz(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .with_context(|| format!("gunzipping {}", path.display()))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Files under `dir` (recursively) whose name satisfies `want`, sorted.
pub fn files_under(dir: &Path, want: &dyn Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| want(&n.to_string_lossy())) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The real XSpace profiles (`logdir/plugins/profile/*/*.xplane.pb[.gz]`), decompressed.
pub fn xspace_fixtures(fixtures: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let files = files_under(&fixtures.join("logdir/plugins/profile"), &|n| {
        n.ends_with(".xplane.pb") || n.ends_with(".xplane.pb.gz")
    })?;
    files
        .into_iter()
        .map(|p| read_maybe_gz(&p).map(|b| (p, b)))
        .collect()
}

/// XSpace seeds: every real profile cut down several ways (a few lines and events per plane, a
/// plane at a time), the invalid fixtures whole and in part.
pub fn xspace_seeds(fixtures: &Path) -> Result<Vec<Vec<u8>>> {
    use crate::proto::{encode, parse, shrink, Shrink, Ty};
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for (path, bytes) in xspace_fixtures(fixtures)? {
        let tree = parse(&bytes, Ty::Space)
            .with_context(|| format!("{} is not well-formed protobuf", path.display()))?;
        let planes = tree
            .iter()
            .filter(|f| matches!(f.val, crate::proto::Val::Msg(Ty::Plane, _)))
            .count();
        let all = Shrink {
            skip_planes: 0,
            planes: usize::MAX,
            lines: 1,
            events: 2,
            orphan_metadata: 2,
            max_blob: 0,
        };
        let mut variants = vec![
            all,
            Shrink {
                lines: 2,
                events: 8,
                orphan_metadata: 4,
                max_blob: 4096,
                ..all
            },
            Shrink {
                lines: 4,
                events: 32,
                orphan_metadata: 8,
                max_blob: 64 * 1024,
                ..all
            },
        ];
        for p in 0..planes {
            variants.push(Shrink {
                skip_planes: p,
                planes: 1,
                lines: 8,
                events: 64,
                orphan_metadata: 16,
                max_blob: 16 * 1024,
            });
        }
        for v in variants {
            let mut out = Vec::new();
            encode(&shrink(&tree, &v), &mut out);
            if out.len() <= MAX_SEED {
                seeds.push(out);
            }
        }
    }
    let invalid = fixtures.join("invalid");
    if invalid.is_dir() {
        for p in files_under(&invalid, &|_| true)? {
            let b = read_maybe_gz(&p)?;
            seeds.push(b[..b.len().min(4096)].to_vec());
            if b.len() <= MAX_INPUT {
                seeds.push(b);
            }
        }
    }
    seeds.sort();
    seeds.dedup();
    Ok(seeds)
}

/// The real Chrome traces (`pytorch/**/*.json[.gz]`), decompressed.
pub fn chrome_fixtures(fixtures: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let files = files_under(&fixtures.join("pytorch"), &|n| {
        n.ends_with(".json") || n.ends_with(".json.gz")
    })?;
    files
        .into_iter()
        .map(|p| read_maybe_gz(&p).map(|b| (p, b)))
        .collect()
}

/// Chrome seeds: each real trace whole when small enough, and windows of its events (with its
/// metadata events and top-level keys) at its start, middle and end.
pub fn chrome_seeds(fixtures: &Path) -> Result<Vec<Vec<u8>>> {
    use crate::json::{parse, window, write};
    let mut seeds = Vec::new();
    for (path, bytes) in chrome_fixtures(fixtures)? {
        let doc = parse(&bytes)
            .with_context(|| format!("{} is not JSON (or too deep)", path.display()))?;
        if bytes.len() <= MAX_SEED {
            seeds.push(bytes.clone());
        }
        let n = match &doc {
            crate::json::J::Obj(_) | crate::json::J::Arr(_) => {
                let mut d = doc.clone();
                crate::json::events_mut(&mut d).map_or(0, |e| e.len())
            }
            _ => 0,
        };
        for count in [1usize, 4, 16, 64, 256] {
            for offset in [0, n / 2, n.saturating_sub(count)] {
                let mut out = Vec::new();
                write(&window(&doc, offset, count), &mut out);
                if out.len() <= MAX_SEED {
                    seeds.push(out);
                }
            }
        }
    }
    seeds.sort();
    seeds.dedup();
    Ok(seeds)
}
