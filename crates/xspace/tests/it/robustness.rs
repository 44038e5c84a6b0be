//! Robustness of the XSpace decoder: it must never panic, whatever the bytes, and every error must
//! say where (a byte offset inside the input) decoding failed.
//!
//! * Mutations of the real fixtures (truncation, bit flips, overwrites, insertions, deletions,
//!   splices, and the `EF BF BD` replacement that corrupted an upstream sample). Mutating whole
//!   multi-megabyte files is slow in a debug build, so most mutations are applied to small, valid
//!   XSpaces cut out of the fixtures (every plane kept, a few lines and events of each, with the
//!   metadata they refer to).
//! * Random bytes, random schema-blind protobuf, and random schema-valid XSpaces (which must
//!   decode, with the events they contain).
//! * Truncation inside a plane is an error, not a shorter profile.
//! * Known-bad inputs: the corrupted upstream file, text, gzip, empty input.
//! * Hand-built XSpaces whose decoded values are checked field by field.
//!
//! No external fuzzing crate: a splitmix64 generator with fixed seeds keeps every run identical. A
//! failing input is written to `CARGO_TARGET_TMPDIR` and its path printed.

use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::Instant;

use xlens_model::{Profile, StatValue, StrId};
use xlens_xspace::{decode, decode_with, decode_with_threads, DecodeError};

const PROFILE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/logdir/plugins/profile"
);
const CORRUPT_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/invalid/corrupted_utf8_head.xplane.pb"
);
/// The upstream corrupt file, in the shared samples beside the checkout.
const CORRUPT_UPSTREAM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/samples/xprof-testdata/invalid/tpu_inference_2.HEAD_corrupted_utf8.xplane.pb"
);
/// How much of the upstream corrupt file the committed fixture holds.
const CORRUPT_FIXTURE_LEN: usize = 64 * 1024;

/// Multiplies the number of random cases (`XLENS_ROBUSTNESS_SCALE=50 cargo test --release ...` for
/// a longer search; the default keeps the file at a few seconds in a debug build).
fn scale() -> usize {
    std::env::var("XLENS_ROBUSTNESS_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

// ------------------------------------------------------------------------------------------------
// Deterministic randomness.

/// splitmix64: tiny, fast, and good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n == 0`).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    /// A varint value biased towards boundaries (sign bit, 7-bit group edges, extremes).
    fn interesting(&mut self) -> u64 {
        const V: [u64; 16] = [
            0,
            1,
            2,
            127,
            128,
            16_383,
            16_384,
            u32::MAX as u64,
            1 << 32,
            i64::MAX as u64,
            i64::MIN as u64,
            u64::MAX,
            (-1i64) as u64,
            (-1000i64) as u64,
            1_700_000_000_000_000_000,
            1_000_000_000_000_000,
        ];
        match self.below(4) {
            0 => V[self.below(V.len())],
            1 => self.next_u64(),
            _ => self.below(1000) as u64,
        }
    }

    /// A short string, sometimes not valid UTF-8.
    fn name(&mut self) -> Vec<u8> {
        let n = self.below(12);
        if self.one_in(8) {
            self.bytes(n)
        } else {
            (0..n).map(|_| b'a' + self.below(26) as u8).collect()
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Protobuf wire-format writer (for hand-built and random inputs).

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A message being written, field by field.
#[derive(Clone, Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn new() -> Self {
        Pb(Vec::new())
    }

    fn tag(mut self, field: u64, wire: u64) -> Self {
        put_varint(&mut self.0, (field << 3) | wire);
        self
    }

    fn varint(self, field: u64, v: u64) -> Self {
        let mut s = self.tag(field, VARINT);
        put_varint(&mut s.0, v);
        s
    }

    fn int(self, field: u64, v: i64) -> Self {
        self.varint(field, v as u64)
    }

    fn bytes(self, field: u64, b: &[u8]) -> Self {
        let mut s = self.tag(field, LEN);
        put_varint(&mut s.0, b.len() as u64);
        s.0.extend_from_slice(b);
        s
    }

    fn str(self, field: u64, v: &str) -> Self {
        self.bytes(field, v.as_bytes())
    }

    fn msg(self, field: u64, m: Pb) -> Self {
        self.bytes(field, &m.0)
    }

    fn fixed64(mut self, field: u64, v: u64) -> Self {
        self = self.tag(field, FIXED64);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    fn fixed32(mut self, field: u64, v: u32) -> Self {
        self = self.tag(field, FIXED32);
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// `XPlane.event_metadata` map entry.
fn event_md(id: i64, name: &str) -> Pb {
    Pb::new()
        .int(1, id)
        .msg(2, Pb::new().int(1, id).str(2, name))
}

/// `XPlane.stat_metadata` map entry.
fn stat_md(id: i64, name: &str) -> Pb {
    Pb::new()
        .int(1, id)
        .msg(2, Pb::new().int(1, id).str(2, name))
}

fn event(md: i64, offset_ps: i64, dur_ps: i64) -> Pb {
    Pb::new().int(1, md).int(2, offset_ps).int(3, dur_ps)
}

fn stat_i64(key: i64, v: i64) -> Pb {
    Pb::new().int(1, key).int(4, v)
}

fn space(planes: impl IntoIterator<Item = Pb>) -> Vec<u8> {
    planes.into_iter().fold(Pb::new(), |s, p| s.msg(1, p)).0
}

// ------------------------------------------------------------------------------------------------
// Protobuf wire-format reader (for valid real data only: it panics on anything else).

#[derive(Clone, Copy)]
struct Field<'a> {
    num: u64,
    /// Offsets within the parsed buffer: the tag, the payload (after the length for `LEN`), the end.
    tag_at: usize,
    body_at: usize,
    end: usize,
    /// The value of a varint field.
    value: u64,
    /// The payload of a length-delimited field.
    body: &'a [u8],
    /// The whole field, tag included.
    raw: &'a [u8],
}

fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn parse(buf: &[u8]) -> Vec<Field<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let tag_at = pos;
        let tag = get_varint(buf, &mut pos);
        let (num, wire) = (tag >> 3, tag & 7);
        let mut f = Field {
            num,
            tag_at,
            body_at: pos,
            end: pos,
            value: 0,
            body: &[],
            raw: &[],
        };
        match wire {
            VARINT => f.value = get_varint(buf, &mut pos),
            FIXED64 => pos += 8,
            FIXED32 => pos += 4,
            LEN => {
                let n = get_varint(buf, &mut pos) as usize;
                f.body_at = pos;
                f.body = &buf[pos..pos + n];
                pos += n;
            }
            w => panic!("wire type {w} at {tag_at} in data assumed valid"),
        }
        f.end = pos;
        f.raw = &buf[tag_at..pos];
        out.push(f);
    }
    out
}

/// The varint field `num` of a message, or 0.
fn varint_of(msg: &[u8], num: u64) -> i64 {
    parse(msg)
        .iter()
        .rev()
        .find(|f| f.num == num)
        .map_or(0, |f| f.value as i64)
}

/// A map entry's key, falling back on the value's id as the decoder does.
fn entry_id(entry: &[u8]) -> i64 {
    let fields = parse(entry);
    if let Some(k) = fields.iter().rev().find(|f| f.num == 1) {
        return k.value as i64;
    }
    fields
        .iter()
        .rev()
        .find(|f| f.num == 2)
        .map_or(0, |v| varint_of(v.body, 1))
}

/// Stat metadata ids an `XStat` refers to (its key, and its `ref_value`).
fn stat_refs(stat: &[u8], ids: &mut Vec<i64>) {
    ids.push(varint_of(stat, 1));
    for f in parse(stat).iter().filter(|f| f.num == 7) {
        ids.push(f.value as i64);
    }
}

/// A small valid XSpace cut out of a real one: every plane, with at most `max_lines` lines of at
/// most `max_events` consecutive events each, the event and stat metadata those refer to, and
/// everything else as it was. Returns the bytes and the number of events kept.
fn shrink(space: &[u8], rng: &mut Rng, max_lines: usize, max_events: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut n_events = 0;
    for f in parse(space) {
        if f.num != 1 {
            out.extend_from_slice(f.raw);
            continue;
        }
        let fields = parse(f.body);
        let n_lines = fields.iter().filter(|g| g.num == 3).count();
        let first_line = rng.below(n_lines.saturating_sub(max_lines) + 1);
        let mut md_ids = Vec::new();
        let mut stat_ids = Vec::new();
        let mut lines = Vec::new();
        for line in fields
            .iter()
            .filter(|g| g.num == 3)
            .skip(first_line)
            .take(max_lines)
        {
            let lf = parse(line.body);
            let n = lf.iter().filter(|g| g.num == 4).count();
            let first = rng.below(n.saturating_sub(max_events) + 1);
            let mut kept = Pb::new();
            let mut i = 0;
            for g in &lf {
                if g.num == 4 {
                    if i >= first && i < first + max_events {
                        md_ids.push(varint_of(g.body, 1));
                        for s in parse(g.body).iter().filter(|s| s.num == 4) {
                            stat_refs(s.body, &mut stat_ids);
                        }
                        kept.0.extend_from_slice(g.raw);
                        n_events += 1;
                    }
                    i += 1;
                } else {
                    kept.0.extend_from_slice(g.raw);
                }
            }
            lines.push(kept);
        }
        for g in fields.iter().filter(|g| g.num == 6) {
            stat_refs(g.body, &mut stat_ids);
        }
        let event_mds: Vec<&Field> = fields
            .iter()
            .filter(|g| g.num == 4 && md_ids.contains(&entry_id(g.body)))
            .collect();
        for g in &event_mds {
            for v in parse(g.body).iter().filter(|v| v.num == 2) {
                for s in parse(v.body).iter().filter(|s| s.num == 5) {
                    stat_refs(s.body, &mut stat_ids);
                }
            }
        }
        let mut plane = Pb::new();
        for g in &fields {
            match g.num {
                3 | 4 => {}
                5 if !stat_ids.contains(&entry_id(g.body)) => {}
                _ => plane.0.extend_from_slice(g.raw),
            }
        }
        for g in event_mds {
            plane.0.extend_from_slice(g.raw);
        }
        for l in lines {
            plane = plane.msg(3, l);
        }
        out.extend_from_slice(&Pb::new().msg(1, plane).0);
    }
    (out, n_events)
}

// ------------------------------------------------------------------------------------------------
// Fixtures.

/// The real fixtures, uncompressed, sorted by path.
fn fixtures() -> &'static [(String, Vec<u8>)] {
    static F: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    F.get_or_init(|| {
        let mut paths = Vec::new();
        for run in std::fs::read_dir(PROFILE_DIR).expect("fixtures/logdir/plugins/profile") {
            for f in std::fs::read_dir(run.unwrap().path()).unwrap() {
                let p = f.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz") {
                    paths.push(p);
                }
            }
        }
        paths.sort();
        assert!(paths.len() >= 2, "expected real fixtures in {PROFILE_DIR}");
        paths
            .into_iter()
            .map(|p| {
                let raw = std::fs::read(&p).unwrap();
                let bytes = if p.extension().is_some_and(|e| e == "gz") {
                    let mut out = Vec::new();
                    flate2::read::GzDecoder::new(&raw[..])
                        .read_to_end(&mut out)
                        .unwrap();
                    out
                } else {
                    raw
                };
                let run = p.parent().unwrap().file_name().unwrap();
                (run.to_string_lossy().into_owned(), bytes)
            })
            .collect()
    })
}

