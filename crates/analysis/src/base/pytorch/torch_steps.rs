//! Steps of a PyTorch (Kineto) trace as the PyTorch profiler's TensorBoard plugin
//! (torch-tb-profiler 0.4.3) forms them, with its per-step breakdown and GPU figures.
//!
//! * **Events**, by their `cat`: `cpu_op`/`Operator` (operators; `ProfilerStep#N` ones are the
//!   steps), `python`, `Runtime` (launch calls), `Kernel`, `Memcpy`, `Memset`, and
//!   `user_annotation`s named `ProfilerStep#N` or as a NCCL/Gloo collective. Traces of
//!   PyTorch 1.10 and later name launch calls `cuda_runtime`/`cuda_driver` and write the
//!   DataLoader's `__next__` as a `user_annotation`: both are read as the plugin reads the names
//!   of PyTorch 1.8/1.9 (Runtime; an operator), and `ProfilerStep#N` repeated on GPU streams
//!   (`gpu_user_annotation`) is not a step. The plugin 0.4.3 knows only the older names.
//! * **Steps**: each `ProfilerStep#N`; on a trace with device work each step then starts at
//!   the previous step's end (the first at its own start, or after device work launched before
//!   any step) and ends at its own end or at the end of the last device event launched by a
//!   runtime call inside it, whichever is later. Trailing steps that launched nothing are
//!   dropped, and so is the last one that launched fewer than 80% of the device events of the
//!   one before (the profiler may have missed its kernels). Without `ProfilerStep#N` the whole
//!   host span is one step.
//! * **Breakdown**: every instant of a step goes to the first of Kernel, Memcpy, Memset,
//!   Communication (kernels of a collective op, and the op itself), Runtime, DataLoader
//!   (`enumerate(DataLoader)#...__next__`, `enumerate(DataPipe)#...`), CPU Exec (other
//!   operators) that covers it; what none covers is Other.
//! * **GPU figures** over the first step's start to the last step's end, per device (a kernel's
//!   `device` arg): utilization (time any kernel runs), estimated SM efficiency (blocks per SM,
//!   capped at 1, time-weighted) and estimated achieved occupancy (kernel-time-weighted).

use serde::Serialize;
use xlens_model::{Profile, StatValue, StrId};

use crate::base::pytorch::hta::union;
use crate::base::steps::step_rows::{Category, EventType, StepRow, N_CATEGORIES};

type HashMap<K, V> = crate::base::fx::FxMap<K, V>;

mod figures;
use figures::{clipped, gpu_figures, intersect, subtract};

/// The plugin's step-time categories, in its order (and priority).
pub const TORCH_CATEGORIES: &[Category] = &[
    Category {
        id: "kernel",
        label: "Kernel",
        explanation: "GPU kernels other than those of collective ops.",
        types: &[EventType::DeviceCompute32],
    },
    Category {
        id: "memcpy",
        label: "Memcpy",
        explanation: "GPU memory copies, where no kernel runs.",
        types: &[EventType::DeviceToDevice],
    },
    Category {
        id: "memset",
        label: "Memset",
        explanation: "GPU memory sets, where no kernel or copy runs.",
        types: &[EventType::DeviceToDevice],
    },
    Category {
        id: "communication",
        label: "Communication",
        explanation: "Kernels of NCCL/Gloo collective ops and the ops themselves, where no kernel, copy or set runs.",
        types: &[EventType::DeviceCollectives],
    },
    Category {
        id: "runtime",
        label: "Runtime",
        explanation: "CUDA/HIP runtime and driver calls on the host (kernel launches, copies, synchronisation), where no device work runs.",
        types: &[EventType::HostPrepare],
    },
    Category {
        id: "dataloader",
        label: "DataLoader",
        explanation: "The DataLoader fetching the next batch (`enumerate(DataLoader)#...__next__`, `enumerate(DataPipe)#...`), where no device work or runtime call runs.",
        types: &[EventType::HostWaitInput],
    },
    Category {
        id: "cpu_exec",
        label: "CPU Exec",
        explanation: "Other PyTorch operators on the host, where none of the above runs.",
        types: &[EventType::HostCompute],
    },
    Category {
        id: "other",
        label: "Other",
        explanation: "Time of the step covered by none of the above (Python between operators, waits).",
        types: &[EventType::Unknown],
    },
];

