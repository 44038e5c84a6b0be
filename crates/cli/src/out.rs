//! How commands print: the output formats, stdout that a closed pipe ends quietly, and the exit
//! codes of an answer with unread host files or of an error.

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use xlens_analysis::base::context::Run;
use xlens_analysis::tools;

/// A tool's output format.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
}

/// Exit code of a command that printed its answer while some of its host files could not be
/// read (each named on stderr; the answer names them too): scripts can tell a partial answer.
pub const EXIT_UNREAD: i32 = 2;

/// Ends the process with exit code 1 and the error's chain on stderr when `res` is an error.
pub fn exit_on_error(res: Result<()>) {
    if let Err(e) = res {
        eprintln!("xlens: {e:#}");
        std::process::exit(1);
    }
}

/// After an answer is printed: when any host file of `run` failed to load, names each on stderr
/// and exits with [`EXIT_UNREAD`].
pub fn exit_if_unread(run: &Run) {
    let failed: Vec<&str> = run
        .hosts
        .iter()
        .filter_map(|h| h.analysis.as_ref().err().map(String::as_str))
        .collect();
    if failed.is_empty() {
        return;
    }
    eprintln!(
        "xlens: {} of {} host files could not be read:",
        failed.len(),
        run.hosts.len()
    );
    for e in failed {
        eprintln!("  {e}");
    }
    std::process::exit(EXIT_UNREAD);
}

/// Prints a tool's output in format `f`.
pub fn print_output(name: &str, out: &tools::ToolOutput, f: Format) -> Result<()> {
    let text = match f {
        Format::Text => out.text(),
        Format::Json => return write_json_stdout(out),
        Format::Csv => match out.csv() {
            Some(c) => c,
            None => bail!("tool `{name}` has no CSV output; use --json"),
        },
    };
    write_stdout(&text)
}

/// Writes a tool's JSON to stdout as it is made (not held whole first), ending with a newline;
/// a reader that stops early ends the command quietly, as in [`write_stdout`].
fn write_json_stdout(out: &tools::ToolOutput) -> Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let r = out.write_json(&mut w, true).and_then(|()| {
        w.write_all(b"\n")
            .and_then(|()| w.flush())
            .map_err(|e| tools::ToolError::Write(e.kind()))
    });
    match r {
        Err(tools::ToolError::Write(std::io::ErrorKind::BrokenPipe)) => Ok(()),
        r => r.context("writing the JSON answer"),
    }
}

/// Writes a command's output. A reader that stops early (`| head`) ends the command quietly,
/// as it does other command-line tools, rather than with a panic.
pub fn write_stdout(text: &str) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the output"),
    }
}

/// Writes `value` as compact JSON and a newline to stdout, quietly ending on a closed pipe.
pub fn write_compact_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    serde_json::to_writer(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| std::io::Write::write_all(&mut out, b"\n"))
        .and_then(|()| std::io::Write::flush(&mut out))
        .or_else(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e)
            }
        })
        .context("writing the output")
}
