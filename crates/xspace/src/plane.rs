//! A plane's context while its lines are decoded: its metadata ids mapped to the model's, and
//! each event's flow ids.

use super::*;

/// Maps producer ids to dense indices or interned names.
pub(super) enum IdMap {
    Dense(Vec<u32>),
    Sparse(HashMap<i64, u32>),
}

impl IdMap {
    const NONE: u32 = u32::MAX;

    pub(super) fn build(pairs: &[(i64, u32)]) -> IdMap {
        let max = pairs.iter().map(|p| p.0).max().unwrap_or(0);
        let min = pairs.iter().map(|p| p.0).min().unwrap_or(0);
        if min >= 0 && max < (pairs.len() as i64 * 4 + 4096) {
            let mut v = vec![Self::NONE; max as usize + 1];
            for &(k, x) in pairs {
                v[k as usize] = x;
            }
            IdMap::Dense(v)
        } else {
            IdMap::Sparse(pairs.iter().copied().collect())
        }
    }

    #[inline(always)]
    pub(super) fn get(&self, id: i64) -> Option<u32> {
        match self {
            IdMap::Dense(v) => {
                let x = *v.get(usize::try_from(id).ok()?)?;
                (x != Self::NONE).then_some(x)
            }
            IdMap::Sparse(m) => m.get(&id).copied(),
        }
    }

    /// One past the largest id a dense map can hold (for a sparse one, its largest id).
    pub(super) fn upper(&self) -> usize {
        match self {
            IdMap::Dense(v) => v.len(),
            IdMap::Sparse(m) => m.keys().max().map_or(0, |&k| {
                usize::try_from(k).map_or(0, |k| k.saturating_add(1))
            }),
        }
    }

    /// Adds an id that is not in the map yet; `entries` is the number of ids it will then hold
    /// (a dense map stays within the size bound of [`IdMap::build`]).
    pub(super) fn insert(&mut self, id: i64, x: u32, entries: usize) {
        if let IdMap::Dense(v) = self {
            match usize::try_from(id) {
                Ok(i) if i < v.len() => {
                    v[i] = x;
                    return;
                }
                Ok(i) if (i as u64) < entries as u64 * 4 + 4096 => {
                    v.resize(i + 1, Self::NONE);
                    v[i] = x;
                    return;
                }
                _ => {
                    let m = v
                        .iter()
                        .enumerate()
                        .filter(|&(_, &x)| x != Self::NONE)
                        .map(|(i, &x)| (i as i64, x))
                        .collect();
                    *self = IdMap::Sparse(m);
                }
            }
        }
        if let IdMap::Sparse(m) = self {
            m.insert(id, x);
        }
    }
}

pub(super) struct PlaneCtx {
    pub(super) stat_names: IdMap,
    pub(super) meta_index: IdMap,
    /// Stat metadata ids of one and two bytes (below 2^14, as producers write them) prepared
    /// for [`stat_fast`]: the key's encoded headers, the id's name as an encoded reference, and
    /// the key's flow slot ([`flow_slot`]). Keys are read from it only with one-byte ids,
    /// reference targets with both.
    pub(super) fast: Vec<Option<(PreKey, PreRef, u8)>>,
    /// Event stats to leave out ([`decode_leaving_out`]): their names, and whether each id of
    /// [`PlaneCtx::fast`] is one of them (empty when none is).
    pub(super) left_out: Vec<StrId>,
    pub(super) left_out_fast: Vec<bool>,
    /// Flow stats go to the line's flow list only ([`LeaveOut::flow_stats`]).
    pub(super) flows_only: bool,
}

/// The ids [`PlaneCtx::fast`] covers: those of one- and two-byte varints.
pub(super) const FAST_IDS: usize = 1 << 14;

