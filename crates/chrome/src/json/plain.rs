//! A hand-written reader for trace events in their plain form, which is nearly every event a
//! profiler writes: keys without escapes, each field the importer reads given once, the text
//! fields (`ph`, `name`, `cat`, `bp`) strings without escapes (or `null`). Every value is still
//! checked to be JSON. Anything else is left to serde_json (the caller's general path), which
//! reads the rare forms and says what is wrong with bad input; this reader never reports an
//! error itself, so the two cannot disagree on what is accepted.
//!
//! Why: serde_json's general path (a deserializer per event, keys matched through a visitor,
//! `args` values through `RawValue`) was a third of a PyTorch trace's import.

use super::layout::{ArgsLayout, Layout, Layouts};

use super::stops::{digits_end, string_stop, ws};
use super::{Noted, Pair, Raw, RawEvent, Skip};
use std::borrow::Cow;

/// Values nested deeper than this are left to serde_json (its own limit is 128).
const MAX_DEPTH: u32 = 100;

/// Reads the event object at `text[at]` (a `{`) into `e` (empty: [`RawEvent::default`]) when
/// it is in the plain form: its `args` pairs appended to `pairs`, as the general path does;
/// returns the position just past its `}`. `None`, with `pairs` as it was and `e` partly
/// filled, when the event is not plain (or not well formed). (Filled in place: an event is
/// 208 bytes, and copying it out cost a twentieth of a first answer.)
pub(super) fn event<'a>(
    text: &'a str,
    at: usize,
    skip: Option<Skip>,
    pairs: &mut Vec<Pair<'a>>,
    e: &mut RawEvent<'a>,
) -> Option<usize> {
    let first = pairs.len();
    // `{"ph": "X", "cat": "kernel"`, as Kineto writes slices (or `{"ph": "f"` and more, as it
    // writes flows): the rest by the layout of the last event of that kind, where the text
    // follows it.
    let head = super::layout::head(text, at);
    if let Some(h) = &head {
        let end = LAYOUTS.with(|l| {
            let mut l = l.try_borrow_mut().ok()?;
            let lay = l.find_mut(h.ph, h.cat)?;
            e.ph = Some(Cow::Borrowed(h.ph));
            e.cat = h.cat.map(Cow::Borrowed);
            by_layout(text, h.end, lay, skip, pairs, first, e)
        });
        if end.is_some() {
            #[cfg(test)]
            BY_LAYOUT.with(|n| n.set(n.get() + 1));
            return end;
        }
        pairs.truncate(first);
        *e = RawEvent::default();
    }
    let mut notes = NOTES.with(|n| std::mem::take(&mut *n.borrow_mut()));
    notes.clear();
    let read = read(text, at, skip, pairs, first, e, |n| notes.push(n));
    match (read, head) {
        (None, _) => pairs.truncate(first),
        // Its first members were those of its head: the rest is the kind's layout.
        (Some(_), Some(h)) if notes.len() > h.members() => LAYOUTS.with(|l| {
            if let Ok(mut l) = l.try_borrow_mut() {
                let rest = &notes[h.members()..];
                l.learn(text, h.ph, h.cat, rest, |key| Field::of(key) as u8);
            }
        }),
        _ => {}
    }
    NOTES.with(|n| *n.borrow_mut() = notes);
    read
}

#[cfg(test)]
thread_local! {
    /// Events read by a layout on this thread.
    pub(super) static BY_LAYOUT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// `args` members read by a layout on this thread (their values checked).
    pub(super) static ARGS_FOLLOWED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// [`event`] member by member, no layout used or kept.
#[cfg(test)]
pub(super) fn event_by_members<'a>(
    text: &'a str,
    at: usize,
    skip: Option<Skip>,
    pairs: &mut Vec<Pair<'a>>,
    e: &mut RawEvent<'a>,
) -> Option<usize> {
    let first = pairs.len();
    let read = read(text, at, skip, pairs, first, e, |_| {});
    if read.is_none() {
        pairs.truncate(first);
    }
    read
}

thread_local! {
    static LAYOUTS: std::cell::RefCell<Layouts<u8>> = std::cell::RefCell::new(Layouts::default());
    static NOTES: std::cell::RefCell<Vec<Noted>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The event's members after its head (from `i`, just past the head's last value) by the
