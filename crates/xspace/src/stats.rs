//! Event and metadata stats: a table of the common stat names read without a lookup, the
//! rest decoded into the model's compact encoding.

use super::*;

/// The interned name of stat metadata `id`; `None` when a worker meets an unknown id.
#[inline(always)]
pub(super) fn stat_name<S: Side>(side: &mut S, id: i64) -> Option<StrId> {
    match side.ctx().stat_names.get(id) {
        Some(s) => Some(StrId(s)),
        None => side.unknown_stat(id),
    }
}

/// The common shape of an event stat, `metadata_id` (one byte) then one integer or reference
/// varint that ends the message, appended to `out` without the general field loop: integers are
/// copied through as they are, keys and references come encoded from the plane's table. `false`
/// means "use the general path" (nothing was written).
#[inline(always)]
pub(super) fn stat_fast(
    ctx: &PlaneCtx,
    b: &[u8],
    keys: &mut KeyMask,
    out: &mut Vec<u8>,
    flow: &mut EventFlow,
) -> bool {
    let [0x08, key @ 0..0x80, tag, rest @ ..] = b else {
        // (Keys of 128 and more take two bytes: the general path.)
        return false;
    };
    let Some(Some((pk, _, fs))) = ctx.fast.get(*key as usize) else {
        return false;
    };
    if ctx.left_out_fast.get(*key as usize) == Some(&true) {
        keys.left_out += 1;
        return true;
    }
    // The value's bytes as one little-endian word; each but the last must have its
    // continuation bit.
    let n = rest.len();
    if n > 8 {
        return stat_fast_long(pk, *fs, *tag, rest, out) && {
            keys.add(*key as i64);
            true
        };
    }
    if n == 0 {
        return false;
    }
    let mut raw = 0u64;
    for (i, &x) in rest.iter().enumerate() {
        raw |= (x as u64) << (8 * i);
    }
    let mask = u64::MAX >> (64 - 8 * n);
    if raw & mask & 0x8080_8080_8080_8080 != 0x8080_8080_8080_8080 & (mask >> 8) {
        return false;
    }
    if *fs != 0 && ctx.flows_only {
        // Kept in the flow list only (and not among the line's keys).
        if !matches!(*tag, 0x18 | 0x20) {
            return false;
        }
        flow.put_raw(*fs, raw);
        return true;
    }
    match *tag {
        0x18 => {
            encode_int_raw(out, pk, false, raw, n as u8);
            flow.put_raw(*fs, raw);
        }
        0x20 => {
            encode_int_raw(out, pk, true, raw, n as u8);
            flow.put_raw(*fs, raw);
        }
        // A reference to another stat metadata id of one or two bytes.
        0x38 => {
            let id = match *rest {
                [a] => a as usize,
                [a, b] => (a & 0x7f) as usize | (b as usize) << 7,
                _ => return false,
            };
            let Some(Some((_, target, _))) = ctx.fast.get(id) else {
                return false;
            };
            encode_ref_pre(out, pk, target);
            if *fs != 0 {
                flow.put(*fs, None);
            }
        }
        _ => return false,
    }
    keys.add(*key as i64);
    true
}

/// [`stat_fast`] for an integer of 9 or 10 bytes (a negative `int64`, such as the `run_id` of
/// every XLA op event), copied through the same way; `false` (nothing written) for flow keys,
/// whose values the flow list keeps in one word, and for a tenth byte beyond 64 bits.
#[inline(always)]
pub(super) fn stat_fast_long(pk: &PreKey, fs: u8, tag: u8, rest: &[u8], out: &mut Vec<u8>) -> bool {
    let signed = match tag {
        0x18 => false,
        0x20 => true,
        _ => return false,
    };
    let (Some((head, tail)), 0) = (rest.split_first_chunk::<8>(), fs) else {
        return false;
    };
    let ok = match *tail {
        [t0] => t0 < 0x80,
        [t0, t1] => t0 >= 0x80 && t1 <= 1,
        _ => false,
    };
    if !ok || head.iter().any(|&x| x < 0x80) {
        return false;
    }
    let t = tail
        .iter()
        .rev()
        .fold(0u16, |t, &b| (t << 8) | u16::from(b));
    encode_int_raw_long(
        out,
        pk,
        signed,
        u64::from_le_bytes(*head),
        t,
        tail.len() as u8,
    );
    true
}

