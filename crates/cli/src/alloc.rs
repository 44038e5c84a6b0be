//! The process allocator: the system allocator, with large blocks marked for transparent huge
//! pages on Linux.
//!
//! Decoding a profile and indexing it allocate a few large column buffers per thread and line
//! (tens of megabytes for a 50 MB profile). Filled 4 KiB at a time, each page is a page fault,
//! and on a virtual machine those faults were a fifth of the time to a first answer. Asking for
//! huge pages on blocks of 2 MiB and more makes them 2 MiB faults instead. It is a hint: where
//! the kernel does not offer huge pages nothing changes. Small blocks are left alone, so memory
//! use grows by at most the unused tail of each large block's last huge page.

use std::alloc::{GlobalAlloc, Layout, System};

pub struct HugeAlloc;

const HUGE: usize = 2 << 20;
const MIN_BLOCK: usize = 2 << 20;

#[cfg(target_os = "linux")]
fn advise(p: *mut u8, len: usize) {
    if p.is_null() || len < MIN_BLOCK {
        return;
    }
    let start = (p as usize).div_ceil(HUGE) * HUGE;
    let end = (p as usize + len) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside a block this allocator just handed out; MADV_HUGEPAGE
        // changes how the kernel backs it, not its contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_: *mut u8, _: usize) {}

// SAFETY: every call is passed to the system allocator unchanged; `advise` only adds a hint.
unsafe impl GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        advise(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        advise(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout)
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        advise(q, new_size);
        q
    }
}
