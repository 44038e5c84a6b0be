//! Parsing a `.json.gz` file while it is inflated. A second thread inflates the text into one
//! buffer of the size the file states, a step at a time, checking it to be UTF-8 as it goes;
//! the first parses it behind, a segment at a time (cut where an element of the events array
//! starts; the head short, so that it starts early), handing its events to the importer. The
//! moment the text is whole, the inflating thread cuts the rest (from the end of the segments
//! the first has taken) into chunks and parses them, and the first joins it once through its
//! segment: the rest is parsed as a file read whole is, on both threads ([`super::chunks`],
//! [`super::chunks::Lent`]). So the inflating overlaps with parsing, and the second core parses
//! once it has inflated. The pages of segments the first thread has read are moved ahead, for
//! the inflating thread to write on (a fresh page is cleared by the system, and on a machine
//! that hands free memory back to its hypervisor, mapped by it first), so the text takes as
//! little fresh memory as the distance between the threads needs. The buffer is unmapped on a
//! thread of its own.
//!
//! Whatever goes wrong (a size stated too small, a cut that is not the start of an element, an
//! event longer than the search for a cut, bad JSON or UTF-8 anywhere, a failed read), the read
//! is given up and the caller reads the file whole from the start, into a fresh sink: results
//! and errors never depend on this path.

use super::chunks::{Chunks, Finishing, Lent, CHUNK};
use super::{find_event_start, find_split, rest, threads, with_skip};
use super::{ParseError, Sink, Skip, Walker, PARALLEL_MIN};
use serde_json::error::Category;
use std::io::{ErrorKind, Read};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// How a file is cut into segments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Files stating a smaller size are read whole instead.
    pub min: usize,
    /// The length of the first segment (the head of the file), before the search for an
    /// event's start, when shorter than `segment`: the first thread starts after this much
    /// (and as much again) is inflated. Cut only before an event (`"ph"`); else the head is a
    /// segment as long as the others.
    pub first: usize,
    /// The length of a segment, before the search for an element's start.
    pub segment: usize,
    /// How far past a segment's length that search goes (the longest event a cut can pass).
    pub window: usize,
    /// The rest, once inflated, is parsed on two threads when at least this long.
    pub two_threads: usize,
    /// The length of the rest's chunks (see [`super::chunks`]).
    pub chunk: usize,
    /// Bytes of the buffer the inflating thread makes ready at a time, before it writes them:
    /// pages of text the reading thread is done with, moved ahead, and fresh pages for the
    /// rest of it.
    pub populate: usize,
}

impl Plan {
    fn here() -> Plan {
        Plan {
            min: PARALLEL_MIN,
            first: 32 << 10,
            segment: 256 << 10,
            window: 128 << 10,
            // The rest is parsed in chunks by the inflating thread beside the first, which
            // costs nothing to start.
            two_threads: 0,
            chunk: CHUNK,
            populate: POPULATE,
        }
    }
}

/// Bytes the inflating thread inflates before it says how far it got.
const STEP: usize = 256 << 10;

/// What [`Feed::next`] gives.
pub(super) enum Fed<'a> {
    /// Text whose elements of the events array end exactly at its end, each with a comma.
    Segment(&'a str),
    /// The rest of the file, inflated to its end.
    Rest(&'a str),
}

/// The text of a file being inflated, from where the parse has reached.
pub(super) trait Feed<'a> {
    fn next(&mut self) -> Result<Fed<'a>, ParseError>;
    /// The thread that cuts the rest into chunks and parses them beside this one.
    fn lent(&self) -> &Lent<'a>;
}

/// How far the inflating thread got.
#[derive(Clone, Copy)]
struct Progress {
    /// The first `filled` bytes of the buffer hold text, checked to be UTF-8 (they end at a
    /// character's end).
    filled: usize,
    /// The text ended there (`Some(true)`), or the read failed, ran past the buffer or was not
    /// UTF-8 (`Some(false)`).
    end: Option<bool>,
    /// Where the segments the reading thread has taken end: the rest starts there once the
    /// text is whole.
    taken: usize,
    /// The reading thread is done with the text below this (a page's start): the inflating
    /// thread may move its pages ahead, to write on.
    done: usize,
}

