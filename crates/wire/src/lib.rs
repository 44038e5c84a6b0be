//! The protobuf wire format, read: the one reader of varints and message fields that every xlens
//! reader of protobuf bytes uses (the XSpace importer, the model's stats encoding, which stores
//! integers as protobuf varints, and the analysis layer's readers of serialized HLO and memory
//! access breakdowns).
//!
//! * [`varint_at`]: the varint at a position. One byte is one compare, two bytes two; up to 8
//!   bytes are one 64-bit load and a few shifts ([`varint_fast`], inline); only varints of 9 or
//!   10 bytes and longer ones within 8 bytes of the end of the buffer are read byte by byte, out
//!   of line. [`Cursor::varint`] is the same code.
//! * [`Cursor`]: a position in one message's bytes: field headers, values of every wire type,
//!   skipping (groups included, to their matching end). Errors say at which byte of the whole
//!   input, and in which message, reading failed.
//! * [`fields`]: a message's fields as an iterator of (number, [`Value`]).
//!
//! Every read is bounds-checked and nothing panics, whatever the bytes.
//!
//! ```
//! use xlens_wire::{fields, Value};
//! // Field 1: varint 150; field 2: the bytes "hi".
//! let msg = [0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i'];
//! let got: Vec<_> = fields(&msg).collect::<Result<_, _>>().unwrap();
//! assert_eq!(got, [(1, Value::Varint(150)), (2, Value::Len(b"hi"))]);
//! ```

use std::fmt;

/// The longest varint: 10 bytes hold 64 bits.
pub const MAX_VARINT_LEN: usize = 10;

/// The largest field number protobuf allows.
pub const MAX_FIELD_NUMBER: u32 = (1 << 29) - 1;

/// How deeply groups may nest inside one another (protobuf's default recursion limit).
pub const MAX_GROUP_DEPTH: u32 = 100;

/// How a field's value is encoded (the low 3 bits of its header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireType {
    Varint,
    Fixed64,
    /// Length-delimited: bytes, strings, messages, packed repeated fields.
    Len,
    /// The start of a group (deprecated; fields up to the matching [`WireType::EndGroup`]).
    StartGroup,
    EndGroup,
    Fixed32,
}

/// Why bytes do not read as the message expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Byte offset in the whole input where reading failed.
    pub offset: u64,
    pub message: String,
    /// The message being read there (e.g. `XEvent`).
    pub context: &'static str,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at byte {} (in {}): {}",
            self.offset, self.context, self.message
        )
    }
}

impl std::error::Error for Error {}

/// A read's result: the error is boxed so that the hot path returns small values in registers.
pub type Result<T> = std::result::Result<T, Box<Error>>;

