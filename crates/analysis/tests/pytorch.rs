//! PyTorch profiler traces (`fixtures/pytorch/`) through discovery and every tool.

mod common;

use common::{open_run, root, run_tool};

#[test]
fn a_folder_of_rank_files_is_one_session_with_a_host_per_rank() {
    let sessions = xlens_store::discover(&root().join("fixtures/pytorch/two_ranks")).unwrap();
    assert_eq!(sessions.len(), 1);
    let hosts: Vec<(&str, Option<i64>)> = sessions[0]
        .hosts
        .iter()
        .map(|h| (h.host.as_str(), h.rank))
        .collect();
    // Ranks from each file's `distributedInfo`.
    assert_eq!(hosts, vec![("rank0", Some(0)), ("rank1", Some(1))]);
    assert!(sessions[0]
        .hosts
        .iter()
        .all(|h| h.format == xlens_store::Format::ChromeTrace));
}

#[test]
fn a_jax_trace_json_beside_its_xplane_is_not_a_second_host() {
    // JAX writes `<host>.trace.json.gz` next to `<host>.xplane.pb`: the same profile.
    let dir = std::env::temp_dir().join(format!("xlens-pt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        common::fixture_file("jax_mlp_small"),
        dir.join("vm.xplane.pb"),
    )
    .unwrap();
    std::fs::copy(
        root().join("fixtures/pytorch/hta-triton_example-triton_example.json.gz"),
        dir.join("vm.trace.json.gz"),
    )
    .unwrap();
    // A JSON file that is not a trace is not a profile either.
    std::fs::write(dir.join("config.json"), br#"{"lr": 0.1}"#).unwrap();
    let sessions = xlens_store::discover(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].hosts.len(), 1);
    assert_eq!(sessions[0].hosts[0].format, xlens_store::Format::XSpace);
}

#[test]
fn every_tool_answers_on_pytorch_traces() {
    for dir in ["fixtures/pytorch", "fixtures/pytorch/two_ranks"] {
        let sessions = xlens_store::discover(&root().join(dir)).unwrap();
        for s in sessions {
            let run = open_run(vec![s.clone()]);
            for t in xlens_analysis::tools::TOOLS {
                let name = t.info().name;
                let out = run_tool(name, &run, &[]);
                let json = out.json_string(false).unwrap();
                assert!(
                    !json.contains("\"error\":\"") || json.contains("\"error\":null"),
                    "{dir} {} {name}: {}",
                    s.name,
                    &json[..json.len().min(400)]
                );
            }
        }
    }
}

#[test]
fn steps_of_a_gpu_trace_come_from_profiler_step_annotations() {
    let sessions = xlens_store::discover(&root().join("fixtures/pytorch/two_ranks")).unwrap();
    let run = open_run(sessions);
    let v = run_tool("overview_page", &run, &[]).json().unwrap();
    let hosts = v["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    for h in hosts {
        assert_eq!(h["hardware"], "GPU");
        // ProfilerStep#551 and #552 on each rank (fewer than 6 steps: none dropped).
        assert_eq!(h["steps_all"]["count"], 2, "{}", h["host"]);
    }
    // The report's own step finder sees them as one family of annotations.
    let text = run_tool("report", &run, &[]).text();
    assert!(
        text.contains("steps: 2 from step annotations `ProfilerStep#N`"),
        "{text}"
    );
}
