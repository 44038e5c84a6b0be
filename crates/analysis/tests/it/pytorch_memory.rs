//! Memory profile of PyTorch traces (`[memory]` events): agreement with the PyTorch TensorBoard
//! plugin (torch-tb-profiler 0.4.3, its figures in `fixtures/expected/tb_profiler/`, written by
//! `tests/tb_profiler/reference.py`) on two real traces cut to one step
//! (`fixtures/pytorch/memory/`, cut by `tests/tb_profiler/trim.py`):
//!
//! * `hta-df_index_resolver-step6`: HTA's test trace (PyTorch 1.13 era, rank 1 of 2, NCCL),
//!   with `Addr`, `Total Allocated` and `Total Reserved`;
//! * `kineto-resnet50_num_workers_0-step10`: the TensorBoard plugin's own ResNet-50 sample
//!   (PyTorch 1.9, V100), whose events have only `Bytes`.

use crate::common;

use common::root;
use serde_json::Value;
use xlens_analysis::base::memory::allocators::MemoryProfile;
use xlens_analysis::base::memory::profile::memory_profile;

fn profile(name: &str) -> MemoryProfile {
    let path = root().join(format!("fixtures/pytorch/memory/{name}.json.gz"));
    let p = xlens_loader::load_path(&path, xlens_store::Format::ChromeTrace).expect("load");
    memory_profile(&p)
}

fn expected(name: &str) -> Value {
    let path = root().join(format!("fixtures/expected/tb_profiler/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("expected figures")).unwrap()
}

/// Every op row, as the plugin lists it: device -> name -> [self increase, self allocation
/// size, self allocation count, increase, allocation size, allocation count, calls].
fn check_op_stats(mp: &MemoryProfile, e: &Value) {
    let want = e["op_stats"].as_object().unwrap();
    let mut rows = 0;
    for (device, ops) in want {
        for (name, v) in ops.as_object().unwrap() {
            rows += 1;
            let v: Vec<i64> = v
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            let got = mp
                .op_stats
                .iter()
                .find(|o| &o.device == device && &o.name == name)
                .unwrap_or_else(|| panic!("no row for {device} {name}"));
            let got_v = vec![
                got.self_increase_bytes,
                got.self_allocation_bytes,
                got.self_allocations as i64,
                got.increase_bytes,
                got.allocation_bytes,
                got.allocations as i64,
                got.calls as i64,
            ];
            assert_eq!(got_v, v, "{device} {name}");
        }
    }
    assert_eq!(mp.op_stats.len(), rows, "the same rows, no more");
}

#[test]
fn new_format_trace_matches_the_tensorboard_plugin() {
    let name = "hta-df_index_resolver-step6";
    let mp = profile(name);
    let e = expected(name);
    assert_eq!(mp.source, "PyTorch profiler [memory] events");
    check_op_stats(&mp, &e);
    // Peaks: the largest `Total Allocated` per device, as the plugin's get_peak_memory.
    let names: Vec<&str> = mp.allocators.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["CPU", "GPU1"]);
    let peak = |n: &str| {
        mp.allocators
            .iter()
            .find(|a| a.name == n)
            .unwrap()
            .peak
            .clone()
    };
    assert_eq!(
        peak("GPU1").bytes_in_use,
        e["peaks"]["1:1"].as_i64().unwrap()
    );
    assert_eq!(
        peak("CPU").bytes_in_use,
        e["peaks"]["0:-1"].as_i64().unwrap()
    );
    // By hand from the trace: at the GPU peak the caching allocator had reserved 12782141440
    // bytes (`Total Reserved` of that event), in ProfilerStep#6.
    assert_eq!(peak("GPU1").memory_capacity_bytes, 12_782_141_440);
    assert_eq!(peak("GPU1").step_id, 6);
    // Live at the peak: the allocations matched by address, plus what was allocated before the
    // cut began; together exactly what was allocated at the peak.
    let gpu = mp.allocators.iter().find(|a| a.name == "GPU1").unwrap();
    assert_eq!(gpu.live_at_peak_bytes, gpu.peak.bytes_in_use);
    assert!(gpu.live_at_peak.iter().any(|r| r.special));
    assert!(gpu.live_at_peak.iter().filter(|r| !r.special).count() > 10);
    assert!(mp.notes.iter().all(|n| !n.contains("Total Allocated")));
}

#[test]
fn old_format_trace_matches_the_tensorboard_plugin_and_says_what_it_lacks() {
    let name = "kineto-resnet50_num_workers_0-step10.pt.trace";
    let mp = profile(name);
    let e = expected(name);
    check_op_stats(&mp, &e);
    // No totals: the plugin reports no peak; xlens draws the running sum and says so.
    assert!(e["peaks"].as_object().unwrap().is_empty());
    assert!(mp.notes.iter().any(|n| n.contains("no `Total Allocated`")));
    assert!(mp.notes.iter().any(|n| n.contains("without `Addr`")));
    let names: Vec<&str> = mp.allocators.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["CPU", "GPU0"]);
    for a in &mp.allocators {
        assert!(a.live_at_peak.is_empty());
        assert_eq!(a.allocations + a.deallocations, a.samples_total);
    }
}

#[test]
fn the_tool_renders_pytorch_memory_in_every_format() {
    let dir = root().join("fixtures/pytorch/memory");
    let sessions = xlens_store::discover(&dir).unwrap();
    let run = common::open_run(sessions);
    let out = common::run_tool("memory_profile", &run, &[]);
    let text = out.text();
    assert!(text.contains("GPU1"), "{text}");
    assert!(
        text.contains("aten::"),
        "the op table is in the text: {text}"
    );
    let json = out.json_string(false).unwrap();
    assert!(json.contains("\"op_stats\""));
}
