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

/// Whether errors are written as JSON: set once, from the command line, when the answer asked
/// for is JSON (`--json`, `--format json`), so that a program reading JSON gets its errors in
/// JSON too.
static JSON_ERRORS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the command line `args` asks for a JSON answer.
pub fn asks_for_json(args: &[std::ffi::OsString]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        a == "--json"
            || a == "--format=json"
            || (a == "--format" && args.get(i + 1).is_some_and(|v| v == "json"))
    })
}

/// Makes errors JSON (see [`JSON_ERRORS`]).
pub fn set_json_errors(on: bool) {
    JSON_ERRORS.store(on, std::sync::atomic::Ordering::Relaxed);
}

fn json_errors() -> bool {
    JSON_ERRORS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes an error as one line of JSON on stderr: `{"error": {"kind", "message", "exit_code",
/// and what else the kind has (`valid`: the names accepted, `files`: the unread files)}}`.
pub fn write_json_error(kind: &str, message: &str, exit_code: i32, more: serde_json::Value) {
    let mut e = serde_json::json!({"kind": kind, "message": message, "exit_code": exit_code});
    if let (Some(e), serde_json::Value::Object(more)) = (e.as_object_mut(), more) {
        e.extend(more);
    }
    eprintln!("{}", serde_json::json!({ "error": e }));
}

/// Ends the process with exit code 1 and the error's chain on stderr when `res` is an error (as
/// JSON when the answer asked for is: an unknown tool or host names the valid ones).
pub fn exit_on_error(res: Result<()>) {
    if let Err(e) = res {
        if json_errors() {
            let (kind, more) = match e.downcast_ref::<tools::ToolError>() {
                Some(tools::ToolError::UnknownTool { tools, .. }) => (
                    "unknown_tool",
                    serde_json::json!({"valid": split_names(tools)}),
                ),
                Some(tools::ToolError::UnknownHost { hosts, .. }) => (
                    "unknown_host",
                    serde_json::json!({"valid": split_names(hosts)}),
                ),
                _ => ("error", serde_json::Value::Null),
            };
            write_json_error(kind, &format!("{e:#}"), 1, more);
        } else {
            eprintln!("xlens: {e:#}");
        }
        std::process::exit(1);
    }
}

fn split_names(list: &str) -> Vec<&str> {
    list.split(", ").filter(|s| !s.is_empty()).collect()
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
    let message = format!(
        "{} of {} host files could not be read",
        failed.len(),
        run.hosts.len()
    );
    if json_errors() {
        write_json_error(
            "unread_hosts",
            &message,
            EXIT_UNREAD,
            serde_json::json!({ "files": failed }),
        );
    } else {
        eprintln!("xlens: {message}:");
        for e in failed {
            eprintln!("  {e}");
        }
    }
    std::process::exit(EXIT_UNREAD);
}

/// Ends the process on a command line clap refused: its own message (and help or version,
/// which are not errors) as clap writes them, or, when the answer asked for is JSON, an error
/// in JSON that names the valid values or the argument clap suggests.
pub fn exit_on_bad_arguments(e: clap::Error) -> ! {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let not_an_error = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if not_an_error || !json_errors() {
        e.exit()
    }
    let mut more = serde_json::Map::new();
    for (kind, name) in [
        (ContextKind::InvalidArg, "argument"),
        (ContextKind::InvalidValue, "value"),
        (ContextKind::ValidValue, "valid"),
        (ContextKind::ValidSubcommand, "valid"),
        (ContextKind::SuggestedArg, "suggested"),
        (ContextKind::SuggestedValue, "suggested"),
        (ContextKind::SuggestedSubcommand, "suggested"),
    ] {
        let v = match e.get(kind) {
            Some(ContextValue::String(s)) => serde_json::json!(s),
            Some(ContextValue::Strings(v)) => serde_json::json!(v),
            _ => continue,
        };
        more.insert(name.to_string(), v);
    }
    let text = e.render().to_string();
    let message = text
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ");
    let code = e.exit_code();
    write_json_error(
        "bad_arguments",
        message,
        code,
        serde_json::Value::Object(more),
    );
    std::process::exit(code)
}

/// Prints a tool's output in format `f` within `bounds`: JSON cut by
/// [`tools::bound_json`] (its `bounded` object says what was left out); CSV to its header and
/// first `rows` rows, text and CSV to the whole lines within `bytes`, with a line (text) or a
/// note on stderr (CSV, which stays a table) that says how much was left out.
pub fn print_bounded(
    name: &str,
    out: &tools::ToolOutput,
    f: Format,
    bounds: tools::Bounds,
) -> Result<()> {
    let text = match f {
        Format::Json if !bounds.any() => return write_json_stdout(out),
        Format::Json => {
            let mut s = out
                .json_bounded(bounds)
                .context("bounding the JSON answer")?;
            s.push('\n');
            return write_stdout(&s);
        }
        Format::Text => {
            if bounds.rows.is_some() {
                eprintln!("xlens: --max-rows bounds the tables of JSON and CSV answers; text is bounded by --max-bytes only");
            }
            let (mut t, left) = cut_lines(out.text(), None, bounds.bytes);
            if let Some(left) = left {
                t.push_str(&format!("… {left} left out by --max-bytes\n"));
            }
            t
        }
        Format::Csv => match out.csv() {
            Some(c) => {
                let (c, left) = cut_lines(c, bounds.rows.map(|r| r + 1), bounds.bytes);
                if let Some(left) = left {
                    eprintln!(
                        "xlens: {name}: {left} of the CSV left out by --max-rows/--max-bytes"
                    );
                }
                c
            }
            None => bail!("tool `{name}` has no CSV output; use --json"),
        },
    };
    write_stdout(&text)
}

/// `text` cut to its first `lines` lines and to the whole lines within `bytes`; with what was
/// left out (`N lines (M bytes)`), when anything was.
fn cut_lines(text: String, lines: Option<usize>, bytes: Option<usize>) -> (String, Option<String>) {
    let mut end = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if lines.is_some_and(|l| n >= l) || bytes.is_some_and(|b| end + line.len() > b) {
            break;
        }
        end += line.len();
    }
    if end == text.len() {
        return (text, None);
    }
    let rest = &text[end..];
    let left = format!(
        "{} lines ({} bytes)",
        rest.split_inclusive('\n').count(),
        rest.len()
    );
    (text[..end].to_string(), Some(left))
}

/// Writes a tool's JSON to stdout as it is made (not held whole first), ending with a newline;
/// a reader that stops early ends the command quietly, as in [`write_stdout`].
/// Stdout, its bytes also kept by the answer cache while it records ([`crate::answers`]).
struct Stdout<'a>(std::io::StdoutLock<'a>);

impl std::io::Write for Stdout<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.write(buf) {
            Ok(n) => {
                crate::answers::tee(&buf[..n]);
                Ok(n)
            }
            Err(e) => {
                crate::answers::spoil();
                Err(e)
            }
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn write_json_stdout(out: &tools::ToolOutput) -> Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, Stdout(std::io::stdout().lock()));
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
    write_stdout_bytes(text.as_bytes())
}

/// [`write_stdout`] of bytes.
pub fn write_stdout_bytes(text: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut out = Stdout(std::io::stdout().lock());
    match out.write_all(text).and_then(|_| out.flush()) {
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
