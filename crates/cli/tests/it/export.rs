//! `xlens export --html` from the command line: the window (median step, given, narrowed to the
//! event cap, with what was left said), a self-contained file (no URL to fetch anything from),
//! and a clear error for a bad run.

use std::process::Command;

fn logdir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir")
}

fn export(args: &[&str], out: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xlens"))
        .arg("export")
        .arg(logdir())
        .args(args)
        .arg("--html")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn windows_caps_and_errors() {
    let dir = std::env::temp_dir().join(format!("xlens-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("a.html");
    // Step 8 of jax_mlp_small (begin and duration from `xlens report`): 6.5516 ms, the median of
    // its ten step durations.
    let o = export(&["--run", "jax_mlp_small"], &f);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("trace window 157084739000..163636339000 ps (the median step (train 8))"),
        "{err}"
    );
    let html = std::fs::read_to_string(&f).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Nothing to load: no src/href to another file or site (anchors within the page only).
    for attr in ["src=\"", "href=\"http", "href=\"/static", "url("] {
        assert!(!html.contains(attr), "{attr} in the exported file");
    }
    // A given window, then the cap: the file says how much it holds.
    let o = export(
        &[
            "--run",
            "jax_mlp_small",
            "--start-ps",
            "110899272000",
            "--end-ps",
            "163786511000",
            "--max-events",
            "100",
        ],
        &f,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("(given; narrowed from 52887239000 ps to "),
        "{err}"
    );
    assert!(err.contains("100 of 3842 events embedded"), "{err}");
    let o = export(&["--run", "nope"], &f);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no run `nope`"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
