#!/usr/bin/env python3
"""Two xlens binaries side by side: cold first answers, fresh processes, alternating.

For refactors that must not slow anything down. For each tool, runs
`xlens bench FILE --tool T --reps 1 --json` with the old and the new binary in turn (--reps times
each, the order swapped every round so neither side always runs second) and prints the medians
of the first answer (map + decode + tool + JSON), of peak RSS and of the decode's throughput
(MB/s of the file as read: of JSON for a PyTorch trace, the import throughput), and new/old.

Usage: benches/ab.py OLD_XLENS NEW_XLENS PROFILE [--reps 15]
       [--tools overview_page,op_profile,hlo_stats,roofline_model]
"""

import argparse
import json
import statistics
import subprocess


def once(xlens, path, tool):
    out = subprocess.run([xlens, "bench", path, "--tool", tool, "--reps", "1", "--json"],
                         capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    return (d["first_response_s"], d["peak_rss_bytes"], d["peak_rss_to_file_ratio"],
            d["decode_mb_per_s"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("profile")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--tools", default="overview_page,op_profile,hlo_stats,roofline_model")
    a = ap.parse_args()
    print(f"{'tool':<26} {'old (median, range)':>26} {'new (median, range)':>26} {'new/old':>8}"
          f" {'peak RSS / file old, new':>26} {'decode MB/s old, new':>22}")
    for tool in a.tools.split(","):
        runs = {"old": [], "new": []}
        for i in range(a.reps):
            order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
            for side in order:
                runs[side].append(once(getattr(a, side), a.profile, tool))

        def fmt(side):
            t = [r[0] for r in runs[side]]
            return f"{statistics.median(t):.4f} s ({min(t):.3f}-{max(t):.3f})"

        mo = statistics.median(r[0] for r in runs["old"])
        mn = statistics.median(r[0] for r in runs["new"])
        ro = statistics.median(r[2] for r in runs["old"])
        rn = statistics.median(r[2] for r in runs["new"])
        do = statistics.median(r[3] for r in runs["old"])
        dn = statistics.median(r[3] for r in runs["new"])
        print(f"{tool:<26} {fmt('old'):>26} {fmt('new'):>26} {mn / mo:>8.3f} {ro:>12.2f}, {rn:.2f}"
              f" {do:>14.0f}, {dn:.0f}")


if __name__ == "__main__":
    main()
