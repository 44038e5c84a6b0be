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
    generate_from(
        name,
        args,
        "fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb",
    )
}

/// [`generate`] from `file` (relative to the repository).
fn generate_from(name: &str, args: &[&str], file: &str) -> (PathBuf, PathBuf, Vec<Value>) {
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
        .arg(root.join(file))
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
            .args(["hosts", "--json", "--jobs", jobs])
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
    // `xlens hosts` places the hosts from their summaries alone, the same way.
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["hosts", "--json", "--no-cache"])
        .arg(&session)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["clocks"].as_array().unwrap(), &aligned);
    // Without --jobs, files this small (far under the bound's floor) go one per core.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_core = match cores {
        1 => "xlens: 1 host at a time, on every core (1)".to_string(),
        n => format!("xlens: {n} hosts at a time, one per core"),
    };
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(log.contains(&per_core), "{log}");
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

/// The `clocks` of `xlens ARGS... SESSION --json`.
fn clocks_of(args: &[&str], session: &std::path::Path) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(args)
        .arg("--json")
        .arg(session)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["clocks"].as_array().unwrap().clone()
}

/// The real JAX profile of a `psum` over 4 devices (`collective_bound`: one all-reduce per step,
/// 10 steps annotated) copied to three hosts with known clock shifts. With its step annotations
/// removed (a program that marks no steps), the hosts are still put back on one axis, exactly,
/// by the ends of the all-reduces alone: every one of the 10 runs of `psum_invariant.7` (4
/// devices' events each) matched. With the annotations, by steps and all-reduces together.
#[test]
fn shifted_clocks_are_aligned_on_collective_ends() {
    let file = "fixtures/logdir_bottlenecks/plugins/profile/collective_bound/vm.xplane.pb.gz";
    for strip in [true, false] {
        let mut args = vec!["--hosts", "3", "--seed", "5", "--jitter-pct", "0"];
        if strip {
            args.push("--strip-steps");
        }
        let name = if strip { "nosteps" } else { "withsteps" };
        let (dir, session, truth) = generate_from(name, &args, file);
        let offset = |i: usize| truth[i]["offset_ns"].as_i64().unwrap() * 1000;
        let aligned = clocks_of(&["tool", "trace_viewer", "--width", "10"], &session);
        assert_eq!(aligned.len(), 3);
        assert_eq!(aligned[0]["basis"], "reference");
        for (i, c) in aligned.iter().enumerate().skip(1) {
            assert_eq!(
                c["basis"],
                if strip {
                    "collective ends"
                } else {
                    "step and collective ends"
                },
                "{c}"
            );
            assert_eq!(c["matched_steps"], if strip { 0 } else { 10 }, "{c}");
            assert_eq!(c["matched_collectives"], 10, "{c}");
            assert_eq!(
                c["correction_ps"].as_i64().unwrap(),
                -(offset(i) - offset(0)),
                "{c}"
            );
            assert_eq!(c["residual_ps"], 0);
        }
        // `xlens hosts` places the hosts from their summaries alone, the same way.
        assert_eq!(clocks_of(&["hosts", "--no-cache"], &session), aligned);
        let _ = std::fs::remove_dir_all(&dir);
    }
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

/// A session with an unreadable host file: the other hosts are still compared, the file is
/// named with what is wrong, and the exit code says not every input was read. The summaries
/// written next to the profiles and by `xlens summarize` are six Parquet tables per host.
#[test]
fn an_unreadable_host_is_named_and_the_rest_compared() {
    let (dir, session, _) = generate("broken", &["--hosts", "3", "--seed", "5"]);
    std::fs::write(
        session.join("host003.xplane.pb"),
        b"\x0a\xff\xff\xff\x0fnot a profile",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["hosts", "--json", "--write-summaries"])
        .arg(&session)
        .env("XLENS_CACHE_DIR", dir.join("cache"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["host_files"], 4);
    assert_eq!(v["hosts_read"], 3);
    let u = &v["unread"][0];
    assert_eq!(u["host"], "host003");
    assert!(
        u["file"].as_str().unwrap().ends_with("host003.xplane.pb"),
        "{u}"
    );
    assert!(!u["error"].as_str().unwrap().is_empty());
    assert_eq!(v["steps"]["hosts"].as_array().unwrap().len(), 3);
    assert_eq!(v["steps"]["hosts_without_steps"][0], "host003");
    let tables = [
        "hosts",
        "steps",
        "step_breakdown",
        "ops",
        "modules",
        "collective_ends",
    ];
    for t in tables {
        for h in ["host000", "host001", "host002"] {
            let p = session
                .join("xlens-summaries")
                .join(t)
                .join(format!("{h}.parquet"));
            let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(&b[..4], b"PAR1", "{}", p.display());
        }
        assert!(!session
            .join("xlens-summaries")
            .join(t)
            .join("host003.parquet")
            .exists());
    }
    // The summaries do not make the session look different to the tools.
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["runs", "--json"])
        .arg(&session)
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs[0]["hosts"].as_array().unwrap().len(), 4, "{runs}");

    let out = dir.join("map");
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["summarize", "--out"])
        .arg(&out)
        .arg(session.join("host001.xplane.pb"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for t in tables {
        let a = std::fs::read(out.join(t).join("host001.parquet")).unwrap();
        assert_eq!(&a[..4], b"PAR1");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One capture written by several hosts into sessions of their own (different names, the same
/// window): `xlens hosts` matches them into one run, says how, and aligns the clocks as for one
/// session; a session of another time below the same log directory is left out and named.
#[test]
fn sessions_of_one_capture_are_one_run() {
    let (dir, session, truth) = generate(
        "split",
        &["--hosts", "4", "--seed", "3", "--jitter-pct", "0"],
    );
    let offset = |i: usize| truth[i]["offset_ns"].as_i64().unwrap() * 1000;
    let logdir = dir.join("logdir");
    let profile = logdir.join("plugins/profile");
    // Named as the profilers name sessions: by capture time (UTC), each worker's a few seconds
    // apart.
    let (wa, wb) = ("2026_12_01_10_00_00", "2026_12_01_10_00_03");
    for (s, hosts) in [(wa, [0, 1]), (wb, [2, 3])] {
        std::fs::create_dir_all(profile.join(s)).unwrap();
        for h in hosts {
            let f = format!("host{h:03}.xplane.pb");
            std::fs::rename(session.join(&f), profile.join(s).join(&f)).unwrap();
        }
    }
    // Another capture (of another time; the generated hosts are shifted copies of the MLP
    // profile, so not that one).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let older = "2026_11_28_09_00_00";
    std::fs::create_dir_all(profile.join(older)).unwrap();
    std::fs::copy(
        root.join("fixtures/logdir/plugins/profile/jax_tfm_small/vm.xplane.pb.gz"),
        profile.join(older).join("vm.xplane.pb.gz"),
    )
    .unwrap();
    // Sessions are ordered by their files' modification times: the copy is made now, so give it
    // its capture's time (three days before the others), as a copy that kept its times would
    // have; otherwise the order would hang on whether the copy fell in a later second.
    let written = std::fs::metadata(profile.join(wb).join("host002.xplane.pb"))
        .and_then(|m| m.modified())
        .expect("mtime");
    std::fs::File::options()
        .write(true)
        .open(profile.join(older).join("vm.xplane.pb.gz"))
        .and_then(|f| f.set_modified(written - std::time::Duration::from_secs(3 * 86_400)))
        .expect("set the copy's mtime");
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["hosts", "--json", "--no-cache", "--run", wb])
        .arg(&logdir)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut sessions: Vec<&str> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    sessions.sort_unstable();
    assert_eq!(sessions, [wa, wb]);
    assert_eq!(v["hosts_read"], 4);
    let m = v["matched"].as_str().unwrap();
    assert!(m.contains("are one run of 4 host(s)"), "{m}");
    assert!(log.contains("not in it") && log.contains(older), "{log}");
    // Host names are unique across the two sessions: plain names, and the clocks put back as
    // the generator shifted them.
    let clocks = v["clocks"].as_array().unwrap();
    assert_eq!(clocks.len(), 4);
    // `xlens report` over the log directory says the same of the two sessions, and leaves the
    // other capture on its own.
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["report", "--json"])
        .arg(&logdir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["matched"], v["matched"]);
    let index = |c: &Value| -> usize { c["host"].as_str().unwrap()[4..].parse().unwrap() };
    let reference = clocks.iter().find(|c| c["basis"] == "reference").unwrap();
    let r = index(reference);
    for c in clocks {
        if c != reference {
            assert_eq!(c["basis"], "step ends", "{c}");
            assert_eq!(
                c["correction_ps"].as_i64().unwrap(),
                -(offset(index(c)) - offset(r))
            );
        }
    }
    // The server offers the two sessions as one run, first (the newest capture), and the other
    // capture on its own; the run's tools see its 4 hosts.
    let server = Server::start(&logdir);
    let listed: Value = serde_json::from_str(&server.get("/api/runs")).unwrap();
    let listed = listed.as_array().unwrap();
    let names: Vec<&str> = listed.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let group = &listed[0];
    let mut members: Vec<&str> = group["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    members.sort_unstable();
    assert_eq!(members, [wa, wb]);
    let gm = group["matched"].as_str().unwrap();
    assert!(
        gm.contains(&format!("sessions {wa}, {wb} are one run of 4 host(s)")),
        "{gm}"
    );
    assert_eq!(group["hosts"].as_array().unwrap().len(), 4);
    assert!(names.contains(&older) && names.contains(&wa));
    assert!(listed[1..].iter().all(|r| r.get("sessions").is_none()));
    let run = group["name"].as_str().unwrap();
    let q = run.replace(' ', "%20").replace('+', "%2B");
    let ov: Value =
        serde_json::from_str(&server.get(&format!("/api/tool/overview_page?run={q}"))).unwrap();
    assert_eq!(ov["host_count"], 4, "{}", ov["host_count"]);
    assert_eq!(ov["all_hosts"]["hosts"].as_array().unwrap().len(), 4);
    let page = server.get(&format!("/?run={q}&tool=overview_page"));
    assert!(page.contains("One run of 2 sessions written by different hosts"));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `xlens serve LOGDIR` on a free loopback port, stopped when dropped.
struct Server(std::process::Child, u16);

impl Server {
    fn start(logdir: &std::path::Path) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .arg("serve")
            .arg(logdir)
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let s = Server(child, port);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return s;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("xlens serve did not listen on {port}");
    }

    /// The body of a GET (HTTP/1.0: the server closes the connection after it).
    fn get(&self, path: &str) -> String {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(("127.0.0.1", self.1)).unwrap();
        write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut r = String::new();
        c.read_to_string(&mut r).unwrap();
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{path}: {head}"
        );
        body.to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `xlens sql QUERY PATH --format json`; `None` when this binary was built without SQL (then
/// the test cannot run, which fails it under CI=true).
fn sql(query: &str, path: &std::path::Path, cache: &std::path::Path) -> Option<Vec<Value>> {
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["sql", query])
        .arg(path)
        .args(["--format", "json"])
        .env("XLENS_CACHE_DIR", cache)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("built without SQL") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: build the tests with --features xlens/sql (or xlens/distributed) ({err})"
        );
        eprintln!("skipped: xlens built without the `sql` feature");
        return None;
    }
    assert!(o.status.success(), "{query}: {err}");
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

/// `xlens sql` (feature `sql`, Apache DataFusion) over the summary tables of the eight hosts:
/// the figures SQL gives from the Parquet tables are the ones the tools give from the decoded
/// profiles, and the tables hold what docs/src/summary-tables.md says (each step's breakdown sums to
/// its time).
#[test]
#[cfg_attr(
    not(feature = "sql"),
    ignore = "full tier (.ci/run): DataFusion, --features xlens/sql"
)]
fn sql_over_the_summaries_agrees_with_the_tools() {
    let (dir, session, _) = generate("sql", &["--hosts", "8", "--seed", "7", "--slow", "5:1.5"]);
    let cache = dir.join("cache");

    let Some(hosts) = sql("SELECT count(*) AS n FROM hosts", &session, &cache) else {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    assert_eq!(hosts[0]["n"], 8);

    // Per host, XProf's steps: their count and total against the overview's per-host figures.
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["tool", "overview_page", "--json"])
        .arg(&session)
        .output()
        .unwrap();
    let overview: Value = serde_json::from_slice(&o.stdout).unwrap();
    let stats = overview["all_hosts"]["stats"].as_array().unwrap();
    let rows = sql(
        "SELECT host, count(*) AS n, min(duration_ps) AS lo, max(duration_ps) AS hi \
         FROM steps WHERE xprof GROUP BY host ORDER BY host",
        &session,
        &cache,
    )
    .unwrap();
    assert_eq!(rows.len(), 8);
    for (r, s) in rows.iter().zip(stats) {
        assert_eq!(r["host"], s["host"]);
        assert_eq!(r["n"], s["steps"]);
        assert_eq!(r["lo"], s["min_ps"]);
        assert_eq!(r["hi"], s["max_ps"]);
    }
    // The slowest host by mean step time is the stretched one.
    let slow = sql(
        "SELECT host FROM steps WHERE xprof GROUP BY host ORDER BY avg(duration_ps) DESC LIMIT 1",
        &session,
        &cache,
    )
    .unwrap();
    assert_eq!(slow[0]["host"], "host005");
    // Every step's breakdown sums to its time.
    let off = sql(
        "SELECT count(*) AS n FROM (SELECT s.host, s.step_index, s.duration_ps, sum(b.ps) AS t \
         FROM steps s JOIN step_breakdown b ON s.host = b.host AND s.step_index = b.step_index \
         GROUP BY s.host, s.step_index, s.duration_ps) WHERE t <> duration_ps",
        &session,
        &cache,
    )
    .unwrap();
    assert_eq!(off[0]["n"], 0);

    // One op on one host against HLO op stats of that host (µs there, ps here).
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["tool", "hlo_stats", "--json", "--host", "host005"])
        .arg(&session)
        .output()
        .unwrap();
    let h: Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = h["hosts"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["hlo_op_name"] == "dot.2")
        .unwrap()
        .clone();
    let op = sql(
        "SELECT total_time_ps, occurrences FROM ops WHERE host = 'host005' AND op = 'dot.2'",
        &session,
        &cache,
    )
    .unwrap();
    assert_eq!(op.len(), 1);
    assert_eq!(op[0]["occurrences"], row["occurrences"]);
    assert_eq!(op[0]["total_time_ps"], row["total_time_ps"], "{row}");

    // The same tables written by `xlens summarize` (the map step) answer the same.
    let out = dir.join("map");
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["summarize", "--out"])
        .arg(&out)
        .arg(&session)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let q = "SELECT host, sum(duration_ps) AS t FROM steps GROUP BY host ORDER BY host";
    assert_eq!(sql(q, &out, &cache), sql(q, &session, &cache));
    let _ = std::fs::remove_dir_all(&dir);
}

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

