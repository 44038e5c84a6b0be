//! Reading the JSON: the top-level object (or bare array) and each trace event, borrowed from the
//! input where no escapes force a copy. Events are handed to the importer one at a time as the
//! parser meets them; no tree of the file is built.

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::error::Category;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

mod chunks;
mod layout;
mod micros;
mod nested;
mod plain;
pub(crate) mod reading;
mod skim;
mod stops;
mod walker;
pub(crate) use micros::micros_to_ps;
use skim::*;
use walker::*;

/// One trace event as written. Fields whose type varies between producers (numbers or strings)
/// are kept as raw JSON text and read by the importer. Its `args` pairs are stored apart (see
/// [`EventSeed`]), so that reading an event allocates nothing.
#[derive(Default)]
pub(crate) struct RawEvent<'a> {
    pub ph: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub cat: Option<Cow<'a, str>>,
    pub pid: Option<Raw<'a>>,
    pub tid: Option<Raw<'a>>,
    pub ts: Option<Raw<'a>>,
    pub dur: Option<Raw<'a>>,
    pub id: Option<Raw<'a>>,
    pub id2: Option<Raw<'a>>,
    pub bp: Option<Cow<'a, str>>,
    /// Where the `args` object's pairs are in the list they were added to, if it has one.
    pub args: Option<(u32, u32)>,
    /// Left out by the [`Skip`] in force (its `args` not kept).
    pub skipped: bool,
    /// Args of a complete (`X`) event the reader left out already, as [`Skip::args_kept`] does
    /// not keep them (the importer counts them with those it leaves out itself).
    pub args_left_out: u32,
}

/// Events not to import (a read for one tool that does not use them): complete (`X`) events of
/// `complete_cats` and flow points (`s`, `t`, `f`) of `flow_cats`, unless they have a `stream`
/// arg. They are still parsed (the file is checked as a whole) and their times still set the
/// trace's span and time axis, as in a full read; they are not added to the profile. With
/// `args_kept`, the slices that are read keep only those `args` (the rest are checked as JSON,
/// not imported).
#[derive(Debug, Clone, Copy)]
pub struct Skip {
    pub complete_cats: &'static [&'static str],
    pub flow_cats: &'static [&'static str],
    pub args_kept: Option<&'static [&'static str]>,
}

impl Skip {
    fn wants_skipped(&self, ph: &str, cat: &str) -> bool {
        match ph {
            "X" => self.complete_cats.contains(&cat),
            "s" | "t" | "f" => self.flow_cats.contains(&cat),
            _ => false,
        }
    }
}

thread_local! {
    /// The [`Skip`] of the parse running on this thread (each parsing thread sets it).
    static SKIP: std::cell::Cell<Option<Skip>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `skip` in force on this thread.
fn with_skip<T>(skip: Option<Skip>, f: impl FnOnce() -> T) -> T {
    let before = SKIP.with(|c| c.replace(skip));
    let out = f();
    SKIP.with(|c| c.set(before));
    out
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
pub(crate) type Pair<'a> = (Cow<'a, str>, Raw<'a>);

/// A top-level member of the file and its raw value.
pub(crate) type Field<'a> = (Cow<'a, str>, &'a RawValue);

/// What an `args` value is as a stat: integers as `I64` (`U64` above `i64::MAX`), other numbers
/// as `F64`, strings unescaped, booleans as 0/1, null as no value, arrays and objects (and
/// anything else) as their JSON text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value<'a> {
    None,
    I64(i64),
    U64(u64),
    F64(f64),
    Str(Cow<'a, str>),
}

/// [`Value`] of a raw JSON value (one the parser checked to be JSON).
pub(crate) fn value_of(t: &str) -> Value<'_> {
    match t.as_bytes().first() {
        Some(b'"') => {
            // Checked JSON: without a backslash the text between the quotes is the string.
            if t.len() >= 2 && !t.as_bytes().contains(&b'\\') {
                return Value::Str(Cow::Borrowed(&t[1..t.len() - 1]));
            }
            Value::Str(serde_json::from_str(t).unwrap_or(Cow::Borrowed("")))
        }
        Some(b't') => Value::I64(1),
        Some(b'f') => Value::I64(0),
        Some(b'n') => Value::None,
        Some(b'[' | b'{') => Value::Str(Cow::Borrowed(t)),
        _ => {
            if let Ok(i) = t.parse::<i64>() {
                Value::I64(i)
            } else if let Ok(u) = t.parse::<u64>() {
                Value::U64(u)
            } else {
                t.parse::<f64>()
                    .map(Value::F64)
                    .unwrap_or(Value::Str(Cow::Borrowed(t)))
            }
        }
    }
}

/// An `args` pair as the second thread read it ahead: its key and value as in [`value_of`],
/// strings as numbers into the list of strings it sent ([`Sink::strings`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PreArg {
    pub key: u32,
    pub value: PreValue,
}

