//! The web capture: `/capture` form, `POST /api/capture`, progress at `/api/capture/{id}`, the
//! new session then listed and opened. The peer is a Rust program served by xlens-profiler.

use std::time::{Duration, Instant};

use crate::common;
use common::{json, request};

fn start_xlens(logdir: std::path::PathBuf) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(listener).unwrap();
            let state = xlens_server::AppState::new(logdir, "capture test");
            xlens_server::serve_on(l, state).await.unwrap();
        });
    });
    addr
}

/// Polls a job until it is done.
fn wait(addr: &str, job: u64) -> (serde_json::Value, usize) {
    let t0 = Instant::now();
    let mut polls = 0;
    loop {
        let (code, body) = request(addr, "GET", &format!("/api/capture/{job}"), "");
        assert_eq!(code, 200, "{body}");
        let s = json(&body);
        polls += 1;
        if s["done"] == true {
            return (s, polls);
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{s}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn capture_from_the_browser() {
    let dir = std::env::temp_dir().join(format!("xlens-web-capture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let xlens = start_xlens(dir.clone());

    // The peer: a Rust program with the profiler server, stepping all the time.
    let peer = xlens_profiler::start_server_on("127.0.0.1:0".parse().unwrap()).unwrap();
    std::thread::spawn(|| {
        for i in 0.. {
            let _s = xlens_profiler::step("train", i);
            let _f = xlens_profiler::trace("forward");
            std::thread::sleep(Duration::from_millis(2));
        }
    });

    let (code, page) = request(&xlens, "GET", "/capture", "");
    assert_eq!(code, 200);
    assert!(
        page.contains("<form") && page.contains("/api/capture"),
        "{page}"
    );

    let body = format!(
        r#"{{"addrs":"{}","duration_ms":400,"session":"web1"}}"#,
        peer.addr
    );
    let (code, resp) = request(&xlens, "POST", "/api/capture", &body);
    assert_eq!(code, 200, "{resp}");
    let job = json(&resp)["job"].as_u64().unwrap();
    let (s, polls) = wait(&xlens, job);
    assert!(polls >= 2, "progress was never seen");
    assert_eq!(s["session"], "web1", "{s}");
    assert_eq!(s["link"], "/?run=web1");
    assert_eq!(s["results"][0]["ok"], true, "{s}");

    // The new session is listed and opens.
    let (_, runs) = request(&xlens, "GET", "/api/runs", "");
    assert!(runs.contains("\"web1\""), "{runs}");
    let (code, _) = request(&xlens, "GET", "/?run=web1", "");
    assert_eq!(code, 200);

    // The doctor's message comes through: nothing listens on that port.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let body = format!(r#"{{"addrs":"127.0.0.1:{port}","duration_ms":200}}"#);
    let (_, resp) = request(&xlens, "POST", "/api/capture", &body);
    let (s, _) = wait(&xlens, json(&resp)["job"].as_u64().unwrap());
    assert_eq!(s["error_kind"], "refused", "{s}");
    assert!(
        s["error"].as_str().unwrap().contains("nothing listens on"),
        "{s}"
    );

    // Bad input is refused up front.
    let (code, _) = request(&xlens, "POST", "/api/capture", r#"{"addrs":" "}"#);
    assert_eq!(code, 400);
    let (code, _) = request(&xlens, "GET", "/api/capture/999999", "");
    assert_eq!(code, 404);
    let _ = std::fs::remove_dir_all(&dir);
}
