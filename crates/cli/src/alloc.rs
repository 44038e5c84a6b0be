//! The process allocator: the system allocator for small blocks; on Linux, blocks of 1 MiB and
//! more mapped by the allocator itself, aligned to 2 MiB and marked for transparent huge pages.
//!
//! Decoding a profile and indexing it allocate a few large column buffers per thread and line
//! (tens of megabytes for a 50 MB profile). Filled 4 KiB at a time, each page is a page fault,
//! and on a virtual machine those faults were a fifth of the time to a first answer. A huge
//! page turns 512 of them into one. The system allocator maps large blocks at 4 KiB alignment,
//! so a column of a few megabytes mostly lies outside any whole aligned 2 MiB range and gets no
//! huge page (measured: 19,000 faults and 24 huge pages per overview of a 49 MB profile). Here
//! a large block starts on a 2 MiB boundary and spans whole 2 MiB units, so every part of it can
//! be a huge page; growing it moves its pages (`mremap`), never copies them (measured on that
//! profile: about 6,000 faults instead of 19,000). Where the kernel offers no huge pages this
//! is an ordinary mapping. Memory use grows by at most the untouched tail of a block's last huge
//! page (peak RSS of that overview: 107 -> 123 MB; of `op_profile`: 76 -> 79 MB); a block that
//! shrinks (the decoder fits its columns to what it wrote) gives back its pages past the new end
//! (a 20 MB profile's overview: 3 MB lower peak).

use std::alloc::{GlobalAlloc, Layout, System};

pub struct HugeAlloc;

#[cfg(target_os = "linux")]
mod big {
    /// The huge page size.
    pub const HUGE: usize = 2 << 20;

    /// The smallest block mapped here (its mapping is rounded up to whole huge pages, so at
    /// most half of it can be unused).
    pub const MIN_BIG: usize = 1 << 20;

    /// Whether a block is mapped here: large enough, with an alignment a page gives.
    #[inline]
    pub fn is_big(size: usize, align: usize) -> bool {
        size >= MIN_BIG && align <= 4096
    }

    /// The length of the mapping of a block of `size` bytes.
    #[inline]
    pub fn span(size: usize) -> usize {
        size.div_ceil(HUGE) * HUGE
    }

    /// Maps `len` (a multiple of [`HUGE`]) bytes at a 2 MiB boundary, zeroed, advised for huge
    /// pages; null on failure.
    pub fn map(len: usize) -> *mut u8 {
        let Some(reserve) = len.checked_add(HUGE) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a fresh private anonymous mapping; the parts outside the aligned range are
        // unmapped again, and nothing else refers to them.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                reserve,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return std::ptr::null_mut();
            }
            let base = p as usize;
            let start = base.div_ceil(HUGE) * HUGE;
            if start > base {
                libc::munmap(p, start - base);
            }
            let tail = base + reserve - (start + len);
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            start as *mut u8
        }
    }

    /// Unmaps a block of `size` bytes made by [`map`].
    ///
    /// # Safety
    /// `p` must come from [`map`] or [`remap`] for a block of this size, and not be used again.
    pub unsafe fn unmap(p: *mut u8, size: usize) {
        libc::munmap(p as *mut libc::c_void, span(size));
    }

    /// Resizes a block made by [`map`] from `old` to `new` bytes (both big), keeping its
    /// contents; null on failure (the old block is then untouched).
    ///
    /// # Safety
    /// `p` must come from [`map`] or [`remap`] for a block of `old` bytes.
    pub unsafe fn remap(p: *mut u8, old: usize, new: usize) -> *mut u8 {
        let (old_len, new_len) = (span(old), span(new));
        if new_len <= old_len {
            if new_len < old_len {
                libc::munmap(p.add(new_len) as *mut libc::c_void, old_len - new_len);
            }
            // Give back the pages past the new end in its unit: after a shrink (columns fitted
            // to what a decode wrote) they are never read, and in a huge page they would stay
            // resident for the block's life.
            let end = new.div_ceil(4096) * 4096;
            if end < new_len.min(old) {
                libc::madvise(
                    p.add(end) as *mut libc::c_void,
                    new_len.min(old) - end,
                    libc::MADV_DONTNEED,
                );
            }
            return p;
        }
        // Grow in place when the addresses after the block are free.
        let q = libc::mremap(p as *mut libc::c_void, old_len, new_len, 0);
        if q != libc::MAP_FAILED {
            libc::madvise(q, new_len, libc::MADV_HUGEPAGE);
            return q as *mut u8;
        }
        // Otherwise move the pages into a new aligned block (no copy; huge pages stay huge).
        let dst = map(new_len);
        if dst.is_null() {
            return dst;
        }
        let moved = libc::mremap(
            p as *mut libc::c_void,
            old_len,
            old_len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            dst as *mut libc::c_void,
        );
        if moved == libc::MAP_FAILED {
            libc::munmap(dst as *mut libc::c_void, new_len);
            return std::ptr::null_mut();
        }
        dst
    }
}

