//! Robustness of the XSpace decoder: it must never panic, whatever the bytes, and every error must
//! say where (a byte offset inside the input) decoding failed. No fuzzing crate: fixed-seed
//! splitmix64 keeps every run identical; a failing input is saved to `CARGO_TARGET_TMPDIR`.

mod bad_input;
mod check;
mod decoder_paths;
mod flows;
mod fuzz;
mod hand_built;
mod rng;
mod stat_keys;
mod truncation;
mod wire;

use std::io::Read;
use std::sync::OnceLock;

use xlens_model::{Profile, StrId};

const PROFILE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/logdir/plugins/profile"
);

// ------------------------------------------------------------------------------------------------
// Fixtures.

/// The real fixtures, uncompressed, sorted by path.
fn fixtures() -> &'static [(String, Vec<u8>)] {
    static F: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    F.get_or_init(|| {
        let mut paths = Vec::new();
        for run in std::fs::read_dir(PROFILE_DIR).expect("fixtures/logdir/plugins/profile") {
            for f in std::fs::read_dir(run.unwrap().path()).unwrap() {
                let p = f.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz") {
                    paths.push(p);
                }
            }
        }
        paths.sort();
        assert!(paths.len() >= 2, "expected real fixtures in {PROFILE_DIR}");
        paths
            .into_iter()
            .map(|p| {
                let raw = std::fs::read(&p).unwrap();
                let bytes = if p.extension().is_some_and(|e| e == "gz") {
                    let mut out = Vec::new();
                    flate2::read::GzDecoder::new(&raw[..])
                        .read_to_end(&mut out)
                        .unwrap();
                    out
                } else {
                    raw
                };
                let run = p.parent().unwrap().file_name().unwrap();
                (run.to_string_lossy().into_owned(), bytes)
            })
            .collect()
    })
}

fn key(p: &Profile, name: &str) -> StrId {
    p.key(name)
        .unwrap_or_else(|| panic!("no string {name:?} in the profile"))
}
