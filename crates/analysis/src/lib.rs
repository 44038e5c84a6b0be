//! xlens analysis, in two layers that show in the folders:
//!
//! * [`base`] — what every tool builds on (profiles come from `xlens_loader`): device and peaks, ops and op
//!   metrics, steps and the step grouping, HLO modules and the cost model, the op table, memory
//!   (buffer-assignment heap, allocator timeline, headroom), the trace index, formatting, and the
//!   per-host analysis context ([`base::context`]) that computes each of these once and shares it.
//!   It never imports a tool. [`base::tool`] is the seam tools implement.
//! * [`tools`] — one module per tool, each importing only [`base`], and the registry built from
//!   their list ([`tools::TOOLS`]) that the server and `xlens tool` both dispatch through.
//! * [`compare`] — above the tools: two runs side by side (`xlens diff`) and `--fail-if`.

pub mod base;
pub mod compare;
pub mod tools;

/// The small real JAX CPU profile committed under `fixtures/`, for unit tests.
#[cfg(test)]
pub(crate) fn jax_fixture() -> xlens_model::Profile {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb"
    );
    xlens_loader::load_path(std::path::Path::new(path), xlens_store::Format::XSpace)
        .expect("the committed JAX fixture")
}
