//! The XSpace importer target: structure-aware protobuf mutation of real profiles, decoded
//! with `xlens_xspace` (what `xlens_loader::decode` calls for
//! `Format::XSpace`); decoded profiles go on to the analysis tools every `tools_every`-th time.

use anyhow::Result;
use std::path::Path;
use xlens_store::Format;

use crate::engine::{category, run_caught, signature, Entry, Target};
use crate::havoc::{havoc, MAX_INPUT};
use crate::proto::{self, Field, Ty};
use crate::rng::Rng;

/// The XSpace importer, then the tools.
pub struct XSpaceTarget {
    seeds: Vec<Vec<u8>>,
    tools_every: u64,
    decoded: u64,
    execs: u64,
    cursor: usize,
}

impl XSpaceTarget {
    /// Seeds from `fixtures`; tools run on every `tools_every`-th decoded profile (0: never).
    pub fn new(fixtures: &Path, tools_every: u64) -> Result<XSpaceTarget> {
        Ok(XSpaceTarget {
            seeds: crate::seeds::xspace_seeds(fixtures)?,
            tools_every,
            decoded: 0,
            execs: 0,
            cursor: 0,
        })
    }
}

/// Decodes `input` as the app does and, when it decodes and `tools()` says so, runs the tools
/// over it: what a regression test checks.
pub fn check(
    input: &[u8],
    tools: &mut dyn FnMut() -> bool,
    parallel: bool,
    cursor: &mut usize,
) -> u64 {
    let decoded = if parallel {
        // Lines of every plane on two threads, however small (the path large files take).
        xlens_xspace::decode_with_threads(input, &|_, _| {}, 2, 0)
    } else {
        xlens_xspace::decode(input)
    };
    match decoded {
        Err(e) => signature(("error", e.context, category(&e.message))),
        Ok(p) => {
            let shape = super::profile_shape(&p);
            let tools = if tools() {
                super::run_tools(p, Format::XSpace, cursor)
            } else {
                0
            };
            signature((shape, tools))
        }
    }
}

/// Decodes `input` both ways (serially, and with lines on two threads) and, when it decodes,
/// runs every tool over it, each step's panics caught apart; returns every panic.
pub fn replay(input: &[u8]) -> Vec<String> {
    let mut panics = Vec::new();
    match run_caught(|| xlens_xspace::decode(input)) {
        Ok(Ok(p)) => panics.extend(super::replay_tools(p, Format::XSpace)),
        Ok(Err(_)) => {}
        Err(p) => panics.extend(p),
    }
    let parallel = run_caught(|| {
        let _ = xlens_xspace::decode_with_threads(input, &|_, _| {}, 2, 0);
    });
    panics.extend(parallel.err().unwrap_or_default());
    panics
}

impl Target for XSpaceTarget {
    type Tree = Vec<Field>;

    fn name(&self) -> &'static str {
        "xspace"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        self.seeds.clone()
    }

    fn parse(&self, input: &[u8]) -> Option<Vec<Field>> {
        proto::parse(input, Ty::Space)
    }

    fn mutate(
        &self,
        rng: &mut Rng,
        base: &Entry<Vec<Field>>,
        other: &Entry<Vec<Field>>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        match &base.tree {
            Some(tree) if rng.chance(3, 4) => {
                let mut t = tree.clone();
                for _ in 0..rng.range(1, 4) {
                    proto::mutate_tree(rng, &mut t, other.tree.as_deref());
                }
                proto::encode(&t, &mut out);
                if out.len() > MAX_INPUT {
                    out.truncate(MAX_INPUT);
                }
                match rng.below(4) {
                    0 => proto::tamper_wire(rng, &mut out),
                    1 => {
                        let rounds = rng.range(1, 3);
                        havoc(rng, &mut out, &other.data, proto::DICT, rounds)
                    }
                    _ => {}
                }
            }
            _ => {
                out = base.data.clone();
                if rng.chance(1, 3) {
                    proto::tamper_wire(rng, &mut out);
                } else {
                    let rounds = rng.small_len(8);
                    havoc(rng, &mut out, &other.data, proto::DICT, rounds);
                }
            }
        }
        out.truncate(MAX_INPUT);
        out
    }

    fn replay(&mut self, input: &[u8]) -> Vec<String> {
        replay(input)
    }

    fn nodes(&self, tree: &Vec<Field>) -> usize {
        proto::node_count(tree)
    }

    fn without(&self, tree: &Vec<Field>, n: usize) -> Option<Vec<u8>> {
        let t = proto::without_nth(tree, n)?;
        let mut out = Vec::new();
        proto::encode(&t, &mut out);
        Some(out)
    }

    fn execute(&mut self, input: &[u8]) -> u64 {
        self.execs += 1;
        let parallel = self.execs % 16 == 0;
        // Tools only for inputs that decode; count those to space the tool runs.
        let (every, decoded) = (self.tools_every, &mut self.decoded);
        let mut tools = || {
            *decoded += 1;
            every > 0 && *decoded % every == 0
        };
        check(input, &mut tools, parallel, &mut self.cursor)
    }
}
