//! A minimal zero-copy protobuf wire-format reader that tracks absolute byte offsets for errors.

use crate::DecodeError;

/// Internal result: the error is boxed so that the hot path returns small values in registers.
pub(crate) type Res<T> = Result<T, Box<DecodeError>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    Varint,
    Fixed64,
    Len,
    Fixed32,
}

/// Reads fields from one message body. `base` is the offset of `buf[0]` within the whole file.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], base: usize, what: &'static str) -> Self {
        Reader {
            buf,
            pos: 0,
            base,
            what,
        }
    }

    /// Absolute offset of the next unread byte.
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[cold]
    pub(crate) fn err(&self, at: usize, msg: impl Into<String>) -> Box<DecodeError> {
        Box::new(DecodeError {
            offset: at as u64,
            message: msg.into(),
            context: self.what,
        })
    }

    #[inline(always)]
    pub(crate) fn varint(&mut self) -> Res<u64> {
        let buf = self.buf;
        let start = self.pos;
        if let Some(&b) = buf.get(start) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(b as u64);
            }
        }
        // Up to 8 bytes at once: find the terminating byte (high bit clear) in a 64-bit load,
        // then squeeze the 7-bit groups together.
        if let Some(eight) = buf.get(start..start + 8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(eight);
            let x = u64::from_le_bytes(a);
            let stops = !x & 0x8080_8080_8080_8080;
            if stops != 0 {
                let len = (stops.trailing_zeros() / 8 + 1) as usize;
                let keep = if len == 8 {
                    u64::MAX
                } else {
                    (1u64 << (8 * len)) - 1
                };
                let x = x & keep & 0x7f7f_7f7f_7f7f_7f7f;
                let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
                let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
                let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
                self.pos = start + len;
                return Ok(x);
            }
        }
        self.varint_slow()
    }

    /// Varints of 9 or 10 bytes, and any varint within 8 bytes of the end of the buffer.
    #[inline(never)]
    fn varint_slow(&mut self) -> Res<u64> {
        let buf = self.buf;
        let start = self.pos;
        if let Some(chunk) = buf.get(start..start + 10) {
            // At least 10 bytes left: no bounds checks in the loop.
            let mut v = 0u64;
            for (i, &b) in chunk.iter().enumerate() {
                v |= ((b & 0x7f) as u64) << (7 * i);
                if b < 0x80 {
                    self.pos = start + i + 1;
                    return Ok(v);
                }
            }
            return Err(self.err(self.base + start, "varint longer than 10 bytes"));
        }
        let mut v = 0u64;
        let mut pos = start;
        let mut shift = 0u32;
        loop {
            let Some(&b) = buf.get(pos) else {
                return Err(self.err(self.base + start, "truncated varint"));
            };
            pos += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                self.pos = pos;
                return Ok(v);
            }
            shift += 7;
            if shift >= 70 {
                return Err(self.err(self.base + start, "varint longer than 10 bytes"));
            }
        }
    }

    /// The next unread byte (the first byte of a field header), if any.
    #[inline(always)]
    pub(crate) fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// Consumes a one-byte field header seen with [`Reader::peek`].
    #[inline(always)]
    pub(crate) fn bump(&mut self) {
        self.pos += 1;
    }

    /// Next field header, or `None` at the end of the message.
    #[inline(always)]
    pub(crate) fn field(&mut self) -> Res<Option<(u32, Wire)>> {
        if self.at_end() {
            return Ok(None);
        }
        let before = self.pos;
        let tag = self.varint()?;
        let num = tag >> 3;
        let wire = match tag & 7 {
            0 => Wire::Varint,
            1 => Wire::Fixed64,
            2 => Wire::Len,
            5 => Wire::Fixed32,
            _ => return Err(self.bad_tag(before, tag)),
        };
        if num == 0 || num > u32::MAX as u64 >> 3 {
            return Err(self.bad_tag(before, tag));
        }
        Ok(Some((num as u32, wire)))
    }

    #[cold]
    #[inline(never)]
    fn bad_tag(&self, before: usize, tag: u64) -> Box<DecodeError> {
        let (num, w) = (tag >> 3, tag & 7);
        let msg = if num == 0 || num > u32::MAX as u64 >> 3 {
            format!("invalid field number {num}")
        } else {
            format!("unsupported wire type {w} for field {num} (not a valid message)")
        };
        self.err(self.base + before, msg)
    }

    #[inline]
    pub(crate) fn fixed64(&mut self) -> Res<u64> {
        let Some(b) = self.buf.get(self.pos..self.pos + 8) else {
            return Err(self.err(self.offset(), "truncated fixed64"));
        };
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        self.pos += 8;
        Ok(u64::from_le_bytes(a))
    }

    /// A length-delimited payload, with its absolute start offset.
    #[inline(always)]
    pub(crate) fn bytes(&mut self) -> Res<(&'a [u8], usize)> {
        let before = self.pos;
        let len = self.varint()?;
        let start = self.pos;
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
    fn past_end(&self, before: usize, len: u64) -> Box<DecodeError> {
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
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos.min(self.buf.len())..]
    }

    /// A sub-message reader over a length-delimited field.
    #[inline(always)]
    pub(crate) fn message(&mut self, what: &'static str) -> Res<Reader<'a>> {
        let (b, at) = self.bytes()?;
        Ok(Reader::new(b, at, what))
    }

    pub(crate) fn skip(&mut self, wire: Wire) -> Res<()> {
        match wire {
            Wire::Varint => {
                self.varint()?;
            }
            Wire::Fixed64 => {
                self.fixed64()?;
            }
            Wire::Fixed32 => {
                if self.pos + 4 > self.buf.len() {
                    return Err(self.err(self.offset(), "truncated fixed32"));
                }
                self.pos += 4;
            }
            Wire::Len => {
                self.bytes()?;
            }
        }
        Ok(())
    }

    /// Checks that a field has the expected wire type.
    #[inline]
    pub(crate) fn expect(&self, num: u32, got: Wire, want: Wire) -> Res<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_lengths() {
        let buf = [0x96, 0x01, 0x0a, 0x02, b'h', b'i'];
        let mut r = Reader::new(&buf, 100, "test");
        assert_eq!(r.varint().unwrap(), 150);
        assert_eq!(r.field().unwrap(), Some((1, Wire::Len)));
        let (b, at) = r.bytes().unwrap();
        assert_eq!(b, b"hi");
        assert_eq!(at, 104);
        assert!(r.at_end());
    }

    #[test]
    fn varints_of_every_length() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            1 << 20,
            (1 << 35) + 7,
            (1 << 49) - 1,
            1 << 55,
            (1 << 56) + 3,
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            let mut x = v;
            while x >= 0x80 {
                buf.push((x as u8) | 0x80);
                x >>= 7;
            }
            buf.push(x as u8);
            let n = buf.len();
            buf.extend_from_slice(&[0xff; 12]); // trailing bytes must not be read
            let mut r = Reader::new(&buf, 0, "t");
            assert_eq!(r.varint().unwrap(), v, "{v}");
            assert_eq!(r.offset(), n);
            // And with nothing after it (the short path).
            let mut r = Reader::new(&buf[..n], 0, "t");
            assert_eq!(r.varint().unwrap(), v, "{v}");
        }
    }

    #[test]
    fn truncated_length_reports_offset() {
        let buf = [0x0a, 0x05, b'h'];
        let mut r = Reader::new(&buf, 10, "XSpace");
        r.field().unwrap();
        let e = r.bytes().unwrap_err();
        assert_eq!(e.offset, 11);
        assert!(e.message.contains("past the end"), "{e}");
    }
}
