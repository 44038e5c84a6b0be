//! The importer's protobuf reader: the shared [`xlens_wire::Cursor`], with one rule of XSpaces on
//! top: they have no groups, so a group's header means the bytes are not an XSpace (as a header
//! with an invalid wire type does).

use std::ops::{Deref, DerefMut};
use xlens_wire::{Cursor, WireType};

/// Internal result: the error is boxed so that the hot path returns small values in registers.
pub(crate) type Res<T> = xlens_wire::Result<T>;

/// Reads fields from one message body ([`Cursor`]: `base` is the offset of the body's first byte
/// within the whole file, `what` the message's name).
#[derive(Clone)]
pub(crate) struct Reader<'a>(Cursor<'a>);

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], base: usize, what: &'static str) -> Self {
        Reader(Cursor::new(buf, base, what))
    }

    /// Next field header, or `None` at the end of the message; a group's header is an error.
    #[inline(always)]
    pub(crate) fn field(&mut self) -> Res<Option<(u32, WireType)>> {
        let before = self.0.offset();
        match self.0.field()? {
            Some((num, WireType::StartGroup)) => Err(self.0.bad_tag(before, (num as u64) << 3 | 3)),
            Some((num, WireType::EndGroup)) => Err(self.0.bad_tag(before, (num as u64) << 3 | 4)),
            f => Ok(f),
        }
    }

    /// A sub-message reader over a length-delimited field.
    #[inline(always)]
    pub(crate) fn message(&mut self, what: &'static str) -> Res<Reader<'a>> {
        self.0.message(what).map(Reader)
    }
}

impl<'a> Deref for Reader<'a> {
    type Target = Cursor<'a>;

    #[inline(always)]
    fn deref(&self) -> &Cursor<'a> {
        &self.0
    }
}

impl DerefMut for Reader<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
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
        assert_eq!(r.field().unwrap(), Some((1, WireType::Len)));
        let (b, at) = r.bytes().unwrap();
        assert_eq!(b, b"hi");
        assert_eq!(at, 104);
        assert!(r.at_end());
    }

    #[test]
    fn group_headers_are_errors() {
        // A valid field 1, then the start of group 2 at offset 12; then the end of group 1.
        for (buf, msg) in [
            (
                &[0x08, 0x01, 0x13, 0x14][..],
                "unsupported wire type 3 for field 2",
            ),
            (
                &[0x08, 0x01, 0x0c][..],
                "unsupported wire type 4 for field 1",
            ),
        ] {
            let mut r = Reader::new(buf, 10, "XEvent");
            assert_eq!(r.field().unwrap(), Some((1, WireType::Varint)));
            r.varint().unwrap();
            let e = r.field().unwrap_err();
            assert_eq!((e.offset, e.context), (12, "XEvent"));
            assert!(e.message.starts_with(msg), "{e}");
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
