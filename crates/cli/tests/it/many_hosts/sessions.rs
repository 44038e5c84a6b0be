//! Sessions: an unreadable host file named, and sessions of one capture matched into one run.

use serde_json::Value;
use std::process::Command;

use super::generate;

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
