//! The HLO modules of a profile, decoded once and indexed for the tools that need them (memory
//! viewer, op profile, graph viewer).
//!
//! Producers embed one serialized `xla.HloProto` per compiled program in the `/host:metadata`
//! plane: each event metadata there is named after the program (`jit_f(12190760917235803885)`)
//! and carries the bytes in a `Hlo Proto` stat, usually with a `program_id` stat. [`hlo_index`]
//! decodes every one of them; a module that fails to decode is reported in
//! [`HloIndex::errors`] and the others are kept.
//!
//! The shape helpers ([`shape_text`], [`shape_unpadded_bytes`], [`dtype_name`]) follow XLA's
//! conventions so that their output can be compared with XLA and XProf text.

use prost::Message;
use std::collections::{HashMap, HashSet};
use xlens_model::{Profile, StatValue};
use xlens_proto::xla::{
    BufferAssignmentProto, HloComputationProto, HloInstructionProto, HloProto, LayoutProto,
    PrimitiveType, ShapeProto,
};
use xlens_wire::{fields, Value};

/// Name of the plane that holds the HLO protos.
pub const METADATA_PLANE: &str = "/host:metadata";
/// Stat holding the serialized `xla.HloProto`.
pub const HLO_PROTO_STAT: &str = "Hlo Proto";
/// Stat holding the program id.
pub const PROGRAM_ID_STAT: &str = "program_id";

/// Bytes of a pointer in the tuple index tables XLA sizes (what XLA uses for unpadded sizes).
pub const POINTER_BYTES: i64 = 8;

/// Where an instruction sits: index of its computation and its index there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstrPos {
    pub computation: usize,
    pub instruction: usize,
}

/// One decoded HLO module and its lookup maps.
#[derive(Debug, Clone)]
pub struct HloModule {
    /// The producer's name for the program (the metadata name), e.g. `jit_f(12190760917235803885)`;
    /// unique within a profile and what users select modules by.
    pub name: String,
    /// The module's own name (`HloModuleProto.name`), e.g. `jit_f`.
    pub module_name: String,
    /// From the `program_id` stat, else from the `(...)` suffix of [`HloModule::name`].
    pub program_id: Option<u64>,
    pub proto: HloProto,
    instr_by_id: HashMap<i64, InstrPos>,
    instr_by_name: HashMap<String, InstrPos>,
    comp_by_id: HashMap<i64, usize>,
    entry: Option<usize>,
}

impl HloModule {
    /// Indexes a decoded proto.
    pub fn new(name: String, program_id: Option<u64>, proto: HloProto) -> HloModule {
        let mut instr_by_id = HashMap::new();
        let mut instr_by_name = HashMap::new();
        let mut comp_by_id = HashMap::new();
        let mut entry = None;
        let module_name = proto
            .hlo_module
            .as_ref()
            .map(|m| m.name.clone())
            .unwrap_or_default();
        if let Some(m) = &proto.hlo_module {
            for (ci, c) in m.computations.iter().enumerate() {
                comp_by_id.entry(c.id).or_insert(ci);
                for (ii, ins) in c.instructions.iter().enumerate() {
                    let pos = InstrPos {
                        computation: ci,
                        instruction: ii,
                    };
                    // Ids and names are unique within a module; keep the last on a clash, as XLA's
                    // and XProf's maps do.
                    instr_by_id.insert(ins.id, pos);
                    instr_by_name.insert(ins.name.clone(), pos);
                }
            }
            entry = m
                .computations
                .iter()
                .position(|c| c.id == m.entry_computation_id && m.entry_computation_id != 0)
                .or_else(|| {
                    m.computations.iter().position(|c| {
                        !m.entry_computation_name.is_empty() && c.name == m.entry_computation_name
                    })
                })
                .or_else(|| {
                    // Older writers leave both unset; the entry computation is then the last one.
                    (!m.computations.is_empty()).then(|| m.computations.len() - 1)
                });
        }
        HloModule {
            name,
            module_name,
            program_id,
            proto,
            instr_by_id,
            instr_by_name,
            comp_by_id,
            entry,
        }
    }

    fn at(&self, pos: InstrPos) -> Option<&HloInstructionProto> {
        self.proto
            .hlo_module
            .as_ref()?
            .computations
            .get(pos.computation)?
            .instructions
            .get(pos.instruction)
    }

