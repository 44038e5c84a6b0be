//! Parsing a `.json.gz` file as it is inflated, on the thread that inflates it: a segment of
//! text at a time (cut where an element of the events array starts) is inflated into one of a
//! few buffers and parsed, its events imported, before the next is inflated. The text is never
//! in memory whole, and what is read was just written by the same core.
//!
//! Why one thread: on the two-core machine this was measured on, every way of sharing the work
//! with a second thread was slower or no faster. A second thread inflating ahead into fresh
//! memory paid as much again for the memory as for inflating (the kernel zeroes each new page);
//! inflating into buffers used again, read by the other core, halved the inflating thread's
//! speed; a second thread inflating the file again to parse its last part itself lost to both
//! threads slowing each other (PERFORMANCE.md, "A `.json.gz` read on one thread").
//!
//! Whatever goes wrong (a cut that is not the start of an element, an event longer than the
//! search for a cut, bad JSON or UTF-8 anywhere, a failed read), the read is given up and the
//! caller reads the file whole from the start, into a fresh sink: results and errors never
//! depend on this path.

use super::{find_split, with_skip, ParseError, Sink, Skip, Walker, PARALLEL_MIN};
use serde_json::error::Category;
use std::io::{ErrorKind, Read};

/// How a file is cut into segments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Files stating a smaller size are read whole instead.
    pub min: usize,
    /// The length of a segment, before the search for an element's start.
    pub segment: usize,
    /// How far past a segment's length that search goes (the longest event a cut can pass).
    pub window: usize,
}

impl Plan {
    fn here() -> Plan {
        Plan {
            min: PARALLEL_MIN,
            // A buffer under the allocator's 1 MiB, from which it maps whole huge pages.
            segment: 768 << 10,
            window: 128 << 10,
        }
    }
}

/// What [`Feed::next`] gives.
pub(super) enum Fed {
    /// Text whose elements of the events array end exactly at its end, each with a comma.
    Segment(Piece),
    /// The rest of the file.
    Last(String),
}

/// Text inflated on the thread that parses it, a segment at a time.
pub(super) trait Feed {
    fn next(&mut self) -> Result<Fed, ParseError>;
    /// A segment read, its buffer to be filled again.
    fn give_back(&mut self, piece: Piece);
}

/// A segment's text, the start of a buffer that is filled again once the text is read.
pub(super) struct Piece {
    buf: Vec<u8>,
    /// The text's length; `buf[..len]` was checked to be UTF-8 when it was cut.
    len: usize,
}

impl Piece {
    pub fn text(&self) -> &str {
        // SAFETY: `Inflater::cut`, the only place a piece is made (its fields are private to
        // this module), checked `buf[..len]` to be UTF-8; the buffer is not changed while the
        // piece holds it. (Checking it again would cost a twentieth of a first answer.)
        unsafe { std::str::from_utf8_unchecked(&self.buf[..self.len]) }
    }
}

/// [`Feed`] of a reader: buffers filled, cut where an element of the events array starts.
struct Inflater<R> {
    r: R,
    plan: Plan,
    /// The text being inflated: its first `filled` bytes.
    cur: Vec<u8>,
    filled: usize,
    spare: Vec<Vec<u8>>,
    /// Bytes of text handed on.
    sent: usize,
}

impl<R: Read> Inflater<R> {
    fn fill(&mut self) -> Result<(), ParseError> {
        let want = self.cur.len();
        while self.filled < want {
            match self.r.read(&mut self.cur[self.filled..]) {
                Ok(0) => break,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Err(stopped("reading the file failed")),
            }
        }
        Ok(())
    }

    /// The next segment; `None` at the end of the text (what is left is the last part).
    fn cut(&mut self) -> Result<Option<Piece>, ParseError> {
        self.fill()?;
        if self.filled < self.cur.len() {
            return Ok(None);
        }
        let text = match std::str::from_utf8(&self.cur[..self.filled]) {
            Ok(t) => t,
            // A character cut at the end: checked again to its start.
            Err(e) if e.error_len().is_none() => {
                std::str::from_utf8(&self.cur[..e.valid_up_to()]).unwrap_or("")
            }
            Err(_) => return Err(stopped("not UTF-8 text")),
        };
        let Some(at) = find_split(text, self.plan.segment).filter(|&at| at > 0) else {
            return Err(stopped("no place to cut"));
        };
        let want = self.cur.len();
        let mut next = self.spare.pop().unwrap_or_else(|| vec![0u8; want]);
        next[..self.filled - at].copy_from_slice(&self.cur[at..self.filled]);
        let this = std::mem::replace(&mut self.cur, next);
        self.filled -= at;
        self.sent += at;
        // `this[..at]` is UTF-8: `text`, checked above, ends after it, and `at` is the place
        // of a `{`.
        Ok(Some(Piece { buf: this, len: at }))
    }
}

impl<R: Read> Feed for Inflater<R> {
    fn next(&mut self) -> Result<Fed, ParseError> {
        if let Some(piece) = self.cut()? {
            return Ok(Fed::Segment(piece));
        }
        let mut last = std::mem::take(&mut self.cur);
        last.truncate(self.filled);
        if self.r.read_to_end(&mut last).is_err() {
            return Err(stopped("reading the file failed"));
        }
        self.sent += last.len();
        String::from_utf8(last)
            .map(Fed::Last)
            .map_err(|_| stopped("not UTF-8 text"))
    }

    fn give_back(&mut self, piece: Piece) {
        self.spare.push(piece.buf);
    }
}

/// Reads `r` to its end, parsing the JSON into `sink` as it goes; `size` is the size the file
/// states (0 when unknown). Returns the size of the JSON in bytes, or `None` when the file is
/// to be read whole instead (too small to gain by this, or anything went wrong): the sink then
/// holds part of the events, and is to be dropped.
pub(crate) fn parse_reading<R: Read>(
    r: R,
    size: usize,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
) -> Option<usize> {
    parse_planned(r, size, sink, skip, Plan::here())
}

fn parse_planned<R: Read>(
    r: R,
    size: usize,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    plan: Plan,
) -> Option<usize> {
    if size < plan.min || plan.segment.saturating_add(plan.window) >= size {
        return None;
    }
    let mut feed = Inflater {
        r,
        plan,
        cur: vec![0u8; plan.segment + plan.window],
        filled: 0,
        spare: Vec::new(),
        sent: 0,
    };
    // The head of the file, whose events the walker reads before the rest.
    let Ok(Fed::Segment(head)) = feed.next() else {
        return None;
    };
    let parsed = with_skip(skip, || {
        Walker::fed(head.text(), sink, &mut feed, skip).top()
    });
    matches!(parsed, Ok(true)).then_some(feed.sent)
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

    /// A plan for any size.
    fn plan(segment: usize, window: usize) -> Plan {
        Plan {
            min: 0,
            segment,
            window,
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
        r: impl Read,
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
            // Windows longer than the longest event (6,860 bytes); from segments of a few
            // events to a third of the file.
            for segment in [3 << 10, 7_000, 20 << 10, 150 << 10, text.len() / 3] {
                let plan = plan(segment, 8 << 10);
                // Through the gzip reader, as the store gives it, stating its size.
                let r = flate2::read::MultiGzDecoder::new(&gz[..]);
                parsed += usize::from(check(r, text.len(), text.len(), skip, plan, &want));
                tried += 1;
                // Stating too little or too much: the same events, or a whole read.
                let b = text.as_bytes();
                check(b, b.len(), b.len() / 3, skip, plan, &want);
                check(b, b.len(), b.len() * 2, skip, plan, &want);
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
                let plan = plan(segment, window);
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
