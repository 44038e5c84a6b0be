"""xlens: a fast ML performance profiler, from Python.

    run = xlens.open(path)              # a log directory, session directory or profile file
    run.hosts, run.tools
    run.tool("op_profile")              # exactly what `xlens tool op_profile --json` prints
    run.table("hlo_stats")              # a pyarrow.Table built in Rust and shared, not copied
    xlens.serve(path)                   # the web viewer in a background thread; returns its URL
    xlens.capture(["host:9012"], "logdir", duration_s=2.0)

The work (decoding, analysis) runs in Rust with the GIL released.
"""

from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _native

__version__: str = _native.__version__

ProfileError = _native.ProfileError
"""A profile file could not be read: `.file` names it, `.offset` is the byte where reading
stopped (when the importer knows it)."""

CaptureError = _native.CaptureError
"""A capture failed: `.code` is the exit code `xlens capture` would give, `.kind` its kind
(`refused`, `wrong_port`, `empty_trace`, ...); the message says what to do."""

ToolError = _native.ToolError
"""A tool could not answer (an unknown tool or table, a bad parameter)."""

TABLES: Tuple[str, ...] = tuple(_native.tables())
"""The tables `Run.table` makes."""

_served: Dict[str, str] = {}


class Run:
    """A run: the hosts of one session (or of every session below the path), decoded once."""

    def __init__(self, native: "_native.NativeRun") -> None:
        self._n = native

    @property
    def path(self) -> str:
        return self._n.path

    @property
    def sessions(self) -> List[str]:
        return list(self._n.sessions)

    @property
    def hosts(self) -> List[str]:
        return list(self._n.hosts)

    @property
    def tools(self) -> List[str]:
        """The tools that apply to this run (XLA tools for XSpace, HTA's for PyTorch traces)."""
        return list(self._n.tools)

    @property
    def errors(self) -> List[Tuple[str, str]]:
        """(file, message) of each host file that could not be read (with `partial=True`)."""
        return list(self._n.errors)

    def tool(self, name: str, host: Optional[str] = None, **params: Any) -> Dict[str, Any]:
        """What `xlens tool NAME --json [--host HOST] [--PARAM VALUE ...]` prints, as a dict."""
        return json.loads(self._n.tool_json(name, host, **params))

    def text(self, name: str, host: Optional[str] = None, **params: Any) -> str:
        """What `xlens tool NAME` prints."""
        return self._n.tool_text(name, host, **params)

    def table(self, name: str, host: Optional[str] = None, **params: Any):
        """One of `xlens.TABLES` as a `pyarrow.Table` (`.to_pandas()`, `polars.from_arrow`).

        steps: the steps with their breakdown (ps per category); op_profile: every op with its
        metrics; hlo_stats, framework_op_stats, kernel_stats, pytorch_operators,
        pytorch_kernels: the tools' rows (the last two grouped as `group_by=` says); memory_viewer:
        the buffers live at the peak of `module` (default the largest); trace_events: every
        event of `start_ps`..`end_ps` (default the whole trace).
        """
        import pyarrow

        return pyarrow.table(self._n.table_stream(name, host, **params))

    def _repr_html_(self) -> str:
        """A short summary for Jupyter: steps, top ops, memory peak, advice, and the viewer."""
        e = html.escape
        parts = [f"<b>xlens run</b> {e(', '.join(self.sessions))} · {len(self.hosts)} host(s): {e(', '.join(self.hosts))}"]
        for f, msg in self.errors:
            parts.append(f"<div style='color:#b00'>{e(f)}: {e(msg)}</div>")
        if "overview_page" in self.tools:
            try:
                ov = self.tool("overview_page")
            except ToolError as err:
                ov = None
                parts.append(f"<div>{e(str(err))}</div>")
            if ov:
                for h in ov.get("hosts", []):
                    st = h.get("steps") or {}
                    n = st.get("count") or len(st.get("rows") or [])
                    mean = st.get("mean_ps")
                    line = f"<div><b>{e(h.get('host', ''))}</b>: {n} steps"
                    if mean:
                        line += f", mean {mean / 1e9:.3f} ms"
                    line += "</div>"
                    parts.append(line)
                    top = h.get("top_ops") or []
                    if top:
                        items = "".join(f"<li>{e(str(o.get('name', '')))}: {o.get('self_time_ps', 0) / 1e9:.3f} ms</li>" for o in top[:3])
                        parts.append(f"<div>Top ops:<ol style='margin:0'>{items}</ol></div>")
                    adv = h.get("advice")
                    if adv:
                        parts.append(f"<div>Advice: <b>{e(adv.get('bottleneck', ''))}</b>: {e(adv.get('summary', ''))} {e(adv.get('suggestion', ''))}</div>")
        if "memory_profile" in self.tools:
            try:
                mp = self.tool("memory_profile")
                for h in mp.get("hosts", []):
                    for a in (h.get("allocators") or [])[:1]:
                        peak = a.get("peak_bytes_in_use")
                        if peak is not None:
                            parts.append(f"<div>Memory peak ({e(str(a.get('name', '')))}): {peak / 2**20:.1f} MiB</div>")
            except ToolError:
                pass
        url = next(iter(_served.values()), None)
        if url:
            run = self.sessions[0] if self.sessions else ""
            parts.append(f"<div><a href='{e(url)}?run={e(run)}' target='_blank'>Open in the xlens viewer</a></div>")
        else:
            parts.append("<div style='color:#666'>xlens.serve(path) starts the viewer.</div>")
        return "".join(parts)

    def __repr__(self) -> str:
        return f"xlens.Run({self.path!r}, sessions={self.sessions}, hosts={self.hosts})"


def open(path: str, run: Optional[str] = None, partial: bool = False) -> Run:  # noqa: A001
    """Opens a log directory, session directory or profile file (XSpace or PyTorch trace;
    bucket URLs too), narrowed to session `run` when given. Raises ProfileError for a file that
    cannot be read, unless `partial` (then `Run.errors` lists them)."""
    return Run(_native.NativeRun(str(path), run, partial))


def capture(
    addrs: Sequence[str] | str,
    logdir: str,
    duration_s: float = 2.0,
    **options: Any,
) -> str:
    """Captures from running jobs' profiler servers (`jax.profiler.start_server(PORT)`, ...)
    into one new session of `logdir`; returns the session folder. Options: session,
    host_tracer_level, device_tracer_level, python_tracer_level, delay_ms. Raises CaptureError
    when nothing was captured (or a host failed: its message says which)."""
    if isinstance(addrs, str):
        addrs = [a for a in addrs.split(",") if a.strip()]
    session_dir, hosts = _native.capture(list(addrs), str(logdir), duration_s, **options)
    failed = [(a, err) for a, _, err in hosts if err]
    if failed:
        err = CaptureError("; ".join(f"{a}: {m}" for a, m in failed))
        err.session = session_dir
        raise err
    return session_dir


def serve(logdir: str, port: int = 8791, background: bool = True) -> str:
    """Serves the web viewer over `logdir` on 127.0.0.1:`port` (0: a free port) and returns
    its URL; in a background thread unless `background=False`."""
    url = _native.serve(str(logdir), port, background)
    _served[str(logdir)] = url
    return url


__all__ = [
    "open",
    "capture",
    "serve",
    "Run",
    "ProfileError",
    "CaptureError",
    "ToolError",
    "TABLES",
]
