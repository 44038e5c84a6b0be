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
    #[cfg(feature = "grpc")]
    grpc()?;
    Ok(())
}

/// tonic client and server stubs for `tensorflow.ProfilerService`, written to `OUT_DIR/grpc/`.
/// The messages are not generated again: they refer to the ones above.
#[cfg(feature = "grpc")]
fn grpc() -> Result<(), Box<dyn Error>> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("grpc");
    std::fs::create_dir_all(&out)?;
    let fds = protox::compile(["profiler_service.proto"], [PROTO_DIR])?;
    tonic_prost_build::configure()
        .build_transport(false)
        .generate_default_stubs(true)
        .out_dir(&out)
        .extern_path(".tensorflow", "crate::tensorflow")
        .compile_fds(fds)?;
    Ok(())
}
