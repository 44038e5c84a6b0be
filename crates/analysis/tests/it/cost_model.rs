//! Cost model: agreement with XLA's own per-op `flops` / `bytes_accessed` on the TPU sample, and
//! dot / convolution FLOPs against hand-computed values on the JAX CPU samples and hand-built HLO.

use xlens_analysis::base::hlo::cost_model::{
    compare_with_xla, module_costs, xla_costs, Cost, CostModel,
};
use xlens_analysis::base::hlo::modules::{hlo_index, HloIndex, HloModule};
use xlens_proto::xla::{
    ConvolutionDimensionNumbers, HloComputationProto, HloInstructionProto, HloModuleProto,
    HloProto, PrimitiveType, ShapeProto, Window, WindowDimension,
};

use crate::common;
use common::load;

fn cost_of(idx: &HloIndex, module: &str, instruction: &str) -> (String, Cost) {
    let m = idx.find(module).unwrap();
    let ins = m
        .instruction_by_name(instruction)
        .unwrap_or_else(|| panic!("no {instruction} in {module}"));
    (ins.opcode.clone(), CostModel::new(m).cost(ins))
}

/// Every TPU op that carries XLA's figures is compared with ours; the agreement is printed (run
/// with `--nocapture`) and must be exact on FLOPs and within 5% on bytes for every op.
#[test]
fn tpu_agrees_with_xla_cost_stats() {
    let p = load("tpu_inference");
    let idx = hlo_index(&p);
    let xla = xla_costs(&p);
    assert!(!xla.is_empty(), "the TPU sample carries XLA cost stats");
    let a = compare_with_xla(&p, &idx);
    assert!(a.unmatched.is_empty(), "unmatched: {:?}", a.unmatched);
    assert_eq!(a.rows.len(), xla.len(), "every XLA figure is compared");
    println!(
        "{:<40} {:<16} {:>14} {:>14} {:>14} {:>14}",
        "instruction", "opcode", "flops ours", "flops XLA", "bytes ours", "bytes XLA"
    );
    for r in &a.rows {
        println!(
            "{:<40} {:<16} {:>14} {:>14} {:>14} {:>14}",
            format!(
                "{}/{}",
                r.module.split('(').next().unwrap_or(""),
                r.instruction
            ),
            r.opcode,
            r.ours.flops,
            r.xla_flops.unwrap_or(f64::NAN),
            r.ours.bytes_accessed,
            r.xla_bytes_accessed.unwrap_or(f64::NAN)
        );
    }
    let exact_flops = a
        .rows
        .iter()
        .filter(|r| r.flops_rel_error() == Some(0.0))
        .count();
    let bytes_1e6 = a
        .rows
        .iter()
        .filter(|r| r.bytes_rel_error().is_some_and(|e| e <= 1e-6))
        .count();
    let ((fo, fx), (bo, bx)) = a.totals();
    println!(
        "{} ops compared: FLOPs exact on {}, bytes within 1e-6 on {}, both within 5% on {}; totals: FLOPs {fo} vs {fx}, bytes {bo} vs {bx}",
        a.rows.len(),
        exact_flops,
        bytes_1e6,
        a.within(0.05)
    );
    assert_eq!(exact_flops, a.rows.len(), "FLOPs exact on every op");
    assert_eq!(a.within(0.05), a.rows.len(), "all within 5%");
    // XLA sums in f32: 5368709124 bytes (f32[5,1024,1024,256] output + a 4-byte scalar) is
    // written as 5368709120, so bytes agree to float precision rather than exactly.
    assert_eq!(bytes_1e6, a.rows.len());
    // The opcodes the sample exercises.
    let mut ops: Vec<&str> = a.rows.iter().map(|r| r.opcode.as_str()).collect();
    ops.sort_unstable();
    ops.dedup();
    assert_eq!(
        ops,
        [
            "all-reduce",
            "broadcast",
            "copy-done",
            "copy-start",
            "fusion"
        ]
    );
}

#[test]
fn tpu_fusion_is_body_flops_and_boundary_bytes() {
    let p = load("tpu_inference");
    let idx = hlo_index(&p);
    let (op, c) = cost_of(&idx, "jit_f", "broadcast_add_fusion");
    assert_eq!(op, "fusion");
    let elems = 5 * 1024 * 1024 * 256i64;
    // One add per element; the broadcast constant is a scalar, so not read from memory.
    assert_eq!(c.flops, elems);
    // Read the operand once, write the output once.
    assert_eq!(c.bytes_accessed, 2 * 4 * elems);
    let (op, c) = cost_of(&idx, "jit__psum", "all-reduce");
    assert_eq!(op, "all-reduce");
    assert_eq!((c.flops, c.bytes_accessed), (elems, 2 * 4 * elems));
}

