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
mod nested;
mod plain;
pub(crate) mod reading;
mod stops;

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

/// What [`skim`] finds of an event object without parsing it.
#[derive(Default, Clone, Copy)]
struct Skimmed<'a> {
    /// Just past its closing `}`.
    end: usize,
    ph: Option<&'a str>,
    cat: Option<&'a str>,
    /// Raw JSON text of these values.
    ts: Option<&'a str>,
    dur: Option<&'a str>,
    /// Some string in it is `stream` (an arg HTA reads), or it is not plain enough to leave
    /// to a skim (a repeated key, an escape anywhere: the skim does not check escapes): it is
    /// read in full.
    read_in_full: bool,
}

/// A `stream` string, as its bytes appear in JSON.
static STREAM: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"stream\""));

/// Scans the object at `text[at]` (a `{`) for its end and its `ph`, `cat`, `ts` and `dur`,
/// checking its members' form (a string key, a colon, a value; commas between), strings and the
/// nesting of brackets, but not every JSON rule inside values; `None` when it is not well formed
/// that far (the caller then reads it with serde_json, which says what is wrong). Events are
/// skimmed from past their first members ([`worth_skimming`], then [`skim_members`]); this reads
/// one whole.
#[cfg(test)]
fn skim(text: &str, at: usize) -> Option<Skimmed<'_>> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut out = Skimmed::default();
    let i = stops::ws(b, at + 1);
    if b.get(i) == Some(&b'}') {
        out.end = i + 1;
        return Some(out);
    }
    skim_members(text, i, out, false)
}

/// [`skim`] from inside the object: at the key of a member (`after_value` false) or just past
/// a member's value (true), with what was found before `i` already in `out`.
fn skim_members<'a>(
    text: &'a str,
    i: usize,
    out: Skimmed<'a>,
    after_value: bool,
) -> Option<Skimmed<'a>> {
    skim_members_noting(text, i, out, after_value, |_| {})
}

/// Where a member [`skim_members_noting`] read is in the text: from just past the value before
/// it (or the first key) to its value, with its key between.
#[derive(Clone, Copy)]
struct Noted {
    from: usize,
    key: (usize, usize),
    value: usize,
}

/// [`skim_members`], telling `note` where each member was (and, with `key` empty and `value`
/// past the closing `}`, where the object closed).
fn skim_members_noting<'a>(
    text: &'a str,
    mut i: usize,
    mut out: Skimmed<'a>,
    mut after_value: bool,
    mut note: impl FnMut(Noted),
) -> Option<Skimmed<'a>> {
    let b = text.as_bytes();
    loop {
        let from = i;
        if after_value {
            i = stops::ws(b, i);
            match *b.get(i)? {
                b',' => i = stops::ws(b, i + 1),
                b'}' => {
                    out.end = i + 1;
                    note(Noted {
                        from,
                        key: (i, i),
                        value: i + 1,
                    });
                    return Some(out);
                }
                _ => return None,
            }
        }
        after_value = true;
        let (k0, k1, escaped) = skim_string(b, i)?;
        let key = &text[k0..k1];
        out.key(key, escaped);
        let slot = Slot::of(key);
        i = stops::ws(b, k1 + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = stops::ws(b, i + 1);
        note(Noted {
            from,
            key: (k0, k1),
            value: i,
        });
        match *b.get(i)? {
            b'"' => {
                let (_, v1, escaped) = skim_string(b, i)?;
                out.string(slot, text, i, v1, escaped);
                i = v1 + 1;
            }
            b'{' | b'[' => {
                // A nested value: only its strings and brackets matter, found a block at a time.
                let end = nested::value_end(b, i, 1)?;
                out.nested(slot, &b[i..end]);
                i = end;
            }
            _ => {
                let start = i;
                // Most are numbers (times, ids), read once by their grammar; what follows one
                // must end the value.
                match plain::number_end(b, i) {
                    Some(end) if ends_scalar(b, end) => i = end,
                    _ => {
                        while b.get(i).is_some_and(|&c| {
                            !matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
                        }) {
                            i += 1;
                        }
                        // Not a number, `true`, `false` or `null`: left to a full read, which
                        // names it.
                        out.read_in_full |= !matches!(&b[start..i], b"true" | b"false" | b"null");
                    }
                }
                out.scalar(slot, &text[start..i]);
            }
        }
    }
}

/// Whether the byte at `b[end]` may follow a scalar member value (and so ends it).
#[inline]
fn ends_scalar(b: &[u8], end: usize) -> bool {
    matches!(b.get(end), Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))
}

/// Which of the values a skim keeps a member's is, by its key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Ph,
    Cat,
    Ts,
    Dur,
    None,
}

impl Slot {
    #[inline]
    fn of(key: &str) -> Slot {
        match key.as_bytes() {
            b"ph" => Slot::Ph,
            b"cat" => Slot::Cat,
            b"ts" => Slot::Ts,
            b"dur" => Slot::Dur,
            _ => Slot::None,
        }
    }
}

impl<'a> Skimmed<'a> {
    #[inline]
    fn slot(&mut self, slot: Slot) -> Option<&mut Option<&'a str>> {
        match slot {
            Slot::Ph => Some(&mut self.ph),
            Slot::Cat => Some(&mut self.cat),
            Slot::Ts => Some(&mut self.ts),
            Slot::Dur => Some(&mut self.dur),
            Slot::None => None,
        }
    }

    /// A member's key (`escaped`: it has escapes or control characters).
    #[inline]
    fn key(&mut self, key: &str, escaped: bool) {
        self.read_in_full |= escaped || key == "stream";
    }

    /// A string value of a member: its quotes at `text[open]` and `text[close]`.
    #[inline]
    fn string(&mut self, slot: Slot, text: &'a str, open: usize, close: usize, escaped: bool) {
        let value = &text[open + 1..close];
        // Escapes are checked by a full read (an invalid one is named there).
        self.read_in_full |= value == "stream" || escaped;
        // Times keep their raw text, quotes included.
        let raw = if matches!(slot, Slot::Ts | Slot::Dur) {
            &text[open..close + 1]
        } else {
            value
        };
        if let Some(slot) = self.slot(slot) {
            let again = slot.replace(raw).is_some();
            self.read_in_full |= again;
        }
    }

    /// A nested value (object or array) of a member, `v` its bytes.
    #[inline]
    fn nested(&mut self, slot: Slot, v: &[u8]) {
        // A `stream` string anywhere in it (or what merely looks like one), or an escape
        // (checked by a full read).
        self.read_in_full |= STREAM.find(v).is_some() || memchr::memchr(b'\\', v).is_some();
        // Not a string: read in full (serde_json says what is wrong).
        self.read_in_full |= slot != Slot::None;
    }

    /// A scalar value (number, word) of a member, `raw` its text.
    #[inline]
    fn scalar(&mut self, slot: Slot, raw: &'a str) {
        if let Some(s) = self.slot(slot) {
            let again = s.replace(raw).is_some();
            // `ph` and `cat` not strings: read in full (serde_json says what is wrong).
            self.read_in_full |= again || matches!(slot, Slot::Ph | Slot::Cat);
        }
    }
}

