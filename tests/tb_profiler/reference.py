#!/usr/bin/env python3
"""Reference memory figures from the PyTorch TensorBoard plugin (torch-tb-profiler 0.4.3) for
the PyTorch traces with `[memory]` events in fixtures/pytorch/memory/.

For each trace it runs the plugin's own parser (RunProfileData.from_json, process) and writes to
fixtures/expected/tb_profiler/<trace name without .json.gz>.json:

* "op_stats": the plugin's memory statistics table (MemorySnapshot.get_memory_statistics over
  the whole trace): per device ("CPU", "GPU0", ...) and op name, the list
  [self increase, self allocation size, self allocation count, increase, allocation size,
  allocation count, calls], bytes as the trace gives them;
* "peaks": MemorySnapshot.get_peak_memory(): per "<device type>:<device id>", the largest
  `Total Allocated` (empty for traces written before PyTorch 1.10, which have no totals).

Usage (from the repository root, in a virtualenv with `pip install torch-tb-profiler==0.4.3
tensorboard pandas`; torch itself is not needed):

    python tests/tb_profiler/reference.py [TRACE ...]
"""

import gzip
import json
import sys
from importlib import metadata
from pathlib import Path

from torch_tb_profiler.profiler.data import RunProfileData

root = Path(__file__).resolve().parents[2]
traces = [Path(a) for a in sys.argv[1:]] or sorted((root / "fixtures/pytorch/memory").glob("*.json.gz"))
out_dir = root / "fixtures/expected/tb_profiler"
out_dir.mkdir(parents=True, exist_ok=True)
for path in traces:
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    data = RunProfileData.from_json("worker", "span", trace)
    data.process()
    snap = data.memory_snapshot
    stats = snap.get_memory_statistics(data.tid2tree)
    result = {
        "tool": f"torch-tb-profiler {metadata.version('torch-tb-profiler')}",
        "trace": path.name,
        "op_stats": {dev: dict(sorted(ops.items())) for dev, ops in sorted(stats.items())},
        "peaks": {f"{t}:{i}": int(v) for (t, i), v in sorted(snap.get_peak_memory().items(), key=str)},
    }
    name = path.name[: -len(".json.gz")]
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    rows = sum(len(v) for v in stats.values())
    print(f"{path.name}: {rows} op rows, peaks {result['peaks']}")
