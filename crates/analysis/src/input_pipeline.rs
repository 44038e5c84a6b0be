//! Input pipeline analyzer: how much of each step waits for input, and the host-side input
//! events (tf.data iterators, `IteratorGetNext*`, JAX data-loading annotations).

use serde::Serialize;
use std::collections::HashMap;
use xlens_model::Profile;
use xlens_store::Session;

use crate::step_db::{step_db, CATEGORIES};
use crate::tools::Loader;

#[derive(Debug, Clone, Serialize)]
pub struct StepInput {
    pub name: String,
    pub duration_ps: i64,
    pub input_ps: i64,
    pub input_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct InputOp {
    pub name: String,
    /// `tf.data`, `IteratorGetNext` or `data loading annotation`.
    pub category: &'static str,
    pub count: u64,
    pub total_time_ps: i64,
    pub self_time_ps: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostInput {
    pub host: String,
    pub error: Option<String>,
    pub steps: Vec<StepInput>,
    pub input_percent: f64,
    pub verdict: String,
    pub input_ops: Vec<InputOp>,
    pub explanation: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct InputPipeline {
    pub hosts: Vec<HostInput>,
}

fn classify(name: &str) -> Option<&'static str> {
    if name.starts_with("Iterator::") {
        return Some("tf.data");
    }
    if name.starts_with("IteratorGetNext") || name.contains(":IteratorGetNext") {
        return Some("IteratorGetNext");
    }
    let l = name.to_ascii_lowercase();
    const HINTS: [&str; 7] = [
        "dataloader",
        "data_loader",
        "data loading",
        "load_batch",
        "next_batch",
        "get_batch",
        "input_pipeline",
    ];
    HINTS
        .iter()
        .any(|h| l.contains(h))
        .then_some("data loading annotation")
}

pub fn host_input(host: &str, p: &Profile) -> HostInput {
    let db = step_db(p);
    let idx = CATEGORIES.iter().position(|c| c.id == "input").unwrap_or(0);
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
    let verdict = if steps.is_empty() {
        "No steps, so the input share of step time is unknown.".to_string()
    } else if input_percent >= 20.0 {
        format!("Highly input-bound: {input_percent:.1}% of step time waits for input.")
    } else if input_percent >= 5.0 {
        format!("Moderately input-bound: {input_percent:.1}% of step time waits for input.")
    } else {
        format!("Not input-bound: {input_percent:.1}% of step time waits for input.")
    };
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
                    count: 0,
                    total_time_ps: 0,
                    self_time_ps: 0,
                });
                e.count += 1;
                e.total_time_ps += ev.dur(i);
                e.self_time_ps += self_ps;
            }
        }
    }
    let mut input_ops: Vec<InputOp> = agg.into_values().collect();
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
        verdict,
        input_ops,
        explanation: "Input = host waiting for input (`IteratorGetNext*`, root tf.data stages), host-to-device copies and device waits for the host, within each step (XProf's Input column). Steps are XProf's (first and last dropped when more than 5).",
    }
}

pub fn input_pipeline(sessions: &[Session], load: &mut Loader<'_>) -> InputPipeline {
    let mut hosts = Vec::new();
    for s in sessions {
        for h in &s.hosts {
            hosts.push(match load(h) {
                Ok(p) => host_input(&h.host, &p),
                Err(e) => HostInput {
                    host: h.host.clone(),
                    error: Some(e),
                    steps: Vec::new(),
                    input_percent: 0.0,
                    verdict: String::new(),
                    input_ops: Vec::new(),
                    explanation: "",
                },
            });
        }
    }
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
                crate::tools::csv_field(&h.host),
                crate::tools::csv_field(&s.name),
                s.duration_ps,
                s.input_ps,
                s.input_percent
            ));
        }
    }
    t
}
