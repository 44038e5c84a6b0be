//! The PyTorch TensorBoard plugin's operator and kernel views of a PyTorch trace
//! ([`crate::base::pytorch::torch_views`]): operators by name or by name and input shape, kernels by
//! name or by kernel and operator.

use serde::Serialize;

use crate::base::context::Run;
use crate::base::fmt::csv_field;
use crate::base::pytorch::torch_views::{KernelOpRow, KernelRow, OperatorRow, TorchViews};
use crate::base::tool::{PerHost, Tool, ToolError};

/// How operator rows are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorGroup {
    #[default]
    Name,
    NameAndShape,
}

/// The operator view's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct OperatorParams {
    /// Group operators by name, or by name and input shape (`Input Dims`).
    #[arg(long, value_enum, default_value_t = OperatorGroup::Name)]
    #[serde(default)]
    pub group_by: OperatorGroup,
}

/// One host's operators.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Operators {
    pub group_by: &'static str,
    pub operators: Vec<OperatorRow>,
    /// Whether the trace has device work (else the device columns are all 0).
    pub has_device: bool,
    pub notes: Vec<String>,
}

/// `text` with each host's notes before it (why a table is empty, what was inferred).
fn with_notes<T>(r: &PerHost<T>, text: String, notes: fn(&T) -> &Vec<String>) -> String {
    let mut out = String::new();
    for (host, res) in &r.hosts {
        for n in res.as_ref().map(notes).into_iter().flatten() {
            out.push_str(&format!("host {host}: {n}\n"));
        }
    }
    out + &text
}

const NOT_PYTORCH: &str = "Not a PyTorch (Kineto) trace: these views are of PyTorch traces.";

fn operators(v: Option<&TorchViews>, g: OperatorGroup) -> Operators {
    let empty = TorchViews {
        notes: vec![NOT_PYTORCH.to_string()],
        ..TorchViews::default()
    };
    let v = v.unwrap_or(&empty);
    Operators {
        group_by: match g {
            OperatorGroup::Name => "name",
            OperatorGroup::NameAndShape => "name_and_shape",
        },
        operators: match g {
            OperatorGroup::Name => v.operators_by_name.clone(),
            OperatorGroup::NameAndShape => v.operators_by_name_and_shape.clone(),
        },
        has_device: !v.kernels_by_name.is_empty(),
        notes: v.notes.clone(),
    }
}

fn operators_csv(o: &Operators) -> String {
    let mut t = String::from("name,input_shape,calls,device_self_ps,device_total_ps,host_self_ps,host_total_ps,tc_eligible,tc_self_ratio,tc_total_ratio\n");
    for r in &o.operators {
        t.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            csv_field(&r.name),
            csv_field(r.input_shape.as_deref().unwrap_or("")),
            r.calls,
            r.device_self_ps,
            r.device_total_ps,
            r.host_self_ps,
            r.host_total_ps,
            r.tc_eligible,
            r.tc_self_ratio,
            r.tc_total_ratio
        ));
    }
    t
}

/// The plugin's operator view.
pub struct PytorchOperators;

impl Tool for PytorchOperators {
    const NAME: &'static str = "pytorch_operators";
    const TITLE: &'static str = "PyTorch operators";
    const DESCRIPTION: &'static str = "Per host of a PyTorch trace, operators by name (or name and input shape) as the PyTorch TensorBoard plugin's Operator view: calls, device self/total, host self/total, Tensor Core eligibility and use.";
    type Params = OperatorParams;
    type Output = PerHost<Operators>;

    fn run(run: &Run, prm: &OperatorParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| {
            operators(a.torch_views().as_deref(), prm.group_by)
        }))
    }
    fn text(r: &Self::Output) -> String {
        with_notes(r, r.text(operators_csv), |o| &o.notes)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(operators_csv))
    }
}

/// How kernel rows are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelGroup {
    #[default]
    Name,
    NameAndOp,
}

