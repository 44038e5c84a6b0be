//! Structural fingerprints of HLO instructions: what an op computes, without what it is called.
//!
//! Two compilations of one program number their instructions differently (`fusion.12` in one
//! is `fusion.15` in the other once an op is added upstream), so matching ops across runs by
//! name pairs the wrong ones or only whole families (`fusion`). XLA's own fingerprint (the
//! instruction printed with `HloPrintOptions::Fingerprint`: no names, ids or metadata, operand
//! shapes, fused computations in full) is written into XProf's op metrics by some producers
//! only; this is the same idea computed here from the serialized HLO of the profile:
//!
//! * an instruction's own fields as serialized (opcode, shape with layout, dimensions, window,
//!   dot and convolution numbers, literal, custom-call target, comparison direction, ...), in
//!   the order the producer wrote them, **except** the fields that name or number it or only
//!   annotate it: `name` (1), `metadata` (7), `channel_id` (26), `id` (35), `operand_ids` (36),
//!   `control_predecessor_ids` (37), `called_computation_ids` (38), `backend_config` (43),
//!   `all_reduce_id` (45), `frontend_attributes` (68), `statistics_viz` (82) and
//!   `original_value` (88);
//! * the shape of each operand, in order;
//! * the fingerprint of each called computation (a fusion's fused computation, a while loop's
//!   body): its instructions in order, each by its own fields, its operands by position in the
//!   computation, and its own called computations.
//!
//! Hashing is FNV-1a (64 bits): stable across builds and platforms. Fingerprints are read from
//! the serialized protos without decoding them, like [`crate::base::hlo::modules::OpNames`].

use std::collections::HashMap;
use xlens_model::Profile;
use xlens_wire::{fields, varint_at, Value};

use crate::base::hlo::modules::{find_module, hlo_protos};

/// Instruction fields left out of a fingerprint (see the module documentation).
const SKIPPED: &[u32] = &[1, 7, 26, 35, 36, 37, 38, 43, 45, 68, 82, 88];

/// FNV-1a, 64 bits.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
}

/// The fingerprint of every instruction of every HLO module of a profile.
#[derive(Debug, Default)]
pub struct Fingerprints<'p> {
    modules: Vec<ModuleFingerprints<'p>>,
}

#[derive(Debug)]
struct ModuleFingerprints<'p> {
    name: &'p str,
    module_name: &'p str,
    program_id: Option<u64>,
    by_instruction: HashMap<&'p str, u64>,
}

/// One instruction as read for its fingerprint.
struct Instr<'p> {
    name: &'p str,
    id: i64,
    /// Hash of its own fields.
    own: u64,
    shape: &'p [u8],
    operands: Vec<i64>,
    called: Vec<i64>,
}

struct Comp<'p> {
    id: i64,
    instrs: Vec<Instr<'p>>,
}

