//! The memory viewer and memory profile pages over the real fixtures: module selector (every
//! module, largest peak first, the chosen one selected), the SVG chart with the peak and buffer
//! bars, the details panel and its data, the table, the headroom line; `module=` reaches the tool
//! from the page and from `/api/tool`; `/static/memory.js` is served.

use std::path::{Path, PathBuf};

use crate::common;
use common::get;

fn logdir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/logdir")
}

fn serve() -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let state = xlens_server::AppState::new(logdir(), "test");
    rt.spawn(xlens_server::serve_on(listener, state));
    (rt, addr)
}

#[test]
fn memory_viewer_page_has_selector_chart_details_and_table() {
    let (_rt, addr) = serve();
    // Without module=, the page shows the module with the largest peak.
    let (code, html) = get(&addr, "/?run=tpu_inference&tool=memory_viewer");
    assert_eq!(code, 200, "{html}");
    assert!(
        html.contains("<select name=\"module\" form=\"nav\" class=\"mv-module\""),
        "module selector missing"
    );
    let opts = html.matches("<option value=\"jit_").count();
    assert!(opts >= 4, "every module listed, got {opts}");
    assert!(html.contains("<option value=\"jit_f(12190760917235803885)\" selected>"));
    let first = html.find("<option value=\"jit_f(").unwrap();
    let psum = html.find("<option value=\"jit__psum(").unwrap();
    assert!(first < psum, "largest peak first");
    assert!(html.contains("<svg class=\"mv-chart\""));
    assert!(html.contains("class=\"mv-peakline\""));
    assert!(html.contains("<rect class=\"mv-bar\" data-b=\"0\""));
    assert!(html.contains("<aside class=\"mv-details\""));
    assert!(html.contains("<script type=\"application/json\" class=\"mv-data\">"));
    assert!(
        html.contains("f32[5,1024,1024,256]"),
        "shapes in table and data"
    );
    assert!(html.contains("<tr data-b=\"0\">"));
    assert!(html.contains("smaller buffers (under 16.0 KiB each), grouped"));
    assert!(html.contains("Headroom:</b> peak 20 GiB of 31.2 GiB"));
    assert!(html.contains("Entry parameters") && html.contains("Maybe live out"));
    assert!(html.contains("src=\"/static/memory.js\""));

    // module= picks another one, on the page and in the API.
    let (code, html) = get(
        &addr,
        "/?run=jax_mlp_small&tool=memory_viewer&module=jit_mlp_loss",
    );
    assert_eq!(code, 200);
    assert!(
        html.contains("<option value=\"jit_mlp_loss(26)\" selected>"),
        "chosen module selected"
    );
    assert!(html.contains("<svg class=\"mv-chart\""));
    let (code, body) = get(
        &addr,
        "/api/tool/memory_viewer?run=jax_mlp_small&module=jit_mlp_loss",
    );
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["hosts"][0]["selected"]["name"], "jit_mlp_loss(26)");

    let (code, js) = get(&addr, "/static/memory.js");
    assert_eq!(code, 200);
    assert!(js.contains("mv-details"));
}

#[test]
fn memory_profile_page_has_chart_and_live_table() {
    let (_rt, addr) = serve();
    let (code, html) = get(&addr, "/?run=gpu_multi_worker&tool=memory_profile");
    assert_eq!(code, 200);
    for a in ["GPU_1_bfc", "GPU_4_bfc", "GPU_6_bfc", "gpu_host_bfc"] {
        assert!(html.contains(&format!("Allocator {a}")), "{a}");
    }
    assert!(html.contains("<svg class=\"mp-chart\""));
    assert!(html.contains("class=\"mv-peakline\""));
    assert!(html.contains("[30522,1024]"));
    assert!(html.contains("unused preallocated device memory"));
    // A profile without allocator events says so.
    let (_, html) = get(&addr, "/?run=jax_mlp_small&tool=memory_profile");
    assert!(html.contains("No <code>MemoryAllocation</code>"));
    let (code, body) = get(&addr, "/api/tool/memory_profile?run=tpu_inference");
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["hosts"][0]["allocators"].as_array().unwrap().len(), 4);
}
