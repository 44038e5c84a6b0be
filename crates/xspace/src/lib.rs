//! XSpace importer: decodes `tensorflow.profiler.XSpace` bytes straight into an xlens [`Profile`].
//!
//! This is a hand-written, zero-copy walker over the protobuf wire format (field numbers from
//! `crates/proto/proto/xplane.proto`; fields read with `xlens_wire`'s cursor, an event's fields
//! first in the order producers write them, by header byte): it never materialises the message
//! tree, so it runs at memory speed and holds little more than the finished model. Metadata is read before the lines
//! of each plane, so stat keys and reference values are resolved to interned names as events are
//! decoded. Decoding errors carry the byte offset where decoding failed and never panic.

mod wire;

use hashbrown::HashMap;
use std::fmt;
use wire::{Reader, Res};
use xlens_model::{
    encode_int_raw, encode_int_raw_long, encode_ref_pre, encode_stat, BlobId, EventMetadata,
    EventsBuilder, Line, Plane, PreKey, PreRef, Profile, StatValue, StrId,
};
use xlens_wire::WireType;

/// Why a byte string is not a readable XSpace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the input where decoding failed.
    pub offset: u64,
    pub message: String,
    /// The message type being decoded there (e.g. `XEvent`).
    pub context: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a valid XSpace: at byte {} (in {}): {}",
            self.offset, self.context, self.message
        )
    }
}

impl std::error::Error for DecodeError {}

impl From<xlens_wire::Error> for DecodeError {
    fn from(e: xlens_wire::Error) -> Self {
        DecodeError {
            offset: e.offset,
            message: e.message,
            context: e.context,
        }
    }
}

/// Decodes a whole XSpace.
pub fn decode(bytes: &[u8]) -> Result<Profile, DecodeError> {
    decode_with(bytes, &|_, _| {})
}

/// Decodes a whole XSpace, telling `consumed(start, end)` whenever the bytes in `start..end` will
/// not be read again (so a memory-mapped caller can release those pages as it goes). Large planes
/// have their lines decoded on several threads, so `consumed` may be called from any of them and
/// in any order; the ranges never overlap (with [`Release::AsRead`], a line's whole range comes
/// after the steps it was given back in).
pub fn decode_with(
    bytes: &[u8],
    consumed: &(dyn Fn(usize, usize) + Sync),
) -> Result<Profile, DecodeError> {
    let threads = xlens_model::threads::available();
    decode_inner(
        bytes,
        consumed,
        threads,
        PARALLEL_MIN_BYTES,
        LeaveOut::default(),
        Release::Lines,
    )
    .map_err(|e| DecodeError::from(*e))
}

/// [`decode_with`], leaving out what `leave` names (for a reader that does not use it, such as
/// a host's summary). Plane and metadata stats are read in full.
pub fn decode_leaving_out(
    bytes: &[u8],
    consumed: &(dyn Fn(usize, usize) + Sync),
    leave: LeaveOut<'_>,
    release: Release<'_>,
) -> Result<Profile, DecodeError> {
    let threads = xlens_model::threads::available();
    decode_options(bytes, consumed, threads, PARALLEL_MIN_BYTES, leave, release)
}

/// What a decode leaves out of the events' stats ([`decode_leaving_out`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct LeaveOut<'a> {
    /// Event stats by name, passed over (their values not checked) and not stored;
    /// [`Profile::stats_left_out`] and [`Profile::partial_read`] say how many. Flow stats are
    /// never left out this way.
    pub stats: &'a [&'a str],
    /// Flow stats (`_p`, `_pt`, `_c`, `_ct`), kept only in each line's list of flow ends
    /// ([`xlens_model::Flows::not_in_stats`]), for a reader that follows flows through the list
    /// alone: the stats it scans are shorter. Planes whose event metadata carry flow stats
    /// keep them in the stats as usual. A flow end whose type does not fit the list (beyond 32
    /// bits) is then left out, with an import warning that counts them.
    pub flow_stats: bool,
}

/// When the decoder tells its caller that bytes will not be read again.
#[derive(Clone, Copy)]
pub enum Release<'a> {
    /// Once each line (and plane) is decoded: for bytes that cannot be read again once given
    /// back (a copy in memory, whose released pages read as zeros). A line that a parallel
    /// worker cannot finish is decoded again from its start, which needs its bytes.
    Lines,
    /// Also within a line as its events are read, every [`RELEASE_STEP`] bytes: for bytes that
    /// read the same after being given back (a file mapping, faulted in again from the page
    /// cache), so a large line's pages never pile up. `ahead(start, end)`, when given, is told
    /// of the next step's bytes before they are read (a mapping can bring their pages in at
    /// once instead of one fault at a time).
    AsRead {
        ahead: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    },
}

/// A line's bytes as it is read ([`Release::AsRead`]): given back behind the reader, announced
/// ahead of it.
#[derive(Clone, Copy)]
struct Steps<'a> {
    give_back: &'a (dyn Fn(usize, usize) + Sync),
    ahead: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

impl<'a> Steps<'a> {
    fn of(release: Release<'a>, consumed: &'a (dyn Fn(usize, usize) + Sync)) -> Option<Steps<'a>> {
        match release {
            Release::Lines => None,
            Release::AsRead { ahead } => Some(Steps {
                give_back: consumed,
                ahead,
            }),
        }
    }
}

/// Within a line, bytes are given back in steps of this size ([`Release::AsRead`]).
pub const RELEASE_STEP: usize = 4 << 20;

/// [`decode_leaving_out`] with the thread count and the parallel plane size of
/// [`decode_with_threads`].
#[doc(hidden)]
pub fn decode_options(
    bytes: &[u8],
    consumed: &(dyn Fn(usize, usize) + Sync),
    threads: usize,
    parallel_min_bytes: usize,
    leave: LeaveOut<'_>,
    release: Release<'_>,
) -> Result<Profile, DecodeError> {
    decode_inner(bytes, consumed, threads, parallel_min_bytes, leave, release)
        .map_err(|e| DecodeError::from(*e))
}

/// [`decode_with`] with the thread count and the plane size from which lines are decoded in
/// parallel given explicitly (for tests that compare both paths).
#[doc(hidden)]
pub fn decode_with_threads(
    bytes: &[u8],
    consumed: &(dyn Fn(usize, usize) + Sync),
    threads: usize,
    parallel_min_bytes: usize,
) -> Result<Profile, DecodeError> {
    decode_inner(
        bytes,
        consumed,
        threads,
        parallel_min_bytes,
        LeaveOut::default(),
        Release::Lines,
    )
    .map_err(|e| DecodeError::from(*e))
}

