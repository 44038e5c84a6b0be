//! Reading the JSON: the top-level object (or bare array) and each trace event, borrowed from the
//! input where no escapes force a copy. Events are handed to the importer one at a time as the
//! parser meets them; no tree of the file is built.

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::error::Category;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

/// One trace event as written. Fields whose type varies between producers (numbers or strings)
/// are kept as raw JSON text and read by the importer. Its `args` pairs are stored apart (see
/// [`EventSeed`]), so that reading an event allocates nothing.
#[derive(Default)]
pub(crate) struct RawEvent<'a> {
    pub ph: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub cat: Option<Cow<'a, str>>,
    pub pid: Option<&'a RawValue>,
    pub tid: Option<&'a RawValue>,
    pub ts: Option<&'a RawValue>,
    pub dur: Option<&'a RawValue>,
    pub id: Option<&'a RawValue>,
    pub id2: Option<&'a RawValue>,
    pub bp: Option<Cow<'a, str>>,
    /// Where the `args` object's pairs are in the list they were added to, if it has one.
    pub args: Option<(u32, u32)>,
}

/// An event with its own list of `args` pairs.
pub(crate) struct OwnedEvent<'a> {
    pub event: RawEvent<'a>,
    pub pairs: Vec<Pair<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for OwnedEvent<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut pairs = Vec::new();
        let event = de::DeserializeSeed::deserialize(EventSeed { pairs: &mut pairs }, d)?;
        Ok(OwnedEvent { event, pairs })
    }
}

/// A key of `args` and its raw value.
pub(crate) type Pair<'a> = (Cow<'a, str>, &'a RawValue);

/// Reads one event, adding its `args` pairs (keys and raw values, in the order written, read in
/// the same pass as the event) to `pairs`.
pub(crate) struct EventSeed<'p, 'a> {
    pub pairs: &'p mut Vec<Pair<'a>>,
}

