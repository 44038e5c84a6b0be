//! The base layer: everything two or more tools need, computed from the model. Nothing here
//! imports a tool (`crate::tools`); tools build on these modules and on [`context`], which
//! computes each derived analysis of a host once and shares it. Modules are grouped by subject:
//! steps, ops, HLO, memory, PyTorch and hosts; the seam (context, tool, error), the
//! device and its peaks, the trace index, advice and small helpers sit beside them.

pub mod advice;
pub mod context;
pub mod device;
pub mod error;
pub mod fmt;
pub(crate) mod fx;
pub mod hlo;
pub mod hosts;
pub mod memory;
pub mod ops;
pub(crate) mod par;
pub mod peaks;
pub mod pytorch;
pub mod steps;
pub mod tool;
pub mod trace;
