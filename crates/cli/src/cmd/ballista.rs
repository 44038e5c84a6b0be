//! `xlens ballista`: a scheduler or executor of an Apache DataFusion Ballista cluster, for
//! `xlens sql --ballista` (behind the `distributed` feature).

use anyhow::Result;

/// Which process of a Ballista cluster `xlens ballista` runs.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Role {
    Scheduler,
    Executor,
}

/// A process of an Apache DataFusion Ballista cluster for `xlens sql --ballista`:
/// `xlens ballista scheduler --bind-port 50050`, `xlens ballista executor --scheduler-port
/// 50050 --bind-port 50051`, with Ballista's own flags (`xlens ballista scheduler --help`).
/// Needs a build with `--features distributed`.
#[derive(clap::Args)]
pub struct Args {
    #[arg(value_enum)]
    role: Role,
    /// Ballista's flags for that process.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<std::ffi::OsString>,
}

#[cfg(feature = "distributed")]
pub fn run(a: Args) -> Result<()> {
    use anyhow::Context;
    let role = a.role;
    let r = match role {
        Role::Scheduler => xlens_distributed::scheduler(a.args),
        Role::Executor => xlens_distributed::executor(a.args),
    };
    match r {
        // Ballista's --help and --version.
        Err(xlens_distributed::DistributedError::Arguments(e)) => e.exit(),
        r => Ok(r.with_context(|| format!("Ballista {role:?}"))?),
    }
}

#[cfg(not(feature = "distributed"))]
pub fn run(a: Args) -> Result<()> {
    let _ = (a.role, a.args);
    anyhow::bail!("this xlens was built without Ballista: build it with `cargo build --release -p xlens --features distributed`")
}
