use super::*;
use xlens_proto::xla::TileProto;

#[test]
fn op_names_read_from_the_bytes_equal_the_decoded_modules() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/logdir/plugins/profile"
    );
    let mut checked = 0;
    for run in [
        "jax_mlp_small",
        "jax_tfm_small",
        "tf_keras_mlp_xla_small",
        "tpu_inference",
    ] {
        for f in std::fs::read_dir(format!("{dir}/{run}")).unwrap() {
            let path = f.unwrap().path();
            let p = xlens_loader::load_path(&path, xlens_store::Format::XSpace).unwrap();
            let idx = hlo_index(&p);
            let names = OpNames::of(&p);
            assert!(!idx.modules.is_empty(), "{run}");
            assert_eq!(names.modules.len(), idx.modules.len(), "{run}");
            for m in &idx.modules {
                let comps = m.proto.hlo_module.iter().flat_map(|x| &x.computations);
                for ins in comps.flat_map(|c| &c.instructions) {
                    let want = m
                        .instruction_by_name(&ins.name)
                        .and_then(|i| i.metadata.as_ref())
                        .map(|md| md.op_name.as_str())
                        .filter(|n| !n.is_empty());
                    // By program name, module name and program id, as modules are found.
                    let mut queries = vec![m.name.clone()];
                    if idx.find(&m.module_name).is_ok() {
                        queries.push(m.module_name.clone());
                    }
                    queries.extend(m.program_id.map(|id| id.to_string()));
                    for q in &queries {
                        let want = idx.find(q).ok().and(want);
                        assert_eq!(names.op_name(q, &ins.name), want, "{run} {q} {}", ins.name);
                    }
                    checked += usize::from(want.is_some());
                }
            }
            // Cut short anywhere, a module's bytes never panic the reader.
            let (_, _, bytes) = hlo_protos(&p)[0];
            for cut in (0..bytes.len()).step_by(97) {
                let mut m = ModuleOpNames {
                    name: "",
                    module_name: "",
                    program_id: None,
                    by_instruction: HashMap::new(),
                };
                let _ = read_op_names(&bytes[..cut], &mut m);
            }
        }
    }
    assert!(checked > 100, "{checked} instructions with an op name");
}

/// Unknown fields of every wire type (a group too) are skipped as protobuf decoding skips
/// them, and bytes prost rejects (a field number 0) are rejected.
#[test]
fn op_names_skip_what_protobuf_skips() {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    fn len(num: u64, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, num << 3 | 2);
        varint(&mut out, body.len() as u64);
        out.extend_from_slice(body);
        out
    }
    let mut unknown = Vec::new();
    varint(&mut unknown, 1000 << 3 | 3); // group 1000 { 1: 5 }
    unknown.extend_from_slice(&[0x08, 0x05]);
    varint(&mut unknown, 1000 << 3 | 4);
    varint(&mut unknown, 1001 << 3 | 5); // fixed32
    unknown.extend_from_slice(&[1, 2, 3, 4]);
    varint(&mut unknown, 1002 << 3 | 1); // fixed64
    unknown.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let hlo = |unknown: &[u8]| {
        let md = [len(2, b"jit(f)/add"), unknown.to_vec()].concat();
        let ins = [len(1, b"add.1"), unknown.to_vec(), len(7, &md)].concat();
        let module = [len(1, b"jit_f"), len(3, &len(2, &ins))].concat();
        [unknown.to_vec(), len(1, &module)].concat()
    };
    fn read(bytes: &[u8]) -> Option<(&str, HashMap<&str, &str>)> {
        let mut m = ModuleOpNames {
            name: "",
            module_name: "",
            program_id: None,
            by_instruction: HashMap::new(),
        };
        read_op_names(bytes, &mut m)?;
        Some((m.module_name, m.by_instruction))
    }
    let good = hlo(&unknown);
    let proto = HloProto::decode(good.as_slice()).unwrap();
    let comps = &proto.hlo_module.as_ref().unwrap().computations;
    let ins = &comps[0].instructions[0];
    assert_eq!(ins.metadata.as_ref().unwrap().op_name, "jit(f)/add");
    let (module, names) = read(&good).unwrap();
    assert_eq!(module, "jit_f");
    assert_eq!(names.get(ins.name.as_str()), Some(&"jit(f)/add"));
    // Field number 0, an unclosed group, an end of group with no start.
    for bad in [&[0x00, 0x00][..], &[0xc3, 0x3e], &[0xc4, 0x3e]] {
        assert!(HloProto::decode(hlo(bad).as_slice()).is_err(), "{bad:x?}");
        assert!(read(&hlo(bad)).is_none(), "{bad:x?}");
    }
}

