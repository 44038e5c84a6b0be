//! The memory viewer and memory profile pages: SVG charts drawn here ([`super::chart`]) and
//! tables, made interactive by `assets/memory.js` (module selector, hover highlight, pinned
//! buffer details).

use maud::{html, Markup};
use serde::Serialize;
use xlens_analysis::base::memory::allocators::{AllocatorProfile, LiveAllocation, OpMemory};
use xlens_analysis::base::memory::heap::{ModuleMemory, PeakBuffer};
use xlens_analysis::tools::memory_profile::MemoryProfileReport;
use xlens_analysis::tools::memory_viewer::MemoryViewerReport;

use super::chart::{f1, Frame, LEFT, RIGHT, W};
use super::ui::{error_box, fmt_bytes, fmt_ps, script_json, Cell, RowAttrs, Table, Url};
use super::Cx;

/// Bars drawn for the buffers live at the peak; the table lists all of them.
const MAX_BARS: usize = 120;
/// Live allocations listed per allocator on the memory profile page.
const MAX_LIVE_ROWS: usize = 200;

/// With no module asked for, the module with the largest peak (each host lists its modules
/// largest first).
pub fn largest_module(
    r: &MemoryViewerReport,
    query: &[(String, String)],
) -> Option<(String, String)> {
    let asked = query
        .iter()
        .any(|(k, v)| k == "module" && !v.trim().is_empty());
    if asked {
        return None;
    }
    r.hosts
        .iter()
        .filter_map(|h| h.viewer.as_ref()?.modules.first())
        .max_by_key(|m| m.peak_heap_bytes)
        .map(|m| ("module".to_string(), m.name.clone()))
}

/// The memory viewer page.
pub fn viewer_view(r: &MemoryViewerReport, _: &Cx) -> Markup {
    let space = r.memory_space;
    let mods = &r.modules;
    // The resolved name of the module shown (the query may be a prefix or a program id).
    let chosen = r
        .hosts
        .iter()
        .find_map(|h| h.viewer.as_ref()?.selected.as_ref())
        .map(|m| m.name.as_str())
        .or(r.module.as_deref())
        .unwrap_or("");
    html! {
        section class="mv" {
            h1 { "Memory viewer" }
            @if !mods.is_empty() {
                div class="mv-selbar" {
                    label { "Module " select name="module" form="nav" class="mv-module" aria-label="HLO module" {
                        @for m in mods {
                            option value=(m.name) selected[m.name == chosen] {
                                (m.name) " — peak " (fmt_bytes(m.peak_heap_bytes))
                                @if !m.analysable { " · not analysable" }
                                @else if m.trace_events == 0 { " · no heap trace" }
                            }
                        }
                    } }
                    " "
                    span class="dim" { (mods.len()) " modules, largest peak first · memory space " (space) }
                    input type="hidden" name="memory_space" form="nav" value=(space);
                    noscript { button type="submit" form="nav" { "Show" } }
                }
            }
            @for h in &r.hosts {
                article class="host mv-host" {
                    h2 { "Host " (h.host) }
                    @if let Some(e) = &h.error {
                        (error_box(e))
                    } @else if let Some(v) = &h.viewer {
                        @for e in &v.hlo_errors { (error_box(&format!("HLO not decoded: {e}"))) }
                        @if let Some(hr) = &v.headroom {
                            p class="mv-headroom" {
                                b { "Headroom:" } " " (hr.statement) " "
                                span class="dim" { "(peak from " (hr.peak_source) "; capacity from " (hr.capacity_source) ")" }
                            }
                        }
                        @if v.modules.is_empty() {
                            p {
                                "No HLO module with a buffer assignment in this profile (the memory viewer needs the compiled programs' HLO, which JAX / TF-XLA profiles carry on "
                                code { "/host:metadata" } ")."
                            }
                        } @else {
                            @if let Some(e) = &v.selection_error { (error_box(e)) }
                            @match &v.selected {
                                Some(m) => (module_view(m, &h.session, &h.host)),
                                None => p { "Choose a module above." },
                            }
                        }
                    }
                }
            }
        }
        script type="module" src="/static/memory.js" {}
    }
}

