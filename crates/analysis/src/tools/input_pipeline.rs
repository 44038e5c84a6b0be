//! Input pipeline analyzer: how much of each step waits for input, and the host-side input
//! events (tf.data iterators, `IteratorGetNext*`, JAX data-loading annotations).
//!
//! The input op table follows XProf's: host framework ops of input kinds (tf.data `Iterator::*`,
//! `InfeedEnqueue*`, `MemcpyHToD*`) with their framework-op self time (time minus the framework ops
//! nested in them on the same thread) and XProf's category (enqueue, demanded or advanced file
//! read, preprocessing), and the host time per category. xlens adds, marked `in_xprof: false`, the
//! events that wait for input (`IteratorGetNext*`) and JAX data-loading annotations, which XProf
//! leaves out.

use serde::Serialize;
use std::collections::HashMap;

use crate::base::context::{Analysis, Run};
use crate::base::steps::input_marks::{input_verdict, is_input_annotation};
use crate::base::tool::{NoParams, Tool, ToolError};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepInput {
    pub name: String,
    pub duration_ps: i64,
    pub input_ps: i64,
    pub input_percent: f64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InputOp {
    pub name: String,
    /// XProf's category (`Enqueue`, `Demanded file read`, `Advanced file read`,
    /// `Preprocessing`), or for rows XProf does not list `IteratorGetNext (waits for input)` /
    /// `data loading annotation`.
    pub category: &'static str,
    /// Whether XProf's input op table lists it.
    pub in_xprof: bool,
    pub count: u64,
    pub total_time_ps: i64,
    pub self_time_ps: i64,
    /// Time and self time as a share of the summed self time of the XProf-listed rows.
    pub time_percent: f64,
    pub self_time_percent: f64,
}

/// Host input time by XProf's categories (summed self time of the XProf-listed rows).
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct HostInputBreakdown {
    pub enqueue_ps: i64,
    pub demanded_file_read_ps: i64,
    pub advanced_file_read_ps: i64,
    pub preprocessing_ps: i64,
    pub unclassified_ps: i64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostInput {
    pub host: String,
    pub error: Option<String>,
    pub steps: Vec<StepInput>,
    pub input_percent: f64,
    /// Share of step time in the "All others" column (time no event of the step covers).
    pub all_other_percent: f64,
    /// XProf's classification: `HIGHLY`, `MODERATELY`, `POTENTIALLY` or `NOT` input-bound.
    pub classification: &'static str,
    pub verdict: String,
    pub input_ops: Vec<InputOp>,
    pub host_breakdown: HostInputBreakdown,
    pub explanation: &'static str,
}

/// How much of each step waits for input, per host, with the input ops.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InputPipeline {
    pub hosts: Vec<HostInput>,
}

/// XProf's category of an input framework op (`CategorizeInputOp`); `None` for other ops.
fn xprof_category(op_type: &str, name: &str) -> Option<&'static str> {
    if op_type.starts_with("InfeedEnqueue") || op_type.starts_with("MemcpyHToD") {
        return Some("Enqueue");
    }
    if op_type != "Dataset" {
        return None;
    }
    const FILE_READS: [&str; 6] = [
        "::TFRecord",
        "::TextLine",
        "::FixedLengthRecord",
        "::SSTable",
        "::RecordIO",
        "::ArrayRecord",
    ];
    const AHEAD: [&str; 5] = [
        "::MemoryReader",
        "::MemoryWriter",
        "::Interleave",
        "::Prefetch",
        "::ParallelMap",
    ];
    Some(if FILE_READS.iter().any(|s| name.ends_with(s)) {
        if AHEAD.iter().any(|s| name.contains(s)) {
            "Advanced file read"
        } else {
            "Demanded file read"
        }
    } else {
        "Preprocessing"
    })
}

