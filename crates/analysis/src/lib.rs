//! xlens tools. Each module is a pure function from the shared [`xlens_model::Profile`] to a plain
//! data struct that serialises to JSON; the server and the CLI only render these.
//!
//! * [`load`] — host file → model (store bytes + the right importer).
//! * [`device`] — device kind, model and peak figures.
//! * [`steps`] — step detection.
//! * [`ops`] — which events are ops, and their time per op.
//! * [`report`] — the per-session, per-host summary behind `xlens report`.
//! * [`trace`] — the trace viewer's level-of-detail index, details, search and range statistics.
//! * [`cost_model`] — FLOPs and bytes per HLO instruction from shapes; agreement with XLA's own.
//! * [`hlo`] — the HLO modules of a profile, decoded and indexed; shape text and sizes.
//! * [`memory_viewer`] — heap over program order and the buffers live at its peak, per module.
//! * [`memory_profile`] — the allocator timeline from host allocation events; peak and live allocations.
//! * [`memory_headroom`] — peak memory against the device memory the profile states.
//! * [`op_profile`], [`hlo_stats`], [`roofline`] — per-HLO-op time, FLOPs, utilisation and bound-by.
//! * [`tools`] — the registry the server and `xlens tool` dispatch through.

pub mod cost_model;
pub mod device;
pub mod framework_op_stats;
mod fx;
pub mod graph_viewer;
pub mod hlo;
pub mod hlo_stats;
pub mod input_pipeline;
pub mod kernel_stats;
pub mod load;
pub mod memory_headroom;
pub mod memory_profile;
pub mod memory_viewer;
pub mod op_metrics;
pub mod op_profile;
pub mod ops;
pub mod overview;
mod par;
pub mod peaks;
pub mod report;
pub mod roofline;
pub mod step_db;
pub mod steps;
pub mod tools;
pub mod trace;
