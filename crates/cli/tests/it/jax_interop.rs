//! Interop with a real peer: a JAX training loop serving `jax.profiler.start_server`
//! (`tests/interop/jax_loop.py`), captured with `xlens capture` and read back with
//! `xlens report --json`.
//!
//! Full tier: needs Python with jax, `$XLENS_PYTHON` (what `.ci/run` sets up), else `python3`;
//! fails when `import jax` fails there.

use crate::free_port;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn python() -> String {
    std::env::var("XLENS_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn has_jax(py: &str) -> bool {
    Command::new(py)
        .args(["-c", "import jax"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Ends the loop when the test ends, however it ends.
struct Killer(Child);
impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "full tier (.ci/run): Python with jax ($XLENS_PYTHON)"]
fn capture_a_real_jax_job() {
    let py = python();
    assert!(
        has_jax(&py),
        "`{py} -c 'import jax'` failed; set XLENS_PYTHON to a Python with jax (as .ci/run does)"
    );
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let port = free_port();
    let mut child = Command::new(&py)
        .arg(root.join("tests/interop/jax_loop.py"))
        .args(["--port", &port.to_string(), "--seconds", "60"])
        .env("JAX_PLATFORMS", "cpu")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the JAX loop");
    let out = child.stdout.take().unwrap();
    let _k = Killer(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let ready = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the JAX loop did not start within 120 s");
    assert!(ready.starts_with("ready"), "{ready}");

    let dir = std::env::temp_dir().join(format!("xlens-jax-interop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let addr = format!("127.0.0.1:{port}");
    let cap = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["capture", &addr, "--logdir"])
        .arg(&dir)
        .args(["--duration", "1s", "--session", "jax"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&cap.stdout);
    let stderr = String::from_utf8_lossy(&cap.stderr);
    assert!(cap.status.success(), "capture failed:\n{stdout}\n{stderr}");
    let file = dir.join(format!("plugins/profile/jax/127.0.0.1_{port}.xplane.pb"));
    assert!(file.is_file(), "{stdout}");
    assert!(stdout.contains("returned by the server"), "{stdout}");
    assert!(stdout.contains("XLA ops"), "{stdout}");

    let rep = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["report", "--json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(rep.status.success());
    let j: serde_json::Value = serde_json::from_slice(&rep.stdout).unwrap();
    let host = &j["sessions"][0]["hosts"][0];
    assert_eq!(host["error"], serde_json::Value::Null);
    assert_eq!(host["top_ops_source"], "host_xla_ops", "{host}");
    assert!(host["op_count"].as_u64().unwrap() > 0, "{host}");
    let steps = &host["steps"];
    assert_eq!(steps["name"], "train", "{steps}");
    // XProf's step table of the 5 or more annotated steps captured (the first and last
    // dropped past five).
    assert!(steps["count"].as_u64().unwrap() >= 4, "{steps}");
    assert_eq!(steps["source"], "xprof_steps", "{steps}");
    let _ = std::fs::remove_dir_all(&dir);
}
