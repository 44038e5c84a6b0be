//! Skimming an event's members without parsing them: where each kept field is, and whether
//! the event is one a [`Skip`] leaves out.

use super::*;

/// What [`skim`] finds of an event object without parsing it.
#[derive(Default, Clone, Copy)]
pub(super) struct Skimmed<'a> {
    /// Just past its closing `}`.
    pub(super) end: usize,
    pub(super) ph: Option<&'a str>,
    pub(super) cat: Option<&'a str>,
    /// Raw JSON text of these values.
    pub(super) ts: Option<&'a str>,
    pub(super) dur: Option<&'a str>,
    /// Some string in it is `stream` (an arg HTA reads), or it is not plain enough to leave
    /// to a skim (a repeated key, an escape anywhere: the skim does not check escapes): it is
    /// read in full.
    pub(super) read_in_full: bool,
}

/// A `stream` string, as its bytes appear in JSON.
pub(super) static STREAM: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"stream\""));

/// Scans the object at `text[at]` (a `{`) for its end and its `ph`, `cat`, `ts` and `dur`,
/// checking its members' form (a string key, a colon, a value; commas between), strings and the
/// nesting of brackets, but not every JSON rule inside values; `None` when it is not well formed
/// that far (the caller then reads it with serde_json, which says what is wrong). Events are
/// skimmed from past their first members ([`worth_skimming`], then [`skim_members`]); this reads
/// one whole.
#[cfg(test)]
pub(super) fn skim(text: &str, at: usize) -> Option<Skimmed<'_>> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut out = Skimmed::default();
    let i = stops::ws(b, at + 1);
    if b.get(i) == Some(&b'}') {
        out.end = i + 1;
        return Some(out);
    }
    skim_members(text, i, out, false)
}

/// [`skim`] from inside the object: at the key of a member (`after_value` false) or just past
/// a member's value (true), with what was found before `i` already in `out`.
pub(super) fn skim_members<'a>(
    text: &'a str,
    i: usize,
    out: Skimmed<'a>,
    after_value: bool,
) -> Option<Skimmed<'a>> {
    skim_members_noting(text, i, out, after_value, |_| {})
}

/// Where a member [`skim_members_noting`] read is in the text: from just past the value before
/// it (or the first key) to its value, with its key between.
#[derive(Clone, Copy)]
pub(super) struct Noted {
    pub(super) from: usize,
    pub(super) key: (usize, usize),
    pub(super) value: usize,
}

/// [`skim_members`], telling `note` where each member was (and, with `key` empty and `value`
/// past the closing `}`, where the object closed).
pub(super) fn skim_members_noting<'a>(
    text: &'a str,
    mut i: usize,
    mut out: Skimmed<'a>,
    mut after_value: bool,
    mut note: impl FnMut(Noted),
) -> Option<Skimmed<'a>> {
    let b = text.as_bytes();
    loop {
        let from = i;
        if after_value {
            i = stops::ws(b, i);
            match *b.get(i)? {
                b',' => i = stops::ws(b, i + 1),
                b'}' => {
                    out.end = i + 1;
                    note(Noted {
                        from,
                        key: (i, i),
                        value: i + 1,
                    });
                    return Some(out);
                }
                _ => return None,
            }
        }
        after_value = true;
        let (k0, k1, escaped) = skim_string(b, i)?;
        let key = &text[k0..k1];
        out.key(key, escaped);
        let slot = Slot::of(key);
        i = stops::ws(b, k1 + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = stops::ws(b, i + 1);
        note(Noted {
            from,
            key: (k0, k1),
            value: i,
        });
        match *b.get(i)? {
            b'"' => {
                let (_, v1, escaped) = skim_string(b, i)?;
                out.string(slot, text, i, v1, escaped);
                i = v1 + 1;
            }
            b'{' | b'[' => {
                // A nested value: only its strings and brackets matter, found a block at a time.
                let end = nested::value_end(b, i, 1)?;
                out.nested(slot, &b[i..end]);
                i = end;
            }
            _ => {
                let start = i;
                // Most are numbers (times, ids), read once by their grammar; what follows one
                // must end the value.
                match plain::number_end(b, i) {
                    Some(end) if ends_scalar(b, end) => i = end,
                    _ => {
                        while b.get(i).is_some_and(|&c| {
                            !matches!(c, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n')
                        }) {
                            i += 1;
                        }
                        // Not a number, `true`, `false` or `null`: left to a full read, which
                        // names it.
                        out.read_in_full |= !matches!(&b[start..i], b"true" | b"false" | b"null");
                    }
                }
                out.scalar(slot, &text[start..i]);
            }
        }
    }
}

/// Whether the byte at `b[end]` may follow a scalar member value (and so ends it).
#[inline]
pub(super) fn ends_scalar(b: &[u8], end: usize) -> bool {
    matches!(b.get(end), Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))
}

/// Which of the values a skim keeps a member's is, by its key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Ph,
    Cat,
    Ts,
    Dur,
    None,
}

impl Slot {
    #[inline]
    pub(super) fn of(key: &str) -> Slot {
        match key.as_bytes() {
            b"ph" => Slot::Ph,
            b"cat" => Slot::Cat,
            b"ts" => Slot::Ts,
            b"dur" => Slot::Dur,
            _ => Slot::None,
        }
    }
}

