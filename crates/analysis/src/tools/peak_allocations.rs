//! Peak allocations: every HLO module of a host by the device memory its buffer assignment
//! allocates, largest first, with the buffers live at its heap peak. What XProf's agent CLI
//! answers with `get_peak_allocations`: a module's total is XLA's total buffer allocation
//! (`totalBufferAllocationMib` of XProf's memory viewer), its buffers are those of the peak
//! ([`crate::base::memory::heap`]), buffers under `--min-size-mib` are summed as `Others`, and
//! buffers of one name stem (`param.1`, `param.2`) and one size are summed as `param.*`.

use serde::Serialize;

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::memory::heap::ModuleMemory;
use crate::base::tool::{PerHost, Tool, ToolError};

/// Modules listed when no limit is given, as XProf.
pub const DEFAULT_LIMIT: usize = 10;
/// Buffers smaller than this many MiB are summed as `Others` unless told otherwise, as XProf.
pub const DEFAULT_MIN_SIZE_MIB: f64 = 1.0;

const MIB: f64 = (1u64 << 20) as f64;

/// One row of a module's buffers: a buffer, a group of same-size buffers of one name stem, or
/// the buffers under the size threshold.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct BufferRow {
    /// The defining instruction (`fusion.3{1}` for a tuple element), `stem.* (N occurrences of
    /// size S MiB)` for a group, or `Others (< T MiB)`.
    pub instruction: String,
    pub size_mib: f64,
    /// Buffers in the row.
    pub buffers: usize,
}

/// One module.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleRow {
    /// As XProf names programs: `jit_f(12190760917235803885)`.
    pub module_name: String,
    /// XLA's total buffer allocation of the module, in MiB (what XProf calls its total HBM).
    pub total_hbm_mib: f64,
    /// The heap's peak, in MiB.
    pub peak_heap_mib: f64,
    /// The buffers live at the peak, largest first.
    pub top_buffers: Vec<BufferRow>,
}

/// A host's modules.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PeakAllocations {
    /// Modules with a buffer assignment.
    pub total_modules: usize,
    /// Largest total first, at most `limit` of them.
    pub modules: Vec<ModuleRow>,
    /// Modules whose buffer assignment could not be read, with why.
    pub errors: Vec<String>,
    /// Why there are none, when there are none.
    pub note: Option<String>,
}

/// The tool's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct PeakAllocationsParams {
    /// Most modules listed, largest total first (default 10; 0 lists every one).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Buffers smaller than this many MiB are summed as one `Others` row (default 1.0).
    #[arg(long)]
    pub min_size_mib: Option<f64>,
    /// List every buffer by itself: no `Others` row and no `name.*` groups.
    #[arg(long)]
    #[serde(default)]
    pub no_aggregate: bool,
}

pub struct PeakAllocationsTool;

impl Tool for PeakAllocationsTool {
    const NAME: &'static str = "peak_allocations";
    const TITLE: &'static str = "Peak allocations";
    const DESCRIPTION: &'static str = "HLO modules by the device memory XLA allocates for them, largest first, with the buffers live at each module's heap peak, as XProf's `get_peak_allocations`.";
    type Params = PeakAllocationsParams;
    type Output = PerHost<PeakAllocations>;
    /// The HLO modules alone: no timeline.
    const READS: xlens_loader::Reads = xlens_loader::Reads::Metadata;

    fn run(run: &Run, p: &PeakAllocationsParams) -> Result<Self::Output, ToolError> {
        let min = p.min_size_mib.unwrap_or(DEFAULT_MIN_SIZE_MIB);
        if !min.is_finite() || min < 0.0 {
            return Err(ToolError::Params(format!(
                "--min-size-mib must be a number of MiB, 0 or more (got {min})"
            )));
        }
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
        Ok(PerHost::of(Self::NAME, run, |a| {
            let idx = a.hlo();
            let memories = a.module_memories(0);
            let mut modules = Vec::new();
            let mut errors = Vec::new();
            for (m, mm) in idx.modules.iter().zip(memories.iter()) {
                match mm {
                    Ok(mm) => modules.push(module_row(&m.name, mm, min, !p.no_aggregate)),
                    Err(e) => errors.push(format!("module {}: {e}", m.name)),
                }
            }
            let total_modules = modules.len();
            // Stable: equal totals keep the modules' order, as XProf's `nlargest`.
            modules.sort_by(|a, b| b.total_hbm_mib.total_cmp(&a.total_hbm_mib));
            if limit > 0 {
                modules.truncate(limit);
            }
            let note = (total_modules == 0).then(|| {
                if idx.modules.is_empty() {
                    "This profile carries no HLO modules (a PyTorch trace, or a profile of no XLA program): there are no buffer assignments to show.".to_string()
                } else {
                    "No HLO module of this profile carries a buffer assignment.".to_string()
                }
            });
            PeakAllocations {
                total_modules,
                modules,
                errors,
                note,
            }
        }))
    }
    fn text(r: &Self::Output) -> String {
        r.each_text(|m| {
            let mut t = String::new();
            for line in m.errors.iter().chain(&m.note) {
                t.push_str(&format!("  {line}\n"));
            }
            if m.total_modules > m.modules.len() {
                t.push_str(&format!(
                    "  the {} largest of {} modules\n",
                    m.modules.len(),
                    m.total_modules
                ));
            }
            for md in &m.modules {
                t.push_str(&format!(
                    "  {}: {} allocated, peak heap {}\n",
                    md.module_name,
                    size(md.total_hbm_mib),
                    size(md.peak_heap_mib)
                ));
                for b in &md.top_buffers {
                    t.push_str(&format!(
                        "    {:>14}  {}\n",
                        size(b.size_mib),
                        b.instruction
                    ));
                }
            }
            t
        })
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(render_csv))
    }
}