fn decode_inner(
    bytes: &[u8],
    consumed: &(dyn Fn(usize, usize) + Sync),
    threads: usize,
    parallel_min_bytes: usize,
    leave: LeaveOut<'_>,
    release: Release<'_>,
) -> Res<Profile> {
    if bytes.is_empty() {
        return Err(Box::new(xlens_wire::Error {
            offset: 0,
            message: "the file is empty".into(),
            context: "XSpace",
        }));
    }
    let mut prof = Profile::default();
    // Interned first, the stat names most events carry get ids below 16, so each of their stats
    // takes a one-byte header in the model (one byte less to store and to read, per stat).
    for name in HOT_STAT_NAMES {
        prof.strings.intern(name);
    }
    debug_assert!(FLOW_KEYS
        .iter()
        .zip(["_p", "_pt", "_c", "_ct"])
        .all(|(k, name)| prof.strings.get(*k) == name));
    let mut d = Decoder {
        prof,
        warn: Warnings::default(),
        consumed,
        threads,
        parallel_min_bytes,
        leave,
        stats_left_out: 0,
        flows_only_lines: 0,
        release,
    };
    let mut r = Reader::new(bytes, 0, "XSpace");
    while let Some((num, wire)) = r.field()? {
        match num {
            1 => {
                r.expect(num, wire, WireType::Len)?;
                let plane = r.message("XPlane")?;
                let (start, end) = (plane.offset(), plane.offset() + plane.rest().len());
                d.plane(plane)?;
                // Everything of the plane has been copied into the model.
                consumed(start, end);
            }
            2..=4 => {
                r.expect(num, wire, WireType::Len)?;
                let s = d.string(&mut r)?;
                let s = d.prof.strings.get(s).to_string();
                match num {
                    2 => d.prof.errors.push(s),
                    3 => d.prof.warnings.push(s),
                    _ => d.prof.hostnames.push(s),
                }
            }
            _ => r.skip(num, wire)?,
        }
    }
    if d.prof.planes.is_empty() {
        return Err(Box::new(xlens_wire::Error {
            offset: 0,
            message: format!(
                "no XPlane in {} bytes; expected a tensorflow.profiler.XSpace (an .xplane.pb file)",
                bytes.len()
            ),
            context: "XSpace",
        }));
    }
    let mut prof = d.prof;
    // Callers that ask for parallel decoding of everything (tests) get parallel placing too.
    let place_min = if d.parallel_min_bytes == 0 {
        0
    } else {
        PARALLEL_PLACE_EVENTS
    };
    place_lines_on_one_axis(&mut prof, &mut d.warn, d.threads, place_min);
    prof.import_warnings = d.warn.into_messages();
    let mut partial = Vec::new();
    if d.stats_left_out > 0 {
        prof.stats_left_out = d.stats_left_out;
        partial.push(format!(
            "{} event stats not read ({})",
            d.stats_left_out,
            d.leave.stats.join(", ")
        ));
    }
    if d.flows_only_lines > 0 {
        partial.push(format!(
            "flow stats (_p, _pt, _c, _ct) kept only as the flow lists of {} lines",
            d.flows_only_lines
        ));
    }
    if !partial.is_empty() {
        prof.partial_read = Some(format!(
            "{}: what was asked for does not use them",
            partial.join("; ")
        ));
    }
    Ok(prof)
}

#[derive(Default)]
struct Warnings {
    unknown_stat_ids: u64,
    unknown_event_metadata: u64,
    invalid_utf8: u64,
    unlisted_flow_ends: u64,
    clamped_lines: Vec<String>,
}

impl Warnings {
    fn into_messages(self) -> Vec<String> {
        let mut out = Vec::new();
        if self.unknown_stat_ids > 0 {
            out.push(format!(
                "{} stats referred to a stat metadata id the plane does not define; they are kept under the name `<stat ID>`",
                self.unknown_stat_ids
            ));
        }
        if self.unknown_event_metadata > 0 {
            out.push(format!(
                "{} event metadata ids were used by events but not defined by their plane; those events are kept under the name `<metadata ID>`",
                self.unknown_event_metadata
            ));
        }
        if self.invalid_utf8 > 0 {
            out.push(format!(
                "{} strings were not valid UTF-8; invalid bytes were replaced with U+FFFD",
                self.invalid_utf8
            ));
        }
        if self.unlisted_flow_ends > 0 {
            out.push(format!(
                "{} flow ends had a type beyond 32 bits; read with flow stats kept only as flow lists, which cannot hold such a type, they were left out",
                self.unlisted_flow_ends
            ));
        }
        out.extend(self.clamped_lines);
        out
    }
}

/// Wall-clock times below this (about 11.6 days after the epoch) are offsets from a profile start.
const NORMALIZED_BELOW_NS: i64 = 1_000_000_000_000_000;

/// Events were decoded with starts relative to their line's `timestamp_ns`; put every line on one
/// picosecond axis whose 0 is the earliest event, and find what that 0 is in wall-clock time.
///
/// Current TSL profilers write line timestamps relative to the session start (recorded as
/// `profile_start_time` on the `Task Environment` plane); older ones wrote wall-clock times.
///
/// Each line is moved once, by its offset from the earliest line and the earliest event
/// together, lines shared between `threads` when there are `parallel_min_events` or more (the
/// starts of a large profile are tens of MB).
fn place_lines_on_one_axis(
    prof: &mut Profile,
    warn: &mut Warnings,
    threads: usize,
    parallel_min_events: usize,
) {
    let origin_ns = prof
        .planes
        .iter()
        .flat_map(|p| p.lines.iter())
        .filter(|l| !l.events.is_empty())
        .map(|l| l.timestamp_ns)
        .min()
        .unwrap_or(0);
    // Each line's offset on the common axis (`None`: too far from the others to share it; its
    // events stay at their offsets from the profile start).
    let mut offsets: Vec<Option<i64>> = Vec::new();
    for line in prof.planes.iter().flat_map(|p| p.lines.iter()) {
        if line.events.is_empty() {
            offsets.push(None);
            continue;
        }
        let delta = (line.timestamp_ns as i128 - origin_ns as i128) * 1000;
        offsets.push(i64::try_from(delta).ok());
        if i64::try_from(delta).is_err() {
            warn.clamped_lines.push(format!(
                "line `{}` starts at {} ns, too far from the profile's other lines (earliest {} ns) to share a picosecond time axis; its events are placed at their offsets from the profile start",
                prof.strings.get(line.name),
                line.timestamp_ns,
                origin_ns
            ));
        }
    }
    prof.origin_ps = origin_ns as i128 * 1000;
    prof.origin_is_wall_clock = origin_ns >= NORMALIZED_BELOW_NS;
    if !prof.origin_is_wall_clock {
        let start = prof.strings.find("profile_start_time").and_then(|k| {
            prof.planes
                .iter()
                .find(|p| prof.strings.get(p.name) == "Task Environment")
                .and_then(|p| p.stats().get(k))
                .and_then(|v| v.as_i64())
        });
        if let Some(start) = start.filter(|s| *s >= NORMALIZED_BELOW_NS) {
            prof.origin_ps += start as i128 * 1000;
            prof.origin_is_wall_clock = true;
        }
    }
    // The earliest start once the lines are placed (a line's first: starts are sorted) becomes
    // the axis's 0.
    let lines = prof.planes.iter_mut().flat_map(|p| p.lines.iter_mut());
    let jobs: Vec<(&mut xlens_model::Events, Option<i64>)> = lines
        .zip(offsets)
        .map(|(l, d)| (&mut l.events, d))
        .filter(|(ev, _)| !ev.is_empty())
        .collect();
    let Some(min) = jobs
        .iter()
        .filter_map(|(ev, d)| Some(ev.starts().first()?.saturating_add(d.unwrap_or(0))))
        .min()
    else {
        return;
    };
    prof.origin_ps += min as i128;
    let place = |ev: &mut xlens_model::Events, d: Option<i64>| {
        let d = d.unwrap_or(0);
        // One pass when no start saturates on the way (then the sum is exact).
        let (first, last) = (ev.starts()[0], ev.starts()[ev.len() - 1]);
        let exact = first.checked_add(d).is_some()
            && last
                .checked_add(d)
                .and_then(|l| l.checked_sub(min))
                .is_some();
        match i64::try_from(d as i128 - min as i128) {
            Ok(both) if exact => ev.shift(both),
            _ => {
                ev.shift(d);
                match min.checked_neg() {
                    Some(x) => ev.shift(x),
                    // `-i64::MIN` does not fit: the same amount in two steps.
                    None => {
                        ev.shift(i64::MAX);
                        ev.shift(1);
                    }
                }
            }
        }
        // The line's span, while its starts are in cache and on this line's thread (read
        // alone, after everything parallel, it held up a summary by a few ms).
        let _ = ev.span();
    };
    let events: usize = jobs.iter().map(|j| j.0.len()).sum();
    if threads > 1 && events >= parallel_min_events && jobs.len() > 1 {
        let costs: Vec<usize> = jobs.iter().map(|j| j.0.len()).collect();
        let (a, b) = xlens_model::balance::split_jobs(jobs, &costs);
        std::thread::scope(|s| {
            s.spawn(|| a.into_iter().for_each(|(ev, d)| place(ev, d)));
            b.into_iter().for_each(|(ev, d)| place(ev, d));
        });
    } else {
        jobs.into_iter().for_each(|(ev, d)| place(ev, d));
    }
}