// ------------------------------------------------------------------------------------------------
// Checking one input.

/// Saves a failing input where it can be replayed, and fails the test.
fn fail(input: &[u8], what: &str, why: &str) -> ! {
    let h = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let path = format!("{}/robustness-{h:016x}.pb", env!("CARGO_TARGET_TMPDIR"));
    let saved = std::fs::write(&path, input).is_ok();
    panic!(
        "{why}: {what} ({} bytes{})",
        input.len(),
        if saved {
            format!(", saved to {path}")
        } else {
            String::new()
        }
    );
}

fn check_error(e: &DecodeError, len: usize) -> Result<(), String> {
    let text = e.to_string();
    if e.offset > len as u64 {
        return Err(format!(
            "error offset {} past the input's {len} bytes: {text}",
            e.offset
        ));
    }
    if !text.contains("at byte") || e.message.is_empty() {
        return Err(format!("error does not say where or why: {text:?}"));
    }
    Ok(())
}

/// Walks everything a reader of the model may touch, checking the model's invariants.
fn check_profile(p: &Profile) {
    assert!(!p.planes.is_empty(), "Ok with no planes");
    let _ = p.heap_bytes();
    let _ = p.span();
    let touch_stats = |stats: xlens_model::Stats<'_>| {
        for s in stats {
            let _ = p.str(s.key);
            match s.value {
                StatValue::Str(id) | StatValue::Ref(id) => {
                    let _ = p.str(id);
                }
                StatValue::Bytes(b) => {
                    let _ = p.blob(b);
                }
                v => {
                    let _ = (v.as_i64(), v.as_f64());
                }
            }
        }
    };
    for plane in &p.planes {
        let _ = p.str(plane.name);
        touch_stats(plane.stats());
        for md in &plane.event_metadata {
            let _ = (p.str(md.name), p.str(md.display_name));
            if let Some(b) = md.metadata {
                let _ = p.blob(b);
            }
            touch_stats(md.stats());
        }
        for line in &plane.lines {
            let _ = (p.str(line.name), p.str(line.display_name));
            let ev = &line.events;
            let n = ev.len();
            assert_eq!(ev.durations().len(), n);
            assert_eq!(ev.metadata_indices().len(), n);
            assert_eq!(ev.depths().len(), n);
            assert!(
                ev.starts().windows(2).all(|w| w[0] <= w[1]),
                "starts not sorted"
            );
            assert!(ev.starts().iter().all(|&s| s >= 0), "negative start");
            for i in 0..n {
                assert!(plane.metadata_of(line, i).is_some(), "dangling metadata");
                let _ = ev.end(i);
                touch_stats(ev.stats(i));
            }
            for &(i, _) in ev.occurrences() {
                assert!((i as usize) < n, "occurrence of a missing event");
            }
            // The listed flow ends are exactly those the events' stats give (unless the
            // list is their only record).
            if let Some(listed) = ev.flows().filter(|f| !f.not_in_stats) {
                assert_eq!(
                    listed,
                    &flows_in_stats(p, ev),
                    "flow list of {:?}",
                    p.str(line.name)
                );
            }
            assert_eq!(ev.self_times().len(), n);
            let _ = ev.span();
        }
    }
}

/// The flow ends of a line's events read from their stats, as the grouping reads them: per
/// event the last `_p`/`_pt`/`_c`/`_ct` stat of each key, integers as their 64 bits, integral
/// floats through `i64`, any other value removing the key; a producer or consumer where both its
/// id and type are there.
fn flows_in_stats(p: &Profile, ev: &xlens_model::Events) -> xlens_model::Flows {
    let mut out = xlens_model::Flows::default();
    for (consumer, event, ty, id) in flows_in_stats_wide(p, ev) {
        let ty = u32::try_from(ty).expect("a listed flow type fits 32 bits");
        let end = xlens_model::FlowRef { event, ty, id };
        if consumer {
            out.consumers.push(end);
        } else {
            out.producers.push(end);
        }
    }
    out
}

/// Flow stats of a line's events as the importer lists them, types in 64 bits (a full read
/// gives up its list for a type beyond 32 bits).
fn flows_in_stats_wide(p: &Profile, ev: &xlens_model::Events) -> Vec<(bool, u32, u64, u64)> {
    let names = ["_p", "_pt", "_c", "_ct"];
    let mut out = Vec::new();
    for i in 0..ev.len() {
        let mut v: [Option<u64>; 4] = [None; 4];
        for s in ev.stats(i) {
            if let Some(k) = names.iter().position(|n| p.str(s.key) == *n) {
                v[k] = match s.value {
                    StatValue::I64(x) => Some(x as u64),
                    StatValue::U64(x) => Some(x),
                    StatValue::F64(x) if x.fract() == 0.0 => Some(x as i64 as u64),
                    _ => None,
                };
            }
        }
        for (consumer, id, ty) in [(false, v[0], v[1]), (true, v[2], v[3])] {
            if let (Some(id), Some(ty)) = (id, ty) {
                out.push((consumer, i as u32, ty, id));
            }
        }
    }
    out
}

/// A decode that keeps flow stats in the lines' flow lists only agrees with a full one: the
/// same error, or the same events and stats but for the flow stats, whose ends the lists hold
/// (those of a type beyond 32 bits counted in an import warning instead); planes whose event
/// metadata carry flow stats keep them in the stats.
fn agrees_with_flows_only(
    full: &Result<Profile, DecodeError>,
    part: &Result<Profile, DecodeError>,
) -> Result<(), String> {
    let (full, part) = match (full, part) {
        (Err(a), Err(b)) if (a.offset, &a.message) == (b.offset, &b.message) => return Ok(()),
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            return Err(format!(
                "full read {:?}, flows-only read {:?}",
                a.as_ref().err(),
                b.as_ref().err()
            ))
        }
    };
    let is_flow = |p: &Profile, k: StrId| ["_p", "_pt", "_c", "_ct"].contains(&p.str(k));
    let stats_text = |p: &Profile, st: xlens_model::Stats<'_>, drop_flows: bool| {
        st.iter()
            .filter(|s| !(drop_flows && is_flow(p, s.key)))
            .map(|s| format!("{}={}", p.str(s.key), s.value.display(&p.strings)))
            .collect::<Vec<_>>()
    };
    if full.planes.len() != part.planes.len() {
        return Err("plane counts differ".into());
    }
    let mut wide = 0u64;
    for (a, b) in full.planes.iter().zip(&part.planes) {
        let md_flows = a
            .event_metadata
            .iter()
            .any(|m| m.stats().iter().any(|s| is_flow(full, s.key)));
        if a.lines.len() != b.lines.len() {
            return Err("line counts differ".into());
        }
        for (la, lb) in a.lines.iter().zip(&b.lines) {
            let (ea, eb) = (&la.events, &lb.events);
            if ea.starts() != eb.starts()
                || ea.durations() != eb.durations()
                || ea.metadata_indices() != eb.metadata_indices()
            {
                return Err(format!("events of line {:?} differ", full.str(la.name)));
            }
            let listed_only = eb.flows().is_some_and(|f| f.not_in_stats);
            if listed_only == md_flows {
                return Err(format!(
                    "line {:?}: flows listed only {listed_only}, metadata flows {md_flows}",
                    full.str(la.name)
                ));
            }
            for i in 0..ea.len() {
                if stats_text(full, ea.stats(i), listed_only)
                    != stats_text(part, eb.stats(i), false)
                {
                    return Err(format!(
                        "stats of event {i} of line {:?} differ",
                        full.str(la.name)
                    ));
                }
            }
            if !listed_only {
                continue;
            }
            let got = eb.flows().map_or_else(Vec::new, |f| {
                let mut v: Vec<_> = f
                    .producers
                    .iter()
                    .map(|x| (false, x.event, x.ty as u64, x.id))
                    .chain(
                        f.consumers
                            .iter()
                            .map(|x| (true, x.event, x.ty as u64, x.id)),
                    )
                    .collect();
                v.sort_unstable();
                v
            });
            let mut want = flows_in_stats_wide(full, ea);
            wide += want.iter().filter(|x| x.2 > u32::MAX as u64).count() as u64;
            want.retain(|x| x.2 <= u32::MAX as u64);
            want.sort_unstable();
            if got != want {
                return Err(format!(
                    "flow list of line {:?} differs from the full read's stats",
                    full.str(la.name)
                ));
            }
        }
    }
    let warned = part
        .import_warnings
        .iter()
        .find(|w| w.contains("type beyond 32 bits"))
        .and_then(|w| w.split(' ').next()?.parse::<u64>().ok())
        .unwrap_or(0);
    if warned != wide {
        return Err(format!(
            "{wide} flow ends of a type beyond 32 bits, {warned} in the import warning"
        ));
    }
    Ok(())
}

