//! Many hosts of one run side by side: each host's step statistics, the host × step matrices of
//! step time and of each breakdown category, and the stragglers, with evidence.
//!
//! Steps are matched across hosts by name (`train 12` on every host is one step). A host
//! straggles at a step when its step time is at least [`STRAGGLER_PERCENT`] above the median of
//! the *other* hosts at that step (so two hosts can be compared too); the category that explains
//! it is the one whose time grew most against the other hosts' median over those steps.

use serde::Serialize;

use crate::base::steps::step_db::{Category, StepRow};

/// How far above the other hosts' median a step must be to count as straggling.
pub const STRAGGLER_PERCENT: f64 = 10.0;

/// One host's steps (XProf's step table).
pub struct HostSteps<'a> {
    pub host: &'a str,
    pub rows: &'a [StepRow],
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostStepStats {
    pub host: String,
    pub steps: usize,
    pub mean_ps: i64,
    pub median_ps: i64,
    pub p90_ps: i64,
    pub min_ps: i64,
    pub max_ps: i64,
    /// This host's median against the median of all hosts' medians, in percent (+ is slower).
    pub vs_hosts_percent: f64,
}

/// A time in picoseconds at one host and step, or none where the host has no such step: 8 bytes
/// where an `Option<i64>` takes 16 (a pod's host x step matrices hold millions of them), written
/// as a number or `null`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell(i64);

impl Cell {
    /// No value (a step the host does not have).
    pub const NONE: Cell = Cell(i64::MIN);

    /// `v`; the one value it cannot hold, `i64::MIN`, is taken as the next one up.
    pub fn new(v: Option<i64>) -> Cell {
        v.map_or(Cell::NONE, |x| Cell(x.max(i64::MIN + 1)))
    }

    pub fn get(self) -> Option<i64> {
        (self != Cell::NONE).then_some(self.0)
    }
}

impl schemars::JsonSchema for Cell {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Cell".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<i64>>::json_schema(g)
    }
}

impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.get() {
            Some(v) => s.serialize_i64(v),
            None => s.serialize_none(),
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CategoryMatrix {
    pub id: &'static str,
    pub label: &'static str,
    /// `[host][step]`, `None` where the host has no such step.
    pub ps: Vec<Vec<Cell>>,
    /// Per step, the median over the hosts that have it (what the pages colour a cell
    /// against); derived from `ps`, so not in the JSON.
    #[serde(skip)]
    pub median_ps: Vec<Option<i64>>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Straggler {
    pub host: String,
    /// The steps where it straggles, by name.
    pub steps: Vec<String>,
    /// Of the steps it shares with other hosts.
    pub steps_compared: usize,
    pub mean_excess_ps: i64,
    pub mean_excess_percent: f64,
    pub max_excess_percent: f64,
    /// The breakdown category whose time grew most over those steps (its id and label).
    pub category: &'static str,
    pub category_label: &'static str,
    /// That category's excess per straggling step, on average.
    pub category_excess_ps: i64,
    /// One sentence with the figures.
    pub evidence: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AllHosts {
    /// Hosts with steps (what every figure here covers).
    pub hosts: Vec<String>,
    /// Hosts of the run without steps (unreadable files, no step markers): not in the figures.
    pub hosts_without_steps: Vec<String>,
    pub stats: Vec<HostStepStats>,
    /// Step names, in order of first appearance.
    pub steps: Vec<String>,
    /// `[host][step]` step time, `None` where the host has no such step.
    pub step_time_ps: Vec<Vec<Cell>>,
    /// Per step, the median step time over the hosts that have it; derived from
    /// `step_time_ps`, so not in the JSON.
    #[serde(skip)]
    pub step_time_median_ps: Vec<Option<i64>>,
    pub categories: Vec<CategoryMatrix>,
    pub straggler_threshold_percent: f64,
    /// Slowest first; empty when no host straggles.
    pub stragglers: Vec<Straggler>,
}

fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        // The mean of the middle two, without overflow.
        v[n / 2 - 1] / 2 + v[n / 2] / 2 + (v[n / 2 - 1] % 2 + v[n / 2] % 2) / 2
    })
}

/// Per step (column) of a `[host][step]` matrix, the median over the hosts that have it.
pub fn step_medians(m: &[Vec<Cell>], steps: usize) -> Vec<Option<i64>> {
    let mut v = Vec::with_capacity(m.len());
    (0..steps)
        .map(|s| {
            v.clear();
            v.extend(m.iter().filter_map(|row| row.get(s).and_then(|c| c.get())));
            median(&mut v)
        })
        .collect()
}

