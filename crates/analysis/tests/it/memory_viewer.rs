//! Memory viewer: agreement with XProf's own memory viewer on real profiles
//! (`fixtures/expected/xprof/memory_viewer/`, produced by XProf 2.24.2), and the heap replay rules on
//! hand-built buffer assignments.
//!
//! Deliberate differences from XProf, named where they are tested:
//! * buffers of equal size at the peak are ordered by logical buffer id (XProf's order among them
//!   is unspecified: an unstable sort over hash-map order), so ties are compared as sets;
//! * when several temporary allocations of a memory space have a heap simulator trace, we replay
//!   the one with most events (XProf's pick depends on hash-map order) and say so in `warnings`;
//! * a module whose trace touches several allocations is analysed with a warning (XProf fails).

use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;

use xlens_analysis::base::hlo::modules::{hlo_index, HloModule};
use xlens_analysis::base::memory::heap::{
    memory_viewer_of, module_memory, replay, ModuleMemory, TraceBuffer, SMALL_BUFFER_BYTES,
};
use xlens_proto::xla::buffer_allocation_proto::Assigned;
use xlens_proto::xla::heap_simulator_trace::event::Kind;
use xlens_proto::xla::heap_simulator_trace::Event;
use xlens_proto::xla::logical_buffer_proto::Location;
use xlens_proto::xla::{
    BufferAllocationProto, BufferAssignmentProto, HeapSimulatorTrace, HloComputationProto,
    HloInstructionProto, HloModuleProto, HloProto, LayoutProto, LogicalBufferProto, OpMetadata,
    PrimitiveType, ShapeProto,
};

use crate::common;
use common::{load, open_run, root, run_tool};

const MIB: f64 = (1u64 << 20) as f64;

fn mib_to_bytes(v: &Value) -> i64 {
    let mib = v.as_f64().unwrap_or(0.0);
    let bytes = mib * MIB;
    assert!(
        (bytes - bytes.round()).abs() < 1e-3,
        "{mib} MiB is not whole bytes"
    );
    bytes.round() as i64
}

