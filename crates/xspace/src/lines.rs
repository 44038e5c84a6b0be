//! Lines decoded one by one or on every core, with their events counted ahead to size the
//! columns.

use super::*;

/// Lines of more bytes have their events counted in a sample ([`estimate_events`]).
pub(super) const COUNT_ALL_BYTES: usize = 256 << 10;

/// The number of events a line's columns are reserved for: all counted in lines up to
/// [`COUNT_ALL_BYTES`]; in larger ones, those in the first sixteenth of the bytes, scaled up with
/// a margin (producers write lines of one kind of event; should the rest differ, the columns
/// grow as usual). Capacity never written costs no memory, and is released when the line is done.
pub(super) fn estimate_events(r: &Reader<'_>) -> usize {
    let len = r.rest().len();
    if len <= COUNT_ALL_BYTES {
        return count_events(r.clone(), len);
    }
    let sample = len / 16;
    let mut head = r.clone();
    let n = count_events_in(&mut head, sample);
    let read = len - head.rest().len();
    if read >= len {
        return n;
    }
    let scaled = (n as u128 * len as u128 / read.max(1) as u128) as usize;
    // An event takes at least two bytes.
    (scaled + scaled / 16 + 64).min(len / 2)
}

/// The number of events (field 4) in a line's body, found by skipping over them. A malformed
/// body ends the count where it goes wrong (decoding then reports the error).
pub(super) fn count_events(mut r: Reader<'_>, limit: usize) -> usize {
    count_events_in(&mut r, limit)
}

/// [`count_events`], stopping at the first field that ends `limit` or more bytes into the body.
pub(super) fn count_events_in(r: &mut Reader<'_>, limit: usize) -> usize {
    let start = r.rest().len();
    let mut n = 0;
    while start - r.rest().len() < limit {
        if r.peek() == Some(0x22) {
            r.bump();
            if r.bytes().is_err() {
                break;
            }
            n += 1;
            continue;
        }
        match r.field() {
            Ok(Some((num, wire))) => {
                n += usize::from(num == 4 && wire == WireType::Len);
                if r.skip(num, wire).is_err() {
                    break;
                }
            }
            _ => break,
        }
    }
    n
}

/// Decodes one line; `Ok(None)` when it needs a change `side` cannot make.
/// With `as_read`, the line's bytes are given back every [`RELEASE_STEP`] bytes as its events
/// are read, each step announced before it is read ([`Release::AsRead`]).
pub(super) fn decode_line<S: Side>(
    side: &mut S,
    r: Reader<'_>,
    as_read: Option<Steps<'_>>,
) -> Res<Option<LineOut>> {
    let mut line = Line::default();
    // Copied at once: with `as_read` the bytes may be gone by the end of the line.
    let (mut name, mut display_name): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
    let mut released = r.offset();
    let line_end = r.offset() + r.rest().len();
    let mut next_release = usize::MAX;
    if let Some(st) = as_read {
        next_release = released + RELEASE_STEP;
        if let Some(ahead) = st.ahead {
            ahead(released, next_release.min(line_end));
        }
    }
    // The event columns are reserved from a count of the events (exact in small lines, from a
    // sample in large ones): growing them would cost copies, and page faults on memory that
    // later goes unused. The stats buffer is reserved from the line's size
    // (unused capacity is never touched, so it costs no memory, and is released when the
    // builder finishes).
    let line_len = r.rest().len();
    let mut b = EventsBuilder::with_capacity(estimate_events(&r), line_len / 2);
    if side.ctx().flows_only {
        b.list_flows_only();
    } else {
        b.list_flows();
    }
    let mut flow = EventFlow::default();
    let mut keys = KeyMask::default();
    let mut r = r;
    while let Some(tag) = r.peek() {
        // Events (field 4) have the one-byte header 0x22; other fields take the general path.
        let mut e = if tag == 0x22 {
            r.bump();
            r.message("XEvent")?
        } else {
            let Some((num, wire)) = r.field()? else {
                break;
            };
            if num != 4 {
                match (num, wire) {
                    (1, WireType::Varint) => line.id = r.varint()? as i64,
                    (2, WireType::Len) => name = r.bytes()?.0.to_vec(),
                    (3, WireType::Varint) => line.timestamp_ns = r.varint()? as i64,
                    (9, WireType::Varint) => line.duration_ps = r.varint()? as i64,
                    (10, WireType::Varint) => line.display_id = r.varint()? as i64,
                    (11, WireType::Len) => display_name = r.bytes()?.0.to_vec(),
                    (1 | 3 | 9 | 10, w) => r.expect(num, w, WireType::Varint)?,
                    (2 | 11, w) => r.expect(num, w, WireType::Len)?,
                    _ => r.skip(num, wire)?,
                }
                continue;
            }
            if wire != WireType::Len {
                r.expect(num, wire, WireType::Len)?;
            }
            r.message("XEvent")?
        };
        let mut md_id = 0i64;
        let mut offset = 0i64;
        let mut dur = 0i64;
        let mut occurrences = None;
        // The stats are encoded straight into the columns, and the event is added after them.
        // Producers write the fields in number order with one-byte headers: read them in that
        // order first (straight-line code, predictable branches); whatever is left, in any
        // order or form, takes the general loop.
        if e.peek() == Some(0x08) {
            e.bump();
            md_id = e.varint()? as i64;
        }
        if e.peek() == Some(0x10) {
            e.bump();
            offset = e.varint()? as i64;
        }
        if e.peek() == Some(0x18) {
            e.bump();
            dur = e.varint()? as i64;
        }
        while e.peek() == Some(0x22) {
            e.bump();
            if !event_stat(side, &mut b, e.bytes()?, &mut keys, &mut flow)? {
                return Ok(None);
            }
        }
        while let Some((num, wire)) = e.field()? {
            match (num, wire) {
                (1, WireType::Varint) => md_id = e.varint()? as i64,
                (2, WireType::Varint) => offset = e.varint()? as i64,
                (3, WireType::Varint) => dur = e.varint()? as i64,
                (4, WireType::Len) => {
                    if !event_stat(side, &mut b, e.bytes()?, &mut keys, &mut flow)? {
                        return Ok(None);
                    }
                }
                (5, WireType::Varint) => occurrences = Some(e.varint()? as i64),
                (1..=3 | 5, w) => e.expect(num, w, WireType::Varint)?,
                (4, w) => e.expect(num, w, WireType::Len)?,
                _ => e.skip(num, wire)?,
            }
        }
        let meta = match side.ctx().meta_index.get(md_id) {
            Some(m) => m,
            None => match side.placeholder(md_id) {
                Some(m) => m,
                None => return Ok(None),
            },
        };
        b.push(offset, dur, meta);
        flow.flush(&mut b, &mut keys);
        if let Some(n) = occurrences {
            b.set_occurrences(n);
        }
        if r.offset() >= next_release {
            let now = r.offset();
            next_release = now.saturating_add(RELEASE_STEP);
            if let Some(st) = as_read {
                (st.give_back)(released, now);
                if let Some(ahead) = st.ahead {
                    ahead(now, next_release.min(line_end));
                }
            }
            released = now;
        }
    }
    // The line's stat keys, so that readers can skip lines without the key they look for.
    // Ids the plane does not define (kept under placeholder names) leave the keys undeclared.
    let names: Option<Vec<StrId>> = (0..128)
        .filter(|&id| keys.has(id))
        .map(|id| side.ctx().stat_names.get(id).map(StrId))
        .collect();
    if let (false, Some(names)) = (keys.other, names) {
        b.declare_stat_keys(names);
    }
    line.events = b.finish();
    Ok(Some(LineOut {
        line,
        name,
        display_name,
        left_out: keys.left_out,
        unlisted_flows: keys.unlisted_flows,
    }))
}

