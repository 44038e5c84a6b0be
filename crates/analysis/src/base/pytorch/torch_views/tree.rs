//! The operator tree of each thread: device events to their launch, launches to their
//! operator, and each operator's host and device time ([`Tree`]).

use xlens_model::{Profile, StrId};

use super::events::{DeviceEv, Events, Launch, Node, NodeKind};
use super::tc_kernel;

type HashMap<K, V> = crate::base::fx::FxMap<K, V>;

/// The trees, their figures filled in, and who launched each kernel.
pub(super) struct Tree {
    pub(super) nodes: Vec<Node>,
    pub(super) launches: Vec<Launch>,
    pub(super) devices: Vec<DeviceEv>,
    /// Per thread, its top-level nodes in time order.
    pub(super) roots: Vec<Vec<usize>>,
    /// The nodes reached from a root, children before their parent.
    pub(super) in_tree: Vec<usize>,
    /// Each attributed kernel (a device event) and its operator (`None`: no operator).
    pub(super) kernel_op: Vec<(usize, Option<usize>)>,
    pub(super) notes: Vec<String>,
}

/// Builds the trees of `events`.
pub(super) fn build(p: &Profile, events: Events) -> Tree {
    let Events {
        mut nodes,
        mut threads,
        mut launches,
        devices,
    } = events;
    let mut notes = Vec::new();

    // Device events to the launch of their correlation.
    let mut by_corr: HashMap<i64, usize> =
        HashMap::with_capacity_and_hasher(launches.len(), Default::default());
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
    let mut by_ext: HashMap<i64, usize> =
        HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
    for (_, list) in threads.iter() {
        for &n in list {
            if let Some(e) = nodes[n].ext {
                by_ext.entry(e).or_insert(n);
            }
        }
    }
    let mut root_launches: Vec<Vec<usize>> = vec![Vec::new(); threads.len()];
    let mut paths: Vec<Vec<(usize, usize)>> = vec![Vec::new(); threads.len()];
    let mut by_nesting = 0usize;
    for (k, l) in launches.iter().enumerate() {
        match l.ext {
            Some(e) if e != 0 => match by_ext.get(&e) {
                Some(&n) => nodes[n].runtimes.push(k),
                None => match innermost(&nodes, &roots[l.line], &mut paths[l.line], l.start, l.end)
                {
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
    Tree {
        nodes,
        launches,
        devices,
        roots,
        in_tree,
        kernel_op,
        notes,
    }
}

/// The innermost node of a thread's tree around `[s, e)`: at each level the last node starting
/// at or before `s`, while it ends at or after `e`; the deepest of them that is not a Python
/// slice, else the outermost. `path` holds the last answer's nodes on this thread, each with its
/// place among its siblings, and the levels where that choice still holds are kept (a thread's
/// calls come in time order, mostly inside the ops of the one before): the answer is the one a
/// descent from the roots finds.
fn innermost(
    nodes: &[Node],
    roots: &[usize],
    path: &mut Vec<(usize, usize)>,
    s: i64,
    e: i64,
) -> Option<usize> {
    // The siblings among which level `k` of `path` chooses.
    fn level_of<'a>(
        nodes: &'a [Node],
        roots: &'a [usize],
        path: &[(usize, usize)],
        k: usize,
    ) -> &'a [usize] {
        match k.checked_sub(1) {
            None => roots,
            Some(up) => &nodes[path[up].0].children,
        }
    }
    let mut keep = 0;
    while keep < path.len() {
        let level = level_of(nodes, roots, path, keep);
        let (n, i) = path[keep];
        let chosen = nodes[n].start <= s
            && level.get(i + 1).is_none_or(|&m| nodes[m].start > s)
            && nodes[n].end >= e;
        if !chosen {
            break;
        }
        keep += 1;
    }
    path.truncate(keep);
    loop {
        let level = level_of(nodes, roots, path, path.len());
        let i = level.partition_point(|&n| nodes[n].start <= s);
        let Some(i) = i.checked_sub(1) else { break };
        let n = level[i];
        if nodes[n].end < e {
            break;
        }
        path.push((n, i));
    }
    path.iter()
        .rev()
        .find(|&&(n, _)| nodes[n].kind != NodeKind::Python)
        .or(path.first())
        .map(|&(n, _)| n)
}
