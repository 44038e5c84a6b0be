#!/usr/bin/env python3
"""Reference Overview / Operator / Kernel / Distributed figures from the PyTorch TensorBoard plugin
(torch-tb-profiler 0.4.3) for real PyTorch profiler (Kineto) traces.

    python tests/tb_profiler/overview_reference.py [TRACE ...]

Without arguments it reads every trace in ../shared/samples/pytorch/ (when that folder exists) and
every *.json.gz under fixtures/pytorch/ (recursively). For each trace it writes
fixtures/expected/tb_profiler/overview/<file name without .json.gz>.json, and for each folder that
holds one multi-rank job (two or more traces whose `distributedInfo` share a world size and have
distinct ranks) also <folder name>.distributed.json. See tests/tb_profiler/README.md for the
layout of these files.

Every number is computed by the plugin itself: the trace goes through the plugin's own file
preprocessing (RunProfileData._preprocess_file) and parser (RunProfileData.from_json, i.e.
process() and analyze()); the Operator and Kernel tables are the plugin's own aggregates (the
numbers its UI tables show, before display rounding); the Distributed view comes from its
RunLoader/DistributedRunGenerator. This script only picks the figures out, and runs the plugin a
second time on a "normalized" copy of the trace (see README.md).
"""

import gzip
import hashlib
import json
import logging
import math
import re
import sys
import tempfile
import types
from collections import Counter, defaultdict
from decimal import Decimal
from importlib import metadata
from pathlib import Path

import numpy as np

import torch_tb_profiler.profiler.data as tb_data
from torch_tb_profiler.profiler.data import DistributedRunProfileData, RunProfileData
from torch_tb_profiler.profiler.event_parser import EventParser, ProfileRole
from torch_tb_profiler.profiler.loader import RunLoader

TOOL = f"torch-tb-profiler {metadata.version('torch-tb-profiler')}"
COST_KEYS = [role.name for role in ProfileRole]  # Kernel, Memcpy, ..., CpuOp, Other, Total


# --- access to the plugin's step list ------------------------------------------------------------
# RunProfileData.process() builds an EventParser, keeps its steps_names but not its steps. This
# subclass (swapped in for the name `EventParser` that data.py looks up) remembers the parser, and
# the host-side steps as they were before the device-side extension and the tail-step removal.
class _RecordingEventParser(EventParser):
    last = None

    def update_device_steps(self, runtime_node_list):
        self.host_steps = list(self.steps)
        self.host_steps_names = list(self.steps_names)
        super().update_device_steps(runtime_node_list)
        _RecordingEventParser.last = self


tb_data.EventParser = _RecordingEventParser


# --- the plugin's log, counted ---------------------------------------------------------------------
class _CountingHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.counts = Counter()

    def emit(self, record):
        # Numbers (ids, timestamps) vary per event; count the message shape.
        self.counts[(record.levelname, re.sub(r"\d+", "#", record.getMessage())[:200])] += 1

    def take(self):
        out = [{"level": lvl, "message": msg, "count": n} for (lvl, msg), n in sorted(self.counts.items())]
        self.counts.clear()
        return out


_log = _CountingHandler()
_plugin_logger = logging.getLogger("pytorch_profiler")
_plugin_logger.addHandler(_log)
_plugin_logger.propagate = False


