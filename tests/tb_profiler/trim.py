"""Cuts a real PyTorch profiler trace down to the events of a few `ProfilerStep#N` slices, so it
can be committed as a fixture: every event whose `ts` falls in [first step's start, last step's
end), every metadata (`M`) event, and the file's top-level keys (`deviceProperties`,
`distributedInfo`, ...) as they are. Events are kept byte-for-byte (same fields and values).

    python3 trim.py IN.json.gz OUT.json.gz FIRST_STEP LAST_STEP
"""
import gzip
import json
import sys

src, dst, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with gzip.open(src, "rt") as f:
    trace = json.load(f)
events = trace["traceEvents"]
steps = {}
for e in events:
    name = e.get("name", "")
    if e.get("ph") == "X" and name.startswith("ProfilerStep#"):
        steps[int(name.split("#")[1])] = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
lo, hi = steps[first][0], steps[last][1]
kept = [e for e in events if e.get("ph") == "M" or ("ts" in e and lo <= float(e["ts"]) < hi)]
trace["traceEvents"] = kept
with gzip.open(dst, "wt", compresslevel=9) as f:
    # Python's default separators (`"rank": 1`, with a space): HTA finds a trace's rank with a
    # regular expression that wants the space, and takes rank 0 without it.
    json.dump(trace, f)
print(f"{src}: steps {first}..{last}: kept {len(kept)} of {len(events)} events", file=sys.stderr)
