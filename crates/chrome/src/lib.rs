//! Chrome trace JSON importer: the files the PyTorch profiler (Kineto) writes
//! (`*.pt.trace.json[.gz]`), and other Chrome-trace producers, into the xlens model.
//!
//! The trace's processes and threads become planes and lines the way XSpace lays them out, so the
//! tools read them unchanged:
//!
//! * GPU processes (those with `kernel`, `gpu_memcpy`, `gpu_memset` or `gpu_user_annotation`
//!   events; Kineto numbers them by device) become `/device:GPU:<pid>` planes, one line
//!   `Stream #<tid>` per stream; GPU user annotations get a line of their own per stream
//!   (`Annotations, stream <tid>`), so they never count as kernels.
//! * Every other numeric process becomes part of `/host:CPU`, one line per thread (named from
//!   `thread_name` metadata); processes named by strings (Kineto's `Spans`, `Traces`) become
//!   planes `/trace:<name>`.
//! * Times are read from the decimal text (microseconds) into picoseconds exactly; the earliest
//!   event is at 0 and `origin_ps` says when that was (`baseTimeNanoseconds` added when present).
//! * `cat` becomes a stat `cat`; `args` become stats with their own names; arrays and objects as
//!   their JSON text. Derived
//!   stats in XSpace's vocabulary: `correlation_id` (from `correlation`, linking a launch to its
//!   kernel), `kernel_details` (grid, block, registers, shared memory, occupancy), and on
//!   `ProfilerStep#N` annotations `_r` = 1 and `step_num` = N (step roots). Flows other than the
//!   launch→kernel ones (which `correlation_id` already links), e.g. `fwdbwd`, become `_p`/`_pt`
//!   on their producer and `_c`/`_ct` on their consumer.
//! * Phases: `X`; `B`/`E` pairs; `i`/`I`/`R` instants; `C` counters (a line per counter, an
//!   instant per sample with the series as stats); `b`/`e`/`n` (and legacy `S`/`F`) async slices
//!   on a line per process and category; `s`/`t`/`f` flows bound to the enclosing slice (or, for
//!   `f` without `bp: "e"`, the next slice on the thread); `M` names and sort order.
//!   `deviceProperties` become GPU plane stats (`device_name`, `memory_size`, `core_count`,
//!   `compute_cap_major`/`minor`, and the raw fields); `distributedInfo` (rank, world size,
//!   backend, process groups) becomes `/host:CPU` plane stats.
//!
//! A partial read ([`decode_with`] and a [`Skip`], e.g. [`GPU_ACTIVITY`] for the HTA-style GPU
//! analyses) skims past the events it names (finding their end, phase, category and times
//! without parsing the rest; strings and bracket nesting are checked, not every JSON rule) and
//! does not add them; their times still set the trace's span, so the rest is on the same axis
//! as in a full read. It may also keep only some `args` of the slices it reads (GPU_ACTIVITY:
//! `stream` and `correlation`). `Profile::partial_read` says how many events and args were left
//! out.
//!
//! Slices of one line that overlap without nesting (which a line's nesting cannot hold) move to
//! extra lines (`<line> (overlap 1)`, ...); unmatched `E`, unclosed `B`, events without a time
//! and unknown phases are skipped or closed at the trace's end. Each is counted in
//! `Profile::import_warnings`; nothing is dropped silently.

mod json;

use hashbrown::HashMap;
pub use json::Skip;
use json::{micros_to_ps, value_of, Args, Key, PreValue, Raw, RawEvent, Sink, Value};
use serde_json::value::RawValue;
use xlens_model::{
    encode_stat, EventMetadata, EventsBuilder, Line, Plane, Profile, StatValue, StrId,
};

/// Why a file could not be read as a Chrome trace.
#[derive(Debug, thiserror::Error)]
#[error("not a readable Chrome trace (JSON): {message}")]
pub struct DecodeError {
    message: String,
}

/// Decodes a Chrome trace (uncompressed JSON bytes) into a [`Profile`].
pub fn decode(bytes: &[u8]) -> Result<Profile, DecodeError> {
    decode_with(bytes, None)
}

/// What a read for the GPU's activity leaves out (see [`Skip`]): host-side operator and Python
/// slices, the launch→kernel flow arrows (the `correlation` args link launches to kernels) and
/// the forward→backward ones (between operator slices, which it leaves out), and of the slices
/// read, every arg but `stream` and `correlation` (kernels' launch details).
/// The runtime's launch calls, annotations (`ProfilerStep#N`), GPU events, counters and
/// metadata are read in full.
pub const GPU_ACTIVITY: Skip = Skip {
    complete_cats: &["cpu_op", "python_function"],
    flow_cats: &["ac2g", "async_cpu_to_gpu", "fwdbwd"],
    // What HTA's loaders read of a slice's args.
    args_kept: Some(&["stream", "correlation"]),
};

/// [`decode`], leaving out the events `skip` names (a read for one tool that does not use
/// them); the profile's `partial_read` then says what was left out, with counts.
pub fn decode_with(bytes: &[u8], skip: Option<Skip>) -> Result<Profile, DecodeError> {
    let mut imp = Importer::new(skip);
    json::parse(bytes, &mut imp, skip).map_err(|e| DecodeError {
        message: describe(&e),
    })?;
    Ok(imp.finish_skipped(skip))
}

/// [`decode_with`] of the trace `r` yields (a gzip file as it is inflated), parsing the text
/// while a second thread inflates it; `size` is the size
/// the file states (0 when unknown). Returns the profile and the size of the JSON in bytes;
/// `None` when the file is to be read whole and decoded with [`decode_with`] instead (too small
/// to gain by this, or anything unusual about it: that read says what). Where it returns a
/// profile, it is the one [`decode_with`] makes of the whole text.
pub fn decode_reading(
    r: impl std::io::Read + Send,
    size: usize,
    skip: Option<Skip>,
) -> Option<(Profile, usize)> {
    let mut imp = Importer::new(skip);
    let len = json::reading::parse_reading(r, size, &mut imp, skip)?;
    Some((imp.finish_skipped(skip), len))
}

/// The parser's message, with what it means for a trace file.
fn describe(e: &json::ParseError) -> String {
    use serde_json::error::Category;
    match e.category {
        Category::Eof => format!("the JSON ends early (truncated file?): {e}"),
        Category::Syntax => format!("invalid JSON: {e}"),
        Category::Data => format!("{e}"),
        Category::Io => format!("{e}"),
    }
}

/// Categories of device activity in Kineto traces.
const GPU_CATS: &[&str] = &[
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "gpu_user_annotation",
    "Kernel",
    "Memcpy",
    "Memset",
];

/// Flow categories that link a launch to its kernel (linked through `correlation_id` instead).
const LAUNCH_FLOW_CATS: &[&str] = &["ac2g", "async_cpu_to_gpu"];

/// What a track holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Class {
    /// A thread or a stream.
    Thread,
    /// GPU user annotations of a stream.
    Annotations,
    /// Async slices of one category.
    Async,
    /// Samples of one counter.
    Counter,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct TrackKey {
    pid: Key,
    tid: Key,
    class: Class,
}

/// A pid or tid as written, when it is absent (length 0) or 1 to 16 bytes: its length and its
/// bytes in two words (zeros past its end), which hold it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawText(u8, u64, u64);

impl RawText {
    fn of(raw: Option<Raw<'_>>) -> Option<RawText> {
        let Some(raw) = raw else {
            return Some(RawText(0, 0, 0));
        };
        let b = raw.get().as_bytes();
        if !(1..=16).contains(&b.len()) {
            return None;
        }
        let (lo, hi) = words(b);
        Some(RawText(b.len() as u8, lo, hi))
    }
}

