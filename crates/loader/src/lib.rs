//! The loader: the one place that decides how a host file's bytes become a [`Profile`].
//!
//! Every caller (the command line, the server, `xlens hosts`, capture, benchmarks, Python, tests)
//! says what it wants in a [`Policy`] and calls [`open`]:
//! - how the bytes are obtained ([`Bytes`]): copied into memory (a long-running process), or
//!   memory-mapped with the SIGBUS guard ([`sigbus`]) for one-shot commands, their pages brought
//!   in ahead or on demand;
//! - how much of the file is decoded ([`Reads`]): everything, or only what one tool or a host's
//!   summary needs;
//! - whether a panic in an importer is caught and returned as this file's error.
//!
//! A gzip Chrome trace is always inflated while its head is parsed ([`xlens_chrome::decode_reading`]);
//! the other formats go to their importer whole, the XSpace importer giving pages back as it
//! passes them.

mod sigbus;

use std::path::{Path, PathBuf};
use std::time::Instant;
pub use xlens_model::Profile;
pub use xlens_store::Paging;
use xlens_store::{FileBytes, Format, HostFile, StoreError};

/// Why a host file could not be loaded; always names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}")]
    Decode {
        path: PathBuf,
        #[source]
        source: ImportError,
    },
    /// An importer panicked on the file (under [`Policy::guard_panics`]).
    #[error("{}: the importer crashed on this file (a bug in xlens; please report it)", path.display())]
    Crashed { path: PathBuf },
}

/// Why an importer could not read a file's bytes.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    XSpace(#[from] xlens_xspace::DecodeError),
    #[error(transparent)]
    Chrome(#[from] xlens_chrome::DecodeError),
}

/// What a load reads of a file: everything, or only what one tool needs (a tool says which in
/// its `READS`; the command line reads that much when it runs that tool alone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reads {
    #[default]
    Everything,
    /// PyTorch traces: the GPU's activity, the runtime's launch calls and annotations, without
    /// host-side operator and Python slices or launch flow arrows
    /// ([`xlens_chrome::GPU_ACTIVITY`]); other formats are read whole.
    GpuActivity,
    /// A host's summary (the analysis crate's `HostSummary`): XSpace profiles without the event
    /// stats no summary reads ([`SUMMARY_UNUSED_STATS`]); other formats are read whole.
    Summary,
    /// XSpace profiles: the planes' names, metadata and stats without their lines (for tools
    /// that read the HLO modules of the metadata plane alone); other formats are read whole.
    Metadata,
    /// XSpace profiles: the lines of the device planes (`/device:*`) only, on the time axis of a
    /// whole read (for tools of the device timeline alone); other formats are read whole.
    DevicePlanes,
}

/// Event stats that no part of a host's summary reads (steps, step breakdown, ops and their
/// cost, module memory, clock alignment, the device): source locations (`_src`, shown by the
/// trace viewer), the run id of each XLA op execution (`run_id`, read by nothing), and the
/// device of an op or allocation (`device_ordinal`, read by the trace viewer and the memory
/// profile). Together they are 7 of the 16.7 million event stats of the 207 MB
/// `make_profiles.sh large` profile. A summary from a read without them equals one from a full
/// read (`crates/analysis/tests/it/summary_reads.rs`).
pub const SUMMARY_UNUSED_STATS: &[&str] = &["_src", "run_id", "device_ordinal"];

/// How a file's bytes are obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Bytes {
    /// Copied into memory: safe for a process that lives on while files change under it.
    #[default]
    Copy,
    /// Memory-mapped, with a SIGBUS handler that turns a file truncated under the mapping into
    /// an error naming it and an exit: no copy and no fresh pages, for one-shot commands.
    Map(Paging),
}

/// How [`open`] loads a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Policy {
    pub bytes: Bytes,
    pub reads: Reads,
    /// Return a panic of the importer as [`LoadError::Crashed`] instead of unwinding (for a
    /// server, which must outlive a bug in one file's importer).
    pub guard_panics: bool,
}

impl Policy {
    /// A one-shot command: the file mapped, its pages read ahead; `reads` of it decoded (a read
    /// of the metadata alone pages in only what it reads: the lines' bytes are never touched).
    pub const fn command(reads: Reads) -> Self {
        let paging = match reads {
            Reads::Metadata => Paging::OnDemand,
            _ => Paging::Ahead,
        };
        Policy {
            bytes: Bytes::Map(paging),
            reads,
            guard_panics: false,
        }
    }

    /// A long-running server: the file copied, all of it decoded, an importer's panic caught.
    pub const fn server() -> Self {
        Policy {
            bytes: Bytes::Copy,
            reads: Reads::Everything,
            guard_panics: true,
        }
    }

    /// A host's summary among many (bounded memory): the file mapped and paged in as the
    /// decoder reaches it, only what a summary reads decoded.
    pub const fn summary() -> Self {
        Policy {
            bytes: Bytes::Map(Paging::OnDemand),
            reads: Reads::Summary,
            guard_panics: false,
        }
    }
}

/// Loads one host file into the model as `policy` says.
pub fn open(file: &HostFile, policy: Policy) -> Result<Profile, LoadError> {
    open_path(&file.path, file.format, policy)
}

