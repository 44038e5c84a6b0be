//! Per-host summaries, and the all-hosts report made from them alone.
//!
//! A run of many hosts cannot hold every host's decoded profile at once (256 hosts of 200 MB
//! each). An all-hosts tool instead decodes one host at a time per core, reduces it to a
//! [`HostSummary`] (its steps with their breakdown, its HLO ops' times and costs, its modules'
//! memory peaks, its device and clock origin: kilobytes, not hundreds of megabytes) and drops the
//! profile. [`hosts_report`] then compares the hosts from their summaries only, so a second open
//! reads the summaries (cached as Parquet by the `xlens-tables` crate) and decodes nothing.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::base::context::Analysis;
use crate::base::hlo::hlo_ops::Detail;
use crate::base::hosts::across::{AllHosts, HostSteps, OpsAcrossHosts};
use crate::base::hosts::align::HostClock;
use crate::base::peaks::UserPeaks;
use crate::base::steps::step_db::{StepModel, StepRow};
use xlens_store::HostFile;

/// Bumped whenever what a summary holds, or how it is computed, changes (cached summaries of an
/// older version are made again).
pub const SUMMARY_VERSION: u32 = 4;

/// The memory space whose module peaks a summary keeps (0: device HBM / the default space).
pub const MEMORY_SPACE: i64 = 0;

/// One HLO op of one host, as [`crate::base::hlo::hlo_ops`] measures it.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct OpSummary {
    /// Texts shared with the other ops (and hosts) that have them ([`SharedText`]).
    pub program: Arc<str>,
    pub name: Arc<str>,
    pub category: Arc<str>,
    pub occurrences: u64,
    pub total_time_ps: i64,
    pub self_time_ps: i64,
    pub flops: f64,
    pub bytes_accessed: f64,
}

/// One copy of each distinct text, handed out to every op that has it, across the hosts of a run:
/// a host's hundreds of ops share a few program names and categories, and the hosts of one run
/// mostly have the same ops (64 hosts of the GPU sample: 1,355 kernels each, 861 KB of names,
/// the same on every host), which as strings of their own took an allocation and a copy each.
/// Several threads may share one.
#[derive(Debug, Default)]
pub struct SharedText(Mutex<HashSet<Arc<str>>>);

impl SharedText {
    pub fn get(&self, s: &str) -> Arc<str> {
        let mut set = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = set.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        set.insert(a.clone());
        a
    }
}

/// Bytes of memory `summaries` hold together: [`HostSummary::heap_bytes`] of each, a text they
/// share counted once in all.
pub fn heap_bytes_of_all(summaries: &[HostSummary]) -> usize {
    let mut seen = HashSet::new();
    summaries.iter().map(|s| s.heap_bytes_seen(&mut seen)).sum()
}

/// One HLO module's heap peak in [`MEMORY_SPACE`] (the memory viewer's figures).
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct ModuleSummary {
    pub module: String,
    pub program_id: Option<u64>,
    pub memory_space: i64,
    pub peak_heap_bytes: i64,
    pub peak_temp_heap_bytes: i64,
    pub indefinite_bytes: i64,
}

/// What the all-hosts views need from one host file.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct HostSummary {
    pub session: String,
    pub host: String,
    /// The file's path or bucket URL.
    pub file: String,
    pub file_bytes: u64,
    /// Why the file could not be read; everything below is empty then.
    pub error: Option<String>,
    pub device_kind: String,
    pub device_model: String,
    pub devices: u32,
    pub devices_active: u32,
    /// Wall-clock time of the profile's `t = 0` in ps since the Unix epoch, when the profile
    /// states it.
    pub origin_ps: Option<i128>,
    /// The first event's start and the last event's end, on the profile's own axis (ps after
    /// its origin); `None` without events.
    pub span_ps: Option<(i64, i64)>,
    /// Whether XProf's step table drops the first and the last of `steps` (more than five).
    pub dropped_edges: bool,
    /// Every well-formed step, breakdown by `step_model`'s categories (per-event-type times
    /// not kept).
    pub steps: Vec<StepRow>,
    /// How the steps were formed (XProf's rules, or the PyTorch plugin's).
    #[serde(skip)]
    pub step_model: StepModel,
    pub ops: Vec<OpSummary>,
    pub modules: Vec<ModuleSummary>,
    /// The ends of its collectives that every host finishes together, keyed by op, occurrence
    /// and step ([`crate::base::hosts::align::collective_ends`]): what the clocks are aligned on,
    /// with the step ends.
    pub collective_ends: Vec<(String, i64)>,
}

