//! XSpace importer: decodes `tensorflow.profiler.XSpace` bytes straight into an xlens [`Profile`].
//!
//! This is a hand-written, zero-copy walker over the protobuf wire format (field numbers from
//! `crates/proto/proto/xplane.proto`; fields read with `xlens_wire`'s cursor, an event's fields
//! first in the order producers write them, by header byte): it never materialises the message
//! tree, so it runs at memory speed and holds little more than the finished model. Metadata is read before the lines
//! of each plane, so stat keys and reference values are resolved to interned names as events are
//! decoded. Decoding errors carry the byte offset where decoding failed and never panic.

mod axis;
mod lines;
mod plane;
mod stats;
mod wire;

use axis::*;
use hashbrown::HashMap;
use lines::*;
use plane::*;
use stats::*;
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
    /// Every line (and so every event) passed over: the planes keep their names, metadata and
    /// stats, for a reader of those alone (the HLO modules of the metadata plane).
    /// [`Profile::lines_left_out`] says how many.
    pub lines: bool,
    /// Lines kept only on the planes whose names this accepts; the other planes' lines are
    /// passed over (counted in [`Profile::lines_left_out`]) but for their events' earliest
    /// start, so that the time axis, whose 0 is the profile's earliest event, is the one a
    /// whole read gives.
    pub planes: Option<fn(&str) -> bool>,
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
        skipped_starts: Vec::new(),
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
    place_lines_on_one_axis(
        &mut prof,
        &mut d.warn,
        d.threads,
        place_min,
        &d.skipped_starts,
    );
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

/// A line's `timestamp_ns` and its events' earliest `offset_ps`, read without decoding the
/// events; `None` for a line without events.
fn line_earliest(mut r: Reader<'_>) -> Res<Option<(i64, i64)>> {
    let mut ts = 0i64;
    let mut earliest: Option<i64> = None;
    while let Some((num, wire)) = r.field()? {
        match (num, wire) {
            (3, WireType::Varint) => ts = r.varint()? as i64,
            (4, WireType::Len) => {
                let mut e = r.message("XEvent")?;
                let mut offset = 0i64;
                // Producers write `metadata_id` (1) and `offset_ps` (2) first: read no further.
                if e.peek() == Some(0x08) {
                    e.bump();
                    e.varint()?;
                }
                if e.peek() == Some(0x10) {
                    e.bump();
                    offset = e.varint()? as i64;
                } else {
                    while let Some((n, w)) = e.field()? {
                        match (n, w) {
                            (2, WireType::Varint) => offset = e.varint()? as i64,
                            _ => e.skip(n, w)?,
                        }
                    }
                }
                earliest = Some(earliest.map_or(offset, |x| x.min(offset)));
            }
            (3, w) => r.expect(num, w, WireType::Varint)?,
            (4, w) => r.expect(num, w, WireType::Len)?,
            _ => r.skip(num, wire)?,
        }
    }
    Ok(earliest.map(|e| (ts, e)))
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
    /// Lines passed over for [`LeaveOut::planes`], with events: (`timestamp_ns`, earliest
    /// event offset in ps), for the time axis.
    skipped_starts: Vec<(i64, i64)>,
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

        if self.leave.lines {
            self.prof.lines_left_out += lines.len() as u64;
            self.prof.planes.push(plane);
            return Ok(());
        }
        if let Some(keep) = self.leave.planes {
            if !keep(self.prof.strings.get(plane.name)) {
                self.prof.lines_left_out += lines.len() as u64;
                for l in lines {
                    if let Some(start) = line_earliest(l)? {
                        self.skipped_starts.push(start);
                    }
                }
                self.prof.planes.push(plane);
                return Ok(());
            }
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

#[cfg(test)]
mod tests;
