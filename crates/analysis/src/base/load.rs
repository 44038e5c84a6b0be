//! Turning a host file into a [`Profile`]: read bytes from the store, pick the importer.

use std::path::PathBuf;
use xlens_model::Profile;
use xlens_store::{Format, HostFile, StoreError};

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
}

/// Why an importer could not read a file's bytes.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    XSpace(#[from] xlens_xspace::DecodeError),
    #[error(transparent)]
    Chrome(#[from] xlens_chrome::DecodeError),
}

/// Loads one host file into the model.
pub fn load_host(file: &HostFile) -> Result<Profile, LoadError> {
    load_path(&file.path, file.format)
}

/// [`load_host`], reading only what `reads` says.
pub fn load_host_for(file: &HostFile, reads: Reads) -> Result<Profile, LoadError> {
    if let Some((p, _)) = load_inflating(&file.path, file.format, reads)? {
        return Ok(p);
    }
    let bytes = xlens_store::read_path(&file.path, file.format)?;
    decode_bytes_for(&bytes, file.format, reads).map_err(|source| LoadError::Decode {
        path: file.path.clone(),
        source,
    })
}

/// Loads any profile path (format from its name, `.xplane.pb` assumed otherwise).
pub fn load_path(path: &std::path::Path, format: Format) -> Result<Profile, LoadError> {
    if let Some((p, _)) = load_inflating(path, format, Reads::Everything)? {
        return Ok(p);
    }
    let bytes = xlens_store::read_path(path, format)?;
    decode_bytes(&bytes, format).map_err(|source| LoadError::Decode {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads a gzip Chrome trace (how the PyTorch profiler writes them), parsing each part of the
/// file while the next is inflated ([`xlens_chrome::decode_reading`]). Returns the profile and
/// the size of its JSON in bytes; `Ok(None)` when the file is to be read whole instead (not a
/// gzip Chrome trace, too small to gain by this, or anything unusual about it: reading it whole
/// then says what). The profile is the one a whole read makes.
pub fn load_inflating(
    path: &std::path::Path,
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

/// What a load reads of a file: everything, or only what one tool needs (a tool says which in
/// [`crate::base::tool::Tool::READS`]; the command line reads that much when it runs that tool
/// alone).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reads {
    #[default]
    Everything,
    /// PyTorch traces: the GPU's activity, the runtime's launch calls and annotations, without
    /// host-side operator and Python slices or launch flow arrows
    /// ([`xlens_chrome::GPU_ACTIVITY`]); other formats are read whole.
    GpuActivity,
    /// A host's summary ([`crate::base::hosts::summary::HostSummary`]): XSpace profiles without the
    /// event stats no summary reads ([`SUMMARY_UNUSED_STATS`]); other formats are read whole.
    Summary,
}

/// Event stats that no part of a host's summary reads (steps, step breakdown, ops and their
/// cost, module memory, clock alignment, the device): source locations (`_src`, shown by the
/// trace viewer), the run id of each XLA op execution (`run_id`, read by nothing), and the
/// device of an op or allocation (`device_ordinal`, read by the trace viewer and the memory
/// profile). Together they are 7 of the 16.7 million event stats of the 207 MB
/// `make_profiles.sh large` profile. A summary from a read without them equals one from a full
/// read (`crates/analysis/tests/it/summary_reads.rs`).
pub const SUMMARY_UNUSED_STATS: &[&str] = &["_src", "run_id", "device_ordinal"];

/// Decodes bytes from the store with the importer for `format` (the XSpace importer releases
/// pages as it passes them).
pub fn decode_bytes(
    bytes: &xlens_store::FileBytes,
    format: Format,
) -> Result<Profile, ImportError> {
    decode_bytes_for(bytes, format, Reads::Everything)
}

/// [`decode_bytes`], reading only what `reads` says.
pub fn decode_bytes_for(
    bytes: &xlens_store::FileBytes,
    format: Format,
    reads: Reads,
) -> Result<Profile, ImportError> {
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

/// The small real JAX CPU profile committed under `fixtures/`, for unit tests.
#[cfg(test)]
pub(crate) fn jax_fixture() -> Profile {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"
    );
    load_path(std::path::Path::new(path), Format::XSpace).expect("the committed JAX fixture")
}
