//! Ops of two runs matched by name.
//!
//! * **XSpace** (XLA): the device ops of the op metrics (or the XLA ops run on host threads of a
//!   CPU profile), self time. The numbers in HLO names differ between two compilations of one
//!   program, so an op is matched first by its structural fingerprint
//!   ([`crate::base::hlo::fingerprint`]: module, opcode, shapes, attributes, fused computations) when
//!   both runs have an op with it (`fusion.12` in BASE and `fusion.15` in NEW are one row), and
//!   otherwise by module and HLO op name with numeric suffixes removed on both (`fusion.12` in
//!   `jit_step.3` is `jit_step/fusion`; the unmatched ops of one base name are summed), so an
//!   op whose shapes changed (a larger batch) is still compared with its namesakes.
//! * **PyTorch** (Kineto): every event with a category, keyed by its exact name, counted with
//!   its inclusive duration, by the rules of Holistic Trace Analysis's `TraceDiff`
//!   ([`torch_ops`]); over the whole trace, or only its first profiler step as TraceDiff does.

use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

use crate::base::context::{Analysis, Run};

/// An op's change counts when it is over this share of its base time...
pub const OP_CHANGE_PCT: f64 = 5.0;
/// ...and over this much time (1 µs).
pub const OP_CHANGE_MIN_PS: i64 = 1_000_000;

/// One matched op key.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpDiff {
    /// What the ops were matched by.
    pub key: String,
    /// A name to show (the key, or one of the names summed into it; BASE's when both have it).
    pub name: String,
    /// NEW's name when NEW's ops of the row are not named as BASE's (matched by fingerprint):
    /// the first of NEW's names that BASE does not have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// `fingerprint` (the same HLO structure on both sides) or `name`.
    pub matched_by: &'static str,
    /// Matched by fingerprint: the names of the ops of that structure on each side (several
    /// when a program has the same op more than once, e.g. one per layer).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub base_op_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_op_names: Vec<String>,
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

