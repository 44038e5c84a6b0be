//! Interned ids of the raw JSON texts that name tracks and flows: a table that compares a short
//! text's bytes as two words.

use super::*;

/// Strings most events' stats use, interned on first use (so that a profile's strings come in
/// the order they always did) and then kept, not looked up again for each event.
#[derive(Default)]
pub(super) struct Ids {
    pub(super) cat: Option<StrId>,
    pub(super) correlation_id: Option<StrId>,
    /// The empty string (an empty value is common: a CPU op's `Call stack`).
    pub(super) empty: Option<StrId>,
    /// Categories and kept args' keys: few strings, each interned for many events, found here by
    /// comparing them (a short list) instead of hashing them again.
    pub(super) few: Vec<(Box<str>, StrId)>,
    /// Short strings (1 to 32 bytes: most args' keys) by their length and bytes, which those
    /// numbers hold whole ([`Ids::short`]); `None` until the first.
    pub(super) short: Option<Box<[ShortKey; SHORT]>>,
}

/// How many strings [`Ids::few`] holds.
pub(super) const FEW: usize = 16;

/// Slots of [`Ids::short`].
pub(super) const SHORT: usize = 256;

/// A string of 1 to 32 bytes as its length, its [`words`] (its first eight bytes and its last
/// eight, when that long), and (past 16 bytes) the eight after its first eight and the eight
/// before its last eight: together they are the whole string.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ShortKey {
    pub(super) len: u8,
    pub(super) head: u64,
    pub(super) tail: u64,
    pub(super) mid: (u64, u64),
    pub(super) id: StrId,
}

impl Ids {
    pub(super) fn of(slot: &mut Option<StrId>, p: &mut Profile, s: &str) -> StrId {
        *slot.get_or_insert_with(|| p.strings.intern(s))
    }

    /// `s` interned; a short one found in a table of [`SHORT`] slots indexed by its bytes
    /// (no hashing of the string, no string compare), else through the profile's strings.
    pub(super) fn short(&mut self, p: &mut Profile, s: &str) -> StrId {
        let b = s.as_bytes();
        let n = b.len();
        if !(1..=32).contains(&n) {
            return p.strings.intern(s);
        }
        let (head, tail) = words(b);
        let mid = if n > 16 {
            (words(&b[8..16]).0, words(&b[n - 16..n - 8]).0)
        } else {
            (0, 0)
        };
        let slot = ((head ^ tail.rotate_left(17) ^ mid.0.rotate_left(31) ^ n as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> 56) as usize;
        let table = self
            .short
            .get_or_insert_with(|| Box::new([ShortKey::default(); SHORT]));
        let key = ShortKey {
            len: n as u8,
            head,
            tail,
            mid,
            id: StrId(0),
        };
        // Slots go in pairs, and a string may be in either of the pair its bytes index: the
        // first holds the last string met, the second the one before it (so two strings met in
        // turn that index one pair are both kept).
        let pair = (slot % SHORT) & !1;
        let same =
            |e: &ShortKey| (e.len, e.head, e.tail, e.mid) == (key.len, key.head, key.tail, key.mid);
        for at in [pair, pair + 1] {
            if same(&table[at]) {
                return table[at].id;
            }
        }
        let id = p.strings.intern(s);
        table[pair + 1] = table[pair];
        table[pair] = ShortKey { id, ..key };
        id
    }

    /// `s` interned: a category or a kept arg's key (the first [`FEW`] of them are kept here).
    pub(super) fn few(&mut self, p: &mut Profile, s: &str) -> StrId {
        if let Some((_, id)) = self.few.iter().find(|(f, _)| **f == *s) {
            return *id;
        }
        let id = p.strings.intern(s);
        if self.few.len() < FEW {
            self.few.push((s.into(), id));
        }
        id
    }
}