/// A buffer one thread inflates into while another reads what is already inflated.
struct Growing<'b> {
    start: *mut u8,
    len: usize,
    /// The size of a page, to move pages the reading thread is done with ahead (where pages
    /// can be moved: 0 elsewhere).
    page: usize,
    /// Bytes made ready to write at a time ([`Plan::populate`]).
    ready: usize,
    /// The mapping `start` points into, to ask for its pages ahead.
    map: &'b memmap2::MmapMut,
    progress: Mutex<Progress>,
    more: Condvar,
    /// The reading side gave up: the inflating thread stops.
    cancel: AtomicBool,
    /// Bytes of pages the inflating thread moved ahead, once it is done.
    moved: AtomicUsize,
    _buf: PhantomData<&'b mut [u8]>,
}

/// Bytes of the buffer the inflating thread makes ready at a time, before it writes them: one
/// call that maps many pages costs a third less than a fault per page.
const POPULATE: usize = 1 << 20;

// SAFETY: the two threads touch disjoint parts of the buffer: the inflating thread writes only
// past `filled` (through a slice it drops before it moves `filled` on), the reading thread reads
// only below it, and `filled` moves under the mutex, which orders the writes before the reads.
// The inflating thread moves away only pages below `done`, which the reading thread has said
// (under the mutex) it no longer reads, and moves them to past `filled`.
unsafe impl Sync for Growing<'_> {}

