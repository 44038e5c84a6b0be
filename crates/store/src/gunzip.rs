//! Reading gzip files (RFC 1952): each member's header, its raw deflate stream inflated
//! straight into the caller's buffer, and its trailer checked (CRC-32 and length). Members
//! follow one another as one text, as `gzip -d` reads them.
//!
//! Why not flate2's gzip readers: with the zlib-rs inflater (which writes into the caller's
//! buffer instead of copying out of its own window, as miniz_oxide does) flate2 checks the
//! CRC-32 with a portable loop, a tenth of a PyTorch trace's first answer; `crc32fast` here uses
//! the CPU's carry-less multiply.

use flate2::{Decompress, FlushDecompress, Status};
use std::io::{self, BufRead, Read};

/// A gzip file's text, read as it is inflated.
pub struct Gunzip<R> {
    inner: R,
    state: State,
    inflater: Decompress,
    crc: crc32fast::Hasher,
    /// The member's text so far, modulo 2^32 (as its trailer states it).
    len: u32,
    /// Members read to their end.
    members: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    Body,
    Trailer,
    Done,
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

impl<R: BufRead> Gunzip<R> {
    pub fn new(inner: R) -> Self {
        Gunzip {
            inner,
            state: State::Header,
            inflater: Decompress::new(false),
            crc: crc32fast::Hasher::new(),
            len: 0,
            members: 0,
        }
    }

    /// A member's header; `false` at the end of the input after a member.
    fn header(&mut self) -> io::Result<bool> {
        if self.members > 0 && self.inner.fill_buf()?.is_empty() {
            return Ok(false);
        }
        let mut fixed = [0u8; 10];
        self.inner
            .read_exact(&mut fixed)
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => invalid("a gzip header cut short"),
                _ => e,
            })?;
        if fixed[..2] != [0x1f, 0x8b] {
            return Err(invalid(
                "invalid gzip header (not gzip, or bytes after its end)",
            ));
        }
        if fixed[2] != 8 {
            return Err(invalid("a gzip member not compressed with deflate"));
        }
        let flags = fixed[3];
        if flags & 0xe0 != 0 {
            return Err(invalid("invalid gzip header (reserved flags set)"));
        }
        let cut = |e: io::Error| match e.kind() {
            io::ErrorKind::UnexpectedEof => invalid("a gzip header cut short"),
            _ => e,
        };
        if flags & 0x04 != 0 {
            // FEXTRA: its length, then that many bytes.
            let mut n = [0u8; 2];
            self.inner.read_exact(&mut n).map_err(cut)?;
            let n = u64::from(u16::from_le_bytes(n));
            let skipped = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())?;
            if skipped < n {
                return Err(invalid("a gzip header cut short"));
            }
        }
        // FNAME and FCOMMENT: zero-terminated.
        for flag in [0x08, 0x10] {
            if flags & flag != 0 {
                let mut s = Vec::new();
                self.inner.read_until(0, &mut s)?;
                if s.last() != Some(&0) {
                    return Err(invalid("a gzip header cut short"));
                }
            }
        }
        if flags & 0x02 != 0 {
            // FHCRC: the header's CRC-16 (not checked, as gzip does not).
            let mut c = [0u8; 2];
            self.inner.read_exact(&mut c).map_err(cut)?;
        }
        self.inflater.reset(false);
        self.crc = crc32fast::Hasher::new();
        self.len = 0;
        Ok(true)
    }

    /// The member's trailer, checked against what was inflated.
    fn trailer(&mut self) -> io::Result<()> {
        let mut t = [0u8; 8];
        self.inner.read_exact(&mut t).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => invalid("a gzip file cut short (its trailer)"),
            _ => e,
        })?;
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let len = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        let ours = std::mem::take(&mut self.crc).finalize();
        if crc != ours {
            return Err(invalid("corrupt gzip data (its CRC-32 does not match)"));
        }
        if len != self.len {
            return Err(invalid("corrupt gzip data (its length does not match)"));
        }
        self.members += 1;
        Ok(())
    }

    /// Inflates into `buf`: bytes written (0 only where the member's stream ended).
    fn body(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let input = self.inner.fill_buf()?;
            let eof = input.is_empty();
            let (in0, out0) = (self.inflater.total_in(), self.inflater.total_out());
            let status = self
                .inflater
                .decompress(input, buf, FlushDecompress::None)
                .map_err(|e| invalid(&format!("corrupt deflate stream: {e}")))?;
            let used = (self.inflater.total_in() - in0) as usize;
            let made = (self.inflater.total_out() - out0) as usize;
            self.inner.consume(used);
            self.crc.update(&buf[..made]);
            self.len = self.len.wrapping_add(made as u32);
            if status == Status::StreamEnd {
                self.state = State::Trailer;
                return Ok(made);
            }
            if made > 0 {
                return Ok(made);
            }
            if eof && used == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "a gzip file cut short (its deflate stream)",
                ));
            }
        }
    }
}

impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.state {
                State::Header => {
                    self.state = if self.header()? {
                        State::Body
                    } else {
                        State::Done
                    };
                }
                State::Body => {
                    let n = self.body(buf)?;
                    if n > 0 {
                        return Ok(n);
                    }
                }
                State::Trailer => {
                    self.trailer()?;
                    self.state = State::Header;
                }
                State::Done => return Ok(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::io::Write;

    fn gz(text: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(text).expect("compress");
        e.finish().expect("compress")
    }

    fn gunzip(raw: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Gunzip::new(raw).read_to_end(&mut out).map(|_| out)
    }

    #[test]
    fn reads_what_gzip_wrote_member_after_member() {
        let a: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let b = b"{\"traceEvents\": []}".to_vec();
        assert_eq!(gunzip(&gz(&a)).expect("one member"), a);
        let mut two = gz(&a);
        two.extend(gz(&b));
        let mut want = a.clone();
        want.extend(&b);
        assert_eq!(gunzip(&two).expect("two members"), want);
        // The system's gzip (a name in the header) reads the same.
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/pytorch/hta-triton_example-triton_example.json.gz"
        );
        let raw = std::fs::read(fixture).expect("fixture");
        let mut theirs = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut theirs)
            .expect("flate2 reads it");
        assert_eq!(gunzip(&raw).expect("ours reads it"), theirs);
    }

    #[test]
    fn header_fields_are_skipped() {
        let text = b"hello, trace";
        let body = gz(text);
        // FEXTRA, FNAME, FCOMMENT and FHCRC, by hand, before the same deflate stream.
        let mut raw = vec![0x1f, 0x8b, 8, 0x04 | 0x08 | 0x10 | 0x02, 0, 0, 0, 0, 0, 3];
        raw.extend([3, 0, b'x', b'y', b'z']);
        raw.extend(b"name.json\0comment\0");
        raw.extend([0xab, 0xcd]);
        raw.extend(&body[10..]);
        assert_eq!(gunzip(&raw).expect("reads"), text);
    }

    #[test]
    fn bad_or_cut_files_are_errors_after_what_they_hold() {
        let text: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_be_bytes()).collect();
        let raw = gz(&text);
        // Cut anywhere: an error, never a short text read as whole.
        for cut in [0, 5, 10, 11, raw.len() / 2, raw.len() - 8, raw.len() - 1] {
            assert!(gunzip(&raw[..cut]).is_err(), "cut at {cut}");
        }
        // The CRC and the length are checked.
        let mut bad = raw.clone();
        let n = bad.len();
        bad[n - 8] ^= 1;
        let e = gunzip(&bad).expect_err("bad CRC");
        assert!(e.to_string().contains("CRC-32"), "{e}");
        let mut bad = raw.clone();
        bad[n - 1] ^= 1;
        let e = gunzip(&bad).expect_err("bad length");
        assert!(e.to_string().contains("length"), "{e}");
        // Bytes after the last member that are not gzip.
        let mut tail = raw.clone();
        tail.extend(b"garbage");
        let e = gunzip(&tail).expect_err("garbage after it");
        assert!(e.to_string().contains("gzip header"), "{e}");
        // Not gzip at all.
        assert!(gunzip(b"{\"traceEvents\": []}").is_err());
        // A cut file gives what it holds before the error (a head sniffed from a part).
        let mut out = Vec::new();
        let r = Gunzip::new(&raw[..raw.len() / 2]).read_to_end(&mut out);
        assert!(r.is_err());
        assert!(!out.is_empty() && text.starts_with(&out));
    }
}
