//! Protobuf message types used by xlens, generated at build time by prost
//! from the schema files in this crate's `proto/` folder.
//!
//! The schemas are our own, wire-compatible restatements of the upstream
//! TensorFlow/TSL profiler and OpenXLA definitions (same packages, message
//! names, field names and numbers). Only the parts xlens needs are
//! declared; anything else in a message is skipped when decoding.
//!
//! - [`tensorflow::profiler`]: `XSpace`, `XPlane`, `XLine`, `XEvent`,
//!   `XStat` and their metadata: the content of `*.xplane.pb` files.
//! - [`tensorflow`]: `ProfileOptions` and the messages of the
//!   `tensorflow.ProfilerService` gRPC service (`Profile`, `Terminate`,
//!   `Monitor`, ...), used to capture from `jax.profiler.start_server`.
//!   With the `grpc` feature, [`grpc`] adds tonic client and server stubs.
//! - [`xla`]: `HloProto` and what it references: modules, computations,
//!   instructions, shapes, layouts, dimension numbers and the buffer
//!   assignment with heap simulator traces.

/// Messages of the `tensorflow` protobuf package: profiler options and the
/// profiler gRPC service.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod tensorflow {
    include!(concat!(env!("OUT_DIR"), "/tensorflow.rs"));

    /// Messages of the `tensorflow.profiler` protobuf package: the XSpace
    /// profile container.
    #[allow(clippy::all, clippy::pedantic, missing_docs)]
    pub mod profiler {
        include!(concat!(env!("OUT_DIR"), "/tensorflow.profiler.rs"));
    }
}

/// Messages of the `xla` protobuf package: HLO modules and buffer
/// assignment.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod xla {
    include!(concat!(env!("OUT_DIR"), "/xla.rs"));
}

/// tonic stubs for the `tensorflow.ProfilerService` gRPC service
/// (`profiler_service_client`, `profiler_service_server`), over the messages in
/// [`tensorflow`]. Only with the `grpc` feature.
#[cfg(feature = "grpc")]
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod grpc {
    include!(concat!(env!("OUT_DIR"), "/grpc/tensorflow.rs"));
}

pub use prost;