/// layout `lay`; `None` where the text does not follow it.
fn by_layout<'a>(
    text: &'a str,
    mut i: usize,
    lay: &mut Layout<u8>,
    skip: Option<Skip>,
    pairs: &mut Vec<Pair<'a>>,
    first: usize,
    e: &mut RawEvent<'a>,
) -> Option<usize> {
    let b = text.as_bytes();
    // Each field once, as the layout was read (the head's are not among them).
    for g in &lay.members {
        if !g.at(b, i) {
            return None;
        }
        let v = i + g.len();
        i = if g.tag == Field::Args as u8 {
            // Its members by the kind's `args` layout too.
            args_member(text, v, skip, pairs, e, Some(&mut lay.args))?
        } else {
            value(text, v, g.tag, skip, pairs, e)?
        };
    }
    if !lay.close.at(b, i) {
        return None;
    }
    left_out(skip, pairs, first, e);
    Some(i + lay.close.len())
}

/// The fields a plain event's members set, by their keys.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Field {
    Ph = 0,
    Name = 1,
    Cat = 2,
    Bp = 3,
    Pid = 4,
    Tid = 5,
    Ts = 6,
    Dur = 7,
    Id = 8,
    Id2 = 9,
    Args = 10,
    Other = 15,
}

impl Field {
    #[inline]
    fn of(key: &str) -> Field {
        match key {
            "ph" => Field::Ph,
            "name" => Field::Name,
            "cat" => Field::Cat,
            "bp" => Field::Bp,
            "pid" => Field::Pid,
            "tid" => Field::Tid,
            "ts" => Field::Ts,
            "dur" => Field::Dur,
            "id" => Field::Id,
            "id2" => Field::Id2,
            "args" => Field::Args,
            _ => Field::Other,
        }
    }
}

fn read<'a>(
    text: &'a str,
    at: usize,
    skip: Option<Skip>,
    pairs: &mut Vec<Pair<'a>>,
    first: usize,
    e: &mut RawEvent<'a>,
    mut note: impl FnMut(Noted),
) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(at) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, at + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    // One bit per field read, to leave repeated ones to the general path (an error there).
    let mut seen = 0u16;
    let mut from = at + 1;
    loop {
        let (k0, k1, v) = member_key(b, i)?;
        note(Noted {
            from,
            key: (k0, k1),
            value: v,
        });
        let field = Field::of(&text[k0..k1]) as u8;
        if field < 15 {
            if seen & (1 << field) != 0 {
                return None;
            }
            seen |= 1 << field;
        }
        i = value(text, v, field, skip, pairs, e)?;
        from = i;
        i = ws(b, i);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    note(Noted {
        from,
        key: (i, i),
        value: i + 1,
    });
    left_out(skip, pairs, first, e);
    Some(i + 1)
}

/// Reads the value at `text[i]` of the member that sets `field` (a [`Field`]) into `e`; the
/// position past it.
#[inline]
fn value<'a>(
    text: &'a str,
    mut i: usize,
    field: u8,
    skip: Option<Skip>,
    pairs: &mut Vec<Pair<'a>>,
    e: &mut RawEvent<'a>,
) -> Option<usize> {
    let b = text.as_bytes();
    match field {
        0..=3 => {
            let v = if is_null(b, i) {
                i += 4;
                None
            } else {
                let (s0, s1) = plain_string(b, i)?;
                i = s1 + 1;
                Some(Cow::Borrowed(&text[s0..s1]))
            };
            match field {
                0 => e.ph = v,
                1 => e.name = v,
                2 => e.cat = v,
                _ => e.bp = v,
            }
        }
        4..=9 => {
            let end = value_end(b, i, 0)?;
            let v = (!is_null(b, i)).then(|| Raw(&text[i..end]));
            i = end;
            match field {
                4 => e.pid = v,
                5 => e.tid = v,
                6 => e.ts = v,
                7 => e.dur = v,
                8 => e.id = v,
                _ => e.id2 = v,
            }
        }
        10 => i = args_member(text, i, skip, pairs, e, None)?,
        _ => i = value_end(b, i, 0)?,
    }
    Some(i)
}

/// Reads the value at `text[i]` of an event's `args` member into `e` (by `lay`, the kind's
/// layout of it, where given); the position past it.
#[inline]
fn args_member<'a>(
    text: &'a str,
    i: usize,
    skip: Option<Skip>,
    pairs: &mut Vec<Pair<'a>>,
    e: &mut RawEvent<'a>,
    lay: Option<&mut ArgsLayout>,
) -> Option<usize> {
    if is_null(text.as_bytes(), i) {
        return Some(i + 4);
    }
    let from = pairs.len() as u32;
    // A slice's args the read does not keep are checked, not kept (for other phases, and where
    // `ph` comes after `args`, the importer leaves them out).
    let keep = skip
        .and_then(|s| s.args_kept)
        .filter(|_| e.ph.as_deref() == Some("X"));
    let (end, left_out) = match lay {
        Some(lay) => args_by_layout(text, i, pairs, keep, lay)?,
        None => args(text, i, pairs, keep)?,
    };
    e.args = Some((from, pairs.len() as u32));
    e.args_left_out = left_out;
    Some(end)
}

