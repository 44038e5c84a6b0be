//! xlens's integration tests, one binary: each module is one subject.

mod browser;
mod buckets;
mod cli;
mod cloud;
mod export;
mod jax_interop;
mod many_hosts;
mod mcp;
mod python;
mod reruns;
mod serve_access;
mod skill;
