//! Graph viewer on the real fixtures: neighbourhoods, fusion bodies, search, layout and SVG.

use xlens_analysis::tools::graph_viewer::{graph_viewer, GraphViewer};

use crate::common;
use common::{load_analysis as load, open_run, root, run_tool};

fn names(g: &GraphViewer) -> Vec<&str> {
    g.nodes.iter().map(|n| n.name.as_str()).collect()
}

fn has_edge(g: &GraphViewer, from: &str, to: &str) -> bool {
    let id = |n: &str| g.nodes.iter().find(|x| x.name == n).map(|x| x.id);
    let (Some(a), Some(b)) = (id(from), id(to)) else {
        return false;
    };
    g.edges.iter().any(|e| e.from == a && e.to == b)
}

#[test]
fn dot_neighbourhood_in_jax_mlp() {
    let p = load("jax_mlp_small");
    let g = graph_viewer(&p, Some("dot.2"), Some("jit_mlp_loss"), Some(1));
    assert_eq!(g.module.as_deref(), Some("jit_mlp_loss(26)"));
    assert_eq!(g.focus.as_deref(), Some("dot.2"));
    // dot.2 = f32[256,256] dot(multiply_multiply_fusion.1, multiply_add_fusion.2).
    let n = names(&g);
    for want in [
        "dot.2",
        "multiply_multiply_fusion.1",
        "multiply_add_fusion.2",
    ] {
        assert!(n.contains(&want), "{want} missing from {n:?}");
    }
    assert!(has_edge(&g, "multiply_multiply_fusion.1", "dot.2"));
    assert!(has_edge(&g, "multiply_add_fusion.2", "dot.2"));
    let focus = g.nodes.iter().find(|x| x.is_focus).unwrap();
    assert_eq!(
        (focus.opcode.as_str(), focus.shape.as_str()),
        ("dot", "f32[256,256]")
    );
    assert_eq!(focus.flops, 2 * 256 * 256 * 32);
    // Every node is one hop away at most, and lies below its operands.
    assert!(g.nodes.iter().all(|x| x.distance <= 1));
    let by_id: std::collections::HashMap<i64, _> = g.nodes.iter().map(|x| (x.id, x)).collect();
    for e in &g.edges {
        assert!(by_id[&e.from].layer < by_id[&e.to].layer, "{e:?}");
    }
    // Radius 0 is the op alone; a larger radius reaches further.
    let g0 = graph_viewer(&p, Some("dot.2"), Some("jit_mlp_loss"), Some(0));
    assert_eq!(names(&g0), ["dot.2"]);
    let g3 = graph_viewer(&p, Some("dot.2"), Some("jit_mlp_loss"), Some(3));
    assert!(g3.nodes.len() > g.nodes.len());
    // The SVG: one box per node, one arrowed path per edge, names and shapes written out.
    assert!(g.svg.starts_with("<svg") && g.svg.ends_with("</svg>"));
    assert_eq!(g.svg.matches("<g class=\"node").count(), g.nodes.len());
    assert_eq!(
        g.svg.matches("marker-end=\"url(#arrow)\"").count(),
        g.edges.len()
    );
    assert!(g.svg.contains(">dot.2<") && g.svg.contains("dot f32[256,256]"));
    // No two boxes overlap.
    for (i, a) in g.nodes.iter().enumerate() {
        for b in &g.nodes[i + 1..] {
            let apart = a.x + a.width <= b.x
                || b.x + b.width <= a.x
                || a.y + a.height <= b.y
                || b.y + b.height <= a.y;
            assert!(apart, "{} overlaps {}", a.name, b.name);
        }
    }
}

#[test]
fn tpu_fusion_expands_to_its_body() {
    let p = load("tpu_inference");
    let g = graph_viewer(&p, Some("broadcast_add_fusion"), None, Some(1));
    assert_eq!(g.module.as_deref(), Some("jit_f(12190760917235803885)"));
    let f = g
        .nodes
        .iter()
        .find(|x| x.name == "broadcast_add_fusion")
        .unwrap();
    assert!(f.expanded && f.is_focus);
    // The fused computation: param_0 + broadcast(constant) → add.
    let body: Vec<&str> = g
        .nodes
        .iter()
        .filter(|x| x.fusion.as_deref() == Some("broadcast_add_fusion"))
        .map(|x| x.opcode.as_str())
        .collect();
    for op in ["parameter", "constant", "broadcast", "add"] {
        assert!(body.contains(&op), "{op} missing from the body {body:?}");
    }
    // Wired to the outside: the fusion's operand feeds the body's parameter, the body's root
    // feeds the fusion's user.
    assert!(has_edge(&g, "copy-done.4", "param_0"));
    assert!(has_edge(&g, "add.3", "copy-start.5"));
    assert!(has_edge(&g, "broadcast.7", "add.3"));
    assert!(g.svg.contains("class=\"fusion\""));
    // The box holds its body and nothing else.
    let inside: Vec<_> = g.nodes.iter().filter(|x| x.fusion.is_some()).collect();
    let x0 = inside.iter().map(|x| x.x).fold(f64::MAX, f64::min);
    let x1 = inside.iter().map(|x| x.x + x.width).fold(0.0, f64::max);
    for o in g.nodes.iter().filter(|x| x.fusion.is_none() && !x.expanded) {
        let ys = inside.iter().any(|b| (b.y - o.y).abs() < 1.0);
        if ys {
            assert!(
                o.x + o.width <= x0 || o.x >= x1,
                "{} inside the fusion box",
                o.name
            );
        }
    }
}