    /// The instruction with this unique id, in any computation.
    pub fn instruction(&self, id: i64) -> Option<&HloInstructionProto> {
        self.at(*self.instr_by_id.get(&id)?)
    }

    /// The instruction with this name, in any computation.
    pub fn instruction_by_name(&self, name: &str) -> Option<&HloInstructionProto> {
        self.at(*self.instr_by_name.get(name)?)
    }

    /// Where the instruction with this id sits.
    pub fn instruction_pos(&self, id: i64) -> Option<InstrPos> {
        self.instr_by_id.get(&id).copied()
    }

    /// The computation with this id.
    pub fn computation(&self, id: i64) -> Option<&HloComputationProto> {
        self.proto
            .hlo_module
            .as_ref()?
            .computations
            .get(*self.comp_by_id.get(&id)?)
    }

    /// The computation holding the instruction with this id.
    pub fn computation_of(&self, instruction_id: i64) -> Option<&HloComputationProto> {
        let pos = self.instr_by_id.get(&instruction_id)?;
        self.proto
            .hlo_module
            .as_ref()?
            .computations
            .get(pos.computation)
    }

    /// The entry computation (by id, else by name, else the last computation).
    pub fn entry_computation(&self) -> Option<&HloComputationProto> {
        self.proto
            .hlo_module
            .as_ref()?
            .computations
            .get(self.entry?)
    }

    /// The buffer assignment, when the producer kept it.
    pub fn buffer_assignment(&self) -> Option<&BufferAssignmentProto> {
        self.proto.buffer_assignment.as_ref()
    }

    /// Where an instruction came from in the user's program (see [`source_location`]).
    pub fn source_location(&self, ins: &HloInstructionProto) -> Option<SourceLocation> {
        source_location(&self.proto, ins)
    }

    /// Number of instructions over all computations.
    pub fn instruction_count(&self) -> usize {
        self.instr_by_id.len()
    }
}

/// Every HLO module of a profile.
#[derive(Debug, Clone, Default)]
pub struct HloIndex {
    /// In the order the producer wrote them.
    pub modules: Vec<HloModule>,
    /// One line per module that could not be decoded: `module NAME: error`.
    pub errors: Vec<String>,
}

impl HloIndex {
    /// Finds a module by its producer name (`jit_f(123)`), else by module name (`jit_f`) when
    /// exactly one module has it, else by program id (decimal).
    pub fn find(&self, query: &str) -> Result<&HloModule, String> {
        find_module(&self.modules, query, |m| {
            (m.name.as_str(), m.module_name.as_str(), m.program_id)
        })
    }
}