impl HostSummary {
    /// Reduces one host's analysis to its summary.
    pub fn of(session: &str, file: &HostFile, a: &Analysis) -> HostSummary {
        Self::of_sharing(session, file, a, &SharedText::default())
    }

    /// [`HostSummary::of`], its texts taken from (and added to) `shared`.
    pub fn of_sharing(
        session: &str,
        file: &HostFile,
        a: &Analysis,
        shared: &SharedText,
    ) -> HostSummary {
        let dev = a.device();
        // Steps and op metrics side by side: the step grouping's sequential part beside the op
        // lines and the HLO modules' heaps (read below), which would otherwise run on one core
        // while the other waits.
        let (db, _) = a.steps_and_op_metrics_beside(|| {
            a.module_memories(MEMORY_SPACE);
            // The op table's costs from the cost model, by module (nearly every module of a
            // run has ops): here they share the cores with the step grouping; in the op table
            // they ran with one core idle. Not where ops may carry XLA's own figures, which
            // the op table takes instead.
            let p = a.profile();
            if p.key("flops").is_none() && p.key("bytes_accessed").is_none() {
                for k in 0..a.hlo().modules.len() {
                    a.module_costs(k);
                }
            }
        });
        let p = a.profile();
        // Not the cached full table: the summary keeps no HLO text. Beside it, the ends of
        // the collectives (each reads op lines on its own; together they would leave a core
        // idle).
        let (collective_ends, ops) = crate::base::par::join(
            || crate::base::hosts::align::collective_ends(p, &db.steps_all),
            || a.op_table(UserPeaks::default(), Detail::Figures),
        );
        HostSummary {
            session: session.to_string(),
            host: file.host.clone(),
            file: file.path.to_string_lossy().into_owned(),
            file_bytes: file.bytes,
            error: None,
            device_kind: dev.kind.as_str().to_string(),
            device_model: dev.model.clone(),
            devices: u32::try_from(dev.count).unwrap_or(u32::MAX),
            devices_active: u32::try_from(dev.active).unwrap_or(u32::MAX),
            origin_ps: p.origin_is_wall_clock.then_some(p.origin_ps),
            span_ps: p.span(),
            dropped_edges: db.dropped_edges,
            collective_ends,
            steps: db.steps_all.clone(),
            step_model: db.model,
            ops: ops
                .ops
                .iter()
                .map(|o| OpSummary {
                    program: shared.get(&o.program),
                    name: shared.get(&o.name),
                    category: shared.get(&o.category),
                    occurrences: o.occurrences,
                    total_time_ps: o.total_time_ps,
                    self_time_ps: o.self_time_ps,
                    flops: o.flops,
                    bytes_accessed: o.bytes_accessed,
                })
                .collect(),
            modules: a
                .module_memories(MEMORY_SPACE)
                .iter()
                .filter_map(|m| m.as_ref().ok())
                .map(|m| ModuleSummary {
                    module: m.name.clone(),
                    program_id: m.program_id,
                    memory_space: m.memory_space,
                    peak_heap_bytes: m.peak_heap_bytes,
                    peak_temp_heap_bytes: m.peak_temp_heap_bytes,
                    indefinite_bytes: m.indefinite_bytes,
                })
                .collect(),
        }
    }

