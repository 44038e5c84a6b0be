//! Who may use the server, and where the server may connect on a visitor's behalf.
//!
//! * A token, when set, is required on every route (static files included): as the `token` query
//!   parameter, an `Authorization: Bearer` header, or the `xlens_token` cookie. A page opened with
//!   a valid `?token=` sets the cookie (HttpOnly, SameSite=Lax) and is redirected to the same URL
//!   without it, so links copied from the address bar never carry the token. Tokens are compared
//!   in constant time.
//! * On a loopback bind without a token, requests must name a loopback host (`Host:`), so a page
//!   on another site cannot reach the server through a domain it re-points to 127.0.0.1.
//! * Capture (the server dialing addresses a visitor types) is [`CapturePolicy::Local`] on a
//!   loopback bind, off on an exposed one unless allowed, and when allowed there it refuses
//!   link-local, metadata and unspecified addresses, dialing the address it checked.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, SocketAddr};

use crate::Shared;

/// The cookie that carries the token after the first visit.
pub const COOKIE: &str = "xlens_token";

/// Whether and how the server captures from addresses a visitor types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapturePolicy {
    /// Loopback bind: the visitor is the local user; only metadata addresses are refused.
    Local,
    /// Exposed bind without `--allow-capture`: the capture form and API answer 403.
    Off,
    /// Exposed bind with `--allow-capture`: link-local, metadata, unspecified, multicast and
    /// broadcast addresses are refused; names are resolved once and the checked address dialed.
    Exposed,
}

/// The server's access settings.
#[derive(Debug, Clone)]
pub struct Access {
    /// Required on every request when set.
    pub token: Option<String>,
    /// Refuse requests whose `Host:` is not a loopback name (DNS rebinding), when no token.
    pub loopback_hosts_only: bool,
    pub capture: CapturePolicy,
}

impl Default for Access {
    /// Open, as tests and embedders on loopback use it.
    fn default() -> Self {
        Access {
            token: None,
            loopback_hosts_only: false,
            capture: CapturePolicy::Local,
        }
    }
}

/// Why an exposed server cannot start as asked.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("the token is empty")]
    EmptyToken,
    #[error("the token must be printable ASCII without spaces, quotes, `;`, `,`, `&` or `#` (it goes in URLs and a cookie)")]
    BadToken,
    #[error("cannot make a random token: {0}")]
    Random(String),
}

impl Access {
    /// The settings for a server bound to `bind`: on a loopback address, open to local users
    /// (token only when given); on any other, a token (given, else generated) unless `no_auth`,
    /// and capture only with `allow_capture`.
    pub fn for_bind(
        bind: SocketAddr,
        token: Option<String>,
        no_auth: bool,
        allow_capture: bool,
    ) -> Result<Access, AccessError> {
        if let Some(t) = &token {
            check_token(t)?;
        }
        let exposed = !bind.ip().is_loopback();
        let token = match (token, exposed && !no_auth) {
            (Some(t), _) => Some(t),
            (None, true) => Some(generate_token()?),
            (None, false) => None,
        };
        Ok(Access {
            loopback_hosts_only: !exposed && token.is_none(),
            token,
            capture: match (exposed, allow_capture) {
                (false, _) => CapturePolicy::Local,
                (true, false) => CapturePolicy::Off,
                (true, true) => CapturePolicy::Exposed,
            },
        })
    }
}

fn check_token(t: &str) -> Result<(), AccessError> {
    if t.is_empty() {
        return Err(AccessError::EmptyToken);
    }
    let ok = t
        .bytes()
        .all(|b| b.is_ascii_graphic() && !b"\"';,&#%\\+=?".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(AccessError::BadToken)
    }
}

/// 32 random bytes from the operating system, as 64 hex digits.
pub fn generate_token() -> Result<String, AccessError> {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b).map_err(|e| AccessError::Random(e.to_string()))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Equal in time that depends only on the lengths, not on where the bytes first differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    // Keep the compiler from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// The token a request carries, and whether it came in the query string.
fn presented(headers: &HeaderMap, query: Option<&str>) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    if let Some(q) = query {
        for pair in q.split('&') {
            if let Some(v) = pair.strip_prefix("token=") {
                out.push((v.to_string(), true));
            }
        }
    }
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        if let Some(t) = v.strip_prefix("Bearer ") {
            out.push((t.trim().to_string(), false));
        }
    }
    for v in headers.get_all(header::COOKIE) {
        if let Ok(v) = v.to_str() {
            for c in v.split(';') {
                if let Some((k, val)) = c.trim().split_once('=') {
                    if k == COOKIE {
                        out.push((val.to_string(), false));
                    }
                }
            }
        }
    }
    out
}

