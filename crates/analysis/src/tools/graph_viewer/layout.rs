//! The graph laid out: longest-path layers, barycentre order within a layer, and each node's box.

use super::*;

pub(super) const NODE_H: f64 = 40.0;
pub(super) const LAYER_GAP: f64 = 48.0;
pub(super) const NODE_GAP: f64 = 20.0;
pub(super) const MARGIN: f64 = 24.0;
pub(super) const CHAR_W: f64 = 6.6;
pub(super) const BOX_PAD: f64 = 10.0;

pub(super) fn node_width(n: &GraphNode) -> f64 {
    let line2 = n.opcode.len() + 1 + n.shape.len();
    let chars = n.name.len().max(line2).min(60);
    (chars as f64 * CHAR_W + 16.0).max(70.0)
}

/// Longest-path layering and barycentre ordering; sets each node's layer and box.
pub(super) fn layout(nodes: &mut [GraphNode], edges: &[GraphEdge], skip: &HashSet<i64>) {
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

pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Fill colour by kind of op.
pub(super) fn fill(opcode: &str) -> &'static str {
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
