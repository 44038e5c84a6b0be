//! Clock alignment of the hosts of one run.
//!
//! Hosts' clocks disagree (each profile's times come from its own machine). In synchronous
//! training every host ends a step together (the step's all-reduce makes them wait for each
//! other), so the ends of steps of the same name must coincide. Each host's correction is the
//! median, over the steps it shares with the reference host (the one with the most steps), of
//! the reference's step end minus its own; the residual skew is the median distance left after
//! the correction. A host sharing no step with the reference keeps its raw clock, and says so.

use serde::Serialize;

/// How one host was placed on the run's common axis.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostClock {
    // Fields in name order, as the trace viewer's JSON writes keys.
    /// `step ends` (aligned), `reference` (the host others are aligned to), `raw clock`
    /// (no step shared with the reference, or alignment off), `raw clock (step ends disagree)`
    /// (too few shared steps, or a residual over half the correction: the figures stay here).
    pub basis: &'static str,
    /// Added by the alignment (0 when not aligned).
    pub correction_ps: i64,
    pub host: String,
    /// Steps matched with the reference host.
    pub matched_steps: usize,
    /// From the profiles' own clocks (start times), before any correction.
    pub raw_offset_ps: i64,
    /// Median distance between this host's step ends and the reference's after the correction.
    pub residual_ps: i64,
}

/// Steps a host must share with the reference for its correction to be used.
pub const MIN_STEPS: usize = 3;

fn median(v: &mut [i64]) -> i64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// The corrections for hosts with raw offsets `raw[h]` and step ends `ends[h]` (step name, end
/// on the host's own axis).
pub fn align(hosts: &[String], raw: &[i64], ends: &[Vec<(String, i64)>]) -> Vec<HostClock> {
    let reference = (0..hosts.len()).max_by_key(|&h| (ends[h].len(), std::cmp::Reverse(h)));
    let Some(r) = reference.filter(|&r| !ends[r].is_empty()) else {
        return hosts
            .iter()
            .zip(raw)
            .map(|(h, &o)| HostClock {
                host: h.clone(),
                raw_offset_ps: o,
                correction_ps: 0,
                residual_ps: 0,
                matched_steps: 0,
                basis: "raw clock",
            })
            .collect();
    };
    let at_ref: std::collections::HashMap<&str, i64> = ends[r]
        .iter()
        .map(|(n, e)| (n.as_str(), e.saturating_add(raw[r])))
        .collect();
    (0..hosts.len())
        .map(|h| {
            let mut d: Vec<i64> = ends[h]
                .iter()
                .filter_map(|(n, e)| Some(at_ref.get(n.as_str())? - e.saturating_add(raw[h])))
                .collect();
            let matched = d.len();
            if h == r || matched == 0 {
                return HostClock {
                    host: hosts[h].clone(),
                    raw_offset_ps: raw[h],
                    correction_ps: 0,
                    residual_ps: 0,
                    matched_steps: matched,
                    basis: if h == r { "reference" } else { "raw clock" },
                };
            }
            let c = median(&mut d);
            let mut left: Vec<i64> = d.iter().map(|x| (x - c).abs()).collect();
            let residual = median(&mut left);
            // Steps that do not end together (too few, or spread wider than the shift they
            // would justify) say nothing about the clocks: keep the raw one, and say why.
            let trusted = matched >= MIN_STEPS && residual.saturating_mul(2) <= c.abs().max(1);
            HostClock {
                host: hosts[h].clone(),
                raw_offset_ps: raw[h],
                correction_ps: if trusted { c } else { 0 },
                residual_ps: residual,
                matched_steps: matched,
                basis: if trusted {
                    "step ends"
                } else {
                    "raw clock (step ends disagree)"
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifted_hosts_come_back_together() {
        let names = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let steps = |shift: i64| -> Vec<(String, i64)> {
            (0..5)
                .map(|i| (format!("s{i}"), 1000 * (i + 1) + shift))
                .collect()
        };
        // b's clock is 70 ahead, c's 30 behind, c also misses a step and has one of its own.
        let mut c = steps(-30);
        c.remove(0);
        c.push(("lonely".into(), 99));
        let clocks = align(&names, &[0, 0, 0], &[steps(0), steps(70), c]);
        assert_eq!(clocks[0].basis, "reference");
        assert_eq!((clocks[1].correction_ps, clocks[1].residual_ps), (-70, 0));
        assert_eq!((clocks[2].correction_ps, clocks[2].matched_steps), (30, 4));
        // Raw offsets count: a host placed 100 later by its start time needs 100 less.
        let clocks = align(&names, &[0, 100, 0], &[steps(0), steps(0), steps(0)]);
        assert_eq!(clocks[1].correction_ps, -100);
        // Two shared steps, or ends spread wider than the shift: not trusted.
        let short: Vec<Vec<(String, i64)>> = vec![steps(0)[..2].to_vec(), steps(70)[..2].to_vec()];
        let c = align(&names[..2], &[0, 0], &short);
        assert_eq!(
            (c[1].correction_ps, c[1].basis),
            (0, "raw clock (step ends disagree)")
        );
        let mut noisy = steps(10);
        noisy[1].1 += 400;
        noisy[3].1 -= 300;
        noisy[4].1 += 500;
        let c = align(&names[..2], &[0, 0], &[steps(0), noisy]);
        assert_eq!((c[1].correction_ps, c[1].residual_ps), (0, 300));
        // No steps anywhere: raw clocks.
        let none = align(&names, &[0, 5, 9], &[vec![], vec![], vec![]]);
        assert!(none
            .iter()
            .all(|c| c.basis == "raw clock" && c.correction_ps == 0));
    }
}
