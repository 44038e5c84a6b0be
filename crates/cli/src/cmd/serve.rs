//! `xlens serve`: the web UI and JSON API over a log directory, or over a bundled demo profile.

use anyhow::{Context, Result};
use std::net::SocketAddr;
use std::path::PathBuf;

/// A small real JAX (CPU) training profile, served by `xlens serve` when no log dir is given.
const DEMO: &[u8] =
    include_bytes!("../../../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb");

/// Serve the web UI and JSON API over a log directory (the bundled demo profile without one).
#[derive(clap::Args)]
pub struct Args {
    /// A log directory, one session directory, or one profile file (.xplane.pb, or a PyTorch trace .json[.gz]).
    logdir: Option<PathBuf>,
    /// Address to listen on. Any address but loopback requires a token (see --token).
    #[arg(long, default_value = "127.0.0.1:8791")]
    bind: SocketAddr,
    /// The token every request must carry (`?token=`, a cookie set on the first visit, or
    /// `Authorization: Bearer`). Default on a non-loopback --bind: a random one, printed in
    /// the URL; on loopback: none.
    #[arg(long, conflicts_with_all = ["token_file", "no_auth"])]
    token: Option<String>,
    /// Read the token from this file (surrounding whitespace ignored).
    #[arg(long, conflicts_with = "no_auth")]
    token_file: Option<PathBuf>,
    /// Serve a non-loopback --bind without a token (anyone who can reach the port sees the
    /// profiles).
    #[arg(long)]
    no_auth: bool,
    /// On a non-loopback --bind, allow the capture form and API (the server then connects
    /// to addresses visitors type; link-local and cloud metadata addresses stay refused).
    #[arg(long)]
    allow_capture: bool,
    /// Show several hosts on their raw clocks in the trace viewer instead of aligning them on
    /// their step ends.
    #[arg(long)]
    no_align: bool,
    /// Resident memory the loaded profiles may use (e.g. 8G, 500M; 0 for no budget); least
    /// recently used files are evicted past it and loaded again when asked for. Default:
    /// half of this machine's memory (or XLENS_MEMORY_BUDGET).
    #[arg(long, value_parser = parse_budget)]
    memory_budget: Option<u64>,
}

pub fn run(a: Args) -> Result<()> {
    let access = access(a.bind, a.token, a.token_file, a.no_auth, a.allow_capture)?;
    serve(a.logdir, a.bind, access, a.memory_budget, a.no_align)
}

fn parse_budget(s: &str) -> Result<u64, String> {
    xlens_server::parse_size(s)
        .ok_or_else(|| format!("`{s}` is not a size; use e.g. 8G, 500M, 0 for no budget"))
}

/// The access settings of the flags.
fn access(
    bind: SocketAddr,
    token: Option<String>,
    token_file: Option<PathBuf>,
    no_auth: bool,
    allow_capture: bool,
) -> Result<xlens_server::Access> {
    let token = match (token, token_file) {
        (Some(t), _) => Some(t),
        (None, Some(f)) => Some(
            std::fs::read_to_string(&f)
                .with_context(|| format!("reading the token file {}", f.display()))?
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    xlens_server::Access::for_bind(bind, token, no_auth, allow_capture)
        .context("cannot use this token")
}

fn serve(
    logdir: Option<PathBuf>,
    bind: SocketAddr,
    access: xlens_server::Access,
    memory_budget: Option<u64>,
    no_align: bool,
) -> Result<()> {
    let (logdir, label) = match logdir {
        Some(d) => {
            // Fail early with the store's explanation when nothing is there.
            crate::open::discover(&d).with_context(|| format!("cannot serve {}", d.display()))?;
            let label = d.display().to_string();
            (d, label)
        }
        None => {
            let dir = std::env::temp_dir().join(format!("xlens-demo-{}", std::process::id()));
            let session = dir.join("plugins/profile/demo_jax_mlp_small");
            std::fs::create_dir_all(&session)
                .with_context(|| format!("creating {}", session.display()))?;
            std::fs::write(session.join("vm.xplane.pb"), DEMO)
                .with_context(|| format!("writing the demo profile into {}", session.display()))?;
            (
                dir,
                "bundled demo: a real JAX CPU training profile (MLP, 10 steps)".to_string(),
            )
        }
    };
    // The CPU's peak FLOP rate and bandwidth (for CPU profiles' roofline tools) are measured once
    // per process: here, before any request or background warm-up competes for the cores.
    xlens_analysis::base::peaks::measure_host();
    let mut limits = xlens_server::Limits::default();
    if let Some(b) = memory_budget {
        limits.memory_budget = b;
    }
    if limits.memory_budget > 0 {
        eprintln!(
            "xlens: memory budget {:.1} GB (least recently used profiles are evicted past it; --memory-budget to change)",
            limits.memory_budget as f64 / 1e9
        );
    }
    let exposed = !bind.ip().is_loopback();
    if exposed && access.token.is_none() {
        eprintln!(
            "xlens: WARNING: no token (--no-auth): anyone who can reach {bind} sees the profiles"
        );
    }
    if exposed && access.capture == xlens_server::CapturePolicy::Exposed {
        eprintln!("xlens: capture allowed for visitors (--allow-capture); link-local and metadata addresses are refused");
    }
    // The URL to open: with the token, and a dialable host for an unspecified bind.
    let shown = if bind.ip().is_unspecified() {
        let lo: std::net::IpAddr = if bind.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        };
        SocketAddr::new(lo, bind.port())
    } else {
        bind
    };
    let url = match &access.token {
        Some(t) => format!("http://{shown}/?token={t}"),
        None => format!("http://{shown}/"),
    };
    let state = xlens_server::AppState::with_access(logdir, label, limits, access);
    state
        .cache
        .no_align
        .store(no_align, std::sync::atomic::Ordering::Relaxed);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .with_context(|| format!("cannot listen on {bind}"))?;
        if bind.ip().is_unspecified() {
            eprintln!(
                "xlens: listening on every interface ({bind}): use this machine's name or address in place of {}",
                shown.ip()
            );
        }
        eprintln!("xlens: serving {} on {url}", state.logdir.display());
        xlens_server::serve_on(listener, state)
            .await
            .context("server stopped")
    })
}
