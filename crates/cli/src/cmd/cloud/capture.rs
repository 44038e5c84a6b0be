//! `xlens cloud capture`: a profile from every worker of a TPU VM (or of GCE VMs) at once.

use super::*;

pub(super) struct CaptureArgs {
    pub(super) tpu: Option<String>,
    pub(super) instances: Option<String>,
    pub(super) zone: String,
    pub(super) port: u16,
    pub(super) logdir: String,
    pub(super) duration: std::time::Duration,
    pub(super) session: Option<String>,
    pub(super) lead: std::time::Duration,
    pub(super) remote_binary: Option<String>,
    pub(super) binary: Option<PathBuf>,
}

/// The shell command each worker runs: fetch xlens from the bucket (once), then capture its own
/// profiler server into the shared session, named after the worker's host name.
pub fn worker_command(
    binary: WorkerBinary<'_>,
    port: u16,
    logdir: &str,
    session: &str,
    duration_ms: u128,
    start_at_ms: u128,
) -> String {
    let mut cmd = String::from("set -e; ");
    match binary {
        WorkerBinary::Fetch { url, hash } => {
            cmd.push_str(&format!(
                "X=/tmp/xlens-{hash}; if [ ! -x \"$X\" ]; then gcloud storage cp {} \"$X.part\" && chmod 755 \"$X.part\" && mv -f \"$X.part\" \"$X\"; fi; ",
                sh_quote(url)
            ));
        }
        WorkerBinary::At(path) => cmd.push_str(&format!("X={}; ", sh_quote(path))),
    }
    cmd.push_str(&format!(
        "\"$X\" capture localhost:{port} --logdir {} --session {} --duration {duration_ms}ms --start-at {start_at_ms} --host-name \"$(hostname)\"",
        sh_quote(logdir),
        sh_quote(session)
    ));
    cmd
}

/// Where the workers' xlens comes from.
pub enum WorkerBinary<'a> {
    Fetch { url: &'a str, hash: &'a str },
    At(&'a str),
}

pub(super) fn capture(gc: &Gcloud, a: &CaptureArgs) -> Result<()> {
    gc.preflight()?;
    let logdir = a.logdir.trim_end_matches('/').to_string();
    let now = std::time::SystemTime::now();
    let session = match &a.session {
        Some(s) if s.is_empty() || s.contains(['/', '\\', '\'']) || s.starts_with('.') => {
            bail!("--session `{s}` cannot be a folder name")
        }
        Some(s) => s.clone(),
        None => xlens_capture::timestamp_session_id(now),
    };
    let start_at_ms = (now + a.lead)
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let staged;
    let hash;
    let binary = match &a.remote_binary {
        Some(p) => WorkerBinary::At(p),
        None => {
            let Some(bucket) = gs_bucket(&logdir) else {
                bail!("--logdir `{logdir}` is not a gs:// URL, so there is no bucket to give the workers xlens from: install it on them and pass --remote-binary PATH");
            };
            let (path, bytes) = binary_for(a.binary.as_ref(), "x86_64", "a TPU VM worker")?;
            staged = stage_binary(gc, bucket, "x86_64", &bytes, &path)?;
            hash = short_hash(&bytes);
            WorkerBinary::Fetch {
                url: &staged,
                hash: &hash,
            }
        }
    };
    let cmd = worker_command(
        binary,
        a.port,
        &logdir,
        &session,
        a.duration.as_millis(),
        start_at_ms,
    );
    let zone = format!("--zone={}", a.zone);
    let ok = match (&a.tpu, &a.instances) {
        (Some(tpu), _) => gc.interactive(&[
            "compute".to_string(),
            "tpus".into(),
            "tpu-vm".into(),
            "ssh".into(),
            tpu.clone(),
            zone,
            "--worker=all".into(),
            format!("--command={cmd}"),
        ]),
        (None, Some(list)) => {
            let names: Vec<String> = list
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if names.is_empty() {
                bail!("--instances names no VM");
            }
            gc.parallel(
                names
                    .iter()
                    .map(|n| {
                        vec![
                            "compute".to_string(),
                            "ssh".into(),
                            n.clone(),
                            zone.clone(),
                            format!("--command={cmd}"),
                        ]
                    })
                    .collect(),
            )
        }
        (None, None) => bail!("give --tpu NAME or --instances A,B"),
    };
    if !gc.dry_run {
        println!(
            "session {session} in {logdir}/plugins/profile/{session} (every worker's window started at Unix time {start_at_ms} ms)"
        );
    }
    ok
}
