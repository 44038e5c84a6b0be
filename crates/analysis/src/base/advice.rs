//! Advice: what bounds a host's steps, with the figures behind it. The rules, in the order they
//! are tried, with their thresholds (all shares are of the summed step time of the compared
//! steps: XProf-compatible steps, else every annotated step, else the profile's span):
//!
//! 1. **input-bound** when input (host waiting for input, host-to-device copies, device waiting
//!    for the host: the step breakdown's `input` category) is at least [`INPUT_PCT`]%.
//! 2. **collective-bound** when exposed collective communication is at least
//!    [`COLLECTIVE_PCT`]%: for PyTorch traces, the time communication kernels run while no
//!    computation kernel does (HTA's kernel types); for CPU-only XSpace profiles (XLA ops on
//!    host threads), the time a collective XLA op ([`crate::base::hlo::modules::COLLECTIVE_OPCODES`], by
//!    its HLO opcode) runs while no other XLA op does; for other XSpace profiles, the
//!    breakdown's `device_collectives` category (NCCL kernels in the step).
//! 3. **host-bound** (launch or Python overhead) when the device is busy less than
//!    [`BUSY_PCT`]% of the step time and the host is not waiting for input: on GPU/TPU, device
//!    work in the steps (kernels, copies, collectives); on CPU-only profiles, where the XLA ops
//!    run on host threads, the ops' self time (the rest is Python and dispatch).
//! 4. **idle** when nothing is busy: device busy and host compute both under [`IDLE_PCT`]%.
//! 5. Otherwise the device is the limit: **memory-bandwidth-bound** when at least
//!    [`MEMORY_BOUND_PCT`]% of op time is in ops the cost model puts under the memory roof,
//!    else **compute-bound**. Only with roofs the profile or a table states: on CPU profiles,
//!    whose roofs xlens measures on the machine it runs on, the split is not made (it would
//!    change from run to run) and the verdict is compute-bound.
//!
//! Each advice names the tool to open and, where there is one, the step whose figure is the
//! worst (its trace window); and the same rules (1 to 4) on each step's own figures give the
//! ranges of consecutive steps with one verdict (`step_ranges`), for runs whose bottleneck
//! changes along the way.

use serde::Serialize;

use crate::base::context::Analysis;
use crate::base::device::DeviceKind;
use crate::base::steps::step_db::{Category, StepRow};

/// Input share from which a host is input-bound (XProf calls 20% "highly input-bound").
pub const INPUT_PCT: f64 = 20.0;
/// DataLoader share from which a PyTorch run is input-bound (the PyTorch TensorBoard plugin
/// recommends more DataLoader workers above 5%).
pub const DATALOADER_PCT: f64 = 5.0;

/// Which breakdown columns answer each question, by the step model's categories.
struct Roles {
    categories: &'static [Category],
    input: &'static str,
    input_pct: f64,
    busy: &'static [&'static str],
    collectives: &'static str,
    host_compute: &'static str,
    torch: bool,
}

impl Roles {
    fn of(db: &crate::base::steps::step_db::StepDb) -> Roles {
        if db.torch.is_some() {
            Roles {
                categories: db.categories(),
                input: "dataloader",
                input_pct: DATALOADER_PCT,
                busy: &["kernel", "memcpy", "memset", "communication"],
                collectives: "communication",
                host_compute: "cpu_exec",
                torch: true,
            }
        } else {
            Roles {
                categories: db.categories(),
                input: "input",
                input_pct: INPUT_PCT,
                busy: &["device_compute", "device_collectives", "device_to_device"],
                collectives: "device_collectives",
                host_compute: "host_compute",
                torch: false,
            }
        }
    }

    fn at(&self, id: &str) -> usize {
        self.categories
            .iter()
            .position(|c| c.id == id)
            .unwrap_or(usize::MAX)
    }

    /// A step's time in column `id`.
    fn of_step(&self, st: &StepRow, id: &str) -> i64 {
        st.breakdown_ps.get(self.at(id)).copied().unwrap_or(0)
    }