/// Input events XProf does not list: waits for input and data-loading annotations.
fn classify(name: &str) -> Option<&'static str> {
    if name.starts_with("Iterator::") {
        return None;
    }
    if name.starts_with("IteratorGetNext") || name.contains(":IteratorGetNext") {
        return Some("IteratorGetNext (waits for input)");
    }
    is_input_annotation(name).then_some("data loading annotation")
}

pub fn host_input(host: &str, a: &Analysis) -> HostInput {
    let p = a.profile();
    let db = a.step_db();
    // A PyTorch trace's input is its DataLoader.
    let idx = db
        .category("input")
        .or_else(|| db.category("dataloader"))
        .unwrap_or(usize::MAX);
    let steps: Vec<StepInput> = db
        .steps
        .iter()
        .map(|r| {
            let inp = r.breakdown_ps.get(idx).copied().unwrap_or(0);
            StepInput {
                name: r.name.clone(),
                duration_ps: r.duration_ps,
                input_ps: inp,
                input_percent: if r.duration_ps > 0 {
                    100.0 * inp as f64 / r.duration_ps as f64
                } else {
                    0.0
                },
            }
        })
        .collect();
    let tot: i64 = steps.iter().map(|s| s.duration_ps).sum();
    let inp: i64 = steps.iter().map(|s| s.input_ps).sum();
    let input_percent = if tot > 0 {
        100.0 * inp as f64 / tot as f64
    } else {
        0.0
    };
    let other_idx = db.category("other").unwrap_or(usize::MAX);
    let other: i64 = db
        .steps
        .iter()
        .map(|r| r.breakdown_ps.get(other_idx).copied().unwrap_or(0))
        .sum();
    let all_other_percent = if tot > 0 {
        100.0 * other as f64 / tot as f64
    } else {
        0.0
    };
    let (classification, verdict) = input_verdict(
        steps.len(),
        input_percent,
        all_other_percent,
        &db.input_annotations,
    );
    // XProf's rows: host framework ops of input kinds, with framework-op self time.
    let mut input_ops: Vec<InputOp> = Vec::new();
    let mut breakdown = HostInputBreakdown::default();
    let fw = a.host_framework_ops();
    for o in &fw.0 {
        let Some(cat) = xprof_category(&o.op_type, &o.name) else {
            continue;
        };
        let b = &mut breakdown;
        let sum = match cat {
            "Enqueue" => &mut b.enqueue_ps,
            "Demanded file read" => &mut b.demanded_file_read_ps,
            "Advanced file read" => &mut b.advanced_file_read_ps,
            "Preprocessing" => &mut b.preprocessing_ps,
            _ => &mut b.unclassified_ps,
        };
        *sum = sum.saturating_add(o.self_time_ps);
        input_ops.push(InputOp {
            name: o.name.clone(),
            category: cat,
            in_xprof: true,
            count: o.occurrences,
            total_time_ps: o.total_time_ps,
            self_time_ps: o.self_time_ps,
            time_percent: 0.0,
            self_time_percent: 0.0,
        });
    }
    let mut agg: HashMap<(usize, u32), InputOp> = HashMap::new();
    for (pi, plane) in p.planes.iter().enumerate() {
        if !p.str(plane.name).starts_with("/host:") {
            continue;
        }
        let cats: Vec<Option<&'static str>> = plane
            .event_metadata
            .iter()
            .map(|m| classify(p.str(m.name)))
            .collect();
        for line in &plane.lines {
            let ev = &line.events;
            if !(0..ev.len()).any(|i| cats.get(ev.meta(i) as usize).copied().flatten().is_some()) {
                continue;
            }
            let selfs = ev.self_times();
            for (i, &self_ps) in selfs.iter().enumerate() {
                let m = ev.meta(i);
                let Some(cat) = cats.get(m as usize).copied().flatten() else {
                    continue;
                };
                let e = agg.entry((pi, m)).or_insert_with(|| InputOp {
                    name: plane
                        .event_metadata
                        .get(m as usize)
                        .map(|md| p.str(md.name).to_string())
                        .unwrap_or_default(),
                    category: cat,
                    in_xprof: false,
                    count: 0,
                    total_time_ps: 0,
                    self_time_ps: 0,
                    time_percent: 0.0,
                    self_time_percent: 0.0,
                });
                e.count += 1;
                e.total_time_ps += ev.dur(i);
                e.self_time_ps += self_ps;
            }
        }
    }
    input_ops.extend(agg.into_values());
    let listed: i64 = input_ops
        .iter()
        .filter(|o| o.in_xprof)
        .map(|o| o.self_time_ps)
        .sum();
    for o in &mut input_ops {
        if listed > 0 {
            o.time_percent = 100.0 * o.total_time_ps as f64 / listed as f64;
            o.self_time_percent = 100.0 * o.self_time_ps as f64 / listed as f64;
        }
    }
    input_ops.sort_by(|a, b| {
        b.self_time_ps
            .cmp(&a.self_time_ps)
            .then_with(|| a.name.cmp(&b.name))
    });
    HostInput {
        host: host.to_string(),
        error: None,
        steps,
        input_percent,
        all_other_percent,
        classification,
        verdict,
        input_ops,
        host_breakdown: breakdown,
        explanation: "Input = host waiting for input (`IteratorGetNext*`, root tf.data stages), host-to-device copies and device waits for the host, within each step (XProf's Input column), plus the loop's data-stage annotations (`data`, `load`, `next`, `next_batch`, ...), which XProf counts as host compute. Steps are XProf's (first and last dropped when more than 5); a PyTorch trace's input is its DataLoader, over the PyTorch TensorBoard plugin's steps.",
    }
}

