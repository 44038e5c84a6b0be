//! Parsing a file read whole on two threads, balanced as they go. The events array is cut into
//! chunks where an element probably starts ([`super::find_split`]). The first thread reads the
//! head of the file up to the first cut itself; from there both threads take the next chunk
//! nobody has taken yet and parse it into a batch. The first thread alone hands batches to the
//! importer, in the order of the file, and parses a chunk of its own only while the next batch
//! to hand on is not ready. So the second thread parses as much as it can while the first does
//! what only it can (the importer's work), however the cost of parsing varies along the file: a
//! PyTorch trace's host operators, left out of a first answer and only skimmed, fill its first
//! third, its GPU kernels and launches, read in full, the rest.
//!
//! A chunk's start is only a guess until the chunk before it, read from a start known to be an
//! element's, ends exactly there; the first thread checks that before handing a chunk on. Where
//! a chunk ends past the next one's start (the guess was not an element's start), the first
//! thread reads on from there by itself and the rest of the chunks are dropped; where the events
//! array ends within a chunk, the chunks after it are dropped. A chunk's error is only reported
//! when the first thread reaches it, so results and errors are those of one thread.

use super::{finish_array, with_skip, Args, Batch, Cursor, Field, Numbering, RawEvent};
use super::{ParseError, Sink, Skip, Walker, SKIP};
use serde_json::error::Category;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

/// The length of a chunk, before the search for an element's start: small enough that the
/// threads finish within a chunk's parse of each other (a tenth of a millisecond) and that its
/// batch stays in cache, large enough that taking one costs nothing by comparison. First answers
/// (`xlens bench --tool temporal_breakdown`, medians of 9) of the 35 MB control trace: 29.9,
/// 29.3, 28.6, 29.5, 31.2 ms with 32, 64, 128, 256, 512 KB chunks (and with a share fixed up
/// front instead, 34.4 ms); of the 9.8 MB NCCL trace 11.5, 10.6, 10.6, 10.7, 11.1 ms (12.2).
pub(super) const CHUNK: usize = 128 << 10;
/// Chunks the second thread may have parsed and the first not yet handed on (their batches
/// hold the events until then: a bound on the memory a slow importer can make them take).
const AHEAD: usize = 24;

/// How the read of a chunk ended.
enum End<'a> {
    /// Exactly at the next chunk's start, which is then an element's start.
    Landed,
    /// At an element's start past the next chunk's start, which was not one.
    Past(usize),
    /// The events array ended: what follows it.
    Closed {
        tail: Option<Result<Vec<Field<'a>>, ParseError>>,
        at: usize,
    },
    Failed(ParseError),
    /// The parse was called off.
    Stopped,
}

struct Parsed<'a> {
    batch: Batch<'a>,
    end: End<'a>,
}

struct State<'a> {
    /// The first chunk nobody has taken.
    next: usize,
    /// The chunk the first thread hands on next.
    want: usize,
    done: Vec<Option<Parsed<'a>>>,
    /// Batches handed on, to be filled again.
    pool: Vec<Batch<'a>>,
    /// The second thread has stopped (or never started).
    helper_gone: bool,
}

/// The chunks of one parse, shared by both threads.
pub(super) struct Chunks<'a> {
    text: &'a str,
    /// Where each chunk starts; the last runs to the end of the events array.
    starts: Vec<usize>,
    skip: Option<Skip>,
    state: Mutex<State<'a>>,
    /// A chunk was parsed, or the second thread stopped.
    ready: Condvar,
    /// The first thread handed a chunk on, or the parse is over.
    room: Condvar,
    stop: AtomicBool,
}