impl PlaneCtx {
    pub(super) fn new(stat_names: IdMap, left_out: Vec<StrId>) -> Self {
        let ids = 0..stat_names.upper().min(FAST_IDS) as i64;
        let fast = ids
            .clone()
            .map(|id| {
                let name = StrId(stat_names.get(id)?);
                Some((PreKey::new(name), PreRef::new(name), flow_slot(name)))
            })
            .collect();
        let left_out_fast = if left_out.is_empty() {
            Vec::new()
        } else {
            ids.map(|id| {
                stat_names
                    .get(id)
                    .is_some_and(|n| left_out.contains(&StrId(n)))
            })
            .collect()
        };
        PlaneCtx {
            stat_names,
            meta_index: IdMap::Dense(Vec::new()),
            fast,
            left_out,
            left_out_fast,
            flows_only: false,
        }
    }
}

/// The flow stats, in the order of [`EventFlow::v`]: producer id and type, consumer id and
/// type. They are the first [`HOT_STAT_NAMES`], interned first: their ids are 1 to 4.
pub(super) const FLOW_KEYS: [StrId; 4] = [StrId(1), StrId(2), StrId(3), StrId(4)];

/// 1 + the index of `key` in [`FLOW_KEYS`], or 0 for other keys.
#[inline(always)]
pub(super) fn flow_slot(key: StrId) -> u8 {
    match FLOW_KEYS.iter().position(|k| *k == key) {
        Some(i) => i as u8 + 1,
        None => 0,
    }
}

/// The flow stats of the event being decoded, for the line's list of flow ends
/// ([`xlens_model::Flows`]). A later stat of a key replaces an earlier one; a value that is no
/// integer removes it (as readers of the stats see them).
#[derive(Default)]
pub(super) struct EventFlow {
    /// By slot ([`flow_slot`]): entry 0 takes the values of other keys, never read.
    pub(super) v: [u64; 8],
    pub(super) set: u8,
    /// Values still held as their varint's bytes ([`EventFlow::put_raw`]), decoded only for
    /// the flow ends that are complete.
    pub(super) raw: u8,
}

impl EventFlow {
    #[inline(always)]
    pub(super) fn put(&mut self, slot: u8, v: Option<u64>) {
        let i = (slot - 1) as usize;
        match v {
            Some(x) => {
                self.v[(i + 1) & 7] = x;
                self.set |= 1 << i;
                self.raw &= !(1 << i);
            }
            None => self.set &= !(1 << i),
        }
    }

    /// [`EventFlow::put`] of an integer given as the bytes of its varint (up to 8), for any
    /// key: slot 0 (not a flow key) changes nothing that is read. No branch: it runs for every
    /// stat the decoder copies through.
    #[inline(always)]
    pub(super) fn put_raw(&mut self, slot: u8, raw: u64) {
        const BIT: [u8; 8] = [0, 1, 2, 4, 8, 0, 0, 0];
        let b = BIT[(slot & 7) as usize];
        self.v[(slot & 7) as usize] = raw;
        self.set |= b;
        self.raw |= b;
    }

    #[inline(always)]
    pub(super) fn value(&self, i: usize) -> u64 {
        if self.raw & (1 << i) != 0 {
            xlens_wire::varint_word(self.v[(i + 1) & 7])
        } else {
            self.v[(i + 1) & 7]
        }
    }

    /// Adds the event's producer and consumer ends (those with both a type and an id) to the
    /// last event of `b`, and clears itself. A type beyond 32 bits gives up the line's list,
    /// or where the list is the flows' only record, leaves the flow end out (counted).
    #[inline(always)]
    pub(super) fn flush(&mut self, b: &mut EventsBuilder, keys: &mut KeyMask) {
        if self.set == 0 {
            return;
        }
        for (consumer, id, ty) in [(false, 0, 1), (true, 2, 3)] {
            if self.set & (1 << id) != 0 && self.set & (1 << ty) != 0 {
                match u32::try_from(self.value(ty)) {
                    Ok(t) => b.flow(consumer, t, self.value(id)),
                    // The list is the flows' only record: this one cannot be kept.
                    Err(_) if b.flows_only_listed() => keys.unlisted_flows += 1,
                    Err(_) => b.unlist_flows(),
                }
            }
        }
        self.set = 0;
    }
}