fn source_text(b: &PeakBuffer) -> String {
    b.source
        .as_ref()
        .map(|s| format!("{}:{}", s.file, s.line))
        .unwrap_or_default()
}

fn lifetime(b: &PeakBuffer) -> Option<(usize, usize)> {
    b.lifetime_start.zip(b.lifetime_end)
}

/// A buffer's details for `memory.js` (same order as the bars and rows).
#[derive(Serialize)]
struct BufferDetails<'a> {
    instruction: &'a str,
    opcode: &'a str,
    shape: &'a str,
    dtype: &'a str,
    size: String,
    size_bytes: i64,
    unpadded: String,
    category: &'a str,
    op_name: &'a str,
    source: String,
    stack: &'a str,
    lifetime: String,
    logical_buffer_id: i64,
    allocation_index: i64,
}

impl<'a> BufferDetails<'a> {
    fn of(b: &'a PeakBuffer) -> Self {
        BufferDetails {
            instruction: &b.instruction,
            opcode: &b.opcode,
            shape: &b.shape,
            dtype: &b.dtype,
            size: fmt_bytes(b.size_bytes),
            size_bytes: b.size_bytes,
            unpadded: fmt_bytes(b.unpadded_size_bytes),
            category: b.category,
            op_name: &b.op_name,
            source: source_text(b),
            stack: b.source.as_ref().map_or("", |s| s.stack.as_str()),
            lifetime: match lifetime(b) {
                Some((a, z)) => format!("events {a} to {z}"),
                None => "whole program".to_string(),
            },
            logical_buffer_id: b.logical_buffer_id,
            allocation_index: b.allocation_index,
        }
    }
}

