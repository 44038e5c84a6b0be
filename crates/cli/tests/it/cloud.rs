//! `xlens cloud` against a fake `gcloud` first on PATH (tests/cloud/fake-gcloud): the exact
//! commands, labels and metadata; the startup script executed here over a local log directory,
//! serving with the token; `list` parsed; delete's question; connect's tunnel; capture run on
//! every worker of a TPU VM; clear errors. Then every command recorded is given to the real
//! gcloud (when installed; required under CI=true), which must accept its arguments.

use crate::free_port;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Fake {
    state: PathBuf,
}

impl Fake {
    fn new(name: &str, logged_in: bool, project: bool) -> Fake {
        let state = std::env::temp_dir().join(format!("xlens-cloud-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state).unwrap();
        let mut cfg = serde_json::Map::new();
        if logged_in {
            cfg.insert("account".into(), "dev@example.com".into());
        }
        if project {
            cfg.insert("project".into(), "ml-team-proj".into());
        }
        std::fs::write(state.join("config.json"), Value::Object(cfg).to_string()).unwrap();
        Fake { state }
    }

    fn path_env(&self) -> String {
        let fake = root().join("tests/cloud/fake-gcloud");
        format!(
            "{}:{}",
            fake.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    fn xlens(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_xlens"));
        c.arg("cloud")
            .args(args)
            .env("PATH", self.path_env())
            .env("FAKE_GCLOUD_STATE", &self.state)
            .env("XLENS_NO_METADATA_CREDENTIALS", "1");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.xlens(args).stdin(Stdio::null()).output().unwrap()
    }

    fn run_with_stdin(&self, args: &[&str], input: &str) -> Output {
        let mut c = self
            .xlens(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        c.wait_with_output().unwrap()
    }

    /// Every call since the last `take_calls`.
    fn take_calls(&self) -> Vec<Vec<String>> {
        let p = self.state.join("calls.jsonl");
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let _ = std::fs::remove_file(&p);
        let mut all = Vec::new();
        for l in text.lines() {
            let v: Vec<String> = serde_json::from_str(l).unwrap();
            all.push(v);
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.state.join("all-calls.jsonl"))
        {
            f.write_all(text.as_bytes()).unwrap();
        }
        all
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// FNV-1a 64 in hex, written out here from its definition (offset basis, prime).
fn fnv(s: &str) -> String {
    let mut h: u64 = 14695981039346656037;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(1099511628211);
    }
    format!("{h:016x}")
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http(port: u16, path: &str, auth: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let a = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{a}\r\n").unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let code = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|x| x.1).unwrap_or_default();
    (code, body.to_string())
}

#[test]
#[ignore = "full tier (.ci/run): the Google Cloud CLI"]
fn create_then_the_startup_script_serves_with_the_token() {
    let fake = Fake::new("create", true, true);
    let logdir = "gs://prof-bucket/runs/exp1";
    let o = fake.run(&[
        "create",
        "--logdir",
        &format!("{logdir}/"),
        "--zone",
        "us-central1-a",
        "--name",
        "xlens-t1",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let calls = fake.take_calls();
    let exe = std::fs::read(env!("CARGO_BIN_EXE_xlens")).unwrap();
    let bin_url = format!(
        "gs://prof-bucket/.xlens/bin/{}/linux-x86_64/{}/xlens",
        env!("CARGO_PKG_VERSION"),
        {
            let mut h: u64 = 14695981039346656037;
            for b in &exe {
                h ^= *b as u64;
                h = h.wrapping_mul(1099511628211);
            }
            format!("{h:016x}")
        }
    );
    let label = fnv(logdir);
    assert_eq!(calls.len(), 6, "{calls:#?}");
    assert_eq!(calls[0], strs(&["config", "get-value", "account"]));
    assert_eq!(calls[1], strs(&["config", "get-value", "project"]));
    assert_eq!(
        calls[2],
        vec![
            "compute".to_string(),
            "instances".into(),
            "list".into(),
            format!("--filter=labels.xlens=server AND labels.xlens-logdir={label}"),
            "--format=json".into()
        ]
    );
    assert_eq!(
        calls[3],
        vec!["storage".to_string(), "ls".into(), bin_url.clone()]
    );
    assert_eq!(
        calls[4],
        vec![
            "storage".to_string(),
            "cp".into(),
            env!("CARGO_BIN_EXE_xlens").to_string(),
            bin_url.clone()
        ]
    );
    let create = &calls[5];
    let token_arg = create
        .iter()
        .find(|a| a.starts_with("--metadata="))
        .unwrap();
    let token = token_arg.rsplit("xlens-token=").next().unwrap().to_string();
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    let script_arg = create
        .iter()
        .find(|a| a.starts_with("--metadata-from-file="))
        .unwrap()
        .clone();
    assert!(script_arg.starts_with("--metadata-from-file=startup-script=/"));
    assert_eq!(
        create,
        &vec![
            "compute".to_string(),
            "instances".into(),
            "create".into(),
            "xlens-t1".into(),
            "--zone=us-central1-a".into(),
            "--machine-type=e2-highmem-4".into(),
            "--image-family=debian-12".into(),
            "--image-project=debian-cloud".into(),
            "--scopes=storage-ro".into(),
            "--tags=xlens-server".into(),
            format!(
                "--labels=xlens=server,xlens-version={},xlens-logdir={label}",
                env!("CARGO_PKG_VERSION").replace('.', "-")
            ),
            format!("--metadata=xlens-logdir={logdir},xlens-binary={bin_url},xlens-port=8791,xlens-token={token}"),
            script_arg,
            "--format=json".into(),
        ]
    );
    // What it prints: the tunnel command and the direct URL with the token.
    let text = out(&o);
    assert!(
        text.contains("xlens cloud connect --name xlens-t1 --zone us-central1-a"),
        "{text}"
    );
    assert!(
        text.contains(&format!("http://34.68.200.17:8791/?token={token}")),
        "{text}"
    );
    // The binary is in the (fake) bucket, byte for byte.
    let staged = fake.state.join("gcs").join(&bin_url["gs://".len()..]);
    assert_eq!(std::fs::read(&staged).unwrap(), exe);

    // The VM as `list` sees it now, and its startup script (what gcloud was given).
    let o = fake.run(&["list", "--logdir", logdir, "--json"]);
    assert!(o.status.success(), "{}", err(&o));
    let vms: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(vms.as_array().unwrap().len(), 1, "{vms}");
    assert_eq!(vms[0]["name"], "xlens-t1");
    assert_eq!(vms[0]["logdir"], logdir);
    let created: Value = serde_json::from_str(
        &std::fs::read_to_string(fake.state.join("instances/xlens-t1.json")).unwrap(),
    )
    .unwrap();
    let meta = |k: &str| {
        created["metadata"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["key"] == k)
            .unwrap()["value"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let script = meta("startup-script");
    assert!(script.starts_with("#!/bin/bash"), "{script}");
    fake.take_calls();

    // Run that script here as the VM would, the log directory a local one (the VM's would be
    // the bucket): it fetches the binary through gcloud and serves with the token.
    let home = fake.state.join("vm-home");
    let script_file = fake.state.join("startup.sh");
    std::fs::write(&script_file, &script).unwrap();
    let port = free_port();
    let child = Command::new("bash")
        .arg(&script_file)
        .env("PATH", fake.path_env())
        .env("FAKE_GCLOUD_STATE", &fake.state)
        .env("XLENS_LOGDIR", root().join("fixtures/logdir"))
        .env("XLENS_BINARY", meta("xlens-binary"))
        .env("XLENS_PORT", port.to_string())
        .env("XLENS_TOKEN", meta("xlens-token"))
        .env("XLENS_HOME", &home)
        .env("XLENS_FOREGROUND", "1")
        .env("XLENS_NO_METADATA_CREDENTIALS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _k = Kill(child);
    let mut up = false;
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(up, "the startup script's server did not listen");
    assert_eq!(std::fs::read(home.join("xlens")).unwrap(), exe);
    let (code, _) = http(port, "/api/runs", None);
    assert_eq!(code, 401);
    let (code, body) = http(port, "/api/runs", Some(&token));
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("jax_mlp_small"), "{body}");
    let (code, body) = http(
        port,
        "/api/tool/overview_page?run=jax_mlp_small",
        Some(&token),
    );
    assert_eq!(code, 200, "{body}");
    let calls = fake.take_calls();
    assert_eq!(
        calls,
        vec![vec![
            "storage".to_string(),
            "cp".into(),
            meta("xlens-binary"),
            format!("{}/xlens.part", home.display())
        ]]
    );

    // The same log directory again: refused, naming the VM; with --yes another is made and the
    // binary, already in the bucket, is not uploaded again.
    let o = fake.run(&["create", "--logdir", logdir, "--zone", "us-central1-a"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("already served by xlens-t1 (us-central1-a)"),
        "{}",
        err(&o)
    );
    fake.take_calls();
    let o = fake.run(&[
        "create",
        "--logdir",
        logdir,
        "--zone",
        "us-central1-a",
        "--yes",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let calls = fake.take_calls();
    assert!(
        !calls.iter().any(|c| c[..2] == ["storage", "cp"]),
        "{calls:?}"
    );
    let name = &calls.last().unwrap()[3];
    assert!(
        name.starts_with(&format!("xlens-{}-", &label[..8])) && name.len() == 21,
        "{name}"
    );
    replay_in_real_gcloud(&fake);
}

#[test]
#[ignore = "full tier (.ci/run): the Google Cloud CLI"]
fn list_shows_the_xlens_vms() {
    let fake = Fake::new("list", true, true);
    let o = fake.run(&["list"]);
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("NAME") && lines[0].contains("LOG_DIRECTORY"));
    let row = |name: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    assert_eq!(
        row("xlens-team-a"),
        [
            "xlens-team-a",
            "us-central1-a",
            "gs://team-bucket/runs/a",
            "RUNNING",
            "http://34.27.10.11:8791/"
        ]
    );
    assert_eq!(
        row("xlens-team-b"),
        [
            "xlens-team-b",
            "europe-west4-a",
            "gs://team-bucket/runs/b",
            "TERMINATED",
            "-"
        ]
    );
    assert!(!text.contains("training-vm-1"), "{text}");
    assert_eq!(
        fake.take_calls()[2],
        strs(&[
            "compute",
            "instances",
            "list",
            "--filter=labels.xlens=server",
            "--format=json"
        ])
    );
    let o = fake.run(&[
        "list",
        "--zone",
        "europe-west4-a",
        "--json",
        "--project",
        "other-proj",
    ]);
    let v: Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["name"], "xlens-team-b");
    assert_eq!(v[0]["port"], 9000);
    assert!(v[0].get("token").is_none(), "list never prints tokens");
    let calls = fake.take_calls();
    // --project goes to every command but `config`; the project is not asked for then.
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[1],
        strs(&[
            "compute",
            "instances",
            "list",
            "--filter=labels.xlens=server",
            "--zones=europe-west4-a",
            "--format=json",
            "--project=other-proj"
        ])
    );
    replay_in_real_gcloud(&fake);
}

#[test]
#[ignore = "full tier (.ci/run): the Google Cloud CLI"]
fn delete_asks_and_connect_opens_a_tunnel() {
    let fake = Fake::new("delete", true, true);
    let o = fake.run_with_stdin(&["delete", "--name", "xlens-team-a"], "n\n");
    assert!(!o.status.success());
    assert!(err(&o).contains("delete 1 VM? [y/N]"), "{}", err(&o));
    assert!(err(&o).contains("nothing deleted"));
    assert!(!fake
        .take_calls()
        .iter()
        .any(|c| c.contains(&"delete".to_string())));
    let o = fake.run_with_stdin(&["delete", "--name", "xlens-team-a"], "y\n");
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        fake.take_calls().last().unwrap(),
        &strs(&[
            "compute",
            "instances",
            "delete",
            "xlens-team-a",
            "--zone=us-central1-a",
            "--quiet"
        ])
    );
    let o = fake.run(&["delete", "--name", "xlens-team-a", "--yes"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("no xlens VM named `xlens-team-a`"),
        "{}",
        err(&o)
    );
    // Not an xlens VM: not found either.
    let o = fake.run(&["delete", "--name", "training-vm-1", "--yes"]);
    assert!(
        err(&o).contains("no xlens VM named `training-vm-1`"),
        "{}",
        err(&o)
    );

    // Connect: the token from the VM's metadata, the tunnel through gcloud's ssh.
    fake.take_calls();
    let o = fake.run(&[
        "connect",
        "--name",
        "xlens-team-a2",
        "--local-port",
        "18791",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains(&format!("http://127.0.0.1:18791/?token={}", "c".repeat(64))),
        "{}",
        out(&o)
    );
    assert_eq!(
        fake.take_calls().last().unwrap(),
        &strs(&[
            "compute",
            "ssh",
            "xlens-team-a2",
            "--zone=us-east1-b",
            "--",
            "-N",
            "-L",
            "18791:localhost:8791"
        ])
    );
    // Two VMs serve gs://team-bucket/runs/a after another create: several match.
    let o = fake.run(&[
        "create",
        "--logdir",
        "gs://team-bucket/runs/a",
        "--zone",
        "us-central1-a",
        "--name",
        "xlens-a3",
        "--yes",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    let o = fake.run(&["connect", "--logdir", "gs://team-bucket/runs/a"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains("2 xlens VMs match: xlens-team-a2 (us-east1-b), xlens-a3 (us-central1-a)"),
        "{}",
        err(&o)
    );
    // A stopped VM.
    let o = fake.run(&["connect", "--name", "xlens-team-b"]);
    assert!(
        err(&o).contains("xlens-team-b is TERMINATED"),
        "{}",
        err(&o)
    );
    // Delete by log directory: both, one command per zone.
    fake.take_calls();
    let o = fake.run(&["delete", "--logdir", "gs://team-bucket/runs/a", "--yes"]);
    assert!(o.status.success(), "{}", err(&o));
    let calls = fake.take_calls();
    let deletes: Vec<_> = calls.iter().filter(|c| c[2] == "delete").collect();
    assert_eq!(deletes.len(), 2, "{calls:?}");
    replay_in_real_gcloud(&fake);
}

#[test]
#[ignore = "full tier (.ci/run): the Google Cloud CLI"]
fn clear_errors_before_anything_runs() {
    // No gcloud on PATH.
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["cloud", "list"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(err(&o).contains("no `gcloud` on PATH"), "{}", err(&o));
    // Not logged in; no project.
    let fake = Fake::new("errors", false, true);
    let o = fake.run(&["list"]);
    assert!(
        err(&o).contains("gcloud is not logged in: run `gcloud auth login`"),
        "{}",
        err(&o)
    );
    let fake = Fake::new("errors2", true, false);
    let o = fake.run(&["list"]);
    assert!(
        err(&o).contains("no Google Cloud project set"),
        "{}",
        err(&o)
    );
    assert_eq!(fake.take_calls().len(), 2);
    // Bad arguments, refused before gcloud runs.
    let fake = Fake::new("errors3", true, true);
    for (args, want) in [
        (
            vec!["create", "--logdir", "/local/dir", "--zone", "z"],
            "must be a gs://BUCKET/PATH",
        ),
        (
            vec![
                "create", "--logdir", "gs://b/p", "--zone", "z", "--name", "Bad_Name",
            ],
            "is not a VM name",
        ),
    ] {
        let o = fake.run(&args);
        assert!(!o.status.success());
        assert!(err(&o).contains(want), "{args:?}: {}", err(&o));
    }
    assert!(fake.take_calls().is_empty());
    // A binary for another platform: refused with the hint.
    let not_elf = fake.state.join("xlens-macos");
    std::fs::write(
        &not_elf,
        b"\xcf\xfa\xed\xfe\x0c\x00\x00\x01 a Mach-O header",
    )
    .unwrap();
    let o = fake.run(&[
        "create",
        "--logdir",
        "gs://b/p",
        "--zone",
        "z",
        "--binary",
        not_elf.to_str().unwrap(),
    ]);
    assert!(
        err(&o).contains("is not a Linux executable, but a e2-highmem-4 VM runs Linux x86_64"),
        "{}",
        err(&o)
    );
    assert!(err(&o).contains("--binary PATH"));
    let o = fake.run(&[
        "create",
        "--logdir",
        "gs://b/p",
        "--zone",
        "z",
        "--machine-type",
        "c4a-standard-4",
    ]);
    assert!(
        err(&o).contains(
            "this xlens is a Linux x86_64 build, but a c4a-standard-4 VM runs Linux aarch64"
        ),
        "{}",
        err(&o)
    );
}

#[test]
#[ignore = "full tier (.ci/run): the Google Cloud CLI"]
fn dry_run_prints_every_command() {
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args([
            "cloud",
            "capture",
            "--instances",
            "vm-a,vm-b",
            "--zone",
            "us-central1-a",
            "--logdir",
            "gs://b/runs",
            "--session",
            "s1",
            "--dry-run",
        ])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("gcloud storage ls gs://b/.xlens/bin/"));
    assert!(lines[1].starts_with("gcloud storage cp "));
    for (l, vm) in lines[2..].iter().zip(["vm-a", "vm-b"]) {
        assert!(
            l.starts_with(&format!(
                "gcloud compute ssh {vm} --zone=us-central1-a '--command=set -e; X=/tmp/xlens-"
            )),
            "{l}"
        );
        assert!(l.contains("capture localhost:9012 --logdir gs://b/runs --session s1 --duration 2000ms --start-at "), "{l}");
    }
}

#[test]
#[ignore = "full tier (.ci/run): the Google Cloud CLI"]
fn capture_runs_on_every_tpu_worker_into_one_session() {
    let fake = Fake::new("capture", true, true);
    // The job: a Rust program with the profiler server, stepping all the time.
    let server = xlens_profiler::start_server_on("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = server.addr.port();
    std::thread::spawn(|| {
        for i in 0.. {
            let _s = xlens_profiler::step("train", i);
            let _f = xlens_profiler::trace("forward");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    });
    let logdir = fake.state.join("logdir");
    let o = fake.run(&[
        "capture",
        "--tpu",
        "my-tpu",
        "--zone",
        "us-central2-b",
        "--port",
        &port.to_string(),
        "--logdir",
        logdir.to_str().unwrap(),
        "--remote-binary",
        env!("CARGO_BIN_EXE_xlens"),
        "--session",
        "pod_capture",
        "--duration",
        "300ms",
        "--lead",
        "1s",
    ]);
    assert!(o.status.success(), "{}\n{}", out(&o), err(&o));
    let calls = fake.take_calls();
    let ssh = calls.last().unwrap();
    assert_eq!(
        ssh[..7],
        strs(&[
            "compute",
            "tpus",
            "tpu-vm",
            "ssh",
            "my-tpu",
            "--zone=us-central2-b",
            "--worker=all"
        ])
    );
    let cmd = ssh[7].strip_prefix("--command=").unwrap();
    assert!(
        cmd.contains("--session pod_capture --duration 300ms --start-at "),
        "{cmd}"
    );
    let session = logdir.join("plugins/profile/pod_capture");
    let mut files: Vec<String> = std::fs::read_dir(&session)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "t1v-n-38273645-w-0.xplane.pb",
            "t1v-n-38273645-w-1.xplane.pb"
        ],
        "{}",
        err(&o)
    );
    // Both workers' captures are real profiles with steps.
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["report", session.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hosts = r["sessions"][0]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    for h in hosts {
        assert!(h["error"].is_null(), "{h}");
    }
    replay_in_real_gcloud(&fake);
}

/// Gives every command the fake answered to the real gcloud, with an empty configuration (no
/// account, so it stops before any request): it must get past argument parsing to "no active
/// account". Skipped without a real gcloud, except under CI=true.
fn replay_in_real_gcloud(fake: &Fake) {
    fake.take_calls();
    let real = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("gcloud"))
            .find(|p| p.is_file())
    });
    let Some(real) = real else {
        assert!(
            std::env::var("CI").ok().as_deref() != Some("true"),
            "CI=true: the real gcloud must be on PATH to check xlens's gcloud commands"
        );
        eprintln!("no real gcloud on PATH: the recorded commands were not checked against it");
        return;
    };
    let text = std::fs::read_to_string(fake.state.join("all-calls.jsonl")).unwrap_or_default();
    let config = fake.state.join("real-gcloud-config");
    std::fs::create_dir_all(&config).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut checked = 0;
    for l in text.lines() {
        let args: Vec<String> = serde_json::from_str(l).unwrap();
        if args[0] == "config" || !seen.insert(args.clone()) {
            continue;
        }
        let o = Command::new(&real)
            .args(&args)
            .env("CLOUDSDK_CONFIG", &config)
            .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
            .env("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "1")
            .env("CLOUDSDK_CORE_DISABLE_USAGE_REPORTING", "true")
            // Never ask a metadata server for credentials.
            .env("CLOUDSDK_CORE_CHECK_GCE_METADATA", "false")
            .env("CLOUDSDK_CORE_PROJECT", "ml-team-proj")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let e = err(&o);
        assert!(
            e.contains("You do not currently have an active account selected"),
            "the real gcloud refused {args:?}: {e}"
        );
        checked += 1;
    }
    assert!(checked > 0, "no recorded command to check");
    eprintln!(
        "the real gcloud ({}) accepted {checked} commands",
        real.display()
    );
}