/// Decodes `input`; panics (with `what` and a saved copy of the input) if decoding panics, an
/// error is malformed, or an Ok profile breaks the model's invariants.
fn check(input: &[u8], what: &dyn Fn() -> String) -> Option<Profile> {
    let res = match catch_unwind(AssertUnwindSafe(|| decode(input))) {
        Ok(r) => r,
        Err(_) => fail(input, &what(), "decode panicked"),
    };
    let flows_only = |input: &[u8]| {
        let leave = xlens_xspace::LeaveOut {
            stats: &[],
            flow_stats: true,
        };
        xlens_xspace::decode_leaving_out(input, &|_, _| {}, leave, xlens_xspace::Release::Lines)
    };
    match catch_unwind(AssertUnwindSafe(|| {
        let part = flows_only(input);
        if let Ok(p) = &part {
            check_profile(p);
        }
        agrees_with_flows_only(&res, &part)
    })) {
        Ok(Ok(())) => {}
        Ok(Err(why)) => fail(input, &what(), &why),
        Err(_) => fail(input, &what(), "decode with flows in lists only panicked"),
    }
    match res {
        Ok(p) => {
            if catch_unwind(AssertUnwindSafe(|| check_profile(&p))).is_err() {
                fail(input, &what(), "decoded profile is inconsistent");
            }
            Some(p)
        }
        Err(e) => {
            if let Err(why) = check_error(&e, input.len()) {
                fail(input, &what(), &why);
            }
            None
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Mutations.

fn mutate_once(rng: &mut Rng, v: &mut Vec<u8>, donor: &[u8]) -> String {
    if v.is_empty() {
        let n = rng.range(1, 4);
        *v = rng.bytes(n);
        return "replace the empty input with random bytes".into();
    }
    let len = v.len();
    match rng.below(7) {
        0 => {
            let at = rng.below(len);
            v.truncate(at);
            format!("truncate at {at}")
        }
        1 => {
            let mut d = Vec::new();
            for _ in 0..rng.range(1, 4) {
                let (at, bit) = (rng.below(len), rng.below(8));
                v[at] ^= 1 << bit;
                d.push(format!("{at}.{bit}"));
            }
            format!("flip bits {}", d.join(" "))
        }
        2 => {
            let at = rng.below(len);
            let n = rng.range(1, 8).min(len - at);
            for b in &mut v[at..at + n] {
                *b = match rng.below(3) {
                    0 => [0x00, 0x7f, 0x80, 0xff][rng.below(4)],
                    _ => rng.next_u64() as u8,
                };
            }
            format!("overwrite {n} bytes at {at}")
        }
        3 => {
            let at = rng.below(len + 1);
            let n = rng.range(1, 8);
            let b = rng.bytes(n);
            v.splice(at..at, b);
            format!("insert {n} bytes at {at}")
        }
        4 => {
            let at = rng.below(len);
            let n = rng.range(1, 16).min(len - at);
            v.drain(at..at + n);
            format!("delete {n} bytes at {at}")
        }
        5 => {
            let from = rng.below(donor.len());
            let n = rng.range(1, 256).min(donor.len() - from);
            let chunk = donor[from..from + n].to_vec();
            let at = rng.below(len + 1);
            if rng.one_in(2) {
                let end = (at + n).min(len);
                v.splice(at..end, chunk);
                format!("splice {n} bytes from {from} over {at}")
            } else {
                v.splice(at..at, chunk);
                format!("splice {n} bytes from {from} in at {at}")
            }
        }
        _ => {
            // Like a profile that went through a lossy UTF-8 conversion.
            let high: Vec<usize> = (0..len).filter(|&i| v[i] >= 0x80).collect();
            if high.is_empty() {
                v[rng.below(len)] = 0xff;
                return "set a byte to 0xff".into();
            }
            let mut at: Vec<usize> = if rng.one_in(8) {
                high
            } else {
                (0..rng.range(1, 8))
                    .map(|_| high[rng.below(high.len())])
                    .collect()
            };
            at.sort_unstable();
            at.dedup();
            for &i in at.iter().rev() {
                v.splice(i..i + 1, [0xef, 0xbf, 0xbd]);
            }
            format!("replace {} high bytes with EF BF BD", at.len())
        }
    }
}

/// One to four stacked mutations of `base`.
fn mutate(rng: &mut Rng, base: &[u8]) -> (Vec<u8>, String) {
    let mut v = base.to_vec();
    let n = if rng.one_in(4) { rng.range(2, 4) } else { 1 };
    let d: Vec<String> = (0..n).map(|_| mutate_once(rng, &mut v, base)).collect();
    (v, d.join("; "))
}

#[derive(Default)]
struct Tally {
    ok: usize,
    err: usize,
}

impl Tally {
    fn add(&mut self, r: Option<Profile>) {
        match r {
            Some(_) => self.ok += 1,
            None => self.err += 1,
        }
    }
}

// ------------------------------------------------------------------------------------------------
// 1. Mutations of real data.

#[test]
fn mutated_real_fixtures_never_panic() {
    const FULL_FILE_MUTATIONS: usize = 2;
    const SAMPLES: usize = 5;
    const MUTATIONS_PER_SAMPLE: usize = 100;
    let t = Instant::now();
    let mut tally = Tally::default();
    for (fi, (name, bytes)) in fixtures().iter().enumerate() {
        let seed = 0x0dec_0de0 + fi as u64;
        let mut rng = Rng::new(seed);
        let full = check(bytes, &|| format!("{name} as is")).expect("the fixture decodes");
        assert!(full.event_count() > 0);

        // A lossy UTF-8 round trip of the whole file, as happened to the upstream sample.
        let lossy = String::from_utf8_lossy(bytes).into_owned().into_bytes();
        assert!(
            check(&lossy, &|| format!("{name} through lossy UTF-8")).is_none(),
            "{name}: a lossy UTF-8 copy decoded"
        );

        // A few mutations of the whole file (slow in debug: each may decode megabytes).
        for k in 0..FULL_FILE_MUTATIONS {
            let (m, d) = mutate(&mut rng, bytes);
            tally.add(check(&m, &|| {
                format!("{name} (seed {seed:#x}) full mutation {k}: {d}")
            }));
        }

        // Many mutations of small XSpaces cut out of the file.
        for s in 0..SAMPLES * scale() {
            let (sample, n_events) = shrink(bytes, &mut rng, 3, 40);
            let p = check(&sample, &|| format!("{name} sample {s}"))
                .unwrap_or_else(|| panic!("{name}: sample {s} does not decode"));
            assert_eq!(p.event_count(), n_events, "{name} sample {s}");
            assert_eq!(p.planes.len(), full.planes.len(), "{name} sample {s}");
            for k in 0..MUTATIONS_PER_SAMPLE {
                let (m, d) = mutate(&mut rng, &sample);
                tally.add(check(&m, &|| {
                    format!("{name} (seed {seed:#x}) sample {s} mutation {k}: {d}")
                }));
            }
        }
    }
    eprintln!(
        "mutated real fixtures: {} decoded, {} rejected, in {:?}",
        tally.ok,
        tally.err,
        t.elapsed()
    );
    // Both outcomes must occur, or the mutations are not exercising anything.
    assert!(tally.ok > 50 && tally.err > 50);
}

/// Everything a decoded profile holds, with strings resolved (so it compares across string
/// tables built in a different order).
fn canonical(p: &Profile) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let val = |v: StatValue| match v {
        StatValue::Str(s) | StatValue::Ref(s) => format!("{:?}", p.str(s)),
        StatValue::Bytes(b) => format!("bytes {:?}", p.blob(b)),
        other => format!("{other:?}"),
    };
    let stats = |st: xlens_model::Stats<'_>| {
        st.iter()
            .map(|s| format!("{}={}", p.str(s.key), val(s.value)))
            .collect::<Vec<_>>()
            .join(",")
    };
    let _ = writeln!(
        out,
        "origin {} {} errors {:?} warnings {:?} hosts {:?} import {:?}",
        p.origin_ps, p.origin_is_wall_clock, p.errors, p.warnings, p.hostnames, p.import_warnings
    );
    for pl in &p.planes {
        let _ = writeln!(
            out,
            "plane {} {:?} [{}]",
            pl.id,
            p.str(pl.name),
            stats(pl.stats())
        );
        for m in &pl.event_metadata {
            let _ = writeln!(
                out,
                " md {} {:?} {:?} {:?} {:?} [{}]",
                m.id,
                p.str(m.name),
                p.str(m.display_name),
                m.metadata.map(|b| p.blob(b).len()),
                m.child_ids,
                stats(m.stats())
            );
        }
        for l in &pl.lines {
            let ev = &l.events;
            let _ = writeln!(
                out,
                " line {} {} {:?} {:?} {} {} occ {:?}",
                l.id,
                l.display_id,
                p.str(l.name),
                p.str(l.display_name),
                l.timestamp_ns,
                l.duration_ps,
                ev.occurrences()
            );
            for i in 0..ev.len() {
                let _ = writeln!(
                    out,
                    "  {} {} {} {} [{}]",
                    ev.start(i),
                    ev.dur(i),
                    ev.meta(i),
                    ev.depth(i),
                    stats(ev.stats(i))
                );
            }
        }
    }
    out
}

/// Decodes on one thread and on two (every plane split by line); both must give the same profile
/// or the same error.
fn same_both_ways(bytes: &[u8], what: &str) -> bool {
    let seq = decode_with_threads(bytes, &|_, _| {}, 1, usize::MAX);
    let par = decode_with_threads(bytes, &|_, _| {}, 2, 0);
    match (&seq, &par) {
        (Ok(a), Ok(b)) => assert_eq!(canonical(a), canonical(b), "{what}"),
        (Err(a), Err(b)) => assert_eq!(a, b, "{what}"),
        _ => panic!(
            "{what}: sequential {:?}, parallel {:?}",
            seq.is_ok(),
            par.is_ok()
        ),
    }
    seq.is_ok()
}

#[test]
fn parallel_line_decoding_gives_the_sequential_result() {
    let mut ok = 0;
    let mut err = 0;
    for (fi, (name, bytes)) in fixtures().iter().enumerate() {
        assert!(same_both_ways(bytes, name), "{name} decodes");
        let mut rng = Rng::new(0x9a4a_11e1 + fi as u64);
        for s in 0..3 {
            let (sample, _) = shrink(bytes, &mut rng, 4, 40);
            for k in 0..40 {
                let (m, d) = mutate(&mut rng, &sample);
                if same_both_ways(&m, &format!("{name} sample {s} mutation {k}: {d}")) {
                    ok += 1;
                } else {
                    err += 1;
                }
            }
        }
    }
    // Both outcomes must occur (errors in some line, and line-level changes that still decode).
    assert!(ok > 20 && err > 20, "{ok} decoded, {err} rejected");
}

// ------------------------------------------------------------------------------------------------
// 2. Random inputs.

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(0xb17e5);
    let mut tally = Tally::default();
    for k in 0..2000 * scale() {
        let n = if rng.one_in(2) {
            rng.below(64)
        } else {
            rng.below(4096)
        };
        let mut v = rng.bytes(n);
        // Half of them look like an XSpace with one plane, so the plane decoder sees them.
        if k % 2 == 1 {
            let mut head = vec![0x0a];
            put_varint(&mut head, v.len() as u64);
            v.splice(0..0, head);
        }
        tally.add(check(&v, &|| format!("random bytes #{k}")));
    }
    assert!(tally.err > 0);
}

