//! The graph viewer: an HLO instruction's neighbourhood as a graph and as SVG laid out here.
//!
//! Search an instruction by name across every HLO module of a profile (narrowed with a module
//! name when several have it), take its operands and users up to `radius` hops in its
//! computation, expand the searched fusion into its fused computation's instructions (the body
//! drawn inside a box named after the fusion, wired to the fusion's operands and users; other
//! fusions are single nodes, expanded by selecting them), and lay
//! it out in layers: longest-path layering from the sources down (operands above users), then a
//! few barycentre sweeps to order each layer. No external layout engine, nothing fetched.

use serde::Serialize;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write;
use xlens_proto::xla::{HloComputationProto, HloInstructionProto};

use crate::base::context::{Analysis, Run};
use crate::base::fmt::esc;
use crate::base::hlo::cost_model::CostModel;
use crate::base::hlo::modules::{shape_text, shape_text_no_layout, HloIndex, HloModule};
use crate::base::peaks::UserPeaks;
use crate::base::tool::{Tool, ToolError};

/// Hops followed when none is given.
pub const DEFAULT_RADIUS: u32 = 2;
/// Largest radius accepted (larger values are clamped and said so).
pub const MAX_RADIUS: u32 = 16;
/// Most nodes drawn; beyond it the graph is cut at the last complete hop and says so.
pub const MAX_NODES: usize = 400;
/// Most candidates listed when the name is not found exactly.
pub const MAX_CANDIDATES: usize = 50;

/// One instruction in the drawing.
#[derive(Debug, Clone, Serialize)]
pub struct GraphNode {
    /// Unique instruction id within the module.
    pub id: i64,
    pub name: String,
    pub opcode: String,
    /// Shape without layout (`f32[32,256]`).
    pub shape: String,
    /// Shape with layout, as XLA prints it.
    pub shape_with_layout: String,
    /// The computation holding it.
    pub computation: String,
    /// The fusion whose body this instruction is drawn in, when expanded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fusion: Option<String>,
    /// Hops from the searched instruction (0 for it; body instructions take their fusion's).
    pub distance: u32,
    pub is_focus: bool,
    /// A fusion whose body is drawn (the node itself then only labels the box).
    pub expanded: bool,
    /// `op_name` from the metadata (framework provenance), when present.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub op_name: String,
    /// From the cost model.
    pub flops: i64,
    pub bytes_accessed: i64,
    /// Layout: layer (row) and position; box in SVG pixels.
    pub layer: u32,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// Data flows `from` (an operand) `to` (its user).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GraphEdge {
    pub from: i64,
    pub to: i64,
    /// Which operand of `to` this is.
    pub operand_index: usize,
}

/// An instruction that matched the search.
#[derive(Debug, Clone, Serialize)]
pub struct OpMatch {
    pub module: String,
    pub name: String,
    pub opcode: String,
    pub computation: String,
}

/// The graph viewer's answer.
#[derive(Debug, Clone, Serialize)]
pub struct GraphViewer {
    /// The name searched for.
    pub query: Option<String>,
    pub radius: u32,
    /// Module and instruction drawn.
    pub module: Option<String>,
    pub focus: Option<String>,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
    /// The drawing (empty when nothing is drawn).
    pub svg: String,
    /// Other instructions with the same name in other modules (select one with `--module`).
    pub also_in: Vec<OpMatch>,
    /// When the name is not an instruction: instructions whose name contains it.
    pub candidates: Vec<OpMatch>,
    pub candidate_count: usize,
    /// True when [`MAX_NODES`] cut the drawing.
    pub truncated: bool,
    /// What the user should know (not found, radius clamped, cut, ...).
    pub messages: Vec<String>,
    pub module_count: usize,
    /// Where to start when no op is asked for (`None` when one is, or without HLO modules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<Landing>,
}

/// Ops listed per module on the landing list.
pub const LANDING_TOP_OPS: usize = 5;
/// Most op names offered as search suggestions.
pub const MAX_SUGGESTIONS: usize = 5000;

