//! Decodes real captures with the generated types.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::Path;

use prost::Message;
use xlens_proto::tensorflow::profiler::{x_stat, XPlane, XSpace};
use xlens_proto::tensorflow::{profile_options, ProfileOptions, ProfileRequest, ProfileResponse};
use xlens_proto::xla::heap_simulator_trace::event::Kind as HeapEventKind;
use xlens_proto::xla::hlo_instruction_proto::ReplicaGroupList;
use xlens_proto::xla::{HloProto, PrimitiveType};

/// JAX on CPU, a small MLP (same bytes as the shared `mlp_small` sample).
const JAX_CPU_MLP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"
);

/// TPU inference capture from the XProf test data, gzipped in the repo.
const TPU_INFERENCE_GZ: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fixtures/logdir/plugins/profile/tpu_inference/tpu_inference_2.xplane.pb.gz"
);

/// The same TPU capture, uncompressed, in the shared samples beside the checkout.
const TPU_INFERENCE_SHARED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/samples/xprof-testdata/logdir/plugins/profile/tpu_inference/tpu_inference_2.xplane.pb"
);

/// Reads an `.xplane.pb` or `.xplane.pb.gz` file and decodes it.
fn read_xspace(path: &str) -> XSpace {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let bytes = if path.ends_with(".gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw.as_slice())
            .read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("gunzipping {path}: {e}"));
        out
    } else {
        raw
    };
    XSpace::decode(bytes.as_slice()).unwrap_or_else(|e| panic!("decoding {path}: {e}"))
}

/// Every HloProto attached to the `/host:metadata` plane, keyed by the
/// event metadata name (the program's name).
fn hlo_protos(space: &XSpace) -> BTreeMap<String, HloProto> {
    let plane: &XPlane = space
        .planes
        .iter()
        .find(|p| p.name == "/host:metadata")
        .expect("no /host:metadata plane");
    let hlo_stat_id = plane
        .stat_metadata
        .values()
        .find(|m| m.name == "Hlo Proto")
        .map(|m| m.id)
        .expect("no 'Hlo Proto' stat metadata");

    let mut out = BTreeMap::new();
    for (id, em) in &plane.event_metadata {
        assert_eq!(*id, em.id, "event metadata key and id differ");
        for stat in em.stats.iter().filter(|s| s.metadata_id == hlo_stat_id) {
            let Some(x_stat::Value::BytesValue(bytes)) = &stat.value else {
                panic!("'Hlo Proto' stat of {} is not bytes", em.name);
            };
            let hlo = HloProto::decode(bytes.as_slice())
                .unwrap_or_else(|e| panic!("decoding HloProto of {}: {e}", em.name));
            out.insert(em.name.clone(), hlo);
        }
    }
    out
}

/// Checks that hold for any optimized module with a buffer assignment.
fn check_hlo(name: &str, hlo: &HloProto) {
    let module = hlo.hlo_module.as_ref().expect("hlo_module missing");
    assert!(!module.name.is_empty(), "{name}: empty module name");
    assert!(!module.computations.is_empty(), "{name}: no computations");

    let entry = module
        .computations
        .iter()
        .find(|c| c.id == module.entry_computation_id)
        .unwrap_or_else(|| panic!("{name}: entry computation id not found"));
    assert_eq!(entry.name, module.entry_computation_name);
    assert!(
        entry.instructions.iter().any(|i| i.id == entry.root_id),
        "{name}: entry root id not among its instructions"
    );

    for comp in &module.computations {
        for inst in &comp.instructions {
            assert!(
                !inst.opcode.is_empty(),
                "{name}: {} has no opcode",
                inst.name
            );
            assert!(inst.shape.is_some(), "{name}: {} has no shape", inst.name);
        }
    }
}

