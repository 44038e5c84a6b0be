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

mod args;
mod finish;
mod ids;
mod json;
mod sink;

use args::*;
use hashbrown::HashMap;
use ids::*;
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

#[cfg(test)]
mod tests;
