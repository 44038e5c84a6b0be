//! The analysis context: a run's hosts, each with its profile and the analyses derived from it.
//!
//! Every derived analysis (op metrics, the step database, the HLO index, the op table, the
//! allocator timeline, ...) is computed on first use and then kept, so every tool and every
//! request that needs it again gets the same value without computing it again. The server keeps
//! one [`Analysis`] per host file and one [`Run`] per selection of hosts; a one-shot command
//! builds them for its one tool.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use xlens_model::Profile;
use xlens_store::{HostFile, Session};

use crate::base::device::{device_info, DeviceInfo};
use crate::base::hlo::cost_model::{module_costs, ModuleCosts};
use crate::base::hlo::hlo_ops::{host_ops_with, Detail, HostOps, OpTableInputs};
use crate::base::hlo::modules::{hlo_index, HloIndex};
use crate::base::memory::allocators::MemoryProfile;
use crate::base::memory::headroom::{memory_headroom, Headroom};
use crate::base::memory::heap::{module_memories, ModuleMemory};
use crate::base::memory::profile::memory_profile;
use crate::base::ops::events::{op_times, OpTimes};
use crate::base::ops::op_metrics::OpMetricsJob;
use crate::base::ops::op_metrics::{host_framework_ops, op_metrics, FrameworkOp, OpMetricsDb};
use crate::base::peaks::{peak_spec, UserPeaks};
use crate::base::steps::annotations::{find_steps, Steps};
use crate::base::steps::step_db::{step_db_prepare, StepDb};
use crate::base::steps::step_ops::{bin_steps, step_totals, StepBins, StepTotals};
use crate::base::trace::TraceIndex;

/// Host framework ops and the self time they cover.
pub type HostFrameworkOps = (Vec<FrameworkOp>, i64);

type Slot<V> = Arc<OnceLock<Arc<V>>>;

/// Values computed once per key (a handful of keys: peak figures, memory spaces).
struct Keyed<K, V> {
    slots: Mutex<Vec<(K, Slot<V>)>>,
}

impl<K: PartialEq, V> Keyed<K, V> {
    fn new() -> Self {
        Keyed {
            slots: Mutex::new(Vec::new()),
        }
    }

    fn get(&self, key: K, compute: impl FnOnce() -> V) -> Arc<V> {
        let slot = self.get_slot(key);
        slot.get_or_init(|| Arc::new(compute())).clone()
    }

    /// The values computed so far, with their keys.
    fn computed(&self) -> Vec<(K, Arc<V>)>
    where
        K: Clone,
    {
        let slots = match self.slots.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        slots
            .iter()
            .filter_map(|(k, s)| Some((k.clone(), s.get()?.clone())))
            .collect()
    }

    /// Gives `key` the value `v` unless it has one already.
    fn offer(&self, key: K, v: Arc<V>) {
        let _ = self.get_slot(key).set(v);
    }

    fn get_slot(&self, key: K) -> Slot<V> {
        let mut slots = match self.slots.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        match slots.iter().find(|(k, _)| *k == key) {
            Some((_, s)) => s.clone(),
            None => {
                let s = Arc::new(OnceLock::new());
                slots.push((key, s.clone()));
                s
            }
        }
    }
}

/// The HLO modules of a host, and what was derived from them (the decoded index, the cost
/// model's figures, the heaps), kept for the next hosts of a run. The hosts of one program
/// compile the same modules, and decoding, indexing and costing them again took about 3 % of each
/// host's CPU (207 MB JAX profile: 1.9 MB of HLO). A host adopts them only when its
/// own serialized modules are equal to those they were derived from (names, program ids and
/// every byte), so its answers are what it would have derived itself. Several threads may
/// share one; it holds one host's modules at a time.
#[derive(Default)]
pub struct SharedHlo(Mutex<Option<HloDerived>>);

struct HloDerived {
    /// The serialized modules (name, program id, bytes) everything here was derived from.
    protos: Vec<(String, Option<u64>, Vec<u8>)>,
    hlo: Arc<HloIndex>,
    costs: Arc<ModuleCostCells>,
    memories: Vec<(i64, Arc<ModuleMemories>)>,
}