/// Profiles with fewer events have their lines placed on one thread.
const PARALLEL_PLACE_EVENTS: usize = 1 << 18;

/// Maps producer ids to dense indices or interned names.
enum IdMap {
    Dense(Vec<u32>),
    Sparse(HashMap<i64, u32>),
}

impl IdMap {
    const NONE: u32 = u32::MAX;

    fn build(pairs: &[(i64, u32)]) -> IdMap {
        let max = pairs.iter().map(|p| p.0).max().unwrap_or(0);
        let min = pairs.iter().map(|p| p.0).min().unwrap_or(0);
        if min >= 0 && max < (pairs.len() as i64 * 4 + 4096) {
            let mut v = vec![Self::NONE; max as usize + 1];
            for &(k, x) in pairs {
                v[k as usize] = x;
            }
            IdMap::Dense(v)
        } else {
            IdMap::Sparse(pairs.iter().copied().collect())
        }
    }

    #[inline(always)]
    fn get(&self, id: i64) -> Option<u32> {
        match self {
            IdMap::Dense(v) => {
                let x = *v.get(usize::try_from(id).ok()?)?;
                (x != Self::NONE).then_some(x)
            }
            IdMap::Sparse(m) => m.get(&id).copied(),
        }
    }

    /// One past the largest id a dense map can hold (for a sparse one, its largest id).
    fn upper(&self) -> usize {
        match self {
            IdMap::Dense(v) => v.len(),
            IdMap::Sparse(m) => m.keys().max().map_or(0, |&k| {
                usize::try_from(k).map_or(0, |k| k.saturating_add(1))
            }),
        }
    }

    /// Adds an id that is not in the map yet; `entries` is the number of ids it will then hold
    /// (a dense map stays within the size bound of [`IdMap::build`]).
    fn insert(&mut self, id: i64, x: u32, entries: usize) {
        if let IdMap::Dense(v) = self {
            match usize::try_from(id) {
                Ok(i) if i < v.len() => {
                    v[i] = x;
                    return;
                }
                Ok(i) if (i as u64) < entries as u64 * 4 + 4096 => {
                    v.resize(i + 1, Self::NONE);
                    v[i] = x;
                    return;
                }
                _ => {
                    let m = v
                        .iter()
                        .enumerate()
                        .filter(|&(_, &x)| x != Self::NONE)
                        .map(|(i, &x)| (i as i64, x))
                        .collect();
                    *self = IdMap::Sparse(m);
                }
            }
        }
        if let IdMap::Sparse(m) = self {
            m.insert(id, x);
        }
    }
}

struct PlaneCtx {
    stat_names: IdMap,
    meta_index: IdMap,
    /// Stat metadata ids of one and two bytes (below 2^14, as producers write them) prepared
    /// for [`stat_fast`]: the key's encoded headers, the id's name as an encoded reference, and
    /// the key's flow slot ([`flow_slot`]). Keys are read from it only with one-byte ids,
    /// reference targets with both.
    fast: Vec<Option<(PreKey, PreRef, u8)>>,
    /// Event stats to leave out ([`decode_leaving_out`]): their names, and whether each id of
    /// [`PlaneCtx::fast`] is one of them (empty when none is).
    left_out: Vec<StrId>,
    left_out_fast: Vec<bool>,
    /// Flow stats go to the line's flow list only ([`LeaveOut::flow_stats`]).
    flows_only: bool,
}

/// The ids [`PlaneCtx::fast`] covers: those of one- and two-byte varints.
const FAST_IDS: usize = 1 << 14;

impl PlaneCtx {
    fn new(stat_names: IdMap, left_out: Vec<StrId>) -> Self {
        let ids = 0..stat_names.upper().min(FAST_IDS) as i64;
        let fast = ids
            .clone()
            .map(|id| {
                let name = StrId(stat_names.get(id)?);
                Some((PreKey::new(name), PreRef::new(name), flow_slot(name)))
            })
            .collect();
        let left_out_fast = if left_out.is_empty() {
            Vec::new()
        } else {
            ids.map(|id| {
                stat_names
                    .get(id)
                    .is_some_and(|n| left_out.contains(&StrId(n)))
            })
            .collect()
        };
        PlaneCtx {
            stat_names,
            meta_index: IdMap::Dense(Vec::new()),
            fast,
            left_out,
            left_out_fast,
            flows_only: false,
        }
    }
}

/// The flow stats, in the order of [`EventFlow::v`]: producer id and type, consumer id and
/// type. They are the first [`HOT_STAT_NAMES`], interned first: their ids are 1 to 4.
const FLOW_KEYS: [StrId; 4] = [StrId(1), StrId(2), StrId(3), StrId(4)];

/// 1 + the index of `key` in [`FLOW_KEYS`], or 0 for other keys.
#[inline(always)]
fn flow_slot(key: StrId) -> u8 {
    match FLOW_KEYS.iter().position(|k| *k == key) {
        Some(i) => i as u8 + 1,
        None => 0,
    }
}

/// The flow stats of the event being decoded, for the line's list of flow ends
/// ([`xlens_model::Flows`]). A later stat of a key replaces an earlier one; a value that is no
/// integer removes it (as readers of the stats see them).
#[derive(Default)]
struct EventFlow {
    /// By slot ([`flow_slot`]): entry 0 takes the values of other keys, never read.
    v: [u64; 8],
    set: u8,
    /// Values still held as their varint's bytes ([`EventFlow::put_raw`]), decoded only for
    /// the flow ends that are complete.
    raw: u8,
}