fn arr(t: PrimitiveType, dims: &[i64], m2m: Option<&[i64]>) -> ShapeProto {
    ShapeProto {
        element_type: t as i32,
        dimensions: dims.to_vec(),
        layout: m2m.map(|m| {
            Box::new(LayoutProto {
                minor_to_major: m.to_vec(),
                ..Default::default()
            })
        }),
        ..Default::default()
    }
}

#[test]
fn shape_texts() {
    assert_eq!(
        shape_text(&arr(PrimitiveType::F32, &[32, 2048], Some(&[1, 0]))),
        "f32[32,2048]{1,0}"
    );
    assert_eq!(
        shape_text_no_layout(&arr(PrimitiveType::F32, &[32, 2048], Some(&[1, 0]))),
        "f32[32,2048]"
    );
    assert_eq!(
        shape_text(&arr(PrimitiveType::S32, &[], Some(&[]))),
        "s32[]"
    );
    let mut tiled = arr(PrimitiveType::Bf16, &[8, 128], Some(&[1, 0]));
    if let Some(l) = tiled.layout.as_mut() {
        l.tiles = vec![
            TileProto {
                dimensions: vec![8, 128],
            },
            TileProto {
                dimensions: vec![2, 1],
            },
        ];
        l.memory_space = 1;
    }
    assert_eq!(shape_text(&tiled), "bf16[8,128]{1,0:T(8,128)(2,1)S(1)}");
    let mut scalar = arr(PrimitiveType::F32, &[], Some(&[]));
    if let Some(l) = scalar.layout.as_mut() {
        l.tiles = vec![TileProto {
            dimensions: vec![128],
        }];
    }
    assert_eq!(shape_text(&scalar), "f32[]{:T(128)}");
    let mut dynamic = arr(PrimitiveType::Pred, &[16, 4], None);
    dynamic.is_dynamic_dimension = vec![true, false];
    assert_eq!(shape_text(&dynamic), "pred[<=16,4]");
    let tuple = ShapeProto {
        element_type: PrimitiveType::Tuple as i32,
        tuple_shapes: (0..6)
            .map(|_| arr(PrimitiveType::U32, &[], Some(&[])))
            .collect(),
        ..Default::default()
    };
    assert_eq!(
        shape_text(&tuple),
        "(u32[], u32[], u32[], u32[], u32[], /*index=5*/u32[])"
    );
    assert_eq!(shape_unpadded_bytes(&tuple), 48);
}

#[test]
fn sizes_and_names() {
    assert_eq!(
        shape_unpadded_bytes(&arr(PrimitiveType::F32, &[32, 2048], None)),
        262_144
    );
    assert_eq!(
        shape_unpadded_bytes(&arr(PrimitiveType::Bf16, &[], None)),
        2
    );
    assert_eq!(
        shape_unpadded_bytes(&arr(PrimitiveType::Token, &[], None)),
        0
    );
    assert_eq!(dtype_name(PrimitiveType::F8e4m3fn as i32), "f8e4m3fn");
    assert_eq!(dtype_name(999), "unknown");
    assert_eq!(
        program_id_from_name("jit_f(12190760917235803885)"),
        Some(12190760917235803885)
    );
    assert_eq!(program_id_from_name("a_inference_x__.11(0)"), Some(0));
    assert_eq!(program_id_from_name("jit_f"), None);
}

#[test]
fn subshapes() {
    let inner = ShapeProto {
        element_type: PrimitiveType::Tuple as i32,
        tuple_shapes: vec![
            arr(PrimitiveType::F32, &[2], None),
            arr(PrimitiveType::S8, &[3], None),
        ],
        ..Default::default()
    };
    let outer = ShapeProto {
        element_type: PrimitiveType::Tuple as i32,
        tuple_shapes: vec![arr(PrimitiveType::F16, &[7], None), inner],
        ..Default::default()
    };
    // XLA's buffer tools take the top-level element named by the last index.
    assert_eq!(shape_text(buffer_subshape(&outer, &[1, 0])), "f16[7]");
    assert_eq!(shape_text(subshape(&outer, &[1, 0]).unwrap()), "f32[2]");
    assert!(subshape(&outer, &[5]).is_none());
}