impl<'b> Growing<'b> {
    fn new(buf: &'b mut memmap2::MmapMut, ready: usize) -> Self {
        let start = buf.as_mut_ptr();
        let len = buf.len();
        // Shared from here on: only the mapping's pages are asked for through it, never its
        // bytes read or written (those go through `start`).
        let map: &'b memmap2::MmapMut = buf;
        Growing {
            start,
            len,
            page: page_size(),
            ready: ready.max(1),
            map,
            progress: Mutex::new(Progress {
                filled: 0,
                end: None,
                taken: 0,
                done: 0,
            }),
            more: Condvar::new(),
            cancel: AtomicBool::new(false),
            moved: AtomicUsize::new(0),
            _buf: PhantomData,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Says how far the inflating got; returns where the segments taken end, and below where
    /// the reading thread is done with the text.
    fn tell(&self, filled: usize, end: Option<bool>) -> (usize, usize) {
        let mut p = self.lock();
        p.filled = filled;
        p.end = end;
        let (taken, done) = (p.taken, p.done);
        drop(p);
        self.more.notify_one();
        (taken, done)
    }

    /// The reading thread takes the segment that ends at `to`, unless the inflating has ended
    /// (then the rest starts where the segments taken before end); it is done with the text
    /// below `done` (the end of the segments it read).
    fn take(&self, to: usize, done: usize) -> bool {
        let mut p = self.lock();
        if p.end.is_some() {
            return false;
        }
        p.taken = to;
        if let Some(pages) = done.checked_div(self.page) {
            p.done = p.done.max(pages * self.page);
        }
        true
    }

    /// The inflating thread: `r` read into the buffer to its end. It checks the text to be
    /// UTF-8 as it goes (the first thread, which has more to do, then need not). Returns the
    /// rest of the text, from where the segments taken end, when it is whole.
    fn inflate(&self, mut r: impl Read) -> Option<&'b str> {
        // Bytes written, and bytes told (checked, to a character's end).
        let mut filled = 0;
        let mut told = 0;
        let mut populated = 0;
        // The reading thread is done with the text below `done` (as last heard); the pages
        // below `moved` are moved ahead.
        let (mut done, mut moved) = (0, 0);
        let ended = loop {
            if self.cancel.load(Ordering::Relaxed) {
                break false;
            }
            let step = STEP.min(self.len - filled);
            if step == 0 {
                // Full: the text must end here.
                break matches!(r.read(&mut [0u8; 1]), Ok(0));
            }
            // Ready past what this step may write (so `populated` never falls behind `filled`,
            // and pages are only ever moved to where nothing is written yet).
            while filled + step > populated {
                let n = self.ready.min(self.len - populated);
                let k = self.recycle(moved, done, populated, n);
                moved += k;
                if k < n {
                    self.populate(populated + k, n - k);
                }
                populated += n;
            }
            // SAFETY: `filled + step <= len`, and the reading thread reads only below the
            // `filled` it was told, which is at most `told <= filled` here (see `Sync` above).
            let dst = unsafe { std::slice::from_raw_parts_mut(self.start.add(filled), step) };
            match r.read(dst) {
                Ok(0) => break true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
            if filled - told >= STEP {
                let Some(to) = self.checked(told, filled) else {
                    break false;
                };
                told = to;
                done = self.tell(told, None).1;
            }
        };
        self.moved.store(moved, Ordering::Relaxed);
        let whole = ended && self.checked(told, filled) == Some(filled);
        let (taken, _) = self.tell(if whole { filled } else { told }, Some(whole));
        let b = self.bytes(taken, filled);
        // SAFETY: the whole text was checked to be UTF-8 above; `taken` is the end of a segment
        // (the place of a `{`) or 0.
        whole.then(|| unsafe { std::str::from_utf8_unchecked(b) })
    }

    /// Moves the pages from `moved` up to `done` (at most `n` bytes of them) to `at`, past the
    /// text written, to write on: pages already mapped, which fresh pages are not (the system
    /// clears each, and this machine's hypervisor may have to map it first). Returns the bytes
    /// moved (whole pages; 0 where they cannot be).
    fn recycle(&self, moved: usize, done: usize, at: usize, n: usize) -> usize {
        if self.page == 0 || done <= moved || !at.is_multiple_of(self.page) {
            return 0;
        }
        let k = (done - moved).min(n) / self.page * self.page;
        if k == 0 {
            return 0;
        }
        #[cfg(target_os = "linux")]
        {
            // SAFETY: both ranges lie in the buffer, a page's start and `k` (pages) long; the
            // reading thread no longer reads below `done` (it said so under the mutex), and
            // neither thread reads or writes at `at` or past it before the inflating thread
            // writes there after this. The old range stays mapped (`MREMAP_DONTUNMAP`), without
            // pages: left unmapped, the system could place another mapping there (the
            // allocator's), which the buffer's unmapping would then take away. Nothing reads it
            // again (the rest, the segments to come and the text checked all start at or past
            // `done`).
            let to = unsafe {
                libc::mremap(
                    self.start.add(moved).cast(),
                    k,
                    k,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP,
                    self.start.add(at).cast::<libc::c_void>(),
                )
            };
            if to == libc::MAP_FAILED {
                return 0;
            }
            k
        }
        #[cfg(not(target_os = "linux"))]
        0
    }

    /// How far the bytes from `from` (a character's start) to `to` (at most the bytes written)
    /// are UTF-8: to `to`, or to the start of a character cut there; `None` where a byte is not.
    fn checked(&self, from: usize, to: usize) -> Option<usize> {
        // SAFETY: the inflating thread (the caller) wrote these bytes; the reading thread
        // only reads bytes, never writes them.
        let b = unsafe { std::slice::from_raw_parts(self.start.add(from), to - from) };
        // Its ASCII start passed a block at a time; the rest from a character's start.
        let ascii = super::stops::ascii_end(b, 0);
        match std::str::from_utf8(&b[ascii..]) {
            Ok(_) => Some(to),
            Err(e) if e.error_len().is_none() => Some(from + ascii + e.valid_up_to()),
            Err(_) => None,
        }
    }

    /// Maps the pages of `len` bytes from `offset` (where the system can; otherwise each page is
    /// mapped when first written). Their contents do not change.
    fn populate(&self, offset: usize, len: usize) {
        #[cfg(target_os = "linux")]
        let _ = self
            .map
            .advise_range(memmap2::Advice::PopulateWrite, offset, len);
        #[cfg(not(target_os = "linux"))]
        let _ = (self.map, offset, len);
    }

    /// Waits until at least `want` bytes are inflated or the inflating has ended.
    fn wait(&self, want: usize) -> Progress {
        let mut p = self.lock();
        while p.filled < want && p.end.is_none() {
            p = self.more.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        *p
    }

    /// The bytes inflated from `from` (not below where the reading thread said it is done) to
    /// `to` (at most a `filled` the reading thread was told, or all when the inflating has
    /// ended).
    fn bytes(&self, from: usize, to: usize) -> &'b [u8] {
        // SAFETY: below `filled` the inflating thread no longer writes (see `Sync` above), nor
        // anywhere once it has ended, and it moves away no page at or past `done`; the buffer is
        // borrowed for `'b`.
        unsafe { std::slice::from_raw_parts(self.start.add(from), to - from) }
    }
}

/// Says the inflating has ended (failed) if the inflating thread stops without saying so (a
/// reader that panics), so that the parsing thread never waits for it in vain.
struct Ended<'g, 'b>(&'g Growing<'b>);

impl Drop for Ended<'_, '_> {
    fn drop(&mut self) {
        let mut p = self.0.lock();
        if p.end.is_none() {
            p.end = Some(false);
        }
        drop(p);
        self.0.more.notify_one();
    }
}

/// [`Feed`] of a buffer being inflated: segments cut where an element of the events array
/// starts, then the rest.
struct Behind<'g, 'b> {
    g: &'g Growing<'b>,
    /// The inflating thread, lent to parse the rest once it is inflated.
    lent: &'g Lent<'b>,
    plan: Plan,
    /// Bytes of text handed on.
    sent: usize,
}

impl<'b> Behind<'_, 'b> {
    /// The text from `sent` to `to`, a `filled` this thread was told.
    fn text(&self, to: usize) -> &'b str {
        let b = self.g.bytes(self.sent, to);
        // SAFETY: the inflating thread checked the text it said was filled to be UTF-8 (to a
        // character's end); `sent` is the place of a `{`.
        unsafe { std::str::from_utf8_unchecked(b) }
    }