/// The value of a varint of 1 to 8 bytes held as the low bytes of `word` (little-endian, the
/// bytes above it zero, continuation bits as they are).
#[inline(always)]
pub fn varint_word(word: u64) -> u64 {
    let x = word & 0x7f7f_7f7f_7f7f_7f7f;
    // Pack the 7-bit groups: pairs, then quads, then all eight.
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// The varint at `buf[pos..]` and the position after it; `None` when it is truncated or longer
/// than 10 bytes.
///
/// Bytes after the varint may be loaded but never change the result, so a caller whose message
/// ends before the end of `buf` checks the returned position against its own end.
#[inline(always)]
pub fn varint_at(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    match varint_fast(buf, pos) {
        Some(v) => Some(v),
        None => varint_slow(buf, pos),
    }
}

/// The inline part of [`varint_at`]: a varint of one or two bytes, or of up to 8 when `buf` has 8
/// bytes from `pos`; `None` for the rest (which [`varint_at`] reads byte by byte, out of line).
#[inline(always)]
pub fn varint_fast(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    let b0 = *buf.get(pos)?;
    if b0 < 0x80 {
        return Some((b0 as u64, pos + 1));
    }
    // Two bytes: most field headers and lengths.
    let b1 = *buf.get(pos + 1)?;
    if b1 < 0x80 {
        return Some(((b0 & 0x7f) as u64 | (b1 as u64) << 7, pos + 2));
    }
    let eight = buf.get(pos..pos.wrapping_add(8))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(eight);
    let x = u64::from_le_bytes(a);
    // The first byte without a continuation bit ends the varint.
    let stops = !x & 0x8080_8080_8080_8080;
    if stops == 0 {
        return None;
    }
    // 8 × the length.
    let bits = stops.trailing_zeros() + 1;
    let v = varint_word(x & (u64::MAX >> (64 - bits)));
    Some((v, pos + (bits / 8) as usize))
}

/// [`varint_at`] byte by byte, out of line.
#[inline(never)]
fn varint_slow(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
    varint_bytewise(buf, pos)
}

/// A varint byte by byte: varints of 9 or 10 bytes, and any varint within 8 bytes of the end of
/// the buffer.
#[inline(always)]
fn varint_bytewise(buf: &[u8], start: usize) -> Option<(u64, usize)> {
    if let Some(ten) = buf.get(start..start.wrapping_add(MAX_VARINT_LEN)) {
        // At least 10 bytes left: no bounds checks in the loop.
        let mut v = 0u64;
        for (i, &b) in ten.iter().enumerate() {
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                return Some((v, start + i + 1));
            }
        }
        return None;
    }
    // Fewer than 10 bytes left.
    let mut v = 0u64;
    let mut pos = start;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(pos)?;
        pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Some((v, pos));
        }
        shift += 7;
        // Never taken with fewer than 10 bytes; a bounded loop compiles to faster code.
        if shift >= 70 {
            return None;
        }
    }
}

/// The position after the varint at `buf[pos..]`, found without decoding it: past the end of
/// `buf` when the varint does not end there (callers that walk up to an end stop there). Bytes
/// up to the first one without a continuation bit, however many.
#[inline(always)]
pub fn skip_varint(buf: &[u8], pos: usize) -> usize {
    let Some(&b) = buf.get(pos) else {
        return pos.saturating_add(1);
    };
    if b < 0x80 {
        return pos + 1;
    }
    if let Some(eight) = buf.get(pos..pos + 8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(eight);
        let stops = !u64::from_le_bytes(a) & 0x8080_8080_8080_8080;
        if stops != 0 {
            return pos + (stops.trailing_zeros() as usize + 1) / 8;
        }
    }
    let mut pos = pos;
    while buf.get(pos).is_some_and(|b| b & 0x80 != 0) {
        pos += 1;
    }
    pos + 1
}

/// Field number and wire type of a valid field header; `None` for field number 0 or above
/// [`MAX_FIELD_NUMBER`], or wire type 6 or 7.
#[inline(always)]
pub fn split_tag(tag: u64) -> Option<(u32, WireType)> {
    let num = tag >> 3;
    let wire = match tag & 7 {
        0 => WireType::Varint,
        1 => WireType::Fixed64,
        2 => WireType::Len,
        3 => WireType::StartGroup,
        4 => WireType::EndGroup,
        5 => WireType::Fixed32,
        _ => return None,
    };
    if num == 0 || num > MAX_FIELD_NUMBER as u64 {
        return None;
    }
    Some((num as u32, wire))
}

