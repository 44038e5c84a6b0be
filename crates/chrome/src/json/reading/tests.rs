use super::super::tests::{Record, TRICKY};
use super::super::{parse_text, with_skip, Args, RawEvent, Skip};
use super::*;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::io::{self, Read};

const RANK0: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/pytorch/two_ranks/hta-trace_filter-sampled_rank-0.json.gz"
);

/// The committed rank-0 trace of HTA's trace_filter test data, inflated.
fn rank0() -> String {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(RANK0).expect("fixture"))
        .read_to_string(&mut text)
        .expect("gunzip");
    text
}

/// A plan for any size.
fn plan(segment: usize, window: usize) -> Plan {
    Plan {
        min: 0,
        first: segment,
        segment,
        window,
        two_threads: 0,
        chunk: 2 << 10,
        populate: 16 << 10,
    }
}

/// What a parse of the whole text hands over, or its error.
fn whole_read(text: &str, skip: Option<Skip>) -> Result<Vec<String>, String> {
    let mut rec = Record::default();
    with_skip(skip, || parse_text(text, &mut rec))
        .map(|_| rec.0)
        .map_err(|e| e.to_string())
}

/// A read of `r` (stating `size`) checked against `want`, a read of the whole text: when
/// it parses, the same events and the text's length; never when the whole read fails.
/// Returns whether it parsed.
fn check(
    r: impl Read + Send,
    len: usize,
    size: usize,
    skip: Option<Skip>,
    plan: Plan,
    want: &Result<Vec<String>, String>,
) -> bool {
    let mut rec = Record::default();
    let got = parse_planned(r, size, &mut rec, skip, plan);
    match (got, want) {
        (Some(n), Ok(want)) => {
            assert_eq!(n, len, "{plan:?}");
            assert_eq!(&rec.0, want, "{plan:?}");
            true
        }
        (Some(_), Err(e)) => panic!("{plan:?}: parsed a text a whole read rejects: {e}"),
        (None, _) => false,
    }
}

/// A reader slow up to `slow_until` bytes (16 KB a read, a pause before each), then fast:
/// the parse cuts segments while it waits, then reads the rest, inflated whole.
struct Paced<'a> {
    bytes: &'a [u8],
    read: usize,
    slow_until: usize,
}

impl Read for Paced<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = buf.len().min(self.bytes.len());
        if self.read < self.slow_until {
            std::thread::sleep(std::time::Duration::from_micros(300));
            n = n.min(16 << 10);
        }
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.read += n;
        Ok(n)
    }
}

#[test]
fn a_trace_parsed_as_it_is_inflated_hands_over_what_a_whole_read_does() {
    let text = rank0();
    let gz = std::fs::read(RANK0).expect("fixture");
    let b = text.as_bytes();
    for skip in [None, Some(crate::GPU_ACTIVITY)] {
        let want = whole_read(&text, skip);
        assert!(want.is_ok());
        // Windows longer than the longest event (6,860 bytes); from segments of a few
        // events to a third of the file; the rest on one thread or in chunks on two.
        for segment in [3 << 10, 7_000, 20 << 10, 150 << 10, text.len() / 3] {
            // The head as long as a segment, or shorter.
            for (two_threads, first) in [(0, segment), (usize::MAX, segment), (0, 1 << 10)] {
                let plan = Plan {
                    two_threads,
                    first,
                    ..plan(segment, 8 << 10)
                };
                let all =
                    |r: Box<dyn Read + Send + '_>| check(r, b.len(), b.len(), skip, plan, &want);
                // Through the gzip reader, as the store gives it, stating its size.
                assert!(all(Box::new(flate2::read::MultiGzDecoder::new(&gz[..]))));
                // Segments while the text comes slowly (to a quarter, or all of it), then
                // the rest.
                for slow_until in [b.len() / 4, b.len()] {
                    let paced = Paced {
                        bytes: b,
                        read: 0,
                        slow_until,
                    };
                    assert!(all(Box::new(paced)), "{plan:?} slow to {slow_until}");
                }
                // Stating more than there is: the same events; stating too little: a
                // whole read.
                assert!(check(b, b.len(), b.len() * 2, skip, plan, &want));
                assert!(!check(b, b.len(), b.len() / 3, skip, plan, &want));
            }
        }
    }
}

/// A reader that gives its bytes 16 KB at a time and, before it gives the text past each
/// [`STEP`] after the first two, waits until the sink has had every event that starts a
/// step and 32 KB before that point (what the reading thread can have parsed by then: it
/// hears how far the inflating got every step, and cuts segments of 20 KB plus a window of
/// 8 KB). So the reading thread is done with pages well before the inflating thread needs
/// more, however fast either runs. It waits at most 10 s a step.
struct InStep<'a> {
    bytes: &'a [u8],
    read: usize,
    /// Where each event starts (its `"ph"`), in order.
    starts: Vec<usize>,
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Read for InStep<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.bytes.len()).min(16 << 10);
        let step = (self.read + n) / STEP;
        if step >= 2 && self.read / STEP < step {
            let parsed_to = (step - 1) * STEP - (32 << 10);
            let want = self.starts.partition_point(|&s| s < parsed_to);
            let t0 = std::time::Instant::now();
            while self.seen.load(Ordering::SeqCst) < want
                && t0.elapsed() < std::time::Duration::from_secs(10)
            {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.read += n;
        Ok(n)
    }
}

