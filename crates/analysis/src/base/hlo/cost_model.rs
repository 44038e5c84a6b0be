//! A cost model for HLO: FLOPs, transcendentals and bytes accessed per instruction, from shapes.
//!
//! The rules follow the facts of XLA's own `HloCostAnalysis` (the numbers the TPU runtime writes
//! into profiles as `flops` / `bytes_accessed`), so ours can be compared with XLA's wherever a
//! profile carries both ([`compare_with_xla`]):
//!
//! * **dot**: 2 × (output elements × product of the lhs contracting dimensions) — one
//!   multiply-add is two FLOPs.
//! * **convolution**: 2 × (input features / `feature_group_count`) × output features ×
//!   (batch / `batch_group_count`) × the number of valid (kernel, output) position pairs per
//!   spatial dimension (padding, stride, base and window dilation taken into account).
//! * **elementwise** ops (add, multiply, compare, select, convert, ...): 1 FLOP per output element.
//! * **transcendentals** (exp, log, tanh, logistic, sqrt, rsqrt, power, sin, cos, erf, ...): 1 per
//!   output element, counted in [`Cost::transcendentals`] and *not* in [`Cost::flops`] — XLA's
//!   convention, so that our `flops` mean what the profile's `flops` mean. Consumers that want
//!   "all arithmetic" add the two.
//! * **reduce**: (input elements − output elements) × the FLOPs of one application of the
//!   reducer (1 for `add`): an n-element sum is n − 1 additions. **reduce-window**: (window size
//!   − 1) × output elements × reducer; **map**: output elements × mapped function.
//! * **fusion**: FLOPs and transcendentals are the sum over the fused computation's instructions
//!   (recursively); bytes are counted only at the fusion boundary — the output (for an in-place
//!   `dynamic-update-slice` root only the update), each fused parameter as read by its users
//!   (only the slices taken when it is only sliced), and constants of more than one element.
//! * **collectives**: all-reduce does one FLOP per output element (XLA assumes a 2-way reduction)
//!   and moves operands + output; all-gather, reduce-scatter, all-to-all, collective-permute move
//!   their payload (operands + output) with 0 FLOPs. The cost of an asynchronous collective is
//!   booked on its `*-start`; its `*-done` costs nothing.
//! * **async copies**: `copy-start` reads the payload, `copy-done` writes it — each half books the
//!   payload once (what the TPU runtime reports for both halves).
//! * **data movement** (copy, broadcast, transpose, reshape, concatenate, pad, slice, gather, ...):
//!   0 FLOPs; bytes are operands + output, except slice / dynamic-slice / gather (2 × output +
//!   indices: only the part read is counted), dynamic-update-slice (2 × update + indices) and
//!   scatter (3 × updates + indices).
//! * no cost: parameter, constant, get-tuple-element, bitcast, after-all, add-dependency;
//!   `tuple` touches only its index table.
//! * **while** counts one iteration of body + condition (the trip count is not known statically);
//!   **conditional** the most expensive branch; **call** its computation.
//! * **custom-call**: unknown (`known: false`, 0 FLOPs); its bytes are operands + output, a lower
//!   bound on its memory traffic.
//!
//! Sizes are XLA's unpadded sizes ([`shape_unpadded_bytes`]): elements × element size, without
//! tiling padding. XLA keeps its sums in 32-bit floats, so large figures in profiles can differ
//! from ours in the last few bits (e.g. 5368709124 written as 5368709120).

use serde::Serialize;
use std::collections::HashMap;
use xlens_model::{Profile, StatValue};
use xlens_proto::xla::{HloComputationProto, HloInstructionProto, ShapeProto};

use crate::base::device::{device_planes, DeviceKind};
use crate::base::hlo::modules::{
    shape_elements, shape_unpadded_bytes, HloIndex, HloModule, PROGRAM_ID_STAT,
};
mod agreement;
pub use agreement::{
    compare_with_xla, instruction_name_of, xla_costs, Agreement, AgreementRow, XlaCost,
};

/// The cost of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Cost {
    /// Floating-point (and integer) operations, transcendentals excluded.
    pub flops: i64,
    /// Transcendental function evaluations (exp, log, tanh, ...), one per element.
    pub transcendentals: i64,
    /// Bytes read and written in memory.
    pub bytes_accessed: i64,
    /// False when the model cannot know the cost (custom calls, or something fused into them).
    pub known: bool,
}