#[test]
fn jax_cpu_dots_from_shapes() {
    let p = load("jax_mlp_small");
    let idx = hlo_index(&p);
    // dot.2 = f32[256,256] dot(f32[32,256], f32[32,256]), contracting {0}x{0}.
    let (op, c) = cost_of(&idx, "jit_mlp_loss", "dot.2");
    assert_eq!(op, "dot");
    assert_eq!(c.flops, 2 * 256 * 256 * 32);
    assert_eq!(c.bytes_accessed, 4 * (256 * 256 + 2 * 32 * 256));
    // dot.3 = f32[256,10] from f32[32,256] and f32[32,10].
    let (_, c) = cost_of(&idx, "jit_mlp_loss", "dot.3");
    assert_eq!(c.flops, 2 * 256 * 10 * 32);

    // Every dot of every module: 2 × output elements × contracted size, by hand.
    let mut dots = 0;
    for m in &idx.modules {
        let costs = module_costs(m);
        for comp in &m.proto.hlo_module.as_ref().unwrap().computations {
            for ins in comp.instructions.iter().filter(|i| i.opcode == "dot") {
                let lhs = m.instruction(ins.operand_ids[0]).unwrap();
                let dn = ins.dot_dimension_numbers.as_ref().unwrap();
                let k: i64 = dn
                    .lhs_contracting_dimensions
                    .iter()
                    .map(|&d| lhs.shape.as_ref().unwrap().dimensions[d as usize])
                    .product();
                let out: i64 = ins.shape.as_ref().unwrap().dimensions.iter().product();
                assert_eq!(costs[&ins.id].flops, 2 * out * k, "{}", ins.name);
                dots += 1;
            }
        }
    }
    assert_eq!(dots, 15, "11 dots in jit_mlp_loss, 4 in jit_mlp_apply");
}

#[test]
fn jax_transformer_batched_dot_and_fusions() {
    let p = load("jax_tfm_small");
    let idx = hlo_index(&p);
    let m = idx.find("jit_tf_loss").unwrap();
    // dot.80 = f32[4,4,32,16] dot(f32[4,4,32,32], f32[4,4,32,16]), batch {0,1}, contracting {3}x{2}.
    let ins = m.instruction_by_name("dot.80").unwrap();
    let mut model = CostModel::new(m);
    assert_eq!(model.cost(ins).flops, 2 * (4 * 4 * 32 * 16) * 32);
    // The fusion holding it costs at least its dot; its bytes are counted at the boundary only.
    let comp = m.computation_of(ins.id).unwrap();
    let fusion = m
        .proto
        .hlo_module
        .as_ref()
        .unwrap()
        .computations
        .iter()
        .flat_map(|c| c.instructions.iter())
        .find(|i| i.opcode == "fusion" && i.called_computation_ids.first() == Some(&comp.id))
        .expect("a fusion calls the dot's computation");
    let fc = model.cost(fusion);
    assert!(fc.flops >= 2 * (4 * 4 * 32 * 16) * 32);
    let boundary: i64 = fusion
        .operand_ids
        .iter()
        .map(|&o| {
            xlens_analysis::base::hlo::modules::shape_unpadded_bytes(
                m.instruction(o).unwrap().shape.as_ref().unwrap(),
            )
        })
        .sum::<i64>()
        + xlens_analysis::base::hlo::modules::shape_unpadded_bytes(fusion.shape.as_ref().unwrap());
    assert!(
        fc.bytes_accessed <= boundary,
        "{} > {boundary}",
        fc.bytes_accessed
    );
    assert!(fc.bytes_accessed > 0);
    // Transcendentals (tanh, exp, rsqrt, log) are counted apart from FLOPs.
    let total: Cost = module_costs(m).values().fold(Cost::default(), |mut a, c| {
        a.flops += c.flops;
        a.transcendentals += c.transcendentals;
        a
    });
    assert!(total.transcendentals > 0 && total.flops > total.transcendentals);
}

fn arr(dims: &[i64]) -> ShapeProto {
    ShapeProto {
        element_type: PrimitiveType::F32 as i32,
        dimensions: dims.to_vec(),
        ..Default::default()
    }
}

fn param(id: i64, n: i64, dims: &[i64]) -> HloInstructionProto {
    HloInstructionProto {
        id,
        name: format!("p{n}"),
        opcode: "parameter".into(),
        parameter_number: n,
        shape: Some(arr(dims)),
        ..Default::default()
    }
}

