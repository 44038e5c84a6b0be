#!/usr/bin/env python3
"""Reference figures from Holistic Trace Analysis (HTA) for the PyTorch (Kineto) samples.

Runs HTA's TraceAnalysis over each sample trace (each in a directory of its own, so that HTA
sees it as a one-rank job) and writes what HTA computes to
fixtures/expected/hta/<sample name without .json.gz>.json. The two ranks of
hta-trace_filter-sampled_rank-{0,1}.json.gz are also run together as one two-rank job
(fixtures/expected/hta/trace_filter-sampled_ranks-0-1.json).

Usage (from the repository root, with HTA installed in its own virtualenv, whose python
XLENS_HTA_PYTHON names; see tests/hta/README.md):

    ${XLENS_HTA_PYTHON:-python3} tests/hta/reference.py [--out DIR] [PATH ...]

PATH is a trace file (.json.gz / .json) or a directory of them; by default every trace in
../shared/samples/pytorch/ relative to the repository root. One line is printed per sample and
analysis: "ok" or the error HTA raised. An analysis HTA fails on is recorded in the JSON as
{"error": "<Type>: <message>"}; none is skipped silently.

See tests/hta/README.md for what each figure means in HTA's own terms.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import logging
import math
import os
import platform
import re
import shutil
import sys
import tempfile
import traceback
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import pandas as pd

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SAMPLES = REPO_ROOT.parent / "shared" / "samples" / "pytorch"
DEFAULT_OUT = REPO_ROOT / "fixtures" / "expected" / "hta"

# The pair of ranks that is also analysed as one two-rank job, and the name of its output.
PAIR_FILES = (
    "hta-trace_filter-sampled_rank-0.json.gz",
    "hta-trace_filter-sampled_rank-1.json.gz",
)
PAIR_OUTPUT = "trace_filter-sampled_ranks-0-1"

# Parameters passed to HTA. These are HTA 0.5.0's documented defaults, except `ranks`, which
# HTA defaults to [0] for the per-rank analyses; we pass every rank HTA loaded.
KERNEL_BREAKDOWN_PARAMS = dict(duration_ratio=0.8, num_kernels=10, include_memory_kernels=True)
# The same analysis with the "others" grouping switched off, so that every kernel name has its
# own row (duration_ratio=1.0 never exceeds the cumulative-sum quantile; num_kernels is larger
# than any trace's number of distinct kernel names).
KERNEL_BREAKDOWN_UNGROUPED_PARAMS = dict(
    duration_ratio=1.0, num_kernels=1_000_000, include_memory_kernels=True
)
IDLE_PARAMS = dict(consecutive_kernel_delay=30, show_idle_interval_stats=True)
LAUNCH_PARAMS = dict(runtime_cutoff=50, launch_delay_cutoff=100, include_memory_events=True)

MAX_ROWS = 200  # per-kernel tables longer than this keep their top rows by total duration


# --------------------------------------------------------------------------------------------
# Plain-JSON conversion


def plain(value: Any) -> Any:
    """Converts numpy/pandas values (recursively) to plain Python; NaN and infinities to None."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, str):
        return value
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def records(df: Optional[pd.DataFrame]) -> Optional[List[Dict[str, Any]]]:
    if df is None:
        return None
    return plain(df.to_dict(orient="records"))


def top_rows(df: pd.DataFrame, by: str, limit: int = MAX_ROWS) -> Dict[str, Any]:
    """Keeps HTA's row order, but only the `limit` rows with the largest `by` when longer."""
    total = len(df)
    if total > limit:
        keep = df[by].sort_values(ascending=False, kind="stable").index[:limit]
        df = df.loc[sorted(keep)]
    return {"rows_total": total, "rows_kept": len(df), "rows": records(df)}


# --------------------------------------------------------------------------------------------
# Capturing HTA's log and Python warnings


class _ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.levelname}: {record.getMessage()}")