const KERNEL: usize = 0;
const MEMCPY: usize = 1;
const MEMSET: usize = 2;
const COMMUNICATION: usize = 3;
const RUNTIME: usize = 4;
const DATALOADER: usize = 5;
const CPU_OP: usize = 6;
const OTHER: usize = 7;
const ROLES: usize = 7;

/// The collective ops the plugin recognises.
const COMM_OPS: [&str; 10] = [
    "nccl:broadcast",
    "nccl:reduce",
    "nccl:all_reduce",
    "nccl:all_gather",
    "nccl:reduce_scatter",
    "gloo:broadcast",
    "gloo:reduce",
    "gloo:all_reduce",
    "gloo:all_gather",
    "gloo:reduce_scatter",
];

/// What an event is to the plugin (its `EventTypes`), after reading newer names as older ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Operator,
    Python,
    UserAnnotation,
    GpuUserAnnotation,
    Runtime,
    Kernel,
    Memcpy,
    Memset,
    Ignored,
}

fn kind_of(cat: &str) -> Kind {
    match cat.to_ascii_lowercase().as_str() {
        "cpu_op" | "operator" => Kind::Operator,
        "python" => Kind::Python,
        "user_annotation" => Kind::UserAnnotation,
        "gpu_user_annotation" => Kind::GpuUserAnnotation,
        "runtime" | "cuda_runtime" | "cuda_driver" => Kind::Runtime,
        "kernel" => Kind::Kernel,
        "memcpy" | "gpu_memcpy" => Kind::Memcpy,
        "memset" | "gpu_memset" => Kind::Memset,
        _ => Kind::Ignored,
    }
}

/// Whether `name` is a collective op the plugin recognises (`nccl:all_reduce`, ...).
pub fn is_collective(name: &str) -> bool {
    COMM_OPS.contains(&name)
}

fn is_dataloader(name: &str) -> bool {
    (name.starts_with("enumerate(DataLoader)#") && name.ends_with(".__next__"))
        || name.starts_with("enumerate(DataPipe)#")
}

/// One GPU's figures over the steps.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct TorchGpu {
    /// The kernels' `device` arg.
    pub device: i64,
    /// Share of the steps' span in which a kernel runs, percent.
    pub utilization_percent: f64,
    /// Blocks per SM (capped at 1) weighted by time over the steps' span, percent; `None`
    /// when the kernels do not state blocks per SM.
    pub est_sm_efficiency_percent: Option<f64>,
    /// `est. achieved occupancy %` weighted by kernel time in the steps; `None` when not stated.
    pub est_achieved_occupancy_percent: Option<f64>,
}

/// Per step, what the plugin's distributed view shows: computation (kernels, or operators on
/// a trace without kernels), communication, their overlap and the rest, ps.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct CommOverlap {
    pub computation_ps: i64,
    pub overlap_ps: i64,
    pub communication_ps: i64,
    pub other_ps: i64,
}

/// The steps of a PyTorch trace by the plugin's rules.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TorchSteps {
    pub rows: Vec<StepRow>,
    /// Step numbers (`N` of `ProfilerStep#N`); `None` for the whole-trace step.
    pub step_nums: Vec<Option<i64>>,
    pub gpus: Vec<TorchGpu>,
    pub comm_overlap: Vec<CommOverlap>,
    pub notes: Vec<String>,
    /// Whether the trace has device work (kernels, copies or sets).
    pub has_device: bool,
    /// The collective ops (NCCL/Gloo), in time order.
    pub comm_ops: Vec<CommOp>,
}

/// One collective op and the time ranges it took: its own slice and its kernels'.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct CommOp {
    pub name: String,
    pub start: i64,
    pub end: i64,
    #[serde(skip)]
    pub ext: Option<i64>,
    pub ranges: Vec<(i64, i64)>,
    /// The inputs' size: elements times the size of their type (0 for types the plugin does
    /// not know).
    pub bytes: i64,
    /// The step (index) that holds it.
    pub step: Option<usize>,
}

