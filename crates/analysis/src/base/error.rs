//! Why a tool gave no answer: the one error type of the tools and of what parses their
//! parameters (peaks, filters).

/// Why a tool gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool `{name}`; tools: {tools}")]
    UnknownTool { name: String, tools: String },
    #[error("no host `{host}` in this session; hosts: {hosts}")]
    UnknownHost { host: String, hosts: String },
    #[error("invalid parameters: {0}")]
    Params(String),
    #[error("{0}")]
    Serialize(String),
    #[error("{0}")]
    Load(String),
    /// Writing an answer out failed (`ToolOutput::write_json`), e.g. a closed pipe.
    #[error("writing the answer: {0}")]
    Write(std::io::ErrorKind),
}