impl<'de: 'a, 'a> de::DeserializeSeed<'de> for EventSeed<'_, 'a> {
    type Value = RawEvent<'a>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<RawEvent<'a>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for EventSeed<'_, 'a> {
    type Value = RawEvent<'a>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event (an object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEvent<'a>, A::Error> {
        fn once<T, E: de::Error>(
            slot: &mut Option<T>,
            v: Option<T>,
            name: &'static str,
        ) -> Result<(), E> {
            if slot.is_some() {
                return Err(E::duplicate_field(name));
            }
            *slot = v;
            Ok(())
        }
        let mut e = RawEvent::default();
        let mut seen_args = false;
        while let Some(k) = map.next_key::<Borrowed<'de>>()? {
            let text = |m: &mut A| -> Result<Option<Cow<'a, str>>, A::Error> {
                Ok(m.next_value::<Option<Borrowed<'de>>>()?.map(|b| b.0))
            };
            let raw = |m: &mut A| m.next_value::<Option<&'de RawValue>>();
            match k.0.as_ref() {
                "ph" => once(&mut e.ph, text(&mut map)?, "ph")?,
                "name" => once(&mut e.name, text(&mut map)?, "name")?,
                "cat" => once(&mut e.cat, text(&mut map)?, "cat")?,
                "bp" => once(&mut e.bp, text(&mut map)?, "bp")?,
                "pid" => once(&mut e.pid, raw(&mut map)?, "pid")?,
                "tid" => once(&mut e.tid, raw(&mut map)?, "tid")?,
                "ts" => once(&mut e.ts, raw(&mut map)?, "ts")?,
                "dur" => once(&mut e.dur, raw(&mut map)?, "dur")?,
                "id" => once(&mut e.id, raw(&mut map)?, "id")?,
                "id2" => once(&mut e.id2, raw(&mut map)?, "id2")?,
                "args" => {
                    if seen_args {
                        return Err(de::Error::duplicate_field("args"));
                    }
                    seen_args = true;
                    let from = self.pairs.len() as u32;
                    if map.next_value_seed(ArgsSeed {
                        pairs: &mut *self.pairs,
                    })? {
                        e.args = Some((from, self.pairs.len() as u32));
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(e)
    }
}

/// An `args` value: `null` (false) or an object whose pairs are added to `pairs` (true).
struct ArgsSeed<'p, 'a> {
    pairs: &'p mut Vec<Pair<'a>>,
}

impl<'de: 'a, 'a> de::DeserializeSeed<'de> for ArgsSeed<'_, 'a> {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for ArgsSeed<'_, 'a> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_map(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while let Some(k) = map.next_key::<Borrowed<'de>>()? {
            self.pairs.push((k.0, map.next_value::<&'de RawValue>()?));
        }
        Ok(true)
    }
}

/// What the importer does with the parts of a trace file.
pub(crate) trait Sink {
    /// One event, with its `args` when it has them.
    fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>);
    /// A top-level field other than `traceEvents` (`deviceProperties`, `distributedInfo`,
    /// `baseTimeNanoseconds`, ...), as raw JSON.
    fn field(&mut self, key: &str, value: &RawValue);
}

/// Why a file is not a readable trace, with the place (1-based line and column) in the whole
/// file.
#[derive(Debug)]
pub(crate) struct ParseError {
    pub category: Category,
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(
                f,
                "{} at line {} column {}",
                self.message, self.line, self.column
            )
        }
    }
}

/// Line (1-based) and column (1-based, in bytes) of byte `at` of `text`.
fn place(text: &str, at: usize) -> (usize, usize) {
    let head = &text.as_bytes()[..at.min(text.len())];
    let line = 1 + head.iter().filter(|&&b| b == b'\n').count();
    let col = at - head.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (line, col + 1)
}

fn error_at(text: &str, at: usize, category: Category, message: impl Into<String>) -> ParseError {
    let (line, column) = place(text, at);
    ParseError {
        category,
        message: message.into(),
        line,
        column,
    }
}

/// serde_json's error for a value parsed from `text[base..]`, placed in the whole file.
fn from_serde(text: &str, base: usize, e: &serde_json::Error) -> ParseError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    if e.line() == 0 {
        return ParseError {
            category: e.classify(),
            message,
            line: 0,
            column: 0,
        };
    }
    let (line0, col0) = place(text, base);
    ParseError {
        category: e.classify(),
        message,
        line: line0 + e.line() - 1,
        column: if e.line() == 1 {
            col0 + e.column() - 1
        } else {
            e.column()
        },
    }
}

/// Files at least this large are parsed by two threads (below it a thread costs more than it
/// saves).
const PARALLEL_MIN: usize = 4 << 20;
/// Where the second thread starts, as a share of the file. The first thread parses up to there
/// and then hands every event (its own and the second thread's) to the importer, which costs about
/// as much as parsing them, so its own share is small.
const FIRST_SHARE: usize = 10; // percent
/// Events the second thread sends at a time.
const BATCH: usize = 4096;

/// Parses a whole trace file into `sink`. The bytes are checked to be UTF-8 once, up front
/// (JSON text is), so the parser need not check each string it borrows (a twentieth of the
/// import's time when it did). Large files are parsed by two threads: see [`parse_text`].
pub(crate) fn parse(bytes: &[u8], sink: &mut dyn Sink) -> Result<(), ParseError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            return Err(error_at(
                // The place of the bad byte, in the text before it.
                std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
                e.valid_up_to(),
                Category::Syntax,
                format!("not UTF-8 text at byte {} (JSON is)", e.valid_up_to()),
            ));
        }
    };
    // `XLENS_JSON_THREADS=1` keeps it to one thread (to compare, or on a busy machine).
    let cores = match std::env::var("XLENS_JSON_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let split = (text.len() >= PARALLEL_MIN && cores > 1)
        .then(|| find_split(text, text.len() / 100 * FIRST_SHARE))
        .flatten();
    parse_text(text, sink, split).map(|_| ())
}

/// A place where an element of the events array probably starts, at or after `from`: a `{`
/// after `},` whose first key is `"ph"` (how the PyTorch profiler and HTA write events), else one
/// after `},` and a line break (a line break cannot be inside a JSON string). Either may still be
/// an object nested in an event's `args`, or outside the events array: [`parse_text`] checks.
pub(crate) fn find_split(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let window = b.len().min(from.saturating_add(1 << 20));
    // The `{` before `at`, with only white space between, when `},` (and white space) precede it.
    let brace_before = |at: usize| -> Option<usize> {
        let mut j = at;
        while j > 0 && ws(b[j - 1]) {
            j -= 1;
        }
        let open = j.checked_sub(1).filter(|&o| b[o] == b'{')?;
        let mut k = open;
        while k > 0 && ws(b[k - 1]) {
            k -= 1;
        }
        let comma = k.checked_sub(1).filter(|&c| b[c] == b',')?;
        let mut m = comma;
        while m > 0 && ws(b[m - 1]) {
            m -= 1;
        }
        (m > 0 && b[m - 1] == b'}').then_some(open)
    };
    let hay = text.get(from.min(b.len())..window)?;
    if let Some(open) = hay
        .match_indices("\"ph\"")
        .find_map(|(i, _)| brace_before(from + i))
    {
        return Some(open);
    }
    hay.match_indices('\n').find_map(|(i, _)| {
        let mut m = from + i;
        while m < b.len() && ws(b[m]) {
            m += 1;
        }
        (b.get(m) == Some(&b'{'))
            .then_some(m)
            .filter(|&o| brace_before(o + 1).is_some())
    })
}

