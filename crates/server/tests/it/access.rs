//! An exposed server: 401 without the token on every route, 200 with it (query, cookie, bearer),
//! the first visit's cookie and redirect; capture off unless allowed, and when allowed it refuses
//! link-local and metadata addresses; a loopback server refuses foreign `Host:` names.

use std::io::{Read, Write};
use std::net::TcpStream;

use xlens_server::{Access, CapturePolicy, Limits};

const TOKEN: &str = "t0k3n-for-tests_1234";

fn serve(access: Access) -> (tokio::runtime::Runtime, String) {
    let logdir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
    serve_in(access, logdir)
}

/// A server over a fresh empty log directory: for tests that start captures, which would
/// otherwise leave session folders in the fixtures when the test ends before the capture does.
fn serve_scratch(access: Access, name: &str) -> (tokio::runtime::Runtime, String) {
    let d = std::env::temp_dir().join(format!("xlens-access-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    serve_in(access, d)
}

fn serve_in(access: Access, logdir: std::path::PathBuf) -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = xlens_server::AppState::with_access(logdir, "test", Limits::default(), access);
    rt.spawn(xlens_server::serve_on(listener, state));
    (rt, addr)
}

/// Status, headers (lowercased names) and body of one HTTP/1.0 request.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {path} HTTP/1.0\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str("Host: localhost\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(head.as_bytes()).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let hs = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect();
    (code, hs, body.to_string())
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    hs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// One request per route of the router (and a path it does not have).
const GETS: &[&str] = &[
    "/",
    "/?run=jax_mlp_small&tool=overview_page",
    "/api/runs",
    "/api/tools",
    "/api/downloads",
    "/api/status",
    "/api/tool/report?run=jax_mlp_small",
    "/api/diff?base=jax_mlp_small&run=jax_mlp_small",
    "/api/trace/viewport?run=jax_mlp_small",
    "/api/trace/event?run=jax_mlp_small&id=0",
    "/api/trace/search?run=jax_mlp_small&q=dot",
    "/api/trace/range?run=jax_mlp_small",
    "/api/trace/export?run=jax_mlp_small",
    "/static/app.css",
    "/capture",
    "/api/capture/999999",
    "/no/such/route",
];

#[test]
fn every_route_needs_the_token() {
    let access = Access {
        token: Some(TOKEN.into()),
        loopback_hosts_only: false,
        capture: CapturePolicy::Off,
    };
    let (_rt, addr) = serve(access);
    let bearer = format!("Bearer {TOKEN}");
    let cookie = format!("xlens_token={TOKEN}");
    for path in GETS {
        // Nothing, a wrong token in each place, and a token with one byte changed.
        let wrong = format!("{}X", &TOKEN[..TOKEN.len() - 1]);
        for hs in [
            vec![],
            vec![("Authorization", "Bearer nope")],
            vec![("Cookie", "xlens_token=nope; other=1")],
            vec![("Authorization", format!("Bearer {wrong}").leak() as &str)],
        ] {
            let (code, h, body) = request(&addr, "GET", path, &hs, "");
            assert_eq!(code, 401, "{path} {hs:?}: {body}");
            assert!(header(&h, "www-authenticate").is_some(), "{path}");
            assert!(body.contains("token"), "{path}: {body}");
        }
        let q = if path.contains('?') { '&' } else { '?' };
        let (code, _, _) = request(&addr, "GET", &format!("{path}{q}token=nope"), &[], "");
        assert_eq!(code, 401, "{path}?token=nope");

        // With it: the route's own answer (never 401).
        for hs in [
            vec![("Authorization", bearer.as_str())],
            vec![("Cookie", cookie.as_str())],
        ] {
            let (code, h, body) = request(&addr, "GET", path, &hs, "");
            let expect = match *path {
                "/no/such/route" | "/api/capture/999999" => 404,
                // Capture is off on this server.
                "/capture" => 403,
                _ => 200,
            };
            assert_eq!(code, expect, "{path} {hs:?}: {body}");
            assert_eq!(header(&h, "referrer-policy"), Some("no-referrer"), "{path}");
        }
    }
    // The POST route too.
    let body = r#"{"addrs":"127.0.0.1:1"}"#;
    let (code, _, _) = request(&addr, "POST", "/api/capture", &[], body);
    assert_eq!(code, 401);
    let (code, _, b) = request(
        &addr,
        "POST",
        "/api/capture",
        &[("Authorization", &bearer)],
        body,
    );
    assert_eq!(code, 403, "{b}");
    assert!(b.contains("--allow-capture"), "{b}");

    // The first visit with ?token= sets the cookie and drops the token from the URL.
    let (code, h, _) = request(
        &addr,
        "GET",
        &format!("/?run=jax_mlp_small&token={TOKEN}&tool=overview_page"),
        &[],
        "",
    );
    assert_eq!(code, 303);
    assert_eq!(
        header(&h, "location"),
        Some("/?run=jax_mlp_small&tool=overview_page")
    );
    let set = header(&h, "set-cookie").unwrap();
    assert!(set.starts_with(&format!("xlens_token={TOKEN};")), "{set}");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Lax"),
        "{set}"
    );
    // An API call with ?token= answers at once (scripts and curl).
    let (code, _, body) = request(&addr, "GET", &format!("/api/tools?token={TOKEN}"), &[], "");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("overview"));
}

