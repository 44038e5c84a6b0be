//! Ops of two runs matched by name.
//!
//! * **XSpace** (XLA): the device ops of the op metrics (or the XLA ops run on host threads of a
//!   CPU profile), keyed by module and HLO op name with numeric suffixes removed on both
//!   (`fusion.12` in `jit_step.3` is `jit_step/fusion`): the numbers differ between two
//!   compilations of the same program, so ops with one base name are summed. Time is self time.
//! * **PyTorch** (Kineto): every event with a category, keyed by its exact name, counted with
//!   its inclusive duration, by the rules of Holistic Trace Analysis's `TraceDiff`
//!   ([`torch_ops`]); over the whole trace, or only its first profiler step as TraceDiff does.

use serde::Serialize;
use std::collections::BTreeMap;

use crate::base::context::{Analysis, Run};

/// An op's change counts when it is over this share of its base time...
pub const OP_CHANGE_PCT: f64 = 5.0;
/// ...and over this much time (1 µs).
pub const OP_CHANGE_MIN_PS: i64 = 1_000_000;

/// One matched op key.
#[derive(Debug, Clone, Serialize)]
pub struct OpDiff {
    /// What the ops were matched by.
    pub key: String,
    /// A name to show (the key, or one of the names summed into it).
    pub name: String,
    /// Distinct op names summed into the key on each side.
    pub base_names: usize,
    pub new_names: usize,
    pub base_count: u64,
    pub new_count: u64,
    pub base_ps: i64,
    pub new_ps: i64,
    pub delta_ps: i64,
    pub delta_pct: Option<f64>,
    /// `added`, `removed`, `slower`, `faster` or `unchanged`.
    pub change: String,
}

/// Every matched op, largest absolute change first.
#[derive(Debug, Clone, Serialize)]
pub struct OpsDiff {
    /// What the ops are (`XLA device ops`, `PyTorch events as HTA loads them`, ...).
    pub source: String,
    pub matched: usize,
    pub added: usize,
    pub removed: usize,
    pub slower: usize,
    pub faster: usize,
    pub unchanged: usize,
    pub base_total_ps: i64,
    pub new_total_ps: i64,
    pub rows: Vec<OpDiff>,
}

/// Summed figures of one key on one side.
#[derive(Debug, Clone, Default)]
pub struct OpSum {
    pub name: String,
    pub names: std::collections::BTreeSet<String>,
    pub count: u64,
    pub ps: i64,
}

/// An HLO op or module name without its numeric suffix (`fusion.12` → `fusion`,
/// `copy-start.3` → `copy-start`); other names as they are.
pub fn normalize_op(name: &str) -> &str {
    let t = name.trim_end_matches(|c: char| c.is_ascii_digit());
    match t.strip_suffix('.') {
        Some(s) if t.len() < name.len() && !s.is_empty() => s,
        _ => name,
    }
}

/// Which PyTorch events the op diff counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpsScope {
    /// Every event of the trace.
    #[default]
    All,
    /// The events of the smallest `ProfilerStep#N` only, picked as HTA's TraceDiff picks them.
    FirstStep,
}

