//! Framework op stats and kernel stats: every row of every host in one sortable table, under the
//! row count of the first host (as the tools' text says it).

use maud::{html, Markup};
use xlens_analysis::base::tool::PerHost;
use xlens_analysis::tools::framework_op_stats::{FrameworkOpRow, FrameworkOpStats};
use xlens_analysis::tools::kernel_stats::{Kernel, KernelStats};

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
    let t = Table::new("sortable")
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