/// Events read by the second thread, with their `args` pairs; sent back empty to be refilled,
/// so that the second thread stops allocating after its first few batches.
#[derive(Default)]
struct Batch<'a> {
    events: Vec<RawEvent<'a>>,
    pairs: Vec<Pair<'a>>,
}

/// What the second thread sends.
enum Msg<'a> {
    Events(Batch<'a>),
    /// The events array ended; then came the end of the file (a bare array), or the rest of the
    /// top-level object, whose fields are these.
    Done {
        rest_of_object: Option<Vec<Pair<'a>>>,
        at: usize,
    },
    Failed(ParseError),
    /// The second thread's start was not an element of the events array.
    NotLanded,
}

/// Parses `text`, the first thread handing events to `sink` as it meets them. With `split`,
/// a second thread parses from there on at the same time; when the first thread reaches that
/// place as the start of an element of the events array, it hands on the second thread's events
/// instead of parsing them again. If it never lands exactly there (the guess was inside an
/// event, or outside the array), it parses on by itself and the second thread's work is dropped,
/// so the result never depends on the guess. Returns whether the second thread's work was used.
pub(crate) fn parse_text(
    text: &str,
    sink: &mut dyn Sink,
    split: Option<usize>,
) -> Result<bool, ParseError> {
    let Some(at) = split else {
        return Walker::new(text, sink, None).top();
    };
    let cancel = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<Msg<'_>>(8);
        let (back_tx, back_rx) = mpsc::channel::<Batch<'_>>();
        let cancel = &cancel;
        let second = std::thread::Builder::new()
            .name("xlens-json".into())
            .spawn_scoped(s, move || second_part(text, at, tx, back_rx, cancel));
        let second_rx = second.is_ok().then_some(Second {
            at,
            rx,
            back: back_tx,
        });
        let result = Walker::new(text, sink, second_rx).top();
        cancel.store(true, Ordering::Relaxed);
        if let Ok(h) = second {
            let _ = h.join();
        }
        result
    })
}

struct Second<'a> {
    at: usize,
    rx: mpsc::Receiver<Msg<'a>>,
    back: mpsc::Sender<Batch<'a>>,
}

/// The second thread: the whole file read as one JSON value, like the first thread reads it,
/// but the events before `at` are only skipped (read as raw text, which tells where each one
/// starts); from the element that starts exactly at `at` on, events are read and sent in batches,
/// then the top-level fields after the events array.
fn second_part<'a>(
    text: &'a str,
    at: usize,
    tx: mpsc::SyncSender<Msg<'a>>,
    back: mpsc::Receiver<Batch<'a>>,
    cancel: &AtomicBool,
) {
    let mut st = Second2 {
        text,
        at,
        tx: &tx,
        back: &back,
        cancel,
        landed: false,
        object: false,
        rest: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let r =
        de::DeserializeSeed::deserialize(TopSeed { st: &mut st }, &mut de).and_then(|()| de.end());
    let msg = match r {
        Ok(()) if st.landed => Msg::Done {
            rest_of_object: st.object.then(|| std::mem::take(&mut st.rest)),
            at: text.len(),
        },
        Err(_) if cancel.load(Ordering::Relaxed) => return,
        Err(e) if st.landed && e.to_string() != STOPPED => Msg::Failed(from_serde(text, 0, &e)),
        Err(e) if e.to_string().starts_with(STOPPED) => return,
        // Not landed: the first thread reads on by itself (and meets any error before `at`).
        _ => Msg::NotLanded,
    };
    let _ = tx.send(msg);
}

/// The error the second thread's visitors return to stop: the first thread no longer wants its
/// events, or the start was not an element of the events array.
const STOPPED: &str = "stopped";

/// The second thread's state while serde_json reads the file.
struct Second2<'x, 'a> {
    text: &'a str,
    at: usize,
    tx: &'x mpsc::SyncSender<Msg<'a>>,
    back: &'x mpsc::Receiver<Batch<'a>>,
    cancel: &'x AtomicBool,
    /// Reached the element that starts at `at`.
    landed: bool,
    /// The file is an object (not a bare array).
    object: bool,
    /// Its fields after the events array that the importer wants.
    rest: Vec<Pair<'a>>,
}

struct TopSeed<'s, 'x, 'a> {
    st: &'s mut Second2<'x, 'a>,
}

