#!/usr/bin/env python3
"""Side-by-side benchmark: xlens against Holistic Trace Analysis on the same PyTorch trace.

Both sides start cold in a fresh process, taking turns:
  * HTA: a new Python process times `TraceAnalysis(trace_dir=DIR)` (reading and parsing the
    trace) plus `get_temporal_breakdown(visualize=False)`, imports excluded; DIR is a fresh
    folder holding a link to the file (HTA loads every trace of a folder as ranks).
  * xlens: a new `xlens bench FILE --tool temporal_breakdown --reps 1 --json` process; the time
    is its first answer (finding the file, then read + decode + tool + JSON).
Prints the median and range per side and the ratio of medians, and xlens's import throughput
(MB/s of uncompressed JSON; for a large .json.gz, parsed while it inflates, the inflating is
counted in it) and peak RSS over the JSON's size. Then the import throughput of a full read
(every event and arg, `--tool report`): cold (one import in a fresh process, as a first answer)
and warm (the median of ten imports in one process, which keeps its memory). Last, a check of
the machine's speed before and after the rounds (`machine_check`), to tell which state of a VM
that changes speed the figures were taken in.

Usage (with a Python that has `holistictraceanalysis`, e.g. the venv of tests/hta/README.md,
whose python XLENS_HTA_PYTHON names):
  ${XLENS_HTA_PYTHON:-python3} benches/vs_hta.py TRACE.json[.gz] [--reps 5] [--xlens target/release/xlens]
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, logging, sys, time, warnings
logging.disable(logging.CRITICAL)
warnings.filterwarnings("ignore")
from hta.trace_analysis import TraceAnalysis
d = sys.argv[1]
t0 = time.perf_counter()
a = TraceAnalysis(trace_dir=d)
df = a.get_temporal_breakdown(visualize=False)
dt = time.perf_counter() - t0
print(json.dumps({'s': dt, 'rows': len(df)}))
"""


def hta_once(python, path):
    with tempfile.TemporaryDirectory() as tmp:
        dst = os.path.join(tmp, os.path.basename(path))
        try:
            os.link(path, dst)
        except OSError:
            import shutil
            shutil.copyfile(path, dst)
        out = subprocess.run([python, '-c', CHILD, tmp], capture_output=True, text=True,
                             check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])['s']


def machine_check():
    """How quick this machine is right now, by two fixed workloads timed in this process: a zlib
    inflate of 8 MB of trace-like JSON (one core's speed) and a first write to each page of 64 MB
    of fresh memory (what page faults cost: on a VM whose freed memory goes back to its host they
    cost several times what they do on bare metal, and vary). Medians of five and of three, in ms.
    A VM can move between speeds within minutes; printed before and after the rounds, they say
    which state the figures between were taken in. Then `off_cpu`: how much of the time two
    processes that only read the clock were kept off their cores (see `off_cpu`)."""
    import mmap
    import random
    import time
    import zlib
    rng = random.Random(7)
    text = json.dumps([{'ph': 'X', 'cat': 'kernel', 'name': f'k{rng.randrange(500)}',
                        'pid': 0, 'tid': 7, 'ts': 1.7e12 + i * rng.random(),
                        'dur': rng.random() * 50, 'args': {'correlation': i}}
                       for i in range(56000)]).encode()[:8 << 20]
    packed = zlib.compress(text, 6)
    inflate = []
    for _ in range(5):
        t = time.perf_counter()
        zlib.decompress(packed)
        inflate.append((time.perf_counter() - t) * 1e3)
    touch = []
    for _ in range(3):
        m = mmap.mmap(-1, 64 << 20)
        t = time.perf_counter()
        for off in range(0, 64 << 20, mmap.PAGESIZE):
            m[off] = 1
        touch.append((time.perf_counter() - t) * 1e3)
        m.close()
    return statistics.median(inflate), len(text) / 1e6, statistics.median(touch), off_cpu()