impl EventFlow {
    #[inline(always)]
    fn put(&mut self, slot: u8, v: Option<u64>) {
        let i = (slot - 1) as usize;
        match v {
            Some(x) => {
                self.v[(i + 1) & 7] = x;
                self.set |= 1 << i;
                self.raw &= !(1 << i);
            }
            None => self.set &= !(1 << i),
        }
    }

    /// [`EventFlow::put`] of an integer given as the bytes of its varint (up to 8), for any
    /// key: slot 0 (not a flow key) changes nothing that is read. No branch: it runs for every
    /// stat the decoder copies through.
    #[inline(always)]
    fn put_raw(&mut self, slot: u8, raw: u64) {
        const BIT: [u8; 8] = [0, 1, 2, 4, 8, 0, 0, 0];
        let b = BIT[(slot & 7) as usize];
        self.v[(slot & 7) as usize] = raw;
        self.set |= b;
        self.raw |= b;
    }

    #[inline(always)]
    fn value(&self, i: usize) -> u64 {
        if self.raw & (1 << i) != 0 {
            xlens_wire::varint_word(self.v[(i + 1) & 7])
        } else {
            self.v[(i + 1) & 7]
        }
    }

    /// Adds the event's producer and consumer ends (those with both a type and an id) to the
    /// last event of `b`, and clears itself. A type beyond 32 bits gives up the line's list,
    /// or where the list is the flows' only record, leaves the flow end out (counted).
    #[inline(always)]
    fn flush(&mut self, b: &mut EventsBuilder, keys: &mut KeyMask) {
        if self.set == 0 {
            return;
        }
        for (consumer, id, ty) in [(false, 0, 1), (true, 2, 3)] {
            if self.set & (1 << id) != 0 && self.set & (1 << ty) != 0 {
                match u32::try_from(self.value(ty)) {
                    Ok(t) => b.flow(consumer, t, self.value(id)),
                    // The list is the flows' only record: this one cannot be kept.
                    Err(_) if b.flows_only_listed() => keys.unlisted_flows += 1,
                    Err(_) => b.unlist_flows(),
                }
            }
        }
        self.set = 0;
    }
}

struct Decoder<'c> {
    prof: Profile,
    warn: Warnings,
    consumed: &'c (dyn Fn(usize, usize) + Sync),
    threads: usize,
    parallel_min_bytes: usize,
    /// What to leave out of the event stats ([`decode_leaving_out`]).
    leave: LeaveOut<'c>,
    stats_left_out: u64,
    /// Lines whose flow stats went to their flow lists only.
    flows_only_lines: u64,
    release: Release<'c>,
}

/// What decoding a line may need to change outside the line: the string table, the blobs, the
/// plane's metadata. The sequential decoder does it; a parallel worker cannot, and gives the line
/// back to be decoded sequentially (`None`), which keeps the result identical either way.
trait Side {
    fn ctx(&self) -> &PlaneCtx;
    fn intern(&mut self, b: &[u8]) -> Option<StrId>;
    fn blob(&mut self, b: &[u8]) -> Option<BlobId>;
    fn unknown_stat(&mut self, id: i64) -> Option<StrId>;
    fn placeholder(&mut self, md_id: i64) -> Option<u32>;
}

/// The sequential side: changes what it must. Without a plane (metadata and plane stats) it
/// never adds placeholder metadata.
struct Seq<'d, 'c> {
    d: &'d mut Decoder<'c>,
    plane: Option<&'d mut Plane>,
    ctx: &'d mut PlaneCtx,
}

impl Side for Seq<'_, '_> {
    #[inline(always)]
    fn ctx(&self) -> &PlaneCtx {
        self.ctx
    }
    fn intern(&mut self, b: &[u8]) -> Option<StrId> {
        Some(self.d.intern_bytes(b))
    }
    fn blob(&mut self, b: &[u8]) -> Option<BlobId> {
        Some(self.d.prof.add_blob(b))
    }
    fn unknown_stat(&mut self, id: i64) -> Option<StrId> {
        Some(self.d.unknown_stat(id))
    }
    fn placeholder(&mut self, md_id: i64) -> Option<u32> {
        let plane = self.plane.as_deref_mut()?;
        Some(self.d.placeholder_metadata(md_id, plane, self.ctx))
    }
}

/// A worker's side: reads the plane's tables, changes nothing.
struct Pure<'a> {
    ctx: &'a PlaneCtx,
}

impl Side for Pure<'_> {
    #[inline(always)]
    fn ctx(&self) -> &PlaneCtx {
        self.ctx
    }
    fn intern(&mut self, _: &[u8]) -> Option<StrId> {
        None
    }
    fn blob(&mut self, _: &[u8]) -> Option<BlobId> {
        None
    }
    fn unknown_stat(&mut self, _: i64) -> Option<StrId> {
        None
    }
    fn placeholder(&mut self, _: i64) -> Option<u32> {
        None
    }
}

/// A decoded line whose names are still raw bytes (interned by the caller, in line order).
struct LineOut {
    line: Line,
    /// Copied out of the line's bytes: those are released once the line is decoded (a copied
    /// file's released pages read as zeros).
    name: Vec<u8>,
    display_name: Vec<u8>,
    /// Stats left out ([`decode_leaving_out`]).
    left_out: u64,
    /// Flow ends the line's list could not hold, left out ([`LeaveOut::flow_stats`]).
    unlisted_flows: u64,
}

/// Stat names that events carry most often (flows, step roots, XLA op identity, GPU
/// correlation and grouping): 15, the ids that fit a one-byte stat header.
const HOT_STAT_NAMES: [&str; 15] = [
    "_p",
    "_pt",
    "_c",
    "_ct",
    "_r",
    "_a",
    "_src",
    "hlo_op",
    "hlo_module",
    "program_id",
    "run_id",
    "device_ordinal",
    "correlation_id",
    "group_id",
    "step_num",
];

/// Planes with less line data than this are decoded on one thread.
const PARALLEL_MIN_BYTES: usize = 1 << 20;