/// A process killed when the test ends, its stderr in a file.
struct Process(std::process::Child, PathBuf);

impl Process {
    fn start(args: &[&str], log: PathBuf) -> Process {
        let child = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Process(child, log)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.1).unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits up to a minute for `ready`, failing with the processes' logs.
fn wait_for(what: &str, procs: &[&Process], ready: impl Fn() -> bool) {
    let t = std::time::Instant::now();
    while !ready() {
        assert!(
            t.elapsed().as_secs() < 60,
            "{what}: not after 60 s\n{}",
            procs
                .iter()
                .map(|p| p.log())
                .collect::<Vec<_>>()
                .join("\n---\n")
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The reduce of issue 20 beyond one machine: the map is `xlens summarize` (Parquet per host),
/// the reduce the same SQL run by a real Apache DataFusion Ballista cluster (a scheduler and two
/// executors, each an `xlens ballista` process on loopback ports), with the same answers as
/// DataFusion embedded in `xlens sql`, and tasks run on both executors.
#[test]
#[cfg_attr(
    not(feature = "distributed"),
    ignore = "full tier (.ci/run): Ballista, --features xlens/distributed"
)]
fn the_reduce_runs_on_a_ballista_cluster() {
    let (dir, session, _) = generate(
        "ballista",
        &["--hosts", "12", "--seed", "3", "--slow", "7:1.4"],
    );
    let cache = dir.join("cache");
    let map = dir.join("map");
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["summarize", "--out"])
        .arg(&map)
        .arg(&session)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let port = free_port();
    let scheduler = Process::start(
        &["ballista", "scheduler", "--bind-port", &port.to_string()],
        dir.join("scheduler.log"),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    if scheduler.log().contains("built without Ballista") {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: build the tests with --features xlens/distributed"
        );
        eprintln!("skipped: xlens built without the `distributed` feature");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    wait_for("the scheduler listens", &[&scheduler], || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let executors: Vec<Process> = (0..2)
        .map(|i| {
            let work = dir.join(format!("executor{i}"));
            std::fs::create_dir_all(&work).unwrap();
            Process::start(
                &[
                    "ballista",
                    "executor",
                    "--scheduler-host",
                    "127.0.0.1",
                    "--scheduler-port",
                    &port.to_string(),
                    "--bind-port",
                    &free_port().to_string(),
                    "--bind-grpc-port",
                    &free_port().to_string(),
                    "--vcores",
                    "1",
                    "--work-dir",
                    work.to_str().unwrap(),
                ],
                dir.join(format!("executor{i}.log")),
            )
        })
        .collect();
    let all: Vec<&Process> = std::iter::once(&scheduler).chain(&executors).collect();
    wait_for("both executors register with the scheduler", &all, || {
        scheduler
            .log()
            .matches("Received register executor request")
            .count()
            == 2
    });

    let url = format!("df://127.0.0.1:{port}");
    let distributed = |q: &str| -> Vec<Value> {
        let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
            .args(["sql", q, "--format", "json", "--ballista", &url])
            .arg(&map)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{q}: {}\n{}",
            String::from_utf8_lossy(&o.stderr),
            all.iter()
                .map(|p| p.log())
                .collect::<Vec<_>>()
                .join("\n---\n")
        );
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let queries = [
        // Per host: steps, total and slowest step (an aggregate over twelve files).
        "SELECT host, count(*) AS n, sum(duration_ps) AS t, max(duration_ps) AS hi \
         FROM steps WHERE xprof GROUP BY host ORDER BY host",
        // A join and a shuffle: each host's time per breakdown category.
        "SELECT s.host, b.category, sum(b.ps) AS ps FROM steps s JOIN step_breakdown b \
         ON s.host = b.host AND s.step_index = b.step_index WHERE s.xprof \
         GROUP BY s.host, b.category ORDER BY s.host, b.category",
        // The slowest host by mean step time.
        "SELECT host FROM steps WHERE xprof GROUP BY host ORDER BY avg(duration_ps) DESC LIMIT 1",
    ];
    for q in queries {
        let embedded = sql(q, &map, &cache).expect("a build with `distributed` has `sql`");
        assert!(!embedded.is_empty(), "{q}");
        assert_eq!(distributed(q), embedded, "{q}");
    }
    let per_host = distributed(queries[0]);
    assert_eq!(per_host.len(), 12);
    assert_eq!(distributed(queries[2])[0]["host"], "host007");
    for (i, e) in executors.iter().enumerate() {
        let log = e.log();
        assert!(
            log.contains("Received task") || log.contains("Execute task"),
            "executor {i} ran no task:\n{log}"
        );
    }
    drop(executors);
    drop(scheduler);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two runs of one program captured a day apart (the PyTorch TensorBoard plugin's ResNet-50
/// samples) in one folder are two jobs: their `ProfilerStep#N` share names, but no clock is
/// moved to align them.
#[test]
fn runs_a_day_apart_in_one_folder_are_not_aligned() {
    let dir = std::env::temp_dir().join(format!("xlens-two-jobs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pytorch/tb_plugin");
    for (f, to) in [
        (
            "resnet50_num_workers_0.pt.trace.json.gz",
            "a.pt.trace.json.gz",
        ),
        (
            "resnet50_num_workers_4.pt.trace.json.gz",
            "b.pt.trace.json.gz",
        ),
    ] {
        std::fs::copy(src.join(f), dir.join(to)).unwrap();
    }
    let clocks = clocks_of(&["tool", "trace_viewer", "--width", "10"], &dir);
    assert_eq!(clocks.len(), 2, "{clocks:?}");
    assert_eq!(clocks[0]["basis"], "reference");
    assert!(
        clocks[1]["basis"]
            .as_str()
            .unwrap()
            .starts_with("raw clock (another job"),
        "{clocks:?}"
    );
    assert_eq!(clocks[1]["correction_ps"], 0);
    // The raw clocks are about 19 hours apart.
    let apart = (clocks[1]["raw_offset_ps"].as_i64().unwrap()
        - clocks[0]["raw_offset_ps"].as_i64().unwrap())
    .abs();
    assert!(apart > 3600 * 1_000_000_000_000, "{apart}");
    let _ = std::fs::remove_dir_all(&dir);
}
