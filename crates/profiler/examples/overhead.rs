//! Measures the cost of a span with tracing off and on, and counts allocations.
//!
//! ```sh
//! cargo run --release -p xlens-profiler --example overhead
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

const N: u64 = 1_000_000;

/// ns per span over N spans, and allocations made meanwhile.
fn run() -> (f64, u64) {
    let a0 = ALLOCS.load(Ordering::Relaxed);
    let t = Instant::now();
    for i in 0..N {
        let _s = xlens_profiler::trace(black_box("span"));
        black_box(i);
    }
    let ns = t.elapsed().as_nanos() as f64 / N as f64;
    (ns, ALLOCS.load(Ordering::Relaxed) - a0)
}

fn main() {
    let dir = std::env::temp_dir().join(format!("xlens-overhead-{}", std::process::id()));
    // Baseline: the loop alone.
    let t = Instant::now();
    for i in 0..N {
        black_box(i);
    }
    let empty = t.elapsed().as_nanos() as f64 / N as f64;

    let mut off = f64::MAX;
    for _ in 0..5 {
        off = off.min(run().0);
    }
    // The first trace grows this thread's buffer to N records; later ones reuse it.
    let mut on = f64::MAX;
    let mut steady_allocs = u64::MAX;
    for rep in 0..4 {
        xlens_profiler::start_trace(&dir).expect("start_trace");
        let (ns, allocs) = run();
        xlens_profiler::stop_trace().expect("stop_trace");
        if rep > 0 {
            on = on.min(ns);
            steady_allocs = steady_allocs.min(allocs);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("empty loop:       {empty:.2} ns/iteration");
    println!("span, not tracing: {off:.2} ns");
    println!("span, tracing:     {on:.2} ns");
    println!("allocations per {N} spans while tracing (steady state): {steady_allocs}");
}
