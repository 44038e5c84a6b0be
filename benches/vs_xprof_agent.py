#!/usr/bin/env python3
"""Side-by-side benchmark: xlens's agent commands against XProf's agent CLI (`xprof`, from
`pip install xprof`) on the same session, each in a fresh process, wall time of the whole
command (process start included, as an agent waits for it), taking turns:
  * cold: `xprof CMD --session_id S --logdir L --bypass_cache=True` against
    `xlens tool T SESSION_DIR --json --fresh`;
    With --first-call, each cold xprof call gets a fresh copy of the session (XProf writes
    `*.hlo_proto.pb` files beside the profile on its first call and reads those later, even with
    --bypass_cache=True; a first call is what an agent meets on a new profile);
  * again: `xprof CMD ...` without --bypass_cache after one call has filled its cache, against
    `xlens tool T SESSION_DIR --json` after one call has kept its answer.
XProf writes files next to the profiles it reads, so the session is copied to a temporary log
directory first (both sides read the copy). Prints the medians and the ratios.

Usage (with the xprof command of a Python that has xprof 2.24+):
  python3 benches/vs_xprof_agent.py SESSION_DIR [--reps 3] [--xprof xprof] [--xlens target/release/xlens]
e.g. on the profiles of ../shared/tools/gen/make_profiles.sh medium large (jax_medium, jax_large).
"""

import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time

# xprof command -> xlens tool
COMMANDS = [
    ("get_kpi_metrics", "kpi"),
    ("list_hlo_modules", "hlo_modules"),
    ("aggregate_xplane_events", "events"),
    ("get_step_trace", "step_trace"),
    ("get_peak_allocations", "peak_allocations"),
    ("analyze_async_overlap", "async_overlap"),
    ("list_xplane_lines", "capture_check"),
]
# Commands that keep no cached answer and take no --bypass_cache.
NO_BYPASS = {"list_xplane_lines"}


def timed(args, env=None):
    t0 = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("session")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--xprof", default="xprof")
    ap.add_argument("--xlens", default="target/release/xlens")
    ap.add_argument("--only", action="append", help="only these xlens tools (repeatable)")
    ap.add_argument("--first-call", action="store_true",
                    help="each cold xprof call on a fresh copy of the session")
    a = ap.parse_args()
    src = pathlib.Path(a.session).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        name = src.name
        logdir = pathlib.Path(tmp)
        copy = logdir / "plugins/profile" / name
        shutil.copytree(src, copy)
        env = dict(os.environ, XLENS_CACHE_DIR=str(logdir / "xlens-cache"))
        size = sum(f.stat().st_size for f in copy.iterdir()) / 1e6
        print(f"{name}: {size:.0f} MB")
        for cmd, tool in COMMANDS:
            if a.only and tool not in a.only:
                continue
            xp = [a.xprof, cmd, f"--session_id={name}", f"--logdir={logdir}"]
            xl = [a.xlens, "tool", tool, str(copy), "--json"]
            bypass = [] if cmd in NO_BYPASS else ["--bypass_cache=True"]
            cold_xp, cold_xl, again_xp, again_xl = [], [], [], []
            for i in range(a.reps):
                if a.first_call:
                    fresh = logdir / f"first{cmd}{i}"
                    shutil.copytree(src, fresh / "plugins/profile" / name)
                    first = [a.xprof, cmd, f"--session_id={name}", f"--logdir={fresh}"]
                    cold_xp.append(timed(first + bypass, env))
                    shutil.rmtree(fresh)
                else:
                    cold_xp.append(timed(xp + bypass, env))
                cold_xl.append(timed(xl + ["--fresh"], env))
            timed(xp, env)
            timed(xl, env)
            for _ in range(a.reps):
                again_xp.append(timed(xp, env))
                again_xl.append(timed(xl, env))
            m = statistics.median
            print(
                f"  {cmd:18} cold: xprof {m(cold_xp):7.2f} s, xlens {m(cold_xl):6.3f} s "
                f"({m(cold_xp) / m(cold_xl):5.1f}x); again: xprof {m(again_xp):6.3f} s, "
                f"xlens {m(again_xl) * 1000:5.1f} ms ({m(again_xp) / m(again_xl):5.1f}x)"
            )


if __name__ == "__main__":
    main()
