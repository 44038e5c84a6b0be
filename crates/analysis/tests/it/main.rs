//! xlens-analysis's integration tests, one binary: each module is one subject.

mod advice;
mod common;
mod context;
mod cost_model;
mod diff;
mod graph_viewer;
mod hta;
mod ids_across_tools;
mod input_annotations;
mod layers;
mod memory_profile;
mod memory_viewer;
mod metadata_reads;
mod op_profile_agreement;
mod op_shares;
mod output_schemas;
mod overview_agreement;
mod pytorch;
mod pytorch_memory;
mod real_samples;
mod released_pages;
mod step_model;
mod summary_reads;
mod tb_plugin;
mod trace_real;
mod xprof_agent;
