//! The graph as SVG (fusions drawn around their bodies), text and CSV.

use super::*;

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