/// The median (as [`median`] takes it) of `sorted` less one occurrence of `leave` (which it
/// holds; `None` leaves nothing out).
fn median_without(sorted: &[i64], leave: Option<i64>) -> Option<i64> {
    let (n, k) = match leave {
        Some(t) => (
            sorted.len().checked_sub(1)?,
            sorted.partition_point(|&x| x < t),
        ),
        None => (sorted.len(), sorted.len()),
    };
    if n == 0 {
        return None;
    }
    // The remaining list's `i`th value.
    let at = |i: usize| if i < k { sorted[i] } else { sorted[i + 1] };
    let at = |i: usize| if leave.is_some() { at(i) } else { sorted[i] };
    Some(if n % 2 == 1 {
        at(n / 2)
    } else {
        let (a, b) = (at(n / 2 - 1), at(n / 2));
        a / 2 + b / 2 + (a % 2 + b % 2) / 2
    })
}

fn quantile(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn pct(a: i64, b: i64) -> f64 {
    if b > 0 {
        100.0 * (a as f64 - b as f64) / b as f64
    } else {
        0.0
    }
}

/// The hosts of a run compared; `None` with fewer than two hosts with steps.
pub fn compare_hosts(
    hosts: &[HostSteps<'_>],
    without_steps: Vec<String>,
    categories: &'static [Category],
) -> Option<AllHosts> {
    let with: Vec<&HostSteps> = hosts.iter().filter(|h| !h.rows.is_empty()).collect();
    let mut without = without_steps;
    without.extend(
        hosts
            .iter()
            .filter(|h| h.rows.is_empty())
            .map(|h| h.host.to_string()),
    );
    if with.len() < 2 {
        return None;
    }
    let mut steps: Vec<String> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for h in &with {
        for r in h.rows {
            if !index.contains_key(&r.name) {
                index.insert(r.name.clone(), steps.len());
                steps.push(r.name.clone());
            }
        }
    }
    let cell = |h: &HostSteps, f: &dyn Fn(&StepRow) -> i64| -> Vec<Cell> {
        let mut v = vec![Cell::NONE; steps.len()];
        for r in h.rows {
            if let Some(&i) = index.get(&r.name) {
                v[i] = Cell::new(Some(f(r)));
            }
        }
        v
    };
    let step_time: Vec<Vec<Cell>> = with.iter().map(|h| cell(h, &|r| r.duration_ps)).collect();
    let cats: Vec<CategoryMatrix> = categories
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let ps: Vec<Vec<Cell>> = with
                .iter()
                .map(|h| cell(h, &|r| r.breakdown_ps.get(ci).copied().unwrap_or(0)))
                .collect();
            CategoryMatrix {
                id: c.id,
                label: c.label,
                median_ps: step_medians(&ps, steps.len()),
                ps,
            }
        })
        .collect();

    let mut stats: Vec<HostStepStats> = with
        .iter()
        .map(|h| {
            let mut d: Vec<i64> = h.rows.iter().map(|r| r.duration_ps).collect();
            d.sort_unstable();
            let sum: i128 = d.iter().map(|&x| x as i128).sum();
            HostStepStats {
                host: h.host.to_string(),
                steps: d.len(),
                mean_ps: (sum / d.len().max(1) as i128) as i64,
                median_ps: median(&mut d.clone()).unwrap_or(0),
                p90_ps: quantile(&d, 0.9),
                min_ps: d.first().copied().unwrap_or(0),
                max_ps: d.last().copied().unwrap_or(0),
                vs_hosts_percent: 0.0,
            }
        })
        .collect();
    let mut medians: Vec<i64> = stats.iter().map(|s| s.median_ps).collect();
    let all = median(&mut medians).unwrap_or(0);
    for s in &mut stats {
        s.vs_hosts_percent = pct(s.median_ps, all);
    }

    // The other hosts' median at step `s`, leaving host `h` out: from each step's values
    // sorted once (the median of a sorted list less one value is read off, so thousands of
    // hosts cost a sort per step, not one per host and step).
    let sorted = |m: &[Vec<Cell>]| -> Vec<Vec<i64>> {
        (0..steps.len())
            .map(|s| {
                let mut v: Vec<i64> = m.iter().filter_map(|row| row[s].get()).collect();
                v.sort_unstable();
                v
            })
            .collect()
    };
    let step_sorted = sorted(&step_time);
    let others =
        |sorted: &[i64], m: &[Vec<Cell>], h: usize, s: usize| median_without(sorted, m[h][s].get());
    // Each host's slow steps: (step, excess, excess %), and how many steps were compared.
    type Slow = (Vec<(usize, i64, f64)>, usize);
    let mut slow_steps: Vec<Slow> = Vec::with_capacity(with.len());
    for hi in 0..with.len() {
        let mut slow = Vec::new();
        let mut compared = 0;
        for s in 0..steps.len() {
            let (Some(t), Some(m)) = (
                step_time[hi][s].get(),
                others(&step_sorted[s], &step_time, hi, s),
            ) else {
                continue;
            };
            compared += 1;
            let e = pct(t, m);
            if e >= STRAGGLER_PERCENT {
                slow.push((s, t - m, e));
            }
        }
        slow_steps.push((slow, compared));
    }
    drop(step_sorted);
    // The categories' values sorted only at the steps some host straggles in (a pod's host x
    // step matrices are large: sorting every column of every category doubled the memory the
    // report takes).
    let mut wanted = vec![false; steps.len()];
    for (slow, _) in &slow_steps {
        for &(s, _, _) in slow {
            wanted[s] = true;
        }
    }
    let cat_sorted: Vec<Vec<Vec<i64>>> = cats
        .iter()
        .map(|c| {
            (0..steps.len())
                .map(|s| {
                    if !wanted[s] {
                        return Vec::new();
                    }
                    let mut v: Vec<i64> = c.ps.iter().filter_map(|row| row[s].get()).collect();
                    v.sort_unstable();
                    v
                })
                .collect()
        })
        .collect();
    let mut stragglers = Vec::new();
    for ((hi, h), (slow, compared)) in with.iter().enumerate().zip(slow_steps) {
        if slow.is_empty() {
            continue;
        }
        let n = slow.len() as i64;
        let (cat, cat_excess) = cats
            .iter()
            .zip(&cat_sorted)
            .map(|(c, sorted)| {
                let ex: i64 = slow
                    .iter()
                    .map(|&(s, _, _)| {
                        c.ps[hi][s].get().unwrap_or(0)
                            - others(&sorted[s], &c.ps, hi, s).unwrap_or(0)
                    })
                    .sum();
                (c, ex / n)
            })
            .max_by_key(|&(_, ex)| ex)?;
        let mean_excess_ps = slow.iter().map(|x| x.1).sum::<i64>() / n;
        let mean_pct = slow.iter().map(|x| x.2).sum::<f64>() / slow.len() as f64;
        let max_pct = slow.iter().map(|x| x.2).fold(f64::MIN, f64::max);
        stragglers.push(Straggler {
            host: h.host.to_string(),
            steps: slow.iter().map(|&(s, _, _)| steps[s].clone()).collect(),
            steps_compared: compared,
            mean_excess_ps,
            mean_excess_percent: mean_pct,
            max_excess_percent: max_pct,
            category: cat.id,
            category_label: cat.label,
            category_excess_ps: cat_excess,
            evidence: format!(
                "{} is {:.1}% slower than the other {} hosts' median in {} of {} steps (by {:.3} ms a step on average, at most {:.1}%); most of it is {} ({:.3} ms a step more)",
                h.host,
                mean_pct,
                with.len() - 1,
                slow.len(),
                compared,
                mean_excess_ps as f64 / 1e9,
                max_pct,
                cat.label,
                cat_excess as f64 / 1e9
            ),
        });
    }
    stragglers.sort_by(|a, b| {
        b.mean_excess_percent
            .total_cmp(&a.mean_excess_percent)
            .then_with(|| a.host.cmp(&b.host))
    });
    Some(AllHosts {
        hosts: with.iter().map(|h| h.host.to_string()).collect(),
        hosts_without_steps: without,
        stats,
        step_time_median_ps: step_medians(&step_time, steps.len()),
        steps,
        step_time_ps: step_time,
        categories: cats,
        straggler_threshold_percent: STRAGGLER_PERCENT,
        stragglers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::steps::step_db::CATEGORIES;

    #[test]
    fn step_medians_take_the_hosts_that_have_the_step() {
        let c = |v: Option<i64>| Cell::new(v);
        let m = vec![
            vec![c(Some(10)), c(Some(1)), c(None)],
            vec![c(Some(30)), c(None), c(None)],
            vec![c(Some(20)), c(Some(4)), c(None)],
            vec![c(Some(40)), c(Some(7)), c(None)],
        ];
        // Step 0: 10, 20, 30, 40 (the mean of the middle two); step 1: 1, 4, 7; step 2: none.
        assert_eq!(step_medians(&m, 3), vec![Some(25), Some(4), None]);
    }

    fn row(name: &str, dur: i64, compute: i64) -> StepRow {
        let mut breakdown = [0; CATEGORIES.len()];
        breakdown[0] = compute;
        breakdown[CATEGORIES.len() - 1] = dur - compute;
        StepRow {
            group_id: 0,
            name: name.into(),
            begin_ps: 0,
            duration_ps: dur,
            breakdown_ps: breakdown,
            columns: CATEGORIES.len() as u8,
        }
    }

    #[test]
    fn one_slow_host_in_its_slow_steps() {
        // Four hosts, three steps; host c is 50% slower in steps 2 and 3, all in compute.
        let fast: Vec<StepRow> = (1..=3).map(|i| row(&format!("s{i}"), 100, 60)).collect();
        let b: Vec<StepRow> = (1..=3).map(|i| row(&format!("s{i}"), 104, 64)).collect();
        let slow = vec![row("s1", 102, 62), row("s2", 150, 110), row("s3", 150, 110)];
        let hosts = [
            HostSteps {
                host: "a",
                rows: &fast,
            },
            HostSteps {
                host: "b",
                rows: &b,
            },
            HostSteps {
                host: "c",
                rows: &slow,
            },
            HostSteps {
                host: "d",
                rows: &fast,
            },
        ];
        let r = compare_hosts(&hosts, vec!["e".into()], CATEGORIES).unwrap();
        assert_eq!(r.hosts, ["a", "b", "c", "d"]);
        assert_eq!(r.hosts_without_steps, ["e"]);
        let row: Vec<Option<i64>> = r.step_time_ps[2].iter().map(|c| c.get()).collect();
        assert_eq!(row, [Some(102), Some(150), Some(150)]);
        // A host without a step: no value, written as null (8 bytes a cell, not 16).
        assert_eq!(std::mem::size_of::<Cell>(), 8);
        assert_eq!(Cell::new(None).get(), None);
        assert_eq!(Cell::new(Some(i64::MIN)).get(), Some(i64::MIN + 1));
        assert_eq!(
            serde_json::to_string(&[Cell::new(Some(-3)), Cell::NONE]).unwrap(),
            "[-3,null]"
        );
        assert_eq!(r.stragglers.len(), 1);
        let s = &r.stragglers[0];
        assert_eq!(s.host, "c");
        assert_eq!(s.steps, ["s2", "s3"]);
        assert_eq!(s.steps_compared, 3);
        // Others' median at s2: median(100, 104, 100) = 100.
        assert_eq!(s.mean_excess_ps, 50);
        assert!((s.mean_excess_percent - 50.0).abs() < 1e-9);
        assert_eq!(s.category, CATEGORIES[0].id);
        assert_eq!(s.category_excess_ps, 50);
        // Medians: a 100, b 104, c 150, d 100 -> all hosts' median 102.
        assert!((r.stats[2].vs_hosts_percent - 100.0 * 48.0 / 102.0).abs() < 1e-9);
    }

    #[test]
    fn one_host_is_no_comparison() {
        let rows = vec![row("s1", 100, 50)];
        assert!(compare_hosts(
            &[HostSteps {
                host: "a",
                rows: &rows
            }],
            vec![],
            CATEGORIES
        )
        .is_none());
    }
}

/// One op over the hosts of a run: how many hosts ran it and its time on each, summarised.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpAcrossHosts {
    pub program: String,
    pub name: String,
    /// Hosts that ran it (of `OpsAcrossHosts::hosts`).
    pub hosts: usize,
    /// Sum over those hosts.
    pub total: f64,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    pub min_host: String,
    pub max_host: String,
}

/// Every op of a run's hosts, by total over the hosts (largest first).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpsAcrossHosts {
    /// Hosts covered (with ops).
    pub hosts: usize,
    /// What `total`, `min`, `mean`, `max` measure, and in what unit: `total_time ps` or
    /// `peak_heap bytes`.
    pub measure: &'static str,
    pub ops: Vec<OpAcrossHosts>,
}