    /// Bytes of memory the summary holds (its strings' and lists' heap, and itself): what
    /// `xlens hosts` keeps per host once the host's profile is dropped. A text it shares
    /// ([`SharedText`]) counts once, however many of its ops have it; for many summaries that
    /// share texts with each other, [`heap_bytes_of_all`] counts each once in all.
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes_seen(&mut HashSet::new())
    }

    /// [`HostSummary::heap_bytes`], counting only the shared texts not in `seen` (and adding
    /// them to it).
    fn heap_bytes_seen(&self, seen: &mut HashSet<*const u8>) -> usize {
        use std::mem::size_of;
        let text = |s: &String| s.capacity();
        let steps: usize = self.steps.iter().map(|r| text(&r.name)).sum();
        // A shared text once: its counts and its bytes.
        let mut shared = |t: &Arc<str>| {
            if seen.insert(t.as_ptr()) {
                2 * size_of::<usize>() + t.len()
            } else {
                0
            }
        };
        let ops: usize = self
            .ops
            .iter()
            .map(|o| shared(&o.program) + shared(&o.name) + shared(&o.category))
            .sum();
        let modules: usize = self.modules.iter().map(|m| text(&m.module)).sum();
        let ends: usize = self.collective_ends.iter().map(|e| text(&e.0)).sum();
        size_of::<Self>()
            + text(&self.session)
            + text(&self.host)
            + text(&self.file)
            + self.error.as_ref().map_or(0, text)
            + text(&self.device_kind)
            + text(&self.device_model)
            + self.steps.capacity() * size_of::<StepRow>()
            + steps
            + self.ops.capacity() * size_of::<OpSummary>()
            + ops
            + self.modules.capacity() * size_of::<ModuleSummary>()
            + modules
            + self.collective_ends.capacity() * size_of::<(String, i64)>()
            + ends
    }

    /// A host file that could not be read.
    pub fn failed(session: &str, file: &HostFile, error: String) -> HostSummary {
        HostSummary {
            session: session.to_string(),
            host: file.host.clone(),
            file: file.path.to_string_lossy().into_owned(),
            file_bytes: file.bytes,
            error: Some(error),
            device_kind: String::new(),
            device_model: String::new(),
            devices: 0,
            devices_active: 0,
            origin_ps: None,
            span_ps: None,
            dropped_edges: false,
            steps: Vec::new(),
            step_model: StepModel::Xprof,
            ops: Vec::new(),
            modules: Vec::new(),
            collective_ends: Vec::new(),
        }
    }

    /// The steps XProf's step table shows (the first and the last dropped past five steps).
    pub fn xprof_steps(&self) -> &[StepRow] {
        match self.steps.len() {
            n if self.dropped_edges && n > 2 => &self.steps[1..n - 1],
            _ => &self.steps,
        }
    }

    /// The largest module heap peak: (module, bytes).
    pub fn peak_module(&self) -> Option<(&str, i64)> {
        self.modules
            .iter()
            .max_by(|a, b| {
                a.peak_heap_bytes
                    .cmp(&b.peak_heap_bytes)
                    .then_with(|| b.module.cmp(&a.module))
            })
            .map(|m| (m.module.as_str(), m.peak_heap_bytes))
    }
}

/// A host file of the run that could not be read.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UnreadHost {
    pub session: String,
    pub host: String,
    pub file: String,
    pub error: String,
}

/// One kind of device and how many hosts have it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DeviceCount {
    pub kind: String,
    pub model: String,
    pub hosts: usize,
    pub devices: u64,
}

/// The hosts of a run compared from their summaries: every figure says how many hosts it covers.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HostsReport {
    pub sessions: Vec<String>,
    /// How several sessions were matched into this run ([`group_sessions`]); empty for one.
    pub matched: String,
    /// Host files in the run, read or not.
    pub host_files: usize,
    pub hosts_read: usize,
    pub unread: Vec<UnreadHost>,
    pub devices: Vec<DeviceCount>,
    /// Per-host step statistics, host × step matrices and stragglers (XProf's step table of
    /// each host); `None` with fewer than two hosts with steps.
    pub steps: Option<AllHosts>,
    /// Each HLO op's total time (µs) over the hosts, with its per-host min/mean/max.
    pub ops: Option<OpsAcrossHosts>,
    /// The op profile's top level across hosts: each op category's total time (µs).
    pub op_categories: Option<OpsAcrossHosts>,
    /// Each module's heap peak (bytes) across hosts.
    pub memory: Option<OpsAcrossHosts>,
    /// How each host's clock would be placed on the run's axis (step ends); empty unless the
    /// hosts are of one session, or of sessions matched as one run.
    pub clocks: Vec<HostClock>,
}