/// Compares one module with XProf's expectation.
fn check(mm: &ModuleMemory, exp: &Value, label: &str) {
    assert_eq!(
        mm.peak_heap_bytes,
        mib_to_bytes(&exp["peak_heap_mib"]),
        "{label}: peak heap"
    );
    assert_eq!(
        mm.peak_unpadded_heap_bytes,
        mib_to_bytes(&exp["peak_unpadded_heap_mib"]),
        "{label}: peak unpadded heap"
    );
    assert_eq!(
        mm.peak_position as u64,
        exp["peak_heap_size_position"].as_u64().unwrap(),
        "{label}: peak position"
    );
    let peak_instr = exp["peak_instruction"].as_str().unwrap();
    assert_eq!(
        mm.peak_instruction.as_deref().unwrap_or(""),
        peak_instr,
        "{label}: instruction at the peak"
    );
    assert_eq!(
        mm.series_points_total as u64,
        exp["heap_sizes_len"].as_u64().unwrap(),
        "{label}: series length"
    );
    if let Some(series) = exp["heap_sizes_mib"].as_array() {
        assert_eq!(mm.series_points_shown, mm.series_points_total, "{label}");
        let ours: Vec<i64> = mm.heap_series.iter().map(|p| p.heap_bytes).collect();
        let theirs: Vec<i64> = series.iter().map(mib_to_bytes).collect();
        assert_eq!(ours, theirs, "{label}: heap series");
    }
    let t = &mm.totals;
    for (ours, key) in [
        (t.entry_parameters_bytes, "entry_computation_parameters_mib"),
        (t.non_reusable_bytes, "non_reusable_mib"),
        (t.maybe_live_out_bytes, "maybe_live_out_mib"),
        (t.total_allocation_bytes, "total_buffer_allocation_mib"),
        (
            t.indefinite_allocation_bytes,
            "indefinite_buffer_allocation_mib",
        ),
    ] {
        assert_eq!(ours, mib_to_bytes(&exp[key]), "{label}: {key}");
    }
    let scoped = mm.max_scoped_allocation.as_ref();
    assert_eq!(
        scoped.map_or(0, |s| s.bytes),
        mib_to_bytes(&exp["max_scoped_vmem_allocation_mib"]),
        "{label}: scoped allocation"
    );
    assert_eq!(
        scoped.map_or("", |s| s.instruction.as_str()),
        exp["max_scoped_vmem_instruction_name"].as_str().unwrap(),
        "{label}: scoped allocation instruction"
    );
    assert_eq!(
        mm.peak_buffers.len() as u64,
        exp["peak_buffer_count"].as_u64().unwrap(),
        "{label}: buffers at the peak"
    );
    assert_eq!(
        mm.small_buffers.bytes,
        mib_to_bytes(&exp["small_buffers_mib"]),
        "{label}: small buffers"
    );

    // Top 10. Deliberate difference: equal sizes are ordered by id here, arbitrarily by XProf.
    let top: Vec<&Value> = exp["top_buffers"].as_array().unwrap().iter().collect();
    let ours_top: Vec<i64> = mm
        .peak_buffers
        .iter()
        .take(top.len())
        .map(|b| b.size_bytes)
        .collect();
    let theirs_top: Vec<i64> = top.iter().map(|b| mib_to_bytes(&b["size_mib"])).collect();
    assert_eq!(ours_top, theirs_top, "{label}: sizes of the top buffers");
    let boundary = theirs_top.last().copied().unwrap_or(0);
    for e in top {
        let id = e["logical_buffer_id"].as_i64().unwrap();
        let rank = mm
            .peak_buffers
            .iter()
            .position(|b| b.logical_buffer_id == id)
            .unwrap_or_else(|| panic!("{label}: buffer {id} not at our peak"));
        let b = &mm.peak_buffers[rank];
        if b.size_bytes > boundary {
            assert!(rank < ours_top.len(), "{label}: buffer {id} not in our top");
        }
        assert_eq!(b.size_bytes, mib_to_bytes(&e["size_mib"]), "{label} {id}");
        assert_eq!(
            b.unpadded_size_bytes,
            mib_to_bytes(&e["unpadded_mib"]),
            "{label} {id}: unpadded"
        );
        assert_eq!(
            b.instruction,
            e["instruction_name"].as_str().unwrap(),
            "{label} {id}"
        );
        assert_eq!(b.shape, e["shape"].as_str().unwrap(), "{label} {id}: shape");
        assert_eq!(
            b.category,
            e["group_name"].as_str().unwrap(),
            "{label} {id}"
        );
        assert_eq!(b.opcode, e["op_code"].as_str().unwrap(), "{label} {id}");
        assert_eq!(b.op_name, e["tf_op_name"].as_str().unwrap(), "{label} {id}");
        let src = b
            .source
            .as_ref()
            .map(|s| format!("{}:{}", s.file, s.line))
            .unwrap_or_default();
        assert_eq!(src, e["source"].as_str().unwrap(), "{label} {id}: source");
        let span = match (b.lifetime_start, b.lifetime_end) {
            (Some(a), Some(z)) => serde_json::json!([a, z]),
            _ => Value::Null,
        };
        assert_eq!(span, e["span"], "{label} {id}: lifetime");
    }
}

#[test]
fn agrees_with_xprof_on_real_profiles() {
    let dir = root().join("fixtures/expected/xprof/memory_viewer");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 8,
        "expectations missing in {}",
        dir.display()
    );
    let mut profiles: HashMap<String, _> = HashMap::new();
    for f in &files {
        let exp: Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        let run = exp["run"].as_str().unwrap().to_string();
        let module = exp["module"].as_str().unwrap();
        let space = exp["memory_space"].as_i64().unwrap();
        let idx = profiles
            .entry(run.clone())
            .or_insert_with(|| hlo_index(&load(&run)));
        assert!(idx.errors.is_empty(), "{run}: {:?}", idx.errors);
        let m = idx.find(module).unwrap();
        assert_eq!(m.module_name, exp["module_name"].as_str().unwrap());
        let mm = module_memory(m, space).unwrap();
        check(&mm, &exp, &format!("{run} {module} space {space}"));
    }
}