/// The graph viewer's starting points, from the first host with HLO modules: modules by op
/// self time with their most expensive ops, the modules that ran no op (with their entry
/// computation's root), and op names to suggest (by time).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Landing {
    pub host: String,
    pub modules: Vec<LandingModule>,
    pub idle_modules: Vec<IdleModule>,
    /// Op names by total time, at most [`MAX_SUGGESTIONS`] of `op_names_total`.
    pub op_names: Vec<String>,
    pub op_names_total: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct LandingModule {
    pub name: String,
    /// Self time of the module's ops.
    pub time_ps: i64,
    pub op_count: usize,
    /// Its most expensive ops by total time, at most [`LANDING_TOP_OPS`].
    pub top_ops: Vec<LandingOp>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LandingOp {
    pub name: String,
    pub opcode: String,
    pub total_time_ps: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct IdleModule {
    pub name: String,
    /// The root instruction of its entry computation.
    pub root: String,
}

/// The landing list of the first host of `run` that has HLO modules.
pub fn landing(run: &Run) -> Option<Landing> {
    let (h, a) = run.hosts.iter().find_map(|h| {
        let a = h.analysis.as_ref().ok()?;
        (!a.hlo().modules.is_empty()).then_some((h, a))
    })?;
    let hlo = a.hlo();
    let by_name: HashMap<&str, &HloModule> =
        hlo.modules.iter().map(|m| (m.name.as_str(), m)).collect();
    let table = a.hlo_ops(UserPeaks::default());
    // Ops that are instructions of a module, by total time (largest first).
    let mut ops: Vec<_> = table
        .ops
        .iter()
        .filter(|o| {
            by_name
                .get(o.program.as_str())
                .is_some_and(|m| m.instruction_by_name(&o.name).is_some())
        })
        .collect();
    ops.sort_by(|x, y| {
        y.total_time_ps
            .cmp(&x.total_time_ps)
            .then_with(|| x.name.cmp(&y.name))
    });
    let mut modules: Vec<LandingModule> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for o in &ops {
        let i = *index.entry(o.program.as_str()).or_insert_with(|| {
            modules.push(LandingModule {
                name: o.program.clone(),
                time_ps: 0,
                op_count: 0,
                top_ops: Vec::new(),
            });
            modules.len() - 1
        });
        let m = &mut modules[i];
        m.time_ps += o.self_time_ps;
        m.op_count += 1;
        if m.top_ops.len() < LANDING_TOP_OPS {
            m.top_ops.push(LandingOp {
                name: o.name.clone(),
                opcode: o.opcode.clone().unwrap_or_default(),
                total_time_ps: o.total_time_ps,
            });
        }
    }
    modules.sort_by(|x, y| y.time_ps.cmp(&x.time_ps).then_with(|| x.name.cmp(&y.name)));
    let idle_modules = hlo
        .modules
        .iter()
        .filter(|m| !index.contains_key(m.name.as_str()))
        .filter_map(|m| {
            let root = m.entry_computation()?.root_id;
            Some(IdleModule {
                name: m.name.clone(),
                root: m.instruction(root)?.name.clone(),
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let names: Vec<&str> = ops
        .iter()
        .map(|o| o.name.as_str())
        .filter(|n| seen.insert(*n))
        .collect();
    Some(Landing {
        host: h.host().to_string(),
        modules,
        idle_modules,
        op_names_total: names.len(),
        op_names: names
            .into_iter()
            .take(MAX_SUGGESTIONS)
            .map(str::to_string)
            .collect(),
    })
}

/// Runs the graph viewer on a profile.
pub fn graph_viewer(
    a: &Analysis,
    op: Option<&str>,
    module: Option<&str>,
    radius: Option<u32>,
) -> GraphViewer {
    graph_viewer_of(&a.hlo(), op, module, radius)
}

fn instructions(
    m: &HloModule,
) -> impl Iterator<Item = (&HloComputationProto, &HloInstructionProto)> {
    m.proto
        .hlo_module
        .as_ref()
        .into_iter()
        .flat_map(|hm| hm.computations.iter())
        .flat_map(|c| c.instructions.iter().map(move |i| (c, i)))
}

fn op_match(m: &HloModule, c: &HloComputationProto, i: &HloInstructionProto) -> OpMatch {
    OpMatch {
        module: m.name.clone(),
        name: i.name.clone(),
        opcode: i.opcode.clone(),
        computation: c.name.clone(),
    }
}

/// [`graph_viewer`] over an already built index.
pub fn graph_viewer_of(
    idx: &HloIndex,
    op: Option<&str>,
    module: Option<&str>,
    radius: Option<u32>,
) -> GraphViewer {
    let mut out = GraphViewer {
        query: op.map(str::to_string),
        radius: radius.unwrap_or(DEFAULT_RADIUS).min(MAX_RADIUS),
        module: None,
        focus: None,
        nodes: Vec::new(),
        edges: Vec::new(),
        svg: String::new(),
        also_in: Vec::new(),
        candidates: Vec::new(),
        candidate_count: 0,
        truncated: false,
        messages: Vec::new(),
        module_count: idx.modules.len(),
        landing: None,
    };
    if radius.is_some_and(|r| r > MAX_RADIUS) {
        out.messages
            .push(format!("radius clamped to {MAX_RADIUS} hops"));
    }
    if idx.modules.is_empty() {
        out.messages
            .push("the profile holds no HLO modules (no `Hlo Proto` in /host:metadata)".into());
        return out;
    }
    let modules: Vec<&HloModule> = match module {
        Some(q) => match idx.find(q) {
            Ok(m) => vec![m],
            Err(e) => {
                out.messages.push(e);
                return out;
            }
        },
        None => idx.modules.iter().collect(),
    };
    let Some(query) = op.map(str::trim).filter(|q| !q.is_empty()) else {
        out.messages.push(
            "search an HLO instruction by name (e.g. `fusion.3`, `dot.2`) to draw its neighbourhood"
                .into(),
        );
        return out;
    };
    let query = query.trim_start_matches('%');
    let exact: Vec<(&HloModule, &HloInstructionProto)> = modules
        .iter()
        .filter_map(|m| m.instruction_by_name(query).map(|i| (*m, i)))
        .collect();
    let Some(&(m, focus)) = exact.first() else {
        let needle = query.to_lowercase();
        for m in &modules {
            for (c, i) in instructions(m) {
                if i.name.to_lowercase().contains(&needle) {
                    out.candidate_count += 1;
                    if out.candidates.len() < MAX_CANDIDATES {
                        out.candidates.push(op_match(m, c, i));
                    }
                }
            }
        }
        out.messages.push(format!(
            "no instruction named `{query}` in {}; {} instruction(s) contain it{}",
            module.unwrap_or("any module"),
            out.candidate_count,
            if out.candidate_count > MAX_CANDIDATES {
                format!(" (first {MAX_CANDIDATES} listed)")
            } else {
                String::new()
            }
        ));
        return out;
    };
    for (om, oi) in exact.iter().skip(1) {
        if let Some(c) = om.computation_of(oi.id) {
            out.also_in.push(op_match(om, c, oi));
        }
    }
    if !out.also_in.is_empty() {
        out.messages.push(format!(
            "`{query}` is also in {} other module(s); showing {} (choose with the module option)",
            out.also_in.len(),
            m.name
        ));
    }
    out.module = Some(m.name.clone());
    out.focus = Some(focus.name.clone());
    build(&mut out, m, focus);
    out
}

/// Users of each instruction of a computation, in instruction order.
fn users_map(c: &HloComputationProto) -> HashMap<i64, Vec<i64>> {
    let mut m: HashMap<i64, Vec<i64>> = HashMap::new();
    for ins in &c.instructions {
        for &o in &ins.operand_ids {
            let v = m.entry(o).or_default();
            if !v.contains(&ins.id) {
                v.push(ins.id);
            }
        }
    }
    m
}

fn build(out: &mut GraphViewer, m: &HloModule, focus: &HloInstructionProto) {
    let Some(comp) = m.computation_of(focus.id) else {
        return;
    };
    let users = users_map(comp);
    // Breadth-first over operands and users, hop by hop, within the focus's computation.
    let mut dist: HashMap<i64, u32> = HashMap::new();
    let mut order: Vec<i64> = Vec::new();
    dist.insert(focus.id, 0);
    order.push(focus.id);
    let mut queue = VecDeque::from([focus.id]);
    while let Some(id) = queue.pop_front() {
        let d = dist.get(&id).copied().unwrap_or(0);
        if d >= out.radius {
            continue;
        }
        let Some(ins) = m.instruction(id) else {
            continue;
        };
        let next = ins
            .operand_ids
            .iter()
            .chain(users.get(&id).into_iter().flatten());
        for &n in next {
            if dist.contains_key(&n) {
                continue;
            }
            if order.len() >= MAX_NODES {
                out.truncated = true;
                break;
            }
            dist.insert(n, d + 1);
            order.push(n);
            queue.push_back(n);
        }
    }
    if out.truncated {
        out.messages.push(format!(
            "the neighbourhood has more than {MAX_NODES} instructions; drawn: the {MAX_NODES} nearest"
        ));
    }
    // The searched fusion is drawn with its body; other fusions are single nodes (selecting one
    // draws it expanded).
    let fusions: Vec<i64> = if focus.opcode == "fusion" {
        vec![focus.id]
    } else {
        Vec::new()
    };
    let mut cost = CostModel::new(m);
    let mut nodes: Vec<GraphNode> = Vec::new();
    let mut present: HashSet<i64> = HashSet::new();
    let mut add_node = |nodes: &mut Vec<GraphNode>,
                        cost: &mut CostModel,
                        ins: &HloInstructionProto,
                        comp_name: &str,
                        fusion: Option<&str>,
                        d: u32| {
        if !present.insert(ins.id) {
            return;
        }
        let c = cost.cost(ins);
        nodes.push(GraphNode {
            id: ins.id,
            name: ins.name.clone(),
            opcode: ins.opcode.clone(),
            shape: ins
                .shape
                .as_ref()
                .map(shape_text_no_layout)
                .unwrap_or_default(),
            shape_with_layout: ins.shape.as_ref().map(shape_text).unwrap_or_default(),
            computation: comp_name.to_string(),
            fusion: fusion.map(str::to_string),
            distance: d,
            is_focus: ins.id == focus.id,
            expanded: false,
            op_name: ins
                .metadata
                .as_ref()
                .map(|md| md.op_name.clone())
                .unwrap_or_default(),
            flops: c.flops,
            bytes_accessed: c.bytes_accessed,
            layer: 0,
            x: 0.0,
            y: 0.0,
            width: 0.0,
            height: 0.0,
        });
    };
    for &id in &order {
        if let Some(ins) = m.instruction(id) {
            add_node(
                &mut nodes,
                &mut cost,
                ins,
                &comp.name,
                None,
                dist.get(&id).copied().unwrap_or(0),
            );
        }
    }
    let in_view: HashSet<i64> = order.iter().copied().collect();
    let mut edges: Vec<GraphEdge> = Vec::new();
    for &id in &order {
        if let Some(ins) = m.instruction(id) {
            for (k, &o) in ins.operand_ids.iter().enumerate() {
                if in_view.contains(&o) {
                    edges.push(GraphEdge {
                        from: o,
                        to: id,
                        operand_index: k,
                    });
                }
            }
        }
    }
    // Expand fusions: body instructions inside, operands wired to the body's parameters, the
    // body's root wired to the fusion's users.
    for &fid in &fusions {
        let Some(f) = m.instruction(fid) else {
            continue;
        };
        let Some(body) = f
            .called_computation_ids
            .first()
            .and_then(|&c| m.computation(c))
        else {
            continue;
        };
        let d = dist.get(&fid).copied().unwrap_or(0);
        if body.instructions.len() > MAX_NODES {
            out.truncated = true;
            out.messages
                .push(format!("the body of {} is too large to draw here", f.name));
            continue;
        }
        for bi in &body.instructions {
            add_node(&mut nodes, &mut cost, bi, &body.name, Some(&f.name), d);
            for (k, &o) in bi.operand_ids.iter().enumerate() {
                edges.push(GraphEdge {
                    from: o,
                    to: bi.id,
                    operand_index: k,
                });
            }
        }
        if let Some(n) = nodes.iter_mut().find(|n| n.id == fid) {
            n.expanded = true;
        }
        // Rewire: operand k of the fusion feeds parameter k of the body.
        let params: HashMap<i64, i64> = body
            .instructions
            .iter()
            .filter(|i| i.opcode == "parameter")
            .map(|i| (i.parameter_number, i.id))
            .collect();
        let root = if body.root_id != 0 {
            body.root_id
        } else {
            body.instructions.last().map(|i| i.id).unwrap_or(0)
        };
        let mut rewired = Vec::new();
        for e in edges.drain(..) {
            if e.to == fid {
                if let Some(&p) = params.get(&(e.operand_index as i64)) {
                    rewired.push(GraphEdge {
                        from: e.from,
                        to: p,
                        operand_index: 0,
                    });
                    continue;
                }
            }
            if e.from == fid {
                rewired.push(GraphEdge {
                    from: root,
                    to: e.to,
                    operand_index: e.operand_index,
                });
                continue;
            }
            rewired.push(e);
        }
        edges = rewired;
    }
    // An expanded fusion is drawn as its box, not as a node.
    let expanded: HashSet<i64> = nodes.iter().filter(|n| n.expanded).map(|n| n.id).collect();
    let present_ids: HashSet<i64> = nodes.iter().map(|n| n.id).collect();
    edges.retain(|e| {
        present_ids.contains(&e.from)
            && present_ids.contains(&e.to)
            && !expanded.contains(&e.from)
            && !expanded.contains(&e.to)
    });
    edges.dedup();
    layout(&mut nodes, &edges, &expanded);
    out.svg = render_svg(&nodes, &edges, &expanded);
    out.nodes = nodes;
    out.edges = edges;
}

const NODE_H: f64 = 40.0;
const LAYER_GAP: f64 = 48.0;
const NODE_GAP: f64 = 20.0;
const MARGIN: f64 = 24.0;
const CHAR_W: f64 = 6.6;
const BOX_PAD: f64 = 10.0;

fn node_width(n: &GraphNode) -> f64 {
    let line2 = n.opcode.len() + 1 + n.shape.len();
    let chars = n.name.len().max(line2).min(60);
    (chars as f64 * CHAR_W + 16.0).max(70.0)
}

/// Longest-path layering and barycentre ordering; sets each node's layer and box.
fn layout(nodes: &mut [GraphNode], edges: &[GraphEdge], skip: &HashSet<i64>) {
    let pos: HashMap<i64, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let n = nodes.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in edges {
        if let (Some(&a), Some(&b)) = (pos.get(&e.from), pos.get(&e.to)) {
            if a != b {
                preds[b].push(a);
                succs[a].push(b);
            }
        }
    }
    // Kahn's order; nodes left over (a cycle, which HLO never has) keep layer 0.
    let mut indeg: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut layer = vec![0u32; n];
    while let Some(i) = queue.pop_front() {
        for &s in &succs[i] {
            layer[s] = layer[s].max(layer[i] + 1);
            indeg[s] -= 1;
            if indeg[s] == 0 {
                queue.push_back(s);
            }
        }
    }
    // Sources sit just above their first user rather than all on the top row.
    for i in 0..n {
        if preds[i].is_empty() {
            if let Some(m) = succs[i].iter().map(|&s| layer[s]).min() {
                layer[i] = m.saturating_sub(1);
            }
        }
    }
    let drawn: Vec<usize> = (0..n).filter(|&i| !skip.contains(&nodes[i].id)).collect();
    let layers = drawn
        .iter()
        .map(|&i| layer[i])
        .max()
        .map_or(0, |m| m as usize + 1);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for &i in &drawn {
        rows[layer[i] as usize].push(i);
    }
    // Barycentre sweeps: down using predecessors, up using successors.
    let mut rank = vec![0f64; n];
    let set_ranks = |rows: &Vec<Vec<usize>>, rank: &mut Vec<f64>| {
        for row in rows {
            for (k, &i) in row.iter().enumerate() {
                rank[i] = k as f64;
            }
        }
    };
    set_ranks(&rows, &mut rank);
    for sweep in 0..8 {
        let down = sweep % 2 == 0;
        let range: Vec<usize> = if down {
            (1..layers).collect()
        } else {
            (0..layers.saturating_sub(1)).rev().collect()
        };
        for l in range {
            let mut keyed: Vec<(f64, f64, usize)> = rows[l]
                .iter()
                .map(|&i| {
                    let nb = if down { &preds[i] } else { &succs[i] };
                    let nb: Vec<f64> = nb.iter().map(|&j| rank[j]).collect();
                    let bc = if nb.is_empty() {
                        rank[i]
                    } else {
                        nb.iter().sum::<f64>() / nb.len() as f64
                    };
                    (bc, rank[i], i)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
            rows[l] = keyed.into_iter().map(|k| k.2).collect();
            for (k, &i) in rows[l].iter().enumerate() {
                rank[i] = k as f64;
            }
        }
    }
    // Coordinates. Without an expanded fusion, rows are centred on the widest. With one, rows
    // that hold part of its body put the other nodes on the left and the body in a column of its
    // own on the right, so that the fusion's box encloses only its body.
    let body_flags: Vec<bool> = nodes.iter().map(|n| n.fusion.is_some()).collect();
    let in_body = |i: usize| body_flags[i];
    for row in rows.iter_mut() {
        let (outer, body): (Vec<usize>, Vec<usize>) = row.iter().partition(|&&i| !in_body(i));
        *row = outer.into_iter().chain(body).collect();
    }
    let row_width = |r: &[usize]| -> f64 {
        r.iter().map(|&i| node_width(&nodes[i])).sum::<f64>()
            + NODE_GAP * r.len().saturating_sub(1) as f64
    };
    let body_rows: Vec<bool> = rows.iter().map(|r| r.iter().any(|&i| in_body(i))).collect();
    let outer_in_body_rows = rows
        .iter()
        .zip(&body_rows)
        .filter(|(_, b)| **b)
        .map(|(r, _)| {
            let outer: Vec<usize> = r.iter().copied().filter(|&i| !in_body(i)).collect();
            if outer.is_empty() {
                0.0
            } else {
                row_width(&outer) + NODE_GAP + 2.0 * BOX_PAD
            }
        })
        .fold(0.0, f64::max);
    let body_x0 = MARGIN + outer_in_body_rows + BOX_PAD;
    let widths: Vec<f64> = rows
        .iter()
        .zip(&body_rows)
        .map(|(r, &b)| {
            if b {
                let body: Vec<usize> = r.iter().copied().filter(|&i| in_body(i)).collect();
                body_x0 - MARGIN + row_width(&body)
            } else {
                row_width(r)
            }
        })
        .collect();
    let full = widths.iter().copied().fold(0.0, f64::max);
    for (l, row) in rows.iter().enumerate() {
        let mut x = if body_rows[l] {
            MARGIN
        } else {
            MARGIN + (full - widths[l]) / 2.0
        };
        let mut body_started = false;
        for &i in row {
            if body_rows[l] && in_body(i) && !body_started {
                body_started = true;
                x = body_x0;
            }
            let w = node_width(&nodes[i]);
            let nd = &mut nodes[i];
            nd.layer = l as u32;
            nd.x = x;
            nd.y = MARGIN + 14.0 + l as f64 * (NODE_H + LAYER_GAP);
            nd.width = w;
            nd.height = NODE_H;
            x += w + NODE_GAP;
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Fill colour by kind of op.
fn fill(opcode: &str) -> &'static str {
    match opcode {
        "dot" | "convolution" => "#fde2c4",
        "fusion" => "#e6dcf5",
        "parameter" | "constant" | "iota" => "#eeeeee",
        "all-reduce"
        | "all-gather"
        | "reduce-scatter"
        | "all-to-all"
        | "collective-permute"
        | "all-reduce-start"
        | "all-gather-start"
        | "collective-permute-start" => "#f9d0d0",
        "reduce" | "reduce-window" | "scatter" | "select-and-scatter" | "sort" => "#d5ecd4",
        "copy"
        | "copy-start"
        | "copy-done"
        | "transpose"
        | "broadcast"
        | "reshape"
        | "bitcast"
        | "slice"
        | "dynamic-slice"
        | "dynamic-update-slice"
        | "concatenate"
        | "pad"
        | "gather"
        | "tuple"
        | "get-tuple-element" => "#f3f1e0",
        _ => "#d9e8f7",
    }
}

/// The SVG of a laid-out graph (expanded fusions as labelled boxes around their bodies).
pub fn render_svg(nodes: &[GraphNode], edges: &[GraphEdge], expanded: &HashSet<i64>) -> String {
    let drawn: Vec<&GraphNode> = nodes.iter().filter(|n| !expanded.contains(&n.id)).collect();
    let width = drawn.iter().map(|n| n.x + n.width).fold(0.0, f64::max) + MARGIN;
    let height = drawn.iter().map(|n| n.y + n.height).fold(0.0, f64::max) + MARGIN;
    let by_id: HashMap<i64, &GraphNode> = drawn.iter().map(|n| (n.id, *n)).collect();
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="hlo-graph" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="ui-monospace,SFMono-Regular,Menlo,monospace" font-size="11"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>"##,
        w = width.max(100.0),
        h = height.max(60.0)
    );
    // Fusion boxes behind their bodies.
    for f in nodes.iter().filter(|n| expanded.contains(&n.id)) {
        let body: Vec<&&GraphNode> = drawn
            .iter()
            .filter(|n| n.fusion.as_deref() == Some(f.name.as_str()))
            .collect();
        if body.is_empty() {
            continue;
        }
        let x0 = body.iter().map(|n| n.x).fold(f64::MAX, f64::min) - BOX_PAD;
        let y0 = body.iter().map(|n| n.y).fold(f64::MAX, f64::min) - BOX_PAD - 12.0;
        let x1 = body.iter().map(|n| n.x + n.width).fold(0.0, f64::max) + BOX_PAD;
        let y1 = body.iter().map(|n| n.y + n.height).fold(0.0, f64::max) + BOX_PAD;
        let _ = write!(
            s,
            r##"<g class="fusion" data-op="{name}"><title>{name} = {shape} fusion — {flops} FLOPs, {bytes} bytes at its boundary</title><rect x="{x0:.1}" y="{y0:.1}" width="{w:.1}" height="{h:.1}" rx="6" fill="#f6f2fc" stroke="#7a5cb8" stroke-dasharray="5,3"{focus}/><text x="{tx:.1}" y="{ty:.1}" fill="#5b3f99">{label}</text></g>"##,
            name = esc(&f.name),
            shape = esc(&f.shape_with_layout),
            flops = f.flops,
            bytes = f.bytes_accessed,
            w = x1 - x0,
            h = y1 - y0,
            focus = if f.is_focus {
                r#" stroke-width="2.5""#
            } else {
                ""
            },
            tx = x0 + 6.0,
            ty = y0 + 13.0,
            label = esc(&truncate(
                &format!("{} (fusion {})", f.name, f.shape),
                (((x1 - x0) - 12.0) / CHAR_W).max(8.0) as usize
            )),
        );
    }
    for e in edges {
        let (Some(a), Some(b)) = (by_id.get(&e.from), by_id.get(&e.to)) else {
            continue;
        };
        let (x1, y1) = (a.x + a.width / 2.0, a.y + a.height);
        let (x2, y2) = (b.x + b.width / 2.0, b.y);
        let dy = ((y2 - y1) / 2.0).max(20.0);
        let _ = write!(
            s,
            r##"<path class="edge" d="M{x1:.1},{y1:.1} C{x1:.1},{c1:.1} {x2:.1},{c2:.1} {x2:.1},{y2:.1}" fill="none" stroke="#777" stroke-width="1.2" marker-end="url(#arrow)"><title>{from} → {to} (operand {k})</title></path>"##,
            c1 = y1 + dy,
            c2 = y2 - dy,
            from = esc(&a.name),
            to = esc(&b.name),
            k = e.operand_index,
        );
    }
    for n in &drawn {
        let mut title = format!("{} = {} {}", n.name, n.shape_with_layout, n.opcode);
        let _ = write!(
            title,
            "\ncomputation: {}\nFLOPs: {}  bytes accessed: {}",
            n.computation, n.flops, n.bytes_accessed
        );
        if !n.op_name.is_empty() {
            let _ = write!(title, "\nop_name: {}", n.op_name);
        }
        let chars = ((n.width - 16.0) / CHAR_W).max(8.0) as usize;
        let _ = write!(
            s,
            r##"<g class="node{focus_cls}" data-op="{name}" style="cursor:pointer"><title>{title}</title><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" rx="4" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/><text x="{tx:.1}" y="{t1:.1}" font-weight="bold">{l1}</text><text x="{tx:.1}" y="{t2:.1}" fill="#444">{l2}</text></g>"##,
            focus_cls = if n.is_focus { " focus" } else { "" },
            name = esc(&n.name),
            title = esc(&title),
            x = n.x,
            y = n.y,
            w = n.width,
            h = n.height,
            fill = fill(&n.opcode),
            stroke = if n.is_focus { "#c0392b" } else { "#666" },
            sw = if n.is_focus { "2.5" } else { "1" },
            tx = n.x + 8.0,
            t1 = n.y + 16.0,
            t2 = n.y + 31.0,
            l1 = esc(&truncate(&n.name, chars)),
            l2 = esc(&truncate(&format!("{} {}", n.opcode, n.shape), chars)),
        );
    }
    s.push_str("</svg>");
    s
}

/// Plain-text rendering for `xlens tool graph_viewer`.
pub fn render_text(g: &GraphViewer) -> String {
    let mut o = String::new();
    for m in &g.messages {
        let _ = writeln!(o, "note: {m}");
    }
    if let (Some(m), Some(f)) = (&g.module, &g.focus) {
        let _ = writeln!(
            o,
            "{f} in {m}, radius {}: {} nodes, {} edges",
            g.radius,
            g.nodes.len(),
            g.edges.len()
        );
        for n in &g.nodes {
            let _ = writeln!(
                o,
                "  {}{:<32} {:<20} {:<28} hop {}{}",
                if n.is_focus { "*" } else { " " },
                n.name,
                n.opcode,
                n.shape,
                n.distance,
                n.fusion
                    .as_deref()
                    .map(|f| format!("  (in {f})"))
                    .unwrap_or_default()
            );
        }
        let names: HashMap<i64, &str> = g.nodes.iter().map(|n| (n.id, n.name.as_str())).collect();
        for e in &g.edges {
            let _ = writeln!(
                o,
                "  {} -> {} (operand {})",
                names.get(&e.from).unwrap_or(&"?"),
                names.get(&e.to).unwrap_or(&"?"),
                e.operand_index
            );
        }
    }
    for c in &g.candidates {
        let _ = writeln!(o, "  candidate: {} ({}) in {}", c.name, c.opcode, c.module);
    }
    if let Some(l) = &g.landing {
        let _ = writeln!(o, "modules by op time (host {}):", l.host);
        for m in &l.modules {
            let _ = writeln!(o, "  {} ({} ops, {} ps)", m.name, m.op_count, m.time_ps);
            for op in &m.top_ops {
                let _ = writeln!(
                    o,
                    "    {} ({}, {} ps)",
                    op.name, op.opcode, op.total_time_ps
                );
            }
        }
        for m in &l.idle_modules {
            let _ = writeln!(o, "  {} (no op time; root {})", m.name, m.root);
        }
    }
    o
}

/// The nodes as CSV.
pub fn render_csv(g: &GraphViewer) -> String {
    let mut o = String::from(
        "module,name,opcode,shape,computation,fusion,distance,is_focus,flops,bytes_accessed\n",
    );
    let module = g.module.as_deref().unwrap_or("");
    for n in &g.nodes {
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{}",
            crate::base::fmt::csv_field(module),
            crate::base::fmt::csv_field(&n.name),
            crate::base::fmt::csv_field(&n.opcode),
            crate::base::fmt::csv_field(&n.shape),
            crate::base::fmt::csv_field(&n.computation),
            crate::base::fmt::csv_field(n.fusion.as_deref().unwrap_or("")),
            n.distance,
            n.is_focus,
            n.flops,
            n.bytes_accessed
        );
    }
    o
}

/// The graph viewer's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct GraphViewerParams {
    /// The HLO instruction to draw (e.g. fusion.3); narrow with --module.
    #[arg(long)]
    pub op: Option<String>,
    /// The HLO module (program) to look in.
    #[arg(long)]
    pub module: Option<String>,
    /// Hops of operands and users to follow (default 2).
    #[arg(long)]
    pub radius: Option<u32>,
}

/// The graph viewer tool.
pub struct GraphViewerTool;

impl Tool for GraphViewerTool {
    const NAME: &'static str = "graph_viewer";
    const TITLE: &'static str = "Graph viewer";
    const DESCRIPTION: &'static str = "An HLO op's neighbourhood (search by name with --op; --radius hops of operands and users; fusions drawn with their bodies) as a server-laid-out SVG.";
    type Params = GraphViewerParams;
    type Output = GraphViewer;

    fn run(run: &Run, p: &GraphViewerParams) -> Result<GraphViewer, ToolError> {
        let mut g = self::run(run, p.op.as_deref(), p.module.as_deref(), p.radius)
            .map_err(ToolError::Load)?;
        if p.op.is_none() {
            g.landing = landing(run);
        }
        Ok(g)
    }
    fn text(g: &GraphViewer) -> String {
        render_text(g)
    }
    fn csv(g: &GraphViewer) -> Option<String> {
        Some(render_csv(g))
    }
}

/// Runs the graph viewer over a run: the first host (in order) whose modules hold the
/// instruction is drawn; when none does, the candidates of every host are listed.
pub fn run(
    run: &Run,
    op: Option<&str>,
    module: Option<&str>,
    radius: Option<u32>,
) -> Result<GraphViewer, String> {
    let mut first: Option<GraphViewer> = None;
    let mut errors = Vec::new();
    for h in &run.hosts {
        let a = match &h.analysis {
            Ok(a) => a,
            Err(e) => {
                errors.push(format!("host {}: {e}", h.host()));
                continue;
            }
        };
        let g = graph_viewer(a, op, module, radius);
        if g.focus.is_some() {
            return Ok(g);
        }
        match first.as_mut() {
            None => first = Some(g),
            Some(f) => {
                f.candidate_count += g.candidate_count;
                let room = MAX_CANDIDATES.saturating_sub(f.candidates.len());
                f.candidates.extend(g.candidates.into_iter().take(room));
            }
        }
    }
    match first {
        Some(mut g) => {
            g.messages.extend(errors);
            Ok(g)
        }
        None if !errors.is_empty() => Err(errors.join("; ")),
        None => Err("no hosts in this session".to_string()),
    }
}