/// The kernel view's parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct KernelParams {
    /// Group kernels by name, or by kernel and the operator that launched it.
    #[arg(long, value_enum, default_value_t = KernelGroup::Name)]
    #[serde(default)]
    pub group_by: KernelGroup,
}

/// One host's kernels.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Kernels {
    pub group_by: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_name: Option<Vec<KernelRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_name_and_op: Option<Vec<KernelOpRow>>,
    /// Kernel time in Tensor Core kernels, of all kernel time.
    pub tc_used_ratio: Option<f64>,
    /// Kernel time launched by Tensor-Core-eligible operators, of the operators' kernel time.
    pub tc_eligible_ops_kernel_ratio: f64,
    pub notes: Vec<String>,
}

fn kernels(v: Option<&TorchViews>, g: KernelGroup) -> Kernels {
    let empty = TorchViews {
        notes: vec![NOT_PYTORCH.to_string()],
        ..TorchViews::default()
    };
    let v = v.unwrap_or(&empty);
    Kernels {
        group_by: match g {
            KernelGroup::Name => "name",
            KernelGroup::NameAndOp => "name_and_op",
        },
        by_name: (g == KernelGroup::Name).then(|| v.kernels_by_name.clone()),
        by_name_and_op: (g == KernelGroup::NameAndOp).then(|| v.kernels_by_name_and_op.clone()),
        tc_used_ratio: v.tc_used_ratio,
        tc_eligible_ops_kernel_ratio: v.tc_eligible_ops_kernel_ratio,
        notes: v.notes.clone(),
    }
}

fn list(v: &Option<Vec<i64>>) -> String {
    v.as_ref().map_or(String::new(), |v| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn kernels_csv(k: &Kernels) -> String {
    let mut t = String::new();
    if let Some(rows) = &k.by_name {
        t.push_str("name,tc_used,calls,total_ps,mean_ps,max_ps,min_ps,mean_blocks_per_sm,mean_occupancy_percent\n");
        for r in rows {
            t.push_str(&format!(
                "{},{},{},{},{},{},{},{},{}\n",
                csv_field(&r.name),
                r.tc_used,
                r.calls,
                r.total_ps,
                r.mean_ps,
                r.max_ps,
                r.min_ps,
                r.mean_blocks_per_sm,
                r.mean_occupancy_percent
            ));
        }
    }
    if let Some(rows) = &k.by_name_and_op {
        t.push_str("name,op_name,grid,block,registers_per_thread,shared_memory_bytes,tc_used,op_tc_eligible,calls,total_ps,mean_ps,max_ps,min_ps,mean_blocks_per_sm,mean_occupancy_percent\n");
        for r in rows {
            t.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&r.name),
                csv_field(&r.op_name),
                list(&r.grid),
                list(&r.block),
                r.registers_per_thread
                    .map_or(String::new(), |v| v.to_string()),
                r.shared_memory_bytes
                    .map_or(String::new(), |v| v.to_string()),
                r.tc_used,
                r.op_tc_eligible,
                r.calls,
                r.total_ps,
                r.mean_ps,
                r.max_ps,
                r.min_ps,
                r.mean_blocks_per_sm,
                r.mean_occupancy_percent
            ));
        }
    }
    t
}

/// The plugin's kernel view.
pub struct PytorchKernels;

impl Tool for PytorchKernels {
    const NAME: &'static str = "pytorch_kernels";
    const TITLE: &'static str = "PyTorch kernels";
    const DESCRIPTION: &'static str = "Per host of a PyTorch trace, GPU kernels by name (or by kernel and launching operator) as the PyTorch TensorBoard plugin's Kernel view: calls, total/mean/max/min time, mean blocks per SM, mean estimated achieved occupancy, Tensor Cores used.";
    type Params = KernelParams;
    type Output = PerHost<Kernels>;

