//! Peak compute and memory bandwidth per device: the roofs of the roofline and the denominators
//! of FLOPs / bandwidth utilisation.
//!
//! In order of preference:
//! 1. the profile's own plane stats (`peak_teraflops_per_second`,
//!    `peak_hbm_bw_gigabytes_per_second` on TPU planes; `memory_bandwidth` on GPU planes);
//! 2. for GPUs without a stated FLOP rate, the [`TABLE`] figure for the model the plane names,
//!    else the FP32 CUDA-core peak derived from the plane's `clock_rate`, `core_count` and compute
//!    capability;
//! 3. the [`TABLE`] of TPU v2–v7 and NVIDIA A100/H100/H200/B200 figures (dense BF16, per device
//!    plane), each with its public source;
//! 4. for CPU profiles, figures the user gives (`--peak-flops`, `--peak-bw`), else a quick
//!    measurement of the machine running xlens ([`measure_host`]) — labelled as such, since it
//!    need not be the profiled machine.
//!
//! [`PeakSpec::source`] always says which of these a figure came from.

use serde::Serialize;
use std::sync::OnceLock;
use xlens_model::{Plane, Profile};

use crate::base::device::{device_info, device_planes, DeviceKind};

/// Where a peak figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeakSource {
    /// Stated by the profile (plane stats).
    Profile,
    /// Derived from GPU plane stats (clock × SMs × FP32 lanes per SM).
    DerivedFromProfile,
    /// The built-in table of published figures.
    Table,
    /// Given by the user.
    UserGiven,
    /// Measured on the machine running xlens (not necessarily the profiled one).
    MeasuredHere,
    /// Not known.
    Unknown,
}

/// One published device figure. FLOP rates are dense (no structured sparsity) BF16 matrix
/// throughput per device plane as profiles show them (per chip, except TPU v2/v3 whose two
/// TensorCores are separate planes).
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
pub struct TableEntry {
    pub name: &'static str,
    pub peak_teraflops_per_second: f64,
    pub peak_hbm_gigabytes_per_second: f64,
    /// Where the figures were published.
    pub source: &'static str,
}