impl Decoder<'_> {
    fn intern_bytes(&mut self, b: &[u8]) -> StrId {
        match std::str::from_utf8(b) {
            Ok(s) => self.prof.strings.intern(s),
            Err(_) => {
                self.warn.invalid_utf8 += 1;
                let s = String::from_utf8_lossy(b);
                self.prof.strings.intern(&s)
            }
        }
    }

    fn string(&mut self, r: &mut Reader<'_>) -> Res<StrId> {
        let (b, _) = r.bytes()?;
        Ok(self.intern_bytes(b))
    }

    fn plane(&mut self, mut r: Reader<'_>) -> Res<()> {
        let mut plane = Plane::default();
        let mut lines = Vec::new();
        let mut event_md = Vec::new();
        let mut stat_md = Vec::new();
        let mut stats = Vec::new();
        // Pass 1: find where everything is; lines are decoded last, once names are known.
        while let Some((num, wire)) = r.field()? {
            match (num, wire) {
                (1, WireType::Varint) => plane.id = r.varint()? as i64,
                (2, WireType::Len) => plane.name = self.string(&mut r)?,
                (3, WireType::Len) => lines.push(r.message("XLine")?),
                (4, WireType::Len) => event_md.push(r.message("XPlane.event_metadata entry")?),
                (5, WireType::Len) => stat_md.push(r.message("XPlane.stat_metadata entry")?),
                (6, WireType::Len) => stats.push(r.message("XStat")?),
                (1, w) => r.expect(num, w, WireType::Varint)?,
                (2..=6, w) => r.expect(num, w, WireType::Len)?,
                _ => r.skip(num, wire)?,
            }
        }

        // Stat metadata: id -> interned name.
        let mut names = Vec::with_capacity(stat_md.len());
        for mut entry in stat_md {
            let mut key = None;
            let mut name = StrId::EMPTY;
            let mut value_id = None;
            while let Some((num, wire)) = entry.field()? {
                match (num, wire) {
                    (1, WireType::Varint) => key = Some(entry.varint()? as i64),
                    (2, WireType::Len) => {
                        let mut m = entry.message("XStatMetadata")?;
                        while let Some((n, w)) = m.field()? {
                            match (n, w) {
                                (1, WireType::Varint) => value_id = Some(m.varint()? as i64),
                                (2, WireType::Len) => name = self.string(&mut m)?,
                                _ => m.skip(n, w)?,
                            }
                        }
                    }
                    _ => entry.skip(num, wire)?,
                }
            }
            if let Some(id) = key.or(value_id) {
                names.push((id, name.0));
            }
        }
        let left_out: Vec<StrId> = self
            .leave
            .stats
            .iter()
            .filter_map(|n| self.prof.strings.find(n))
            .filter(|k| !FLOW_KEYS.contains(k))
            .collect();
        let mut ctx = PlaneCtx::new(IdMap::build(&names), left_out);

        // Event metadata, in file order.
        let mut index = Vec::with_capacity(event_md.len());
        for mut entry in event_md {
            let mut key = None;
            let mut md = EventMetadata::default();
            let mut value_id = None;
            while let Some((num, wire)) = entry.field()? {
                match (num, wire) {
                    (1, WireType::Varint) => key = Some(entry.varint()? as i64),
                    (2, WireType::Len) => {
                        let mut m = entry.message("XEventMetadata")?;
                        while let Some((n, w)) = m.field()? {
                            match (n, w) {
                                (1, WireType::Varint) => value_id = Some(m.varint()? as i64),
                                (2, WireType::Len) => md.name = self.string(&mut m)?,
                                (3, WireType::Len) => {
                                    let (b, _) = m.bytes()?;
                                    if !b.is_empty() {
                                        md.metadata = Some(self.prof.add_blob(b));
                                    }
                                }
                                (4, WireType::Len) => md.display_name = self.string(&mut m)?,
                                (5, WireType::Len) => {
                                    let st = m.message("XStat")?;
                                    let (k, v) = self.stat(st, &mut ctx)?;
                                    encode_stat(&mut md.stats, k, v);
                                }
                                (6, WireType::Varint) => md.child_ids.push(m.varint()? as i64),
                                (6, WireType::Len) => {
                                    let mut packed = m.message("XEventMetadata.child_id")?;
                                    while !packed.at_end() {
                                        md.child_ids.push(packed.varint()? as i64);
                                    }
                                }
                                _ => m.skip(n, w)?,
                            }
                        }
                    }
                    _ => entry.skip(num, wire)?,
                }
            }
            md.id = key.or(value_id).unwrap_or(0);
            index.push((md.id, plane.event_metadata.len() as u32));
            plane.event_metadata.push(md);
        }
        ctx.meta_index = IdMap::build(&index);
        // Flows an event inherits from its metadata are found by reading its stats with its
        // metadata's: such planes keep their flow stats.
        ctx.flows_only = self.leave.flow_stats
            && !plane
                .event_metadata
                .iter()
                .any(|m| FLOW_KEYS.iter().any(|&k| m.stats().has(k)));

        for st in stats {
            let (k, v) = self.stat(st, &mut ctx)?;
            encode_stat(&mut plane.stats, k, v);
        }

        plane.lines.reserve_exact(lines.len());
        let line_bytes: usize = lines.iter().map(|l| l.rest().len()).sum();
        let threads = self.threads.min(lines.len());
        let mut done: Vec<Option<Res<Option<LineOut>>>> = Vec::new();
        if threads > 1 && line_bytes >= self.parallel_min_bytes {
            done = decode_lines_parallel(&lines, &ctx, threads, self.consumed, self.release);
        }
        for (i, lr) in lines.into_iter().enumerate() {
            let out = match done.get_mut(i).and_then(|x| x.take()) {
                Some(Ok(Some(out))) => out,
                Some(Err(e)) => return Err(e),
                // Not decoded yet, or it needs the sequential side.
                _ => {
                    let range = (lr.offset(), lr.offset() + lr.rest().len());
                    let as_read = Steps::of(self.release, self.consumed);
                    let mut side = Seq {
                        d: self,
                        plane: Some(&mut plane),
                        ctx: &mut ctx,
                    };
                    let out = decode_line(&mut side, lr, as_read)?.ok_or_else(|| {
                        Box::new(xlens_wire::Error {
                            offset: range.0 as u64,
                            message: "internal: the sequential decoder refused a line".into(),
                            context: "XLine",
                        })
                    })?;
                    (self.consumed)(range.0, range.1);
                    out
                }
            };
            self.stats_left_out += out.left_out;
            self.warn.unlisted_flow_ends += out.unlisted_flows;
            self.flows_only_lines += u64::from(
                out.line
                    .events
                    .flows()
                    .is_some_and(|f| f.not_in_stats && !out.line.events.is_empty()),
            );
            let mut line = out.line;
            line.name = self.intern_bytes(&out.name);
            line.display_name = self.intern_bytes(&out.display_name);
            plane.lines.push(line);
        }
        self.prof.planes.push(plane);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn unknown_stat(&mut self, id: i64) -> StrId {
        self.warn.unknown_stat_ids += 1;
        self.prof.strings.intern(&format!("<stat {id}>"))
    }

    /// A metadata or plane stat (decoded sequentially, before the lines).
    fn stat(&mut self, r: Reader<'_>, ctx: &mut PlaneCtx) -> Res<(StrId, StatValue)> {
        let mut side = Seq {
            d: self,
            plane: None,
            ctx,
        };
        // This side never refuses; an empty stat would stand in if it did.
        Ok(stat(&mut side, r)?.map_or((StrId::EMPTY, StatValue::None), |(_, k, v)| (k, v)))
    }

    fn placeholder_metadata(&mut self, id: i64, plane: &mut Plane, ctx: &mut PlaneCtx) -> u32 {
        self.warn.unknown_event_metadata += 1;
        let idx = plane.event_metadata.len() as u32;
        plane.event_metadata.push(EventMetadata {
            id,
            name: self.prof.strings.intern(&format!("<metadata {id}>")),
            ..Default::default()
        });
        // Insert rather than rebuild the index: a plane whose metadata was lost has one unknown id
        // per event kind, and rebuilding for each made decoding quadratic.
        ctx.meta_index.insert(id, idx, plane.event_metadata.len());
        idx
    }
}