fn start_capture(addr: &str, target: &str) -> (u16, String) {
    let body = format!(r#"{{"addrs":"{target}","duration_ms":100}}"#);
    let (code, _, b) = request(addr, "POST", "/api/capture", &[], &body);
    (code, b)
}

#[test]
fn exposed_capture_refuses_link_local_and_metadata() {
    let (_rt, addr) = serve_scratch(
        Access {
            token: None,
            loopback_hosts_only: false,
            capture: CapturePolicy::Exposed,
        },
        "exposed",
    );
    for target in [
        "169.254.169.254:80",
        "169.254.10.20:9012",
        "[fe80::1]:9012",
        "[fd00:ec2::254]:80",
        "metadata.google.internal:80",
        "0.0.0.0:9012",
        "127.0.0.1:9012,169.254.169.254:80",
    ] {
        let (code, b) = start_capture(&addr, target);
        assert_eq!(code, 403, "{target}: {b}");
        assert!(b.contains("does not dial"), "{target}: {b}");
    }
    // A routable address is captured from (nothing listens there: the job reports that).
    let (code, b) = start_capture(&addr, "127.0.0.1:1");
    assert_eq!(code, 200, "{b}");
    assert!(b.contains("\"job\""), "{b}");
    let (code, _, page) = request(&addr, "GET", "/capture", &[], "");
    assert_eq!(code, 200, "{page}");
}

#[test]
fn local_capture_refuses_only_metadata() {
    let (_rt, addr) = serve_scratch(Access::default(), "local");
    let (code, b) = start_capture(&addr, "169.254.169.254:80");
    assert_eq!(code, 403, "{b}");
    // The local user may capture a link-local peer (nothing there: the job says so).
    let (code, b) = start_capture(&addr, "169.254.10.20:9");
    assert_eq!(code, 200, "{b}");
}

#[test]
fn loopback_server_refuses_foreign_host_names() {
    let access = Access::for_bind("127.0.0.1:8791".parse().unwrap(), None, false, false).unwrap();
    assert!(access.token.is_none());
    let (_rt, addr) = serve(access);
    let (code, _, body) = request(&addr, "GET", "/api/tools", &[("Host", "evil.example")], "");
    assert_eq!(code, 403, "{body}");
    let (code, _, _) = request(&addr, "GET", "/", &[("Host", "attacker.test:8791")], "");
    assert_eq!(code, 403);
    for host in ["localhost:8791", "127.0.0.1:8791", "[::1]:8791"] {
        let (code, _, body) = request(&addr, "GET", "/api/tools", &[("Host", host)], "");
        assert_eq!(code, 200, "{host}: {body}");
    }
}
