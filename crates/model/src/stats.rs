//! Resolved statistics (key/value pairs) attached to events, event metadata and planes.
//!
//! Stats are stored in a compact byte encoding private to this crate: per stat, a varint header
//! `(key << 3) | kind` followed by the value (integers as the varint of their 64-bit two's
//! complement, as protobuf writes them, so that importers can copy them through:
//! [`encode_int_raw`]). Keys are the interned stat *names* (the producer's
//! numeric stat-metadata ids are resolved while importing), and reference values are resolved to
//! the interned string they point at, so readers never see format-specific ids.

use crate::strings::{StrId, Strings};
use xlens_wire::{skip_varint, varint_at};

const K_I64: u64 = 0;
const K_U64: u64 = 1;
const K_F64: u64 = 2;
const K_STR: u64 = 3;
const K_BYTES: u64 = 4;
const K_REF: u64 = 5;
const K_NONE: u64 = 6;

/// Index of a byte blob in [`crate::Profile::blobs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlobId(pub u32);

/// One stat value, resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatValue {
    I64(i64),
    U64(u64),
    F64(f64),
    Str(StrId),
    /// A reference to another interned string (XPlane `ref_value`), already resolved.
    Ref(StrId),
    Bytes(BlobId),
    /// The producer wrote a stat without a value.
    None,
}

impl StatValue {
    /// The value as the 64 bits of an integer (an integral float through `i64`), as ids such
    /// as flow ids are read; `None` for other values.
    pub fn as_id_bits(&self) -> Option<u64> {
        match *self {
            StatValue::I64(x) => Some(x as u64),
            StatValue::U64(x) => Some(x),
            StatValue::F64(x) if x.fract() == 0.0 => Some(x as i64 as u64),
            _ => None,
        }
    }

    /// The value as a signed integer when it is numeric and integral.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            StatValue::I64(v) => Some(v),
            StatValue::U64(v) => i64::try_from(v).ok(),
            StatValue::F64(v) if v.fract() == 0.0 && v.abs() < 9.0e18 => Some(v as i64),
            _ => None,
        }
    }

    /// The value as a float when it is numeric.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            StatValue::I64(v) => Some(v as f64),
            StatValue::U64(v) => Some(v as f64),
            StatValue::F64(v) => Some(v),
            _ => None,
        }
    }

    /// The interned string for string and reference values.
    pub fn as_str_id(&self) -> Option<StrId> {
        match *self {
            StatValue::Str(s) | StatValue::Ref(s) => Some(s),
            _ => None,
        }
    }

    /// Renders the value as text (numbers in decimal, bytes as a size).
    pub fn display(&self, strings: &Strings) -> String {
        match *self {
            StatValue::I64(v) => v.to_string(),
            StatValue::U64(v) => v.to_string(),
            StatValue::F64(v) => v.to_string(),
            StatValue::Str(s) | StatValue::Ref(s) => strings.get(s).to_string(),
            StatValue::Bytes(_) => "<bytes>".to_string(),
            StatValue::None => String::new(),
        }
    }
}

/// One stat: interned name and value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub key: StrId,
    pub value: StatValue,
}

/// The varint encoding of `v` (below 2^56) as the low bytes of a little-endian integer, and its
/// length.
#[inline(always)]
fn varint_bits(mut v: u64) -> (u64, usize) {
    let mut x = 0u64;
    let mut n = 0;
    while v >= 0x80 {
        x |= ((v & 0x7f) | 0x80) << (8 * n);
        v >>= 7;
        n += 1;
    }
    (x | v << (8 * n), n + 1)
}

/// Appends the varint `v` to `out`.
#[inline(always)]
fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v < 1 << 56 {
        // Built in a register and appended as one 8-byte store, then cut to length: no
        // per-byte stores, and nothing read back from memory (which would stall on the stores).
        let (x, n) = varint_bits(v);
        put_bits(out, x, n as u8);
    } else {
        let mut v = v;
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
}

