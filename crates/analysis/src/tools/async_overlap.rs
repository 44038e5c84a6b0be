//! Async overlap: how much of each asynchronous XLA op (a collective, an async copy, a
//! send/recv), from its start op to its done op, other device ops hide, and how long the engines
//! of one TPU chip are busy at once. What XProf's agent CLI answers with
//! `analyze_async_overlap`, by its definitions:
//!
//! - An async op's window is an event of the plane's `Async XLA Ops` line; a plane without that
//!   line pairs `<op>-start` and `<op>-done` events of its `XLA Ops` and `Sparse Core Ops` lines
//!   in time order (`send`/`recv` start without the suffix).
//! - Its cover is the union of the plane's other op events (start and done ops left out);
//!   `hidden` at 90% covered or more, `exposed` at 10% or less, else `partial`.
//! - Concurrency: per TPU chip, each pair of busy op lines (TensorCore, SparseCores) and the time
//!   both are busy.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::tool::{PerHost, Tool, ToolError};
use xlens_model::Profile;

const ASYNC_LINE: &str = "Async XLA Ops";
/// Op lines, in the order their events are taken (sorted by name, as XProf).
const OP_LINES: [&str; 2] = ["Sparse Core Ops", "XLA Ops"];
pub const DEFAULT_HIDDEN: f64 = 0.9;
pub const DEFAULT_EXPOSED: f64 = 0.1;
pub const DEFAULT_TOP: usize = 20;

/// Counts and times of a set of async ops.
#[derive(Debug, Clone, Default, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Bucket {
    /// Async ops.
    pub count: u64,
    /// Time from start to done, summed.
    pub span_ps: i64,
    /// Time of those windows no other op covers, summed.
    pub exposed_ps: i64,
    /// Async ops covered at least at the hidden threshold.
    pub hidden: u64,
    /// Async ops between the thresholds.
    pub partial: u64,
    /// Async ops covered at most at the exposed threshold.
    pub exposed: u64,
}

impl Bucket {
    fn add(&mut self, span: i64, exposed: i64, class: &str) {
        self.count += 1;
        self.span_ps += span;
        self.exposed_ps += exposed;
        match class {
            "hidden" => self.hidden += 1,
            "partial" => self.partial += 1,
            _ => self.exposed += 1,
        }
    }
}

/// Every async op of the host.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Summary {
    #[serde(flatten)]
    pub bucket: Bucket,
    /// Start or done ops left without a partner (planes paired by name only).
    pub unpaired_ops: u64,
    /// The covered share of all windows' time; null without async ops.
    pub overlap_ratio: Option<f64>,
}

/// One plane's async ops.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PlaneBucket {
    /// The device plane (`/device:TPU:0`).
    pub plane: String,
    #[serde(flatten)]
    pub bucket: Bucket,
    /// `Async XLA Ops` (the line's events) or `start_done_pairs`.
    pub window_source: &'static str,
}

/// One async op kind (`copy`, `all-gather`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpBucket {
    /// The op kind (`copy`, `all-gather`).
    pub op: String,
    #[serde(flatten)]
    pub bucket: Bucket,
}

/// One async op.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Window {
    /// The device plane.
    pub plane: String,
    /// The start op's instruction name.
    pub name: String,
    /// The op kind (`copy`, `all-gather`).
    pub op: String,
    /// On the session's axis, as `trace_viewer --start-ps` takes it.
    pub start_ps: i64,
    /// From start op to done op, ps.
    pub span_ps: i64,
    /// Time of the window no other op covers, ps.
    pub exposed_ps: i64,
    /// The covered share of the window.
    pub overlap_ratio: f64,
    /// `hidden`, `partial` or `exposed`.
    pub class: &'static str,
}