/// Published peaks. Per-chip TPU figures are from Google Cloud's "TPU versions" pages; TPU v2
/// and v3 chips hold two TensorCores, each its own device plane, so their per-plane figures are
/// half the chip's. NVIDIA figures are the datasheets' dense BF16 Tensor Core rates (the
/// datasheets' headline BF16 numbers are "with sparsity", twice these).
pub const TABLE: &[TableEntry] = &[
    // 45 TFLOP/s and 16 GiB HBM at 600 GB/s per chip of 2 TensorCores.
    TableEntry {
        name: "TPU v2",
        peak_teraflops_per_second: 22.5,
        peak_hbm_gigabytes_per_second: 300.0,
        source: "https://cloud.google.com/tpu/docs/v2 (per chip: 45 TFLOP/s bf16, 600 GB/s HBM; 2 TensorCores)",
    },
    // 123 TFLOP/s and 900 GB/s per chip of 2 TensorCores.
    TableEntry {
        name: "TPU v3",
        peak_teraflops_per_second: 61.5,
        peak_hbm_gigabytes_per_second: 450.0,
        source: "https://cloud.google.com/tpu/docs/v3 (per chip: 123 TFLOP/s bf16, 900 GB/s HBM; 2 TensorCores)",
    },
    TableEntry {
        name: "TPU v4",
        peak_teraflops_per_second: 275.0,
        peak_hbm_gigabytes_per_second: 1200.0,
        source: "https://cloud.google.com/tpu/docs/v4 (per chip: 275 TFLOP/s bf16, 1200 GB/s HBM; megacore)",
    },
    TableEntry {
        name: "TPU v5e",
        peak_teraflops_per_second: 197.0,
        peak_hbm_gigabytes_per_second: 819.0,
        source: "https://cloud.google.com/tpu/docs/v5e (per chip: 197 TFLOP/s bf16, 819 GB/s HBM)",
    },
    TableEntry {
        name: "TPU v5p",
        peak_teraflops_per_second: 459.0,
        peak_hbm_gigabytes_per_second: 2765.0,
        source: "https://cloud.google.com/tpu/docs/v5p (per chip: 459 TFLOP/s bf16, 2765 GB/s HBM)",
    },
    TableEntry {
        name: "TPU v6e",
        peak_teraflops_per_second: 918.0,
        peak_hbm_gigabytes_per_second: 1640.0,
        source: "https://cloud.google.com/tpu/docs/v6e (per chip: 918 TFLOP/s bf16, 1640 GB/s HBM)",
    },
    // Ironwood: 4614 TFLOP/s FP8 and 7.37 TB/s HBM per chip; BF16 is half the FP8 rate.
    TableEntry {
        name: "TPU v7",
        peak_teraflops_per_second: 2307.0,
        peak_hbm_gigabytes_per_second: 7370.0,
        source: "https://cloud.google.com/tpu/docs/tpu7x and https://blog.google/products/google-cloud/ironwood-tpu-age-of-inference/ (per chip: 4614 TFLOP/s fp8, 7.37 TB/s HBM)",
    },
    TableEntry {
        name: "NVIDIA A100 40GB",
        peak_teraflops_per_second: 312.0,
        peak_hbm_gigabytes_per_second: 1555.0,
        source: "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (BF16 Tensor Core 312 TFLOPS dense; 40GB: 1,555 GB/s)",
    },
    TableEntry {
        name: "NVIDIA A100 80GB",
        peak_teraflops_per_second: 312.0,
        peak_hbm_gigabytes_per_second: 2039.0,
        source: "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (BF16 Tensor Core 312 TFLOPS dense; 80GB SXM: 2,039 GB/s)",
    },
    TableEntry {
        name: "NVIDIA H100 PCIe",
        peak_teraflops_per_second: 756.0,
        peak_hbm_gigabytes_per_second: 2000.0,
        source: "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet (H100 PCIe: BF16 1,513 TFLOPS with sparsity, 2 TB/s)",
    },
    TableEntry {
        name: "NVIDIA H100 SXM",
        peak_teraflops_per_second: 989.0,
        peak_hbm_gigabytes_per_second: 3350.0,
        source: "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet (H100 SXM: BF16 1,979 TFLOPS with sparsity, 3.35 TB/s)",
    },
    TableEntry {
        name: "NVIDIA H200",
        peak_teraflops_per_second: 989.0,
        peak_hbm_gigabytes_per_second: 4800.0,
        source: "https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM: BF16 1,979 TFLOPS with sparsity, 4.8 TB/s)",
    },
    TableEntry {
        name: "NVIDIA B200",
        peak_teraflops_per_second: 2250.0,
        peak_hbm_gigabytes_per_second: 8000.0,
        source: "https://www.nvidia.com/en-us/data-center/hgx/ (HGX B200 per GPU: BF16 4.5 PFLOPS with sparsity, 8 TB/s)",
    },
];

/// The table entry for a device model as profiles name it (`TPU v6 Lite`, `TPU v5`,
/// `NVIDIA H100 80GB HBM3`, `NVIDIA A100-SXM4-40GB`, ...).
pub fn lookup(model: &str) -> Option<&'static TableEntry> {
    let m: String = model
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let name = if m.contains("tpu") {
        if m.contains("v7") || m.contains("tpu7") || m.contains("ironwood") {
            "TPU v7"
        } else if m.contains("v6") || m.contains("trillium") {
            "TPU v6e"
        } else if m.contains("v5lite") || m.contains("v5e") {
            "TPU v5e"
        } else if m.contains("v5") {
            "TPU v5p"
        } else if m.contains("v4") {
            "TPU v4"
        } else if m.contains("v3") {
            "TPU v3"
        } else if m.contains("v2") {
            "TPU v2"
        } else {
            return None;
        }
    } else if m.contains("b200") {
        "NVIDIA B200"
    } else if m.contains("h200") {
        "NVIDIA H200"
    } else if m.contains("h100") {
        if m.contains("pcie") {
            "NVIDIA H100 PCIe"
        } else {
            "NVIDIA H100 SXM"
        }
    } else if m.contains("a100") {
        if m.contains("40gb") {
            "NVIDIA A100 40GB"
        } else {
            "NVIDIA A100 80GB"
        }
    } else {
        return None;
    };
    TABLE.iter().find(|e| e.name == name)
}

/// Peak figures as parameters of the tools that use them (`op_profile`, `hlo_stats`).
#[derive(Debug, Clone, Copy, Default, clap::Args, serde::Deserialize)]
pub struct PeakParams {
    /// Peak FLOP rate in FLOP/s (e.g. 1.5e12) for CPU profiles (default: measured on this
    /// machine, labelled as such).
    #[arg(long)]
    pub peak_flops: Option<f64>,
    /// Peak memory bandwidth in bytes/s (e.g. 2e11).
    #[arg(long)]
    pub peak_bw: Option<f64>,
}

