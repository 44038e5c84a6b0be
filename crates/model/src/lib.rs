//! The xlens model: one compact, format-neutral, columnar store of a host's profile.
//!
//! An importer (XSpace today, Chrome/Kineto JSON later) builds one [`Profile`] per host file;
//! every analysis reads it and none re-parses the file. The layout follows XPlane's vocabulary
//! because that is what profilers emit, but nothing here is protobuf-specific:
//!
//! * [`Profile`] — strings, byte blobs, planes, and what the producer reported (errors, hostnames).
//! * [`Plane`] — a device or the host: event metadata, plane-level stats, lines.
//! * [`Line`] — a thread, stream or derived track, with its [`Events`] as columns.
//! * Times are `i64` picoseconds relative to [`Profile::origin_ps`]; the earliest event starts at 0.
//! * Stats are resolved: keys are interned names, reference values are interned strings.

pub mod balance;
mod events;
mod stats;
mod strings;
pub mod synthetic;
pub mod threads;

pub use events::{Events, EventsBuilder, FlowRef, Flows};
pub use stats::{
    encode_int_raw, encode_int_raw_long, encode_ref_pre, encode_stat, BlobId, PreKey, PreRef, Stat,
    StatIter, StatValue, Stats,
};
pub use strings::{StrId, Strings};

/// Metadata shared by all events of one kind in a plane (name, long name, static stats).
#[derive(Debug, Clone, Default)]
pub struct EventMetadata {
    /// The producer's id (unique within the plane).
    pub id: i64,
    pub name: StrId,
    pub display_name: StrId,
    /// Opaque serialized metadata, if any.
    pub metadata: Option<BlobId>,
    /// Encoded stats; read with [`EventMetadata::stats`].
    pub stats: Vec<u8>,
    /// Ids of child metadata (e.g. the ops of a fused region).
    pub child_ids: Vec<i64>,
}

impl EventMetadata {
    pub fn stats(&self) -> Stats<'_> {
        Stats::new(&self.stats)
    }
}

/// A timeline: one thread, stream or derived track.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pub id: i64,
    pub display_id: i64,
    pub name: StrId,
    pub display_name: StrId,
    /// The producer's line start, in nanoseconds (absolute, as written).
    pub timestamp_ns: i64,
    /// The producer's line duration, in picoseconds (0 when unset).
    pub duration_ps: i64,
    pub events: Events,
}

/// A device, the host, or a metadata container.
#[derive(Debug, Clone, Default)]
pub struct Plane {
    pub id: i64,
    pub name: StrId,
    pub event_metadata: Vec<EventMetadata>,
    /// Encoded plane stats (device capabilities and the like); read with [`Plane::stats`].
    pub stats: Vec<u8>,
    pub lines: Vec<Line>,
}

impl Plane {
    pub fn stats(&self) -> Stats<'_> {
        Stats::new(&self.stats)
    }

    /// Metadata of event `i` of `line`.
    pub fn metadata_of(&self, line: &Line, i: usize) -> Option<&EventMetadata> {
        self.event_metadata.get(line.events.meta(i) as usize)
    }

    /// Total events over all lines.
    pub fn event_count(&self) -> usize {
        self.lines.iter().map(|l| l.events.len()).sum()
    }
}

/// Everything recorded for one host.
#[derive(Debug, Default)]
pub struct Profile {
    pub strings: Strings,
    pub blobs: Vec<Box<[u8]>>,
    /// Absolute time of `t = 0` in picoseconds: since the Unix epoch when `origin_is_wall_clock`,
    /// else on the producer's own clock (e.g. relative to a profile start that was not recorded).
    pub origin_ps: i128,
    pub origin_is_wall_clock: bool,
    /// The part of `origin_ps` the file's own times leave out (a Chrome trace's
    /// `baseTimeNanoseconds`); 0 when its times are absolute.
    pub base_time_ps: i128,
    pub planes: Vec<Plane>,
    pub hostnames: Vec<String>,
    /// Errors and warnings the producer recorded while profiling.
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// Problems the importer found and worked around (never silently).
    pub import_warnings: Vec<String>,
    /// When the importer was asked to read only what one tool needs: what it left out, with
    /// counts (such a profile answers that tool, and nothing else is asked of it).
    pub partial_read: Option<String>,
    /// Event stats the importer was asked to leave out and did (counted in
    /// [`Profile::partial_read`] too).
    pub stats_left_out: u64,
    /// Lines the importer was asked to pass over and did (a read of the planes' metadata
    /// alone, for tools that read nothing else: not a partial answer, so not in
    /// [`Profile::partial_read`]).
    pub lines_left_out: u64,
}

impl Profile {
    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id)
    }

    pub fn blob(&self, id: BlobId) -> &[u8] {
        self.blobs.get(id.0 as usize).map(|b| &b[..]).unwrap_or(&[])
    }

    /// Adds a blob and returns its id.
    pub fn add_blob(&mut self, bytes: &[u8]) -> BlobId {
        self.blobs.push(bytes.into());
        BlobId((self.blobs.len() - 1) as u32)
    }

    /// The first plane with this name.
    pub fn plane(&self, name: &str) -> Option<&Plane> {
        let id = self.strings.find(name)?;
        self.planes.iter().find(|p| p.name == id)
    }

    /// Total events over all planes.
    pub fn event_count(&self) -> usize {
        self.planes.iter().map(|p| p.event_count()).sum()
    }

    /// Earliest start and latest end over all events.
    pub fn span(&self) -> Option<(i64, i64)> {
        self.planes
            .iter()
            .flat_map(|p| p.lines.iter())
            .filter_map(|l| l.events.span())
            .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
    }

    /// Approximate heap bytes held by the model.
    pub fn heap_bytes(&self) -> usize {
        let lines: usize = self
            .planes
            .iter()
            .flat_map(|p| p.lines.iter())
            .map(|l| l.events.heap_bytes())
            .sum();
        let meta: usize = self
            .planes
            .iter()
            .flat_map(|p| p.event_metadata.iter())
            .map(|m| m.stats.capacity() + m.child_ids.capacity() * 8 + 64)
            .sum();
        let blobs: usize = self.blobs.iter().map(|b| b.len()).sum();
        lines + meta + blobs + self.strings.heap_bytes()
    }

    /// Looks up the stat name id (for fast comparisons in loops); `None` if no stat has it.
    pub fn key(&self, name: &str) -> Option<StrId> {
        self.strings.find(name)
    }
}
