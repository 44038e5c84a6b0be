//! Events read by the layout of the last one of their kind.
//!
//! A profiler writes every event of a kind (a phase and a category) with the same members in the
//! same order and the same white space around them, `, "name": ` then `, "pid": ` and so on;
//! only the values change. The member-by-member readers (the skim of left-out events,
//! [`super::skim_members`], and the plain reader of the others, [`super::plain`]) find that
//! layout again in every event, a byte at a time between the values. Here the text between one
//! value and the next is compared, whole, with what it was in the last event of the kind that
//! reader read, and only the values are read (by the same code). Where the text differs
//! (another layout, or anything that reader would take otherwise), it reads the event from its
//! start, and the event's layout becomes its kind's.
//!
//! Why it reads what that reader reads: between two values it looks only at the bytes there
//! (white space, a comma, the key, a colon) and stops at the value's first byte; the same bytes
//! lead it to the same key and the same place. Only layouts of events it read whole are kept
//! (for the skim, events without anything to check further: no escapes, no `stream`).
//!
//! Why: the NCCL sample's 27,946 left-out events (operator slices and flow arrows) cost the
//! skim about 2,100 instructions each, a quarter of its first answer, most of them between the
//! values; its 12,627 events read in full cost the plain reader about 4,000 each.

use std::cell::RefCell;

use super::{ends_scalar, nested, plain, skim_members_noting, skim_string, stops};
use super::{Noted, Skimmed, Slot};

/// The longest text between two values a layout keeps (`,\n    "args": ` is 14 bytes,
/// `,\n      "est. achieved occupancy %": ` 37), a multiple of 16.
const MAX_GAP: usize = 48;
/// The most members a layout keeps.
const MAX_MEMBERS: usize = 24;
/// Kinds of events whose layouts are kept at once.
const KINDS: usize = 8;

/// The text before a value (or before the end of the object), as it was, and what the member's
/// key means to the reader (`tag`).
#[derive(Clone, Copy)]
pub(super) struct Gap<T> {
    bytes: [u8; MAX_GAP],
    len: u8,
    pub tag: T,
}

impl<T: Copy> Gap<T> {
    fn of(text: &str, n: Noted, tag: &impl Fn(&str) -> T) -> Option<Gap<T>> {
        let len = n.value.checked_sub(n.from)?;
        if len > MAX_GAP {
            return None;
        }
        let mut bytes = [0u8; MAX_GAP];
        bytes[..len].copy_from_slice(text.as_bytes().get(n.from..n.value)?);
        Some(Gap {
            bytes,
            len: len as u8,
            tag: tag(text.get(n.key.0..n.key.1)?),
        })
    }

    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether the text at `b[i]` starts with this gap.
    #[inline]
    pub fn at(&self, b: &[u8], i: usize) -> bool {
        let n = self.len();
        #[cfg(target_arch = "x86_64")]
        if let Some(w) = b.get(i..i + MAX_GAP) {
            use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8};
            // SAFETY: SSE2 is part of every x86_64 target; the loads read `w` and `self.bytes`
            // (`MAX_GAP` bytes each) in parts of 16, unaligned loads being allowed.
            let eq = |k: usize| unsafe {
                let part = |p: *const u8| _mm_loadu_si128(p.add(k).cast());
                let same =
                    _mm_movemask_epi8(_mm_cmpeq_epi8(part(w.as_ptr()), part(self.bytes.as_ptr())));
                u64::from(same as u32 & 0xffff) << k
            };
            // Most gaps fit in the first 32 bytes.
            let same = if n <= 32 {
                eq(0) | eq(16)
            } else {
                eq(0) | eq(16) | eq(32)
            };
            let want = u64::MAX.checked_shr(64 - n as u32).unwrap_or(0);
            return same & want == want;
        }
        b.get(i..i + n) == Some(&self.bytes[..n])
    }
}

pub(super) struct Layout<T> {
    ph: String,
    cat: Option<String>,
    /// The members after those the kind is known by.
    pub members: Vec<Gap<T>>,
    pub close: Gap<T>,
    /// The layout of the kind's `args` object (kept when the event's own layout is learned
    /// again).
    pub args: ArgsLayout,
}

/// The layout of an `args` object as the last of its kind had it: the text before each value
/// (from the `{`, or from the end of the value before), with where the member's key lies in it,
/// and the text that closes the object.
#[derive(Default)]
pub(super) struct ArgsLayout {
    pub members: Vec<Gap<(u8, u8)>>,
    /// `None`: no layout (none learned yet, or the last one learned did not fit).
    pub close: Option<Gap<(u8, u8)>>,
    /// The last one learned did not fit (a gap too long, too many members): not learned again
    /// while the kind's layouts are kept (its `args` then read member by member).
    pub unfit: bool,
}