/// [`HloIndex::find`] over any list of modules, given each one's (program name, module name,
/// program id).
pub(crate) fn find_module<'m, M>(
    modules: &'m [M],
    query: &str,
    names: impl Fn(&M) -> (&str, &str, Option<u64>),
) -> Result<&'m M, String> {
    if let Some(m) = modules.iter().find(|m| names(m).0 == query) {
        return Ok(m);
    }
    let by_name: Vec<&M> = modules.iter().filter(|m| names(m).1 == query).collect();
    match by_name.len() {
        1 => return Ok(by_name[0]),
        0 => {}
        _ => {
            return Err(format!(
                "`{query}` names {} modules; pick one of: {}",
                by_name.len(),
                by_name
                    .iter()
                    .map(|m| names(m).0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }
    if let Ok(id) = query.parse::<u64>() {
        if let Some(m) = modules.iter().find(|m| names(m).2 == Some(id)) {
            return Ok(m);
        }
    }
    let mut all: Vec<&str> = modules.iter().map(|m| names(m).0).collect();
    all.sort_unstable();
    Err(if all.is_empty() {
        format!("no module `{query}`: the profile holds no HLO modules")
    } else {
        format!("no module `{query}`; modules: {}", all.join(", "))
    })
}

/// Parses the program id from the `(...)` suffix of a program name: `jit_f(123)` → 123.
pub fn program_id_from_name(name: &str) -> Option<u64> {
    let inner = name.strip_suffix(')')?;
    let open = inner.rfind('(')?;
    inner[open + 1..].parse().ok()
}

/// Decodes and indexes every HLO module of a profile. Never fails: a module that does not decode
/// is listed in [`HloIndex::errors`].
pub fn hlo_index(p: &Profile) -> HloIndex {
    type Job<'a> = (usize, &'a str, Option<u64>, &'a [u8]);
    type Done = (usize, Result<HloModule, String>);
    let jobs: Vec<Job> = hlo_protos(p)
        .into_iter()
        .enumerate()
        .map(|(i, (name, program_id, bytes))| (i, name, program_id, bytes))
        .collect();
    let decode = |jobs: Vec<Job>| -> Vec<Done> {
        jobs.into_iter()
            .map(|(i, name, program_id, bytes)| {
                let m = HloProto::decode(bytes)
                    .map(|proto| HloModule::new(name.to_string(), program_id, proto))
                    .map_err(|e| format!("module {name}: cannot decode its HloProto: {e}"));
                (i, m)
            })
            .collect()
    };
    let costs: Vec<usize> = jobs.iter().map(|j| j.3.len()).collect();
    // Many or large modules (a large profile's take tens of milliseconds): on both cores.
    let mut done = if jobs.len() > 1 && costs.iter().sum::<usize>() >= PARALLEL_DECODE_BYTES {
        crate::base::par::run_split(jobs, &costs, decode)
    } else {
        decode(jobs)
    };
    done.sort_unstable_by_key(|d| d.0);
    let mut out = HloIndex::default();
    for (_, m) in done {
        match m {
            Ok(m) => out.modules.push(m),
            Err(e) => out.errors.push(e),
        }
    }
    out
}

/// Serialized modules of at least this many bytes in all are decoded on two threads.
const PARALLEL_DECODE_BYTES: usize = 1 << 20;

/// The serialized HLO modules of a profile, in the order the producer wrote them: program name,
/// program id, bytes. A program written twice (e.g. two metadata planes) is listed once, the
/// first time.
pub(crate) fn hlo_protos(p: &Profile) -> Vec<(&str, Option<u64>, &[u8])> {
    let mut out = Vec::new();
    let (Some(hlo_key), Some(plane_name)) = (p.key(HLO_PROTO_STAT), p.key(METADATA_PLANE)) else {
        return out;
    };
    let pid_key = p.key(PROGRAM_ID_STAT);
    let mut seen: HashSet<&str> = HashSet::new();
    for plane in p.planes.iter().filter(|pl| pl.name == plane_name) {
        for md in &plane.event_metadata {
            let stats = md.stats();
            let Some(StatValue::Bytes(blob)) = stats.get(hlo_key) else {
                continue;
            };
            let name = p.str(md.name);
            if !seen.insert(name) {
                continue;
            }
            let program_id = pid_key
                .and_then(|k| stats.get(k))
                .and_then(|v| match v {
                    StatValue::U64(u) => Some(u),
                    // Fingerprints above i64::MAX may have been written as negative int64.
                    StatValue::I64(i) => Some(i as u64),
                    _ => None,
                })
                .or_else(|| program_id_from_name(name));
            out.push((name, program_id, p.blob(blob)));
        }
    }
    out
}

/// The framework op path (`metadata.op_name`: the JAX name-scope or TF op path) of every HLO
/// instruction, by module, read straight from the serialized protos without decoding them (the
/// op metrics need nothing else of the HLO, and decoding every module costs more than the
/// metrics of a large profile's op lines). The names borrow the profile's bytes.
#[derive(Debug, Default)]
pub struct OpNames<'p> {
    modules: Vec<ModuleOpNames<'p>>,
}

#[derive(Debug)]
struct ModuleOpNames<'p> {
    name: &'p str,
    module_name: &'p str,
    program_id: Option<u64>,
    /// Instruction name -> non-empty op_name (the last instruction of a name wins, as in
    /// [`HloModule`]).
    by_instruction: HashMap<&'p str, &'p str>,
}

impl<'p> OpNames<'p> {
    /// Reads every module of `p`; a module whose bytes do not read as an `HloProto` (in the
    /// fields read here) is left out, as [`hlo_index`] leaves it out.
    pub fn of(p: &'p Profile) -> OpNames<'p> {
        let modules = hlo_protos(p)
            .into_iter()
            .filter_map(|(name, program_id, bytes)| {
                let mut m = ModuleOpNames {
                    name,
                    module_name: "",
                    program_id,
                    by_instruction: HashMap::new(),
                };
                read_op_names(bytes, &mut m)?;
                Some(m)
            })
            .collect();
        OpNames { modules }
    }

    /// The op_name of `instruction` in the module `module` names (found as [`HloIndex::find`]
    /// finds it); `None` when either is unknown or the op_name is empty.
    pub fn op_name(&self, module: &str, instruction: &str) -> Option<&'p str> {
        let m = find_module(&self.modules, module, |m| {
            (m.name, m.module_name, m.program_id)
        })
        .ok()?;
        m.by_instruction.get(instruction).copied()
    }
}

/// Reads `HloProto.hlo_module` (1) -> `name` (1), `computations` (3) -> `instructions` (2) ->
/// `name` (1), `metadata` (7) -> `op_name` (2). A message field written more than once merges
/// (repeated fields append, scalars: the last wins), as protobuf decoding does; bytes that are not
/// protobuf give `None`.
fn read_op_names<'p>(bytes: &'p [u8], m: &mut ModuleOpNames<'p>) -> Option<()> {
    let text = |b: &'p [u8]| std::str::from_utf8(b).ok();
    for f in fields(bytes) {
        let (1, Value::Len(module)) = f.ok()? else {
            continue;
        };
        for f in fields(module) {
            match f.ok()? {
                (1, Value::Len(b)) => m.module_name = text(b)?,
                (3, Value::Len(comp)) => {
                    for f in fields(comp) {
                        let (2, Value::Len(ins)) = f.ok()? else {
                            continue;
                        };
                        let (mut name, mut op_name) = ("", "");
                        for f in fields(ins) {
                            match f.ok()? {
                                (1, Value::Len(b)) => name = text(b)?,
                                (7, Value::Len(md)) => {
                                    for f in fields(md) {
                                        if let (2, Value::Len(b)) = f.ok()? {
                                            op_name = text(b)?;
                                        }
                                    }
                                }
                                _ => {}
                            }
                        }
                        if op_name.is_empty() {
                            m.by_instruction.remove(name);
                        } else {
                            m.by_instruction.insert(name, op_name);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Some(())
}

/// HLO opcodes of collective communication (and their async halves).
pub const COLLECTIVE_OPCODES: &[&str] = &[
    "all-reduce",
    "all-reduce-start",
    "all-reduce-done",
    "all-gather",
    "all-gather-start",
    "all-gather-done",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-permute-start",
    "collective-permute-done",
    "collective-broadcast",
];

/// The collectives whose participants all finish together: each waits for every other's data
/// (an all-reduce's or all-gather's result needs every input), unlike a send, a receive, a
/// permute or a broadcast. Their ends are what [`crate::base::hosts::align`] lines clocks up on.
pub const COINCIDENT_OPCODES: &[&str] = &[
    "all-reduce",
    "all-reduce-done",
    "all-gather",
    "all-gather-done",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
];

/// The collective instructions ([`COLLECTIVE_OPCODES`]) of every module of a profile, as
/// (program id, instruction names); modules without one are left out.
pub fn collective_instructions(p: &Profile) -> Vec<(Option<u64>, HashSet<&str>)> {
    instructions_with(p, COLLECTIVE_OPCODES)
}

/// The instructions of every module of a profile whose opcode is one of `opcodes`, as
/// (program id, instruction names), read from the serialized protos without decoding them
/// (`HloProto.hlo_module` (1) -> `computations` (3) -> `instructions` (2) -> `name` (1),
/// `opcode` (2)). Modules without one are left out.
pub fn instructions_with<'p>(
    p: &'p Profile,
    opcodes: &[&str],
) -> Vec<(Option<u64>, HashSet<&'p str>)> {
    fn read<'b>(bytes: &'b [u8], opcodes: &[&str]) -> Option<HashSet<&'b str>> {
        let text = |b| std::str::from_utf8(b).ok();
        let mut out = HashSet::new();
        for f in fields(bytes) {
            let (1, Value::Len(module)) = f.ok()? else {
                continue;
            };
            for f in fields(module) {
                let (3, Value::Len(comp)) = f.ok()? else {
                    continue;
                };
                for f in fields(comp) {
                    let (2, Value::Len(ins)) = f.ok()? else {
                        continue;
                    };
                    let (mut name, mut opcode) = ("", "");
                    for f in fields(ins) {
                        match f.ok()? {
                            (1, Value::Len(b)) => name = text(b)?,
                            (2, Value::Len(b)) => opcode = text(b)?,
                            _ => {}
                        }
                    }
                    if opcodes.contains(&opcode) {
                        out.insert(name);
                    }
                }
            }
        }
        Some(out)
    }
    hlo_protos(p)
        .into_iter()
        .filter_map(|(_, pid, bytes)| Some((pid, read(bytes, opcodes)?)))
        .filter(|(_, set)| !set.is_empty())
        .collect()
}

/// XLA's lowercase name of an element type (`f32`, `bf16`, `pred`, `s32`, `tuple`, ...).
pub fn dtype_name(element_type: i32) -> &'static str {
    use PrimitiveType as T;
    match PrimitiveType::try_from(element_type) {
        Ok(t) => match t {
            T::Invalid => "invalid",
            T::Pred => "pred",
            T::S1 => "s1",
            T::S2 => "s2",
            T::S4 => "s4",
            T::S8 => "s8",
            T::S16 => "s16",
            T::S32 => "s32",
            T::S64 => "s64",
            T::U1 => "u1",
            T::U2 => "u2",
            T::U4 => "u4",
            T::U8 => "u8",
            T::U16 => "u16",
            T::U32 => "u32",
            T::U64 => "u64",
            T::F16 => "f16",
            T::F32 => "f32",
            T::Bf16 => "bf16",
            T::F64 => "f64",
            T::F8e5m2 => "f8e5m2",
            T::F8e4m3 => "f8e4m3",
            T::F8e4m3fn => "f8e4m3fn",
            T::F8e4m3b11fnuz => "f8e4m3b11fnuz",
            T::F8e3m4 => "f8e3m4",
            T::F8e5m2fnuz => "f8e5m2fnuz",
            T::F8e4m3fnuz => "f8e4m3fnuz",
            T::F4e2m1fn => "f4e2m1fn",
            T::F8e8m0fnu => "f8e8m0fnu",
            T::F6e3m2fn => "f6e3m2fn",
            T::F6e2m3fn => "f6e2m3fn",
            T::C64 => "c64",
            T::C128 => "c128",
            T::Tuple => "tuple",
            T::OpaqueType => "opaque",
            T::Token => "token",
            T::Buffer => "buffer",
        },
        Err(_) => "unknown",
    }
}

/// Bytes of one element as XLA stores it without packing (sub-byte types take one byte); `None`
/// for non-array types.
pub fn dtype_bytes(element_type: i32) -> Option<i64> {
    use PrimitiveType as T;
    let t = PrimitiveType::try_from(element_type).ok()?;
    Some(match t {
        T::Pred | T::S1 | T::S2 | T::S4 | T::S8 | T::U1 | T::U2 | T::U4 | T::U8 => 1,
        T::F8e5m2
        | T::F8e4m3
        | T::F8e4m3fn
        | T::F8e4m3b11fnuz
        | T::F8e3m4
        | T::F8e5m2fnuz
        | T::F8e4m3fnuz
        | T::F4e2m1fn
        | T::F8e8m0fnu
        | T::F6e3m2fn
        | T::F6e2m3fn => 1,
        T::S16 | T::U16 | T::F16 | T::Bf16 => 2,
        T::S32 | T::U32 | T::F32 => 4,
        T::S64 | T::U64 | T::F64 | T::C64 => 8,
        T::C128 => 16,
        T::Invalid | T::Tuple | T::OpaqueType | T::Token | T::Buffer => return None,
    })
}

fn is_tuple(s: &ShapeProto) -> bool {
    s.element_type == PrimitiveType::Tuple as i32
}

/// Size in bytes of a shape with XLA's default (dense, untiled) layout: elements × element size
/// for arrays, one pointer per element for tuples, 0 for tokens. This is what XLA and XProf call
/// the "unpadded" size; the assigned size may be larger (tiling, alignment).
pub fn shape_unpadded_bytes(s: &ShapeProto) -> i64 {
    if is_tuple(s) {
        return POINTER_BYTES.saturating_mul(s.tuple_shapes.len() as i64);
    }
    if s.element_type == PrimitiveType::OpaqueType as i32 {
        return POINTER_BYTES;
    }
    let Some(elem) = dtype_bytes(s.element_type) else {
        return 0;
    };
    s.dimensions
        .iter()
        .map(|&d| d.max(0))
        .fold(elem, |acc, d| acc.saturating_mul(d))
}

/// Number of elements of an array shape (1 for scalars).
pub fn shape_elements(s: &ShapeProto) -> i64 {
    s.dimensions
        .iter()
        .map(|&d| d.max(0))
        .fold(1i64, |acc, d| acc.saturating_mul(d))
}

/// XLA's text for a shape with its layout: `f32[32,2048]{1,0}`, `f32[8,128]{1,0:T(8,128)}`,
/// `(f32[2]{0}, s32[])`, `bf16[<=16]{0}`.
pub fn shape_text(s: &ShapeProto) -> String {
    let mut out = String::new();
    write_shape(&mut out, s, true);
    out
}

/// XLA's text for a shape without layout: `f32[32,2048]`, `(f32[2], s32[])`.
pub fn shape_text_no_layout(s: &ShapeProto) -> String {
    let mut out = String::new();
    write_shape(&mut out, s, false);
    out
}

/// How often XLA annotates long tuples with the element index.
const TUPLE_INDEX_EVERY: usize = 5;

fn write_shape(out: &mut String, s: &ShapeProto, with_layout: bool) {
    if is_tuple(s) {
        out.push('(');
        for (i, t) in s.tuple_shapes.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
                if i % TUPLE_INDEX_EVERY == 0 {
                    out.push_str(&format!("/*index={i}*/"));
                }
            }
            write_shape(out, t, with_layout);
        }
        out.push(')');
        return;
    }
    out.push_str(dtype_name(s.element_type));
    out.push('[');
    for (i, &d) in s.dimensions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if d == i64::MIN {
            out.push('?');
            continue;
        }
        if s.is_dynamic_dimension.get(i).copied().unwrap_or(false) {
            out.push_str("<=");
        }
        out.push_str(&d.to_string());
    }
    out.push(']');
    let is_array = dtype_bytes(s.element_type).is_some();
    if let (true, true, Some(layout)) = (with_layout, is_array, s.layout.as_ref()) {
        let text = layout_text(layout);
        // Scalars print no layout when it is empty.
        if !(s.dimensions.is_empty() && text == "{}") {
            out.push_str(&text);
        }
    }
}

