"""Time to the first overview of a profile in a bucket, against the same file on local disk.

    python benches/buckets.py PROFILE [--kind s3|gcs|azure] [--xlens target/release/xlens] [--reps 3]
    python benches/buckets.py --listing 2000 [--hosts 2] [--kind ...]

The second form times discovery alone: a bucket holding N sessions of `--hosts` small host files
each under plugins/profile/, listed by `xlens runs URL --json` (which reads no profile).

Starts the emulator (tests/buckets/emulator.py: moto, fake-gcs-server or Azurite on loopback) with
PROFILE uploaded as run/plugins/profile/bench/<name>, then measures, side by side in one run:

- local: `xlens tool overview_page PROFILE --json` (warm page cache: the file was just read);
- raw: the emulator's download throughput, as its own client fetches the object with parallel
  ranged GETs (boto3 for S3, 8 x 8 MiB ranges over the JSON API for GCS, azure-storage-blob with
  8 connections for Azure), best of --reps;
- cold: the same command over the bucket URL with an empty cache (parallel ranged GETs into the
  cache, then the overview);
- warm: again, with the cache filled.

and prints them with the target of issue 17: cold <= 1.3 x (local + size / raw throughput).
Run it with the Python that has the emulators (.ci-venv: `make_profiles.sh large` makes a ~200 MB
profile). Prints one JSON object at the end.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(cmd, env):
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-2000:]}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile", nargs="?")
    ap.add_argument("--listing", type=int, default=0)
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--kind", default="gcs", choices=["s3", "gcs", "azure"])
    ap.add_argument("--xlens", default=os.path.join(ROOT, "target/release/xlens"))
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    if a.listing:
        return listing(a)
    size = os.path.getsize(a.profile)
    name = os.path.basename(a.profile)
    with tempfile.TemporaryDirectory() as tmp:
        up = os.path.join(tmp, "up", "plugins", "profile", "bench")
        os.makedirs(up)
        try:
            os.link(a.profile, os.path.join(up, name))
        except OSError:
            shutil.copy(a.profile, os.path.join(up, name))
        emu = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tests/buckets/emulator.py"), a.kind,
             os.path.join(tmp, "up")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            first = json.loads(emu.stdout.readline())
            url = f"{first['url']}/plugins/profile/bench/{name}"
            key = f"run/plugins/profile/bench/{name}"
            env = dict(os.environ, **first["env"], XLENS_NO_METADATA_CREDENTIALS="1",
                       AWS_EC2_METADATA_DISABLED="true")

            def ask(cmd):
                emu.stdin.write(cmd + "\n")
                emu.stdin.flush()
                line = emu.stdout.readline()
                if line.startswith("error"):
                    raise SystemExit(f"{cmd}: {line}")

            out = os.path.join(tmp, "raw.bin")
            raw = []
            for _ in range(a.reps):
                t = time.perf_counter()
                ask(f"get {key} {out}")
                raw.append(time.perf_counter() - t)
                os.remove(out)
            raw_s = min(raw)
            tool = [a.xlens, "tool", "overview_page", "--json"]
            local = min(timed(tool + [a.profile], env) for _ in range(a.reps))
            cold, warm = [], []
            for i in range(a.reps):
                cache = os.path.join(tmp, f"cache{i}")
                e = dict(env, XLENS_CACHE_DIR=cache)
                cold.append(timed(tool + [url], e))
                warm.append(timed(tool + [url], e))
                shutil.rmtree(cache, ignore_errors=True)
        finally:
            emu.stdin.close()
            emu.wait(timeout=30)
    res = {
        "kind": a.kind,
        "file": a.profile,
        "bytes": size,
        "local_s": round(local, 3),
        "raw_download_s": round(raw_s, 3),
        "raw_MBps": round(size / raw_s / 1e6, 1),
        "bucket_cold_s": round(min(cold), 3),
        "bucket_warm_s": round(min(warm), 3),
        "target_s": round(1.3 * (local + raw_s), 3),
        "cold_over_local_plus_download": round(min(cold) / (local + raw_s), 3),
    }
    print(
        f"{a.kind}: {size / 1e6:.1f} MB; local {local:.3f} s; emulator raw download "
        f"{raw_s:.3f} s ({res['raw_MBps']} MB/s); bucket cold {min(cold):.3f} s, warm "
        f"{min(warm):.3f} s; cold / (local + download) = {res['cold_over_local_plus_download']} "
        f"(target <= 1.3)"
    )
    print(json.dumps(res))


def listing(a):
    with tempfile.TemporaryDirectory() as tmp:
        up = os.path.join(tmp, "up", "plugins", "profile")
        for i in range(a.listing):
            d = os.path.join(up, f"2026_01_01_00_{i // 60 % 60:02}_{i % 60:02}_{i:05}")
            os.makedirs(d)
            for h in range(a.hosts):
                with open(os.path.join(d, f"host{h}.xplane.pb"), "wb") as f:
                    f.write(b"\x0a\x00")
        t = time.perf_counter()
        emu = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tests/buckets/emulator.py"), a.kind,
             os.path.join(tmp, "up")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            first = json.loads(emu.stdout.readline())
            upload_s = time.perf_counter() - t
            env = dict(os.environ, **first["env"], XLENS_NO_METADATA_CREDENTIALS="1",
                       AWS_EC2_METADATA_DISABLED="true", XLENS_CACHE_DIR=os.path.join(tmp, "c"))
            best = None
            for _ in range(a.reps):
                t = time.perf_counter()
                r = subprocess.run([a.xlens, "runs", "--json", first["url"]], env=env,
                                   capture_output=True)
                dt = time.perf_counter() - t
                if r.returncode != 0:
                    raise SystemExit(r.stderr.decode()[-2000:])
                runs = json.loads(r.stdout)
                best = dt if best is None else min(best, dt)
            hosts = sum(len(s["hosts"]) for s in runs)
        finally:
            emu.stdin.close()
            emu.wait(timeout=60)
    print(f"{a.kind}: listed {len(runs)} sessions, {hosts} host files in {best:.3f} s "
          f"(upload took {upload_s:.1f} s)")
    print(json.dumps({"kind": a.kind, "sessions": len(runs), "hosts": hosts,
                      "list_s": round(best, 3)}))


if __name__ == "__main__":
    main()
