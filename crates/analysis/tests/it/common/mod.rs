//! Shared by the integration tests: where the repository's fixtures are and how to load one.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use xlens_model::Profile;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The profile file of a fixture run (`fixtures/logdir/plugins/profile/<run>/*.xplane.pb[.gz]`).
pub fn fixture_file(run: &str) -> PathBuf {
    let dir = root().join("fixtures/logdir/plugins/profile").join(run);
    std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".xplane.pb"))
        .expect("xplane file")
}

/// A fixture run decoded into the model.
pub fn load(run: &str) -> Profile {
    xlens_loader::load_path(&fixture_file(run), xlens_store::Format::XSpace).expect("load")
}

/// A profile's analysis context (derived analyses computed on first use).
pub fn analysis(p: Profile) -> xlens_analysis::base::context::Analysis {
    xlens_analysis::base::context::Analysis::new(std::sync::Arc::new(p))
}

/// A fixture run's analysis context.
pub fn load_analysis(run: &str) -> xlens_analysis::base::context::Analysis {
    analysis(load(run))
}

/// The run over `sessions`, each host loaded from its file.
pub fn open_run(sessions: Vec<xlens_store::Session>) -> xlens_analysis::base::context::Run {
    xlens_analysis::base::context::Run::new(sessions, |h| {
        xlens_loader::load_host(h)
            .map(|p| std::sync::Arc::new(analysis(p)))
            .map_err(|e| e.to_string())
    })
}

/// [`open_run`], each host read only as far as `reads` says.
pub fn open_run_for(
    sessions: Vec<xlens_store::Session>,
    reads: xlens_loader::Reads,
) -> xlens_analysis::base::context::Run {
    xlens_analysis::base::context::Run::new(sessions, move |h| {
        xlens_loader::open(
            h,
            xlens_loader::Policy {
                reads,
                ..Default::default()
            },
        )
        .map(|p| std::sync::Arc::new(analysis(p)))
        .map_err(|e| e.to_string())
    })
}

/// Runs tool `name` over `run` with query-string parameters, as the server does.
pub fn run_tool(
    name: &str,
    run: &xlens_analysis::base::context::Run,
    params: &[(&str, &str)],
) -> xlens_analysis::tools::ToolOutput {
    let q: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    xlens_analysis::tools::find(name)
        .expect("tool")
        .run_query(run, &q)
        .expect("tool runs")
}