    fn run(run: &Run, prm: &KernelParams) -> Result<Self::Output, ToolError> {
        Ok(PerHost::of(Self::NAME, run, |a| {
            kernels(a.torch_views().as_deref(), prm.group_by)
        }))
    }
    fn text(r: &Self::Output) -> String {
        with_notes(r, r.text(kernels_csv), |k| &k.notes)
    }
    fn csv(r: &Self::Output) -> Option<String> {
        Some(r.csv(kernels_csv))
    }
}

/// One step of one rank as the plugin's distributed view splits it (ps): computation not
/// overlapped by communication, their overlap, communication not overlapped, and the rest.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StepSplit {
    pub step: String,
    pub computation_ps: i64,
    pub overlapping_ps: i64,
    pub communication_ps: i64,
    pub other_ps: i64,
}

/// One collective op name of one rank.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CommOpRow {
    pub name: String,
    pub calls: u64,
    pub bytes: i64,
    pub mean_bytes: f64,
    /// The union of the op's own slices and its kernels.
    pub total_latency_ps: i64,
    pub mean_latency_ps: f64,
    /// Of that, the time every rank spends in it: each kernel's end less the shortest duration
    /// of that kernel over the ranks (the rest is waiting for the slowest rank). `None` when the
    /// ranks' collectives cannot be paired one to one.
    pub data_transfer_ps: Option<i64>,
    pub mean_data_transfer_ps: Option<f64>,
}

/// One rank of a job.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RankView {
    pub host: String,
    pub rank: Option<i64>,
    pub steps: Vec<StepSplit>,
    /// The mean over the steps (whole picoseconds, rounded down as the plugin's microseconds).
    pub mean: StepSplit,
    pub comm_ops: Vec<CommOpRow>,
}

/// The ranks of one job: the hosts whose `distributedInfo` says the same backend and world size.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Job {
    pub backend: Option<String>,
    pub world_size: Option<i64>,
    pub ranks: Vec<RankView>,
    pub notes: Vec<String>,
}

/// The plugin's distributed view of a run.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Distributed {
    pub jobs: Vec<Job>,
    pub notes: Vec<String>,
}

fn union_len(mut v: Vec<(i64, i64)>) -> i64 {
    crate::base::pytorch::hta::total(&{
        v.sort_unstable();
        crate::base::pytorch::hta::union(v)
    })
}

