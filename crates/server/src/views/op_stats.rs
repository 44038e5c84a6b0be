//! Framework op stats and kernel stats: every row of every host in one sortable table, under the
//! row count of the first host (as the tools' text says it).

use maud::{html, Markup};
use xlens_analysis::base::tool::PerHost;
use xlens_analysis::tools::async_overlap::{AsyncOverlap, Window};
use xlens_analysis::tools::capture_check::{CaptureCheck, PlaneLines};
use xlens_analysis::tools::comm_comp_overlap::CommCompOverlap;
use xlens_analysis::tools::events::{Aggregate, Events};
use xlens_analysis::tools::framework_op_stats::{FrameworkOpRow, FrameworkOpStats};
use xlens_analysis::tools::hlo_modules::{HloModules, ModuleRow};
use xlens_analysis::tools::idle_time::{IdleRow, IdleTime};
use xlens_analysis::tools::kernel_breakdown::{KernelBreakdown, KernelRow};
use xlens_analysis::tools::kernel_stats::{Kernel, KernelStats};
use xlens_analysis::tools::launch_stats::{Launch, LaunchStats};
use xlens_analysis::tools::peak_allocations::{self as peaks, PeakAllocations};
use xlens_analysis::tools::step_trace::{StepInfo, StepTrace};
use xlens_analysis::tools::temporal_breakdown::TemporalBreakdown;

use super::ui::{Cell, Table};
use super::Cx;

/// The first host's row count (or nothing when there is no host), then the table of every row of
/// the hosts that loaded, or a note when none did.
fn per_host<'a, T, R: 'a>(
    r: &'a PerHost<T>,
    rows: fn(&'a T) -> &'a [R],
    table: Table<'a, (usize, &'a R)>,
) -> Markup {
    let first = r.hosts.first().map(|(host, res)| {
        let n = res.as_ref().map(|t| rows(t).len()).unwrap_or(0);
        format!("host {host}: {n} rows")
    });
    let loaded: Vec<&T> = r
        .hosts
        .iter()
        .filter_map(|(_, res)| res.as_ref().ok())
        .collect();
    html! {
        pre class="dim" { (first.unwrap_or_default()) }
        @if loaded.is_empty() {
            p class="dim" { "Nothing to show." }
        } @else {
            (table.render(loaded.into_iter().flat_map(|t| rows(t).iter().enumerate())))
        }
    }
}

/// Microseconds as the tools' CSV writes them.
fn us(ps: i64) -> Cell {
    let v = ps as f64 / 1e6;
    Cell::num(v, v.to_string())
}

pub fn framework_view(r: &PerHost<FrameworkOpStats>, _: &Cx) -> Markup {
    // PyTorch traces: the GPU time each op launched, a column only where some op has it.
    let launched = r.hosts.iter().any(|(_, res)| {
        res.as_ref()
            .is_ok_and(|s| s.ops.iter().any(|o| o.op.launched_device_time_ps.is_some()))
    });
    let mut t = Table::new("sortable")
        .filter()
        .col("rank", |(i, _): &(usize, &FrameworkOpRow)| Cell::int(i + 1))
        .col("host_or_device", |(_, r)| Cell::text(r.op.host_or_device))
        .col("type", |(_, r)| Cell::text(&r.op.op_type))
        .col("operation", |(_, r)| Cell::text(&r.op.name))
        .col("occurrences", |(_, r)| Cell::int(r.op.occurrences))
        .col("total_time_us", |(_, r)| us(r.op.total_time_ps))
        .col("avg_time_us", |(_, r)| us(r.avg_time_ps))
        .col("total_self_time_us", |(_, r)| us(r.op.self_time_ps))
        .col("avg_self_time_us", |(_, r)| us(r.avg_self_time_ps))
        .col("self_time_percent", |(_, r)| {
            Cell::float(r.self_time_percent, 4)
        })
        .col("flop_rate_gflops", |(_, r)| match r.flop_rate {
            Some(f) => Cell::float(f / 1e9, 3),
            None => Cell::text(""),
        })
        .col("via_xla", |(_, r)| Cell::text(r.op.via_xla.to_string()));
    if launched {
        t = t.col(
            "launched_device_time_us",
            |(_, r): &(usize, &FrameworkOpRow)| match r.op.launched_device_time_ps {
                Some(ps) => us(ps),
                None => Cell::text(""),
            },
        );
    }
    per_host(r, |s| &s.ops, t)
}