/// A [`Record`] that calls `after` with the number of things it has recorded after each
/// event (to count them for [`InStep`], or to let a [`Held`] reader go on).
struct Hooked<F: FnMut(usize)> {
    rec: Record,
    after: F,
}

impl<F: FnMut(usize)> Sink for Hooked<F> {
    fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
        self.rec.event(e, args);
        (self.after)(self.rec.0.len());
    }
    fn strings(&mut self, new: &[Cow<'_, str>]) {
        self.rec.strings(new);
    }
    fn field(&mut self, key: &str, value: &RawValue) {
        self.rec.field(key, value);
    }
}

#[test]
fn pages_of_text_already_read_are_written_again_and_the_events_are_those_of_a_whole_read() {
    let text = rank0();
    let b = text.as_bytes();
    let starts: Vec<usize> = text.match_indices("\"ph\"").map(|(i, _)| i).collect();
    for skip in [None, Some(crate::GPU_ACTIVITY)] {
        let want = whole_read(&text, skip).expect("the fixture parses");
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let r = InStep {
            bytes: b,
            read: 0,
            starts: starts.clone(),
            seen: seen.clone(),
        };
        let mut sink = Hooked {
            rec: Record::default(),
            after: |_| {
                seen.fetch_add(1, Ordering::SeqCst);
            },
        };
        let (n, moved) = parse_counted(r, b.len(), &mut sink, skip, plan(20 << 10, 8 << 10));
        assert_eq!(n, Some(b.len()));
        assert_eq!(sink.rec.0, want);
        if cfg!(target_os = "linux") {
            // The text (1.76 MB, seven steps) is written on pages moved ahead from the third
            // step on, but for what the reading thread has not reached when the inflating
            // thread makes it ready (946,176 bytes are moved, here and on one busy core).
            assert!(moved > b.len() / 4, "{moved} of {}", b.len());
        }
    }
}

#[test]
fn where_a_cut_is_not_an_element_or_the_text_is_bad_nothing_is_parsed() {
    let want = whole_read(TRICKY, None);
    let mut parsed = 0;
    for segment in 4..TRICKY.len() {
        for (window, first) in [(8, segment), (40, segment), (120, segment), (40, 5)] {
            let plan = Plan {
                first,
                ..plan(segment, window)
            };
            let b = TRICKY.as_bytes();
            parsed += usize::from(check(b, b.len(), b.len(), None, plan, &want));
            // One byte changed after the first cut or near the end.
            for at in [segment + 1, TRICKY.len() - 3] {
                let Some(c) = b.get(at) else {
                    continue;
                };
                let mut changed = b.to_vec();
                changed[at] = if *c == b'[' { b'{' } else { b'[' };
                let text = String::from_utf8(changed).expect("ASCII change");
                let want = whole_read(&text, None);
                check(text.as_bytes(), text.len(), text.len(), None, plan, &want);
            }
        }
    }
    // Some cuts in TRICKY are elements (others are inside `args`).
    assert!(parsed > 0);
}

#[test]
fn a_real_trace_with_one_byte_changed_parses_as_a_whole_read_or_not_at_all() {
    let text = rank0();
    let plan = plan(60 << 10, 8 << 10);
    // 60 places spread over the file (the head, segments, the last part, the cuts'
    // neighbourhoods), each byte changed into a bracket, a quote, a digit or a letter.
    let mut parsed = 0;
    for k in 0..60usize {
        let at = (k * 7919 * 1013) % text.len();
        let with = [b'[', b'"', b'7', b'x'][k % 4];
        let mut changed = text.clone().into_bytes();
        if changed[at] == with || !changed[at].is_ascii() {
            continue;
        }
        changed[at] = with;
        let Ok(changed) = String::from_utf8(changed) else {
            continue;
        };
        let want = whole_read(&changed, None);
        let b = changed.as_bytes();
        parsed += usize::from(check(b, b.len(), b.len(), None, plan, &want));
    }
    // Many changes land inside strings and numbers and leave valid JSON.
    assert!(parsed > 5, "{parsed}");
}

/// A reader that gives the first `hold` bytes, then waits for a word from the sink before
/// it gives the rest. (The inflating thread says how far it got every [`STEP`] bytes, so
/// the reading thread gets no further than the last step before `hold`.)
struct Held<'a> {
    bytes: &'a [u8],
    hold: usize,
    go: std::sync::mpsc::Receiver<()>,
}