impl<'de: 'a, 'a> de::DeserializeSeed<'de> for TopSeed<'_, '_, 'a> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for TopSeed<'_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chrome trace")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        EventsSeed { st: self.st }.visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.st.object = true;
        let mut seen_events = false;
        while let Some(key) = map.next_key::<Borrowed<'de>>()? {
            if key.0 == "traceEvents" && !seen_events {
                seen_events = true;
                map.next_value_seed(EventsSeed { st: &mut *self.st })?;
                if !self.st.landed {
                    return Err(de::Error::custom(STOPPED));
                }
            } else if seen_events && KEPT_FIELDS.contains(&key.0.as_ref()) {
                let v: &'de RawValue = map.next_value()?;
                self.st.rest.push((key.0, v));
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct EventsSeed<'s, 'x, 'a> {
    st: &'s mut Second2<'x, 'a>,
}

impl<'de: 'a, 'a> de::DeserializeSeed<'de> for EventsSeed<'_, '_, 'a> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for EventsSeed<'_, '_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let st = self.st;
        let base = st.text.as_ptr() as usize;
        let fresh = |back: &mpsc::Receiver<Batch<'a>>| {
            back.try_recv().unwrap_or_else(|_| Batch {
                events: Vec::with_capacity(BATCH),
                pairs: Vec::with_capacity(BATCH * 8),
            })
        };
        let mut batch = Batch::default();
        // Skip to the element that starts at `at`, which is read from its raw text.
        while !st.landed {
            if st.cancel.load(Ordering::Relaxed) {
                return Err(de::Error::custom(STOPPED));
            }
            let Some(raw) = seq.next_element::<&'de RawValue>()? else {
                return Err(de::Error::custom(STOPPED));
            };
            let start = (raw.get().as_ptr() as usize).wrapping_sub(base);
            if start > st.at {
                return Err(de::Error::custom(STOPPED));
            }
            if start == st.at {
                st.landed = true;
                batch = fresh(st.back);
                let mut one = serde_json::Deserializer::from_str(raw.get());
                let e = de::DeserializeSeed::deserialize(
                    EventSeed {
                        pairs: &mut batch.pairs,
                    },
                    &mut one,
                )
                .map_err(|e| de::Error::custom(from_serde(st.text, start, &e)))?;
                batch.events.push(e);
            }
        }
        loop {
            let next = seq.next_element_seed(EventSeed {
                pairs: &mut batch.pairs,
            });
            let e = match next {
                Ok(Some(e)) => e,
                Ok(None) => break,
                Err(e) => {
                    // Events before the error still reach the importer, as on one thread.
                    let _ = st.tx.send(Msg::Events(batch));
                    return Err(e);
                }
            };
            batch.events.push(e);
            if batch.events.len() == BATCH {
                let full = std::mem::replace(&mut batch, fresh(st.back));
                if st.cancel.load(Ordering::Relaxed) || st.tx.send(Msg::Events(full)).is_err() {
                    return Err(de::Error::custom(STOPPED));
                }
            }
        }
        if !batch.events.is_empty() && st.tx.send(Msg::Events(batch)).is_err() {
            return Err(de::Error::custom(STOPPED));
        }
        Ok(())
    }
}

