//! Fuzzing xlens on stable Rust: a small mutation engine (no nightly, no cargo-fuzz, no AFL)
//! for the XSpace importer, the Chrome-JSON importer and the HTTP query parsers.
//!
//! Run with `cargo run --release -p xlens-fuzz -- TARGET --execs N [--seed S] [--out DIR]`
//! (`TARGET`: `xspace`, `chrome`, `query`). Each execution runs under `catch_unwind` with a
//! quiet panic hook that records every panic, on any thread, including the ones the server
//! catches itself ([`engine`]); a crashing input is written to `--out` and the run goes on.
//! The long runs are meant to be built with overflow checks and debug assertions on, as
//! fuzzers usually are (`CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
//! CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true`): an overflowing time is a panic then, not a
//! silently wrapped number.
//!
//! `--replay FILE|DIR` runs inputs through every path of the target (every tool, both XSpace
//! decoding paths), each step's panics caught apart; `--minimize FILE [--site SITE]` shrinks a
//! crashing input (nodes of its tree, then byte ranges) while it still panics at that site.
//!
//! **Seeds** are real inputs ([`seeds`]): the committed XSpace fixtures and invalid files, and
//! the PyTorch Chrome traces, gunzipped; because those are hundreds of KB, smaller seeds are
//! derived structurally (a few planes, lines and events with the metadata they refer to; a
//! window of trace events with the metadata events), so most executions run on a few KB.
//!
//! **Mutations** ([`havoc`], [`proto`], [`json`], [`targets::query`]): byte-level ones for any
//! input (bit and byte flips, interesting integers, arithmetic, delete/insert/duplicate ranges,
//! splices between corpus entries, truncation, dictionary tokens); for protobuf a schema-aware
//! field tree (values, field numbers, wire types, duplicated/deleted/reordered fields, deep
//! nesting, subtrees spliced between inputs) and wire-format tampering (lengths, tags,
//! unterminated and overlong varints, cuts inside messages); for JSON a tree that keeps number
//! and string text as written (NaN, Infinity, 1e308, 30-digit integers, negative durations,
//! every phase and junk ones, unmatched B/E, flows, metadata events, escapes and unicode, very
//! long strings, deep nesting, ids as strings or numbers, renamed and duplicate keys) plus text
//! damage (closing brackets, quotes removed); for queries, pairs whose keys are the real
//! parameter names (taken from the tools' own definitions) or junk and whose values are on the
//! edges (huge, negative, NaN, empty, unicode, broken percent-escapes, very long). Inputs are
//! kept to 256 KiB ([`havoc::MAX_INPUT`]; URLs to 16 KiB), and only inputs up to 96 KiB
//! ([`seeds::MAX_SEED`]) join the corpus.
//!
//! **Coverage guidance** is a cheap proxy, not instrumentation: each execution returns a
//! signature, and an input that produces a signature not seen before joins the corpus (at most
//! `--max-corpus` entries, 4096 by default; then a new one replaces a random non-seed entry).
//! For an importer the signature is the error's category (its message with digits and quoted
//! values removed) when
//! decoding fails, or the decoded profile's shape when it succeeds (planes, log2 of lines and
//! events, log2 of import warnings, and the categories of the first warnings) plus, when the
//! tools ran, what each tool did. For queries it is the route, the status and the error
//! category or log2 of the answer's size.
//!
//! **Per-exec cost**: decoded profiles go on to the analysis tools (`report`, `overview_page`
//! and one more in turn, JSON rendered, trace index queried) only every `--tools-every`-th time
//! (default 16), and every 16th XSpace input is decoded with lines on two threads (the path
//! large files take). Query requests go through the real router every time; the command-line
//! parser runs on every `--cli-every`-th tool request (default 4).
//!
//! Every crash found becomes a regression test: its minimized input under
//! `crates/fuzz/regressions/<target>/`, replayed by `tests/it/regressions.rs`.

pub mod engine;
pub mod havoc;
pub mod json;
pub mod proto;
pub mod rng;
pub mod seeds;
pub mod targets;
