//! The Python package (`python/`): its wheel built with maturin, installed into a fresh virtual
//! environment, then its `xlens` command and `import xlens` tested there (`python/tests`, pytest:
//! every sample against the command line, errors, tables, serve, the example notebook).
//! Needs XLENS_PYTHON with maturin (`.ci/run` installs it); skipped otherwise, except under
//! CI=true, where that fails.

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
fn python_package() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ci = std::env::var("CI").ok().as_deref() == Some("true");
    let py = std::env::var("XLENS_PYTHON").ok();
    let has_maturin = py.as_ref().is_some_and(|p| {
        Command::new(p)
            .args(["-m", "maturin", "--version"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(py) = py.filter(|_| has_maturin) else {
        assert!(
            !ci,
            "CI=true: XLENS_PYTHON with maturin is needed to build and test the Python package"
        );
        eprintln!("skipping the Python package: set XLENS_PYTHON to a Python with maturin");
        return;
    };
    let target = root.join("target");
    let wheels = target.join("python-wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    run(
        Command::new(&py)
            .args(["-m", "maturin", "build", "--manifest-path"])
            .arg(root.join("python/Cargo.toml"))
            .arg("--out")
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", target.join("python")),
        "maturin build",
    );
    let wheel: PathBuf = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");
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
