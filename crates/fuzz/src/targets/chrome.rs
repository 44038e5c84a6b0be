//! The Chrome-trace importer target: structure-aware JSON mutation of real PyTorch traces,
//! decoded with `xlens_chrome::decode` (what `xlens_loader::decode` calls for `Format::ChromeTrace`) and
//! with the partial read of a first answer (`decode_with` and `GPU_ACTIVITY`);
//! decoded profiles go on to the analysis tools every `tools_every`-th time.

use anyhow::Result;
use std::path::Path;
use xlens_store::Format;

use crate::engine::{category, run_caught, signature, Entry, Target};
use crate::havoc::{havoc, MAX_INPUT};
use crate::json::{self, J};
use crate::rng::Rng;

/// The Chrome-trace importer, then the tools.
pub struct ChromeTarget {
    seeds: Vec<Vec<u8>>,
    tools_every: u64,
    decoded: u64,
    cursor: usize,
}

impl ChromeTarget {
    /// Seeds from `fixtures`; tools run on every `tools_every`-th decoded profile (0: never).
    pub fn new(fixtures: &Path, tools_every: u64) -> Result<ChromeTarget> {
        Ok(ChromeTarget {
            seeds: crate::seeds::chrome_seeds(fixtures)?,
            tools_every,
            decoded: 0,
            cursor: 0,
        })
    }
}

/// Decodes `input` as the app does and, when it decodes and `tools()` says so, runs the tools
/// over it: what a regression test checks.
pub fn check(input: &[u8], tools: &mut dyn FnMut() -> bool, cursor: &mut usize) -> u64 {
    // The partial read of a first answer (skimmed events, kept args) on the same input.
    let partial = match xlens_chrome::decode_with(input, Some(xlens_chrome::GPU_ACTIVITY)) {
        Err(e) => signature(("partial error", category(&e.to_string()))),
        Ok(p) => signature(("partial", super::profile_shape(&p))),
    };
    signature((partial, check_full(input, tools, cursor)))
}

fn check_full(input: &[u8], tools: &mut dyn FnMut() -> bool, cursor: &mut usize) -> u64 {
    match xlens_chrome::decode(input) {
        Err(e) => signature(("error", category(&e.to_string()))),
        Ok(p) => {
            let shape = super::profile_shape(&p);
            let tools = if tools() {
                super::run_tools(p, Format::ChromeTrace, cursor)
            } else {
                0
            };
            signature((shape, tools))
        }
    }
}

/// Decodes `input` and, when it decodes, runs every tool over it, each step's panics caught
/// apart; returns every panic.
pub fn replay(input: &[u8]) -> Vec<String> {
    if let Err(p) =
        run_caught(|| xlens_chrome::decode_with(input, Some(xlens_chrome::GPU_ACTIVITY)))
    {
        return p;
    }
    match run_caught(|| xlens_chrome::decode(input)) {
        Ok(Ok(p)) => super::replay_tools(p, Format::ChromeTrace),
        Ok(Err(_)) => Vec::new(),
        Err(p) => p,
    }
}

impl Target for ChromeTarget {
    type Tree = J;

    fn name(&self) -> &'static str {
        "chrome"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        self.seeds.clone()
    }

    fn parse(&self, input: &[u8]) -> Option<J> {
        json::parse(input)
    }

    fn mutate(&self, rng: &mut Rng, base: &Entry<J>, other: &Entry<J>) -> Vec<u8> {
        let mut out = Vec::new();
        match &base.tree {
            Some(tree) if rng.chance(4, 5) => {
                let mut t = tree.clone();
                for _ in 0..rng.range(1, 4) {
                    json::mutate_tree(rng, &mut t, other.tree.as_ref());
                }
                json::write(&t, &mut out);
                out.truncate(MAX_INPUT);
                match rng.below(8) {
                    0 => json::damage_text(rng, &mut out),
                    1 => {
                        let rounds = rng.range(1, 3);
                        havoc(rng, &mut out, &other.data, json::DICT, rounds)
                    }
                    _ => {}
                }
            }
            _ => {
                out = base.data.clone();
                if rng.chance(1, 3) {
                    json::damage_text(rng, &mut out);
                } else {
                    let rounds = rng.small_len(8);
                    havoc(rng, &mut out, &other.data, json::DICT, rounds);
                }
            }
        }
        out.truncate(MAX_INPUT);
        out
    }

    fn replay(&mut self, input: &[u8]) -> Vec<String> {
        replay(input)
    }

    fn nodes(&self, tree: &J) -> usize {
        json::node_count(tree)
    }

    fn without(&self, tree: &J, n: usize) -> Option<Vec<u8>> {
        let t = json::without_nth(tree, n)?;
        let mut out = Vec::new();
        json::write(&t, &mut out);
        Some(out)
    }

    fn execute(&mut self, input: &[u8]) -> u64 {
        // Tools only for inputs that decode; count those to space the tool runs.
        let (every, decoded) = (self.tools_every, &mut self.decoded);
        let mut tools = || {
            *decoded += 1;
            every > 0 && *decoded % every == 0
        };
        check(input, &mut tools, &mut self.cursor)
    }
}
