//! Capture check: what a capture holds, plane by plane and line by line, and whether it can
//! answer the device, kernel (LLO) and counter questions, naming what to capture with when it
//! cannot. What XProf's agent CLI answers with `check_kernel_profiling` (`inspect_capture`,
//! `list_xplane_lines`), by its gates:
//!
//! - device analysis: a device plane (`/device:`, `TPU:`, `GPU:`) has events on its `XLA Modules`,
//!   `XLA Ops` or `XLA TraceMe` line;
//! - kernel (LLO) analysis: an `llo_proto` stat in the profile, or events on a kernel line
//!   (`Pallas Primitives`, `LLO Instructions`, `MXU`..., or an `llo` line of `/host:metadata`);
//! - counter sampling: events on a `_counters_` or `TC`/`SC`/`CMN Stats` line.

use serde::Serialize;

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::tool::{NoParams, PerHost, Tool, ToolError};
use xlens_model::Profile;

/// Lines of a kernel-profiling (LLO) capture.
const LLO_LINES: [&str; 10] = [
    "Pallas Primitives",
    "Source Lines",
    "Source code",
    "LLO Instructions",
    "SALU Instructions",
    "VALU Instructions",
    "EUP Instructions",
    "XLU Instructions",
    "VLD Instructions",
    "VST Instructions",
];

/// One line of a plane.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LineCount {
    /// Its display name, else its name.
    pub name: String,
    pub event_count: usize,
}

/// One plane, in file order.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PlaneLines {
    pub name: String,
    pub lines: Vec<LineCount>,
    pub total_events: usize,
}

/// What a gate needs that the capture lacks, and how to capture it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Missing {
    /// `device_analysis`, `llo_analysis` or `counter_sampling`.
    pub gate: &'static str,
    /// What is not in the capture.
    pub lacks: &'static str,
    /// How to capture it (the flags XProf's own guide names).
    pub capture_with: &'static str,
}

/// A host's capture.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CaptureCheck {
    pub planes: Vec<PlaneLines>,
    /// Device planes with XLA module, op or TraceMe events: the HLO and device tools can answer.
    pub capture_valid_for_device_analysis: bool,
    /// LLO debug info or kernel lines: the kernel (Pallas/Mosaic) questions can be answered.
    pub capture_valid_for_llo_analysis: bool,
    /// Hardware counter lines.
    pub capture_valid_for_counter_sampling: bool,
    /// One entry per gate that is closed.
    pub missing: Vec<Missing>,
}

pub struct CaptureCheckTool;

impl Tool for CaptureCheckTool {
    const NAME: &'static str = "capture_check";
    const TITLE: &'static str = "Capture check";
    const DESCRIPTION: &'static str = "Planes and lines of the capture with their event counts, and whether it holds a device trace, kernel (LLO) profiling and hardware counters, naming the capture flags for what is missing, as XProf's `check_kernel_profiling`.";
    type Params = NoParams;
    type Output = PerHost<CaptureCheck>;

    fn run(run: &Run, _: &NoParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| capture_check(a.profile())))
    }
    fn text(r: &Self::Output) -> String {
        r.each_text(|c| {
            let yes = |b: bool| if b { "yes" } else { "no" };
            let mut t = format!(
                "  device trace: {}; kernel (LLO) profiling: {}; hardware counters: {}\n",
                yes(c.capture_valid_for_device_analysis),
                yes(c.capture_valid_for_llo_analysis),
                yes(c.capture_valid_for_counter_sampling)
            );
            for m in &c.missing {
                t.push_str(&format!(
                    "  no {}: {}; capture with {}\n",
                    m.gate, m.lacks, m.capture_with
                ));
            }
            for p in &c.planes {
                t.push_str(&format!("  {} ({} events)\n", p.name, p.total_events));
                for l in &p.lines {
                    t.push_str(&format!("    {:>10}  {}\n", l.event_count, l.name));
                }
            }
            t
        })
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}

/// The capture check of one profile.
pub fn capture_check(p: &Profile) -> CaptureCheck {
    let mut device = false;
    let mut counters = false;
    // An `llo_proto` stat anywhere (its name is interned when a plane defines it).
    let mut llo = p.strings.find("llo_proto").is_some();
    let mut planes = Vec::with_capacity(p.planes.len());
    for plane in &p.planes {
        let pname = p.str(plane.name);
        let on_device =
            pname.contains("/device:") || pname.contains("TPU:") || pname.contains("GPU:");
        let metadata = pname.contains("/host:metadata");
        let mut lines = Vec::with_capacity(plane.lines.len());
        let mut total = 0;
        for line in &plane.lines {
            let display = p.str(line.display_name);
            let name = if display.is_empty() {
                p.str(line.name)
            } else {
                display
            };
            let n = line.events.len();
            total += n;
            if n > 0 {
                device |= on_device && ["XLA Modules", "XLA Ops", "XLA TraceMe"].contains(&name);
                llo |= LLO_LINES.contains(&name)
                    || name.contains("MXU")
                    || (metadata && name.to_lowercase().contains("llo"));
                counters |= name.contains("_counters_")
                    || name.contains("TC Stats")
                    || name.contains("SC Stats")
                    || name.contains("CMN Stats");
            }
            lines.push(LineCount {
                name: name.to_string(),
                event_count: n,
            });
        }
        planes.push(PlaneLines {
            name: pname.to_string(),
            lines,
            total_events: total,
        });
    }
    let mut missing = Vec::new();
    if !device {
        missing.push(Missing {
            gate: "device_analysis",
            lacks: "no device plane has XLA module, op or TraceMe events (a CPU-only run, or a capture without the device tracer)",
            capture_with: "a profile of the accelerator run with the device tracer on (`jax.profiler.trace`, `jax.profiler.start_trace`, or the profiler server's capture with `device_tracer_level` 1)",
        });
    }
    if !llo {
        missing.push(Missing {
            gate: "llo_analysis",
            lacks: "no LLO debug info (`llo_proto`) and no kernel lines (Pallas Primitives, LLO/VALU/MXU instruction lines)",
            capture_with: "`LIBTPU_INIT_ARGS=--xla_xprof_register_llo_debug_info=true` set before JAX is imported (static LLO info), and `--xla_xprof_enable_custom_call_tracing=true` for the kernels' runtime lines (libtpu 0.0.44+, jax 0.11+); TPU only",
        });
    }
    if !counters {
        missing.push(Missing {
            gate: "counter_sampling",
            lacks: "no hardware counter lines (`_counters_`, TC/SC/CMN Stats)",
            capture_with: "periodic counter sampling (`tpu_enable_periodic_counter_sampling`, Ironwood TPU7x and later)",
        });
    }
    CaptureCheck {
        planes,
        capture_valid_for_device_analysis: device,
        capture_valid_for_llo_analysis: llo,
        capture_valid_for_counter_sampling: counters,
        missing,
    }
}

fn render_csv(c: &CaptureCheck) -> String {
    let mut out = String::from("plane,line,event_count\n");
    for p in &c.planes {
        for l in &p.lines {
            out.push_str(&format!(
                "{},{},{}\n",
                csv_field(&p.name),
                csv_field(&l.name),
                l.event_count
            ));
        }
    }
    out
}