/// The events of a PyTorch trace as HTA's `TraceDiff` counts them: every event with a duration
/// and a category (not `Trace`, not Kineto's `cpu_instant_event` instants), keyed by its exact
/// name, with its inclusive duration. `FirstStep`: a host event (no stream) counts when it
/// starts in the smallest `ProfilerStep#N` (start inclusive, end exclusive, any thread); a
/// device event (stream > 0) when the host event with its correlation id does; device events
/// whose launch is not in the trace, and events on stream 0, do not count.
pub fn torch_ops(a: &Analysis, scope: OpsScope) -> Option<BTreeMap<String, OpSum>> {
    let p = a.profile();
    let instant = p.strings.find("cpu_instant_event");
    // (start, dur, name, stream, correlation)
    let evs: Vec<(i64, i64, &str, i64, i64)> = crate::base::hta::categorized_events(p)
        .into_iter()
        .filter(|e| Some(e.3) != instant)
        .map(|(start, dur, name, _, stream, corr)| (start, dur, p.str(name), stream, corr))
        .collect();
    if evs.is_empty() {
        return None;
    }
    let keep: Vec<bool> = match scope {
        OpsScope::All => evs.iter().map(|e| e.3 != 0).collect(),
        OpsScope::FirstStep => {
            let step = evs
                .iter()
                .filter(|e| e.3 < 0)
                .filter_map(|e| {
                    e.2.strip_prefix("ProfilerStep#")
                        .and_then(|n| n.parse::<i64>().ok())
                        .map(|n| (n, e.0, e.0.saturating_add(e.1)))
                })
                .min();
            let Some((_, lo, hi)) = step else {
                return Some(BTreeMap::new());
            };
            let gpu = |e: &(i64, i64, &str, i64, i64)| {
                (e.3 >= 0 && e.4 >= 0) || e.2 == "Event Sync" || e.2 == "Context Sync"
            };
            let launched: std::collections::HashSet<i64> = evs
                .iter()
                .filter(|e| !gpu(e) && e.4 != -1 && lo <= e.0 && e.0 < hi)
                .map(|e| e.4)
                .collect();
            evs.iter()
                .map(|e| {
                    if e.3 < 0 {
                        lo <= e.0 && e.0 < hi
                    } else {
                        e.3 > 0 && launched.contains(&e.4)
                    }
                })
                .collect()
        }
    };
    let mut out: BTreeMap<String, OpSum> = BTreeMap::new();
    for (e, _) in evs.iter().zip(&keep).filter(|(_, &k)| k) {
        let s = out.entry(e.2.to_string()).or_insert_with(|| OpSum {
            name: e.2.to_string(),
            ..OpSum::default()
        });
        s.count += 1;
        s.ps = s.ps.saturating_add(e.1);
    }
    Some(out)
}

/// The ops of one host, keyed, and what they are.
pub fn host_ops(a: &Analysis, scope: OpsScope) -> (BTreeMap<String, OpSum>, &'static str) {
    let mut out: BTreeMap<String, OpSum> = BTreeMap::new();
    if let Some(t) = torch_ops(a, scope) {
        return (
            t,
            match scope {
                OpsScope::All => "PyTorch events by name, inclusive time (every step)",
                OpsScope::FirstStep => {
                    "PyTorch events by name, inclusive time, first profiler step (as HTA TraceDiff)"
                }
            },
        );
    }
    let om = a.op_metrics();
    for op in &om.ops {
        let module = op
            .module
            .as_deref()
            .map(super::normalize_module)
            .unwrap_or_default();
        let key = if module.is_empty() {
            normalize_op(&op.name).to_string()
        } else {
            format!("{module}/{}", normalize_op(&op.name))
        };
        let s = out.entry(key.clone()).or_insert_with(|| OpSum {
            name: key.clone(),
            ..OpSum::default()
        });
        s.names.insert(op.name.clone());
        s.count += op.occurrences;
        s.ps = s.ps.saturating_add(op.self_time_ps);
    }
    (
        out,
        "XLA ops by module and HLO name (numeric suffixes removed), self time",
    )
}

/// Classifies one key's change.
pub fn change(base: Option<&OpSum>, new: Option<&OpSum>) -> &'static str {
    match (base, new) {
        (None, Some(_)) => "added",
        (Some(_), None) => "removed",
        (Some(b), Some(n)) => {
            let d = n.ps.saturating_sub(b.ps);
            let big = d.unsigned_abs() as i64 >= OP_CHANGE_MIN_PS
                && (b.ps == 0 || d.unsigned_abs() as f64 > b.ps as f64 * OP_CHANGE_PCT / 100.0);
            match (big, d > 0) {
                (true, true) => "slower",
                (true, false) => "faster",
                _ => "unchanged",
            }
        }
        (None, None) => "unchanged",
    }
}

