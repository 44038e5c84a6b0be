//! The tools over the Model Context Protocol (the official Rust SDK, `rmcp`): `xlens mcp PATH`
//! on stdio, and `/mcp` of `xlens serve` (streamable HTTP, behind the server's token when it is
//! exposed). Each registry tool is an MCP tool of the same name whose arguments are the tool's
//! query parameters plus `run`, `host`, `max_rows` and `max_bytes`; `runs` lists the runs. An
//! answer is the tool's JSON, bounded (by default to [`DEFAULT_MAX_BYTES`]) as `xlens tool
//! --max-bytes` bounds it. Runs stay loaded between calls, as the server keeps them.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::ServerHandler;
use serde_json::{json, Value};
use std::sync::Arc;
use xlens_analysis::tools::{self, Bounds};

use crate::Shared;

/// The bytes an answer is bounded to when the call names no `max_bytes`.
pub const DEFAULT_MAX_BYTES: usize = 32_000;

/// The MCP server over one log directory (a [`Shared`] state, as `xlens serve` has).
#[derive(Clone)]
pub struct XlensMcp {
    state: Shared,
}

impl XlensMcp {
    pub fn new(state: Shared) -> XlensMcp {
        XlensMcp { state }
    }
}

/// The arguments every tool takes besides its own.
fn common_properties() -> JsonObject {
    let mut p = JsonObject::new();
    p.insert(
        "run".into(),
        json!({"type": "string", "description": "The run (session) to read; the newest when absent (`runs` lists them)."}),
    );
    p.insert(
        "host".into(),
        json!({"type": "string", "description": "Only this host of the run."}),
    );
    p.insert(
        "max_rows".into(),
        json!({"type": "integer", "minimum": 0, "description": "At most this many rows in each table of the answer; its `bounded` object says what was left out."}),
    );
    p.insert(
        "max_bytes".into(),
        json!({"type": "integer", "minimum": 1, "description": format!("At most this many bytes of JSON (default {DEFAULT_MAX_BYTES}): rows are halved until it fits; `bounded` says what was left out.")}),
    );
    p
}

/// The MCP tool of a registry tool: its parameters as JSON Schema properties.
fn tool_of(t: &dyn tools::AnyTool) -> Tool {
    let info = t.info();
    let mut props = common_properties();
    for p in tools::parameters(t) {
        let mut s = JsonObject::new();
        if !p.takes_value {
            s.insert("type".into(), json!("boolean"));
        } else if !p.values.is_empty() {
            s.insert("type".into(), json!("string"));
            s.insert("enum".into(), json!(p.values));
        } else {
            s.insert("type".into(), json!(["string", "number"]));
        }
        s.insert("description".into(), json!(p.help));
        if let Some(d) = p.default {
            s.insert("default".into(), json!(d));
        }
        props.insert(p.key, Value::Object(s));
    }
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    schema.insert("additionalProperties".into(), json!(false));
    let mut tool = Tool::new(info.name, info.description, Arc::new(schema));
    tool.title = Some(info.title.to_string());
    tool
}

fn runs_tool() -> Tool {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), json!({}));
    let mut tool = Tool::new(
        "runs",
        "The runs (sessions) this server reads, newest first, each with its hosts: the names the tools' `run` and `host` take.",
        Arc::new(schema),
    );
    tool.title = Some("Runs".to_string());
    tool
}

/// Every MCP tool: `runs`, then the registry's tools.
pub fn mcp_tools() -> Vec<Tool> {
    std::iter::once(runs_tool())
        .chain(tools::TOOLS.iter().map(|t| tool_of(*t)))
        .collect()
}

/// A call's argument as the query string carries it.
fn query_value(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        other => Some(other.to_string()),
    }
}

fn count(args: &JsonObject, key: &str) -> Result<Option<usize>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(|n| Some(n as usize))
            .ok_or_else(|| format!("{key} must be a whole number, not {v}")),
    }
}

fn failed(msg: impl Into<String>) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(msg.into())]).into()
}

