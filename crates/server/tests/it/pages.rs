//! Every tool's page on every fixture run: it renders, runs no inline code (scripts are the
//! embedded modules, data is JSON), names no outside URL, and the overview's step chart and the
//! graph viewer's opening list are there.

use crate::common;
use common::{get, json, serve_fixtures as serve};

/// Inline code: a `<script>` that is neither a module file nor JSON data, or an event attribute.
fn inline_code(html: &str) -> Option<String> {
    for (i, _) in html.match_indices("<script") {
        let tag = &html[i..html[i..].find('>').map_or(html.len(), |e| i + e)];
        if !tag.contains(" src=\"/static/") && !tag.contains("type=\"application/json\"") {
            return Some(tag.to_string());
        }
    }
    for attr in [
        " onclick=",
        " onchange=",
        " onload=",
        " oninput=",
        " onsubmit=",
    ] {
        if html.contains(attr) {
            return Some(attr.to_string());
        }
    }
    None
}

#[test]
fn every_page_renders_without_inline_code_or_outside_urls() {
    let (_rt, addr) = serve();
    let (_, runs) = get(&addr, "/api/runs");
    let (_, tools) = get(&addr, "/api/tools");
    let tools: Vec<String> = json(&tools)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let mut pages = 0;
    for r in json(&runs).as_array().unwrap() {
        let run = r["name"].as_str().unwrap();
        for t in &tools {
            let (code, html) = get(&addr, &format!("/?run={run}&tool={t}"));
            assert_eq!(code, 200, "{run} {t}");
            assert!(html.contains("<form id=\"nav\""), "{run} {t}: {html}");
            assert!(!html.contains("class=\"error\""), "{run} {t}: {html}");
            assert_eq!(inline_code(&html), None, "{run} {t}");
            // The graph drawing's SVG namespace is the only URL, and it is not fetched.
            let outside = html
                .replace("http://www.w3.org/2000/svg", "")
                .contains("://");
            assert!(!outside, "{run} {t}: an outside URL");
            pages += 1;
        }
    }
    assert!(pages >= 60, "{pages} pages");
    let (code, html) = get(&addr, "/capture");
    assert_eq!(code, 200);
    assert_eq!(inline_code(&html), None, "capture page");
    for f in [
        "app.js",
        "tables.js",
        "memory.js",
        "trace.js",
        "graph.js",
        "stepchart.js",
        "capture.js",
        "app.css",
    ] {
        let (code, body) = get(&addr, &format!("/static/{f}"));
        assert_eq!(code, 200, "{f}");
        assert!(!body.contains("://") || f == "trace.js", "{f} names a URL");
    }
    assert_eq!(get(&addr, "/static/nothing.js").0, 404);
}

#[test]
fn overview_draws_every_step_as_one_path_per_category() {
    let (_rt, addr) = serve();
    let (code, html) = get(&addr, "/?run=jax_mlp_small&tool=overview_page");
    assert_eq!(code, 200);
    assert!(html.contains("<svg class=\"sc-chart\""), "{html}");
    let (_, api) = get(&addr, "/api/tool/overview_page?run=jax_mlp_small");
    let v = json(&api);
    let steps = v["hosts"][0]["steps"]["rows"].as_array().unwrap().len();
    let cats = v["categories"].as_array().unwrap().len();
    let chart = &html[html.find("<svg class=\"sc-chart\"").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    let paths = chart.matches("<path").count();
    assert!(
        paths >= 1 && paths <= cats,
        "{paths} paths for {cats} categories"
    );
    // The hover data lists every step.
    let start = html.find("class=\"sc-data\">").unwrap() + "class=\"sc-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data = json(&html[start..end]);
    assert_eq!(data["names"].as_array().unwrap().len(), steps);
    assert!(html.contains("src=\"/static/stepchart.js\""));
}

#[test]
fn graph_viewer_opens_on_modules_and_their_costliest_ops() {
    let (_rt, addr) = serve();
    let (code, html) = get(&addr, "/?run=jax_mlp_small&tool=graph_viewer");
    assert_eq!(code, 200);
    assert!(html.contains("Modules by op time"), "{html}");
    assert!(html.contains("<ol class=\"graph-modules\">"), "{html}");
    assert!(html.contains("href=\"/?run=jax_mlp_small&amp;tool=graph_viewer&amp;op="));
    assert!(html.contains("list=\"graph-ops\"") && html.contains("<datalist id=\"graph-ops\">"));
    // A listed op draws.
    let at = html.find("data-op=\"").unwrap() + "data-op=\"".len();
    let op = &html[at..at + html[at..].find('"').unwrap()];
    let (code, drawn) = get(
        &addr,
        &format!("/?run=jax_mlp_small&tool=graph_viewer&op={op}"),
    );
    assert_eq!(code, 200);
    assert!(drawn.contains("class=\"graph-svg\""), "{op}: {drawn}");
    assert!(!drawn.contains("Modules by op time"));
}
