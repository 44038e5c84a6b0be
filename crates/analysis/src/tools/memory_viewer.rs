//! Memory viewer tool: per host, every HLO module's peak heap from XLA's buffer assignment,
//! the selected module in detail ([`crate::base::memory::heap`]), and the headroom against the device's
//! memory ([`crate::base::memory::headroom`]).

use serde::Serialize;
use xlens_model::Profile;

use crate::base::context::{Analysis, HostContext, Run};
use crate::base::memory::heap::*;
use crate::base::tool::{Tool, ToolError};

/// The memory viewer of one profile: every module's peak, and `module` (or the only module) in
/// detail.
pub fn memory_viewer(a: &Analysis, module: Option<&str>, memory_space: i64) -> MemoryViewer {
    let mut v = memory_viewer_from(
        &a.hlo(),
        &a.module_memories(memory_space),
        module,
        memory_space,
    );
    if memory_space == 0 && !v.modules.is_empty() {
        v.headroom = viewer_headroom(a.profile(), &v);
    }
    v
}

/// The headroom of the selected module (else the largest one) on the device the profile states.
fn viewer_headroom(
    p: &Profile,
    v: &MemoryViewer,
) -> Option<crate::base::memory::headroom::Headroom> {
    let (peak, name) = match &v.selected {
        Some(s) => (s.peak_heap_bytes, &s.name),
        None => {
            let m = v.modules.iter().find(|m| m.error.is_none())?;
            (m.peak_heap_bytes, &m.name)
        }
    };
    let (cap, src) = crate::base::memory::headroom::device_memory_capacity(p, None)?;
    crate::base::memory::headroom::headroom_of(
        peak,
        &format!("memory viewer: module {name} (XLA buffer assignment)"),
        cap,
        &src,
    )
}

/// The memory viewer of every host of the given sessions.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemoryViewerReport {
    pub memory_space: i64,
    pub module: Option<String>,
    pub hosts: Vec<HostMemoryViewer>,
    /// Every host's modules by name, largest peak (over the hosts) first, for the page's module
    /// selector; derived from `hosts`, so not in the JSON.
    #[serde(skip)]
    pub modules: Vec<ModuleChoice>,
}

/// One module of the run, over its hosts: the largest peak any host has for it, and the first
/// host's trace event count and whether it could be analysed.
#[derive(Debug, Clone)]
pub struct ModuleChoice {
    pub name: String,
    pub peak_heap_bytes: i64,
    pub trace_events: usize,
    pub analysable: bool,
}

/// The modules of `hosts` merged by name, largest peak first (then by name).
fn module_choices(hosts: &[HostMemoryViewer]) -> Vec<ModuleChoice> {
    let mut mods: Vec<ModuleChoice> = Vec::new();
    for m in hosts
        .iter()
        .filter_map(|h| h.viewer.as_ref())
        .flat_map(|v| &v.modules)
    {
        match mods.iter_mut().find(|x| x.name == m.name) {
            Some(x) => x.peak_heap_bytes = x.peak_heap_bytes.max(m.peak_heap_bytes),
            None => mods.push(ModuleChoice {
                name: m.name.clone(),
                peak_heap_bytes: m.peak_heap_bytes,
                trace_events: m.trace_events,
                analysable: m.error.is_none(),
            }),
        }
    }
    mods.sort_by(|a, b| {
        b.peak_heap_bytes
            .cmp(&a.peak_heap_bytes)
            .then_with(|| a.name.cmp(&b.name))
    });
    mods
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostMemoryViewer {
    pub session: String,
    pub host: String,
    pub file: String,
    /// Set when the file could not be read.
    pub error: Option<String>,
    #[serde(flatten)]
    pub viewer: Option<MemoryViewer>,
}

/// The memory viewer's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct MemoryViewerParams {
    /// The HLO module to show (default: list every module).
    #[arg(long)]
    pub module: Option<String>,
    /// XLA memory space (default 0, device memory).
    #[arg(long)]
    pub memory_space: Option<i64>,
}

/// The memory viewer tool.
pub struct MemoryViewerTool;

impl Tool for MemoryViewerTool {
    const NAME: &'static str = "memory_viewer";
    const TITLE: &'static str = "Memory viewer";
    const DESCRIPTION: &'static str = "Per HLO module: peak heap from XLA's buffer assignment, where it occurs, and the buffers live there (select with --module).";
    type Params = MemoryViewerParams;
    type Output = MemoryViewerReport;

    fn run(run: &Run, p: &MemoryViewerParams) -> Result<MemoryViewerReport, ToolError> {
        Ok(report(
            run,
            p.module.as_deref(),
            p.memory_space.unwrap_or(0),
        ))
    }
    fn text(r: &MemoryViewerReport) -> String {
        render_text(r)
    }
    fn csv(r: &MemoryViewerReport) -> Option<String> {
        Some(render_csv(r))
    }
}

/// Runs the memory viewer over every host of `run`.
pub fn report(run: &Run, module: Option<&str>, memory_space: i64) -> MemoryViewerReport {
    let host = |h: &HostContext, viewer, error| HostMemoryViewer {
        session: h.session.clone(),
        host: h.host().to_string(),
        file: h.path().display().to_string(),
        error,
        viewer,
    };
    let hosts = run.map_hosts(
        |h, a| host(h, Some(memory_viewer(a, module, memory_space)), None),
        |h, e| host(h, None, Some(e.to_string())),
    );
    MemoryViewerReport {
        memory_space,
        module: module.map(str::to_string),
        modules: module_choices(&hosts),
        hosts,
    }
}