pub fn kernel_view(r: &PerHost<KernelStats>, _: &Cx) -> Markup {
    let t = Table::new("sortable")
        .filter()
        .col("rank", |(i, _): &(usize, &Kernel)| Cell::int(i + 1))
        .col("kernel_name", |(_, k)| Cell::text(&k.kernel_name))
        .col("registers_per_thread", |(_, k)| {
            Cell::int(k.registers_per_thread)
        })
        .col("shmem_bytes", |(_, k)| Cell::int(k.shmem_bytes))
        .col("block_dim", |(_, k)| Cell::text(&k.block_dim))
        .col("grid_dim", |(_, k)| Cell::text(&k.grid_dim))
        .col("occupancy_pct", |(_, k)| match k.occupancy_pct {
            Some(v) => Cell::num(v, v.to_string()),
            None => Cell::text(""),
        })
        .col("is_kernel_using_tensor_core", |(_, k)| {
            Cell::text(k.is_kernel_using_tensor_core.to_string())
        })
        .col("op_name", |(_, k)| Cell::text(&k.op_name))
        .col("occurrences", |(_, k)| Cell::int(k.occurrences))
        .col("total_duration_us", |(_, k)| us(k.total_duration_ps))
        .col("avg_duration_us", |(_, k)| us(k.avg_duration_ps))
        .col("min_duration_us", |(_, k)| us(k.min_duration_ps))
        .col("max_duration_us", |(_, k)| us(k.max_duration_ps));
    per_host(r, |s| &s.kernels, t)
}

/// The groups of matching events, largest total first (each host's).
pub fn events_view(r: &PerHost<Events>, _: &Cx) -> Markup {
    let opt = |s: &Option<String>| Cell::text(s.as_deref().unwrap_or(""));
    let t = Table::new("sortable")
        .filter()
        .col("event", move |(_, a): &(usize, &Aggregate)| opt(&a.event))
        .col("plane", move |(_, a)| opt(&a.plane))
        .col("line", move |(_, a)| opt(&a.line))
        .num("count", |(_, a)| Cell::int(a.count))
        .num("total", |(_, a)| Cell::time(a.total_duration_ps))
        .num("mean", |(_, a)| Cell::time(a.avg_duration_ps as i64))
        .num("min", |(_, a)| Cell::time(a.min_duration_ps))
        .num("p50", |(_, a)| Cell::time(a.p50_duration_ps as i64))
        .num("p90", |(_, a)| Cell::time(a.p90_duration_ps as i64))
        .num("p99", |(_, a)| Cell::time(a.p99_duration_ps as i64))
        .num("max", |(_, a)| Cell::time(a.max_duration_ps));
    per_host(r, |e| &e.aggregates, t)
}

/// Every HLO module by name (the names `--module` takes), with its size.
pub fn hlo_modules_view(r: &PerHost<HloModules>, _: &Cx) -> Markup {
    let t = Table::new("sortable")
        .filter()
        .col("name", |(_, m): &(usize, &ModuleRow)| Cell::text(&m.name))
        .col("module_name", |(_, m)| Cell::text(&m.module_name))
        .col("program_id", |(_, m)| match m.program_id {
            Some(p) => Cell::text(p.to_string()),
            None => Cell::text(""),
        })
        .num("computations", |(_, m)| Cell::int(m.computations))
        .num("instructions", |(_, m)| Cell::int(m.instructions));
    per_host(r, |s| &s.modules, t)
}

/// Every HLO module by device memory allocated, largest first, with its largest buffers at the
/// peak.
pub fn peak_allocations_view(r: &PerHost<PeakAllocations>, _: &Cx) -> Markup {
    let t = Table::new("sortable")
        .filter()
        .col("module", |(_, m): &(usize, &peaks::ModuleRow)| {
            Cell::text(&m.module_name)
        })
        .num("allocated MiB", |(_, m)| Cell::float(m.total_hbm_mib, 2))
        .num("peak heap MiB", |(_, m)| Cell::float(m.peak_heap_mib, 2))
        .col("largest buffers at the peak", |(_, m)| {
            let top: Vec<String> = m
                .top_buffers
                .iter()
                .take(3)
                .map(|b| format!("{} ({:.2} MiB)", b.instruction, b.size_mib))
                .collect();
            Cell::text(top.join(", "))
        });
    per_host(r, |s| &s.modules, t)
}

