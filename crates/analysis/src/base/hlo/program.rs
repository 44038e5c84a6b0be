//! The whole program's place under the roofline as XProf's roofline model states it in its
//! `Program` row (and its overview as "FLOP rate utilization relative to roofline"): over the
//! device ops' total time less infeed and outfeed, the FLOPs and bytes of the innermost ops
//! (not `call`, `conditional`, `while`, megacore fusion; not infeed or outfeed); HBM bytes from
//! XLA's memory access breakdowns where ops carry them (ops without one add none), every byte
//! when no op does. The efficiency is the larger of the FLOP rate and the HBM bandwidth as shares
//! of the device's peaks.

use crate::base::hlo::hlo_ops::HostOps;

/// Categories whose ops contain other ops (their FLOPs and bytes are their children's).
const HAS_INNER_OPS: [&str; 4] = ["call", "conditional", "while", "megacore fusion"];

fn infeed_or_outfeed(category: &str) -> bool {
    category.contains("infeed") || category.contains("outfeed")
}

/// Totals of the program row over one or more hosts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProgramRoofline {
    /// Device op time plus idle time, less infeed and outfeed (summed over cores).
    pub time_ps: i64,
    pub flops: f64,
    pub hbm_bytes: f64,
    pub bytes_accessed: f64,
    /// Peak FLOP rate (per second) and HBM bandwidth (bytes per second) of one core, when known.
    pub peak_flops: Option<f64>,
    pub peak_hbm: Option<f64>,
    /// Ops with FLOPs from XLA's cost model and from xlens's own model.
    pub xla_cost_ops: usize,
    pub model_cost_ops: usize,
}

impl ProgramRoofline {
    /// The program row of one host's device ops.
    pub fn of(h: &HostOps) -> ProgramRoofline {
        let mut r = ProgramRoofline {
            time_ps: h.total_time_ps,
            peak_flops: h.peaks.flops_per_second.filter(|v| *v > 0.0),
            peak_hbm: h.peaks.bytes_per_second.filter(|v| *v > 0.0),
            ..Default::default()
        };
        let any_breakdown = h.ops.iter().any(|o| o.hbm_from_breakdown);
        for o in h.ops.iter() {
            if infeed_or_outfeed(&o.category) {
                r.time_ps = r.time_ps.saturating_sub(o.total_time_ps);
                continue;
            }
            if HAS_INNER_OPS.contains(&o.category.as_str()) {
                continue;
            }
            r.flops += o.flops;
            r.bytes_accessed += o.bytes_accessed;
            if o.hbm_from_breakdown || !any_breakdown {
                r.hbm_bytes += o.hbm_bytes;
            }
            match o.cost_source {
                crate::base::hlo::hlo_ops::CostSource::Xla => r.xla_cost_ops += 1,
                crate::base::hlo::hlo_ops::CostSource::CostModel => r.model_cost_ops += 1,
                crate::base::hlo::hlo_ops::CostSource::None => {}
            }
        }
        r
    }

    /// The sum of two hosts' rows (the peaks of the first that has them).
    pub fn plus(self, o: ProgramRoofline) -> ProgramRoofline {
        ProgramRoofline {
            time_ps: self.time_ps.saturating_add(o.time_ps),
            flops: self.flops + o.flops,
            hbm_bytes: self.hbm_bytes + o.hbm_bytes,
            bytes_accessed: self.bytes_accessed + o.bytes_accessed,
            peak_flops: self.peak_flops.or(o.peak_flops),
            peak_hbm: self.peak_hbm.or(o.peak_hbm),
            xla_cost_ops: self.xla_cost_ops + o.xla_cost_ops,
            model_cost_ops: self.model_cost_ops + o.model_cost_ops,
        }
    }

    fn per_second(&self, x: f64) -> f64 {
        if self.time_ps > 0 {
            x / (self.time_ps as f64 / 1e12)
        } else {
            0.0
        }
    }

    /// FLOP rate over the peak (a fraction), when the peak is known.
    pub fn flops_utilization(&self) -> Option<f64> {
        Some(self.per_second(self.flops) / self.peak_flops?)
    }

    /// HBM bandwidth over the peak (a fraction), when the peak is known.
    pub fn hbm_utilization(&self) -> Option<f64> {
        Some(self.per_second(self.hbm_bytes) / self.peak_hbm?)
    }

    /// The larger of the two utilizations (a fraction); `None` when neither peak is known.
    pub fn efficiency(&self) -> Option<f64> {
        match (self.flops_utilization(), self.hbm_utilization()) {
            (Some(f), Some(h)) => Some(f.max(h)),
            (a, b) => a.or(b),
        }
    }
}
