//! Runs the headless-browser tests in `tests/browser/` (node + playwright-core + Debian chromium)
//! against this build's `xlens` binary. Skips, saying why, where those are not installed;
//! `.ci/run` installs them.

use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "full tier (.ci/run): headless Chromium and playwright-core"]
fn browser_tests() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/browser");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let missing = [
        (!Path::new(&chromium).exists()).then(|| format!("no chromium at {chromium}")),
        (!dir.join("node_modules/playwright-core").exists())
            .then(|| "playwright-core not installed (npm ci in tests/browser)".to_string()),
        Command::new("node")
            .arg("--version")
            .output()
            .is_err()
            .then(|| "no node".to_string()),
    ];
    let missing: Vec<String> = missing.into_iter().flatten().collect();
    if !missing.is_empty() {
        assert!(
            std::env::var("CI").ok().as_deref() != Some("true"),
            "CI=true: the browser tests cannot run: {}",
            missing.join("; ")
        );
        eprintln!("skipping browser tests: {}", missing.join("; "));
        return;
    }
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/browser-artifacts");
    let out = Command::new("node")
        .arg("--test")
        .current_dir(&dir)
        .env("XLENS_BIN", env!("CARGO_BIN_EXE_xlens"))
        .env("CHROMIUM", &chromium)
        .env("XLENS_ARTIFACTS", &artifacts)
        .output()
        .expect("running node");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "browser tests failed:\n{text}");
}
