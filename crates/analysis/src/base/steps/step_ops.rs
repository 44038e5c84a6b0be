//! The op events of each step: every op event that starts within a step, binned by step without
//! the ops' figures (so the pass can run while the op table is built). The roofline's step points
//! and any per-step op view read it.

use std::collections::HashMap;
use xlens_model::{Profile, StatValue};

use crate::base::fx::FxMap;
use crate::base::hlo::hlo_ops::OpRow;
use crate::base::ops::events::{op_lines, op_name, OpSource};
use crate::base::steps::annotations::Steps;

/// An op event's `program_id` (its own stat, else its metadata's).
pub fn program_id(
    key: Option<xlens_model::StrId>,
    st: xlens_model::Stats<'_>,
    md: &xlens_model::EventMetadata,
) -> Option<u64> {
    key.and_then(|k| st.get(k).or_else(|| md.stats().get(k)))
        .and_then(|v| match v {
            StatValue::U64(u) => Some(u),
            StatValue::I64(i) => Some(i as u64),
            _ => None,
        })
}

/// The op events of each step, found without the ops' figures (so that this pass can run while
/// the op table is built): every op event starting in a step, as (step, op key) in scan order,
/// an op key being (plane, metadata, program id).
pub struct StepBins {
    pub steps: Steps,
    /// (plane index in the profile, event metadata id, program id).
    pub keys: Vec<(usize, u32, Option<u64>)>,
    /// (step index, key index, duration).
    pub events: Vec<(u32, u32, i64)>,
}

pub fn bin_steps(p: &Profile, steps: &Steps) -> Option<StepBins> {
    if steps.steps.is_empty() {
        return None;
    }
    let (source, lines) = op_lines(p);
    let kp = p.key("program_id");
    let kh = p.key("hlo_op");
    let starts: Vec<i64> = steps.steps.iter().map(|s| s.start_ps).collect();
    type OpKey = (usize, u32, Option<u64>);
    let mut index: FxMap<OpKey, u32> = FxMap::default();
    let mut keys = Vec::new();
    let mut events = Vec::new();
    let host_xla = source == Some(OpSource::HostXlaOps);
    for (plane, line) in lines {
        let ev = &line.events;
        let Some(plane_key) = p.planes.iter().position(|x| std::ptr::eq(x, plane)) else {
            continue;
        };
        // Events come in start order: the step index only moves forward.
        let mut k = 0usize;
        for i in 0..ev.len() {
            let stats = ev.stats(i);
            // XLA ops on host threads are the events with an `hlo_op` stat: most host events
            // have no stats at all.
            if host_xla && stats.is_empty() {
                continue;
            }
            let m = ev.meta(i);
            let Some(md) = plane.event_metadata.get(m as usize) else {
                continue;
            };
            let s = ev.start(i);
            while k < starts.len() && starts[k] <= s {
                k += 1;
            }
            if k == 0 {
                continue;
            }
            let Some(step) = steps.steps.get(k - 1) else {
                continue;
            };
            if s >= step.start_ps.saturating_add(step.dur_ps) {
                continue;
            }
            // One pass over the event's stats for `hlo_op` and `program_id`.
            let (hlo, pid_stat) = stats.two(kh, kp);
            let has_hlo = hlo.is_some();
            let mut pid = pid_stat.and_then(|v| match v {
                StatValue::U64(u) => Some(u),
                StatValue::I64(i) => Some(i as u64),
                _ => None,
            });
            if host_xla && !has_hlo {
                continue;
            }
            if pid.is_none() {
                pid = program_id(kp, xlens_model::Stats::new(&[]), md);
            }
            let key = *index.entry((plane_key, m, pid)).or_insert_with(|| {
                keys.push((plane_key, m, pid));
                keys.len() as u32 - 1
            });
            events.push(((k - 1) as u32, key, ev.dur(i)));
        }
    }
    Some(StepBins {
        steps: steps.clone(),
        keys,
        events,
    })
}

/// One step's op events: their summed duration, and the FLOPs, HBM bytes and bytes accessed of
/// each occurrence (its op's totals over its occurrences), summed.
#[derive(Debug, Clone, Copy, Default)]
pub struct StepTotals {
    pub time_ps: i64,
    pub flops: f64,
    pub hbm_bytes: f64,
    pub bytes_accessed: f64,
    pub occurrences: u64,
}

/// [`StepTotals`] of every step of `bins`, from the op table `ops` (an op's per-occurrence
/// figures found by name and program id, else by name; the last row of a (name, program id)
/// wins). Sums follow the events' scan order.
pub fn step_totals<'a>(
    p: &Profile,
    bins: &StepBins,
    ops: impl IntoIterator<Item = &'a OpRow>,
) -> Vec<StepTotals> {
    let mut per: HashMap<(&str, Option<u64>), (f64, f64, f64)> = HashMap::new();
    for o in ops {
        let n = o.occurrences.max(1) as f64;
        per.insert(
            (o.name.as_str(), o.program_id),
            (o.flops / n, o.hbm_bytes / n, o.bytes_accessed / n),
        );
    }
    let figures: Vec<(f64, f64, f64)> = bins
        .keys
        .iter()
        .map(|&(plane, m, pid)| {
            let Some(md) = p
                .planes
                .get(plane)
                .and_then(|pl| pl.event_metadata.get(m as usize))
            else {
                return Default::default();
            };
            let name = p.str(op_name(p, md));
            per.get(&(name, pid))
                .or_else(|| per.get(&(name, None)))
                .copied()
                .unwrap_or_default()
        })
        .collect();
    let mut acc = vec![StepTotals::default(); bins.steps.steps.len()];
    for &(k, key, dur) in &bins.events {
        let (f, h, b) = figures.get(key as usize).copied().unwrap_or_default();
        let Some(a) = acc.get_mut(k as usize) else {
            continue;
        };
        a.time_ps = a.time_ps.saturating_add(dur);
        a.flops += f;
        a.hbm_bytes += h;
        a.bytes_accessed += b;
        a.occurrences += 1;
    }
    acc
}