/// Marks the event read (its args from `pairs[first]` on) left out when `skip` leaves it out.
#[inline]
fn left_out(skip: Option<Skip>, pairs: &mut Vec<Pair<'_>>, first: usize, e: &mut RawEvent<'_>) {
    if let (Some(skip), Some(ph), Some(cat)) = (skip, &e.ph, &e.cat) {
        // As the general path: an event with a `stream` arg is always kept.
        if skip.wants_skipped(ph, cat) && !pairs[first..].iter().any(|(k, _)| k == "stream") {
            pairs.truncate(first);
            e.args = None;
            e.args_left_out = 0;
            e.skipped = true;
        }
    }
}

/// The `args` object at `b[i]` (a `{`), its pairs appended to `pairs` (with `keep`, only those
/// it names and `stream`, which decides whether an event is left out); the position past its
/// `}`, and how many pairs were not appended.
fn args<'a>(
    text: &'a str,
    i: usize,
    pairs: &mut Vec<Pair<'a>>,
    keep: Option<&[&str]>,
) -> Option<(usize, u32)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let j = ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Some((j + 1, 0));
    }
    args_from(text, j, false, pairs, keep, 0).map(|(end, left_out, _)| (end, left_out))
}

/// [`args`] from `i`, the start of a member's key, or (`after_value`) just past a member's
/// value; `left_out` pairs not appended so far. Also returns how many members it read.
#[inline]
fn args_from<'a>(
    text: &'a str,
    mut i: usize,
    mut after_value: bool,
    pairs: &mut Vec<Pair<'a>>,
    keep: Option<&[&str]>,
    mut left_out: u32,
) -> Option<(usize, u32, usize)> {
    let b = text.as_bytes();
    let mut read = 0;
    loop {
        if after_value {
            i = ws(b, i);
            match b.get(i) {
                Some(b',') => i = ws(b, i + 1),
                Some(b'}') => return Some((i + 1, left_out, read)),
                _ => return None,
            }
        }
        let (k0, k1, v) = member_key(b, i)?;
        let end = value_end(b, v, 1)?;
        arg(text, (k0, k1), (v, end), pairs, keep, &mut left_out);
        read += 1;
        i = end;
        after_value = true;
    }
}

/// Appends the arg whose key is `text[k0..k1]` and value `text[v0..v1]` to `pairs`, unless
/// `keep` leaves it out (then counts it in `left_out`).
#[inline(always)]
fn arg<'a>(
    text: &'a str,
    (k0, k1): (usize, usize),
    (v0, v1): (usize, usize),
    pairs: &mut Vec<Pair<'a>>,
    keep: Option<&[&str]>,
    left_out: &mut u32,
) {
    let key = &text[k0..k1];
    if keep.is_none_or(|keep| keep.contains(&key) || key == "stream") {
        pairs.push((Cow::Borrowed(key), Raw(&text[v0..v1])));
    } else {
        *left_out += 1;
    }
}

/// [`args`] by `lay`, the layout of the last `args` of the event's kind: the text before each
/// value compared whole with the layout's, the keys taken from where the layout has them, the
/// values checked as [`args`] checks them. From the first member whose text differs (or past
/// the layout's last), member by member; where a value does not end as it should, all of it
/// member by member. The layout is learned again when it is missing, or when fewer than half of
/// the members followed it.
///
/// Why it reads what [`args`] reads: the layout's text was read by [`args`] (white space, a
/// comma, a key without escapes, a colon, white space), the same bytes lead it to the same key
/// and the same place, and it stopped at the value's first byte, so the value starts there.
fn args_by_layout<'a>(
    text: &'a str,
    at: usize,
    pairs: &mut Vec<Pair<'a>>,
    keep: Option<&[&str]>,
    lay: &mut ArgsLayout,
) -> Option<(usize, u32)> {
    let b = text.as_bytes();
    let first = pairs.len();
    let mut left_out = 0;
    let (mut i, mut followed) = (at, 0);
    let mut read = None;
    if let Some(close) = &lay.close {
        for g in &lay.members {
            if !g.at(b, i) {
                break;
            }
            let (k0, k1) = (i + usize::from(g.tag.0), i + usize::from(g.tag.1));
            let v = i + g.len();
            let Some(end) = value_end(b, v, 1) else {
                // (More white space before the value than the layout has, say.)
                followed = 0;
                break;
            };
            arg(text, (k0, k1), (v, end), pairs, keep, &mut left_out);
            followed += 1;
            i = end;
        }
        #[cfg(test)]
        ARGS_FOLLOWED.with(|n| n.set(n.get() + followed));
        if followed == lay.members.len() && close.at(b, i) {
            return Some((i + close.len(), left_out));
        }
        if followed > 0 {
            read = args_from(text, i, true, pairs, keep, left_out)
                .map(|(end, left_out, n)| (end, left_out, followed + n));
        }
    }
    let (end, left_out, n) = match read {
        Some(r) => r,
        None => {
            pairs.truncate(first);
            let (end, left_out) = args(text, at, pairs, keep)?;
            (end, left_out, usize::MAX)
        }
    };
    if !lay.unfit && (lay.close.is_none() || followed * 2 < n) {
        learn_args(text, at, lay);
    }
    Some((end, left_out))
}

