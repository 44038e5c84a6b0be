//! What ran the profile: device kind, model and count, from plane names and plane stats.

use serde::Serialize;
use xlens_model::{Plane, Profile, StatValue};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum DeviceKind {
    #[serde(rename = "TPU")]
    Tpu,
    #[serde(rename = "GPU")]
    Gpu,
    #[serde(rename = "CPU")]
    Cpu,
}

impl DeviceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Tpu => "TPU",
            DeviceKind::Gpu => "GPU",
            DeviceKind::Cpu => "CPU",
        }
    }
}

/// The accelerator (or CPU) of one host.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DeviceInfo {
    pub kind: DeviceKind,
    /// Model as the profile names it, e.g. `TPU v6 Lite`, or a description from GPU capabilities.
    pub model: String,
    /// Device planes in the file (TPU cores / GPUs), 0 for CPU-only profiles.
    pub count: usize,
    /// Device planes that recorded at least one event.
    pub active: usize,
    /// Peak FLOP rate per device when the profile states it (TFLOP/s).
    pub peak_teraflops_per_second: Option<f64>,
    /// Peak memory bandwidth per device when the profile states it (GB/s).
    pub peak_hbm_gigabytes_per_second: Option<f64>,
    /// Device memory size in bytes when the profile states it.
    pub memory_bytes: Option<u64>,
}

/// Index of a device plane (`/device:TPU:3` → 3) if `name` is one of the given kind's core planes.
pub fn device_ordinal(name: &str, kind: DeviceKind) -> Option<u32> {
    let rest = match kind {
        DeviceKind::Tpu => name.strip_prefix("/device:TPU:")?,
        DeviceKind::Gpu => name.strip_prefix("/device:GPU:")?,
        DeviceKind::Cpu => return None,
    };
    rest.parse().ok()
}

/// Device planes of `kind`, with their ordinal.
pub fn device_planes(p: &Profile, kind: DeviceKind) -> Vec<(u32, &Plane)> {
    let mut v: Vec<(u32, &Plane)> = p
        .planes
        .iter()
        .filter_map(|pl| device_ordinal(p.str(pl.name), kind).map(|o| (o, pl)))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

fn stat_f64(p: &Profile, plane: &Plane, name: &str) -> Option<f64> {
    let key = p.key(name)?;
    plane.stats().get(key)?.as_f64()
}

fn stat_str(p: &Profile, plane: &Plane, name: &str) -> Option<String> {
    let key = p.key(name)?;
    match plane.stats().get(key)? {
        StatValue::Str(s) | StatValue::Ref(s) => Some(p.str(s).to_string()),
        _ => None,
    }
}

/// Works out the device of a host's profile.
pub fn device_info(p: &Profile) -> DeviceInfo {
    for kind in [DeviceKind::Tpu, DeviceKind::Gpu] {
        let planes = device_planes(p, kind);
        if planes.is_empty() {
            continue;
        }
        let active = planes.iter().filter(|(_, pl)| pl.event_count() > 0).count();
        // Describe the first active plane (idle GPUs of a multi-GPU host have the same stats).
        let plane = planes
            .iter()
            .find(|(_, pl)| pl.event_count() > 0)
            .unwrap_or(&planes[0])
            .1;
        let model = match kind {
            DeviceKind::Tpu => {
                stat_str(p, plane, "device_type_string").unwrap_or_else(|| "TPU".to_string())
            }
            _ => gpu_model(p, plane),
        };
        let peak_tf = stat_f64(p, plane, "peak_teraflops_per_second");
        let mut peak_bw = stat_f64(p, plane, "peak_hbm_bw_gigabytes_per_second");
        if kind == DeviceKind::Gpu && peak_bw.is_none() {
            peak_bw = stat_f64(p, plane, "memory_bandwidth").map(|b| b / 1e9);
        }
        return DeviceInfo {
            kind,
            model,
            count: planes.len(),
            active,
            peak_teraflops_per_second: peak_tf.filter(|v| *v > 0.0),
            peak_hbm_gigabytes_per_second: peak_bw.filter(|v| *v > 0.0),
            memory_bytes: stat_f64(p, plane, "memory_size").map(|v| v as u64),
        };
    }
    let model = p
        .plane("/host:metadata")
        .and_then(|m| stat_str(p, m, "cpu_version"))
        .filter(|s| s != "cpu")
        .unwrap_or_else(|| "host CPU".to_string());
    DeviceInfo {
        kind: DeviceKind::Cpu,
        model,
        count: 0,
        active: 0,
        peak_teraflops_per_second: None,
        peak_hbm_gigabytes_per_second: None,
        memory_bytes: None,
    }
}

fn gpu_model(p: &Profile, plane: &Plane) -> String {
    if let Some(name) =
        stat_str(p, plane, "device_name").or_else(|| stat_str(p, plane, "device_type_string"))
    {
        return name;
    }
    let major = stat_f64(p, plane, "compute_cap_major");
    let minor = stat_f64(p, plane, "compute_cap_minor");
    let sms = stat_f64(p, plane, "core_count");
    let mem = stat_f64(p, plane, "memory_size");
    let mut parts = vec!["NVIDIA GPU".to_string()];
    if let (Some(a), Some(b)) = (major, minor) {
        parts.push(format!("compute capability {a}.{b}"));
    }
    if let Some(s) = sms {
        parts.push(format!("{s} SMs"));
    }
    if let Some(m) = mem {
        parts.push(format!("{:.1} GiB", m / (1u64 << 30) as f64));
    }
    parts.join(", ")
}