/// A field's value, by wire type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    /// A length-delimited value's bytes.
    Len(&'a [u8]),
    /// The bytes between a group's start and its end.
    Group(&'a [u8]),
    Fixed32(u32),
}

/// A position in the bytes of one message. `base` is the offset of the message's first byte in
/// the whole input, and `what` its name, for errors.
#[derive(Clone, Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    #[inline]
    pub fn new(buf: &'a [u8], base: usize, what: &'static str) -> Self {
        Cursor {
            buf,
            pos: 0,
            base,
            what,
        }
    }

    /// Absolute offset of the next unread byte.
    #[inline]
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// An error at absolute offset `at`, in this message.
    #[cold]
    pub fn err(&self, at: usize, msg: impl Into<String>) -> Box<Error> {
        Box::new(Error {
            offset: at as u64,
            message: msg.into(),
            context: self.what,
        })
    }

    /// A varint ([`varint_at`]: [`varint_fast`] inline, the rest out of line).
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64> {
        match varint_fast(self.buf, self.pos) {
            Some((v, next)) => {
                self.pos = next;
                Ok(v)
            }
            None => self.varint_slow(),
        }
    }

    /// Varints of 9 or 10 bytes, and longer ones within 8 bytes of the end of the message; errors
    /// are made here, so that the hot path only propagates a pointer.
    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u64> {
        match varint_bytewise(self.buf, self.pos) {
            Some((v, next)) => {
                self.pos = next;
                Ok(v)
            }
            None => Err(self.bad_varint()),
        }
    }

    #[cold]
    #[inline(never)]
    fn bad_varint(&self) -> Box<Error> {
        let msg = if self.rest().len() >= MAX_VARINT_LEN {
            "varint longer than 10 bytes"
        } else {
            "truncated varint"
        };
        self.err(self.offset(), msg)
    }

    /// The next unread byte (a one-byte field header, for readers that expect one), if any.
    #[inline(always)]
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Consumes the byte seen with [`Cursor::peek`] (past the end if there was none: every read
    /// there fails).
    #[inline(always)]
    pub fn bump(&mut self) {
        self.pos += 1;
    }

    /// The next field's number and wire type, or `None` at the end of the message. An invalid
    /// header (field number 0 or above [`MAX_FIELD_NUMBER`], wire type 6 or 7) is an error.
    #[inline(always)]
    pub fn field(&mut self) -> Result<Option<(u32, WireType)>> {
        if self.at_end() {
            return Ok(None);
        }
        let before = self.offset();
        let tag = self.varint()?;
        match split_tag(tag) {
            Some(f) => Ok(Some(f)),
            None => Err(self.bad_tag(before, tag)),
        }
    }

    /// The error for field header `tag`, read at absolute offset `at`, when the message has no
    /// such field: an invalid header, or a wire type the reader does not accept (groups, for
    /// messages that have none).
    #[cold]
    #[inline(never)]
    pub fn bad_tag(&self, at: usize, tag: u64) -> Box<Error> {
        let (num, w) = (tag >> 3, tag & 7);
        let msg = if num == 0 || num > MAX_FIELD_NUMBER as u64 {
            format!("invalid field number {num}")
        } else {
            format!("unsupported wire type {w} for field {num} (not a valid message)")
        };
        self.err(at, msg)
    }

    #[inline]
    pub fn fixed64(&mut self) -> Result<u64> {
        let Some(b) = self.buf.get(self.pos..self.pos.wrapping_add(8)) else {
            return Err(self.err(self.offset(), "truncated fixed64"));
        };
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        self.pos += 8;
        Ok(u64::from_le_bytes(a))
    }

    #[inline]
    pub fn fixed32(&mut self) -> Result<u32> {
        let Some(b) = self.buf.get(self.pos..self.pos.wrapping_add(4)) else {
            return Err(self.err(self.offset(), "truncated fixed32"));
        };
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        self.pos += 4;
        Ok(u32::from_le_bytes(a))
    }

    /// A length-delimited value, with the absolute offset of its first byte.
    #[inline(always)]
    pub fn bytes(&mut self) -> Result<(&'a [u8], usize)> {
        let before = self.pos;
        let len = self.varint()?;
        let start = self.pos;
        // A varint read ends within the buffer.
        if len <= (self.buf.len() - start) as u64 {
            let end = start + len as usize;
            self.pos = end;
            Ok((&self.buf[start..end], self.base + start))
        } else {
            Err(self.past_end(before, len))
        }
    }

    #[cold]
    #[inline(never)]
    fn past_end(&self, before: usize, len: u64) -> Box<Error> {
        self.err(
            self.base + before,
            format!(
                "length {len} runs past the end of the enclosing {} ({} bytes left)",
                self.what,
                self.buf.len() - self.pos
            ),
        )
    }

    /// The unread bytes.
    #[inline(always)]
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// A cursor over a length-delimited field that holds message `what`.
    #[inline(always)]
    pub fn message(&mut self, what: &'static str) -> Result<Cursor<'a>> {
        let (b, at) = self.bytes()?;
        Ok(Cursor::new(b, at, what))
    }

    /// The value of field `num`, whose header [`Cursor::field`] returned. A group is read to its
    /// matching end; an end of group here has no start.
    #[inline]
    pub fn value(&mut self, num: u32, wire: WireType) -> Result<Value<'a>> {
        Ok(match wire {
            WireType::Varint => Value::Varint(self.varint()?),
            WireType::Fixed64 => Value::Fixed64(self.fixed64()?),
            WireType::Len => Value::Len(self.bytes()?.0),
            WireType::Fixed32 => Value::Fixed32(self.fixed32()?),
            WireType::StartGroup => {
                let start = self.pos;
                let end = self.skip_group(num, 1)?;
                Value::Group(self.buf.get(start..end).unwrap_or_default())
            }
            WireType::EndGroup => return Err(self.stray_end_group(num)),
        })
    }

    /// Skips the value of field `num`, whose header [`Cursor::field`] returned (see
    /// [`Cursor::value`]).
    #[inline]
    pub fn skip(&mut self, num: u32, wire: WireType) -> Result<()> {
        match wire {
            WireType::Varint => {
                self.varint()?;
            }
            WireType::Fixed64 => {
                self.fixed64()?;
            }
            WireType::Len => {
                self.bytes()?;
            }
            WireType::Fixed32 => {
                self.fixed32()?;
            }
            WireType::StartGroup => {
                self.skip_group(num, 1)?;
            }
            WireType::EndGroup => return Err(self.stray_end_group(num)),
        }
        Ok(())
    }

    /// Reads past the end of group `num` (nested `depth` deep), whose start header was just read;
    /// the position of its end header.
    #[cold]
    fn skip_group(&mut self, num: u32, depth: u32) -> Result<usize> {
        if depth > MAX_GROUP_DEPTH {
            return Err(self.err(
                self.offset(),
                format!("groups nested more than {MAX_GROUP_DEPTH} deep"),
            ));
        }
        loop {
            let before = self.pos;
            match self.field()? {
                None => return Err(self.err(self.offset(), format!("group {num} not closed"))),
                Some((n, WireType::EndGroup)) if n == num => return Ok(before),
                Some((n, WireType::StartGroup)) => {
                    self.skip_group(n, depth + 1)?;
                }
                Some((n, w)) => self.skip(n, w)?,
            }
        }
    }

    #[cold]
    fn stray_end_group(&self, num: u32) -> Box<Error> {
        self.err(
            self.offset(),
            format!("end of group {num} that is not open"),
        )
    }

    /// The next field's number and value, or `None` at the end of the message.
    #[inline]
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>> {
        let Some((num, wire)) = self.field()? else {
            return Ok(None);
        };
        Ok(Some((num, self.value(num, wire)?)))
    }

    /// Checks that field `num` has the expected wire type.
    #[inline]
    pub fn expect(&self, num: u32, got: WireType, want: WireType) -> Result<()> {
        if got == want {
            Ok(())
        } else {
            Err(self.err(
                self.offset(),
                format!("field {num} has wire type {got:?}, expected {want:?}"),
            ))
        }
    }
}

/// The fields of a message as (number, value), in order; after an error, nothing more.
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields {
        cur: Cursor::new(buf, 0, "message"),
        failed: false,
    }
}

