//! A small instrumented workload shared by the tests, and what it records.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use xlens_profiler::{step, trace};

pub const STEPS: i64 = 12;

fn work(n: u64) -> u64 {
    (0..n).fold(0u64, |a, i| a.wrapping_mul(31).wrapping_add(i))
}

/// Runs STEPS steps on the calling thread (`train` with `forward`, `backward` inside) while a
/// thread named `loader` records `load` spans; returns the loader's span count.
pub fn workload() -> i64 {
    let loader = std::thread::Builder::new()
        .name("loader".into())
        .spawn(|| {
            for _ in 0..STEPS {
                let _l = trace("load");
                std::hint::black_box(work(20_000));
            }
            STEPS
        })
        .unwrap();
    for i in 0..STEPS {
        let _s = step("train", i);
        {
            let _f = trace("forward");
            std::hint::black_box(work(20_000));
        }
        let _b = trace("backward");
        std::hint::black_box(work(40_000));
    }
    loader.join().unwrap()
}

/// Event counts by name in a file, as xlens reads it; and the thread (line) names.
pub fn xlens_counts(file: &Path) -> (BTreeMap<String, usize>, Vec<String>) {
    let p = xlens_loader::load_path(file, xlens_store::Format::XSpace).unwrap();
    let mut counts = BTreeMap::new();
    let mut lines = Vec::new();
    for plane in &p.planes {
        for line in &plane.lines {
            if !line.events.is_empty() {
                lines.push(p.str(line.name).to_string());
            }
            for i in 0..line.events.len() {
                let md = plane.metadata_of(line, i).unwrap();
                *counts.entry(p.str(md.name).to_string()).or_insert(0) += 1;
            }
        }
    }
    lines.sort();
    (counts, lines)
}

/// Steps xlens finds: (annotation name, count).
pub fn xlens_steps(file: &Path) -> (String, usize) {
    let p = xlens_loader::load_path(file, xlens_store::Format::XSpace).unwrap();
    let a = xlens_analysis::base::context::Analysis::new(std::sync::Arc::new(p));
    // Every annotated step, as written (the views show XProf's table, less the first and last).
    let s = a.steps();
    (s.name.clone().unwrap_or_default(), s.count)
}

/// The tracer is one per process and these tests share a binary: each test that starts a
/// trace holds this for its whole length.
pub fn one_trace_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TRACER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TRACER.lock().unwrap_or_else(|e| e.into_inner())
}