/// The string at `b[i]` (a `"`) as a skim sees it: its first byte, its closing quote, and
/// whether it has escapes or control characters (a backslash passes the byte after it).
#[inline]
fn skim_string(b: &[u8], i: usize) -> Option<(usize, usize, bool)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        j = stops::string_stop(b, j)?;
        match b[j] {
            b'"' => return Some((i + 1, j, escaped)),
            b'\\' => {
                escaped = true;
                j += 2;
            }
            // A control character (not JSON): left to a full read, which names it.
            _ => {
                escaped = true;
                j += 1;
            }
        }
    }
}

/// Whether the event at `b[at]` starts as one `skip` leaves out, written as Kineto writes events
/// (`{"ph": "X", "cat": "cpu_op", ...`; a flow's `cat` comes later, so every flow qualifies): a
/// quick look, so that the events read in full are not skimmed first. Events written otherwise
/// are read in full and left out afterwards (the same result, more slowly).
fn worth_skimming<'a>(text: &'a str, at: usize, skip: &Skip) -> Option<(usize, Skimmed<'a>)> {
    let mut l = layout::Look { t: text, i: at };
    if !(l.lit(b"{") && l.lit(b"\"ph\"") && l.lit(b":")) {
        return None;
    }
    let ph = l.string()?;
    let mut out = Skimmed {
        ph: Some(ph),
        ..Skimmed::default()
    };
    match ph {
        "s" | "t" | "f" if !skip.flow_cats.is_empty() => Some((l.i, out)),
        "X" => {
            if !(l.lit(b",") && l.lit(b"\"cat\"") && l.lit(b":")) {
                return None;
            }
            let cat = l.string()?;
            if !skip.complete_cats.contains(&cat) {
                return None;
            }
            out.cat = Some(cat);
            Some((l.i, out))
        }
        _ => None,
    }
}

/// The event a skim found, when `skip` leaves it out and the skim read all it needs of it.
fn skipped_event<'a>(k: &Skimmed<'a>, skip: Skip, e: &mut RawEvent<'a>) -> bool {
    let Some(skipped) = skipped_of(k, skip) else {
        return false;
    };
    *e = skipped;
    true
}

fn skipped_of<'a>(k: &Skimmed<'a>, skip: Skip) -> Option<RawEvent<'a>> {
    let (ph, cat) = (k.ph?, k.cat?);
    if k.read_in_full || !skip.wants_skipped(ph, cat) {
        return None;
    }
    // Times that are not JSON values, and events without a time, are read in full (which says
    // what is wrong, or counts them).
    let raw = |t: &'a str| {
        // A scalar the skim found to be JSON (else it is read in full); a string is checked here.
        if !t.starts_with('"') {
            return Some(Raw(t));
        }
        serde_json::from_str::<&'a RawValue>(t).ok().map(Raw::from)
    };
    let ts = raw(k.ts?)?;
    let dur = match k.dur {
        Some(d) => Some(raw(d)?),
        None => None,
    };
    Some(RawEvent {
        ph: Some(Cow::Borrowed(ph)),
        cat: Some(Cow::Borrowed(cat)),
        ts: Some(ts),
        dur,
        skipped: true,
        ..RawEvent::default()
    })
}

/// A position in the text, and the small steps of reading JSON structure by hand (values
/// themselves are read by serde_json).
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn ws(&mut self) {
        self.pos = stops::ws(self.text.as_bytes(), self.pos);
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

    /// The event that starts here, into `e`: skimmed past when `skip` leaves it out (returns
    /// `true`), else read, its `args` pairs appended to `pairs`.
    fn event(
        &mut self,
        skip: Option<Skip>,
        pairs: &mut Vec<Pair<'a>>,
        e: &mut RawEvent<'a>,
    ) -> Result<bool, ParseError> {
        if let Some(skip) = skip {
            // The members after those `worth_skimming` read.
            if let Some((i, k)) = worth_skimming(self.text, self.pos, &skip) {
                if let Some(k) = layout::skim(self.text, i, k) {
                    if skipped_event(&k, skip, e) {
                        self.pos = k.end;
                        return Ok(true);
                    }
                }
            }
        }
        *e = RawEvent::default();
        if let Some(end) = plain::event(self.text, self.pos, skip, pairs, e) {
            self.pos = end;
            return Ok(false);
        }
        let mut o: OwnedEvent<'a> = self.value()?;
        if let Some((from, to)) = o.event.args {
            let base = pairs.len() as u32;
            pairs.extend(o.pairs.drain(from as usize..to as usize));
            o.event.args = Some((base, base + (to - from)));
        }
        *e = o.event;
        Ok(false)
    }

    /// The rest of the top-level object after the events array (from its `,` or `}`): the
    /// fields the importer wants, up to the end of the file.
    fn object_tail(&mut self) -> Result<Vec<Field<'a>>, ParseError> {
        let mut fields = Vec::new();
        while self.after_element(b'}')? {
            let key = self.key()?;
            let name = key.clone();
            self.member(&name, &mut fields, key)?;
        }
        self.end()?;
        Ok(fields)
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
        out: &mut Vec<Field<'a>>,
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
    /// Chunks of the events array the two threads parse, from the first's start on.
    chunks: Option<&'s chunks::Chunks<'a>>,
    skip: Option<Skip>,
    /// The `args` pairs of the event being handed over.
    pairs: Vec<Pair<'a>>,
    /// The event being handed over.
    ev: RawEvent<'a>,
    /// Where the rest of the events array comes from a file being inflated, and from where
    /// ([`reading`]).
    feed: Option<(usize, &'s mut dyn reading::Feed<'a>)>,
}

impl<'a, 's> Walker<'a, 's> {
    fn new(text: &'a str, sink: &'s mut dyn Sink, skip: Option<Skip>) -> Self {
        Walker {
            c: Cursor { text, pos: 0 },
            sink,
            chunks: None,
            skip,
            pairs: Vec::new(),
            ev: RawEvent::default(),
            feed: None,
        }
    }

