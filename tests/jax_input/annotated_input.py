#!/usr/bin/env python3
"""The input share of real JAX profiles whose training loop annotates its data stage, computed by
hand from the annotations, for xlens's input figures to be checked against.

Each sample loop (../shared/tools/gen/jax_mlp.py, jax_serve_loop.py) runs
    with jax.profiler.StepTraceAnnotation('train', step_num=i):
        with jax.profiler.TraceAnnotation('data'): ...      # batch creation
        with jax.profiler.TraceAnnotation('forward_backward'): ...
so a step's input is the time of the `data` slices inside its `train` slice on the `python`
thread. This script reads the XSpace with a plain protobuf decoder (../shared/tools/xplane_pb.py,
no xlens code), finds every `train` slice and the `data` slices within it, and writes per step:
its name as XProf shows it (`train N`), the `train` slice's duration and the `data` time inside it,
in picoseconds. Nothing here is built or run by cargo.

Usage (any Python with `protobuf`, e.g. the venv of tests/tb_profiler/README.md):
    python tests/jax_input/annotated_input.py     # writes fixtures/expected/jax_input/<run>.json
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
sys.path.insert(0, os.path.join(SHARED, "tools"))
import xplane_pb  # noqa: E402

RUNS = {
    "mlp_small": "samples/jax/plugins/profile/mlp_small/vm.xplane.pb",
    "tfm_small": "samples/jax/plugins/profile/tfm_small/vm.xplane.pb",
    "capture_1s": "samples/jax/plugins/profile/capture_1s/127.0.0.1_9998.xplane.pb",
}
STEP, DATA = "train", "data"


def step_num(event, stat_names):
    for st in event.stats:
        if stat_names.get(st.metadata_id) == "step_num":
            kind = st.WhichOneof("value")
            v = getattr(st, kind)
            if kind == "ref_value":
                return None
            return int(v)
    return None


def measure(path):
    xs = xplane_pb.load(path)
    steps = []
    for plane in xs.planes:
        if plane.name != "/host:CPU":
            continue
        names = {k: v.name for k, v in plane.event_metadata.items()}
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            if line.name != "python":
                continue
            base_ps = line.timestamp_ns * 1000
            slices = [(base_ps + e.offset_ps, e.duration_ps, names.get(e.metadata_id, ""), e)
                      for e in line.events]
            data = sorted((s, d) for s, d, n, _ in slices if n == DATA)
            for s, d, n, e in slices:
                if n != STEP:
                    continue
                end = s + d
                # The union of the data slices, clipped to the step.
                inside, cur_end = 0, s
                for ds, dd in data:
                    a, b = max(ds, cur_end), min(ds + dd, end)
                    if b > a:
                        inside += b - a
                        cur_end = b
                steps.append({"name": f"{STEP} {step_num(e, stat_names)}", "begin_ps": s,
                              "duration_ps": d, "data_ps": inside})
    steps.sort(key=lambda r: r["begin_ps"])
    total = sum(r["duration_ps"] for r in steps)
    data = sum(r["data_ps"] for r in steps)
    return {
        "method": "sum of `data` TraceAnnotation time inside each `train` StepTraceAnnotation on "
                  "the python thread, read with a plain protobuf decoder (tests/jax_input/"
                  "annotated_input.py)",
        "annotation": DATA,
        "steps": steps,
        "data_percent_of_train_slices": 100.0 * data / total if total else 0.0,
    }


def main():
    out_dir = os.path.join(ROOT, "fixtures", "expected", "jax_input")
    os.makedirs(out_dir, exist_ok=True)
    for run, rel in RUNS.items():
        path = os.path.join(SHARED, rel)
        r = measure(path)
        r["file"] = "../shared/" + rel
        with open(os.path.join(out_dir, f"{run}.json"), "w") as f:
            json.dump(r, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{run}: {len(r['steps'])} steps, data {r['data_percent_of_train_slices']:.2f}% "
              f"of the train slices")


if __name__ == "__main__":
    main()
