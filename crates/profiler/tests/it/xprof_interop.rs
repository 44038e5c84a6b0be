//! A file written by xlens-profiler opens in XProf itself (its converter makes a trace and an
//! overview from it) and in xlens, with the same spans and steps.
//!
//! Full tier: needs Python with the `xprof` package, `$XLENS_PYTHON` (what `.ci/run` sets up),
//! else `python3`; fails when `import xprof` fails there.

use crate::common;

use std::process::{Command, Stdio};

#[test]
#[ignore = "full tier (.ci/run): Python with xprof ($XLENS_PYTHON)"]
fn xprof_reads_what_we_write() {
    let _tracer = common::one_trace_at_a_time();
    let py = std::env::var("XLENS_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&py)
        .args(["-c", "import xprof.convert.raw_to_tool_data"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "`{py}` cannot import xprof; set XLENS_PYTHON to a Python with the xprof package \
         (as .ci/run does)"
    );
    let dir = std::env::temp_dir().join(format!("xlens-profiler-xprof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    xlens_profiler::start_trace(&dir).unwrap();
    let loads = common::workload() as u64;
    let file = xlens_profiler::stop_trace().unwrap();

    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/interop/xprof_read.py"
    );
    let out = Command::new(&py)
        .arg(script)
        .arg(&file)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = common::STEPS as u64;
    let tc = &j["trace_counts"];
    // XProf names a step event `<name> <step_num>`.
    for i in 0..n {
        assert_eq!(tc[format!("train {i}")], 1, "{tc}");
    }
    assert_eq!(tc["forward"], n, "{tc}");
    assert_eq!(tc["backward"], n, "{tc}");
    assert_eq!(tc["load"], loads, "{tc}");
    let threads: Vec<String> = serde_json::from_value(j["threads"].clone()).unwrap();
    assert!(threads.contains(&"loader".to_string()), "{threads:?}");

    // xlens sees the same spans and threads.
    let (counts, lines) = common::xlens_counts(&file);
    assert_eq!(counts["train"] as u64, n);
    assert_eq!(counts["forward"] as u64, n);
    assert_eq!(counts["load"] as u64, loads);
    let mut xthreads = threads.clone();
    xthreads.sort();
    assert_eq!(lines, xthreads);

    // Steps: xlens all of them; XProf's overview leaves out the first and last (as it does for
    // JAX profiles), and what it shows are ours.
    assert_eq!(
        common::xlens_steps(&file),
        ("train".to_string(), n as usize)
    );
    let steps: Vec<String> = serde_json::from_value(j["overview_steps"].clone()).unwrap();
    assert!(steps.len() as u64 >= n - 2, "{steps:?}");
    for s in &steps {
        let num: u64 = s.trim_start_matches("train ").parse().unwrap();
        assert!(num < n, "{s}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