fn module_view(m: &ModuleMemory, session: &str, host: &str) -> Markup {
    let api = Url::api("memory_viewer", session)
        .with("host", host)
        .with("module", &m.name);
    let t = &m.totals;
    let small = &m.small_buffers;
    let bufs = &m.peak_buffers;
    let details: Vec<BufferDetails> = bufs.iter().map(BufferDetails::of).collect();
    let table = Table::new("mv-table")
        .col("#", |(i, _): &(usize, &PeakBuffer)| Cell::text(i + 1))
        .num("Size", |(_, b)| Cell::bytes(b.size_bytes))
        .num("Unpadded", |(_, b)| Cell::bytes(b.unpadded_size_bytes))
        .col("Category", |(_, b)| Cell::text(b.category))
        .col("Instruction", |(_, b)| Cell::name(&b.instruction))
        .col("Shape", |(_, b)| Cell::name(&b.shape))
        .col("Op name", |(_, b)| Cell::name(&b.op_name))
        .col("Source", |(_, b)| Cell::name(source_text(b)))
        .col("Lifetime", |(_, b)| {
            Cell::text(match lifetime(b) {
                Some((a, z)) => format!("{a}–{z}"),
                None => "whole program".to_string(),
            })
        })
        .rows_with(|i, _| RowAttrs {
            class: None,
            data_b: Some(i),
        });
    let table = if small.count > 0 {
        table.tail(html! {
            tr class="mv-small" {
                td {} td class="num" { (fmt_bytes(small.bytes)) } td {}
                td colspan="6" { (small.count) " smaller buffers (under " (fmt_bytes(small.threshold_bytes)) " each), grouped" }
            }
        })
    } else {
        table
    };
    html! {
        h3 { (m.name) " " span class="dim" { "entry " (m.entry_computation) } }
        p class="dim" {
            a href=(api) { "JSON" } " · " a href=(format!("{}&format=csv", api.as_str())) download { "CSV" }
            " of this module"
        }
        dl class="facts mv-totals" {
            dt { "Peak heap" }
            dd {
                b { (fmt_bytes(m.peak_heap_bytes)) } " (" (m.peak_heap_bytes) " bytes; unpadded "
                (fmt_bytes(m.peak_unpadded_heap_bytes)) ") = temporaries " (fmt_bytes(m.peak_temp_heap_bytes))
                " + whole-program " (fmt_bytes(m.indefinite_bytes))
            }
            dt { "Peak at" }
            dd {
                @match &m.trace {
                    Some(tr) => {
                        "event " (m.peak_position) " of " (tr.events) " · "
                        code { (m.peak_instruction.as_deref().unwrap_or("")) } " in "
                        code { (m.peak_computation.as_deref().unwrap_or("")) }
                    }
                    None => "no heap simulator trace for this memory space: whole-program buffers only",
                }
            }
            dt { "Entry parameters" } dd { (fmt_bytes(t.entry_parameters_bytes)) }
            dt { "Maybe live out" } dd { (fmt_bytes(t.maybe_live_out_bytes)) }
            dt { "Non-reusable" } dd { (fmt_bytes(t.non_reusable_bytes)) }
            dt { "Indefinite lifetime" } dd { (fmt_bytes(t.indefinite_allocation_bytes)) " in " (t.indefinite_allocations) " allocations" }
            dt { "All allocations" } dd { (fmt_bytes(t.total_allocation_bytes)) " in " (t.allocations) " allocations" }
            dt { "Buffers at the peak" }
            dd {
                (bufs.len()) " of at least " (fmt_bytes(small.threshold_bytes)) " shown; " (small.count)
                " smaller ones grouped: " (fmt_bytes(small.bytes))
            }
        }
        @if let Some(sc) = &m.max_scoped_allocation {
            p class="dim" { "Largest scoped allocation: " (fmt_bytes(sc.bytes)) " by " code { (sc.instruction) } " (not in the peak)." }
        }
        @for w in &m.warnings { div class="warn" { (w) } }
        script type="application/json" class="mv-data" { (script_json(&details)) }
        div class="mv-main" {
            div class="mv-chart-wrap" {
                (heap_chart(m))
                p class="dim" {
                    (m.series_points_shown) " of " (m.series_points_total) " program points drawn (" (m.series_sampling) ")"
                    @if bufs.len() > MAX_BARS {
                        "; bars for the " (MAX_BARS) " largest of " (bufs.len()) " buffers (all in the table)"
                    }
                    ". Hover a bar or row to highlight the buffer; click to pin its details."
                }
            }
            aside class="mv-details" aria-live="polite" {
                p class="dim" { "Click a buffer (bar or row) to pin its details here; the text can be selected and copied and stays until you click another buffer." }
            }
        }
        h3 { "Buffers live at the peak" }
        (table.render(bufs.iter().enumerate()))
    }
}

