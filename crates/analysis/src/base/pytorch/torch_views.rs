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
use xlens_model::{Profile, StatValue, StrId};

type HashMap<K, V> = crate::base::fx::FxMap<K, V>;

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

fn tc_kernel(name: &str) -> bool {
    TC_KERNELS.iter().any(|p| name.contains(p))
}

fn tc_op(name: &str) -> bool {
    TC_OPS.contains(&name)
}

/// One row of the operator view: operators of one name (and input shape).
#[derive(Debug, Clone, Serialize, PartialEq)]
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
#[derive(Debug, Clone, Serialize, PartialEq)]
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
#[derive(Debug, Clone, Serialize, PartialEq)]
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
#[derive(Debug, Clone, Serialize, PartialEq)]
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
#[derive(Debug, Clone, Serialize, Default)]
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum NodeKind {
    Operator,
    Python,
    Step,
    DataLoader,
    Optimizer,
    Annotation,
    Module,
}

struct Node {
    start: i64,
    end: i64,
    name: StrId,
    kind: NodeKind,
    ext: Option<i64>,
    shape: Option<StrId>,
    /// `Call stack`, when recorded (not empty).
    stack: Option<StrId>,
    children: Vec<usize>,
    runtimes: Vec<usize>,
    // Filled by `fill`.
    host_self: i64,
    device_total: i64,
    device_self: i64,
    tc_eligible: bool,
    tc_self: i64,
    tc_total: i64,
}

struct Launch {
    start: i64,
    end: i64,
    ext: Option<i64>,
    corr: Option<i64>,
    line: usize,
    device: Vec<usize>,
}

struct DeviceEv {
    start: i64,
    end: i64,
    name: StrId,
    kernel: bool,
    corr: Option<i64>,
    blocks: Option<f64>,
    occupancy: Option<f64>,
    grid: Option<StrId>,
    block: Option<StrId>,
    regs: Option<i64>,
    smem: Option<i64>,
}

/// The Python text of a JSON value (`[[1, 2], []]`), as the plugin keys input shapes.
fn python_repr(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_repr(x, out);
            }
            out.push(']');
        }
        serde_json::Value::String(s) => {
            out.push('\'');
            out.push_str(s);
            out.push('\'');
        }
        serde_json::Value::Null => out.push_str("None"),
        serde_json::Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        other => out.push_str(&other.to_string()),
    }
}

fn int_list(p: &Profile, s: Option<StrId>) -> Option<Vec<i64>> {
    let v: serde_json::Value = serde_json::from_str(p.str(s?)).ok()?;
    v.as_array()?.iter().map(|x| x.as_i64()).collect()
}

