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

/// Message fields of `xla.HloInstructionProto` that only some opcodes set.
const HLO_INSTRUCTION_BOXED: &[&str] = &[
    "window",
    "convolution_dimension_numbers",
    "dot_dimension_numbers",
    "collective_device_list",
    "iota_collective_device_list",
    "mesh_axes_replica_group_list",
];

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed={PROTO_DIR}");
    for file in PROTO_FILES {
        println!("cargo:rerun-if-changed={PROTO_DIR}/{file}");
    }

    let fds = protox::compile(PROTO_FILES, [PROTO_DIR])?;
    let mut config = prost_build::Config::new();
    // An instruction's rarely set sub-messages live behind a pointer: inline they made each
    // decoded `HloInstructionProto` 2,104 bytes (an instruction takes tens of bytes in the
    // file), and the HLO tools peaked at 20-30 times the HLO's serialized size.
    for field in HLO_INSTRUCTION_BOXED {
        config.boxed(format!(".xla.HloInstructionProto.{field}"));
    }
    config.compile_fds(fds)?;
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