/// Appends stats in the model's encoding. Used by importers.
#[inline(always)]
pub fn encode_stat(out: &mut Vec<u8>, key: StrId, value: StatValue) {
    let (kind, payload): (u64, u64) = match value {
        StatValue::F64(v) => (K_F64, v.to_bits()),
        StatValue::I64(v) => (K_I64, v as u64),
        StatValue::U64(v) => (K_U64, v),
        StatValue::Str(s) => (K_STR, s.0 as u64),
        StatValue::Ref(s) => (K_REF, s.0 as u64),
        StatValue::Bytes(b) => (K_BYTES, b.0 as u64),
        StatValue::None => (K_NONE, 0),
    };
    out.reserve(24);
    put_varint(out, ((key.0 as u64) << 3) | kind);
    if kind == K_F64 {
        out.extend_from_slice(&payload.to_le_bytes());
    } else {
        put_varint(out, payload);
    }
}

/// A stat key with its headers encoded once, for importers that append many stats of few keys
/// ([`encode_int_raw`], [`encode_ref_pre`]).
#[derive(Clone, Copy, Debug)]
pub struct PreKey {
    /// Header bits and length for unsigned, signed and reference values.
    hdr: [(u64, u8); 3],
}

impl PreKey {
    pub fn new(key: StrId) -> Self {
        let h = |kind: u64| {
            let (bits, n) = varint_bits(((key.0 as u64) << 3) | kind);
            (bits, n as u8)
        };
        PreKey {
            hdr: [h(K_U64), h(K_I64), h(K_REF)],
        }
    }
}

/// A reference target (an interned string) encoded once ([`encode_ref_pre`]).
#[derive(Clone, Copy, Debug)]
pub struct PreRef {
    bits: u64,
    len: u8,
}

impl PreRef {
    pub fn new(target: StrId) -> Self {
        let (bits, n) = varint_bits(target.0 as u64);
        PreRef { bits, len: n as u8 }
    }
}

/// Appends `n` (at most 8) low bytes of `bits`: one unaligned 8-byte store into the spare
/// capacity, then the length set past the `n` bytes kept. (`extend_from_slice` here was an
/// out-of-line call and a `memcpy` per stat field: a twentieth of decoding a large profile.)
#[inline(always)]
fn put_bits(out: &mut Vec<u8>, bits: u64, n: u8) {
    debug_assert!(n <= 8);
    let n = usize::from(n.min(8));
    out.reserve(8);
    let len = out.len();
    // SAFETY: `reserve(8)` leaves at least 8 bytes of capacity past `len`; all 8 are written,
    // and the length only covers the first `n` of them.
    unsafe {
        out.as_mut_ptr()
            .add(len)
            .cast::<[u8; 8]>()
            .write_unaligned(bits.to_le_bytes());
        out.set_len(len + n);
    }
}

/// Appends an integer stat whose value the importer holds as protobuf varint bytes (of a
/// `uint64`, or of an `int64`'s two's complement when `signed`), copied through as they are: the
/// varint's `len` bytes (1 to 8) are the low bytes of `raw`, little-endian.
#[inline(always)]
pub fn encode_int_raw(out: &mut Vec<u8>, key: &PreKey, signed: bool, raw: u64, len: u8) {
    debug_assert!((1..=8).contains(&len));
    let (bits, n) = key.hdr[signed as usize];
    out.reserve(16);
    put_bits(out, bits, n);
    put_bits(out, raw, len);
}

/// [`encode_int_raw`] for a varint of 9 or 10 bytes (a negative `int64`, such as XLA's
/// `run_id`): its first 8 bytes are `raw`, the other 1 or 2 the low bytes of `tail`.
#[inline(always)]
pub fn encode_int_raw_long(
    out: &mut Vec<u8>,
    key: &PreKey,
    signed: bool,
    raw: u64,
    tail: u16,
    tail_len: u8,
) {
    debug_assert!((1..=2).contains(&tail_len));
    let (bits, n) = key.hdr[signed as usize];
    out.reserve(24);
    put_bits(out, bits, n);
    put_bits(out, raw, 8);
    put_bits(out, u64::from(tail), tail_len);
}

/// Appends a reference stat ([`StatValue::Ref`]) from prepared parts.
#[inline(always)]
pub fn encode_ref_pre(out: &mut Vec<u8>, key: &PreKey, target: &PreRef) {
    let (bits, n) = key.hdr[2];
    out.reserve(16);
    put_bits(out, bits, n);
    put_bits(out, target.bits, target.len);
}