    /// A step's device-busy time.
    fn busy_of(&self, st: &StepRow) -> i64 {
        self.busy
            .iter()
            .map(|id| self.of_step(st, id))
            .fold(0, i64::saturating_add)
    }
}
/// Exposed collective share from which a host is collective-bound.
pub const COLLECTIVE_PCT: f64 = 20.0;
/// Device-busy share under which a host is host-bound.
pub const BUSY_PCT: f64 = 50.0;
/// Under this, device busy and host compute both: idle.
pub const IDLE_PCT: f64 = 5.0;
/// Share of op time in memory-bound ops from which a host is memory-bandwidth-bound.
pub const MEMORY_BOUND_PCT: f64 = 50.0;

/// What bounds the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    InputBound,
    CollectiveBound,
    HostBound,
    Idle,
    MemoryBandwidthBound,
    ComputeBound,
}

impl Bottleneck {
    pub fn as_str(self) -> &'static str {
        match self {
            Bottleneck::InputBound => "input-bound",
            Bottleneck::CollectiveBound => "collective-bound",
            Bottleneck::HostBound => "host-bound",
            Bottleneck::Idle => "idle",
            Bottleneck::MemoryBandwidthBound => "memory-bandwidth-bound",
            Bottleneck::ComputeBound => "compute-bound",
        }
    }
}

/// One figure the advice rests on.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Figure {
    pub name: &'static str,
    /// Percent of step time (or of op time for `memory_bound_op_pct`).
    pub percent: f64,
}

/// The advice for one host.
/// A tool the advice points to. Serialised as the tool's registered name, which
/// [`ToolLink::name`] gives too (a test holds every link to a registered tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolLink {
    OverviewPage,
    InputPipelineAnalyzer,
    OpProfile,
    CommCompOverlap,
    TraceViewer,
    RooflineModel,
    KernelStats,
}

impl ToolLink {
    pub const ALL: [ToolLink; 7] = [
        ToolLink::OverviewPage,
        ToolLink::InputPipelineAnalyzer,
        ToolLink::OpProfile,
        ToolLink::CommCompOverlap,
        ToolLink::TraceViewer,
        ToolLink::RooflineModel,
        ToolLink::KernelStats,
    ];

    /// The tool's registered name.
    pub fn name(self) -> &'static str {
        match self {
            ToolLink::OverviewPage => "overview_page",
            ToolLink::InputPipelineAnalyzer => "input_pipeline_analyzer",
            ToolLink::OpProfile => "op_profile",
            ToolLink::CommCompOverlap => "comm_comp_overlap",
            ToolLink::TraceViewer => "trace_viewer",
            ToolLink::RooflineModel => "roofline_model",
            ToolLink::KernelStats => "kernel_stats",
        }
    }
}

impl std::fmt::Display for ToolLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Advice {
    pub bottleneck: Bottleneck,
    /// One sentence: the verdict and the figure that decided it.
    pub summary: String,
    /// What to try.
    pub suggestion: String,
    /// Every figure the rules looked at.
    pub figures: Vec<Figure>,
    /// What the shares are of (`N steps, X ps` or the span).
    pub basis: String,
    /// The tool that shows it.
    pub tool: ToolLink,
    /// The step where the deciding figure is largest: its name and trace window.
    pub worst_step: Option<String>,
    pub window_ps: Option<(i64, i64)>,
    /// Runs of consecutive steps with the same verdict by rules 1 to 4 on each step's own
    /// figures (steps the device bounds are `compute-bound` here): where the run changes.
    pub step_ranges: Vec<StepRange>,
}

/// The verdict of a run of several hosts: the bottleneck most of its hosts have (on a tie, the
/// one the rules try first), and every verdict with its hosts, so a host that differs is named.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunAdvice {
    pub bottleneck: Bottleneck,
    /// Hosts with that verdict, of `hosts` with advice.
    pub agreeing: usize,
    pub hosts: usize,
    /// Each verdict found, with its hosts, most hosts first.
    pub verdicts: Vec<(Bottleneck, Vec<String>)>,
    pub summary: String,
}

