//! The seam every tool implements ([`Tool`]): a name, typed parameters, a typed result computed
//! from a [`Run`], and its text and CSV forms. The registry (`crate::tools`) erases the types.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::base::context::Run;

/// A tool: what it is called, what it takes, what it computes and how it reads as text and CSV.
pub trait Tool: Sync + 'static {
    /// The name in URLs and on the command line (`overview_page`).
    const NAME: &'static str;
    /// The name in the UI (`Overview`).
    const TITLE: &'static str;
    /// One sentence on what it shows.
    const DESCRIPTION: &'static str;
    /// Its parameters, from the command line or the query string.
    type Params: ToolParams;
    /// Its result.
    type Output: Serialize + schemars::JsonSchema + Send + Sync + 'static;
    /// What it needs read of a file when it runs alone (the command line's `xlens TOOL FILE`).
    const READS: xlens_loader::Reads = xlens_loader::Reads::Everything;

    fn run(run: &Run, params: &Self::Params) -> Result<Self::Output, ToolError>;
    fn text(out: &Self::Output) -> String;
    /// The main table as CSV.
    fn csv(out: &Self::Output) -> Option<String>;
}

/// What a tool's parameters must be: one struct for the command line and the query string.
pub trait ToolParams: clap::Args + DeserializeOwned + Default + Send + Sync + 'static {}
impl<T: clap::Args + DeserializeOwned + Default + Send + Sync + 'static> ToolParams for T {}

/// For tools that take no parameters.
#[derive(Debug, Clone, Default, clap::Args, serde::Deserialize)]
pub struct NoParams {}

pub use crate::base::error::ToolError;

/// A result per host for tools computed from each host alone: serialised as
/// `{"hosts": [{"host": …, …result's fields}], "tool": …}` (a host that could not be read has
/// `error` instead of the result's fields; keys in name order).
pub struct PerHost<T> {
    pub tool: &'static str,
    pub hosts: Vec<(String, Result<T, String>)>,
}

impl<T> PerHost<T> {
    /// Runs `f` on every host of `run` that loaded.
    pub fn of(
        tool: &'static str,
        run: &Run,
        mut f: impl FnMut(&crate::base::context::Analysis) -> T,
    ) -> PerHost<T> {
        PerHost {
            tool,
            hosts: run.map_hosts(
                |h, a| (h.host().to_string(), Ok(f(a))),
                |h, e| (h.host().to_string(), Err(e.to_string())),
            ),
        }
    }

    /// Every host's CSV (`csv` of one host, header first) under one header.
    pub fn csv(&self, csv: fn(&T) -> String) -> String {
        let mut out = String::new();
        for (_, r) in &self.hosts {
            let c = r.as_ref().map(csv).unwrap_or_default();
            if out.is_empty() {
                out = c;
            } else {
                for l in c.lines().skip(1) {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out
    }

    /// Each host under a `== HOST` line: `text` of its answer, or the error that kept it from
    /// being read.
    pub fn each_text(&self, text: impl Fn(&T) -> String) -> String {
        let mut out = String::new();
        for (host, r) in &self.hosts {
            out.push_str(&format!("== {host}\n"));
            match r {
                Ok(t) => out.push_str(&text(t)),
                Err(e) => out.push_str(&format!("  error: {e}\n")),
            }
        }
        out
    }

    /// A line per host with its row count, then the CSV.
    pub fn text(&self, csv: fn(&T) -> String) -> String {
        let mut text = String::new();
        for (host, r) in &self.hosts {
            let rows = r
                .as_ref()
                .map(|t| csv(t).lines().count().saturating_sub(1))
                .unwrap_or(0);
            text.push_str(&format!("host {host}: {rows} rows\n"));
        }
        text.push_str(&self.csv(csv));
        text
    }
}

/// `{"tool", "hosts": [...]}`: each host's answer with its `host`, or `host` and `error`.
impl<T: schemars::JsonSchema> schemars::JsonSchema for PerHost<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("PerHost_{}", T::schema_name()).into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let answer = g.subschema_for::<T>();
        schemars::json_schema!({
            "type": "object",
            "description": "One answer per host file.",
            "properties": {
                "tool": {"type": "string", "description": "The tool's name."},
                "hosts": {
                    "type": "array",
                    "description": "Each host file of the run, in order.",
                    "items": {"anyOf": [
                        {
                            "description": "The host's answer, with its name in `host`.",
                            "allOf": [answer, {
                                "type": "object",
                                "properties": {"host": {
                                    "type": "string",
                                    "description": "The host (its file's name)."
                                }},
                                "required": ["host"]
                            }]
                        },
                        {
                            "description": "A host file that could not be read.",
                            "type": "object",
                            "properties": {
                                "host": {"type": "string", "description": "The host."},
                                "error": {
                                    "type": "string",
                                    "description": "Why its file could not be read."
                                }
                            },
                            "required": ["host", "error"]
                        }
                    ]}
                }
            },
            "required": ["tool", "hosts"]
        })
    }
}

impl<T: Serialize> Serialize for PerHost<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut hosts = Vec::with_capacity(self.hosts.len());
        for (host, r) in &self.hosts {
            let mut v = match r {
                Ok(t) => serde_json::to_value(t).map_err(S::Error::custom)?,
                Err(e) => serde_json::json!({ "error": e }),
            };
            if let Some(o) = v.as_object_mut() {
                o.insert("host".into(), serde_json::Value::String(host.clone()));
            }
            hosts.push(v);
        }
        serde_json::json!({ "tool": self.tool, "hosts": hosts }).serialize(s)
    }
}