/// Random protobuf that knows nothing of the schema: small field numbers (which hit the real
/// fields) with any wire type, nested messages, and now and then a bad wire type or a lying length.
fn random_message(rng: &mut Rng, depth: usize) -> Vec<u8> {
    let mut m = Pb::new();
    for _ in 0..rng.below(8) {
        let field = if rng.one_in(8) {
            rng.range(1, 1 << 20) as u64
        } else {
            rng.range(1, 12) as u64
        };
        m = match rng.below(20) {
            0..=6 => m.varint(field, rng.interesting()),
            7 => m.fixed64(field, rng.next_u64()),
            8 => m.fixed32(field, rng.next_u64() as u32),
            9 => m.tag(field, [3, 4, 6, 7][rng.below(4)]),
            10 => {
                // A length that does not match what follows.
                let n = rng.below(16);
                let body = rng.bytes(n);
                let mut m = m.tag(field, LEN);
                put_varint(&mut m.0, (body.len() + rng.range(1, 4)) as u64);
                m.0.extend_from_slice(&body);
                m
            }
            11..=13 => {
                let b = rng.name();
                m.bytes(field, &b)
            }
            _ if depth < 4 => {
                let inner = random_message(rng, depth + 1);
                m.bytes(field, &inner)
            }
            _ => m.varint(field, rng.interesting()),
        };
    }
    m.0
}

#[test]
fn random_protobuf_never_panics() {
    let mut rng = Rng::new(0x9b);
    let mut tally = Tally::default();
    for k in 0..2000 * scale() {
        let m = random_message(&mut rng, 0);
        tally.add(check(&m, &|| format!("random protobuf #{k}")));
    }
    assert!(tally.err > 0);
}

/// A random XSpace that follows the schema (so it must decode), with extreme values. Returns the
/// bytes and the number of events per plane.
fn random_space(rng: &mut Rng) -> (Vec<u8>, Vec<usize>) {
    let mut s = Pb::new();
    let mut counts = Vec::new();
    for _ in 0..rng.range(1, 3) {
        let mut plane = Pb::new().varint(1, rng.interesting()).bytes(2, &rng.name());
        // Ids mostly from a small pool, so that events find their metadata (or not).
        let id = |rng: &mut Rng| {
            if rng.one_in(8) {
                rng.interesting() as i64
            } else {
                rng.below(8) as i64
            }
        };
        let random_stat = |rng: &mut Rng| {
            let st = Pb::new().int(1, id(rng));
            match rng.below(7) {
                0 => st.fixed64(2, rng.next_u64()),
                1 => st.varint(3, rng.interesting()),
                2 => st.varint(4, rng.interesting()),
                3 => st.bytes(5, &rng.name()),
                4 => st.bytes(6, &rng.name()),
                5 => st.int(7, id(rng)),
                _ => st,
            }
        };
        for _ in 0..rng.below(6) {
            let (k, v) = (id(rng), id(rng));
            let mut md = Pb::new().int(1, v).bytes(2, &rng.name());
            if rng.one_in(3) {
                md = md.bytes(3, &rng.name()).bytes(4, &rng.name());
            }
            for _ in 0..rng.below(3) {
                md = md.msg(5, random_stat(rng));
            }
            if rng.one_in(3) {
                md = md.int(6, id(rng));
                let mut packed = Vec::new();
                for _ in 0..rng.below(4) {
                    put_varint(&mut packed, rng.interesting());
                }
                md = md.bytes(6, &packed);
            }
            let entry = if rng.one_in(6) {
                Pb::new().msg(2, md)
            } else {
                Pb::new().int(1, k).msg(2, md)
            };
            plane = plane.msg(4, entry);
        }
        for _ in 0..rng.below(6) {
            let k = id(rng);
            let md = Pb::new()
                .int(1, k)
                .bytes(2, &rng.name())
                .bytes(3, &rng.name());
            plane = plane.msg(5, Pb::new().int(1, k).msg(2, md));
        }
        for _ in 0..rng.below(3) {
            plane = plane.msg(6, random_stat(rng));
        }
        let mut n_events = 0;
        for _ in 0..rng.below(4) {
            let ts = match rng.below(4) {
                0 => 0,
                1 => rng.below(1000) as u64,
                2 => 1_700_000_000_000_000_000 + rng.below(1_000_000) as u64,
                _ => rng.interesting(),
            };
            let mut line = Pb::new()
                .varint(1, rng.interesting())
                .bytes(2, &rng.name())
                .varint(3, ts)
                .varint(9, rng.interesting());
            for _ in 0..rng.below(20) {
                let small = |rng: &mut Rng| {
                    if rng.one_in(6) {
                        rng.interesting()
                    } else {
                        rng.below(100_000) as u64
                    }
                };
                let mut e = Pb::new()
                    .int(1, id(rng))
                    .varint(2, small(rng))
                    .varint(3, small(rng));
                for _ in 0..rng.below(3) {
                    e = e.msg(4, random_stat(rng));
                }
                if rng.one_in(5) {
                    e = e.varint(5, rng.interesting());
                }
                line = line.msg(4, e);
                n_events += 1;
            }
            if rng.one_in(3) {
                line = line.varint(10, rng.interesting()).bytes(11, &rng.name());
            }
            plane = plane.msg(3, line);
        }
        s = s.msg(1, plane);
        counts.push(n_events);
        if rng.one_in(4) {
            s = s.bytes(2 + rng.below(3) as u64, &rng.name());
        }
    }
    (s.0, counts)
}

#[test]
fn random_valid_xspaces_decode_and_survive_mutation() {
    let mut rng = Rng::new(0x5eed);
    let mut tally = Tally::default();
    for k in 0..400 * scale() {
        let (bytes, counts) = random_space(&mut rng);
        let p = check(&bytes, &|| format!("random XSpace #{k}"))
            .unwrap_or_else(|| panic!("random valid XSpace #{k} was rejected"));
        let got: Vec<usize> = p.planes.iter().map(|pl| pl.event_count()).collect();
        assert_eq!(got, counts, "random XSpace #{k}");
        for j in 0..8 {
            let (m, d) = mutate(&mut rng, &bytes);
            tally.add(check(&m, &|| {
                format!("random XSpace #{k} mutation {j}: {d}")
            }));
        }
    }
    assert!(tally.ok > 0 && tally.err > 0);
}

// ------------------------------------------------------------------------------------------------
// 3. Truncation is an error.

/// Cuts `bytes` strictly inside the payload of top-level plane `plane` and checks the error.
fn assert_cut_reported(label: &str, bytes: &[u8], plane: &Field<'_>, cut: usize) {
    assert!(plane.body_at <= cut && cut < plane.end);
    let e = match decode(&bytes[..cut]) {
        Ok(p) => panic!(
            "{label}: cut at {cut} inside the plane at {} gave a profile with {} planes",
            plane.tag_at,
            p.planes.len()
        ),
        Err(e) => e,
    };
    // The plane's length (just after its one-byte tag) is what runs past the end.
    assert_eq!(
        e.offset,
        plane.tag_at as u64 + 1,
        "{label}: cut at {cut}: {e}"
    );
    assert!(e.offset < cut as u64, "{label}: {e}");
    assert!(e.message.contains("runs past the end"), "{label}: {e}");
    assert_eq!(e.context, "XSpace", "{label}: {e}");
}

#[test]
fn truncation_inside_a_plane_is_an_error() {
    let mut rng = Rng::new(0x7c);
    for (name, bytes) in fixtures() {
        let planes: Vec<Field> = parse(bytes).into_iter().filter(|f| f.num == 1).collect();
        let last = planes.last().unwrap();
        // Whole files: two cuts in the last plane (each decodes every plane before it) and one
        // at the middle of the file when that is inside a plane's payload.
        for cut in [(last.body_at + last.end) / 2, last.end - 1] {
            assert_cut_reported(name, bytes, last, cut);
        }
        let mid = bytes.len() / 2;
        if let Some(p) = planes.iter().find(|p| p.body_at < mid && mid < p.end) {
            assert_cut_reported(name, bytes, p, mid);
        }

        // Small samples: every plane, many cuts.
        for _ in 0..3 {
            let (sample, _) = shrink(bytes, &mut rng, 2, 10);
            let fields = parse(&sample);
            for p in fields.iter().filter(|f| f.num == 1 && f.body_at < f.end) {
                for _ in 0..5 {
                    let cut = p.body_at + rng.below(p.end - p.body_at);
                    assert_cut_reported(name, &sample, p, cut);
                }
                // Inside the length itself, when it has more than one byte.
                if p.body_at - p.tag_at > 2 {
                    let e = decode(&sample[..p.tag_at + 2]).unwrap_err();
                    assert_eq!(e.offset, p.tag_at as u64 + 1, "{name}: {e}");
                    assert!(e.message.contains("truncated varint"), "{name}: {e}");
                }
            }
        }
    }
}

#[test]
fn truncation_deep_inside_a_line_reports_the_innermost_length() {
    // A valid message whose last plane is cut inside an event: the top-level length is what runs
    // past the end, whatever is inside.
    let plane = Pb::new()
        .str(2, "/device:GPU:0")
        .msg(4, event_md(1, "op"))
        .msg(3, Pb::new().str(2, "stream").msg(4, event(1, 0, 10)));
    let bytes = space([Pb::new().str(2, "/host:CPU"), plane]);
    let f = parse(&bytes);
    for cut in f[1].body_at..f[1].end {
        assert_cut_reported("hand-built", &bytes, &f[1], cut);
    }
    // Cut exactly between planes: protobuf cannot tell, so this is one valid plane.
    let p = decode(&bytes[..f[0].end]).unwrap();
    assert_eq!(p.planes.len(), 1);
}