impl Default for Cost {
    fn default() -> Self {
        Cost {
            flops: 0,
            transcendentals: 0,
            bytes_accessed: 0,
            known: true,
        }
    }
}

impl Cost {
    fn add(&mut self, o: &Cost) {
        self.flops = self.flops.saturating_add(o.flops);
        self.transcendentals = self.transcendentals.saturating_add(o.transcendentals);
        self.bytes_accessed = self.bytes_accessed.saturating_add(o.bytes_accessed);
        self.known &= o.known;
    }
}

/// Elementwise opcodes that cost one FLOP per output element.
const ELEMENTWISE: &[&str] = &[
    "abs",
    "add",
    "and",
    "ceil",
    "clamp",
    "clz",
    "compare",
    "complex",
    "convert",
    "divide",
    "floor",
    "imag",
    "is-finite",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "popcnt",
    "real",
    "reduce-precision",
    "remainder",
    "round-nearest-afz",
    "round-nearest-even",
    "select",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "stochastic-convert",
    "subtract",
    "xor",
];

/// Elementwise opcodes counted as one transcendental per output element (not as FLOPs).
const TRANSCENDENTAL: &[&str] = &[
    "atan2",
    "cbrt",
    "cosine",
    "erf",
    "exponential",
    "exponential-minus-one",
    "log",
    "log-plus-one",
    "logistic",
    "power",
    "rsqrt",
    "sine",
    "sqrt",
    "tan",
    "tanh",
];

/// Ops that neither compute nor touch memory.
const FREE: &[&str] = &[
    "parameter",
    "constant",
    "get-tuple-element",
    "bitcast",
    "domain",
    "after-all",
    "add-dependency",
];

/// Collectives whose cost is their payload (0 FLOPs).
const PAYLOAD_COLLECTIVES: &[&str] = &[
    "all-gather",
    "all-gather-start",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-permute-start",
    "collective-broadcast",
];

/// The second halves of asynchronous pairs, whose cost is booked on the start (copy-done aside).
const DONE_OPS: &[&str] = &[
    "all-reduce-done",
    "all-gather-done",
    "collective-permute-done",
    "async-done",
    "async-update",
    "send-done",
    "recv-done",
];

/// How deep called computations are followed (guards against malformed, cyclic modules).
const MAX_DEPTH: usize = 64;

/// Is this opcode counted as a transcendental?
pub fn is_transcendental(opcode: &str) -> bool {
    TRANSCENDENTAL.contains(&opcode)
}

/// Is this opcode a one-FLOP-per-element op?
pub fn is_elementwise(opcode: &str) -> bool {
    ELEMENTWISE.contains(&opcode)
}

fn size(s: Option<&ShapeProto>) -> i64 {
    s.map(shape_unpadded_bytes).unwrap_or(0)
}

fn is_tuple(s: &ShapeProto) -> bool {
    s.element_type == xlens_proto::xla::PrimitiveType::Tuple as i32
}

/// Bytes of every array leaf of a shape (tuples walked, index tables not counted).
fn leaf_bytes(s: Option<&ShapeProto>) -> i64 {
    match s {
        None => 0,
        Some(s) if is_tuple(s) => s.tuple_shapes.iter().map(|t| leaf_bytes(Some(t))).sum(),
        Some(s) => shape_unpadded_bytes(s),
    }
}

/// Elements of every array leaf of a shape.
fn leaf_elements(s: Option<&ShapeProto>) -> i64 {
    match s {
        None => 0,
        Some(s) if is_tuple(s) => s.tuple_shapes.iter().map(|t| leaf_elements(Some(t))).sum(),
        Some(s) if crate::base::hlo::modules::dtype_bytes(s.element_type).is_some() => {
            shape_elements(s)
        }
        Some(_) => 0,
    }
}

/// Elements of an array shape, or of a tuple's first element (variadic reduce and friends).
fn first_array_elements(s: Option<&ShapeProto>) -> i64 {
    match s {
        None => 0,
        Some(s) if is_tuple(s) => first_array_elements(s.tuple_shapes.first()),
        Some(s) => shape_elements(s),
    }
}

fn dim(s: Option<&ShapeProto>, d: i64) -> i64 {
    s.and_then(|s| s.dimensions.get(usize::try_from(d).ok()?).copied())
        .unwrap_or(1)
        .max(0)
}

fn ceil_log2(n: i64) -> i64 {
    if n <= 1 {
        0
    } else {
        64 - i64::from((n - 1).leading_zeros())
    }
}