/// The interned name of stat metadata `id`; `None` when a worker meets an unknown id.
#[inline(always)]
fn stat_name<S: Side>(side: &mut S, id: i64) -> Option<StrId> {
    match side.ctx().stat_names.get(id) {
        Some(s) => Some(StrId(s)),
        None => side.unknown_stat(id),
    }
}

/// The common shape of an event stat, `metadata_id` (one byte) then one integer or reference
/// varint that ends the message, appended to `out` without the general field loop: integers are
/// copied through as they are, keys and references come encoded from the plane's table. `false`
/// means "use the general path" (nothing was written).
#[inline(always)]
fn stat_fast(
    ctx: &PlaneCtx,
    b: &[u8],
    keys: &mut KeyMask,
    out: &mut Vec<u8>,
    flow: &mut EventFlow,
) -> bool {
    let [0x08, key @ 0..0x80, tag, rest @ ..] = b else {
        // (Keys of 128 and more take two bytes: the general path.)
        return false;
    };
    let Some(Some((pk, _, fs))) = ctx.fast.get(*key as usize) else {
        return false;
    };
    if ctx.left_out_fast.get(*key as usize) == Some(&true) {
        keys.left_out += 1;
        return true;
    }
    // The value's bytes as one little-endian word; each but the last must have its
    // continuation bit.
    let n = rest.len();
    if n > 8 {
        return stat_fast_long(pk, *fs, *tag, rest, out) && {
            keys.add(*key as i64);
            true
        };
    }
    if n == 0 {
        return false;
    }
    let mut raw = 0u64;
    for (i, &x) in rest.iter().enumerate() {
        raw |= (x as u64) << (8 * i);
    }
    let mask = u64::MAX >> (64 - 8 * n);
    if raw & mask & 0x8080_8080_8080_8080 != 0x8080_8080_8080_8080 & (mask >> 8) {
        return false;
    }
    if *fs != 0 && ctx.flows_only {
        // Kept in the flow list only (and not among the line's keys).
        if !matches!(*tag, 0x18 | 0x20) {
            return false;
        }
        flow.put_raw(*fs, raw);
        return true;
    }
    match *tag {
        0x18 => {
            encode_int_raw(out, pk, false, raw, n as u8);
            flow.put_raw(*fs, raw);
        }
        0x20 => {
            encode_int_raw(out, pk, true, raw, n as u8);
            flow.put_raw(*fs, raw);
        }
        // A reference to another stat metadata id of one or two bytes.
        0x38 => {
            let id = match *rest {
                [a] => a as usize,
                [a, b] => (a & 0x7f) as usize | (b as usize) << 7,
                _ => return false,
            };
            let Some(Some((_, target, _))) = ctx.fast.get(id) else {
                return false;
            };
            encode_ref_pre(out, pk, target);
            if *fs != 0 {
                flow.put(*fs, None);
            }
        }
        _ => return false,
    }
    keys.add(*key as i64);
    true
}

/// [`stat_fast`] for an integer of 9 or 10 bytes (a negative `int64`, such as the `run_id` of
/// every XLA op event), copied through the same way; `false` (nothing written) for flow keys,
/// whose values the flow list keeps in one word, and for a tenth byte beyond 64 bits.
#[inline(always)]
fn stat_fast_long(pk: &PreKey, fs: u8, tag: u8, rest: &[u8], out: &mut Vec<u8>) -> bool {
    let signed = match tag {
        0x18 => false,
        0x20 => true,
        _ => return false,
    };
    let (Some((head, tail)), 0) = (rest.split_first_chunk::<8>(), fs) else {
        return false;
    };
    let ok = match *tail {
        [t0] => t0 < 0x80,
        [t0, t1] => t0 >= 0x80 && t1 <= 1,
        _ => false,
    };
    if !ok || head.iter().any(|&x| x < 0x80) {
        return false;
    }
    let t = tail
        .iter()
        .rev()
        .fold(0u16, |t, &b| (t << 8) | u16::from(b));
    encode_int_raw_long(
        out,
        pk,
        signed,
        u64::from_le_bytes(*head),
        t,
        tail.len() as u8,
    );
    true
}

/// A stat (its metadata id, name and value), or `None` when it needs a change the side cannot
/// make.
#[inline(always)]
fn stat<S: Side>(side: &mut S, mut r: Reader<'_>) -> Res<Option<(i64, StrId, StatValue)>> {
    let mut key = 0i64;
    let mut value = StatValue::None;
    while let Some((num, wire)) = r.field()? {
        match (num, wire) {
            (1, WireType::Varint) => key = r.varint()? as i64,
            (2, WireType::Fixed64) => value = StatValue::F64(f64::from_bits(r.fixed64()?)),
            (3, WireType::Varint) => value = StatValue::U64(r.varint()?),
            (4, WireType::Varint) => value = StatValue::I64(r.varint()? as i64),
            (5, WireType::Len) => {
                let (b, _) = r.bytes()?;
                match side.intern(b) {
                    Some(s) => value = StatValue::Str(s),
                    None => return Ok(None),
                }
            }
            (6, WireType::Len) => {
                let (b, _) = r.bytes()?;
                match side.blob(b) {
                    Some(id) => value = StatValue::Bytes(id),
                    None => return Ok(None),
                }
            }
            (7, WireType::Varint) => {
                let id = r.varint()? as i64;
                match stat_name(side, id) {
                    Some(s) => value = StatValue::Ref(s),
                    None => return Ok(None),
                }
            }
            (1..=7, w) => {
                return Err(r.err(r.offset(), format!("XStat field {num} has wire type {w:?}")))
            }
            _ => r.skip(num, wire)?,
        }
    }
    Ok(stat_name(side, key).map(|k| (key, k, value)))
}

/// The plane-local stat metadata ids seen in a line: ids below 128 as one flag byte each (a
/// plain store per stat: a 128-bit mask's variable shift cost several percent of decoding), any
/// other noted.
struct KeyMask {
    seen: [bool; 128],
    other: bool,
    /// Stats left out ([`decode_leaving_out`]).
    left_out: u64,
    /// Flow ends left out for a type their list cannot hold ([`LeaveOut::flow_stats`]).
    unlisted_flows: u64,
}

impl Default for KeyMask {
    fn default() -> Self {
        KeyMask {
            seen: [false; 128],
            other: false,
            left_out: 0,
            unlisted_flows: 0,
        }
    }
}

impl KeyMask {
    #[inline(always)]
    fn add(&mut self, id: i64) {
        match self.seen.get_mut(id as u64 as usize) {
            Some(s) => *s = true,
            None => self.other = true,
        }
    }

    fn has(&self, id: i64) -> bool {
        self.seen.get(id as u64 as usize).copied().unwrap_or(false)
    }
}

