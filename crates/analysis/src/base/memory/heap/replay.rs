//! XLA's heap simulator trace replayed: the heap size after each event and the buffers live at
//! its peak.

use super::*;

/// Result of replaying one heap simulator trace.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// Heap after the first `k` events, `k = 0..=events`.
    pub heap: Vec<i64>,
    pub unpadded: Vec<i64>,
    pub peak_bytes: i64,
    pub peak_unpadded_bytes: i64,
    pub peak_position: usize,
    /// Logical buffers live at the peak, in allocation order; a revived buffer is shown as its
    /// latest sharer.
    pub live_at_peak: Vec<i64>,
    /// Lifetime (first, last event index) of each buffer that got one.
    pub spans: HashMap<i64, (usize, usize)>,
    /// Distinct allocations touched by the trace's events.
    pub allocations_seen: usize,
}

/// A buffer as the replay sees it.
#[derive(Debug, Clone, Copy)]
pub struct TraceBuffer {
    pub id: i64,
    pub size: i64,
    pub unpadded: i64,
    /// Any key of the allocation holding it (only distinct values are counted).
    pub allocation: usize,
}

#[derive(Clone, Copy, Default)]
pub(super) struct BufState {
    pub(super) refs: i64,
    pub(super) canonical: Option<usize>,
    pub(super) span: Option<(usize, usize)>,
    pub(super) revived: bool,
}

pub(super) struct ListEntry {
    pub(super) buf: usize,
    pub(super) added: usize,
    pub(super) removed: Option<usize>,
}

/// Heap state during a replay.
pub(super) struct Sim<'a> {
    pub(super) bufs: &'a [TraceBuffer],
    pub(super) st: Vec<BufState>,
    pub(super) heap: i64,
    pub(super) unpadded: i64,
    /// Buffers whose size is on the heap, in the order they were put there (never reordered;
    /// removal only stamps the entry).
    pub(super) list: Vec<ListEntry>,
    pub(super) live_entries: HashMap<usize, Vec<usize>>,
    pub(super) last: usize,
    pub(super) out: Replay,
}

impl Sim<'_> {
    pub(super) fn root(&self, mut b: usize) -> Result<usize, String> {
        for _ in 0..=self.st.len() {
            match self.st[b].canonical {
                Some(c) => b = c,
                None => return Ok(b),
            }
        }
        Err("SHARE_WITH links form a cycle".to_string())
    }

    pub(super) fn increase(&mut self, x: usize, pos: usize, init_span: bool) {
        self.live_entries
            .entry(x)
            .or_default()
            .push(self.list.len());
        self.list.push(ListEntry {
            buf: x,
            added: pos,
            removed: None,
        });
        self.heap += self.bufs[x].size;
        self.unpadded += self.bufs[x].unpadded;
        if self.heap > self.out.peak_bytes {
            self.out.peak_bytes = self.heap;
            self.out.peak_unpadded_bytes = self.unpadded;
            self.out.peak_position = pos;
        }
        if init_span {
            self.st[x].span = Some((pos, self.last));
        }
    }

    pub(super) fn decrease(&mut self, r: usize, pos: usize) -> Result<(), String> {
        for e in self.live_entries.remove(&r).unwrap_or_default() {
            self.list[e].removed = Some(pos);
        }
        self.heap -= self.bufs[r].size;
        if self.heap < 0 {
            return Err(format!("the heap size becomes negative at event {pos}"));
        }
        self.unpadded -= self.bufs[r].unpadded;
        // A revived root keeps the lifetime it had; the revival is the sharer's.
        if !self.st[r].revived {
            if let Some(s) = self.st[r].span.as_mut() {
                s.1 = pos;
            }
        }
        Ok(())
    }
}

/// Replays one heap simulator trace over `buffers` (see the module docs for the rules). Events on
/// buffers not in `buffers` only advance the position, as in XProf; a buffer id listed twice
/// refers to its last entry.
pub fn replay(trace: &HeapSimulatorTrace, buffers: &[TraceBuffer]) -> Result<Replay, String> {
    let n = trace.events.len();
    let by_id: HashMap<i64, usize> = buffers.iter().enumerate().map(|(i, b)| (b.id, i)).collect();
    let mut sim = Sim {
        bufs: buffers,
        st: vec![BufState::default(); buffers.len()],
        heap: 0,
        unpadded: 0,
        list: Vec::new(),
        live_entries: HashMap::new(),
        last: n.saturating_sub(1),
        out: Replay {
            heap: Vec::with_capacity(n + 1),
            unpadded: Vec::with_capacity(n + 1),
            ..Default::default()
        },
    };
    // (event, root, sharer): a revived root is shown as its sharer from that event on.
    let mut shown_as: Vec<(usize, usize, usize)> = Vec::new();
    let mut allocs: BTreeSet<usize> = BTreeSet::new();

    for (pos, ev) in trace.events.iter().enumerate() {
        sim.out.heap.push(sim.heap);
        sim.out.unpadded.push(sim.unpadded);
        let Some(&b) = by_id.get(&ev.buffer_id) else {
            continue;
        };
        allocs.insert(buffers[b].allocation);
        match Kind::try_from(ev.kind) {
            Ok(Kind::Alloc) => {
                let r = sim.root(b)?;
                sim.st[r].refs += 1;
                sim.increase(b, pos, true);
            }
            Ok(Kind::Free) => {
                let r = sim.root(b)?;
                sim.st[r].refs -= 1;
                if sim.st[r].refs < 0 {
                    return Err(format!(
                        "buffer {} is freed more often than allocated (event {pos})",
                        ev.buffer_id
                    ));
                }
                if sim.st[r].refs == 0 {
                    sim.decrease(r, pos)?;
                }
                if sim.st[b].canonical.is_some() {
                    if let Some(s) = sim.st[b].span.as_mut() {
                        s.1 = pos;
                    }
                }
            }
            Ok(Kind::ShareWith) => {
                let Some(&c) = by_id.get(&ev.share_with_canonical_id) else {
                    continue;
                };
                sim.st[b].canonical = Some(c);
                let r = sim.root(c)?;
                sim.st[r].refs += 1;
                if sim.st[r].refs == 1 {
                    // The root's memory had been released and is taken again by the sharer.
                    shown_as.push((pos, r, b));
                    sim.st[r].revived = true;
                    sim.st[b].span = Some((pos, sim.last));
                    sim.increase(r, pos, false);
                }
            }
            Err(_) => return Err(format!("unknown event kind {} at event {pos}", ev.kind)),
        }
    }
    let Sim {
        st,
        heap,
        unpadded,
        list,
        mut out,
        ..
    } = sim;
    out.heap.push(heap);
    out.unpadded.push(unpadded);
    out.allocations_seen = allocs.len();

    let p = out.peak_position;
    let mut shown: HashMap<usize, usize> = HashMap::new();
    for &(_, r, s) in shown_as.iter().take_while(|x| x.0 <= p) {
        shown.insert(r, s);
    }
    if out.peak_bytes > 0 {
        out.live_at_peak = list
            .iter()
            .filter(|e| e.added <= p && e.removed.is_none_or(|r| r > p))
            .map(|e| buffers[*shown.get(&e.buf).unwrap_or(&e.buf)].id)
            .collect();
    }
    out.spans = st
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.span.map(|sp| (buffers[i].id, sp)))
        .collect();
    Ok(out)
}
