//! Memory profile tool: the allocator timeline of every host ([`crate::base::memory::allocators`]):
//! heap allocated, reserved, free and fragmentation per allocator, the peak and what is live there.

use serde::Serialize;

use crate::base::context::{HostContext, Run};
use crate::base::fmt::fmt_bytes;
use crate::base::memory::allocators::*;
use crate::base::tool::{NoParams, Tool, ToolError};

/// The memory profile of every host of the given sessions.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemoryProfileReport {
    pub hosts: Vec<HostMemoryProfile>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostMemoryProfile {
    pub session: String,
    pub host: String,
    pub file: String,
    pub error: Option<String>,
    #[serde(flatten)]
    pub profile: Option<MemoryProfile>,
}

/// The memory profile tool.
pub struct MemoryProfileTool;

impl Tool for MemoryProfileTool {
    const NAME: &'static str = "memory_profile";
    const TITLE: &'static str = "Memory profile";
    const DESCRIPTION: &'static str = "Allocator timeline from host allocation events (XSpace) or PyTorch [memory] events: in use, reserved, free and fragmentation per allocator or device; the peak, when, and the allocations live there; for PyTorch, memory by op.";
    type Params = NoParams;
    type Output = MemoryProfileReport;

    fn run(run: &Run, _: &NoParams) -> Result<MemoryProfileReport, ToolError> {
        Ok(report(run))
    }
    fn text(r: &MemoryProfileReport) -> String {
        render_text(r)
    }
    fn csv(r: &MemoryProfileReport) -> Option<String> {
        Some(render_csv(r))
    }
}

/// Runs the memory profile over every host of `run`.
pub fn report(run: &Run) -> MemoryProfileReport {
    let host = |h: &HostContext, profile, error| HostMemoryProfile {
        session: h.session.clone(),
        host: h.host().to_string(),
        file: h.path().display().to_string(),
        error,
        profile,
    };
    let hosts = run.map_hosts(
        |h, a| host(h, Some(a.allocators().as_ref().clone()), None),
        |h, e| host(h, None, Some(e.to_string())),
    );
    MemoryProfileReport { hosts }
}

