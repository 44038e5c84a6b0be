//! `xlens serve` exposed beyond loopback: a generated token printed in the URL, `--token-file`,
//! `--no-auth` with a warning, and capture off unless `--allow-capture`.

use crate::free_port;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir")
}

/// Starts `xlens serve ARGS --bind 0.0.0.0:PORT`; returns the process, the port and its stderr
/// lines up to the "serving" line.
fn serve(args: &[&str]) -> (Kill, u16, Vec<String>) {
    let port = free_port();
    let mut c = Command::new(env!("CARGO_BIN_EXE_xlens"));
    c.arg("serve")
        .args(args)
        .args(["--bind", &format!("0.0.0.0:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("serve");
    let err = child.stderr.take().expect("stderr");
    let k = Kill(child);
    let mut lines = Vec::new();
    let mut it = BufReader::new(err).lines();
    for l in it.by_ref() {
        let l = l.expect("stderr line");
        let done = l.contains("serving");
        lines.push(l);
        if done {
            break;
        }
    }
    // Keep reading, so the server's later messages never meet a closed pipe.
    std::thread::spawn(move || it.for_each(drop));
    (k, port, lines)
}

/// Status, `Set-Cookie` and body of a GET to loopback.
fn get(port: u16, path: &str, cookie: Option<&str>) -> (u16, Option<String>, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let c = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{c}\r\n"
    )
    .expect("send");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let set = head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .starts_with("set-cookie:")
            .then(|| l[11..].trim().to_string())
    });
    (code, set, body.to_string())
}

#[test]
fn exposed_serve_prints_a_token_url_and_requires_it() {
    let logdir = fixtures();
    let (_k, port, lines) = serve(&[logdir.to_str().unwrap()]);
    let serving = lines.last().unwrap();
    let url = serving
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    let (_, query) = url.split_once("/?token=").expect("token in URL");
    assert_eq!(query.len(), 64, "{url}");
    assert!(query.bytes().all(|b| b.is_ascii_hexdigit()), "{url}");
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{port}/")),
        "{url}"
    );
    assert!(
        lines.iter().any(|l| l.contains("every interface")),
        "{lines:?}"
    );

    let (code, _, body) = get(port, "/api/runs", None);
    assert_eq!(code, 401, "{body}");
    let (code, set, _) = get(port, &format!("/?token={query}"), None);
    assert_eq!(code, 303);
    let cookie = set.expect("cookie").split(';').next().unwrap().to_string();
    let (code, _, body) = get(port, "/?tool=overview_page", Some(&cookie));
    assert_eq!(code, 200);
    assert!(body.contains("Overview: run "), "{body}");
    // Capture is off without --allow-capture.
    let (code, _, body) = get(port, "/capture", Some(&cookie));
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("--allow-capture"));
}

#[test]
fn token_file_and_no_auth() {
    let dir = std::env::temp_dir().join(format!("xlens-serve-access-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("token");
    std::fs::write(&f, "from-a-file-42\n").unwrap();
    let logdir = fixtures();
    {
        let (_k, port, lines) = serve(&[
            logdir.to_str().unwrap(),
            "--token-file",
            f.to_str().unwrap(),
            "--allow-capture",
        ]);
        assert!(
            lines.last().unwrap().contains("?token=from-a-file-42"),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("capture allowed")),
            "{lines:?}"
        );
        let (code, _, _) = get(port, "/api/tools", None);
        assert_eq!(code, 401);
        let (code, _, _) = get(port, "/api/tools?token=from-a-file-42", None);
        assert_eq!(code, 200);
        let (code, _, _) = get(port, "/capture", Some("xlens_token=from-a-file-42"));
        assert_eq!(code, 200);
    }
    {
        let (_k, port, lines) = serve(&[logdir.to_str().unwrap(), "--no-auth"]);
        assert!(lines.iter().any(|l| l.contains("WARNING")), "{lines:?}");
        assert!(!lines.last().unwrap().contains("token="), "{lines:?}");
        let (code, _, _) = get(port, "/api/tools", None);
        assert_eq!(code, 200);
    }
    // A bad token file is refused before listening, naming the file.
    let missing = dir.join("absent");
    let o = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(["serve", logdir.to_str().unwrap(), "--bind", "0.0.0.0:0"])
        .arg("--token-file")
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("absent"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
