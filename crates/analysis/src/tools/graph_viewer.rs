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
mod layout;
mod render;
use layout::*;
pub use render::{render_csv, render_svg, render_text};

/// Hops followed when none is given.
pub const DEFAULT_RADIUS: u32 = 2;
/// Largest radius accepted (larger values are clamped and said so).
pub const MAX_RADIUS: u32 = 16;
/// Most nodes drawn; beyond it the graph is cut at the last complete hop and says so.
pub const MAX_NODES: usize = 400;
/// Most candidates listed when the name is not found exactly.
pub const MAX_CANDIDATES: usize = 50;

/// One instruction in the drawing.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct GraphEdge {
    pub from: i64,
    pub to: i64,
    /// Which operand of `to` this is.
    pub operand_index: usize,
}

/// An instruction that matched the search.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OpMatch {
    pub module: String,
    pub name: String,
    pub opcode: String,
    pub computation: String,
}

/// The graph viewer's answer.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct Landing {
    pub host: String,
    pub modules: Vec<LandingModule>,
    pub idle_modules: Vec<IdleModule>,
    /// Op names by total time, at most [`MAX_SUGGESTIONS`] of `op_names_total`.
    pub op_names: Vec<String>,
    pub op_names_total: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LandingModule {
    pub name: String,
    /// Self time of the module's ops.
    pub time_ps: i64,
    pub op_count: usize,
    /// Its most expensive ops by total time, at most [`LANDING_TOP_OPS`].
    pub top_ops: Vec<LandingOp>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LandingOp {
    pub name: String,
    pub opcode: String,
    pub total_time_ps: i64,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