impl PeakParams {
    /// The stated peaks; an error for one that is not a finite positive number.
    pub fn user(&self) -> Result<UserPeaks, crate::base::error::ToolError> {
        UserPeaks::checked(self.peak_flops, self.peak_bw)
    }
}

/// Peaks the user states (for CPU profiles, or to override).
#[derive(Debug, Clone, Copy, Default)]
pub struct UserPeaks {
    pub flops_per_second: Option<f64>,
    pub bytes_per_second: Option<f64>,
}

impl UserPeaks {
    /// Peaks as stated, each a finite positive number (`1e309` parses as infinity, and a
    /// roofline with an infinite roof has no scale: the fuzzer found a page that never ended).
    pub fn checked(
        flops: Option<f64>,
        bw: Option<f64>,
    ) -> Result<UserPeaks, crate::base::error::ToolError> {
        for (name, v) in [("peak_flops", flops), ("peak_bw", bw)] {
            if let Some(x) = v {
                if !(x.is_finite() && x > 0.0) {
                    return Err(crate::base::error::ToolError::Params(format!(
                        "{name}: `{x}` is not a finite positive number"
                    )));
                }
            }
        }
        Ok(UserPeaks {
            flops_per_second: flops,
            bytes_per_second: bw,
        })
    }
}

/// Peaks stated once for the whole process (`--peak-flops` / `--peak-bw` on any command), which
/// every tool and view uses where it is not given its own: the advice of `report` and the
/// overview, the diff, the host summaries, the server's pages.
static PROCESS_PEAKS: OnceLock<UserPeaks> = OnceLock::new();

/// Sets [`PROCESS_PEAKS`] (the first call wins; `false` if they were set already).
pub fn set_process_peaks(u: UserPeaks) -> bool {
    PROCESS_PEAKS.set(u).is_ok()
}

impl UserPeaks {
    /// These peaks, each figure not given taken from [`PROCESS_PEAKS`].
    pub fn or_process(self) -> UserPeaks {
        let p = PROCESS_PEAKS.get().copied().unwrap_or_default();
        UserPeaks {
            flops_per_second: self.flops_per_second.or(p.flops_per_second),
            bytes_per_second: self.bytes_per_second.or(p.bytes_per_second),
        }
    }
}

/// The roofs of one host's device.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PeakSpec {
    pub kind: DeviceKind,
    pub model: String,
    /// Per device (TPU core plane / GPU / the whole host CPU).
    pub flops_per_second: Option<f64>,
    pub bytes_per_second: Option<f64>,
    pub flops_source: PeakSource,
    pub bandwidth_source: PeakSource,
    /// How the figures were obtained, in words (with the table's citation when used).
    pub note: String,
}

impl PeakSpec {
    /// Operational intensity (FLOP/byte) where the compute and memory roofs meet.
    pub fn ridge_point(&self) -> Option<f64> {
        match (self.flops_per_second, self.bytes_per_second) {
            (Some(f), Some(b)) if b > 0.0 => Some(f / b),
            _ => None,
        }
    }
}

fn plane_f64(p: &Profile, plane: &Plane, name: &str) -> Option<f64> {
    let k = p.key(name)?;
    plane.stats().get(k)?.as_f64().filter(|v| *v > 0.0)
}

/// FP32 lanes per SM by compute capability (NVIDIA CUDA C Programming Guide, "Arithmetic
/// Instructions" throughput table: 32-bit floating-point add, multiply, multiply-add).
pub fn fp32_lanes_per_sm(major: u32, minor: u32) -> Option<f64> {
    Some(match (major, minor) {
        (5, _) => 128.0,
        (6, 0) => 64.0,
        (6, _) => 128.0,
        (7, _) => 64.0,
        (8, 0) => 64.0,
        (8, _) => 128.0,
        (9, _) | (10, _) | (12, _) => 128.0,
        _ => return None,
    })
}

