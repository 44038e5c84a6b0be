//! XProf-compatible steps: step grouping, per-step event breakdown and the step summary that
//! XProf's `overview_page` and `input_pipeline_analyzer` show.
//!
//! The rules follow XProf 2.24.2 (see `bench-data/notes/overview_steps.md`):
//! * **grouping** (when the file is not already grouped): every root event (an `_r` stat, or
//!   `TraceContext`) starts a group, roots ordered by level (higher first) then start time; a group
//!   takes the root and, breadth first, every not-yet-grouped descendant. Descendants are events
//!   nested in it on the same thread and events linked to it by producer/consumer context stats
//!   (`_pt`/`_p` → `_ct`/`_c`), by `correlation_id` (kernel launch → kernel) and by
//!   `ExecutorState::Process` → `IteratorGetNext*::DoCompute` (`id`, `iter_num`).
//! * **step span**: the longest marker of the group (host `train*`/`test*`/`TraceContext` or a
//!   named root on CPU; the device `Steps` line on GPU). Time between steps belongs to no step.
//! * **breakdown**: the group's events are cut into non-overlapping pieces, each piece getting the
//!   highest-priority category active, clipped to the step span; uncovered time is "other".
//! * a step counts only if well formed (CPU: some host compute; GPU: some device compute).
//! * **XProf drops the first and the last step when more than 5 remain**. xlens reports both:
//!   [`StepDb::steps`] (XProf-compatible) and [`StepDb::steps_all`] (every well-formed step).

use serde::Serialize;
use std::collections::VecDeque;
use xlens_model::{FlowRef, Profile, StatValue, StrId};

use crate::base::device::{device_planes, DeviceKind};
use crate::base::steps::input_marks::is_input_annotation;

type HashMap<K, V> = crate::base::fx::FxMap<K, V>;
type HashSet<K> = crate::base::fx::FxSet<K>;

use crate::base::steps::step_rows::{breakdown_of, N_TYPES};
pub use crate::base::steps::step_rows::{
    Category, EventType, StepRow, Summary, CATEGORIES, N_CATEGORIES,
};

mod events;
mod flatten;
mod group;
mod keys;
use events::*;
use flatten::*;
use group::*;
use keys::*;

/// The hardware path XProf takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum Hardware {
    #[serde(rename = "CPU_ONLY")]
    CpuOnly,
    #[serde(rename = "GPU")]
    Gpu,
    #[serde(rename = "TPU")]
    Tpu,
}

/// Steps of one host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepDb {
    pub hardware: Hardware,
    /// Whether the file already carried group ids (grouping then comes from the file).
    pub pre_grouped: bool,
    /// How many root groups grouping produced (before well-formedness and the edge rule).
    pub groups: usize,
    /// XProf-compatible steps (first and last dropped when more than 5 well-formed steps exist).
    pub steps: Vec<StepRow>,
    /// Every well-formed step, none dropped.
    pub steps_all: Vec<StepRow>,
    /// Whether the first and last step were dropped from [`StepDb::steps`].
    pub dropped_edges: bool,
    pub notes: Vec<String>,
    /// How the steps were formed, which says the breakdown's columns.
    #[serde(skip)]
    pub model: StepModel,
    /// PyTorch traces: the steps as the PyTorch TensorBoard plugin forms them, with its GPU
    /// figures ([`crate::base::pytorch::torch_steps`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torch: Option<TorchFigures>,
    /// Host annotations of the loop's data stage that the breakdown counts as input (XProf
    /// files them as host compute; [`crate::base::steps::input_marks`]), by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_annotations: Vec<String>,
}

/// How a host's steps are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepModel {
    /// XProf's step grouping and breakdown ([`CATEGORIES`]).
    #[default]
    Xprof,
    /// The PyTorch TensorBoard plugin's ([`crate::base::pytorch::torch_steps`]).
    Pytorch,
}

impl StepModel {
    /// The breakdown's columns: `breakdown_ps[i]` of a step is `categories()[i]`.
    pub fn categories(self) -> &'static [Category] {
        match self {
            StepModel::Xprof => CATEGORIES,
            StepModel::Pytorch => crate::base::pytorch::torch_steps::TORCH_CATEGORIES,
        }
    }

    /// The model whose columns include the category `id` only it has.
    pub fn of_category(id: &str) -> Option<StepModel> {
        [StepModel::Xprof, StepModel::Pytorch]
            .into_iter()
            .find(|m| m.categories().iter().any(|c| c.id == id))
    }
}

/// What a PyTorch trace's steps carry beyond the rows.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TorchFigures {
    pub gpus: Vec<crate::base::pytorch::torch_steps::TorchGpu>,
    pub comm_overlap: Vec<crate::base::pytorch::torch_steps::CommOverlap>,
    pub has_device: bool,
    /// The collective ops, in time order.
    #[serde(skip)]
    pub comm_ops: Vec<crate::base::pytorch::torch_steps::CommOp>,
}