/// What the first thread does next.
enum Job<'a> {
    HandOn(Parsed<'a>),
    Parse(usize, Batch<'a>),
}

/// How the chunks were read.
pub(super) enum Outcome {
    /// To the end of the file.
    Finished,
    /// Up to an element that starts here, the rest to be read on one thread.
    From(usize),
}

/// Parses `text` into `sink` on two threads, in chunks of about `len` bytes (on one where there
/// would be fewer than two).
pub(super) fn parse(
    text: &str,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    len: usize,
) -> Result<(), ParseError> {
    parse_with(text, sink, skip, Chunks::cut(text, len, skip), true).map(|_| ())
}

/// Parses `text` into `sink` leaving out what `skip` names, with `chunks` (cut with the same
/// `skip`; on one thread without), and a second thread when `helper`. Returns whether the
/// chunks were used to the end of the file.
fn parse_with<'a>(
    text: &'a str,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    chunks: Option<Chunks<'a>>,
    helper: bool,
) -> Result<bool, ParseError> {
    with_skip(skip, || {
        let mut w = Walker::new(text, sink, skip);
        let Some(ch) = &chunks else {
            return w.top();
        };
        ch.run(helper, || {
            w.chunks = Some(ch);
            w.top()
        })
    })
}

/// The rest of a `.json.gz`'s text, cut into chunks by the thread that inflated it, which then
/// parses them beside the first thread ([`super::reading`]): it is free the moment the text is
/// whole, while the first is still in the middle of a segment. Starting a thread for the rest
/// instead cost 0.1 ms, and now and then several (the new thread waiting for a core).
pub(super) struct Lent<'a> {
    chunks: OnceLock<Chunks<'a>>,
    state: Mutex<LentState>,
    told: Condvar,
}

#[derive(Default)]
struct LentState {
    /// `Some(true)` once the chunks are there, `Some(false)` once there will be none.
    cut: Option<bool>,
    /// The first thread is done: no chunk is to be parsed any more.
    over: bool,
}