/// A 2-D NHWC convolution: input [n,h,w,c], kernel HWIO, one window dimension per spatial dim.
fn conv_module(
    input: [i64; 4],
    kernel: [i64; 4],
    output: [i64; 4],
    window: &[(i64, i64, i64)],
    feature_group_count: i64,
) -> HloModule {
    let dn = ConvolutionDimensionNumbers {
        input_batch_dimension: 0,
        input_feature_dimension: 3,
        input_spatial_dimensions: vec![1, 2],
        kernel_spatial_dimensions: vec![0, 1],
        kernel_input_feature_dimension: 2,
        kernel_output_feature_dimension: 3,
        output_batch_dimension: 0,
        output_feature_dimension: 3,
        output_spatial_dimensions: vec![1, 2],
    };
    let conv = HloInstructionProto {
        id: 3,
        name: "convolution.1".into(),
        opcode: "convolution".into(),
        shape: Some(arr(&output)),
        operand_ids: vec![1, 2],
        convolution_dimension_numbers: Some(Box::new(dn)),
        feature_group_count,
        batch_group_count: 1,
        window: Some(Box::new(Window {
            dimensions: window
                .iter()
                .enumerate()
                .map(|(i, &(stride, pad_lo, pad_hi))| WindowDimension {
                    size: kernel[i],
                    stride,
                    padding_low: pad_lo,
                    padding_high: pad_hi,
                    window_dilation: 1,
                    base_dilation: 1,
                    window_reversal: false,
                })
                .collect(),
        })),
        ..Default::default()
    };
    let comp = HloComputationProto {
        name: "main".into(),
        id: 1,
        root_id: 3,
        instructions: vec![param(1, 0, &input), param(2, 1, &kernel), conv],
        ..Default::default()
    };
    let proto = HloProto {
        hlo_module: Some(HloModuleProto {
            name: "conv".into(),
            entry_computation_id: 1,
            computations: vec![comp],
            ..Default::default()
        }),
        ..Default::default()
    };
    HloModule::new("conv(1)".into(), Some(1), proto)
}

fn conv_flops(m: &HloModule) -> i64 {
    CostModel::new(m)
        .cost(m.instruction_by_name("convolution.1").unwrap())
        .flops
}

#[test]
fn convolution_flops_by_hand() {
    // 3x3 SAME convolution, 5x5x3 → 5x5x8, batch 2: per spatial dim the (kernel, output) pairs
    // that hit the input are 4 + 5 + 4 = 13, so 13 × 13 taps in all (not 3·3·5·5 = 225).
    let m = conv_module(
        [2, 5, 5, 3],
        [3, 3, 3, 8],
        [2, 5, 5, 8],
        &[(1, 1, 1), (1, 1, 1)],
        1,
    );
    assert_eq!(conv_flops(&m), 2 * 3 * 8 * 2 * 13 * 13);
    // VALID, stride 2: 7 → 3 outputs, every tap lands: 3 × 3 pairs per dim.
    let m = conv_module(
        [1, 7, 7, 4],
        [3, 3, 4, 6],
        [1, 3, 3, 6],
        &[(2, 0, 0), (2, 0, 0)],
        1,
    );
    assert_eq!(conv_flops(&m), 2 * 4 * 6 * 9 * 9);
    // Depthwise: feature_group_count = input features, kernel input features 1.
    let m = conv_module(
        [1, 7, 7, 4],
        [3, 3, 1, 4],
        [1, 5, 5, 4],
        &[(1, 0, 0), (1, 0, 0)],
        4,
    );
    let (cin, groups) = (4, 4);
    assert_eq!(conv_flops(&m), 2 * (cin / groups) * 4 * 15 * 15);
    // Equivalent to the textbook formula when nothing is padded: 2 × out pixels × K × K × Cin × Cout.
    assert_eq!(2 * 4 * 15 * 15, 2 * 5 * 5 * 3 * 3 * 4);
}

#[test]
fn peaks_from_profile_table_and_user() {
    use xlens_analysis::base::peaks::{lookup, peak_spec, PeakSource, UserPeaks};
    // TPU: the planes state their peaks; they agree with the published v6e figures.
    let p = load("tpu_inference");
    let s = peak_spec(&p, UserPeaks::default());
    assert_eq!(s.flops_source, PeakSource::Profile);
    assert_eq!(s.flops_per_second, Some(918e12));
    assert!((s.bytes_per_second.unwrap() - 1637.993152512e9).abs() < 1.0);
    let table = lookup(&s.model).unwrap();
    assert_eq!(table.peak_teraflops_per_second, 918.0);
    assert!((table.peak_hbm_gigabytes_per_second - 1638.0).abs() < 5.0);
    assert!(s.ridge_point().unwrap() > 500.0);
    // CPU: user-given figures win and are labelled so.
    let p = load("jax_mlp_small");
    let s = peak_spec(
        &p,
        UserPeaks {
            flops_per_second: Some(1e12),
            bytes_per_second: Some(1e11),
        },
    );
    assert_eq!(
        (s.flops_source, s.bandwidth_source),
        (PeakSource::UserGiven, PeakSource::UserGiven)
    );
    assert_eq!(s.ridge_point(), Some(10.0));
    // CPU without figures: measured here, and said so.
    let s = peak_spec(&p, UserPeaks::default());
    assert_eq!(s.flops_source, PeakSource::MeasuredHere);
    assert!(s.flops_per_second.unwrap() > 0.0 && s.bytes_per_second.unwrap() > 0.0);
    assert!(
        s.note.contains("not necessarily the profiled one"),
        "{}",
        s.note
    );
}