/// Matches the ops of host `ib` of `base` with those of host `inew` of `new`.
pub fn diff(base: &Run, ib: usize, new: &Run, inew: usize, scope: OpsScope) -> OpsDiff {
    let ops_of = |run: &Run, i: usize| match run.hosts.get(i).map(|h| &h.analysis) {
        Some(Ok(a)) => host_ops(a, scope),
        _ => (BTreeMap::new(), ""),
    };
    let (b, sb) = ops_of(base, ib);
    let (n, sn) = ops_of(new, inew);
    let source = if sb == sn || sn.is_empty() {
        sb.to_string()
    } else if sb.is_empty() {
        sn.to_string()
    } else {
        format!("BASE: {sb}; NEW: {sn}")
    };
    diff_maps(&b, &n, source)
}

/// The host framework ops (TensorFlow ops, PyTorch CPU ops, JAX name scopes of XLA ops run on
/// host threads) of one host, by name, with their self time.
pub fn framework_ops(a: &Analysis) -> BTreeMap<String, OpSum> {
    let mut out: BTreeMap<String, OpSum> = BTreeMap::new();
    for op in a.host_framework_ops().0.iter() {
        let s = out.entry(op.name.clone()).or_insert_with(|| OpSum {
            name: op.name.clone(),
            ..OpSum::default()
        });
        s.count += op.occurrences;
        s.ps = s.ps.saturating_add(op.self_time_ps);
    }
    out
}

/// Matches the host framework ops of host `ib` of `base` with those of host `inew` of `new`.
pub fn framework_diff(base: &Run, ib: usize, new: &Run, inew: usize) -> OpsDiff {
    let of = |run: &Run, i: usize| match run.hosts.get(i).map(|h| &h.analysis) {
        Some(Ok(a)) => framework_ops(a),
        _ => BTreeMap::new(),
    };
    diff_maps(
        &of(base, ib),
        &of(new, inew),
        "host framework ops by name, self time".to_string(),
    )
}

/// Two keyed op tables side by side.
pub fn diff_maps(
    b: &BTreeMap<String, OpSum>,
    n: &BTreeMap<String, OpSum>,
    source: String,
) -> OpsDiff {
    let keys: std::collections::BTreeSet<&String> = b.keys().chain(n.keys()).collect();
    let mut rows: Vec<OpDiff> = keys
        .into_iter()
        .map(|k| {
            let (x, y) = (b.get(k), n.get(k));
            let (bp, np) = (x.map_or(0, |s| s.ps), y.map_or(0, |s| s.ps));
            let d = np.saturating_sub(bp);
            OpDiff {
                key: k.clone(),
                name: x.or(y).map_or_else(|| k.clone(), |s| s.name.clone()),
                base_names: x.map_or(0, |s| s.names.len().max(1)),
                new_names: y.map_or(0, |s| s.names.len().max(1)),
                base_count: x.map_or(0, |s| s.count),
                new_count: y.map_or(0, |s| s.count),
                base_ps: bp,
                new_ps: np,
                delta_ps: d,
                delta_pct: (bp != 0).then(|| d as f64 / bp as f64 * 100.0),
                change: change(x, y).to_string(),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.delta_ps
            .unsigned_abs()
            .cmp(&a.delta_ps.unsigned_abs())
            .then_with(|| a.key.cmp(&b.key))
    });
    let count = |c: &str| rows.iter().filter(|r| r.change == c).count();
    OpsDiff {
        source,
        matched: rows
            .iter()
            .filter(|r| r.base_count > 0 && r.new_count > 0)
            .count(),
        added: count("added"),
        removed: count("removed"),
        slower: count("slower"),
        faster: count("faster"),
        unchanged: count("unchanged"),
        base_total_ps: b.values().map(|s| s.ps).fold(0, i64::saturating_add),
        new_total_ps: n.values().map(|s| s.ps).fold(0, i64::saturating_add),
        rows,
    }
}