/// The value of kind `kind` at `pos`, and the position after it.
#[inline(always)]
fn value_at(buf: &[u8], pos: usize, kind: u64) -> Option<(StatValue, usize)> {
    if kind == K_F64 {
        let bytes = buf.get(pos..pos + 8)?;
        let v = f64::from_le_bytes(<[u8; 8]>::try_from(bytes).ok()?);
        return Some((StatValue::F64(v), pos + 8));
    }
    let (p, next) = varint_at(buf, pos)?;
    let v = match kind {
        K_I64 => StatValue::I64(p as i64),
        K_U64 => StatValue::U64(p),
        K_STR => StatValue::Str(StrId(p as u32)),
        K_REF => StatValue::Ref(StrId(p as u32)),
        K_BYTES => StatValue::Bytes(BlobId(p as u32)),
        _ => StatValue::None,
    };
    Some((v, next))
}

/// Iterator over encoded stats.
#[derive(Clone)]
pub struct StatIter<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl Iterator for StatIter<'_> {
    type Item = Stat;

    #[inline]
    fn next(&mut self) -> Option<Stat> {
        if self.pos >= self.end {
            return None;
        }
        let (head, pos) = varint_at(self.buf, self.pos).filter(|x| x.1 <= self.end)?;
        let (value, pos) = value_at(self.buf, pos, head & 7).filter(|x| x.1 <= self.end)?;
        self.pos = pos;
        Some(Stat {
            key: StrId((head >> 3) as u32),
            value,
        })
    }
}

/// A borrowed list of stats (of one event, metadata or plane).
#[derive(Clone, Copy)]
pub struct Stats<'a> {
    /// The stats are `buf[start..end]`. `buf` may go on past `end` (the next events' stats of
    /// a line), which readers may load ahead but never use.
    buf: &'a [u8],
    start: usize,
    end: usize,
}

impl<'a> Stats<'a> {
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Stats {
            buf,
            start: 0,
            end: buf.len(),
        }
    }

    /// The stats in `buf[start..end]` (none if that is not a range of `buf`).
    #[inline]
    pub(crate) fn within(buf: &'a [u8], start: usize, end: usize) -> Self {
        if start <= end && end <= buf.len() {
            Stats { buf, start, end }
        } else {
            Stats::new(&[])
        }
    }

    #[inline]
    pub fn iter(&self) -> StatIter<'a> {
        StatIter {
            buf: self.buf,
            pos: self.start,
            end: self.end,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.start >= self.end
    }

    /// Calls `f` with `pick`'s answer and the value of every stat for whose key `pick` answers
    /// `Some`; the values of the other stats are skipped without being decoded (cheaper than
    /// [`Stats::iter`] when a reader wants a few keys out of many).
    #[inline]
    pub fn select<T>(
        &self,
        mut pick: impl FnMut(StrId) -> Option<T>,
        mut f: impl FnMut(T, StatValue),
    ) {
        let (buf, end) = (self.buf, self.end);
        let mut pos = self.start;
        while pos < end {
            let Some((head, next)) = varint_at(buf, pos) else {
                return;
            };
            let kind = head & 7;
            match pick(StrId((head >> 3) as u32)) {
                None if kind == K_F64 => pos = next + 8,
                None => pos = skip_varint(buf, next),
                Some(t) => {
                    let Some((value, after)) = value_at(buf, next, kind) else {
                        return;
                    };
                    if after > end {
                        return;
                    }
                    pos = after;
                    f(t, value);
                }
            }
        }
    }

    /// The values of two keys (the first stat of each), in one pass over the stats; a `None`
    /// key is not looked for.
    #[inline]
    pub fn two(
        &self,
        a: Option<StrId>,
        b: Option<StrId>,
    ) -> (Option<StatValue>, Option<StatValue>) {
        let (mut va, mut vb) = (None, None);
        self.select(
            |k| {
                if Some(k) == a {
                    Some(0)
                } else if Some(k) == b {
                    Some(1)
                } else {
                    None
                }
            },
            |which, v| {
                let slot = if which == 0 { &mut va } else { &mut vb };
                if slot.is_none() {
                    *slot = Some(v);
                }
            },
        );
        (va, vb)
    }

    /// Whether a stat with this key is there; values are skipped, not decoded.
    #[inline]
    pub fn has(&self, key: StrId) -> bool {
        let (buf, end) = (self.buf, self.end);
        let mut pos = self.start;
        while pos < end {
            let Some((head, next)) = varint_at(buf, pos) else {
                return false;
            };
            if (head >> 3) == key.0 as u64 {
                return true;
            }
            pos = if head & 7 == K_F64 {
                next + 8
            } else {
                skip_varint(buf, next)
            };
        }
        false
    }

    /// The first stat with this key.
    #[inline]
    pub fn get(&self, key: StrId) -> Option<StatValue> {
        let (buf, end) = (self.buf, self.end);
        let mut pos = self.start;
        while pos < end {
            let (head, next) = varint_at(buf, pos)?;
            if (head >> 3) == key.0 as u64 {
                return value_at(buf, next, head & 7)
                    .filter(|x| x.1 <= end)
                    .map(|x| x.0);
            }
            pos = if head & 7 == K_F64 {
                next + 8
            } else {
                skip_varint(buf, next)
            };
        }
        None
    }
}

