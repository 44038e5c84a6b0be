//! The HTTP query parser target: request URLs (`PATH?QUERY`) built from the real routes and
//! parameter names, mutated, and sent through the server's own router in-process
//! (`xlens_server::router` driven with `tower::ServiceExt::oneshot`, no socket): the query
//! extractors, every tool's typed parameters from `(key, value)` pairs, the trace API's
//! viewport, event, search, range and export queries, and the HTML pages. For tool routes the
//! same pairs also go through the command-line parser (`clap`, as `xlens tool NAME --key value`)
//! now and then. The server works over a temporary log directory holding two small real
//! profiles (the JAX CPU XSpace fixture and a PyTorch Chrome trace), loaded once and cached as
//! the server caches them.

use anyhow::{Context, Result};
use axum::body::Body;
use axum::http::Request;
use std::path::{Path, PathBuf};
use tower::ServiceExt;
use xlens_analysis::base::context::Run;
use xlens_analysis::tools;
use xlens_store::Format;

use crate::engine::{category, log2_bucket, signature, Entry, Target};
use crate::havoc::havoc;
use crate::rng::Rng;

/// Requests are cut to this length.
pub const MAX_URL: usize = 16 * 1024;

/// The runs in the temporary log directory.
const RUNS: &[&str] = &["jax_mlp_small", "triton"];

/// Query keys the server reads itself (the tool, page and trace routes).
const SERVER_KEYS: &[&str] = &[
    "run", "host", "format", "tool", "start_ps", "end_ps", "width", "track", "index", "q", "limit",
    "names",
];

/// Routes besides `/api/tool/{tool}`.
const ROUTES: &[&str] = &[
    "/",
    "/api/runs",
    "/api/tools",
    "/api/downloads",
    "/api/trace/viewport",
    "/api/trace/event",
    "/api/trace/search",
    "/api/trace/range",
    "/api/trace/export",
    "/static/app.js",
    "/api/tool/",
    "/api/tool",
    "/api/capture/1",
    "/capture",
];

/// Values on the edges for any parameter.
const VALUES: &[&str] = &[
    "",
    " ",
    "0",
    "1",
    "-1",
    "2",
    "10",
    "1500",
    "20000",
    "20001",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "1e308",
    "1e309",
    "-1e308",
    "1e-320",
    "0.5",
    "-0.0",
    "1.",
    ".5",
    "+5",
    "0x10",
    "1_000",
    "true",
    "false",
    "null",
    "inline",
    "json",
    "csv",
    "text",
    "all",
    "dot",
    "fusion",
    "jit",
    "%",
    "%2",
    "%zz",
    "%00",
    "%FF%FE",
    "%C3%A9",
    "%E6%BC%A2%E5%AD%97",
    "%F0%9F%9A%80",
    "%ED%A0%80",
    "%26%3D",
    "+",
    "a+b",
    "%2B",
    "..%2F..%2Fetc%2Fpasswd",
    "%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    "%22%27%5C",
    "ProfilerStep%231",
    "jit_mlp_loss",
    "jit_mlp_loss(26)",
    "jax_mlp_small",
    "triton",
    "vm",
    "rank0",
];

/// A request: its path and its query pairs, as written (percent-encoding and all).
#[derive(Debug, Clone, PartialEq)]
pub struct Url {
    pub path: String,
    pub pairs: Vec<(String, String)>,
}

impl Url {
    /// Splits `PATH?QUERY` (pairs split at `&`, then at the first `=`).
    pub fn parse(input: &[u8]) -> Option<Url> {
        let text = std::str::from_utf8(input).ok()?;
        let (path, query) = text.split_once('?').unwrap_or((text, ""));
        let pairs = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (k.to_string(), v.to_string())
            })
            .collect();
        Some(Url {
            path: path.to_string(),
            pairs,
        })
    }

    /// Back to `PATH?QUERY`.
    pub fn write(&self) -> String {
        let mut s = self.path.clone();
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            s.push(if i == 0 { '?' } else { '&' });
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s
    }
}

