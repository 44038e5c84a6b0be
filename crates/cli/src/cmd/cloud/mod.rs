//! `xlens cloud`: a viewer for a bucket hosted on a Compute Engine VM, through the `gcloud`
//! command line as XProf's `xprofiler` does it (`create`, `list`, `delete`, `connect`), and
//! `capture` from every worker of a TPU VM (or of GCE VMs) over `gcloud ... ssh`.
//!
//! The VM runs this same binary: `create` uploads it to the bucket once per build
//! (`gs://BUCKET/.xlens/bin/VERSION/linux-ARCH/HASH/xlens`), labels the VM (`xlens=server`,
//! `xlens-version`, `xlens-logdir` = a hash of the log directory, since labels cannot hold a
//! URL) and puts the log directory, binary URL, port and a fresh token in its metadata, where
//! the startup script (`startup.sh`) reads them and runs `xlens serve` with the token.

mod gcloud;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use gcloud::{sh_quote, Gcloud};

/// The startup script every VM made by `create` runs at boot.
pub const STARTUP_SCRIPT: &str = include_str!("startup.sh");

/// Options every `xlens cloud` command takes.
#[derive(clap::Args, Clone)]
pub struct GcloudArgs {
    /// The Google Cloud project (default: gcloud's configured project).
    #[arg(long)]
    pub project: Option<String>,
    /// Print every gcloud command instead of running it.
    #[arg(long)]
    pub dry_run: bool,
}

/// A viewer for a gs:// log directory hosted on a Compute Engine VM (create, list, delete,
/// connect), and capture from every worker of a TPU VM, through the gcloud CLI.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub cmd: CloudCmd,
}

#[derive(Subcommand)]
pub enum CloudCmd {
    /// Create a VM that serves a gs:// log directory with this xlens, behind a token.
    Create {
        /// The log directory (gs://BUCKET/PATH) the VM serves.
        #[arg(long)]
        logdir: String,
        #[arg(long)]
        zone: String,
        /// VM name (default: xlens-HASH-RANDOM).
        #[arg(long)]
        name: Option<String>,
        #[arg(long, default_value = "e2-highmem-4")]
        machine_type: String,
        /// The port the VM serves on.
        #[arg(long, default_value_t = 8791)]
        port: u16,
        /// A Linux build of xlens for the VM (default: this binary, when it is one).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Create even when another xlens VM already serves this log directory.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        g: GcloudArgs,
    },
    /// List the VMs `create` made: name, zone, log directory, state, URL.
    List {
        #[arg(long)]
        zone: Option<String>,
        /// Only the VMs serving this log directory.
        #[arg(long)]
        logdir: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        g: GcloudArgs,
    },
    /// Delete a VM (by --name) or the VMs serving a log directory (--logdir); asks first.
    Delete {
        #[arg(long, required_unless_present = "logdir")]
        name: Option<String>,
        #[arg(long, conflicts_with = "name")]
        logdir: Option<String>,
        #[arg(long)]
        zone: Option<String>,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        g: GcloudArgs,
    },
    /// Open an SSH tunnel to a VM and print the local URL (with the token) to open.
    Connect {
        #[arg(long, required_unless_present = "logdir")]
        name: Option<String>,
        #[arg(long, conflicts_with = "name")]
        logdir: Option<String>,
        #[arg(long)]
        zone: Option<String>,
        /// Local end of the tunnel (default: the VM's port).
        #[arg(long)]
        local_port: Option<u16>,
        #[command(flatten)]
        g: GcloudArgs,
    },
    /// Capture every worker of a TPU VM (--tpu) or of GCE VMs (--instances A,B) at one start
    /// time into one session, running `xlens capture` on each worker over gcloud's SSH.
    Capture {
        #[arg(
            long,
            required_unless_present = "instances",
            conflicts_with = "instances"
        )]
        tpu: Option<String>,
        /// GCE VMs, comma-separated.
        #[arg(long)]
        instances: Option<String>,
        #[arg(long)]
        zone: String,
        /// The profiler server's port on each worker (jax.profiler.start_server(PORT)).
        #[arg(long, default_value_t = 9012)]
        port: u16,
        /// Where the session goes (gs://...; every worker writes its own file there).
        #[arg(long)]
        logdir: String,
        #[arg(long, default_value = "2s", value_parser = crate::cmd::capture::parse_duration)]
        duration: std::time::Duration,
        /// Session name (default: a YYYY_MM_DD_HH_MM_SS timestamp).
        #[arg(long)]
        session: Option<String>,
        /// How long after now the window starts on every worker (time for SSH to connect).
        #[arg(long, default_value = "10s", value_parser = crate::cmd::capture::parse_duration)]
        lead: std::time::Duration,
        /// xlens already installed on the workers at this path (default: fetched from the
        /// bucket, where this binary is uploaded).
        #[arg(long)]
        remote_binary: Option<String>,
        /// A Linux build of xlens for the workers (default: this binary, when it is one).
        #[arg(long)]
        binary: Option<PathBuf>,
        #[command(flatten)]
        g: GcloudArgs,
    },
}