impl ArgsLayout {
    /// Keeps the layout `notes` found (the members, then the end of the object; as
    /// [`Layouts::learn`] takes them) as the kind's.
    pub fn learn(&mut self, text: &str, notes: &[Noted]) {
        let keyed = |n: &Noted| {
            let at = |k: usize| u8::try_from(k.checked_sub(n.from)?).ok();
            let tag = (at(n.key.0)?, at(n.key.1)?);
            Gap::of(text, *n, &|_| tag)
        };
        let layout = match notes.split_last() {
            Some((close, members)) if members.len() <= MAX_ARGS => members
                .iter()
                .map(keyed)
                .collect::<Option<Vec<_>>>()
                .zip(keyed(close)),
            _ => None,
        };
        self.members.clear();
        self.unfit = layout.is_none();
        self.close = layout.map(|(members, close)| {
            self.members = members;
            close
        });
    }
}

/// The most members an `args` layout keeps (a kernel's have 13, some collectives' 23).
const MAX_ARGS: usize = 32;

/// The layouts of the kinds of events read lately.
pub(super) struct Layouts<T> {
    kinds: Vec<Layout<T>>,
    /// The next to give up when a new kind comes.
    next: usize,
}

impl<T> Default for Layouts<T> {
    fn default() -> Self {
        Layouts {
            kinds: Vec::new(),
            next: 0,
        }
    }
}

impl<T: Copy> Layouts<T> {
    #[inline]
    pub fn find(&self, ph: &str, cat: Option<&str>) -> Option<&Layout<T>> {
        self.kinds
            .iter()
            .find(|l| l.ph == ph && l.cat.as_deref() == cat)
    }

    #[inline]
    pub fn find_mut(&mut self, ph: &str, cat: Option<&str>) -> Option<&mut Layout<T>> {
        self.kinds
            .iter_mut()
            .find(|l| l.ph == ph && l.cat.as_deref() == cat)
    }

    /// Keeps the layout `notes` found (the members after the first ones, then the end of the
    /// object) as the kind's.
    pub fn learn(
        &mut self,
        text: &str,
        ph: &str,
        cat: Option<&str>,
        notes: &[Noted],
        tag: impl Fn(&str) -> T,
    ) {
        let at = self
            .kinds
            .iter()
            .position(|l| l.ph == ph && l.cat.as_deref() == cat);
        let layout = match notes.split_last() {
            Some((&close, members)) if members.len() <= MAX_MEMBERS => {
                let members: Option<Vec<Gap<T>>> =
                    members.iter().map(|&n| Gap::of(text, n, &tag)).collect();
                members
                    .zip(Gap::of(text, close, &tag))
                    .map(|(members, close)| Layout {
                        ph: ph.to_string(),
                        cat: cat.map(str::to_string),
                        members,
                        close,
                        args: ArgsLayout::default(),
                    })
            }
            _ => None,
        };
        match (at, layout) {
            (Some(at), Some(mut l)) => {
                l.args = std::mem::take(&mut self.kinds[at].args);
                self.kinds[at] = l;
            }
            (Some(at), None) => {
                self.kinds.swap_remove(at);
            }
            (None, Some(l)) if self.kinds.len() < KINDS => self.kinds.push(l),
            (None, Some(l)) => {
                self.kinds[self.next] = l;
                self.next = (self.next + 1) % KINDS;
            }
            (None, None) => {}
        }
    }
}

/// An event's first members as a profiler writes them, `{"ph": "X", "cat": "kernel"` (a slice)
/// or `{"ph": "f"` and then another member (a flow's `cat` comes later): strings without escapes,
/// any white space.
pub(super) struct Head<'a> {
    /// Just past the last value read.
    pub end: usize,
    pub ph: &'a str,
    pub cat: Option<&'a str>,
}

impl Head<'_> {
    /// How many members it read.
    pub fn members(&self) -> usize {
        1 + usize::from(self.cat.is_some())
    }
}

/// The [`Head`] of the event at `text[at]`.
pub(super) fn head(text: &str, at: usize) -> Option<Head<'_>> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut l = Look { t: text, i: at + 1 };
    if !(l.lit(b"\"ph\"") && l.lit(b":")) {
        return None;
    }
    let ph = l.string()?;
    let end = l.i;
    if !(l.lit(b",") && l.lit(b"\"cat\"") && l.lit(b":")) {
        return Some(Head { end, ph, cat: None });
    }
    let cat = l.string()?;
    Some(Head {
        end: l.i,
        ph,
        cat: Some(cat),
    })
}

