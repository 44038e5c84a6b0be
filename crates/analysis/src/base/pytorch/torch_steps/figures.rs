//! Interval algebra of the step figures and the plugin's GPU figures over a step.

use super::{KernelFig, TorchGpu};
use crate::base::pytorch::hta::{total, union};

/// `a ∩ b` of sorted disjoint interval lists.
pub(super) fn intersect(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// `a \ b` of sorted disjoint interval lists.
pub(super) fn subtract(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &(s, e) in a {
        let mut cur = s;
        while j < b.len() && b[j].1 <= cur {
            j += 1;
        }
        let mut k = j;
        while k < b.len() && b[k].0 < e {
            if b[k].0 > cur {
                out.push((cur, b[k].0));
            }
            cur = cur.max(b[k].1);
            if b[k].1 >= e {
                break;
            }
            k += 1;
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

/// Total of sorted disjoint intervals within `[s, e)`.
pub(super) fn clipped(v: &[(i64, i64)], s: i64, e: i64) -> i64 {
    let from = v.partition_point(|iv| iv.1 <= s);
    v[from..]
        .iter()
        .take_while(|iv| iv.0 < e)
        .map(|iv| iv.1.min(e) - iv.0.max(s))
        .filter(|d| *d > 0)
        .sum()
}

/// The plugin's GPU utilization, SM efficiency and occupancy over `[lo, hi)`.
pub(super) fn gpu_figures(figs: &[KernelFig], lo: i64, hi: i64) -> Vec<TorchGpu> {
    let mut ids: Vec<i64> = figs.iter().filter_map(|f| f.device).collect();
    ids.sort_unstable();
    ids.dedup();
    let span = (hi - lo) as f64;
    ids.into_iter()
        .map(|id| {
            let mine: Vec<&KernelFig> = figs.iter().filter(|f| f.device == Some(id)).collect();
            let busy = union(mine.iter().map(|f| (f.start, f.end)).collect());
            let util = total(&intersect(&busy, &[(lo, hi)])) as f64 / span;
            // Blocks per SM, summed over overlapping kernels, capped at 1.
            let mut points: Vec<(i64, u8, f64)> = Vec::new();
            for f in &mine {
                if let Some(b) = f.blocks_per_sm.filter(|b| *b > 0.0) {
                    points.push((f.start, 0, b));
                    points.push((f.end, 1, b));
                }
            }
            points.sort_by_key(|a| (a.0, a.1));
            let mut sm = None;
            if let Some(first) = points.first() {
                let (mut t, mut value, mut weighted, mut any) = (first.0, 0.0f64, 0.0f64, false);
                for (k, &(time, end, b)) in points.iter().enumerate() {
                    if k > 0 && time > t && value > 0.0 {
                        let (s, e) = (t.max(lo), time.min(hi));
                        if e > s {
                            weighted += value.min(1.0) * (e - s) as f64;
                            any = true;
                        }
                    }
                    t = time;
                    if end == 0 {
                        value += b;
                    } else {
                        value -= b;
                    }
                }
                if any {
                    sm = Some(100.0 * weighted / span);
                }
            }
            let (mut occ_time, mut occ_sum) = (0i64, 0.0f64);
            for f in &mine {
                if let Some(o) = f.occupancy.filter(|o| *o >= 0.0) {
                    let (s, e) = (f.start.max(lo), f.end.min(hi));
                    if s < e {
                        occ_time += e - s;
                        occ_sum += o * (e - s) as f64;
                    }
                }
            }
            TorchGpu {
                device: id,
                utilization_percent: 100.0 * util,
                est_sm_efficiency_percent: sm,
                est_achieved_occupancy_percent: (occ_time > 0).then(|| occ_sum / occ_time as f64),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_algebra_by_hand() {
        let a = [(0, 10), (20, 30)];
        let b = [(5, 22), (25, 26), (29, 40)];
        assert_eq!(
            intersect(&a, &b),
            vec![(5, 10), (20, 22), (25, 26), (29, 30)]
        );
        assert_eq!(subtract(&a, &b), vec![(0, 5), (22, 25), (26, 29)]);
        assert_eq!(subtract(&a, &[]), a.to_vec());
        assert_eq!(clipped(&a, 5, 25), 10);
        assert_eq!(clipped(&a, 30, 40), 0);
    }
}