/// One row per step: its time in XProf's five groups and its bottleneck.
pub fn step_trace_view(r: &PerHost<StepTrace>, _: &Cx) -> Markup {
    let t = Table::new("sortable")
        .num("step", |(_, s): &(usize, &StepInfo)| Cell::int(s.step_num))
        .col("name", |(_, s)| Cell::text(&s.step_name))
        .num("step ms", |(_, s)| Cell::float(s.step_time_ms, 4))
        .num("compute ms", |(_, s)| Cell::float(s.compute_time_ms, 4))
        .num("communication ms", |(_, s)| {
            Cell::float(s.communication_time_ms, 4)
        })
        .num("input ms", |(_, s)| Cell::float(s.infeed_time_ms, 4))
        .num("output ms", |(_, s)| Cell::float(s.outfeed_time_ms, 4))
        .num("idle ms", |(_, s)| Cell::float(s.idle_time_ms, 4))
        .col("bottleneck", |(_, s)| Cell::text(s.bottleneck));
    per_host(r, |s| &s.step_breakdown, t)
}

/// The capture's gates (with what to capture with when closed) and its planes.
pub fn capture_check_view(r: &PerHost<CaptureCheck>, _: &Cx) -> Markup {
    let gates: Vec<String> = r
        .hosts
        .iter()
        .filter_map(|(h, c)| {
            let c = c.as_ref().ok()?;
            let mut s = format!(
                "host {h}: device trace {}, kernel (LLO) profiling {}, hardware counters {}.",
                c.capture_valid_for_device_analysis,
                c.capture_valid_for_llo_analysis,
                c.capture_valid_for_counter_sampling
            );
            for m in &c.missing {
                s.push_str(&format!(" No {}: capture with {}.", m.gate, m.capture_with));
            }
            Some(s)
        })
        .collect();
    let t = Table::new("sortable")
        .filter()
        .col("plane", |(_, p): &(usize, &PlaneLines)| Cell::text(&p.name))
        .num("lines", |(_, p)| Cell::int(p.lines.len()))
        .num("events", |(_, p)| Cell::int(p.total_events));
    html! {
        @for line in &gates { p { (line) } }
        (per_host(r, |c| &c.planes, t))
    }
}

/// The most exposed async ops, with the summary above them.
pub fn async_overlap_view(r: &PerHost<AsyncOverlap>, _: &Cx) -> Markup {
    let summary: Vec<String> = r
        .hosts
        .iter()
        .filter_map(|(h, o)| {
            let o = o.as_ref().ok()?;
            let s = &o.summary;
            Some(match s.overlap_ratio {
                Some(x) => format!(
                    "host {h}: {} async ops, {:.1}% of their time hidden ({} hidden, {} partial, {} exposed)",
                    s.bucket.count, x * 100.0, s.bucket.hidden, s.bucket.partial, s.bucket.exposed
                ),
                None => format!("host {h}: {}", o.note.as_deref().unwrap_or("no async ops")),
            })
        })
        .collect();
    let t = Table::new("sortable")
        .filter()
        .col("plane", |(_, w): &(usize, &Window)| Cell::text(&w.plane))
        .col("async op", |(_, w)| Cell::text(&w.name))
        .col("kind", |(_, w)| Cell::text(&w.op))
        .num("start", |(_, w)| Cell::int(w.start_ps))
        .num("span", |(_, w)| Cell::time(w.span_ps))
        .num("exposed", |(_, w)| Cell::time(w.exposed_ps))
        .num("hidden share", |(_, w)| Cell::float(w.overlap_ratio, 3))
        .col("class", |(_, w)| Cell::text(w.class));
    html! {
        @for line in &summary { p { (line) } }
        (per_host(r, |o| &o.top_exposed, t))
    }
}

