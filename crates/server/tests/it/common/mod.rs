//! Shared by the server tests: a minimal HTTP client on loopback.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;

/// One HTTP/1.0 request (so the answer is never chunked); returns status and body.
pub fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let code = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap_or_default();
    (code, body)
}

pub fn get(addr: &str, path: &str) -> (u16, String) {
    request(addr, "GET", path, "")
}

pub fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A server over the committed fixtures on a loopback port (kept alive by the runtime).
pub fn serve_fixtures() -> (tokio::runtime::Runtime, String) {
    let logdir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = xlens_server::AppState::new(logdir, "test");
    rt.spawn(xlens_server::serve_on(listener, state));
    (rt, addr)
}

/// A server over the committed fixtures with these limits.
pub fn serve_fixtures_with(limits: xlens_server::Limits) -> (tokio::runtime::Runtime, String) {
    let logdir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = xlens_server::AppState::with_limits(logdir, "test", limits);
    rt.spawn(xlens_server::serve_on(listener, state));
    (rt, addr)
}

/// Runs the calling test again in a process of its own and says whether this is that process.
/// The tests of this binary share one process; a test that measures the process (its resident
/// memory) runs alone: `if !common::alone("module::test") { return; }`.
pub fn alone(test: &str) -> bool {
    const VAR: &str = "XLENS_TEST_ALONE";
    if std::env::var(VAR).as_deref() == Ok(test) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(VAR, test)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test}, in its own process:\n{text}");
    assert!(text.contains("1 passed"), "{test} did not run:\n{text}");
    false
}