# --- helpers -------------------------------------------------------------------------------------
def plain(x):
    """JSON-ready copy: numpy scalars to Python, tuples to lists, NaN/inf to None."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [plain(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    return x


def dump(obj, indent=0) -> str:
    """JSON with one line per object of scalars (table rows stay on one line), nested otherwise."""
    def flat(v):
        return not isinstance(v, (dict, list)) or (isinstance(v, list) and all(not isinstance(x, (dict, list)) for x in v))

    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(obj, dict) and obj and not all(flat(v) for v in obj.values()):
        items = [f"{inner}{json.dumps(k)}: {dump(v, indent + 1).lstrip()}" for k, v in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and obj and not all(flat(v) for v in obj):
        items = [dump(v, indent + 1) for v in obj]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(obj, allow_nan=False)


def trace_stem(path: Path) -> str:
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def is_dataloader_name(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or name.startswith(
        "enumerate(DataPipe)#"
    )


def exact_relative(path: Path, trace: dict):
    """(d) A trace with fractional-microsecond timestamps, re-read with exact decimals and its
    `ts` made relative to the earliest one: the plugin computes in f64 microseconds since the
    epoch, which resolve only 0.25 µs today, and its sums over thousands of events then drift by
    microseconds. Returns (trace, shift in µs as text), or (trace, None) when every ts is whole."""
    if not any(isinstance(e, dict) and isinstance(e.get("ts"), float) and not float(e["ts"]).is_integer()
               for e in trace["traceEvents"]):
        return trace, None
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    exact = json.loads(raw, parse_float=Decimal)
    lo = min(Decimal(e["ts"]) for e in exact["traceEvents"] if isinstance(e, dict) and "ts" in e)

    def plain(v):
        if isinstance(v, Decimal):
            return float(v)
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    out = plain(exact)
    for e, x in zip(out["traceEvents"], exact["traceEvents"]):
        if isinstance(e, dict) and "ts" in e:
            e["ts"] = float(Decimal(x["ts"]) - lo)
    return out, str(lo)


def normalize(trace: dict):
    """Copy of the trace with PyTorch >= 1.10 category names mapped to what the plugin knows.

    (a) X events of cat cuda_runtime / cuda_driver get cat Runtime;
    (b) X events of cat user_annotation named like the DataLoader's (or DataPipe's) __next__ get
        cat cpu_op;
    (c) X events of cat gpu_user_annotation named ProfilerStep#N are dropped.
    """
    counts = {"runtime_to_Runtime": 0, "dataloader_to_cpu_op": 0, "gpu_profiler_steps_removed": 0}
    events = []
    for e in trace["traceEvents"]:
        if isinstance(e, dict) and e.get("ph") == "X":
            cat = e.get("cat")
            name = e.get("name") or ""
            if cat in ("cuda_runtime", "cuda_driver"):
                e = {**e, "cat": "Runtime"}
                counts["runtime_to_Runtime"] += 1
            elif cat == "user_annotation" and is_dataloader_name(name):
                e = {**e, "cat": "cpu_op"}
                counts["dataloader_to_cpu_op"] += 1
            elif cat == "gpu_user_annotation" and name.startswith("ProfilerStep#"):
                counts["gpu_profiler_steps_removed"] += 1
                continue
        events.append(e)
    out = dict(trace)
    out["traceEvents"] = events
    return out, counts


def run_plugin(worker: str, trace: dict):
    """The plugin's parser on one trace: (RunProfileData, the EventParser it used)."""
    _RecordingEventParser.last = None
    data = RunProfileData.from_json(worker, None, trace)
    return data, _RecordingEventParser.last


def step_list(steps, names):
    if not steps:
        return []
    origin = steps[0][0]
    return [{"name": n, "start_us": s - origin, "dur_us": e - s} for n, (s, e) in zip(names, steps)]


def costs_dict(costs):
    return {key: costs.costs[i] for i, key in enumerate(COST_KEYS)}


# --- the Overview --------------------------------------------------------------------------------
def overview(data: RunProfileData, parser: EventParser) -> dict:
    gm = data.gpu_metrics_parser
    gpus = {}
    for gpu_id in sorted(gm.gpu_ids):
        gpus[str(gpu_id)] = {
            "utilization": gm.gpu_utilization[gpu_id],
            "sm_efficiency": gm.avg_approximated_sm_efficiency_per_device[gpu_id],
            "occupancy_percent": gm.avg_occupancy_per_device[gpu_id],
            "tc_ratio": data.tc_ratio[gpu_id],
        }
    return {
        "steps": step_list(parser.steps, parser.steps_names),
        "host_steps": step_list(parser.host_steps, parser.host_steps_names),
        "steps_costs": [{"step": n, **costs_dict(c)} for n, c in zip(data.steps_names, data.steps_costs)],
        "avg_costs": costs_dict(data.avg_costs),
        "recommendations": list(data.recommendations),
        "flags": {
            "has_runtime": data.has_runtime,
            "has_kernel": data.has_kernel,
            "has_memcpy_or_memset": data.has_memcpy_or_memset,
            "has_communication": data.has_communication,
            "use_dp": data.use_dp,
            "use_ddp": data.use_ddp,
            # Thread ids written as JSON strings (PyTorch 1.8), which the plugin keys
            # inconsistently (see tests/tb_profiler/README.md).
            "string_tids": any(isinstance(e.tid, str) for e in data.events if e.type == "Runtime"),
            "comm_lib": sorted(lib.name for lib in data.comm_lib),
            "used_devices": list(data.used_devices),
        },
        "gpu": gpus,
        "tc_used_ratio": data.tc_used_ratio,
        "tc_eligible_ops_kernel_ratio": data.tc_eligible_ops_kernel_ratio,
        "comm_overlap": [
            {
                "step": n,
                "computation": c.computation,
                "overlap": c.overlap,
                "communication": c.communication,
                "other": c.other,
            }
            for n, c in zip(data.steps_names, data.comm_overlap_costs)
        ],
    }


