//! The first pass over a PyTorch trace's events: operators and the other slices of the
//! operator tree, runtime calls (launches) and device events, with the args each view reads.

use xlens_model::{Profile, StatValue, StrId};

use super::tc_op;

type HashMap<K, V> = crate::base::fx::FxMap<K, V>;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeKind {
    Operator,
    Python,
    Step,
    DataLoader,
    Optimizer,
    Annotation,
    Module,
}

pub(super) struct Node {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) name: StrId,
    pub(super) kind: NodeKind,
    pub(super) ext: Option<i64>,
    pub(super) shape: Option<StrId>,
    /// `Call stack`, when recorded (not empty).
    pub(super) stack: Option<StrId>,
    pub(super) children: Vec<usize>,
    pub(super) runtimes: Vec<usize>,
    // Filled by `fill`.
    pub(super) host_self: i64,
    pub(super) device_total: i64,
    pub(super) device_self: i64,
    pub(super) tc_eligible: bool,
    pub(super) tc_self: i64,
    pub(super) tc_total: i64,
}

pub(super) struct Launch {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) ext: Option<i64>,
    pub(super) corr: Option<i64>,
    pub(super) line: usize,
    pub(super) device: Vec<usize>,
}

pub(super) struct DeviceEv {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) name: StrId,
    pub(super) kernel: bool,
    pub(super) corr: Option<i64>,
    pub(super) blocks: Option<f64>,
    pub(super) occupancy: Option<f64>,
    pub(super) grid: Option<StrId>,
    pub(super) block: Option<StrId>,
    pub(super) regs: Option<i64>,
    pub(super) smem: Option<i64>,
}

/// The events the views are built from.
pub(super) struct Events {
    pub(super) nodes: Vec<Node>,
    /// Per thread (a host line, its overlap lines merged back): its name and nodes.
    pub(super) threads: Vec<(String, Vec<usize>)>,
    pub(super) launches: Vec<Launch>,
    pub(super) devices: Vec<DeviceEv>,
}

