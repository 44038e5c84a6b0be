"""The Python API against the `xlens` command of the same installed package, on every sample:
the committed fixtures and, when the checkout sits beside it, ../shared/samples.

Run.tool(...) must equal `xlens tool NAME --json`; Run.table(...) row counts and sums must equal
the same figures read from that JSON. Then the errors (ProfileError with file and offset,
CaptureError with the CLI's exit code), serve(), the GIL being released, and zero-copy tables.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import xlens

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "samples"
XLENS = shutil.which("xlens")

# CPU profiles' roofline figures use peaks measured in each process; fixed peaks make the two
# processes' answers comparable.
PEAKS = {"peak_flops": "1e12", "peak_bw": "1e11"}
TAKES_PEAKS = {"op_profile", "hlo_stats", "roofline_model"}
# Tools that need an argument to answer (graph_viewer: an op) or that the tables cover.
SKIP_TOOLS = {"graph_viewer"}


def cli(*args: str) -> tuple[int, str, str]:
    assert XLENS, "the package's `xlens` command is not on PATH"
    p = subprocess.run([XLENS, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def sessions() -> list[tuple[str, str]]:
    """(path, session) for every session of the fixtures and shared samples."""
    roots = [ROOT / "fixtures"]
    if SHARED.is_dir():
        roots.append(SHARED)
    elif os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: the shared samples are not at {SHARED}")
    out = []
    for r in roots:
        code, text, err = cli("runs", str(r), "--json")
        assert code == 0, err
        for s in json.loads(text):
            out.append((s["dir"], s["name"]))
    assert len(out) >= 10, out
    return out


SESSIONS = sessions()


def flags(params: dict) -> list[str]:
    return [a for k, v in params.items() for a in (f"--{k.replace('_', '-')}", v)]


@pytest.mark.parametrize("path,session", SESSIONS, ids=[s for _, s in SESSIONS])
def test_tools_equal_the_cli(path: str, session: str) -> None:
    run = xlens.open(path, partial=True)
    assert run.hosts, path
    checked = 0
    for tool in run.tools:
        if tool in SKIP_TOOLS:
            continue
        params = PEAKS if tool in TAKES_PEAKS else {}
        code, text, err = cli("tool", tool, path, "--json", *flags(params))
        if code not in (0, 2):
            # The CLI refused (e.g. no trace at all): so must the API.
            with pytest.raises(xlens.ToolError):
                run.tool(tool, **params)
            continue
        assert run.tool(tool, **params) == json.loads(text), f"{tool} on {path}"
        checked += 1
    assert checked > 0


def leaves(node: dict):
    if node.get("kind") == "op":
        yield node
    for c in node.get("children", []):
        yield from leaves(c)


@pytest.mark.parametrize("path,session", SESSIONS, ids=[s for _, s in SESSIONS])
def test_tables_agree_with_the_json(path: str, session: str) -> None:
    run = xlens.open(path, partial=True)
    tools = set(run.tools)
    if "hlo_stats" in tools:
        j = run.tool("hlo_stats")
        rows = [r for h in j["hosts"] for r in h["rows"]]
        t = run.table("hlo_stats")
        assert t.num_rows == len(rows)
        if rows:
            assert t.column("total_time_ps").to_pylist() == [r["total_time_ps"] for r in rows]
            assert t.column("hlo_op_name").to_pylist() == [r["hlo_op_name"] for r in rows]
    if "op_profile" in tools:
        j = run.tool("op_profile")
        ops = [n for h in j["hosts"] for n in leaves(h["by_program"])]
        t = run.table("op_profile")
        assert t.num_rows == len(ops)
        assert sum(t.column("time_ps").to_pylist()) == sum(n["metrics"]["time_ps"] for n in ops)
        assert sum(t.column("occurrences").to_pylist()) == sum(n["metrics"]["occurrences"] for n in ops)
    if "framework_op_stats" in tools:
        j = run.tool("framework_op_stats")
        ops = [o for h in j["hosts"] for o in (h.get("ops") or [])]
        t = run.table("framework_op_stats")
        assert t.num_rows == len(ops)
        if ops:
            assert sum(t.column("self_time_ps").to_pylist()) == sum(o["self_time_ps"] for o in ops)
    if "kernel_stats" in tools:
        j = run.tool("kernel_stats")
        ks = [k for h in j["hosts"] for k in (h.get("kernels") or [])]
        t = run.table("kernel_stats")
        assert t.num_rows == len(ks)
        if ks:
            assert sum(t.column("occurrences").to_pylist()) == sum(k["occurrences"] for k in ks)
    if "pytorch_operators" in tools:
        for group in ("name", "name_and_shape"):
            j = run.tool("pytorch_operators", group_by=group)
            ops = [o for h in j["hosts"] for o in (h.get("operators") or [])]
            t = run.table("pytorch_operators", group_by=group)
            assert t.num_rows == len(ops)
            if ops:
                assert sum(t.column("host_self_ps").to_pylist()) == sum(o["host_self_ps"] for o in ops)
                assert sum(t.column("device_total_ps").to_pylist()) == sum(o["device_total_ps"] for o in ops)
    if "pytorch_kernels" in tools:
        for group, key in (("name", "by_name"), ("name_and_op", "by_name_and_op")):
            j = run.tool("pytorch_kernels", group_by=group)
            ks = [k for h in j["hosts"] for k in (h.get(key) or [])]
            t = run.table("pytorch_kernels", group_by=group)
            assert t.num_rows == len(ks)
            if ks:
                assert sum(t.column("total_ps").to_pylist()) == sum(k["total_ps"] for k in ks)
    if "overview_page" in tools:
        j = run.tool("overview_page")
        steps = [r for h in j["hosts"] for r in (h.get("steps") or {}).get("rows", [])]
        t = run.table("steps")
        assert t.num_rows == len(steps)
        assert sum(t.column("duration_ps").to_pylist()) == sum(r["duration_ps"] for r in steps)
        for c in j["categories"]:
            col = f"{c['id']}_ps"
            assert sum(t.column(col).to_pylist()) == sum(r["breakdown_ps"][j["categories"].index(c)] for r in steps)
    if "memory_viewer" in tools:
        listing = run.tool("memory_viewer")
        modules = [m for h in listing["hosts"] for m in (h.get("modules") or [])]
        t = run.table("memory_viewer")
        if modules:
            largest = max(modules, key=lambda m: m["peak_heap_bytes"])
            j = run.tool("memory_viewer", module=largest["name"])
            bufs = [b for h in j["hosts"] for b in ((h.get("selected") or {}).get("peak_buffers") or [])]
            assert t.num_rows == len(bufs)
            if bufs:
                assert sum(t.column("size_bytes").to_pylist()) == sum(b["size_bytes"] for b in bufs)
        else:
            assert t.num_rows == 0
    if "trace_viewer" in tools and not run.errors:
        v = run.tool("trace_viewer")
        t = run.table("trace_events")
        # The whole trace: every event, none merged.
        assert t.num_rows == v["total_events"]


def test_the_command_is_the_same_cli() -> None:
    code, text, _ = cli("--version")
    assert code == 0 and text.strip() == f"xlens {xlens.__version__}"
    path = str(ROOT / "fixtures/logdir/plugins/profile/jax_mlp_small")
    code, text, err = cli("report", path, "--json")
    assert code == 0, err
    # XProf's step table: 10 annotated steps less the first and the last.
    assert json.loads(text)["sessions"][0]["hosts"][0]["steps"]["count"] == 8
    # A subcommand that exits non-zero keeps its code through the Python entry point.
    code, _, err = cli("report", str(ROOT / "fixtures/invalid"))
    assert code == 2, err


def test_profile_error_names_file_and_offset() -> None:
    bad = ROOT / "fixtures/invalid"
    files = sorted(p for p in bad.iterdir() if p.suffix == ".pb")
    assert files
    with pytest.raises(xlens.ProfileError) as e:
        xlens.open(str(files[0]))
    assert e.value.file.endswith(files[0].name)
    assert isinstance(e.value.offset, int) and e.value.offset > 0, str(e.value)
    assert files[0].name in str(e.value)
    # partial: the run opens and says which file failed.
    run = xlens.open(str(bad), partial=True)
    assert run.errors and run.errors[0][0].endswith(files[0].name)


def test_capture_error_has_the_cli_code() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(xlens.CaptureError) as e:
        xlens.capture([f"127.0.0.1:{port}"], "/tmp/xlens-py-capture", duration_s=0.2)
    assert e.value.code == 10 and e.value.kind == "refused", (e.value.code, e.value.kind)
    assert "nothing listens" in str(e.value)


def test_unknown_tool_and_bad_parameter() -> None:
    run = xlens.open(str(ROOT / "fixtures/logdir"), run="jax_mlp_small")
    with pytest.raises(xlens.ToolError, match="unknown tool"):
        run.tool("nope")
    with pytest.raises(xlens.ToolError, match="no table"):
        run.table("nope")
    with pytest.raises(xlens.ToolError):
        run.tool("roofline_model", peak_flops="fast")


def test_serve_in_the_background() -> None:
    url = xlens.serve(str(ROOT / "fixtures/logdir"), port=0)
    assert url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(url + "api/runs", timeout=10) as r:
        runs = json.loads(r.read())
    assert "jax_mlp_small" in [r["name"] for r in runs]
    run = xlens.open(str(ROOT / "fixtures/logdir"), run="jax_mlp_small")
    html = run._repr_html_()
    # XProf's step count for this profile (its overview, committed under fixtures/expected).
    xprof = json.loads((ROOT / "fixtures/expected/xprof/overview/jax_mlp_small.json").read_text())
    assert f"{xprof['step_count']} steps" in html, html
    assert "Open in the xlens viewer" in html and url in html


def test_the_gil_is_released_while_rust_works() -> None:
    path = str(ROOT / "fixtures/logdir")
    calls: list[tuple[float, float]] = []
    ticks: list[float] = []
    done = threading.Event()

    def timed(f):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        out = f()
        calls.append((start, time.perf_counter()))
        return out

    def work() -> None:
        for _ in range(3):
            r = timed(lambda: xlens.open(path, run="gpu_multi_worker"))
            timed(lambda: r.table("trace_events"))
            timed(lambda: r.tool("op_profile"))
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    t.join()
    # A tick is Python running on this thread. Were the GIL held while Rust works, no tick could
    # fall inside a call (bar one as it starts); how many do depends on the machine's load, so
    # ask for a few per call on average.
    inside = sum(1 for x in ticks for a, b in calls if a < x < b)
    busy = sum(b - a for a, b in calls)
    assert inside >= 3 * len(calls), (inside, len(ticks), busy)


def test_tables_share_rust_buffers() -> None:
    import pyarrow as pa

    run = xlens.open(str(ROOT / "fixtures/logdir"), run="tpu_inference")
    t = run.table("trace_events")
    assert t.num_rows > 20_000
    # Imported through the C stream interface: pyarrow's allocator never saw these buffers.
    before = pa.total_allocated_bytes()
    t = run.table("trace_events")
    assert pa.total_allocated_bytes() - before < 1 << 16
    df = t.to_pandas()
    assert len(df) == t.num_rows and df["dur_ps"].sum() == pa.compute.sum(t["dur_ps"]).as_py()
