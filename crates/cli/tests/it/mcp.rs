//! `xlens mcp` and `/mcp` of `xlens serve` through the official MCP Python SDK
//! (`tests/mcp/client.py`): the tools listed, every tool called on the fixtures over stdio, the
//! same answer as the command line's, errors, and HTTP with and without the token. Full tier: it
//! needs a Python with `mcp` installed, `$XLENS_MCP_PYTHON` (`.ci/run` makes one); without it the
//! test fails.

use std::path::Path;
use std::process::Command;

#[test]
#[ignore = "full tier (.ci/run): the official MCP client ($XLENS_MCP_PYTHON)"]
fn the_official_client_lists_and_calls_every_tool() {
    let py = std::env::var("XLENS_MCP_PYTHON").expect(
        "XLENS_MCP_PYTHON names a Python that has `mcp` (pip install mcp), as .ci/run makes",
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(py)
        .arg(root.join("tests/mcp/client.py"))
        .arg(env!("CARGO_BIN_EXE_xlens"))
        .arg(&root)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "the MCP client failed:\n{text}");
    assert!(text.contains("mcp: ok"), "{text}");
}