/// Heap over program order, the peak, and the lifetimes of the buffers live at the peak.
fn heap_chart(m: &ModuleMemory) -> Markup {
    let series = &m.heap_series;
    let points = (m.series_points_total.max(2) - 1) as f64;
    let max = series
        .iter()
        .map(|p| p.heap_bytes)
        .max()
        .unwrap_or(0)
        .max(m.peak_heap_bytes)
        .max(1) as f64;
    let frame = Frame {
        top: 14.0,
        height: 200.0,
        max,
    };
    let shown_bars = m.peak_buffers.len().min(MAX_BARS);
    let bar_h = 9.0;
    let bars_top = frame.bottom() + 34.0;
    let height = bars_top + shown_bars as f64 * (bar_h + 2.0) + 16.0;
    let x = |i: f64| LEFT + i / points * frame.width();
    let heap: Vec<(f64, f64)> = series
        .iter()
        .map(|p| (x(p.index as f64), frame.y(p.heap_bytes as f64)))
        .collect();
    let unpadded: Vec<(f64, f64)> = series
        .iter()
        .map(|p| (x(p.index as f64), frame.y(p.unpadded_heap_bytes as f64)))
        .collect();
    // Event k takes effect at point k + 1 of the heap series.
    let px = if m.trace.is_some() {
        x((m.peak_position + 1) as f64)
    } else {
        LEFT
    };
    let peak = fmt_bytes(m.peak_heap_bytes);
    let trace_events = m.trace.as_ref().map_or(0, |t| t.events);
    html! {
        svg class="mv-chart" viewBox=(format!("0 0 {W} {height:.0}")) width="100%" role="img" aria-label="heap size over program order" {
            (frame.byte_axis())
            @if !heap.is_empty() {
                (frame.step_area("mv-area", &heap))
                (frame.step_line("mv-heap", &heap))
                (frame.step_line("mv-unpadded", &unpadded))
            }
            (frame.peak(px, m.peak_heap_bytes as f64, height - 14.0,
                &format!("peak {peak} at event {}", m.peak_position), &format!("peak {peak}")))
            text class="tick" x=(LEFT) y=(f1(frame.bottom() + 14.0)) { "0" }
            text class="tick" x=(f1(W - RIGHT)) y=(f1(frame.bottom() + 14.0)) text-anchor="end" { (trace_events) " events (program order)" }
            text class="tick" x=(LEFT) y=(f1(bars_top - 6.0)) { "Lifetimes of the buffers live at the peak (largest first; bar = ALLOC to FREE, full width = whole program)" }
            @for (i, b) in m.peak_buffers.iter().take(shown_bars).enumerate() {
                @let (x0, x1, class) = match lifetime(b) {
                    Some((a, z)) => (x((a + 1) as f64), x((z + 1) as f64), "mv-bar"),
                    None => (LEFT, W - RIGHT, "mv-bar mv-indef"),
                };
                rect class=(class) data-b=(i) x=(f1(x0)) y=(f1(bars_top + i as f64 * (bar_h + 2.0))) width=(f1((x1 - x0).max(2.0))) height=(bar_h) {
                    title { (b.instruction) " " (b.shape) " " (fmt_bytes(b.size_bytes)) }
                }
            }
        }
    }
}

/// The memory profile page: per host and allocator, the timeline chart and the live allocations.
pub fn profile_view(r: &MemoryProfileReport, _: &Cx) -> Markup {
    html! {
        section class="mp" {
            h1 { "Memory profile" }
            @for h in &r.hosts {
                article class="host" {
                    h2 { "Host " (h.host) }
                    @if let Some(e) = &h.error {
                        (error_box(e))
                    } @else if let Some(p) = &h.profile {
                        @if p.allocators.is_empty() {
                            p {
                                "No " code { "MemoryAllocation" } " / " code { "MemoryDeallocation" } " events on "
                                code { (p.plane) } ": the profile was taken without allocator tracing, or the runtime does not record it (JAX on CPU does not)."
                            }
                        } @else {
                            p class="dim" { (p.events_total) " events (" (p.source) "); peaks and totals use every event, the charts a sample." }
                            @for n in &p.notes { p class="note" { (n) } }
                            @for a in &p.allocators { (allocator_view(a, !p.op_stats.is_empty() || p.source.starts_with("PyTorch"))) }
                            @if !p.op_stats.is_empty() { (op_memory_view(&p.op_stats, p.op_stats_unattributed)) }
                        }
                    }
                }
            }
        }
    }
}