# HTA logs timings at WARNING level; those lines differ from run to run and are dropped.
_TIMING_RE = re.compile(r"\bseconds\b|duration=|milli seconds|Memory usage")


class Capture:
    """Collects HTA logger records (WARNING and above) and Python warnings raised meanwhile,
    except timing lines and deprecation notices."""

    def __init__(self, trace_dir: str) -> None:
        self.trace_dir = trace_dir
        self.handler = _ListHandler()
        self.messages: List[str] = []

    def __enter__(self) -> "Capture":
        logger = logging.getLogger("hta")
        logger.addHandler(self.handler)
        self._warn = warnings.catch_warnings(record=True)
        self._caught = self._warn.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc: Any) -> None:
        logging.getLogger("hta").removeHandler(self.handler)
        self._warn.__exit__(*exc)
        msgs = list(self.handler.messages)
        # Deprecation notices (pandas announcing API changes) say nothing about the figures.
        msgs += [
            f"{w.category.__name__}: {w.message}"
            for w in self._caught
            if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning))
        ]
        seen = set()
        for m in msgs:
            if _TIMING_RE.search(m):
                continue
            m = m.replace(self.trace_dir, "<trace_dir>")
            if m not in seen:
                seen.add(m)
                self.messages.append(m)


def error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if text != f"{type(exc).__name__}:" else type(exc).__name__


def error_where(exc: BaseException) -> str:
    """The innermost frame inside HTA where the exception was raised (file:line function)."""
    frames = traceback.extract_tb(exc.__traceback__)
    for fr in reversed(frames):
        if "/hta/" in fr.filename:
            rel = fr.filename[fr.filename.rfind("/hta/") + 1 :]
            return f"{rel}:{fr.lineno} {fr.name}"
    if frames:
        fr = frames[-1]
        return f"{os.path.basename(fr.filename)}:{fr.lineno} {fr.name}"
    return ""


# --------------------------------------------------------------------------------------------
# The analyses


def basic_counts(ta: Any) -> Dict[str, Any]:
    """What HTA holds per rank after TraceAnalysis loaded the trace."""
    from hta.common.trace_filter import GPUKernelFilter

    t = ta.t
    sym_table = t.symbol_table.get_sym_table()
    sym_map = t.symbol_table.get_sym_id_map()
    step_ids = {v: k for k, v in sym_map.items() if k.startswith("ProfilerStep")}

    per_rank = []
    for rank in t.get_ranks():
        df = t.get_trace(rank)
        gpu = df[df["stream"].ne(-1)]
        kernels = GPUKernelFilter()(df, t.symbol_table)
        steps = df[df["name"].isin(list(step_ids))].sort_values("ts")
        gpu_by_cat: Dict[str, int] = {}
        for cat_id, n in gpu["cat"].value_counts().items():
            gpu_by_cat[sym_table[int(cat_id)]] = int(n)
        end = df["ts"] + df["dur"]
        per_rank.append(
            {
                "rank": rank,
                "trace_file": os.path.basename(t.trace_files[rank]),
                "num_events": len(df),
                "num_cpu_events": int(df["stream"].eq(-1).sum()),
                "num_gpu_events": len(gpu),
                "num_gpu_events_by_cat": dict(sorted(gpu_by_cat.items())),
                "num_kernels": len(kernels),
                "start_ts": df["ts"].min() if len(df) else None,
                "end_ts": end.max() if len(df) else None,
                "trace_duration": t.get_trace_duration(rank) if len(df) else None,
                "iterations": t.get_iterations(rank),
                "profiler_step_events": [
                    {"name": sym_table[int(r.name)], "ts": r.ts, "dur": r.dur}
                    for r in steps[["name", "ts", "dur"]].itertuples(index=False)
                ],
            }
        )
    return {
        "min_ts": t.min_ts,
        "profiler_step_symbols": sorted(step_ids.values()),
        "profiler_steps": ta.get_profiler_steps(),
        "per_rank": per_rank,
    }