/// Builds the views; `None` for a profile that is not a PyTorch trace.
pub fn torch_views(p: &Profile) -> Option<TorchViews> {
    let cat_key = p.key("cat")?;
    // The args read, each event's in one pass: slot `i` holds the first value of `KEYS[i]`.
    const KEYS: [&str; 14] = [
        "cat",
        "External id",
        "external id",
        "correlation",
        "Call stack",
        "Input Dims",
        "Input dims",
        "Python module id",
        "blocks per SM",
        "est. achieved occupancy %",
        "grid",
        "block",
        "registers per thread",
        "shared memory",
    ];
    const CAT: usize = 0;
    const EXT: usize = 1;
    const EXT2: usize = 2;
    const CORR: usize = 3;
    const STACK: usize = 4;
    const DIMS: usize = 5;
    const DIMS2: usize = 6;
    const MODULE: usize = 7;
    const BLOCKS: usize = 8;
    const OCC: usize = 9;
    const GRID: usize = 10;
    const BLOCK: usize = 11;
    const REGS: usize = 12;
    const SMEM: usize = 13;
    let named: Vec<(&str, u8)> = KEYS
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u8 + 1))
        .collect();
    let slot_of = crate::base::ops::events::stat_slots(p, &named);
    let mut nodes: Vec<Node> = Vec::new();
    // Per thread (a host line, its overlap lines merged back): its nodes.
    let mut threads: Vec<(String, Vec<usize>)> = Vec::new();
    let mut launches: Vec<Launch> = Vec::new();
    let mut devices: Vec<DeviceEv> = Vec::new();
    let mut kinds: HashMap<StrId, u8> = HashMap::default();
    for plane in &p.planes {
        for line in &plane.lines {
            let ev = &line.events;
            if !ev.may_have_stat(cat_key) {
                continue;
            }
            let lname = p.str(line.name);
            let base = lname
                .rsplit_once(" (overlap ")
                .map_or(lname, |(b, _)| b)
                .to_string();
            let ti = match threads.iter().position(|t| t.0 == base) {
                Some(i) => i,
                None => {
                    threads.push((base, Vec::new()));
                    threads.len() - 1
                }
            };
            for i in 0..ev.len() {
                let mut vals = [None::<StatValue>; KEYS.len()];
                ev.stats(i).select(
                    |k| slot_of.get(k.0 as usize).copied().filter(|&s| s != 0),
                    |s, v| {
                        let slot = &mut vals[usize::from(s - 1)];
                        if slot.is_none() {
                            *slot = Some(v);
                        }
                    },
                );
                let Some(StatValue::Str(cat)) = vals[CAT] else {
                    continue;
                };
                // 1 operator, 2 python, 3 annotation, 4 python_function, 5 runtime,
                // 6 kernel, 7 memcpy/memset, 0 other.
                let k = *kinds.entry(cat).or_insert_with(|| {
                    match p.str(cat).to_ascii_lowercase().as_str() {
                        "cpu_op" | "operator" => 1,
                        "python" => 2,
                        "user_annotation" | "gpu_user_annotation" => 3,
                        "python_function" => 4,
                        "runtime" | "cuda_runtime" | "cuda_driver" => 5,
                        "kernel" => 6,
                        "memcpy" | "gpu_memcpy" | "memset" | "gpu_memset" => 7,
                        _ => 0,
                    }
                });
                if k == 0 {
                    continue;
                }
                let (start, end) = (ev.start(i), ev.end(i));
                let md = plane.metadata_of(line, i);
                let name_id = md.map(|m| m.name).unwrap_or_default();
                let name = p.str(name_id);
                let i64_of = |k: usize| vals[k].and_then(|v| v.as_i64());
                let ext = i64_of(EXT).or_else(|| i64_of(EXT2));
                match k {
                    5 => launches.push(Launch {
                        start,
                        end,
                        ext,
                        corr: i64_of(CORR),
                        line: ti,
                        device: Vec::new(),
                    }),
                    6 | 7 => {
                        let f64_of = |k: usize| vals[k].and_then(|v| v.as_f64());
                        let str_of = |k: usize| match vals[k] {
                            Some(StatValue::Str(s)) => Some(s),
                            _ => None,
                        };
                        devices.push(DeviceEv {
                            start,
                            end,
                            name: name_id,
                            kernel: k == 6,
                            corr: i64_of(CORR),
                            blocks: f64_of(BLOCKS),
                            occupancy: f64_of(OCC),
                            grid: str_of(GRID),
                            block: str_of(BLOCK),
                            regs: i64_of(REGS),
                            smem: i64_of(SMEM),
                        })
                    }
                    _ => {
                        let loader = (name.starts_with("enumerate(DataLoader)#")
                            && name.ends_with(".__next__"))
                            || name.starts_with("enumerate(DataPipe)#");
                        let kind = match k {
                            _ if name.starts_with("ProfilerStep#") && (k == 1 || k == 3) => {
                                if p.str(cat) == "gpu_user_annotation" {
                                    continue;
                                }
                                NodeKind::Step
                            }
                            1 | 3 if loader => NodeKind::DataLoader,
                            1 if name.starts_with("Optimizer.step") => NodeKind::Optimizer,
                            1 => NodeKind::Operator,
                            2 => NodeKind::Python,
                            3 if crate::base::pytorch::torch_steps::is_collective(name) => {
                                NodeKind::Annotation
                            }
                            4 if vals[MODULE].is_some() => NodeKind::Module,
                            _ => continue,
                        };
                        let shape = match vals[DIMS].or(vals[DIMS2]) {
                            Some(StatValue::Str(s)) => Some(s),
                            _ => None,
                        };
                        nodes.push(Node {
                            start,
                            end,
                            name: name_id,
                            kind,
                            ext: if kind == NodeKind::Module { None } else { ext },
                            shape,
                            stack: match vals[STACK] {
                                Some(StatValue::Str(c)) if !p.str(c).is_empty() => Some(c),
                                _ => None,
                            },
                            children: Vec::new(),
                            runtimes: Vec::new(),
                            host_self: 0,
                            device_total: 0,
                            device_self: 0,
                            tc_eligible: tc_op(name),
                            tc_self: 0,
                            tc_total: 0,
                        });
                        threads[ti].1.push(nodes.len() - 1);
                    }
                }
            }
        }
    }
    if nodes.is_empty() && launches.is_empty() && devices.is_empty() {
        return None;
    }
    let mut notes = Vec::new();

    // Device events to the launch of their correlation.
    let mut by_corr: HashMap<i64, usize> = HashMap::default();
    for (k, l) in launches.iter().enumerate() {
        if let Some(c) = l.corr {
            by_corr.insert(c, k);
        }
    }
    let mut staled = Vec::new();
    for (d, dv) in devices.iter().enumerate() {
        match dv.corr.and_then(|c| by_corr.get(&c)) {
            Some(&k) => launches[k].device.push(d),
            None if dv.kernel => staled.push(d),
            None => {}
        }
    }

    // Trees, per thread: roots' children, by time.
    let mut roots: Vec<Vec<usize>> = Vec::with_capacity(threads.len());
    let mut dropped = 0usize;
    for (_, list) in &mut threads {
        list.sort_by_key(|&n| (nodes[n].start, std::cmp::Reverse(nodes[n].end)));
        let mut top = Vec::new();
        let mut stack: Vec<usize> = Vec::new();
        for &n in list.iter() {
            loop {
                match stack.last() {
                    None => {
                        top.push(n);
                        stack.push(n);
                        break;
                    }
                    Some(&t) if nodes[n].start < nodes[t].end => {
                        if nodes[n].end <= nodes[t].end {
                            nodes[t].children.push(n);
                            stack.push(n);
                        } else {
                            dropped += 1;
                        }
                        break;
                    }
                    Some(_) => {
                        stack.pop();
                    }
                }
            }
        }
        roots.push(top);
    }
    if dropped > 0 {
        notes.push(format!("{dropped} slices cross the end of the slice they start in on their thread and are left out of the operator tree (as the PyTorch TensorBoard plugin leaves them out)."));
    }

    // Launches to operators: by External id, else (ids that name no operator) the innermost
    // operator around them on their thread; id 0 to none.
    let mut by_ext: HashMap<i64, usize> = HashMap::default();
    for (_, list) in threads.iter() {
        for &n in list {
            if let Some(e) = nodes[n].ext {
                by_ext.entry(e).or_insert(n);
            }
        }
    }
    let mut root_launches: Vec<Vec<usize>> = vec![Vec::new(); threads.len()];
    let mut by_nesting = 0usize;
    for (k, l) in launches.iter().enumerate() {
        match l.ext {
            Some(e) if e != 0 => match by_ext.get(&e) {
                Some(&n) => nodes[n].runtimes.push(k),
                None => match innermost(&nodes, &roots[l.line], l.start, l.end) {
                    Some(n) => {
                        nodes[n].runtimes.push(k);
                        by_nesting += 1;
                    }
                    None => root_launches[l.line].push(k),
                },
            },
            _ => root_launches[l.line].push(k),
        }
    }
    if by_nesting > 0 {
        notes.push(format!("{by_nesting} of {} runtime calls carry an External id that names no operator (PyTorch 1.10 and later number launches on their own); each was given to the innermost operator open around it on its thread. The PyTorch TensorBoard plugin attributes them to no operator.", launches.len()));
    }

    // An operator whose only child is an operator of its name: the child's place taken.
    fn dedup(nodes: &mut Vec<Node>, n: usize) {
        loop {
            let only = (nodes[n].children.len() == 1).then(|| nodes[n].children[0]);
            match only {
                Some(c)
                    if nodes[c].name == nodes[n].name
                        && nodes[n].kind == NodeKind::Operator
                        && nodes[c].kind == NodeKind::Operator =>
                {
                    nodes[n].children = std::mem::take(&mut nodes[c].children);
                    nodes[n].runtimes = std::mem::take(&mut nodes[c].runtimes);
                    // The child is gone from the tree.
                    nodes[c].kind = NodeKind::Python;
                }
                _ => break,
            }
        }
        let children = nodes[n].children.clone();
        for c in children {
            dedup(nodes, c);
        }
    }
    for r in &roots {
        for &n in r {
            dedup(&mut nodes, n);
        }
    }

    // Device and Tensor Core time of each launch (whether a kernel uses Tensor Cores, once per
    // name: the patterns are searched in long names).
    let mut tc_of: HashMap<StrId, bool> = HashMap::default();
    for dv in devices.iter().filter(|d| d.kernel) {
        tc_of
            .entry(dv.name)
            .or_insert_with(|| tc_kernel(p.str(dv.name)));
    }
    let launch_device: Vec<(i64, i64)> = launches
        .iter()
        .map(|l| {
            l.device.iter().fold((0, 0), |(d, tc), &i| {
                let dv = &devices[i];
                let dur = dv.end - dv.start;
                let is_tc = dv.kernel && tc_of.get(&dv.name).copied().unwrap_or(false);
                (d + dur, tc + if is_tc { dur } else { 0 })
            })
        })
        .collect();
    fn fill(nodes: &mut Vec<Node>, n: usize, launches: &[Launch], ld: &[(i64, i64)]) {
        let children = nodes[n].children.clone();
        for &c in &children {
            fill(nodes, c, launches, ld);
        }
        let mut host_self = nodes[n].end - nodes[n].start;
        let (mut dt, mut tct) = (0i64, 0i64);
        let mut eligible = nodes[n].tc_eligible;
        let op = nodes[n].kind == NodeKind::Operator;
        for &c in &children {
            host_self -= nodes[c].end - nodes[c].start;
            dt += nodes[c].device_total;
            tct += nodes[c].tc_total;
            eligible |= op && nodes[c].tc_eligible;
        }
        let (mut ds, mut tcs) = (0i64, 0i64);
        for &r in &nodes[n].runtimes {
            host_self -= launches[r].end - launches[r].start;
            ds += ld[r].0;
            tcs += ld[r].1;
            eligible |= op && ld[r].1 > 0;
        }
        let nd = &mut nodes[n];
        nd.host_self = host_self;
        nd.device_self = ds;
        nd.device_total = dt + ds;
        nd.tc_self = tcs;
        nd.tc_total = tct + tcs;
        nd.tc_eligible = eligible;
    }
    for r in &roots {
        for &n in r {
            fill(&mut nodes, n, &launches, &launch_device);
        }
    }

    // Operators in the tree (reached from a root), and who launched each kernel.
    let mut in_tree: Vec<usize> = Vec::new();
    let mut kernel_op: Vec<(usize, Option<usize>)> = Vec::new();
    fn walk(
        nodes: &[Node],
        n: usize,
        launches: &[Launch],
        in_tree: &mut Vec<usize>,
        kop: &mut Vec<(usize, Option<usize>)>,
    ) {
        for &c in &nodes[n].children {
            walk(nodes, c, launches, in_tree, kop);
        }
        for &r in &nodes[n].runtimes {
            for &d in &launches[r].device {
                kop.push((d, Some(n)));
            }
        }
        in_tree.push(n);
    }
    for r in &roots {
        for &n in r {
            walk(&nodes, n, &launches, &mut in_tree, &mut kernel_op);
        }
    }
    // (A thread without operators has no tree: its calls count nowhere, as in the plugin.)
    for (list, (_, ops)) in root_launches.iter().zip(&threads) {
        if ops.is_empty() {
            continue;
        }
        for &r in list {
            for &d in &launches[r].device {
                kernel_op.push((d, None));
            }
        }
    }
    // Kernels no runtime call launched: under the root of the thread with the steps (none
    // without steps, as in the plugin).
    if nodes.iter().any(|n| n.kind == NodeKind::Step) {
        for &d in &staled {
            kernel_op.push((d, None));
        }
    }
    kernel_op.retain(|(d, _)| devices[*d].kernel);
    let is_view_op = |n: &Node| {
        let name = p.str(n.name);
        n.kind == NodeKind::Operator
            && name != "DataParallel.forward"
            && name != "DistributedDataParallel.forward"
            && !name.starts_with("Optimizer.")
    };
    let ops: Vec<usize> = in_tree
        .iter()
        .copied()
        .filter(|&n| is_view_op(&nodes[n]))
        .collect();

    let aggregate = |with_shape: bool| -> Vec<OperatorRow> {
        let shape_of = |n: &Node| if with_shape { n.shape } else { None };
        // Per call stack (where recorded): the same sums, under their operator's row.
        let mut stacks: HashMap<(StrId, Option<StrId>), Vec<CallStackRow>> = HashMap::default();
        for (key, first, sums) in sum_ops(
            &nodes,
            ops.iter()
                .filter_map(|&n| Some(((nodes[n].name, shape_of(&nodes[n]), nodes[n].stack?), n))),
        ) {
            stacks
                .entry((key.0, key.1))
                .or_default()
                .push(CallStackRow {
                    call_stack: p.str(key.2).to_string(),
                    calls: sums.calls,
                    device_self_ps: sums.device_self,
                    device_total_ps: sums.device_total,
                    host_self_ps: sums.host_self,
                    host_total_ps: sums.host_total,
                    tc_eligible: nodes[first].tc_eligible,
                    tc_self_ratio: sums.tc_self_ratio(),
                    tc_total_ratio: sums.tc_total_ratio(),
                });
        }
        let mut rows: Vec<OperatorRow> = sum_ops(
            &nodes,
            ops.iter()
                .map(|&n| ((nodes[n].name, shape_of(&nodes[n])), n)),
        )
        .into_iter()
        .map(|(key, first, sums)| OperatorRow {
            name: p.str(key.0).to_string(),
            input_shape: with_shape.then(|| {
                let v = key
                    .1
                    .and_then(|s| serde_json::from_str(p.str(s)).ok())
                    .unwrap_or(serde_json::Value::Array(Vec::new()));
                let mut out = String::new();
                python_repr(&v, &mut out);
                out
            }),
            calls: sums.calls,
            device_self_ps: sums.device_self,
            device_total_ps: sums.device_total,
            host_self_ps: sums.host_self,
            host_total_ps: sums.host_total,
            tc_eligible: nodes[first].tc_eligible,
            tc_self_ratio: sums.tc_self_ratio(),
            tc_total_ratio: sums.tc_total_ratio(),
            call_stacks: stacks.remove(&key).unwrap_or_default(),
        })
        .collect();
        rows.sort_by(|a, b| {
            b.device_self_ps
                .cmp(&a.device_self_ps)
                .then(b.host_self_ps.cmp(&a.host_self_ps))
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.input_shape.cmp(&b.input_shape))
        });
        rows
    };
    let operators_by_name = aggregate(false);
    let operators_by_name_and_shape = aggregate(true);

    // Kernels by name: every kernel.
    let groups = group_kernels(
        &devices,
        devices
            .iter()
            .enumerate()
            .filter(|(_, d)| d.kernel)
            .map(|(i, d)| (d.name, i)),
    );
    let mut by_name: Vec<KernelRow> = groups
        .into_iter()
        .map(|(_, first, f)| {
            let name = p.str(devices[first].name);
            KernelRow {
                name: name.to_string(),
                tc_used: tc_kernel(name),
                calls: f.calls,
                total_ps: f.total,
                mean_ps: f.mean(),
                max_ps: f.max,
                min_ps: f.min,
                mean_blocks_per_sm: f.weighted(f.blocks),
                mean_occupancy_percent: f.weighted(f.occupancy),
            }
        })
        .collect();
    by_name.sort_by(|a, b| {
        b.total_ps
            .cmp(&a.total_ps)
            .then_with(|| a.name.cmp(&b.name))
    });
    let all_kernels: i64 = by_name.iter().map(|r| r.total_ps).sum();
    let tc_kernels: i64 = by_name
        .iter()
        .filter(|r| r.tc_used)
        .map(|r| r.total_ps)
        .sum();

    // Kernels by kernel and operator: those the tree attributes.
    let groups = group_kernels(
        &devices,
        kernel_op.iter().map(|&(d, op)| {
            let dv = &devices[d];
            (
                (
                    dv.name,
                    op.map(|o| nodes[o].name),
                    dv.grid,
                    dv.block,
                    dv.regs.unwrap_or(0),
                    dv.smem.unwrap_or(0),
                ),
                d,
            )
        }),
    );
    // The operator of each attributed kernel (each kernel is attributed once).
    let op_of: HashMap<usize, Option<usize>> = kernel_op.iter().copied().collect();
    let mut by_op: Vec<KernelOpRow> = groups
        .into_iter()
        .map(|(_, first, f)| {
            let (dv, op) = (&devices[first], op_of.get(&first).copied().flatten());
            let name = p.str(dv.name);
            KernelOpRow {
                name: name.to_string(),
                op_name: op.map_or("CallTreeRoot".to_string(), |o| {
                    p.str(nodes[o].name).to_string()
                }),
                grid: int_list(p, dv.grid),
                block: int_list(p, dv.block),
                registers_per_thread: dv.regs,
                shared_memory_bytes: dv.smem,
                tc_used: tc_kernel(name),
                op_tc_eligible: op.is_some_and(|o| nodes[o].tc_eligible),
                calls: f.calls,
                total_ps: f.total,
                mean_ps: f.mean(),
                max_ps: f.max,
                min_ps: f.min,
                mean_blocks_per_sm: f.weighted(f.blocks),
                mean_occupancy_percent: f.weighted(f.occupancy),
            }
        })
        .collect();
    by_op.sort_by(|a, b| {
        b.total_ps
            .cmp(&a.total_ps)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.op_name.cmp(&b.op_name))
    });

    // Kernel time of the innermost Tensor-Core-eligible operators, of the operators' kernel
    // time (launches of operators only, not of no operator).
    fn bottom(nodes: &[Node], n: usize, out: &mut Vec<usize>) -> bool {
        let mut below = false;
        for &c in &nodes[n].children {
            below |= bottom(nodes, c, out);
        }
        if nodes[n].tc_eligible && !below {
            out.push(n);
            return true;
        }
        below
    }
    let mut eligible = Vec::new();
    for r in &roots {
        for &n in r {
            bottom(&nodes, n, &mut eligible);
        }
    }
    let kernel_time = |ns: &[usize]| -> i64 {
        ns.iter()
            .flat_map(|&n| &nodes[n].runtimes)
            .flat_map(|&r| &launches[r].device)
            .filter(|&&d| devices[d].kernel)
            .map(|&d| devices[d].end - devices[d].start)
            .sum()
    };
    let op_kernels = kernel_time(&ops);
    Some(TorchViews {
        operators_by_name,
        operators_by_name_and_shape,
        kernels_by_name: by_name,
        kernels_by_name_and_op: by_op,
        tc_used_ratio: (all_kernels > 0).then(|| tc_kernels as f64 / all_kernels as f64),
        tc_eligible_ops_kernel_ratio: if op_kernels > 0 {
            kernel_time(&eligible) as f64 / op_kernels as f64
        } else {
            0.0
        },
        notes,
    })
}