impl XlensMcp {
    async fn call(&self, name: &str, args: JsonObject) -> CallToolResponse {
        if name == "runs" {
            return match crate::runs_json(&self.state).await {
                Ok(v) => CallToolResult::success(vec![ContentBlock::text(v.to_string())]).into(),
                Err(e) => failed(e),
            };
        }
        let bounds = match (count(&args, "max_rows"), count(&args, "max_bytes")) {
            (Ok(rows), Ok(bytes)) => Bounds {
                rows,
                bytes: Some(bytes.unwrap_or(DEFAULT_MAX_BYTES)),
            },
            (Err(e), _) | (_, Err(e)) => return failed(e),
        };
        let text = |k: &str| args.get(k).and_then(query_value);
        let params: Vec<(String, String)> = args
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "run" | "host" | "max_rows" | "max_bytes"))
            .filter_map(|(k, v)| Some((k.clone(), query_value(v)?)))
            .collect();
        match crate::run_tool(
            &self.state,
            name.to_string(),
            text("run"),
            text("host"),
            params,
        )
        .await
        {
            Ok(out) => match out.json_bounded(bounds) {
                Ok(json) => CallToolResult::success(vec![ContentBlock::text(json)]).into(),
                Err(e) => failed(e.to_string()),
            },
            Err((_, e)) => failed(e),
        }
    }
}

impl ServerHandler for XlensMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("xlens", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "xlens reads ML profiles (XProf .xplane.pb, PyTorch .pt.trace.json) under {}. Start with `kpi` (step time, duty cycle, roofline, peak memory, and the verdict with the worst step's window), then the tool its verdict names. `runs` lists the runs; every tool takes `run` and `host`. Times are picoseconds unless a key says otherwise.",
                self.state.logdir.display()
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(mcp_tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        mcp_tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if name != "runs" && tools::find(&name).is_err() {
            let valid: Vec<String> = mcp_tools().iter().map(|t| t.name.to_string()).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`; tools: {}", valid.join(", ")),
                Some(json!({ "valid": valid })),
            ));
        }
        Ok(self
            .call(&name, request.arguments.unwrap_or_default())
            .await)
    }
}

/// Serves the tools on stdin and stdout until the client closes them.
pub async fn serve_stdio(state: Shared) -> std::io::Result<()> {
    use rmcp::ServiceExt;
    let service = XlensMcp::new(state)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    service.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// The streamable-HTTP endpoint `xlens serve` mounts at `/mcp` (stateless; the server's own
/// guard checks the token and the `Host` header before a request reaches it).
pub fn http_service(
    state: Shared,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    XlensMcp,
    rmcp::transport::streamable_http_server::session::never::NeverSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        session::never::NeverSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    };
    StreamableHttpService::new(
        move || Ok(XlensMcp::new(state.clone())),
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_and_each_of_its_parameters_is_offered() {
        let offered = mcp_tools();
        assert_eq!(offered[0].name, "runs");
        assert_eq!(offered.len(), tools::TOOLS.len() + 1);
        for (t, m) in tools::TOOLS.iter().zip(&offered[1..]) {
            assert_eq!(m.name, t.info().name);
            let props = m.input_schema["properties"].as_object().unwrap();
            for key in ["run", "host", "max_rows", "max_bytes"] {
                assert!(props.contains_key(key), "{}: {key}", m.name);
            }
            for p in tools::parameters(*t) {
                assert!(props.contains_key(&p.key), "{}: {}", m.name, p.key);
            }
        }
    }

    #[test]
    fn arguments_become_query_values() {
        assert_eq!(query_value(&json!("a")), Some("a".into()));
        assert_eq!(query_value(&json!(3)), Some("3".into()));
        assert_eq!(query_value(&json!(true)), Some("true".into()));
        assert_eq!(query_value(&Value::Null), None);
        let mut args = JsonObject::new();
        args.insert("max_rows".into(), json!("ten"));
        assert!(count(&args, "max_rows").is_err());
        assert_eq!(count(&args, "max_bytes"), Ok(None));
    }
}
