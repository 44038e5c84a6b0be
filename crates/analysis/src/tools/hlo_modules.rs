//! The HLO modules a profile carries: each program's name as XProf lists it
//! (`jit_f(12190760917235803885)`), its module name, program id and size (computations and
//! instructions), and the modules that could not be decoded. What XProf's agent CLI answers with
//! `list_hlo_modules`; the names are what `--module` of the HLO tools accepts.

use serde::Serialize;

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::hlo::modules::module_heads;
use crate::base::tool::{NoParams, PerHost, Tool, ToolError};

/// One HLO module.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleRow {
    /// The producer's name for the program, as XProf lists it.
    pub name: String,
    /// `HloModuleProto.name`.
    pub module_name: String,
    pub program_id: Option<u64>,
    pub computations: usize,
    pub instructions: usize,
}

/// A host's HLO modules.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HloModules {
    pub count: usize,
    /// By name, as XProf sorts them.
    pub modules: Vec<ModuleRow>,
    /// One line per module that could not be decoded: `module NAME: error`.
    pub errors: Vec<String>,
    /// Why there are none, when there are none.
    pub note: Option<String>,
}

pub struct HloModulesTool;

impl Tool for HloModulesTool {
    const NAME: &'static str = "hlo_modules";
    const TITLE: &'static str = "HLO modules";
    const DESCRIPTION: &'static str = "The HLO modules (programs) of the profile by name, as XProf's `list_hlo_modules`: module name, program id, computations and instructions; the names --module of the HLO tools takes.";
    type Params = NoParams;
    type Output = PerHost<HloModules>;
    /// The HLO modules alone: no timeline.
    const READS: xlens_loader::Reads = xlens_loader::Reads::Metadata;

    fn run(run: &Run, _: &NoParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| {
            // Names and sizes only: read from the serialized modules, none decoded.
            let (heads, errors) = module_heads(a.profile());
            let mut modules: Vec<ModuleRow> = heads
                .into_iter()
                .map(|m| ModuleRow {
                    name: m.name.to_string(),
                    module_name: m.module_name.to_string(),
                    program_id: m.program_id,
                    computations: m.computations,
                    instructions: m.instructions,
                })
                .collect();
            modules.sort_by(|a, b| a.name.cmp(&b.name));
            let note = (modules.is_empty() && errors.is_empty()).then(|| {
                "This profile carries no HLO modules (a PyTorch trace, or a profile of no XLA program): the HLO tools have nothing to show.".to_string()
            });
            HloModules {
                count: modules.len(),
                modules,
                errors,
                note,
            }
        }))
    }
    fn text(r: &Self::Output) -> String {
        let mut t = r.text(render_csv);
        for (host, m) in &r.hosts {
            let Ok(m) = m else { continue };
            for line in m.errors.iter().chain(&m.note) {
                t.push_str(&format!("host {host}: {line}\n"));
            }
        }
        t
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}

fn render_csv(m: &HloModules) -> String {
    let mut out = String::from("name,module_name,program_id,computations,instructions\n");
    for r in &m.modules {
        out.push_str(&format!(
            "{},{},{},{},{}\n",
            csv_field(&r.name),
            csv_field(&r.module_name),
            r.program_id.map(|p| p.to_string()).unwrap_or_default(),
            r.computations,
            r.instructions
        ));
    }
    out
}