/// A size in MiB as text: MiB to two decimals, bytes below 0.01 MiB.
fn size(mib: f64) -> String {
    if mib >= 0.01 || mib == 0.0 {
        format!("{mib:.2} MiB")
    } else {
        format!("{:.0} bytes", mib * MIB)
    }
}

/// A module's row: its totals and its peak buffers, grouped as asked.
fn module_row(name: &str, mm: &ModuleMemory, min_size_mib: f64, aggregate: bool) -> ModuleRow {
    let mut bufs: Vec<_> = mm.peak_buffers.iter().collect();
    bufs.sort_by_key(|b| b.heap_order);
    let mut rows: Vec<BufferRow> = Vec::new();
    let mut others = 0.0;
    let mut others_n = 0;
    let small_mib = mm.small_buffers.bytes as f64 / MIB;
    if mm.small_buffers.count > 0 {
        if aggregate && small_mib < min_size_mib {
            others += small_mib;
            others_n += mm.small_buffers.count;
        } else {
            rows.push(BufferRow {
                instruction: format!(
                    "small buffers ({} under {} bytes)",
                    mm.small_buffers.count, mm.small_buffers.threshold_bytes
                ),
                size_mib: small_mib,
                buffers: mm.small_buffers.count,
            });
        }
    }
    // Groups by (name stem, size), in the order their first buffer comes.
    let mut groups: Vec<(String, f64, Vec<&str>)> = Vec::new();
    for b in bufs {
        let size = b.size_bytes as f64 / MIB;
        if !aggregate {
            rows.push(BufferRow {
                instruction: b.instruction.clone(),
                size_mib: size,
                buffers: 1,
            });
            continue;
        }
        if size < min_size_mib {
            others += size;
            others_n += 1;
            continue;
        }
        let stem = name_stem(&b.instruction).unwrap_or_else(|| b.instruction.clone());
        match groups.iter_mut().find(|g| g.0 == stem && g.1 == size) {
            Some(g) => g.2.push(&b.instruction),
            None => groups.push((stem.to_string(), size, vec![&b.instruction])),
        }
    }
    for (stem, size, names) in groups {
        rows.push(match names.as_slice() {
            [one] => BufferRow {
                instruction: one.to_string(),
                size_mib: size,
                buffers: 1,
            },
            _ => BufferRow {
                instruction: format!(
                    "{stem} ({} occurrences of size {} MiB)",
                    names.len(),
                    general(size)
                ),
                size_mib: size * names.len() as f64,
                buffers: names.len(),
            },
        });
    }
    if others > 0.0 {
        rows.push(BufferRow {
            instruction: format!("Others (< {} MiB)", python_float(min_size_mib)),
            size_mib: others,
            buffers: others_n,
        });
    }
    // Stable, so equal sizes keep the heap's order.
    rows.sort_by(|a, b| b.size_mib.total_cmp(&a.size_mib));
    ModuleRow {
        module_name: name.to_string(),
        total_hbm_mib: mm.totals.total_allocation_bytes as f64 / MIB,
        peak_heap_mib: mm.peak_heap_bytes as f64 / MIB,
        top_buffers: rows,
    }
}

/// `param.*` for `param.12`: a name of letters, digits and `_` (not starting with a digit), a
/// dot and a number; `None` for any other name (`copy-start.2{0}`).
fn name_stem(name: &str) -> Option<String> {
    let (stem, n) = name.rsplit_once('.')?;
    let first = stem.chars().next()?;
    let ok = (first.is_ascii_alphabetic() || first == '_')
        && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !n.is_empty()
        && n.chars().all(|c| c.is_ascii_digit());
    ok.then(|| format!("{stem}.*"))
}

/// A float as Python's `str` writes it (`1.0`, `0.05`, `1e-05`).
fn python_float(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        let s = format!("{x}");
        if x.abs() < 1e-4 {
            format!("{x:e}")
        } else {
            s
        }
    }
}

/// A float as Python's `{:g}` writes it: six significant digits, no trailing zeros.
fn general(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{x:.5e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn render_csv(m: &PeakAllocations) -> String {
    let mut out = String::from("module,total_hbm_mib,peak_heap_mib,instruction,size_mib,buffers\n");
    for md in &m.modules {
        for b in &md.top_buffers {
            out.push_str(&format!(
                "{},{},{},{},{},{}\n",
                csv_field(&md.module_name),
                md.total_hbm_mib,
                md.peak_heap_mib,
                csv_field(&b.instruction),
                b.size_mib,
                b.buffers
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_are_xprofs() {
        assert_eq!(name_stem("param.12").as_deref(), Some("param.*"));
        assert_eq!(name_stem("_x1.0").as_deref(), Some("_x1.*"));
        assert_eq!(name_stem("copy-start.2{0}"), None);
        assert_eq!(name_stem("fusion"), None);
        assert_eq!(name_stem("1a.2"), None);
        assert_eq!(name_stem("a.b.2"), None);
    }

    #[test]
    fn numbers_print_as_python() {
        assert_eq!(general(5120.0), "5120");
        assert_eq!(general(0.5), "0.5");
        assert_eq!(general(1.0 / 3.0), "0.333333");
        assert_eq!(general(1234567.0), "1.23457e+06");
        assert_eq!(general(0.00001), "1e-05");
        assert_eq!(python_float(1.0), "1.0");
        assert_eq!(python_float(0.05), "0.05");
    }
}
