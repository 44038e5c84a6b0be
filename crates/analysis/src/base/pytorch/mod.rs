//! PyTorch traces: steps and their breakdown as torch-tb-profiler forms them, its operator and
//! kernel views, host ops, memory by op, and the events as HTA loads them.

pub mod hta;
pub mod torch_memory;
pub mod torch_ops;
pub mod torch_steps;
pub mod torch_views;