/// Decodes an event's stat (its bytes, and their offset) into the last event of `b`; `Ok(false)`
/// when it needs a change `side` cannot make.
#[inline(always)]
fn event_stat<S: Side>(
    side: &mut S,
    b: &mut EventsBuilder,
    (st, at): (&[u8], usize),
    keys: &mut KeyMask,
    flow: &mut EventFlow,
) -> Res<bool> {
    if stat_fast(side.ctx(), st, keys, b.stats_buf(), flow) {
        return Ok(true);
    }
    // A reader only for the stats the fast path leaves.
    let Some((id, k, v)) = stat(side, Reader::new(st, at, "XStat"))? else {
        return Ok(false);
    };
    if side.ctx().left_out.contains(&k) {
        keys.left_out += 1;
        return Ok(true);
    }
    let fs = flow_slot(k);
    if fs != 0 {
        flow.put(fs, v.as_id_bits());
        if side.ctx().flows_only {
            return Ok(true);
        }
    }
    keys.add(id);
    encode_stat(b.stats_buf(), k, v);
    Ok(true)
}

/// Lines of more bytes have their events counted in a sample ([`estimate_events`]).
const COUNT_ALL_BYTES: usize = 256 << 10;

/// The number of events a line's columns are reserved for: all counted in lines up to
/// [`COUNT_ALL_BYTES`]; in larger ones, those in the first sixteenth of the bytes, scaled up with
/// a margin (producers write lines of one kind of event; should the rest differ, the columns
/// grow as usual). Capacity never written costs no memory, and is released when the line is done.
fn estimate_events(r: &Reader<'_>) -> usize {
    let len = r.rest().len();
    if len <= COUNT_ALL_BYTES {
        return count_events(r.clone(), len);
    }
    let sample = len / 16;
    let mut head = r.clone();
    let n = count_events_in(&mut head, sample);
    let read = len - head.rest().len();
    if read >= len {
        return n;
    }
    let scaled = (n as u128 * len as u128 / read.max(1) as u128) as usize;
    // An event takes at least two bytes.
    (scaled + scaled / 16 + 64).min(len / 2)
}

/// The number of events (field 4) in a line's body, found by skipping over them. A malformed
/// body ends the count where it goes wrong (decoding then reports the error).
fn count_events(mut r: Reader<'_>, limit: usize) -> usize {
    count_events_in(&mut r, limit)
}

/// [`count_events`], stopping at the first field that ends `limit` or more bytes into the body.
fn count_events_in(r: &mut Reader<'_>, limit: usize) -> usize {
    let start = r.rest().len();
    let mut n = 0;
    while start - r.rest().len() < limit {
        if r.peek() == Some(0x22) {
            r.bump();
            if r.bytes().is_err() {
                break;
            }
            n += 1;
            continue;
        }
        match r.field() {
            Ok(Some((num, wire))) => {
                n += usize::from(num == 4 && wire == WireType::Len);
                if r.skip(num, wire).is_err() {
                    break;
                }
            }
            _ => break,
        }
    }
    n
}

/// Decodes one line; `Ok(None)` when it needs a change `side` cannot make.
/// With `as_read`, the line's bytes are given back every [`RELEASE_STEP`] bytes as its events
/// are read, each step announced before it is read ([`Release::AsRead`]).
fn decode_line<S: Side>(
    side: &mut S,
    r: Reader<'_>,
    as_read: Option<Steps<'_>>,
) -> Res<Option<LineOut>> {
    let mut line = Line::default();
    // Copied at once: with `as_read` the bytes may be gone by the end of the line.
    let (mut name, mut display_name): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
    let mut released = r.offset();
    let line_end = r.offset() + r.rest().len();
    let mut next_release = usize::MAX;
    if let Some(st) = as_read {
        next_release = released + RELEASE_STEP;
        if let Some(ahead) = st.ahead {
            ahead(released, next_release.min(line_end));
        }
    }
    // The event columns are reserved from a count of the events (exact in small lines, from a
    // sample in large ones): growing them would cost copies, and page faults on memory that
    // later goes unused. The stats buffer is reserved from the line's size
    // (unused capacity is never touched, so it costs no memory, and is released when the
    // builder finishes).
    let line_len = r.rest().len();
    let mut b = EventsBuilder::with_capacity(estimate_events(&r), line_len / 2);
    if side.ctx().flows_only {
        b.list_flows_only();
    } else {
        b.list_flows();
    }
    let mut flow = EventFlow::default();
    let mut keys = KeyMask::default();
    let mut r = r;
    while let Some(tag) = r.peek() {
        // Events (field 4) have the one-byte header 0x22; other fields take the general path.
        let mut e = if tag == 0x22 {
            r.bump();
            r.message("XEvent")?
        } else {
            let Some((num, wire)) = r.field()? else {
                break;
            };
            if num != 4 {
                match (num, wire) {
                    (1, WireType::Varint) => line.id = r.varint()? as i64,
                    (2, WireType::Len) => name = r.bytes()?.0.to_vec(),
                    (3, WireType::Varint) => line.timestamp_ns = r.varint()? as i64,
                    (9, WireType::Varint) => line.duration_ps = r.varint()? as i64,
                    (10, WireType::Varint) => line.display_id = r.varint()? as i64,
                    (11, WireType::Len) => display_name = r.bytes()?.0.to_vec(),
                    (1 | 3 | 9 | 10, w) => r.expect(num, w, WireType::Varint)?,
                    (2 | 11, w) => r.expect(num, w, WireType::Len)?,
                    _ => r.skip(num, wire)?,
                }
                continue;
            }
            if wire != WireType::Len {
                r.expect(num, wire, WireType::Len)?;
            }
            r.message("XEvent")?
        };
        let mut md_id = 0i64;
        let mut offset = 0i64;
        let mut dur = 0i64;
        let mut occurrences = None;
        // The stats are encoded straight into the columns, and the event is added after them.
        // Producers write the fields in number order with one-byte headers: read them in that
        // order first (straight-line code, predictable branches); whatever is left, in any
        // order or form, takes the general loop.
        if e.peek() == Some(0x08) {
            e.bump();
            md_id = e.varint()? as i64;
        }
        if e.peek() == Some(0x10) {
            e.bump();
            offset = e.varint()? as i64;
        }
        if e.peek() == Some(0x18) {
            e.bump();
            dur = e.varint()? as i64;
        }
        while e.peek() == Some(0x22) {
            e.bump();
            if !event_stat(side, &mut b, e.bytes()?, &mut keys, &mut flow)? {
                return Ok(None);
            }
        }
        while let Some((num, wire)) = e.field()? {
            match (num, wire) {
                (1, WireType::Varint) => md_id = e.varint()? as i64,
                (2, WireType::Varint) => offset = e.varint()? as i64,
                (3, WireType::Varint) => dur = e.varint()? as i64,
                (4, WireType::Len) => {
                    if !event_stat(side, &mut b, e.bytes()?, &mut keys, &mut flow)? {
                        return Ok(None);
                    }
                }
                (5, WireType::Varint) => occurrences = Some(e.varint()? as i64),
                (1..=3 | 5, w) => e.expect(num, w, WireType::Varint)?,
                (4, w) => e.expect(num, w, WireType::Len)?,
                _ => e.skip(num, wire)?,
            }
        }
        let meta = match side.ctx().meta_index.get(md_id) {
            Some(m) => m,
            None => match side.placeholder(md_id) {
                Some(m) => m,
                None => return Ok(None),
            },
        };
        b.push(offset, dur, meta);
        flow.flush(&mut b, &mut keys);
        if let Some(n) = occurrences {
            b.set_occurrences(n);
        }
        if r.offset() >= next_release {
            let now = r.offset();
            next_release = now.saturating_add(RELEASE_STEP);
            if let Some(st) = as_read {
                (st.give_back)(released, now);
                if let Some(ahead) = st.ahead {
                    ahead(now, next_release.min(line_end));
                }
            }
            released = now;
        }
    }
    // The line's stat keys, so that readers can skip lines without the key they look for.
    // Ids the plane does not define (kept under placeholder names) leave the keys undeclared.
    let names: Option<Vec<StrId>> = (0..128)
        .filter(|&id| keys.has(id))
        .map(|id| side.ctx().stat_names.get(id).map(StrId))
        .collect();
    if let (false, Some(names)) = (keys.other, names) {
        b.declare_stat_keys(names);
    }
    line.events = b.finish();
    Ok(Some(LineOut {
        line,
        name,
        display_name,
        left_out: keys.left_out,
        unlisted_flows: keys.unlisted_flows,
    }))
}