fn mib(b: i64) -> String {
    format!("{:.3} MiB", b as f64 / (1u64 << 20) as f64)
}

/// Plain-text rendering.
pub fn render_text(r: &MemoryViewerReport) -> String {
    let mut o = String::new();
    for h in &r.hosts {
        o.push_str(&format!("== {} / {} ({})\n", h.session, h.host, h.file));
        if let Some(e) = &h.error {
            o.push_str(&format!("  error: {e}\n"));
        }
        let Some(v) = &h.viewer else { continue };
        for e in &v.hlo_errors {
            o.push_str(&format!("  HLO error: {e}\n"));
        }
        if v.modules.is_empty() {
            o.push_str("  no HLO modules with a buffer assignment in this profile\n");
            continue;
        }
        o.push_str(&format!(
            "  modules (memory space {}), largest peak first:\n",
            v.memory_space
        ));
        for m in &v.modules {
            match &m.error {
                Some(e) => o.push_str(&format!("    {:<48} error: {e}\n", m.name)),
                None if m.trace_events == 0 => o.push_str(&format!(
                    "    {:<48} peak {:>14}  (no heap simulator trace: whole-program buffers only)\n",
                    m.name,
                    mib(m.peak_heap_bytes)
                )),
                None => o.push_str(&format!(
                    "    {:<48} peak {:>14}  at event {} ({})\n",
                    m.name,
                    mib(m.peak_heap_bytes),
                    m.peak_position,
                    m.peak_instruction.as_deref().unwrap_or("-")
                )),
            }
        }
        if let Some(h) = &v.headroom {
            o.push_str(&format!(
                "  headroom: {} (capacity from {})\n",
                h.statement, h.capacity_source
            ));
        }
        if let Some(e) = &v.selection_error {
            o.push_str(&format!("  {e}\n"));
        }
        let Some(s) = &v.selected else {
            if r.module.is_none() {
                o.push_str("  (choose a module with --module NAME for its peak buffers)\n");
            }
            continue;
        };
        o.push_str(&format!(
            "\n  module {} (entry {}), memory space {}\n",
            s.name, s.entry_computation, s.memory_space
        ));
        o.push_str(&format!(
            "  peak heap {} (unpadded {}), temporaries {} + indefinite {}\n",
            mib(s.peak_heap_bytes),
            mib(s.peak_unpadded_heap_bytes),
            mib(s.peak_temp_heap_bytes),
            mib(s.indefinite_bytes)
        ));
        match &s.trace {
            Some(t) => o.push_str(&format!(
                "  peak at event {} of {} ({} in {}); trace {} chosen by {}\n",
                s.peak_position,
                t.events,
                s.peak_instruction.as_deref().unwrap_or("-"),
                s.peak_computation.as_deref().unwrap_or("-"),
                t.index,
                t.chosen_by
            )),
            None => o.push_str("  no heap simulator trace for this memory space\n"),
        }
        let t = &s.totals;
        o.push_str(&format!(
            "  allocations: total {}, parameters {}, maybe-live-out {}, non-reusable {}, indefinite {}\n",
            mib(t.total_allocation_bytes),
            mib(t.entry_parameters_bytes),
            mib(t.maybe_live_out_bytes),
            mib(t.non_reusable_bytes),
            mib(t.indefinite_allocation_bytes)
        ));
        o.push_str("  buffers live at the peak:\n");
        for b in &s.peak_buffers {
            let life = match (b.lifetime_start, b.lifetime_end) {
                (Some(a), Some(z)) => format!("[{a}, {z}]"),
                _ => "whole program".to_string(),
            };
            o.push_str(&format!(
                "    {:>14}  {:<12} {:<32} {:<36} {}  {}\n",
                mib(b.size_bytes),
                b.category,
                b.instruction,
                b.shape,
                life,
                b.op_name
            ));
        }
        if s.small_buffers.count > 0 {
            o.push_str(&format!(
                "    {:>14}  {} buffers under {} bytes\n",
                mib(s.small_buffers.bytes),
                s.small_buffers.count,
                s.small_buffers.threshold_bytes
            ));
        }
        for w in &s.warnings {
            o.push_str(&format!("  warning: {w}\n"));
        }
    }
    o
}

/// CSV of the selected modules' peak buffers (one row per buffer and host).
pub fn render_csv(r: &MemoryViewerReport) -> String {
    use crate::base::fmt::csv_field;
    let mut o = String::from(
        "session,host,module,rank,logical_buffer_id,size_bytes,unpadded_size_bytes,category,instruction,opcode,shape,op_name,source,lifetime_start,lifetime_end\n",
    );
    for h in &r.hosts {
        let Some(s) = h.viewer.as_ref().and_then(|v| v.selected.as_ref()) else {
            continue;
        };
        for (i, b) in s.peak_buffers.iter().enumerate() {
            let src = b
                .source
                .as_ref()
                .map(|x| format!("{}:{}", x.file, x.line))
                .unwrap_or_default();
            o.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&h.session),
                csv_field(&h.host),
                csv_field(&s.name),
                i + 1,
                b.logical_buffer_id,
                b.size_bytes,
                b.unpadded_size_bytes,
                b.category,
                csv_field(&b.instruction),
                csv_field(&b.opcode),
                csv_field(&b.shape),
                csv_field(&b.op_name),
                csv_field(&src),
                b.lifetime_start.map(|x| x.to_string()).unwrap_or_default(),
                b.lifetime_end.map(|x| x.to_string()).unwrap_or_default(),
            ));
        }
    }
    o
}