/// Two words that, with its length, hold the whole of `b` (at most 16 bytes): its first eight
/// bytes and its last eight; of a shorter one, its first four and its last four, or its first,
/// middle and last byte. Loads of fixed sizes (a copy of any length is a call).
#[inline]
fn words(b: &[u8]) -> (u64, u64) {
    let n = b.len();
    let w8 = |at: usize| {
        b.get(at..at + 8).map_or(0, |w| {
            u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
        })
    };
    let w4 = |at: usize| {
        b.get(at..at + 4).map_or(0, |w| {
            u64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        })
    };
    match n {
        8.. => (w8(0), w8(n - 8)),
        4..=7 => (w4(0) | w4(n - 4) << 32, 0),
        1..=3 => (
            u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
            0,
        ),
        0 => (0, 0),
    }
}

/// A track by the text of its pid and tid ([`Importer::track_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawTrack(RawText, RawText, Class);

/// One event waiting for its line: times, name, and its stats in the track's buffer.
#[derive(Debug, Clone, Copy)]
struct Ev {
    start: i64,
    dur: i64,
    name: StrId,
    stats: (u32, u32),
}

#[derive(Debug, Default)]
struct Track {
    events: Vec<Ev>,
    stats: Vec<u8>,
    /// Stats added after the event's own (flow ends), by event index.
    extra: Vec<(u32, StrId, StatValue)>,
    /// Open `B` events: start, name, stats.
    open: Vec<(i64, StrId, (u32, u32))>,
    /// Whether any event has a GPU category.
    gpu: bool,
}

/// A flow point (`s`, `t` or `f`) waiting to be bound to a slice.
#[derive(Debug)]
struct FlowPoint {
    track: usize,
    ts: i64,
    id: u64,
    cat: StrId,
    ph: u8,
    enclosing: bool,
}

/// An open async slice's (process, category, id, name).
type AsyncKey = (Key, String, String, String);
/// An open async slice: start, track, name, stats.
type OpenAsync = (i64, usize, StrId, (u32, u32));
/// A line to be: sort key, name, track.
type LineOf = (i64, String, usize);

#[derive(Default)]
struct Importer {
    p: Profile,
    tracks: Vec<Track>,
    keys: Vec<TrackKey>,
    by_key: HashMap<TrackKey, usize>,
    /// The tracks last looked up by the text of their pid and tid (a few threads and streams
    /// take turns through a trace): found by comparing that text, held in words, not by
    /// reading numbers and hashing keys ([`Importer::track_of`]).
    recent: [Option<(RawTrack, usize)>; 4],
    /// The slot of `recent` filled next.
    recent_next: usize,
    process_names: HashMap<Key, String>,
    thread_names: HashMap<(Key, Key), String>,
    thread_sort: HashMap<(Key, Key), i64>,
    process_sort: HashMap<Key, i64>,
    flows: Vec<FlowPoint>,
    /// Open async slices by (pid, category, id, name): start, track, stats.
    async_open: HashMap<AsyncKey, OpenAsync>,
    device_properties: Option<serde_json::Value>,
    distributed_info: Option<serde_json::Value>,
    base_time_ns: Option<i64>,
    /// The first time read, in absolute picoseconds; times are kept relative to it.
    anchor: Option<i128>,
    seen_time: bool,
    min_ts: i64,
    max_ts: i64,
    // Counts for import warnings.
    no_time: usize,
    unknown_phase: HashMap<String, usize>,
    unmatched_end: usize,
    unclosed: usize,
    unbound_flows: usize,
    negative_dur: usize,
    /// Events a [`Skip`] left out.
    skipped: usize,
    /// The only args of slices to import ([`Skip::args_kept`]), and how many others were not.
    args_kept: Option<&'static [&'static str]>,
    args_not_read: usize,
    /// The strings the parser's second thread numbered ([`Sink::strings`]), interned.
    read_ahead: Vec<StrId>,
    /// Strings most events' stats use, interned once.
    ids: Ids,
}

/// Strings most events' stats use, interned on first use (so that a profile's strings come in
/// the order they always did) and then kept, not looked up again for each event.
#[derive(Default)]
struct Ids {
    cat: Option<StrId>,
    correlation_id: Option<StrId>,
    /// The empty string (an empty value is common: a CPU op's `Call stack`).
    empty: Option<StrId>,
    /// Categories and kept args' keys: few strings, each interned for many events, found here by
    /// comparing them (a short list) instead of hashing them again.
    few: Vec<(Box<str>, StrId)>,
    /// Short strings (1 to 32 bytes: most args' keys) by their length and bytes, which those
    /// numbers hold whole ([`Ids::short`]); `None` until the first.
    short: Option<Box<[ShortKey; SHORT]>>,
}

/// How many strings [`Ids::few`] holds.
const FEW: usize = 16;

/// Slots of [`Ids::short`].
const SHORT: usize = 256;

/// A string of 1 to 32 bytes as its length, its [`words`] (its first eight bytes and its last
/// eight, when that long), and (past 16 bytes) the eight after its first eight and the eight
/// before its last eight: together they are the whole string.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct ShortKey {
    len: u8,
    head: u64,
    tail: u64,
    mid: (u64, u64),
    id: StrId,
}

impl Ids {
    fn of(slot: &mut Option<StrId>, p: &mut Profile, s: &str) -> StrId {
        *slot.get_or_insert_with(|| p.strings.intern(s))
    }

    /// `s` interned; a short one found in a table of [`SHORT`] slots indexed by its bytes
    /// (no hashing of the string, no string compare), else through the profile's strings.
    fn short(&mut self, p: &mut Profile, s: &str) -> StrId {
        let b = s.as_bytes();
        let n = b.len();
        if !(1..=32).contains(&n) {
            return p.strings.intern(s);
        }
        let (head, tail) = words(b);
        let mid = if n > 16 {
            (words(&b[8..16]).0, words(&b[n - 16..n - 8]).0)
        } else {
            (0, 0)
        };
        let slot = ((head ^ tail.rotate_left(17) ^ mid.0.rotate_left(31) ^ n as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> 56) as usize;
        let table = self
            .short
            .get_or_insert_with(|| Box::new([ShortKey::default(); SHORT]));
        let key = ShortKey {
            len: n as u8,
            head,
            tail,
            mid,
            id: StrId(0),
        };
        // Slots go in pairs, and a string may be in either of the pair its bytes index: the
        // first holds the last string met, the second the one before it (so two strings met in
        // turn that index one pair are both kept).
        let pair = (slot % SHORT) & !1;
        let same =
            |e: &ShortKey| (e.len, e.head, e.tail, e.mid) == (key.len, key.head, key.tail, key.mid);
        for at in [pair, pair + 1] {
            if same(&table[at]) {
                return table[at].id;
            }
        }
        let id = p.strings.intern(s);
        table[pair + 1] = table[pair];
        table[pair] = ShortKey { id, ..key };
        id
    }

    /// `s` interned: a category or a kept arg's key (the first [`FEW`] of them are kept here).
    fn few(&mut self, p: &mut Profile, s: &str) -> StrId {
        if let Some((_, id)) = self.few.iter().find(|(f, _)| **f == *s) {
            return *id;
        }
        let id = p.strings.intern(s);
        if self.few.len() < FEW {
            self.few.push((s.into(), id));
        }
        id
    }
}

impl Importer {
    fn new(skip: Option<Skip>) -> Self {
        Importer {
            args_kept: skip.and_then(|s| s.args_kept),
            ..Importer::default()
        }
    }

    fn track(&mut self, key: TrackKey) -> usize {
        match self.by_key.get(&key) {
            Some(&i) => i,
            None => {
                self.tracks.push(Track::default());
                self.keys.push(key.clone());
                self.by_key.insert(key, self.tracks.len() - 1);
                self.tracks.len() - 1
            }
        }
    }