#[test]
fn search_misses_list_candidates() {
    let p = load("tpu_inference");
    let g = graph_viewer(&p, Some("fusion"), None, None);
    assert!(g.focus.is_none() && g.nodes.is_empty() && g.svg.is_empty());
    assert_eq!(g.candidate_count, 3);
    assert!(g
        .candidates
        .iter()
        .all(|c| c.name.contains("broadcast_add_fusion")));
    let g = graph_viewer(&p, None, None, None);
    assert!(g.focus.is_none() && !g.messages.is_empty());
    // A CPU-only TF profile has no HLO: said, not an error.
    let tf = load("tf_keras_cnn_small");
    let g = graph_viewer(&tf, Some("dot.2"), None, None);
    assert!(g.messages[0].contains("no HLO modules"));
}

#[test]
fn registered_as_a_tool() {
    let sessions: Vec<_> =
        xlens_store::discover(&root().join("fixtures/logdir/plugins/profile/tpu_inference"))
            .unwrap();
    let run = open_run(sessions);
    let out = run_tool(
        "graph_viewer",
        &run,
        &[("op", "all-reduce"), ("radius", "1")],
    );
    assert_eq!(out.json().unwrap()["focus"], "all-reduce");
    assert_eq!(
        out.json().unwrap()["module"],
        "jit__psum(9646411105960254074)"
    );
    assert!(out.json().unwrap()["svg"]
        .as_str()
        .unwrap()
        .contains("all-reduce"));
    assert!(out.text().contains("all-reduce"));
    assert!(out.csv().unwrap().starts_with("module,name,opcode"));
    assert!(xlens_analysis::tools::infos()
        .iter()
        .any(|t| t.name == "graph_viewer"));
}

#[test]
fn opens_on_the_modules_and_their_most_expensive_ops() {
    let sessions: Vec<_> = xlens_store::discover(&root().join("fixtures/logdir"))
        .unwrap()
        .into_iter()
        .filter(|s| s.name == "jax_mlp_small")
        .collect();
    let run = open_run(sessions);
    let out = run_tool("graph_viewer", &run, &[]);
    let g = out
        .get::<GraphViewer>()
        .expect("typed result")
        .landing
        .clone()
        .expect("a landing list without an op");
    assert_eq!(g.host, "vm");
    assert!(!g.modules.is_empty());
    // Modules by op self time, each with at most five ops by total time, each an instruction of
    // its module; the op table says the same times.
    let a = run.hosts[0].analysis.as_ref().unwrap();
    let table = a.hlo_ops(Default::default());
    let hlo = a.hlo();
    assert!(g.modules.windows(2).all(|w| w[0].time_ps >= w[1].time_ps));
    for m in &g.modules {
        assert!(!m.top_ops.is_empty() && m.top_ops.len() <= 5, "{}", m.name);
        assert!(m
            .top_ops
            .windows(2)
            .all(|w| w[0].total_time_ps >= w[1].total_time_ps));
        let module = hlo.find(&m.name).unwrap();
        let self_time: i64 = table
            .ops
            .iter()
            .filter(|o| o.program == m.name && module.instruction_by_name(&o.name).is_some())
            .map(|o| o.self_time_ps)
            .sum();
        assert_eq!(m.time_ps, self_time, "{}", m.name);
        for o in &m.top_ops {
            assert!(module.instruction_by_name(&o.name).is_some(), "{}", o.name);
        }
    }
    // Every module is listed: with op time, or idle with its entry root.
    assert_eq!(g.modules.len() + g.idle_modules.len(), hlo.modules.len());
    assert!(g.op_names.len() <= g.op_names_total);
    for m in &g.modules {
        for o in &m.top_ops {
            assert!(g.op_names.contains(&o.name), "{} suggested", o.name);
        }
    }
    // Asking for an op: no landing list.
    let out = run_tool("graph_viewer", &run, &[("op", "dot.2")]);
    assert!(out.get::<GraphViewer>().unwrap().landing.is_none());
    // A profile without HLO has none either.
    let tf: Vec<_> = xlens_store::discover(&root().join("fixtures/logdir"))
        .unwrap()
        .into_iter()
        .filter(|s| s.name == "tf_keras_cnn_small")
        .collect();
    let out = run_tool("graph_viewer", &open_run(tf), &[]);
    assert!(out.get::<GraphViewer>().unwrap().landing.is_none());
}
