//! A step's row and its categories: XProf's event types, the step breakdown's categories and
//! the summary of step times, shared by the step grouping ([`crate::base::steps::step_db`]) and the
//! PyTorch steps ([`crate::base::pytorch::torch_steps`]).

use serde::Serialize;

/// XProf's event types (`xprof/utils/event_span.h`); the value is the priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EventType {
    Unknown = 0,
    HostCompute = 1,
    HostPreprocess = 2,
    HostPostprocess = 3,
    HostBatchFormation = 4,
    HostRuntime = 5,
    HostCompile = 6,
    HostToHost = 7,
    HostToDevice = 8,
    HostPrepare = 9,
    DeviceCollectives = 10,
    HostWaitInput = 11,
    DeviceToDevice = 12,
    DeviceToHost = 13,
    DeviceCompute32 = 14,
    DeviceCompute16 = 15,
    DeviceWaitDevice = 16,
    DeviceWaitHost = 17,
}

pub(crate) const N_TYPES: usize = 18;

/// One column of the step-time breakdown.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct Category {
    /// Stable id (also the JSON key of the per-step value).
    pub id: &'static str,
    pub label: &'static str,
    /// What it counts.
    pub explanation: &'static str,
    #[serde(skip)]
    pub types: &'static [EventType],
}

/// The number of [`CATEGORIES`].
pub const N_CATEGORIES: usize = 9;

/// The breakdown columns, in XProf's order (generic CPU/GPU step table).
pub const CATEGORIES: &[Category; N_CATEGORIES] = &[
    Category {
        id: "device_compute",
        label: "Device compute",
        explanation: "GPU kernels (16-bit when the kernel's shapes or name say half precision, else 32-bit) grouped into the step.",
        types: &[EventType::DeviceCompute16, EventType::DeviceCompute32],
    },
    Category {
        id: "device_to_device",
        label: "Device to device",
        explanation: "MemcpyDtoD copies and device waits for other devices.",
        types: &[EventType::DeviceToDevice, EventType::DeviceWaitDevice],
    },
    Category {
        id: "device_collectives",
        label: "Device collective communication",
        explanation: "NCCL kernels (names starting with `nccl`).",
        types: &[EventType::DeviceCollectives],
    },
    Category {
        id: "host_compute",
        label: "Host compute",
        explanation: "Host events of the step (nested in the step marker on its thread, or linked to it by producer/consumer ids) that are not input, copies or eager/function wrappers.",
        types: &[EventType::HostCompute],
    },
    Category {
        id: "kernel_launch",
        label: "Kernel launch",
        explanation: "Host time preparing and launching device work (XProf never produces it for host threads in 2.24.2; kept for the column).",
        types: &[EventType::HostPrepare],
    },
    Category {
        id: "input",
        label: "Input",
        explanation: "Host waiting for input (`IteratorGetNext*` events, root tf.data pipeline stages), host-to-device copies (`MemcpyHToD*`, `InfeedEnqueue*`) and device waits for the host.",
        types: &[
            EventType::HostWaitInput,
            EventType::HostToDevice,
            EventType::DeviceWaitHost,
        ],
    },
    Category {
        id: "output",
        label: "Output",
        explanation: "Device-to-host copies (`MemcpyDtoH*`).",
        types: &[EventType::DeviceToHost],
    },
    Category {
        id: "compile",
        label: "Compilation",
        explanation: "Host compilation events.",
        types: &[EventType::HostCompile],
    },
    Category {
        id: "other",
        label: "All others",
        explanation: "Time inside the step span covered by none of the above: gaps between the step's events (e.g. Python between ops, work on XLA worker threads that the profile does not link to the step).",
        types: &[EventType::Unknown],
    },
];

/// One step as XProf computes it (or, for PyTorch traces, as the PyTorch TensorBoard plugin
/// does).
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// XProf's group id (the step's order among the roots).
    pub group_id: i64,
    /// The step name XProf shows (`train 3`).
    pub name: String,
    pub begin_ps: i64,
    pub duration_ps: i64,
    /// Picoseconds per category of the host's step model, in that order ([`CATEGORIES`] for
    /// XProf's; held in the row: a pod's summaries keep millions of steps). Entries past
    /// `columns` are 0 and not shown.
    pub breakdown_ps: [i64; N_CATEGORIES],
    /// How many of `breakdown_ps` are the model's categories.
    pub columns: u8,
}