/// The bytes of a collective's inputs from its `Input Dims` and `Input type` (JSON text), as
/// the plugin sizes them.
fn comm_bytes(dims: &str, types: &str) -> i64 {
    let dims: Vec<Vec<i64>> = serde_json::from_str::<Vec<serde_json::Value>>(dims)
        .unwrap_or_default()
        .iter()
        .map(|d| {
            d.as_array()
                .map(|a| a.iter().filter_map(|x| x.as_i64()).collect())
                .unwrap_or_default()
        })
        .collect();
    let types: Vec<String> = serde_json::from_str(types).unwrap_or_default();
    dims.iter()
        .zip(
            types
                .iter()
                .map(String::as_str)
                .chain(std::iter::repeat("")),
        )
        .map(|(d, t)| {
            let size = match t {
                "long int" => 8,
                "float" | "int" => 4,
                "c10::Half" | "c10::BFloat16" => 2,
                "unsigned char" => 1,
                _ => 0,
            };
            d.iter().product::<i64>() * size
        })
        .sum()
}

struct Device {
    start: i64,
    end: i64,
    corr: Option<i64>,
    /// Whether a step's runtime call launched it.
    matched: bool,
}

struct Runtime<'a> {
    start: i64,
    end: i64,
    /// (this call, a device event it launched), for each one.
    launched: &'a [(usize, usize)],
}

/// Kernel details the GPU figures read.
struct KernelFig {
    start: i64,
    end: i64,
    device: Option<i64>,
    blocks_per_sm: Option<f64>,
    occupancy: Option<f64>,
}

struct Keys {
    cat: StrId,
    corr: Option<StrId>,
    ext: [Option<StrId>; 2],
    device: Option<StrId>,
    blocks: Option<StrId>,
    occupancy: Option<StrId>,
}

#[derive(Default)]
struct Read {
    value_corr: Option<i64>,
    value_ext: Option<i64>,
    device: Option<i64>,
    blocks: Option<f64>,
    occupancy: Option<f64>,
    cat: Option<StrId>,
}

