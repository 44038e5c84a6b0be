//! xlens analysis, in two layers that show in the folders:
//!
//! * [`base`] — what every tool builds on: loading ([`base::load`]), device and peaks, ops and op
//!   metrics, steps and the step grouping, HLO modules and the cost model, the op table, memory
//!   (buffer-assignment heap, allocator timeline, headroom), the trace index, formatting, and the
//!   per-host analysis context ([`base::context`]) that computes each of these once and shares it.
//!   It never imports a tool. [`base::tool`] is the seam tools implement.
//! * [`tools`] — one module per tool, each importing only [`base`], and the registry built from
//!   their list ([`tools::TOOLS`]) that the server and `xlens tool` both dispatch through.
//! * [`compare`] — above the tools: two runs side by side (`xlens diff`) and `--fail-if`.

pub mod base;
pub mod compare;
pub mod tools;