/// One row per rank (host), HTA's columns; a host without GPU events says so.
pub fn temporal_view(r: &PerHost<TemporalBreakdown>, _: &Cx) -> Markup {
    let rows: Vec<(&str, &TemporalBreakdown)> = r
        .hosts
        .iter()
        .filter_map(|(h, res)| Some((h.as_str(), res.as_ref().ok()?)))
        .collect();
    let t = Table::new("sortable")
        .col("host", |(h, _): &(&str, &TemporalBreakdown)| Cell::text(*h))
        .num("rank", |(_, t)| Cell::int(t.rank))
        .num("idle time", |(_, t)| Cell::time(t.idle_time_ps))
        .num("compute time", |(_, t)| Cell::time(t.compute_time_ps))
        .num("non-compute time", |(_, t)| {
            Cell::time(t.non_compute_time_ps)
        })
        .num("kernel time", |(_, t)| Cell::time(t.kernel_time_ps))
        .num("idle_time_pctg", |(_, t)| Cell::float(t.idle_time_pctg, 2))
        .num("compute_time_pctg", |(_, t)| {
            Cell::float(t.compute_time_pctg, 2)
        })
        .num("non_compute_time_pctg", |(_, t)| {
            Cell::float(t.non_compute_time_pctg, 2)
        })
        .num("gpu_events", |(_, t)| Cell::int(t.gpu_events));
    html! {
        p class="dim" { "As Holistic Trace Analysis 0.5.0 computes it: from the first to the last GPU event, idle time, computation kernels and the rest (memory, communication, syncs); with two or more profiler steps the last one is left out." }
        @for (h, t) in &rows {
            @if let Some(n) = &t.note { p class="dim" { (h) ": " (n) } }
        }
        (t.render(rows.iter().copied()))
    }
}

/// One row per rank (host): the overlap percentage and the times behind it.
pub fn overlap_view(r: &PerHost<CommCompOverlap>, _: &Cx) -> Markup {
    let rows: Vec<(&str, &CommCompOverlap)> = r
        .hosts
        .iter()
        .filter_map(|(h, res)| Some((h.as_str(), res.as_ref().ok()?)))
        .collect();
    let t = Table::new("sortable")
        .col("host", |(h, _): &(&str, &CommCompOverlap)| Cell::text(*h))
        .num("rank", |(_, o)| Cell::int(o.rank))
        .num("comp_comm_overlap_pctg", |(_, o)| {
            match o.comp_comm_overlap_pctg {
                Some(v) => Cell::float(v, 2),
                None => Cell::text("no communication"),
            }
        })
        .num("communication_time_us", |(_, o)| {
            Cell::float(o.communication_time_ps as f64 / 1e6, 3)
        })
        .num("overlapped_time_us", |(_, o)| {
            Cell::float(o.overlapped_time_ps as f64 / 1e6, 3)
        });
    html! {
        p class="dim" { "As Holistic Trace Analysis 0.5.0 computes it: the time communication kernels (NCCL) run while computation kernels run too, over the communication time." }
        (t.render(rows.iter().copied()))
    }
}

/// Per host: the time by kernel type (and overlaps), then the kernels of each type.
pub fn kernel_breakdown_view(r: &PerHost<KernelBreakdown>, _: &Cx) -> Markup {
    let types = Table::new("sortable")
        .col(
            "kernel_type",
            |t: &&xlens_analysis::tools::kernel_breakdown::TypeTime| Cell::text(&t.kernel_type),
        )
        .num("sum_us", |t| Cell::float(t.sum_ps as f64 / 1e6, 3))
        .num("percentage", |t| Cell::float(t.percentage, 1));
    let kernels = Table::new("sortable")
        .filter()
        .col("kernel_type", |k: &&KernelRow| {
            Cell::text(format!("{:?}", k.kernel_type))
        })
        .col("name", |k| Cell::name(&k.name))
        .num("count", |k| Cell::int(k.count))
        .num("sum_us", |k| Cell::float(k.us.sum, 3))
        .num("max_us", |k| Cell::float(k.us.max, 3))
        .num("min_us", |k| Cell::float(k.us.min, 3))
        .num("mean_us", |k| Cell::float(k.us.mean, 3))
        .num("stddev_us", |k| Cell::float(k.us.stddev, 3));
    html! {
        p class="dim" { "As Holistic Trace Analysis 0.5.0 computes it: each kernel type's time (their union) and the time types overlap; the top kernels of each type by total time, the rest as \"others\"." }
        @for (host, res) in &r.hosts {
            @if let Ok(k) = res {
                h3 { (host) " (rank " (k.rank) ")" }
                (types.render(k.kernel_type_breakdown.iter()))
                p class="dim" { (k.names_total) " kernel names; " (k.kernels.len()) " rows" }
                (kernels.render(k.kernels.iter()))
            }
        }
    }
}