/// XLA's text for a layout: `{1,0}`, `{1,0:T(8,128)(2,1)}`, `{0:T(256)S(1)}`.
pub fn layout_text(l: &LayoutProto) -> String {
    let mut out = String::from("{");
    out.push_str(
        &l.minor_to_major
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(","),
    );
    let mut extra = String::new();
    if !l.tiles.is_empty() {
        extra.push('T');
        for t in &l.tiles {
            extra.push('(');
            extra.push_str(
                &t.dimensions
                    .iter()
                    .map(|&d| {
                        if d >= 0 {
                            d.to_string()
                        } else if d == i64::MIN {
                            "*".to_string()
                        } else {
                            format!("Invalid value {d}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(","),
            );
            extra.push(')');
        }
    }
    let align = if l.tail_padding_alignment_in_elements == 0 {
        1
    } else {
        l.tail_padding_alignment_in_elements
    };
    if align != 1 {
        extra.push_str(&format!("L({align})"));
    }
    for (t, mark) in [
        (l.index_primitive_type, '#'),
        (l.pointer_primitive_type, '*'),
    ] {
        if t != PrimitiveType::Invalid as i32 {
            let name = if is_integral(t) {
                dtype_name(t)
            } else {
                "invalid"
            };
            extra.push_str(&format!("{mark}({name})"));
        }
    }
    if l.element_size_in_bits != 0 {
        extra.push_str(&format!("E({})", l.element_size_in_bits));
    }
    if l.memory_space != 0 {
        extra.push_str(&format!("S({})", l.memory_space));
    }
    if let Some(p) = &l.physical_shape {
        extra.push_str("P(");
        write_shape(&mut extra, p, true);
        extra.push(')');
    }
    if l.dynamic_shape_metadata_prefix_bytes > 0 {
        extra.push_str(&format!("M({})", l.dynamic_shape_metadata_prefix_bytes));
    }
    if !extra.is_empty() {
        out.push(':');
        out.push_str(&extra);
    }
    out.push('}');
    out
}

fn is_integral(t: i32) -> bool {
    use PrimitiveType as T;
    matches!(
        PrimitiveType::try_from(t),
        Ok(T::S1
            | T::S2
            | T::S4
            | T::S8
            | T::S16
            | T::S32
            | T::S64
            | T::U1
            | T::U2
            | T::U4
            | T::U8
            | T::U16
            | T::U32
            | T::U64)
    )
}

/// The subshape XLA's buffer tools show for a value at `shape_index` of an instruction: the
/// top-level tuple element named by the *last* index (what XLA and XProf have always done; for
/// nested tuples this is not the true subshape), else the whole shape.
pub fn buffer_subshape<'a>(shape: &'a ShapeProto, shape_index: &[i64]) -> &'a ShapeProto {
    match shape_index.last() {
        Some(&i) if i >= 0 && (i as usize) < shape.tuple_shapes.len() => {
            &shape.tuple_shapes[i as usize]
        }
        _ => shape,
    }
}

/// The true subshape at `shape_index` (walking nested tuples); `None` when the index does not fit.
pub fn subshape<'a>(shape: &'a ShapeProto, shape_index: &[i64]) -> Option<&'a ShapeProto> {
    let mut s = shape;
    for &i in shape_index {
        s = s.tuple_shapes.get(usize::try_from(i).ok()?)?;
    }
    Some(s)
}

