//! Left-out events skimmed by the layout of the last one of their kind.
//!
//! A profiler writes every event of a kind (a phase and a category) with the same members in the
//! same order and the same white space around them, `, "name": ` then `, "pid": ` and so on;
//! only the values change. The member-by-member skim ([`super::skim_members`]) finds that
//! layout again in every event, a byte at a time between the values. Here the text between one
//! value and the next is compared, whole, with what it was in the last event of the kind that
//! skim read, and only the values are read (as that skim reads them). Where the text differs
//! (another layout, or anything that skim would take otherwise), that skim reads the event from
//! its start, and the event's layout becomes its kind's.
//!
//! Why it finds what that skim finds: between two values that skim looks only at the bytes
//! there (white space, a comma, the key, a colon) and stops at the value's first byte; the same
//! bytes lead it to the same key and the same place, and the values are read by the same code.
//! Only layouts of events it read without anything to check further (no escapes, no `stream`)
//! are kept.
//!
//! Why: the NCCL sample's 27,946 left-out events (operator slices and flow arrows) cost that skim
//! about 2,100 instructions each, a quarter of its first answer, most of them spent between the
//! values.

use std::cell::RefCell;

use super::{ends_scalar, nested, plain, skim_members_noting, skim_string, Noted, Skimmed, Slot};

/// The longest text between two values a layout keeps (`,\n    "args": ` is 14 bytes).
const MAX_GAP: usize = 32;
/// The most members a layout keeps.
const MAX_MEMBERS: usize = 16;
/// Kinds of events whose layouts are kept at once (Kineto leaves out operator slices and two
/// phases of flow arrows).
const KINDS: usize = 4;

/// The text before a value (or before the end of the object), as it was.
#[derive(Clone, Copy)]
struct Gap {
    bytes: [u8; MAX_GAP],
    len: u8,
    /// What the skim keeps of the member's value, by its key.
    slot: Slot,
}

impl Gap {
    fn of(text: &str, n: Noted) -> Option<Gap> {
        let len = n.value.checked_sub(n.from)?;
        if len > MAX_GAP {
            return None;
        }
        let mut bytes = [0u8; MAX_GAP];
        bytes[..len].copy_from_slice(text.as_bytes().get(n.from..n.value)?);
        Some(Gap {
            bytes,
            len: len as u8,
            slot: Slot::of(text.get(n.key.0..n.key.1)?),
        })
    }

    /// Whether the text at `b[i]` starts with this gap.
    #[inline]
    fn at(&self, b: &[u8], i: usize) -> bool {
        let n = usize::from(self.len);
        #[cfg(target_arch = "x86_64")]
        if let Some(w) = b.get(i..i + MAX_GAP) {
            use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8};
            // SAFETY: SSE2 is part of every x86_64 target; the loads read `w` (32 bytes) and
            // `self.bytes` (32 bytes) in two halves, unaligned loads being allowed.
            let same = unsafe {
                let half = |p: *const u8, k: usize| _mm_loadu_si128(p.add(k).cast());
                let eq = |k: usize| {
                    _mm_movemask_epi8(_mm_cmpeq_epi8(
                        half(w.as_ptr(), k),
                        half(self.bytes.as_ptr(), k),
                    )) as u32
                        & 0xffff
                };
                eq(0) | (eq(16) << 16)
            };
            let want = u32::MAX.checked_shr(32 - n as u32).unwrap_or(0);
            return same & want == want;
        }
        b.get(i..i + n) == Some(&self.bytes[..n])
    }
}

struct Layout {
    ph: String,
    cat: Option<String>,
    members: Vec<Gap>,
    close: Gap,
}

impl Layout {
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
            let slot = g.slot;
            i += usize::from(g.len);
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
        out.end = i + usize::from(self.close.len);
        Some(out)
    }
}

/// The layouts of the kinds of events skimmed lately (on this thread).
#[derive(Default)]
pub(super) struct Layouts {
    kinds: Vec<Layout>,
    /// The next to give up when a new kind comes.
    next: usize,
    notes: Vec<Noted>,
}

thread_local! {
    static LAYOUTS: RefCell<Layouts> = RefCell::new(Layouts::default());
}

/// [`super::skim_members`] of the event whose first members (found by `worth_skimming`) end at
/// `i`, by its kind's layout where the text follows it.
pub(super) fn skim<'a>(text: &'a str, i: usize, first: Skimmed<'a>) -> Option<Skimmed<'a>> {
    LAYOUTS.with(|l| match l.try_borrow_mut() {
        Ok(mut l) => l.skim(text, i, first),
        Err(_) => super::skim_members(text, i, first, true),
    })
}

impl Layouts {
    /// By the kind's layout only: `None` where there is none or the text does not follow it.
    pub(super) fn quick<'a>(
        &self,
        text: &'a str,
        i: usize,
        first: Skimmed<'a>,
    ) -> Option<Skimmed<'a>> {
        let (ph, cat) = (first.ph.unwrap_or(""), first.cat);
        self.kinds
            .iter()
            .find(|l| l.ph == ph && l.cat.as_deref() == cat)?
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
            self.learn(text, first, &notes);
        }
        self.notes = notes;
        k
    }

    /// Keeps the layout `notes` found as its kind's.
    fn learn(&mut self, text: &str, first: Skimmed<'_>, notes: &[Noted]) {
        let (ph, cat) = (first.ph.unwrap_or(""), first.cat);
        let at = self
            .kinds
            .iter()
            .position(|l| l.ph == ph && l.cat.as_deref() == cat);
        let layout = match notes.split_last() {
            Some((&close, members)) if members.len() <= MAX_MEMBERS => {
                let members: Option<Vec<Gap>> = members.iter().map(|&n| Gap::of(text, n)).collect();
                members
                    .zip(Gap::of(text, close))
                    .map(|(members, close)| Layout {
                        ph: ph.to_string(),
                        cat: cat.map(str::to_string),
                        members,
                        close,
                    })
            }
            _ => None,
        };
        match (at, layout) {
            (Some(at), Some(l)) => self.kinds[at] = l,
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
