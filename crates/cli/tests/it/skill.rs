//! `xlens skill`: what it installs, and its triage recipe run as written on a JAX profile and on
//! a PyTorch trace (every command found in SKILL.md, each answer under 4 KB, each step fed by the
//! answer before).

use std::path::{Path, PathBuf};
use std::process::Command;

const BUDGET: usize = 4096;

fn xlens(args: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_xlens"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "xlens {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs one step of the recipe: the command as SKILL.md writes it (it must be there), with its
/// placeholders filled in; the answer, checked to be within the budget.
fn step(skill: &str, template: &str, fill: &[(&str, &str)]) -> String {
    assert!(
        skill.contains(&format!("xlens {template}\n")),
        "SKILL.md does not show `xlens {template}`"
    );
    let args: Vec<String> = template
        .split_whitespace()
        .map(|w| {
            fill.iter()
                .find(|(k, _)| *k == w)
                .map_or(w.to_string(), |(_, v)| v.to_string())
        })
        .collect();
    let out = xlens(&args);
    assert!(
        out.len() <= BUDGET,
        "xlens {template}: {} bytes:\n{out}",
        out.len()
    );
    out
}

/// Step 1 of the recipe: the verdict's worst-step window.
fn window(skill: &str, path: &str) -> (String, String) {
    let kpi: serde_json::Value =
        serde_json::from_str(&step(skill, "tool kpi PATH --json", &[("PATH", path)])).unwrap();
    let w = &kpi["verdict"]["window_ps"];
    assert!(w.is_array(), "{kpi}");
    (w[0].to_string(), w[1].to_string())
}

fn trace_window(skill: &str, path: &str, (start, end): (String, String)) {
    let t: serde_json::Value = serde_json::from_str(&step(
        skill,
        "tool trace_viewer PATH --start-ps START --end-ps END --width 60 --json --max-rows 8 --max-bytes 4000",
        &[("PATH", path), ("START", &start), ("END", &end)],
    ))
    .unwrap();
    assert!(!t["events"].as_array().unwrap().is_empty(), "{t}");
}

#[test]
fn the_skill_installs_a_page_per_tool() {
    let dir = std::env::temp_dir().join(format!("xlens-skill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let printed = xlens(&["skill".to_string()]);
    xlens(&[
        "skill".to_string(),
        "--install".to_string(),
        dir.display().to_string(),
    ]);
    let md = std::fs::read_to_string(dir.join("xlens/SKILL.md")).unwrap();
    assert_eq!(md, printed);
    let tools: serde_json::Value =
        serde_json::from_str(&xlens(&["tools".to_string(), "--json".to_string()])).unwrap();
    for t in tools.as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let page =
            std::fs::read_to_string(dir.join(format!("xlens/references/{name}.md"))).unwrap();
        // Every parameter the binary takes is on the page.
        for p in t["parameters"].as_array().unwrap() {
            let flag = p["flag"].as_str().unwrap();
            assert!(page.contains(&format!("`{flag}`")), "{name}: {flag}");
        }
        assert!(md.contains(&format!("(references/{name}.md)")), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_triage_recipe_on_a_jax_profile() {
    let skill = xlens(&["skill".to_string()]);
    let p = root().join("fixtures/logdir/plugins/profile/jax_mlp_small");
    let path = p.to_str().unwrap();
    let w = window(&skill, path);
    let ops = step(
        &skill,
        "tool hlo_stats PATH --format csv --max-rows 10 --max-bytes 4000",
        &[("PATH", path)],
    );
    // The top op by self time: `hlo_op_name` of the first row (the fields before it are never
    // quoted: rank, program id, category).
    let mut lines = ops.lines();
    let col = lines
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "hlo_op_name")
        .unwrap();
    let top = lines
        .next()
        .unwrap()
        .split(',')
        .nth(col)
        .unwrap()
        .to_string();
    let around = step(
        &skill,
        "tool graph_viewer PATH --op OP --radius 1 --max-bytes 4000",
        &[("PATH", path), ("OP", &top)],
    );
    assert!(around.starts_with(&format!("{top} in ")), "{around}");
    trace_window(&skill, path, w);
}

#[test]
fn the_triage_recipe_on_a_pytorch_trace() {
    let skill = xlens(&["skill".to_string()]);
    let p = root().join("fixtures/pytorch/tb_plugin/resnet50_num_workers_0.pt.trace.json.gz");
    let path = p.to_str().unwrap();
    let w = window(&skill, path);
    let ops = step(
        &skill,
        "tool pytorch_operators PATH --format csv --max-rows 10 --max-bytes 4000",
        &[("PATH", path)],
    );
    assert!(ops.starts_with("name,"), "{ops}");
    let kernels = step(
        &skill,
        "tool pytorch_kernels PATH --group-by name-and-op --format csv --max-rows 10 --max-bytes 4000",
        &[("PATH", path)],
    );
    assert!(kernels.lines().count() > 1, "{kernels}");
    trace_window(&skill, path, w);
}