# --- the Operator view ---------------------------------------------------------------------------
def op_exact(agg) -> dict:
    return {
        "calls": agg.calls,
        "device_self_duration": agg.self_device_duration,
        "device_total_duration": agg.device_duration,
        "host_self_duration": agg.self_host_duration,
        "host_total_duration": agg.host_duration,
        "tc_eligible": bool(agg.tc_eligible),
        "tc_self_ratio": agg.tc_self_ratio,
        "tc_total_ratio": agg.tc_total_ratio,
    }


def operator_rows(data: RunProfileData, by_input: bool, stack_ids: dict) -> list:
    """The Operator table (grouped by name, or by name and input shape), unrounded; rows that
    have call stacks list them as {"stack": index into "call_stacks", ...} with their own figures."""
    aggs = data.op_list_groupby_name_input if by_input else data.op_list_groupby_name
    stacks = data.stack_lists_group_by_name_input if by_input else data.stack_lists_group_by_name
    rows = []
    for agg in aggs:
        row = {"name": agg.name}
        if by_input:
            row["input_shape"] = agg.input_shape
        row.update(op_exact(agg))
        key = f"{agg.name}###{agg.input_shape}" if by_input else agg.name
        if key in stacks:
            stack_rows = []
            for sagg in stacks[key]:
                (stack,) = sagg.callstacks  # the plugin groups these by one call stack each
                stack_rows.append({"stack": stack_ids.setdefault(stack, len(stack_ids)), **op_exact(sagg)})
            row["call_stacks"] = stack_rows
        rows.append(row)
    return rows


def operator_tables(data: RunProfileData) -> dict:
    stack_ids = {}
    tables = {"by_name": operator_rows(data, False, stack_ids),
              "by_name_input": operator_rows(data, True, stack_ids)}
    # Renumber the call stacks in sorted order, so the file does not depend on dict order.
    stacks = sorted(stack_ids)
    new_id = {stack_ids[s]: i for i, s in enumerate(stacks)}
    for rows in tables.values():
        for row in rows:
            if "call_stacks" in row:
                for srow in row["call_stacks"]:
                    srow["stack"] = new_id[srow["stack"]]
                row["call_stacks"].sort(key=lambda r: r["stack"])
        rows.sort(key=lambda r: (r["name"], r.get("input_shape", "")))
    return {"show_gpu": bool(data.has_kernel or data.has_memcpy_or_memset), **tables, "call_stacks": stacks}


