#!/usr/bin/env python3
"""Side-by-side benchmark: xlens against the PyTorch TensorBoard plugin (torch-tb-profiler) on
the same PyTorch traces: the overview, operator and kernel views.

Both sides start cold in fresh processes, taking turns, per trace, and time themselves in the
process (imports and process start excluded, as benches/vs_hta.py does):
  * the plugin: reading the file (gzip + json, as its loader does) plus
    `RunProfileData.from_json` (its parse, process and analyze, which build the overview,
    operator and kernel views at once).
  * xlens, two ways:
    - "one process": `xlens bench FILE --tool overview_page --reps 1 --then-all --json`: the
      first answer (find, read, decode, overview) plus the first `pytorch_operators` and
      `pytorch_kernels` answers on the same open profile (as the server answers them);
    - "three processes": `xlens bench FILE --tool T --reps 1 --json` for each of the three
      tools, each a first answer (find, read, decode, tool): their sum.
Prints per trace the median of each and the ratios of medians.

Usage (with a Python that has `torch-tb-profiler tensorboard pandas`, e.g. the venv of
tests/tb_profiler/README.md, whose python XLENS_TB_PYTHON names):
  python3 benches/vs_tb_profiler.py TRACE.json.gz ... [--reps 5] [--xlens target/release/xlens]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import gzip, json, logging, sys, time, warnings
logging.disable(logging.CRITICAL)
warnings.filterwarnings("ignore")
from torch_tb_profiler.profiler.data import RunProfileData
t0 = time.perf_counter()
with gzip.open(sys.argv[1], 'rt') if sys.argv[1].endswith('.gz') else open(sys.argv[1]) as f:
    trace = json.load(f)
d = RunProfileData.from_json('worker', 'span', trace)
dt = time.perf_counter() - t0
print(json.dumps({'s': dt, 'steps': len(d.steps_costs)}))
"""

TOOLS = ["overview_page", "pytorch_operators", "pytorch_kernels"]


def plugin_once(python, path):
    out = subprocess.run([python, "-c", CHILD, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["s"]


def bench(xlens, path, tool, then_all=False):
    args = [xlens, "bench", path, "--tool", tool, "--reps", "1", "--json"]
    if then_all:
        args.append("--then-all")
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def xlens_one_process(xlens, path):
    r = bench(xlens, path, TOOLS[0], then_all=True)
    then = {t["tool"]: t["s"] for t in r["then"]}
    return r["first_response_s"] + sum(then[t] for t in TOOLS[1:])


def xlens_three_processes(xlens, path):
    return sum(bench(xlens, path, t)["first_response_s"] for t in TOOLS)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--xlens", default="target/release/xlens")
    ap.add_argument("--python", default=os.environ.get("XLENS_TB_PYTHON", sys.executable))
    a = ap.parse_args()
    print(f"{'trace':<50} {'MB gz':>6} {'plugin s':>9} {'one s':>7} {'ratio':>6} {'three s':>8} {'ratio':>6}")
    for path in a.traces:
        plugin, one, three = [], [], []
        for _ in range(a.reps):
            plugin.append(plugin_once(a.python, path))
            one.append(xlens_one_process(a.xlens, path))
            three.append(xlens_three_processes(a.xlens, path))
        p, o, t = (statistics.median(v) for v in (plugin, one, three))
        size = os.path.getsize(path) / 1e6
        print(f"{os.path.basename(path)[:50]:<50} {size:>6.2f} {p:>9.3f} {o:>7.3f} {p / o:>5.1f}x"
              f" {t:>8.3f} {p / t:>5.1f}x   (plugin {min(plugin):.3f}-{max(plugin):.3f})")


if __name__ == "__main__":
    main()