    /// The track of the event's `pid` and `tid` as written: one of the last few found by
    /// their text, else through their keys ([`Key::of`], [`Importer::track`]). The same text
    /// always reads as the same keys, so it finds the same track.
    fn track_of(&mut self, pid: Option<Raw<'_>>, tid: Option<Raw<'_>>, class: Class) -> usize {
        let raw = match (RawText::of(pid), RawText::of(tid)) {
            (Some(p), Some(t)) => Some(RawTrack(p, t, class)),
            _ => None,
        };
        if let Some(r) = raw {
            if let Some(&(_, i)) = self.recent.iter().flatten().find(|x| x.0 == r) {
                return i;
            }
        }
        let i = self.track(TrackKey {
            pid: Key::of(pid),
            tid: Key::of(tid),
            class,
        });
        if let Some(r) = raw {
            self.recent[self.recent_next] = Some((r, i));
            self.recent_next = (self.recent_next + 1) % self.recent.len();
        }
        i
    }

    /// A time relative to the first one read (absolute picoseconds exceed `i64`); `None` when
    /// more than about 100 days away from it.
    fn rel(&mut self, ps: i128) -> Option<i64> {
        let anchor = *self.anchor.get_or_insert(ps);
        i64::try_from(ps - anchor)
            .ok()
            .filter(|t| t.abs() < i64::MAX / 2)
    }

    fn note_time(&mut self, t: i64) {
        if !self.seen_time {
            self.seen_time = true;
            self.min_ts = t;
            self.max_ts = t;
        }
        self.min_ts = self.min_ts.min(t);
        self.max_ts = self.max_ts.max(t);
    }

    /// Encodes `cat`, `args` and derived stats into track `t`'s buffer; returns the range.
    fn stats(&mut self, t: usize, name: &str, cat: &str, args: Option<Args<'_, '_>>) -> (u32, u32) {
        let keep = self.args_kept;
        self.stats_keeping(t, name, cat, args, keep)
    }

    /// [`Importer::stats`], with only the args `keep` names (all without).
    fn stats_keeping(
        &mut self,
        t: usize,
        name: &str,
        cat: &str,
        args: Option<Args<'_, '_>>,
        keep: Option<&[&str]>,
    ) -> (u32, u32) {
        let lo = self.tracks[t].stats.len() as u32;
        let mut out = std::mem::take(&mut self.tracks[t].stats);
        if !cat.is_empty() {
            let k = Ids::of(&mut self.ids.cat, &mut self.p, "cat");
            let v = self.ids.few(&mut self.p, cat);
            encode_stat(&mut out, k, StatValue::Str(v));
        }
        if let Some(args) = args {
            self.args_not_read += encode_args(
                &mut self.p,
                &mut out,
                args,
                cat == "kernel" || cat == "Kernel",
                keep,
                &self.read_ahead,
                &mut self.ids,
            );
        }
        if let Some(n) = name.strip_prefix("ProfilerStep#") {
            let r = self.p.strings.intern("_r");
            encode_stat(&mut out, r, StatValue::I64(1));
            if let Ok(n) = n.trim().parse::<i64>() {
                let k = self.p.strings.intern("step_num");
                encode_stat(&mut out, k, StatValue::I64(n));
            }
        }
        let hi = out.len() as u32;
        self.tracks[t].stats = out;
        (lo, hi)
    }

    fn complete(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>, start: i64, dur: i64) {
        let name = e.name.as_deref().unwrap_or("");
        let cat = e.cat.as_deref().unwrap_or("");
        let class = if cat == "gpu_user_annotation" {
            Class::Annotations
        } else {
            Class::Thread
        };
        let t = self.track_of(e.pid, e.tid, class);
        if GPU_CATS.contains(&cat) {
            self.tracks[t].gpu = true;
        }
        self.complete_on(t, name, cat, args, start, dur);
    }
}

impl Sink for Importer {
    fn event(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
        let ph = e.ph.as_deref().unwrap_or("");
        if ph == "M" {
            self.metadata(e, args);
            return;
        }
        let Some(ts) = e.ts.and_then(micros_to_ps).and_then(|t| self.rel(t)) else {
            self.no_time += 1;
            return;
        };
        if e.skipped {
            // Left out, but its times still set the trace's span (as a full read's do).
            self.skipped += 1;
            if ph == "X" {
                let dur = e
                    .dur
                    .and_then(micros_to_ps)
                    .and_then(|d| i64::try_from(d).ok())
                    .unwrap_or(0)
                    .max(0);
                self.note_time(ts);
                self.note_time(ts.saturating_add(dur));
            }
            return;
        }
        match ph {
            "X" => {
                let mut dur = e
                    .dur
                    .and_then(micros_to_ps)
                    .and_then(|d| i64::try_from(d).ok())
                    .unwrap_or(0);
                if dur < 0 {
                    self.negative_dur += 1;
                    dur = 0;
                }
                self.args_not_read += e.args_left_out as usize;
                self.complete(e, args, ts, dur);
            }
            "B" => {
                let t = self.track_of(e.pid, e.tid, Class::Thread);
                let name = e.name.as_deref().unwrap_or("");
                let cat = e.cat.as_deref().unwrap_or("");
                let stats = self.stats(t, name, cat, args);
                let name = self.p.strings.intern(name);
                self.tracks[t].open.push((ts, name, stats));
                self.note_time(ts);
            }
            "E" => {
                let key = TrackKey {
                    pid: Key::of(e.pid),
                    tid: Key::of(e.tid),
                    class: Class::Thread,
                };
                let opened = self
                    .by_key
                    .get(&key)
                    .copied()
                    .and_then(|t| Some((t, self.tracks[t].open.pop()?)));
                match opened {
                    Some((t, (start, name, stats))) => {
                        let mut stats = stats;
                        // Args on the `E` are the slice's too.
                        if let Some(args) = args {
                            let (lo, _) = stats;
                            let mut out = std::mem::take(&mut self.tracks[t].stats);
                            if lo as usize + (stats.1 - lo) as usize == out.len() {
                                self.args_not_read += encode_args(
                                    &mut self.p,
                                    &mut out,
                                    args,
                                    false,
                                    self.args_kept,
                                    &self.read_ahead,
                                    &mut self.ids,
                                );
                                stats.1 = out.len() as u32;
                            }
                            self.tracks[t].stats = out;
                        }
                        self.tracks[t].events.push(Ev {
                            start,
                            dur: (ts - start).max(0),
                            name,
                            stats,
                        });
                        self.note_time(ts);
                    }
                    None => self.unmatched_end += 1,
                }
            }
            "i" | "I" | "R" => self.complete(e, args, ts, 0),
            "C" => {
                let name = e.name.as_deref().unwrap_or("counter");
                let t = self.track(TrackKey {
                    pid: Key::of(e.pid),
                    tid: Key::Str(name.to_string()),
                    class: Class::Counter,
                });
                // A counter's args are its values: always read.
                let stats = self.stats_keeping(t, "", "", args, None);
                let name = self.p.strings.intern(name);
                self.tracks[t].events.push(Ev {
                    start: ts,
                    dur: 0,
                    name,
                    stats,
                });
                self.note_time(ts);
            }
            "b" | "e" | "n" | "S" | "F" => {
                let cat = e.cat.as_deref().unwrap_or("").to_string();
                let name = e.name.as_deref().unwrap_or("").to_string();
                let id =
                    e.id.or(e.id2)
                        .map(|r| Key::of(Some(r)).to_string())
                        .unwrap_or_default();
                let pid = Key::of(e.pid);
                let t = self.track(TrackKey {
                    pid: pid.clone(),
                    tid: Key::Str(if cat.is_empty() {
                        "async".into()
                    } else {
                        cat.clone()
                    }),
                    class: Class::Async,
                });
                match ph {
                    "b" | "S" => {
                        let stats = self.stats(t, &name, &cat, args);
                        let n = self.p.strings.intern(&name);
                        self.async_open
                            .insert((pid, cat, id, name), (ts, t, n, stats));
                        self.note_time(ts);
                    }
                    "n" => self.complete_on(t, &name, &cat, args, ts, 0),
                    _ => {
                        // An end names its begin by (category, id) and usually the name.
                        let found = self
                            .async_open
                            .remove(&(pid.clone(), cat.clone(), id.clone(), name.clone()))
                            .or_else(|| {
                                let k = self
                                    .async_open
                                    .keys()
                                    .find(|k| k.0 == pid && k.1 == cat && k.2 == id)
                                    .cloned()?;
                                self.async_open.remove(&k)
                            });
                        match found {
                            Some((start, t, n, stats)) => {
                                self.tracks[t].events.push(Ev {
                                    start,
                                    dur: (ts - start).max(0),
                                    name: n,
                                    stats,
                                });
                                self.note_time(ts);
                            }
                            None => self.unmatched_end += 1,
                        }
                    }
                }
            }
            "s" | "t" | "f" => {
                let t = self.track_of(e.pid, e.tid, Class::Thread);
                let id = match e.id.or(e.id2).map(|r| Key::of(Some(r))) {
                    Some(Key::Num(n)) => n as u64,
                    Some(Key::Str(s)) => fnv(&s),
                    None => {
                        self.unbound_flows += 1;
                        return;
                    }
                };
                let cat = self.ids.short(&mut self.p, e.cat.as_deref().unwrap_or(""));
                self.flows.push(FlowPoint {
                    track: t,
                    ts,
                    id,
                    cat,
                    ph: ph.as_bytes()[0],
                    enclosing: ph != "f" || e.bp.as_deref() == Some("e"),
                });
            }
            other => *self.unknown_phase.entry(other.to_string()).or_default() += 1,
        }
    }

