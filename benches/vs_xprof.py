#!/usr/bin/env python3
"""Side-by-side benchmark: xlens against XProf on the same profile, same machine.

For each tool, both sides start cold in a fresh process:
  * XProf: a new Python process calls `xprof.convert.raw_to_tool_data.xspace_to_tool_data` on a
    hard link of the file in a fresh, empty run directory (so no cache XProf writes next to the
    file carries over); the time is that call's wall time (imports excluded).
  * xlens: a new `xlens bench FILE --tool T --reps 1 --json` process; the time is its first answer
    (finding the file, then read + decode + tool).
Each side runs --reps times, the two sides taking turns; the table gives the median and the
range, and the ratio of medians.

Usage (with a Python that has `xprof`, e.g. `.ci-venv/bin/python`, which `.ci/run` makes):
  ${XLENS_XPROF_PYTHON:-.ci-venv/bin/python} benches/vs_xprof.py PROFILE.xplane.pb [--reps 3]
      [--tools overview_page,op_profile,hlo_stats,roofline_model] [--xlens target/release/xlens]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, logging, sys, time
logging.disable(logging.CRITICAL)
from xprof.convert import raw_to_tool_data as conv
path, tool = sys.argv[1], sys.argv[2]
params = {'group_by': 'program'} if tool == 'op_profile' else {}
t0 = time.perf_counter()
data, _ = conv.xspace_to_tool_data([path], tool, params)
dt = time.perf_counter() - t0
print(json.dumps({'s': dt, 'bytes': len(data or b'')}))
"""


def xprof_once(python, path, tool):
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, 'plugins', 'profile', 'run')
        os.makedirs(run)
        dst = os.path.join(run, os.path.basename(path))
        try:
            os.link(path, dst)
        except OSError:
            import shutil
            shutil.copyfile(path, dst)
        out = subprocess.run([python, '-c', CHILD, dst, tool], capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])['s']


def xlens_once(xlens, path, tool):
    out = subprocess.run([xlens, 'bench', path, '--tool', tool, '--reps', '1', '--json'],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)['first_response_s']


def fmt(v):
    return f'{statistics.median(v):.3f} s ({min(v):.3f}–{max(v):.3f})'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('profile')
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--tools', default='overview_page,op_profile,hlo_stats,roofline_model')
    ap.add_argument('--xlens', default=os.path.join(os.path.dirname(__file__), '..', 'target',
                                                    'release', 'xlens'))
    ap.add_argument('--python', default=sys.executable, help='a Python with xprof installed')
    a = ap.parse_args()
    path = os.path.abspath(a.profile)
    print(f'{path}: {os.path.getsize(path):,} bytes, {a.reps} cold runs per side and tool\n')
    print('| tool | xlens first answer, median (range) | XProf cold, median (range) | ratio |')
    print('|---|---|---|---|')
    for tool in a.tools.split(','):
        # Alternating, so that both sides run in the same conditions (page cache, free memory).
        x, p = [], []
        for _ in range(a.reps):
            x.append(xlens_once(a.xlens, path, tool))
            p.append(xprof_once(a.python, path, tool))
        ratio = statistics.median(p) / statistics.median(x)
        print(f'| {tool} | {fmt(x)} | {fmt(p)} | {ratio:.1f}× |', flush=True)


if __name__ == '__main__':
    main()