/// The run's verdict from its hosts' (host name, advice); `None` with fewer than two hosts
/// with advice (then the host's own advice is the run's).
pub fn run_advice<'a>(hosts: impl IntoIterator<Item = (&'a str, &'a Advice)>) -> Option<RunAdvice> {
    let order = |b: Bottleneck| {
        [
            Bottleneck::InputBound,
            Bottleneck::CollectiveBound,
            Bottleneck::HostBound,
            Bottleneck::Idle,
            Bottleneck::MemoryBandwidthBound,
            Bottleneck::ComputeBound,
        ]
        .iter()
        .position(|&x| x == b)
        .unwrap_or(usize::MAX)
    };
    let mut verdicts: Vec<(Bottleneck, Vec<String>)> = Vec::new();
    let mut n = 0;
    for (host, a) in hosts {
        n += 1;
        match verdicts.iter_mut().find(|(b, _)| *b == a.bottleneck) {
            Some((_, v)) => v.push(host.to_string()),
            None => verdicts.push((a.bottleneck, vec![host.to_string()])),
        }
    }
    if n < 2 {
        return None;
    }
    // The same answer whatever order the hosts were listed in (a bucket lists by name, a disk
    // by its own order).
    for (_, v) in &mut verdicts {
        v.sort();
    }
    verdicts.sort_by_key(|(b, v)| (std::cmp::Reverse(v.len()), order(*b)));
    let (bottleneck, agreeing) = (verdicts[0].0, verdicts[0].1.len());
    let others: Vec<String> = verdicts[1..]
        .iter()
        .map(|(b, v)| {
            let shown: Vec<&str> = v.iter().take(5).map(String::as_str).collect();
            format!(
                "{} on {} ({}{})",
                b.as_str(),
                if v.len() == 1 {
                    "1 host".to_string()
                } else {
                    format!("{} hosts", v.len())
                },
                shown.join(", "),
                if v.len() > 5 { ", …" } else { "" }
            )
        })
        .collect();
    let summary = if others.is_empty() {
        format!("{} on all {n} hosts", bottleneck.as_str())
    } else {
        format!(
            "{} on {agreeing} of {n} hosts; {}",
            bottleneck.as_str(),
            others.join("; ")
        )
    };
    Some(RunAdvice {
        bottleneck,
        agreeing,
        hosts: n,
        verdicts,
        summary,
    })
}

/// Consecutive steps with one verdict.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepRange {
    pub first_step: String,
    pub last_step: String,
    pub steps: usize,
    pub bottleneck: Bottleneck,
    pub window_ps: (i64, i64),
}

/// Rules 1 to 4 on one step's shares; `ComputeBound` when the device is the limit.
fn classify(
    input: f64,
    input_pct: f64,
    collective: f64,
    busy: f64,
    host_compute: f64,
) -> Bottleneck {
    if input >= input_pct {
        Bottleneck::InputBound
    } else if collective >= COLLECTIVE_PCT {
        Bottleneck::CollectiveBound
    } else if busy < IDLE_PCT && host_compute < IDLE_PCT {
        Bottleneck::Idle
    } else if busy < BUSY_PCT {
        Bottleneck::HostBound
    } else {
        Bottleneck::ComputeBound
    }
}

/// CPU-only profiles: the ops' time in each step (by the step's start), from the op events
/// binned by step.
fn cpu_busy_by_step(a: &Analysis) -> Option<std::collections::HashMap<i64, i64>> {
    a.step_ops().map(|bins| {
        let mut by_step = vec![0i64; bins.steps.steps.len()];
        for &(si, _, d) in &bins.events {
            if let Some(t) = by_step.get_mut(si as usize) {
                *t = t.saturating_add(d);
            }
        }
        let mut by_start = std::collections::HashMap::new();
        for (st, t) in bins.steps.steps.iter().zip(by_step) {
            let e = by_start.entry(st.start_ps).or_insert(0i64);
            *e = e.saturating_add(t);
        }
        by_start
    })
}