/// A position in the text, and the small steps of reading JSON structure by hand (values
/// themselves are read by serde_json).
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn ws(&mut self) {
        let b = self.text.as_bytes();
        while self.pos < b.len() && matches!(b[self.pos], b' ' | b'\t' | b'\r' | b'\n') {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn error(&self, category: Category, message: impl Into<String>) -> ParseError {
        error_at(self.text, self.pos, category, message)
    }

    /// One JSON value starting here (after white space), borrowed from the text.
    fn value<T: Deserialize<'a>>(&mut self) -> Result<T, ParseError> {
        let base = self.pos;
        let mut it = serde_json::Deserializer::from_str(&self.text[base..]).into_iter::<T>();
        match it.next() {
            Some(Ok(v)) => {
                self.pos = base + it.byte_offset();
                Ok(v)
            }
            Some(Err(e)) => Err(from_serde(self.text, base, &e)),
            None => {
                self.pos = self.text.len();
                Err(self.error(Category::Eof, "EOF while parsing a value"))
            }
        }
    }

    /// After an element of an array (or a member of an object): `true` at a `,` (skipped, with
    /// the white space after it), `false` at `close` (skipped).
    fn after_element(&mut self, close: u8) -> Result<bool, ParseError> {
        self.ws();
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                self.ws();
                Ok(true)
            }
            Some(c) if c == close => {
                self.pos += 1;
                Ok(false)
            }
            None => Err(self.error(
                Category::Eof,
                if close == b']' {
                    "EOF while parsing a list"
                } else {
                    "EOF while parsing an object"
                },
            )),
            Some(_) => Err(self.error(
                Category::Syntax,
                if close == b']' {
                    "expected `,` or `]`"
                } else {
                    "expected `,` or `}`"
                },
            )),
        }
    }

    /// `"key" :` of an object member.
    fn key(&mut self) -> Result<Cow<'a, str>, ParseError> {
        self.ws();
        if self.peek() != Some(b'"') {
            return Err(if self.peek().is_none() {
                self.error(Category::Eof, "EOF while parsing an object")
            } else {
                self.error(Category::Syntax, "key must be a string")
            });
        }
        let k: Borrowed<'a> = self.value()?;
        self.ws();
        match self.peek() {
            Some(b':') => {
                self.pos += 1;
                self.ws();
                Ok(k.0)
            }
            None => Err(self.error(Category::Eof, "EOF while parsing an object")),
            Some(_) => Err(self.error(Category::Syntax, "expected `:`")),
        }
    }

    /// The top-level member `key`'s value: kept raw when the importer wants it, else skipped.
    fn member(
        &mut self,
        key: &str,
        out: &mut Vec<(Cow<'a, str>, &'a RawValue)>,
        owned_key: Cow<'a, str>,
    ) -> Result<(), ParseError> {
        if KEPT_FIELDS.contains(&key) {
            let v: &'a RawValue = self.value()?;
            out.push((owned_key, v));
        } else {
            self.value::<IgnoredAny>()?;
        }
        Ok(())
    }

    /// Only white space is left.
    fn end(&mut self) -> Result<(), ParseError> {
        self.ws();
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error(Category::Syntax, "trailing characters")),
        }
    }
}

/// Top-level fields other than `traceEvents` that the importer reads.
const KEPT_FIELDS: &[&str] = &[
    "deviceProperties",
    "distributedInfo",
    "baseTimeNanoseconds",
    "displayTimeUnit",
    "schemaVersion",
    "traceName",
    "cupti_version",
    "cuda_runtime_version",
    "cuda_driver_version",
    "hip_runtime_version",
    "hip_driver_version",
    "with_flops",
    "with_modules",
    "with_stack",
];

/// The first thread: the whole structure, events to the sink as they come.
struct Walker<'a, 's> {
    c: Cursor<'a>,
    sink: &'s mut dyn Sink,
    second: Option<Second<'a>>,
}

impl<'a, 's> Walker<'a, 's> {
    fn new(text: &'a str, sink: &'s mut dyn Sink, second: Option<Second<'a>>) -> Self {
        Walker {
            c: Cursor { text, pos: 0 },
            sink,
            second,
        }
    }

    fn top(mut self) -> Result<bool, ParseError> {
        self.c.ws();
        match self.c.peek() {
            Some(b'[') => {
                self.c.pos += 1;
                if self.events(false)? {
                    return Ok(true);
                }
                self.c.end().map(|()| false)
            }
            Some(b'{') => {
                self.c.pos += 1;
                self.c.ws();
                let mut seen_events = false;
                if self.c.peek() == Some(b'}') {
                    self.c.pos += 1;
                } else {
                    loop {
                        let key = self.c.key()?;
                        if key == "traceEvents" && !seen_events {
                            seen_events = true;
                            if self.c.peek() != Some(b'[') {
                                return Err(self.c.error(
                                    Category::Data,
                                    "`traceEvents` is not an array of trace events",
                                ));
                            }
                            self.c.pos += 1;
                            if self.events(true)? {
                                return Ok(true);
                            }
                        } else {
                            let mut kept = Vec::new();
                            let name = key.clone();
                            self.c.member(&name, &mut kept, key)?;
                            for (k, v) in kept {
                                self.sink.field(&k, v);
                            }
                        }
                        if !self.c.after_element(b'}')? {
                            break;
                        }
                    }
                }
                self.c.end()?;
                if !seen_events {
                    return Err(ParseError {
                        category: Category::Data,
                        message: "no `traceEvents` array: not a Chrome trace (PyTorch profiler traces have one)".into(),
                        line: 0,
                        column: 0,
                    });
                }
                Ok(false)
            }
            None => Err(self.c.error(Category::Eof, "EOF while parsing a value")),
            Some(_) => Err(self.c.error(
                Category::Syntax,
                "expected a Chrome trace: an object with `traceEvents`, or an array of events",
            )),
        }
    }