/// Two engines of one chip.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Pair {
    /// One engine.
    pub a: Engine,
    /// The other engine.
    pub b: Engine,
    /// Time both are busy, ps.
    pub concurrent_ps: i64,
    /// The share of the less busy engine's time that the other is busy too.
    pub concurrent_ratio: f64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Engine {
    /// Its plane.
    pub plane: String,
    /// Its op line (`XLA Ops`, `Sparse Core Ops`).
    pub line: String,
    /// Time the line is busy, ps (in `engines` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_ps: Option<i64>,
}

/// One TPU chip with two or more busy engines.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Chip {
    /// The TPU chip (`/device:TPU:N`).
    pub chip: u32,
    /// Its busy op lines.
    pub engines: Vec<Engine>,
    /// Most concurrent time first.
    pub pairs: Vec<Pair>,
}

/// A host's async overlap.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AsyncOverlap {
    /// Every async op of the host.
    pub summary: Summary,
    /// Most exposed time first.
    pub by_op: Vec<OpBucket>,
    /// By plane name.
    pub by_plane: Vec<PlaneBucket>,
    /// The async ops with the most exposed time, at most `top` of them.
    pub top_exposed: Vec<Window>,
    /// Per TPU chip with two or more busy engines.
    pub concurrency: Vec<Chip>,
    /// The thresholds the classes used.
    pub thresholds: Thresholds,
    /// Why there is nothing, when there is nothing.
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct Thresholds {
    /// Covered share at or above which an op is hidden.
    pub hidden: f64,
    /// Covered share at or below which an op is exposed.
    pub exposed: f64,
}

/// The tool's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct AsyncOverlapParams {
    /// Covered share at or above which an async op is hidden (default 0.9).
    #[arg(long)]
    pub hidden_threshold: Option<f64>,
    /// Covered share at or below which an async op is exposed (default 0.1).
    #[arg(long)]
    pub exposed_threshold: Option<f64>,
    /// Async ops listed in `top_exposed`, most exposed first (default 20).
    #[arg(long)]
    pub top: Option<usize>,
}

pub struct AsyncOverlapTool;

impl Tool for AsyncOverlapTool {
    const NAME: &'static str = "async_overlap";
    const TITLE: &'static str = "Async overlap";
    const DESCRIPTION: &'static str = "How much of each async XLA op (collectives, async copies, send/recv) other device ops hide, by op kind and plane, the most exposed ones, and how long a TPU chip's engines run at once, as XProf's `analyze_async_overlap`.";
    type Params = AsyncOverlapParams;
    type Output = PerHost<AsyncOverlap>;
    /// The device planes' lines alone.
    const READS: xlens_loader::Reads = xlens_loader::Reads::DevicePlanes;