# --- the Kernel view -----------------------------------------------------------------------------
def kernel_tables(data: RunProfileData) -> dict:
    if not data.has_kernel or data.kernel_stat is None:
        return {"by_name": [], "by_name_op": []}
    by_name = []
    for name, r in data.kernel_stat.iterrows():
        by_name.append({
            "name": str(name),
            "tc_used": bool(r["tc_used"]),
            "calls": r["count"],
            "total_us": r["sum"],
            "mean_us": r["mean"],
            "max_us": r["max"],
            "min_us": r["min"],
            "mean_blocks_per_sm": r["blocks_per_sm"],
            "mean_occupancy_percent": r["occupancy"],
        })
    by_name.sort(key=lambda r: r["name"])

    by_name_op = []
    for agg in data.kernel_list_groupby_name_op:
        by_name_op.append({
            "name": agg.name,
            "op_name": agg.op_name,
            "grid": agg.grid,
            "block": agg.block,
            "registers_per_thread": agg.regs_per_thread,
            "shared_memory": agg.shared_memory,
            "tc_used": bool(agg.tc_used),
            "op_tc_eligible": bool(agg.op_tc_eligible),
            "calls": agg.calls,
            "total_us": agg.total_duration,
            "mean_us": agg.avg_duration,
            "max_us": agg.max_duration,
            "min_us": agg.min_duration,
            "mean_blocks_per_sm": agg.avg_blocks_per_sm,
            "mean_occupancy_percent": agg.avg_occupancy,
        })
    by_name_op.sort(key=lambda r: (r["name"], r["op_name"], str(r["grid"]), str(r["block"]),
                                   str(r["registers_per_thread"]), str(r["shared_memory"])))
    return {"by_name": by_name, "by_name_op": by_name_op}


# --- one trace -----------------------------------------------------------------------------------
def analyse(path: Path):
    """Returns (result dict, {variant: RunProfileData} for the distributed view)."""
    raw = path.read_bytes()
    result = {"tool": TOOL, "trace": path.name, "sha256": hashlib.sha256(raw).hexdigest()}
    worker = trace_stem(path)
    kept = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _, trace = RunProfileData._preprocess_file(str(path), tmp)
    except Exception as ex:  # the plugin could not even read the file
        result["error"] = f"{type(ex).__name__}: {ex}"
        result["plugin_log"] = _log.take()
        return result, kept
    result["distributed_info"] = trace.get("distributedInfo")
    relative, shift = exact_relative(path, trace)
    normalized_trace, counts = normalize(relative)
    counts["ts_relative_to_us"] = shift
    result["normalization"] = counts
    changed = any(counts.values())

    for variant, tr in (("as_written", trace), ("normalized", normalized_trace)):
        reused_log = None
        if variant == "normalized" and not changed and "data" in kept.get("as_written", {}):
            # Nothing to normalize (PyTorch 1.x names): the same input gives the same figures.
            data, parser = kept["as_written"]["data"], kept["as_written"]["parser"]
            reused_log = result["as_written"]["plugin_log"]
        else:
            try:
                data, parser = run_plugin(worker, tr)
            except Exception as ex:
                result[variant] = {"error": f"{type(ex).__name__}: {ex}", "plugin_log": _log.take()}
                continue
        out = overview(data, parser)
        if variant == "normalized":
            out["operators"] = operator_tables(data)
            out["kernels"] = kernel_tables(data)
        out["plugin_log"] = _log.take() if reused_log is None else reused_log
        result[variant] = out
        kept[variant] = {"data": data, "parser": parser}
    return result, {v: k["data"] for v, k in kept.items()}


# --- the Distributed view ------------------------------------------------------------------------
def distributed(folder: str, ranks: list) -> dict:
    """ranks: [(worker, {variant: RunProfileData})], one entry per rank file of one job."""
    out = {"tool": TOOL, "job": folder, "workers": [w for w, _ in ranks]}
    for variant in ("as_written", "normalized"):
        datas = [d.get(variant) for _, d in ranks]
        if any(d is None for d in datas):
            out[variant] = {"error": "the plugin failed on a rank"}
            continue
        if variant == "normalized" and all(a is b for a, b in zip(datas, [d.get("as_written") for _, d in ranks])):
            out[variant] = out["as_written"]
            continue
        dist = [DistributedRunProfileData(d) for d in datas]
        stub = types.SimpleNamespace(run_name=folder)
        try:
            profile = RunLoader._process_distributed_profiles(stub, dist, None)
        except Exception as ex:
            out[variant] = {"error": f"{type(ex).__name__}: {ex}", "plugin_log": _log.take()}
            continue
        if profile is None:
            out[variant] = {"view": None, "plugin_log": _log.take(),
                            "note": "the plugin shows no Distributed view (no matching communication on every rank)"}
            continue
        per_rank = {}
        for d in dist:
            per_rank[d.worker] = {
                "distributed_info": d.distributed_info,
                "steps": list(d.steps_names),
                "step_comm_stats": {
                    step: {"total_us": v[0], "data_transfer_us": v[1]} for step, v in d.step_comm_stats.items()
                },
                "comm_ops": {
                    op: {
                        "calls": s[0],
                        "bytes": s[1],
                        "total_latency_us": s[2],
                        "data_transfer_us": s[3],
                        "mean_latency_us": s[2] / s[0],
                        "mean_data_transfer_us": s[3] / s[0],
                        "mean_bytes": s[1] / s[0],
                    }
                    for op, s in sorted(d.total_comm_stats.items())
                },
            }
        out[variant] = {
            "gpu_info": profile.gpu_info,
            "overlap": profile.steps_to_overlap,
            "wait": profile.steps_to_wait,
            "comm_ops_table": profile.comm_ops,
            "per_rank": per_rank,
            "plugin_log": _log.take(),
        }
    return out