/// Collective and other XLA ops of a CPU-only profile (the XLA ops run on host threads), as
/// two unions of intervals; `None` when its HLO has no collective instruction
/// ([`crate::base::hlo::modules::COLLECTIVE_OPCODES`]) that ran.
type Intervals = Vec<(i64, i64)>;
fn cpu_collectives(a: &Analysis) -> Option<(Intervals, Intervals)> {
    let p = a.profile();
    let sets = crate::base::hlo::modules::collective_instructions(p);
    if sets.is_empty() {
        return None;
    }
    let (source, lines) = crate::base::ops::events::op_lines(p);
    if source != Some(crate::base::ops::events::OpSource::HostXlaOps) {
        return None;
    }
    let kh = p.key("hlo_op")?;
    let kp = p.key("program_id");
    let (mut comm, mut comp) = (Vec::new(), Vec::new());
    for (plane, line) in lines {
        let ev = &line.events;
        for i in 0..ev.len() {
            let st = ev.stats(i);
            if st.get(kh).is_none() {
                continue;
            }
            let Some(md) = plane.event_metadata.get(ev.meta(i) as usize) else {
                continue;
            };
            let name = p.str(crate::base::ops::events::op_name(p, md));
            let pid = crate::base::steps::step_ops::program_id(kp, st, md);
            let collective = sets.iter().any(|(id, set)| {
                (pid.is_none() || id.is_none() || *id == pid) && set.contains(name)
            });
            let iv = (ev.start(i), ev.end(i));
            if collective {
                comm.push(iv);
            } else {
                comp.push(iv);
            }
        }
    }
    if comm.is_empty() {
        return None;
    }
    Some((
        crate::base::pytorch::hta::union(comm),
        crate::base::pytorch::hta::union(comp),
    ))
}

/// Time in `[lo, hi)` when a collective runs and no other op does.
fn exposed_in(comm: &[(i64, i64)], comp: &[(i64, i64)], lo: i64, hi: i64) -> i64 {
    let clip = |v: &[(i64, i64)]| -> Intervals {
        v.iter()
            .map(|&(s, e)| (s.max(lo), e.min(hi)))
            .filter(|(s, e)| s < e)
            .collect()
    };
    let (comm, comp) = (clip(comm), clip(comp));
    crate::base::pytorch::hta::total(&comm)
        .saturating_sub(crate::base::pytorch::hta::overlap(&comm, &comp))
}

/// Each step classified, consecutive equal verdicts merged.
fn step_ranges(
    a: &Analysis,
    roles: &Roles,
    steps: &[StepRow],
    kind: DeviceKind,
    cpu_coll: Option<&(Intervals, Intervals)>,
) -> Vec<StepRange> {
    let cpu_busy = match kind {
        DeviceKind::Cpu => cpu_busy_by_step(a),
        _ => None,
    };
    if kind == DeviceKind::Cpu && cpu_busy.is_none() {
        return Vec::new();
    }
    let mut out: Vec<StepRange> = Vec::new();
    for st in steps {
        let of = |id: &str| roles.of_step(st, id);
        let d = st.duration_ps;
        let busy = match &cpu_busy {
            Some(m) => pct(m.get(&st.begin_ps).copied().unwrap_or(0), d),
            None => pct(roles.busy_of(st), d),
        };
        let collective = match cpu_coll {
            Some((comm, comp)) => {
                exposed_in(comm, comp, st.begin_ps, st.begin_ps.saturating_add(d))
            }
            None => of(roles.collectives),
        };
        let b = classify(
            pct(of(roles.input), d),
            roles.input_pct,
            pct(collective, d),
            busy,
            pct(of(roles.host_compute), d),
        );
        let end = st.begin_ps.saturating_add(d);
        match out.last_mut() {
            Some(r) if r.bottleneck == b => {
                r.last_step.clone_from(&st.name);
                r.steps += 1;
                r.window_ps.1 = end;
            }
            _ => out.push(StepRange {
                first_step: st.name.clone(),
                last_step: st.name.clone(),
                steps: 1,
                bottleneck: b,
                window_ps: (st.begin_ps, end),
            }),
        }
    }
    out
}

