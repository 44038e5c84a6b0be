//! The PyTorch TensorBoard plugin's operator and kernel views of a PyTorch trace
//! ([`crate::base::torch_views`]): operators by name or by name and input shape, kernels by
//! name or by kernel and operator.

use serde::Serialize;

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::tool::{PerHost, Tool, ToolError};
use crate::base::torch_views::{KernelOpRow, KernelRow, OperatorRow, TorchViews};

/// How operator rows are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorGroup {
    #[default]
    Name,
    NameAndShape,
}

/// The operator view's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct OperatorParams {
    /// Group operators by name, or by name and input shape (`Input Dims`).
    #[arg(long, value_enum, default_value_t = OperatorGroup::Name)]
    #[serde(default)]
    pub group_by: OperatorGroup,
}

/// One host's operators.
#[derive(Debug, Clone, Serialize)]
pub struct Operators {
    pub group_by: &'static str,
    pub operators: Vec<OperatorRow>,
    /// Whether the trace has device work (else the device columns are all 0).
    pub has_device: bool,
    pub notes: Vec<String>,
}

const NOT_PYTORCH: &str = "Not a PyTorch (Kineto) trace: these views are of PyTorch traces.";

fn operators(v: Option<&TorchViews>, g: OperatorGroup) -> Operators {
    let empty = TorchViews {
        notes: vec![NOT_PYTORCH.to_string()],
        ..TorchViews::default()
    };
    let v = v.unwrap_or(&empty);
    Operators {
        group_by: match g {
            OperatorGroup::Name => "name",
            OperatorGroup::NameAndShape => "name_and_shape",
        },
        operators: match g {
            OperatorGroup::Name => v.operators_by_name.clone(),
            OperatorGroup::NameAndShape => v.operators_by_name_and_shape.clone(),
        },
        has_device: !v.kernels_by_name.is_empty(),
        notes: v.notes.clone(),
    }
}

fn operators_csv(o: &Operators) -> String {
    let mut t = String::from("name,input_shape,calls,device_self_ps,device_total_ps,host_self_ps,host_total_ps,tc_eligible,tc_self_ratio,tc_total_ratio\n");
    for r in &o.operators {
        t.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            csv_field(&r.name),
            csv_field(r.input_shape.as_deref().unwrap_or("")),
            r.calls,
            r.device_self_ps,
            r.device_total_ps,
            r.host_self_ps,
            r.host_total_ps,
            r.tc_eligible,
            r.tc_self_ratio,
            r.tc_total_ratio
        ));
    }
    t
}

/// The plugin's operator view.
pub struct PytorchOperators;

impl Tool for PytorchOperators {
    const NAME: &'static str = "pytorch_operators";
    const TITLE: &'static str = "PyTorch operators";
    const DESCRIPTION: &'static str = "Per host of a PyTorch trace, operators by name (or name and input shape) as the PyTorch TensorBoard plugin's Operator view: calls, device self/total, host self/total, Tensor Core eligibility and use.";
    type Params = OperatorParams;
    type Output = PerHost<Operators>;

    fn run(run: &Run, prm: &OperatorParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| {
            operators(a.torch_views().as_deref(), prm.group_by)
        }))
    }
    fn text(r: &Self::Output) -> String {
        r.text(operators_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(operators_csv))
    }
}

/// How kernel rows are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelGroup {
    #[default]
    Name,
    NameAndOp,
}

/// The kernel view's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct KernelParams {
    /// Group kernels by name, or by kernel and the operator that launched it.
    #[arg(long, value_enum, default_value_t = KernelGroup::Name)]
    #[serde(default)]
    pub group_by: KernelGroup,
}

/// One host's kernels.
#[derive(Debug, Clone, Serialize)]
pub struct Kernels {
    pub group_by: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_name: Option<Vec<KernelRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_name_and_op: Option<Vec<KernelOpRow>>,
    /// Kernel time in Tensor Core kernels, of all kernel time.
    pub tc_used_ratio: Option<f64>,
    /// Kernel time launched by Tensor-Core-eligible operators, of the operators' kernel time.
    pub tc_eligible_ops_kernel_ratio: f64,
    pub notes: Vec<String>,
}

fn kernels(v: Option<&TorchViews>, g: KernelGroup) -> Kernels {
    let empty = TorchViews {
        notes: vec![NOT_PYTORCH.to_string()],
        ..TorchViews::default()
    };
    let v = v.unwrap_or(&empty);
    Kernels {
        group_by: match g {
            KernelGroup::Name => "name",
            KernelGroup::NameAndOp => "name_and_op",
        },
        by_name: (g == KernelGroup::Name).then(|| v.kernels_by_name.clone()),
        by_name_and_op: (g == KernelGroup::NameAndOp).then(|| v.kernels_by_name_and_op.clone()),
        tc_used_ratio: v.tc_used_ratio,
        tc_eligible_ops_kernel_ratio: v.tc_eligible_ops_kernel_ratio,
        notes: v.notes.clone(),
    }
}

fn list(v: &Option<Vec<i64>>) -> String {
    v.as_ref().map_or(String::new(), |v| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn kernels_csv(k: &Kernels) -> String {
    let mut t = String::new();
    if let Some(rows) = &k.by_name {
        t.push_str("name,tc_used,calls,total_ps,mean_ps,max_ps,min_ps,mean_blocks_per_sm,mean_occupancy_percent\n");
        for r in rows {
            t.push_str(&format!(
                "{},{},{},{},{},{},{},{},{}\n",
                csv_field(&r.name),
                r.tc_used,
                r.calls,
                r.total_ps,
                r.mean_ps,
                r.max_ps,
                r.min_ps,
                r.mean_blocks_per_sm,
                r.mean_occupancy_percent
            ));
        }
    }
    if let Some(rows) = &k.by_name_and_op {
        t.push_str("name,op_name,grid,block,registers_per_thread,shared_memory_bytes,tc_used,op_tc_eligible,calls,total_ps,mean_ps,max_ps,min_ps,mean_blocks_per_sm,mean_occupancy_percent\n");
        for r in rows {
            t.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&r.name),
                csv_field(&r.op_name),
                list(&r.grid),
                list(&r.block),
                r.registers_per_thread
                    .map_or(String::new(), |v| v.to_string()),
                r.shared_memory_bytes
                    .map_or(String::new(), |v| v.to_string()),
                r.tc_used,
                r.op_tc_eligible,
                r.calls,
                r.total_ps,
                r.mean_ps,
                r.max_ps,
                r.min_ps,
                r.mean_blocks_per_sm,
                r.mean_occupancy_percent
            ));
        }
    }
    t
}

/// The plugin's kernel view.
pub struct PytorchKernels;

impl Tool for PytorchKernels {
    const NAME: &'static str = "pytorch_kernels";
    const TITLE: &'static str = "PyTorch kernels";
    const DESCRIPTION: &'static str = "Per host of a PyTorch trace, GPU kernels by name (or by kernel and launching operator) as the PyTorch TensorBoard plugin's Kernel view: calls, total/mean/max/min time, mean blocks per SM, mean estimated achieved occupancy, Tensor Cores used.";
    type Params = KernelParams;
    type Output = PerHost<Kernels>;

    fn run(run: &Run, prm: &KernelParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| {
            kernels(a.torch_views().as_deref(), prm.group_by)
        }))
    }
    fn text(r: &Self::Output) -> String {
        r.text(kernels_csv)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(kernels_csv))
    }
}