/// Per host, per stream: idle time by cause.
pub fn idle_time_view(r: &PerHost<IdleTime>, _: &Cx) -> Markup {
    let t = Table::new("sortable")
        .num("stream", |r: &&IdleRow| Cell::int(r.stream))
        .col("idle_category", |r| {
            Cell::text(format!("{:?}", r.idle_category))
        })
        .num("idle time", |r| Cell::time(r.idle_time_ps))
        .num("idle_time_ratio", |r| match r.idle_time_ratio {
            Some(v) => Cell::float(v, 2),
            None => Cell::text(""),
        })
        .num("gaps", |r| Cell::int(r.gaps));
    html! {
        p class="dim" { "As Holistic Trace Analysis 0.5.0 computes it: gaps between consecutive kernels of a stream; host wait when the launching call came after the previous kernel ended, kernel wait when the gap is under the threshold, else other." }
        @for (host, res) in &r.hosts {
            @if let Ok(t2) = res {
                h3 { (host) " (rank " (t2.rank) ")" }
                (t.render(t2.rows.iter()))
            }
        }
    }
}

/// Per host: the counts, then the launches with the longest delays.
pub fn launch_stats_view(r: &PerHost<LaunchStats>, _: &Cx) -> Markup {
    let t = Table::new("sortable")
        .filter()
        .num("correlation", |l: &&Launch| Cell::int(l.correlation))
        .col("cpu_name", |l| Cell::name(&l.cpu_name))
        .col("gpu_name", |l| Cell::name(&l.gpu_name))
        .num("cpu duration", |l| Cell::time(l.cpu_duration_ps))
        .num("gpu duration", |l| Cell::time(l.gpu_duration_ps))
        .num("launch delay", |l| Cell::time(l.launch_delay_ps));
    html! {
        p class="dim" { "As Holistic Trace Analysis 0.5.0 computes it: each cudaLaunchKernel (and cudaMemcpyAsync/cudaMemsetAsync) call joined to its GPU event; the delay is the GPU start minus the call's end." }
        @for (host, res) in &r.hosts {
            @if let Ok(s) = res {
                h3 { (host) " (rank " (s.rank) ")" }
                p { (s.num_launches) " launches: " (s.short_kernels) " short kernels, " (s.runtime_outliers) " runtime outliers, " (s.launch_delay_outliers) " launch delay outliers. The " (s.launches.len()) " longest delays:" }
                (t.render(s.launches.iter()))
            }
        }
    }
}

/// The PyTorch TensorBoard plugin's Operator view, per host.
pub fn pytorch_operators_view(
    r: &PerHost<xlens_analysis::tools::pytorch_views::Operators>,
    _: &Cx,
) -> Markup {
    use xlens_analysis::base::pytorch::torch_views::OperatorRow;
    let t = Table::new("sortable")
        .filter()
        .col("name", |(_, o): &(usize, &OperatorRow)| Cell::name(&o.name))
        .col("input_shape", |(_, o)| {
            Cell::text(o.input_shape.as_deref().unwrap_or(""))
        })
        .num("calls", |(_, o)| Cell::int(o.calls))
        .num("device_self_us", |(_, o)| us(o.device_self_ps))
        .num("device_total_us", |(_, o)| us(o.device_total_ps))
        .num("host_self_us", |(_, o)| us(o.host_self_ps))
        .num("host_total_us", |(_, o)| us(o.host_total_ps))
        .col("tc_eligible", |(_, o)| {
            Cell::text(o.tc_eligible.to_string())
        })
        .num("tc_self_pct", |(_, o)| {
            Cell::float(100.0 * o.tc_self_ratio, 2)
        })
        .num("tc_total_pct", |(_, o)| {
            Cell::float(100.0 * o.tc_total_ratio, 2)
        });
    html! {
        p class="dim" { "As the PyTorch TensorBoard plugin's Operator view: operators nested by time on their thread; device time is the kernels, copies and sets their launch calls started. Group by name and input shape with ?group_by=name_and_shape." }
        @for (host, res) in &r.hosts {
            @if let Ok(o) = res {
                @for n in &o.notes { p class="dim" { (host) ": " (n) } }
            }
        }
        (per_host(r, |o| &o.operators, t))
    }
}

