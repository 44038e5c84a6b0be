//! A short fuzzing run of each target with a fixed seed: the harness works end to end (seeds
//! load, mutations run, executions are caught) and finds no panic. The long runs (a million
//! executions per target) are `cargo run --release -p xlens-fuzz -- TARGET --execs 1000000`.

use std::path::PathBuf;
use xlens_fuzz::engine::{fuzz, Config, Report, Target};
use xlens_fuzz::seeds::fixtures_dir;
use xlens_fuzz::targets::{chrome::ChromeTarget, query::QueryTarget, xspace::XSpaceTarget};

fn smoke<T: Target>(target: &mut T, execs: u64) -> Report {
    let cfg = Config {
        execs,
        seed: 42,
        out: std::env::temp_dir()
            .join("xlens-fuzz-smoke")
            .join(target.name()),
        progress: None,
        max_corpus: 512,
        max_entry_len: xlens_fuzz::seeds::MAX_SEED,
        show: 0,
        max_rss_growth: 256 << 20,
        max_rss: 4096 << 20,
        timeout: None,
    };
    let r = fuzz(target, &cfg);
    assert_eq!(r.execs, execs);
    assert!(
        r.crashes.is_empty(),
        "{} panicked; inputs under {}: {:#?}",
        r.target,
        PathBuf::from(&cfg.out).display(),
        r.crashes
    );
    assert!(r.corpus > r.seeds, "no input found anything new: {r:?}");
    r
}

#[test]
fn xspace_importer_smoke() {
    let mut t = XSpaceTarget::new(&fixtures_dir(), 8).expect("seeds");
    smoke(&mut t, 300);
}

#[test]
fn chrome_importer_smoke() {
    let mut t = ChromeTarget::new(&fixtures_dir(), 8).expect("seeds");
    smoke(&mut t, 300);
}

#[test]
fn query_parsers_smoke() {
    let mut t = QueryTarget::new(&fixtures_dir(), 4).expect("server over the fixtures");
    smoke(&mut t, 300);
}