/// The plugin's steps of a PyTorch trace; `None` when the profile is not one (no event in a
/// Kineto category).
pub fn torch_steps(p: &Profile) -> Option<TorchSteps> {
    let keys = Keys {
        cat: p.key("cat")?,
        corr: p.key("correlation"),
        ext: [p.key("External id"), p.key("external id")],
        device: p.key("device"),
        blocks: p.key("blocks per SM"),
        occupancy: p.key("est. achieved occupancy %"),
    };
    let mut kinds: HashMap<StrId, Kind> = HashMap::default();
    let mut any = false;
    // (start, end, ext) of every event and what it is.
    let mut steps: Vec<(i64, i64, Option<i64>)> = Vec::new();
    let mut ranges: Vec<Vec<(i64, i64)>> = vec![Vec::new(); ROLES];
    let mut kernels: Vec<(i64, i64, Option<i64>)> = Vec::new();
    let mut comm_ext: Vec<Option<i64>> = Vec::new();
    let mut comm_ops: Vec<CommOp> = Vec::new();
    let k_dims = p.key("Input Dims").or_else(|| p.key("Input dims"));
    let k_types = p.key("Input type");
    let mut devices: Vec<Device> = Vec::new();
    let mut runtimes: Vec<(i64, i64, Option<i64>)> = Vec::new();
    let mut figs: Vec<KernelFig> = Vec::new();
    let (mut cpu_min, mut cpu_max) = (i64::MAX, i64::MIN);
    for plane in &p.planes {
        for line in &plane.lines {
            let ev = &line.events;
            if !ev.may_have_stat(keys.cat) {
                continue;
            }
            for i in 0..ev.len() {
                let mut r = Read::default();
                ev.stats(i).select(
                    |k| {
                        if k == keys.cat {
                            Some(0u8)
                        } else if Some(k) == keys.corr {
                            Some(1)
                        } else if Some(k) == keys.ext[0] || Some(k) == keys.ext[1] {
                            Some(2)
                        } else if Some(k) == keys.device {
                            Some(3)
                        } else if Some(k) == keys.blocks {
                            Some(4)
                        } else if Some(k) == keys.occupancy {
                            Some(5)
                        } else {
                            None
                        }
                    },
                    |slot, v| match (slot, v) {
                        (0, StatValue::Str(s)) => r.cat = Some(s),
                        (1, v) => r.value_corr = v.as_i64(),
                        (2, v) => r.value_ext = r.value_ext.or(v.as_i64()),
                        (3, v) => r.device = v.as_i64(),
                        (4, v) => r.blocks = v.as_f64(),
                        (5, v) => r.occupancy = v.as_f64(),
                        _ => {}
                    },
                );
                let Some(cat) = r.cat else { continue };
                let kind = *kinds.entry(cat).or_insert_with(|| kind_of(p.str(cat)));
                if kind == Kind::Ignored {
                    continue;
                }
                let (start, dur) = (ev.start(i), ev.dur(i));
                let end = start.saturating_add(dur);
                let name = plane
                    .metadata_of(line, i)
                    .map(|m| p.str(m.name))
                    .unwrap_or("");
                match kind {
                    Kind::Kernel | Kind::Memcpy | Kind::Memset => {
                        any = true;
                        devices.push(Device {
                            start,
                            end,
                            corr: r.value_corr,
                            matched: false,
                        });
                        match kind {
                            Kind::Kernel => {
                                kernels.push((start, end, r.value_ext));
                                figs.push(KernelFig {
                                    start,
                                    end,
                                    device: r.device,
                                    blocks_per_sm: r.blocks,
                                    occupancy: r.occupancy,
                                });
                            }
                            Kind::Memcpy => ranges[MEMCPY].push((start, end)),
                            _ => ranges[MEMSET].push((start, end)),
                        }
                    }
                    Kind::Runtime => {
                        any = true;
                        ranges[RUNTIME].push((start, end));
                        runtimes.push((start, end, r.value_corr));
                    }
                    Kind::Operator
                    | Kind::Python
                    | Kind::UserAnnotation
                    | Kind::GpuUserAnnotation => {
                        let step = name.starts_with("ProfilerStep#")
                            && matches!(kind, Kind::Operator | Kind::UserAnnotation);
                        let comm = COMM_OPS.contains(&name);
                        let loader = is_dataloader(name)
                            && matches!(kind, Kind::Operator | Kind::UserAnnotation);
                        // What the plugin keeps of annotations: steps and collectives (and,
                        // read as the operators they were, the DataLoader's).
                        let annotation =
                            matches!(kind, Kind::UserAnnotation | Kind::GpuUserAnnotation);
                        if annotation && !(step || comm || loader) {
                            continue;
                        }
                        if kind == Kind::GpuUserAnnotation && name.starts_with("ProfilerStep#") {
                            continue;
                        }
                        any = true;
                        if comm {
                            comm_ext.push(r.value_ext);
                            let st = ev.stats(i);
                            let text = |k: Option<StrId>| match k.and_then(|k| st.get(k)) {
                                Some(StatValue::Str(s)) => p.str(s),
                                _ => "",
                            };
                            comm_ops.push(CommOp {
                                name: name.to_string(),
                                start,
                                end,
                                ext: r.value_ext,
                                ranges: vec![(start, end)],
                                bytes: comm_bytes(text(k_dims).trim(), text(k_types).trim()),
                                step: None,
                            });
                        }
                        let counts_on_cpu = step || loader || !annotation;
                        if counts_on_cpu {
                            cpu_min = cpu_min.min(start);
                            cpu_max = cpu_max.max(end);
                        }
                        if loader {
                            ranges[DATALOADER].push((start, end));
                        } else if step {
                            steps.push((start, end, name[13..].parse().ok()));
                        } else if comm {
                            ranges[COMMUNICATION].push((start, end));
                        } else {
                            ranges[CPU_OP].push((start, end));
                        }
                    }
                    Kind::Ignored => {}
                }
            }
        }
    }
    if !any {
        return None;
    }
    let mut notes = Vec::new();
    let comm_set: std::collections::HashSet<Option<i64>> = comm_ext.iter().copied().collect();
    for &(s, e, ext) in &kernels {
        if comm_set.contains(&ext) {
            ranges[COMMUNICATION].push((s, e));
        } else {
            ranges[KERNEL].push((s, e));
        }
    }
    // A collective op's kernels (NCCL's, by External id) join its time ranges; where ids
    // repeat, the last op of an id has them, as in the plugin.
    let mut by_ext: HashMap<Option<i64>, usize> = HashMap::default();
    for (k, c) in comm_ops.iter().enumerate() {
        by_ext.insert(c.ext, k);
    }
    if comm_ops.iter().any(|c| c.name.starts_with("nccl:")) {
        let mut kernels_sorted = kernels.clone();
        kernels_sorted.sort_by_key(|k| k.0);
        for &(s, e, ext) in &kernels_sorted {
            if let Some(&k) = by_ext.get(&ext) {
                comm_ops[k].ranges.push((s, e));
            }
        }
    }
    let kept: std::collections::HashSet<usize> = by_ext.values().copied().collect();
    let mut k = 0;
    comm_ops.retain(|_| {
        k += 1;
        kept.contains(&(k - 1))
    });
    steps.sort_by_key(|s| s.0);
    let mut step_nums: Vec<Option<i64>> = steps.iter().map(|s| s.2).collect();
    let mut spans: Vec<(i64, i64)> = steps.iter().map(|s| (s.0, s.1)).collect();
    if spans.is_empty() {
        if cpu_min > cpu_max {
            notes.push("The trace has no `ProfilerStep#N` and no host operators: no steps.".into());
            return Some(TorchSteps {
                rows: Vec::new(),
                step_nums: Vec::new(),
                gpus: Vec::new(),
                comm_overlap: Vec::new(),
                notes,
                has_device: !devices.is_empty(),
                comm_ops: Vec::new(),
            });
        }
        notes.push("The trace has no `ProfilerStep#N` (the profiler's `step()` was not called): the whole host span, first operator to last, is one step, as in the PyTorch TensorBoard plugin.".into());
        spans.push((cpu_min, cpu_max));
        step_nums.push(None);
    }
    let has_device = !devices.is_empty();
    extend_to_device(
        &mut spans,
        &mut step_nums,
        &mut devices,
        runtimes,
        &mut notes,
    );
    if has_device && devices.iter().all(|d| !d.matched) {
        notes.push("No runtime call inside a step launched device work the trace links to it (by `correlation`): the steps are the host's `ProfilerStep#N` spans.".into());
    }

    // Each collective op to the step that holds it (in time order, as the plugin walks them).
    comm_ops.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
    let mut at = 0;
    let mut outside = 0usize;
    for c in comm_ops.iter_mut() {
        c.ranges.sort_by_key(|r| (r.0, std::cmp::Reverse(r.1)));
        while at < spans.len() && c.start >= spans[at].1 {
            at += 1;
        }
        if at < spans.len() && c.start >= spans[at].0 && c.end <= spans[at].1 {
            c.step = Some(at);
        } else {
            outside += 1;
        }
    }
    if outside > 0 {
        notes.push(format!("{outside} collective ops lie outside every step."));
    }

    // Each instant of the steps to the first role covering it; the rest is Other.
    let merged: Vec<Vec<(i64, i64)>> = ranges.into_iter().map(union).collect();
    let mut slots = union(spans.clone());
    let mut cost: Vec<Vec<(i64, i64)>> = Vec::with_capacity(ROLES + 1);
    for r in &merged {
        let taken = intersect(&slots, r);
        slots = subtract(&slots, &taken);
        cost.push(taken);
    }
    cost.push(slots);
    let rows: Vec<StepRow> = spans
        .iter()
        .enumerate()
        .map(|(i, &(s, e))| {
            let mut breakdown = [0i64; N_CATEGORIES];
            for (role, c) in cost.iter().enumerate() {
                breakdown[role] = clipped(c, s, e);
            }
            let name = match step_nums[i] {
                Some(n) => format!("ProfilerStep#{n}"),
                None => "whole trace".to_string(),
            };
            StepRow::from_breakdown(i as i64, name, s, e - s, breakdown)
                .with_columns(TORCH_CATEGORIES.len())
        })
        .collect();
    debug_assert!(rows
        .iter()
        .all(|r| r.breakdown_ps[..=OTHER].iter().sum::<i64>() == r.duration_ps));

    // The distributed view's split of each step.
    let comp = if merged[KERNEL].is_empty() {
        &merged[CPU_OP]
    } else {
        &merged[KERNEL]
    };
    let both = intersect(comp, &merged[COMMUNICATION]);
    let comm_overlap = spans
        .iter()
        .map(|&(s, e)| {
            let computation_ps = clipped(comp, s, e);
            let communication_ps = clipped(&merged[COMMUNICATION], s, e);
            let overlap_ps = clipped(&both, s, e);
            CommOverlap {
                computation_ps,
                overlap_ps,
                communication_ps,
                other_ps: (e - s) + overlap_ps - computation_ps - communication_ps,
            }
        })
        .collect();
    let gpus = match (spans.first(), spans.last()) {
        (Some(f), Some(l)) if l.1 > f.0 => gpu_figures(&figs, f.0, l.1),
        _ => Vec::new(),
    };
    Some(TorchSteps {
        rows,
        step_nums,
        gpus,
        comm_overlap,
        notes,
        has_device,
        comm_ops,
    })
}

