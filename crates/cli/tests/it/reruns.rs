//! Two runs of any tool on the same file give byte-identical answers: every tool, in JSON, on
//! every profile of the fixtures and of `../shared/samples`, each run a fresh process. The CPU's
//! measured peaks (the roofs of CPU profiles' op tools) are what used to differ: they are now
//! measured once per machine and kept in the cache directory, which starts empty here so that the
//! first run measures and the second reads.
//!
//! The fast tier runs the XSpace profiles (whose CPU op tools read the measured peaks); the full
//! tier adds the PyTorch traces.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn profiles(pytorch: bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    let runs = root().join("fixtures/logdir/plugins/profile");
    for e in std::fs::read_dir(&runs).unwrap().flatten() {
        if e.path().is_dir() && std::fs::read_dir(e.path()).unwrap().next().is_some() {
            v.push(e.path());
        }
    }
    let shared = root().join("../shared/samples");
    if !shared.is_dir() {
        assert!(
            std::env::var("CI").is_err(),
            "{} is missing (CI needs ../shared beside the checkout)",
            shared.display()
        );
    } else {
        for kind in ["jax", "tf"] {
            let d = shared.join(kind).join("plugins/profile");
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                v.push(e.path());
            }
        }
        for e in std::fs::read_dir(shared.join("pytorch")).unwrap().flatten() {
            if pytorch && e.path().to_string_lossy().ends_with(".json.gz") {
                v.push(e.path());
            }
        }
    }
    v.sort();
    v
}

fn run(cache: &Path, args: &[&str]) -> (Option<i32>, Vec<u8>) {
    let out = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(args)
        .env("XLENS_CACHE_DIR", cache)
        .output()
        .unwrap();
    (out.status.code(), out.stdout)
}

#[test]
fn every_tool_gives_the_same_bytes_twice_on_xspace() {
    same_bytes_twice(profiles(false), "xspace");
}

#[test]
#[ignore = "full tier: about two minutes on two cores"]
fn every_tool_gives_the_same_bytes_twice_on_every_sample() {
    same_bytes_twice(profiles(true), "all");
}

fn same_bytes_twice(profiles: Vec<PathBuf>, name: &str) {
    let cache = std::env::temp_dir().join(format!("xlens-reruns-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let (code, listed) = run(&cache, &["tools"]);
    assert_eq!(code, Some(0));
    let tools: Vec<String> = String::from_utf8_lossy(&listed)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(tools.len() >= 19, "{tools:?}");
    assert!(profiles.len() >= 6, "{profiles:?}");
    let jobs: Vec<(String, PathBuf)> = profiles
        .iter()
        .flat_map(|p| tools.iter().map(move |t| (t.clone(), p.clone())))
        .collect();
    // Two workers, each taking every other job.
    let differ: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let (jobs, cache) = (&jobs, &cache);
                s.spawn(move || {
                    let mut bad = Vec::new();
                    for (tool, path) in jobs.iter().skip(w).step_by(2) {
                        let p = path.to_str().unwrap();
                        let args = ["tool", tool.as_str(), p, "--json"];
                        let first = run(cache, &args);
                        let second = run(cache, &args);
                        if first != second {
                            // Where the answers part, for the failure message.
                            let at = first
                                .1
                                .iter()
                                .zip(&second.1)
                                .position(|(a, b)| a != b)
                                .unwrap_or(first.1.len().min(second.1.len()));
                            let around = |b: &[u8]| {
                                String::from_utf8_lossy(
                                    &b[at.saturating_sub(80)..(at + 80).min(b.len())],
                                )
                                .into_owned()
                            };
                            bad.push(format!(
                                "{tool} {p} (exit {:?} / {:?}): ...{}... vs ...{}...",
                                first.0,
                                second.0,
                                around(&first.1),
                                around(&second.1)
                            ));
                        }
                    }
                    bad
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        cache.join("host_peaks.debug.json").is_file() || cache.join("host_peaks.json").is_file(),
        "the CPU's peaks are kept in the cache"
    );
    let _ = std::fs::remove_dir_all(&cache);
    assert!(
        differ.is_empty(),
        "{} of {} tool runs answered differently the second time:\n{}",
        differ.len(),
        jobs.len(),
        differ.join("\n")
    );
}