/// [`Value`] with its string as a number ([`PreArg`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PreValue {
    None,
    I64(i64),
    U64(u64),
    F64(f64),
    Str(u32),
}

/// The second thread's numbering of the strings it met (keys and string values of `args`),
/// each sent once, with the first batch that uses it.
#[derive(Default)]
struct Numbering<'a> {
    ids: hashbrown::HashMap<Cow<'a, str>, u32>,
}

impl<'a> Numbering<'a> {
    fn id(&mut self, s: Cow<'a, str>, new: &mut Vec<Cow<'a, str>>) -> u32 {
        if let Some(&i) = self.ids.get(s.as_ref()) {
            return i;
        }
        let i = self.ids.len() as u32;
        new.push(s.clone());
        self.ids.insert(s, i);
        i
    }

    /// Reads `pairs` ahead into `out`, new strings added to `new`.
    fn read_ahead(
        &mut self,
        pairs: &[Pair<'a>],
        out: &mut Vec<PreArg>,
        new: &mut Vec<Cow<'a, str>>,
    ) {
        for (k, v) in pairs {
            let key = self.id(k.clone(), new);
            let value = match value_of(v.get()) {
                Value::None => PreValue::None,
                Value::I64(x) => PreValue::I64(x),
                Value::U64(x) => PreValue::U64(x),
                Value::F64(x) => PreValue::F64(x),
                Value::Str(s) => PreValue::Str(self.id(s, new)),
            };
            out.push(PreArg { key, value });
        }
    }
}

/// The text of a JSON value as written (checked to be one JSON value), borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Raw<'a>(&'a str);

impl<'a> Raw<'a> {
    pub fn get(&self) -> &'a str {
        self.0
    }
}