    fn strings(&mut self, new: &[std::borrow::Cow<'_, str>]) {
        for s in new {
            let id = self.p.strings.intern(s);
            self.read_ahead.push(id);
        }
    }

    fn field(&mut self, key: &str, value: &RawValue) {
        match key {
            "deviceProperties" => self.device_properties = serde_json::from_str(value.get()).ok(),
            "distributedInfo" => self.distributed_info = serde_json::from_str(value.get()).ok(),
            "baseTimeNanoseconds" => {
                self.base_time_ns = value.get().trim_matches('"').parse::<i64>().ok()
            }
            _ => {}
        }
    }
}

impl Importer {
    fn complete_on(
        &mut self,
        t: usize,
        name: &str,
        cat: &str,
        args: Option<Args<'_, '_>>,
        start: i64,
        dur: i64,
    ) {
        let stats = self.stats(t, name, cat, args);
        // (Short names, as the runtime's and most CPU ops', through the table of short strings.)
        let name = self.ids.short(&mut self.p, name);
        self.tracks[t].events.push(Ev {
            start,
            dur,
            name,
            stats,
        });
        self.note_time(start);
        self.note_time(start.saturating_add(dur));
    }

    fn metadata(&mut self, e: &RawEvent<'_>, args: Option<Args<'_, '_>>) {
        let name = e.name.as_deref().unwrap_or("");
        let arg = |k: &str| -> Option<serde_json::Value> {
            serde_json::from_str(args?.get(k)?.get()).ok()
        };
        let (pid, tid) = (Key::of(e.pid), Key::of(e.tid));
        match name {
            "process_name" => {
                if let Some(serde_json::Value::String(s)) = arg("name") {
                    self.process_names.insert(pid, s);
                }
            }
            "thread_name" => {
                if let Some(serde_json::Value::String(s)) = arg("name") {
                    self.thread_names.insert((pid, tid), s);
                }
            }
            "thread_sort_index" => {
                if let Some(n) = arg("sort_index").and_then(|v| v.as_i64()) {
                    self.thread_sort.insert((pid, tid), n);
                }
            }
            "process_sort_index" => {
                if let Some(n) = arg("sort_index").and_then(|v| v.as_i64()) {
                    self.process_sort.insert(pid, n);
                }
            }
            _ => {}
        }
    }

    /// Binds flow points to slices (after every slice is known) as extra stats.
    fn bind_flows(&mut self) {
        for t in &mut self.tracks {
            t.events
                .sort_by(|a, b| a.start.cmp(&b.start).then(b.dur.cmp(&a.dur)));
        }
        let keys = [
            self.p.strings.intern("_p"),
            self.p.strings.intern("_pt"),
            self.p.strings.intern("_c"),
            self.p.strings.intern("_ct"),
        ];
        let mut types: HashMap<StrId, i64> = HashMap::new();
        let flows = std::mem::take(&mut self.flows);
        // Made for a track when a flow point first looks for its enclosing slice there.
        let mut ends: Vec<Option<BlockEnds>> = (0..self.tracks.len()).map(|_| None).collect();
        for f in flows {
            if LAUNCH_FLOW_CATS.contains(&self.p.str(f.cat)) {
                continue;
            }
            let n = types.len() as i64 + 1;
            let ty = *types.entry(f.cat).or_insert(n);
            let ev = &self.tracks[f.track].events;
            let i = ev.partition_point(|e| e.start <= f.ts);
            let at = if f.enclosing {
                // The deepest slice covering ts: the latest-starting one that still covers it.
                match ends.get_mut(f.track) {
                    Some(e) => e.get_or_insert_with(|| BlockEnds::of(ev)).last(ev, i, f.ts),
                    None => (0..i).rev().find(|&k| ev[k].start + ev[k].dur >= f.ts),
                }
            } else {
                let j = ev.partition_point(|e| e.start < f.ts);
                (j < ev.len()).then_some(j)
            };
            let Some(at) = at else {
                self.unbound_flows += 1;
                continue;
            };
            let (kid, kty) = if f.ph == b's' {
                (keys[0], keys[1])
            } else {
                (keys[2], keys[3])
            };
            let extra = &mut self.tracks[f.track].extra;
            extra.push((at as u32, kid, StatValue::U64(f.id)));
            extra.push((at as u32, kty, StatValue::I64(ty)));
        }
    }

    fn finish_skipped(self, skip: Option<Skip>) -> Profile {
        let (skipped, args_not_read) = (self.skipped, self.args_not_read);
        let mut p = self.finish();
        if let (Some(s), true) = (skip, skipped > 0 || args_not_read > 0) {
            let args = match s.args_kept {
                Some(kept) if args_not_read > 0 => format!(
                    "; of the events read, {args_not_read} args other than {} not read",
                    kept.join(", ")
                ),
                _ => String::new(),
            };
            p.partial_read = Some(format!(
                "{skipped} events not read (complete events of {}; flows of {}){args}: the tool asked for does not use them",
                s.complete_cats.join(", "),
                s.flow_cats.join(", ")
            ));
        }
        p
    }