/// Runs one `xlens cloud` command.
pub fn run(cmd: CloudCmd) -> Result<()> {
    match cmd {
        CloudCmd::Create {
            logdir,
            zone,
            name,
            machine_type,
            port,
            binary,
            yes,
            g,
        } => create(
            &Gcloud::new(&g)?,
            &CreateArgs {
                logdir,
                zone,
                name,
                machine_type,
                port,
                binary,
                yes,
            },
        ),
        CloudCmd::List {
            zone,
            logdir,
            json,
            g,
        } => list(&Gcloud::new(&g)?, zone.as_deref(), logdir.as_deref(), json),
        CloudCmd::Delete {
            name,
            logdir,
            zone,
            yes,
            g,
        } => delete(&Gcloud::new(&g)?, name, logdir, zone, yes),
        CloudCmd::Connect {
            name,
            logdir,
            zone,
            local_port,
            g,
        } => connect(&Gcloud::new(&g)?, name, logdir, zone, local_port),
        CloudCmd::Capture {
            tpu,
            instances,
            zone,
            port,
            logdir,
            duration,
            session,
            lead,
            remote_binary,
            binary,
            g,
        } => capture(
            &Gcloud::new(&g)?,
            &CaptureArgs {
                tpu,
                instances,
                zone,
                port,
                logdir,
                duration,
                session,
                lead,
                remote_binary,
                binary,
            },
        ),
    }
}

/// 64-bit FNV-1a as 16 hex digits: the log directory's label and a binary's folder.
pub fn short_hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The `xlens-logdir` label of a log directory (a trailing slash does not count).
pub fn logdir_label(logdir: &str) -> String {
    short_hash(logdir.trim_end_matches('/').as_bytes())
}

/// `xlens-version` label value: labels allow lowercase letters, digits, `-` and `_`.
fn version_label() -> String {
    env!("CARGO_PKG_VERSION")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// The bucket of a `gs://BUCKET/...` URL.
fn gs_bucket(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("gs://")?;
    let b = rest.split('/').next()?;
    (!b.is_empty()).then_some(b)
}

/// A VM name Compute Engine accepts: a lowercase letter, then up to 62 of `[a-z0-9-]`, not
/// ending in `-`.
fn valid_vm_name(n: &str) -> bool {
    let b = n.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && !n.ends_with('-')
}

/// The CPU architecture of a machine type's family (Arm: T2A, C4A, N4A, A4X).
fn machine_arch(machine_type: &str) -> &'static str {
    let family = machine_type.split('-').next().unwrap_or_default();
    match family {
        "t2a" | "c4a" | "n4a" | "a4x" => "aarch64",
        _ => "x86_64",
    }
}

/// The architecture of a Linux ELF executable (`None`: not ELF, or another machine).
pub fn elf_arch(head: &[u8]) -> Option<&'static str> {
    if head.len() < 20 || &head[..4] != b"\x7fELF" {
        return None;
    }
    // e_machine, little-endian on both.
    match u16::from_le_bytes([head[18], head[19]]) {
        0x3e => Some("x86_64"),
        0xb7 => Some("aarch64"),
        _ => None,
    }
}