#[test]
fn jax_cpu_mlp_hlo_protos_decode() {
    let space = read_xspace(JAX_CPU_MLP);
    assert!(!space.planes.is_empty());
    let hlos = hlo_protos(&space);
    assert!(!hlos.is_empty(), "no HLO protos found");
    println!(
        "{} HLO protos: {:?}",
        hlos.len(),
        hlos.keys().collect::<Vec<_>>()
    );

    let mut saw_dot = false;
    let mut saw_fusion = false;
    let mut saw_parameter = false;
    let mut saw_dims = false;
    let mut saw_dot_dims = false;
    let mut saw_metadata = false;
    let mut saw_alloc = false;
    let mut saw_free = false;

    for (name, hlo) in &hlos {
        check_hlo(name, hlo);
        let module = hlo.hlo_module.as_ref().expect("hlo_module missing");
        assert!(
            module.name.starts_with("jit_"),
            "unexpected module name {}",
            module.name
        );

        for inst in module.computations.iter().flat_map(|c| &c.instructions) {
            match inst.opcode.as_str() {
                "dot" => {
                    saw_dot = true;
                    let dnums = inst
                        .dot_dimension_numbers
                        .as_ref()
                        .expect("dot without dimension numbers");
                    saw_dot_dims |= !dnums.lhs_contracting_dimensions.is_empty()
                        && !dnums.rhs_contracting_dimensions.is_empty();
                }
                "fusion" => {
                    saw_fusion = true;
                    assert!(!inst.fusion_kind.is_empty(), "fusion without kind");
                    assert!(!inst.called_computation_ids.is_empty());
                }
                "parameter" => saw_parameter = true,
                _ => {}
            }
            if let Some(shape) = &inst.shape {
                if !shape.dimensions.is_empty() {
                    saw_dims = true;
                    assert_ne!(shape.element_type(), PrimitiveType::Invalid);
                    assert!(shape.dimensions.iter().all(|&d| d >= 0));
                }
            }
            if let Some(md) = &inst.metadata {
                saw_metadata |= !md.op_name.is_empty();
            }
        }

        let ba = hlo
            .buffer_assignment
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no buffer assignment"));
        assert!(!ba.buffer_allocations.is_empty(), "{name}: no allocations");
        assert!(!ba.logical_buffers.is_empty(), "{name}: no logical buffers");
        for alloc in &ba.buffer_allocations {
            assert!(alloc.size >= 0);
            for a in &alloc.assigned {
                assert!(a.offset >= 0 && a.offset + a.size <= alloc.size);
            }
        }
        let buffer_ids: HashSet<i64> = ba.logical_buffers.iter().map(|b| b.id).collect();
        for a in ba.buffer_allocations.iter().flat_map(|a| &a.assigned) {
            assert!(
                buffer_ids.contains(&a.logical_buffer_id),
                "{name}: assigned buffer {} is not a logical buffer",
                a.logical_buffer_id
            );
        }
        for ev in ba.heap_simulator_traces.iter().flat_map(|t| &t.events) {
            assert!(
                buffer_ids.contains(&ev.buffer_id),
                "{name}: heap event for unknown buffer {}",
                ev.buffer_id
            );
        }
        // Trivial modules (a single copy or broadcast) have no heap trace;
        // the model's own modules do.
        if module.name.starts_with("jit_mlp_") {
            assert!(
                !ba.heap_simulator_traces.is_empty(),
                "{name}: no heap simulator traces"
            );
        }
        for ev in ba.heap_simulator_traces.iter().flat_map(|t| &t.events) {
            match ev.kind() {
                HeapEventKind::Alloc => saw_alloc = true,
                HeapEventKind::Free => saw_free = true,
                HeapEventKind::ShareWith => {}
            }
        }
    }

    assert!(saw_dot, "no dot instruction");
    assert!(saw_fusion, "no fusion instruction");
    assert!(saw_parameter, "no parameter instruction");
    assert!(saw_dims, "no instruction shape with dimensions");
    assert!(saw_dot_dims, "no dot with contracting dimensions");
    assert!(saw_metadata, "no instruction with op_name metadata");
    assert!(saw_alloc, "no ALLOC heap event");
    assert!(saw_free, "no FREE heap event");
}