impl OpsAcrossHosts {
    /// How a page shows the figures: the factor to divide them by and the unit then (times in
    /// µs, as XProf's tables).
    pub fn display_unit(&self) -> (f64, &'static str) {
        if self.measure.ends_with(" ps") {
            (1e6, "µs")
        } else {
            (1.0, self.measure.rsplit(' ').next().unwrap_or(""))
        }
    }
}

/// `(host, program, op, value)` rows summarised per (program, op); `None` with fewer than two
/// hosts.
pub fn ops_across_hosts<'a>(
    rows: impl Iterator<Item = (&'a str, &'a str, &'a str, f64)>,
    measure: &'static str,
) -> Option<OpsAcrossHosts> {
    let mut hosts: Vec<&str> = Vec::new();
    let mut by: std::collections::HashMap<(&str, &str), Vec<(&str, f64)>> =
        std::collections::HashMap::new();
    for (h, p, n, v) in rows {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
        by.entry((p, n)).or_default().push((h, v));
    }
    if hosts.len() < 2 {
        return None;
    }
    let mut ops: Vec<OpAcrossHosts> = by
        .into_iter()
        .map(|((p, n), vs)| {
            let total: f64 = vs.iter().map(|x| x.1).sum();
            let min = vs.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
            let max = vs.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
            OpAcrossHosts {
                program: p.to_string(),
                name: n.to_string(),
                hosts: vs.len(),
                total,
                min: min.map_or(0.0, |x| x.1),
                mean: total / vs.len() as f64,
                max: max.map_or(0.0, |x| x.1),
                min_host: min.map_or(String::new(), |x| x.0.to_string()),
                max_host: max.map_or(String::new(), |x| x.0.to_string()),
            }
        })
        .collect();
    ops.sort_by(|a, b| {
        b.total
            .total_cmp(&a.total)
            .then_with(|| (&a.program, &a.name).cmp(&(&b.program, &b.name)))
    });
    Some(OpsAcrossHosts {
        hosts: hosts.len(),
        measure,
        ops,
    })
}