    fn finish(mut self) -> Profile {
        // Close what was left open at the trace's end.
        let end = self.max_ts;
        for t in &mut self.tracks {
            while let Some((start, name, stats)) = t.open.pop() {
                self.unclosed += 1;
                t.events.push(Ev {
                    start,
                    dur: (end - start).max(0),
                    name,
                    stats,
                });
            }
        }
        for (_, (start, t, name, stats)) in std::mem::take(&mut self.async_open) {
            self.unclosed += 1;
            self.tracks[t].events.push(Ev {
                start,
                dur: (end - start).max(0),
                name,
                stats,
            });
        }
        self.bind_flows();
        let origin = self.min_ts;
        let p = &mut self.p;
        p.base_time_ps = self.base_time_ns.map_or(0, |b| i128::from(b) * 1000);
        p.origin_ps = self.anchor.unwrap_or(0) + i128::from(origin) + p.base_time_ps;
        // Kineto writes wall-clock microseconds (since the epoch), or times relative to
        // `baseTimeNanoseconds`, which is.
        p.origin_is_wall_clock =
            self.base_time_ns.is_some() || p.origin_ps > 946_684_800_000_000_000_000;

        // Which processes are devices.
        let mut gpu_pids: Vec<i64> = Vec::new();
        for (k, t) in self.keys.iter().zip(&self.tracks) {
            if let (true, Key::Num(n)) = (t.gpu, &k.pid) {
                if !gpu_pids.contains(n) {
                    gpu_pids.push(*n);
                }
            }
        }
        gpu_pids.sort_unstable();
        let host_pids: Vec<Key> = {
            let mut v: Vec<Key> = self
                .keys
                .iter()
                .map(|k| k.pid.clone())
                .filter(|k| matches!(k, Key::Num(n) if !gpu_pids.contains(n)))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut overlaps = 0usize;
        let mut planes: Vec<(String, Vec<LineOf>)> = Vec::new();
        // (plane name, [(sort key, line name, track)]).
        let mut plane_of: HashMap<String, usize> = HashMap::new();
        for (ti, k) in self.keys.iter().enumerate() {
            if self.tracks[ti].events.is_empty() {
                continue;
            }
            let (plane, line, sort) = match (&k.pid, k.class) {
                (Key::Num(n), class) if gpu_pids.contains(n) => {
                    let line = match class {
                        Class::Annotations => format!("Annotations, stream {}", k.tid),
                        Class::Thread => format!("Stream #{}", k.tid),
                        Class::Async => format!("Async {}", k.tid),
                        Class::Counter => k.tid.to_string(),
                    };
                    let sort = match (&k.tid, class) {
                        (Key::Num(s), Class::Thread) => *s,
                        (Key::Num(s), _) => s.saturating_add(1 << 40),
                        _ => 1 << 50,
                    };
                    (format!("/device:GPU:{n}"), line, sort)
                }
                (Key::Num(_), class) => {
                    let base = match class {
                        Class::Thread | Class::Annotations => self
                            .thread_names
                            .get(&(k.pid.clone(), k.tid.clone()))
                            .cloned()
                            .unwrap_or_else(|| format!("thread {}", k.tid)),
                        Class::Async => format!("Async {}", k.tid),
                        Class::Counter => k.tid.to_string(),
                    };
                    let line = if host_pids.len() > 1 {
                        let pname = self
                            .process_names
                            .get(&k.pid)
                            .cloned()
                            .unwrap_or_else(|| "process".into());
                        format!("{pname} {} / {base}", k.pid)
                    } else {
                        base
                    };
                    let pos = host_pids.iter().position(|x| x == &k.pid).unwrap_or(0) as i64;
                    let within = match class {
                        Class::Thread | Class::Annotations => self
                            .thread_sort
                            .get(&(k.pid.clone(), k.tid.clone()))
                            .copied()
                            .unwrap_or(match k.tid {
                                Key::Num(t) => t,
                                _ => 0,
                            }),
                        _ => 1 << 40,
                    };
                    (
                        "/host:CPU".to_string(),
                        line,
                        (pos << 48) + (within & ((1 << 47) - 1)),
                    )
                }
                (Key::Str(s), _) => (format!("/trace:{s}"), k.tid.to_string(), 0),
            };
            let pi = *plane_of.entry(plane.clone()).or_insert_with(|| {
                planes.push((plane, Vec::new()));
                planes.len() - 1
            });
            planes[pi].1.push((sort, line, ti));
        }
        // Host first, then devices by number, then the rest.
        planes.sort_by_key(|(name, _)| {
            if name == "/host:CPU" {
                (0, 0, String::new())
            } else if let Some(n) = name.strip_prefix("/device:GPU:") {
                (1, n.parse::<i64>().unwrap_or(0), String::new())
            } else {
                (2, 0, name.clone())
            }
        });
        let mut tracks = std::mem::take(&mut self.tracks);
        for (plane_id, (pname, mut lines)) in planes.into_iter().enumerate() {
            lines.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            let mut plane = Plane {
                id: plane_id as i64,
                name: p.strings.intern(&pname),
                ..Plane::default()
            };
            let mut meta_of: HashMap<StrId, u32> = HashMap::new();
            let mut line_id = 0i64;
            for (_, lname, ti) in lines {
                let t = std::mem::take(&mut tracks[ti]);
                let lanes = build_lanes(t, origin, &mut plane, &mut meta_of);
                overlaps += lanes.len().saturating_sub(1);
                for (k, events) in lanes.into_iter().enumerate() {
                    let name = if k == 0 {
                        lname.clone()
                    } else {
                        format!("{lname} (overlap {k})")
                    };
                    let name = p.strings.intern(&name);
                    plane.lines.push(Line {
                        id: line_id,
                        display_id: line_id,
                        name,
                        display_name: name,
                        timestamp_ns: 0,
                        duration_ps: 0,
                        events,
                    });
                    line_id += 1;
                }
            }
            plane_stats(
                p,
                &mut plane,
                &pname,
                &self.device_properties,
                &self.distributed_info,
            );
            p.planes.push(plane);
        }
        let w = &mut p.import_warnings;
        if self.no_time > 0 {
            w.push(format!(
                "{} events without a readable `ts` were skipped",
                self.no_time
            ));
        }
        let mut unknown: Vec<_> = self.unknown_phase.into_iter().collect();
        unknown.sort();
        for (ph, n) in unknown {
            w.push(format!(
                "{n} events of phase `{ph}` (not read) were skipped"
            ));
        }
        if self.unmatched_end > 0 {
            w.push(format!(
                "{} end events (`E`, `e`) had no open begin and were skipped",
                self.unmatched_end
            ));
        }
        if self.unclosed > 0 {
            w.push(format!(
                "{} begin events (`B`, `b`) were never closed; they end at the trace's end",
                self.unclosed
            ));
        }
        if self.unbound_flows > 0 {
            w.push(format!(
                "{} flow events had no id or no slice to attach to and were skipped",
                self.unbound_flows
            ));
        }
        if self.negative_dur > 0 {
            w.push(format!(
                "{} events with a negative `dur` were kept with duration 0",
                self.negative_dur
            ));
        }
        if overlaps > 0 {
            w.push(format!(
                "slices that overlap without nesting were moved to {overlaps} extra lines (named `(overlap N)`)"
            ));
        }
        self.p
    }
}

/// The latest end of each block of [`BlockEnds::BLOCK`] slices of a track, to find the last slice
/// before a place that ends at or after a time (a flow point's enclosing slice) without looking
/// at every slice before it: a point that no recent slice covers (on a thread of short runtime
/// calls, only a step annotation long before does) was a scan back over the whole track.
struct BlockEnds(Vec<i64>);

impl BlockEnds {
    const BLOCK: usize = 64;

    fn of(ev: &[Ev]) -> BlockEnds {
        BlockEnds(
            ev.chunks(Self::BLOCK)
                .map(|c| c.iter().map(|e| e.start + e.dur).max().unwrap_or(i64::MIN))
                .collect(),
        )
    }

