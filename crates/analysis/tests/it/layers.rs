//! The analysis crate's layering, checked on its sources (as rust-analyzer's tidy tests do):
//! the base layer never names a tool or the registry, and a tool names only the base layer (never
//! another tool, nor the registry that lists it).

use std::path::{Path, PathBuf};

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    out.sort();
    out
}

/// Lines of `path` that name `crate::<what>` or `super::` paths, comments left out.
fn references(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| l.contains("crate::") || l.contains("super::"))
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn base_never_imports_a_tool() {
    let files = sources(&src().join("base"));
    assert!(files.len() > 10, "base/ has its modules");
    let mut bad = Vec::new();
    for f in &files {
        for (n, l) in references(f) {
            if l.contains("crate::tools") || l.contains("super::super") {
                bad.push(format!("{}:{n}: {l}", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "the base layer names tools:\n{}",
        bad.join("\n")
    );
}

#[test]
fn tools_import_only_the_base() {
    let files: Vec<PathBuf> = sources(&src().join("tools"))
        .into_iter()
        .filter(|f| !f.ends_with("mod.rs") && !f.ends_with("output.rs"))
        .collect();
    assert!(files.len() >= 12, "one module per tool");
    let mut bad = Vec::new();
    for f in &files {
        for (n, l) in references(f) {
            // `super::*` inside a tool's own `mod tests` is the tool itself.
            let own_tests = l == "use super::*;";
            let other = l
                .split("crate::")
                .skip(1)
                .any(|rest| !rest.starts_with("base::"));
            if other || (l.contains("super::") && !own_tests) {
                bad.push(format!("{}:{n}: {l}", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "tools name something other than the base layer:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_tool_module_is_registered() {
    let registry = std::fs::read_to_string(src().join("tools/mod.rs")).expect("tools/mod.rs");
    for f in sources(&src().join("tools")) {
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if name == "mod" || name == "output" {
            continue;
        }
        assert!(
            registry.contains(&format!("Entry::<{name}::")),
            "tools/{name}.rs is not in TOOLS"
        );
    }
}