    /// The events array, from just after its `[`. Returns `true` when the second thread's part
    /// was used, which ends at the end of the file (nothing is left to read here).
    fn events(&mut self, in_object: bool) -> Result<bool, ParseError> {
        self.c.ws();
        if self.c.peek() == Some(b']') {
            self.c.pos += 1;
            return Ok(false);
        }
        loop {
            if let Some(at) = self.second.as_ref().map(|s| s.at) {
                if self.c.pos == at && self.take_over(in_object)? {
                    return Ok(true);
                }
                if self.c.pos > at {
                    // The guess was not an element of this array: drop the second thread's work
                    // (its channel closes, and it stops).
                    self.second = None;
                }
            }
            let e: OwnedEvent<'a> = self.c.value()?;
            self.sink.event(&e.event, Args::of(&e.event, &e.pairs));
            if !self.c.after_element(b']')? {
                return Ok(false);
            }
        }
    }

    /// Hands on what the second thread parsed, from the place this thread reached; `false` when
    /// it did not start there after all (this thread then reads on by itself).
    fn take_over(&mut self, in_object: bool) -> Result<bool, ParseError> {
        let Some(second) = self.second.take() else {
            return Ok(false);
        };
        loop {
            match second.rx.recv() {
                Ok(Msg::Events(mut batch)) => {
                    for e in &batch.events {
                        self.sink.event(e, Args::of(e, &batch.pairs));
                    }
                    batch.events.clear();
                    batch.pairs.clear();
                    let _ = second.back.send(batch);
                }
                Ok(Msg::Failed(e)) => return Err(e),
                Ok(Msg::Done { rest_of_object, at }) => {
                    return match (in_object, rest_of_object) {
                        (true, Some(fields)) => {
                            for (k, v) in fields {
                                self.sink.field(&k, v);
                            }
                            Ok(true)
                        }
                        (false, None) => Ok(true),
                        (true, None) => Err(error_at(
                            self.c.text,
                            at,
                            Category::Eof,
                            "EOF while parsing an object",
                        )),
                        (false, Some(_)) => Err(error_at(
                            self.c.text,
                            at,
                            Category::Syntax,
                            "trailing characters",
                        )),
                    };
                }
                Ok(Msg::NotLanded) => return Ok(false),
                Err(_) => {
                    return Err(self.c.error(
                        Category::Io,
                        "the second parsing thread stopped unexpectedly (a bug in xlens)",
                    ))
                }
            }
        }
    }
}

/// An `args` object: its keys and raw values, in the order written.
#[derive(Clone, Copy)]
pub(crate) struct Args<'a, 'b>(pub &'b [Pair<'a>]);

impl<'a, 'b> Args<'a, 'b> {
    /// The pairs of `e` in `pairs` (the list its reading added them to).
    pub fn of(e: &RawEvent<'a>, pairs: &'b [Pair<'a>]) -> Option<Self> {
        let (from, to) = e.args?;
        pairs.get(from as usize..to as usize).map(Args)
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|x| x.0 == key).map(|x| x.1)
    }
}