/// Every module's heap in one memory space (a module whose heap cannot be replayed: why).
type ModuleMemories = Vec<Result<ModuleMemory, String>>;

/// Per module of an [`HloIndex`], its costs once computed.
type ModuleCostCells = Vec<OnceLock<Arc<ModuleCosts>>>;

fn same_protos(a: &[(String, Option<u64>, Vec<u8>)], b: &[(&str, Option<u64>, &[u8])]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.0 == y.0 && x.1 == y.1 && x.2 == y.2)
}

/// [`UserPeaks`] as a key: the figures' bits.
#[derive(PartialEq)]
struct PeaksKey(Option<u64>, Option<u64>);

impl From<UserPeaks> for PeaksKey {
    fn from(u: UserPeaks) -> Self {
        PeaksKey(
            u.flops_per_second.map(f64::to_bits),
            u.bytes_per_second.map(f64::to_bits),
        )
    }
}

/// One host's profile and what has been derived from it so far.
pub struct Analysis {
    profile: Arc<Profile>,
    device: OnceLock<DeviceInfo>,
    op_metrics: OnceLock<Arc<OpMetricsDb>>,
    step_db: OnceLock<Arc<StepDb>>,
    hta: OnceLock<Arc<crate::base::pytorch::hta::HtaTrace>>,
    host_framework_ops: OnceLock<Arc<HostFrameworkOps>>,
    hlo: OnceLock<Arc<HloIndex>>,
    /// The cost model's figures per HLO module of `hlo`, each computed once when asked for.
    module_costs: OnceLock<Arc<ModuleCostCells>>,
    /// Op tables per peak figures (they depend on the peaks the user states).
    hlo_ops: Keyed<PeaksKey, HostOps>,
    /// Every HLO module's heap, per memory space.
    module_memories: Keyed<i64, Vec<Result<ModuleMemory, String>>>,
    /// Per-step op totals, per peak figures (they come from the op table).
    step_totals: Keyed<PeaksKey, Option<Vec<StepTotals>>>,
    steps: OnceLock<Arc<Steps>>,
    step_ops: OnceLock<Option<Arc<StepBins>>>,
    op_times: OnceLock<Arc<OpTimes>>,
    allocators: OnceLock<Arc<MemoryProfile>>,
    headroom: OnceLock<Option<Headroom>>,
    torch_views: OnceLock<Option<Arc<crate::base::pytorch::torch_views::TorchViews>>>,
}