impl<'a> Skimmed<'a> {
    #[inline]
    pub(super) fn slot(&mut self, slot: Slot) -> Option<&mut Option<&'a str>> {
        match slot {
            Slot::Ph => Some(&mut self.ph),
            Slot::Cat => Some(&mut self.cat),
            Slot::Ts => Some(&mut self.ts),
            Slot::Dur => Some(&mut self.dur),
            Slot::None => None,
        }
    }

    /// A member's key (`escaped`: it has escapes or control characters).
    #[inline]
    pub(super) fn key(&mut self, key: &str, escaped: bool) {
        self.read_in_full |= escaped || key == "stream";
    }

    /// A string value of a member: its quotes at `text[open]` and `text[close]`.
    #[inline]
    pub(super) fn string(
        &mut self,
        slot: Slot,
        text: &'a str,
        open: usize,
        close: usize,
        escaped: bool,
    ) {
        let value = &text[open + 1..close];
        // Escapes are checked by a full read (an invalid one is named there).
        self.read_in_full |= value == "stream" || escaped;
        // Times keep their raw text, quotes included.
        let raw = if matches!(slot, Slot::Ts | Slot::Dur) {
            &text[open..close + 1]
        } else {
            value
        };
        if let Some(slot) = self.slot(slot) {
            let again = slot.replace(raw).is_some();
            self.read_in_full |= again;
        }
    }

    /// A nested value (object or array) of a member, `v` its bytes.
    #[inline]
    pub(super) fn nested(&mut self, slot: Slot, v: &[u8]) {
        // A `stream` string anywhere in it (or what merely looks like one), or an escape
        // (checked by a full read).
        self.read_in_full |= STREAM.find(v).is_some() || memchr::memchr(b'\\', v).is_some();
        // Not a string: read in full (serde_json says what is wrong).
        self.read_in_full |= slot != Slot::None;
    }

    /// A scalar value (number, word) of a member, `raw` its text.
    #[inline]
    pub(super) fn scalar(&mut self, slot: Slot, raw: &'a str) {
        if let Some(s) = self.slot(slot) {
            let again = s.replace(raw).is_some();
            // `ph` and `cat` not strings: read in full (serde_json says what is wrong).
            self.read_in_full |= again || matches!(slot, Slot::Ph | Slot::Cat);
        }
    }
}

/// The string at `b[i]` (a `"`) as a skim sees it: its first byte, its closing quote, and
/// whether it has escapes or control characters (a backslash passes the byte after it).
#[inline]
pub(super) fn skim_string(b: &[u8], i: usize) -> Option<(usize, usize, bool)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        j = stops::string_stop(b, j)?;
        match b[j] {
            b'"' => return Some((i + 1, j, escaped)),
            b'\\' => {
                escaped = true;
                j += 2;
            }
            // A control character (not JSON): left to a full read, which names it.
            _ => {
                escaped = true;
                j += 1;
            }
        }
    }
}

/// Whether the event at `b[at]` starts as one `skip` leaves out, written as Kineto writes events
/// (`{"ph": "X", "cat": "cpu_op", ...`; a flow's `cat` comes later, so every flow qualifies): a
/// quick look, so that the events read in full are not skimmed first. Events written otherwise
/// are read in full and left out afterwards (the same result, more slowly).
pub(super) fn worth_skimming<'a>(
    text: &'a str,
    at: usize,
    skip: &Skip,
) -> Option<(usize, Skimmed<'a>)> {
    let mut l = layout::Look { t: text, i: at };
    if !(l.lit(b"{") && l.lit(b"\"ph\"") && l.lit(b":")) {
        return None;
    }
    let ph = l.string()?;
    let mut out = Skimmed {
        ph: Some(ph),
        ..Skimmed::default()
    };
    match ph {
        "s" | "t" | "f" if !skip.flow_cats.is_empty() => Some((l.i, out)),
        "X" => {
            if !(l.lit(b",") && l.lit(b"\"cat\"") && l.lit(b":")) {
                return None;
            }
            let cat = l.string()?;
            if !skip.complete_cats.contains(&cat) {
                return None;
            }
            out.cat = Some(cat);
            Some((l.i, out))
        }
        _ => None,
    }
}

/// The event a skim found, when `skip` leaves it out and the skim read all it needs of it.
pub(super) fn skipped_event<'a>(k: &Skimmed<'a>, skip: Skip, e: &mut RawEvent<'a>) -> bool {
    let Some(skipped) = skipped_of(k, skip) else {
        return false;
    };
    *e = skipped;
    true
}

pub(super) fn skipped_of<'a>(k: &Skimmed<'a>, skip: Skip) -> Option<RawEvent<'a>> {
    let (ph, cat) = (k.ph?, k.cat?);
    if k.read_in_full || !skip.wants_skipped(ph, cat) {
        return None;
    }
    // Times that are not JSON values, and events without a time, are read in full (which says
    // what is wrong, or counts them).
    let raw = |t: &'a str| {
        // A scalar the skim found to be JSON (else it is read in full); a string is checked here.
        if !t.starts_with('"') {
            return Some(Raw(t));
        }
        serde_json::from_str::<&'a RawValue>(t).ok().map(Raw::from)
    };
    let ts = raw(k.ts?)?;
    let dur = match k.dur {
        Some(d) => Some(raw(d)?),
        None => None,
    };
    Some(RawEvent {
        ph: Some(Cow::Borrowed(ph)),
        cat: Some(Cow::Borrowed(cat)),
        ts: Some(ts),
        dur,
        skipped: true,
        ..RawEvent::default()
    })
}