/// Compares the hosts of `summaries` (one run).
pub fn hosts_report(summaries: &[HostSummary]) -> HostsReport {
    let mut sessions: Vec<String> = Vec::new();
    for s in summaries {
        if !sessions.contains(&s.session) {
            sessions.push(s.session.clone());
        }
    }
    let read: Vec<&HostSummary> = summaries.iter().filter(|s| s.error.is_none()).collect();
    let unread = summaries
        .iter()
        .filter_map(|s| {
            s.error.as_ref().map(|e| UnreadHost {
                session: s.session.clone(),
                host: s.host.clone(),
                file: s.file.clone(),
                error: e.clone(),
            })
        })
        .collect();
    let mut devices: Vec<DeviceCount> = Vec::new();
    for s in &read {
        match devices
            .iter_mut()
            .find(|d| d.kind == s.device_kind && d.model == s.device_model)
        {
            Some(d) => {
                d.hosts += 1;
                d.devices += u64::from(s.devices);
            }
            None => devices.push(DeviceCount {
                kind: s.device_kind.clone(),
                model: s.device_model.clone(),
                hosts: 1,
                devices: u64::from(s.devices),
            }),
        }
    }
    // Several sessions may reuse host names: name each host by session too, then.
    let mut names: Vec<&str> = summaries.iter().map(|s| s.host.as_str()).collect();
    names.sort_unstable();
    let unique = names.windows(2).all(|w| w[0] != w[1]);
    let label = |s: &HostSummary| {
        if !unique {
            format!("{}/{}", s.session, s.host)
        } else {
            s.host.clone()
        }
    };
    let labels: Vec<String> = read.iter().map(|s| label(s)).collect();
    let steps = crate::base::hosts::across::compare_hosts(
        &read
            .iter()
            .zip(&labels)
            .map(|(s, l)| HostSteps {
                host: l,
                rows: s.xprof_steps(),
            })
            .collect::<Vec<_>>(),
        summaries
            .iter()
            .filter(|s| s.error.is_some())
            .map(label)
            .collect(),
        read.first()
            .map_or(StepModel::Xprof, |s| s.step_model)
            .categories(),
    );
    let ops = crate::base::hosts::across::ops_across_hosts(
        read.iter().zip(&labels).flat_map(|(s, l)| {
            s.ops
                .iter()
                .map(move |o| (l.as_str(), &*o.program, &*o.name, o.total_time_ps as f64))
        }),
        "total_time ps",
    );
    let op_categories = crate::base::hosts::across::categories_across_hosts(
        read.iter().zip(&labels).flat_map(|(s, l)| {
            s.ops
                .iter()
                .map(move |o| (l.as_str(), &*o.category, o.total_time_ps as f64))
        }),
        "total_time ps",
    );
    let memory = crate::base::hosts::across::ops_across_hosts(
        read.iter().zip(&labels).flat_map(|(s, l)| {
            s.modules.iter().map(move |m| {
                (
                    l.as_str(),
                    "memory space 0",
                    m.module.as_str(),
                    m.peak_heap_bytes as f64,
                )
            })
        }),
        "peak_heap bytes",
    );
    // Only the hosts of one capture share steps: one session, or sessions matched as one run.
    let one_run = sessions.len() == 1 || group_sessions(summaries).len() == 1;
    let clocks = if one_run && read.len() > 1 {
        // As the trace viewer places hosts before aligning them: by their clocks' origins.
        let min = read.iter().filter_map(|s| s.origin_ps).min();
        let raw: Vec<i64> = read
            .iter()
            .map(|s| match (s.origin_ps, min) {
                (Some(o), Some(m)) => i64::try_from(o - m).unwrap_or(0),
                _ => 0,
            })
            .collect();
        // Borrowed, not copied: a pod's hosts have hundreds of thousands of steps.
        let ends: Vec<Vec<(&str, i64)>> = read
            .iter()
            .map(|s| {
                s.steps
                    .iter()
                    .map(|r| (r.name.as_str(), r.begin_ps.saturating_add(r.duration_ps)))
                    .collect()
            })
            .collect();
        let colls: Vec<Vec<(&str, i64)>> = read
            .iter()
            .map(|s| {
                s.collective_ends
                    .iter()
                    .map(|(n, e)| (n.as_str(), *e))
                    .collect()
            })
            .collect();
        crate::base::hosts::align::align(&labels, &raw, &ends, &colls)
    } else {
        Vec::new()
    };
    let matched = match group_sessions(summaries).as_slice() {
        [g] => g.matched.clone(),
        _ => String::new(),
    };
    HostsReport {
        sessions,
        matched,
        host_files: summaries.len(),
        hosts_read: read.len(),
        unread,
        devices,
        steps,
        ops,
        op_categories,
        memory,
        clocks,
    }
}