/// Reads the events; `None` for a profile that is not a PyTorch trace (or has none of them).
pub(super) fn read(p: &Profile) -> Option<Events> {
    let cat_key = p.key("cat")?;
    // The args read, each event's in one pass: slot `i` holds the first value of `KEYS[i]`.
    const KEYS: [&str; 14] = [
        "cat",
        "External id",
        "external id",
        "correlation",
        "Call stack",
        "Input Dims",
        "Input dims",
        "Python module id",
        "blocks per SM",
        "est. achieved occupancy %",
        "grid",
        "block",
        "registers per thread",
        "shared memory",
    ];
    const CAT: usize = 0;
    const EXT: usize = 1;
    const EXT2: usize = 2;
    const CORR: usize = 3;
    const STACK: usize = 4;
    const DIMS: usize = 5;
    const DIMS2: usize = 6;
    const MODULE: usize = 7;
    const BLOCKS: usize = 8;
    const OCC: usize = 9;
    const GRID: usize = 10;
    const BLOCK: usize = 11;
    const REGS: usize = 12;
    const SMEM: usize = 13;
    let named: Vec<(&str, u8)> = KEYS
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, i as u8 + 1))
        .collect();
    let slot_of = crate::base::ops::events::stat_slots(p, &named);
    let mut nodes: Vec<Node> = Vec::new();
    // Per thread (a host line, its overlap lines merged back): its nodes.
    let mut threads: Vec<(String, Vec<usize>)> = Vec::new();
    let mut launches: Vec<Launch> = Vec::new();
    let mut devices: Vec<DeviceEv> = Vec::new();
    let mut kinds: HashMap<StrId, u8> = HashMap::default();
    for plane in &p.planes {
        for line in &plane.lines {
            let ev = &line.events;
            if !ev.may_have_stat(cat_key) {
                continue;
            }
            let lname = p.str(line.name);
            let base = lname
                .rsplit_once(" (overlap ")
                .map_or(lname, |(b, _)| b)
                .to_string();
            let ti = match threads.iter().position(|t| t.0 == base) {
                Some(i) => i,
                None => {
                    threads.push((base, Vec::new()));
                    threads.len() - 1
                }
            };
            for i in 0..ev.len() {
                let mut vals = [None::<StatValue>; KEYS.len()];
                ev.stats(i).select(
                    |k| slot_of.get(k.0 as usize).copied().filter(|&s| s != 0),
                    |s, v| {
                        let slot = &mut vals[usize::from(s - 1)];
                        if slot.is_none() {
                            *slot = Some(v);
                        }
                    },
                );
                let Some(StatValue::Str(cat)) = vals[CAT] else {
                    continue;
                };
                // 1 operator, 2 python, 3 annotation, 4 python_function, 5 runtime,
                // 6 kernel, 7 memcpy/memset, 0 other.
                let k = *kinds.entry(cat).or_insert_with(|| {
                    match p.str(cat).to_ascii_lowercase().as_str() {
                        "cpu_op" | "operator" => 1,
                        "python" => 2,
                        "user_annotation" | "gpu_user_annotation" => 3,
                        "python_function" => 4,
                        "runtime" | "cuda_runtime" | "cuda_driver" => 5,
                        "kernel" => 6,
                        "memcpy" | "gpu_memcpy" | "memset" | "gpu_memset" => 7,
                        _ => 0,
                    }
                });
                if k == 0 {
                    continue;
                }
                let (start, end) = (ev.start(i), ev.end(i));
                let md = plane.metadata_of(line, i);
                let name_id = md.map(|m| m.name).unwrap_or_default();
                let name = p.str(name_id);
                let i64_of = |k: usize| vals[k].and_then(|v| v.as_i64());
                let ext = i64_of(EXT).or_else(|| i64_of(EXT2));
                match k {
                    5 => launches.push(Launch {
                        start,
                        end,
                        ext,
                        corr: i64_of(CORR),
                        line: ti,
                        device: Vec::new(),
                    }),
                    6 | 7 => {
                        let f64_of = |k: usize| vals[k].and_then(|v| v.as_f64());
                        let str_of = |k: usize| match vals[k] {
                            Some(StatValue::Str(s)) => Some(s),
                            _ => None,
                        };
                        devices.push(DeviceEv {
                            start,
                            end,
                            name: name_id,
                            kernel: k == 6,
                            corr: i64_of(CORR),
                            blocks: f64_of(BLOCKS),
                            occupancy: f64_of(OCC),
                            grid: str_of(GRID),
                            block: str_of(BLOCK),
                            regs: i64_of(REGS),
                            smem: i64_of(SMEM),
                        })
                    }
                    _ => {
                        let loader = (name.starts_with("enumerate(DataLoader)#")
                            && name.ends_with(".__next__"))
                            || name.starts_with("enumerate(DataPipe)#");
                        let kind = match k {
                            _ if name.starts_with("ProfilerStep#") && (k == 1 || k == 3) => {
                                if p.str(cat) == "gpu_user_annotation" {
                                    continue;
                                }
                                NodeKind::Step
                            }
                            1 | 3 if loader => NodeKind::DataLoader,
                            1 if name.starts_with("Optimizer.step") => NodeKind::Optimizer,
                            1 => NodeKind::Operator,
                            2 => NodeKind::Python,
                            3 if crate::base::pytorch::torch_steps::is_collective(name) => {
                                NodeKind::Annotation
                            }
                            4 if vals[MODULE].is_some() => NodeKind::Module,
                            _ => continue,
                        };
                        let shape = match vals[DIMS].or(vals[DIMS2]) {
                            Some(StatValue::Str(s)) => Some(s),
                            _ => None,
                        };
                        nodes.push(Node {
                            start,
                            end,
                            name: name_id,
                            kind,
                            ext: if kind == NodeKind::Module { None } else { ext },
                            shape,
                            stack: match vals[STACK] {
                                Some(StatValue::Str(c)) if !p.str(c).is_empty() => Some(c),
                                _ => None,
                            },
                            children: Vec::new(),
                            runtimes: Vec::new(),
                            host_self: 0,
                            device_total: 0,
                            device_self: 0,
                            tc_eligible: tc_op(name),
                            tc_self: 0,
                            tc_total: 0,
                        });
                        threads[ti].1.push(nodes.len() - 1);
                    }
                }
            }
        }
    }
    if nodes.is_empty() && launches.is_empty() && devices.is_empty() {
        return None;
    }
    Some(Events {
        nodes,
        threads,
        launches,
        devices,
    })
}
