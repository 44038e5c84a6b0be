//! The rows of the operator and kernel views, summed from the trees ([`super::tree::Tree`]).

use xlens_model::{Profile, StrId};

use super::events::{DeviceEv, Node, NodeKind};
use super::tree::Tree;
use super::{tc_kernel, CallStackRow, KernelOpRow, KernelRow, OperatorRow, TorchViews};

type HashMap<K, V> = crate::base::fx::FxMap<K, V>;

/// The views of the trees.
pub(super) fn views(p: &Profile, tree: Tree) -> TorchViews {
    let Tree {
        nodes,
        launches,
        devices,
        roots,
        in_tree,
        kernel_op,
        notes,
    } = tree;
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
    TorchViews {
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
    }
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