/// [`open`] for any profile path (or bucket URL) of `format`.
pub fn open_path(path: &Path, format: Format, policy: Policy) -> Result<Profile, LoadError> {
    open_timed(path, format, policy).map(|(p, _)| p)
}

/// The shorthand of tests and tools: [`open`] with the default policy (copied, read whole).
pub fn load_host(file: &HostFile) -> Result<Profile, LoadError> {
    open(file, Policy::default())
}

/// The shorthand of tests and tools: [`open_path`] with the default policy.
pub fn load_path(path: &Path, format: Format) -> Result<Profile, LoadError> {
    open_path(path, format, Policy::default())
}

/// Where a load's time went (for `xlens bench`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    /// Seconds to obtain the bytes (copy or map); `None` for a gzip trace, whose bytes are
    /// inflated while they are decoded (the time is then all in `decode_s`).
    pub read_s: Option<f64>,
    /// Seconds to decode (for a gzip trace: to inflate and decode).
    pub decode_s: f64,
    /// The bytes the importer read (inflated for a gzip file).
    pub bytes: usize,
}

/// [`open_path`], saying where the time went.
pub fn open_timed(
    path: &Path,
    format: Format,
    policy: Policy,
) -> Result<(Profile, Timing), LoadError> {
    if !policy.guard_panics {
        return load(path, format, policy);
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(path, format, policy))) {
        Ok(r) => r,
        Err(_) => Err(LoadError::Crashed {
            path: path.to_path_buf(),
        }),
    }
}

fn load(path: &Path, format: Format, policy: Policy) -> Result<(Profile, Timing), LoadError> {
    let t0 = Instant::now();
    if let Some((p, bytes)) = load_inflating(path, format, policy.reads)? {
        let decode_s = t0.elapsed().as_secs_f64();
        return Ok((
            p,
            Timing {
                read_s: None,
                decode_s,
                bytes,
            },
        ));
    }
    let bytes = match policy.bytes {
        Bytes::Copy => xlens_store::read_path(path, format)?,
        Bytes::Map(paging) => sigbus::map(path, format, paging)?,
    };
    let t1 = Instant::now();
    let p = decode(&bytes, format, policy.reads).map_err(|source| LoadError::Decode {
        path: path.to_path_buf(),
        source,
    })?;
    let timing = Timing {
        read_s: Some((t1 - t0).as_secs_f64()),
        decode_s: t1.elapsed().as_secs_f64(),
        bytes: bytes.bytes().len(),
    };
    Ok((p, timing))
}

/// Loads a gzip Chrome trace (how the PyTorch profiler writes them), parsing each part of the
/// file while the next is inflated ([`xlens_chrome::decode_reading`]). Returns the profile and
/// the size of its JSON in bytes; `Ok(None)` when the file is to be read whole instead (not a
/// gzip Chrome trace, too small to gain by this, or anything unusual about it: reading it whole
/// then says what). The profile is the one a whole read makes.
fn load_inflating(
    path: &Path,
    format: Format,
    reads: Reads,
) -> Result<Option<(Profile, usize)>, LoadError> {
    if format != Format::ChromeTrace {
        return Ok(None);
    }
    let Some(file) = xlens_store::open_gzip(path)? else {
        return Ok(None);
    };
    let skip = (reads == Reads::GpuActivity).then_some(xlens_chrome::GPU_ACTIVITY);
    Ok(xlens_chrome::decode_reading(file.reader, file.size, skip))
}

/// Decodes bytes from the store with the importer for `format`, reading only what `reads`
/// says (the XSpace importer gives pages back as it passes them). For tests that obtain the
/// bytes themselves; everything else calls [`open`].
pub fn decode(bytes: &FileBytes, format: Format, reads: Reads) -> Result<Profile, ImportError> {
    match format {
        Format::ChromeTrace => Ok(xlens_chrome::decode_with(
            bytes.bytes(),
            (reads == Reads::GpuActivity).then_some(xlens_chrome::GPU_ACTIVITY),
        )?),
        Format::XSpace | Format::XSpaceRiegeli => {
            let release = |start, end| bytes.release_range(start, end);
            let leave = match reads {
                // The step grouping follows flows through the lines' flow lists: the stats
                // that op metrics and the grouping scan are then about half as long.
                Reads::Summary => xlens_xspace::LeaveOut {
                    stats: SUMMARY_UNUSED_STATS,
                    flow_stats: true,
                    lines: false,
                    planes: None,
                },
                Reads::Metadata => xlens_xspace::LeaveOut {
                    lines: true,
                    ..Default::default()
                },
                Reads::DevicePlanes => xlens_xspace::LeaveOut {
                    planes: Some(|name| name.starts_with("/device:")),
                    ..Default::default()
                },
                Reads::Everything | Reads::GpuActivity => xlens_xspace::LeaveOut::default(),
            };
            // A mapped file's pages are given back as its lines are read, not only once each
            // line is done: a large line's pages do not pile up (on the 207 MB JAX profile,
            // up to 75 MB resident at once otherwise).
            let bring_in = |start, end| bytes.bring_in(start, end);
            let when = if bytes.rereadable() {
                xlens_xspace::Release::AsRead {
                    ahead: Some(&bring_in),
                }
            } else {
                xlens_xspace::Release::Lines
            };
            Ok(xlens_xspace::decode_leaving_out(
                bytes.bytes(),
                &release,
                leave,
                when,
            )?)
        }
    }
}