/// A string borrowed from the input when it has no escapes.
struct Borrowed<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Borrowed<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Borrowed<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Borrowed<'de>, E> {
                Ok(Borrowed(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Borrowed<'de>, E> {
                Ok(Borrowed(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON value that is an id: a number (its text) or a string (unescaped).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Key {
    Num(i64),
    Str(String),
}

impl Key {
    pub fn of(raw: Option<&RawValue>) -> Key {
        let Some(raw) = raw else {
            return Key::Num(0);
        };
        let t = raw.get();
        if t.starts_with('"') {
            let s: Cow<str> = serde_json::from_str(t).unwrap_or(Cow::Borrowed(""));
            // Numeric strings ("7") are the same id as the number.
            match s.parse::<i64>() {
                Ok(n) => Key::Num(n),
                Err(_) => Key::Str(s.into_owned()),
            }
        } else if let Ok(n) = t.parse::<i64>() {
            Key::Num(n)
        } else {
            Key::Str(t.to_string())
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Key::Num(n) => write!(f, "{n}"),
            Key::Str(s) => f.write_str(s),
        }
    }
}

/// A time in microseconds written as JSON (a number, or a number in a string) in picoseconds,
/// exactly: the decimal digits are read as they are written (`1661203463029566.123` is
/// 1661203463029566123000 ps), not through a double, which keeps only about 16 digits. Exponent
/// forms go through a double. `None` when it is not a finite number or does not fit. (Epoch
/// microseconds in picoseconds exceed `i64`: callers subtract an anchor.)
pub(crate) fn micros_to_ps(raw: &RawValue) -> Option<i128> {
    let mut t = raw.get().trim();
    if let Some(s) = t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        t = s.trim();
    }
    if t.contains(['e', 'E']) {
        let v: f64 = t.parse().ok()?;
        let ps = v * 1e6;
        return (ps.is_finite() && ps.abs() < 1e30).then(|| ps.round() as i128);
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ps: i128 = 0;
    for b in int.bytes() {
        ps = ps.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
    }
    if ps > i128::from(i64::MAX) {
        return None;
    }
    ps *= 1_000_000;
    let fb = frac.as_bytes();
    let mut f: i128 = 0;
    for k in 0..6 {
        f = f * 10 + fb.get(k).map_or(0, |b| i128::from(b - b'0'));
    }
    // Below a picosecond: round half up.
    if fb.get(6).is_some_and(|&b| b >= b'5') {
        f += 1;
    }
    ps = ps.checked_add(f)?;
    Some(if neg { -ps } else { ps })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records everything a parse hands over, to compare parses.
    #[derive(Default)]
    struct Record(Vec<String>);

    impl Sink for Record {
        fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
            let r = |v: Option<&RawValue>| v.map(|v| v.get().to_string());
            self.0.push(format!(
                "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
                e.ph,
                e.name,
                e.cat,
                r(e.pid),
                r(e.tid),
                r(e.ts),
                r(e.dur),
                r(e.id),
                r(e.id2),
                e.bp,
                args.map(|a| a
                    .0
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.get()))
                    .collect::<Vec<_>>())
            ));
        }
        fn field(&mut self, key: &str, value: &RawValue) {
            self.0.push(format!("field {key} {}", value.get()));
        }
    }

    fn run(text: &str, split: Option<usize>) -> (Vec<String>, Option<String>) {
        run_used(text, split).0
    }

    /// Also whether the second thread's events were used.
    fn run_used(text: &str, split: Option<usize>) -> ((Vec<String>, Option<String>), bool) {
        let mut rec = Record::default();
        let r = parse_text(text, &mut rec, split);
        let used = r.as_ref().is_ok_and(|u| *u);
        ((rec.0, r.err().map(|e| e.to_string())), used)
    }

    /// Fields before and after the events, `args` with nested objects written over several lines
    /// (so `},` + line break + `{` occurs inside events too), and strings holding `},{`.
    const TRICKY: &str = r#"{
  "schemaVersion": 1,
  "distributedInfo": {"rank": 3, "world_size": 8},
  "traceEvents": [
  {
    "ph": "X", "name": "a},{b", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3,
    "args": {"nested": [
      {"x": 1},
      {"y": "}, {"}
    ], "k": "v"}
  },
  {
    "ph": "B", "name": "esc\"aped\u00e9", "pid": "p", "tid": 1, "ts": 11
  },
  {"ph": "E", "pid": "p", "tid": 1, "ts": 12},
  {
    "ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 13,
    "args": {"Bytes": -16, "Total Allocated": 1024}
  },
  {"ph": "X", "name": "last", "pid": 1, "tid": 2, "ts": 20, "dur": 1}
  ],
  "deviceProperties": [
    {"id": 0, "name": "GPU"},
    {"id": 1, "name": "GPU"}
  ],
  "baseTimeNanoseconds": 1700000000000000000,
  "ignored": {"a": [1, 2, {"b": 3}]}
}
"#;

    #[test]
    fn a_second_thread_changes_nothing_wherever_it_starts() {
        let array = TRICKY
            .split_once("\"traceEvents\": ")
            .and_then(|(_, rest)| rest.split_once("\n  ],"))
            .map(|(events, _)| format!("{events}\n  ]\n"))
            .expect("the events array");
        for text in [TRICKY.to_string(), array] {
            let (want, err) = run(&text, None);
            assert_eq!(err, None, "{text}");
            assert!(want.len() >= 5);
            // Every `{`: events, objects inside events, objects outside the array.
            let (mut tried, mut landed) = (0, 0);
            for (i, _) in text.match_indices('{') {
                let ((got, err), used) = run_used(&text, Some(i));
                assert_eq!(err, None, "split at {i}");
                assert_eq!(got, want, "split at {i}");
                tried += 1;
                landed += usize::from(used);
            }
            // The five events' starts are taken over; nested and outside objects are not.
            assert_eq!(landed, 5, "of {tried}");
            // And where the search for a split point leads from each byte.
            for from in 0..text.len() {
                if let Some(i) = find_split(&text, from) {
                    assert_eq!(run(&text, Some(i)).0, want, "split at {i}");
                }
            }
        }
        // The search finds the element starts after a line break, not the nested objects' on
        // the same line.
        let starts: Vec<usize> = (0..TRICKY.len())
            .filter_map(|f| find_split(TRICKY, f))
            .collect();
        assert!(starts
            .iter()
            .any(|&i| TRICKY[i..].starts_with("{\n    \"ph\": \"B\"")));
    }

    #[test]
    fn errors_are_the_same_with_a_second_thread() {
        let bad = [
            // Cut in the middle of an event, after an event, before the closing brace.
            &TRICKY[..TRICKY.find("\"last\"").expect("last")],
            &TRICKY[..TRICKY.find("\n  ],").expect("end") + 1],
            TRICKY.trim_end().trim_end_matches('}'),
        ];
        let broken = TRICKY.replace("\"ts\": 12", "\"ts\": NaN");
        let extra = format!("{TRICKY} x");
        for text in bad.iter().copied().chain([broken.as_str(), extra.as_str()]) {
            // The message and line; serde_json and the hand-read structure count a column at
            // the end of a line differently (0 or 1).
            let no_column = |e: Option<String>| {
                e.map(|e| {
                    e.rsplit_once(" column ")
                        .map_or(e.clone(), |(m, _)| m.to_string())
                })
            };
            let (want_events, want_err) = run(text, None);
            let want_err = no_column(want_err);
            assert!(want_err.is_some(), "{text}");
            for (i, _) in text.match_indices('{') {
                let (events, err) = run(text, Some(i));
                assert_eq!(no_column(err), want_err, "split at {i} of {text}");
                // Events before the error reach the sink either way (the importer fails anyway).
                assert!(events.len() <= want_events.len() + 1);
            }
        }
    }

    #[test]
    fn a_real_trace_parses_the_same_on_two_threads() {
        use std::io::Read;
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/pytorch/two_ranks/hta-trace_filter-sampled_rank-0.json.gz"
        );
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(path).expect("fixture"))
            .read_to_string(&mut text)
            .expect("gunzip");
        let (want, err) = run(&text, None);
        assert_eq!(err, None);
        let mut used = 0;
        for pct in (1..100).step_by(7) {
            let Some(i) = find_split(&text, text.len() * pct / 100) else {
                continue;
            };
            let (got, took_over) = run_used(&text, Some(i));
            assert_eq!(got.0, want, "split at {i}");
            assert!(took_over, "split at {i} is an event's start");
            used += 1;
        }
        assert!(used > 10, "split points found: {used}");
    }

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn microseconds_become_picoseconds_without_rounding() {
        let cases = [
            ("1661203463029566", Some(1_661_203_463_029_566_000_000)),
            ("1661203463029566.123", Some(1_661_203_463_029_566_123_000)),
            ("0.0000005", Some(1)),
            ("0.0000004", Some(0)),
            ("12.5", Some(12_500_000)),
            ("-3.25", Some(-3_250_000)),
            ("\"42.000001\"", Some(42_000_001)),
            ("1.5e3", Some(1_500_000_000)),
            ("1e400", None),
            ("\"abc\"", None),
            ("99999999999999999999", None),
            (
                "9223372036854775807",
                Some(9_223_372_036_854_775_807_000_000),
            ),
            ("null", None),
        ];
        for (text, want) in cases {
            assert_eq!(micros_to_ps(&raw(text)), want, "{text}");
        }
    }

    #[test]
    fn ids_are_numbers_or_strings() {
        assert_eq!(Key::of(Some(&raw("7"))), Key::Num(7));
        assert_eq!(Key::of(Some(&raw("\"7\""))), Key::Num(7));
        assert_eq!(Key::of(Some(&raw("\"Spans\""))), Key::Str("Spans".into()));
        assert_eq!(Key::of(None), Key::Num(0));
    }
}
