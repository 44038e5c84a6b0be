//! Eight hosts, one stretched 1.5x: it, and only it, is the straggler, by the factor written.

use serde_json::Value;
use std::process::Command;

use super::generate;

/// Eight copies of the JAX fixture with clock offsets and up to 3% jitter, one of them stretched
/// 1.5x. The overview compares the hosts: the stretched one, and only it, is a straggler, by the
/// factor the generator wrote (against the other hosts' median), in host compute (a CPU
/// profile: the ops run on host threads).
#[test]
fn the_stretched_host_is_the_straggler() {
    let (dir, session, truth) =
        generate("eight", &["--hosts", "8", "--seed", "7", "--slow", "5:1.5"]);
    let mut others: Vec<f64> = truth
        .iter()
        .filter(|t| t["host"] != "host005")
        .map(|t| t["stretch"].as_f64().unwrap())
        .collect();
    others.sort_by(f64::total_cmp);
    // Seven others: the median is the 4th.
    let expected = (1.5 / others[3] - 1.0) * 100.0;

    let tool = |name: &str| -> Value {
        let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .args(["tool", name, "--json"])
            .arg(&session)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let overview = tool("overview_page");
    let hlo = tool("hlo_stats");
    check_eight(&overview["all_hosts"], &hlo["all_hosts"], expected);

    // The same from per-host summaries (decoded on 2 threads, then read back from the Parquet
    // cache): the same answers, and the second run decodes nothing.
    let hosts_with = |jobs: &str, cache: &str, extra: &[&str]| -> (Value, String) {
        let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .args(["hosts", "--json", "--verbose", "--jobs", jobs])
            .args(extra)
            .arg(&session)
            .env("XLENS_CACHE_DIR", dir.join(cache))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            serde_json::from_slice(&o.stdout).unwrap(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let hosts = |extra: &[&str]| hosts_with("2", "cache", extra);
    let (first, log) = hosts(&[]);
    assert!(log.contains("8 decoded, 0 from the cache"), "{log}");
    check_eight(&first["steps"], &first["ops"], expected);
    assert_eq!(first["steps"], overview["all_hosts"]);
    assert_eq!(first["ops"], hlo["all_hosts"]);
    assert_eq!(first["hosts_read"], 8);
    // The op profile across hosts: the same categories and ops as from the summaries.
    let op_profile = tool("op_profile");
    assert_eq!(
        op_profile["all_hosts"]["categories"],
        first["op_categories"]
    );
    assert_eq!(op_profile["all_hosts"]["ops"], first["ops"]);
    let (second, log) = hosts(&[]);
    assert!(log.contains("0 decoded, 8 from the cache"), "{log}");
    assert_eq!(second, first);
    // Without --verbose, --json keeps stderr for errors: nothing here.
    let quiet = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["hosts", "--json"])
        .arg(&session)
        .env("XLENS_CACHE_DIR", dir.join("cache"))
        .output()
        .unwrap();
    assert!(quiet.status.success());
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");
    assert_eq!(
        serde_json::from_slice::<Value>(&quiet.stdout).unwrap(),
        first
    );
    // One host at a time (each host dropped and its summary cached on a second thread while the
    // next one decodes): the same answers, and every summary in its own cache.
    let (one, log) = hosts_with("1", "cache1", &[]);
    assert!(log.contains("8 decoded, 0 from the cache"), "{log}");
    assert_eq!(one, first);
    let (again, log) = hosts_with("1", "cache1", &[]);
    assert!(log.contains("0 decoded, 8 from the cache"), "{log}");
    assert_eq!(again, first);
    // Op categories and module peaks cover the 8 hosts; a CPU profile's modules are the same
    // on every copy (the stretch changes times, not buffers).
    assert_eq!(first["op_categories"]["hosts"], 8);
    for m in first["memory"]["ops"].as_array().unwrap() {
        assert_eq!(m["hosts"], 8, "{m}");
        assert_eq!(m["min"], m["max"], "{m}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The eight-host answers: only host005 straggles, by the generator's factor, in host compute;
/// every op is on all 8 hosts, slowest on host005.
fn check_eight(a: &Value, all: &Value, expected: f64) {
    assert_eq!(a["hosts"].as_array().unwrap().len(), 8);
    // XProf's steps of this profile: 8 (fixtures/expected/xprof/overview/jax_mlp_small.json).
    assert_eq!(a["steps"].as_array().unwrap().len(), 8);
    let s = a["stragglers"].as_array().unwrap();
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["host"], "host005");
    assert_eq!(s[0]["steps"].as_array().unwrap().len(), 8);
    let got = s[0]["mean_excess_percent"].as_f64().unwrap();
    // Step times scale with the stretch up to rounding of each event to whole picoseconds.
    assert!((got - expected).abs() < 0.5, "{got} vs {expected}");
    assert_eq!(s[0]["category"], "host_compute");
    // Every host in the heatmap, every step in each row.
    for row in a["step_time_ps"].as_array().unwrap() {
        assert!(row.as_array().unwrap().iter().all(|c| c.is_i64()));
    }
    // HLO op stats over the hosts: every op on all 8, its slowest host the stretched one.
    assert_eq!(all["hosts"], 8);
    let ops = all["ops"].as_array().unwrap();
    assert_eq!(ops.len(), 71, "the fixture's HLO ops");
    for op in ops.iter().filter(|o| o["max"].as_f64().unwrap() > 0.0) {
        assert_eq!(op["hosts"], 8, "{op}");
        assert_eq!(op["max_host"], "host005", "{op}");
        let (min, max) = (op["min"].as_f64().unwrap(), op["max"].as_f64().unwrap());
        // The others are stretched by at most 1.03: max / min is between 1.5 / 1.03 and 1.5.
        assert!(max / min > 1.5 / 1.031 && max / min < 1.501, "{op}");
    }
}
