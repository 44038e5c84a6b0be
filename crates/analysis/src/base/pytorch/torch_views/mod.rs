//! The operator and kernel views of a PyTorch (Kineto) trace, as the PyTorch profiler's
//! TensorBoard plugin (torch-tb-profiler 0.4.3) computes them.
//!
//! * **Operator tree**, per host thread: operators (`cpu_op`/`Operator`), `python` events,
//!   `ProfilerStep#N`, the DataLoader's `__next__`, collective annotations and module scopes,
//!   nested by time (a slice that crosses its parent's end is left out, as the plugin leaves it
//!   out); an operator whose only child has its name and type takes that child's place.
//! * **Launches**: a runtime call belongs to the operator with its `External id`; calls with id
//!   0 to no operator. Calls whose id names no operator (traces of PyTorch 1.10 and later
//!   number launches apart from operators, where the plugin attributes them to nothing) go to
//!   the innermost operator open around them on their thread; the view says how many.
//!   Device events (kernels, copies, sets) belong to the call with their `correlation`.
//! * **Per operator**: host total (its duration), host self (less its children's and its
//!   launches' durations), device self (its launches' device time) and device total (with its
//!   children's), Tensor Core eligibility (the autocast list of ops that can use Tensor Cores,
//!   or a child or launch that does) and the time of Tensor Core kernels (kernel names with
//!   the plugin's patterns). Operators are summed by name, and by name and input shape.
//!   Left out, as in the plugin: `ProfilerStep#N`, the DataLoader, `Optimizer.*`,
//!   `DataParallel.forward`, `DistributedDataParallel.forward`, Python and annotation slices.
//! * **Kernels** by name over every kernel of the trace (calls, total, mean, max, min, blocks
//!   per SM and achieved occupancy weighted by duration), and by kernel and operator (with
//!   grid, block, registers and shared memory) over the kernels the tree attributes; kernels
//!   launched by no operator are under `CallTreeRoot`.

use serde::Serialize;
use xlens_model::Profile;

mod events;
mod rows;
mod tree;

/// Kernel names with any of these use Tensor Cores (the plugin's list).
const TC_KERNELS: [&str; 18] = [
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
];

/// Operators that can run on Tensor Cores (autocast's list, as the plugin has it).
const TC_OPS: [&str; 45] = [
    "aten::_convolution",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::conv_tbc",
    "aten::conv_transpose1d",
    "aten::conv_transpose2d",
    "aten::conv_transpose3d",
    "aten::convolution",
    "aten::cudnn_convolution",
    "aten::cudnn_convolution_transpose",
    "aten::prelu",
    "aten::addmm",
    "aten::addmv",
    "aten::addr",
    "aten::matmul",
    "aten::mm",
    "aten::mv",
    "aten::linear",
    "aten::addbmm",
    "aten::baddbmm",
    "aten::bmm",
    "aten::chain_matmul",
    "aten::linalg_multi_dot",
    "aten::_thnn_fused_lstm_cell",
    "aten::_thnn_fused_gru_cell",
    "aten::lstm_cell",
    "aten::gru_cell",
    "aten::rnn_tanh_cell",
    "aten::rnn_relu_cell",
    "CudnnConvolutionBackward",
    "BmmBackward0",
    "aten::cudnn_convolution_transpose_backward",
    "CudnnConvolutionTransposeBackward",
    "MmBackward",
    "aten::cudnn_convolution_backward_weight",
    "aten::addmm_",
    "AddmvBackward",
    "MvBackward",
    "aten::cudnn_convolution_transpose_backward_weight",
    "aten::cudnn_convolution_transpose_backward_input",
    "AddmmBackward",
    "aten::cudnn_convolution_backward_input",
    "AddbmmBackward",
    "aten::cudnn_convolution_backward",
];

pub(super) fn tc_kernel(name: &str) -> bool {
    TC_KERNELS.iter().any(|p| name.contains(p))
}

pub(super) fn tc_op(name: &str) -> bool {
    TC_OPS.contains(&name)
}

/// One row of the operator view: operators of one name (and input shape).
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct OperatorRow {
    pub name: String,
    /// The `Input Dims` as the plugin writes them (`[[32, 3, 224, 224], []]`); `None` in the
    /// by-name table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_shape: Option<String>,
    pub calls: u64,
    pub device_self_ps: i64,
    pub device_total_ps: i64,
    pub host_self_ps: i64,
    pub host_total_ps: i64,
    pub tc_eligible: bool,
    /// Share of device self time in Tensor Core kernels.
    pub tc_self_ratio: f64,
    pub tc_total_ratio: f64,
    /// The same figures per call stack (`Call stack`, traces taken with `with_stack=True`),
    /// for the stacks recorded (empty without them).
    pub call_stacks: Vec<CallStackRow>,
}

/// An operator row's figures for the calls from one call stack.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct CallStackRow {
    pub call_stack: String,
    pub calls: u64,
    pub device_self_ps: i64,
    pub device_total_ps: i64,
    pub host_self_ps: i64,
    pub host_total_ps: i64,
    pub tc_eligible: bool,
    pub tc_self_ratio: f64,
    pub tc_total_ratio: f64,
}

/// One row of the kernel view by name.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct KernelRow {
    pub name: String,
    pub tc_used: bool,
    pub calls: u64,
    pub total_ps: i64,
    pub mean_ps: f64,
    pub max_ps: i64,
    pub min_ps: i64,
    /// Blocks per SM, weighted by duration (a kernel without the figure counts 0).
    pub mean_blocks_per_sm: f64,
    /// Estimated achieved occupancy, percent, weighted by duration.
    pub mean_occupancy_percent: f64,
}

/// One row of the kernel view by kernel and operator.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct KernelOpRow {
    pub name: String,
    /// The operator that launched it (`CallTreeRoot`: none).
    pub op_name: String,
    pub grid: Option<Vec<i64>>,
    pub block: Option<Vec<i64>>,
    pub registers_per_thread: Option<i64>,
    pub shared_memory_bytes: Option<i64>,
    pub tc_used: bool,
    pub op_tc_eligible: bool,
    pub calls: u64,
    pub total_ps: i64,
    pub mean_ps: f64,
    pub max_ps: i64,
    pub min_ps: i64,
    pub mean_blocks_per_sm: f64,
    pub mean_occupancy_percent: f64,
}

/// The operator and kernel views of one PyTorch trace.
#[derive(Debug, Clone, Serialize, Default, schemars::JsonSchema)]
pub struct TorchViews {
    pub operators_by_name: Vec<OperatorRow>,
    pub operators_by_name_and_shape: Vec<OperatorRow>,
    pub kernels_by_name: Vec<KernelRow>,
    pub kernels_by_name_and_op: Vec<KernelOpRow>,
    /// Kernel time in Tensor Core kernels, of all kernel time.
    pub tc_used_ratio: Option<f64>,
    /// Kernel time launched by Tensor-Core-eligible operators (the innermost ones), of the
    /// kernel time the operators launch.
    pub tc_eligible_ops_kernel_ratio: f64,
    pub notes: Vec<String>,
}

/// Builds the views; `None` for a profile that is not a PyTorch trace.
pub fn torch_views(p: &Profile) -> Option<TorchViews> {
    let events = events::read(p)?;
    let tree = tree::build(p, events);
    Some(rows::views(p, tree))
}