// ------------------------------------------------------------------------------------------------
// 4. Known-bad inputs.

#[test]
fn known_corrupt_upstream_file_is_rejected() {
    let Ok(bytes) = std::fs::read(CORRUPT_UPSTREAM) else {
        // CI has the shared samples beside the checkout: there this must run.
        assert!(
            std::env::var_os("CI").is_none(),
            "{CORRUPT_UPSTREAM} not present"
        );
        eprintln!("skipped: {CORRUPT_UPSTREAM} not present");
        return;
    };
    let e = decode(&bytes).expect_err("the corrupted upstream file decoded");
    check_error(&e, bytes.len()).unwrap();
    // The committed fixture is this file's head.
    let fixture = std::fs::read(CORRUPT_FIXTURE).unwrap();
    assert!(
        fixture == bytes[..CORRUPT_FIXTURE_LEN],
        "{CORRUPT_FIXTURE} is not the first {CORRUPT_FIXTURE_LEN} bytes of {CORRUPT_UPSTREAM}"
    );
}

#[test]
fn committed_corrupt_fixture_is_rejected() {
    let bytes = std::fs::read(CORRUPT_FIXTURE).unwrap();
    assert_eq!(bytes.len(), CORRUPT_FIXTURE_LEN);
    assert!(bytes.windows(3).any(|w| w == [0xef, 0xbf, 0xbd]));
    let e = decode(&bytes).expect_err("the corrupted file decoded");
    check_error(&e, bytes.len()).unwrap();
    // The first plane's length went through the replacement, so it no longer fits.
    assert_eq!(e.offset, 1, "{e}");
    assert!(e.message.contains("runs past the end"), "{e}");
    // And however it is cut or damaged further, nothing panics.
    let mut rng = Rng::new(0xefbfbd);
    for k in 0..200 {
        let n = rng.range(1, 4096);
        let (m, d) = mutate(&mut rng, &bytes[..n]);
        check(&m, &|| format!("corrupt fixture mutation {k}: {d}"));
    }
}

#[test]
fn text_gzip_and_empty_inputs_are_rejected() {
    let e = decode(b"").unwrap_err();
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("empty"), "{e}");
    assert!(e.to_string().contains("at byte 0"), "{e}");

    let gz = std::fs::read(format!("{PROFILE_DIR}/jax_tfm_small/vm.xplane.pb.gz")).unwrap();
    let inputs: [(&str, &[u8]); 6] = [
        ("JSON", br#"{"traceEvents": []}"#),
        (
            "JSON with whitespace",
            b"  {\n  \"traceEvents\": [\n  ]\n}\n",
        ),
        ("text", b"hello world\n"),
        ("CSV", b"name,duration\nfoo,1\n"),
        ("a newline", b"\n"),
        ("gzip", &gz),
    ];
    for (what, input) in inputs {
        let e = decode(input).expect_err(what);
        check_error(&e, input.len()).unwrap_or_else(|m| panic!("{what}: {m}"));
        assert!(e.offset < 16, "{what}: {e}");
    }
    // Protobuf that is well-formed but holds no plane is not an XSpace either.
    let e = decode(&Pb::new().str(4, "host").str(3, "warning").0).unwrap_err();
    assert!(e.message.contains("no XPlane"), "{e}");
}

// ------------------------------------------------------------------------------------------------
// 5. Hand-built XSpaces, checked value by value.

fn key(p: &Profile, name: &str) -> StrId {
    p.key(name)
        .unwrap_or_else(|| panic!("no string {name:?} in the profile"))
}

#[test]
fn event_with_unknown_metadata_id_gets_a_placeholder_and_a_warning() {
    let plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(4, event_md(1, "known"))
        .msg(
            3,
            Pb::new()
                .str(2, "thread")
                .msg(4, event(1, 0, 10))
                .msg(4, event(99, 20, 10))
                .msg(4, event(99, 40, 10))
                .msg(4, event(-7, 60, 10)),
        );
    let p = check(&space([plane]), &|| "unknown metadata".into()).unwrap();
    let plane = &p.planes[0];
    let line = &plane.lines[0];
    let names: Vec<&str> = (0..line.events.len())
        .map(|i| p.str(plane.metadata_of(line, i).unwrap().name))
        .collect();
    assert_eq!(
        names,
        ["known", "<metadata 99>", "<metadata 99>", "<metadata -7>"]
    );
    assert_eq!(plane.event_metadata.len(), 3);
    assert_eq!(plane.event_metadata[1].id, 99);
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    let w = &p.import_warnings[0];
    assert!(w.contains("event metadata id"), "{w}");
    assert!(w.contains("2 event metadata ids"), "{w}");
}

#[test]
fn many_distinct_unknown_metadata_ids_do_not_take_quadratic_time() {
    // A plane whose metadata map was lost: every event refers to an id nobody defines.
    const N: i64 = 20_000;
    let mut line = Pb::new().str(2, "thread");
    for i in 0..N {
        line = line.msg(4, event(i * 3 + 1_000_000, i * 10, 5));
    }
    let bytes = space([Pb::new().str(2, "/host:CPU").msg(3, line)]);
    let t = Instant::now();
    let p = check(&bytes, &|| "many unknown ids".into()).unwrap();
    let took = t.elapsed();
    assert_eq!(p.planes[0].event_metadata.len(), N as usize);
    let line = &p.planes[0].lines[0];
    let last = p.planes[0].metadata_of(line, N as usize - 1).unwrap();
    assert_eq!(
        p.str(last.name),
        format!("<metadata {}>", (N - 1) * 3 + 1_000_000)
    );
    // Generous: linear work is a few milliseconds even unoptimised; quadratic was seconds.
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");
}

#[test]
fn stat_values_and_references_resolve_to_names() {
    let stats = [
        stat_i64(1, -5),
        Pb::new().int(1, 2).varint(3, u64::MAX),
        Pb::new().int(1, 3).fixed64(2, 2.5f64.to_bits()),
        Pb::new().int(1, 4).str(5, "hello"),
        Pb::new().int(1, 5).bytes(6, &[0, 1, 2]),
        Pb::new().int(1, 6).int(7, 7),
        Pb::new().int(1, 6).int(7, 12_345),
        stat_i64(99, 1),
        // Integers of 1 to 8 bytes take the decoder's copy-through path.
        Pb::new().int(1, 8).int(4, 1 << 34),
        Pb::new().int(1, 9).varint(3, (1 << 56) - 1),
        Pb::new().int(1, 3),
    ];
    let mut e = event(1, 0, 10);
    for s in &stats {
        e = e.msg(4, s.clone());
    }
    let mut plane = Pb::new().str(2, "/device:TPU:0");
    for (id, name) in [
        (1, "i"),
        (2, "u"),
        (3, "d"),
        (4, "s"),
        (5, "b"),
        (6, "r"),
        (8, "i2"),
        (9, "u2"),
    ] {
        plane = plane.msg(5, stat_md(id, name));
    }
    plane = plane.msg(5, stat_md(7, "fusion.1"));
    for s in &stats {
        plane = plane.msg(6, s.clone());
    }
    let md = Pb::new()
        .int(1, 1)
        .str(2, "op")
        .str(4, "op display")
        .bytes(3, b"\x08\x01")
        .msg(5, Pb::new().int(1, 6).int(7, 7));
    plane = plane
        .msg(4, Pb::new().int(1, 1).msg(2, md))
        .msg(3, Pb::new().str(2, "line").msg(4, e));
    let p = check(&space([plane]), &|| "stat values".into()).unwrap();

    let plane = &p.planes[0];
    let blob = |v: Option<StatValue>| match v {
        Some(StatValue::Bytes(b)) => p.blob(b).to_vec(),
        v => panic!("not bytes: {v:?}"),
    };
    let ref_name = |v: Option<StatValue>| match v {
        Some(StatValue::Ref(s)) => p.str(s).to_string(),
        v => panic!("not a reference: {v:?}"),
    };
    for (where_, st) in [
        ("event", plane.lines[0].events.stats(0)),
        ("plane", plane.stats()),
    ] {
        let all: Vec<_> = st.iter().collect();
        assert_eq!(all.len(), stats.len(), "{where_}");
        assert_eq!(st.get(key(&p, "i")), Some(StatValue::I64(-5)), "{where_}");
        assert_eq!(
            st.get(key(&p, "u")),
            Some(StatValue::U64(u64::MAX)),
            "{where_}"
        );
        assert_eq!(st.get(key(&p, "d")), Some(StatValue::F64(2.5)), "{where_}");
        assert_eq!(
            st.get(key(&p, "i2")),
            Some(StatValue::I64(1 << 34)),
            "{where_}"
        );
        assert_eq!(
            st.get(key(&p, "u2")),
            Some(StatValue::U64((1 << 56) - 1)),
            "{where_}"
        );
        match st.get(key(&p, "s")) {
            Some(StatValue::Str(s)) => assert_eq!(p.str(s), "hello"),
            v => panic!("{where_}: not a string: {v:?}"),
        }
        assert_eq!(blob(st.get(key(&p, "b"))), [0, 1, 2], "{where_}");
        let refs: Vec<String> = all
            .iter()
            .filter(|s| s.key == key(&p, "r"))
            .map(|s| ref_name(Some(s.value)))
            .collect();
        assert_eq!(refs, ["fusion.1", "<stat 12345>"], "{where_}");
        assert_eq!(
            st.get(key(&p, "<stat 99>")),
            Some(StatValue::I64(1)),
            "{where_}"
        );
        // A stat with a key and no value: the last one with key 3.
        assert_eq!(all.last().unwrap().key, key(&p, "d"));
        assert_eq!(all.last().unwrap().value, StatValue::None);
    }
    let md = &plane.event_metadata[0];
    assert_eq!((md.id, p.str(md.name)), (1, "op"));
    assert_eq!(p.str(md.display_name), "op display");
    assert_eq!(p.blob(md.metadata.unwrap()), b"\x08\x01");
    assert_eq!(ref_name(md.stats().get(key(&p, "r"))), "fusion.1");

    // Two unknown ids (99, 12345) in the event and two in the plane stats.
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    let w = &p.import_warnings[0];
    assert!(
        w.starts_with("4 stats") && w.contains("stat metadata id"),
        "{w}"
    );
}

