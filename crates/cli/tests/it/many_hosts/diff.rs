//! `xlens diff` of one host against every host of a run.

use serde_json::Value;
use std::process::Command;

use super::generate;

/// `xlens diff` over every host of a run: the JAX fixture (BASE, one host) against four copies
/// of it (NEW) of which host002 is stretched 1.25x and the others not at all. A synchronous
/// step waits for its slowest host, so each NEW step is host002's, 1.25x BASE's; the ops are
/// summed over the hosts: 4x the occurrences and (3 + 1.25)x the time of each op, every op
/// matched by fingerprint (the same HLO on every copy).
#[test]
fn diff_covers_every_host_of_a_run() {
    let (dir, session, _truth) = generate(
        "diff4",
        &[
            "--hosts",
            "4",
            "--seed",
            "5",
            "--jitter-pct",
            "0",
            "--slow",
            "2:1.25",
        ],
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let base = root.join("fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb");
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["diff", "--json"])
        .arg(&base)
        .arg(&session)
        .output()
        .unwrap();
    assert!(
        o.status.code() == Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["base"]["hosts_compared"], 1);
    assert_eq!(d["new"]["hosts_compared"], 4);
    let st = &d["step_time"];
    assert_eq!(st["base"]["count"], st["new"]["count"]);
    let ratio = |k: &str| st["new"][k].as_f64().unwrap() / st["base"][k].as_f64().unwrap();
    for k in ["mean_ps", "median_ps", "p90_ps", "min_ps", "max_ps"] {
        assert!((ratio(k) - 1.25).abs() < 1e-6, "{k}: {}", ratio(k));
    }
    assert!(st["new"]["steps_from"]
        .as_str()
        .unwrap()
        .contains("slowest of 4 hosts"));
    let ops = &d["ops"];
    assert_eq!(ops["added"], 0);
    assert_eq!(ops["removed"], 0);
    let rows = ops["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert_eq!(ops["by_fingerprint"], rows.len());
    for r in rows {
        assert_eq!(r["matched_by"], "fingerprint", "{r}");
        assert_eq!(
            r["new_count"].as_u64().unwrap(),
            4 * r["base_count"].as_u64().unwrap(),
            "{r}"
        );
        let (b, n) = (
            r["base_ps"].as_f64().unwrap(),
            r["new_ps"].as_f64().unwrap(),
        );
        // Each copy's stretched durations are rounded to the nanosecond, per event.
        let tolerance = 4.0 * 1000.0 * r["new_count"].as_f64().unwrap();
        assert!((n - 4.25 * b).abs() <= tolerance, "{r}");
    }
    assert!(d["verdict"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l.as_str().unwrap().contains("BASE covers 1 host(s), NEW 4")));
    let _ = std::fs::remove_dir_all(&dir);
}
