//! Many hosts made from a real profile with known answers (`examples/many_hosts.rs`): copies of
//! a fixture with clock offsets, jitter and stretched hosts, compared across hosts by the tools,
//! `xlens hosts`, `xlens diff`, `xlens serve` and SQL over the per-host summaries.

mod clocks;
mod diff;
mod sessions;
mod sql;
mod stragglers;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    // target/debug/deps/<test> -> target/debug/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

/// A session of copies of the JAX fixture made by the generator with `args`, in a fresh folder
/// named `name`: (its parent to remove, the session folder, the generator's truth).
fn generate(name: &str, args: &[&str]) -> (PathBuf, PathBuf, Vec<Value>) {
    generate_from(
        name,
        args,
        "fixtures/logdir/plugins/profile/jax_mlp_small/vm.xplane.pb",
    )
}

/// [`generate`] from `file` (relative to the repository).
fn generate_from(name: &str, args: &[&str], file: &str) -> (PathBuf, PathBuf, Vec<Value>) {
    let gen = example("many_hosts");
    assert!(
        gen.exists(),
        "cargo test builds the examples; missing {}",
        gen.display()
    );
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("xlens-{name}-{}", std::process::id()));
    let session = dir.join("plugins/profile").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let o = Command::new(&gen)
        .args(args)
        .arg("--out")
        .arg(&session)
        .arg(root.join(file))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let truth = serde_json::from_str(
        &std::fs::read_to_string(format!("{}.truth.json", session.display())).unwrap(),
    )
    .unwrap();
    (dir, session, truth)
}
