//! Running the `gcloud` command line: found on PATH, `--project` added, commands printed instead
//! of run in a dry run, and its failures turned into errors that quote what it said.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::GcloudArgs;

pub struct Gcloud {
    exe: PathBuf,
    project: Option<String>,
    pub dry_run: bool,
}

/// `s` as one shell word (single-quoted unless it is plain).
pub fn sh_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@,+%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The first `name` on PATH that is a file.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

impl Gcloud {
    pub fn new(g: &GcloudArgs) -> Result<Gcloud> {
        let exe = match on_path("gcloud") {
            Some(p) => p,
            None if g.dry_run => PathBuf::from("gcloud"),
            None => bail!(
                "no `gcloud` on PATH: install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install) and run `gcloud init`"
            ),
        };
        Ok(Gcloud {
            exe,
            project: g.project.clone(),
            dry_run: g.dry_run,
        })
    }

    /// `args` with `--project` when one was given.
    fn full<S: AsRef<str>>(&self, args: &[S]) -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|s| s.as_ref().to_string()).collect();
        if let Some(p) = &self.project {
            if v.first().map(String::as_str) != Some("config") {
                v.push(format!("--project={p}"));
            }
        }
        v
    }

    fn shown(args: &[String]) -> String {
        let mut s = String::from("gcloud");
        for a in args {
            s.push(' ');
            s.push_str(&sh_quote(a));
        }
        s
    }

    fn command(&self, args: &[String]) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(args);
        c
    }

    /// Runs `gcloud ARGS` and returns its standard output; `None` in a dry run (printed).
    pub fn output<S: AsRef<str>>(&self, args: &[S]) -> Result<Option<String>> {
        let args = self.full(args);
        if self.dry_run {
            println!("{}", Self::shown(&args));
            return Ok(None);
        }
        let out = self
            .command(&args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", self.exe.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!(
                "`{}` failed ({}): {}",
                Self::shown(&args),
                out.status,
                err.trim()
            );
        }
        Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
    }

    /// Whether `gcloud ARGS` succeeds (its output dropped); `None` in a dry run (printed).
    pub fn succeeds<S: AsRef<str>>(&self, args: &[S]) -> Result<Option<bool>> {
        let args = self.full(args);
        if self.dry_run {
            println!("{}", Self::shown(&args));
            return Ok(None);
        }
        let st = self
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("running {}", self.exe.display()))?;
        Ok(Some(st.success()))
    }

    /// Runs `gcloud ARGS` on this terminal (SSH); an error when it fails.
    pub fn interactive<S: AsRef<str>>(&self, args: &[S]) -> Result<()> {
        let args = self.full(args);
        if self.dry_run {
            println!("{}", Self::shown(&args));
            return Ok(());
        }
        let st = self
            .command(&args)
            .status()
            .with_context(|| format!("running {}", self.exe.display()))?;
        if !st.success() {
            bail!("`{}` failed ({st})", Self::shown(&args));
        }
        Ok(())
    }

    /// Runs several `gcloud` commands at once (their output shown as it comes); an error naming
    /// the ones that failed.
    pub fn parallel(&self, commands: Vec<Vec<String>>) -> Result<()> {
        let all: Vec<Vec<String>> = commands.iter().map(|a| self.full(a)).collect();
        if self.dry_run {
            for a in &all {
                println!("{}", Self::shown(a));
            }
            return Ok(());
        }
        let mut children = Vec::new();
        for a in &all {
            let c = self
                .command(a)
                .stdin(Stdio::null())
                .spawn()
                .with_context(|| format!("running {}", self.exe.display()))?;
            children.push((a, c));
        }
        let mut failed = Vec::new();
        for (a, mut c) in children {
            match c.wait() {
                Ok(st) if st.success() => {}
                Ok(st) => failed.push(format!("`{}` ({st})", Self::shown(a))),
                Err(e) => failed.push(format!("`{}` ({e})", Self::shown(a))),
            }
        }
        if !failed.is_empty() {
            bail!(
                "{} of {} failed: {}",
                failed.len(),
                all.len(),
                failed.join("; ")
            );
        }
        Ok(())
    }

    /// A configuration value (`None` when unset).
    fn config(&self, key: &str) -> Result<Option<String>> {
        let out = self
            .command(&["config".into(), "get-value".into(), key.into()])
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", self.exe.display()))?;
        let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((out.status.success() && !v.is_empty() && v != "(unset)").then_some(v))
    }

    /// Logged in, and a project to work in: clear errors before anything else runs.
    pub fn preflight(&self) -> Result<()> {
        if self.dry_run {
            return Ok(());
        }
        if self.config("account")?.is_none() {
            bail!(
                "gcloud is not logged in: run `gcloud auth login` (or activate a service account)"
            );
        }
        if self.project.is_none() && self.config("project")?.is_none() {
            bail!("no Google Cloud project set: run `gcloud config set project PROJECT`, or pass --project");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::sh_quote;

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("gs://b/p"), "gs://b/p");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