def temporal_breakdown(ta: Any) -> Dict[str, Any]:
    return {"rows": records(ta.get_temporal_breakdown(visualize=False))}


def kernel_breakdown(params: Dict[str, Any]) -> Callable[[Any], Dict[str, Any]]:
    def run(ta: Any) -> Dict[str, Any]:
        kernel_type_df, kernel_df = ta.get_gpu_kernel_breakdown(visualize=False, **params)
        return {
            "parameters": dict(params),
            "kernel_type_breakdown": records(kernel_type_df),
            "kernel_breakdown": top_rows(kernel_df.reset_index(drop=True), "sum (us)"),
        }

    return run


def idle_time_breakdown(ta: Any) -> Dict[str, Any]:
    ranks = ta.t.get_ranks()
    idle_df, stats_df = ta.get_idle_time_breakdown(
        ranks=ranks, visualize=False, visualize_pctg=False, **IDLE_PARAMS
    )
    if stats_df is not None:
        stats_df = stats_df.reset_index()
    return {
        "parameters": dict(IDLE_PARAMS, ranks=ranks),
        "rows": records(idle_df.reset_index(drop=True)),
        "interval_stats": records(stats_df),
    }


def comm_comp_overlap(ta: Any) -> Dict[str, Any]:
    return {"rows": records(ta.get_comm_comp_overlap(visualize=False))}


def _col_summary(s: pd.Series) -> Dict[str, Any]:
    return {
        "sum": s.sum(),
        "mean": s.mean() if len(s) else None,
        "min": s.min() if len(s) else None,
        "max": s.max() if len(s) else None,
    }


def cuda_kernel_launch_stats(ta: Any) -> Dict[str, Any]:
    ranks = ta.t.get_ranks()
    result = ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False, **LAUNCH_PARAMS)
    rc, lc = LAUNCH_PARAMS["runtime_cutoff"], LAUNCH_PARAMS["launch_delay_cutoff"]
    per_rank = []
    for rank in ranks:
        df = result[rank]
        # The three categories are those HTA plots in
        # CudaKernelAnalysis.visualize_cuda_launch_kernel_info (it only plots them).
        short = (df["cpu_duration"] <= rc) & (df["gpu_duration"] < df["cpu_duration"])
        per_rank.append(
            {
                "rank": rank,
                "num_launches": len(df),
                "short_kernels": int(short.sum()),
                "runtime_outliers": int((df["cpu_duration"] > rc).sum()),
                "launch_delay_outliers": int((df["launch_delay"] > lc).sum()),
                "cpu_duration": _col_summary(df["cpu_duration"]),
                "gpu_duration": _col_summary(df["gpu_duration"]),
                "launch_delay": _col_summary(df["launch_delay"]),
            }
        )
    return {
        "parameters": dict(LAUNCH_PARAMS, ranks=ranks),
        "definitions": {
            "short_kernels": "cpu_duration <= runtime_cutoff and gpu_duration < cpu_duration",
            "runtime_outliers": "cpu_duration > runtime_cutoff",
            "launch_delay_outliers": "launch_delay > launch_delay_cutoff",
        },
        "per_rank": per_rank,
    }


ANALYSES = [
    ("basic_counts", basic_counts),
    ("temporal_breakdown", temporal_breakdown),
    ("gpu_kernel_breakdown", kernel_breakdown(KERNEL_BREAKDOWN_PARAMS)),
    ("gpu_kernel_breakdown_ungrouped", kernel_breakdown(KERNEL_BREAKDOWN_UNGROUPED_PARAMS)),
    ("idle_time_breakdown", idle_time_breakdown),
    ("comm_comp_overlap", comm_comp_overlap),
    ("cuda_kernel_launch_stats", cuda_kernel_launch_stats),
]


# --------------------------------------------------------------------------------------------
# Driving one job (one directory of trace files)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def raw_event_count(path: Path) -> Optional[int]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        events = json.loads(fh.read()).get("traceEvents")
    return len(events) if isinstance(events, list) else None