impl<'a> Lent<'a> {
    pub fn new() -> Self {
        Lent {
            chunks: OnceLock::new(),
            state: Mutex::new(LentState::default()),
            told: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LentState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lent thread: hands over the chunks of the rest (`None`: the rest is to be read on
    /// one thread), then parses them as a thread started for them would, unless the first
    /// thread is already done.
    pub fn help_with(&self, chunks: Option<Chunks<'a>>) {
        let mut st = self.lock();
        if st.over {
            return;
        }
        let ch = chunks.map(|c| self.chunks.get_or_init(|| c));
        st.cut.get_or_insert(ch.is_some());
        drop(st);
        self.told.notify_all();
        if let Some(ch) = ch {
            ch.help();
        }
    }

    /// Says there will be no chunks (if none were handed over): the lent thread must say one or
    /// the other, however it ends, before the first thread waits for it in [`Lent::run`].
    pub fn close(&self) {
        self.lock().cut.get_or_insert(false);
        self.told.notify_all();
    }

    /// The first thread is done, however it ended: the lent thread parses no more chunks (and
    /// never starts, if it has not), so that it never waits for the first thread in vain.
    pub fn finish(&self) {
        self.lock().over = true;
        if let Some(ch) = self.chunks.get() {
            ch.stop();
        }
    }

    /// Runs `first`, the first thread's walk of the rest (`text`), with the chunks the lent
    /// thread cut of the same text, once it has said whether there are any, then calls the
    /// parse off.
    pub fn run<'s, R>(
        &'s self,
        text: &'a str,
        first: impl FnOnce(Option<&'s Chunks<'a>>) -> R,
    ) -> R {
        let mut st = self.lock();
        while st.cut.is_none() {
            st = self.told.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        drop(st);
        let ch = self.chunks.get().filter(|c| std::ptr::eq(c.text, text));
        let out = first(ch);
        self.finish();
        out
    }
}

/// Calls [`Lent::finish`] when dropped: the first thread's guard, for however its parse ends.
pub(super) struct Finishing<'l, 'a>(pub &'l Lent<'a>);

impl Drop for Finishing<'_, '_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

impl<'a> Chunks<'a> {
    /// Chunks of about `len` bytes of `text`, the first at or after `len`; `None` when there
    /// would be fewer than two.
    pub fn cut(text: &'a str, len: usize, skip: Option<Skip>) -> Option<Self> {
        let len = len.max(1);
        let mut starts: Vec<usize> = Vec::new();
        let mut from = len;
        while from < text.len() {
            match super::find_split(text, from) {
                Some(at) if starts.last().is_none_or(|&l| at > l) => {
                    starts.push(at);
                    from = at + len;
                }
                Some(at) => from = at.max(from) + len,
                None => from += len,
            }
        }
        (starts.len() >= 2).then(|| Chunks::at(text, starts, skip))
    }

    /// Chunks starting at `starts` (increasing).
    fn at(text: &'a str, starts: Vec<usize>, skip: Option<Skip>) -> Self {
        Chunks {
            text,
            skip,
            state: Mutex::new(State {
                next: 0,
                want: 0,
                done: (0..starts.len()).map(|_| None).collect(),
                pool: Vec::new(),
                helper_gone: false,
            }),
            starts,
            ready: Condvar::new(),
            room: Condvar::new(),
            stop: AtomicBool::new(false),
        }
    }

    /// Where the first chunk starts.
    pub fn first(&self) -> usize {
        self.starts[0]
    }

    fn lock(&self) -> MutexGuard<'_, State<'a>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `first`, the first thread's walk of the text, with a second thread parsing chunks
    /// beside it when `helper` (and one starts; else the first parses every chunk), then calls
    /// the parse off.
    pub fn run<R>(&self, helper: bool, first: impl FnOnce() -> R) -> R {
        std::thread::scope(|s| {
            let spawned = helper
                && std::thread::Builder::new()
                    .name("xlens-json".into())
                    .spawn_scoped(s, || self.help())
                    .is_ok();
            if !spawned {
                self.help_gone();
            }
            let out = first();
            self.stop();
            out
        })
    }

    /// There is no second thread: the first parses every chunk.
    fn help_gone(&self) {
        self.lock().helper_gone = true;
    }

    /// Calls the parse off: the second thread stops at its next chunk (or soon within one).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let _st = self.lock();
        self.room.notify_all();
    }

    /// Reads chunk `i` into `batch`, `args` read ahead with `numbering` when given.
    fn parse(
        &self,
        i: usize,
        batch: &mut Batch<'a>,
        numbering: Option<&mut Numbering<'a>>,
    ) -> End<'a> {
        parse_chunk(
            self.text,
            (self.starts[i], self.starts.get(i + 1).copied()),
            self.skip,
            numbering,
            batch,
            &self.stop,
        )
    }

    /// The second thread: parses the next chunk nobody has taken, while there is one and the
    /// first thread is not too far behind.
    fn help(&self) {
        /// Says the second thread is gone however it ends, so the first never waits for it.
        struct Gone<'c, 'a>(&'c Chunks<'a>);
        impl Drop for Gone<'_, '_> {
            fn drop(&mut self) {
                self.0.lock().helper_gone = true;
                self.0.ready.notify_all();
            }
        }
        let _gone = Gone(self);
        SKIP.with(|c| c.set(self.skip));
        // The `args` are read ahead here, which the first thread would otherwise do; not for a
        // read that keeps only a few of them.
        let ahead = self.skip.is_none_or(|s| s.args_kept.is_none());
        let mut numbering = Numbering::default();
        loop {
            let (i, mut batch) = {
                let mut st = self.lock();
                loop {
                    if self.stop.load(Ordering::Relaxed) || st.next >= self.starts.len() {
                        return;
                    }
                    if st.next < st.want + AHEAD {
                        break;
                    }
                    st = self.room.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                st.next += 1;
                (st.next - 1, st.pool.pop().unwrap_or_default())
            };
            let end = self.parse(i, &mut batch, ahead.then_some(&mut numbering));
            self.lock().done[i] = Some(Parsed { batch, end });
            self.ready.notify_one();
        }
    }

    /// The first thread, at the first chunk's start (an element's start): hands every chunk on
    /// to `sink` in order, parsing chunks itself while the next is not ready.
    pub fn hand_on(&self, sink: &mut dyn Sink, in_object: bool) -> Result<Outcome, ParseError> {
        let out = self.hand_on_all(sink, in_object);
        self.stop();
        out
    }

    fn hand_on_all(&self, sink: &mut dyn Sink, in_object: bool) -> Result<Outcome, ParseError> {
        let n = self.starts.len();
        let mut want = 0;
        loop {
            let job = {
                let mut st = self.lock();
                loop {
                    if let Some(p) = st.done[want].take() {
                        break Job::HandOn(p);
                    }
                    if st.next < n {
                        st.next += 1;
                        break Job::Parse(st.next - 1, st.pool.pop().unwrap_or_default());
                    }
                    if st.helper_gone {
                        // Taken, and never to be parsed: read it here.
                        break Job::Parse(want, st.pool.pop().unwrap_or_default());
                    }
                    st = self.ready.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let parsed = match job {
                Job::HandOn(p) => p,
                Job::Parse(i, mut batch) => {
                    let end = self.parse(i, &mut batch, None);
                    let p = Parsed { batch, end };
                    if i != want {
                        self.lock().done[i] = Some(p);
                        continue;
                    }
                    p
                }
            };
            let Parsed { mut batch, end } = parsed;
            if !batch.strings.is_empty() {
                sink.strings(&batch.strings);
            }
            let pre = (batch.pre.len() == batch.pairs.len()).then_some(&batch.pre[..]);
            for e in &batch.events {
                sink.event(e, Args::read_ahead(e, &batch.pairs, pre));
            }
            batch.events.clear();
            batch.pairs.clear();
            batch.pre.clear();
            batch.strings.clear();
            match end {
                End::Landed => {
                    want += 1;
                    let mut st = self.lock();
                    st.pool.push(batch);
                    st.want = want;
                    self.room.notify_all();
                }
                End::Past(at) => return Ok(Outcome::From(at)),
                End::Closed { tail, at } => {
                    return finish_array(sink, self.text, in_object, tail, at)
                        .map(|()| Outcome::Finished)
                }
                End::Failed(e) => return Err(e),
                End::Stopped => {
                    return Err(super::error_at(
                        self.text,
                        self.starts[want],
                        Category::Io,
                        "a chunk's parse was called off (a bug in xlens)",
                    ))
                }
            }
        }
    }
}

/// Reads the elements of the events array from `from` (an element's start, or a guess at one)
/// into `batch` until one ends at or past `to`, or the array ends (`to` `None`: only that).
fn parse_chunk<'a>(
    text: &'a str,
    (from, to): (usize, Option<usize>),
    skip: Option<Skip>,
    mut numbering: Option<&mut Numbering<'a>>,
    batch: &mut Batch<'a>,
    stop: &AtomicBool,
) -> End<'a> {
    let mut c = Cursor { text, pos: from };
    loop {
        let n = batch.events.len();
        batch.events.push(RawEvent::default());
        match c.event(skip, &mut batch.pairs, &mut batch.events[n]) {
            Ok(_) => {
                if let Some(n) = numbering.as_deref_mut() {
                    let Batch {
                        pairs,
                        pre,
                        strings,
                        ..
                    } = &mut *batch;
                    n.read_ahead(&pairs[pre.len()..], pre, strings);
                }
            }
            Err(e) => {
                batch.events.pop();
                return End::Failed(e);
            }
        }
        match c.after_element(b']') {
            Ok(true) => {}
            Ok(false) => {
                c.ws();
                let at = c.pos;
                let tail = c.peek().is_some().then(|| c.object_tail());
                return End::Closed { tail, at };
            }
            Err(e) => return End::Failed(e),
        }
        if let Some(to) = to {
            if c.pos == to {
                return End::Landed;
            }
            if c.pos > to {
                return End::Past(c.pos);
            }
        }
        if batch.events.len() & 255 == 0 && stop.load(Ordering::Relaxed) {
            return End::Stopped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{real_trace, Record, TRICKY};
    use super::*;

    /// What a parse hands over, its error, and whether the chunks were used to the end.
    fn run(
        text: &str,
        starts: Option<Vec<usize>>,
        helper: bool,
    ) -> (Vec<String>, Option<String>, bool) {
        let mut rec = Record::default();
        let chunks = starts.map(|s| Chunks::at(text, s, None));
        let r = parse_with(text, &mut rec, None, chunks, helper);
        let used = r.as_ref().is_ok_and(|u| *u);
        (rec.0, r.err().map(|e| e.to_string()), used)
    }

    /// Chunks starting at any two of the file's `{` (events, objects inside events, objects
    /// outside the array), with a second thread or without: the same events as on one thread;
    /// used to the end where the first is an event's start and the second one too, or past the
    /// last event's start (the array then ends within the first chunk).
    #[test]
    fn chunks_change_nothing_wherever_they_start() {
        let (want, err, _) = run(TRICKY, None, false);
        assert_eq!(err, None);
        let braces: Vec<usize> = TRICKY.match_indices('{').map(|(i, _)| i).collect();
        let starts: Vec<usize> = braces
            .iter()
            .copied()
            .filter(|&i| {
                TRICKY[i..].starts_with("{\n    \"ph\"") || TRICKY[i..].starts_with("{\"ph\"")
            })
            .collect();
        assert_eq!(starts.len(), 5);
        let mut used = 0;
        for (n, &a) in braces.iter().enumerate() {
            for &b in &braces[n + 1..] {
                for helper in [true, false] {
                    let (got, err, all) = run(TRICKY, Some(vec![a, b]), helper);
                    assert_eq!(err, None, "chunks at {a}, {b}");
                    assert_eq!(got, want, "chunks at {a}, {b}");
                    let events = starts.contains(&a) && (starts.contains(&b) || b > starts[4]);
                    assert_eq!(all, events, "chunks at {a}, {b}");
                    used += usize::from(all);
                }
            }
        }
        // At least every pair of events (5 choose 2), with and without a helper.
        assert!(used >= 20, "{used}");
        // Every event its own chunk.
        let (got, _, all) = run(TRICKY, Some(starts[1..].to_vec()), true);
        assert_eq!((got, all), (want, true));
    }

    /// Errors anywhere (in a chunk, at a chunk's start, after the events array) are the one
    /// thread's, wherever the chunks start.
    #[test]
    fn errors_are_the_same_in_chunks() {
        let broken = TRICKY.replace("\"ts\": 12", "\"ts\": NaN");
        let extra = format!("{TRICKY} x");
        let cut = &TRICKY[..TRICKY.find("\"last\"").expect("last")];
        let open = TRICKY.trim_end().trim_end_matches('}');
        for text in [broken.as_str(), extra.as_str(), cut, open] {
            let (want_events, want_err, _) = run(text, None, false);
            assert!(want_err.is_some(), "{text}");
            let braces: Vec<usize> = text.match_indices('{').map(|(i, _)| i).collect();
            for (n, &a) in braces.iter().enumerate() {
                for &b in &braces[n + 1..] {
                    let (events, err, _) = run(text, Some(vec![a, b]), true);
                    assert_eq!(err, want_err, "chunks at {a}, {b} of {text}");
                    assert!(events.len() <= want_events.len(), "chunks at {a}, {b}");
                }
            }
        }
    }

    /// A real trace cut into chunks of many lengths, read in full and for a first answer (host
    /// operators left out, two args kept): the same as on one thread, the chunks used to the
    /// end, with the `args` the second thread read ahead checked by [`Record`].
    #[test]
    fn a_real_trace_parses_the_same_in_chunks() {
        let text = real_trace();
        let first_answer = Skip {
            complete_cats: &["cpu_op", "python_function"],
            flow_cats: &["ac2g"],
            args_kept: Some(&["stream", "correlation"]),
        };
        for skip in [None, Some(first_answer)] {
            let mut one = Record::default();
            let r = parse_with(&text, &mut one, skip, None, false);
            assert!(r.is_ok());
            let skipped = one.0.iter().filter(|e| e.starts_with("skipped ")).count();
            assert_eq!(skip.is_some(), skipped > 1000, "{skipped} events left out");
            for len in [1 << 10, 7_000, 64 << 10, text.len() / 3] {
                let chunks = Chunks::cut(&text, len, skip).expect("chunks");
                let n = chunks.starts.len();
                assert!(n >= 2);
                let mut rec = Record::default();
                let all = parse_with(&text, &mut rec, skip, Some(chunks), true);
                assert!(matches!(all, Ok(true)), "{len}: {n} chunks");
                assert_eq!(rec.0, one.0, "{len}");
            }
        }
    }
}