fn pct(part: i64, whole: i64) -> f64 {
    if whole <= 0 {
        0.0
    } else {
        (part as f64 / whole as f64 * 100.0).clamp(0.0, 100.0)
    }
}

/// The advice for one host; `None` for a profile with no time at all.
pub fn advise(a: &Analysis) -> Option<Advice> {
    let db = a.step_db();
    let roles = Roles::of(&db);
    let steps: &[StepRow] = if db.steps.is_empty() {
        &db.steps_all
    } else {
        &db.steps
    };
    let om = a.op_metrics();
    let kind = a.device().kind;
    let total: i64 = steps
        .iter()
        .map(|s| s.duration_ps)
        .fold(0, i64::saturating_add);
    let (whole, basis) = if total > 0 {
        (total, format!("{} steps", steps.len()))
    } else {
        let span = a.profile().span().map_or(0, |(s, e)| e.saturating_sub(s));
        (span, "the whole profile (no steps)".to_string())
    };
    if whole <= 0 {
        return None;
    }
    let sum_cat = |id: &str| -> i64 {
        steps
            .iter()
            .map(|s| roles.of_step(s, id))
            .fold(0, i64::saturating_add)
    };
    let input = pct(sum_cat(roles.input), whole);
    let host_compute = pct(sum_cat(roles.host_compute), whole);

    // Exposed collectives.
    let cpu_coll = match kind {
        DeviceKind::Cpu => cpu_collectives(a),
        _ => None,
    };
    let hta = a.hta();
    let collective = if !hta.events.is_empty() {
        let p = a.profile();
        let (mut comm, mut comp) = (Vec::new(), Vec::new());
        for e in hta.gpu() {
            match crate::base::pytorch::hta::kernel_type(p.str(e.name)) {
                crate::base::pytorch::hta::KernelType::Communication => {
                    comm.push((e.start_ps, e.end_ps))
                }
                crate::base::pytorch::hta::KernelType::Computation => {
                    comp.push((e.start_ps, e.end_ps))
                }
                _ => {}
            }
        }
        // Only what falls inside the steps counts against the step time.
        if let (Some(f), Some(l)) = (steps.first(), steps.last()) {
            let (lo, hi) = (f.begin_ps, l.begin_ps.saturating_add(l.duration_ps));
            let clip = |v: &mut Vec<(i64, i64)>| {
                v.retain_mut(|iv| {
                    iv.0 = iv.0.max(lo);
                    iv.1 = iv.1.min(hi);
                    iv.0 < iv.1
                })
            };
            clip(&mut comm);
            clip(&mut comp);
        }
        let (comm, comp) = (
            crate::base::pytorch::hta::union(comm),
            crate::base::pytorch::hta::union(comp),
        );
        let exposed = crate::base::pytorch::hta::total(&comm)
            .saturating_sub(crate::base::pytorch::hta::overlap(&comm, &comp));
        pct(exposed, whole)
    } else if let Some((comm, comp)) = &cpu_coll {
        // CPU-only: collective XLA ops on host threads while no other XLA op runs.
        let (lo, hi) = match (steps.first(), steps.last()) {
            (Some(f), Some(l)) if total > 0 => {
                (f.begin_ps, l.begin_ps.saturating_add(l.duration_ps))
            }
            _ => (i64::MIN, i64::MAX),
        };
        pct(exposed_in(comm, comp, lo, hi), whole)
    } else {
        pct(sum_cat(roles.collectives), whole)
    };

    // Device busy.
    let busy = match kind {
        // The ops' time in the compared steps when they can be binned, else all op time.
        DeviceKind::Cpu => match cpu_busy_by_step(a) {
            Some(m) if total > 0 => pct(
                steps
                    .iter()
                    .map(|s| m.get(&s.begin_ps).copied().unwrap_or(0))
                    .fold(0, i64::saturating_add),
                whole,
            ),
            _ => pct(om.total_self_time_ps, whole),
        },
        _ if total > 0 => pct(
            steps
                .iter()
                .map(|s| roles.busy_of(s))
                .fold(0, i64::saturating_add),
            whole,
        ),
        _ => {
            let busy = om
                .devices
                .iter()
                .map(|d| d.busy_ps)
                .fold(0i64, i64::saturating_add);
            let span = om
                .devices
                .iter()
                .map(|d| d.span_ps)
                .fold(0i64, i64::saturating_add);
            pct(busy, span)
        }
    };

    // Memory-bound share of op time (ops with a cost model only), needed only when the device is
    // the limit (it builds the op table, the costliest of these figures).
    let device_limited = input < roles.input_pct && collective < COLLECTIVE_PCT && busy >= BUSY_PCT;
    let memory_bound = if device_limited {
        let ops = a.hlo_ops(Default::default());
        // Roofs measured on the machine running xlens (CPU profiles) vary from run to run and
        // are not the profiled machine's: then the split is not made.
        let measured = |s: crate::base::peaks::PeakSource| {
            matches!(s, crate::base::peaks::PeakSource::MeasuredHere)
        };
        let peaks = &ops.peaks;
        let stated = !measured(peaks.flops_source) && !measured(peaks.bandwidth_source);
        let (mut mem, mut all) = (0i64, 0i64);
        for r in ops.ops.iter().filter(|r| r.bound_by != "Unknown") {
            all = all.saturating_add(r.self_time_ps);
            if r.bound_by == "HBM" {
                mem = mem.saturating_add(r.self_time_ps);
            }
        }
        (all > 0 && stated).then(|| pct(mem, all))
    } else {
        None
    };
    let mut figures = vec![
        Figure {
            name: if roles.torch {
                "dataloader_pct"
            } else {
                "input_pct"
            },
            percent: input,
        },
        Figure {
            name: "exposed_collective_pct",
            percent: collective,
        },
        Figure {
            name: "device_busy_pct",
            percent: busy,
        },
        Figure {
            name: "host_compute_pct",
            percent: host_compute,
        },
    ];
    if let Some(m) = memory_bound {
        figures.push(Figure {
            name: "memory_bound_op_pct",
            percent: m,
        });
    }
    let device = match kind {
        DeviceKind::Cpu => "the ops (on host threads)",
        _ => "the device",
    };
    let worst = |id: &str| {
        steps.iter().max_by_key(|s| roles.of_step(s, id)).map(|s| {
            (
                s.name.clone(),
                (s.begin_ps, s.begin_ps.saturating_add(s.duration_ps)),
            )
        })
    };
    let least_busy = || {
        steps
            .iter()
            .min_by_key(|s| {
                let b = roles.of_step(s, roles.busy[0]);
                (b as f64 / s.duration_ps.max(1) as f64 * 1e6) as i64
            })
            .map(|s| {
                (
                    s.name.clone(),
                    (s.begin_ps, s.begin_ps.saturating_add(s.duration_ps)),
                )
            })
    };
    let (bottleneck, summary, suggestion, tool, w) = if roles.torch && input >= roles.input_pct {
        (
            Bottleneck::InputBound,
            format!("input-bound: the DataLoader takes {input:.1}% of step time (threshold {DATALOADER_PCT}%)"),
            "Load batches in worker processes and ahead of the step: DataLoader(num_workers=N) (e.g. the CPU cores per GPU), pin_memory=True, prefetch_factor=2 or more, persistent_workers=True; move decoding and augmentation off the training process.",
            ToolLink::OverviewPage,
            worst(roles.input),
        )
    } else if input >= INPUT_PCT {
        (
            Bottleneck::InputBound,
            format!("input-bound: {input:.1}% of step time waits for input (threshold {INPUT_PCT}%)"),
            "Make the input pipeline faster or overlap it with compute: prefetch, more loader workers or parallel calls, cache decoded data, move preprocessing off the critical path.",
            ToolLink::InputPipelineAnalyzer,
            worst("input"),
        )
    } else if collective >= COLLECTIVE_PCT {
        (
            Bottleneck::CollectiveBound,
            format!("collective-bound: {collective:.1}% of step time is communication not overlapped with computation (threshold {COLLECTIVE_PCT}%)"),
            "Overlap communication with computation (bucketing, async collectives, FSDP prefetch), shrink what is exchanged (gradient compression, lower precision), or change the sharding.",
            if hta.events.is_empty() {
                ToolLink::OpProfile
            } else {
                ToolLink::CommCompOverlap
            },
            match &cpu_coll {
                // The step with the most exposed collective time.
                Some((comm, comp)) => steps
                    .iter()
                    .max_by_key(|s| {
                        exposed_in(comm, comp, s.begin_ps, s.begin_ps.saturating_add(s.duration_ps))
                    })
                    .map(|s| {
                        (
                            s.name.clone(),
                            (s.begin_ps, s.begin_ps.saturating_add(s.duration_ps)),
                        )
                    }),
                None => worst(roles.collectives),
            },
        )
    } else if busy < IDLE_PCT && host_compute < IDLE_PCT {
        (
            Bottleneck::Idle,
            format!("idle: {device} busy {busy:.1}% and host compute {host_compute:.1}% of step time (both under {IDLE_PCT}%)"),
            "The steps are mostly waiting on something the profile does not show (sleep, I/O, another process): capture with the Python tracer or look at the trace viewer's gaps.",
            ToolLink::TraceViewer,
            least_busy(),
        )
    } else if busy < BUSY_PCT {
        (
            Bottleneck::HostBound,
            format!("host-bound: {device} busy only {busy:.1}% of step time (threshold {BUSY_PCT}%); the rest is launch, dispatch or Python overhead"),
            if roles.torch {
                "Give the GPU bigger pieces of work with less host work between them: raise the batch size, capture the step with CUDA graphs (torch.compile(mode=\"reduce-overhead\") or torch.cuda.graphs), fuse small ops with torch.compile, move Python work out of the step."
            } else {
                "Give the device bigger pieces of work: jit/compile larger functions, fuse small ops, raise the batch size, use CUDA graphs, move Python work out of the step."
            },
            ToolLink::TraceViewer,
            least_busy(),
        )
    } else if memory_bound.is_some_and(|m| m >= MEMORY_BOUND_PCT) {
        let m = memory_bound.unwrap_or(0.0);
        (
            Bottleneck::MemoryBandwidthBound,
            format!("memory-bandwidth-bound: {device} busy {busy:.1}% of step time and {m:.1}% of op time is in ops under the memory roof (threshold {MEMORY_BOUND_PCT}%)"),
            "Move fewer bytes: fuse element-wise ops, use lower precision, better layouts; the roofline shows which ops sit under the memory roof.",
            ToolLink::RooflineModel,
            worst(roles.busy[0]),
        )
    } else {
        (
            Bottleneck::ComputeBound,
            format!("compute-bound: {device} busy {busy:.1}% of step time (at least {BUSY_PCT}%)"),
            if roles.torch {
                "The GPU is the limit: look at the costliest kernels and operators (kernel_stats, framework_op_stats); run eligible ops in lower precision on Tensor Cores (torch.autocast with bf16 or fp16), fuse with torch.compile, or do less work per step."
            } else {
                "The device is the limit: look at the costliest ops (op profile) for lower precision, better kernels or less work per step."
            },
            if roles.torch {
                ToolLink::KernelStats
            } else {
                ToolLink::OpProfile
            },
            worst(roles.busy[0]),
        )
    };
    figures.retain(|f| f.percent.is_finite());
    Some(Advice {
        bottleneck,
        summary,
        suggestion: suggestion.to_string(),
        figures,
        basis,
        tool,
        worst_step: w.as_ref().map(|x| x.0.clone()),
        window_ps: w.map(|x| x.1),
        step_ranges: step_ranges(a, &roles, steps, kind, cpu_coll.as_ref()),
    })
}