/// The binary to run on a VM of `arch`: `--binary`, else this one; refused (with a hint) when it
/// is not a Linux build for `arch`. Returns its path and bytes.
fn binary_for(given: Option<&PathBuf>, arch: &str, what: &str) -> Result<(PathBuf, Vec<u8>)> {
    let path = match given {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("finding this xlens binary")?,
    };
    let bytes =
        std::fs::read(&path).with_context(|| format!("reading the binary {}", path.display()))?;
    let hint = format!(
        "build one (`cargo build --release --target {arch}-unknown-linux-gnu`, on a glibc no newer than the VM image's) and pass --binary PATH"
    );
    match (elf_arch(&bytes), given) {
        (Some(a), _) if a == arch => Ok((path, bytes)),
        (found, Some(_)) => bail!(
            "{} is {}, but {what} runs Linux {arch}: {hint}",
            path.display(),
            found.map_or("not a Linux executable".to_string(), |a| format!(
                "a Linux {a} build"
            ))
        ),
        (found, None) => bail!(
            "this xlens is a {} build, but {what} runs Linux {arch}: {hint}",
            found.map_or(
                format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
                |a| format!("Linux {a}")
            )
        ),
    }
}

/// Puts the binary in the bucket unless it is there; returns its URL.
fn stage_binary(
    gc: &Gcloud,
    bucket: &str,
    arch: &str,
    bytes: &[u8],
    path: &std::path::Path,
) -> Result<String> {
    let url = format!(
        "gs://{bucket}/.xlens/bin/{}/linux-{arch}/{}/xlens",
        env!("CARGO_PKG_VERSION"),
        short_hash(bytes)
    );
    let there = gc.succeeds(&["storage", "ls", &url])?;
    if there != Some(true) {
        gc.output(&["storage", "cp", &path.display().to_string(), &url])?;
        if !gc.dry_run {
            eprintln!(
                "xlens: uploaded {} ({} bytes) to {url}",
                path.display(),
                bytes.len()
            );
        }
    } else {
        eprintln!("xlens: {url} is already there");
    }
    Ok(url)
}

/// One VM `create` made, as `list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Vm {
    pub name: String,
    pub zone: String,
    pub status: String,
    pub logdir: String,
    pub port: Option<u16>,
    #[serde(skip)]
    pub token: Option<String>,
    pub external_ip: Option<String>,
    pub internal_ip: Option<String>,
    pub version: Option<String>,
    /// `http://EXTERNAL_IP:PORT/` (reachable once a firewall rule allows it).
    pub url: Option<String>,
}

/// The VMs in `gcloud compute instances list --format=json` output.
pub fn parse_vms(v: &Value) -> Vec<Vm> {
    let Some(list) = v.as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|i| {
            let meta = |k: &str| {
                i["metadata"]["items"]
                    .as_array()
                    .and_then(|items| items.iter().find(|it| it["key"] == k))
                    .and_then(|it| it["value"].as_str())
                    .map(str::to_string)
            };
            let nic = &i["networkInterfaces"][0];
            let external_ip = nic["accessConfigs"][0]["natIP"]
                .as_str()
                .map(str::to_string);
            let port = meta("xlens-port").and_then(|p| p.parse().ok());
            Vm {
                name: i["name"].as_str().unwrap_or_default().to_string(),
                zone: i["zone"]
                    .as_str()
                    .unwrap_or_default()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                status: i["status"].as_str().unwrap_or("UNKNOWN").to_string(),
                logdir: meta("xlens-logdir").unwrap_or_else(|| "?".into()),
                url: match (&external_ip, port) {
                    (Some(ip), Some(p)) => Some(format!("http://{ip}:{p}/")),
                    _ => None,
                },
                port,
                token: meta("xlens-token"),
                internal_ip: nic["networkIP"].as_str().map(str::to_string),
                external_ip,
                version: i["labels"]["xlens-version"].as_str().map(str::to_string),
            }
        })
        .collect()
}

