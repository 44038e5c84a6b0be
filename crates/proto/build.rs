//! Compiles the `.proto` files under `proto/` into Rust with prost.
//!
//! Parsing is done by protox (pure Rust), so no `protoc` binary is needed.

use std::error::Error;

const PROTO_DIR: &str = "proto";

const PROTO_FILES: &[&str] = &[
    "xplane.proto",
    "profiler_options.proto",
    "profiler_service_monitor_result.proto",
    "profiler_service.proto",
    "xla_data.proto",
    "hlo.proto",
];

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed={PROTO_DIR}");
    for file in PROTO_FILES {
        println!("cargo:rerun-if-changed={PROTO_DIR}/{file}");
    }

    let fds = protox::compile(PROTO_FILES, [PROTO_DIR])?;
    prost_build::Config::new().compile_fds(fds)?;
    Ok(())
}