/// `Host:` names this machine's loopback (`localhost`, `127.x.y.z`, `[::1]`, with any port).
fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(h) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        // HTTP/1.0 without Host: a local client, not a browser.
        return true;
    };
    let name = if let Some(rest) = h.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        h.rsplit_once(':').map_or(h, |(n, _)| n)
    };
    name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The query string without its `token=` pairs.
fn strip_token(query: &str) -> String {
    query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("token="))
        .collect::<Vec<_>>()
        .join("&")
}

/// The middleware: answers 401 (or 403 for a foreign `Host:`) before any route runs.
pub async fn guard(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let access = &state.access;
    let Some(token) = access.token.as_deref() else {
        if access.loopback_hosts_only && !loopback_host(req.headers()) {
            return refuse(
                StatusCode::FORBIDDEN,
                req.uri().path(),
                "this xlens server answers only requests addressed to localhost (the Host header names another site)",
            );
        }
        return next.run(req).await;
    };
    let uri = req.uri().clone();
    let tokens = presented(req.headers(), uri.query());
    let good = tokens
        .iter()
        .find(|(t, _)| constant_time_eq(t.as_bytes(), token.as_bytes()));
    match good {
        None => refuse(
            StatusCode::UNAUTHORIZED,
            uri.path(),
            if tokens.is_empty() {
                "this xlens server needs its token: open the link that `xlens serve` printed (it ends in ?token=...), or send `Authorization: Bearer TOKEN`"
            } else {
                "the token is wrong: open the link that `xlens serve` printed, or ask whoever started the server"
            },
        ),
        Some((_, from_query)) => {
            let page = req.method() == axum::http::Method::GET && !uri.path().starts_with("/api/");
            if *from_query && page {
                // Set the cookie and drop the token from the address bar.
                let q = strip_token(uri.query().unwrap_or_default());
                let to = if q.is_empty() {
                    uri.path().to_string()
                } else {
                    format!("{}?{q}", uri.path())
                };
                let mut r = StatusCode::SEE_OTHER.into_response();
                let h = r.headers_mut();
                if let Ok(v) = HeaderValue::from_str(&to) {
                    h.insert(header::LOCATION, v);
                }
                if let Ok(v) = HeaderValue::from_str(&format!(
                    "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax"
                )) {
                    h.insert(header::SET_COOKIE, v);
                }
                h.insert(
                    header::REFERRER_POLICY,
                    HeaderValue::from_static("no-referrer"),
                );
                return r;
            }
            let mut r = next.run(req).await;
            r.headers_mut().insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            );
            r
        }
    }
}

/// A refusal: JSON under `/api/`, a short page elsewhere.
fn refuse(code: StatusCode, path: &str, msg: &str) -> Response {
    let mut r = if path.starts_with("/api/") {
        (code, axum::Json(serde_json::json!({ "error": msg }))).into_response()
    } else {
        let page = maud::html! {
            (maud::DOCTYPE)
            html { head { meta charset="utf-8"; title { "xlens: " (code.as_u16()) } }
                body style="font-family: sans-serif; margin: 3em" {
                    h1 { "xlens" } p { (msg) }
                } }
        };
        (code, axum::response::Html(page.into_string())).into_response()
    };
    if code == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"xlens\""),
        );
    }
    r
}

/// Why the server will not dial `ip` for a visitor under `policy` (`None`: it may).
pub fn refuse_dial(ip: IpAddr, policy: CapturePolicy) -> Option<&'static str> {
    let metadata = match ip {
        // GCE, AWS, Azure, OpenStack; Alibaba Cloud.
        IpAddr::V4(v4) => {
            v4.octets() == [169, 254, 169, 254] || v4.octets() == [100, 100, 100, 200]
        }
        // AWS's IPv6 metadata endpoint.
        IpAddr::V6(v6) => v6.segments() == [0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254],
    };
    if metadata {
        return Some("a cloud metadata address");
    }
    if policy != CapturePolicy::Exposed {
        return None;
    }
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) if v4.is_link_local() => Some("a link-local address"),
        IpAddr::V4(v4) if v4.is_broadcast() => Some("a broadcast address"),
        IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80 => Some("a link-local address"),
        _ if ip.is_unspecified() => Some("an unspecified address"),
        _ if ip.is_multicast() => Some("a multicast address"),
        _ => None,
    }
}