impl Read for Held<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.hold == 0 {
            let _ = self.go.recv();
        }
        let mut n = buf.len().min(self.bytes.len());
        if self.hold > 0 {
            n = n.min(self.hold);
            self.hold -= n;
        }
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn a_segment_that_fails_while_the_rest_is_parsed_beside_it_parses_nothing() {
    let text = rank0();
    // Segments of 20 KB; the rest in chunks of 2 KB, more than the inflating thread may
    // parse ahead of the first (it then waits for the first to hand them on).
    let plan = plan(20 << 10, 8 << 10);
    let names: Vec<usize> = text.match_indices("\"name\": \"").map(|(i, _)| i).collect();
    // The reader stops before the event after the gate, in the first thread's segments; the
    // event after it is bad JSON.
    for k in [30, 60, 90] {
        let mut changed = text.clone().into_bytes();
        changed[names[k + 1] + 6] = b'[';
        let want = whole_read(std::str::from_utf8(&changed).expect("ASCII"), None);
        assert!(want.is_err());
        let (tx, rx) = std::sync::mpsc::channel();
        let held = Held {
            bytes: &changed,
            hold: names[k] + STEP + (60 << 10),
            go: rx,
        };
        // At the `k`th thing recorded (the first are the trace's head fields), the reader
        // goes on and the sink waits a while, so that the text is inflated and its rest cut
        // and parsed beside the segment being read.
        let mut go = Some(tx);
        let mut gate = Hooked {
            rec: Record::default(),
            after: |n| {
                if n == k {
                    if let Some(go) = go.take() {
                        let _ = go.send(());
                        drop(go);
                        std::thread::sleep(std::time::Duration::from_millis(30));
                    }
                }
            },
        };
        assert_eq!(
            parse_planned(held, changed.len(), &mut gate, None, plan),
            None,
            "bad after event {k}"
        );
        drop(gate);
        assert!(go.is_none(), "the gate was reached");
    }
}

/// A reader that ends each read just after the first byte of a character of two or more
/// bytes, where the bytes asked for hold one: the inflating thread's checks then stop
/// within characters.
struct Splitting<'a>(&'a [u8]);

impl Read for Splitting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = buf.len().min(self.0.len());
        if let Some(k) = self.0[..n].iter().position(|&c| c >= 0xC0) {
            n = k + 1;
        }
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn text_beyond_ascii_is_checked_as_it_is_inflated() {
    // Characters of two and three bytes all through the file, in names and args.
    let text = rank0().replace("aten::", "aten∷é");
    let plan = plan(20 << 10, 8 << 10);
    let b = text.as_bytes();
    assert!(b.len() > 4 * STEP);
    for skip in [None, Some(crate::GPU_ACTIVITY)] {
        let want = whole_read(&text, skip);
        assert!(want.is_ok());
        assert!(check(Splitting(b), b.len(), b.len(), skip, plan, &want));
        assert!(check(b, b.len(), b.len(), skip, plan, &want));
    }
    // A byte that is not UTF-8 (in a name, so the JSON is otherwise as it was) anywhere:
    // the head, a segment, the rest, the last byte before the closing brace.
    let names: Vec<usize> = text.match_indices("aten∷é").map(|(i, _)| i).collect();
    for at in [names[0], names[names.len() / 2], names[names.len() - 1]] {
        for bad in [&[0xFFu8][..], &[0xC3], &[0xE2, 0x88]] {
            let mut changed = b.to_vec();
            changed.splice(at..at, bad.iter().copied());
            for r in [
                Box::new(Splitting(&changed)) as Box<dyn Read + Send>,
                Box::new(&changed[..]),
            ] {
                let mut rec = Record::default();
                assert_eq!(
                    parse_planned(r, changed.len(), &mut rec, None, plan),
                    None,
                    "{bad:?} at {at}"
                );
            }
        }
    }
}

/// A reader that fails after `ok` bytes.
struct Failing<'a> {
    bytes: &'a [u8],
    ok: usize,
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::other("corrupt deflate stream"));
        }
        let n = buf.len().min(self.ok).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.ok -= n;
        Ok(n)
    }
}

/// A reader that panics after `ok` bytes.
struct Panicking<'a>(Failing<'a>);

impl Read for Panicking<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.ok == 0 {
            panic!("a reader that panics");
        }
        self.0.read(buf)
    }
}

/// The parsing thread does not wait for a reader that panicked: the file is read whole.
#[test]
fn a_reader_that_panics_parses_nothing_and_returns() {
    let text = rank0();
    let plan = plan(20 << 10, 8 << 10);
    for ok in [0, text.len() / 2] {
        let r = Panicking(Failing {
            bytes: text.as_bytes(),
            ok,
        });
        let mut rec = Record::default();
        assert_eq!(parse_planned(r, text.len(), &mut rec, None, plan), None);
    }
}

#[test]
fn a_read_that_fails_anywhere_parses_nothing() {
    let text = rank0();
    let plan = plan(20 << 10, 8 << 10);
    let want = whole_read(&text, None);
    // The same text read whole parses (so a failed read is what stops it).
    assert!(check(
        text.as_bytes(),
        text.len(),
        text.len(),
        None,
        plan,
        &want
    ));
    for ok in [0, 100, 30 << 10, text.len() / 2, text.len() - 1] {
        let r = Failing {
            bytes: text.as_bytes(),
            ok,
        };
        let mut rec = Record::default();
        assert_eq!(
            parse_planned(r, text.len(), &mut rec, None, plan),
            None,
            "a read failing after {ok} bytes"
        );
    }
}