def job_groups(paths):
    """Folders holding one multi-rank job: >= 2 traces, same world size, distinct ranks."""
    groups = defaultdict(list)
    for p in paths:
        groups[p.parent].append(p)
    return groups


def summary_line(name, result):
    parts = []
    for variant in ("as_written", "normalized"):
        v = result.get(variant)
        if v is None:
            continue
        if "error" in v:
            parts.append(f"{variant}: ERROR {v['error']}")
            continue
        avg = v["avg_costs"]
        total = avg["Total"]
        dl = 100 * avg["DataLoader"] / total if total else float("nan")
        parts.append(f"{variant}: {len(v['steps'])} steps ({','.join(s['name'] for s in v['steps'])}), "
                     f"avg {total:.1f} us, DataLoader {avg['DataLoader']:.1f} us ({dl:.1f}%), "
                     f"Runtime {avg['Runtime']:.1f} us")
    if "error" in result:
        parts.append(f"ERROR {result['error']}")
    if "normalization" in result:
        parts.append("normalization " + " ".join(f"{k}={v}" for k, v in result["normalization"].items()))
    return f"{name}: " + " | ".join(parts)


def main(argv):
    root = Path(__file__).resolve().parents[2]
    if argv:
        traces = [Path(a).resolve() for a in argv]
    else:
        shared = (root / "../shared/samples/pytorch").resolve()
        traces = sorted(shared.glob("*.json.gz")) if shared.is_dir() else []
        traces += sorted((root / "fixtures/pytorch").rglob("*.json.gz"))
    out_dir = root / "fixtures/expected/tb_profiler/overview"
    out_dir.mkdir(parents=True, exist_ok=True)

    results = {}
    for path in traces:
        result, datas = analyse(path)
        (out_dir / f"{trace_stem(path)}.json").write_text(dump(plain(result)) + "\n")
        print(summary_line(path.name, result), flush=True)
        results[path] = (result, datas)

    for folder, paths in sorted(job_groups(traces).items()):
        if len(paths) < 2:
            continue
        infos = [results[p][0].get("distributed_info") or {} for p in paths]
        ranks = [i.get("rank") for i in infos]
        worlds = {i.get("world_size") for i in infos}
        if None in ranks or len(set(ranks)) != len(ranks) or len(worlds) != 1:
            continue
        order = sorted(zip(ranks, paths))
        job = distributed(folder.name, [(trace_stem(p), results[p][1]) for _, p in order])
        (out_dir / f"{folder.name}.distributed.json").write_text(dump(plain(job)) + "\n")
        for variant in ("as_written", "normalized"):
            v = job.get(variant, {})
            if "error" in v or not v.get("view", True):
                print(f"{folder.name} (distributed, {variant}): {v.get('error') or v.get('note')}")
                continue
            allrow = v["overlap"]["data"]["all"]
            print(f"{folder.name} (distributed, {variant}): ranks {[r for r, _ in order]}; "
                  f"avg [computation, overlap, communication, other] us per worker {dict(allrow)}")


if __name__ == "__main__":
    main(sys.argv[1:])
