//! `xlens cloud`: a viewer for a bucket hosted on a Compute Engine VM, through the `gcloud`
//! command line as XProf's `xprofiler` does it (`create`, `list`, `delete`, `connect`), and
//! `capture` from every worker of a TPU VM (or of GCE VMs) over `gcloud ... ssh`.
//!
//! The VM runs this same binary: `create` uploads it to the bucket once per build
//! (`gs://BUCKET/.xlens/bin/VERSION/linux-ARCH/HASH/xlens`), labels the VM (`xlens=server`,
//! `xlens-version`, `xlens-logdir` = a hash of the log directory, since labels cannot hold a
//! URL) and puts the log directory, binary URL, port and a fresh token in its metadata, where
//! the startup script (`startup.sh`) reads them and runs `xlens serve` with the token.

mod capture;
mod create;
mod gcloud;
mod vms;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use capture::*;
use create::*;
use gcloud::{sh_quote, Gcloud};
use vms::*;

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
