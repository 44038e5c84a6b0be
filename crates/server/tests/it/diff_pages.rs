//! "Compare with" (`base=`): the selector on the comparable pages, the comparison panel above
//! them with both values and deltas in sortable columns, `/api/diff`, and a bad `base=`.

use crate::common;
use common::{get, json, serve_fixtures};

#[test]
fn compare_with_shows_both_runs_and_the_deltas() {
    let (_rt, addr) = serve_fixtures();
    // The selector is on the five comparable pages, not on the others.
    for tool in [
        "overview_page",
        "op_profile",
        "hlo_stats",
        "framework_op_stats",
        "memory_viewer",
    ] {
        let (code, html) = get(&addr, &format!("/?run=jax_tfm_small&tool={tool}"));
        assert_eq!(code, 200, "{tool}");
        let at = html
            .find("<select name=\"base\">")
            .unwrap_or_else(|| panic!("{tool}: no compare selector"));
        let sel = &html[at..at + html[at..].find("</select>").unwrap()];
        assert!(
            sel.contains("<option value=\"jax_mlp_small\">"),
            "{tool}: {sel}"
        );
        assert!(
            !sel.contains("value=\"jax_tfm_small\""),
            "{tool}: the run itself is no baseline"
        );
    }
    let (_, html) = get(&addr, "/?run=jax_tfm_small&tool=trace_viewer");
    assert!(!html.contains("<select name=\"base\">"));

    // Deep link: base= selects the baseline and puts the panel above the page.
    let (code, html) = get(
        &addr,
        "/?run=jax_tfm_small&tool=overview_page&base=jax_mlp_small",
    );
    assert_eq!(code, 200);
    let at = html.find("<select name=\"base\">").unwrap();
    assert!(html[at..].contains("<option value=\"jax_mlp_small\" selected>"));
    let panel = html
        .find("<section class=\"diff\"")
        .expect("comparison panel");
    assert!(panel < html.find("Step time").unwrap() + 1);
    for head in [">BASE</th>", ">NEW</th>", ">Delta</th>"] {
        assert!(html.contains(head), "{head}");
    }
    // Deltas are cells with a sort value (tables.js sorts every table by any column).
    assert!(html.contains("class=\"sortable diff-table\""));
    assert!(
        html.contains("NEW is slower")
            || html.contains("NEW is faster")
            || html.contains("within noise")
    );
    let (_, ops) = get(
        &addr,
        "/?run=jax_tfm_small&tool=hlo_stats&base=jax_mlp_small",
    );
    assert!(ops.contains("added"), "two different models: ops added");

    // The same comparison as JSON: tfm_small's 8 annotated steps against mlp_small's 10 (by
    // hand from the fixtures; XProf-compatible steps drop the edges, so at most that many).
    let (code, body) = get(&addr, "/api/diff?base=jax_mlp_small&run=jax_tfm_small");
    assert_eq!(code, 200, "{body}");
    let v = json(&body);
    assert_eq!(v["base"]["run"], "jax_mlp_small");
    assert_eq!(v["new"]["run"], "jax_tfm_small");
    let (nb, nn) = (
        v["step_time"]["base"]["count"].as_u64().unwrap(),
        v["step_time"]["new"]["count"].as_u64().unwrap(),
    );
    assert!(nb > 0 && nb <= 10 && nn > 0 && nn <= 8, "{nb} {nn}");
    assert!(v["ops"]["added"].as_u64().unwrap() > 0);

    // A baseline that is not there: a clear error, the page still answers.
    let (code, html) = get(&addr, "/?run=jax_tfm_small&tool=overview_page&base=nope");
    assert_eq!(code, 200);
    assert!(html.contains("no run `nope`"));
    let (code, _) = get(&addr, "/api/diff?base=nope&run=jax_tfm_small");
    assert_eq!(code, 404);
    let (code, _) = get(&addr, "/api/diff?run=jax_tfm_small");
    assert_eq!(code, 400);
}