    fn run(run: &Run, p: &AsyncOverlapParams) -> Result<Self::Output, ToolError> {
        let t = Thresholds {
            hidden: p.hidden_threshold.unwrap_or(DEFAULT_HIDDEN),
            exposed: p.exposed_threshold.unwrap_or(DEFAULT_EXPOSED),
        };
        if !(0.0 <= t.exposed && t.exposed < t.hidden && t.hidden <= 1.0) {
            return Err(ToolError::Params(format!(
                "the thresholds must satisfy 0 <= exposed < hidden <= 1 (got exposed {}, hidden {})",
                t.exposed, t.hidden
            )));
        }
        let top = p.top.unwrap_or(DEFAULT_TOP);
        Ok(PerHost::of(Self::NAME, run, |a| {
            async_overlap(a.profile(), t, top)
        }))
    }
    fn text(r: &Self::Output) -> String {
        r.each_text(|o| {
            let mut t = String::new();
            if let Some(n) = &o.note {
                t.push_str(&format!("  {n}\n"));
            }
            let s = &o.summary;
            if let Some(r) = s.overlap_ratio {
                t.push_str(&format!(
                    "  {} async ops: {:.1}% of their time hidden; {} hidden, {} partial, {} exposed ({} ms exposed of {} ms); {} unpaired\n",
                    s.bucket.count,
                    r * 100.0,
                    s.bucket.hidden,
                    s.bucket.partial,
                    s.bucket.exposed,
                    ms(s.bucket.exposed_ps),
                    ms(s.bucket.span_ps),
                    s.unpaired_ops
                ));
            }
            for b in &o.by_op {
                t.push_str(&format!(
                    "  {:<24} {:>7} ops  exposed {:>12} ms of {:>12} ms\n",
                    b.op,
                    b.bucket.count,
                    ms(b.bucket.exposed_ps),
                    ms(b.bucket.span_ps)
                ));
            }
            for w in &o.top_exposed {
                t.push_str(&format!(
                    "  {} {} at {} ps: {} ms exposed of {} ms ({})\n",
                    w.plane,
                    w.name,
                    w.start_ps,
                    ms(w.exposed_ps),
                    ms(w.span_ps),
                    w.class
                ));
            }
            for c in &o.concurrency {
                for p in &c.pairs {
                    t.push_str(&format!(
                        "  chip {}: {} {} with {} {}: {} ms together ({:.1}% of the less busy)\n",
                        c.chip,
                        p.a.plane,
                        p.a.line,
                        p.b.plane,
                        p.b.line,
                        ms(p.concurrent_ps),
                        p.concurrent_ratio * 100.0
                    ));
                }
            }
            t
        })
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}

fn ms(ps: i64) -> String {
    format!("{:.3}", ps as f64 / 1e9)
}

/// The instruction name of an event name: a bare name, or the name of full HLO text
/// (`%copy-start.1 = (...) copy-start(...)`).
fn instruction_name(name: &str) -> &str {
    let name = name.trim();
    match name.strip_prefix('%') {
        Some(rest) => rest.split(" = ").next().unwrap_or(rest).trim(),
        None => name,
    }
}

/// `(key, is_start)` of a start or done op (`all-gather-start.3` and `all-gather-done.3` share
/// the key `all-gather.3`; `send`/`recv` start without a suffix); `None` for any other op.
fn async_role(name: &str) -> Option<(String, bool)> {
    if let Some((base, role, n)) = start_done(name) {
        return Some((format!("{base}{n}"), role == "start"));
    }
    send_recv(name).map(|(base, n)| (format!("{base}{n}"), true))
}

/// `<base>-<start|done>[.N]`: (base, role, `.N` or "").
fn start_done(name: &str) -> Option<(&str, &str, &str)> {
    let (head, n) = match name.rsplit_once('.') {
        Some((h, d)) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => {
            (h, &name[h.len()..])
        }
        _ => (name, ""),
    };
    for role in ["start", "done"] {
        if let Some(base) = head.strip_suffix(role).and_then(|b| b.strip_suffix('-')) {
            if !base.is_empty() {
                return Some((base, role, n));
            }
        }
    }
    None
}

/// `send[.N]` or `recv[.N]`: (base, `.N` or "").
fn send_recv(name: &str) -> Option<(&str, &str)> {
    for base in ["send", "recv"] {
        if let Some(rest) = name.strip_prefix(base) {
            let digits = rest.strip_prefix('.');
            if rest.is_empty()
                || digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            {
                return Some((base, rest));
            }
        }
    }
    None
}

/// The op kind: the last dot-separated token of the base name that is not a number
/// (`all-gather-start.3` is `all-gather`, `fusion.7.call-start` is `call`).
fn op_family(name: &str) -> String {
    let base = start_done(name)
        .map(|x| x.0)
        .or_else(|| send_recv(name).map(|x| x.0))
        .unwrap_or(name);
    base.split('.')
        .rfind(|t| !t.is_empty() && !t.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or(base)
        .to_string()
}

/// Sorted, disjoint, non-empty intervals.
fn merge(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (lo, hi) in v {
        if hi <= lo {
            continue;
        }
        match out.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// How much of a range merged intervals cover.
struct Coverage {
    merged: Vec<(i64, i64)>,
    prefix: Vec<i64>,
}

impl Coverage {
    fn new(merged: Vec<(i64, i64)>) -> Coverage {
        let mut prefix = vec![0];
        for (lo, hi) in &merged {
            prefix.push(prefix[prefix.len() - 1] + hi - lo);
        }
        Coverage { merged, prefix }
    }

    fn covered(&self, lo: i64, hi: i64) -> i64 {
        if hi <= lo || self.merged.is_empty() {
            return 0;
        }
        let first = self.merged.partition_point(|x| x.0 <= lo).saturating_sub(1);
        let last = self.merged.partition_point(|x| x.0 < hi) as i64 - 1;
        if last < first as i64 {
            return 0;
        }
        let last = last as usize;
        let mut total = self.prefix[last + 1] - self.prefix[first];
        let (flo, fhi) = self.merged[first];
        total -= (lo.min(fhi) - flo).max(0);
        let (llo, lhi) = self.merged[last];
        total -= (lhi - hi.max(llo)).max(0);
        total.max(0)
    }
}

fn intersection(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += hi - lo;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// The chip of a TPU plane (`/device:TPU:3`, `/device:TPU:3 SparseCore 1`).
fn tpu_chip(plane: &str) -> Option<u32> {
    let rest = plane.strip_prefix("/device:TPU:")?;
    let (digits, tail) = rest.split_at(rest.bytes().take_while(u8::is_ascii_digit).count());
    let chip = digits.parse().ok()?;
    if tail.is_empty() {
        return Some(chip);
    }
    let mut words: Vec<&str> = tail.strip_prefix(" SparseCore")?.split(' ').collect();
    // " SparseCore N" or " SparseCore Word N".
    if words.first() == Some(&"") {
        words.remove(0);
    }
    let ok = match words.as_slice() {
        [n] => n.parse::<u32>().is_ok(),
        [w, n] => {
            w.bytes().all(|b| b.is_ascii_alphabetic()) && !w.is_empty() && n.parse::<u32>().is_ok()
        }
        _ => false,
    };
    ok.then_some(chip)
}

/// An op line event: (name, start, end).
type Ev<'a> = (&'a str, i64, i64);
/// A plane's op line and its merged busy intervals.
type Busy<'a> = (&'a str, &'a str, Vec<(i64, i64)>);

/// One plane's lines: the op lines' events (in [`OP_LINES`] order), the async line's, and each
/// op line's busy time.
#[derive(Default)]
struct PlaneLines<'a> {
    ops: [Vec<Ev<'a>>; 2],
    async_line: Option<Vec<Ev<'a>>>,
    busy: Vec<(&'a str, Vec<(i64, i64)>)>,
}

/// The async overlap of one profile.
pub fn async_overlap(p: &Profile, t: Thresholds, top: usize) -> AsyncOverlap {
    // Planes by name; each with its op-line events and its async line's events.
    let mut planes: BTreeMap<&str, PlaneLines> = BTreeMap::new();
    for plane in &p.planes {
        let pname = p.str(plane.name);
        for line in &plane.lines {
            let lname = p.str(line.name);
            let is_op = OP_LINES.contains(&lname);
            if (!is_op && lname != ASYNC_LINE) || line.events.is_empty() {
                continue;
            }
            let ev = &line.events;
            let events: Vec<Ev> = (0..ev.len())
                .map(|i| {
                    let name = plane.metadata_of(line, i).map_or("", |m| p.str(m.name));
                    (name, ev.start(i), ev.start(i) + ev.dur(i))
                })
                .collect();
            let e = planes.entry(pname).or_default();
            if is_op {
                let k = OP_LINES.iter().position(|l| *l == lname).unwrap_or(0);
                e.busy
                    .push((lname, merge(events.iter().map(|x| (x.1, x.2)).collect())));
                e.ops[k].extend(events);
            } else {
                e.async_line.get_or_insert_with(Vec::new).extend(events);
            }
        }
    }
    let mut summary = Summary::default();
    let mut by_op: HashMap<String, Bucket> = HashMap::new();
    let mut by_plane = Vec::new();
    let mut rows: Vec<Window> = Vec::new();
    let mut busy: Vec<Busy> = Vec::new();
    for (pname, lines) in planes {
        for (l, b) in lines.busy {
            busy.push((pname, l, b));
        }
        let async_line = lines.async_line;
        let ops: Vec<Ev> = lines.ops.into_iter().flatten().collect();
        let cover = Coverage::new(merge(
            ops.iter()
                .filter(|e| async_role(instruction_name(e.0)).is_none())
                .map(|e| (e.1, e.2))
                .collect(),
        ));
        let (windows, source): (Vec<(String, i64, i64)>, &'static str) = match async_line {
            Some(a) if !a.is_empty() => (
                a.iter()
                    .map(|e| (instruction_name(e.0).to_string(), e.1, e.2))
                    .collect(),
                ASYNC_LINE,
            ),
            _ => {
                let (w, unpaired) = pair_start_done(&ops);
                summary.unpaired_ops += unpaired;
                (w, "start_done_pairs")
            }
        };
        if windows.is_empty() {
            continue;
        }
        let mut pb = Bucket::default();
        for (name, lo, hi) in windows {
            let span = hi - lo;
            if span <= 0 {
                continue;
            }
            let covered = cover.covered(lo, hi);
            let ratio = covered as f64 / span as f64;
            let exposed = span - covered;
            let class = if ratio >= t.hidden {
                "hidden"
            } else if ratio <= t.exposed {
                "exposed"
            } else {
                "partial"
            };
            let family = op_family(&name);
            summary.bucket.add(span, exposed, class);
            by_op
                .entry(family.clone())
                .or_default()
                .add(span, exposed, class);
            pb.add(span, exposed, class);
            rows.push(Window {
                plane: pname.to_string(),
                name,
                op: family,
                start_ps: lo,
                span_ps: span,
                exposed_ps: exposed,
                overlap_ratio: ratio,
                class,
            });
        }
        by_plane.push(PlaneBucket {
            plane: pname.to_string(),
            bucket: pb,
            window_source: source,
        });
    }
    rows.sort_by(|a, b| {
        b.exposed_ps
            .cmp(&a.exposed_ps)
            .then_with(|| a.plane.cmp(&b.plane))
            .then(a.start_ps.cmp(&b.start_ps))
    });
    rows.truncate(top);
    summary.overlap_ratio = (summary.bucket.span_ps > 0)
        .then(|| 1.0 - summary.bucket.exposed_ps as f64 / summary.bucket.span_ps as f64);
    let mut by_op: Vec<OpBucket> = by_op
        .into_iter()
        .map(|(op, bucket)| OpBucket { op, bucket })
        .collect();
    by_op.sort_by(|a, b| {
        b.bucket
            .exposed_ps
            .cmp(&a.bucket.exposed_ps)
            .then_with(|| a.op.cmp(&b.op))
    });
    let note = (summary.bucket.count == 0).then(|| {
        "No async XLA ops: the profile has no `XLA Ops`, `Sparse Core Ops` or `Async XLA Ops` device lines with start/done pairs (a CPU or GPU profile, or no asynchronous ops ran).".to_string()
    });
    AsyncOverlap {
        summary,
        by_op,
        by_plane,
        top_exposed: rows,
        concurrency: concurrency(busy),
        thresholds: t,
        note,
    }
}

/// Start and done ops paired in time order, per key: the windows and how many were left
/// unpaired.
fn pair_start_done(ops: &[Ev]) -> (Vec<(String, i64, i64)>, u64) {
    let mut sorted: Vec<&Ev> = ops.iter().collect();
    sorted.sort_by_key(|e| e.1);
    let mut open: HashMap<String, VecDeque<&Ev>> = HashMap::new();
    let mut windows = Vec::new();
    let mut unpaired = 0u64;
    for e in sorted {
        let Some((key, is_start)) = async_role(instruction_name(e.0)) else {
            continue;
        };
        if is_start {
            open.entry(key).or_default().push_back(e);
        } else if let Some(s) = open.get_mut(&key).and_then(|q| q.pop_front()) {
            windows.push((instruction_name(s.0).to_string(), s.1, e.2));
        } else {
            unpaired += 1;
        }
    }
    unpaired += open.values().map(|q| q.len() as u64).sum::<u64>();
    (windows, unpaired)
}

/// Per TPU chip with two or more busy op lines, each pair's concurrent time.
fn concurrency(busy: Vec<Busy>) -> Vec<Chip> {
    let mut chips: BTreeMap<u32, Vec<Busy>> = BTreeMap::new();
    for b in busy {
        if let Some(c) = tpu_chip(b.0) {
            chips.entry(c).or_default().push(b);
        }
    }
    let mut out = Vec::new();
    for (chip, mut engines) in chips {
        if engines.len() < 2 {
            continue;
        }
        engines.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let totals: Vec<i64> = engines
            .iter()
            .map(|e| e.2.iter().map(|(lo, hi)| hi - lo).sum())
            .collect();
        let engine = |i: usize, busy: bool| Engine {
            plane: engines[i].0.to_string(),
            line: engines[i].1.to_string(),
            busy_ps: busy.then_some(totals[i]),
        };
        let mut pairs = Vec::new();
        for i in 0..engines.len() {
            for j in i + 1..engines.len() {
                let both = intersection(&engines[i].2, &engines[j].2);
                let shorter = totals[i].min(totals[j]);
                pairs.push(Pair {
                    a: engine(i, false),
                    b: engine(j, false),
                    concurrent_ps: both,
                    concurrent_ratio: if shorter > 0 {
                        both as f64 / shorter as f64
                    } else {
                        0.0
                    },
                });
            }
        }
        pairs.sort_by_key(|p| std::cmp::Reverse(p.concurrent_ps));
        out.push(Chip {
            chip,
            engines: (0..engines.len()).map(|i| engine(i, true)).collect(),
            pairs,
        });
    }
    out
}

fn render_csv(o: &AsyncOverlap) -> String {
    let mut out = String::from("plane,name,op,start_ps,span_ps,exposed_ps,overlap_ratio,class\n");
    for w in &o.top_exposed {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            csv_field(&w.plane),
            csv_field(&w.name),
            csv_field(&w.op),
            w.start_ps,
            w.span_ps,
            w.exposed_ps,
            w.overlap_ratio,
            w.class
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_xprof_reads_them() {
        assert_eq!(
            instruction_name("%copy-start.1 = (f32[8]) copy-start(%p)"),
            "copy-start.1"
        );
        assert_eq!(
            async_role("all-gather-start.3"),
            Some(("all-gather.3".into(), true))
        );
        assert_eq!(
            async_role("all-gather-done.3"),
            Some(("all-gather.3".into(), false))
        );
        assert_eq!(async_role("copy-done"), Some(("copy".into(), false)));
        assert_eq!(async_role("send.2"), Some(("send.2".into(), true)));
        assert_eq!(async_role("sendx"), None);
        assert_eq!(async_role("fusion.3"), None);
        assert_eq!(op_family("all-gather-start.3"), "all-gather");
        assert_eq!(op_family("fusion.7.call-start"), "call");
        assert_eq!(op_family("copy-start"), "copy");
        assert_eq!(tpu_chip("/device:TPU:3"), Some(3));
        assert_eq!(tpu_chip("/device:TPU:3 SparseCore 1"), Some(3));
        assert_eq!(tpu_chip("/device:TPU:3 SparseCore Vector 1"), Some(3));
        assert_eq!(tpu_chip("/device:TPU:3 Other"), None);
    }

    #[test]
    fn coverage_counts_only_inside_the_range() {
        let c = Coverage::new(merge(vec![(0, 10), (20, 30), (25, 40)]));
        assert_eq!(c.covered(5, 25), 10);
        assert_eq!(c.covered(10, 20), 0);
        assert_eq!(c.covered(-5, 100), 30);
        assert_eq!(intersection(&[(0, 10), (20, 30)], &[(5, 25)]), 10);
    }
}
