//! The base layer: everything two or more tools need, computed from the model. Nothing here
//! imports a tool (`crate::tools`); tools build on these modules and on [`context`], which
//! computes each derived analysis of a host once and shares it.

pub mod advice;
pub mod align;
pub mod allocators;
pub mod context;
pub mod cost_model;
pub mod device;
pub mod error;
pub mod fingerprint;
pub mod fmt;
pub(crate) mod fx;
pub mod headroom;
pub mod heap;
pub mod hlo;
pub mod hlo_ops;
pub mod hosts;
pub mod hta;
pub mod input_marks;
pub mod load;
pub mod memory;
pub mod op_metrics;
pub mod ops;
pub(crate) mod par;
pub mod peaks;
pub mod step_db;
pub mod step_ops;
pub mod step_rows;
pub mod steps;
pub mod summary;
pub mod tool;
pub mod torch_memory;
pub mod torch_ops;
pub mod torch_steps;
pub mod torch_views;
pub mod trace;