// SAFETY: small blocks go to the system allocator unchanged. A big block is mapped by `big::map`
// with at least the requested size and an alignment (2 MiB) above the requested one (at most
// 4096), and is only ever unmapped or remapped by the calls below, which know it is big from
// its layout's size: the same test decides at allocation, so each block goes back to whoever
// made it.
unsafe impl GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if big::is_big(layout.size(), layout.align()) {
            return big::map(big::span(layout.size()));
        }
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // Fresh anonymous mappings are zeroed by the kernel.
        #[cfg(target_os = "linux")]
        if big::is_big(layout.size(), layout.align()) {
            return big::map(big::span(layout.size()));
        }
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        #[cfg(target_os = "linux")]
        if big::is_big(layout.size(), layout.align()) {
            return big::unmap(p, layout.size());
        }
        System.dealloc(p, layout)
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        #[cfg(target_os = "linux")]
        {
            let align = layout.align();
            match (
                big::is_big(layout.size(), align),
                big::is_big(new_size, align),
            ) {
                (true, true) => return big::remap(p, layout.size(), new_size),
                (false, false) => {}
                (was_big, _) => {
                    // Between the two allocators: a new block, the contents copied.
                    let Ok(new_layout) = Layout::from_size_align(new_size, align) else {
                        return std::ptr::null_mut();
                    };
                    let q = self.alloc(new_layout);
                    if !q.is_null() {
                        std::ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                        if was_big {
                            big::unmap(p, layout.size());
                        } else {
                            System.dealloc(p, layout);
                        }
                    }
                    return q;
                }
            }
        }
        System.realloc(p, layout, new_size)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn big_blocks_are_aligned_zeroed_and_keep_their_contents_when_resized() {
        let a = HugeAlloc;
        unsafe {
            let l = Layout::from_size_align(3 << 20, 8).unwrap();
            let p = a.alloc_zeroed(l);
            assert!(!p.is_null());
            assert!((p as usize).is_multiple_of(big::HUGE));
            assert!(std::slice::from_raw_parts(p, l.size())
                .iter()
                .all(|&b| b == 0));
            for i in 0..l.size() {
                *p.add(i) = (i % 251) as u8;
            }
            // Grow (in place or moved), shrink within big, then down to the system allocator
            // and back up.
            let mut q = a.realloc(p, l, 9 << 20);
            let mut size = 9 << 20;
            assert!(!q.is_null() && (q as usize).is_multiple_of(big::HUGE));
            for (next, keep) in [(5 << 20, 3 << 20), (1000, 1000), (4 << 20, 1000)] {
                for i in 0..keep {
                    assert_eq!(
                        *q.add(i),
                        (i % 251) as u8,
                        "byte {i} before resizing to {next}"
                    );
                }
                q = a.realloc(q, Layout::from_size_align(size, 8).unwrap(), next);
                assert!(!q.is_null());
                size = next;
            }
            for i in 0..1000 {
                assert_eq!(*q.add(i), (i % 251) as u8);
            }
            // The grown part of a block is writable.
            *q.add(size - 1) = 7;
            a.dealloc(q, Layout::from_size_align(size, 8).unwrap());
            // Alignments beyond a page go to the system allocator.
            let l = Layout::from_size_align(4 << 20, 8192).unwrap();
            let p = a.alloc(l);
            assert!(!p.is_null() && (p as usize).is_multiple_of(8192));
            a.dealloc(p, l);
        }
    }
}
