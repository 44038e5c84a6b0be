//! Tool parameters from the query string: the same names as `xlens tool NAME --help`, empty values
//! (as HTML forms send them) unset, an invalid value a 400 naming it, and a second tool on a run
//! already open answering from what the first computed.

use crate::common;
use common::{get, json, serve_fixtures as serve};

#[test]
fn query_parameters_are_the_tools_parameters() {
    let (_rt, addr) = serve();
    // graph_viewer's `op` and `radius`, as on the command line.
    let (code, body) = get(
        &addr,
        "/api/tool/graph_viewer?run=tpu_inference&op=all-reduce&radius=1",
    );
    assert_eq!(code, 200, "{body}");
    let v = json(&body);
    assert_eq!(v["focus"], "all-reduce");
    assert_eq!(v["radius"], 1);

    // Empty values count as unset: the default radius (2).
    let (code, body) = get(
        &addr,
        "/api/tool/graph_viewer?run=tpu_inference&op=all-reduce&radius=&module=",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(json(&body)["radius"], 2);

    // An invalid value is the caller's error, and says which.
    let (code, body) = get(
        &addr,
        "/api/tool/graph_viewer?run=tpu_inference&op=all-reduce&radius=two",
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        json(&body)["error"].as_str().unwrap().contains("radius"),
        "{body}"
    );

    // The roofline tools take stated peaks from the query string too (XProf has no such option
    // for CPU profiles; the CLI's --peak-flops/--peak-bw).
    let (code, body) = get(
        &addr,
        "/api/tool/hlo_stats?run=jax_mlp_small&peak_flops=1e12&peak_bw=1e11",
    );
    assert_eq!(code, 200, "{body}");
    let peaks = &json(&body)["hosts"][0]["peaks"];
    assert_eq!(peaks["flops_per_second"], 1e12, "{peaks}");
    assert_eq!(peaks["bytes_per_second"], 1e11, "{peaks}");

    // memory_viewer's module and memory space.
    let (code, body) = get(
        &addr,
        "/api/tool/memory_viewer?run=jax_mlp_small&module=jit_mlp_loss&memory_space=0",
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        json(&body)["hosts"][0]["selected"]["name"],
        "jit_mlp_loss(26)"
    );

    // An unknown tool is a 404 that lists the tools.
    let (code, body) = get(&addr, "/api/tool/nope?run=jax_mlp_small");
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("overview_page"), "{body}");
}
