//! HLO: the modules a profile carries ([`modules`]), FLOPs and bytes per instruction
//! ([`cost_model`]), the op table ([`hlo_ops`]) and structural fingerprints of instructions
//! ([`fingerprint`]).

pub mod cost_model;
pub mod fingerprint;
pub mod hlo_ops;
pub mod modules;
pub mod program;
