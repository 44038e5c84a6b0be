//! Every line placed on one time axis per host (XProf's normalisation of line timestamps), and
//! the warnings the decoder collects on the way.

use super::*;

#[derive(Default)]
pub(super) struct Warnings {
    pub(super) unknown_stat_ids: u64,
    pub(super) unknown_event_metadata: u64,
    pub(super) invalid_utf8: u64,
    pub(super) unlisted_flow_ends: u64,
    pub(super) clamped_lines: Vec<String>,
}

impl Warnings {
    pub(super) fn into_messages(self) -> Vec<String> {
        let mut out = Vec::new();
        if self.unknown_stat_ids > 0 {
            out.push(format!(
                "{} stats referred to a stat metadata id the plane does not define; they are kept under the name `<stat ID>`",
                self.unknown_stat_ids
            ));
        }
        if self.unknown_event_metadata > 0 {
            out.push(format!(
                "{} event metadata ids were used by events but not defined by their plane; those events are kept under the name `<metadata ID>`",
                self.unknown_event_metadata
            ));
        }
        if self.invalid_utf8 > 0 {
            out.push(format!(
                "{} strings were not valid UTF-8; invalid bytes were replaced with U+FFFD",
                self.invalid_utf8
            ));
        }
        if self.unlisted_flow_ends > 0 {
            out.push(format!(
                "{} flow ends had a type beyond 32 bits; read with flow stats kept only as flow lists, which cannot hold such a type, they were left out",
                self.unlisted_flow_ends
            ));
        }
        out.extend(self.clamped_lines);
        out
    }
}

/// Wall-clock times below this (about 11.6 days after the epoch) are offsets from a profile start.
pub(super) const NORMALIZED_BELOW_NS: i64 = 1_000_000_000_000_000;

/// Events were decoded with starts relative to their line's `timestamp_ns`; put every line on one
/// picosecond axis whose 0 is the earliest event, and find what that 0 is in wall-clock time.
///
/// Current TSL profilers write line timestamps relative to the session start (recorded as
/// `profile_start_time` on the `Task Environment` plane); older ones wrote wall-clock times.
///
/// Each line is moved once, by its offset from the earliest line and the earliest event
/// together, lines shared between `threads` when there are `parallel_min_events` or more (the
/// starts of a large profile are tens of MB).
pub(super) fn place_lines_on_one_axis(
    prof: &mut Profile,
    warn: &mut Warnings,
    threads: usize,
    parallel_min_events: usize,
    skipped: &[(i64, i64)],
) {
    let origin_ns = prof
        .planes
        .iter()
        .flat_map(|p| p.lines.iter())
        .filter(|l| !l.events.is_empty())
        .map(|l| l.timestamp_ns)
        .chain(skipped.iter().map(|s| s.0))
        .min()
        .unwrap_or(0);
    // Each line's offset on the common axis (`None`: too far from the others to share it; its
    // events stay at their offsets from the profile start).
    let mut offsets: Vec<Option<i64>> = Vec::new();
    for line in prof.planes.iter().flat_map(|p| p.lines.iter()) {
        if line.events.is_empty() {
            offsets.push(None);
            continue;
        }
        let delta = (line.timestamp_ns as i128 - origin_ns as i128) * 1000;
        offsets.push(i64::try_from(delta).ok());
        if i64::try_from(delta).is_err() {
            warn.clamped_lines.push(format!(
                "line `{}` starts at {} ns, too far from the profile's other lines (earliest {} ns) to share a picosecond time axis; its events are placed at their offsets from the profile start",
                prof.strings.get(line.name),
                line.timestamp_ns,
                origin_ns
            ));
        }
    }
    prof.origin_ps = origin_ns as i128 * 1000;
    prof.origin_is_wall_clock = origin_ns >= NORMALIZED_BELOW_NS;
    if !prof.origin_is_wall_clock {
        let start = prof.strings.find("profile_start_time").and_then(|k| {
            prof.planes
                .iter()
                .find(|p| prof.strings.get(p.name) == "Task Environment")
                .and_then(|p| p.stats().get(k))
                .and_then(|v| v.as_i64())
        });
        if let Some(start) = start.filter(|s| *s >= NORMALIZED_BELOW_NS) {
            prof.origin_ps += start as i128 * 1000;
            prof.origin_is_wall_clock = true;
        }
    }
    // The earliest start once the lines are placed (a line's first: starts are sorted) becomes
    // the axis's 0.
    let lines = prof.planes.iter_mut().flat_map(|p| p.lines.iter_mut());
    let jobs: Vec<(&mut xlens_model::Events, Option<i64>)> = lines
        .zip(offsets)
        .map(|(l, d)| (&mut l.events, d))
        .filter(|(ev, _)| !ev.is_empty())
        .collect();
    // Lines passed over count as a whole read would have placed them.
    let skipped_min = skipped.iter().map(|&(ts, first)| {
        let d = i64::try_from((ts as i128 - origin_ns as i128) * 1000).unwrap_or(0);
        first.saturating_add(d)
    });
    let Some(min) = jobs
        .iter()
        .filter_map(|(ev, d)| Some(ev.starts().first()?.saturating_add(d.unwrap_or(0))))
        .chain(skipped_min)
        .min()
    else {
        return;
    };
    prof.origin_ps += min as i128;
    let place = |ev: &mut xlens_model::Events, d: Option<i64>| {
        let d = d.unwrap_or(0);
        // One pass when no start saturates on the way (then the sum is exact).
        let (first, last) = (ev.starts()[0], ev.starts()[ev.len() - 1]);
        let exact = first.checked_add(d).is_some()
            && last
                .checked_add(d)
                .and_then(|l| l.checked_sub(min))
                .is_some();
        match i64::try_from(d as i128 - min as i128) {
            Ok(both) if exact => ev.shift(both),
            _ => {
                ev.shift(d);
                match min.checked_neg() {
                    Some(x) => ev.shift(x),
                    // `-i64::MIN` does not fit: the same amount in two steps.
                    None => {
                        ev.shift(i64::MAX);
                        ev.shift(1);
                    }
                }
            }
        }
        // The line's span, while its starts are in cache and on this line's thread (read
        // alone, after everything parallel, it held up a summary by a few ms).
        let _ = ev.span();
    };
    let events: usize = jobs.iter().map(|j| j.0.len()).sum();
    if threads > 1 && events >= parallel_min_events && jobs.len() > 1 {
        let costs: Vec<usize> = jobs.iter().map(|j| j.0.len()).collect();
        let (a, b) = xlens_model::balance::split_jobs(jobs, &costs);
        std::thread::scope(|s| {
            s.spawn(|| a.into_iter().for_each(|(ev, d)| place(ev, d)));
            b.into_iter().for_each(|(ev, d)| place(ev, d));
        });
    } else {
        jobs.into_iter().for_each(|(ev, d)| place(ev, d));
    }
}

/// Profiles with fewer events have their lines placed on one thread.
pub(super) const PARALLEL_PLACE_EVENTS: usize = 1 << 18;