    /// The head of the file, when inflated soon enough and cut before an event.
    fn head(&mut self) -> Option<&'b str> {
        let first = self.plan.first;
        let p = self.g.wait(first.saturating_mul(2));
        if p.end.is_some() {
            return None;
        }
        let text = self.text(p.filled);
        let at = find_event_start(text, first).filter(|&at| at > 0)?;
        self.segment(text, at)
    }

    /// `text[..at]` as the next segment, unless the inflating ended meanwhile (the inflating
    /// thread then cut the rest into chunks from `sent`). The segments before it are read: their
    /// text is not to be read again (its pages may be moved ahead).
    fn segment(&mut self, text: &'b str, at: usize) -> Option<&'b str> {
        if !self.g.take(self.sent + at, self.sent) {
            return None;
        }
        self.sent += at;
        Some(&text[..at])
    }
}

impl<'b> Feed<'b> for Behind<'_, 'b> {
    fn next(&mut self) -> Result<Fed<'b>, ParseError> {
        if self.sent == 0 && self.plan.first < self.plan.segment {
            if let Some(head) = self.head() {
                return Ok(Fed::Segment(head));
            }
        }
        loop {
            let p = self
                .g
                .wait(self.sent + self.plan.segment + self.plan.window);
            match p.end {
                Some(false) => return Err(stopped("reading the file failed")),
                // Inflated to the end: the rest, in the chunks the inflating thread cut.
                Some(true) => {
                    let rest = self.text(p.filled);
                    self.sent = p.filled;
                    return Ok(Fed::Rest(rest));
                }
                None => {}
            }
            let text = self.text(p.filled);
            let Some(at) = find_split(text, self.plan.segment).filter(|&at| at > 0) else {
                return Err(stopped("no place to cut"));
            };
            if let Some(segment) = self.segment(text, at) {
                return Ok(Fed::Segment(segment));
            }
        }
    }

    fn lent(&self) -> &Lent<'b> {
        self.lent
    }
}

