#!/usr/bin/env python3
"""Switching tools on an open profile, measured at the server.

Starts `xlens serve PROFILE` on a loopback port, asks for one tool's page (the first answer:
read, decode, tool), then for every other tool's page and JSON, and the trace viewer's first
viewport, timing each request on loopback (so each figure is the server's time plus a fraction
of a millisecond of HTTP). Two rounds after the first answer: at once (what each tool computes
that is not there yet) and after `--settle` seconds (the server computes the rest of the run's
shared analyses in the background after the first answer).

Usage: benches/switch_tools.py PROFILE [--xlens target/release/xlens] [--first overview_page]
       [--settle 5] [--rounds 3]
"""

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(base, path):
    t0 = time.perf_counter()
    with urllib.request.urlopen(base + path, timeout=600) as r:
        body = r.read()
        status = r.status
    return time.perf_counter() - t0, status, len(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--xlens", default="target/release/xlens")
    ap.add_argument("--first", default="overview_page")
    ap.add_argument("--settle", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    srv = subprocess.Popen([a.xlens, "serve", a.profile, "--bind", f"127.0.0.1:{port}"],
                           stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            try:
                get(base, "/api/tools")
                break
            except OSError:
                time.sleep(0.05)
        tools = [t["name"] for t in json.load(urllib.request.urlopen(base + "/api/tools"))]
        run = json.load(urllib.request.urlopen(base + "/api/runs"))[0]["name"]
        q = "run=" + urllib.parse.quote(run)
        first, _, _ = get(base, f"/?{q}&tool={a.first}")
        print(f"first answer: {a.first} page {first * 1e3:.0f} ms")
        targets = []
        for t in tools:
            if t == a.first:
                continue
            if t == "trace_viewer":
                targets.append(("trace_viewer viewport", f"/api/trace/viewport?{q}&width=1500"))
            targets.append((f"{t} page", f"/?{q}&tool={t}"))
            targets.append((f"{t} json", f"/api/tool/{t}?{q}"))
        immediate = {name: get(base, path)[0] for name, path in targets}
        time.sleep(a.settle)
        settled = {name: [] for name, _ in targets}
        for _ in range(a.rounds):
            for name, path in targets:
                dt, status, size = get(base, path)
                if status != 200:
                    print(f"{name}: HTTP {status}", file=sys.stderr)
                settled[name].append(dt)
        print(f"{'request':<36} {'at once':>9} {'settled (median of %d)' % a.rounds:>24}")
        worst = 0.0
        for name, _ in targets:
            med = statistics.median(settled[name])
            worst = max(worst, med)
            print(f"{name:<36} {immediate[name] * 1e3:>7.1f} ms {med * 1e3:>21.1f} ms")
        print(f"slowest settled switch: {worst * 1e3:.1f} ms")
    finally:
        srv.terminate()
        try:
            _, err = srv.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            _, err = srv.communicate()
        for line in err.splitlines():
            if "warm" in line:
                print("server:", line)


if __name__ == "__main__":
    main()
