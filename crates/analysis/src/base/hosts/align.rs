//! Clock alignment of the hosts of one run.
//!
//! Hosts' clocks disagree (each profile's times come from its own machine). Some events must
//! end together on every host, so their ends say how far apart the clocks are:
//! - the ends of steps of the same name (in synchronous training the step's all-reduce makes
//!   every host wait for the others);
//! - the ends of collectives whose participants all wait for each other (all-reduce,
//!   all-gather, reduce-scatter, all-to-all: XLA's ops of those opcodes, NCCL's kernels of those
//!   names), matched by op name and occurrence within the step they end in (or within the
//!   profile, for a host without steps).
//!
//! Each host's correction is the median, over the events it shares with the reference host (the
//! one with the most), of the reference's end minus its own; the residual skew is the median
//! distance left after the correction. A host sharing none with the reference keeps its raw
//! clock, and says so.

use serde::Serialize;

use crate::base::steps::step_db::StepRow;
use xlens_model::Profile;

/// How one host was placed on the run's common axis.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct HostClock {
    // Fields in name order, as the trace viewer's JSON writes keys.
    /// `step ends`, `collective ends` or `step and collective ends` (aligned on those),
    /// `reference` (the host others are aligned to), `raw clock` (nothing shared with the
    /// reference, or alignment off), `raw clock (ends disagree)` (fewer than [`MIN_STEPS`]
    /// shared ends, or a residual over half the correction: the figures stay here),
    /// `raw clock (another job: ...)` (its ends lie apart from the reference's by more than
    /// the longer of their spans and a second: not one job).
    pub basis: &'static str,
    /// Added by the alignment (0 when not aligned).
    pub correction_ps: i64,
    pub host: String,
    /// Collective ends matched with the reference host's.
    pub matched_collectives: usize,
    /// Steps matched with the reference host.
    pub matched_steps: usize,
    /// From the profiles' own clocks (start times), before any correction.
    pub raw_offset_ps: i64,
    /// Median distance between this host's step ends and the reference's after the correction.
    pub residual_ps: i64,
}

/// Ends (of steps and collectives together) a host must share with the reference for its
/// correction to be used.
pub const MIN_STEPS: usize = 3;

fn median(v: &mut [i64]) -> i64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// The corrections for hosts with raw offsets `raw[h]`, step ends `ends[h]` (step name, end on
/// the host's own axis) and collective ends `collectives[h]` (from [`collective_ends`]; empty
/// when not known).
pub fn align<S: AsRef<str>, C: AsRef<str>>(
    hosts: &[String],
    raw: &[i64],
    ends: &[Vec<(S, i64)>],
    collectives: &[Vec<(C, i64)>],
) -> Vec<HostClock> {
    let shared = |h: usize| ends[h].len() + collectives.get(h).map_or(0, Vec::len);
    let reference = (0..hosts.len()).max_by_key(|&h| (shared(h), std::cmp::Reverse(h)));
    let unaligned = |h: usize, basis| HostClock {
        host: hosts[h].clone(),
        raw_offset_ps: raw[h],
        correction_ps: 0,
        residual_ps: 0,
        matched_collectives: 0,
        matched_steps: 0,
        basis,
    };
    let Some(r) = reference.filter(|&r| shared(r) > 0) else {
        return (0..hosts.len())
            .map(|h| unaligned(h, "raw clock"))
            .collect();
    };
    type At<'a> = std::collections::HashMap<&'a str, i64>;
    fn at<T: AsRef<str>>(v: &[(T, i64)], shift: i64) -> At<'_> {
        v.iter()
            .map(|(n, e)| (n.as_ref(), e.saturating_add(shift)))
            .collect()
    }
    fn diffs<T: AsRef<str>>(mine: &[(T, i64)], theirs: &At<'_>, raw: i64) -> Vec<i64> {
        mine.iter()
            .filter_map(|(n, e)| Some(theirs.get(n.as_ref())? - e.saturating_add(raw)))
            .collect()
    }
    // The first and last end of a host on its own clock: hosts whose spans lie apart by more
    // than the longer of them (and a second) are not one job, whatever names their ends share
    // (two runs of one program a day apart).
    let window = |h: usize| -> Option<(i64, i64)> {
        let all = ends[h]
            .iter()
            .map(|x| x.1)
            .chain(collectives.get(h).into_iter().flatten().map(|x| x.1));
        let (lo, hi) = all.fold((i64::MAX, i64::MIN), |(a, b), e| (a.min(e), b.max(e)));
        (lo <= hi).then(|| (lo.saturating_add(raw[h]), hi.saturating_add(raw[h])))
    };
    fn one_job(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> bool {
        let (Some(a), Some(b)) = (a, b) else {
            return true;
        };
        let gap = a.0.max(b.0).saturating_sub(a.1.min(b.1));
        let slack = (a.1 - a.0).max(b.1 - b.0).max(1_000_000_000_000);
        gap <= slack
    }
    let steps_at_ref = at(&ends[r], raw[r]);
    let colls_at_ref = collectives
        .get(r)
        .map(|v| at(v, raw[r]))
        .unwrap_or_default();
    (0..hosts.len())
        .map(|h| {
            let mut d = diffs(&ends[h], &steps_at_ref, raw[h]);
            let steps = d.len();
            if let Some(c) = collectives.get(h) {
                d.extend(diffs(c, &colls_at_ref, raw[h]));
            }
            let colls = d.len() - steps;
            if h != r && !one_job(window(h), window(r)) {
                return HostClock {
                    matched_collectives: colls,
                    matched_steps: steps,
                    ..unaligned(
                        h,
                        "raw clock (another job: its time is apart from the reference's)",
                    )
                };
            }
            if h == r || d.is_empty() {
                return HostClock {
                    matched_collectives: colls,
                    matched_steps: steps,
                    ..unaligned(h, if h == r { "reference" } else { "raw clock" })
                };
            }
            let c = median(&mut d);
            let mut left: Vec<i64> = d.iter().map(|x| (x - c).abs()).collect();
            let residual = median(&mut left);
            // Ends that do not coincide (too few, or spread wider than the shift they would
            // justify) say nothing about the clocks: keep the raw one, and say why.
            let trusted = d.len() >= MIN_STEPS && residual.saturating_mul(2) <= c.abs().max(1);
            HostClock {
                host: hosts[h].clone(),
                raw_offset_ps: raw[h],
                correction_ps: if trusted { c } else { 0 },
                residual_ps: residual,
                matched_collectives: colls,
                matched_steps: steps,
                basis: match (trusted, steps > 0, colls > 0) {
                    (false, _, _) => "raw clock (ends disagree)",
                    (true, true, false) => "step ends",
                    (true, false, true) => "collective ends",
                    _ => "step and collective ends",
                },
            }
        })
        .collect()
}

