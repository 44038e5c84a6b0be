//! No allocation per span once a thread's buffer has grown (the steady state).

use crate::common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Per thread: the other tests of this binary allocate on their own threads meanwhile.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: a thread's allocations while its locals are torn down are not counted.
    let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn spans(n: i64) -> u64 {
    let a0 = ALLOCS.with(Cell::get);
    for i in 0..n {
        let _s = xlens_profiler::step("train", i);
        let _f = xlens_profiler::trace("forward");
    }
    ALLOCS.with(Cell::get) - a0
}

#[test]
fn spans_do_not_allocate() {
    let _tracer = common::one_trace_at_a_time();
    let dir = std::env::temp_dir().join(format!("xlens-profiler-alloc-{}", std::process::id()));
    // Off: never.
    assert_eq!(spans(10_000), 0);
    // On: the first trace may grow this thread's buffer; the next ones reuse it.
    for rep in 0..3 {
        xlens_profiler::start_trace(&dir).unwrap();
        let allocs = spans(50_000);
        xlens_profiler::stop_trace().unwrap();
        if rep > 0 {
            assert_eq!(allocs, 0, "trace {rep}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