impl StepDb {
    /// The index of the breakdown column with id `id` in this host's [`StepDb::categories`].
    pub fn category(&self, id: &str) -> Option<usize> {
        self.categories().iter().position(|c| c.id == id)
    }

    /// The breakdown's columns.
    pub fn categories(&self) -> &'static [Category] {
        self.model.categories()
    }

    /// A PyTorch trace's steps as [`crate::base::pytorch::torch_steps::torch_steps`] forms them.
    pub fn of_torch(t: crate::base::pytorch::torch_steps::TorchSteps) -> StepDb {
        let hardware = if t.has_device {
            Hardware::Gpu
        } else {
            Hardware::CpuOnly
        };
        // (How the steps are formed is stated by the overview's `pytorch.step_definition`.)
        let notes = t.notes;
        StepDb {
            hardware,
            pre_grouped: false,
            groups: t.rows.len(),
            steps: t.rows.clone(),
            steps_all: t.rows,
            dropped_edges: false,
            notes,
            model: StepModel::Pytorch,
            torch: Some(TorchFigures {
                gpus: t.gpus,
                comm_overlap: t.comm_overlap,
                has_device: t.has_device,
                comm_ops: t.comm_ops,
            }),
            input_annotations: Vec::new(),
        }
    }
}

/// Step rows from each group's events, `ev` in group-id order.
fn build_rows(ev: Vec<(i64, StepEvents)>, has_device: bool) -> Vec<StepRow> {
    let mut rows = Vec::new();
    for (gid, sd) in ev {
        let (b, e) = step_span(&sd.markers);
        let mut type_ps = [0i64; N_TYPES];
        let mut present = [false; N_TYPES];
        let mut total = 0i64;
        for (t, eb, ee) in non_overlapped(&sd.events) {
            let ov = (e.min(ee) - b.max(eb)).max(0);
            type_ps[t as usize] += ov;
            present[t as usize] = true;
            total += ov;
        }
        if total < e - b {
            type_ps[EventType::Unknown as usize] += (e - b) - total;
        }
        let well = if has_device {
            present[EventType::DeviceCompute16 as usize]
                || present[EventType::DeviceCompute32 as usize]
        } else {
            present[EventType::HostCompute as usize]
        };
        if !well || e - b == 0 {
            continue;
        }
        rows.push(StepRow {
            group_id: gid,
            name: sd.name.unwrap_or_else(|| gid.to_string()),
            begin_ps: b,
            duration_ps: e - b,
            breakdown_ps: breakdown_of(&type_ps),
            columns: N_CATEGORIES as u8,
        });
    }
    rows
}

/// Computes the steps of one host's profile as XProf does.
pub fn step_db(p: &Profile) -> StepDb {
    step_db_prepare(p).finish()
}

/// The first, parallel half of [`step_db`] (the flat event index); [`StepDbPrep::finish`] does
/// the mostly sequential rest, so that a caller can run other work alongside it.
pub struct StepDbPrep<'a> {
    p: &'a Profile,
    hardware: Hardware,
    keys: Keys,
    flat: Option<Unmerged<'a>>,
    torch: Option<crate::base::pytorch::torch_steps::TorchSteps>,
}

/// See [`StepDbPrep`].
pub fn step_db_prepare(p: &Profile) -> StepDbPrep<'_> {
    let tpu = device_planes(p, DeviceKind::Tpu);
    let gpu = device_planes(p, DeviceKind::Gpu);
    let hardware = if !tpu.is_empty() {
        Hardware::Tpu
    } else if !gpu.is_empty() {
        Hardware::Gpu
    } else {
        Hardware::CpuOnly
    };
    let keys = Keys::new(p);
    // A PyTorch trace's steps are the PyTorch plugin's.
    let torch = crate::base::pytorch::torch_steps::torch_steps(p);
    let flat = (hardware != Hardware::Tpu && torch.is_none()).then(|| flatten(p, &keys));
    StepDbPrep {
        p,
        hardware,
        keys,
        flat,
        torch,
    }
}

impl StepDbPrep<'_> {
    /// Groups the events into steps and breaks each step down.
    pub fn finish(self) -> StepDb {
        let notes = Vec::new();
        if let Some(t) = self.torch {
            return StepDb::of_torch(t);
        }
        match self.flat {
            Some(flat) => steps_of(self.hardware, &self.keys, flat.merge(), notes),
            None => tpu_steps(self.p, notes),
        }
    }
}

