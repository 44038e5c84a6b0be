//! Step detection: training/inference steps from user step annotations or a device `Steps` line.

use serde::Serialize;
use xlens_model::Profile;

use crate::base::device::{device_planes, DeviceKind};

/// Where the steps came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    /// Host events carrying a `step_num` stat (JAX `StepTraceAnnotation`, TF `Trace(step_num=)`).
    StepAnnotation,
    /// A device plane's `Steps` line.
    DeviceStepsLine,
    /// A PyTorch trace's `ProfilerStep#N`, extended to the device work launched in each, as
    /// the PyTorch TensorBoard plugin forms them ([`crate::base::pytorch::torch_steps`]).
    TorchProfilerSteps,
    /// XProf's step table (grouped as XProf groups them, the first and last dropped past five).
    XprofSteps,
}

/// One step.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Step {
    /// The step number the program gave, when it gave one.
    pub step_num: Option<i64>,
    pub start_ps: i64,
    pub dur_ps: i64,
}

/// Steps found in a host's profile.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Steps {
    pub source: Option<StepSource>,
    /// Name of the annotation or line the steps came from.
    pub name: Option<String>,
    pub count: usize,
    pub mean_ps: i64,
    pub min_ps: i64,
    pub max_ps: i64,
    pub steps: Vec<Step>,
}

impl Steps {
    fn from(source: StepSource, name: String, mut steps: Vec<Step>) -> Steps {
        steps.sort_by_key(|s| s.start_ps);
        let count = steps.len();
        let total: i128 = steps.iter().map(|s| s.dur_ps as i128).sum();
        Steps {
            source: Some(source),
            name: Some(name),
            count,
            mean_ps: if count > 0 {
                (total / count as i128) as i64
            } else {
                0
            },
            min_ps: steps.iter().map(|s| s.dur_ps).min().unwrap_or(0),
            max_ps: steps.iter().map(|s| s.dur_ps).max().unwrap_or(0),
            steps,
        }
    }

    /// The steps of a PyTorch trace ([`crate::base::pytorch::torch_steps`]).
    fn of_torch(t: &crate::base::pytorch::torch_steps::TorchSteps) -> Steps {
        let steps = t
            .rows
            .iter()
            .map(|r| Step {
                step_num: r
                    .name
                    .strip_prefix("ProfilerStep#")
                    .and_then(|n| n.parse().ok()),
                start_ps: r.begin_ps,
                dur_ps: r.duration_ps,
            })
            .collect();
        Steps::from(
            StepSource::TorchProfilerSteps,
            "ProfilerStep#N".to_string(),
            steps,
        )
    }

    /// The steps of XProf's step table in `db`; `name` is what the steps were annotated as.
    pub fn of_step_db(db: &crate::base::steps::step_db::StepDb, name: Option<String>) -> Steps {
        let steps = db
            .steps
            .iter()
            .map(|r| Step {
                step_num: r.name.rsplit_once(' ').and_then(|(_, n)| n.parse().ok()),
                start_ps: r.begin_ps,
                dur_ps: r.duration_ps,
            })
            .collect();
        let mut s = Steps::from(StepSource::XprofSteps, String::new(), steps);
        s.name = name;
        s
    }

    fn none() -> Steps {
        Steps {
            source: None,
            name: None,
            count: 0,
            mean_ps: 0,
            min_ps: 0,
            max_ps: 0,
            steps: Vec::new(),
        }
    }
}

/// Finds the steps of a host: a PyTorch trace's as the PyTorch plugin forms them (the same as
/// its step database's); else user step annotations (they are what the program declared), else
/// the `Steps` line of the first device plane that has one.
pub fn find_steps(p: &Profile) -> Steps {
    if p.key("cat").is_some() {
        if let Some(t) = crate::base::pytorch::torch_steps::torch_steps(p) {
            return Steps::of_torch(&t);
        }
    }
    if let Some(s) = annotated_steps(p) {
        return s;
    }
    for kind in [DeviceKind::Tpu, DeviceKind::Gpu] {
        for (_, plane) in device_planes(p, kind) {
            for line in &plane.lines {
                if p.str(line.name) == "Steps" && !line.events.is_empty() {
                    let ev = &line.events;
                    let steps = (0..ev.len())
                        .map(|i| Step {
                            step_num: plane
                                .metadata_of(line, i)
                                .and_then(|m| p.str(m.name).parse().ok()),
                            start_ps: ev.start(i),
                            dur_ps: ev.dur(i),
                        })
                        .collect();
                    return Steps::from(
                        StepSource::DeviceStepsLine,
                        format!("{} Steps", p.str(plane.name)),
                        steps,
                    );
                }
            }
        }
    }
    Steps::none()
}

/// Host events with a `step_num` stat, grouped by event name; the most frequent name wins.
fn annotated_steps(p: &Profile) -> Option<Steps> {
    let key = p.key("step_num")?;
    let lines: Vec<(&xlens_model::Plane, &xlens_model::Line)> = p
        .planes
        .iter()
        .filter(|pl| p.str(pl.name).starts_with("/host:"))
        .flat_map(|pl| pl.lines.iter().map(move |l| (pl, l)))
        .filter(|(_, l)| l.events.may_have_stat(key))
        .collect();
    // Large profiles: the lines in two parts of about equal event counts, scanned on two threads
    // and merged in line order.
    let total: usize = lines.iter().map(|(_, l)| l.events.len()).sum();
    let mut cut = 0;
    let mut acc = 0;
    while cut < lines.len() && acc * 2 < total {
        acc += lines[cut].1.events.len();
        cut += 1;
    }
    let (first, second) = lines.split_at(cut);
    let scan = |part: &[(&xlens_model::Plane, &xlens_model::Line)]| {
        let mut found: Vec<(xlens_model::StrId, Step)> = Vec::new();
        for (plane, line) in part {
            let ev = &line.events;
            for i in 0..ev.len() {
                let mut n = None;
                ev.stats(i)
                    .select(|k| (k == key).then_some(()), |_, v| n = n.or(v.as_i64()));
                let Some(n) = n else {
                    continue;
                };
                let name = plane
                    .metadata_of(line, i)
                    .map(|m| m.name)
                    .unwrap_or_default();
                found.push((
                    name,
                    Step {
                        step_num: Some(n),
                        start_ps: ev.start(i),
                        dur_ps: ev.dur(i),
                    },
                ));
            }
        }
        found
    };
    let (mut a, b) = if total >= 200_000 && !second.is_empty() {
        crate::base::par::join(|| scan(first), || scan(second))
    } else {
        (scan(first), scan(second))
    };
    a.extend(b);
    // Names that number their step (PyTorch's `ProfilerStep#1009`) count as one name
    // (`ProfilerStep#N`).
    let family = |name: &str| -> String {
        match name.rsplit_once('#') {
            Some((head, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                format!("{head}#N")
            }
            _ => name.to_string(),
        }
    };
    let mut by_name: Vec<(String, Vec<Step>)> = Vec::new();
    for (name, step) in a {
        let name = family(p.str(name));
        match by_name.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => v.push(step),
            None => by_name.push((name, vec![step])),
        }
    }
    let (name, steps) = by_name.into_iter().max_by_key(|(_, v)| v.len())?;
    Some(Steps::from(StepSource::StepAnnotation, name, steps))
}
