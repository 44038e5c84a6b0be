//! PyTorch profiler traces (`fixtures/pytorch/`) through discovery and every tool.

use crate::common;

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
        // ProfilerStep#551 and #552 on each rank, as the PyTorch plugin forms them.
        assert_eq!(h["steps_all"]["count"], 2, "{}", h["host"]);
        assert_eq!(h["steps"]["count"], 2, "{}", h["host"]);
        assert!(h["pytorch"]["step_definition"]
            .as_str()
            .unwrap()
            .contains("ProfilerStep#N"));
    }
    // The report shows the same steps.
    let text = run_tool("report", &run, &[]).text();
    assert!(
        text.contains("steps: 2 from the PyTorch profiler's steps"),
        "{text}"
    );
}

#[test]
fn framework_ops_of_a_pytorch_trace_are_its_cpu_ops_with_launched_gpu_time() {
    // Expected figures computed from the raw JSON by a separate Python script (decimal times,
    // cpu_op nesting per thread, each cudaLaunch/hipLaunch call's correlation summed over the
    // device events and attributed to the innermost cpu_op around the call).
    let f =
        root().join("fixtures/pytorch/hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz");
    let run = open_run(xlens_store::discover(&f).unwrap());
    let v = run_tool("framework_op_stats", &run, &[]).json().unwrap();
    let h = &v["hosts"][0];
    let ops = h["ops"].as_array().unwrap();
    let host: Vec<&serde_json::Value> = ops
        .iter()
        .filter(|o| o["host_or_device"] == "Host" && o["name"] != "IDLE")
        .collect();
    assert_eq!(host.len(), 42);
    let get = |name: &str| *host.iter().find(|o| o["name"] == name).unwrap();
    // (occurrences, total, self, launched GPU time), picoseconds.
    for (name, occ, total, self_ps, launched) in [
        (
            "aten::add_",
            2,
            6_613_603_000i64,
            6_613_603_000i64,
            9_120_000i64,
        ),
        ("aten::addmm", 1, 181_604_000, 151_276_000, 24_480_000),
        ("aten::empty", 4, 139_153_000, 139_153_000, 0),
        ("aten::copy_", 2, 136_719_000, 136_719_000, 38_161_000),
    ] {
        let o = get(name);
        assert_eq!(o["type"], "aten", "{name}");
        assert_eq!(o["occurrences"], occ, "{name}");
        assert_eq!(o["total_time_ps"], total, "{name}");
        assert_eq!(o["self_time_ps"], self_ps, "{name}");
        assert_eq!(o["launched_device_time_ps"], launched, "{name}");
    }
    assert_eq!(h["host_idle_ps"], 8_068_627_000i64);
}
