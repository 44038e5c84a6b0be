//! Shared by the integration tests: where the repository's fixtures are and how to load one.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use xlens_model::Profile;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The profile file of a fixture run (`fixtures/logdir/plugins/profile/<run>/*.xplane.pb[.gz]`).
pub fn fixture_file(run: &str) -> PathBuf {
    let dir = root().join("fixtures/logdir/plugins/profile").join(run);
    std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".xplane.pb"))
        .expect("xplane file")
}

/// A fixture run decoded into the model.
pub fn load(run: &str) -> Profile {
    xlens_analysis::load::load_path(&fixture_file(run), xlens_store::Format::XSpace).expect("load")
}