/// The distributed view: per job, per rank, each step's split and the collective ops.
pub fn distributed(run: &Run) -> Distributed {
    struct Host {
        name: String,
        rank: Option<i64>,
        key: (Option<String>, Option<i64>),
        db: std::sync::Arc<crate::base::steps::step_db::StepDb>,
    }
    let mut hosts: Vec<Host> = Vec::new();
    let mut notes = Vec::new();
    for h in &run.hosts {
        let Ok(a) = &h.analysis else { continue };
        let db = a.step_db();
        if db.torch.is_none() {
            continue;
        }
        let p = a.profile();
        let stats = p.plane("/host:CPU").map(|pl| pl.stats());
        let get = |k: &str| stats.as_ref().and_then(|s| p.key(k).and_then(|k| s.get(k)));
        let backend = match get("backend") {
            Some(xlens_model::StatValue::Str(s)) => Some(p.str(s).to_string()),
            _ => None,
        };
        hosts.push(Host {
            name: h.host().to_string(),
            rank: crate::base::pytorch::hta::rank(p),
            key: (backend, get("world_size").and_then(|v| v.as_i64())),
            db,
        });
    }
    // (Hosts that could not be read are listed as errors, not as "not PyTorch".)
    if hosts.is_empty() && run.hosts.iter().any(|h| h.analysis.is_ok()) {
        notes.push(NOT_PYTORCH.to_string());
    }
    // One job per backend and world size; a trace without `distributedInfo` is a job of its own.
    type JobKey = Option<(Option<String>, Option<i64>)>;
    let mut jobs: Vec<(JobKey, Vec<&Host>)> = Vec::new();
    for h in &hosts {
        let key = (h.key != (None, None)).then(|| h.key.clone());
        match jobs.iter_mut().find(|(k, _)| key.is_some() && *k == key) {
            Some((_, v)) => v.push(h),
            None => jobs.push((key, vec![h])),
        }
    }
    let jobs = jobs
        .into_iter()
        .map(|(key, mut members)| {
            members.sort_by_key(|h| (h.rank, h.name.clone()));
            let mut notes = Vec::new();
            // Each kernel range of each collective, paired across the ranks by order: its
            // data-transfer range, from its end back by the shortest duration over the ranks.
            let ops: Vec<&[crate::base::pytorch::torch_steps::CommOp]> = members
                .iter()
                .map(|h| {
                    h.db.torch
                        .as_ref()
                        .map_or(&[][..], |t| t.comm_ops.as_slice())
                })
                .collect();
            let paired = !ops.is_empty()
                && ops.iter().all(|o| !o.is_empty() && o.len() == ops[0].len())
                && (0..ops[0].len()).all(|i| {
                    ops.iter()
                        .all(|o| o[i].ranges.len() == ops[0][i].ranges.len())
                });
            if members.len() > 1 && !paired {
                notes.push("The ranks' collectives do not pair one to one (different counts), so the time each spends waiting for the others is not split out (as in the PyTorch TensorBoard plugin).".to_string());
            }
            let shortest: Vec<Vec<i64>> = if paired {
                (0..ops[0].len())
                    .map(|i| {
                        (0..ops[0][i].ranges.len())
                            .map(|j| {
                                ops.iter()
                                    .map(|o| o[i].ranges[j].1 - o[i].ranges[j].0)
                                    .min()
                                    .unwrap_or(0)
                            })
                            .collect()
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let ranks = members
                .iter()
                .zip(&ops)
                .map(|(h, ops)| {
                    let t = h.db.torch.as_ref();
                    let steps: Vec<StepSplit> = h
                        .db
                        .steps_all
                        .iter()
                        .zip(t.map_or(&[][..], |t| t.comm_overlap.as_slice()))
                        .map(|(r, c)| StepSplit {
                            step: r.name.clone(),
                            computation_ps: c.computation_ps - c.overlap_ps,
                            overlapping_ps: c.overlap_ps,
                            communication_ps: c.communication_ps - c.overlap_ps,
                            other_ps: c.other_ps,
                        })
                        .collect();
                    let n = steps.len().max(1) as i64;
                    let mean_of = |f: fn(&StepSplit) -> i64| {
                        // Whole microseconds, rounded down, as the plugin shows them.
                        steps.iter().map(f).sum::<i64>() / n / 1_000_000 * 1_000_000
                    };
                    let mean = StepSplit {
                        step: "mean".to_string(),
                        computation_ps: mean_of(|s| s.computation_ps),
                        overlapping_ps: mean_of(|s| s.overlapping_ps),
                        communication_ps: mean_of(|s| s.communication_ps),
                        other_ps: mean_of(|s| s.other_ps),
                    };
                    let mut names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
                    names.sort_unstable();
                    names.dedup();
                    let comm_ops = names
                        .into_iter()
                        .map(|name| {
                            let mine: Vec<(usize, &crate::base::pytorch::torch_steps::CommOp)> = ops
                                .iter()
                                .enumerate()
                                .filter(|(_, o)| o.name == name)
                                .collect();
                            let calls = mine.len() as u64;
                            let bytes: i64 = mine.iter().map(|(_, o)| o.bytes).sum();
                            let total = union_len(
                                mine.iter().flat_map(|(_, o)| o.ranges.clone()).collect(),
                            );
                            let transfer = paired.then(|| {
                                union_len(
                                    mine.iter()
                                        .flat_map(|(i, o)| {
                                            o.ranges
                                                .iter()
                                                .zip(&shortest[*i])
                                                .map(|(r, d)| (r.1 - d, r.1))
                                        })
                                        .collect(),
                                )
                            });
                            let per = |v: i64| v as f64 / calls.max(1) as f64;
                            CommOpRow {
                                name: name.to_string(),
                                calls,
                                bytes,
                                mean_bytes: per(bytes),
                                total_latency_ps: total,
                                mean_latency_ps: per(total),
                                data_transfer_ps: transfer,
                                mean_data_transfer_ps: transfer.map(per),
                            }
                        })
                        .collect();
                    RankView {
                        host: h.name.clone(),
                        rank: h.rank,
                        steps,
                        mean,
                        comm_ops,
                    }
                })
                .collect();
            let (backend, world_size) = key.unwrap_or((None, None));
            Job {
                backend,
                world_size,
                ranks,
                notes,
            }
        })
        .collect();
    Distributed { jobs, notes }
}

fn distributed_csv(d: &Distributed) -> String {
    let mut t =
        String::from("rank,host,step,computation_ps,overlapping_ps,communication_ps,other_ps\n");
    for j in &d.jobs {
        for r in &j.ranks {
            for s in r.steps.iter().chain(std::iter::once(&r.mean)) {
                t.push_str(&format!(
                    "{},{},{},{},{},{},{}\n",
                    r.rank.map_or(String::new(), |v| v.to_string()),
                    csv_field(&r.host),
                    csv_field(&s.step),
                    s.computation_ps,
                    s.overlapping_ps,
                    s.communication_ps,
                    s.other_ps
                ));
            }
        }
    }
    t
}

/// The plugin's distributed view.
pub struct PytorchDistributed;

impl Tool for PytorchDistributed {
    const NAME: &'static str = "pytorch_distributed";
    const TITLE: &'static str = "PyTorch distributed";
    const DESCRIPTION: &'static str = "Per job of PyTorch ranks (same distributedInfo backend and world size), per rank and step: computation, overlapping, communication and other time; per collective op: calls, bytes, total latency and data transfer time, as the PyTorch TensorBoard plugin's Distributed view.";
    type Params = crate::base::tool::NoParams;
    type Output = Distributed;

    fn run(run: &Run, _: &crate::base::tool::NoParams) -> Result<Self::Output, ToolError> {
        Ok(distributed(run))
    }
    fn text(d: &Distributed) -> String {
        let mut t = String::new();
        for n in &d.notes {
            t.push_str(&format!("{n}\n"));
        }
        for j in &d.jobs {
            t.push_str(&format!(
                "job: backend {}, world size {}, {} rank(s) here\n",
                j.backend.as_deref().unwrap_or("?"),
                j.world_size.map_or("?".to_string(), |v| v.to_string()),
                j.ranks.len()
            ));
            for n in &j.notes {
                t.push_str(&format!("  {n}\n"));
            }
            for r in &j.ranks {
                t.push_str(&format!(
                    "  {} (rank {}): mean step computation {:.3} ms, overlapping {:.3} ms, communication {:.3} ms, other {:.3} ms\n",
                    r.host,
                    r.rank.map_or("?".to_string(), |v| v.to_string()),
                    r.mean.computation_ps as f64 / 1e9,
                    r.mean.overlapping_ps as f64 / 1e9,
                    r.mean.communication_ps as f64 / 1e9,
                    r.mean.other_ps as f64 / 1e9
                ));
                for o in &r.comm_ops {
                    t.push_str(&format!(
                        "    {}: {} calls, {} bytes, latency {:.3} ms, data transfer {}\n",
                        o.name,
                        o.calls,
                        o.bytes,
                        o.total_latency_ps as f64 / 1e9,
                        o.data_transfer_ps
                            .map_or("-".to_string(), |v| format!("{:.3} ms", v as f64 / 1e9))
                    ));
                }
            }
        }
        t
    }
    fn csv(d: &Distributed) -> Option<String> {
        Some(distributed_csv(d))
    }
}