/// A stat (its metadata id, name and value), or `None` when it needs a change the side cannot
/// make.
#[inline(always)]
pub(super) fn stat<S: Side>(
    side: &mut S,
    mut r: Reader<'_>,
) -> Res<Option<(i64, StrId, StatValue)>> {
    let mut key = 0i64;
    let mut value = StatValue::None;
    while let Some((num, wire)) = r.field()? {
        match (num, wire) {
            (1, WireType::Varint) => key = r.varint()? as i64,
            (2, WireType::Fixed64) => value = StatValue::F64(f64::from_bits(r.fixed64()?)),
            (3, WireType::Varint) => value = StatValue::U64(r.varint()?),
            (4, WireType::Varint) => value = StatValue::I64(r.varint()? as i64),
            (5, WireType::Len) => {
                let (b, _) = r.bytes()?;
                match side.intern(b) {
                    Some(s) => value = StatValue::Str(s),
                    None => return Ok(None),
                }
            }
            (6, WireType::Len) => {
                let (b, _) = r.bytes()?;
                match side.blob(b) {
                    Some(id) => value = StatValue::Bytes(id),
                    None => return Ok(None),
                }
            }
            (7, WireType::Varint) => {
                let id = r.varint()? as i64;
                match stat_name(side, id) {
                    Some(s) => value = StatValue::Ref(s),
                    None => return Ok(None),
                }
            }
            (1..=7, w) => {
                return Err(r.err(r.offset(), format!("XStat field {num} has wire type {w:?}")))
            }
            _ => r.skip(num, wire)?,
        }
    }
    Ok(stat_name(side, key).map(|k| (key, k, value)))
}

/// The plane-local stat metadata ids seen in a line: ids below 128 as one flag byte each (a
/// plain store per stat: a 128-bit mask's variable shift cost several percent of decoding), any
/// other noted.
pub(super) struct KeyMask {
    pub(super) seen: [bool; 128],
    pub(super) other: bool,
    /// Stats left out ([`decode_leaving_out`]).
    pub(super) left_out: u64,
    /// Flow ends left out for a type their list cannot hold ([`LeaveOut::flow_stats`]).
    pub(super) unlisted_flows: u64,
}

impl Default for KeyMask {
    fn default() -> Self {
        KeyMask {
            seen: [false; 128],
            other: false,
            left_out: 0,
            unlisted_flows: 0,
        }
    }
}

impl KeyMask {
    #[inline(always)]
    pub(super) fn add(&mut self, id: i64) {
        match self.seen.get_mut(id as u64 as usize) {
            Some(s) => *s = true,
            None => self.other = true,
        }
    }

    pub(super) fn has(&self, id: i64) -> bool {
        self.seen.get(id as u64 as usize).copied().unwrap_or(false)
    }
}

/// Decodes an event's stat (its bytes, and their offset) into the last event of `b`; `Ok(false)`
/// when it needs a change `side` cannot make.
#[inline(always)]
pub(super) fn event_stat<S: Side>(
    side: &mut S,
    b: &mut EventsBuilder,
    (st, at): (&[u8], usize),
    keys: &mut KeyMask,
    flow: &mut EventFlow,
) -> Res<bool> {
    if stat_fast(side.ctx(), st, keys, b.stats_buf(), flow) {
        return Ok(true);
    }
    // A reader only for the stats the fast path leaves.
    let Some((id, k, v)) = stat(side, Reader::new(st, at, "XStat"))? else {
        return Ok(false);
    };
    if side.ctx().left_out.contains(&k) {
        keys.left_out += 1;
        return Ok(true);
    }
    let fs = flow_slot(k);
    if fs != 0 {
        flow.put(fs, v.as_id_bits());
        if side.ctx().flows_only {
            return Ok(true);
        }
    }
    keys.add(id);
    encode_stat(b.stats_buf(), k, v);
    Ok(true)
}