impl<'a> From<&'a RawValue> for Raw<'a> {
    fn from(v: &'a RawValue) -> Self {
        Raw(v.get())
    }
}

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
        let skip = SKIP.with(std::cell::Cell::get);
        let first_pair = self.pairs.len();
        while let Some(k) = map.next_key::<Borrowed<'de>>()? {
            let text = |m: &mut A| -> Result<Option<Cow<'a, str>>, A::Error> {
                Ok(m.next_value::<Option<Borrowed<'de>>>()?.map(|b| b.0))
            };
            let raw = |m: &mut A| -> Result<Option<Raw<'a>>, A::Error> {
                Ok(m.next_value::<Option<&'de RawValue>>()?.map(Raw::from))
            };
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
        if let (Some(skip), Some(ph), Some(cat)) = (skip, &e.ph, &e.cat) {
            // An event with a `stream` arg is on the GPU for HTA's analyses, whatever its
            // category (Triton's launches are `cpu_op`s with one): always kept.
            let on_stream = || self.pairs[first_pair..].iter().any(|(k, _)| k == "stream");
            if skip.wants_skipped(ph, cat) && !on_stream() {
                self.pairs.truncate(first_pair);
                e.args = None;
                e.skipped = true;
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
            self.pairs
                .push((k.0, map.next_value::<&'de RawValue>()?.into()));
        }
        Ok(true)
    }
}

/// What the importer does with the parts of a trace file.
pub(crate) trait Sink {
    /// One event, with its `args` when it has them.
    fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>);
    /// Strings that the `args` read ahead ([`Args::pre`]) of the events after this call refer
    /// to, numbered on from those of earlier calls (the first call's first string is 0).
    fn strings(&mut self, _new: &[Cow<'_, str>]) {}
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
/// Parses a whole trace file into `sink`. The bytes are checked to be UTF-8 once, up front
/// (JSON text is), so the parser need not check each string it borrows (a twentieth of the
/// import's time when it did). Large files are parsed by two threads: see [`chunks`].
pub(crate) fn parse(
    bytes: &[u8],
    sink: &mut dyn Sink,
    skip: Option<Skip>,
) -> Result<(), ParseError> {
    let cores = threads();
    let text = match utf8(bytes, cores) {
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
    if text.len() < PARALLEL_MIN || cores < 2 {
        return with_skip(skip, || Walker::new(text, sink, skip).top().map(|_| ()));
    }
    let len = std::env::var("XLENS_JSON_CHUNK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(chunks::CHUNK);
    chunks::parse(text, sink, skip, len)
}

/// `bytes` as text, checked to be UTF-8 on two threads when large (the check is a
/// twentieth of a first answer's time on one, and the first to touch a mapped file's pages).
/// The halves are checked apart: two valid UTF-8 texts joined are one, as neither can begin
/// or end within a character. When either is not valid (or the cut falls within a
/// character), the whole is checked again on one thread, which names the first bad byte.
fn utf8(bytes: &[u8], cores: usize) -> Result<&str, std::str::Utf8Error> {
    if bytes.len() < PARALLEL_MIN || cores < 2 {
        return from_utf8(bytes);
    }
    let (a, b) = bytes.split_at(bytes.len() / 2);
    let both = std::thread::scope(|s| {
        let second = s.spawn(|| is_utf8(b));
        is_utf8(a) && second.join().unwrap_or(false)
    });
    if both {
        // SAFETY: both halves are valid UTF-8, so is their concatenation (see above).
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes)
}

/// Whether `b` is UTF-8: its ASCII start passed a block at a time, the rest checked by
/// `std::str::from_utf8` (from a character's start: the bytes before are ASCII).
fn is_utf8(b: &[u8]) -> bool {
    std::str::from_utf8(&b[stops::ascii_end(b, 0)..]).is_ok()
}

/// `std::str::from_utf8`, faster on text that is mostly ASCII ([`is_utf8`]).
fn from_utf8(b: &[u8]) -> Result<&str, std::str::Utf8Error> {
    if is_utf8(b) {
        // SAFETY: checked just above.
        return Ok(unsafe { std::str::from_utf8_unchecked(b) });
    }
    // What is wrong, and where.
    std::str::from_utf8(b)
}

/// Threads a parse may use: the machine's, or `XLENS_JSON_THREADS` (`1` keeps it to one thread,
/// to compare or on a busy machine).
fn threads() -> usize {
    match std::env::var("XLENS_JSON_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// A place where an element of the events array probably starts, at or after `from`: a `{`
/// after `},` whose first key is `"ph"` (how the PyTorch profiler and HTA write events), else one
/// after `},` and a line break (a line break cannot be inside a JSON string). Either may still be
/// an object nested in an event's `args`, or outside the events array: [`parse_text`] checks.
pub(crate) fn find_split(text: &str, from: usize) -> Option<usize> {
    if let Some(open) = find_event_start(text, from) {
        return Some(open);
    }
    let b = text.as_bytes();
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let window = b.len().min(from.saturating_add(1 << 20));
    text.get(from.min(b.len())..window)?
        .match_indices('\n')
        .find_map(|(i, _)| {
            let mut m = from + i;
            while m < b.len() && ws(b[m]) {
                m += 1;
            }
            (b.get(m) == Some(&b'{'))
                .then_some(m)
                .filter(|&o| brace_before(b, o + 1).is_some())
        })
}

/// [`find_split`]'s first kind of place only: a `{` after `},` whose first key is `"ph"`, at or
/// after `from` and within a megabyte of it.
pub(crate) fn find_event_start(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    let window = b.len().min(from.saturating_add(1 << 20));
    text.get(from.min(b.len())..window)?
        .match_indices("\"ph\"")
        .find_map(|(i, _)| brace_before(b, from + i))
}

/// The `{` before `at` in `b`, with only white space between, when `},` (and white space)
/// precede it.
fn brace_before(b: &[u8], at: usize) -> Option<usize> {
    let ws = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
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
}

/// Events read by the second thread, with their `args` pairs; sent back empty to be refilled,
/// so that the second thread stops allocating after its first few batches.
#[derive(Default)]
struct Batch<'a> {
    events: Vec<RawEvent<'a>>,
    pairs: Vec<Pair<'a>>,
    /// `pairs` read ahead, one for one (empty when not read ahead).
    pre: Vec<PreArg>,
    /// Strings first met in this batch ([`Sink::strings`]).
    strings: Vec<Cow<'a, str>>,
}

/// Parses `text` on this thread alone (what the other ways of parsing are checked against).
#[cfg(test)]
pub(crate) fn parse_text(text: &str, sink: &mut dyn Sink) -> Result<bool, ParseError> {
    let skip = SKIP.with(std::cell::Cell::get);
    Walker::new(text, sink, skip).top()
}

/// An `args` object: its keys and raw values, in the order written.
#[derive(Clone, Copy)]
pub(crate) struct Args<'a, 'b> {
    pub pairs: &'b [Pair<'a>],
    /// The same pairs read ahead by the second thread, one for one, when it did.
    pub pre: Option<&'b [PreArg]>,
}

impl<'a, 'b> Args<'a, 'b> {
    /// The pairs of `e` in `pairs` (the list its reading added them to).
    pub fn of(e: &RawEvent<'a>, pairs: &'b [Pair<'a>]) -> Option<Self> {
        Self::read_ahead(e, pairs, None)
    }

    /// [`Args::of`], with `pre` read ahead for `pairs`, one for one.
    fn read_ahead(
        e: &RawEvent<'a>,
        pairs: &'b [Pair<'a>],
        pre: Option<&'b [PreArg]>,
    ) -> Option<Self> {
        let (from, to) = e.args?;
        let range = from as usize..to as usize;
        Some(Args {
            pairs: pairs.get(range.clone())?,
            pre: pre.and_then(|p| p.get(range)),
        })
    }

    /// The raw value of `key`.
    pub fn get(&self, key: &str) -> Option<Raw<'a>> {
        self.pairs.iter().find(|x| x.0 == key).map(|x| x.1)
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
    pub fn of(raw: Option<Raw<'_>>) -> Key {
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

#[cfg(test)]
mod tests;
