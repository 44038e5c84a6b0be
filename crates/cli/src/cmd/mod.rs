//! The commands: one file each, with its arguments (`Args`, whose doc comment is the command's
//! help) and `run`.

pub mod ballista;
pub mod bench;
pub mod bench_trace;
pub mod capture;
pub mod cloud;
pub mod diff;
pub mod export;
pub mod hosts;
pub mod mcp;
pub mod report;
pub mod runs;
pub mod serve;
pub mod skill;
pub mod sql;
pub mod summarize;
pub mod tool;
pub mod tools;
