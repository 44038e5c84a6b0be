//! Framework ops of a PyTorch (Kineto) trace: the `cpu_op` events on host threads (`Operator`
//! in traces of PyTorch 1.8 and 1.9, less the `ProfilerStep#N` annotations filed there), their
//! self time, and the GPU time of the kernels each one launched.
//!
//! A launch (a `cuda_runtime` or `cuda_driver` call with a `correlation`) belongs to the
//! innermost `cpu_op` open around it on its thread; the GPU events (on device planes) with that
//! correlation add their durations to that op. Self time is an op's duration minus that of the
//! `cpu_op`s directly nested in it. Host IDLE, per thread: first op start to last op end minus
//! the ops' self time (as for XSpace host ops).

use std::collections::HashMap;
use xlens_model::{Profile, StatValue, StrId};

use crate::base::fx::FxMap;

use crate::base::ops::events::FrameworkOp;

/// The type of a PyTorch op: its namespace (`aten` for `aten::mm`), else `cpu_op`.
fn op_type(name: &str) -> &str {
    name.split_once("::").map_or("cpu_op", |(ns, _)| ns)
}

/// Host framework ops and host IDLE of a PyTorch trace; `None` when the profile has no
/// `cpu_op` events (it is not one).
pub fn torch_host_ops(p: &Profile) -> Option<(Vec<FrameworkOp>, i64)> {
    let cat_key = p.key("cat")?;
    // Kineto's categories; traces from PyTorch 1.8 and 1.9 wrote `Operator` and `Runtime`.
    let op_cats: Vec<_> = ["cpu_op", "Operator", "operator"]
        .iter()
        .filter_map(|c| p.strings.find(c))
        .collect();
    if op_cats.is_empty() {
        return None;
    }
    let launch_cats: Vec<_> = ["cuda_runtime", "cuda_driver", "Runtime", "runtime"]
        .iter()
        .filter_map(|c| p.strings.find(c))
        .collect();
    let corr_key = p.key("correlation");
    // GPU time by correlation.
    let mut gpu: FxMap<i64, i64> = FxMap::default();
    if let Some(ck) = corr_key {
        for plane in p
            .planes
            .iter()
            .filter(|pl| p.str(pl.name).starts_with("/device:"))
        {
            for line in &plane.lines {
                let ev = &line.events;
                for i in 0..ev.len() {
                    if let Some(StatValue::I64(c)) = ev.stats(i).get(ck) {
                        *gpu.entry(c).or_default() += ev.dur(i);
                    }
                }
            }
        }
    }
    // Per op name (its interned id): occurrences, total, self, launched device time.
    let mut agg: FxMap<StrId, (u64, i64, i64, Option<i64>)> = FxMap::default();
    let mut idle = 0i64;
    let mut any = false;
    for plane in p.planes.iter().filter(|pl| p.str(pl.name) == "/host:CPU") {
        for line in &plane.lines {
            let ev = &line.events;
            if !ev.may_have_stat(cat_key) {
                continue;
            }
            // Open ops: (end, index into `ops`); ops: (name, start, dur, children, launched).
            let mut stack: Vec<(i64, usize)> = Vec::new();
            let mut ops: Vec<(StrId, i64, i64, i64, Option<i64>)> = Vec::new();
            for i in 0..ev.len() {
                // The last value of each (other stats skipped undecoded).
                let (mut cat, mut corr) = (None, None);
                ev.stats(i).select(
                    |k| {
                        if k == cat_key {
                            Some(true)
                        } else if Some(k) == corr_key {
                            Some(false)
                        } else {
                            None
                        }
                    },
                    |is_cat, v| {
                        if is_cat {
                            cat = v.as_str_id();
                        } else {
                            corr = v.as_i64();
                        }
                    },
                );
                let (start, end) = (ev.start(i), ev.end(i));
                // Ops that ended before this event starts (one ending where a zero-length event
                // sits still holds it).
                let dur = ev.dur(i);
                while stack
                    .last()
                    .is_some_and(|&(e, _)| e < start || (e == start && dur > 0))
                {
                    stack.pop();
                }
                let name = plane.metadata_of(line, i).map_or(StrId::EMPTY, |m| m.name);
                // Old traces file the step annotations as operators: they are not ops.
                if cat.is_some_and(|c| op_cats.contains(&c))
                    && !p.str(name).starts_with("ProfilerStep#")
                {
                    if let Some(&(_, parent)) = stack.last() {
                        ops[parent].3 += ev.dur(i);
                    }
                    ops.push((name, start, ev.dur(i), 0, None));
                    stack.push((end, ops.len() - 1));
                } else if cat.is_some_and(|c| launch_cats.contains(&c)) {
                    if let (Some(c), Some(&(_, op))) = (corr, stack.last()) {
                        let d = gpu.get(&c).copied().unwrap_or(0);
                        let slot = ops[op].4.get_or_insert(0);
                        *slot += d;
                    }
                }
            }
            if ops.is_empty() {
                continue;
            }
            any = true;
            let first = ops.iter().map(|o| o.1).min().unwrap_or(0);
            let last = ops.iter().map(|o| o.1 + o.2).max().unwrap_or(0);
            let mut line_self = 0;
            for (name, _, dur, children, launched) in ops {
                let self_ps = (dur - children).max(0);
                line_self += self_ps;
                let e = agg.entry(name).or_insert((0, 0, 0, Some(0)));
                e.0 += 1;
                e.1 += dur;
                e.2 += self_ps;
                if let (Some(t), Some(l)) = (e.3.as_mut(), launched) {
                    *t += l;
                }
            }
            idle += (last - first - line_self).max(0);
        }
    }
    if !any {
        return None;
    }
    // By name (two ids of one text would be one op).
    let mut by_name: HashMap<&str, FrameworkOp> = HashMap::new();
    for (id, (n, total, self_ps, launched)) in agg {
        let name = p.str(id);
        let e = by_name.entry(name).or_insert_with(|| FrameworkOp {
            launched_device_time_ps: Some(0),
            ..FrameworkOp::empty("Host", op_type(name), name)
        });
        e.occurrences += n;
        e.total_time_ps += total;
        e.self_time_ps += self_ps;
        if let (Some(t), Some(l)) = (e.launched_device_time_ps.as_mut(), launched) {
            *t += l;
        }
    }
    let mut out: Vec<FrameworkOp> = by_name.into_values().collect();
    out.sort_by(|a, b| {
        b.self_time_ps
            .cmp(&a.self_time_ps)
            .then_with(|| a.name.cmp(&b.name))
    });
    Some((out, idle))
}
