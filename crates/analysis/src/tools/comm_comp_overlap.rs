//! Communication/computation overlap (HTA's `get_comm_comp_overlap`): per rank, the share of the
//! time communication kernels run during which computation kernels run too.
//!
//! As HTA 0.5.0 computes it (`base::hta` loads the events by its rules): the union of
//! communication kernels (`nccl…Kernel`) and the union of computation kernels; the time both
//! run, over the communication time, as a percentage rounded to 2 decimals; none when the rank
//! has no communication kernel (HTA gives NaN).

use serde::Serialize;

use crate::base::context::{Analysis, Run};
use crate::base::pytorch::hta::{kernel_type, overlap, total, union, KernelType};
use crate::base::tool::{NoParams, PerHost, Tool, ToolError};

/// One rank's overlap.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CommCompOverlap {
    pub rank: i64,
    /// Percentage of communication time overlapped by computation (2 decimals); `None` without
    /// communication kernels.
    pub comp_comm_overlap_pctg: Option<f64>,
    pub communication_time_ps: i64,
    pub overlapped_time_ps: i64,
    pub last_step_dropped: bool,
}

pub fn comm_comp_overlap(a: &Analysis) -> CommCompOverlap {
    let p = a.profile();
    let t = a.hta();
    let of = |ty: KernelType| {
        union(
            t.gpu()
                .filter(|e| kernel_type(p.str(e.name)) == ty)
                .map(|e| (e.start_ps, e.end_ps))
                .collect(),
        )
    };
    let (comm, comp) = (of(KernelType::Communication), of(KernelType::Computation));
    let comm_time = total(&comm);
    let both = overlap(&comm, &comp);
    let pctg = (comm_time > 0).then(|| {
        let v = 100.0 * (both as f64 / comm_time as f64);
        format!("{v:.2}").parse().unwrap_or(v)
    });
    CommCompOverlap {
        rank: t.rank,
        comp_comm_overlap_pctg: pctg,
        communication_time_ps: comm_time,
        overlapped_time_ps: both,
        last_step_dropped: t.last_step_dropped,
    }
}

fn render_csv(o: &CommCompOverlap) -> String {
    format!(
        "rank,comp_comm_overlap_pctg,communication_time_us,overlapped_time_us\n{},{},{},{}\n",
        o.rank,
        o.comp_comm_overlap_pctg
            .map(|v| v.to_string())
            .unwrap_or_default(),
        o.communication_time_ps as f64 / 1e6,
        o.overlapped_time_ps as f64 / 1e6
    )
}

/// The communication/computation overlap tool.
pub struct CommCompOverlapTool;

impl Tool for CommCompOverlapTool {
    const NAME: &'static str = "comm_comp_overlap";
    const TITLE: &'static str = "Communication overlap";
    const DESCRIPTION: &'static str = "Per rank, how much of the communication kernels' time computation kernels overlap (HTA's communication/computation overlap, for PyTorch traces).";
    type Params = NoParams;
    type Output = PerHost<CommCompOverlap>;

    fn run(run: &Run, _: &NoParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, comm_comp_overlap))
    }
    fn text(r: &Self::Output) -> String {
        r.text(render_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}