fn floor_log2(n: i64) -> i64 {
    if n <= 1 {
        0
    } else {
        63 - i64::from(n.leading_zeros())
    }
}

/// FLOPs of a dot: 2 × output elements × contracted size.
pub fn dot_flops(lhs: &ShapeProto, out: &ShapeProto, ins: &HloInstructionProto) -> i64 {
    let contracted: i64 = ins
        .dot_dimension_numbers
        .as_ref()
        .map(|d| {
            d.lhs_contracting_dimensions
                .iter()
                .map(|&c| dim(Some(lhs), c))
                .fold(1i64, |a, b| a.saturating_mul(b))
        })
        .unwrap_or(1);
    2i64.saturating_mul(shape_elements(out))
        .saturating_mul(contracted)
}

/// FLOPs of a convolution (see the module docs).
pub fn convolution_flops(
    lhs: &ShapeProto,
    rhs: &ShapeProto,
    out: &ShapeProto,
    ins: &HloInstructionProto,
) -> i64 {
    let Some(dn) = ins.convolution_dimension_numbers.as_ref() else {
        return 0;
    };
    let input_feature = dim(Some(lhs), dn.input_feature_dimension);
    let output_feature = dim(Some(out), dn.output_feature_dimension);
    let batch = dim(Some(lhs), dn.input_batch_dimension);
    let fgc = ins.feature_group_count.max(1);
    let bgc = ins.batch_group_count.max(1);
    let mut positions: i64 = 1;
    if let Some(w) = ins.window.as_ref() {
        for (i, wd) in w.dimensions.iter().enumerate() {
            let get = |v: &Vec<i64>| v.get(i).copied().unwrap_or(0);
            let kernel = dim(Some(rhs), get(&dn.kernel_spatial_dimensions));
            let output = dim(Some(out), get(&dn.output_spatial_dimensions));
            let input = dim(Some(lhs), get(&dn.input_spatial_dimensions));
            let stride = wd.stride.max(1);
            let wdil = wd.window_dilation.max(1);
            let bdil = wd.base_dilation.max(1);
            let mut valid: i64 = 0;
            for k in 0..kernel {
                for o in 0..output {
                    let undilated = o * stride - wd.padding_low + k * wdil;
                    if undilated.rem_euclid(bdil) != 0 {
                        continue;
                    }
                    let idx = undilated.div_euclid(bdil);
                    if idx >= 0 && idx < input {
                        valid += 1;
                    }
                }
            }
            positions = positions.saturating_mul(valid);
        }
    }
    2i64.saturating_mul(input_feature / fgc)
        .saturating_mul(output_feature)
        .saturating_mul(batch / bgc)
        .saturating_mul(positions)
}

/// Costs every instruction of one module, memoising called computations.
pub struct CostModel<'m> {
    module: &'m HloModule,
    comp_cost: HashMap<i64, Cost>,
    users: HashMap<i64, HashMap<i64, Vec<i64>>>,
}

impl<'m> CostModel<'m> {
    pub fn new(module: &'m HloModule) -> Self {
        CostModel {
            module,
            comp_cost: HashMap::new(),
            users: HashMap::new(),
        }
    }

