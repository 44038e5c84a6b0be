#!/usr/bin/env python3
"""The Python API against the command line, side by side on the same file.

For each FILE:
* CLI first answer: a fresh `xlens tool op_profile FILE --json` process, start to exit.
* Python: a fresh interpreter that imports pyarrow and pandas, then xlens, opens FILE and makes
  the op profile a pandas DataFrame (`xlens.open(FILE).table("op_profile").to_pandas()`): the
  whole process, start to exit, and inside it from `import xlens` on (pyarrow and pandas
  imported, as in a notebook; their import time is reported apart).
* A table of at least 1M rows (`trace_events` over a window holding that many events): the
  time to get it as a pyarrow.Table, the bytes pyarrow allocated for it (0 when the Rust buffers
  are shared, not copied), and the time of `.to_pandas()`.

Best of --reps runs each. Usage, with a Python that has the xlens wheel, pyarrow and pandas:
  ${XLENS_WHEEL_PYTHON:-python3} benches/python_api.py FILE... [--xlens target/release/xlens] [--reps 3]
(--python PY runs the measured interpreters with another Python than the one running this.)
"""

import argparse
import json
import subprocess
import sys
import time

PY_FIRST = r"""
import sys, time, json
t0 = time.perf_counter()
import pyarrow, pandas  # what a notebook has imported already
t1 = time.perf_counter()
import xlens
r = xlens.open(sys.argv[1])
df = r.table("op_profile").to_pandas()
t2 = time.perf_counter()
print(json.dumps({"in_process_s": t2 - t1, "imports_s": t1 - t0, "rows": len(df)}))
"""

PY_TABLE = r"""
import sys, time, json
import pyarrow as pa
import xlens
r = xlens.open(sys.argv[1])
want = int(sys.argv[2])
# A window from the trace's start holding about `want` events: widen until it does.
v = r.tool("trace_viewer", width=1)
s, e = v["span_start_ps"], v["span_end_ps"]
frac = min(1.0, want / max(1, v["total_events"]) * 1.1)
end = s + int((e - s) * frac)
before = pa.total_allocated_bytes()
t0 = time.perf_counter()
t = r.table("trace_events", start_ps=s, end_ps=end)
t_table = time.perf_counter() - t0
allocated = pa.total_allocated_bytes() - before
t0 = time.perf_counter()
df = t.to_pandas()
t_pandas = time.perf_counter() - t0
print(json.dumps({"rows": t.num_rows, "table_s": t_table, "pyarrow_allocated_bytes": allocated,
                  "arrow_bytes": t.nbytes, "to_pandas_s": t_pandas}))
"""


def timed(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{cmd[:3]} failed: {p.stderr[-2000:]}")
    return dt, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--xlens", default="target/release/xlens")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--table-rows", type=int, default=1_000_000)
    a = ap.parse_args()
    out = []
    for f in a.files:
        cli = min(timed([a.xlens, "tool", "op_profile", f, "--json"])[0] for _ in range(a.reps))
        runs = [timed([a.python, "-c", PY_FIRST, f]) for _ in range(a.reps)]
        py_wall = min(r[0] for r in runs)
        inner = min(json.loads(r[1])["in_process_s"] for r in runs)
        imports = min(json.loads(r[1])["imports_s"] for r in runs)
        row = {"file": f, "cli_first_answer_s": round(cli, 3), "python_process_s": round(py_wall, 3),
               "python_in_process_s": round(inner, 3), "pyarrow_pandas_import_s": round(imports, 3), "ratio_process": round(py_wall / cli, 2),
               "ratio_in_process": round(inner / cli, 2)}
        tables = [json.loads(timed([a.python, "-c", PY_TABLE, f, str(a.table_rows)])[1]) for _ in range(a.reps)]
        if tables[0]["rows"] >= a.table_rows:
            best = min(tables, key=lambda t: t["table_s"])
            row["table"] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in best.items()}
        out.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