impl Analysis {
    pub fn new(profile: Arc<Profile>) -> Analysis {
        Analysis {
            profile,
            device: OnceLock::new(),
            op_metrics: OnceLock::new(),
            step_db: OnceLock::new(),
            hta: OnceLock::new(),
            host_framework_ops: OnceLock::new(),
            hlo: OnceLock::new(),
            module_costs: OnceLock::new(),
            hlo_ops: Keyed::new(),
            module_memories: Keyed::new(),
            step_totals: Keyed::new(),
            steps: OnceLock::new(),
            step_ops: OnceLock::new(),
            op_times: OnceLock::new(),
            allocators: OnceLock::new(),
            headroom: OnceLock::new(),
            torch_views: OnceLock::new(),
        }
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The profile, shared (for indexes built beside the analysis's own).
    pub fn profile_arc(&self) -> Arc<Profile> {
        self.profile.clone()
    }

    /// What ran the profile.
    pub fn device(&self) -> &DeviceInfo {
        self.device.get_or_init(|| device_info(&self.profile))
    }

    /// Time, FLOPs and bytes per op ([`crate::base::ops::op_metrics`]).
    pub fn op_metrics(&self) -> Arc<OpMetricsDb> {
        self.op_metrics
            .get_or_init(|| Arc::new(op_metrics(&self.profile)))
            .clone()
    }

    /// Steps, their grouping and per-step breakdown ([`crate::base::steps::step_db`]).
    pub fn step_db(&self) -> Arc<StepDb> {
        self.step_db
            .get_or_init(|| Arc::new(step_db_prepare(&self.profile).finish()))
            .clone()
    }

    /// The events as HTA loads them ([`crate::base::pytorch::hta::hta_trace`]; empty for XSpace files).
    pub fn hta(&self) -> Arc<crate::base::pytorch::hta::HtaTrace> {
        self.hta
            .get_or_init(|| Arc::new(crate::base::pytorch::hta::hta_trace(&self.profile)))
            .clone()
    }

    /// Framework ops on host threads ([`host_framework_ops`]).
    pub fn host_framework_ops(&self) -> Arc<HostFrameworkOps> {
        self.host_framework_ops
            .get_or_init(|| Arc::new(host_framework_ops(&self.profile)))
            .clone()
    }

    /// The step database, op metrics, device and host framework ops together. When none is
    /// computed yet they are computed side by side on two threads: the step grouping's second
    /// half is sequential, so one thread groups steps while the other takes op lines, and then
    /// joins in on the lines left (no third thread competing for two cores).
    pub fn steps_and_ops(&self) -> (Arc<StepDb>, Arc<OpMetricsDb>) {
        self.steps_and_ops_with(true, || ())
    }

    /// [`Analysis::steps_and_ops`] without the device and host framework ops (for a host's
    /// summary, which reads neither: with a host on each core they would only cost time), and
    /// with `beside` run where those would have been: on the thread that does not group steps,
    /// before it takes op lines. A summary passes what it reads next (the HLO modules' heaps),
    /// which would otherwise run on one core while the other waits.
    pub fn steps_and_op_metrics_beside(
        &self,
        beside: impl FnOnce(),
    ) -> (Arc<StepDb>, Arc<OpMetricsDb>) {
        self.steps_and_ops_with(false, beside)
    }

    fn steps_and_ops_with(
        &self,
        framework_ops: bool,
        beside: impl FnOnce(),
    ) -> (Arc<StepDb>, Arc<OpMetricsDb>) {
        if self.step_db.get().is_none() && self.op_metrics.get().is_none() {
            let p = &*self.profile;
            let prep = step_db_prepare(p);
            let job = OpMetricsJob::new(p);
            let (db, ()) = crate::base::par::join(
                || {
                    let db = prep.finish();
                    job.help();
                    db
                },
                || {
                    if framework_ops {
                        self.device();
                        self.host_framework_ops();
                        self.op_passes_beside_the_steps();
                    }
                    beside();
                    job.help();
                },
            );
            let _ = self.step_db.set(Arc::new(db));
            let _ = self.op_metrics.set(Arc::new(job.finish()));
        }
        (self.step_db(), self.op_metrics())
    }

    /// What the overview, the report and the advice read after the steps and op metrics, each
    /// a pass over the op events of its own, computed on the thread that does not group steps:
    /// the op times (unless they come from the op metrics, which are being computed) and, on
    /// CPU profiles, the op events binned by step (the advice's device busy).
    fn op_passes_beside_the_steps(&self) {
        let (source, _) = crate::base::ops::events::op_lines(&self.profile);
        if source != Some(crate::base::ops::events::OpSource::DeviceXlaOps) {
            self.op_times();
        }
        if self.device().kind == crate::base::device::DeviceKind::Cpu {
            self.step_ops();
        }
    }

    /// The HLO modules the profile carries ([`crate::base::hlo::modules`]).
    pub fn hlo(&self) -> Arc<HloIndex> {
        self.hlo
            .get_or_init(|| Arc::new(hlo_index(&self.profile)))
            .clone()
    }

    /// The cost model's figures for every instruction of module `k` of [`Analysis::hlo`]
    /// ([`module_costs`]), computed once; `None` when there is no such module.
    pub fn module_costs(&self, k: usize) -> Option<Arc<ModuleCosts>> {
        let idx = self.hlo();
        let m = idx.modules.get(k)?;
        let cells = self
            .module_costs
            .get_or_init(|| Arc::new(idx.modules.iter().map(|_| OnceLock::new()).collect()));
        Some(
            cells
                .get(k)?
                .get_or_init(|| Arc::new(module_costs(m)))
                .clone(),
        )
    }

    /// Takes the HLO index, module costs and heaps `shared` holds when this profile's serialized
    /// modules are the ones they were derived from (else lets `shared` go of them). Returns
    /// whether it did. Only before anything of the HLO has been derived here, and not for a
    /// profile without modules.
    pub fn adopt_hlo(&self, shared: &SharedHlo) -> bool {
        if self.hlo.get().is_some() || self.module_costs.get().is_some() {
            return false;
        }
        let protos = crate::base::hlo::modules::hlo_protos(&self.profile);
        if protos.is_empty() {
            return false;
        }
        let mut held = shared.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(d) = held.as_ref().filter(|d| same_protos(&d.protos, &protos)) else {
            // Another program: not kept beside this host's own.
            *held = None;
            return false;
        };
        let _ = self.hlo.set(d.hlo.clone());
        let _ = self.module_costs.set(d.costs.clone());
        for (space, m) in &d.memories {
            self.module_memories.offer(*space, m.clone());
        }
        true
    }

    /// Leaves this profile's HLO index, module costs and heaps (those derived so far) in
    /// `shared` for the next host, unless it holds them already (or the profile has no module).
    pub fn offer_hlo(&self, shared: &SharedHlo) {
        let Some(hlo) = self.hlo.get().filter(|h| !h.modules.is_empty()) else {
            return;
        };
        let mut held = shared.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.as_ref().is_some_and(|d| Arc::ptr_eq(&d.hlo, hlo)) {
            return;
        }
        let costs = self
            .module_costs
            .get_or_init(|| Arc::new(hlo.modules.iter().map(|_| OnceLock::new()).collect()))
            .clone();
        *held = Some(HloDerived {
            protos: crate::base::hlo::modules::hlo_protos(&self.profile)
                .into_iter()
                .map(|(n, id, b)| (n.to_string(), id, b.to_vec()))
                .collect(),
            hlo: hlo.clone(),
            costs,
            memories: self.module_memories.computed(),
        });
    }

    /// The op table against `user`'s peaks ([`crate::base::hlo::hlo_ops`]).
    pub fn hlo_ops(&self, user: UserPeaks) -> Arc<HostOps> {
        self.hlo_ops
            .get(user.into(), || self.op_table(user, Detail::Full))
    }

    /// The op table against `user`'s peaks, its rows filled as far as `detail` says, computed
    /// afresh ([`host_ops_with`]).
    pub fn op_table(&self, user: UserPeaks, detail: Detail) -> HostOps {
        let peaks = peak_spec(&self.profile, user);
        let hlo = self.hlo();
        let op_metrics = self.op_metrics();
        host_ops_with(
            OpTableInputs {
                profile: &self.profile,
                peaks,
                hlo: &hlo,
                op_metrics: &op_metrics,
                module_costs: &|k| self.module_costs(k),
            },
            detail,
        )
    }

    /// Every HLO module's heap in `memory_space` ([`crate::base::memory::heap::module_memories`]).
    pub fn module_memories(&self, memory_space: i64) -> Arc<Vec<Result<ModuleMemory, String>>> {
        self.module_memories
            .get(memory_space, || module_memories(&self.hlo(), memory_space))
    }

    /// The profile's steps as annotations or device step lines give them ([`find_steps`]).
    pub fn steps(&self) -> Arc<Steps> {
        self.steps
            .get_or_init(|| Arc::new(find_steps(&self.profile)))
            .clone()
    }

    /// The op events of each step (`None` without steps; [`crate::base::steps::step_ops`]).
    pub fn step_ops(&self) -> Option<Arc<StepBins>> {
        self.step_ops
            .get_or_init(|| bin_steps(&self.profile, &self.steps()).map(Arc::new))
            .clone()
    }

    /// Per step, the op events starting in it with their FLOPs and bytes from the op table
    /// against `user`'s peaks ([`crate::base::steps::step_ops::step_totals`]; `None` without steps).
    pub fn step_totals(&self, user: UserPeaks) -> Arc<Option<Vec<StepTotals>>> {
        self.step_totals.get(user.into(), || {
            let bins = self.step_ops()?;
            let table = self.hlo_ops(user);
            // The roofline's op order: self time, then name.
            let mut ops: Vec<&crate::base::hlo::hlo_ops::OpRow> = table.ops.iter().collect();
            ops.sort_by(|a, b| {
                b.self_time_ps
                    .cmp(&a.self_time_ps)
                    .then_with(|| a.name.cmp(&b.name))
            });
            Some(step_totals(&self.profile, &bins, ops))
        })
    }

    /// Time per op, by op name and module ([`op_times`]), so that an op has one self time, and
    /// one share of op time, in every tool. TensorFlow ops on host threads take the framework
    /// op stats' figures (XProf's self time: nested TF ops left out, not every nested event);
    /// XLA ops on TPU take the op metrics' (XProf's device op times, which `hlo_stats` and
    /// `op_profile` list).
    pub fn op_times(&self) -> Arc<OpTimes> {
        use crate::base::ops::events::{OpSource, OpTime};
        self.op_times
            .get_or_init(|| {
                let t = op_times(&self.profile);
                match t.source {
                    Some(OpSource::HostFrameworkOps) => {
                        let fw = self.host_framework_ops();
                        Arc::new(crate::base::ops::op_metrics::framework_op_times(&fw.0))
                    }
                    Some(OpSource::DeviceXlaOps) => {
                        let om = self.op_metrics();
                        let ops = om
                            .ops
                            .iter()
                            .map(|o| OpTime {
                                name: o.name.clone(),
                                long_name: o.long_name.clone(),
                                module: o.module.clone(),
                                occurrences: o.occurrences,
                                total_time_ps: o.total_time_ps,
                                self_time_ps: o.self_time_ps,
                            })
                            .collect();
                        Arc::new(OpTimes::of(t.source, ops))
                    }
                    _ => Arc::new(t),
                }
            })
            .clone()
    }

    /// The allocator timeline ([`crate::base::memory::allocators`]).
    pub fn allocators(&self) -> Arc<MemoryProfile> {
        self.allocators
            .get_or_init(|| Arc::new(memory_profile(&self.profile)))
            .clone()
    }

    /// Computes every derived analysis not computed yet (with the default peak figures and
    /// memory space 0), so that the tools asked for next find them ready.
    pub fn warm(&self) {
        self.steps_and_ops();
        self.hlo_ops(UserPeaks::default());
        self.module_memories(0);
        self.allocators();
        self.headroom();
        self.step_ops();
        self.step_totals(UserPeaks::default());
        self.op_times();
        self.hta();
    }

    /// A PyTorch trace's operator and kernel views ([`crate::base::pytorch::torch_views`]); `None` for
    /// other profiles.
    pub fn torch_views(&self) -> Option<Arc<crate::base::pytorch::torch_views::TorchViews>> {
        self.torch_views
            .get_or_init(|| {
                crate::base::pytorch::torch_views::torch_views(&self.profile).map(Arc::new)
            })
            .clone()
    }

    /// Peak memory against the device's memory, when the profile states it.
    pub fn headroom(&self) -> Option<&Headroom> {
        self.headroom
            .get_or_init(|| {
                memory_headroom(&self.profile, &self.allocators(), || {
                    crate::base::memory::heap::memory_viewer_from(
                        &self.hlo(),
                        &self.module_memories(0),
                        None,
                        0,
                    )
                })
            })
            .as_ref()
    }
}

/// One host file of a run: where it is, and its analysis or why it could not be read.
pub struct HostContext {
    pub session: String,
    pub file: HostFile,
    pub analysis: Result<Arc<Analysis>, String>,
}

impl HostContext {
    pub fn host(&self) -> &str {
        &self.file.host
    }

    pub fn path(&self) -> &Path {
        &self.file.path
    }
}

/// The hosts a tool runs over (one or more sessions, each narrowed to the wanted hosts), and what
/// is derived from all of them together.
pub struct Run {
    pub sessions: Vec<Session>,
    pub hosts: Vec<HostContext>,
    trace: OnceLock<Result<Arc<TraceIndex>, String>>,
    warming: std::sync::atomic::AtomicBool,
    /// Align the hosts' clocks on their step ends in the trace ([`crate::base::hosts::align`]); on
    /// unless [`Run::set_align`] turns it off before the trace is first built.
    no_align: std::sync::atomic::AtomicBool,
}

impl Run {
    /// Gathers the hosts of `sessions`, each through `load` (which may share analyses between
    /// runs, as the server's cache does).
    pub fn new(
        sessions: Vec<Session>,
        mut load: impl FnMut(&HostFile) -> Result<Arc<Analysis>, String>,
    ) -> Run {
        let mut hosts = Vec::new();
        for s in &sessions {
            for h in &s.hosts {
                hosts.push(HostContext {
                    session: s.name.clone(),
                    file: h.clone(),
                    analysis: load(h),
                });
            }
        }
        Run {
            sessions,
            hosts,
            trace: OnceLock::new(),
            warming: std::sync::atomic::AtomicBool::new(false),
            no_align: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// One result per host, in order: `ok` for each host that loaded, `failed` with the error
    /// of each that did not.
    pub fn map_hosts<T>(
        &self,
        mut ok: impl FnMut(&HostContext, &Analysis) -> T,
        mut failed: impl FnMut(&HostContext, &str) -> T,
    ) -> Vec<T> {
        self.hosts
            .iter()
            .map(|h| match &h.analysis {
                Ok(a) => ok(h, a),
                Err(e) => failed(h, e),
            })
            .collect()
    }

    /// The name of the first session (what the overview calls the run).
    pub fn name(&self) -> &str {
        self.sessions.first().map_or("", |s| s.name.as_str())
    }

    /// Computes everything derived from this run's hosts that is not computed yet (see
    /// [`Analysis::warm`]) and the trace index. Only the first call does the work (later calls
    /// return at once; whoever asks for a value still being computed waits for it).
    pub fn warm(&self) {
        if self.warming.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        for h in &self.hosts {
            if let Ok(a) = &h.analysis {
                a.warm();
            }
        }
        let _ = self.trace_index();
    }

    /// Shows the hosts on their raw clocks in the trace (`--no-align`); call before the trace is
    /// first built.
    pub fn set_align(&self, on: bool) {
        self.no_align
            .store(!on, std::sync::atomic::Ordering::Release);
    }

    /// Whether [`Run::warm`] has been called.
    pub fn warm_started(&self) -> bool {
        self.warming.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The trace viewer's index over every host, built on first use; the first host's error
    /// when a host could not be read.
    pub fn trace_index(&self) -> Result<Arc<TraceIndex>, String> {
        self.trace
            .get_or_init(|| {
                let mut hosts = Vec::with_capacity(self.hosts.len());
                let mut ends = Vec::with_capacity(self.hosts.len());
                let mut colls = Vec::with_capacity(self.hosts.len());
                // Only the hosts of one capture share steps: several sessions (a whole log
                // directory) keep their raw clocks.
                let align = self.hosts.len() > 1
                    && self.sessions.len() == 1
                    && !self.no_align.load(std::sync::atomic::Ordering::Acquire);
                for h in &self.hosts {
                    let a = h.analysis.as_ref().map_err(Clone::clone)?;
                    hosts.push((h.host().to_string(), a.profile.clone()));
                    if align {
                        let db = a.step_db();
                        ends.push(
                            db.steps_all
                                .iter()
                                .map(|r| (r.name.clone(), r.begin_ps.saturating_add(r.duration_ps)))
                                .collect(),
                        );
                        colls.push(crate::base::hosts::align::collective_ends(
                            &a.profile,
                            &db.steps_all,
                        ));
                    }
                }
                Ok(Arc::new(TraceIndex::build_aligned(
                    hosts,
                    align.then_some((ends, colls)),
                )))
            })
            .clone()
    }
}