fn steps_of(hardware: Hardware, k: &Keys, mut flat: Flat<'_>, mut notes: Vec<String>) -> StepDb {
    flat.async_child = async_children(&flat);
    let pre_grouped = k.group_id.is_some() && flat.ctxs.iter().any(|c| c.1.group_id.is_some());
    let (root_names, groups) = if pre_grouped {
        let mut gids: Vec<i64> = flat
            .ctxs
            .iter()
            .filter_map(|c| c.1.group_id)
            .filter(|g| *g >= 0)
            .collect();
        gids.sort_unstable();
        gids.dedup();
        flat.ungroup();
        for i in 0..flat.ctxs.len() {
            let (g, c) = flat.ctxs[i];
            if let Some(d) = c.group_id.and_then(|v| gids.binary_search(&v).ok()) {
                flat.group[g as usize] = d as u32;
            }
        }
        flat.group_ids = gids.clone();
        notes.push("The file is already grouped (it carries `group_id` stats); its groups are used as they are.".to_string());
        (HashMap::default(), gids.len())
    } else {
        group_events(&mut flat)
    };
    let mut input_annotations = Vec::new();
    let rows = match hardware {
        Hardware::Gpu => {
            // XProf names device steps by group id only.
            let mut ev: Vec<(i64, StepEvents)> = gpu_step_events(&flat).into_iter().collect();
            ev.sort_unstable_by_key(|x| x.0);
            build_rows(ev, true)
        }
        _ => {
            let ev = host_step_events(&flat, &root_names);
            let mut names: Vec<String> = ev
                .iter()
                .flat_map(|sd| sd.annotations.iter())
                .filter_map(|&(pi, m)| flat.p.planes[pi].event_metadata.get(m as usize))
                .map(|md| flat.p.str(md.name).to_string())
                .collect();
            names.sort_unstable();
            names.dedup();
            input_annotations = names;
            build_rows(flat.group_ids.iter().copied().zip(ev).collect(), false)
        }
    };
    let dropped = rows.len() > DROP_THRESHOLD;
    let steps = if dropped {
        notes.push(format!(
            "XProf drops the first and the last step when more than {DROP_THRESHOLD} steps remain: `steps` omits {} and {}; `steps_all` keeps all {}.",
            rows.first().map(|r| r.name.as_str()).unwrap_or(""),
            rows.last().map(|r| r.name.as_str()).unwrap_or(""),
            rows.len()
        ));
        rows[1..rows.len() - 1].to_vec()
    } else {
        rows.clone()
    };
    StepDb {
        hardware,
        pre_grouped,
        groups,
        steps,
        steps_all: rows,
        dropped_edges: dropped,
        notes,
        model: StepModel::Xprof,
        torch: None,
        input_annotations,
    }
}

/// TPU: steps only from a core's `Steps` line (step time = max over cores); no breakdown.
fn tpu_steps(p: &Profile, mut notes: Vec<String>) -> StepDb {
    let mut per_step: Vec<(String, i64, i64)> = Vec::new();
    for (_, plane) in device_planes(p, DeviceKind::Tpu) {
        for line in &plane.lines {
            if p.str(line.name) != "Steps" {
                continue;
            }
            let ev = &line.events;
            for i in 0..ev.len() {
                let name = plane
                    .metadata_of(line, i)
                    .map(|m| p.str(m.name).to_string())
                    .unwrap_or_default();
                match per_step.iter_mut().find(|s| s.0 == name) {
                    Some(s) => s.2 = s.2.max(ev.dur(i)),
                    None => per_step.push((name, ev.start(i), ev.dur(i))),
                }
            }
        }
    }
    if per_step.is_empty() {
        notes.push("No step marker observed (no TPU `Steps` line), so the step time is unknown; XProf says the same.".to_string());
    } else {
        notes.push(
            "TPU steps come from the cores' `Steps` lines (step time = the longest core); the TPU per-step breakdown is not computed yet."
                .to_string(),
        );
    }
    let rows: Vec<StepRow> = per_step
        .into_iter()
        .enumerate()
        .map(|(i, (name, b, d))| {
            let mut type_ps = [0i64; N_TYPES];
            type_ps[0] = d;
            StepRow {
                group_id: i as i64,
                name,
                begin_ps: b,
                duration_ps: d,
                breakdown_ps: breakdown_of(&type_ps),
                columns: N_CATEGORIES as u8,
            }
        })
        .collect();
    StepDb {
        hardware: Hardware::Tpu,
        pre_grouped: false,
        groups: rows.len(),
        steps: rows.clone(),
        steps_all: rows,
        dropped_edges: false,
        notes,
        model: StepModel::Xprof,
        torch: None,
        input_annotations: Vec::new(),
    }
}

impl StepDb {
    pub fn summary(&self) -> Summary {
        Summary::of(&self.steps.iter().map(|s| s.duration_ps).collect::<Vec<_>>())
    }
    pub fn summary_all(&self) -> Summary {
        Summary::of(
            &self
                .steps_all
                .iter()
                .map(|s| s.duration_ps)
                .collect::<Vec<_>>(),
        )
    }
}

#[cfg(test)]
mod tests;