    /// The walker of a head that ends at `at`, the rest of the text coming from `feed`.
    fn fed(
        head: &'a str,
        sink: &'s mut dyn Sink,
        feed: &'s mut dyn reading::Feed<'a>,
        skip: Option<Skip>,
    ) -> Self {
        let mut w = Walker::new(head, sink, skip);
        w.feed = Some((head.len(), feed));
        w
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

    /// The events array, from just after its `[`. Returns `true` when another part (the chunks
    /// or the feed) read it to its end, and what follows to the end of the file.
    fn events(&mut self, in_object: bool) -> Result<bool, ParseError> {
        self.c.ws();
        if self.c.peek() == Some(b']') {
            self.c.pos += 1;
            return Ok(false);
        }
        loop {
            if let Some(at) = self.feed.as_ref().map(|f| f.0) {
                if self.c.pos == at {
                    return self.take_over_feed(in_object);
                }
                if self.c.pos > at {
                    // Not an element of this array: the head ends within an event, and its
                    // read fails (the file is then read whole).
                    self.feed = None;
                }
            }
            if let Some(ch) = self.chunks {
                if self.c.pos >= ch.first() {
                    self.chunks = None;
                    if self.c.pos > ch.first() {
                        // Not an element of this array: read on alone.
                        ch.stop();
                    } else {
                        match ch.hand_on(self.sink, in_object)? {
                            chunks::Outcome::Finished => return Ok(true),
                            chunks::Outcome::From(at) => self.c.pos = at,
                        }
                    }
                }
            }
            self.pairs.clear();
            let skipped = self.c.event(self.skip, &mut self.pairs, &mut self.ev)?;
            let e = &self.ev;
            let args = if skipped {
                None
            } else {
                Args::of(e, &self.pairs)
            };
            self.sink.event(e, args);
            if !self.c.after_element(b']')? {
                return Ok(false);
            }
        }
    }

    /// Reads the rest of the events array from this thread's feed: its segments while the file
    /// is being inflated, then the rest of the file, whole once inflated.
    fn take_over_feed(&mut self, in_object: bool) -> Result<bool, ParseError> {
        let Some((_, feed)) = self.feed.take() else {
            return Ok(false);
        };
        // The head is read: its text may be unmapped from here on ([`reading`]), so nothing of
        // it is kept.
        self.c = Cursor { text: "", pos: 0 };
        self.ev = RawEvent::default();
        self.pairs.clear();
        loop {
            match feed.next()? {
                reading::Fed::Segment(text) => self.segment(text)?,
                reading::Fed::Rest(text) => {
                    return rest(
                        text,
                        &mut *self.sink,
                        self.skip,
                        Some(in_object),
                        feed.lent(),
                    )
                    .map(|()| true);
                }
            }
        }
    }

    /// The events array from here (an element's start) to its end, then the rest of the file:
    /// the fields of the top-level object after the array (`in_object`), or nothing.
    fn after_events(&mut self, in_object: bool) -> Result<(), ParseError> {
        if self.events(in_object)? {
            return Ok(());
        }
        self.c.ws();
        let at = self.c.pos;
        let tail = self.c.peek().is_some().then(|| self.c.object_tail());
        finish_array(self.sink, self.c.text, in_object, tail, at)
    }

    /// Reads the elements of the events array in `text` (a [`reading::Fed::Segment`]) to the sink; an
    /// error unless the last one ends exactly at its end with a comma.
    fn segment(&mut self, text: &str) -> Result<(), ParseError> {
        let mut c = Cursor { text, pos: 0 };
        let mut pairs = Vec::new();
        let mut e = RawEvent::default();
        while c.pos < text.len() {
            pairs.clear();
            let skipped = c.event(self.skip, &mut pairs, &mut e)?;
            let args = if skipped { None } else { Args::of(&e, &pairs) };
            self.sink.event(&e, args);
            if !c.after_element(b']')? {
                return Err(c.error(Category::Syntax, "the events array ended inside a segment"));
            }
        }
        Ok(())
    }
}

/// The rest of a `.json.gz` file, whole in `text` once inflated: from the start of an element
/// of the events array (and then what follows the array; `in_object` when the array is a member
/// of the top-level object), or the whole file (`None`). Read as a file read whole is, in the
/// chunks the `lent` thread cut of it, on both threads (or on this one alone where it cut none).
fn rest<'a>(
    text: &'a str,
    sink: &mut dyn Sink,
    skip: Option<Skip>,
    in_object: Option<bool>,
    lent: &chunks::Lent<'a>,
) -> Result<(), ParseError> {
    let mut w = Walker::new(text, sink, skip);
    lent.run(text, |ch| {
        w.chunks = ch;
        match in_object {
            Some(in_object) => w.after_events(in_object),
            None => w.top().map(|_| ()),
        }
    })
}