/// Plain-text rendering.
pub fn render_text(r: &MemoryProfileReport) -> String {
    let mut o = String::new();
    for h in &r.hosts {
        o.push_str(&format!("== {} / {} ({})\n", h.session, h.host, h.file));
        if let Some(e) = &h.error {
            o.push_str(&format!("  error: {e}\n"));
        }
        let Some(mp) = &h.profile else { continue };
        let torch = !mp.op_stats.is_empty() || mp.source.starts_with("PyTorch");
        if !mp.allocators.is_empty() {
            o.push_str(&format!(
                "  from {} ({} events)\n",
                mp.source, mp.events_total
            ));
        }
        for n in &mp.notes {
            o.push_str(&format!("  note: {n}\n"));
        }
        if mp.allocators.is_empty() {
            o.push_str(&format!(
                "  no MemoryAllocation / MemoryDeallocation events on {} (the profile was taken without allocator tracing, or the runtime does not record it)\n",
                mp.plane
            ));
            continue;
        }
        for a in mp.allocators.iter().filter(|_| torch) {
            let pk = &a.peak;
            o.push_str(&format!(
                "  device {}: {} allocations, {} releases\n    peak allocated {} at {} ps, step {}; reserved then {}\n",
                a.name,
                a.allocations,
                a.deallocations,
                fmt_bytes(pk.bytes_in_use),
                pk.time_ps,
                pk.step_id,
                fmt_bytes(pk.memory_capacity_bytes),
            ));
            if a.live_at_peak_total > 0 {
                o.push_str(&format!(
                    "    live at the peak: {} rows, {}\n",
                    a.live_at_peak_total,
                    fmt_bytes(a.live_at_peak_bytes)
                ));
                for l in a.live_at_peak.iter().take(20) {
                    o.push_str(&format!(
                        "      {:>12} ×{:<4} {}\n",
                        fmt_bytes(l.activity.allocation_bytes),
                        l.occurrences,
                        l.activity.op
                    ));
                }
            }
        }
        if torch && !mp.op_stats.is_empty() {
            o.push_str(&format!(
                "  memory by op ({} rows; {} events in no op), largest increase first per device:\n    {:<8} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8} {:>7}  name\n",
                mp.op_stats.len(),
                mp.op_stats_unattributed,
                "device",
                "self incr.",
                "self alloc.",
                "self #",
                "incr.",
                "alloc.",
                "#",
                "calls"
            ));
            for r in mp.op_stats.iter().take(30) {
                o.push_str(&format!(
                    "    {:<8} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8} {:>7}  {}\n",
                    r.device,
                    fmt_bytes(r.self_increase_bytes),
                    fmt_bytes(r.self_allocation_bytes),
                    r.self_allocations,
                    fmt_bytes(r.increase_bytes),
                    fmt_bytes(r.allocation_bytes),
                    r.allocations,
                    r.calls,
                    r.name
                ));
            }
            if mp.op_stats.len() > 30 {
                o.push_str(&format!(
                    "    … {} more rows (in the JSON)\n",
                    mp.op_stats.len() - 30
                ));
            }
        }
        for a in mp.allocators.iter().filter(|_| !torch) {
            let pk = &a.peak;
            o.push_str(&format!(
                "  allocator {}: {} allocations, {} deallocations\n    peak in use {} (heap {} + reserved {}) at {} ps, step {}; capacity {}, free {}, fragmentation {:.4}\n    allocator's lifetime peak {}; max fragmentation {:.4}\n",
                a.name,
                a.allocations,
                a.deallocations,
                fmt_bytes(pk.bytes_in_use),
                fmt_bytes(pk.state.heap_allocated_bytes),
                fmt_bytes(pk.state.stack_reserved_bytes),
                pk.time_ps,
                pk.step_id,
                fmt_bytes(pk.memory_capacity_bytes),
                fmt_bytes(pk.state.free_bytes),
                pk.state.fragmentation,
                fmt_bytes(a.peak_bytes_usage_lifetime),
                a.max_fragmentation
            ));
            o.push_str(&format!(
                "    live at the peak: {} rows, {}\n",
                a.live_at_peak_total,
                fmt_bytes(a.live_at_peak_bytes)
            ));
            for l in a.live_at_peak.iter().take(20) {
                let x = &l.activity;
                o.push_str(&format!(
                    "      {:>12} ×{:<4} {:<10} {:<10} {:<16} {}\n",
                    fmt_bytes(x.allocation_bytes),
                    l.occurrences,
                    x.data_type,
                    x.region_type,
                    x.shape,
                    x.op
                ));
            }
            if a.live_at_peak_total > 20 {
                o.push_str(&format!(
                    "      … {} more rows (JSON / CSV have up to {MAX_ACTIVE_ROWS})\n",
                    a.live_at_peak_total - 20
                ));
            }
        }
    }
    o
}

/// CSV of the allocations live at each allocator's peak.
pub fn render_csv(r: &MemoryProfileReport) -> String {
    use crate::base::fmt::csv_field;
    let mut o = String::from(
        "session,host,allocator,rank,allocation_bytes,requested_bytes,occurrences,op,region_type,data_type,shape,step_id,address,time_ps,special\n",
    );
    for h in &r.hosts {
        let Some(mp) = &h.profile else { continue };
        for a in &mp.allocators {
            for (i, l) in a.live_at_peak.iter().enumerate() {
                let x = &l.activity;
                o.push_str(&format!(
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    csv_field(&h.session),
                    csv_field(&h.host),
                    csv_field(&a.name),
                    i + 1,
                    x.allocation_bytes,
                    x.requested_bytes,
                    l.occurrences,
                    csv_field(&x.op),
                    csv_field(&x.region_type),
                    csv_field(&x.data_type),
                    csv_field(&x.shape),
                    x.step_id,
                    x.address,
                    l.time_ps.map(|t| t.to_string()).unwrap_or_default(),
                    l.special
                ));
            }
        }
    }
    o
}
