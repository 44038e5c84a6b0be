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

/// Loads any profile path (format from its name, `.xplane.pb` assumed otherwise).
pub fn load_path(path: &std::path::Path, format: Format) -> Result<Profile, LoadError> {
    let bytes = xlens_store::read_path(path, format)?;
    decode_bytes(&bytes, format).map_err(|source| LoadError::Decode {
        path: path.to_path_buf(),
        source,
    })
}

/// Decodes bytes from the store with the importer for `format` (the XSpace importer releases
/// pages as it passes them).
pub fn decode_bytes(
    bytes: &xlens_store::FileBytes,
    format: Format,
) -> Result<Profile, ImportError> {
    match format {
        Format::ChromeTrace => Ok(xlens_chrome::decode(bytes.bytes())?),
        Format::XSpace | Format::XSpaceRiegeli => {
            Ok(xlens_xspace::decode_with(bytes.bytes(), &|start, end| {
                bytes.release_range(start, end)
            })?)
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