/// Percent-encodes what a URI may not hold, so that every input reaches the router (a `%`
/// is kept: a broken escape is for the query parser to meet). Starts it with `/`.
pub fn to_uri(input: &[u8]) -> String {
    let mut s = String::with_capacity(input.len() + 1);
    if input.first() != Some(&b'/') {
        s.push('/');
    }
    for &b in &input[..input.len().min(MAX_URL)] {
        if b.is_ascii_graphic() && !b"\"<>\\^`{|}#".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// A tool's parameters: each name with the values it documents (choices, default).
type Params = Vec<(String, Vec<String>)>;

/// What an error answer says, bounded whatever the request held: the message up to the first
/// quoted value (the tool and parameter it names), and which of the parse errors the query
/// deserializer and the tools give it mentions.
fn error_kind(msg: &str) -> String {
    const PHRASES: &[&str] = &[
        "invalid digit",
        "too large",
        "too small",
        "invalid float",
        "duplicate field",
        "unknown variant",
        "unknown field",
        "missing field",
        "invalid type",
        "invalid value",
        "Invalid UTF",
        "empty string",
        "cannot parse",
    ];
    let head: String = msg
        .split('`')
        .next()
        .unwrap_or("")
        .chars()
        .take(60)
        .collect();
    let kinds: String = PHRASES
        .iter()
        .map(|p| if msg.contains(p) { '1' } else { '0' })
        .collect();
    format!("{} [{kinds}]", category(&head))
}

/// The real parameter names and sample values of every tool (from their command-line
/// definitions, which the query string shares), by tool.
fn tool_params() -> Vec<(&'static str, Params)> {
    tools::TOOLS
        .iter()
        .map(|t| {
            let cmd = t.args(clap::Command::new(t.info().name));
            let params = cmd
                .get_arguments()
                .filter_map(|a| {
                    let name = a.get_long().map(str::to_string).or_else(|| {
                        let id = a.get_id().as_str();
                        (id != "help").then(|| id.to_string())
                    })?;
                    let mut values: Vec<String> = a
                        .get_possible_values()
                        .iter()
                        .map(|v| v.get_name().to_string())
                        .collect();
                    values.extend(
                        a.get_default_values()
                            .iter()
                            .map(|v| v.to_string_lossy().into_owned()),
                    );
                    Some((name.replace('-', "_"), values))
                })
                .collect();
            (t.info().name, params)
        })
        .collect()
}

/// The server over a temporary log directory, and the parsers fed through it.
pub struct QueryTarget {
    dir: PathBuf,
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    /// Runs for the command-line path, by run name.
    runs: Vec<(&'static str, Run)>,
    params: Vec<(&'static str, Params)>,
    keys: Vec<String>,
    execs: u64,
    cli_every: u64,
    last: String,
}

impl Drop for QueryTarget {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl QueryTarget {
    /// Copies the two profiles from `fixtures` into a temporary log directory and starts the
    /// server's router over it; the command-line parser runs on every `cli_every`-th tool
    /// request (0: never).
    pub fn new(fixtures: &Path, cli_every: u64) -> Result<QueryTarget> {
        let dir = std::env::temp_dir().join(format!(
            "xlens-fuzz-logdir-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let jax_src = fixtures.join("logdir/plugins/profile/jax_mlp_small/vm.xplane.pb");
        let jax_dst = dir.join("plugins/profile/jax_mlp_small/vm.xplane.pb");
        let torch_src = fixtures.join("pytorch/hta-triton_example-triton_example.json.gz");
        let torch_dst = dir.join("plugins/profile/triton/rank0.pt.trace.json");
        for d in [&jax_dst, &torch_dst] {
            std::fs::create_dir_all(d.parent().context("a parent")?)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::copy(&jax_src, &jax_dst)
            .with_context(|| format!("copying {}", jax_src.display()))?;
        std::fs::write(&torch_dst, crate::seeds::read_maybe_gz(&torch_src)?)
            .with_context(|| format!("writing {}", torch_dst.display()))?;

        let load = |path: &Path, format: Format| -> Result<Run> {
            let p = xlens_loader::load_path(path, format)
                .with_context(|| format!("loading {}", path.display()))?;
            Ok(super::single_run(p, format))
        };
        let runs = vec![
            ("jax_mlp_small", load(&jax_dst, Format::XSpace)?),
            ("triton", load(&torch_dst, Format::ChromeTrace)?),
        ];
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting a tokio runtime")?;
        let state = xlens_server::AppState::new(dir.clone(), "fuzz");
        let router = xlens_server::router(state);
        let params = tool_params();
        let mut keys: Vec<String> = SERVER_KEYS.iter().map(|k| k.to_string()).collect();
        for (_, ps) in &params {
            for (k, _) in ps {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        Ok(QueryTarget {
            dir,
            rt,
            router,
            runs,
            params,
            keys,
            execs: 0,
            cli_every,
            last: String::new(),
        })
    }

    /// Every parameter name the tools and the server take.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// One request through the router: its status, and the body's error category or size.
    fn request(&self, uri: &str) -> (u16, String) {
        let Ok(req) = Request::builder().uri(uri).body(Body::empty()) else {
            return (0, "not a URI".into());
        };
        let router = self.router.clone();
        let res = self.rt.block_on(async move {
            let resp = router.oneshot(req).await.ok()?;
            let status = resp.status().as_u16();
            let body = axum::body::to_bytes(resp.into_body(), 256 << 20)
                .await
                .ok()?;
            Some((status, body))
        });
        match res {
            Some((status, body)) if status >= 400 => {
                // The JSON error's message, else the body's start.
                let msg = serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v.get("error")?.as_str().map(str::to_string))
                    .unwrap_or_else(|| {
                        String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
                    });
                (status, error_kind(&msg))
            }
            Some((status, body)) => (status, log2_bucket(body.len()).to_string()),
            None => (0, "no answer".into()),
        }
    }

    /// The pairs as `xlens tool NAME` arguments, parsed by the tool's `clap` definition and run.
    fn command_line(&self, tool: &str, url: &Url) -> String {
        let Ok(t) = tools::find(tool) else {
            return String::new();
        };
        let mut run_name = RUNS[0];
        let mut argv: Vec<String> = Vec::new();
        for (k, v) in &url.pairs {
            let decode = |s: &str| -> String {
                serde_urlencoded::from_str::<Vec<(String, String)>>(&format!("k={s}"))
                    .ok()
                    .and_then(|mut p| p.pop())
                    .map_or_else(|| s.to_string(), |(_, v)| v)
            };
            let (k, v) = (decode(k), decode(v));
            if k == "run" {
                if let Some(r) = RUNS.iter().find(|r| **r == v) {
                    run_name = r;
                }
                continue;
            }
            argv.push(format!("--{}", k.replace('_', "-")));
            if !v.is_empty() {
                argv.push(v);
            }
        }
        let cmd = t.args(clap::Command::new(t.info().name).no_binary_name(true));
        let m = match cmd.try_get_matches_from(argv) {
            Ok(m) => m,
            Err(e) => return format!("clap {:?}", e.kind()),
        };
        let Some((_, run)) = self.runs.iter().find(|(n, _)| *n == run_name) else {
            return String::new();
        };
        match t.run_args(run, &m) {
            Ok(out) => format!(
                "ok {}",
                out.json_string(false).map_or(0, |s| log2_bucket(s.len()))
            ),
            Err(e) => category(&e.to_string()),
        }
    }

    fn random_value(&self, rng: &mut Rng, key: &str) -> String {
        match rng.below(8) {
            0 => crate::json::interesting_number(rng),
            1 => {
                // A value the parameter documents (an enum choice, its default).
                let known: Vec<&String> = self
                    .params
                    .iter()
                    .flat_map(|(_, ps)| ps.iter())
                    .filter(|(k, _)| k == key)
                    .flat_map(|(_, vs)| vs.iter())
                    .collect();
                if known.is_empty() {
                    rng.pick(VALUES).to_string()
                } else {
                    rng.pick(&known).to_string()
                }
            }
            2 => match rng.below(3) {
                0 => "a".repeat(rng.small_len(8000)),
                1 => "%E6%BC%A2".repeat(rng.small_len(500)),
                _ => (0..rng.small_len(40))
                    .map(|_| format!("%{:02X}", rng.below(256)))
                    .collect(),
            },
            _ => rng.pick(VALUES).to_string(),
        }
    }

    fn random_key(&self, rng: &mut Rng) -> String {
        match rng.below(10) {
            0 => rng
                .pick(&[
                    "",
                    "%",
                    "a%3Db",
                    "run%00",
                    "RUN",
                    "start-ps",
                    "x",
                    "%E6%BC%A2",
                    "[]",
                ])
                .to_string(),
            _ => rng.pick(&self.keys).clone(),
        }
    }

    fn random_path(&self, rng: &mut Rng) -> String {
        match rng.below(3) {
            0 => rng.pick(ROUTES).to_string(),
            1 => format!(
                "/api/tool/{}",
                match rng.below(8) {
                    0 => rng
                        .pick(&["", "x", "%2e%2e", "report%00", "REPORT"])
                        .to_string(),
                    _ => rng.pick(&self.params).0.to_string(),
                }
            ),
            _ => "/".into(),
        }
    }
}

impl Target for QueryTarget {
    type Tree = Url;

    fn name(&self) -> &'static str {
        "query"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut seeds = Vec::new();
        for run in RUNS {
            for (tool, params) in &self.params {
                let mut pairs = vec![("run".to_string(), run.to_string())];
                seeds.push(Url {
                    path: format!("/api/tool/{tool}"),
                    pairs: pairs.clone(),
                });
                seeds.push(Url {
                    path: "/".into(),
                    pairs: vec![
                        ("run".into(), run.to_string()),
                        ("tool".into(), tool.to_string()),
                    ],
                });
                for (k, vs) in params {
                    pairs.push((k.clone(), vs.first().cloned().unwrap_or_else(|| "1".into())));
                }
                seeds.push(Url {
                    path: format!("/api/tool/{tool}"),
                    pairs,
                });
            }
            let r = ("run".to_string(), run.to_string());
            let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
            for (path, pairs) in [
                (
                    "/api/trace/viewport",
                    vec![
                        kv("start_ps", "0"),
                        kv("end_ps", "1000000000"),
                        kv("width", "300"),
                    ],
                ),
                ("/api/trace/viewport", vec![kv("names", "inline")]),
                ("/api/trace/event", vec![kv("track", "0"), kv("index", "0")]),
                ("/api/trace/search", vec![kv("q", "dot"), kv("limit", "10")]),
                (
                    "/api/trace/range",
                    vec![kv("start_ps", "0"), kv("end_ps", "1000000")],
                ),
                (
                    "/api/trace/export",
                    vec![kv("start_ps", "0"), kv("end_ps", "1000")],
                ),
                ("/api/tool/report", vec![kv("format", "text")]),
                ("/api/tool/kernel_stats", vec![kv("format", "csv")]),
                ("/api/downloads", vec![]),
                ("/api/runs", vec![]),
            ] {
                let mut all = vec![r.clone()];
                all.extend(pairs);
                seeds.push(Url {
                    path: path.into(),
                    pairs: all,
                });
            }
        }
        seeds.into_iter().map(|u| u.write().into_bytes()).collect()
    }

    fn parse(&self, input: &[u8]) -> Option<Url> {
        Url::parse(input)
    }

    fn mutate(&self, rng: &mut Rng, base: &Entry<Url>, other: &Entry<Url>) -> Vec<u8> {
        let mut out = match &base.tree {
            Some(url) if rng.chance(5, 6) => {
                let mut u = url.clone();
                for _ in 0..rng.range(1, 3) {
                    let n = u.pairs.len();
                    let i = rng.below(n);
                    match rng.below(12) {
                        0..=3 if n > 0 => {
                            let key = u.pairs[i].0.clone();
                            u.pairs[i].1 = self.random_value(rng, &key);
                        }
                        4 if n > 0 => u.pairs[i].0 = self.random_key(rng),
                        5 | 6 => {
                            let k = self.random_key(rng);
                            let v = self.random_value(rng, &k);
                            u.pairs.insert(rng.below(n + 1), (k, v));
                        }
                        7 if n > 0 => {
                            u.pairs.remove(i);
                        }
                        8 if n > 0 => {
                            let p = u.pairs[i].clone();
                            u.pairs.push(p);
                        }
                        9 => u.path = self.random_path(rng),
                        10 if n > 1 => {
                            let j = rng.below(n);
                            u.pairs.swap(i, j);
                        }
                        _ => {
                            // A pair of the other request.
                            if let Some(o) = &other.tree {
                                if !o.pairs.is_empty() {
                                    let p = rng.pick(&o.pairs).clone();
                                    u.pairs.push(p);
                                }
                            }
                        }
                    }
                }
                u.write().into_bytes()
            }
            _ => base.data.clone(),
        };
        if rng.chance(1, 4) || base.tree.is_none() {
            const DICT: &[&[u8]] = &[
                b"&",
                b"=",
                b"%",
                b"%00",
                b"%FF",
                b"+",
                b"?",
                b"#",
                b"run=",
                b"host=",
                b"width=",
                b"start_ps=",
                b"end_ps=",
                b"q=",
                b"limit=",
                b"format=",
                b"/api/tool/",
                b"/",
            ];
            let rounds = rng.range(1, 4);
            havoc(rng, &mut out, &other.data, DICT, rounds);
        }
        out.truncate(MAX_URL);
        out
    }

    fn execute(&mut self, input: &[u8]) -> u64 {
        self.execs += 1;
        let cli = self.cli_every > 0 && self.execs % self.cli_every == 0;
        self.check(input, cli)
    }

    fn describe_last(&self) -> String {
        self.last.clone()
    }

    fn replay(&mut self, input: &[u8]) -> Vec<String> {
        crate::engine::run_caught(|| self.check(input, true))
            .err()
            .unwrap_or_default()
    }

    fn nodes(&self, tree: &Url) -> usize {
        tree.pairs.len()
    }

    fn without(&self, tree: &Url, n: usize) -> Option<Vec<u8>> {
        let mut u = tree.clone();
        (n < u.pairs.len()).then(|| {
            u.pairs.remove(n);
            u.write().into_bytes()
        })
    }
}

impl QueryTarget {
    /// Sends `input` through the router and, when `cli` is set and it names a tool, through
    /// the command-line parser: what a regression test checks.
    pub fn check(&mut self, input: &[u8], cli: bool) -> u64 {
        let uri = to_uri(input);
        let (status, what) = self.request(&uri);
        let route = uri.split('?').next().unwrap_or("").to_string();
        let mut cli_outcome = String::new();
        if let Some(tool) = route.strip_prefix("/api/tool/") {
            if cli {
                if let Some(url) = Url::parse(uri.as_bytes()) {
                    cli_outcome = self.command_line(tool, &url);
                }
            }
        }
        // The route, with a tool name only when it is a real one (junk names all alike).
        let route_kind = match route.strip_prefix("/api/tool/") {
            Some(t) if tools::find(t).is_ok() => route.clone(),
            Some(_) => "/api/tool/?".to_string(),
            None if ROUTES.contains(&route.as_str()) => route.clone(),
            None => "?".to_string(),
        };
        self.last = format!("{route_kind} {status} {what} {cli_outcome}");
        signature((route_kind, status, what, cli_outcome))
    }
}
