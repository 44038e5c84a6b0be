//! xlens-profiler's integration tests, one binary: each module is one subject.

mod alloc;
mod api;
mod common;
mod server;
mod xprof_interop;