/// The sums of a group of operators.
#[derive(Default)]
struct OpSums {
    calls: u64,
    host_total: i64,
    host_self: i64,
    device_total: i64,
    device_self: i64,
    tc_self: i64,
    tc_total: i64,
}

impl OpSums {
    fn tc_self_ratio(&self) -> f64 {
        if self.device_self > 0 {
            self.tc_self as f64 / self.device_self as f64
        } else {
            0.0
        }
    }

    fn tc_total_ratio(&self) -> f64 {
        if self.device_total > 0 {
            self.tc_total as f64 / self.device_total as f64
        } else {
            0.0
        }
    }
}

/// `items` (key, index) grouped by key in first-seen order, each group's value started by
/// `start` and then given each index by `add`: each key, its first index and the value.
fn grouped<K: std::hash::Hash + Eq + Copy, V>(
    items: impl Iterator<Item = (K, usize)>,
    start: impl Fn() -> V,
    mut add: impl FnMut(&mut V, usize),
) -> Vec<(K, usize, V)> {
    let mut out: Vec<(K, usize, V)> = Vec::new();
    let mut at: HashMap<K, usize> = HashMap::default();
    for (key, x) in items {
        let i = *at.entry(key).or_insert_with(|| {
            out.push((key, x, start()));
            out.len() - 1
        });
        add(&mut out[i].2, x);
    }
    out
}