#[test]
fn tool_output_lists_modules_and_selects_one() {
    let logdir = root().join("fixtures/logdir");
    let sessions: Vec<_> = xlens_store::discover(&logdir)
        .unwrap()
        .into_iter()
        .filter(|s| s.name == "jax_mlp_small")
        .collect();
    assert_eq!(sessions.len(), 1);
    let run = open_run(sessions);
    let out = run_tool("memory_viewer", &run, &[("module", "jit_mlp_loss")]);
    let json = out.json().unwrap();
    let host = &json["hosts"][0];
    assert_eq!(host["modules"].as_array().unwrap().len(), 16);
    let sel = &host["selected"];
    assert_eq!(sel["name"], "jit_mlp_loss(26)");
    assert_eq!(sel["peak_position"], 15);
    assert!(sel["peak_heap_bytes"].as_i64().unwrap() > 0);
    let bufs = sel["peak_buffers"].as_array().unwrap();
    assert!(!bufs.is_empty());
    assert!(bufs[0]["shape"].as_str().unwrap().starts_with("f32["));
    assert!(out.text().contains("jit_mlp_loss(26)"));
    assert!(out.csv().unwrap().lines().count() > 1);

    // Without a module: every module with its peak, none selected.
    let out = run_tool("memory_viewer", &run, &[]);
    let json = out.json().unwrap();
    let host = &json["hosts"][0];
    assert!(host["selected"].is_null());
    let mods = host["modules"].as_array().unwrap();
    let peaks: Vec<i64> = mods
        .iter()
        .map(|m| m["peak_heap_bytes"].as_i64().unwrap())
        .collect();
    assert!(peaks.windows(2).all(|w| w[0] >= w[1]), "largest peak first");

    // An unknown module is explained, not an error.
    let out = run_tool("memory_viewer", &run, &[("module", "nope")]);
    let json = out.json().unwrap();
    let err = json["hosts"][0]["selection_error"].as_str().unwrap();
    assert!(err.contains("jit_mlp_loss(26)"), "{err}");
}

#[test]
fn profiles_without_hlo_have_no_modules() {
    let p = load("tf_keras_cnn_small");
    let v = memory_viewer_of(&hlo_index(&p), None, 0);
    assert!(v.modules.is_empty() && v.selected.is_none() && v.hlo_errors.is_empty());
}

// ---- Hand-built buffer assignments -------------------------------------------------------------

fn f32_shape(dims: &[i64]) -> ShapeProto {
    ShapeProto {
        element_type: PrimitiveType::F32 as i32,
        dimensions: dims.to_vec(),
        layout: Some(Box::new(LayoutProto {
            minor_to_major: (0..dims.len() as i64).rev().collect(),
            ..Default::default()
        })),
        ..Default::default()
    }
}

