//! Memory profile: agreement with XProf 2.24.2's `memory_profile` on the TPU and GPU fixtures
//! (`fixtures/expected/xprof/memory_profile/`, compacted by `extract.py` there), and the headroom
//! answer.
//!
//! Compared: allocator names; peak in use with its heap / reserved / free split and
//! fragmentation; the peak's time (XProf's line offset); capacity; the allocator's lifetime peak;
//! the event count (XProf keeps every event below 1000); the live-at-peak rows (count, total
//! bytes, and the largest rows with op, region, type, shape and occurrences). Rows XProf orders
//! arbitrarily (equal in every compared field) are compared as multisets.

use serde_json::Value;
use xlens_analysis::base::memory::allocators::{AllocatorProfile, MemoryProfile};
use xlens_analysis::base::memory::profile::memory_profile;

use crate::common;
use common::{load, load_analysis, open_run, root, run_tool};

fn expected(run: &str) -> Value {
    let f = root()
        .join("fixtures/expected/xprof/memory_profile")
        .join(format!("{run}.json"));
    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap()
}

fn i(v: &Value, k: &str) -> i64 {
    v[k].as_i64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

fn row_key(v: &Value) -> String {
    format!(
        "{} {} {} {} {} {} ×{}",
        i(v, "allocation_bytes"),
        i(v, "requested_bytes"),
        v["op"].as_str().unwrap(),
        v["region_type"].as_str().unwrap(),
        v["data_type"].as_str().unwrap(),
        v["shape"].as_str().unwrap(),
        i(v, "occurrences")
    )
}

fn check_allocator(a: &AllocatorProfile, e: &Value, run: &str) {
    let label = format!("{run} allocator {}", a.name);
    let p = &a.peak;
    assert_eq!(p.bytes_in_use, i(e, "peak_bytes_in_use"), "{label}: peak");
    assert_eq!(
        p.state.heap_allocated_bytes,
        i(e, "heap_allocated_bytes"),
        "{label}: heap at peak"
    );
    assert_eq!(
        p.state.stack_reserved_bytes,
        i(e, "stack_reserved_bytes"),
        "{label}: reserved at peak"
    );
    assert_eq!(p.state.free_bytes, i(e, "free_bytes"), "{label}: free");
    let frag = e["fragmentation"].as_f64().unwrap();
    assert!(
        (p.state.fragmentation - frag).abs() < 1e-5,
        "{label}: fragmentation {} vs {frag}",
        p.state.fragmentation
    );
    assert_eq!(
        p.time_offset_ps,
        i(e, "peak_time_offset_ps"),
        "{label}: peak time"
    );
    assert_eq!(
        p.memory_capacity_bytes,
        i(e, "memory_capacity_bytes"),
        "{label}: capacity"
    );
    assert_eq!(
        a.peak_bytes_usage_lifetime,
        i(e, "peak_bytes_usage_lifetime"),
        "{label}: lifetime peak"
    );
    let snaps = i(e, "timeline_snapshots") as usize;
    assert!(snaps < 1000, "{label}: XProf sampled; compare differently");
    assert_eq!(a.samples_total, snaps, "{label}: events");
    assert_eq!(
        a.live_at_peak_total,
        i(e, "active_rows") as usize,
        "{label}"
    );
    assert_eq!(a.live_at_peak_bytes, i(e, "active_bytes"), "{label}");

    // The largest rows; a tie group cut at the end of XProf's list is compared on sizes only.
    let exp = e["top_active"].as_array().unwrap();
    let ours: Vec<Value> = a
        .live_at_peak
        .iter()
        .take(exp.len())
        .map(|l| serde_json::to_value(l).unwrap())
        .collect();
    assert_eq!(ours.len(), exp.len(), "{label}: rows");
    let sizes = |v: &[Value]| -> Vec<i64> { v.iter().map(|r| i(r, "allocation_bytes")).collect() };
    assert_eq!(sizes(&ours), sizes(exp), "{label}: row sizes in order");
    let last = i(exp.last().unwrap(), "allocation_bytes");
    let mut a_keys: Vec<String> = ours
        .iter()
        .filter(|r| i(r, "allocation_bytes") != last || exp.len() == a.live_at_peak_total)
        .map(row_key)
        .collect();
    let mut e_keys: Vec<String> = exp
        .iter()
        .filter(|r| i(r, "allocation_bytes") != last || exp.len() == a.live_at_peak_total)
        .map(row_key)
        .collect();
    a_keys.sort();
    e_keys.sort();
    assert_eq!(a_keys, e_keys, "{label}: rows");
}

fn check_run(run: &str) -> MemoryProfile {
    let mp = memory_profile(&load(run));
    let exp = expected(run);
    let names: Vec<&str> = mp.allocators.iter().map(|a| a.name.as_str()).collect();
    let exp_names: Vec<&str> = exp["memory_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, exp_names, "{run}: allocators");
    for (a, e) in mp
        .allocators
        .iter()
        .zip(exp["allocators"].as_array().unwrap())
    {
        assert_eq!(a.name, e["name"].as_str().unwrap());
        check_allocator(a, e, run);
    }
    mp
}

#[test]
fn tpu_matches_xprof() {
    let mp = check_run("tpu_inference");
    assert_eq!(mp.events_total, 906);
    // Every event is drawn (few enough), and the peak is among the samples.
    for a in &mp.allocators {
        assert_eq!(a.samples_shown, a.samples_total);
        assert!(a
            .samples
            .iter()
            .any(|s| s.time_ps == a.peak.time_ps && s.state.in_use() == a.peak.bytes_in_use));
    }
}

#[test]
fn gpu_matches_xprof() {
    let mp = check_run("gpu_multi_worker");
    let a = mp
        .allocators
        .iter()
        .find(|a| a.name == "GPU_4_bfc")
        .unwrap();
    // Live allocations carry their op, type, shape and step.
    let emb = a
        .live_at_peak
        .iter()
        .find(|l| l.activity.op.ends_with("word_embeddings/GatherV2/Cast"))
        .unwrap();
    assert_eq!(emb.activity.shape, "[30522,1024]");
    assert_eq!(emb.activity.data_type, "half");
    assert_eq!(emb.activity.allocation_bytes, 30522 * 1024 * 2);
    assert!(emb.time_ps.is_some_and(|t| t <= a.peak.time_ps));
}

#[test]
fn no_allocator_events_means_no_allocators() {
    let mp = memory_profile(&load("jax_mlp_small"));
    assert!(mp.allocators.is_empty());
    assert_eq!(mp.events_total, 0);
}

#[test]
fn headroom_on_tpu_uses_allocator_capacity() {
    let p = load_analysis("tpu_inference");
    let h = p.headroom().cloned().unwrap();
    // The TPU profile states no memory_size; its allocators report 31.25 GiB per core.
    assert_eq!(h.capacity_bytes, 33_550_237_696);
    assert!(
        h.capacity_source.contains("allocator"),
        "{}",
        h.capacity_source
    );
    assert!(h.peak_source.contains("memory viewer"), "{}", h.peak_source);
    assert!(h.statement.starts_with("peak "), "{}", h.statement);
    assert!(h.statement.contains("of 31.2 GiB"), "{}", h.statement);
    // And the memory viewer carries it.
    let mv = xlens_analysis::tools::memory_viewer::memory_viewer(&p, None, 0);
    let hv = mv.headroom.unwrap();
    assert_eq!(hv.capacity_bytes, h.capacity_bytes);
    assert_eq!(hv.peak_bytes, mv.modules[0].peak_heap_bytes);
}

#[test]
fn headroom_on_gpu_uses_memory_size() {
    let p = load("gpu_multi_worker");
    let (cap, src) =
        xlens_analysis::base::memory::headroom::device_memory_capacity(&p, None).unwrap();
    assert!(src.contains("memory_size"), "{src}");
    assert!(cap > 1 << 30);
}

#[test]
fn headroom_absent_without_capacity() {
    let p = load_analysis("jax_mlp_small");
    assert!(p.headroom().is_none());
    let mv = xlens_analysis::tools::memory_viewer::memory_viewer(&p, None, 0);
    assert!(mv.headroom.is_none());
}

#[test]
fn tool_outputs() {
    let dir = root().join("fixtures/logdir/plugins/profile/gpu_multi_worker");
    let sessions = xlens_store::discover(&dir).unwrap();
    let out = run_tool("memory_profile", &open_run(sessions), &[]);
    assert!(out.text().contains("allocator GPU_4_bfc"), "{}", out.text());
    let csv = out.csv().unwrap();
    assert!(csv.starts_with("session,host,allocator,rank,allocation_bytes"));
    assert!(csv.contains("[30522,1024]"));
    let json = out.json().unwrap();
    let h = &json["hosts"][0];
    assert_eq!(h["allocators"].as_array().unwrap().len(), 4);
    assert!(h["allocators"][0]["samples_total"].as_u64().unwrap() > 0);
}