/// The operators `items` names (key, node), summed by key.
fn sum_ops<K: std::hash::Hash + Eq + Copy>(
    nodes: &[Node],
    items: impl Iterator<Item = (K, usize)>,
) -> Vec<(K, usize, OpSums)> {
    grouped(items, OpSums::default, |s, n| {
        let nd = &nodes[n];
        s.calls += 1;
        s.host_total += nd.end - nd.start;
        s.host_self += nd.host_self;
        s.device_total += nd.device_total;
        s.device_self += nd.device_self;
        s.tc_self += nd.tc_self;
        s.tc_total += nd.tc_total;
    })
}

/// Calls, time and duration-weighted blocks per SM and occupancy of a group of kernels (a
/// kernel without a figure counts 0).
struct Figures {
    calls: u64,
    total: i64,
    max: i64,
    min: i64,
    blocks: f64,
    occupancy: f64,
}

impl Figures {
    fn mean(&self) -> f64 {
        self.total as f64 / self.calls.max(1) as f64
    }

    fn weighted(&self, sum: f64) -> f64 {
        if self.total > 0 {
            sum / self.total as f64
        } else {
            0.0
        }
    }
}

/// The kernels `items` names (key, device event), grouped by key.
fn group_kernels<K: std::hash::Hash + Eq + Copy>(
    devices: &[DeviceEv],
    items: impl Iterator<Item = (K, usize)>,
) -> Vec<(K, usize, Figures)> {
    let start = || Figures {
        calls: 0,
        total: 0,
        max: i64::MIN,
        min: i64::MAX,
        blocks: 0.0,
        occupancy: 0.0,
    };
    grouped(items, start, |f, d| {
        let dv = &devices[d];
        let dur = dv.end - dv.start;
        f.calls += 1;
        f.total += dur;
        f.max = f.max.max(dur);
        f.min = f.min.min(dur);
        f.blocks += dv.blocks.unwrap_or(0.0) * dur as f64;
        f.occupancy += dv.occupancy.unwrap_or(0.0) * dur as f64;
    })
}

/// The innermost node of a thread's tree around `[s, e)`.
fn innermost(nodes: &[Node], roots: &[usize], s: i64, e: i64) -> Option<usize> {
    let mut level = roots;
    let mut found = None;
    loop {
        let i = level.partition_point(|&n| nodes[n].start <= s);
        let Some(&n) = i.checked_sub(1).and_then(|i| level.get(i)) else {
            return found;
        };
        if nodes[n].end < e {
            return found;
        }
        if nodes[n].kind != NodeKind::Python || found.is_none() {
            found = Some(n);
        }
        level = &nodes[n].children;
    }
}