/// The xlens VMs (in `zone`, serving `logdir`), or `None` in a dry run.
fn list_vms(gc: &Gcloud, zone: Option<&str>, logdir: Option<&str>) -> Result<Option<Vec<Vm>>> {
    let mut filter = "labels.xlens=server".to_string();
    if let Some(l) = logdir {
        filter.push_str(&format!(" AND labels.xlens-logdir={}", logdir_label(l)));
    }
    let mut args = vec![
        "compute".to_string(),
        "instances".into(),
        "list".into(),
        format!("--filter={filter}"),
    ];
    if let Some(z) = zone {
        args.push(format!("--zones={z}"));
    }
    args.push("--format=json".into());
    let Some(out) = gc.output(&args)? else {
        return Ok(None);
    };
    let v: Value = serde_json::from_str(&out)
        .with_context(|| format!("gcloud's instance list is not JSON: {}", first_line(&out)))?;
    let mut vms = parse_vms(&v);
    // The label is a hash: keep only exact log directories.
    if let Some(l) = logdir {
        vms.retain(|vm| {
            vm.logdir == "?" || vm.logdir.trim_end_matches('/') == l.trim_end_matches('/')
        });
    }
    Ok(Some(vms))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

struct CreateArgs {
    logdir: String,
    zone: String,
    name: Option<String>,
    machine_type: String,
    port: u16,
    binary: Option<PathBuf>,
    yes: bool,
}

fn create(gc: &Gcloud, a: &CreateArgs) -> Result<()> {
    let logdir = a.logdir.trim_end_matches('/').to_string();
    let Some(bucket) = gs_bucket(&logdir) else {
        bail!("--logdir must be a gs://BUCKET/PATH URL (the VM reads it with its own credentials), not `{}`", a.logdir);
    };
    if logdir.contains(',') {
        bail!("the log directory `{logdir}` has a comma, which gcloud's --metadata cannot carry");
    }
    let name = match &a.name {
        Some(n) if valid_vm_name(n) => n.clone(),
        Some(n) => bail!("`{n}` is not a VM name: a lowercase letter, then lowercase letters, digits or dashes (at most 63, not ending in a dash)"),
        None => format!(
            "xlens-{}-{}",
            &logdir_label(&logdir)[..8],
            &xlens_server::access::generate_token()?[..6]
        ),
    };
    gc.preflight()?;
    if let Some(vms) = list_vms(gc, None, Some(&logdir))? {
        if !vms.is_empty() && !a.yes {
            let names: Vec<String> = vms
                .iter()
                .map(|v| format!("{} ({})", v.name, v.zone))
                .collect();
            bail!(
                "{logdir} is already served by {}; `xlens cloud connect --logdir {logdir}` opens it, or pass --yes to create another",
                names.join(", ")
            );
        }
    }
    let arch = machine_arch(&a.machine_type);
    let what = format!("a {} VM", a.machine_type);
    let (path, bytes) = binary_for(a.binary.as_ref(), arch, &what)?;
    let binary_url = stage_binary(gc, bucket, arch, &bytes, &path)?;
    let token = xlens_server::access::generate_token()?;
    let script =
        std::env::temp_dir().join(format!("xlens-startup-{}-{name}.sh", std::process::id()));
    std::fs::write(&script, STARTUP_SCRIPT)
        .with_context(|| format!("writing the startup script to {}", script.display()))?;
    let args = vec![
        "compute".to_string(),
        "instances".into(),
        "create".into(),
        name.clone(),
        format!("--zone={}", a.zone),
        format!("--machine-type={}", a.machine_type),
        "--image-family=debian-12".into(),
        format!(
            "--image-project=debian-cloud"
        ),
        // Reading the bucket is all the server needs.
        "--scopes=storage-ro".into(),
        "--tags=xlens-server".into(),
        format!(
            "--labels=xlens=server,xlens-version={},xlens-logdir={}",
            version_label(),
            logdir_label(&logdir)
        ),
        format!(
            "--metadata=xlens-logdir={logdir},xlens-binary={binary_url},xlens-port={},xlens-token={token}",
            a.port
        ),
        format!("--metadata-from-file=startup-script={}", script.display()),
        "--format=json".into(),
    ];
    let out = gc.output(&args);
    if !gc.dry_run {
        let _ = std::fs::remove_file(&script);
    }
    let Some(out) = out? else {
        eprintln!(
            "xlens: (dry run) the startup script is in {}",
            script.display()
        );
        return Ok(());
    };
    let vm = serde_json::from_str::<Value>(&out)
        .ok()
        .map(|v| parse_vms(&v))
        .and_then(|v| v.into_iter().next());
    println!(
        "created {name} in {} serving {logdir} on port {} (it starts serving about a minute after boot)",
        a.zone, a.port
    );
    println!(
        "open it through an SSH tunnel:  xlens cloud connect --name {name} --zone {}",
        a.zone
    );
    if let Some(ip) = vm.and_then(|v| v.external_ip) {
        println!(
            "or directly, once a firewall rule lets you reach tcp:{} on the network tag xlens-server\n  (e.g. gcloud compute firewall-rules create xlens-{} --allow=tcp:{} --target-tags=xlens-server --source-ranges=YOUR_IP/32):\n  http://{ip}:{}/?token={token}",
            a.port, a.port, a.port, a.port
        );
    }
    Ok(())
}

fn list(gc: &Gcloud, zone: Option<&str>, logdir: Option<&str>, json: bool) -> Result<()> {
    gc.preflight()?;
    let Some(vms) = list_vms(gc, zone, logdir)? else {
        return Ok(());
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&vms)?);
        return Ok(());
    }
    if vms.is_empty() {
        println!(
            "no xlens VMs{}",
            zone.map(|z| format!(" in {z}")).unwrap_or_default()
        );
        return Ok(());
    }
    let rows: Vec<[String; 5]> = vms
        .iter()
        .map(|v| {
            [
                v.name.clone(),
                v.zone.clone(),
                v.logdir.clone(),
                v.status.clone(),
                v.url.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let head = ["NAME", "ZONE", "LOG_DIRECTORY", "STATE", "URL"];
    let widths: Vec<usize> = (0..5)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].len())
                .chain([head[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c + 1 < cells.len() {
                s.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            } else {
                s.push_str(cell);
            }
        }
        s
    };
    println!("{}", line(head));
    for r in &rows {
        println!("{}", line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    Ok(())
}

/// The VMs a `--name`/`--logdir` selection names (at least one), or `None` in a dry run.
fn select(
    gc: &Gcloud,
    name: Option<&str>,
    logdir: Option<&str>,
    zone: Option<&str>,
) -> Result<Option<Vec<Vm>>> {
    let Some(mut vms) = list_vms(gc, zone, logdir)? else {
        return Ok(None);
    };
    if let Some(n) = name {
        vms.retain(|v| v.name == n);
    }
    let where_ = zone.map(|z| format!(" in {z}")).unwrap_or_default();
    if vms.is_empty() {
        match (name, logdir) {
            (Some(n), _) => {
                bail!("no xlens VM named `{n}`{where_} (`xlens cloud list` shows them)")
            }
            (None, Some(l)) => {
                bail!("no xlens VM serves {l}{where_} (`xlens cloud list` shows them)")
            }
            _ => bail!("no xlens VMs{where_}"),
        }
    }
    Ok(Some(vms))
}

fn delete(
    gc: &Gcloud,
    name: Option<String>,
    logdir: Option<String>,
    zone: Option<String>,
    yes: bool,
) -> Result<()> {
    gc.preflight()?;
    let Some(vms) = select(gc, name.as_deref(), logdir.as_deref(), zone.as_deref())? else {
        // Dry run: the command that would follow, for a named VM.
        if let (Some(n), Some(z)) = (&name, &zone) {
            gc.output(&[
                "compute",
                "instances",
                "delete",
                n,
                &format!("--zone={z}"),
                "--quiet",
            ])?;
        }
        return Ok(());
    };
    for v in &vms {
        eprintln!("  {} ({}, {}, {})", v.name, v.zone, v.logdir, v.status);
    }
    if !yes {
        eprint!(
            "delete {} VM{}? [y/N] ",
            vms.len(),
            if vms.len() == 1 { "" } else { "s" }
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer).ok();
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            bail!("nothing deleted");
        }
    }
    let mut zones: Vec<&str> = vms.iter().map(|v| v.zone.as_str()).collect();
    zones.sort_unstable();
    zones.dedup();
    for z in zones {
        let mut args = vec!["compute".to_string(), "instances".into(), "delete".into()];
        args.extend(vms.iter().filter(|v| v.zone == z).map(|v| v.name.clone()));
        args.push(format!("--zone={z}"));
        args.push("--quiet".into());
        gc.output(&args)?;
    }
    println!(
        "deleted {}",
        vms.iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn connect(
    gc: &Gcloud,
    name: Option<String>,
    logdir: Option<String>,
    zone: Option<String>,
    local_port: Option<u16>,
) -> Result<()> {
    gc.preflight()?;
    let vm = match select(gc, name.as_deref(), logdir.as_deref(), zone.as_deref())? {
        Some(vms) if vms.len() > 1 => bail!(
            "{} xlens VMs match: {}; pick one with --name (and --zone)",
            vms.len(),
            vms.iter()
                .map(|v| format!("{} ({})", v.name, v.zone))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(mut vms) => vms.remove(0),
        None => Vm {
            name: name.unwrap_or_else(|| "NAME".into()),
            zone: zone.unwrap_or_else(|| "ZONE".into()),
            status: "?".into(),
            logdir: logdir.unwrap_or_default(),
            port: Some(8791),
            token: Some("TOKEN".into()),
            external_ip: None,
            internal_ip: None,
            version: None,
            url: None,
        },
    };
    if vm.status != "RUNNING" && vm.status != "?" {
        bail!(
            "{} is {}, not RUNNING (`gcloud compute instances start {} --zone={}`)",
            vm.name,
            vm.status,
            vm.name,
            vm.zone
        );
    }
    let port = vm.port.unwrap_or(8791);
    let local = local_port.unwrap_or(port);
    let token = vm.token.clone().with_context(|| {
        format!(
            "{} has no xlens-token in its metadata: was it made by `xlens cloud create`?",
            vm.name
        )
    })?;
    println!(
        "xlens: {} ({}) serving {}: open http://127.0.0.1:{local}/?token={token} while this tunnel runs (Ctrl-C ends it)",
        vm.name, vm.zone, vm.logdir
    );
    let _ = std::io::stdout().flush();
    gc.interactive(&[
        "compute".to_string(),
        "ssh".into(),
        vm.name.clone(),
        format!("--zone={}", vm.zone),
        "--".into(),
        "-N".into(),
        "-L".into(),
        format!("{local}:localhost:{port}"),
    ])
}

struct CaptureArgs {
    tpu: Option<String>,
    instances: Option<String>,
    zone: String,
    port: u16,
    logdir: String,
    duration: std::time::Duration,
    session: Option<String>,
    lead: std::time::Duration,
    remote_binary: Option<String>,
    binary: Option<PathBuf>,
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

fn capture(gc: &Gcloud, a: &CaptureArgs) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_labels_and_arches() {
        assert!(valid_vm_name("xlens-ab12-3"));
        assert!(!valid_vm_name("Xlens"));
        assert!(!valid_vm_name("1abc"));
        assert!(!valid_vm_name("abc-"));
        assert!(!valid_vm_name(&"a".repeat(64)));
        assert_eq!(logdir_label("gs://b/p/"), logdir_label("gs://b/p"));
        assert_ne!(logdir_label("gs://b/p"), logdir_label("gs://b/q"));
        // FNV-1a 64 of the empty string and of "a" (the published test vectors).
        assert_eq!(short_hash(b""), "cbf29ce484222325");
        assert_eq!(short_hash(b"a"), "af63dc4c8601ec8c");
        assert_eq!(machine_arch("c4a-standard-8"), "aarch64");
        assert_eq!(machine_arch("e2-highmem-4"), "x86_64");
        assert_eq!(gs_bucket("gs://b/p/q"), Some("b"));
        assert_eq!(gs_bucket("s3://b/p"), None);
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[18] = 0xb7;
        assert_eq!(elf_arch(&elf), Some("aarch64"));
        assert_eq!(elf_arch(b"\xcf\xfa\xed\xfe and more bytes here"), None);
    }
}
