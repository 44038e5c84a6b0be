#!/usr/bin/env python3
"""Reference figures from Holistic Trace Analysis (HTA) 0.5.0's TraceDiff for a control/test pair.

Runs `hta.trace_diff.TraceDiff.compare_traces` (and `TraceDiff.ops_diff`) on two PyTorch
(Kineto) traces, each copied into a temporary directory of its own (HTA loads traces from a
directory), and writes what HTA computes to
fixtures/expected/hta/trace_diff-control-test.json.

Usage (from the repository root, with HTA installed in its own virtualenv, whose python
XLENS_HTA_PYTHON names; see tests/hta/README.md):

    ${XLENS_HTA_PYTHON:-python3} tests/hta/trace_diff_reference.py [--out FILE] [CONTROL TEST]

CONTROL and TEST default to ../shared/samples/pytorch/hta-trace_diff-control.json.gz and
../shared/samples/pytorch/hta-trace_diff-test.json.gz relative to the repository root.

HTA is called with its defaults: `control_rank=test_rank=None` (the first rank HTA found in
each directory), `control_iteration=test_iteration=None` (the smallest ProfilerStep#<n> number
of each trace), `device_type=DeviceType.ALL` (CPU and GPU events), `use_short_name=False`
(rows keyed by the full event name). The traces are wrapped as
`LabeledTrace(label="Control"|"Test", trace_dir=...)`, exactly what HTA does itself when given
two directories, so HTA's column names are `Control_*` and `Test_*`. A second table keyed by
HTA's `shorten_name` (`use_short_name=True`) is also written.

Output fields (HTA's own terms; see tests/hta/TRACE_DIFF.md for how they are computed):

- `hta_version`, `pandas_version`, `numpy_version`, `python_version`, `generator`.
- `control`, `test`: `file`, `sha256`, `raw_trace_events` (length of traceEvents), `label`,
  `rank` (the rank used: HTA's first rank, read from `"rank": N` in the file), `iteration`
  (the iteration used), `iterations` (all ProfilerStep numbers HTA found), `loaded_events`
  (rows HTA holds for that rank; it does not drop the last step here), `extracted_events`
  (rows `LabeledTrace.extract_ops` selected: that rank, that iteration, all device types) and
  `extracted_events_by_cat`.
- `parameters`: the arguments of `compare_traces` as resolved.
- `columns`: HTA's column names in HTA's order (the index column `name` first).
- `compare_traces.rows`: one record per op name, every column HTA returns; sorted by `name`
  (Python string order, i.e. Unicode code point order). The columns:
    - `name`: the event name (the DataFrame index).
    - `Control_counts` / `Test_counts`: number of events with that name in the control / test
      selection (0 when absent). Floats in HTA (float64 after its outer join + fillna(0)).
    - `Control_total_duration` / `Test_total_duration`: sum of those events' `dur`, in trace
      microseconds (0 when absent). Floats too.
    - `diff_counts` = `Test_counts - Control_counts`.
    - `diff_duration` = `Test_total_duration - Control_total_duration`.
    - `counts_change_categories`: `"+"` when diff_counts > 0, `"-"` when < 0, `"="` when 0.
  `compare_traces.row_count` and `compare_traces.counts_change_categories` (rows per category).
- `compare_traces_short_name`: the same with `use_short_name=True`; the key column is
  `short_name` and rows whose full names shorten to the same string are summed.
- `name_categories`: for each name, the trace event category (`cat`) HTA grouped it under in
  `get_ops_summary` (control's, else test's); not part of HTA's output table, but HTA's own
  grouping, so that CPU-only and GPU-only subsets can be read off the table.
- `ops_diff`: `TraceDiff.ops_diff` with the same defaults: lists of names (sorted) for
  `added` (control 0, test > 0), `deleted` (control > 0, test 0), `increased` (control > 0 and
  diff > 0), `decreased` (test > 0 and diff < 0), `unchanged` (test > 0 and diff == 0), and
  `counts` (list lengths).
- `warnings`: HTA's WARNING log lines and Python warnings (timing lines dropped).

Values are exactly what HTA computes: nothing is rounded. NaN would be written as null.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd

sys.dont_write_bytecode = True  # leave no __pycache__ next to the scripts
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference import Capture, plain, raw_event_count, sha256, versions  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SAMPLES = REPO_ROOT.parent / "shared" / "samples" / "pytorch"
DEFAULT_CONTROL = DEFAULT_SAMPLES / "hta-trace_diff-control.json.gz"
DEFAULT_TEST = DEFAULT_SAMPLES / "hta-trace_diff-test.json.gz"
DEFAULT_OUT = REPO_ROOT / "fixtures" / "expected" / "hta" / "trace_diff-control-test.json"

LABELS = ("Control", "Test")  # the labels HTA itself gives two trace directories


def table(df: pd.DataFrame) -> Dict[str, Any]:
    """The whole DataFrame as records (index column first), sorted by the index value."""
    key = df.index.name
    flat = df.reset_index()
    flat = flat.sort_values(key, kind="stable").reset_index(drop=True)
    cats = flat["counts_change_categories"].value_counts()
    return {
        "row_count": len(flat),
        "columns": list(flat.columns),
        "counts_change_categories": {c: int(cats.get(c, 0)) for c in ("+", "-", "=")},
        "rows": plain(flat.to_dict(orient="records")),
    }


def trace_info(path: Path, lt: Any, ops: pd.DataFrame) -> Dict[str, Any]:
    rank = lt.ranks()[0]
    s_tab = lt.s_tab
    by_cat = ops["cat"].map(lambda i: s_tab[i]).value_counts()
    return {
        "file": path.name,
        "sha256": sha256(path),
        "raw_trace_events": raw_event_count(path),
        "label": lt.label,
        "rank": rank,
        "ranks": lt.ranks(),
        "iteration": lt.iterations()[0],
        "iterations": lt.iterations(),
        "loaded_events": len(lt.t.get_trace(rank)),
        "extracted_events": len(ops),
        "extracted_events_by_cat": {str(k): int(v) for k, v in sorted(by_cat.items())},
    }


def run(control: Path, test: Path) -> Dict[str, Any]:
    from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff

    out: Dict[str, Any] = dict(versions())
    out["generator"] = "tests/hta/trace_diff_reference.py"
    out["api"] = (
        "hta.trace_diff.TraceDiff.compare_traces(LabeledTrace('Control', trace_dir=<dir with "
        "only the control file>), LabeledTrace('Test', trace_dir=<dir with only the test "
        "file>)) with default arguments"
    )
    tmp = tempfile.mkdtemp(prefix="hta-tracediff-")
    try:
        dirs = []
        for label, f in zip(LABELS, (control, test)):
            d = os.path.join(tmp, label.lower())
            os.mkdir(d)
            shutil.copyfile(f, os.path.join(d, f.name))
            dirs.append(d)
        with Capture(tmp) as cap:
            lc = LabeledTrace(label=LABELS[0], trace_dir=dirs[0])
            lt = LabeledTrace(label=LABELS[1], trace_dir=dirs[1])
            c_ops = lc.extract_ops(None, None, DeviceType.ALL)
            t_ops = lt.extract_ops(None, None, DeviceType.ALL)
            full = TraceDiff.compare_traces(lc, lt)
            short = TraceDiff.compare_traces(lc, lt, use_short_name=True)
            od = TraceDiff.ops_diff(lc, lt)
        out["control"] = trace_info(control, lc, c_ops)
        out["test"] = trace_info(test, lt, t_ops)
        out["parameters"] = {
            "control_rank": None,
            "test_rank": None,
            "control_iteration": None,
            "test_iteration": None,
            "device_type": "DeviceType.ALL",
            "use_short_name": False,
            "resolved": {
                "control_rank": out["control"]["rank"],
                "test_rank": out["test"]["rank"],
                "control_iteration": out["control"]["iteration"],
                "test_iteration": out["test"]["iteration"],
            },
        }
        out["compare_traces"] = table(full)
        out["compare_traces_short_name"] = table(short)
        cats: Dict[str, str] = {}
        for lab in (lt, lc):  # control's category wins when both have the name
            summary = lab.get_ops_summary(lab.extract_ops(None, None, DeviceType.ALL))
            cats.update(dict(zip(summary["name"], summary["cat"])))
        out["name_categories"] = {k: cats[k] for k in sorted(cats)}
        out["ops_diff"] = {k: sorted(v) for k, v in od.items()}
        out["ops_diff"]["counts"] = {k: len(v) for k, v in od.items()}
        out["warnings"] = cap.messages
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return plain(out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("control", nargs="?", default=str(DEFAULT_CONTROL), help="control trace")
    ap.add_argument("test", nargs="?", default=str(DEFAULT_TEST), help="test trace")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help=f"output file (default {DEFAULT_OUT})")
    args = ap.parse_args(argv)

    hta_logger = logging.getLogger("hta")
    hta_logger.propagate = False
    hta_logger.addHandler(logging.NullHandler())

    control, test = Path(args.control), Path(args.test)
    for p in (control, test):
        if not p.is_file():
            raise SystemExit(f"no such file: {p}")
    data = run(control, test)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as fh:
        json.dump(data, fh, indent=1, allow_nan=False, ensure_ascii=False)
        fh.write("\n")
    ct = data["compare_traces"]
    print(
        f"HTA {data['hta_version']}: {ct['row_count']} rows "
        f"({ct['counts_change_categories']}), ops_diff {data['ops_diff']['counts']} "
        f"-> {os.path.relpath(out)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