/// Sessions that are one run: written by different hosts for the same capture window.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct SessionGroup {
    pub sessions: Vec<String>,
    /// How they were matched (empty for a session on its own).
    pub matched: String,
}

/// Groups the sessions of `summaries` into runs: sessions whose profile windows (on the hosts'
/// wall clocks) overlap and that share no host name are one capture written by several hosts
/// (each host its own session folder, as `jax.profiler` does on every worker). A session whose
/// profiles state no wall clock stays on its own. Groups are in order of their first session.
pub fn group_sessions(summaries: &[HostSummary]) -> Vec<SessionGroup> {
    group_windows(summaries.iter().map(|s| HostWindow {
        session: &s.session,
        host: &s.host,
        origin_ps: s.origin_ps,
        span_ps: s.span_ps,
    }))
}

/// One host file's place in time, what [`group_windows`] matches sessions on.
pub struct HostWindow<'a> {
    pub session: &'a str,
    pub host: &'a str,
    /// Wall-clock origin (ps since the Unix epoch), when the profile states one.
    pub origin_ps: Option<i128>,
    /// First start and last end, ps after the origin.
    pub span_ps: Option<(i64, i64)>,
}

/// [`group_sessions`] over host windows (from summaries, or from decoded profiles).
pub fn group_windows<'a>(hosts: impl IntoIterator<Item = HostWindow<'a>>) -> Vec<SessionGroup> {
    struct S<'a> {
        name: &'a str,
        hosts: Vec<&'a str>,
        window: Option<(i128, i128)>,
    }
    let mut sessions: Vec<S> = Vec::new();
    for s in hosts {
        let i = match sessions.iter().position(|x| x.name == s.session) {
            Some(i) => i,
            None => {
                sessions.push(S {
                    name: s.session,
                    hosts: Vec::new(),
                    window: None,
                });
                sessions.len() - 1
            }
        };
        let x = &mut sessions[i];
        x.hosts.push(s.host);
        if let (Some(o), Some((b, e))) = (s.origin_ps, s.span_ps) {
            let (b, e) = (o + i128::from(b), o + i128::from(e));
            x.window = Some(x.window.map_or((b, e), |(wb, we)| (wb.min(b), we.max(e))));
        }
    }
    let mut order: Vec<usize> = (0..sessions.len()).collect();
    order.sort_by_key(|&i| sessions[i].window.map(|w| w.0));
    struct Group<'a> {
        members: Vec<usize>,
        window: Option<(i128, i128)>,
        hosts: Vec<&'a str>,
        /// The smallest overlap a member joined with.
        overlap: i128,
    }
    let mut groups: Vec<Group> = Vec::new();
    for i in order {
        let s = &sessions[i];
        let joined = s.window.and_then(|(b, e)| {
            groups.iter_mut().find_map(|g| {
                let (gb, ge) = g.window?;
                let overlap = e.min(ge) - b.max(gb);
                let disjoint = s.hosts.iter().all(|h| !g.hosts.contains(h));
                (overlap > 0 && disjoint).then(|| {
                    g.members.push(i);
                    g.window = Some((gb.min(b), ge.max(e)));
                    g.hosts.extend(s.hosts.iter().copied());
                    g.overlap = g.overlap.min(overlap);
                })
            })
        });
        if joined.is_none() {
            groups.push(Group {
                members: vec![i],
                window: s.window,
                hosts: s.hosts.clone(),
                overlap: i128::MAX,
            });
        }
    }
    groups.sort_by_key(|g| g.members.iter().copied().min());
    groups
        .into_iter()
        .map(|g| {
            let (mut members, hosts, overlap) = (g.members, g.hosts, g.overlap);
            members.sort_unstable();
            let names: Vec<String> = members.iter().map(|&i| sessions[i].name.to_string()).collect();
            let matched = if members.len() > 1 {
                format!(
                    "sessions {} are one run of {} host(s): their profile windows overlap (each by at least {:.3} ms, on the hosts' wall clocks) and no host is in two of them",
                    names.join(", "),
                    hosts.len(),
                    overlap as f64 / 1e9
                )
            } else {
                String::new()
            };
            SessionGroup {
                sessions: names,
                matched,
            }
        })
        .collect()
}