impl Serialize for StepRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("StepRow", 5)?;
        st.serialize_field("group_id", &self.group_id)?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("begin_ps", &self.begin_ps)?;
        st.serialize_field("duration_ps", &self.duration_ps)?;
        st.serialize_field("breakdown_ps", self.breakdown())?;
        st.end()
    }
}

/// The shape [`StepRow`] serializes to.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct StepRowJson {
    /// XProf's group id (the step's order among the roots).
    group_id: i64,
    /// The step name XProf shows (`train 3`).
    name: String,
    begin_ps: i64,
    duration_ps: i64,
    /// Picoseconds per category of the host's step model, in its order.
    breakdown_ps: Vec<i64>,
}

impl schemars::JsonSchema for StepRow {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StepRow".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        StepRowJson::json_schema(g)
    }
}

impl StepRow {
    /// The breakdown's entries for the model's categories.
    pub fn breakdown(&self) -> &[i64] {
        &self.breakdown_ps[..usize::from(self.columns).min(N_CATEGORIES)]
    }

    /// The row with `n` of its breakdown's entries shown (the step model's categories).
    pub fn with_columns(mut self, n: usize) -> StepRow {
        self.columns = u8::try_from(n.min(N_CATEGORIES)).unwrap_or(N_CATEGORIES as u8);
        self
    }

    /// A step as a summary keeps it: its breakdown, without the per-event-type times.
    pub fn from_breakdown(
        group_id: i64,
        name: String,
        begin_ps: i64,
        duration_ps: i64,
        breakdown_ps: [i64; N_CATEGORIES],
    ) -> StepRow {
        StepRow {
            group_id,
            name,
            begin_ps,
            duration_ps,
            breakdown_ps,
            columns: N_CATEGORIES as u8,
        }
    }
}

/// A step's breakdown ([`CATEGORIES`]) from its time per event type.
pub(crate) fn breakdown_of(type_ps: &[i64; N_TYPES]) -> [i64; N_CATEGORIES] {
    std::array::from_fn(|i| {
        CATEGORIES[i]
            .types
            .iter()
            .map(|t| type_ps[*t as usize])
            .sum()
    })
}

/// Mean, sample standard deviation, min and max (XProf's `Stat<double>`), in ps.
#[derive(Debug, Clone, Copy, Default, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub count: usize,
    pub mean_ps: i64,
    pub std_dev_ps: i64,
    pub min_ps: i64,
    pub max_ps: i64,
    /// The same in XProf's milliseconds, as its double-precision statistics compute them
    /// (the mean and deviation of each step's ms); not in JSON, whose times are in ps.
    #[serde(skip)]
    pub mean_ms: f64,
    #[serde(skip)]
    pub std_dev_ms: f64,
    #[serde(skip)]
    pub min_ms: f64,
    #[serde(skip)]
    pub max_ms: f64,
}

impl Summary {
    pub fn of(ps: &[i64]) -> Summary {
        if ps.is_empty() {
            return Summary::default();
        }
        let ms: Vec<f64> = ps.iter().map(|v| *v as f64 / 1e9).collect();
        let n = ms.len() as f64;
        let s: f64 = ms.iter().sum();
        let sq: f64 = ms.iter().map(|v| v * v).sum();
        let mn = ms.iter().cloned().fold(f64::INFINITY, f64::min);
        let mx = ms.iter().cloned().fold(f64::MIN_POSITIVE, f64::max);
        let var = if mn == mx || ms.len() < 2 {
            0.0
        } else {
            ((sq - s * s / n) / (n - 1.0)).max(0.0)
        };
        let mean = s / n;
        let std = var.sqrt();
        Summary {
            count: ps.len(),
            mean_ps: (ps.iter().map(|v| *v as i128).sum::<i128>() / ps.len() as i128) as i64,
            std_dev_ps: (std * 1e9).round() as i64,
            min_ps: ps.iter().copied().min().unwrap_or(0),
            max_ps: ps.iter().copied().max().unwrap_or(0),
            mean_ms: mean,
            std_dev_ms: std,
            min_ms: mn,
            max_ms: ps.iter().copied().max().unwrap_or(0) as f64 / 1e9,
        }
    }
}