/// A quick look at an event's first members.
pub(super) struct Look<'a> {
    pub t: &'a str,
    pub i: usize,
}

impl<'a> Look<'a> {
    fn ws(&mut self) {
        self.i = stops::ws(self.t.as_bytes(), self.i);
    }

    /// The bytes `s` after white space (compared as one array, not through `memcmp`).
    pub fn lit<const N: usize>(&mut self, s: &[u8; N]) -> bool {
        self.ws();
        let at = self.t.as_bytes().get(self.i..self.i + N);
        let ok = at.and_then(|w| <&[u8; N]>::try_from(w).ok()) == Some(s);
        self.i += N;
        ok
    }

    /// A string without escapes after white space (its text is its value).
    pub fn string(&mut self) -> Option<&'a str> {
        self.ws();
        let b = self.t.as_bytes();
        if b.get(self.i) != Some(&b'"') {
            return None;
        }
        let from = self.i + 1;
        let end = stops::string_stop(b, from)?;
        if b[end] != b'"' {
            return None;
        }
        self.i = end + 1;
        // Both ends are quotes: boundaries of characters.
        self.t.get(from..end)
    }
}

impl Layout<Slot> {
    /// The members from just past the value at `i` to the end of the object, when the text
    /// between the values is as this layout has it; `None` where it is not.
    fn skim<'a>(&self, text: &'a str, mut i: usize, mut out: Skimmed<'a>) -> Option<Skimmed<'a>> {
        let b = text.as_bytes();
        for g in &self.members {
            // Its key is not `stream`, or the layout would not have been kept: nothing to note
            // of it but where its value goes.
            if !g.at(b, i) {
                return None;
            }
            let slot = g.tag;
            i += g.len();
            // The value, as the member-by-member skim reads it.
            match *b.get(i)? {
                b'"' => {
                    let (_, close, escaped) = skim_string(b, i)?;
                    out.string(slot, text, i, close, escaped);
                    i = close + 1;
                }
                b'{' | b'[' => {
                    let end = nested::value_end(b, i, 1)?;
                    out.nested(slot, &b[i..end]);
                    i = end;
                }
                b'-' | b'0'..=b'9' => {
                    let end = plain::number_end(b, i).filter(|&e| ends_scalar(b, e))?;
                    out.scalar(slot, text.get(i..end)?);
                    i = end;
                }
                _ => return None,
            }
        }
        if !self.close.at(b, i) {
            return None;
        }
        out.end = i + self.close.len();
        Some(out)
    }
}

/// The skim's layouts (on this thread), and its notes.
#[derive(Default)]
pub(super) struct Skims {
    layouts: Layouts<Slot>,
    notes: Vec<Noted>,
}

thread_local! {
    static SKIMS: RefCell<Skims> = RefCell::new(Skims::default());
}

/// [`super::skim_members`] of the event whose first members (found by `worth_skimming`) end at
/// `i`, by its kind's layout where the text follows it.
pub(super) fn skim<'a>(text: &'a str, i: usize, first: Skimmed<'a>) -> Option<Skimmed<'a>> {
    SKIMS.with(|l| match l.try_borrow_mut() {
        Ok(mut l) => l.skim(text, i, first),
        Err(_) => super::skim_members(text, i, first, true),
    })
}

impl Skims {
    /// By the kind's layout only: `None` where there is none or the text does not follow it.
    pub(super) fn quick<'a>(
        &self,
        text: &'a str,
        i: usize,
        first: Skimmed<'a>,
    ) -> Option<Skimmed<'a>> {
        self.layouts
            .find(first.ph.unwrap_or(""), first.cat)?
            .skim(text, i, first)
    }

    pub(super) fn skim<'a>(
        &mut self,
        text: &'a str,
        i: usize,
        first: Skimmed<'a>,
    ) -> Option<Skimmed<'a>> {
        if let Some(k) = self.quick(text, i, first) {
            return Some(k);
        }
        let mut notes = std::mem::take(&mut self.notes);
        notes.clear();
        let k = skim_members_noting(text, i, first, true, |n| notes.push(n));
        if k.is_some_and(|k| !k.read_in_full) {
            let ph = first.ph.unwrap_or("");
            self.layouts.learn(text, ph, first.cat, &notes, Slot::of);
        }
        self.notes = notes;
        k
    }
}