def _spin(seconds, out):
    """Reads the clock for `seconds`; puts the share of the time spent in gaps over 0.2 ms
    between two reads (this process was off its core) and the reads per millisecond outside them
    (how quick the core is while it runs)."""
    import time
    clock = time.perf_counter_ns
    start = prev = clock()
    end = start + int(seconds * 1e9)
    off = reads = 0
    while prev < end:
        t = clock()
        if t - prev > 200_000:
            off += t - prev
        reads += 1
        prev = t
    total = prev - start
    out.put((off / total, reads / ((total - off) / 1e6)))


def off_cpu(seconds=1.0):
    """Two processes (one per core of a 2-core machine) read the clock for `seconds`: the mean
    share of that time they were off their cores, and their reads per running millisecond. With
    nothing else running, time off the cores is time the host did not run this VM's processors
    (a VM's steal time, which a guest does not always see as such); a slower core at the same
    share shows in fewer reads."""
    import multiprocessing
    q = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=_spin, args=(seconds, q)) for _ in range(2)]
    for p in ps:
        p.start()
    got = [q.get() for _ in ps]
    for p in ps:
        p.join()
    return statistics.mean(g[0] for g in got), statistics.mean(g[1] for g in got)


def xlens_once(xlens, path, tool='temporal_breakdown', reps=1):
    out = subprocess.run([xlens, 'bench', path, '--tool', tool, '--reps', str(reps), '--json'],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('trace')
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--xlens', default='target/release/xlens')
    a = ap.parse_args()
    opener = gzip.open if a.trace.endswith('.gz') else open
    with opener(a.trace, 'rb') as f:
        json_bytes = len(f.read())
    before = machine_check()
    hta, xl, mbps, rss = [], [], [], []
    with_read = False
    for i in range(a.reps):
        order = ['hta', 'xlens'] if i % 2 == 0 else ['xlens', 'hta']
        for side in order:
            if side == 'hta':
                hta.append(hta_once(sys.executable, a.trace))
            else:
                d = xlens_once(a.xlens, a.trace)
                xl.append(d['first_response_s'])
                mbps.append(json_bytes / 1e6 / d['decode_s'])
                with_read = with_read or d.get('read_with_decode', False)
                rss.append(d['peak_rss_bytes'] / json_bytes)
    med = statistics.median
    print(f"{a.trace}: {json_bytes:,} bytes of JSON, {a.reps} cold runs per side")
    print(f"| xlens first answer | HTA load + temporal breakdown | ratio |")
    print(f"|---|---|---|")
    print(f"| {med(xl):.3f} s ({min(xl):.3f}-{max(xl):.3f}) | {med(hta):.2f} s "
          f"({min(hta):.2f}-{max(hta):.2f}) | {med(hta) / med(xl):.1f}x |")
    what = "import, inflating included" if with_read else "import"
    print(f"xlens {what}: {med(mbps):.0f} MB/s of JSON (median; {min(mbps):.0f}-{max(mbps):.0f}); "
          f"peak RSS {med(rss):.2f}x the JSON")
    cold, warm, full_rss = [], [], []
    for _ in range(a.reps):
        d = xlens_once(a.xlens, a.trace, 'report', 1)
        cold.append(json_bytes / 1e6 / d['decode_s'])
        full_rss.append(d['peak_rss_bytes'] / json_bytes)
        warm.append(xlens_once(a.xlens, a.trace, 'report', 10)['decode_mb_per_s_median']
                    * json_bytes / d['bytes'])
    print(f"xlens full read ({what}): cold {med(cold):.0f} MB/s ({min(cold):.0f}-{max(cold):.0f}), "
          f"warm {med(warm):.0f} MB/s ({min(warm):.0f}-{max(warm):.0f}); "
          f"peak RSS {med(full_rss):.2f}x the JSON")
    after = machine_check()
    print(f"machine check, before / after: inflating {before[1]:.1f} MB of JSON (zlib) "
          f"{before[0]:.1f} / {after[0]:.1f} ms; touching 64 MB of fresh memory "
          f"{before[2]:.1f} / {after[2]:.1f} ms; two spinning processes off their cores "
          f"{before[3][0]:.1%} / {after[3][0]:.1%} of 1 s, {before[3][1]:.0f} / {after[3][1]:.0f} "
          f"clock reads per running ms")


if __name__ == '__main__':
    main()
