//! A TPU host's device duty cycle as XProf's overview states it: per chip, the time some core
//! of the chip runs an on-duty op (the union of the `XLA Ops` events of its cores, less infeed,
//! outfeed, host send/recv and megacore fusion self time; every `SparseCore Ops` event), over
//! the chip's whole span (from the first to the last event of those lines and the `XLA Modules`
//! lines); chips summed. A core's chip is the `local_chip_id` of its plane's `core_details`
//! stat; a plane without one counts as a chip of its own.

use std::collections::BTreeMap;
use xlens_model::{Plane, Profile, StatValue};
use xlens_wire::{fields, Value};

use crate::base::device::{device_planes, DeviceKind};

/// HLO categories whose time XProf does not count as the device on duty.
const OFF_DUTY: [&str; 7] = [
    "infeed",
    "outfeed",
    "host send",
    "host send-done",
    "host recv",
    "host recv-done",
    "megacore fusion",
];

/// Busy and idle time summed over a host's chips.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DutyCycle {
    pub active_ps: i64,
    pub idle_ps: i64,
    pub chips: usize,
}

impl DutyCycle {
    /// Active time over active and idle time, in percent (0 when there is no time).
    pub fn percent(&self) -> f64 {
        let total = self.active_ps.saturating_add(self.idle_ps);
        if total > 0 {
            self.active_ps as f64 / total as f64 * 100.0
        } else {
            0.0
        }
    }

    /// The sum of two hosts' duty cycles (their chips together).
    pub fn plus(self, o: DutyCycle) -> DutyCycle {
        DutyCycle {
            active_ps: self.active_ps.saturating_add(o.active_ps),
            idle_ps: self.idle_ps.saturating_add(o.idle_ps),
            chips: self.chips + o.chips,
        }
    }
}

/// Active intervals (merged) and the span of one chip.
#[derive(Default)]
struct Tracker {
    spans: Vec<(i64, i64)>,
    /// The first start and the last end of every event added.
    span: Option<(i64, i64)>,
}

impl Tracker {
    fn add(&mut self, start: i64, end: i64, active: bool) {
        self.span = Some(match self.span {
            Some((f, l)) => (f.min(start), l.max(end)),
            None => (start, end),
        });
        if active {
            self.spans.push((start, end));
        }
    }

    /// Active and idle time: the union of the active intervals (touching ones merge), and the
    /// rest of the span.
    fn times(mut self) -> (i64, i64) {
        let Some((first, last)) = self.span else {
            return (0, 0);
        };
        self.spans.sort_unstable();
        let mut active = 0i64;
        let mut cur: Option<(i64, i64)> = None;
        for (s, e) in self.spans {
            match &mut cur {
                Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
                _ => {
                    if let Some((cs, ce)) = cur {
                        active = active.saturating_add(ce - cs);
                    }
                    cur = Some((s, e));
                }
            }
        }
        if let Some((cs, ce)) = cur {
            active = active.saturating_add(ce - cs);
        }
        let span = last.saturating_sub(first).max(0);
        (active, span.saturating_sub(active).max(0))
    }
}

/// `local_chip_id` (field 4) of a plane's `core_details` stat, when it has one that decodes.
fn local_chip(p: &Profile, plane: &Plane) -> Option<u64> {
    let key = p.key("core_details")?;
    let StatValue::Bytes(b) = plane.stats().get(key)? else {
        return None;
    };
    let mut chip = 0;
    for f in fields(p.blob(b)) {
        if let (4, Value::Varint(v)) = f.ok()? {
            chip = v;
        }
    }
    Some(chip)
}

/// The duty cycle of a host's TPU chips; `None` when it has no TPU plane.
pub fn tpu_duty_cycle(p: &Profile) -> Option<DutyCycle> {
    let planes = device_planes(p, DeviceKind::Tpu);
    if planes.is_empty() {
        return None;
    }
    let category = p.key("hlo_category");
    let mut chips: BTreeMap<u64, Tracker> = BTreeMap::new();
    let mut lone = DutyCycle::default();
    for (_, plane) in planes {
        let mut t = Tracker::default();
        for line in &plane.lines {
            let name = p.str(line.name);
            let kind = match name {
                "XLA Ops" => 0,
                "SparseCore Ops" => 1,
                "XLA Modules" | "SparseCore Modules" => 2,
                _ => continue,
            };
            let ev = &line.events;
            for i in 0..ev.len() {
                let active = match kind {
                    0 => !plane
                        .metadata_of(line, i)
                        .and_then(|md| md.stats().get(category?))
                        .and_then(|v| v.as_str_id())
                        .is_some_and(|c| OFF_DUTY.contains(&p.str(c))),
                    1 => true,
                    _ => false,
                };
                t.add(ev.start(i), ev.end(i), active);
            }
        }
        match local_chip(p, plane) {
            Some(chip) => {
                let c = chips.entry(chip).or_default();
                if let Some((f, l)) = t.span {
                    c.add(f, l, false);
                }
                c.spans.extend(t.spans);
            }
            None => {
                let (a, i) = t.times();
                lone = lone.plus(DutyCycle {
                    active_ps: a,
                    idle_ps: i,
                    chips: 1,
                });
            }
        }
    }
    Some(chips.into_values().fold(lone, |acc, t| {
        let (a, i) = t.times();
        acc.plus(DutyCycle {
            active_ps: a,
            idle_ps: i,
            chips: 1,
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_of_active_spans_over_the_whole_span() {
        let mut t = Tracker::default();
        t.add(0, 10, false); // a module: span only
        t.add(1, 3, true);
        t.add(2, 5, true); // overlaps: 1..5
        t.add(5, 6, true); // touches: 1..6
        t.add(8, 9, true);
        t.add(9, 12, false); // off duty, widens the span
        assert_eq!(t.times(), (6, 6));
        assert_eq!(Tracker::default().times(), (0, 0));
    }
}