    /// The greatest `k < i` with `ev[k]` ending at or after `ts`: what
    /// `(0..i).rev().find(|&k| ev[k].start + ev[k].dur >= ts)` finds.
    fn last(&self, ev: &[Ev], i: usize, ts: i64) -> Option<usize> {
        let covers = |k: usize| ev[k].start + ev[k].dur >= ts;
        let mut k = i.min(ev.len());
        // The part of a block just below `i`, one slice at a time.
        while !k.is_multiple_of(Self::BLOCK) {
            k -= 1;
            if covers(k) {
                return Some(k);
            }
        }
        // Then whole blocks, skipping those that all end before `ts`.
        let block = (0..k / Self::BLOCK)
            .rev()
            .find(|&b| self.0.get(b).is_some_and(|&m| m >= ts))?;
        (block * Self::BLOCK..(block + 1) * Self::BLOCK)
            .rev()
            .find(|&k| covers(k))
    }
}

/// The events of one track as lines: the first holds every slice that nests; a slice that
/// overlaps without nesting goes to the next line where it nests. The track's events are sorted
/// by start, the longer first at the same start ([`Importer::bind_flows`] sorts them).
fn build_lanes(
    t: Track,
    origin: i64,
    plane: &mut Plane,
    meta_of: &mut HashMap<StrId, u32>,
) -> Vec<xlens_model::Events> {
    debug_assert!(t
        .events
        .is_sorted_by(|x, y| x.start < y.start || (x.start == y.start && x.dur >= y.dur)));
    let order = 0..t.events.len() as u32;
    let mut extra = t.extra;
    extra.sort_by_key(|x| x.0);
    // Where each event's extra stats start in `extra` (and end, at the next event's start): found
    // once, in one pass, not searched for per event (which took half of this function's time).
    let extra_from = extra_starts(&extra, t.events.len());
    // Per lane: its open slices' ends, and its events.
    let mut lanes: Vec<(Vec<i64>, Vec<u32>)> = Vec::new();
    for i in order {
        let e = &t.events[i as usize];
        let end = e.start + e.dur;
        let mut placed = false;
        for (ends, evs) in lanes.iter_mut() {
            while ends
                .last()
                .is_some_and(|&x| x <= e.start && !(x == e.start && e.dur == 0))
            {
                ends.pop();
            }
            if ends.last().is_none_or(|&x| end <= x) {
                ends.push(end);
                evs.push(i);
                placed = true;
                break;
            }
        }
        if !placed {
            lanes.push((vec![end], vec![i]));
        }
    }
    let mut out = Vec::with_capacity(lanes.len());
    for (_, evs) in lanes {
        // Room for every stat at once: a buffer grown by doubling writes twice as many fresh
        // pages.
        let stat_bytes = evs
            .iter()
            .map(|&i| {
                let e = &t.events[i as usize];
                (e.stats.1 - e.stats.0) as usize
            })
            .sum();
        let mut b = EventsBuilder::with_capacity(evs.len(), stat_bytes);
        for i in evs {
            let e = &t.events[i as usize];
            let meta = *meta_of.entry(e.name).or_insert_with(|| {
                plane.event_metadata.push(EventMetadata {
                    id: plane.event_metadata.len() as i64,
                    name: e.name,
                    display_name: e.name,
                    ..EventMetadata::default()
                });
                plane.event_metadata.len() as u32 - 1
            });
            b.push(e.start - origin, e.dur, meta);
            b.stats_encoded(&t.stats[e.stats.0 as usize..e.stats.1 as usize]);
            if let Some(range) = extra_from.get(i as usize..i as usize + 2) {
                for &(_, k, v) in &extra[range[0] as usize..range[1] as usize] {
                    b.stat(k, v);
                }
            }
        }
        out.push(b.finish());
    }
    out
}

/// For `extra` sorted by event, the place in it where the extra stats of each of `n` events
/// start, and then its length: event `i`'s are `extra[starts[i]..starts[i + 1]]`. Empty when
/// `extra` is (no event has any). Entries naming no event below `n` are in no range.
fn extra_starts(extra: &[(u32, StrId, StatValue)], n: usize) -> Vec<u32> {
    if extra.is_empty() {
        return Vec::new();
    }
    let mut starts = Vec::with_capacity(n + 1);
    let mut j = 0;
    for i in 0..=n {
        while j < extra.len() && (extra[j].0 as usize) < i {
            j += 1;
        }
        starts.push(j as u32);
    }
    starts
}

/// Stats of a plane from the trace's header: device properties on GPU planes, distributed info
/// on the host.
fn plane_stats(
    p: &mut Profile,
    plane: &mut Plane,
    name: &str,
    devices: &Option<serde_json::Value>,
    dist: &Option<serde_json::Value>,
) {
    let mut put = |p: &mut Profile, k: &str, v: &serde_json::Value| {
        let key = p.strings.intern(k);
        if let Some(v) = json_stat(p, v) {
            encode_stat(&mut plane.stats, key, v);
        }
    };
    if let Some(n) = name.strip_prefix("/device:GPU:") {
        let id: i64 = n.parse().unwrap_or(-1);
        let props = devices.as_ref().and_then(|d| d.as_array()).and_then(|a| {
            a.iter()
                .find(|x| x.get("id").and_then(|v| v.as_i64()) == Some(id))
        });
        if let Some(serde_json::Value::Object(m)) = props {
            for (k, v) in m {
                put(p, k, v);
            }
            for (from, to) in [
                ("name", "device_name"),
                ("totalGlobalMem", "memory_size"),
                ("numSms", "core_count"),
                ("computeMajor", "compute_cap_major"),
                ("computeMinor", "compute_cap_minor"),
            ] {
                if let Some(v) = m.get(from) {
                    put(p, to, v);
                }
            }
        }
    } else if name == "/host:CPU" {
        if let Some(serde_json::Value::Object(m)) = dist {
            for (k, v) in m {
                put(p, k, v);
            }
        }
    }
}

/// A JSON value as a stat: integers as `I64` (`U64` above `i64::MAX`), other numbers as `F64`,
/// strings interned, booleans as 0/1, arrays and objects as their JSON text.
fn json_stat(p: &mut Profile, v: &serde_json::Value) -> Option<StatValue> {
    use serde_json::Value as V;
    Some(match v {
        V::Null => StatValue::None,
        V::Bool(b) => StatValue::I64(i64::from(*b)),
        V::Number(n) => {
            if let Some(i) = n.as_i64() {
                StatValue::I64(i)
            } else if let Some(u) = n.as_u64() {
                StatValue::U64(u)
            } else {
                StatValue::F64(n.as_f64()?)
            }
        }
        V::String(s) => StatValue::Str(p.strings.intern(s)),
        V::Array(_) | V::Object(_) => StatValue::Str(p.strings.intern(&v.to_string())),
    })
}

/// A raw JSON value as a stat: integers as `I64` (`U64` above `i64::MAX`), other numbers as
/// `F64`, strings interned, booleans as 0/1, null as no value, arrays and objects as their JSON
/// text.
fn raw_stat(p: &mut Profile, v: Raw<'_>, ids: &mut Ids) -> StatValue {
    match value_of(v.get()) {
        Value::None => StatValue::None,
        Value::I64(x) => StatValue::I64(x),
        Value::U64(x) => StatValue::U64(x),
        Value::F64(x) => StatValue::F64(x),
        // (Short ones, names and the like, through the table of short strings.)
        Value::Str(s) if s.is_empty() => StatValue::Str(Ids::of(&mut ids.empty, p, "")),
        Value::Str(s) => StatValue::Str(ids.short(p, &s)),
    }
}

/// Encodes an event's `args` object as stats, in the order written; with `kernel`, also
/// `kernel_details` in XSpace's form. `correlation` adds `correlation_id`. With `keep`, only
/// the args it names (and no `kernel_details`); returns how many were left out.
fn encode_args(
    p: &mut Profile,
    out: &mut Vec<u8>,
    args: Args<'_, '_>,
    kernel: bool,
    keep: Option<&[&str]>,
    read_ahead: &[StrId],
    ids: &mut Ids,
) -> usize {
    let map = args.pairs;
    if let Some(keep) = keep {
        let mut left_out = 0;
        for (k, v) in map {
            if keep.contains(&k.as_ref()) {
                let key = ids.few(p, k);
                let sv = raw_stat(p, *v, ids);
                encode_stat_arg(p, out, k, key, sv, ids);
            } else {
                left_out += 1;
            }
        }
        return left_out;
    }
    match args.pre {
        Some(pre) if pre.len() == map.len() => {
            for ((k, v), a) in map.iter().zip(pre) {
                let id = |i: u32| read_ahead.get(i as usize).copied();
                let value = match a.value {
                    PreValue::None => Some(StatValue::None),
                    PreValue::I64(x) => Some(StatValue::I64(x)),
                    PreValue::U64(x) => Some(StatValue::U64(x)),
                    PreValue::F64(x) => Some(StatValue::F64(x)),
                    PreValue::Str(i) => id(i).map(StatValue::Str),
                };
                match (id(a.key), value) {
                    (Some(key), Some(value)) => encode_stat_arg(p, out, k, key, value, ids),
                    // Numbers the second thread never sent (cannot happen): read it here.
                    _ => encode_arg(p, out, k, *v, ids),
                }
            }
        }
        _ => {
            for (k, v) in map {
                encode_arg(p, out, k, *v, ids);
            }
        }
    }
    if kernel {
        let get = |k: &str| map.iter().find(|x| x.0 == k).map(|x| x.1.get());
        // (Room for the details of any kernel seen: one allocation.)
        let mut s = String::with_capacity(128);
        // As `r as i64` of the number read as a float (and, for the occupancy, the float as
        // displayed): an integer written plainly is copied as it is written.
        if let Some(r) = get("registers per thread") {
            number_into(&mut s, "regs:", r, true);
        }
        if let Some(m) = get("shared memory") {
            if number_into(&mut s, "static_shared:", m, true) {
                s.truncate(s.len() - 1);
                s.push_str(" dynamic_shared:0 ");
            }
        }
        if let Some(g) = get("grid") {
            list_into(&mut s, "grid:", g);
        }
        if let Some(b) = get("block") {
            list_into(&mut s, "block:", b);
        }
        if let Some(o) = get("est. achieved occupancy %") {
            number_into(&mut s, "occ_pct:", o, false);
        }
        let s = s.trim_end();
        if !s.is_empty() {
            let k = p.strings.intern("kernel_details");
            let v = p.strings.intern(s);
            encode_stat(out, k, StatValue::Str(v));
        }
    }
    0
}

/// `raw` as a plain JSON integer of at most 15 digits (exact as an `f64`, which writes it as it
/// is written); `None` for anything else (a fraction, an exponent, leading zeros, `-0`, white
/// space, a string).
fn plain_int(raw: &str) -> Option<&str> {
    let digits = raw.strip_prefix('-').unwrap_or(raw).as_bytes();
    let ok = match digits {
        [b'0'] => digits.len() == raw.len(),
        [b'1'..=b'9', rest @ ..] => rest.len() < 15 && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    ok.then_some(raw)
}

/// Appends `label`, the number `raw` and a space, as `{label}{v as i64} ` (with `int`) or
/// `{label}{v}` of `v`, the number read as a float; nothing when it is not a number. Returns
/// whether it appended.
fn number_into(s: &mut String, label: &str, raw: &str, int: bool) -> bool {
    use std::fmt::Write;
    s.push_str(label);
    if let Some(n) = plain_int(raw) {
        s.push_str(n);
    } else if let Ok(v) = raw.parse::<f64>() {
        // (Writing to a `String` cannot fail.)
        let _ = if int {
            write!(s, "{}", v as i64)
        } else {
            write!(s, "{v}")
        };
    } else {
        s.truncate(s.len() - label.len());
        return false;
    }
    if int {
        s.push(' ');
    }
    true
}

/// Appends `label`, the [`int_list`] of `raw` and a space; nothing when it is not one.
fn list_into(s: &mut String, label: &str, raw: &str) {
    let at = s.len();
    s.push_str(label);
    if int_list_into(s, raw) {
        s.push(' ');
    } else {
        s.truncate(at);
    }
}

/// The integers of the JSON array `raw` (`[512, 1, 1]`) joined by commas (`512,1,1`); `None`
/// for anything else (other values in it, or not an array). What serde_json reading it as
/// `Vec<i64>` and a `join` gave, without either (a kernel's grid and block were most of its
/// import).
#[cfg(test)]
fn int_list(raw: &str) -> Option<String> {
    let mut out = String::new();
    int_list_into(&mut out, raw).then_some(out)
}

/// [`int_list`], appended to `out`; returns whether `raw` was such a list (when not, what it
/// appended is left for the caller to cut).
fn int_list_into(out: &mut String, raw: &str) -> bool {
    let ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    let Some(inner) = raw
        .trim_matches(ws)
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
    else {
        return false;
    };
    if inner.trim_matches(ws).is_empty() {
        return true;
    }
    for (k, item) in inner.split(',').enumerate() {
        let n = item.trim_matches(ws);
        // A JSON integer: no `+`, no leading zeros, no fraction or exponent (and not `-0`,
        // which serde_json reads as a float); within an `i64`, it is written as it reads.
        let digits = n.strip_prefix('-').unwrap_or(n).as_bytes();
        let json = match digits {
            [b'0'] => digits.len() == n.len(),
            [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
            _ => false,
        };
        if !json || n.parse::<i64>().is_err() {
            return false;
        }
        if k > 0 {
            out.push(',');
        }
        out.push_str(n);
    }
    true
}

/// One arg as a stat (`correlation` adds `correlation_id`).
fn encode_arg(p: &mut Profile, out: &mut Vec<u8>, k: &str, v: Raw<'_>, ids: &mut Ids) {
    let key = ids.short(p, k);
    let sv = raw_stat(p, v, ids);
    encode_stat_arg(p, out, k, key, sv, ids);
}

/// [`encode_arg`] of the arg `k` (interned as `key`) whose value is `sv`.
fn encode_stat_arg(
    p: &mut Profile,
    out: &mut Vec<u8>,
    k: &str,
    key: StrId,
    sv: StatValue,
    ids: &mut Ids,
) {
    encode_stat(out, key, sv);
    if k == "correlation" {
        if let StatValue::I64(c) = sv {
            let key = Ids::of(&mut ids.correlation_id, p, "correlation_id");
            encode_stat(out, key, StatValue::I64(c));
        }
    }
}

/// FNV-1a of a string id (flow ids written as strings).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each event's extra stats, by hand: events 0 and 3 of 5 have none, 1 has two, 2 and 4
    /// one; an entry naming event 7 (of none here) is in no event's range.
    #[test]
    fn extra_stats_are_found_by_event() {
        let k = StrId::default();
        let v = |n: i64| StatValue::I64(n);
        let extra = [
            (1, k, v(10)),
            (1, k, v(11)),
            (2, k, v(20)),
            (4, k, v(40)),
            (7, k, v(70)),
        ];
        let starts = extra_starts(&extra, 5);
        let of = |i: usize| -> Vec<StatValue> {
            extra[starts[i] as usize..starts[i + 1] as usize]
                .iter()
                .map(|x| x.2)
                .collect()
        };
        assert_eq!(of(0), vec![]);
        assert_eq!(of(1), vec![v(10), v(11)]);
        assert_eq!(of(2), vec![v(20)]);
        assert_eq!(of(3), vec![]);
        assert_eq!(of(4), vec![v(40)]);
        assert_eq!(starts.len(), 6);
        assert!(extra_starts(&[], 5).is_empty());
    }

    /// Strings interned through the table of short ones get the ids interning them directly
    /// gives, in the same order, however their slots collide: keys of every length from 1 to
    /// 40 bytes, differing in their first, middle or last byte, and many that differ only past
    /// their first eight bytes, met in turn and again.
    #[test]
    fn short_strings_intern_as_the_profile_interns_them() {
        let (mut a, mut b) = (Profile::default(), Profile::default());
        let mut ids = Ids::default();
        let mut keys = Vec::new();
        for n in 1..=40usize {
            for c in [b'a', b'b', b'z'] {
                for at in [0, n / 2, n - 1] {
                    let mut k = vec![b'k'; n];
                    k[at] = c;
                    keys.push(String::from_utf8(k).expect("ascii"));
                }
            }
        }
        // Many keys with the same length and first eight bytes, more than there are slots; and
        // (past 16 bytes) with the same first and last eight, differing only between them.
        for n in 9..=32usize {
            for t in 0..200 {
                keys.push(format!("kkkkkkkk{t:0w$}", w = n - 8));
                if n >= 18 {
                    keys.push(format!("kkkkkkkk{t:0w$}zzzzzzzz", w = n - 16));
                }
            }
        }
        for round in 0..3 {
            for (i, k) in keys.iter().enumerate() {
                // Each round in another order.
                let k = if round == 1 {
                    &keys[keys.len() - 1 - i]
                } else {
                    k
                };
                assert_eq!(ids.short(&mut a, k), b.strings.intern(k), "{k}");
            }
        }
        assert_eq!(a.strings.len(), b.strings.len());
        for k in &keys {
            assert_eq!(a.strings.find(k), b.strings.find(k), "{k}");
        }
    }

    /// Two strings of one length up to 16 bytes that differ in any one byte, or in any two,
    /// have different [`words`].
    #[test]
    fn words_hold_a_short_string_whole() {
        for n in 0..=16usize {
            let base: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
            let mut seen = std::collections::HashMap::new();
            seen.insert(words(&base), base.clone());
            let bytes = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, b'a'];
            for i in 0..n {
                for j in i..n {
                    for (c, d) in bytes.iter().flat_map(|&c| bytes.map(|d| (c, d))) {
                        let mut t = base.clone();
                        t[i] = c;
                        t[j] = d;
                        if let Some(other) = seen.insert(words(&t), t.clone()) {
                            assert_eq!(other, t, "length {n}");
                        }
                    }
                }
            }
        }
    }

    /// Tracks found by the text of their pid and tid are the tracks their keys find: for
    /// numbers, numbers written as strings, strings, null, absent ids and texts too long to be
    /// held in words, met in turn and again, in three classes.
    #[test]
    fn tracks_by_text_are_the_tracks_by_key() {
        let ids = [
            None,
            Some("0"),
            Some("7"),
            Some("\"7\""),
            Some("-549452224"),
            Some("2910249"),
            Some("\"stream 7\""),
            Some("\"stream 8\""),
            Some("null"),
            Some("12345678901234567"),
            Some("\"a name longer than sixteen\""),
            Some("7.0"),
        ];
        let ids: Vec<Option<Box<RawValue>>> = ids
            .iter()
            .map(|t| t.map(|t| RawValue::from_string(t.to_string()).expect("JSON")))
            .collect();
        let mut a = Importer::default();
        let mut b = Importer::default();
        for round in 0..4 {
            for (n, pid) in ids.iter().enumerate() {
                for (m, tid) in ids.iter().enumerate() {
                    if (n + m + round) % 3 == 0 {
                        continue;
                    }
                    for class in [Class::Thread, Class::Annotations, Class::Async] {
                        let (p, t) = (pid.as_deref().map(Raw::from), tid.as_deref().map(Raw::from));
                        let by_key = b.track(TrackKey {
                            pid: Key::of(p),
                            tid: Key::of(t),
                            class,
                        });
                        assert_eq!(a.track_of(p, t, class), by_key, "{pid:?} {tid:?}");
                    }
                }
            }
        }
        assert_eq!(a.keys, b.keys);
    }

    /// A kernel's grid and block read as serde_json reads them into `Vec<i64>`, joined by commas:
    /// on the forms Kineto writes and on every other form nearby (floats, exponents, `+`, leading
    /// zeros, empty items, nesting, strings, overflow, white space of JSON and not).
    #[test]
    fn int_lists_as_serde_json_reads_them() {
        let serde = |t: &str| -> Option<String> {
            let v: Vec<i64> = serde_json::from_str(t).ok()?;
            Some(v.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
        };
        let cases = [
            "[512, 1, 1]",
            "[1,2,3]",
            "[]",
            "[ ]",
            " [ 7 ] ",
            "[\n1,\t2\r]",
            "[-0]",
            "[-5, 0, 9223372036854775807, -9223372036854775808]",
            "[9223372036854775808]",
            "[-9223372036854775809]",
            "[1.0]",
            "[1e2]",
            "[+1]",
            "[01]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[[1]]",
            "[\"1\"]",
            "[null]",
            "[-]",
            "[1]x",
            "{}",
            "[\u{a0}1]",
            "1",
            "",
        ];
        for c in cases {
            assert_eq!(int_list(c), serde(c), "{c:?}");
        }
        assert_eq!(int_list("[512, 1, 1]").as_deref(), Some("512,1,1"));
    }

    /// A kernel's registers, shared memory and occupancy are written as the number read as a
    /// float and formatted (as an `i64`, or as the float) wrote them, for any form of it.
    #[test]
    fn kernel_numbers_as_formatting_the_float_writes_them() {
        let cases = [
            "32",
            "0",
            "-0",
            "-5",
            "032",
            "1e3",
            "12.5",
            "100",
            "0.0",
            "123456789012345",
            "999999999999999",
            "1234567890123456",
            "12345678901234567890",
            "-123456789012345",
            "\"32\"",
            "NaN",
            "inf",
            "null",
            "true",
            " 7",
            "7 ",
            "",
            "-",
            "4224",
            "1.5e-7",
        ];
        for raw in cases {
            for int in [true, false] {
                let mut s = String::from("x ");
                let wrote = number_into(&mut s, "regs:", raw, int);
                let want = match raw.parse::<f64>() {
                    Ok(v) if int => format!("x regs:{} ", v as i64),
                    Ok(v) => format!("x regs:{v}"),
                    Err(_) => "x ".to_string(),
                };
                assert_eq!(s, want, "{raw:?} {int}");
                assert_eq!(wrote, raw.parse::<f64>().is_ok(), "{raw:?}");
            }
        }
        let mut s = String::from("a ");
        list_into(&mut s, "grid:", "[1,x]");
        list_into(&mut s, "block:", "[128, 1, 1]");
        assert_eq!(s, "a block:128,1,1 ");
    }

    /// The block search finds the slice a scan back over every slice finds, for every place and
    /// time, on tracks of nested, overlapping and far-apart slices across several blocks.
    #[test]
    fn block_ends_find_what_a_scan_back_finds() {
        let mut seed = 7u64;
        let mut next = move |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        for len in [0usize, 1, 63, 64, 65, 200, 700] {
            let mut ev: Vec<Ev> = (0..len)
                .map(|_| {
                    // Mostly short slices, some long ones (a step) that cover many after them.
                    let dur = if next(20) == 0 { next(5_000) } else { next(30) } as i64;
                    Ev {
                        start: next(10_000) as i64,
                        dur,
                        name: StrId(0),
                        stats: (0, 0),
                    }
                })
                .collect();
            ev.sort_by(|a, b| a.start.cmp(&b.start).then(b.dur.cmp(&a.dur)));
            let ends = BlockEnds::of(&ev);
            // Times between slices' ends, and on them (a slice ending exactly at `ts` covers it).
            let mut times: Vec<i64> = (-10..15_050).step_by(97).collect();
            times.extend(ev.iter().step_by(5).flat_map(|e| {
                let end = e.start + e.dur;
                [end - 1, end, end + 1]
            }));
            for i in 0..=len + 1 {
                for &ts in &times {
                    let want = (0..i.min(len))
                        .rev()
                        .find(|&k| ev[k].start + ev[k].dur >= ts);
                    assert_eq!(ends.last(&ev, i, ts), want, "len {len} i {i} ts {ts}");
                }
            }
        }
    }
}