/// The input pipeline analyzer.
pub struct InputPipelineAnalyzer;

impl Tool for InputPipelineAnalyzer {
    const NAME: &'static str = "input_pipeline_analyzer";
    const TITLE: &'static str = "Input pipeline";
    const DESCRIPTION: &'static str = "Input-bound share of each step and overall; host input events (tf.data iterators, IteratorGetNext, data-loading annotations).";
    type Params = NoParams;
    type Output = InputPipeline;

    fn run(run: &Run, _: &NoParams) -> Result<InputPipeline, ToolError> {
        Ok(input_pipeline(run))
    }
    fn text(r: &InputPipeline) -> String {
        render_text(r)
    }
    fn csv(r: &InputPipeline) -> Option<String> {
        Some(render_csv(r))
    }
}

pub fn input_pipeline(run: &Run) -> InputPipeline {
    let hosts = run.map_hosts(
        |h, a| host_input(h.host(), a),
        |h, e| HostInput {
            host: h.host().to_string(),
            error: Some(e.to_string()),
            steps: Vec::new(),
            input_percent: 0.0,
            all_other_percent: 0.0,
            classification: "",
            verdict: String::new(),
            input_ops: Vec::new(),
            host_breakdown: HostInputBreakdown::default(),
            explanation: "",
        },
    );
    InputPipeline { hosts }
}

pub fn render_text(r: &InputPipeline) -> String {
    let mut t = String::new();
    for h in &r.hosts {
        t.push_str(&format!(
            "host {}: {}\n",
            h.host,
            h.error.clone().unwrap_or_else(|| h.verdict.clone())
        ));
        for o in &h.input_ops {
            t.push_str(&format!(
                "  {:<60} {:<24} {:>6} {:>12.3} ms self\n",
                o.name,
                o.category,
                o.count,
                o.self_time_ps as f64 / 1e9
            ));
        }
    }
    t
}

pub fn render_csv(r: &InputPipeline) -> String {
    let mut t = String::from("host,step,duration_ps,input_ps,input_percent\n");
    for h in &r.hosts {
        for s in &h.steps {
            t.push_str(&format!(
                "{},{},{},{},{:.3}\n",
                crate::base::fmt::csv_field(&h.host),
                crate::base::fmt::csv_field(&s.name),
                s.duration_ps,
                s.input_ps,
                s.input_percent
            ));
        }
    }
    t
}