/// The peaks of a host's device (see the module docs for the order of sources).
pub fn peak_spec(p: &Profile, user: UserPeaks) -> PeakSpec {
    let user = user.or_process();
    let info = device_info(p);
    let mut spec = PeakSpec {
        kind: info.kind,
        model: info.model.clone(),
        flops_per_second: None,
        bytes_per_second: None,
        flops_source: PeakSource::Unknown,
        bandwidth_source: PeakSource::Unknown,
        note: String::new(),
    };
    let mut notes: Vec<String> = Vec::new();
    if let Some(tf) = info.peak_teraflops_per_second {
        spec.flops_per_second = Some(tf * 1e12);
        spec.flops_source = PeakSource::Profile;
    }
    if let Some(bw) = info.peak_hbm_gigabytes_per_second {
        spec.bytes_per_second = Some(bw * 1e9);
        spec.bandwidth_source = PeakSource::Profile;
    }
    if info.kind != DeviceKind::Cpu {
        let table = lookup(&info.model);
        if spec.flops_per_second.is_none() {
            if let Some(e) = table {
                spec.flops_per_second = Some(e.peak_teraflops_per_second * 1e12);
                spec.flops_source = PeakSource::Table;
            } else if info.kind == DeviceKind::Gpu {
                let plane = device_planes(p, DeviceKind::Gpu)
                    .into_iter()
                    .find(|(_, pl)| pl.event_count() > 0)
                    .map(|x| x.1);
                if let Some(pl) = plane {
                    let clock_khz = plane_f64(p, pl, "clock_rate");
                    let sms = plane_f64(p, pl, "core_count");
                    let major = plane_f64(p, pl, "compute_cap_major");
                    let minor = plane_f64(p, pl, "compute_cap_minor").or(Some(0.0));
                    if let (Some(c), Some(s), Some(a), Some(b)) = (clock_khz, sms, major, minor) {
                        if let Some(lanes) = fp32_lanes_per_sm(a as u32, b as u32) {
                            spec.flops_per_second = Some(2.0 * lanes * s * c * 1e3);
                            spec.flops_source = PeakSource::DerivedFromProfile;
                            notes.push(format!(
                                "FLOP rate: FP32 CUDA-core peak = 2 × {lanes} lanes × {s} SMs × {:.3} GHz (compute capability {a}.{b}); Tensor Core rates are higher",
                                c / 1e6
                            ));
                        }
                    }
                }
            }
        }
        if spec.bytes_per_second.is_none() {
            if let Some(e) = table {
                spec.bytes_per_second = Some(e.peak_hbm_gigabytes_per_second * 1e9);
                spec.bandwidth_source = PeakSource::Table;
            }
        }
        if let Some(e) = table.filter(|_| {
            spec.flops_source == PeakSource::Table || spec.bandwidth_source == PeakSource::Table
        }) {
            notes.push(format!("{} from the built-in table: {}", e.name, e.source));
        }
    }
    if let Some(f) = user.flops_per_second.filter(|v| *v > 0.0) {
        spec.flops_per_second = Some(f);
        spec.flops_source = PeakSource::UserGiven;
        notes.push("FLOP rate given by the user".into());
    }
    if let Some(b) = user.bytes_per_second.filter(|v| *v > 0.0) {
        spec.bytes_per_second = Some(b);
        spec.bandwidth_source = PeakSource::UserGiven;
        notes.push("bandwidth given by the user".into());
    }
    if info.kind == DeviceKind::Cpu
        && (spec.flops_per_second.is_none() || spec.bytes_per_second.is_none())
    {
        let m = measure_host();
        if spec.flops_per_second.is_none() {
            spec.flops_per_second = Some(m.flops_per_second);
            spec.flops_source = PeakSource::MeasuredHere;
        }
        if spec.bytes_per_second.is_none() {
            spec.bytes_per_second = Some(m.bytes_per_second);
            spec.bandwidth_source = PeakSource::MeasuredHere;
        }
        notes.push(measured_note(&m));
    }
    spec.note = notes.join("; ");
    spec
}

/// How a measured figure is stated beside it.
fn measured_note(m: &HostMeasurement) -> String {
    let load = m
        .load_average
        .map(|l| format!(", load average {l:.2} then"))
        .unwrap_or_default();
    let kept = match &m.cached_in {
        Some(f) => format!("; kept in {f} and reused by every tool (delete it to measure again)"),
        None => "; measured in this process (the cache directory is not writable)".to_string(),
    };
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(m.measured_at_unix_s);
    format!(
        "measured on the machine running xlens ({}, {} threads, {}{load}), not necessarily the profiled one{kept}; give --peak-flops / --peak-bw for the real figures",
        m.cpu,
        m.threads,
        humantime::format_rfc3339_seconds(when)
    )
}

