//! Ops: which events are ops and their times ([`events`]), and XProf's op metrics per op with
//! FLOPs, bytes and provenance, and the host's framework ops ([`op_metrics`]).

pub mod duty_cycle;
pub mod events;
pub mod op_metrics;
