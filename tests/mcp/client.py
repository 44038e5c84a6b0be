#!/usr/bin/env python3
"""xlens over MCP, driven by the official MCP Python SDK (`pip install mcp`): on stdio
(`xlens mcp PATH`) and on streamable HTTP (`/mcp` of an exposed `xlens serve`, with and without
its token). Lists the tools and calls every one on the fixtures; exits non-zero on any failure.

    python tests/mcp/client.py XLENS_BINARY REPO_ROOT
"""

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

XLENS, ROOT = sys.argv[1], Path(sys.argv[2])
LOGDIR = ROOT / "fixtures/logdir"
TRACE = ROOT / "fixtures/pytorch/tb_plugin/resnet50_num_workers_0.pt.trace.json.gz"
# Tools that need a PyTorch trace to say more than that they found none.
PYTORCH = {
    "pytorch_operators", "pytorch_kernels", "pytorch_distributed", "temporal_breakdown",
    "comm_comp_overlap", "kernel_breakdown", "idle_time_breakdown", "cuda_launch_stats",
}


def registry() -> list[str]:
    out = subprocess.run([XLENS, "tools", "--json"], capture_output=True, text=True, check=True)
    return [t["name"] for t in json.loads(out.stdout)]


def answer(result) -> dict:
    assert not result.is_error, result.content
    text = result.content[0].text
    return json.loads(text)


async def every_tool(s: ClientSession, run: str | None, names: list[str]) -> None:
    for name in names:
        args = {"max_bytes": 20000}
        if run:
            args["run"] = run
        if name == "graph_viewer":
            args["op"] = "dot.2"
        v = answer(await s.call_tool(name, args))
        size = len(json.dumps(v))
        assert size <= 20000 + 200, (name, size)
        print(f"  {name}: {size} bytes", flush=True)


async def over_stdio() -> None:
    # A wrong path fails at once, naming it.
    bad = subprocess.run([XLENS, "mcp", "/no/such/logdir"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=30)
    assert bad.returncode == 1 and "/no/such/logdir: does not exist" in bad.stderr, bad
    names = registry()
    params = StdioServerParameters(command=XLENS, args=["mcp", str(LOGDIR)])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        init = await s.initialize()
        assert init.server_info.name == "xlens", init.server_info
        listed = [t.name for t in (await s.list_tools()).tools]
        assert listed == ["runs", *names], listed
        for t in (await s.list_tools()).tools:
            assert t.input_schema["type"] == "object", t
        runs = answer(await s.call_tool("runs", {}))
        assert "jax_mlp_small" in [r["name"] for r in runs], runs
        print("stdio, jax_mlp_small:", flush=True)
        await every_tool(s, "jax_mlp_small", [n for n in names if n not in PYTORCH])
        # The same answer as the command line's.
        kpi = answer(await s.call_tool("kpi", {"run": "tpu_inference"}))
        cli = subprocess.run(
            [XLENS, "tool", "kpi", str(LOGDIR / "plugins/profile/tpu_inference"), "--json"],
            capture_output=True, text=True, check=True,
        )
        assert kpi.pop("bounded")["cut"] == [], kpi
        assert kpi == json.loads(cli.stdout), (kpi, cli.stdout)
        # A tool's failure is a result the agent reads; an unknown tool is a protocol error.
        bad = await s.call_tool("roofline_model", {"run": "jax_mlp_small", "peak_flops": "fast"})
        assert bad.is_error and "peak_flops" in bad.content[0].text, bad
        try:
            await s.call_tool("nope", {})
            raise AssertionError("an unknown tool was answered")
        except Exception as e:  # the SDK raises the JSON-RPC error
            assert "unknown tool" in str(e) and "kpi" in str(e), e
    params = StdioServerParameters(command=XLENS, args=["mcp", str(TRACE)])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        print("stdio, ResNet-50 trace:", flush=True)
        await every_tool(s, None, sorted(PYTORCH))
        kpi = answer(await s.call_tool("kpi", {}))
        assert kpi["verdict"]["bottleneck"] == "input-bound", kpi


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def over_http() -> None:
    port = free_port()
    token = "mcp-test-token"
    server = subprocess.Popen(
        [XLENS, "serve", str(LOGDIR), "--bind", f"0.0.0.0:{port}", "--token", token],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/tools", timeout=1)
            except urllib.error.HTTPError:
                break  # it answers (401: the token)
            except OSError:
                time.sleep(0.1)
        # Without the token: refused before MCP sees the request.
        req = urllib.request.Request(url, data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=5)
            raise AssertionError("/mcp answered without the token")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as (r, w), \
                ClientSession(r, w) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            assert "kpi" in names and "runs" in names, names
            kpi = answer(await s.call_tool("kpi", {"run": "jax_mlp_small"}))
            assert kpi["run"] == "jax_mlp_small", kpi
            print("http: kpi answered with the token, refused without", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)


async def main() -> None:
    await over_stdio()
    await over_http()
    print("mcp: ok")


if __name__ == "__main__":
    asyncio.run(main())
