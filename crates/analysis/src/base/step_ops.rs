//! The op events of each step: every op event that starts within a step, binned by step without
//! the ops' figures (so the pass can run while the op table is built). The roofline's step points
//! and any per-step op view read it.

use xlens_model::{Profile, StatValue};

use crate::base::fx::FxMap;
use crate::base::ops::{op_lines, OpSource};
use crate::base::steps::Steps;

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
            if s >= step.start_ps + step.dur_ps {
                continue;
            }
            // One pass over the event's stats for `hlo_op` and `program_id`.
            let (mut has_hlo, mut pid) = (false, None);
            stats.select(
                |key| {
                    if Some(key) == kh {
                        Some(0)
                    } else if Some(key) == kp {
                        Some(1)
                    } else {
                        None
                    }
                },
                |which, v| {
                    if which == 0 {
                        has_hlo = true;
                    } else {
                        pid = match v {
                            StatValue::U64(u) => Some(u),
                            StatValue::I64(i) => Some(i as u64),
                            _ => None,
                        };
                    }
                },
            );
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
