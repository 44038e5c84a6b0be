"""Soak test of `xlens serve` (not part of CI's run): many concurrent clients for minutes.

    python3 benches/soak.py --profile LARGE.xplane.pb [--samples ../shared/samples]
        [--clients 32] [--seconds 600] [--budget 3G] [--xlens target/release/xlens]

Builds a log directory of symbolic links: the large profile (`make_profiles.sh large`), every
`.xplane.pb` and PyTorch trace under --samples, and one corrupt file in a run of its own. Starts
`xlens serve` on it under a memory budget, then runs --clients threads for --seconds, each
repeating a random request: a tool (of those the run offers, as JSON), a trace viewport of a
random window and width, a trace search, or the run list and status. Every answer must be 200
except those about the corrupt run, which must name the file. Prints the number of requests,
errors, latency percentiles (per kind and overall), the server's peak resident memory (VmHWM) and
its /api/status, and exits 1 on any unexpected error.
"""

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_logdir(tmp, profile, samples):
    prof = os.path.join(tmp, "logs", "plugins", "profile")
    os.makedirs(os.path.join(prof, "large"))
    os.symlink(os.path.abspath(profile), os.path.join(prof, "large", "vm.xplane.pb"))
    n = 0
    if samples and os.path.isdir(samples):
        for dirpath, _, names in os.walk(samples):
            for name in sorted(names):
                # The samples' own corrupt files are left out: the one corrupt run is ours.
                if "corrupt" in name.lower():
                    continue
                if name.endswith(".xplane.pb") or name.endswith(".json.gz"):
                    n += 1
                    d = os.path.join(prof, f"sample{n:02d}")
                    os.makedirs(d)
                    os.symlink(os.path.join(dirpath, name), os.path.join(d, name))
    os.makedirs(os.path.join(prof, "corrupt"))
    with open(os.path.join(prof, "corrupt", "broken.xplane.pb"), "wb") as f:
        f.write(bytes(range(256)) * 64)
    return os.path.join(tmp, "logs")


def get(base, path, timeout=300):
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(base + path, timeout=timeout) as r:
            body = r.read()
            code = r.status
    except urllib.error.HTTPError as e:
        body = e.read()
        code = e.code
    except Exception as e:  # connection errors count as errors
        body = str(e).encode()
        code = 0
    return code, body, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", required=True)
    ap.add_argument("--samples", default=os.path.join(ROOT, "..", "shared", "samples"))
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--budget", default="3G")
    ap.add_argument("--xlens", default=os.path.join(ROOT, "target", "release", "xlens"))
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        logdir = make_logdir(tmp, a.profile, a.samples)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [a.xlens, "serve", logdir, "--bind", f"127.0.0.1:{port}", "--memory-budget", a.budget],
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(tmp, "serve.log"), "w"),
        )
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            code, body, _ = get(base, "/api/runs")
            assert code == 200, body
            runs = json.loads(body)
            print(f"{len(runs)} runs: " + ", ".join(r["name"] for r in runs), flush=True)
            results = []
            lock = threading.Lock()
            stop = time.time() + a.seconds

            def client(seed):
                rnd = random.Random(seed)
                mine = []
                while time.time() < stop:
                    run = rnd.choice(runs)
                    name = urllib.parse.quote(run["name"])
                    kind = rnd.choices(["tool", "viewport", "search", "runs"], [6, 3, 1, 0.3])[0]
                    if kind == "tool":
                        tool = rnd.choice(run["tools"] or ["report"])
                        path = f"/api/tool/{tool}?run={name}&format=json"
                        kind = f"tool:{tool}"
                    elif kind == "viewport":
                        lo = rnd.randint(-10**12, 10**12)
                        hi = lo + rnd.choice([10**6, 10**9, 10**11, 10**13, 2**62])
                        w = rnd.choice([300, 1500, 4000, 50000])
                        path = f"/api/trace/viewport?run={name}&start_ps={lo}&end_ps={hi}&width={w}"
                    elif kind == "search":
                        q = rnd.choice(["fusion", "dot", "step", "aten", "Memcpy", "x"])
                        path = f"/api/trace/search?run={name}&q={q}&limit=200"
                    else:
                        path = rnd.choice(["/api/runs", "/api/status"])
                    code, body, dt = get(base, path)
                    corrupt = run["name"] == "corrupt" and kind not in ("runs",)
                    if code == 200:
                        ok = True
                    elif corrupt:
                        ok = b"broken.xplane.pb" in body
                    else:
                        ok = False
                    mine.append((kind, code, dt, ok, path, body[:300] if not ok else b""))
                with lock:
                    results.extend(mine)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
            t0 = time.time()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.time() - t0
            _, status, _ = get(base, "/api/status")
            hwm = 0
            with open(f"/proc/{server.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm = int(line.split()[1]) * 1024
            alive = server.poll() is None
        finally:
            server.terminate()
            server.wait(timeout=30)

    lat = sorted(r[2] for r in results)
    bad = [r for r in results if not r[3]]
    pct = lambda xs, p: xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else 0.0
    kinds = {}
    for r in results:
        kinds.setdefault(r[0].split(":")[0], []).append(r[2])
    print(f"{len(results)} requests in {wall:.0f} s from {a.clients} clients "
          f"({len(results) / wall:.1f}/s); unexpected errors: {len(bad)}; server alive: {alive}")
    print(f"latency p50 {pct(lat, 50) * 1e3:.0f} ms, p90 {pct(lat, 90) * 1e3:.0f} ms, "
          f"p99 {pct(lat, 99) * 1e3:.0f} ms, max {lat[-1] * 1e3 if lat else 0:.0f} ms")
    for k, xs in sorted(kinds.items()):
        xs.sort()
        print(f"  {k:<9} {len(xs):>6} requests, p50 {pct(xs, 50) * 1e3:.0f} ms, "
              f"p99 {pct(xs, 99) * 1e3:.0f} ms")
    print(f"peak resident memory (VmHWM) {hwm / 1e6:.0f} MB; status {status.decode()}")
    for r in bad[:10]:
        print(f"  error {r[1]} on {r[4]}: {r[5]!r}")
    print(json.dumps({
        "requests": len(results), "errors": len(bad), "seconds": round(wall),
        "clients": a.clients, "p50_ms": round(pct(lat, 50) * 1e3),
        "p99_ms": round(pct(lat, 99) * 1e3), "peak_rss_bytes": hwm,
        "server_alive": alive,
    }))
    sys.exit(0 if not bad and alive else 1)


if __name__ == "__main__":
    main()
