//! `xlens skill`: the agent skill. Prints its SKILL.md, or with `--install DIR` writes
//! `DIR/xlens/SKILL.md` and one page per tool under `DIR/xlens/references/` (the layout agent
//! harnesses load skills from, e.g. `~/.claude/skills`). The pages are the guide's tool pages
//! (`docs/src/tools/`) with the tool's parameters from the registry, so they never drift from
//! the binary.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use xlens_analysis::tools;

/// Print the agent skill, or install it.
#[derive(clap::Args)]
pub struct Args {
    /// Write the skill to DIR/xlens/ (SKILL.md and references/TOOL.md) instead of printing it.
    #[arg(long, value_name = "DIR")]
    install: Option<PathBuf>,
}

const SKILL: &str = include_str!("../../skill/SKILL.md");

/// Each tool's guide page, by tool name.
const PAGES: &[(&str, &str)] = &[
    (
        "report",
        include_str!("../../../../docs/src/tools/report.md"),
    ),
    (
        "trace_viewer",
        include_str!("../../../../docs/src/tools/trace_viewer.md"),
    ),
    (
        "capture_check",
        include_str!("../../../../docs/src/tools/capture_check.md"),
    ),
    (
        "events",
        include_str!("../../../../docs/src/tools/events.md"),
    ),
    (
        "async_overlap",
        include_str!("../../../../docs/src/tools/async_overlap.md"),
    ),
    (
        "overview_page",
        include_str!("../../../../docs/src/tools/overview_page.md"),
    ),
    ("kpi", include_str!("../../../../docs/src/tools/kpi.md")),
    (
        "input_pipeline_analyzer",
        include_str!("../../../../docs/src/tools/input_pipeline_analyzer.md"),
    ),
    (
        "framework_op_stats",
        include_str!("../../../../docs/src/tools/framework_op_stats.md"),
    ),
    (
        "kernel_stats",
        include_str!("../../../../docs/src/tools/kernel_stats.md"),
    ),
    (
        "pytorch_operators",
        include_str!("../../../../docs/src/tools/pytorch_operators.md"),
    ),
    (
        "pytorch_kernels",
        include_str!("../../../../docs/src/tools/pytorch_kernels.md"),
    ),
    (
        "pytorch_distributed",
        include_str!("../../../../docs/src/tools/pytorch_distributed.md"),
    ),
    (
        "temporal_breakdown",
        include_str!("../../../../docs/src/tools/temporal_breakdown.md"),
    ),
    (
        "comm_comp_overlap",
        include_str!("../../../../docs/src/tools/comm_comp_overlap.md"),
    ),
    (
        "kernel_breakdown",
        include_str!("../../../../docs/src/tools/kernel_breakdown.md"),
    ),
    (
        "idle_time_breakdown",
        include_str!("../../../../docs/src/tools/idle_time_breakdown.md"),
    ),
    (
        "cuda_launch_stats",
        include_str!("../../../../docs/src/tools/cuda_launch_stats.md"),
    ),
    (
        "memory_viewer",
        include_str!("../../../../docs/src/tools/memory_viewer.md"),
    ),
    (
        "memory_profile",
        include_str!("../../../../docs/src/tools/memory_profile.md"),
    ),
    (
        "peak_allocations",
        include_str!("../../../../docs/src/tools/peak_allocations.md"),
    ),
    (
        "op_profile",
        include_str!("../../../../docs/src/tools/op_profile.md"),
    ),
    (
        "step_trace",
        include_str!("../../../../docs/src/tools/step_trace.md"),
    ),
    (
        "hlo_modules",
        include_str!("../../../../docs/src/tools/hlo_modules.md"),
    ),
    (
        "hlo_stats",
        include_str!("../../../../docs/src/tools/hlo_stats.md"),
    ),
    (
        "roofline_model",
        include_str!("../../../../docs/src/tools/roofline_model.md"),
    ),
    (
        "graph_viewer",
        include_str!("../../../../docs/src/tools/graph_viewer.md"),
    ),
];