    fn operand(&self, ins: &HloInstructionProto, i: usize) -> Option<&'m HloInstructionProto> {
        self.module.instruction(*ins.operand_ids.get(i)?)
    }

    fn operand_shape(&self, ins: &HloInstructionProto, i: usize) -> Option<&'m ShapeProto> {
        self.operand(ins, i)?.shape.as_ref()
    }

    fn operands_size(&self, ins: &HloInstructionProto, from: usize) -> i64 {
        (from..ins.operand_ids.len())
            .map(|i| size(self.operand_shape(ins, i)))
            .sum()
    }

    /// The summed cost of a computation's instructions.
    pub fn computation_cost(&mut self, id: i64) -> Cost {
        self.computation_cost_at(id, 0)
    }

    fn computation_cost_at(&mut self, id: i64, depth: usize) -> Cost {
        if let Some(c) = self.comp_cost.get(&id) {
            return *c;
        }
        let mut total = Cost::default();
        if depth > MAX_DEPTH {
            total.known = false;
            return total;
        }
        let module = self.module;
        if let Some(comp) = module.computation(id) {
            for ins in &comp.instructions {
                let c = self.cost_at(ins, depth + 1);
                total.add(&c);
            }
        } else {
            total.known = false;
        }
        self.comp_cost.insert(id, total);
        total
    }

    fn called(&mut self, ins: &HloInstructionProto, i: usize, depth: usize) -> Cost {
        match ins.called_computation_ids.get(i) {
            Some(&c) => self.computation_cost_at(c, depth + 1),
            None => Cost {
                known: false,
                ..Cost::default()
            },
        }
    }

    /// The cost of one instruction of this module.
    pub fn cost(&mut self, ins: &HloInstructionProto) -> Cost {
        self.cost_at(ins, 0)
    }

    fn cost_at(&mut self, ins: &HloInstructionProto, depth: usize) -> Cost {
        let out = ins.shape.as_ref();
        let op = ins.opcode.as_str();
        let mut c = Cost {
            bytes_accessed: size(out).saturating_add(self.operands_size(ins, 0)),
            ..Cost::default()
        };
        let out_elems = out.map(shape_elements).unwrap_or(0);
        match op {
            _ if FREE.contains(&op) => c.bytes_accessed = 0,
            "tuple" => c.bytes_accessed = size(out),
            _ if is_elementwise(op) => c.flops = out_elems,
            _ if is_transcendental(op) => c.transcendentals = out_elems,
            "dot" => {
                if let (Some(lhs), Some(o)) = (self.operand_shape(ins, 0), out) {
                    c.flops = dot_flops(lhs, o, ins);
                }
            }
            "convolution" => {
                if let (Some(lhs), Some(rhs), Some(o)) =
                    (self.operand_shape(ins, 0), self.operand_shape(ins, 1), out)
                {
                    c.flops = convolution_flops(lhs, rhs, o, ins);
                }
            }
            "reduce" => {
                let n =
                    first_array_elements(self.operand_shape(ins, 0)) - first_array_elements(out);
                let sub = self.called(ins, 0, depth);
                c.flops = sub.flops.saturating_mul(n.max(0));
                c.transcendentals = sub.transcendentals.saturating_mul(n.max(0));
                c.known = sub.known;
            }
            "reduce-window" => {
                let window: i64 = ins
                    .window
                    .as_ref()
                    .map(|w| w.dimensions.iter().map(|d| d.size.max(1)).product())
                    .unwrap_or(1);
                let n = (window - 1).saturating_mul(first_array_elements(out));
                let sub = self.called(ins, 0, depth);
                c.flops = sub.flops.saturating_mul(n);
                c.transcendentals = sub.transcendentals.saturating_mul(n);
                c.known = sub.known;
            }
            "select-and-scatter" => {
                let source = first_array_elements(self.operand_shape(ins, 1));
                let window: i64 = ins
                    .window
                    .as_ref()
                    .map(|w| w.dimensions.iter().map(|d| d.size.max(1)).product())
                    .unwrap_or(1);
                let select = self.called(ins, 0, depth);
                let scatter = self.called(ins, 1, depth);
                c.flops = select
                    .flops
                    .saturating_mul(source.saturating_mul(window - 1))
                    .saturating_add(scatter.flops.saturating_mul(source));
                c.known = select.known && scatter.known;
            }
            "map" => {
                let sub = self.called(ins, 0, depth);
                c.flops = sub.flops.saturating_mul(out_elems);
                c.transcendentals = sub.transcendentals.saturating_mul(out_elems);
                c.known = sub.known;
            }
            "slice" => c.bytes_accessed = 2 * size(out),
            "dynamic-slice" => c.bytes_accessed = 2 * size(out) + self.operands_size(ins, 1),
            "gather" => c.bytes_accessed = 2 * size(out) + size(self.operand_shape(ins, 1)),
            "dynamic-update-slice" => {
                c.bytes_accessed = 2 * size(self.operand_shape(ins, 1)) + self.operands_size(ins, 2)
            }
            "scatter" => {
                // Operands: n inputs, the indices, n updates.
                let n = ins.operand_ids.len().saturating_sub(1) / 2;
                let updates: i64 = (n + 1..ins.operand_ids.len())
                    .map(|i| size(self.operand_shape(ins, i)))
                    .sum();
                c.bytes_accessed = 3 * updates + size(self.operand_shape(ins, n));
                let sub = self.called(ins, 0, depth);
                let elems = first_array_elements(self.operand_shape(ins, n + 1));
                c.flops = sub.flops.saturating_mul(elems);
                c.transcendentals = sub.transcendentals.saturating_mul(elems);
                c.known = sub.known;
            }
            "sort" => {
                let n = first_array_elements(self.operand_shape(ins, 0));
                c.flops = n.saturating_mul(ceil_log2(n));
            }
            "fft" => {
                let logs: i64 = ins.fft_length.iter().map(|&l| floor_log2(l)).product();
                c.flops =
                    2 * 4 * logs.saturating_mul(first_array_elements(self.operand_shape(ins, 0)));
            }
            "rng" | "rng-bit-generator" => c.transcendentals = leaf_elements(out),
            "triangular-solve" => {
                let a = self.operand_shape(ins, 0);
                let b = self.operand_shape(ins, 1);
                c.bytes_accessed = size(out) + size(a) / 2 + size(b);
                let last = a.and_then(|s| s.dimensions.last().copied()).unwrap_or(0);
                c.flops = 2 * last.saturating_mul(b.map(shape_elements).unwrap_or(0));
            }
            "cholesky" => {
                let a = self.operand_shape(ins, 0);
                c.bytes_accessed = size(a);
                let last = a.and_then(|s| s.dimensions.last().copied()).unwrap_or(0);
                c.flops = last.saturating_mul(a.map(shape_elements).unwrap_or(0)) / 3;
            }
            "all-reduce" | "all-reduce-start" => {
                c.flops = leaf_elements(out);
                c.bytes_accessed = leaf_bytes(out)
                    + (0..ins.operand_ids.len())
                        .map(|i| leaf_bytes(self.operand_shape(ins, i)))
                        .sum::<i64>();
            }
            _ if PAYLOAD_COLLECTIVES.contains(&op) => {
                let inputs: i64 = (0..ins.operand_ids.len())
                    .map(|i| leaf_bytes(self.operand_shape(ins, i)))
                    .sum();
                // Async starts return (operands, results[, contexts]): count the results only.
                let result = match out {
                    Some(s)
                        if op.ends_with("-start") && is_tuple(s) && s.tuple_shapes.len() >= 2 =>
                    {
                        leaf_bytes(s.tuple_shapes.get(1))
                    }
                    _ => leaf_bytes(out),
                };
                c.bytes_accessed = inputs + result;
            }
            _ if DONE_OPS.contains(&op) => c.bytes_accessed = 0,
            "copy-start" => c.bytes_accessed = leaf_bytes(self.operand_shape(ins, 0)),
            "copy-done" => c.bytes_accessed = leaf_bytes(out),
            "infeed" => c.bytes_accessed = leaf_bytes(out),
            "outfeed" => {
                c.bytes_accessed = (0..ins.operand_ids.len())
                    .map(|i| leaf_bytes(self.operand_shape(ins, i)))
                    .sum()
            }
            "fusion" => return self.fusion_cost(ins, depth),
            "call" | "async-start" => {
                let sub = self.called(ins, 0, depth);
                c = sub;
            }
            "while" => {
                // One iteration: body (called computation 1 in XLA's order) and condition.
                let mut sub = Cost::default();
                for i in 0..ins.called_computation_ids.len() {
                    let x = self.called(ins, i, depth);
                    sub.add(&x);
                }
                c = sub;
            }
            "conditional" => {
                let mut best: Option<Cost> = None;
                for i in 0..ins.called_computation_ids.len() {
                    let x = self.called(ins, i, depth);
                    best = Some(match best {
                        None => x,
                        Some(b) => Cost {
                            flops: b.flops.max(x.flops),
                            transcendentals: b.transcendentals.max(x.transcendentals),
                            bytes_accessed: b.bytes_accessed.max(x.bytes_accessed),
                            known: b.known && x.known,
                        },
                    });
                }
                c = best.unwrap_or_default();
            }
            "custom-call" => c.known = false,
            _ => {}
        }
        c
    }

    fn users_of(&mut self, comp: &HloComputationProto) -> &HashMap<i64, Vec<i64>> {
        self.users.entry(comp.id).or_insert_with(|| {
            let mut m: HashMap<i64, Vec<i64>> = HashMap::new();
            for ins in &comp.instructions {
                for &o in &ins.operand_ids {
                    let v = m.entry(o).or_default();
                    if !v.contains(&ins.id) {
                        v.push(ins.id);
                    }
                }
            }
            m
        })
    }

    fn fusion_cost(&mut self, ins: &HloInstructionProto, depth: usize) -> Cost {
        let module = self.module;
        let Some(body) = ins
            .called_computation_ids
            .first()
            .and_then(|&id| module.computation(id))
        else {
            return Cost {
                known: false,
                bytes_accessed: size(ins.shape.as_ref()) + self.operands_size(ins, 0),
                ..Cost::default()
            };
        };
        let inner = self.computation_cost_at(body.id, depth + 1);
        let mut c = Cost {
            flops: inner.flops,
            transcendentals: inner.transcendentals,
            bytes_accessed: 0,
            known: inner.known,
        };
        // Output: an in-place dynamic-update-slice writes only its update.
        let root = module
            .instruction(body.root_id)
            .or_else(|| body.instructions.last());
        let dus_update = |r: &HloInstructionProto| -> Option<i64> {
            (r.opcode == "dynamic-update-slice").then(|| size(self.operand_shape(r, 1)))
        };
        match ins.shape.as_ref() {
            Some(s) if is_tuple(s) => {
                for (i, t) in s.tuple_shapes.iter().enumerate() {
                    let elem = root
                        .filter(|r| r.opcode == "tuple")
                        .and_then(|r| self.operand(r, i))
                        .and_then(dus_update);
                    c.bytes_accessed += elem.unwrap_or_else(|| leaf_bytes(Some(t)));
                }
            }
            s => {
                c.bytes_accessed += root.and_then(dus_update).unwrap_or_else(|| size(s));
            }
        }
        // Large constants inside the fusion are read from memory.
        for x in &body.instructions {
            if x.opcode == "constant" && x.shape.as_ref().map(shape_elements).unwrap_or(0) > 1 {
                c.bytes_accessed += size(x.shape.as_ref());
            }
        }
        // Each fused parameter as its users read it.
        for x in &body.instructions {
            if x.opcode == "parameter" {
                c.bytes_accessed += self.parameter_read_bytes(body, x, depth + 1);
            }
        }
        c
    }

    /// Bytes read through a fused parameter (or a get-tuple-element of one): the slices taken
    /// when it is sliced, else its whole size once, however many users share the read.
    fn parameter_read_bytes(
        &mut self,
        comp: &HloComputationProto,
        hlo: &HloInstructionProto,
        depth: usize,
    ) -> i64 {
        if depth > MAX_DEPTH {
            return 0;
        }
        let module = self.module;
        let users: Vec<i64> = self
            .users_of(comp)
            .get(&hlo.id)
            .cloned()
            .unwrap_or_default();
        let own = size(hlo.shape.as_ref());
        if hlo.shape.as_ref().is_some_and(is_tuple) {
            // Follow the get-tuple-elements that take its leaves.
            let mut total = 0;
            for u in users.iter().filter_map(|&u| module.instruction(u)) {
                if u.opcode == "get-tuple-element" {
                    total += self.parameter_read_bytes(comp, u, depth + 1);
                }
            }
            return total;
        }
        let mut total = 0i64;
        let mut shared_read = false;
        for u in users.iter().filter_map(|&u| module.instruction(u)) {
            let first = u.operand_ids.first() == Some(&hlo.id);
            match u.opcode.as_str() {
                "fusion" => {
                    let Some(inner) = u
                        .called_computation_ids
                        .first()
                        .and_then(|&id| module.computation(id))
                    else {
                        continue;
                    };
                    for (i, _) in u
                        .operand_ids
                        .iter()
                        .enumerate()
                        .filter(|(_, &o)| o == hlo.id)
                    {
                        if let Some(p) = inner
                            .instructions
                            .iter()
                            .find(|p| p.opcode == "parameter" && p.parameter_number == i as i64)
                        {
                            total += self.parameter_read_bytes(inner, p, depth + 1);
                        }
                    }
                }
                "slice" => total += size(u.shape.as_ref()),
                "dynamic-slice" if first => total += size(u.shape.as_ref()),
                "dynamic-update-slice" if first => {}
                "broadcast" | "reshape" => total += own,
                _ => {
                    if !shared_read {
                        shared_read = true;
                        total += own;
                    }
                }
            }
        }
        total
    }
}

/// Costs by instruction id.
pub type ModuleCosts = HashMap<i64, Cost>;

/// The cost of every instruction of a module, by instruction id.
pub fn module_costs(m: &HloModule) -> ModuleCosts {
    let mut model = CostModel::new(m);
    let mut out = HashMap::new();
    if let Some(hm) = m.proto.hlo_module.as_ref() {
        for comp in &hm.computations {
            for ins in &comp.instructions {
                out.insert(ins.id, model.cost(ins));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