const LANES: usize = 64;
const ITERS: usize = 400_000;

/// `ITERS` multiply-adds on each of `LANES` independent accumulators: enough independent work to
/// keep every FMA unit busy. With AVX2 and FMA (checked at run time) as fused vector
/// multiply-adds; otherwise as separate multiplies and adds (never a call per operation).
fn fma_loop(seed: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function is compiled for (checked above).
        return unsafe { fma_loop_avx2(seed) };
    }
    fma_loop_plain(seed)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fma_loop_avx2(seed: f32) -> f32 {
    // Inlined here, so the fused multiply-adds compile to vector FMA instructions.
    multiply_adds(seed, |a, m, c| a.mul_add(m, c))
}

fn fma_loop_plain(seed: f32) -> f32 {
    multiply_adds(seed, |a, m, c| a * m + c)
}

#[inline(always)]
fn multiply_adds(seed: f32, op: impl Fn(f32, f32, f32) -> f32) -> f32 {
    let mut acc = [seed; LANES];
    let mul = std::hint::black_box(0.999_999f32);
    let add = std::hint::black_box(1e-7f32);
    for _ in 0..ITERS {
        for a in acc.iter_mut() {
            *a = op(*a, mul, add);
        }
    }
    std::hint::black_box(acc.iter().sum::<f32>())
}

/// A measurement of this machine's peaks, and when and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct HostMeasurement {
    pub flops_per_second: f64,
    pub bytes_per_second: f64,
    pub threads: usize,
    /// The CPU model (`/proc/cpuinfo`), which with `threads` says whose figures these are.
    #[serde(default)]
    pub cpu: String,
    /// When it was measured (seconds since the Unix epoch).
    #[serde(default)]
    pub measured_at_unix_s: u64,
    /// The 1-minute load average when it was measured (`/proc/loadavg`; other work on the
    /// machine lowers the figures).
    #[serde(default)]
    pub load_average: Option<f64>,
    /// How it was measured.
    #[serde(default)]
    pub method: String,
    /// The file it is kept in (not stored there): every tool and process reuses it.
    #[serde(skip_deserializing)]
    pub cached_in: Option<String>,
}

/// Bumped when the measurement changes, so that older cached figures are measured again.
const MEASUREMENT_VERSION: u32 = 1;

const METHOD: &str = "FLOP rate: the best of 5 rounds of an f32 multiply-add loop on every thread; bandwidth: the best of 5 copies of 2 MiB within a 4 MiB buffer (beyond the private caches)";

/// This machine's peaks, measured once per machine and kept in `<cache>/host_peaks.json` (the
/// cache directory of [`xlens_store::cache_dir`]; `host_peaks.debug.json` for debug builds), so that every tool and every process uses the
/// same figures and two runs give the same answer. Measured again when the file is missing, from
/// another machine (CPU model or thread count differ) or from an older xlens; delete it to
/// measure again. Where the cache cannot be written, the figures are measured once per process
/// and `cached_in` is `None`.
pub fn measure_host() -> HostMeasurement {
    static CELL: OnceLock<HostMeasurement> = OnceLock::new();
    CELL.get_or_init(|| {
        // An unoptimised build (the tests') measures a fraction of the machine: it keeps its own.
        let name = if cfg!(debug_assertions) {
            "host_peaks.debug.json"
        } else {
            "host_peaks.json"
        };
        let path = xlens_store::cache_dir().join(name);
        let (cpu, threads) = (cpu_model(), thread_count());
        #[derive(serde::Deserialize)]
        struct Kept {
            version: u32,
            #[serde(flatten)]
            m: HostMeasurement,
        }
        // The kept figures, when they are this machine's and this version's.
        let read_kept = |cpu: &str| {
            std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<Kept>(&b).ok())
                .filter(|k| {
                    k.version == MEASUREMENT_VERSION && k.m.cpu == cpu && k.m.threads == threads
                })
                .filter(|k| k.m.flops_per_second > 0.0 && k.m.bytes_per_second > 0.0)
        };
        if let Some(k) = read_kept(&cpu) {
            return HostMeasurement {
                cached_in: Some(path.display().to_string()),
                ..k.m
            };
        }
        let mut m = measure_now(cpu.clone(), threads);
        // The figures as a reader of the file gets them: serde_json's float parsing may miss
        // the last bit, and this process must answer as the next one will.
        if let Ok(back) = serde_json::to_vec(&m).and_then(|b| serde_json::from_slice(&b)) {
            m = back;
        }
        let mut doc = serde_json::to_value(&m).unwrap_or_default();
        if let Some(o) = doc.as_object_mut() {
            o.remove("cached_in");
            o.insert("version".into(), MEASUREMENT_VERSION.into());
        }
        // Written whole under another name, then linked to its own: a reader sees no file or
        // all of it, and of two processes measuring at once the first to link wins (the other
        // takes its figures, so both answer alike).
        let tmp = path.with_extension(format!("json.{}", std::process::id()));
        let staged = path
            .parent()
            .is_some_and(|d| std::fs::create_dir_all(d).is_ok())
            && std::fs::write(&tmp, serde_json::to_vec_pretty(&doc).unwrap_or_default()).is_ok();
        let kept = staged
            && match std::fs::hard_link(&tmp, &path) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    match read_kept(&cpu) {
                        Some(k) => {
                            m = k.m;
                            true
                        }
                        // Another machine's or version's figures: replace them.
                        None => std::fs::rename(&tmp, &path).is_ok(),
                    }
                }
                Err(_) => std::fs::rename(&tmp, &path).is_ok(),
            };
        let _ = std::fs::remove_file(&tmp);
        if kept {
            m.cached_in = Some(path.display().to_string());
        }
        m
    })
    .clone()
}