/// Opcode names of [`crate::base::hlo::modules::COINCIDENT_OPCODES`] as NCCL spells them in its kernels'
/// names (`ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_AllGather_RING_LL`, older
/// `ncclAllReduceRingLLKernel_sum_f32`).
const NCCL_COINCIDENT: &[&str] = &["AllReduce", "AllGather", "ReduceScatter", "AllToAll"];

/// The ends of a host's collectives that every participant finishes together, keyed so the same
/// collective has the same key on every host: `NAME #k in STEP` (the k-th run of op `NAME`
/// ending within step `STEP` of `steps`), or `NAME #k` for a host without steps. A run is the
/// overlapping events of one op over the host's devices (each device runs its part of the
/// collective at the same time); its end is the last of theirs. Runs ending outside every step
/// of a host with steps are left out (their order depends on where the profile starts).
pub fn collective_ends(p: &Profile, steps: &[StepRow]) -> Vec<(String, i64)> {
    let (_, lines) = crate::base::ops::events::op_lines(p);
    let hlo = crate::base::hlo::modules::instructions_with(
        p,
        crate::base::hlo::modules::COINCIDENT_OPCODES,
    );
    let category = p.key("hlo_category");
    let mut by_op: std::collections::BTreeMap<&str, Vec<(i64, i64)>> = Default::default();
    // Whether each metadata entry of a plane is a coincident collective (its name if so),
    // decided once per plane: a plane without one has its lines skipped, not scanned.
    let mut plane_at: *const xlens_model::Plane = std::ptr::null();
    let mut is: Vec<Option<&str>> = Vec::new();
    for (plane, line) in lines {
        if !std::ptr::eq(plane_at, plane) {
            plane_at = plane;
            is = plane
                .event_metadata
                .iter()
                .map(|md| {
                    let name = p.str(crate::base::ops::events::op_name(p, md));
                    let nccl = name.starts_with("nccl")
                        && name.contains("Kernel")
                        && NCCL_COINCIDENT.iter().any(|op| name.contains(op));
                    let in_hlo = hlo.iter().any(|(_, set)| set.contains(name));
                    let by_category = category
                        .and_then(|k| md.stats().get(k))
                        .and_then(|v| v.as_str_id())
                        .is_some_and(|c| {
                            crate::base::hlo::modules::COINCIDENT_OPCODES.contains(&p.str(c))
                        });
                    (nccl || in_hlo || by_category).then_some(name)
                })
                .collect();
        }
        if is.iter().all(Option::is_none) {
            continue;
        }
        let ev = &line.events;
        for i in 0..ev.len() {
            if let Some(&Some(name)) = is.get(ev.meta(i) as usize) {
                by_op
                    .entry(name)
                    .or_default()
                    .push((ev.start(i), ev.end(i)));
            }
        }
    }
    let mut steps: Vec<(i64, i64, &str)> = steps
        .iter()
        .map(|s| {
            (
                s.begin_ps,
                s.begin_ps.saturating_add(s.duration_ps),
                s.name.as_str(),
            )
        })
        .collect();
    steps.sort_unstable();
    let mut out = Vec::new();
    for (name, mut runs) in by_op {
        runs.sort_unstable();
        let mut ends: Vec<i64> = Vec::new();
        let mut open: Option<(i64, i64)> = None;
        for (s, e) in runs {
            match open {
                Some((b, end)) if s <= end => open = Some((b, end.max(e))),
                _ => {
                    ends.extend(open.map(|(_, end)| end));
                    open = Some((s, e));
                }
            }
        }
        ends.extend(open.map(|(_, e)| e));
        let mut seen: std::collections::HashMap<&str, usize> = Default::default();
        for end in ends {
            let key = if steps.is_empty() {
                ""
            } else {
                // The last step beginning before `end`, if `end` falls within it.
                let k = steps.partition_point(|s| s.0 < end);
                match k.checked_sub(1).map(|k| steps[k]) {
                    Some((_, e, step)) if end <= e => step,
                    _ => continue,
                }
            };
            let n = seen.entry(key).or_insert(0);
            *n += 1;
            out.push(if key.is_empty() {
                (format!("{name} #{n}"), end)
            } else {
                (format!("{name} #{n} in {key}"), end)
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifted_hosts_come_back_together() {
        let names = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        // No collective ends, no step ends.
        let no: &[Vec<(String, i64)>] = &[];
        let empty = Vec::<(String, i64)>::new;
        let steps = |shift: i64| -> Vec<(String, i64)> {
            (0..5)
                .map(|i| (format!("s{i}"), 1000 * (i + 1) + shift))
                .collect()
        };
        // b's clock is 70 ahead, c's 30 behind, c also misses a step and has one of its own.
        let mut c = steps(-30);
        c.remove(0);
        c.push(("lonely".into(), 99));
        let clocks = align(&names, &[0, 0, 0], &[steps(0), steps(70), c], no);
        assert_eq!(clocks[0].basis, "reference");
        assert_eq!((clocks[1].correction_ps, clocks[1].residual_ps), (-70, 0));
        assert_eq!((clocks[2].correction_ps, clocks[2].matched_steps), (30, 4));
        // Raw offsets count: a host placed 100 later by its start time needs 100 less.
        let clocks = align(&names, &[0, 100, 0], &[steps(0), steps(0), steps(0)], no);
        assert_eq!(clocks[1].correction_ps, -100);
        // Two shared steps, or ends spread wider than the shift: not trusted.
        let short: Vec<Vec<(String, i64)>> = vec![steps(0)[..2].to_vec(), steps(70)[..2].to_vec()];
        let c = align(&names[..2], &[0, 0], &short, no);
        assert_eq!(
            (c[1].correction_ps, c[1].basis),
            (0, "raw clock (ends disagree)")
        );
        let mut noisy = steps(10);
        noisy[1].1 += 400;
        noisy[3].1 -= 300;
        noisy[4].1 += 500;
        let c = align(&names[..2], &[0, 0], &[steps(0), noisy], no);
        assert_eq!((c[1].correction_ps, c[1].residual_ps), (0, 300));
        // Two shared steps are too few alone; with the collectives that end in them, enough.
        let colls = |shift: i64| -> Vec<(String, i64)> {
            (1..5)
                .map(|i| (format!("all-reduce.1 #{i} in s0"), 200 * i + 100 + shift))
                .collect()
        };
        let c = align(&names[..2], &[0, 0], &short, &[colls(0), colls(70)]);
        assert_eq!(
            (
                c[1].correction_ps,
                c[1].matched_steps,
                c[1].matched_collectives
            ),
            (-70, 2, 4)
        );
        assert_eq!(c[1].basis, "step and collective ends");
        let c = align(
            &names[..2],
            &[0, 0],
            &[empty(), empty()],
            &[colls(0), colls(70)],
        );
        assert_eq!((c[1].correction_ps, c[1].basis), (-70, "collective ends"));
        // No steps anywhere: raw clocks.
        let none = align(&names, &[0, 5, 9], &[empty(), empty(), empty()], no);
        assert!(none
            .iter()
            .all(|c| c.basis == "raw clock" && c.correction_ps == 0));
    }
}
