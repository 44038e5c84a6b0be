//! Module names and sizes read from the serialized HLO modules without decoding them (for
//! `hlo_modules`, which needs nothing else of them).

use super::hlo_protos;
use xlens_model::Profile;
use xlens_wire::{fields, Value};

/// One HLO module's name and size, read from its serialized proto without decoding it
/// ([`module_heads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleHead<'p> {
    /// The producer's name for the program (as [`super::HloModule::name`]).
    pub name: &'p str,
    /// `HloModuleProto.name`.
    pub module_name: &'p str,
    pub program_id: Option<u64>,
    pub computations: usize,
    pub instructions: usize,
}

/// Every HLO module's [`ModuleHead`], in the order [`super::hlo_index`] lists the modules, and one line
/// per module whose bytes are not an `HloProto` (as [`super::HloIndex::errors`] words it): reading
/// `HloProto.hlo_module` (1) -> `name` (1), `computations` (3) -> `instructions` (2) alone costs a
/// small part of decoding every module.
pub fn module_heads(p: &Profile) -> (Vec<ModuleHead<'_>>, Vec<String>) {
    let mut heads = Vec::new();
    let mut errors = Vec::new();
    for (name, program_id, bytes) in hlo_protos(p) {
        let mut h = ModuleHead {
            name,
            module_name: "",
            program_id,
            computations: 0,
            instructions: 0,
        };
        match read_head(bytes, &mut h) {
            Some(()) => heads.push(h),
            None => errors.push(format!(
                "module {name}: cannot decode its HloProto: the bytes are not protobuf"
            )),
        }
    }
    (heads, errors)
}

fn read_head<'p>(bytes: &'p [u8], h: &mut ModuleHead<'p>) -> Option<()> {
    for f in fields(bytes) {
        let (1, Value::Len(module)) = f.ok()? else {
            continue;
        };
        for f in fields(module) {
            match f.ok()? {
                (1, Value::Len(b)) => h.module_name = std::str::from_utf8(b).ok()?,
                (3, Value::Len(comp)) => {
                    h.computations += 1;
                    for f in fields(comp) {
                        if let (2, Value::Len(_)) = f.ok()? {
                            h.instructions += 1;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    Some(())
}
