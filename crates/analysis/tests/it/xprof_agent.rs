//! xlens against XProf's agent CLI (`xprof`, 2.24.2) on the same sessions: the answers XProf
//! gave, made by `fixtures/expected/xprof/agent/make.py` with `xprof` itself, on the fixtures
//! and on `../shared/samples` (whose absence fails in CI).

use crate::common::{open_run, root, run_tool};
use std::path::PathBuf;

/// The log directory of a reference's tag (see make.py), when it is here.
fn logdir(tag: &str) -> Option<PathBuf> {
    let samples = root().join("../shared/samples");
    let dir = match tag {
        "fixtures" => root().join("fixtures/logdir"),
        "xprof-testdata" => samples.join("xprof-testdata/logdir"),
        "jax" => samples.join("jax"),
        "tf" => samples.join("tf"),
        other => panic!("unknown tag {other}"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is missing in CI",
        dir.display()
    );
    eprintln!("SKIPPED: {} is not here", dir.display());
    None
}

/// Each reference of `command`: (tag, session, XProf's answer).
fn references(command: &str) -> Vec<(String, String, serde_json::Value)> {
    let dir = root().join("fixtures/expected/xprof/agent").join(command);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .expect("references")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let tag = ["xprof-testdata", "fixtures", "jax", "tf"]
                .into_iter()
                .find(|t| stem.starts_with(&format!("{t}-")))
                .expect("a known tag");
            let session = stem[tag.len() + 1..].to_string();
            let v = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (tag.to_string(), session, v)
        })
        .collect();
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

#[test]
fn hlo_modules_are_the_modules_xprof_lists() {
    let refs = references("list_hlo_modules");
    assert!(refs.len() >= 8, "{}", refs.len());
    let mut compared = 0;
    for (tag, session, want) in refs {
        let Some(dir) = logdir(&tag) else { continue };
        let session_dir = dir.join("plugins/profile").join(&session);
        let run = open_run(xlens_store::discover(&session_dir).expect("discover"));
        let out = run_tool("hlo_modules", &run, &[]).json().unwrap();
        // XProf reads one host file of a session (`files_used`): the same host here.
        let used = want["capture"]["files_used"][0].as_str().unwrap();
        let host = out["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["host"] == used)
            .unwrap_or_else(|| panic!("{tag}/{session}: no host {used}"));
        let names: Vec<&str> = host["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        let xprof: Vec<&str> = want["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert_eq!(names, xprof, "{tag}/{session}");
        assert_eq!(host["count"], want["count"], "{tag}/{session}");
        assert_eq!(host["errors"], serde_json::json!([]), "{tag}/{session}");
        // None: it says why.
        assert_eq!(
            host["note"].is_string(),
            xprof.is_empty(),
            "{tag}/{session}"
        );
        compared += 1;
    }
    eprintln!("{compared} sessions compared");
}