/// Says there are no chunks of the rest (unless there are), however the inflating thread ends,
/// so that the first thread never waits for them in vain.
struct Closing<'l, 'b>(&'l Lent<'b>);

impl Drop for Closing<'_, '_> {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Reads `r` to its end, parsing the JSON into `sink` as it goes; `size` is the size the file
/// states (0 when unknown). Returns the size of the JSON in bytes, or `None` when the file is
/// to be read whole instead (too small to gain by this, or anything went wrong): the sink then
/// holds part of the events, and is to be dropped.
pub(crate) fn parse_reading<R: Read + Send>(
    r: R,
    size: usize,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
) -> Option<usize> {
    parse_planned(r, size, sink, skip, Plan::here())
}

fn parse_planned<R: Read + Send>(
    r: R,
    size: usize,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    plan: Plan,
) -> Option<usize> {
    parse_counted(r, size, sink, skip, plan).0
}

/// [`parse_planned`], and the bytes of pages moved ahead ([`Growing::recycle`]).
fn parse_counted<R: Read + Send>(
    r: R,
    size: usize,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    plan: Plan,
) -> (Option<usize>, usize) {
    if size < plan.min || plan.segment.saturating_add(plan.window) >= size {
        return (None, 0);
    }
    // Mapped apart from the allocator, which asks for huge pages for large blocks: where the
    // machine has handed its free memory back to a hypervisor (free page reporting), a huge page
    // is slow to get back (35 MB took 150 ms after another process freed 1 GB, against 10-12 ms
    // in small pages mapped a megabyte at a time), and the inflating thread would wait for it
    // (PERFORMANCE.md).
    let Ok(mut buf) = memmap2::MmapMut::map_anon(size) else {
        return (None, 0);
    };
    let g = Growing::new(&mut buf, plan.populate);
    let lent = Lent::new();
    let sent = std::thread::scope(|s| {
        let inflating = std::thread::Builder::new()
            .name("xlens-gunzip".into())
            .spawn_scoped(s, || {
                let _closing = Closing(&lent);
                let rest = {
                    let _ended = Ended(&g);
                    g.inflate(r)
                };
                // Then it cuts the rest into chunks and parses them beside the first thread.
                if let Some(rest) = rest {
                    let chunks = (rest.len() >= plan.two_threads && threads() >= 2)
                        .then(|| Chunks::cut(rest, plan.chunk, skip))
                        .flatten();
                    lent.help_with(chunks);
                }
            })
            .ok()?;
        let finishing = Finishing(&lent);
        let mut feed = Behind {
            g: &g,
            lent: &lent,
            plan,
            sent: 0,
        };
        let parsed = with_skip(skip, || match feed.next() {
            Ok(Fed::Segment(head)) => Walker::fed(head, sink, &mut feed, skip).top(),
            // Inflated whole before the first segment was asked for.
            Ok(Fed::Rest(text)) => rest(text, sink, skip, None, &lent).map(|()| true),
            Err(e) => Err(e),
        });
        g.cancel.store(true, Ordering::Relaxed);
        drop(finishing);
        let _ = inflating.join();
        matches!(parsed, Ok(true)).then_some(feed.sent)
    });
    let moved = g.moved.load(Ordering::Relaxed);
    drop(lent);
    unmap_later(buf);
    (sent, moved)
}

/// Drops `buf` on a thread of its own: the kernel takes a while to unmap megabytes (0.8 ms for
/// the 10 MB of a trace, a twentieth of its first answer), which nothing need wait for. Where
/// no thread starts, it is dropped here.
fn unmap_later(buf: memmap2::MmapMut) {
    let _ = std::thread::Builder::new()
        .name("xlens-unmap".into())
        .spawn(move || drop(buf));
}

/// The size of a page, where pages can be moved ([`Growing::recycle`]); 0 elsewhere.
fn page_size() -> usize {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).unwrap_or(0)
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Why the read was given up (the file is then read whole, which says what is wrong).
fn stopped(why: &str) -> ParseError {
    ParseError {
        category: Category::Io,
        message: why.into(),
        line: 0,
        column: 0,
    }
}

#[cfg(test)]
mod tests;