/// Where an instruction came from in the user's program.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct SourceLocation {
    pub file: String,
    pub line: i32,
    /// The stack, innermost first, as `file:line:column` lines (when the producer recorded one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stack: String,
}

/// Most frames followed up a stack (guards against cyclic parent links).
const MAX_STACK_FRAMES: usize = 256;

/// An instruction's source location: the metadata's `source_file:source_line` when set, else the
/// innermost frame of its stack (`stack_frame_id` into the module's stack frame index) — the
/// order XProf uses.
pub fn source_location(proto: &HloProto, ins: &HloInstructionProto) -> Option<SourceLocation> {
    let md = ins.metadata.as_ref()?;
    let stack = proto
        .hlo_module
        .as_ref()
        .and_then(|m| m.stack_frame_index.as_ref())
        .map(|idx| stack_text(idx, md.stack_frame_id))
        .unwrap_or_default();
    if !md.source_file.is_empty() {
        return Some(SourceLocation {
            file: md.source_file.clone(),
            line: md.source_line,
            stack,
        });
    }
    let first = stack.lines().next()?;
    let mut parts = first.split(':');
    let file = parts.next()?;
    let line = parts.next()?;
    Some(SourceLocation {
        file: file.to_string(),
        line: line.parse().unwrap_or(0),
        stack,
    })
}

/// The stack of frame `frame_id` (1-based), innermost first, one `file:line:column` per line.
pub fn stack_text(idx: &xlens_proto::xla::StackFrameIndexProto, frame_id: i32) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut id = frame_id;
    while id > 0 && lines.len() < MAX_STACK_FRAMES {
        let Some(frame) = idx.stack_frames.get((id - 1) as usize) else {
            break;
        };
        id = frame.parent_frame_id;
        let (mut file, mut line, mut col) = (String::new(), -1, -1);
        if frame.file_location_id > 0 {
            if let Some(loc) = idx
                .file_locations
                .get((frame.file_location_id - 1) as usize)
            {
                line = loc.line;
                col = loc.column;
                if loc.file_name_id > 0 {
                    if let Some(f) = idx.file_names.get((loc.file_name_id - 1) as usize) {
                        file = f.clone();
                    }
                }
            }
        }
        lines.push(format!("{file}:{line}:{col}"));
    }
    lines.join("\n")
}

mod heads;
pub use heads::{module_heads, ModuleHead};

#[cfg(test)]
mod tests;
