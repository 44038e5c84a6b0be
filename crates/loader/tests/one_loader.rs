//! The loader is the only code that turns a file's bytes into a profile, and the crates call
//! one way, down the data flow (store → importers → loader → analysis → views). Checked on the
//! sources and manifests of the whole workspace, as `analysis/tests/it/layers.rs` checks the
//! analysis crate's own layers.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `.rs` files under `dir`, in its sub-folders too.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The calls that obtain a profile file's bytes or decode them: the store's readers and the
/// importers' entry points.
const BYTES_TO_PROFILE: &[&str] = &[
    "xlens_store::read(",
    "xlens_store::read_path(",
    "xlens_store::map(",
    "xlens_store::map_path(",
    "xlens_store::open_gzip(",
    "xlens_xspace::decode",
    "xlens_chrome::decode",
    "XSpace::decode(",
];

/// Lines of production code in `path` (before its `#[cfg(test)]` part, comments left out; none
/// in a module's `tests.rs`) that make one of the calls above.
fn bytes_to_profile_calls(path: &Path) -> Vec<String> {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return Vec::new();
    }
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim_start();
        if l.starts_with("#[cfg(test)]") {
            break;
        }
        if l.starts_with("//") {
            continue;
        }
        if let Some(c) = BYTES_TO_PROFILE.iter().find(|c| l.contains(*c)) {
            out.push(format!("{}:{}: {c}", path.display(), i + 1));
        }
    }
    out
}

/// Every production source of the workspace and the Python package, except the loader itself,
/// the store and importers that define these calls, and the fuzzer, whose job is to feed the
/// importers directly.
fn production_sources() -> Vec<PathBuf> {
    let root = workspace();
    let mut files = Vec::new();
    for e in std::fs::read_dir(root.join("crates"))
        .expect("crates")
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if ["loader", "store", "xspace", "chrome", "fuzz"].contains(&name.as_str()) {
            continue;
        }
        rust_files(&e.path().join("src"), &mut files);
    }
    rust_files(&root.join("python/src"), &mut files);
    files.sort();
    files
}

#[test]
fn only_the_loader_turns_bytes_into_a_profile() {
    let files = production_sources();
    assert!(files.len() > 100, "{} sources", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|f| bytes_to_profile_calls(f))
        .collect();
    assert!(
        found.is_empty(),
        "read or decode a profile file through xlens_loader::open instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_call_around_the_loader_is_found() {
    let dir = std::env::temp_dir().join(format!("xlens-one-loader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let f = dir.join("cache.rs");
    std::fs::write(
        &f,
        "// xlens_store::read_path( in a comment is fine\n\
         fn load(p: &Path) { let b = xlens_store::read_path(p, f); xlens_xspace::decode(&b) }\n\
         #[cfg(test)]\nmod tests { fn t() { xlens_store::map_path(p) } }\n",
    )
    .expect("write");
    let found = bytes_to_profile_calls(&f);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].ends_with(":2: xlens_store::read_path("),
        "{found:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The layer of each workspace crate, in the order data flows through them: a crate depends
/// only on crates of lower layers.
const LAYERS: &[(&str, u32)] = &[
    ("xlens-wire", 0),
    ("xlens-proto", 0),
    ("xlens-store", 0),
    ("xlens-model", 1),
    ("xlens-capture", 1),
    ("xlens-profiler", 1),
    ("xlens-xspace", 2),
    ("xlens-chrome", 2),
    ("xlens-loader", 3),
    ("xlens-analysis", 4),
    ("xlens-sql", 4),
    ("xlens-tables", 5),
    ("xlens-server", 5),
    ("xlens-distributed", 5),
    ("xlens-fuzz", 6),
    ("xlens", 7),
];

/// The `[dependencies]` of a manifest that are workspace crates (dev-dependencies left out:
/// tests may reach anywhere).
fn xlens_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_deps = l == "[dependencies]";
            continue;
        }
        if in_deps && l.starts_with("xlens-") {
            if let Some(name) = l.split(['=', ' ']).next() {
                out.push(name.to_string());
            }
        }
    }
    out
}

#[test]
fn crates_depend_only_on_lower_layers() {
    let layer = |n: &str| LAYERS.iter().find(|(c, _)| *c == n).map(|(_, l)| *l);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for e in std::fs::read_dir(workspace().join("crates"))
        .expect("crates")
        .flatten()
    {
        let Ok(manifest) = std::fs::read_to_string(e.path().join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .expect("a package name")
            .to_string();
        let Some(mine) = layer(&name) else {
            wrong.push(format!(
                "{name}: not in LAYERS; give it its place in the data flow"
            ));
            continue;
        };
        checked += 1;
        for d in xlens_dependencies(&manifest) {
            match layer(&d) {
                Some(l) if l < mine => {}
                Some(l) => wrong.push(format!("{name} (layer {mine}) depends on {d} (layer {l})")),
                None => wrong.push(format!("{name} depends on {d}, which is not in LAYERS")),
            }
        }
    }
    assert!(checked >= 14, "{checked} crates");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_dependencies_read_are_the_manifest_ones() {
    let m = "[package]\nname = \"xlens-x\"\n[dependencies]\nxlens-model = { workspace = true }\nserde = \"1\"\n[dev-dependencies]\nxlens-cli = { path = \"..\" }\n";
    assert_eq!(xlens_dependencies(m), vec!["xlens-model".to_string()]);
}
