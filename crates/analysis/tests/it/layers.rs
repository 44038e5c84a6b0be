//! The analysis crate's layering, checked on its sources (as rust-analyzer's tidy tests do):
//! the base layer never names a tool or the registry, and a tool names only the base layer (never
//! another tool, nor the registry that lists it).

use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, in its sub-folders too.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = crate_modules(dir).into_iter().map(|m| m.1).collect();
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
            // `super::*` inside a tool's own `mod tests`, or a part of a tool split into files
            // (`tools/NAME/PART.rs`), is the tool itself.
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
    let tools = src().join("tools");
    for f in sources(&tools) {
        // A tool split into files: `tools/NAME.rs` and its parts under `tools/NAME/`.
        if f.parent() != Some(tools.as_path()) {
            let tool = f
                .parent()
                .and_then(|d| d.file_name())
                .and_then(|s| s.to_str());
            let owner = tool.map(|t| tools.join(format!("{t}.rs")));
            assert!(
                owner.as_ref().is_some_and(|o| o.is_file()),
                "{}: a part of no tool",
                f.display()
            );
            continue;
        }
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

/// The module paths (`a::b`) a source text names through `crate::` (and, relative to `parent`,
/// `super::`), each path's identifiers in order; a `{x, y}` group yields a path per item.
fn named_paths(text: &str, parent: &[String]) -> Vec<Vec<String>> {
    let ident = |s: &str| -> usize {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    };
    let mut out = Vec::new();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent.to_vec())] {
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let mut path = base.clone();
            let mut s = rest;
            loop {
                let n = ident(s);
                if n > 0 {
                    path.push(s[..n].to_string());
                    s = &s[n..];
                }
                match s.strip_prefix("::") {
                    Some(t) if t.starts_with('{') => {
                        let group = &t[1..t.find('}').unwrap_or(t.len())];
                        for item in group.split(',') {
                            let item = item.trim();
                            let n = ident(item);
                            if n > 0 {
                                let mut p = path.clone();
                                p.push(item[..n].to_string());
                                out.push(p);
                            }
                        }
                        break;
                    }
                    Some(t) if n > 0 => s = t,
                    _ => {
                        out.push(path);
                        break;
                    }
                }
            }
        }
    }
    out
}

/// Every `.rs` file under `dir`, with its module path within the crate (`lib.rs`, `main.rs` and
/// `mod.rs` are their folder's module).
fn crate_modules(dir: &Path) -> Vec<(Vec<String>, PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(dir).expect("under dir").with_extension("");
                let mut m: Vec<String> = rel
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect();
                if matches!(m.last().map(String::as_str), Some("lib" | "main" | "mod")) {
                    m.pop();
                }
                out.push((m, p));
            }
        }
    }
    out.sort();
    out
}

/// Groups of modules of one crate that import each other in a circle (Tarjan's strongly
/// connected components of the graph of `crate::`/`super::` references, test modules and
/// comments left out; a module's references to its own ancestors or descendants do not count,
/// since a parent declares its children).
fn module_cycles(src: &Path) -> Vec<Vec<String>> {
    let mods = crate_modules(src);
    let names: Vec<Vec<String>> = mods.iter().map(|m| m.0.clone()).collect();
    let prefix = |a: &[String], b: &[String]| a.len() <= b.len() && b[..a.len()] == *a;
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); mods.len()];
    for (i, (m, path)) in mods.iter().enumerate() {
        let text = std::fs::read_to_string(path).expect("read");
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let parent = &m[..m.len().saturating_sub(1)];
        for p in named_paths(&code, parent) {
            // The longest module the path names.
            let Some(j) = (1..=p.len())
                .rev()
                .find_map(|k| names.iter().position(|n| *n == p[..k]))
            else {
                continue;
            };
            if prefix(&names[j], m) || prefix(m, &names[j]) || edges[i].contains(&j) {
                continue;
            }
            edges[i].push(j);
        }
    }
    // Tarjan, iteratively.
    let n = mods.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut k)) = work.last_mut() {
            if *k == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = edges[v].get(*k) {
                *k += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(names[w].join("::"));
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    out.push(comp);
                }
            }
        }
    }
    out
}

#[test]
fn no_module_imports_in_a_circle_in_any_crate() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut checked = 0;
    for e in std::fs::read_dir(&crates).expect("crates") {
        let src = e.expect("entry").path().join("src");
        if src.is_dir() {
            checked += 1;
            for c in module_cycles(&src) {
                found.push(format!("{}: {}", src.display(), c.join(" ⇄ ")));
            }
        }
    }
    assert!(checked >= 10, "{checked} crates");
    assert!(
        found.is_empty(),
        "modules that import each other in a circle:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_circle_of_imports_is_found() {
    let dir = std::env::temp_dir().join(format!("xlens-cycle-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("base")).expect("mkdir");
    std::fs::write(dir.join("lib.rs"), "pub mod base;\n").expect("write");
    std::fs::write(
        dir.join("base/mod.rs"),
        "pub mod a;\npub mod b;\npub mod c;\n",
    )
    .expect("write");
    std::fs::write(dir.join("base/a.rs"), "use crate::base::{b::X, c};\n").expect("write");
    std::fs::write(dir.join("base/b.rs"), "fn f() { super::c::g(); }\n").expect("write");
    std::fs::write(
        dir.join("base/c.rs"),
        "// crate::base::a::Y is only named in a comment\npub fn g() { crate::base::a::h() }\n#[cfg(test)]\nmod t { use crate::base::b; }\n",
    )
    .expect("write");
    let found = module_cycles(&dir);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(found, vec![vec!["base::a", "base::b", "base::c"]]);
}
