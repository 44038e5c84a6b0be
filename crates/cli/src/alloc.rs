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
//!
//! Commands that decode one host file after another (`xlens hosts`, `summarize`, `sql`) also
//! keep freed big blocks mapped, their pages resident, for the next big blocks
//! ([`keep_freed_blocks`]): a fresh page costs the kernel a zeroing (a huge page, 2 MiB at once),
//! and each host allocates about two and a half times its file in big blocks. A new block (or a
//! block's grown part) takes kept pages first, moved into place (`mremap`, no copy), and fresh
//! pages only when none are kept, so the big blocks' resident memory stays within the most they
//! ever held at once; what a block reserves but never writes is resident too, though (see
//! PERFORMANCE.md for the measured cost and gain).

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

    /// A new block of `len` bytes (a multiple of [`HUGE`]), made of kept pages as far as there
    /// are any; null on failure. With `zeroed`, the kept pages are cleared (fresh ones are zero).
    pub fn take(len: usize, zeroed: bool) -> *mut u8 {
        let p = map(len);
        if !p.is_null() {
            // SAFETY: `p` is a fresh mapping of `len` bytes that nothing else refers to.
            let kept = unsafe { super::kept::fill(p, len) };
            if zeroed && kept > 0 {
                // SAFETY: the first `kept` bytes of the block are mapped and writable.
                unsafe { std::ptr::write_bytes(p, 0, kept) };
            }
        }
        p
    }

    /// Frees `len` bytes at `p` (whole, aligned huge-page units of a block): kept for later
    /// blocks where [`keep_freed_blocks`](super::keep_freed_blocks) says so, else unmapped.
    ///
    /// # Safety
    /// The range must be mapped by this allocator and not be used again.
    unsafe fn release(p: *mut u8, len: usize) {
        if len > 0 && !super::kept::put(p, len) {
            libc::munmap(p as *mut libc::c_void, len);
        }
    }

    /// Frees a block of `size` bytes made by [`take`] or [`remap`].
    ///
    /// # Safety
    /// `p` must come from [`take`] or [`remap`] for a block of this size, and not be used again.
    pub unsafe fn unmap(p: *mut u8, size: usize) {
        release(p, span(size));
    }

    /// Resizes a block made by [`take`] from `old` to `new` bytes (both big), keeping its
    /// contents; null on failure (the old block is then untouched).
    ///
    /// # Safety
    /// `p` must come from [`take`] or [`remap`] for a block of `old` bytes.
    pub unsafe fn remap(p: *mut u8, old: usize, new: usize) -> *mut u8 {
        let (old_len, new_len) = (span(old), span(new));
        if new_len <= old_len {
            if new_len < old_len {
                release(p.add(new_len), old_len - new_len);
            }
            // Give back the pages past the new end in its unit: after a shrink (columns fitted
            // to what a decode wrote) they are never read, and in a huge page they would stay
            // resident for the block's life. Not while freed blocks are kept: giving back part
            // of a huge page splits it, and the next host faults those pages back in 4 KiB at a
            // time (32 hosts of the 207 MB profile: 213,000 faults instead of 101,000, and 1.4
            // s more system time).
            let end = new.div_ceil(4096) * 4096;
            if end < new_len.min(old) && !super::kept::on() {
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
            let q = q as *mut u8;
            super::kept::fill(q.add(old_len), new_len - old_len);
            return q;
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
        if moved != libc::MAP_FAILED {
            super::kept::fill(dst.add(old_len), new_len - old_len);
            return dst;
        }
        // A block made of kept pieces can span several mappings, which older kernels do not
        // move in one call: copied instead.
        super::kept::fill(dst, new_len);
        std::ptr::copy_nonoverlapping(p, dst, old);
        release(p, old_len);
        dst
    }
}

/// Keeps freed big blocks for later ones from now on (for commands that decode many host files;
/// a server that should give memory back does not call this).
pub fn keep_freed_blocks() {
    #[cfg(target_os = "linux")]
    kept::KEPT
        .on
        .store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Stops keeping freed big blocks and gives back those kept (once the host files are decoded:
/// what comes after, the report over the summaries, allocates small blocks that kept pages do
/// not serve, so keeping them only adds to the peak: at 256 hosts of 207 MB, they were what made
/// the report's moment the run's peak). Returns the bytes given back.
pub fn give_back_kept_blocks() -> usize {
    #[cfg(target_os = "linux")]
    {
        kept::KEPT
            .on
            .store(false, std::sync::atomic::Ordering::Relaxed);
        kept::release_all()
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Freed big blocks kept mapped for later ones: whole, aligned huge-page units, in a fixed
/// table (the allocator cannot allocate for its own bookkeeping) under a spin lock that yields
/// (big blocks are few, and each call holds it for a few system calls).
#[cfg(target_os = "linux")]
mod kept {
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Kept blocks are cut into pieces as later blocks take parts of them: with 64 slots the
    /// table filled up within a few hosts of the 207 MB profile, and what did not fit was
    /// unmapped, its pages faulted in fresh again (5,000 huge-page faults over 256 hosts; none
    /// after the first 20 hosts with 1,024).
    const SLOTS: usize = 1024;

    pub struct Kept {
        pub on: AtomicBool,
        lock: AtomicBool,
        /// (address, length); length 0 is a free slot.
        slots: UnsafeCell<[(usize, usize); SLOTS]>,
    }

    // SAFETY: `slots` is only touched under `lock`.
    unsafe impl Sync for Kept {}

    pub static KEPT: Kept = Kept {
        on: AtomicBool::new(false),
        lock: AtomicBool::new(false),
        slots: UnsafeCell::new([(0, 0); SLOTS]),
    };

    fn locked<R>(f: impl FnOnce(&mut [(usize, usize); SLOTS]) -> R) -> R {
        let mut spins = 0u32;
        while KEPT
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // The holder may be off the CPU (more threads than cores): give way after a while
            // rather than spin out the time slice.
            spins += 1;
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        // SAFETY: the lock is held, so no other reference to the table exists.
        let r = f(unsafe { &mut *KEPT.slots.get() });
        KEPT.lock.store(false, Ordering::Release);
        r
    }

    /// Whether freed blocks are kept.
    #[inline]
    pub fn on() -> bool {
        KEPT.on.load(Ordering::Relaxed)
    }

    /// Keeps `len` bytes at `p`; false when not kept (keeping is off, or the table is full).
    pub fn put(p: *mut u8, len: usize) -> bool {
        if !KEPT.on.load(Ordering::Relaxed) {
            return false;
        }
        locked(|s| match s.iter_mut().find(|x| x.1 == 0) {
            Some(x) => {
                *x = (p as usize, len);
                true
            }
            None => false,
        })
    }

    /// Unmaps every kept block; returns their bytes.
    pub fn release_all() -> usize {
        locked(|s| {
            let mut n = 0;
            for x in s.iter_mut().filter(|x| x.1 > 0) {
                // SAFETY: a kept block is a whole mapping part made by this allocator that
                // nothing refers to any more.
                unsafe { libc::munmap(x.0 as *mut libc::c_void, x.1) };
                n += x.1;
                *x = (0, 0);
            }
            n
        })
    }

    /// Moves kept pages over the fresh range `dst..dst + len` from its start (the best-fitting
    /// kept block, else the largest, until the range is covered or none is left); returns how
    /// many bytes were covered.
    ///
    /// # Safety
    /// `dst..dst + len` must be a fresh, unused part of a mapping made by this allocator, and
    /// `len` a multiple of the huge page size.
    pub unsafe fn fill(dst: *mut u8, len: usize) -> usize {
        if len == 0 || !KEPT.on.load(Ordering::Relaxed) {
            return 0;
        }
        locked(|s| {
            let mut done = 0;
            while done < len {
                let want = len - done;
                let live = || (0..SLOTS).filter(|&i| s[i].1 > 0);
                let Some(i) = live()
                    .filter(|&i| s[i].1 >= want)
                    .min_by_key(|&i| s[i].1)
                    .or_else(|| live().max_by_key(|&i| s[i].1))
                else {
                    break;
                };
                let (a, l) = s[i];
                let k = l.min(want);
                let moved = libc::mremap(
                    a as *mut libc::c_void,
                    k,
                    k,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    dst.add(done) as *mut libc::c_void,
                );
                if moved == libc::MAP_FAILED {
                    // (A block of several mappings on an older kernel.) Given back instead.
                    libc::munmap(a as *mut libc::c_void, l);
                    s[i] = (0, 0);
                    continue;
                }
                s[i] = if k < l { (a + k, l - k) } else { (0, 0) };
                done += k;
            }
            done
        })
    }
}

// SAFETY: small blocks go to the system allocator unchanged. A big block is mapped by `big::take`
// with at least the requested size and an alignment (2 MiB) above the requested one (at most
// 4096), and is only ever unmapped or remapped by the calls below, which know it is big from
// its layout's size: the same test decides at allocation, so each block goes back to whoever
// made it.
unsafe impl GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(target_os = "linux")]
        if big::is_big(layout.size(), layout.align()) {
            return big::take(big::span(layout.size()), false);
        }
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // Fresh anonymous mappings are zeroed by the kernel, kept pages here.
        #[cfg(target_os = "linux")]
        if big::is_big(layout.size(), layout.align()) {
            return big::take(big::span(layout.size()), true);
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

    /// The tests share the table of kept blocks.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn big_blocks_are_aligned_zeroed_and_keep_their_contents_when_resized() {
        let _serial = SERIAL.lock();
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

    #[test]
    fn freed_blocks_are_kept_and_serve_later_blocks_whole_or_in_pieces() {
        let _serial = SERIAL.lock();
        keep_freed_blocks();
        let a = HugeAlloc;
        let mib = |n: usize| Layout::from_size_align(n << 20, 8).expect("a valid layout");
        unsafe {
            // Two freed blocks, 4 and 6 MiB, written all over.
            let (p4, p6) = (a.alloc(mib(4)), a.alloc(mib(6)));
            assert!(!p4.is_null() && !p6.is_null());
            std::ptr::write_bytes(p4, 0xab, 4 << 20);
            std::ptr::write_bytes(p6, 0xab, 6 << 20);
            a.dealloc(p4, mib(4));
            a.dealloc(p6, mib(6));
            // A new 8 MiB block is made of their pages (no fresh page reads 0xab) ...
            let p = a.alloc(mib(8));
            assert!(!p.is_null() && (p as usize).is_multiple_of(big::HUGE));
            let b = std::slice::from_raw_parts_mut(p, 8 << 20);
            assert!(b.iter().all(|&x| x == 0xab), "kept pages not reused");
            for (i, x) in b.iter_mut().enumerate() {
                *x = (i % 251) as u8;
            }
            // ... and grows (its pieces moved, or copied) keeping its contents.
            let q = a.realloc(p, mib(8), 20 << 20);
            assert!(!q.is_null());
            let b = std::slice::from_raw_parts_mut(q, 20 << 20);
            assert!(b[..8 << 20]
                .iter()
                .enumerate()
                .all(|(i, &x)| x == (i % 251) as u8));
            b[(20 << 20) - 1] = 1;
            // The rest of the kept pages, and the grown block once freed, serve a zeroed block,
            // which reads as zeros.
            a.dealloc(q, mib(20));
            let z = a.alloc_zeroed(mib(24));
            assert!(!z.is_null());
            assert!(std::slice::from_raw_parts(z, 24 << 20)
                .iter()
                .all(|&x| x == 0));
            a.dealloc(z, mib(24));
            // Given back: all 24 MiB once, and nothing kept after.
            assert_eq!(give_back_kept_blocks(), 24 << 20);
            let p = a.alloc(mib(2));
            a.dealloc(p, mib(2));
            assert_eq!(give_back_kept_blocks(), 0);
        }
    }
}
