//! GPU kernel stats: every kernel (by name and launch configuration) from the `kernel_details`
//! stat of GPU stream events — registers per thread, shared memory, grid and block, tensor-core
//! use — with occurrences and total/avg/min/max duration, as XProf's `kernel_stats`.

use serde::Serialize;

use crate::base::context::Run;
use crate::base::tool::{NoParams, PerHost, Tool, ToolError};
use std::collections::HashMap;
use xlens_model::{Profile, StrId};

use crate::base::device::{device_planes, DeviceKind};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Kernel {
    pub kernel_name: String,
    pub registers_per_thread: u32,
    /// Static + dynamic shared memory, bytes.
    pub shmem_bytes: u64,
    pub block_dim: String,
    pub grid_dim: String,
    /// Occupancy when the profile states it (`occ_pct` in `kernel_details`), else `None`.
    pub occupancy_pct: Option<f64>,
    /// Name heuristics for tensor-core kernels (`h884`, `1688`, `16816`, `hmma`, `imma`, `xmma`, ...).
    pub is_kernel_using_tensor_core: bool,
    /// The TF/JAX op that launched it (`tf_op` stat), when present.
    pub op_name: String,
    pub occurrences: u64,
    pub total_duration_ps: i64,
    pub avg_duration_ps: i64,
    pub min_duration_ps: i64,
    pub max_duration_ps: i64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct KernelStats {
    /// Every kernel, by total duration (largest first).
    pub kernels: Vec<Kernel>,
    pub kernel_count: usize,
    pub note: Option<String>,
}

/// Parses `regs:16 static_shared:0 dynamic_shared:0 grid:160,1,1 block:1024,1,1 occ_pct:50`.
pub fn parse_kernel_details(s: &str) -> (u32, u64, String, String, Option<f64>) {
    let (mut regs, mut shm, mut grid, mut block, mut occ) =
        (0, 0, String::new(), String::new(), None);
    for tok in s.split_whitespace() {
        let Some((k, v)) = tok.split_once(':') else {
            continue;
        };
        match k {
            "regs" | "registers_per_thread" => regs = v.parse().unwrap_or(0),
            "shm" | "static_shared" | "dynamic_shared" => shm += v.parse::<u64>().unwrap_or(0),
            "grid" => grid = v.to_string(),
            "block" => block = v.to_string(),
            "occ_pct" => occ = v.parse().ok(),
            _ => {}
        }
    }
    (regs, shm, grid, block, occ)
}

fn uses_tensor_core(name: &str) -> bool {
    const PATTERNS: [&str; 9] = [
        "h884", "h1688", "h16816", "s1688", "hmma", "imma", "xmma", "tensorop", "wmma",
    ];
    let l = name.to_ascii_lowercase();
    PATTERNS.iter().any(|p| l.contains(p))
}

pub fn kernel_stats(p: &Profile) -> KernelStats {
    let (Some(kd), tf_op) = (p.key("kernel_details"), p.key("tf_op")) else {
        return KernelStats {
            kernels: Vec::new(),
            kernel_count: 0,
            note: Some("No GPU kernel in this profile carries `kernel_details` (kernel stats are for GPU profiles).".to_string()),
        };
    };
    type Key = (StrId, StrId, StrId);
    let mut agg: HashMap<Key, Kernel> = HashMap::new();
    for (_, plane) in device_planes(p, DeviceKind::Gpu) {
        for line in &plane.lines {
            let ev = &line.events;
            for i in 0..ev.len() {
                let st = ev.stats(i);
                let Some(details) = st.get(kd).and_then(|v| v.as_str_id()) else {
                    continue;
                };
                let Some(md) = plane.metadata_of(line, i) else {
                    continue;
                };
                let op = tf_op
                    .and_then(|k| st.get(k).or_else(|| md.stats().get(k)))
                    .and_then(|v| v.as_str_id())
                    .unwrap_or_default();
                let d = ev.dur(i);
                let e = agg.entry((md.name, details, op)).or_insert_with(|| {
                    let (regs, shm, grid, block, occ) = parse_kernel_details(p.str(details));
                    Kernel {
                        kernel_name: p.str(md.name).to_string(),
                        registers_per_thread: regs,
                        shmem_bytes: shm,
                        block_dim: block,
                        grid_dim: grid,
                        occupancy_pct: occ,
                        is_kernel_using_tensor_core: uses_tensor_core(p.str(md.name)),
                        op_name: p.str(op).to_string(),
                        occurrences: 0,
                        total_duration_ps: 0,
                        avg_duration_ps: 0,
                        min_duration_ps: i64::MAX,
                        max_duration_ps: 0,
                    }
                });
                e.occurrences += 1;
                e.total_duration_ps += d;
                e.min_duration_ps = e.min_duration_ps.min(d);
                e.max_duration_ps = e.max_duration_ps.max(d);
            }
        }
    }
    let mut kernels: Vec<Kernel> = agg
        .into_values()
        .map(|mut k| {
            k.avg_duration_ps = k.total_duration_ps / k.occurrences.max(1) as i64;
            k
        })
        .collect();
    // Equal totals (one launch each of a kernel under several configurations) are ordered by
    // their configuration, so the order never depends on the map's.
    kernels.sort_by(|a, b| {
        b.total_duration_ps
            .cmp(&a.total_duration_ps)
            .then_with(|| a.kernel_name.cmp(&b.kernel_name))
            .then_with(|| a.grid_dim.cmp(&b.grid_dim))
            .then_with(|| a.block_dim.cmp(&b.block_dim))
            .then_with(|| a.registers_per_thread.cmp(&b.registers_per_thread))
            .then_with(|| a.shmem_bytes.cmp(&b.shmem_bytes))
            .then_with(|| a.op_name.cmp(&b.op_name))
    });
    KernelStats {
        kernel_count: kernels.len(),
        note: kernels
            .is_empty()
            .then(|| "No GPU kernel in this profile carries `kernel_details`.".to_string()),
        kernels,
    }
}

pub fn render_csv(k: &KernelStats) -> String {
    let mut o = String::from("rank,kernel_name,registers_per_thread,shmem_bytes,block_dim,grid_dim,occupancy_pct,is_kernel_using_tensor_core,op_name,occurrences,total_duration_us,avg_duration_us,min_duration_us,max_duration_us\n");
    for (i, k) in k.kernels.iter().enumerate() {
        o.push_str(&format!(
            "{},{},{},{},\"{}\",\"{}\",{},{},{},{},{},{},{},{}\n",
            i + 1,
            crate::base::fmt::csv_field(&k.kernel_name),
            k.registers_per_thread,
            k.shmem_bytes,
            k.block_dim,
            k.grid_dim,
            k.occupancy_pct.map(|v| v.to_string()).unwrap_or_default(),
            k.is_kernel_using_tensor_core,
            crate::base::fmt::csv_field(&k.op_name),
            k.occurrences,
            k.total_duration_ps as f64 / 1e6,
            k.avg_duration_ps as f64 / 1e6,
            k.min_duration_ps as f64 / 1e6,
            k.max_duration_ps as f64 / 1e6
        ));
    }
    o
}

/// The kernel stats tool.
pub struct KernelStatsTool;

impl Tool for KernelStatsTool {
    const NAME: &'static str = "kernel_stats";
    const TITLE: &'static str = "Kernel stats";
    const DESCRIPTION: &'static str = "GPU kernels: registers, shared memory, grid and block, tensor-core use, occurrences and durations.";
    type Params = NoParams;
    type Output = PerHost<KernelStats>;

    fn run(run: &Run, _: &NoParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| kernel_stats(a.profile())))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}
