//! Whether a `.json[.gz]` file is a trace, and its rank, from the first bytes of its head.

use super::*;

/// What the start of a JSON file says: whether it is a Chrome trace, and the rank in its
/// `distributedInfo` when that comes first (the PyTorch profiler writes it before the events).
/// Reads at most 256 KiB (decompressed).
pub(super) fn sniff_json(path: &Path) -> (bool, Option<i64>) {
    let Ok(f) = fs::File::open(path) else {
        return (false, None);
    };
    // Read as it is inflated: a few KiB settle most traces ([`sniff_head`]).
    sniff_from(std::io::BufReader::with_capacity(
        SNIFF_FIRST_STEP as usize,
        f,
    ))
}

pub(super) const SNIFF_BYTES: u64 = 256 << 10;

/// The first piece of a head that [`sniff_head`] reads (then twice as much each time).
pub(super) const SNIFF_FIRST_STEP: u64 = 16 << 10;

/// [`sniff_json`] on the first bytes of a file (gzip or not).
///
/// A head is read (and inflated, if gzip) a piece at a time, up to [`SNIFF_BYTES`], and no
/// further once what is read settles both answers: it is a trace and its `distributedInfo`
/// object has closed (what more text cannot change). A PyTorch trace writes both within its
/// first few KiB: the NCCL sample settles in 16 KiB, where reading and inflating 256 KiB was most
/// of a `discover` of it.
#[cfg(any(test, feature = "cloud"))]
pub(crate) fn sniff_head(raw: &[u8]) -> (bool, Option<i64>) {
    sniff_from(raw)
}

/// [`sniff_head`] of the bytes `raw` yields, read no further than it needs.
pub(super) fn sniff_from(mut raw: impl std::io::BufRead) -> (bool, Option<i64>) {
    let gz = match raw.fill_buf() {
        Ok(b) => b.starts_with(&[0x1f, 0x8b]),
        Err(_) => return (false, None),
    };
    let raw = raw.take(SNIFF_BYTES);
    if gz {
        sniff_pieces(gunzip::Gunzip::new(raw).take(SNIFF_BYTES))
    } else {
        sniff_pieces(raw)
    }
}

/// [`sniff_text`] of what `z` yields, read a piece at a time until it settles.
pub(super) fn sniff_pieces(mut z: impl Read) -> (bool, Option<i64>) {
    let mut unzipped = Vec::new();
    let mut step = SNIFF_FIRST_STEP;
    let mut rank = RankSettled::default();
    loop {
        let before = unzipped.len();
        let r = (&mut z).take(step).read_to_end(&mut unzipped);
        if r.is_err() {
            if unzipped.is_empty() {
                return (false, None);
            }
            break;
        }
        if unzipped.len() == before {
            break;
        }
        if rank.settled(&unzipped, before) {
            let found = sniff_text(&unzipped);
            if found.0 {
                return found;
            }
        }
        step *= 2;
    }
    sniff_text(&unzipped)
}

/// Whether a growing head holds a `distributedInfo` key and a `}` after it: the rank
/// [`sniff_text`] finds in it is then the one it finds in any longer head. Each call looks only
/// at what was added since the last (from `before`).
#[derive(Default)]
pub(super) struct RankSettled {
    /// Where the key starts, once found.
    pub(super) key: Option<usize>,
    /// A `}` after it was found.
    pub(super) closed: bool,
}

impl RankSettled {
    const KEY: &'static [u8] = b"\"distributedInfo\"";

    pub(super) fn settled(&mut self, head: &[u8], before: usize) -> bool {
        if self.closed {
            return true;
        }
        let from = match self.key {
            Some(at) => before.max(at),
            None => {
                // The key may straddle the old end.
                let from = before.saturating_sub(Self::KEY.len() - 1);
                let Some(k) = head[from..]
                    .windows(Self::KEY.len())
                    .position(|w| w == Self::KEY)
                else {
                    return false;
                };
                self.key = Some(from + k);
                from + k
            }
        };
        self.closed = head[from..].contains(&b'}');
        self.closed
    }
}

/// [`sniff_head`] on the (decompressed) text of a head.
pub(super) fn sniff_text(head: &[u8]) -> (bool, Option<i64>) {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    // A bare array of events is empty or starts with an object, and its events have phases;
    // other JSON arrays (lists of names, or of records such as the many-hosts generator's
    // truth file) are not traces.
    let bare_array =
        t.strip_prefix('[')
            .is_some_and(|rest| match rest.trim_start().chars().next() {
                Some(']') => true,
                Some('{') => text.contains("\"ph\""),
                _ => false,
            });
    let is_trace = bare_array || (t.starts_with('{') && text.contains("\"traceEvents\""));
    let rank = text.find("\"distributedInfo\"").and_then(|at| {
        let rest = &text[at..];
        let end = rest.find('}').unwrap_or(rest.len());
        let obj = &rest[..end];
        let r = obj.find("\"rank\"")?;
        let after = obj[r + 6..].trim_start().strip_prefix(':')?.trim_start();
        let digits: String = after
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().ok()
    });
    (is_trace, rank)
}

/// A rank written in a file name: `rank-3`, `rank_3`, `rank3` (any case).
pub(crate) fn rank_in_name(name: &str) -> Option<i64> {
    let l = name.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = l[from..].find("rank") {
        let rest = l[from + i + 4..].trim_start_matches(['-', '_', '.']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(n) = digits.parse() {
            return Some(n);
        }
        from += i + 4;
    }
    None
}
