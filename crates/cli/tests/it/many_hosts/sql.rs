//! SQL over the per-host summary tables: embedded DataFusion, and a Ballista cluster.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

use super::generate;
use crate::free_port;

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