fn thread_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Measures now (tens of ms): see [`METHOD`]. The best of several rounds, so that a moment of
/// other work on the machine lowers the figures less.
fn measure_now(cpu: String, threads: usize) -> HostMeasurement {
    let load = load_average();
    let mut flops = 0f64;
    for _ in 0..5 {
        let start = std::time::Instant::now();
        let handles: Vec<_> = (0..threads)
            .map(|t| std::thread::spawn(move || fma_loop(1.0 + t as f32 * 1e-3)))
            .collect();
        for h in handles {
            let _ = h.join();
        }
        let secs = start.elapsed().as_secs_f64().max(1e-9);
        flops = flops.max(2.0 * (LANES * ITERS * threads) as f64 / secs);
    }
    // One 4 MiB buffer, its first half copied onto its second (two buffers of 4 MiB made this
    // probe the largest thing alive in small profiles' HLO tools).
    const BYTES: usize = 2 << 20;
    let mut buf = vec![1u8; 2 * BYTES];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = std::time::Instant::now();
        std::hint::black_box(&mut buf[..]).copy_within(..BYTES, BYTES);
        std::hint::black_box(&buf);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let measured_at_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    HostMeasurement {
        flops_per_second: flops,
        // A copy reads and writes every byte.
        bytes_per_second: 2.0 * BYTES as f64 / best.max(1e-9),
        threads,
        cpu,
        measured_at_unix_s,
        load_average: load,
        method: METHOD.to_string(),
        cached_in: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lookup() {
        assert_eq!(lookup("TPU v6 Lite").map(|e| e.name), Some("TPU v6e"));
        assert_eq!(lookup("TPU v5 lite").map(|e| e.name), Some("TPU v5e"));
        assert_eq!(lookup("TPU v5").map(|e| e.name), Some("TPU v5p"));
        assert_eq!(lookup("TPU v4").map(|e| e.name), Some("TPU v4"));
        assert_eq!(lookup("TPU7x").map(|e| e.name), Some("TPU v7"));
        assert_eq!(
            lookup("NVIDIA H100 80GB HBM3").map(|e| e.name),
            Some("NVIDIA H100 SXM")
        );
        assert_eq!(
            lookup("NVIDIA A100-SXM4-40GB").map(|e| e.name),
            Some("NVIDIA A100 40GB")
        );
        assert_eq!(lookup("NVIDIA H200").map(|e| e.name), Some("NVIDIA H200"));
        assert_eq!(lookup("NVIDIA B200").map(|e| e.name), Some("NVIDIA B200"));
        assert!(lookup("Tesla P100").is_none());
        for e in TABLE {
            assert!(
                e.source.starts_with("https://"),
                "{} cites a source",
                e.name
            );
        }
        assert_eq!(fp32_lanes_per_sm(8, 0), Some(64.0));
    }
}