/// Iterator of [`fields`].
#[derive(Clone, Debug)]
pub struct Fields<'a> {
    cur: Cursor<'a>,
    failed: bool,
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.cur.next_field().transpose();
        self.failed = matches!(r, Some(Err(_)));
        r
    }
}

impl std::iter::FusedIterator for Fields<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// The reference: byte by byte, as the protobuf specification reads a varint.
    fn plain_varint(buf: &[u8], pos: usize) -> Option<(u64, usize)> {
        let mut v = 0u64;
        for i in 0..MAX_VARINT_LEN {
            let b = *buf.get(pos + i)?;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                return Some((v, pos + i + 1));
            }
        }
        None
    }

    const VALUES: [u64; 13] = [
        0,
        1,
        127,
        128,
        300,
        1 << 20,
        (1 << 35) + 7,
        (1 << 49) - 1,
        1 << 55,
        (1 << 56) + 3,
        (1 << 63) - 1,
        1 << 63,
        u64::MAX,
    ];

    #[test]
    fn varints_of_every_length_with_and_without_bytes_after() {
        for v in VALUES {
            let mut buf = vec![0x55];
            put_varint(&mut buf, v);
            let n = buf.len() - 1;
            buf.extend_from_slice(&[0xff; 12]); // trailing bytes must not change the value
            assert_eq!(varint_at(&buf, 1), Some((v, 1 + n)), "{v}");
            assert_eq!(skip_varint(&buf, 1), 1 + n, "{v}");
            // Nothing after it: the byte-by-byte path.
            assert_eq!(varint_at(&buf[..1 + n], 1), Some((v, 1 + n)), "{v}");
            assert_eq!(skip_varint(&buf[..1 + n], 1), 1 + n, "{v}");
            let mut c = Cursor::new(&buf[1..], 100, "t");
            assert_eq!(c.varint().unwrap(), v);
            assert_eq!(c.offset(), 100 + n);
        }
    }

    #[test]
    fn bad_varints() {
        assert_eq!(varint_at(&[], 0), None);
        assert_eq!(varint_at(&[0x80, 0x80], 0), None);
        assert_eq!(varint_at(&[0x01], 5), None);
        assert_eq!(varint_at(&[0x80; 9], 0), None);
        assert_eq!(varint_at(&[0x80; 10], 0), None);
        assert_eq!(varint_at(&[0xff; 20], 3), None);
        assert_eq!(varint_at(&[0x01], usize::MAX), None);
        // Ten bytes: the last one's bits past 64 are dropped, as protobuf does.
        let mut ten = [0xff; 10];
        ten[9] = 0x7f;
        assert_eq!(varint_at(&ten, 0), Some((u64::MAX, 10)));
        assert_eq!(skip_varint(&[0x80, 0x80], 0), 3);
        assert_eq!(skip_varint(&[], 0), 1);
        assert_eq!(skip_varint(&[], usize::MAX), usize::MAX);
        for (buf, msg) in [
            (&[0x80; 9][..], "truncated varint"),
            (&[0x80; 10][..], "varint longer than 10 bytes"),
        ] {
            let e = Cursor::new(buf, 7, "T").varint().unwrap_err();
            assert_eq!((e.offset, e.message.as_str(), e.context), (7, msg, "T"));
        }
    }

    /// Deterministic pseudo-random numbers (splitmix64).
    fn rng(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[test]
    fn varint_at_equals_the_plain_reading_on_random_bytes() {
        let mut seed = 7;
        for _ in 0..20_000 {
            let len = (rng(&mut seed) % 24) as usize;
            // Mostly continuation bytes, so that every length comes up.
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    let x = rng(&mut seed);
                    (x as u8) | if x >> 61 == 0 { 0 } else { 0x80 }
                })
                .collect();
            for pos in 0..=len + 1 {
                let want = plain_varint(&buf, pos);
                assert_eq!(varint_at(&buf, pos), want, "{buf:x?} @{pos}");
                if let Some((_, next)) = want {
                    assert_eq!(skip_varint(&buf, pos), next);
                }
                let mut c = Cursor::new(buf.get(pos..).unwrap_or_default(), pos, "t");
                match (c.varint(), want) {
                    (Ok(v), Some((w, next))) => assert_eq!((v, c.offset()), (w, next)),
                    (Err(e), None) => assert_eq!(e.offset, pos as u64),
                    (got, want) => panic!("{buf:x?} @{pos}: {got:?} {want:?}"),
                }
            }
        }
    }

    fn msg(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn fields_of_every_wire_type() {
        let m = msg(&[
            &[0x08, 0x96, 0x01],                   // 1: varint 150
            &[0x11, 1, 2, 3, 4, 5, 6, 7, 8],       // 2: fixed64
            &[0x1a, 0x02, b'h', b'i'],             // 3: bytes
            &[0x23, 0x08, 0x01, 0x2b, 0x2c, 0x24], // 4: group { 1: 1, group 5 {} }
            &[0x2d, 1, 0, 0, 0],                   // 5: fixed32
            &[0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00], // 2^29 - 1: varint 0
        ]);
        let got: Vec<_> = fields(&m).collect::<Result<_>>().unwrap();
        assert_eq!(
            got,
            [
                (1, Value::Varint(150)),
                (2, Value::Fixed64(0x0807_0605_0403_0201)),
                (3, Value::Len(b"hi")),
                (4, Value::Group(&[0x08, 0x01, 0x2b, 0x2c])),
                (5, Value::Fixed32(1)),
                (MAX_FIELD_NUMBER, Value::Varint(0)),
            ]
        );
        // Skipping gives the same positions as reading.
        let mut c = Cursor::new(&m, 0, "t");
        let mut n = 0;
        while let Some((num, wire)) = c.field().unwrap() {
            c.skip(num, wire).unwrap();
            n += 1;
        }
        assert_eq!((n, c.offset()), (6, m.len()));
    }

    fn first_error(m: &[u8]) -> Box<Error> {
        let mut it = fields(m);
        for f in it.by_ref() {
            if let Err(e) = f {
                assert!(it.next().is_none(), "nothing after an error");
                return e;
            }
        }
        panic!("{m:x?} read without error");
    }

    #[test]
    fn malformed_messages_say_what_and_where() {
        let cases: [(&[u8], &str, u64); 12] = [
            (&[0x08, 0x01, 0x00], "invalid field number 0", 2),
            (&[0x0e], "unsupported wire type 6 for field 1", 0),
            (&[0x0f], "unsupported wire type 7 for field 1", 0),
            (
                &[0x80, 0x80, 0x80, 0x80, 0x10],
                "invalid field number 536870912",
                0,
            ),
            (&[0x08], "truncated varint", 1),
            (&[0x08, 0x80], "truncated varint", 1),
            (&[0x09, 1, 2, 3], "truncated fixed64", 1),
            (&[0x0d, 1, 2, 3], "truncated fixed32", 1),
            (&[0x0a, 0x05, b'h'], "length 5 runs past the end", 1),
            (&[0x0c], "end of group 1 that is not open", 1),
            (&[0x0b, 0x08, 0x01], "group 1 not closed", 3),
            (&[0x0b, 0x14], "end of group 2 that is not open", 2),
        ];
        for (m, msg, at) in cases {
            let e = first_error(m);
            assert!(e.message.starts_with(msg), "{m:x?}: {e}");
            assert_eq!(e.offset, at, "{m:x?}: {e}");
        }
        // Groups nested as deep as allowed, and one deeper.
        let deep = |d: usize| msg(&[&vec![0x0b; d], &vec![0x0c; d]]);
        assert_eq!(fields(&deep(100)).count(), 1);
        assert!(first_error(&deep(101)).message.contains("nested"));
    }

    #[test]
    fn random_bytes_never_panic_and_skipping_agrees_with_reading() {
        let mut seed = 11;
        for _ in 0..20_000 {
            let len = (rng(&mut seed) % 40) as usize;
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    let x = rng(&mut seed);
                    // Small field numbers of every wire type, and short lengths.
                    if x >> 62 == 0 {
                        (x >> 8) as u8 & 0x3f
                    } else {
                        (x >> 8) as u8
                    }
                })
                .collect();
            let read: Vec<_> = fields(&buf).collect();
            let mut c = Cursor::new(&buf, 0, "message");
            for f in &read {
                let skipped = c.field().and_then(|h| match h {
                    Some((num, wire)) => c.skip(num, wire),
                    None => Ok(()),
                });
                assert_eq!(f.is_ok(), skipped.is_ok(), "{buf:x?}");
                if let (Err(a), Err(b)) = (f, skipped) {
                    assert_eq!(a, &b);
                }
            }
            assert!(c.offset() <= buf.len());
        }
    }
}