impl OpDiff {
    /// The name to show: `fusion.12`, or `fusion.12 → fusion.15` when NEW names it otherwise.
    pub fn label(&self) -> String {
        match &self.new_name {
            Some(n) => format!("{} → {n}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Every matched op, largest absolute change first.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpsDiff {
    /// What the ops are (`XLA device ops`, `PyTorch events as HTA loads them`, ...).
    pub source: String,
    pub matched: usize,
    /// Of the matched keys, those matched by fingerprint.
    pub by_fingerprint: usize,
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
    /// Keyed by structural fingerprint (XLA ops present on both sides).
    pub by_fingerprint: bool,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
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
/// name, with its inclusive duration (`All`: less the `ProfilerStep#N` markers). `FirstStep`: a host event (no stream) counts when it
/// starts in the smallest `ProfilerStep#N` (start inclusive, end exclusive, any thread); a
/// device event (stream > 0) when the host event with its correlation id does; device events
/// whose launch is not in the trace, and events on stream 0, do not count.
pub fn torch_ops(a: &Analysis, scope: OpsScope) -> Option<BTreeMap<String, OpSum>> {
    let p = a.profile();
    let instant = p.strings.find("cpu_instant_event");
    // (start, dur, name, stream, correlation)
    let evs: Vec<(i64, i64, &str, i64, i64)> = crate::base::pytorch::hta::categorized_events(p)
        .into_iter()
        .filter(|e| Some(e.3) != instant)
        .map(|(start, dur, name, _, stream, corr)| (start, dur, p.str(name), stream, corr))
        .collect();
    if evs.is_empty() {
        return None;
    }
    let keep: Vec<bool> = match scope {
        // Step markers (`ProfilerStep#N`) are steps, compared as such, not ops.
        OpsScope::All => evs
            .iter()
            .map(|e| e.3 != 0 && !e.2.starts_with("ProfilerStep#"))
            .collect(),
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

/// One XLA op of one host, as the op metrics give it.
#[derive(Debug, Clone)]
struct XlaOp {
    /// Module name without its numeric suffix.
    module: String,
    name: String,
    /// Structural fingerprint ([`crate::base::hlo::fingerprint`]) when its HLO is in the profile.
    fingerprint: Option<u64>,
    count: u64,
    ps: i64,
}

/// What one host's ops are for the diff.
enum HostOps {
    /// PyTorch events, keyed by name, and what they are.
    Torch(BTreeMap<String, OpSum>, &'static str),
    Xla(Vec<XlaOp>),
}

fn host_ops(a: &Analysis, scope: OpsScope) -> HostOps {
    if let Some(t) = torch_ops(a, scope) {
        return HostOps::Torch(
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
    // TensorFlow ops without XLA are no XLA ops: the framework ops' diff matches them, with
    // XProf's self time.
    if om.source == Some(crate::base::ops::events::OpSource::HostFrameworkOps) {
        return HostOps::Xla(Vec::new());
    }
    let fps = crate::base::hlo::fingerprint::Fingerprints::of(a.profile());
    HostOps::Xla(
        om.ops
            .iter()
            .map(|op| XlaOp {
                module: op
                    .module
                    .as_deref()
                    .map(super::normalize_module)
                    .unwrap_or_default(),
                name: op.name.clone(),
                fingerprint: op.module.as_deref().and_then(|m| fps.get(m, &op.name)),
                count: op.occurrences,
                ps: op.self_time_ps,
            })
            .collect(),
    )
}

/// The key of an op matched by name: module and HLO name with numeric suffixes removed.
fn name_key(op: &XlaOp) -> String {
    if op.module.is_empty() {
        normalize_op(&op.name).to_string()
    } else {
        format!("{}/{}", op.module, normalize_op(&op.name))
    }
}

/// The key of an op matched by fingerprint.
fn fingerprint_key(op: &XlaOp, fp: u64) -> String {
    format!("{}#{fp:016x}", op.module)
}

fn add(map: &mut BTreeMap<String, OpSum>, key: String, op: &XlaOp, by_fingerprint: bool) {
    let s = map.entry(key).or_insert_with(|| OpSum {
        name: op.name.clone(),
        by_fingerprint,
        ..OpSum::default()
    });
    s.names.insert(op.name.clone());
    s.count += op.count;
    s.ps = s.ps.saturating_add(op.ps);
}

/// XLA ops of two hosts keyed for the diff: an op whose fingerprint (module and structure)
/// occurs on both sides is keyed by it; every other op by its name key, so an op whose shape
/// or attributes changed is still compared with its namesakes.
fn key_xla(b: &[XlaOp], n: &[XlaOp]) -> (BTreeMap<String, OpSum>, BTreeMap<String, OpSum>) {
    let fp_keys = |ops: &[XlaOp]| -> HashSet<String> {
        ops.iter()
            .filter_map(|o| o.fingerprint.map(|fp| fingerprint_key(o, fp)))
            .collect()
    };
    let (kb, kn) = (fp_keys(b), fp_keys(n));
    let keyed = |ops: &[XlaOp], other: &HashSet<String>| {
        let mut m = BTreeMap::new();
        for o in ops {
            match o
                .fingerprint
                .map(|fp| fingerprint_key(o, fp))
                .filter(|k| other.contains(k))
            {
                Some(k) => add(&mut m, k, o, true),
                None => add(&mut m, name_key(o), o, false),
            }
        }
        m
    };
    (keyed(b, &kn), keyed(n, &kb))
}

/// Name keys only (when the other side is a PyTorch trace).
fn by_name(ops: &[XlaOp]) -> BTreeMap<String, OpSum> {
    let mut m = BTreeMap::new();
    for o in ops {
        add(&mut m, name_key(o), o, false);
    }
    m
}

/// What XLA ops are matched by.
pub const XLA_SOURCE: &str = "XLA ops, self time: matched by structural fingerprint (module, \
     opcode, shapes, attributes, fused computations) where both runs have the op, else by module \
     and HLO name with numeric suffixes removed";

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

/// Sums keyed ops into `into`.
fn merge(into: &mut BTreeMap<String, OpSum>, from: BTreeMap<String, OpSum>) {
    for (k, v) in from {
        let s = into.entry(k).or_insert_with(|| OpSum {
            name: v.name.clone(),
            by_fingerprint: v.by_fingerprint,
            ..OpSum::default()
        });
        s.names.extend(v.names);
        s.count += v.count;
        s.ps = s.ps.saturating_add(v.ps);
    }
}

/// The ops of the hosts `hosts` of `run`, summed (a host of another format than the first
/// readable one is left out: one run is one format).
fn run_ops(run: &Run, hosts: &[usize], scope: OpsScope) -> Option<HostOps> {
    let mut acc: Option<HostOps> = None;
    for &i in hosts {
        let Some(Ok(a)) = run.hosts.get(i).map(|h| &h.analysis) else {
            continue;
        };
        acc = Some(match (acc, host_ops(a, scope)) {
            (None, o) => o,
            (Some(HostOps::Xla(mut v)), HostOps::Xla(w)) => {
                v.extend(w);
                HostOps::Xla(v)
            }
            (Some(HostOps::Torch(mut m, s)), HostOps::Torch(w, _)) => {
                merge(&mut m, w);
                HostOps::Torch(m, s)
            }
            (Some(x), _) => x,
        });
    }
    acc
}

/// Matches the ops of the hosts `ib` of `base` with those of the hosts `inew` of `new`, each
/// side's ops summed over its hosts.
pub fn diff(base: &Run, ib: &[usize], new: &Run, inew: &[usize], scope: OpsScope) -> OpsDiff {
    let (b, n, source) = match (run_ops(base, ib, scope), run_ops(new, inew, scope)) {
        (Some(HostOps::Xla(b)), Some(HostOps::Xla(n))) => {
            let (b, n) = key_xla(&b, &n);
            (b, n, XLA_SOURCE.to_string())
        }
        (b, n) => {
            let named = |o: Option<HostOps>| match o {
                Some(HostOps::Torch(m, s)) => (m, s),
                Some(HostOps::Xla(ops)) => (
                    by_name(&ops),
                    "XLA ops by module and HLO name (numeric suffixes removed), self time",
                ),
                None => (BTreeMap::new(), ""),
            };
            let ((b, sb), (n, sn)) = (named(b), named(n));
            let source = if sb == sn || sn.is_empty() {
                sb.to_string()
            } else if sb.is_empty() {
                sn.to_string()
            } else {
                format!("BASE: {sb}; NEW: {sn}")
            };
            (b, n, source)
        }
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

/// Matches the host framework ops of the hosts `ib` of `base` with those of the hosts `inew`
/// of `new`, each side's summed over its hosts.
pub fn framework_diff(base: &Run, ib: &[usize], new: &Run, inew: &[usize]) -> OpsDiff {
    let of = |run: &Run, hosts: &[usize]| {
        let mut m = BTreeMap::new();
        for &i in hosts {
            if let Some(Ok(a)) = run.hosts.get(i).map(|h| &h.analysis) {
                merge(&mut m, framework_ops(a));
            }
        }
        m
    };
    diff_maps(
        &of(base, ib),
        &of(new, inew),
        "host framework ops by name, self time".to_string(),
    )
}

/// The first of the names summed into a key (the key's own name when there are none).
fn first_name(s: &OpSum) -> String {
    s.names.iter().next().unwrap_or(&s.name).clone()
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
            let by_fp = x.or(y).is_some_and(|s| s.by_fingerprint);
            let fp_names = |s: Option<&OpSum>| -> Vec<String> {
                s.filter(|_| by_fp)
                    .map(|s| s.names.iter().cloned().collect())
                    .unwrap_or_default()
            };
            OpDiff {
                key: k.clone(),
                name: x.or(y).map_or_else(|| k.clone(), first_name),
                new_name: x.zip(y).filter(|(x, y)| x.names != y.names).map(|(x, y)| {
                    y.names
                        .iter()
                        .find(|n| !x.names.contains(*n))
                        .cloned()
                        .unwrap_or_else(|| first_name(y))
                }),
                matched_by: if by_fp { "fingerprint" } else { "name" },
                base_op_names: fp_names(x),
                new_op_names: fp_names(y),
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
        by_fingerprint: rows
            .iter()
            .filter(|r| r.matched_by == "fingerprint")
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
