//! The cost model against the FLOPs and bytes XLA itself recorded in the profile, instruction by
//! instruction.

use super::*;

/// XLA's own cost figures for one instruction, as the profile carries them (TPU `XLA Ops`
/// event metadata stats).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct XlaCost {
    pub program_id: Option<u64>,
    /// HLO instruction name (`fusion.3`).
    pub instruction: String,
    pub flops: Option<f64>,
    pub bytes_accessed: Option<f64>,
}

/// The HLO instruction an op event names: TPU op names are the whole expression
/// (`%fusion.3 = f32[..] fusion(..)`), whose `%name` is the instruction; else the display name,
/// else the name.
pub fn instruction_name_of(name: &str, display_name: &str) -> String {
    if let Some(rest) = name.strip_prefix('%') {
        if let Some((n, _)) = rest.split_once(" = ") {
            return n.to_string();
        }
    }
    if !display_name.is_empty() {
        display_name.to_string()
    } else {
        name.to_string()
    }
}

/// Every instruction for which the profile carries XLA's `flops` or `bytes_accessed` (device
/// planes' event metadata), one entry per (program, instruction).
pub fn xla_costs(p: &Profile) -> Vec<XlaCost> {
    let (Some(fk), Some(bk)) = (p.key("flops"), p.key("bytes_accessed")) else {
        return Vec::new();
    };
    let pk = p.key(PROGRAM_ID_STAT);
    let mut seen: HashMap<(Option<u64>, String), ()> = HashMap::new();
    let mut out = Vec::new();
    for kind in [DeviceKind::Tpu, DeviceKind::Gpu] {
        for (_, plane) in device_planes(p, kind) {
            for md in &plane.event_metadata {
                let stats = md.stats();
                let mut flops = None;
                let mut bytes = None;
                let mut program_id = None;
                for s in stats.iter() {
                    if s.key == fk {
                        flops = s.value.as_f64();
                    } else if s.key == bk {
                        bytes = s.value.as_f64();
                    } else if Some(s.key) == pk {
                        program_id = match s.value {
                            StatValue::U64(u) => Some(u),
                            StatValue::I64(i) => Some(i as u64),
                            _ => None,
                        };
                    }
                }
                if flops.is_none() && bytes.is_none() {
                    continue;
                }
                let instruction = instruction_name_of(p.str(md.name), p.str(md.display_name));
                if seen.insert((program_id, instruction.clone()), ()).is_some() {
                    continue;
                }
                out.push(XlaCost {
                    program_id,
                    instruction,
                    flops,
                    bytes_accessed: bytes,
                });
            }
        }
    }
    out
}

/// One instruction compared with XLA.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AgreementRow {
    pub module: String,
    pub instruction: String,
    pub opcode: String,
    pub ours: Cost,
    pub xla_flops: Option<f64>,
    pub xla_bytes_accessed: Option<f64>,
}

impl AgreementRow {
    /// |ours − XLA's| / max(XLA's, 1) for FLOPs, when XLA has them.
    pub fn flops_rel_error(&self) -> Option<f64> {
        self.xla_flops
            .map(|x| (self.ours.flops as f64 - x).abs() / x.abs().max(1.0))
    }

    /// The same for bytes accessed.
    pub fn bytes_rel_error(&self) -> Option<f64> {
        self.xla_bytes_accessed
            .map(|x| (self.ours.bytes_accessed as f64 - x).abs() / x.abs().max(1.0))
    }
}

/// Our cost model against XLA's figures, on every instruction that has both.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Agreement {
    pub rows: Vec<AgreementRow>,
    /// XLA figures whose program or instruction is not in the profile's HLO modules.
    pub unmatched: Vec<String>,
}

impl Agreement {
    /// Rows whose FLOPs and bytes are both within `tol` (relative).
    pub fn within(&self, tol: f64) -> usize {
        self.rows
            .iter()
            .filter(|r| {
                r.flops_rel_error().is_none_or(|e| e <= tol)
                    && r.bytes_rel_error().is_none_or(|e| e <= tol)
            })
            .count()
    }

    /// (ours, XLA's) summed over all rows: FLOPs, then bytes.
    pub fn totals(&self) -> ((f64, f64), (f64, f64)) {
        let mut t = ((0.0, 0.0), (0.0, 0.0));
        for r in &self.rows {
            if let Some(x) = r.xla_flops {
                t.0 .0 += r.ours.flops as f64;
                t.0 .1 += x;
            }
            if let Some(x) = r.xla_bytes_accessed {
                t.1 .0 += r.ours.bytes_accessed as f64;
                t.1 .1 += x;
            }
        }
        t
    }
}

/// Compares our model with XLA's figures where the profile carries them.
pub fn compare_with_xla(p: &Profile, idx: &HloIndex) -> Agreement {
    let mut models: HashMap<usize, HashMap<i64, Cost>> = HashMap::new();
    let mut rows = Vec::new();
    let mut unmatched = Vec::new();
    for x in xla_costs(p) {
        let Some(mi) = idx
            .modules
            .iter()
            .position(|m| x.program_id.is_some() && m.program_id == x.program_id)
        else {
            unmatched.push(format!(
                "{} (program {:?}: no such module)",
                x.instruction, x.program_id
            ));
            continue;
        };
        let m = &idx.modules[mi];
        let Some(ins) = m.instruction_by_name(&x.instruction) else {
            unmatched.push(format!("{} (not in {})", x.instruction, m.name));
            continue;
        };
        let costs = models.entry(mi).or_insert_with(|| module_costs(m));
        let ours = costs.get(&ins.id).copied().unwrap_or_default();
        rows.push(AgreementRow {
            module: m.name.clone(),
            instruction: x.instruction,
            opcode: ins.opcode.clone(),
            ours,
            xla_flops: x.flops,
            xla_bytes_accessed: x.bytes_accessed,
        });
    }
    rows.sort_by(|a, b| (&a.module, &a.instruction).cmp(&(&b.module, &b.instruction)));
    Agreement { rows, unmatched }
}