#[cfg(test)]
mod median_tests {
    use super::*;

    #[test]
    fn median_less_one_value_is_the_median_of_the_rest() {
        let lists: [&[i64]; 6] = [
            &[5],
            &[1, 2],
            &[3, 3, 3],
            &[-7, 1, 4, 9],
            &[1, 2, 2, 5, 8],
            &[10, 11, 12, 13, 14, 15],
        ];
        for l in lists {
            for (i, &t) in l.iter().enumerate() {
                let mut rest: Vec<i64> = l
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, &x)| x)
                    .collect();
                assert_eq!(
                    median_without(l, Some(t)),
                    median(&mut rest),
                    "{l:?} less {t}"
                );
            }
            assert_eq!(median_without(l, None), median(&mut l.to_vec()), "{l:?}");
        }
    }
}

/// `(host, category, value)` rows (one per op) summed per host and category, then summarised
/// per category over the hosts as [`ops_across_hosts`] does (program `all programs`): the op
/// profile's top level across hosts.
pub fn categories_across_hosts<'a>(
    rows: impl Iterator<Item = (&'a str, &'a str, f64)>,
    measure: &'static str,
) -> Option<OpsAcrossHosts> {
    let mut sums: Vec<((&str, &str), f64)> = Vec::new();
    let mut at: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for (h, c, v) in rows {
        let i = *at.entry((h, c)).or_insert_with(|| {
            sums.push(((h, c), 0.0));
            sums.len() - 1
        });
        sums[i].1 += v;
    }
    ops_across_hosts(
        sums.into_iter()
            .map(|((h, c), v)| (h, "all programs", c, v)),
        measure,
    )
}

#[cfg(test)]
mod ops_tests {
    use super::*;

    #[test]
    fn ops_summarised_over_hosts() {
        let rows = [
            ("a", "p", "dot", 10.0),
            ("b", "p", "dot", 30.0),
            ("c", "p", "dot", 20.0),
            ("a", "p", "add", 1.0),
        ];
        let r = ops_across_hosts(rows.into_iter(), "total_time ps").unwrap();
        assert_eq!(r.hosts, 3);
        let dot = &r.ops[0];
        assert_eq!((dot.name.as_str(), dot.hosts), ("dot", 3));
        assert_eq!(
            (dot.total, dot.min, dot.mean, dot.max),
            (60.0, 10.0, 20.0, 30.0)
        );
        assert_eq!((dot.min_host.as_str(), dot.max_host.as_str()), ("a", "b"));
        assert_eq!(r.ops[1].hosts, 1);
        assert!(ops_across_hosts([("a", "p", "x", 1.0)].into_iter(), "m").is_none());
    }
}