/// The PyTorch TensorBoard plugin's Kernel view, per host.
pub fn pytorch_kernels_view(
    r: &PerHost<xlens_analysis::tools::pytorch_views::Kernels>,
    _: &Cx,
) -> Markup {
    use xlens_analysis::base::pytorch::torch_views::{KernelOpRow, KernelRow as TorchKernel};
    let by_name = Table::new("sortable")
        .filter()
        .col("name", |(_, k): &(usize, &TorchKernel)| Cell::name(&k.name))
        .col("tc_used", |(_, k)| Cell::text(k.tc_used.to_string()))
        .num("calls", |(_, k)| Cell::int(k.calls))
        .num("total_us", |(_, k)| us(k.total_ps))
        .num("mean_us", |(_, k)| Cell::float(k.mean_ps / 1e6, 3))
        .num("max_us", |(_, k)| us(k.max_ps))
        .num("min_us", |(_, k)| us(k.min_ps))
        .num("mean_blocks_per_sm", |(_, k)| {
            Cell::float(k.mean_blocks_per_sm, 2)
        })
        .num("mean_occupancy_pct", |(_, k)| {
            Cell::float(k.mean_occupancy_percent, 2)
        });
    let by_op = Table::new("sortable")
        .filter()
        .col("name", |(_, k): &(usize, &KernelOpRow)| Cell::name(&k.name))
        .col("operator", |(_, k)| Cell::name(&k.op_name))
        .col("grid", |(_, k)| {
            Cell::text(format!("{:?}", k.grid.clone().unwrap_or_default()))
        })
        .col("block", |(_, k)| {
            Cell::text(format!("{:?}", k.block.clone().unwrap_or_default()))
        })
        .col("tc_used", |(_, k)| Cell::text(k.tc_used.to_string()))
        .col("op_tc_eligible", |(_, k)| {
            Cell::text(k.op_tc_eligible.to_string())
        })
        .num("calls", |(_, k)| Cell::int(k.calls))
        .num("total_us", |(_, k)| us(k.total_ps))
        .num("mean_us", |(_, k)| Cell::float(k.mean_ps / 1e6, 3))
        .num("max_us", |(_, k)| us(k.max_ps))
        .num("min_us", |(_, k)| us(k.min_ps))
        .num("mean_blocks_per_sm", |(_, k)| {
            Cell::float(k.mean_blocks_per_sm, 2)
        })
        .num("mean_occupancy_pct", |(_, k)| {
            Cell::float(k.mean_occupancy_percent, 2)
        });
    let grouped_by_op = r
        .hosts
        .iter()
        .any(|(_, h)| h.as_ref().is_ok_and(|k| k.by_name_and_op.is_some()));
    html! {
        p class="dim" { "As the PyTorch TensorBoard plugin's Kernel view: blocks per SM and occupancy are weighted by kernel time. Group by kernel and operator with ?group_by=name_and_op." }
        @for (host, res) in &r.hosts {
            @if let Ok(k) = res {
                @for n in &k.notes { p class="dim" { (host) ": " (n) } }
            }
        }
        @if grouped_by_op {
            (per_host(r, |k| k.by_name_and_op.as_deref().unwrap_or(&[]), by_op))
        } @else {
            (per_host(r, |k| k.by_name.as_deref().unwrap_or(&[]), by_name))
        }
    }
}

/// The PyTorch TensorBoard plugin's Distributed view: per job and rank, the steps' split and
/// the collective ops.
pub fn pytorch_distributed_view(
    d: &xlens_analysis::tools::pytorch_views::Distributed,
    _: &Cx,
) -> Markup {
    use xlens_analysis::tools::pytorch_views::{CommOpRow, StepSplit};
    let steps = Table::new("sortable")
        .col("step", |s: &&StepSplit| Cell::text(&s.step))
        .num("computation_us", |s| us(s.computation_ps))
        .num("overlapping_us", |s| us(s.overlapping_ps))
        .num("communication_us", |s| us(s.communication_ps))
        .num("other_us", |s| us(s.other_ps));
    let ops = Table::new("sortable")
        .col("name", |o: &&CommOpRow| Cell::name(&o.name))
        .num("calls", |o| Cell::int(o.calls))
        .num("bytes", |o| Cell::int(o.bytes))
        .num("total_latency_us", |o| us(o.total_latency_ps))
        .num("data_transfer_us", |o| match o.data_transfer_ps {
            Some(v) => us(v),
            None => Cell::text(""),
        });
    html! {
        @for n in &d.notes { p class="dim" { (n) } }
        @for j in &d.jobs {
            h3 { "Job: " (j.backend.as_deref().unwrap_or("?")) ", world size "
                 (j.world_size.map_or("?".to_string(), |v| v.to_string())) }
            @for n in &j.notes { p class="dim" { (n) } }
            @for r in &j.ranks {
                h4 { (r.host) " (rank " (r.rank.map_or("?".to_string(), |v| v.to_string())) ")" }
                (steps.render(r.steps.iter().chain(std::iter::once(&r.mean))))
                (ops.render(r.comm_ops.iter()))
            }
        }
    }
}