def versions() -> Dict[str, str]:
    return {
        "hta_version": metadata.version("HolisticTraceAnalysis"),
        "pandas_version": pd.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
    }


def run_job(name: str, files: Sequence[Path]) -> Dict[str, Any]:
    from hta.trace_analysis import TraceAnalysis

    out: Dict[str, Any] = dict(versions())
    out["generator"] = "tests/hta/reference.py"
    out["samples"] = [
        {"file": f.name, "sha256": sha256(f), "raw_trace_events": raw_event_count(f)}
        for f in files
    ]
    out["api"] = "hta.trace_analysis.TraceAnalysis(trace_dir=<dir holding only these files>)"

    tmp = tempfile.mkdtemp(prefix="hta-ref-")
    try:
        for f in files:
            os.symlink(f.resolve(), os.path.join(tmp, f.name))
        with Capture(tmp) as cap:
            try:
                ta = TraceAnalysis(trace_dir=tmp)
                load_error = None
            except Exception as exc:  # HTA could not load the trace at all
                ta, load_error = None, exc
        load: Dict[str, Any] = {"warnings": cap.messages}
        if load_error is None:
            load["ok"] = True
            load["ranks"] = {
                os.path.basename(p): r for r, p in sorted(ta.t.trace_files.items())
            }
            print(f"{name} load: ok (ranks {ta.t.get_ranks()})")
        else:
            load["ok"] = False
            load["error"] = error_text(load_error)
            load["error_at"] = error_where(load_error)
            print(f"{name} load: ERROR {load['error']}")
        out["load"] = load

        for aname, func in ANALYSES:
            if ta is None:
                entry = {"error": f"not run: HTA failed to load the trace ({load['error']})"}
                print(f"{name} {aname}: ERROR {entry['error']}")
            else:
                with Capture(tmp) as cap:
                    try:
                        entry = func(ta)
                        status = "ok"
                    except Exception as exc:
                        entry = {"error": error_text(exc), "error_at": error_where(exc)}
                        status = f"ERROR {entry['error']} (at {entry['error_at']})"
                if cap.messages:
                    entry["warnings"] = cap.messages
                print(f"{name} {aname}: {status}")
            out[aname] = plain(entry)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def sample_stem(path: Path) -> str:
    n = path.name
    for suffix in (".json.gz", ".json", ".gz"):
        if n.endswith(suffix):
            return n[: -len(suffix)]
    return n


def collect(paths: Sequence[str]) -> List[Path]:
    found: List[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found += sorted(
                c for c in path.iterdir()
                if c.is_file() and (c.name.endswith(".json.gz") or c.name.endswith(".json"))
            )
        elif path.is_file():
            found.append(path)
        else:
            raise SystemExit(f"no such file or directory: {p}")
    return found


def write(out_dir: Path, stem: str, data: Dict[str, Any]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.json"
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, allow_nan=False, ensure_ascii=False)
        fh.write("\n")
    return path


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help=f"trace files or directories (default {DEFAULT_SAMPLES})")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help=f"output directory (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)

    # HTA logs through the "hta" logger; keep its chatter off the terminal (Capture records it).
    hta_logger = logging.getLogger("hta")
    hta_logger.propagate = False
    hta_logger.addHandler(logging.NullHandler())

    files = collect(args.paths or [str(DEFAULT_SAMPLES)])
    out_dir = Path(args.out)
    print(f"HTA {metadata.version('HolisticTraceAnalysis')}, pandas {pd.__version__}; "
          f"{len(files)} sample(s) -> {out_dir}")

    jobs = [(sample_stem(f), [f]) for f in files]
    by_name = {f.name: f for f in files}
    if all(n in by_name for n in PAIR_FILES):
        jobs.append((PAIR_OUTPUT, [by_name[n] for n in PAIR_FILES]))

    for stem, job_files in jobs:
        data = run_job(stem, job_files)
        path = write(out_dir, stem, data)
        print(f"{stem} -> {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