/// SKILL.md, its tool list filled in from the registry.
pub fn skill_md() -> String {
    let mut list = String::new();
    for t in tools::infos() {
        list.push_str(&format!(
            "- [`{}`](references/{}.md): {}\n",
            t.name, t.name, t.description
        ));
    }
    SKILL.replace("{{TOOLS}}\n", &list)
}

/// A tool's reference page: its guide page, then its parameters as the binary takes them.
fn reference(t: &dyn tools::AnyTool) -> Result<String> {
    let name = t.info().name;
    let Some((_, page)) = PAGES.iter().find(|(n, _)| *n == name) else {
        bail!("tool {name} has no guide page in docs/src/tools/ (add it to PAGES)");
    };
    let mut out = unlink_guide(page);
    out.push_str("\n## Parameters\n\nBesides `PATH`, `--run`, `--host`, `--json`, `--format`, `--max-rows` and `--max-bytes`:\n\n");
    let params = tools::parameters(t);
    if params.is_empty() {
        out.push_str("none.\n");
    }
    for p in params {
        let mut line = format!("- `{}`", p.flag);
        if !p.values.is_empty() {
            line.push_str(&format!(" ({})", p.values.join(" | ")));
        }
        if let Some(d) = &p.default {
            line.push_str(&format!(", default `{d}`"));
        }
        line.push_str(&format!(": {}\n", p.help));
        out.push_str(&line);
    }
    Ok(out)
}

/// The page with its links to guide pages outside `tools/` (which the skill does not carry)
/// turned into text naming the page; links to other tool pages resolve among the references.
fn unlink_guide(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut rest = page;
    while let Some(at) = rest.find("](../") {
        let (Some(open), Some(close)) = (rest[..at].rfind('['), rest[at..].find(')')) else {
            break;
        };
        let target = &rest[at + 5..at + close];
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..at]);
        out.push_str(&format!(" (xlens guide: `{target}`)"));
        rest = &rest[at + close + 1..];
    }
    out.push_str(rest);
    out
}

pub fn run(a: Args) -> Result<()> {
    let Some(dir) = a.install else {
        print!("{}", skill_md());
        return Ok(());
    };
    let root = dir.join("xlens");
    let refs = root.join("references");
    std::fs::create_dir_all(&refs).with_context(|| format!("creating {}", refs.display()))?;
    let skill = root.join("SKILL.md");
    std::fs::write(&skill, skill_md()).with_context(|| format!("writing {}", skill.display()))?;
    let mut n = 0;
    for t in tools::TOOLS {
        let path = refs.join(format!("{}.md", t.info().name));
        std::fs::write(&path, reference(*t)?)
            .with_context(|| format!("writing {}", path.display()))?;
        n += 1;
    }
    println!("{} and {n} reference pages", skill.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guide_links_become_text() {
        assert_eq!(
            unlink_guide("see [many hosts](../many-hosts.md#a) and [op](op_profile.md)."),
            "see many hosts (xlens guide: `many-hosts.md#a`) and [op](op_profile.md)."
        );
    }

    #[test]
    fn every_tool_has_a_page_and_every_page_a_tool() {
        for t in tools::TOOLS {
            let page = reference(*t).unwrap();
            assert!(page.starts_with(&format!("# {}", t.info().name)), "{page}");
            assert!(page.contains("## Parameters"));
            assert!(!page.contains("](../"), "{page}");
        }
        assert_eq!(PAGES.len(), tools::TOOLS.len());
        let md = skill_md();
        assert!(md.starts_with("---\nname: xlens\n"), "{md}");
        assert!(!md.contains("{{"), "{md}");
        for t in tools::infos() {
            assert!(md.contains(&format!("(references/{}.md)", t.name)));
        }
    }
}
