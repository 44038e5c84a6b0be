//! Many hosts made from a real profile with known answers (`examples/many_hosts.rs`): eight
//! copies of the JAX fixture with clock offsets and up to 3% jitter, one of them stretched 1.5x.
//! The overview compares the hosts: the stretched one, and only it, is a straggler, by the
//! factor the generator wrote (against the other hosts' median), in host compute (a CPU
//! profile: the ops run on host threads).

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    // target/debug/deps/<test> -> target/debug/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

/// A session of copies of the JAX fixture made by the generator with `args`, in a fresh folder
/// named `name`: (its parent to remove, the session folder, the generator's truth).
fn generate(name: &str, args: &[&str]) -> (PathBuf, PathBuf, Vec<Value>) {
    let gen = example("many_hosts");
    assert!(
        gen.exists(),
        "cargo test builds the examples; missing {}",
        gen.display()
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("xlens-{name}-{}", std::process::id()));
    let session = dir.join("plugins/profile").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(&gen)
        .args(args)
        .arg("--out")
        .arg(&session)
        .arg(root.join("fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let truth = serde_json::from_str(
        &std::fs::read_to_string(format!("{}.truth.json", session.display())).unwrap(),
    )
    .unwrap();
    (dir, session, truth)
}

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

    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["tool", "overview_page", "--json"])
        .arg(&session)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let a = &v["all_hosts"];
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
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["tool", "hlo_stats", "--json"])
        .arg(&session)
        .output()
        .unwrap();
    let h: Value = serde_json::from_slice(&o.stdout).unwrap();
    let all = &h["all_hosts"];
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
    let _ = std::fs::remove_dir_all(&dir);
}

/// Four copies with only their clocks shifted (known offsets, no jitter): the trace viewer puts
/// them back on one axis by their step ends, exactly; `--no-align` shows the raw clocks.
#[test]
fn shifted_clocks_are_aligned_on_step_ends() {
    let (dir, session, truth) = generate(
        "four",
        &["--hosts", "4", "--seed", "3", "--jitter-pct", "0"],
    );
    let offset = |i: usize| truth[i]["offset_ns"].as_i64().unwrap() * 1000;
    let clocks = |extra: &[&str]| -> Vec<Value> {
        let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .args(["tool", "trace_viewer", "--json", "--width", "10"])
            .args(extra)
            .arg(&session)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["clocks"].as_array().unwrap().clone()
    };
    let aligned = clocks(&[]);
    assert_eq!(aligned.len(), 4);
    assert_eq!(aligned[0]["basis"], "reference");
    for (i, c) in aligned.iter().enumerate().skip(1) {
        assert_eq!(c["basis"], "step ends");
        assert_eq!(c["matched_steps"], 10);
        // The shift the generator made, undone to the picosecond.
        assert_eq!(
            c["correction_ps"].as_i64().unwrap(),
            -(offset(i) - offset(0))
        );
        assert_eq!(c["residual_ps"], 0);
    }
    let raw = clocks(&["--no-align"]);
    for (i, c) in raw.iter().enumerate() {
        assert_eq!(c["basis"], "raw clock");
        assert_eq!(c["correction_ps"], 0);
        assert_eq!(
            c["raw_offset_ps"].as_i64().unwrap() - raw[0]["raw_offset_ps"].as_i64().unwrap(),
            offset(i) - offset(0)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