impl<'p> Fingerprints<'p> {
    /// Reads every module of `p`; a module whose bytes do not read as an `HloProto` is left
    /// out.
    pub fn of(p: &'p Profile) -> Fingerprints<'p> {
        let modules = hlo_protos(p)
            .into_iter()
            .filter_map(|(name, program_id, bytes)| {
                let (module_name, comps) = read_module(bytes)?;
                Some(ModuleFingerprints {
                    name,
                    module_name,
                    program_id,
                    by_instruction: fingerprint_all(&comps),
                })
            })
            .collect();
        Fingerprints { modules }
    }

    /// Whether the profile holds any HLO to fingerprint.
    pub fn is_empty(&self) -> bool {
        self.modules.iter().all(|m| m.by_instruction.is_empty())
    }

    /// The fingerprint of `instruction` in the module `module` names (found as
    /// [`crate::base::hlo::modules::HloIndex::find`] finds it).
    pub fn get(&self, module: &str, instruction: &str) -> Option<u64> {
        let m = find_module(&self.modules, module, |m| {
            (m.name, m.module_name, m.program_id)
        })
        .ok()?;
        m.by_instruction.get(instruction).copied()
    }
}

/// Packed (or single) varints of a repeated int64 field.
fn push_ids(v: Value<'_>, out: &mut Vec<i64>) -> Option<()> {
    match v {
        Value::Varint(x) => out.push(x as i64),
        Value::Len(b) => {
            let mut pos = 0;
            while pos < b.len() {
                let (x, next) = varint_at(b, pos)?;
                if next > b.len() {
                    return None;
                }
                out.push(x as i64);
                pos = next;
            }
        }
        _ => return None,
    }
    Some(())
}

/// `HloProto.hlo_module` (1) -> `name` (1), `computations` (3) -> `instructions` (2), `id` (5).
fn read_module(bytes: &[u8]) -> Option<(&str, Vec<Comp<'_>>)> {
    let mut module_name = "";
    let mut comps = Vec::new();
    for f in fields(bytes) {
        let (1, Value::Len(module)) = f.ok()? else {
            continue;
        };
        for f in fields(module) {
            match f.ok()? {
                (1, Value::Len(b)) => module_name = std::str::from_utf8(b).ok()?,
                (3, Value::Len(c)) => {
                    let mut comp = Comp {
                        id: -1,
                        instrs: Vec::new(),
                    };
                    for f in fields(c) {
                        match f.ok()? {
                            (2, Value::Len(ins)) => comp.instrs.push(read_instr(ins)?),
                            (5, Value::Varint(id)) => comp.id = id as i64,
                            _ => {}
                        }
                    }
                    comps.push(comp);
                }
                _ => {}
            }
        }
    }
    Some((module_name, comps))
}

fn read_instr(bytes: &[u8]) -> Option<Instr<'_>> {
    let mut i = Instr {
        name: "",
        id: -1,
        own: 0,
        shape: &[],
        operands: Vec::new(),
        called: Vec::new(),
    };
    let mut h = Fnv::new();
    for f in fields(bytes) {
        let (no, v) = f.ok()?;
        match (no, v) {
            (1, Value::Len(b)) => i.name = std::str::from_utf8(b).ok()?,
            (35, Value::Varint(id)) => i.id = id as i64,
            (36, v) => push_ids(v, &mut i.operands)?,
            (38, v) => push_ids(v, &mut i.called)?,
            _ if SKIPPED.contains(&no) => {}
            (_, v) => {
                if no == 3 {
                    if let Value::Len(b) = v {
                        i.shape = b;
                    }
                }
                h.u64(u64::from(no));
                match v {
                    Value::Varint(x) | Value::Fixed64(x) => {
                        h.u64(0);
                        h.u64(x);
                    }
                    Value::Fixed32(x) => {
                        h.u64(1);
                        h.u64(u64::from(x));
                    }
                    Value::Len(b) | Value::Group(b) => {
                        h.u64(2);
                        h.u64(b.len() as u64);
                        h.bytes(b);
                    }
                }
            }
        }
    }
    i.own = h.0;
    Some(i)
}

/// Fingerprints of every instruction of one module, by name.
fn fingerprint_all<'p>(comps: &[Comp<'p>]) -> HashMap<&'p str, u64> {
    let comp_pos: HashMap<i64, usize> = comps.iter().enumerate().map(|(k, c)| (c.id, k)).collect();
    // Instruction id -> (computation, position); ids are unique within a module.
    let mut instr_pos: HashMap<i64, (usize, usize)> = HashMap::new();
    for (k, c) in comps.iter().enumerate() {
        for (j, ins) in c.instrs.iter().enumerate() {
            instr_pos.insert(ins.id, (k, j));
        }
    }
    let mut memo: Vec<Option<u64>> = vec![None; comps.len()];
    let mut out = HashMap::new();
    for c in comps {
        for ins in &c.instrs {
            let mut h = Fnv::new();
            h.u64(ins.own);
            for op in &ins.operands {
                match instr_pos.get(op) {
                    Some(&(ck, j)) => {
                        h.u64(1);
                        h.bytes(comps[ck].instrs[j].shape);
                    }
                    None => h.u64(0),
                }
            }
            for called in &ins.called {
                let fp = comp_pos
                    .get(called)
                    .map(|&ck| comp_fingerprint(comps, &comp_pos, ck, &mut memo, &mut Vec::new()));
                h.u64(fp.unwrap_or(0));
            }
            out.insert(ins.name, h.0);
        }
    }
    out
}

/// A computation's fingerprint (memoized; a computation that calls itself, which XLA never
/// writes, counts as 0 where it recurs).
fn comp_fingerprint(
    comps: &[Comp<'_>],
    comp_pos: &HashMap<i64, usize>,
    k: usize,
    memo: &mut [Option<u64>],
    stack: &mut Vec<usize>,
) -> u64 {
    if let Some(fp) = memo[k] {
        return fp;
    }
    if stack.contains(&k) {
        return 0;
    }
    stack.push(k);
    let c = &comps[k];
    let local: HashMap<i64, usize> = c
        .instrs
        .iter()
        .enumerate()
        .map(|(j, i)| (i.id, j))
        .collect();
    let mut h = Fnv::new();
    h.u64(c.instrs.len() as u64);
    for ins in &c.instrs {
        h.u64(ins.own);
        h.u64(ins.operands.len() as u64);
        for op in &ins.operands {
            h.u64(local.get(op).map_or(u64::MAX, |&j| j as u64));
        }
        h.u64(ins.called.len() as u64);
        for called in &ins.called {
            let fp = comp_pos
                .get(called)
                .map_or(0, |&ck| comp_fingerprint(comps, comp_pos, ck, memo, stack));
            h.u64(fp);
        }
    }
    stack.pop();
    memo[k] = Some(h.0);
    h.0
}