/// Decodes the lines of one plane on `threads` threads (largest lines first), each line's bytes
/// released as soon as it is done. Entry `i` is line `i`'s result.
///
/// On two threads the lines are first split into two sets of about equal bytes (taking the
/// largest first from one queue left one core idle for a fifth of the decoding of a 49 MB JAX
/// profile: its five large lines cannot be shared evenly that way); each thread decodes its
/// own set, largest first, and then takes what is left of the other's, smallest first.
pub(super) fn decode_lines_parallel<'a>(
    lines: &[Reader<'a>],
    ctx: &PlaneCtx,
    threads: usize,
    consumed: &(dyn Fn(usize, usize) + Sync),
    release: Release<'_>,
) -> Vec<Option<Res<Option<LineOut>>>> {
    let as_read = Steps::of(release, consumed);
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lines[i].rest().len()));
    // Queues of line indices, largest last (taken with `pop`).
    let queues: Vec<Vec<usize>> = if threads == 2 {
        let costs: Vec<usize> = lines.iter().map(|l| l.rest().len()).collect();
        let side = xlens_model::balance::two_way_split(&costs);
        [true, false]
            .iter()
            .map(|&s| {
                order
                    .iter()
                    .rev()
                    .copied()
                    .filter(|&i| side[i] == s)
                    .collect()
            })
            .collect()
    } else {
        vec![order.iter().rev().copied().collect()]
    };
    let queues = std::sync::Mutex::new(queues);
    let next_thread = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        let mut side = Pure { ctx };
        let me = next_thread.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        loop {
            let i = {
                let Ok(mut q) = queues.lock() else {
                    break;
                };
                let n = q.len();
                let own = me % n;
                match q[own].pop() {
                    Some(i) => i,
                    // Done with its own: the smallest left of another queue.
                    None => match q.iter_mut().find(|x| !x.is_empty()) {
                        Some(other) => other.remove(0),
                        None => break,
                    },
                }
            };
            let lr = lines[i].clone();
            let range = (lr.offset(), lr.offset() + lr.rest().len());
            let res = decode_line(&mut side, lr, as_read);
            if matches!(res, Ok(Some(_))) {
                consumed(range.0, range.1);
            }
            out.push((i, res));
        }
        out
    };
    let mut done: Vec<Option<Res<Option<LineOut>>>> = Vec::new();
    done.resize_with(lines.len(), || None);
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in handles {
            // A worker that panicked leaves its lines undone; they are decoded sequentially.
            if let Ok(v) = h.join() {
                all.extend(v);
            }
        }
        for (i, res) in all {
            done[i] = Some(res);
        }
    });
    done
}