/// After the events array, which ended at `at` in `text` (after its `]` and white space), read
/// apart from the walker's text (by the chunks, or from the feed): the fields of the top-level object after it (`tail`, read
/// with it) to `sink`, or what is wrong there.
fn finish_array<'a>(
    sink: &mut dyn Sink,
    text: &str,
    in_object: bool,
    tail: Option<Result<Vec<Field<'a>>, ParseError>>,
    at: usize,
) -> Result<(), ParseError> {
    match (in_object, tail) {
        (true, Some(Ok(fields))) => {
            for (k, v) in fields {
                sink.field(&k, v);
            }
            Ok(())
        }
        (true, Some(Err(e))) => Err(e),
        (false, None) => Ok(()),
        (true, None) => Err(error_at(
            text,
            at,
            Category::Eof,
            "EOF while parsing an object",
        )),
        (false, Some(_)) => Err(error_at(text, at, Category::Syntax, "trailing characters")),
    }
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

/// A time in microseconds written as JSON (a number, or a number in a string) in picoseconds,
/// exactly: the decimal digits are read as they are written (`1661203463029566.123` is
/// 1661203463029566123000 ps), not through a double, which keeps only about 16 digits. Exponent
/// forms go through a double. `None` when it is not a finite number or does not fit. (Epoch
/// microseconds in picoseconds exceed `i64`: callers subtract an anchor.)
pub(crate) fn micros_to_ps(raw: Raw<'_>) -> Option<i128> {
    plain_micros_to_ps(raw.get().as_bytes()).or_else(|| any_micros_to_ps(raw))
}

/// [`micros_to_ps`] of the common form, in one pass: digits (at most 18), then optionally `.`
/// and digits; `None` for anything else (which [`any_micros_to_ps`] reads).
fn plain_micros_to_ps(b: &[u8]) -> Option<i128> {
    if let Some(ps) = micros_in_words(b).or_else(|| short_micros(b)) {
        return Some(ps);
    }
    let i = stops::digits_end(b, 0);
    if i == 0 || i > 18 {
        return None;
    }
    let int = stops::digits_value(&b[..i]);
    let (mut frac, mut round_up) = (0u64, false);
    if i < b.len() {
        if b[i] != b'.' {
            return None;
        }
        let d = &b[i + 1..];
        if stops::digits_end(d, 0) != d.len() {
            return None;
        }
        // Six digits to the picosecond; the seventh rounds half up; the rest do not count.
        let kept = &d[..d.len().min(6)];
        frac = stops::digits_value(kept) * 10u64.pow(6 - kept.len() as u32);
        round_up = d.get(6).is_some_and(|&c| c >= b'5');
    }
    Some(i128::from(int) * 1_000_000 + i128::from(frac) + i128::from(round_up))
}

/// [`plain_micros_to_ps`] of the form profilers write epoch times in, 9 to 16 digits, a point
/// and 1 to 6 digits (`4458676983543.183`), a word at a time: the integer's digits as two words
/// of eight (the first filled out with zeros before them), the fraction's as one, with zeros
/// before and after it to make the six digits of a picosecond. `None` for any other form.
#[inline]
fn micros_in_words(b: &[u8]) -> Option<i128> {
    use stops::{not_digits, word, word_value, ZEROS};
    let n = b.len();
    if n < 11 {
        return None;
    }
    let i = stops::digits_end(b, 0);
    let f = n.checked_sub(i + 1)?;
    if !(9..=16).contains(&i) || b[i] != b'.' || !(1..=6).contains(&f) {
        return None;
    }
    // The first `h` digits, after 8 - h zeros.
    let h = i - 8;
    let high = (word(&b[..8]) << ((8 - h) * 8)) | ZEROS.checked_shr(h as u32 * 8).unwrap_or(0);
    let int = word_value(high) * 100_000_000 + word_value(word(&b[i - 8..i]));
    // Two zeros, the fraction's `f` digits, 6 - f zeros: its value in picoseconds.
    let frac = (((word(&b[n - 8..]) >> ((8 - f) * 8)) | (ZEROS << (f * 8))) << 16) | 0x3030;
    if not_digits(frac) != 0 {
        return None;
    }
    Some(i128::from(int) * 1_000_000 + i128::from(word_value(frac)))
}

/// [`plain_micros_to_ps`] of the short form durations are written in (`156.777`, `2`): 1 to 8
/// digits, then optionally a point and 1 to 6 digits, a byte at a time in `u64`s. `None` for any
/// other form.
#[inline]
fn short_micros(b: &[u8]) -> Option<i128> {
    const SCALE: [u64; 7] = [1_000_000, 100_000, 10_000, 1_000, 100, 10, 1];
    if b.len() > 15 {
        return None;
    }
    let digit = |c: u8| c.is_ascii_digit().then(|| u64::from(c - b'0'));
    let point = b.iter().position(|&c| c == b'.').unwrap_or(b.len());
    if !(1..=8).contains(&point) {
        return None;
    }
    let mut int = 0u64;
    for &c in &b[..point] {
        int = int * 10 + digit(c)?;
    }
    let mut frac = 0u64;
    if point < b.len() {
        let d = &b[point + 1..];
        if !(1..=6).contains(&d.len()) {
            return None;
        }
        for &c in d {
            frac = frac * 10 + digit(c)?;
        }
        frac *= SCALE[d.len()];
    }
    Some(i128::from(int * 1_000_000 + frac))
}

/// [`micros_to_ps`] of any form: quoted, signed, with an exponent.
fn any_micros_to_ps(raw: Raw<'_>) -> Option<i128> {
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

    /// Records everything a parse hands over, to compare parses; the strings the second thread
    /// numbered are kept to check every `args` pair it read ahead against [`value_of`].
    #[derive(Default)]
    pub(super) struct Record(pub(super) Vec<String>, Vec<String>);

    impl Sink for Record {
        fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
            if let Some(Args {
                pairs,
                pre: Some(pre),
            }) = args
            {
                assert_eq!(pairs.len(), pre.len());
                let s = |i: u32| Cow::Borrowed(self.1[i as usize].as_str());
                for ((k, v), a) in pairs.iter().zip(pre) {
                    assert_eq!(s(a.key), *k);
                    let got = match a.value {
                        PreValue::None => Value::None,
                        PreValue::I64(x) => Value::I64(x),
                        PreValue::U64(x) => Value::U64(x),
                        PreValue::F64(x) => Value::F64(x),
                        PreValue::Str(i) => Value::Str(s(i)),
                    };
                    assert_eq!(got, value_of(v.get()), "{k}: {}", v.get());
                }
            }
            self.0.push(show(e, args));
        }
        fn strings(&mut self, new: &[Cow<'_, str>]) {
            self.1.extend(new.iter().map(|x| x.to_string()));
        }
        fn field(&mut self, key: &str, value: &RawValue) {
            self.0.push(format!("field {key} {}", value.get()));
        }
    }

    /// What a parse on one thread hands over, and its error.
    fn run(text: &str) -> (Vec<String>, Option<String>) {
        let mut rec = Record::default();
        let r = parse_text(text, &mut rec);
        (rec.0, r.err().map(|e| e.to_string()))
    }

    /// Fields before and after the events, `args` with nested objects written over several lines
    /// (so `},` + line break + `{` occurs inside events too), and strings holding `},{`.
    pub(super) const TRICKY: &str = r#"{
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

    /// The search for a place to cut the events array (where the chunks and the segments of a
    /// file being read start) lands on a `{` from anywhere in it, and on each event's start
    /// after a line break, not on the objects nested in `args` on the same line. (Whether a cut
    /// is an element's start is checked where the parts are joined: `chunks` and `reading`
    /// test every `{`.)
    #[test]
    fn the_search_for_a_cut_finds_the_starts_of_events() {
        assert_eq!(run(TRICKY).1, None);
        let starts: std::collections::BTreeSet<usize> = (0..TRICKY.len())
            .filter_map(|f| find_split(TRICKY, f))
            .collect();
        assert!(starts.iter().all(|&i| TRICKY[i..].starts_with('{')));
        for event in [
            "{\n    \"ph\": \"B\"",
            "{\n    \"ph\": \"i\"",
            "{\"ph\": \"E\"",
        ] {
            assert!(
                starts.iter().any(|&i| TRICKY[i..].starts_with(event)),
                "{event}: {starts:?}"
            );
        }
        assert!(!starts.iter().any(|&i| TRICKY[i..].starts_with("{\"x\"")));
    }

    /// Events a [`Skip`] leaves out: skimmed (strings and brackets that look like structure
    /// inside them included), unless they hold a `stream` or are not plain.
    #[test]
    fn skipped_events_keep_their_times() {
        const SKIPPY: &str = r#"[
  {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 2, "args": {"Input Dims": [[1, 2], []], "s": "}]{[:,", "o": {"p": [{}]}}},
  {"ph": "X", "cat": "cpu_op", "name": "triton", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {"stream": 0}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 7, "dur": 1, "args": {"stream": 7, "correlation": 3}},
  {"cat": "cpu_op", "ph": "X", "ts": "8.5", "name": "quoted time"},
  {"ph": "f", "id": 3, "pid": 0, "tid": 7, "ts": 7, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cpu_op", "name": "no time", "pid": 1, "tid": 1},
  {"ph": "X", "cat": "cpu_op", "name": "last", "ts": 9.25, "dur": 0.5}
]
"#;
        let skip = Skip {
            complete_cats: &["cpu_op"],
            flow_cats: &["ac2g"],
            args_kept: None,
        };
        let (want, err) = with_skip(Some(skip), || run(SKIPPY));
        assert_eq!(err, None);
        let skipped: Vec<&String> = want.iter().filter(|e| e.starts_with("skipped")).collect();
        assert_eq!(skipped.len(), 5, "{want:#?}");
        assert!(
            skipped[0].contains(r#"Some("5") Some("2")"#),
            "{}",
            skipped[0]
        );
        // Skimmed: no name read (nor anything else but the phase, category and times).
        assert!(skipped[0].contains(r#"Some("X") None Some("cpu_op") None None"#));
        assert!(skipped[1].contains(r#"Some("\"8.5\"")"#), "{}", skipped[1]);
        assert!(skipped[2].contains(r#"Some("f")"#), "{}", skipped[2]);
        // Without a time it is read in full first (and the importer counts it as timeless).
        assert!(skipped[3].contains(r#"Some("no time")"#), "{}", skipped[3]);
        assert!(
            skipped[4].contains(r#"Some("9.25") Some("0.5")"#),
            "{}",
            skipped[4]
        );
        assert!(want
            .iter()
            .any(|e| !e.starts_with("skipped") && e.contains("triton")));
        // A repeated time is an error, skipped or not.
        let twice = SKIPPY.replace(r#""ts": 9.25"#, r#""ts": 9.25, "ts": 1"#);
        let full = run(&twice).1;
        assert!(
            full.as_deref()
                .is_some_and(|e| e.contains("duplicate field")),
            "{full:?}"
        );
        assert_eq!(with_skip(Some(skip), || run(&twice)).1, full);
    }

    #[test]
    fn text_checked_in_halves_is_checked_as_a_whole() {
        // Large enough for two threads; a four-byte character straddles the cut.
        let mut text = "{\"ph\": \"X\", \"name\": \"a\u{e9}\"}, ".repeat(PARALLEL_MIN / 28 + 1);
        let half = text.len() / 2;
        // The cut of the longer text (`half + 2`) falls within the character inserted at `at`.
        let at = (half - 1..=half + 1)
            .find(|&i| text.is_char_boundary(i))
            .expect("a character boundary near the middle");
        text.insert(at, '\u{1f600}');
        let bytes = text.as_bytes().to_vec();
        assert!(bytes.len() >= PARALLEL_MIN && !text.is_char_boundary(bytes.len() / 2));
        assert_eq!(utf8(&bytes, 2).ok(), Some(text.as_str()));
        // A bad byte anywhere (first half, at the cut, second half, last) is named as one
        // thread names it.
        for bad in [
            10,
            bytes.len() / 2 - 1,
            bytes.len() / 2,
            bytes.len() * 3 / 4,
            bytes.len() - 1,
        ] {
            let mut b = bytes.clone();
            b[bad] = 0xff;
            let want = std::str::from_utf8(&b).unwrap_err();
            assert_eq!(utf8(&b, 2).unwrap_err(), want, "a bad byte at {bad}");
            // At the bad byte, or at the start of the character it broke.
            assert!(want.valid_up_to() <= bad && bad - want.valid_up_to() < 4);
        }
    }

    /// The text of a real trace (a committed fixture: rank 0 of a two-rank job, 1.8 MB).
    pub(super) fn real_trace() -> String {
        use std::io::Read;
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/pytorch/two_ranks/hta-trace_filter-sampled_rank-0.json.gz"
        );
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(path).expect("fixture"))
            .read_to_string(&mut text)
            .expect("gunzip");
        text
    }

    /// An event and its `args` as text, to compare readings.
    fn show(e: &RawEvent<'_>, args: Option<Args<'_, '_>>) -> String {
        let r = |v: Option<Raw<'_>>| v.map(|v| v.get().to_string());
        format!(
            "{}{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            if e.skipped { "skipped " } else { "" },
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
                .pairs
                .iter()
                .map(|(k, v)| format!("{k}={}", v.get()))
                .collect::<Vec<_>>())
        )
    }

    /// Compares the plain reader with serde_json's reading on the object at `text[at]`: where
    /// the plain reader reads it, serde_json reads the same event and ends at the same place;
    /// where serde_json fails, the plain reader does not read it. Returns whether it was read
    /// plainly.
    fn same_as_serde(text: &str, at: usize, skip: Option<Skip>) -> bool {
        let mut pairs = vec![(Cow::Borrowed("before"), Raw("1"))];
        let mut e = RawEvent::default();
        let plain = plain::event(text, at, skip, &mut pairs, &mut e).map(|end| (e, end));
        let mut c = Cursor { text, pos: at };
        let general = with_skip(skip, || c.value::<OwnedEvent<'_>>());
        match (plain, general) {
            (None, _) => {
                assert_eq!(pairs.len(), 1, "pairs left behind at {at}");
                false
            }
            (Some((e, end)), Ok(g)) => {
                assert_eq!(end, c.pos, "end of the event at {at}: {}", &text[at..]);
                assert_eq!(
                    show(&e, Args::of(&e, &pairs)),
                    show(&g.event, Args::of(&g.event, &g.pairs)),
                    "{}",
                    &text[at..end]
                );
                assert_eq!(&pairs[..1], &[(Cow::Borrowed("before"), Raw("1"))]);
                true
            }
            (Some((e, _)), Err(err)) => {
                panic!(
                    "read plainly but not by serde_json ({err}): {}",
                    show(&e, Args::of(&e, &pairs))
                )
            }
        }
    }

    /// Whether [`skim`] leaves out the event at `text[at]`; when it does and serde_json reads
    /// the event, both must agree on where it ends, that it is left out, and its phase,
    /// category and times. (Inside values the skim checks only strings and brackets, as it
    /// always has: what serde_json rejects there it may pass.)
    fn skim_as_serde(text: &str, at: usize, skip: Skip) -> bool {
        // The import's way (the first members by `worth_skimming`, the rest by `skim_members`)
        // finds what a skim from the start does.
        fn sum<'a>(k: &Skimmed<'a>) -> (usize, [Option<&'a str>; 4], bool) {
            (k.end, [k.ph, k.cat, k.ts, k.dur], k.read_in_full)
        }
        if let Some((i, first)) = worth_skimming(text, at, &skip) {
            assert_eq!(
                skim_members(text, i, first, true).as_ref().map(sum),
                skim(text, at).as_ref().map(sum),
                "{}",
                &text[at..]
            );
        }
        let Some(k) = skim(text, at) else {
            return false;
        };
        let Some(e) = skipped_of(&k, skip) else {
            return false;
        };
        let mut c = Cursor { text, pos: at };
        let Ok(g) = with_skip(Some(skip), || c.value::<OwnedEvent<'_>>()) else {
            return false;
        };
        assert_eq!(k.end, c.pos, "end of the event at {at}: {}", &text[at..]);
        assert!(g.event.skipped, "{}", &text[at..k.end]);
        assert_eq!(
            (&e.ph, &e.cat, e.ts, e.dur),
            (&g.event.ph, &g.event.cat, g.event.ts, g.event.dur),
            "{}",
            &text[at..k.end]
        );
        true
    }

    /// What a skim found, to compare two skims.
    type Summed<'a> = (usize, [Option<&'a str>; 4], bool);

    fn summed<'a>(k: &Skimmed<'a>) -> Summed<'a> {
        (k.end, [k.ph, k.cat, k.ts, k.dur], k.read_in_full)
    }

    /// The skim by layout answers as the member-by-member one: on every event of the committed
    /// traces in turn (the layout answering for nearly all of those left out, once it has seen
    /// one of their kind), and on every one-byte change of an event in the plain form, read by
    /// the layout of the event unchanged.
    #[test]
    fn skims_by_layout_answer_as_member_by_member() {
        let skip = Skip {
            complete_cats: &["cpu_op", "python_function"],
            flow_cats: &["ac2g", "fwdbwd", "async_cpu_to_gpu"],
            args_kept: None,
        };
        let (mut looked, mut quick) = (0, 0);
        for t in fixture_traces() {
            let mut layouts = layout::Skims::default();
            for at in event_starts(&t) {
                let Some((i, first)) = worth_skimming(&t, at, &skip) else {
                    continue;
                };
                looked += 1;
                let slow = skim_members(&t, i, first, true).as_ref().map(summed);
                if let Some(q) = layouts.quick(&t, i, first) {
                    quick += 1;
                    assert_eq!(Some(summed(&q)), slow, "{}", &t[at..]);
                }
                let got = layouts.skim(&t, i, first);
                assert_eq!(got.as_ref().map(summed), slow, "{}", &t[at..]);
            }
        }
        assert!(
            looked >= 100 && quick * 100 >= looked * 80,
            "{quick} of {looked}"
        );
        let events = [
            concat!(
                r#"{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: "#,
                r#"DivBackward1", "pid": 2910249, "tid": 2919752,"#,
                "\n    ",
                r#""ts": 4458676522690.655, "dur": 156.777, "args": {"External id": 2049, "#,
                r#""Input Dims": [[2, 3], []], "s": "x]y", "n": -1.5e3, "b": true, "z": null}}"#
            ),
            r#"{"ph": "f", "id": 57532, "pid": 2910249, "tid": 2919752, "ts": 4458676981028.392, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#,
        ];
        let next = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}"#;
        let (mut tried, mut quick) = (0, 0);
        for ev in events {
            let base = format!("{ev},\n  {next}");
            let (i, first) = worth_skimming(&base, 0, &skip).expect("left out");
            let mut layouts = layout::Skims::default();
            assert!(layouts.skim(&base, i, first).is_some());
            assert!(layouts.quick(&base, i, first).is_some(), "{base}");
            for at in 0..ev.len() {
                for c in [
                    b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b' ', b'-', b'.', b'\n',
                    0x1f, b'x', b'e',
                ] {
                    let mut m = base.as_bytes().to_vec();
                    m[at] = c;
                    let Ok(m) = String::from_utf8(m) else {
                        continue;
                    };
                    let Some((i, first)) = worth_skimming(&m, 0, &skip) else {
                        continue;
                    };
                    tried += 1;
                    if let Some(q) = layouts.quick(&m, i, first) {
                        quick += 1;
                        let slow = skim_members(&m, i, first, true).as_ref().map(summed);
                        assert_eq!(Some(summed(&q)), slow, "{m}");
                    }
                }
            }
        }
        // Changes to values leave the layout; changes between them do not.
        assert!(quick * 3 > tried && quick < tried, "{quick} of {tried}");
    }

    /// Every event of the committed traces that the skim leaves out is left out by serde_json
    /// too, with the same end and times; so are odd forms and every one-byte change of one.
    #[test]
    fn skimmed_events_read_as_serde_json_reads_them() {
        let skip = Skip {
            complete_cats: &["cpu_op", "python_function"],
            flow_cats: &["ac2g", "fwdbwd", "async_cpu_to_gpu"],
            args_kept: None,
        };
        let (mut events, mut skimmed) = (0, 0);
        for t in fixture_traces() {
            for at in event_starts(&t) {
                events += 1;
                skimmed += usize::from(skim_as_serde(&t, at, skip));
            }
        }
        // Operator events and flows are most of a trace.
        assert!(skimmed * 100 >= events * 30, "{skimmed} of {events}");
        let cases = [
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2}"#,
            r#"{"ph":"X","cat":"cpu_op","ts":"1.5","dur":2,"args":{"a":[[], [1, 2], {"b": "]}:["}]}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "args": {"k": "stream"}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "args": {"stream": 1}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "ts": 2}"#,
            r#"{"ph": "X", "cat": "cpu_op", "t\u0073": 1}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": [1]}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1 2}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1,}"#,
            r#"{"ph": "X", "cat": "cpu_op" "ts": 1}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "args": {"a": [}}"#,
            r#"{"ph": "f", "cat": "ac2g", "id": 3, "ts": 4, "bp": "e"}"#,
        ];
        let mut read = 0;
        for c in cases {
            read += usize::from(skim_as_serde(c, 0, skip));
        }
        assert!(read >= 3, "{read}");
        let ev = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 12.5, "dur": 3, "args": {"Input Dims": [[2, 3], []], "s": "x]y", "n": -1.5e3, "b": true, "z": null}}"#;
        assert!(skim_as_serde(ev, 0, skip));
        // An escape, valid or not, in a name or in the args, and other forms a skim does not
        // check: read in full, which checks them.
        for e in [
            r#"{"ph": "X", "cat": "cpu_op", "name": "a\"b", "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "a\qb", "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2, "args": {"s": "x\"y"}}"#,
            r#"{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 2, "args": {"s": ["x\qy"]}}"#,
            // A control character, a scalar that is not JSON.
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\u{1}b\", \"ts\": 1, \"dur\": 2}",
            r#"{"ph": "X", "cat": "cpu_op", "pid": NaN, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "cpu_op", "pid": tru, "ts": 1, "dur": 2}"#,
            r#"{"ph": "X", "cat": "cpu_op", "pid": 01, "ts": 1, "dur": 2}"#,
        ] {
            let k = skim(e, 0).expect("well formed as far as a skim looks");
            assert!(skipped_of(&k, skip).is_none(), "{e}");
        }
        let mut read = 0;
        for cut in 0..ev.len() {
            skim_as_serde(&ev[..cut], 0, skip);
        }
        for i in 0..ev.len() {
            for c in [
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b' ', b'-', b'.', 0x1f,
            ] {
                let mut m = ev.as_bytes().to_vec();
                m[i] = c;
                if let Ok(m) = String::from_utf8(m) {
                    read += usize::from(skim_as_serde(&m, 0, skip));
                }
            }
        }
        assert!(read > 100, "{read}");
    }

    /// The text of each committed PyTorch trace (`fixtures/pytorch/*.json.gz`).
    fn fixture_traces() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pytorch");
        let mut texts = Vec::new();
        for f in std::fs::read_dir(&dir).expect("fixtures").flatten() {
            let p = f.path();
            if p.to_string_lossy().ends_with(".json.gz") {
                let mut t = String::new();
                std::io::Read::read_to_string(
                    &mut flate2::read::GzDecoder::new(std::fs::File::open(&p).expect("open")),
                    &mut t,
                )
                .expect("gunzip");
                texts.push(t);
            }
        }
        assert!(texts.len() >= 3, "{} traces", texts.len());
        texts
    }

    /// The objects of the events array of a trace (file text), by serde_json's reading.
    fn event_starts(text: &str) -> Vec<usize> {
        let mut c = Cursor {
            text,
            pos: text.find("\"traceEvents\"").map_or(0, |i| i + 13),
        };
        c.pos += text[c.pos..].find('[').expect("an events array") + 1;
        c.ws();
        let mut starts = Vec::new();
        while c.peek() == Some(b'{') {
            starts.push(c.pos);
            c.value::<IgnoredAny>().expect("an event");
            if !c.after_element(b']').expect("the array goes on") {
                break;
            }
        }
        starts
    }

    /// An event read by the plain reader (by layout where one applies), against the same read
    /// member by member: the same end, fields and args, or both `None`.
    fn plain_by_layout_as_by_members(text: &str, at: usize, skip: Option<Skip>) {
        let (mut e1, mut p1) = (RawEvent::default(), Vec::new());
        let (mut e2, mut p2) = (RawEvent::default(), Vec::new());
        let r1 = plain::event_by_members(text, at, skip, &mut p1, &mut e1);
        let r2 = plain::event(text, at, skip, &mut p2, &mut e2);
        assert_eq!(r1, r2, "{}", &text[at..]);
        if r1.is_some() {
            assert_eq!(
                (show(&e1, Args::of(&e1, &p1)), e1.args_left_out),
                (show(&e2, Args::of(&e2, &p2)), e2.args_left_out),
                "{}",
                &text[at..]
            );
        }
    }

    /// `text` with each byte in `at` replaced by each of a few bytes that matter to JSON (those
    /// changes that leave it UTF-8).
    fn one_byte_changes(text: &str, at: std::ops::Range<usize>) -> Vec<String> {
        let mut out = Vec::new();
        for i in at {
            for c in [
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b' ', b'-', b'.', b'\n',
                0x1f, b'x', b'e', b'n',
            ] {
                let mut m = text.as_bytes().to_vec();
                m[i] = c;
                out.extend(String::from_utf8(m).ok());
            }
        }
        out
    }

    /// The plain reader by layout reads as member by member: every event of the committed
    /// traces in turn, with and without a partial read's skip (the layouts reading most of
    /// them), and every one-byte change of a kernel event and of a flow event read by the
    /// layout of the event unchanged.
    #[test]
    fn plain_reads_by_layout_as_member_by_member() {
        let skip = Skip {
            complete_cats: &["cpu_op", "python_function"],
            flow_cats: &["ac2g", "fwdbwd"],
            args_kept: Some(&["stream", "correlation"]),
        };
        let mut events = 0;
        let before = plain::BY_LAYOUT.with(std::cell::Cell::get);
        for t in fixture_traces() {
            for at in event_starts(&t) {
                for s in [None, Some(skip)] {
                    events += 1;
                    plain_by_layout_as_by_members(&t, at, s);
                }
            }
        }
        // The fixtures are short: many kinds seen once, and many metadata events (`M`, read
        // member by member).
        let by_layout = plain::BY_LAYOUT.with(std::cell::Cell::get) - before;
        assert!(by_layout * 100 >= events * 35, "{by_layout} of {events}");
        let ev = concat!(
            r#"{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int, at::detail::Array<char*, 2>)", "pid": 0, "tid": 7,"#,
            "\n    ",
            r#""ts": 4458676983543.183, "dur": 41.407,"#,
            "\n    ",
            r#""args": {"External id": 12353, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 57541, "registers per thread": 40, "shared memory": 400, "blocks per SM": 4.740741, "grid": [512, 1, 1], "block": [512, 1, 1], "est. achieved occupancy %": 100}"#,
            "\n  }"
        );
        let flow = r#"{"ph": "f", "id": 57532, "pid": 2910249, "tid": 2919752, "ts": 4458676981028.392, "cat": "ac2g", "name": "ac2g", "bp": "e"}"#;
        let next =
            r#"{"ph": "X", "cat": "cpu_op", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}"#;
        let (mut tried, mut layout_read) = (0, 0);
        for (ev, s) in [(ev, None), (ev, Some(skip)), (flow, None)] {
            let base = format!("{ev},\n  {next}");
            // The layout of the event unchanged.
            let (mut e, mut p) = (RawEvent::default(), Vec::new());
            assert!(plain::event(&base, 0, s, &mut p, &mut e).is_some());
            for m in one_byte_changes(&base, 0..ev.len()) {
                tried += 1;
                let n = plain::BY_LAYOUT.with(std::cell::Cell::get);
                plain_by_layout_as_by_members(&m, 0, s);
                layout_read += plain::BY_LAYOUT.with(std::cell::Cell::get) - n;
                // Back to the layout of the event unchanged.
                let (mut e, mut p) = (RawEvent::default(), Vec::new());
                plain::event(&base, 0, s, &mut p, &mut e);
            }
        }
        assert!(
            layout_read * 3 > tried && layout_read < tried,
            "{layout_read} of {tried}"
        );
    }

    /// `args` read by the layout of the last of their kind read as member by member: two
    /// operator events of one kind whose `args` share their first six members (as PyTorch
    /// writes them, with and without `Fwd thread id` and `Sequence number`), in turn, then every
    /// one-byte change of the `args` of each, read after the other (whose layout is then the
    /// kind's).
    #[test]
    fn args_read_by_layout_as_member_by_member() {
        let head = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
    "ts": 1661203462598738, "dur": 19,
    "args": {"#;
        let a = format!(
            "{head}{}",
            r#"
      "Trace name": "PyTorch Profiler", "Trace iteration": 0,
      "External id": 1,
      "Profiler Event Index": 0, "Input Dims": [[], [4, 8]], "Input type": ["", "float"], "Module Hierarchy": "", "Call stack": ""
    }
  }"#
        );
        let b = format!(
            "{head}{}",
            r#"
      "Trace name": "PyTorch Profiler", "Trace iteration": 0,
      "External id": 2,
      "Profiler Event Index": 1, "Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"], "Fwd thread id": 0, "Sequence number": 7, "Module Hierarchy": "", "Call stack": ""
    }
  }"#
        );
        let skip = Skip {
            complete_cats: &["kernel"],
            flow_cats: &[],
            args_kept: Some(&["External id", "Sequence number"]),
        };
        let followed = || plain::ARGS_FOLLOWED.with(std::cell::Cell::get);
        let before = followed();
        for s in [None, Some(skip)] {
            for ev in [&a, &b, &a, &a, &b, &b, &a] {
                plain_by_layout_as_by_members(ev, 0, s);
            }
        }
        // All six shared members of each but the first few, and all of the repeated ones.
        assert!(followed() - before >= 2 * 40, "{}", followed() - before);
        let (mut tried, before) = (0, followed());
        for (ev, other) in [(&a, &b), (&b, &a)] {
            let from = ev.find("\"args\"").expect("args");
            for m in one_byte_changes(ev, from..ev.len()) {
                for s in [None, Some(skip)] {
                    tried += 1;
                    // The kind's layouts: those of the other event, then of this one.
                    for ev in [other, other, ev, ev] {
                        let (mut e, mut p) = (RawEvent::default(), Vec::new());
                        plain::event(ev, 0, s, &mut p, &mut e);
                    }
                    plain_by_layout_as_by_members(&m, 0, s);
                }
            }
        }
        assert!(
            followed() - before > tried,
            "{} of {tried}",
            followed() - before
        );
    }

    #[test]
    fn plain_events_read_as_serde_json_reads_them() {
        let mut texts: Vec<String> = vec![TRICKY.to_string()];
        texts.extend(fixture_traces());
        let skip = Skip {
            complete_cats: &["cpu_op", "python_function"],
            flow_cats: &["ac2g", "fwdbwd"],
            args_kept: None,
        };
        let (mut events, mut plain) = (0, 0);
        for t in &texts {
            for at in event_starts(t) {
                for s in [None, Some(skip)] {
                    events += 1;
                    plain += usize::from(same_as_serde(t, at, s));
                }
            }
        }
        // Real traces' events are nearly all plain (TRICKY's escaped name is not).
        assert!(plain * 100 >= events * 95, "{plain} of {events}");
        // Forms left to serde_json, and bad input: never read plainly unless serde_json reads
        // the same.
        let cases = [
            r#"{"ph": "X", "name": "esc\"aped", "ts": 1}"#,
            r#"{"ph": "X", "ts": 1, "ts": 2}"#,
            r#"{"ph": "X", "ts": 1, "other": 1, "other": 2}"#,
            r#"{"ph": "X", "args": {"a": 1, "a": 2}, "ts": 0}"#,
            r#"{"ph": "X", "args": {}, "ts": 0}"#,
            r#"{"ph": "X", "args": null, "ts": null, "name": null}"#,
            r#"{"ph": 5}"#,
            r#"{"ph": "X", "args": 5}"#,
            r#"{"ph": "X", "args": {"k": [1, {"a": "\u00e9\n"}, -0.5e-3, true, false, null]}}"#,
            r#"{"ts": 01}"#,
            r#"{"ts": 1.}"#,
            r#"{"ts": -}"#,
            r#"{"ts": 1e}"#,
            r#"{"ts": 1E+5, "dur": -0, "id": "0x1"}"#,
            r#"{"ts": tru}"#,
            r#"{"ts": NaN}"#,
            r#"{"ts": 1,}"#,
            r#"{"ts" 1}"#,
            r#"{"ts": 1 "dur": 2}"#,
            r#"{"name": "tab	in it"}"#,
            r#"{"args": {"s": "bad \x escape"}}"#,
            r#"{"args": {"s": "\u12g4"}}"#,
            r#"{}"#,
            r#"{ }"#,
            r#"{"ph":"X","cat":"cpu_op","ts":1,"args":{"stream":7}}"#,
            r#"{"ph":"X","cat":"cpu_op","ts":1,"args":{"Input Dims":[[1]]}}"#,
            r#"{"args": {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}"#,
        ];
        let mut plain_cases = 0;
        for c in cases {
            for s in [None, Some(skip)] {
                plain_cases += usize::from(same_as_serde(c, 0, s));
            }
        }
        assert!(plain_cases >= 16, "{plain_cases}");
        // Every cut and every one-byte change of an event with nested args.
        let ev = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": "t", "ts": 12.5, "dur": 3, "args": {"Input Dims": [[2, 3], []], "s": "x\"y", "n": -1.5e3, "b": true, "z": null}}"#;
        let mut read = 0;
        for cut in 0..ev.len() {
            same_as_serde(&ev[..cut], 0, None);
        }
        for i in 0..ev.len() {
            for c in [
                b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b'e', b' ', b'-', b'.',
                b'n', 0x1f,
            ] {
                let mut m = ev.as_bytes().to_vec();
                m[i] = c;
                if let Ok(m) = String::from_utf8(m) {
                    for s in [None, Some(skip)] {
                        read += usize::from(same_as_serde(&m, 0, s));
                    }
                }
            }
        }
        assert!(read > 100, "{read}");
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
            assert_eq!(micros_to_ps(Raw::from(&*raw(text))), want, "{text}");
        }
    }

    /// The one-pass reading of plain decimals gives what the general one gives.
    #[test]
    fn plain_decimals_read_as_any_form_does() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut read, mut words, mut short) = (0, 0, 0);
        for _ in 0..20_000 {
            // JSON numbers: no leading zero, at least one digit after a point.
            let int_digits = 1 + (next() % 20) as usize;
            let frac_digits = 1 + (next() % 10) as usize;
            let digits = |n: usize, r: &mut dyn FnMut() -> u64| -> String {
                (0..n)
                    .map(|_| char::from(b'0' + (r() % 10) as u8))
                    .collect()
            };
            let mut t = digits(int_digits, &mut next);
            if t.len() > 1 && t.starts_with('0') {
                t.replace_range(..1, "1");
            }
            if next() % 3 > 0 {
                t.push('.');
                t.push_str(&digits(frac_digits, &mut next));
            }
            let r = raw(&t);
            if let Some(v) = micros_in_words(r.get().as_bytes()) {
                words += 1;
                assert_eq!(Some(v), any_micros_to_ps(Raw::from(&*r)), "{t}");
            }
            if let Some(v) = short_micros(r.get().as_bytes()) {
                short += 1;
                assert_eq!(Some(v), any_micros_to_ps(Raw::from(&*r)), "{t}");
            }
            if let Some(v) = plain_micros_to_ps(r.get().as_bytes()) {
                read += 1;
                assert_eq!(Some(v), any_micros_to_ps(Raw::from(&*r)), "{t}");
            }
        }
        assert!(read > 10_000, "{read}");
        // Times as profilers write them: 9 to 16 digits, a point and 1 to 6 digits; durations,
        // up to 8 digits and up to 6 after a point.
        assert!(words > 1_000, "{words}");
        assert!(short > 1_000, "{short}");
    }

    #[test]
    fn ids_are_numbers_or_strings() {
        assert_eq!(Key::of(Some(Raw::from(&*raw("7")))), Key::Num(7));
        assert_eq!(Key::of(Some(Raw::from(&*raw("\"7\"")))), Key::Num(7));
        assert_eq!(
            Key::of(Some(Raw::from(&*raw("\"Spans\"")))),
            Key::Str("Spans".into())
        );
        assert_eq!(Key::of(None), Key::Num(0));
    }
}