/// The decoder's copy-through path takes integers of up to 10 bytes and references to ids of one
/// and two bytes; what it copies must read back as the general path would decode it.
#[test]
fn long_integers_and_two_byte_references_read_back_as_written() {
    // A tenth byte with bits beyond 64 (no producer writes one): they are dropped.
    let mut overlong = Pb::new().int(1, 6).tag(4, VARINT);
    overlong.0.extend_from_slice(&[0xff; 9]);
    overlong.0.push(0x7f);
    let stats = [
        stat_i64(1, i64::MIN),
        Pb::new().int(1, 2).varint(3, 1 << 60),
        Pb::new().int(1, 3).int(7, 200),
        Pb::new().int(1, 4).int(7, 300),
        Pb::new().int(1, 5).int(7, 127),
        Pb::new().int(1, 7).int(7, 128),
        stat_i64(200, -7),
        overlong,
        Pb::new().int(1, 8).int(7, 16_000),
    ];
    let mut e = event(1, 0, 10);
    for s in &stats {
        e = e.msg(4, s.clone());
    }
    let mut plane = Pb::new().str(2, "/host:CPU");
    for id in 1..=300 {
        plane = plane.msg(5, stat_md(id, &format!("k{id}")));
    }
    plane = plane
        .msg(4, event_md(1, "op"))
        .msg(3, Pb::new().str(2, "line").msg(4, e));
    let p = check(&space([plane]), &|| "long integers".into()).unwrap();
    let st = p.planes[0].lines[0].events.stats(0);
    let get = |name: &str| st.get(key(&p, name));
    let ref_name = |name: &str| match get(name) {
        Some(StatValue::Ref(s)) => p.str(s).to_string(),
        v => panic!("{name}: not a reference: {v:?}"),
    };
    assert_eq!(st.iter().count(), stats.len());
    assert_eq!(get("k1"), Some(StatValue::I64(i64::MIN)));
    assert_eq!(get("k2"), Some(StatValue::U64(1 << 60)));
    assert_eq!(ref_name("k3"), "k200");
    assert_eq!(ref_name("k4"), "k300");
    assert_eq!(ref_name("k5"), "k127");
    assert_eq!(ref_name("k7"), "k128");
    assert_eq!(get("k200"), Some(StatValue::I64(-7)));
    assert_eq!(get("k6"), Some(StatValue::I64(-1)));
    assert_eq!(ref_name("k8"), "<stat 16000>");
}

#[test]
fn events_out_of_order_are_sorted_with_their_stats_and_occurrences() {
    let ev = |md, off, dur| event(md, off, dur).msg(4, stat_i64(1, off));
    let line = Pb::new()
        .int(1, 7)
        .str(2, "python3")
        .int(3, 1_000)
        .int(9, 300)
        .int(10, 8)
        .str(11, "Python")
        .msg(4, ev(1, 10, 5))
        .msg(4, ev(2, 20, 5).int(5, 3))
        .msg(4, ev(1, 0, 100))
        .msg(4, ev(2, 200, 1).int(5, 7));
    let plane = Pb::new()
        .int(1, 42)
        .str(2, "/host:CPU")
        .msg(5, stat_md(1, "at"))
        .msg(4, event_md(1, "a"))
        .msg(4, event_md(2, "b"))
        .msg(3, line);
    let p = check(&space([plane]), &|| "out of order".into()).unwrap();
    assert!(p.import_warnings.is_empty(), "{:?}", p.import_warnings);
    let plane = &p.planes[0];
    assert_eq!((plane.id, p.str(plane.name)), (42, "/host:CPU"));
    let line = &plane.lines[0];
    assert_eq!((line.id, line.display_id), (7, 8));
    assert_eq!(
        (p.str(line.name), p.str(line.display_name)),
        ("python3", "Python")
    );
    assert_eq!((line.timestamp_ns, line.duration_ps), (1_000, 300));
    let e = &line.events;
    assert_eq!(e.starts(), [0, 10, 20, 200]);
    assert!(e.starts().windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(e.durations(), [100, 5, 5, 1]);
    assert_eq!(e.depths(), [0, 1, 1, 0]);
    let names: Vec<&str> = (0..4)
        .map(|i| p.str(plane.metadata_of(line, i).unwrap().name))
        .collect();
    assert_eq!(names, ["a", "a", "b", "b"]);
    for i in 0..4 {
        assert_eq!(
            e.stats(i).get(key(&p, "at")),
            Some(StatValue::I64(e.start(i))),
            "event {i} lost its stats"
        );
    }
    assert_eq!(e.occurrences(), [(2, 3), (3, 7)]);
    // The line starts 1000 ns into the producer's clock and its first event is at its start.
    assert_eq!(p.origin_ps, 1_000_000);
    assert!(!p.origin_is_wall_clock);
}

#[test]
fn lines_are_placed_on_one_time_axis() {
    let line =
        |name: &str, ts: i64, off: i64| Pb::new().str(2, name).int(3, ts).msg(4, event(1, off, 10));
    // Two relative lines: 5 ns apart.
    let plane = Pb::new()
        .str(2, "p")
        .msg(4, event_md(1, "op"))
        .msg(3, line("a", 100, 0))
        .msg(3, line("b", 105, 0))
        .msg(3, Pb::new().str(2, "empty").int(3, 1));
    let p = check(&space([plane]), &|| "relative lines".into()).unwrap();
    let starts: Vec<&[i64]> = p.planes[0]
        .lines
        .iter()
        .map(|l| l.events.starts())
        .collect();
    assert_eq!(starts, [&[0][..], &[5_000], &[]]);
    assert_eq!(p.origin_ps, 100_000);
    assert!(p.import_warnings.is_empty(), "{:?}", p.import_warnings);

    // A line at 0 next to a wall-clock one: too far apart for one i64 picosecond axis. The
    // decoder keeps the wall-clock line's events at their offsets and says so.
    let epoch_ns = 1_700_000_000_000_000_000;
    let plane = Pb::new()
        .str(2, "p")
        .msg(4, event_md(1, "op"))
        .msg(3, line("relative", 0, 5_000))
        .msg(3, line("wall", epoch_ns, 7_000));
    let p = check(&space([plane]), &|| "relative and wall-clock lines".into()).unwrap();
    let lines = &p.planes[0].lines;
    assert_eq!(lines[0].events.starts(), [0]);
    assert_eq!(lines[1].events.starts(), [2_000]);
    assert_eq!(lines[1].timestamp_ns, epoch_ns);
    assert!(!p.origin_is_wall_clock);
    assert_eq!(p.origin_ps, 5_000);
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    assert!(
        p.import_warnings[0].contains("`wall`") && p.import_warnings[0].contains("too far"),
        "{:?}",
        p.import_warnings
    );

    // Extreme offsets: nothing overflows and every start stays non-negative.
    for (ts, offs) in [
        (0, [i64::MIN, i64::MAX]),
        (i64::MAX, [i64::MIN, 0]),
        (i64::MIN, [-1, i64::MAX]),
        (-5, [i64::MIN + 1, i64::MIN]),
    ] {
        let plane = Pb::new()
            .str(2, "p")
            .msg(3, line("x", ts, offs[0]))
            .msg(3, line("y", 0, offs[1]));
        let p = check(&space([plane]), &|| format!("extreme times {ts} {offs:?}")).unwrap();
        let (min, _) = p.span().unwrap();
        assert_eq!(min, 0, "{ts} {offs:?}");
    }
}

#[test]
fn child_ids_packed_and_unpacked() {
    let mut packed = Vec::new();
    for v in [3u64, 300, 70_000, (-2i64) as u64] {
        put_varint(&mut packed, v);
    }
    let md = Pb::new()
        .int(1, 5)
        .str(2, "fusion")
        .int(6, 1)
        .int(6, 2)
        .bytes(6, &packed)
        .int(6, 4)
        .bytes(6, &[]);
    let plane = Pb::new().str(2, "p").msg(4, Pb::new().int(1, 5).msg(2, md));
    let p = check(&space([plane]), &|| "child ids".into()).unwrap();
    let md = &p.planes[0].event_metadata[0];
    assert_eq!(md.child_ids, [1, 2, 3, 300, 70_000, -2, 4]);

    // A packed list that ends inside a varint is an error at that varint.
    let md = Pb::new().int(1, 5).bytes(6, &[0x05, 0x80]);
    let bytes = space([Pb::new().msg(4, Pb::new().int(1, 5).msg(2, md))]);
    let e = decode(&bytes).unwrap_err();
    assert_eq!(e.offset as usize, bytes.len() - 1, "{e}");
    assert!(e.message.contains("truncated varint"), "{e}");
}

#[test]
fn empty_messages_and_map_entry_fallbacks() {
    // An empty plane, an empty stat, an empty metadata entry, an empty line and an empty event.
    let plane = Pb::new()
        .msg(6, Pb::new())
        .msg(4, Pb::new())
        .msg(3, Pb::new())
        .msg(3, Pb::new().msg(4, Pb::new()));
    // Entries whose key is missing (the value's id is used) or differs from it (the key wins).
    let keyless = Pb::new().msg(2, Pb::new().int(1, 9).str(2, "from value"));
    let keyed = Pb::new()
        .int(1, 10)
        .msg(2, Pb::new().int(1, 11).str(2, "from key"));
    let named = Pb::new()
        .str(2, "named")
        .msg(4, keyless)
        .msg(4, keyed)
        .msg(5, Pb::new().msg(2, Pb::new().int(1, 3).str(2, "k3")))
        .msg(6, stat_i64(3, 1))
        .msg(3, Pb::new().msg(4, event(9, 0, 1)).msg(4, event(10, 1, 1)));
    let p = check(&space([Pb::new(), plane, named]), &|| {
        "empty messages".into()
    })
    .unwrap();
    assert_eq!(p.planes.len(), 3);
    let empty = &p.planes[0];
    assert_eq!((empty.id, p.str(empty.name)), (0, ""));
    assert!(empty.lines.is_empty() && empty.event_metadata.is_empty());

    let plane = &p.planes[1];
    let stats: Vec<_> = plane.stats().iter().collect();
    assert_eq!(stats.len(), 1);
    assert_eq!(p.str(stats[0].key), "<stat 0>");
    assert_eq!(stats[0].value, StatValue::None);
    assert_eq!(plane.event_metadata.len(), 1);
    assert_eq!(
        (
            plane.event_metadata[0].id,
            p.str(plane.event_metadata[0].name)
        ),
        (0, "")
    );
    assert_eq!(plane.lines.len(), 2);
    assert!(plane.lines[0].events.is_empty());
    let line = &plane.lines[1];
    assert_eq!(line.events.len(), 1);
    assert_eq!((line.events.start(0), line.events.dur(0)), (0, 0));
    assert_eq!(plane.metadata_of(line, 0).unwrap().id, 0);

    let plane = &p.planes[2];
    let line = &plane.lines[0];
    let md: Vec<(i64, &str)> = (0..2)
        .map(|i| plane.metadata_of(line, i).unwrap())
        .map(|m| (m.id, p.str(m.name)))
        .collect();
    assert_eq!(md, [(9, "from value"), (10, "from key")]);
    assert_eq!(plane.stats().get(key(&p, "k3")), Some(StatValue::I64(1)));
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    assert!(p.import_warnings[0].starts_with("1 stats"));
}

#[test]
fn producer_errors_hostnames_and_unknown_fields() {
    // Unknown fields of every wire type in every message are skipped.
    let junk = |m: Pb| {
        m.varint(100, 1)
            .fixed64(101, 2)
            .str(102, "x")
            .fixed32(103, 3)
    };
    let plane = junk(
        Pb::new()
            .str(2, "p")
            .msg(4, junk(event_md(1, "op")))
            .msg(5, junk(stat_md(2, "s")))
            .msg(
                3,
                junk(Pb::new().msg(4, junk(event(1, 0, 5)).msg(4, junk(stat_i64(2, 8))))),
            ),
    );
    let bytes = junk(
        Pb::new()
            .str(2, "producer error")
            .msg(1, plane)
            .str(3, "producer warning")
            .str(4, "host-a")
            .bytes(4, b"host-\xff"),
    );
    let p = check(&bytes.0, &|| "unknown fields".into()).unwrap();
    assert_eq!(p.errors, ["producer error"]);
    assert_eq!(p.warnings, ["producer warning"]);
    assert_eq!(p.hostnames, ["host-a", "host-\u{fffd}"]);
    let plane = &p.planes[0];
    assert_eq!(plane.event_count(), 1);
    let line = &plane.lines[0];
    assert_eq!(p.str(plane.metadata_of(line, 0).unwrap().name), "op");
    assert_eq!(
        line.events.stats(0).get(key(&p, "s")),
        Some(StatValue::I64(8))
    );
    assert_eq!(p.import_warnings.len(), 1, "{:?}", p.import_warnings);
    assert!(p.import_warnings[0].contains("UTF-8"));
}

#[test]
fn nested_error_offsets_are_absolute() {
    // Wrong wire types and bad tags deep inside: the offset is where the bad field is in the file.
    let prefix = Pb::new().str(4, "host"); // some bytes before the plane
    let cases: [(&str, Pb, &str); 4] = [
        ("event field 1 as bytes", Pb::new().str(1, "x"), "wire type"),
        ("wire type 7", Pb::new().tag(1, 7), "wire type 7"),
        ("field number 0", Pb::new().tag(0, 0), "field number 0"),
        ("varint of 11 bytes", Pb::new().tag(2, 0), "longer than 10"),
    ];
    for (what, mut bad, msg) in cases {
        if what.starts_with("varint") {
            bad.0.extend_from_slice(&[0xff; 10]);
            bad.0.push(0x01);
        }
        let ev = event(1, 0, 5).msg(4, stat_i64(1, 1));
        let bad_len = bad.len();
        let mut ev_bytes = ev.0.clone();
        ev_bytes.extend_from_slice(&bad.0);
        let line = Pb::new().str(2, "l").bytes(4, &ev_bytes);
        let plane = Pb::new().str(2, "p").msg(4, event_md(1, "op")).msg(3, line);
        let mut bytes = prefix.0.clone();
        bytes.extend_from_slice(&Pb::new().msg(1, plane).0);
        // The bad field is the last thing in the event, which is the last thing in the file.
        let bad_at = bytes.len() - bad_len;
        let e = decode(&bytes).expect_err(what);
        check_error(&e, bytes.len()).unwrap();
        assert!(e.message.contains(msg), "{what}: {e}");
        assert_eq!(e.context, "XEvent", "{what}: {e}");
        // A wrong wire type is reported just past the tag, a long varint where it starts (after
        // its tag), a bad tag at the tag.
        let want = if what.starts_with("event field") || what.starts_with("varint") {
            bad_at + 1
        } else {
            bad_at
        };
        assert_eq!(e.offset as usize, want, "{what}: {e}");
    }
}

#[test]
fn consumed_ranges_lie_in_the_file_and_never_overlap() {
    for (name, bytes) in fixtures() {
        let seen = std::sync::Mutex::new(Vec::new());
        decode_with(bytes, &|a, b| seen.lock().unwrap().push((a, b))).unwrap();
        let mut seen = seen.into_inner().unwrap();
        assert!(!seen.is_empty(), "{name}");
        seen.sort_unstable();
        assert!(
            seen.iter().all(|&(a, b)| a <= b && b <= bytes.len()),
            "{name}: {seen:?}"
        );
        // Lines are released inside their plane, planes after their lines: ranges nest or are
        // disjoint, never partly overlap.
        for (i, &(a, b)) in seen.iter().enumerate() {
            for &(c, d) in &seen[i + 1..] {
                assert!(d <= b || c >= b, "{name}: {a}..{b} and {c}..{d}");
            }
        }
    }
}

#[test]
fn decoded_lines_know_their_stat_keys() {
    // Readers skip lines by `may_have_stat`: on real profiles it must be exact (true for every
    // key some event of the line has, false for every other key of the profile).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir");
    for (file, gz) in [
        ("plugins/profile/jax_mlp_small/vm.xplane.pb", false),
        ("plugins/profile/tf_keras_cnn_small/vm.xplane.pb.gz", true),
    ] {
        let raw = std::fs::read(root.join(file)).unwrap();
        let bytes = if gz {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut out)
                .unwrap();
            out
        } else {
            raw
        };
        let p = xlens_xspace::decode(&bytes).unwrap();
        let mut all = std::collections::BTreeSet::new();
        for plane in &p.planes {
            for line in &plane.lines {
                for i in 0..line.events.len() {
                    all.extend(line.events.stats(i).iter().map(|s| s.key));
                }
            }
        }
        assert!(all.len() > 3, "{file}");
        let mut skippable = 0;
        for plane in &p.planes {
            for line in &plane.lines {
                let ev = &line.events;
                let has: std::collections::BTreeSet<_> = (0..ev.len())
                    .flat_map(|i| ev.stats(i).iter().map(|s| s.key))
                    .collect();
                for k in &all {
                    assert_eq!(ev.may_have_stat(*k), has.contains(k), "{file}");
                    skippable += usize::from(!has.contains(k));
                }
            }
        }
        assert!(skippable > 0, "{file}");
    }
}

