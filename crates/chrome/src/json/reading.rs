//! Parsing a file while it is still being read (inflated from gzip). The second thread inflates
//! and cuts the text into segments at places where an element of the events array starts; the
//! first thread reads each segment as it comes (the first as the head of the file, the others
//! as runs of events) while the second inflates on, so that inflating, a third of the time to a
//! first answer for a `.json.gz` trace, overlaps with parsing. The last part of the file the
//! second thread parses itself once it has inflated it, handing its events on in batches as
//! with a file read whole ([`super::parse_text`]).
//!
//! Whatever goes wrong (a size stated wrongly, a cut that is not the start of an element, bad
//! JSON or UTF-8 anywhere, a failed read), the read is given up and the caller reads the file
//! whole from the start, into a fresh sink: results and errors never depend on this path. The
//! segments are dropped once read, so the whole text is never in memory at once.

use super::{find_split, second_part, with_skip, Batch, Msg, ParseError, Second, Sink, Skip};
use super::{Walker, PARALLEL_MIN};
use serde_json::error::Category;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// How a read is split between the two threads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Files stating a smaller size are not read here.
    pub min: usize,
    /// Where the second thread stops cutting segments and keeps the rest to parse itself, as a
    /// share (percent) of the size the file states.
    pub share: usize,
    /// The length of a segment, before the search for an element's start.
    pub segment: usize,
    /// How far past a segment's length that search goes.
    pub window: usize,
}

impl Plan {
    /// The plan for this machine. The first thread reads while the second inflates, which is a
    /// little faster, so it takes most of the file. `XLENS_JSON_THREADS=1` reads whole;
    /// `XLENS_JSON_READING_SHARE` sets the share.
    fn here(size: usize) -> Plan {
        let cores = super::threads();
        let share = std::env::var("XLENS_JSON_READING_SHARE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(85)
            .min(95);
        Plan {
            min: if cores < 2 { usize::MAX } else { PARALLEL_MIN },
            share,
            segment: (size / 8).clamp(1 << 20, 8 << 20),
            window: 256 << 10,
        }
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
    parse_planned(r, size, sink, skip, Plan::here(size))
}

fn parse_planned<R: Read + Send>(
    r: R,
    size: usize,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    plan: Plan,
) -> Option<usize> {
    if size < plan.min || plan.segment.saturating_add(plan.window) >= size {
        return None;
    }
    // The head, which the first thread parses, and the last part, which the second thread
    // parses itself (the events of both borrow from them until the end).
    let (mut head, mut last) = (String::new(), String::new());
    let (head_out, last_out) = (&mut head, &mut last);
    let cancel = AtomicBool::new(false);
    let cancel = &cancel;
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<Msg<'_>>(super::AHEAD);
        let (back_tx, back_rx) = mpsc::channel::<Batch<'_>>();
        let second = std::thread::Builder::new()
            .name("xlens-json".into())
            .spawn_scoped(s, move || {
                inflate(r, size, plan, last_out, (&tx, &back_rx), cancel, skip)
            })
            .ok()?;
        // The head of the file, up to where the next segment starts.
        match rx.recv() {
            Ok(Msg::Segment(text)) => *head_out = text,
            _ => {
                cancel.store(true, Ordering::Relaxed);
                let _ = second.join();
                return None;
            }
        }
        let head: &String = head_out;
        let at = head.len();
        let second_rx = Second {
            at,
            rx,
            back: back_tx,
        };
        let parsed = with_skip(skip, || {
            Walker::new(head, sink, Some(second_rx), skip).top()
        });
        cancel.store(true, Ordering::Relaxed);
        let read = second.join().ok()??;
        matches!(parsed, Ok(true)).then_some(read)
    })
}