/// Learns the layout of the `args` object at `text[at]` (read by [`args`] already) as `lay`.
#[cold]
fn learn_args(text: &str, at: usize, lay: &mut ArgsLayout) {
    let b = text.as_bytes();
    let mut notes = Vec::new();
    let (mut from, mut i) = (at, ws(b, at + 1));
    loop {
        if b.get(i) == Some(&b'}') {
            notes.push(Noted {
                from,
                key: (i, i),
                value: i + 1,
            });
            break;
        }
        let Some((k0, k1, v)) = member_key(b, i) else {
            return;
        };
        notes.push(Noted {
            from,
            key: (k0, k1),
            value: v,
        });
        let Some(end) = value_end(b, v, 1) else {
            return;
        };
        from = end;
        i = ws(b, end);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => {}
            _ => return,
        }
    }
    lay.learn(text, &notes);
}

/// The key (without escapes) of the object member at `b[i]`: its first byte, its closing quote
/// and where the member's value starts.
#[inline]
fn member_key(b: &[u8], i: usize) -> Option<(usize, usize, usize)> {
    let (k0, k1) = plain_string(b, i)?;
    let colon = ws(b, k1 + 1);
    if b.get(colon) != Some(&b':') {
        return None;
    }
    Some((k0, k1, ws(b, colon + 1)))
}

#[inline]
fn is_null(b: &[u8], i: usize) -> bool {
    b.get(i..i + 4) == Some(b"null")
}

/// The contents of the string at `b[i]` (a `"`) when it has no escapes: (first byte, closing
/// quote).
#[inline]
fn plain_string(b: &[u8], i: usize) -> Option<(usize, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let start = i + 1;
    let q = string_stop(b, start)?;
    (b[q] == b'"').then_some((start, q))
}

/// The end of the JSON value at `b[i]` (no white space before it), checked as JSON; `None` when
/// it is not one, or nests deeper than [`MAX_DEPTH`].
fn value_end(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'-' | b'0'..=b'9' => number_end(b, i),
        b't' => (b.get(i..i + 4) == Some(b"true")).then_some(i + 4),
        b'f' => (b.get(i..i + 5) == Some(b"false")).then_some(i + 5),
        b'n' => is_null(b, i).then_some(i + 4),
        open @ (b'[' | b'{') => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let close = if open == b'[' { b']' } else { b'}' };
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&close) {
                return Some(j + 1);
            }
            loop {
                if open == b'{' {
                    // A member's key and colon.
                    if b.get(j) != Some(&b'"') {
                        return None;
                    }
                    j = ws(b, string_end(b, j)?);
                    if b.get(j) != Some(&b':') {
                        return None;
                    }
                    j = ws(b, j + 1);
                }
                j = ws(b, value_end(b, j, depth + 1)?);
                match *b.get(j)? {
                    b',' => j = ws(b, j + 1),
                    c if c == close => return Some(j + 1),
                    _ => return None,
                }
            }
        }
        _ => None,
    }
}

/// The end of the string at `b[i]` (a `"`), escapes checked.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let q = string_stop(b, j)?;
        match b[q] {
            b'"' => return Some(q + 1),
            b'\\' => {}
            // A control character.
            _ => return None,
        }
        // An escape.
        match *b.get(q + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j = q + 2,
            b'u' => {
                let hex = b.get(q + 2..q + 6)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                j = q + 6;
            }
            _ => return None,
        }
    }
}

/// The end of the number at `b[i]`: `-`, then `0` or digits not starting with 0, then
/// optionally `.` and digits, then optionally an exponent.
pub(super) fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], j: usize| -> Option<usize> {
        let end = digits_end(b, j);
        (end > j).then_some(end)
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(b, i)?,
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = digits(b, i + 1)?;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = digits(b, i)?;
    }
    Some(i)
}