#[test]
fn flow_and_op_stat_names_get_one_byte_ids() {
    // The stat names events carry most are interned first: ids below 16 keep each of their
    // stats' headers to one byte in the model.
    let mut seen = 0;
    for (file, bytes) in fixtures() {
        let p = decode(bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        for name in [
            "_p",
            "_c",
            "_pt",
            "_ct",
            "hlo_op",
            "correlation_id",
            "group_id",
        ] {
            if let Some(k) = p.key(name) {
                assert!(k.0 < 16, "{file}: {name} has id {}", k.0);
                seen += 1;
            }
        }
    }
    assert!(seen >= 4, "the fixtures carry flow and op stats");
}

#[test]
fn large_lines_whose_events_change_size_decode_whole() {
    // Lines above the decoder's sampling size, whose first part has events of another size
    // than the rest: the columns reserved from the sample are too large or too small, and
    // every event must still come out, with its stats.
    for small_first in [true, false] {
        let mut line = Pb::new().str(2, "line");
        let n = 40_000;
        for i in 0..n {
            let big = (i < n / 2) != small_first;
            let mut e = event(1, i as i64 * 10, 5).msg(4, stat_i64(1, i as i64));
            if big {
                e = e.msg(4, Pb::new().int(1, 2).str(5, &"x".repeat(40 + i % 7)));
            }
            line = line.msg(4, e);
        }
        assert!(line.len() > 1 << 20);
        let plane = Pb::new()
            .str(2, "/host:CPU")
            .msg(4, event_md(1, "op"))
            .msg(5, stat_md(1, "i"))
            .msg(5, stat_md(2, "s"))
            .msg(3, line);
        for threads in [1, 2] {
            let p = decode_with_threads(&space([plane.clone()]), &|_, _| {}, threads, 0).unwrap();
            let ev = &p.planes[0].lines[0].events;
            assert_eq!(ev.len(), n, "small first: {small_first}");
            let ki = key(&p, "i");
            for i in [0, 1, n / 2 - 1, n / 2, n - 1] {
                assert_eq!(ev.start(i), i as i64 * 10);
                assert_eq!(ev.stats(i).get(ki), Some(StatValue::I64(i as i64)));
            }
        }
    }
}

#[test]
fn flow_ends_are_listed_as_the_stats_give_them() {
    let (p_, pt, c, ct, other) = (1, 2, 300, 4, 5);
    let line = Pb::new()
        .str(2, "worker")
        // Recorded in end order: the enclosing event comes after its children.
        .msg(
            4,
            event(1, 10, 5)
                .msg(4, stat_i64(pt, 2))
                .msg(4, stat_i64(p_, 5)),
        )
        .msg(
            4,
            event(1, 0, 100)
                .msg(4, stat_i64(ct, 2))
                .msg(4, stat_i64(c, 5))
                .msg(4, stat_i64(other, 77))
                // A negative id (ten bytes) and an integral float type: the general path.
                .msg(4, stat_i64(p_, -3))
                .msg(4, Pb::new().int(1, pt).fixed64(2, 1.0f64.to_bits())),
        )
        // A reference where an id should be: no producer.
        .msg(
            4,
            event(1, 20, 5)
                .msg(4, stat_i64(pt, 7))
                .msg(4, Pb::new().int(1, p_).int(7, other)),
        )
        // An id without a type: no consumer.
        .msg(4, event(1, 30, 5).msg(4, stat_i64(c, 9)))
        // The last of two ids counts.
        .msg(
            4,
            event(1, 40, 5)
                .msg(4, stat_i64(pt, 3))
                .msg(4, stat_i64(p_, 1))
                .msg(4, stat_i64(p_, 1 << 40)),
        );
    // A type that does not fit 32 bits: that line has no list.
    let wide = Pb::new().str(2, "wide").msg(
        4,
        event(1, 0, 5)
            .msg(4, stat_i64(pt, 1 << 40))
            .msg(4, stat_i64(p_, 1)),
    );
    let mut plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(4, event_md(1, "op"))
        .msg(3, line)
        .msg(3, wide);
    for (id, name) in [
        (p_, "_p"),
        (pt, "_pt"),
        (c, "_c"),
        (ct, "_ct"),
        (other, "x"),
    ] {
        plane = plane.msg(5, stat_md(id, name));
    }
    let p = check(&space([plane]), &|| "flows".into()).unwrap();
    let ev = &p.planes[0].lines[0].events;
    assert_eq!(ev.starts(), &[0, 10, 20, 30, 40]);
    let f = ev.flows().expect("flows listed");
    let end = |event, ty, id| xlens_model::FlowRef { event, ty, id };
    assert_eq!(
        f.producers,
        [end(0, 1, -3i64 as u64), end(1, 2, 5), end(4, 3, 1 << 40)]
    );
    assert_eq!(f.consumers, [end(0, 2, 5)]);
    assert!(p.planes[0].lines[1].events.flows().is_none());
}

#[test]
fn flow_stats_kept_in_the_flow_lists_only_when_asked() {
    // Plane 1: producers and consumers as one-byte ids, a large id (10-byte varint, the
    // general path), a type beyond 32 bits, and another stat. Plane 2: its event metadata
    // carry a flow type, so its events' flow stats stay among the stats.
    let (p, pt, c, ct, x) = (1, 2, 3, 4, 5);
    let stats_md = || {
        [(p, "_p"), (pt, "_pt"), (c, "_c"), (ct, "_ct"), (x, "x")]
            .into_iter()
            .fold(Pb::new(), |pl, (id, n)| pl.msg(5, stat_md(id, n)))
    };
    let flow_event = |at: i64, stats: &[(i64, i64)]| {
        stats
            .iter()
            .fold(event(1, at, 10), |e, &(k, v)| e.msg(4, stat_i64(k, v)))
    };
    let events: [(i64, &[(i64, i64)]); 4] = [
        (0, &[(p, 7), (pt, 1)]),
        (20, &[(x, 3), (c, 7), (ct, 1)]),
        (40, &[(p, -5), (pt, 2)]),
        (60, &[(p, 9), (pt, 1 << 40)]),
    ];
    let line = events
        .into_iter()
        .fold(Pb::new().str(2, "thread"), |l, (at, st)| {
            l.msg(4, flow_event(at, st))
        });
    let one = stats_md()
        .str(2, "/host:CPU")
        .msg(4, event_md(1, "a"))
        .msg(3, line.clone());
    let md_flow = Pb::new()
        .int(1, 1)
        .msg(2, Pb::new().int(1, 1).str(2, "b").msg(5, stat_i64(pt, 1)));
    let two = stats_md()
        .str(2, "/host:other")
        .msg(4, md_flow)
        .msg(3, line);
    let bytes = space([one, two]);
    let full = decode(&bytes);
    let leave = xlens_xspace::LeaveOut {
        stats: &[],
        flow_stats: true,
    };
    let part =
        xlens_xspace::decode_leaving_out(&bytes, &|_, _| {}, leave, xlens_xspace::Release::Lines);
    agrees_with_flows_only(&full, &part).unwrap();
    let (full, part) = (full.unwrap(), part.unwrap());
    // Plane 1: the list is the flows' only record; the wide type is left out and counted.
    let ev = &part.planes[0].lines[0].events;
    let f = ev.flows().unwrap();
    assert!(f.not_in_stats);
    let ends =
        |v: &[xlens_model::FlowRef]| v.iter().map(|x| (x.event, x.ty, x.id)).collect::<Vec<_>>();
    assert_eq!(ends(&f.producers), [(0, 1, 7), (2, 2, -5i64 as u64)]);
    assert_eq!(ends(&f.consumers), [(1, 1, 7)]);
    let keys = |i| {
        ev.stats(i)
            .iter()
            .map(|s| part.str(s.key).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (keys(0), keys(1), keys(3)),
        (vec![], vec!["x".to_string()], vec![])
    );
    assert!(!ev.may_have_stat(part.strings.find("_p").unwrap()));
    assert_eq!(
        part.import_warnings
            .iter()
            .filter(|w| w.starts_with("1 flow ends had a type beyond 32 bits"))
            .count(),
        1,
        "{:?}",
        part.import_warnings
    );
    // The full read gave up its list for the wide type, and keeps every flow stat.
    assert!(full.planes[0].lines[0].events.flows().is_none());
    assert!(full.import_warnings.iter().all(|w| !w.contains("32 bits")));
    // Plane 2 keeps its flow stats, and lists them as usual.
    let ev2 = &part.planes[1].lines[0].events;
    assert_eq!(ev2.stats(0).iter().count(), 2);
    assert!(ev2.flows().is_none_or(|f| !f.not_in_stats));
    let note = part.partial_read.clone().unwrap_or_default();
    assert!(note.contains("flow lists of 1 lines"), "{note}");
    assert_eq!(part.stats_left_out, 0);
}

#[test]
fn stats_left_out_are_counted_and_only_they_are_missing() {
    let e = event(1, 0, 10)
        // One-byte key, integer: the fast path.
        .msg(4, stat_i64(5, 1_234_567))
        // A two-byte key: the general path.
        .msg(4, stat_i64(200, 7))
        // A string value: the general path.
        .msg(4, Pb::new().int(1, 6).str(5, "gpu:0"))
        .msg(4, stat_i64(7, 3))
        // A flow stat: always read, even when asked to leave it out.
        .msg(4, Pb::new().int(1, 1).varint(3, 99));
    let plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(5, stat_md(1, "_p"))
        .msg(5, stat_md(5, "run_id"))
        .msg(5, stat_md(6, "device_ordinal"))
        .msg(5, stat_md(7, "kept"))
        .msg(5, stat_md(200, "_src"))
        .msg(4, event_md(1, "op"))
        .msg(3, Pb::new().str(2, "line").msg(4, e));
    let bytes = space([plane]);
    let names = |p: &Profile| -> Vec<String> {
        p.planes[0].lines[0]
            .events
            .stats(0)
            .iter()
            .map(|s| p.str(s.key).to_string())
            .collect()
    };
    let full = decode(&bytes).unwrap();
    assert_eq!(
        names(&full),
        ["run_id", "_src", "device_ordinal", "kept", "_p"]
    );
    assert_eq!(
        (full.stats_left_out, full.partial_read.is_none()),
        (0, true)
    );
    let left = ["run_id", "_src", "device_ordinal", "_p", "absent"];
    let leave = xlens_xspace::LeaveOut {
        stats: &left,
        flow_stats: false,
    };
    let part =
        xlens_xspace::decode_leaving_out(&bytes, &|_, _| {}, leave, xlens_xspace::Release::Lines)
            .unwrap();
    assert_eq!(names(&part), ["kept", "_p"]);
    assert_eq!(part.stats_left_out, 3);
    let note = part.partial_read.clone().unwrap_or_default();
    assert!(
        note.starts_with("3 event stats not read (run_id, _src"),
        "{note}"
    );
    // On several threads (every plane's lines decoded in parallel) the same.
    let par = xlens_xspace::decode_options(
        &bytes,
        &|_, _| {},
        4,
        0,
        leave,
        xlens_xspace::Release::Lines,
    )
    .unwrap();
    assert_eq!((names(&par), par.stats_left_out), (names(&part), 3));
}

#[test]
fn a_line_is_given_back_in_steps_as_it_is_read_when_asked() {
    // One plane with a 10 MB line (500,000 events with a stat each) and a small one.
    let mut big = Pb::new().str(2, "big");
    for i in 0..500_000 {
        big = big.msg(
            4,
            event(1 + i % 2, i * 1000, 500).msg(4, stat_i64(1, i * 7)),
        );
    }
    let plane = Pb::new()
        .str(2, "/host:CPU")
        .msg(5, stat_md(1, "x"))
        .msg(4, event_md(1, "a"))
        .msg(4, event_md(2, "b"))
        .msg(3, big)
        .msg(3, Pb::new().str(2, "small").msg(4, event(1, 0, 5)));
    let bytes = space([plane]);
    assert!(
        bytes.len() > 2 * xlens_xspace::RELEASE_STEP,
        "{}",
        bytes.len()
    );
    let lines = canonical(&decode(&bytes).unwrap());
    for threads in [1, 2] {
        for as_read in [false, true] {
            let seen = std::sync::Mutex::new(Vec::new());
            let announced = std::sync::Mutex::new(Vec::new());
            let ahead = |a, b| announced.lock().unwrap().push((a, b));
            let release = if as_read {
                xlens_xspace::Release::AsRead {
                    ahead: Some(&ahead),
                }
            } else {
                xlens_xspace::Release::Lines
            };
            let p = xlens_xspace::decode_options(
                &bytes,
                &|a, b| seen.lock().unwrap().push((a, b)),
                threads,
                0,
                xlens_xspace::LeaveOut::default(),
                release,
            )
            .unwrap();
            assert!(
                canonical(&p) == lines,
                "as read {as_read}, {threads} threads"
            );
            let seen = seen.into_inner().unwrap();
            let announced = announced.into_inner().unwrap();
            // Given back before the line's end: ranges of one step or more, one after the
            // other, from the line's start, each announced before it was read.
            let partial: Vec<_> = seen
                .iter()
                .filter(|&&(a, b)| b - a < bytes.len() / 2 && b - a >= xlens_xspace::RELEASE_STEP)
                .collect();
            assert_eq!(!partial.is_empty(), as_read, "{seen:?}");
            assert_eq!(announced.is_empty(), !as_read, "{announced:?}");
            for w in partial.windows(2) {
                assert_eq!(w[0].1, w[1].0, "{seen:?}");
            }
            for &&(a, _) in &partial {
                assert!(
                    announced
                        .iter()
                        .any(|&(s, e)| s == a && e - s == xlens_xspace::RELEASE_STEP),
                    "{a} not announced: {announced:?}"
                );
            }
        }
    }
}