/// The plugin's device-side step bounds (`_find_device_steps`, `_update_steps_duration`).
fn extend_to_device(
    spans: &mut Vec<(i64, i64)>,
    nums: &mut Vec<Option<i64>>,
    devices: &mut [Device],
    runtimes: Vec<(i64, i64, Option<i64>)>,
    notes: &mut Vec<String>,
) {
    // Runtime calls and the device events of the same correlation. A correlation id names one
    // launch; where a file repeats one, the latest call before the device event launched it
    // (the last of those starting then), else the last call with the id. The calls by
    // correlation and start (and their order in the file), for a search per device event.
    let mut by_corr: Vec<(Option<i64>, i64, usize)> = runtimes
        .iter()
        .enumerate()
        .map(|(k, &(start, _, corr))| (corr, start, k))
        .collect();
    by_corr.sort_unstable();
    // (call, device event) of each launch, by call.
    let mut launched: Vec<(usize, usize)> = Vec::new();
    for (d, dev) in devices.iter().enumerate() {
        let lo = by_corr.partition_point(|x| x.0 < dev.corr);
        let hi = lo + by_corr[lo..].partition_point(|x| x.0 == dev.corr);
        let same = &by_corr[lo..hi];
        let k = match same {
            [] => continue,
            [one] => one.2,
            _ => match same.partition_point(|x| x.1 <= dev.start) {
                0 => same.iter().map(|x| x.2).max().unwrap_or(same[0].2),
                i => same[i - 1].2,
            },
        };
        launched.push((k, d));
    }
    launched.sort_unstable();
    // The calls in time order (those of one start in file order), each with its launches.
    let mut order: Vec<usize> = (0..runtimes.len()).collect();
    order.sort_by_key(|&k| runtimes[k].0);
    let rts: Vec<Runtime> = order
        .iter()
        .map(|&k| {
            let lo = launched.partition_point(|x| x.0 < k);
            let hi = lo + launched[lo..].partition_point(|x| x.0 == k);
            Runtime {
                start: runtimes[k].0,
                end: runtimes[k].1,
                launched: &launched[lo..hi],
            }
        })
        .collect();
    let n = spans.len();
    let mut dev_span: Vec<Option<(i64, i64)>> = vec![None; n];
    let mut matched_count = vec![0usize; n];
    let (mut i, mut j) = (0, 0);
    while i < n && j < rts.len() {
        let (s, e) = spans[i];
        let rt = &rts[j];
        if rt.start < s {
            j += 1;
        } else if rt.end <= e {
            for &(_, d) in rt.launched {
                let dv = &mut devices[d];
                dv.matched = true;
                let cur = dev_span[i].get_or_insert((dv.start, dv.end));
                cur.0 = cur.0.min(dv.start);
                cur.1 = cur.1.max(dv.end);
                matched_count[i] += 1;
            }
            j += 1;
        } else if rt.start < e {
            j += 1;
        } else {
            i += 1;
        }
    }
    if !devices.iter().any(|d| d.matched) {
        return;
    }
    let mut prev_end = spans[0].0;
    if let Some((first_dev, _)) = dev_span[0] {
        for d in devices.iter().filter(|d| !d.matched) {
            if d.end < first_dev {
                prev_end = prev_end.max(d.end);
            }
        }
    }
    for k in 0..n {
        let start = prev_end.max(spans[k].0);
        let end = match dev_span[k] {
            None => spans[k].1.max(start),
            Some((_, dev_end)) => spans[k].1.max(dev_end).max(start),
        };
        spans[k] = (start, end);
        prev_end = end;
    }
    if n > 1 {
        if let Some(last) = (0..n).rev().find(|&k| matched_count[k] > 0) {
            let mut keep = last + 1;
            if last > 0 && (matched_count[last - 1] as f64) * 0.8 > matched_count[last] as f64 {
                keep = last;
            }
            if keep < n {
                notes.push(format!(
                    "The last {} step(s) are left out, as the PyTorch TensorBoard plugin leaves them out: they launched no device work, or less than 80% of the device events of the step before, so the profiler may have missed their kernels.",
                    n - keep
                ));
                spans.truncate(keep);
                nums.truncate(keep);
            }
        }
    }
}