impl<'a> IntoIterator for Stats<'a> {
    type Item = Stat;
    type IntoIter = StatIter<'a>;
    #[inline]
    fn into_iter(self) -> StatIter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_gives_the_first_value_of_each_key() {
        let mut buf = Vec::new();
        encode_stat(&mut buf, StrId(1), StatValue::I64(7));
        encode_stat(&mut buf, StrId(2), StatValue::F64(0.5));
        encode_stat(&mut buf, StrId(3), StatValue::U64(9));
        encode_stat(&mut buf, StrId(3), StatValue::U64(10));
        let stats = Stats::new(&buf);
        assert_eq!(
            stats.two(Some(StrId(3)), Some(StrId(1))),
            (Some(StatValue::U64(9)), Some(StatValue::I64(7)))
        );
        assert_eq!(stats.two(None, Some(StrId(4))), (None, None));
        assert_eq!(
            stats.two(Some(StrId(2)), None),
            (Some(StatValue::F64(0.5)), None)
        );
    }

    #[test]
    fn select_sees_exactly_the_picked_stats() {
        let vals = [
            StatValue::I64(-5),
            StatValue::F64(2.5),
            StatValue::U64(1 << 40),
            StatValue::Str(StrId(300)),
            StatValue::Ref(StrId(7)),
            StatValue::Bytes(BlobId(9)),
            StatValue::None,
            StatValue::I64(i64::MIN),
        ];
        let mut buf = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            encode_stat(&mut buf, StrId(i as u32 * 1000), *v);
        }
        let stats = Stats::new(&buf);
        for mask in 0u32..256 {
            let mut got = Vec::new();
            stats.select(
                |k| (mask & (1 << (k.0 / 1000)) != 0).then_some(k.0 / 1000),
                |i, v| got.push((i, v)),
            );
            let want: Vec<(u32, StatValue)> = (0..8u32)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| (i, vals[i as usize]))
                .collect();
            assert_eq!(got, want, "mask {mask:#b}");
        }
        // Every kind of value is skipped to the next stat's key.
        for i in 0..8u32 {
            assert!(stats.has(StrId(i * 1000)), "{i}");
            assert!(!stats.has(StrId(i * 1000 + 1)), "{i}");
        }
        assert!(!Stats::new(&[]).has(StrId(0)));
    }

    #[test]
    fn every_kind_round_trips() {
        let vals = [
            StatValue::I64(-1),
            StatValue::I64(i64::MIN),
            StatValue::I64(i64::MAX),
            StatValue::U64(u64::MAX),
            StatValue::U64(0),
            StatValue::F64(-2.5e300),
            StatValue::Str(StrId(7)),
            StatValue::Ref(StrId(u32::MAX)),
            StatValue::Bytes(BlobId(3)),
            StatValue::None,
        ];
        let mut buf = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            encode_stat(&mut buf, StrId(i as u32 * 1000), *v);
        }
        let back: Vec<_> = Stats::new(&buf).iter().collect();
        assert_eq!(back.len(), vals.len());
        for (i, s) in back.iter().enumerate() {
            assert_eq!(s.key, StrId(i as u32 * 1000));
            assert_eq!(s.value, vals[i]);
        }
        assert_eq!(
            Stats::new(&buf).get(StrId(2000)),
            Some(StatValue::I64(i64::MAX))
        );
    }

    /// Asserts that `a` is what [`encode_stat`] writes for `v` under `k` (as `I64` when
    /// `signed`, else as `U64`), and reads back as that value.
    fn as_encode_stat(a: &[u8], k: StrId, v: i64, signed: bool) {
        let want = if signed {
            StatValue::I64(v)
        } else {
            StatValue::U64(v as u64)
        };
        let mut b = Vec::new();
        encode_stat(&mut b, k, want);
        assert_eq!(a, b, "key {k:?} value {v} signed {signed}");
        assert_eq!(Stats::new(a).get(k), Some(want));
    }

    #[test]
    fn prepared_encoders_match_encode_stat() {
        let keys = [
            StrId(0),
            StrId(5),
            StrId(300),
            StrId(70_000),
            StrId(u32::MAX),
        ];
        let ints: [i64; 8] = [0, 1, 127, 128, 1 << 40, (1 << 56) - 1, -1, i64::MAX];
        for &k in &keys {
            let pk = PreKey::new(k);
            for &v in &ints {
                // The varint protobuf writes for the value (as little-endian bits); values of
                // more than 8 bytes are not for this encoder.
                if v as u64 >= 1 << 56 {
                    continue;
                }
                let (raw, len) = varint_bits(v as u64);
                for signed in [false, true] {
                    let mut a = Vec::new();
                    encode_int_raw(&mut a, &pk, signed, raw, len as u8);
                    as_encode_stat(&a, k, v, signed);
                }
            }
            // Values of 9 and 10 bytes: negative int64s (ten bytes), and 63-bit ones (nine).
            for v in [-1i64, i64::MIN, -4_999_778_667, 1 << 56, i64::MAX] {
                let mut bytes = Vec::new();
                let mut x = v as u64;
                while x >= 0x80 {
                    bytes.push((x as u8) | 0x80);
                    x >>= 7;
                }
                bytes.push(x as u8);
                assert!(bytes.len() > 8, "{v}");
                let raw = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
                let tail = bytes[8..]
                    .iter()
                    .rev()
                    .fold(0u16, |t, &b| (t << 8) | u16::from(b));
                for signed in [false, true] {
                    let mut a = Vec::new();
                    encode_int_raw_long(&mut a, &pk, signed, raw, tail, bytes.len() as u8 - 8);
                    as_encode_stat(&a, k, v, signed);
                }
            }
            for &t in &keys {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                encode_ref_pre(&mut a, &pk, &PreRef::new(t));
                encode_stat(&mut b, k, StatValue::Ref(t));
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn stats_within_a_shared_buffer_end_at_their_range() {
        // Values of every varint length, so that word loads run across the range's end (into
        // the next event's stats) and, at the buffer's end, fall back to bytes.
        let vals: Vec<StatValue> = (0..64)
            .step_by(7)
            .map(|b| StatValue::U64((1u64 << b) | 1))
            .chain([
                StatValue::I64(-3),
                StatValue::F64(0.5),
                StatValue::U64(u64::MAX),
            ])
            .collect();
        let mut buf = Vec::new();
        let mut ranges = Vec::new();
        for round in 0..3u32 {
            let start = buf.len();
            for (i, v) in vals.iter().enumerate() {
                encode_stat(&mut buf, StrId(round * 100 + i as u32), *v);
            }
            ranges.push((start, buf.len()));
        }
        for (round, &(a, b)) in ranges.iter().enumerate() {
            let st = Stats::within(&buf, a, b);
            let all: Vec<Stat> = st.iter().collect();
            let want: Vec<Stat> = vals
                .iter()
                .enumerate()
                .map(|(i, v)| Stat {
                    key: StrId(round as u32 * 100 + i as u32),
                    value: *v,
                })
                .collect();
            assert_eq!(all, want, "round {round}");
            let mut picked = Vec::new();
            st.select(Some, |k, v| picked.push(Stat { key: k, value: v }));
            assert_eq!(picked, want, "round {round}");
            // Picking nothing skips every value and stops at the range's end.
            let mut seen = 0;
            st.select(
                |_| {
                    seen += 1;
                    None::<()>
                },
                |_, _| {},
            );
            assert_eq!(seen, vals.len(), "round {round}");
        }
        assert!(Stats::within(&buf, 5, 2).is_empty());
        assert!(Stats::within(&buf, 0, buf.len() + 1)
            .iter()
            .next()
            .is_none());
    }

    #[test]
    fn truncated_buffer_stops_without_panicking() {
        let mut buf = Vec::new();
        encode_stat(&mut buf, StrId(1), StatValue::F64(1.0));
        for cut in 0..buf.len() {
            let _ = Stats::new(&buf[..cut]).iter().count();
        }
    }
}