fn allocator_view(a: &AllocatorProfile, torch: bool) -> Markup {
    let pk = &a.peak;
    let live_rows = a.live_at_peak.len().min(MAX_LIVE_ROWS);
    let table = Table::new("mp-table")
        .col("#", |(i, _): &(usize, &LiveAllocation)| Cell::text(i + 1))
        .num("Bytes", |(_, l)| Cell::bytes(l.activity.allocation_bytes))
        .num("Requested", |(_, l)| {
            Cell::bytes(l.activity.requested_bytes)
        })
        .num("×", |(_, l)| Cell::int(l.occurrences))
        .col("Op", |(_, l)| Cell::name(&l.activity.op))
        .col("Shape", |(_, l)| Cell::name(&l.activity.shape))
        .col("Type", |(_, l)| Cell::text(&l.activity.data_type))
        .col("Region", |(_, l)| Cell::text(&l.activity.region_type))
        .num("Step", |(_, l)| Cell::int(l.activity.step_id))
        .num("Allocated at", |(_, l)| match l.time_ps {
            Some(t) => Cell::time(t),
            None => Cell::text("").class("num"),
        })
        .rows_with(|_, (_, l)| RowAttrs {
            class: l.special.then_some("mp-special"),
            data_b: None,
        });
    html! {
        section class="mp-alloc" {
            h3 { @if torch { "Device " } @else { "Allocator " } (a.name) }
            @if torch {
                dl class="facts" {
                    dt { "Peak allocated" }
                    dd { b { (fmt_bytes(pk.bytes_in_use)) } " at " (fmt_ps(pk.time_ps)) " · step " (pk.step_id) }
                    dt { "Reserved then" }
                    dd { (fmt_bytes(pk.memory_capacity_bytes)) " " span class="dim" { "(the caching allocator's " code { "Total Reserved" } "; equal to allocated when the trace has none)" } }
                    dt { "Events" }
                    dd {
                        (a.allocations) " allocations, " (a.deallocations) " releases; " (a.samples_shown)
                        " of " (a.samples_total) " drawn (" (a.sampling) ")"
                    }
                }
            } @else {
            dl class="facts" {
                dt { "Peak in use" }
                dd {
                    b { (fmt_bytes(pk.bytes_in_use)) } " (heap " (fmt_bytes(pk.state.heap_allocated_bytes))
                    " + reserved " (fmt_bytes(pk.state.stack_reserved_bytes)) ") at " (fmt_ps(pk.time_ps))
                    " · step " (pk.step_id)
                }
                dt { "At the peak" }
                dd {
                    "free " (fmt_bytes(pk.state.free_bytes)) " of capacity " (fmt_bytes(pk.memory_capacity_bytes))
                    " · fragmentation " (format!("{:.2}", pk.state.fragmentation * 100.0)) "%"
                }
                dt { "Lifetime peak" }
                dd { (fmt_bytes(a.peak_bytes_usage_lifetime)) " " span class="dim" { "(as the allocator reports it; may predate the profile)" } }
                dt { "Fragmentation" }
                dd {
                    @if a.max_fragmentation > 0.0 {
                        "max " (format!("{:.2}", a.max_fragmentation * 100.0)) "% at " (fmt_ps(a.max_fragmentation_time_ps))
                    } @else { "none recorded" }
                }
                dt { "Events" }
                dd {
                    (a.allocations) " allocations, " (a.deallocations) " deallocations; " (a.samples_shown)
                    " of " (a.samples_total) " drawn (" (a.sampling) ")"
                }
            }
            }
            @if !a.samples.is_empty() { (allocator_chart(a, torch)) }
            h4 { "Allocations live at the peak: " (a.live_at_peak_total) " rows, " (fmt_bytes(a.live_at_peak_bytes)) }
            (table.render(a.live_at_peak.iter().take(MAX_LIVE_ROWS).enumerate()))
            @if a.live_at_peak_total > live_rows {
                p class="dim" { (a.live_at_peak_total - live_rows) " more rows not shown here (JSON and CSV list up to 500)." }
            }
        }
    }
}

/// Rows of the memory-by-op table shown on the page (the JSON has all).
const MAX_OP_ROWS: usize = 300;

/// PyTorch traces: memory by op and device (the TensorBoard plugin's memory statistics).
fn op_memory_view(rows: &[OpMemory], unattributed: usize) -> Markup {
    let table = Table::new("mp-table")
        .col("Device", |o: &&OpMemory| Cell::text(&o.device))
        .col("Op", |o| Cell::name(&o.name))
        .num("Calls", |o| Cell::int(o.calls))
        .num("Self increase", |o| Cell::bytes(o.self_increase_bytes))
        .num("Self allocated", |o| Cell::bytes(o.self_allocation_bytes))
        .num("Self allocations", |o| Cell::int(o.self_allocations))
        .num("Increase", |o| Cell::bytes(o.increase_bytes))
        .num("Allocated", |o| Cell::bytes(o.allocation_bytes))
        .num("Allocations", |o| Cell::int(o.allocations));
    html! {
        section class="mp-ops" {
            h3 { "Memory by op" }
            p class="dim" {
                "Self: the " code { "[memory]" } " events directly in the op; the others count the ops nested in it too. Increase is allocations minus releases. "
                (unattributed) " events are in no op."
            }
            (table.render(rows.iter().take(MAX_OP_ROWS)))
            @if rows.len() > MAX_OP_ROWS {
                p class="dim" { (rows.len() - MAX_OP_ROWS) " more rows not shown here (the JSON lists all " (rows.len()) ")." }
            }
        }
    }
}