/// The addresses a visitor asked to capture from, checked under `policy`: each resolved once;
/// under [`CapturePolicy::Exposed`] the checked `IP:PORT` replaces a name, so a name that
/// resolves elsewhere later cannot redirect the capture.
pub async fn check_capture_addrs(
    addrs: &[String],
    policy: CapturePolicy,
) -> Result<Vec<String>, String> {
    if policy == CapturePolicy::Off {
        return Err("capture is off on a server exposed beyond this machine; start it with --allow-capture to allow it".into());
    }
    let mut out = Vec::with_capacity(addrs.len());
    for a in addrs {
        if a.to_ascii_lowercase().starts_with("metadata") {
            return Err(format!(
                "`{a}` is a cloud metadata address; xlens does not dial it"
            ));
        }
        let resolved: Vec<SocketAddr> = match tokio::net::lookup_host(a.as_str()).await {
            Ok(it) => it.collect(),
            // Let the capture report an address it cannot resolve, as the CLI does.
            Err(_) if policy == CapturePolicy::Local => {
                out.push(a.clone());
                continue;
            }
            Err(e) => return Err(format!("cannot resolve `{a}`: {e}")),
        };
        for s in &resolved {
            if let Some(why) = refuse_dial(s.ip(), policy) {
                return Err(format!(
                    "`{a}` is {why} ({}); xlens does not dial it for a visitor",
                    s.ip()
                ));
            }
        }
        match (policy, resolved.first()) {
            (CapturePolicy::Exposed, Some(s)) => out.push(s.to_string()),
            (CapturePolicy::Exposed, None) => return Err(format!("`{a}` resolves to nothing")),
            _ => out.push(a.clone()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn refusals() {
        let p = CapturePolicy::Exposed;
        assert!(refuse_dial("169.254.169.254".parse().unwrap(), CapturePolicy::Local).is_some());
        assert!(refuse_dial("fd00:ec2::254".parse().unwrap(), CapturePolicy::Local).is_some());
        assert!(refuse_dial("169.254.1.2".parse().unwrap(), CapturePolicy::Local).is_none());
        assert!(refuse_dial("169.254.1.2".parse().unwrap(), p).is_some());
        assert!(refuse_dial("fe80::1".parse().unwrap(), p).is_some());
        assert!(refuse_dial("::ffff:169.254.9.9".parse().unwrap(), p).is_some());
        assert!(refuse_dial("0.0.0.0".parse().unwrap(), p).is_some());
        assert!(refuse_dial("10.0.0.7".parse().unwrap(), p).is_none());
        assert!(refuse_dial("127.0.0.1".parse().unwrap(), p).is_none());
    }

    #[test]
    fn for_bind() {
        let lo: SocketAddr = "127.0.0.1:8791".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:8791".parse().unwrap();
        let a = Access::for_bind(lo, None, false, false).unwrap();
        assert!(a.token.is_none() && a.loopback_hosts_only);
        assert_eq!(a.capture, CapturePolicy::Local);
        let a = Access::for_bind(any, None, false, false).unwrap();
        assert_eq!(a.token.as_ref().map(String::len), Some(64));
        assert_eq!(a.capture, CapturePolicy::Off);
        let b = Access::for_bind(any, None, false, false).unwrap();
        assert_ne!(a.token, b.token);
        let a = Access::for_bind(any, None, true, true).unwrap();
        assert!(a.token.is_none() && !a.loopback_hosts_only);
        assert_eq!(a.capture, CapturePolicy::Exposed);
        assert!(Access::for_bind(any, Some("a b".into()), false, false).is_err());
        assert!(Access::for_bind(any, Some(String::new()), false, false).is_err());
    }

    #[test]
    fn hosts_and_query() {
        let mut h = HeaderMap::new();
        for (v, ok) in [
            ("localhost:8791", true),
            ("127.0.0.1", true),
            ("[::1]:80", true),
            ("evil.example:8791", false),
            ("10.0.0.1:8791", false),
        ] {
            h.insert(header::HOST, HeaderValue::from_static(v));
            assert_eq!(loopback_host(&h), ok, "{v}");
        }
        assert_eq!(strip_token("run=a&token=x&tool=t"), "run=a&tool=t");
        assert_eq!(strip_token("token=x"), "");
    }
}