#[test]
fn tpu_inference_hlo_protos_decode() {
    let Some(path) = [TPU_INFERENCE_GZ, TPU_INFERENCE_SHARED]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        // The committed fixture is always there; CI must never pass without it.
        assert!(
            std::env::var_os("CI").is_none(),
            "no TPU inference sample present"
        );
        println!("skipping: no TPU inference sample present");
        return;
    };
    let space = read_xspace(path);
    let hlos = hlo_protos(&space);
    assert!(!hlos.is_empty(), "no HLO protos found");
    println!(
        "{} HLO protos: {:?}",
        hlos.len(),
        hlos.keys().collect::<Vec<_>>()
    );

    let mut saw_all_reduce_groups = false;
    let mut saw_fusion = false;
    let mut saw_stack_frame = false;
    let mut saw_heap_events = false;
    for (name, hlo) in &hlos {
        check_hlo(name, hlo);
        let module = hlo.hlo_module.as_ref().expect("hlo_module missing");
        let frames = module
            .stack_frame_index
            .as_ref()
            .map_or(0, |s| s.stack_frames.len());
        for inst in module.computations.iter().flat_map(|c| &c.instructions) {
            match inst.opcode.as_str() {
                "all-reduce" => {
                    let groups = match &inst.replica_group_list {
                        Some(ReplicaGroupList::CollectiveDeviceList(l)) => {
                            match &l.iota_replica_group_list {
                                Some(iota) => usize::try_from(iota.num_replica_groups).unwrap_or(0),
                                None => l.replica_groups.len(),
                            }
                        }
                        Some(ReplicaGroupList::IotaCollectiveDeviceList(l)) => {
                            usize::try_from(l.num_replica_groups).unwrap_or(0)
                        }
                        Some(ReplicaGroupList::MeshAxesReplicaGroupList(l)) => l.axes.len(),
                        None => inst.replica_groups.len(),
                    };
                    saw_all_reduce_groups |= groups > 0;
                    assert!(
                        !inst.called_computation_ids.is_empty(),
                        "all-reduce without reducer"
                    );
                }
                "fusion" => saw_fusion = true,
                _ => {}
            }
            if let Some(md) = &inst.metadata {
                if md.stack_frame_id > 0 {
                    saw_stack_frame = true;
                    let id = usize::try_from(md.stack_frame_id).unwrap_or(usize::MAX);
                    assert!(id <= frames, "{name}: stack frame {id} out of range");
                }
            }
        }
        if let Some(ba) = &hlo.buffer_assignment {
            saw_heap_events |= ba
                .heap_simulator_traces
                .iter()
                .any(|t| t.events.iter().any(|e| e.kind() == HeapEventKind::Alloc));
        }
    }
    assert!(saw_all_reduce_groups, "no all-reduce with replica groups");
    assert!(saw_fusion, "no fusion");
    assert!(saw_stack_frame, "no op metadata pointing at a stack frame");
    assert!(saw_heap_events, "no heap simulator ALLOC events");
}

#[test]
fn profile_request_round_trips() {
    let mut opts = ProfileOptions {
        version: 1,
        host_tracer_level: 2,
        device_tracer_level: 1,
        python_tracer_level: 1,
        enable_hlo_proto: true,
        duration_ms: 2000,
        session_id: "session_1".to_owned(),
        ..Default::default()
    };
    opts.set_device_type(profile_options::DeviceType::Tpu);
    opts.advanced_configuration.insert(
        "tpu_trace_mode".to_owned(),
        profile_options::AdvancedConfigValue {
            value: Some(profile_options::advanced_config_value::Value::Int64Value(2)),
        },
    );
    let req = ProfileRequest {
        duration_ms: 2000,
        tools: vec!["xplane.pb".to_owned()],
        opts: Some(opts),
        repository_root: "/tmp/logdir/plugins/profile".to_owned(),
        session_id: "session_1".to_owned(),
        host_name: "localhost".to_owned(),
        emit_xspace: true,
        ..Default::default()
    };

    let bytes = req.encode_to_vec();
    // emit_xspace is field 9, varint: tag byte 0x48 followed by 1.
    assert!(bytes.windows(2).any(|w| w == [0x48, 0x01]));
    let back = ProfileRequest::decode(bytes.as_slice()).expect("decode ProfileRequest");
    assert_eq!(back, req);
    assert!(back.emit_xspace);
    assert_eq!(
        back.opts.as_ref().map(|o| o.device_type()),
        Some(profile_options::DeviceType::Tpu)
    );

    // A response carrying the capture inline.
    let resp = ProfileResponse {
        empty_trace: false,
        xspace: Some(XSpace {
            hostnames: vec!["localhost".to_owned()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let back = ProfileResponse::decode(resp.encode_to_vec().as_slice()).expect("decode response");
    assert_eq!(back, resp);
}
