//! The Python package (`python/`): the wheel that `.ci/run` builds with maturin
//! (`$XLENS_WHEEL`), installed into a fresh virtual environment, then its `xlens` command and
//! `import xlens` tested there (`python/tests`, pytest: every sample against the command line,
//! errors, tables, serve, the example notebook). Full tier: without `$XLENS_WHEEL` it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(c: &mut Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "full tier (.ci/run): the wheel built by .ci/run ($XLENS_WHEEL)"]
fn python_package() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let wheel = PathBuf::from(std::env::var_os("XLENS_WHEEL").expect(
        "XLENS_WHEEL names the wheel to test: `maturin build -m python/Cargo.toml` (as .ci/run does)",
    ));
    assert!(
        wheel.is_file(),
        "XLENS_WHEEL={} is not a file",
        wheel.display()
    );
    let py = std::env::var("XLENS_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let target = root.join("target");
    let venv = target.join("python-test-venv");
    let _ = std::fs::remove_dir_all(&venv);
    run(
        Command::new(&py).args(["-m", "venv"]).arg(&venv),
        "python -m venv",
    );
    let vpy = venv.join("bin/python");
    run(
        Command::new(&vpy)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg(&wheel)
            .args(["pytest", "pandas", "nbclient", "nbformat", "ipykernel"]),
        "pip install the wheel",
    );
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&vpy)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .env("PATH", path)
        .env("XLENS_NO_METADATA_CREDENTIALS", "1")
        .current_dir(&root)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "the Python tests failed:\n{text}");
}