/// In use (heap + reserved) as an area, heap and reserved as lines, fragmentation below.
fn allocator_chart(a: &AllocatorProfile, torch: bool) -> Markup {
    let samples = &a.samples;
    let pk = &a.peak;
    let t0 = samples.iter().map(|p| p.time_ps).min().unwrap_or(0);
    let t1 = samples
        .iter()
        .map(|p| p.time_ps)
        .max()
        .unwrap_or(0)
        .max(t0 + 1);
    let max = samples
        .iter()
        .map(|p| {
            if torch {
                p.state.in_use().saturating_add(p.state.free_bytes)
            } else {
                p.state.in_use()
            }
        })
        .max()
        .unwrap_or(0)
        .max(pk.bytes_in_use)
        .max(1) as f64;
    let frame = Frame {
        top: 14.0,
        height: 180.0,
        max,
    };
    let fh = 40.0;
    let ft = frame.bottom() + 24.0;
    let height = ft + fh + 22.0;
    let x = |t: i64| LEFT + (t - t0) as f64 / (t1 - t0) as f64 * frame.width();
    let pts =
        |f: &dyn Fn(&xlens_analysis::base::memory::allocators::Sample) -> f64| -> Vec<(f64, f64)> {
            samples.iter().map(|p| (x(p.time_ps), f(p))).collect()
        };
    let in_use = pts(&|p| frame.y(p.state.in_use() as f64));
    let frag = pts(&|p| ft + fh - p.state.fragmentation.clamp(0.0, 1.0) * fh);
    let peak = fmt_bytes(pk.bytes_in_use);
    html! {
        svg class="mp-chart" viewBox=(format!("0 0 {W} {height:.0}")) width="100%" role="img" aria-label="allocator memory over time" {
            (frame.byte_axis())
            (frame.step_area("mv-area", &in_use))
            (frame.step_line("mp-inuse", &in_use))
            @if torch {
                (frame.step_line("mp-reserved", &pts(&|p| frame.y(p.state.in_use().saturating_add(p.state.free_bytes) as f64))))
            } @else {
                (frame.step_line("mp-heap", &pts(&|p| frame.y(p.state.heap_allocated_bytes as f64))))
                (frame.step_line("mp-reserved", &pts(&|p| frame.y(p.state.stack_reserved_bytes as f64))))
            }
            @if !torch {
                rect class="mp-fragbox" x=(LEFT) y=(f1(ft)) width=(f1(frame.width())) height=(fh) {}
                path class="mp-frag" d=(super::chart::step_path(&frag)) {}
                text class="tick" x=(f1(LEFT - 4.0)) y=(f1(ft + fh / 2.0 + 4.0)) text-anchor="end" { "frag. %" }
            }
            (frame.peak(x(pk.time_ps), pk.bytes_in_use as f64, ft + fh, &format!("peak {peak}"), &format!("peak {peak}")))
            text class="tick" x=(LEFT) y=(f1(ft + fh + 16.0)) { (fmt_ps(t0)) }
            text class="tick" x=(f1(W - RIGHT)) y=(f1(ft + fh + 16.0)) text-anchor="end" { (fmt_ps(t1)) }
        }
        @if torch {
            p class="legend dim" {
                span class="sw mp-sw-inuse" {} "allocated "
                span class="sw mp-sw-reserved" {} "reserved by the caching allocator (when the trace has it)"
            }
        } @else {
        p class="legend dim" {
            span class="sw mp-sw-inuse" {} "in use (heap + reserved) "
            span class="sw mp-sw-heap" {} "heap allocated "
            span class="sw mp-sw-reserved" {} "reserved (stack) "
            span class="sw mp-sw-frag" {} "fragmentation"
        }
        }
    }
}