/// The second thread: inflates `r`, sending segments of it cut where an element of the events
/// array starts, up to [`Plan::share`] of `size`; then inflates the rest into `last` and parses
/// it (as [`second_part`]). Returns the size of the whole text, `None` where it failed (having
/// said so to the first thread, or having found it gone).
fn inflate<'a, R: Read>(
    mut r: R,
    size: usize,
    plan: Plan,
    last: &'a mut String,
    (tx, back): (&mpsc::SyncSender<Msg<'a>>, &mpsc::Receiver<Batch<'a>>),
    cancel: &AtomicBool,
    skip: Option<Skip>,
) -> Option<usize> {
    let fail = |why: &str| {
        let _ = tx.send(Msg::Failed(stopped(why)));
        None
    };
    let keep_from = size / 100 * plan.share;
    let want = plan.segment + plan.window;
    // Bytes sent so far, and what is inflated past them.
    let mut sent = 0usize;
    let mut cur: Vec<u8> = Vec::with_capacity(want);
    loop {
        let need = want.saturating_sub(cur.len()) as u64;
        if (&mut r).take(need).read_to_end(&mut cur).is_err() {
            return fail("reading the file failed");
        }
        if cur.len() < want || sent + cur.len() > keep_from {
            break;
        }
        let valid = match std::str::from_utf8(&cur) {
            Ok(t) => t.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => return fail("not UTF-8 text"),
        };
        let text = std::str::from_utf8(&cur[..valid]).unwrap_or("");
        let Some(at) = find_split(text, plan.segment).filter(|&at| at > 0) else {
            return fail("no place to cut");
        };
        let mut next = Vec::with_capacity(want);
        next.extend_from_slice(&cur[at..]);
        cur.truncate(at);
        let Ok(segment) = String::from_utf8(std::mem::replace(&mut cur, next)) else {
            return fail("not UTF-8 text");
        };
        sent += at;
        if cancel.load(Ordering::Relaxed) || tx.send(Msg::Segment(segment)).is_err() {
            return None;
        }
    }
    if sent == 0 {
        return fail("too short to cut");
    }
    if r.read_to_end(&mut cur).is_err() {
        return fail("reading the file failed");
    }
    let Ok(text) = String::from_utf8(cur) else {
        return fail("not UTF-8 text");
    };
    *last = text;
    let last: &'a String = last;
    let total = sent + last.len();
    if cancel.load(Ordering::Relaxed) {
        return None;
    }
    with_skip(skip, || second_part(last, 0, tx, back, cancel, skip));
    Some(total)
}

/// The second thread's word that it stopped (the file is then read whole, which says what is
/// wrong).
fn stopped(why: &str) -> ParseError {
    ParseError {
        category: Category::Io,
        message: why.into(),
        line: 0,
        column: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{Record, TRICKY};
    use super::super::{parse_text, with_skip, Skip};
    use super::*;
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

    /// A plan for any size, with the second thread keeping the last 15 %.
    fn plan(segment: usize, window: usize) -> Plan {
        Plan {
            min: 0,
            share: 85,
            segment,
            window,
        }
    }

    /// What a parse of the whole text hands over, or its error.
    fn whole_read(text: &str, skip: Option<Skip>) -> Result<Vec<String>, String> {
        let mut rec = Record::default();
        with_skip(skip, || parse_text(text, &mut rec, None))
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

    #[test]
    fn a_trace_parsed_as_it_is_inflated_hands_over_what_a_whole_read_does() {
        let text = rank0();
        let gz = std::fs::read(RANK0).expect("fixture");
        for skip in [None, Some(crate::GPU_ACTIVITY)] {
            let want = whole_read(&text, skip);
            assert!(want.is_ok());
            let mut parsed = 0;
            let mut tried = 0;
            // Windows longer than the longest event (6,860 bytes), and at least one segment
            // before the share.
            for segment in [3 << 10, 20 << 10, 150 << 10] {
                for share in [15, 50, 85, 95] {
                    let plan = Plan {
                        min: 0,
                        share,
                        segment,
                        window: 8 << 10,
                    };
                    // Through the gzip reader, as the store gives it, stating its size.
                    let r = flate2::read::MultiGzDecoder::new(&gz[..]);
                    parsed += usize::from(check(r, text.len(), text.len(), skip, plan, &want));
                    tried += 1;
                    // Stating too little (the second thread keeps more) or too much (it cuts
                    // to the end): the same events, or a whole read.
                    let b = text.as_bytes();
                    check(b, b.len(), b.len() / 3, skip, plan, &want);
                    check(b, b.len(), b.len() * 2, skip, plan, &want);
                }
            }
            // Every cut lands on an element there, so every read parses.
            assert_eq!(parsed, tried, "{skip:?}");
        }
    }

    #[test]
    fn where_a_cut_is_not_an_element_or_the_text_is_bad_nothing_is_parsed() {
        let want = whole_read(TRICKY, None);
        let mut parsed = 0;
        for segment in 4..TRICKY.len() {
            for window in [8, 40, 120] {
                let plan = Plan {
                    min: 0,
                    share: 95,
                    segment,
                    window,
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
        // 60 places spread over the file (the head, segments, the second thread's part, the
        // cuts' neighbourhoods), each byte changed into a bracket, a quote, a digit or a letter.
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
}