/// Decodes the lines of one plane on `threads` threads (largest lines first), each line's bytes
/// released as soon as it is done. Entry `i` is line `i`'s result.
///
/// On two threads the lines are first split into two sets of about equal bytes (taking the
/// largest first from one queue left one core idle for a fifth of the decoding of a 49 MB JAX
/// profile: its five large lines cannot be shared evenly that way); each thread decodes its
/// own set, largest first, and then takes what is left of the other's, smallest first.
fn decode_lines_parallel<'a>(
    lines: &[Reader<'a>],
    ctx: &PlaneCtx,
    threads: usize,
    consumed: &(dyn Fn(usize, usize) + Sync),
    release: Release<'_>,
) -> Vec<Option<Res<Option<LineOut>>>> {
    let as_read = Steps::of(release, consumed);
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lines[i].rest().len()));
    // Queues of line indices, largest last (taken with `pop`).
    let queues: Vec<Vec<usize>> = if threads == 2 {
        let costs: Vec<usize> = lines.iter().map(|l| l.rest().len()).collect();
        let side = xlens_model::balance::two_way_split(&costs);
        [true, false]
            .iter()
            .map(|&s| {
                order
                    .iter()
                    .rev()
                    .copied()
                    .filter(|&i| side[i] == s)
                    .collect()
            })
            .collect()
    } else {
        vec![order.iter().rev().copied().collect()]
    };
    let queues = std::sync::Mutex::new(queues);
    let next_thread = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        let mut side = Pure { ctx };
        let me = next_thread.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        loop {
            let i = {
                let Ok(mut q) = queues.lock() else {
                    break;
                };
                let n = q.len();
                let own = me % n;
                match q[own].pop() {
                    Some(i) => i,
                    // Done with its own: the smallest left of another queue.
                    None => match q.iter_mut().find(|x| !x.is_empty()) {
                        Some(other) => other.remove(0),
                        None => break,
                    },
                }
            };
            let lr = lines[i].clone();
            let range = (lr.offset(), lr.offset() + lr.rest().len());
            let res = decode_line(&mut side, lr, as_read);
            if matches!(res, Ok(Some(_))) {
                consumed(range.0, range.1);
            }
            out.push((i, res));
        }
        out
    };
    let mut done: Vec<Option<Res<Option<LineOut>>>> = Vec::new();
    done.resize_with(lines.len(), || None);
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in handles {
            // A worker that panicked leaves its lines undone; they are decoded sequentially.
            if let Ok(v) = h.join() {
                all.extend(v);
            }
        }
        for (i, res) in all {
            done[i] = Some(res);
        }
    });
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlens_model::{EventsBuilder, Line, Plane};

    /// A profile of one plane whose lines have these timestamps and event starts.
    fn profile(lines: &[(i64, Vec<i64>)]) -> Profile {
        let mut plane = Plane::default();
        for (ts, starts) in lines {
            let mut b = EventsBuilder::default();
            for &s in starts {
                b.push(s, 1, 0);
            }
            plane.lines.push(Line {
                timestamp_ns: *ts,
                events: b.finish(),
                ..Default::default()
            });
        }
        Profile {
            planes: vec![plane],
            ..Default::default()
        }
    }

    /// What placing means, step by step: each line moved by its offset from the earliest line
    /// (saturating; lines too far to share the axis stay), then every line moved so that the
    /// earliest event is at 0.
    fn placed_by_definition(lines: &[(i64, Vec<i64>)]) -> (Vec<Vec<i64>>, i128) {
        let origin = lines
            .iter()
            .filter(|l| !l.1.is_empty())
            .map(|l| l.0)
            .min()
            .unwrap_or(0);
        let mut out: Vec<Vec<i64>> = lines
            .iter()
            .map(|(ts, starts)| {
                let mut v = starts.clone();
                v.sort_unstable();
                if let Ok(d) = i64::try_from((*ts as i128 - origin as i128) * 1000) {
                    v.iter_mut().for_each(|s| *s = s.saturating_add(d));
                }
                v
            })
            .collect();
        let min = out
            .iter()
            .filter_map(|v| v.first().copied())
            .min()
            .unwrap_or(0);
        for v in &mut out {
            for s in v.iter_mut() {
                *s = match min.checked_neg() {
                    Some(x) => s.saturating_add(x),
                    None => s.saturating_add(i64::MAX).saturating_add(1),
                };
            }
        }
        (out, origin as i128 * 1000 + min as i128)
    }

    #[test]
    fn one_pass_placing_equals_the_two_steps() {
        let big = i64::MAX / 1000;
        let cases: Vec<Vec<(i64, Vec<i64>)>> = vec![
            vec![(100, vec![0, 7]), (105, vec![3, 9_000]), (0, vec![])],
            vec![(0, vec![5_000]), (1_700_000_000_000_000_000, vec![7_000])],
            vec![(0, vec![i64::MIN, i64::MAX]), (0, vec![0])],
            vec![(i64::MAX, vec![i64::MIN, 0]), (0, vec![i64::MAX])],
            vec![(i64::MIN, vec![-1, i64::MAX]), (0, vec![5])],
            vec![(-5, vec![i64::MIN + 1]), (0, vec![i64::MIN])],
            vec![
                (big, vec![i64::MAX - 10, 3]),
                (0, vec![-4, 1]),
                (big / 2, vec![0]),
            ],
            vec![
                (3, vec![-20, 40]),
                (1, vec![i64::MAX - 1_000]),
                (2, vec![10]),
            ],
            // Saturates on the first step, comes back down on the second.
            vec![(1, vec![i64::MAX - 10, 0]), (0, vec![500])],
        ];
        for lines in &cases {
            let (want, origin) = placed_by_definition(lines);
            for threads in [1, 2] {
                let mut p = profile(lines);
                place_lines_on_one_axis(&mut p, &mut Warnings::default(), threads, 0);
                let got: Vec<Vec<i64>> = p.planes[0]
                    .lines
                    .iter()
                    .map(|l| l.events.starts().to_vec())
                    .collect();
                assert_eq!(got, want, "{lines:?} on {threads} threads");
                // The wall-clock origin moves with the events (for lines on the axis).
                assert_eq!(p.origin_ps, origin, "{lines:?}");
            }
        }
    }
}