fn instr(id: i64, name: &str, opcode: &str, dims: &[i64]) -> HloInstructionProto {
    HloInstructionProto {
        id,
        name: name.to_string(),
        opcode: opcode.to_string(),
        shape: Some(f32_shape(dims)),
        metadata: Some(OpMetadata {
            op_name: format!("jit(f)/{name}"),
            source_file: "model.py".to_string(),
            source_line: id as i32,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ev(kind: Kind, buffer_id: i64, share: i64, name: &str) -> Event {
    Event {
        kind: kind as i32,
        buffer_id,
        share_with_canonical_id: share,
        computation_name: "main".to_string(),
        instruction_name: name.to_string(),
    }
}

fn alloc(index: i64, size: i64, buffers: &[(i64, i64)]) -> BufferAllocationProto {
    BufferAllocationProto {
        index,
        size,
        assigned: buffers
            .iter()
            .map(|&(id, size)| Assigned {
                logical_buffer_id: id,
                offset: 0,
                size,
                element_type: 0,
            })
            .collect(),
        ..Default::default()
    }
}

/// A module: `p` (parameter, 64 KiB), `a`, `b`, `c` (temporaries of 32, 64 and 128 KiB), `d`
/// (shares `a`'s memory, 32 KiB), `out` (live-out, 16 KiB), `tl` (thread-local) and `tiny` (4 KiB
/// temporary). Buffer ids equal instruction ids.
fn module(events: Vec<Event>) -> HloModule {
    let ins = vec![
        instr(1, "p", "parameter", &[16384]),
        instr(2, "a", "fusion", &[8192]),
        instr(3, "b", "fusion", &[16384]),
        instr(4, "c", "dot", &[32768]),
        instr(5, "d", "fusion", &[8192]),
        instr(6, "out", "fusion", &[4096]),
        instr(7, "tl", "add", &[4096]),
        instr(8, "tiny", "add", &[1024]),
    ];
    let lbs: Vec<LogicalBufferProto> = ins
        .iter()
        .map(|i| LogicalBufferProto {
            id: i.id,
            size: xlens_analysis::base::hlo::modules::shape_unpadded_bytes(
                i.shape.as_ref().unwrap(),
            ),
            defined_at: Some(Location {
                instruction_id: i.id,
                ..Default::default()
            }),
            color: 0,
        })
        .collect();
    let size = |id: i64| lbs[(id - 1) as usize].size;
    let mut param = alloc(0, size(1), &[(1, size(1))]);
    param.is_entry_computation_parameter = true;
    let mut out = alloc(1, size(6), &[(6, size(6))]);
    out.maybe_live_out = true;
    let mut tl = alloc(2, size(7), &[(7, size(7))]);
    tl.is_thread_local = true;
    let temp = alloc(3, 1 << 20, &[2, 3, 4, 5, 8].map(|id| (id, size(id))));
    let proto = HloProto {
        hlo_module: Some(HloModuleProto {
            name: "jit_f".to_string(),
            entry_computation_name: "main".to_string(),
            entry_computation_id: 10,
            id: 42,
            computations: vec![HloComputationProto {
                name: "main".to_string(),
                id: 10,
                instructions: ins,
                ..Default::default()
            }],
            ..Default::default()
        }),
        buffer_assignment: Some(BufferAssignmentProto {
            logical_buffers: lbs,
            buffer_allocations: vec![param, out, tl, temp],
            heap_simulator_traces: vec![HeapSimulatorTrace {
                events,
                whole_module_simulation: true,
                buffer_allocation_index: 3,
            }],
            ..Default::default()
        }),
    };
    HloModule::new("jit_f(42)".to_string(), Some(42), proto)
}

const KIB: i64 = 1024;

#[test]
fn alloc_free_peak_and_lifetimes() {
    use Kind::*;
    let m = module(vec![
        ev(Alloc, 2, 0, "a"),    // 0: 32
        ev(Alloc, 3, 0, "b"),    // 1: 96
        ev(Free, 2, 0, "b"),     // 2: 64
        ev(Alloc, 4, 0, "c"),    // 3: 192 (peak)
        ev(Alloc, 8, 0, "tiny"), // 4: 196 (new peak, with a 4 KiB buffer)
        ev(Free, 8, 0, "c"),     // 5: 192
        ev(Free, 3, 0, "c"),     // 6: 128
        ev(Free, 4, 0, "c"),     // 7: 0
    ]);
    let mm = module_memory(&m, 0).unwrap();
    let trace = mm.trace.as_ref().unwrap();
    assert_eq!((trace.index, trace.chosen_by), (0, "allocation"));
    // Indefinite: the parameter (64 KiB) and the live-out output (16 KiB); not the thread-local.
    assert_eq!(mm.indefinite_bytes, 80 * KIB);
    assert_eq!(mm.peak_temp_heap_bytes, 196 * KIB);
    assert_eq!(mm.peak_heap_bytes, 276 * KIB);
    assert_eq!(mm.peak_position, 4);
    assert_eq!(mm.peak_instruction.as_deref(), Some("tiny"));
    // The series: heap after k events, plus the indefinite bytes.
    let series: Vec<i64> = mm
        .heap_series
        .iter()
        .map(|p| (p.heap_bytes - mm.indefinite_bytes) / KIB)
        .collect();
    assert_eq!(series, [0, 32, 96, 64, 192, 196, 192, 128, 0]);
    assert_eq!(mm.series_points_total, 9);
    assert_eq!(mm.series_points_shown, 9);
    // Live at the peak, largest first (ties by id): c, p (indefinite), b, out (indefinite, 16 KiB:
    // not small).
    let names: Vec<&str> = mm
        .peak_buffers
        .iter()
        .map(|b| b.instruction.as_str())
        .collect();
    assert_eq!(names, ["c", "p", "b", "out"]);
    let c = &mm.peak_buffers[0];
    assert_eq!((c.lifetime_start, c.lifetime_end), (Some(3), Some(7)));
    assert_eq!(c.shape, "f32[32768]{0}");
    assert_eq!(c.dtype, "f32");
    assert_eq!(c.op_name, "jit(f)/c");
    assert_eq!(c.source.as_ref().unwrap().line, 4);
    assert_eq!(c.category, "Temporary");
    let p = &mm.peak_buffers[1];
    assert!(p.indefinite && p.lifetime_start.is_none());
    assert_eq!(p.category, "Parameter");
    assert_eq!(mm.peak_buffers[3].category, "Output");
    // The 4 KiB buffer is grouped, never dropped.
    assert_eq!(mm.small_buffers.count, 1);
    assert_eq!(mm.small_buffers.bytes, 4 * KIB);
    assert_eq!(mm.small_buffers.threshold_bytes, SMALL_BUFFER_BYTES);
    // Totals: thread-local only counts as non-reusable.
    assert_eq!(mm.totals.thread_local_bytes, 16 * KIB);
    assert_eq!(mm.totals.non_reusable_bytes, 16 * KIB);
    assert_eq!(mm.totals.entry_parameters_bytes, 64 * KIB);
    assert_eq!(mm.totals.maybe_live_out_bytes, 16 * KIB);
    assert_eq!(mm.totals.total_allocation_bytes, (1 << 20) + 80 * KIB);
    assert!(mm.warnings.is_empty(), "{:?}", mm.warnings);
}

#[test]
fn share_with_a_live_buffer_costs_nothing() {
    use Kind::*;
    let m = module(vec![
        ev(Alloc, 2, 0, "a"),     // 0: 32
        ev(ShareWith, 5, 2, "d"), // 1: d aliases a (a still live): 32
        ev(Free, 2, 0, "d"),      // 2: a's count 2 -> 1: 32
        ev(Alloc, 3, 0, "b"),     // 3: 96 (peak)
        ev(Free, 5, 0, "b"),      // 4: count 0: a's 32 KiB released: 64
        ev(Free, 3, 0, "b"),      // 5: 0
    ]);
    let mm = module_memory(&m, 0).unwrap();
    let series: Vec<i64> = mm
        .heap_series
        .iter()
        .map(|p| (p.heap_bytes - mm.indefinite_bytes) / KIB)
        .collect();
    assert_eq!(series, [0, 32, 32, 32, 96, 64, 0]);
    assert_eq!(mm.peak_position, 3);
    let temps: Vec<(&str, Option<usize>, Option<usize>)> = mm
        .peak_buffers
        .iter()
        .filter(|b| !b.indefinite)
        .map(|b| (b.instruction.as_str(), b.lifetime_start, b.lifetime_end))
        .collect();
    // a lives until the sharer's FREE releases the memory.
    assert_eq!(temps, [("b", Some(3), Some(5)), ("a", Some(0), Some(4))]);
}

#[test]
fn share_with_after_free_revives_the_memory_as_the_sharer() {
    use Kind::*;
    let m = module(vec![
        ev(Alloc, 2, 0, "a"),     // 0: 32
        ev(Free, 2, 0, "a"),      // 1: 0
        ev(ShareWith, 5, 2, "d"), // 2: a's memory taken again by d: 32
        ev(Alloc, 3, 0, "b"),     // 3: 96 (peak)
        ev(Free, 3, 0, "b"),      // 4: 32
        ev(Free, 5, 0, "d"),      // 5: 0
    ]);
    let mm = module_memory(&m, 0).unwrap();
    let series: Vec<i64> = mm
        .heap_series
        .iter()
        .map(|p| (p.heap_bytes - mm.indefinite_bytes) / KIB)
        .collect();
    assert_eq!(series, [0, 32, 0, 32, 96, 32, 0]);
    assert_eq!(mm.peak_position, 3);
    let temps: Vec<(&str, Option<usize>, Option<usize>)> = mm
        .peak_buffers
        .iter()
        .filter(|b| !b.indefinite)
        .map(|b| (b.instruction.as_str(), b.lifetime_start, b.lifetime_end))
        .collect();
    // The revived memory is shown as d, with its own lifetime; a keeps [0, 1].
    assert_eq!(temps, [("b", Some(3), Some(4)), ("d", Some(2), Some(5))]);

    // The replay itself, on bare buffers.
    let bufs: Vec<TraceBuffer> = [(2, 32), (5, 32), (3, 64)]
        .map(|(id, kib)| TraceBuffer {
            id,
            size: kib * KIB,
            unpadded: kib * KIB,
            allocation: 0,
        })
        .to_vec();
    let trace = &m.buffer_assignment().unwrap().heap_simulator_traces[0];
    let r = replay(trace, &bufs).unwrap();
    assert_eq!(r.live_at_peak, [5, 3]);
    assert_eq!(r.spans.get(&2), Some(&(0, 1)));
    assert_eq!(r.spans.get(&5), Some(&(2, 5)));
    assert_eq!(r.allocations_seen, 1);
}

#[test]
fn inconsistent_traces_are_errors_not_panics() {
    use Kind::*;
    // Freed twice.
    let m = module(vec![
        ev(Alloc, 2, 0, "a"),
        ev(Free, 2, 0, "a"),
        ev(Free, 2, 0, "a"),
    ]);
    let err = module_memory(&m, 0).unwrap_err();
    assert!(err.contains("freed more often"), "{err}");
    // A cycle of SHARE_WITH links.
    let m = module(vec![
        ev(Alloc, 2, 0, "a"),
        ev(ShareWith, 5, 2, "d"),
        ev(ShareWith, 2, 5, "a"),
    ]);
    assert!(module_memory(&m, 0).unwrap_err().contains("cycle"));
    // Unknown buffers only advance the position; unknown kinds are reported.
    let m = module(vec![
        ev(Alloc, 2, 0, "a"),
        ev(Alloc, 99, 0, "x"),
        ev(Free, 2, 0, "a"),
    ]);
    let mm = module_memory(&m, 0).unwrap();
    assert_eq!(mm.series_points_total, 4);
    assert_eq!(mm.peak_temp_heap_bytes, 32 * KIB);
    let mut bad = ev(Alloc, 2, 0, "a");
    bad.kind = 7;
    assert!(module_memory(&module(vec![bad]), 0)
        .unwrap_err()
        .contains("unknown event kind"));
    // No buffer assignment at all.
    let mut bare = module(Vec::new());
    bare.proto.buffer_assignment = None;
    assert!(module_memory(&bare, 0).is_err());
}

#[test]
fn trace_choice_falls_back_to_the_trace_with_most_events() {
    use Kind::*;
    // The trace's first event is on an indefinite (parameter) buffer: not attributed to a
    // temporary allocation, so the trace with most events of the memory space is taken.
    let mut m = module(vec![
        ev(Alloc, 1, 0, "p"),
        ev(Alloc, 2, 0, "a"),
        ev(Free, 2, 0, "a"),
    ]);
    let mm = module_memory(&m, 0).unwrap();
    let t = mm.trace.as_ref().unwrap();
    assert_eq!(t.chosen_by, "most_events");
    // Deliberate difference: this trace touches two allocations; XProf refuses the module, we
    // show it with a warning.
    assert!(
        mm.warnings.iter().any(|w| w.contains("2 allocations")),
        "{:?}",
        mm.warnings
    );
    // Memory space 1 has no buffers: no trace, no heap.
    let mm1 = module_memory(&m, 1).unwrap();
    assert!(mm1.trace.is_none());
    assert_eq!((mm1.peak_heap_bytes, mm1.series_points_total), (0, 0));
    // A second trace, on the same temporary allocation and longer: the longer one is replayed,
    // with a warning (XProf's choice among them depends on hash-map order).
    if let Some(ba) = m.proto.buffer_assignment.as_mut() {
        ba.heap_simulator_traces = vec![
            HeapSimulatorTrace {
                events: vec![ev(Alloc, 2, 0, "a"), ev(Free, 2, 0, "a")],
                ..Default::default()
            },
            HeapSimulatorTrace {
                events: vec![ev(Alloc, 3, 0, "b"), ev(Free, 3, 0, "b")],
                ..Default::default()
            },
        ];
        let extra = alloc(4, 1 << 20, &[(4, 128 * KIB)]);
        ba.buffer_allocations[3]
            .assigned
            .retain(|a| a.logical_buffer_id != 4);
        ba.buffer_allocations.push(extra);
        ba.heap_simulator_traces.push(HeapSimulatorTrace {
            events: vec![
                ev(Alloc, 4, 0, "c"),
                ev(Free, 4, 0, "c"),
                ev(Alloc, 4, 0, "c"),
                ev(Free, 4, 0, "c"),
            ],
            ..Default::default()
        });
    }
    let m = HloModule::new(m.name.clone(), m.program_id, m.proto.clone());
    let mm = module_memory(&m, 0).unwrap();
    let t = mm.trace.as_ref().unwrap();
    assert_eq!(
        (t.index, t.chosen_by, t.traces_in_module),
        (2, "allocation", 3)
    );
    assert_eq!(mm.peak_temp_heap_bytes, 128 * KIB);
    assert_eq!(mm.warnings.len(), 1, "{:?}", mm.warnings);
}

#[test]
fn long_series_are_sampled_and_keep_the_peak() {
    use Kind::*;
    let mut events = Vec::new();
    for i in 0..3000 {
        events.push(ev(Alloc, 2, 0, "a"));
        if i == 1234 {
            events.push(ev(Alloc, 3, 0, "b"));
            events.push(ev(Free, 3, 0, "b"));
        }
        events.push(ev(Free, 2, 0, "a"));
    }
    let mm = module_memory(&module(events), 0).unwrap();
    assert_eq!(mm.series_points_total, 6003);
    assert!(mm.series_points_shown <= xlens_analysis::base::memory::heap::MAX_SERIES_POINTS);
    assert!(mm.series_sampling.contains("min and max"));
    let top = mm.heap_series.iter().map(|p| p.heap_bytes).max().unwrap();
    assert_eq!(top, mm.peak_heap_bytes);
    assert!(mm
        .heap_series
        .iter()
        .any(|p| p.index == mm.peak_position + 1 && p.heap_bytes == mm.peak_heap_bytes));
}
