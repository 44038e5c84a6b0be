"""examples/xlens.ipynb, executed headless (nbclient) with the installed package; its outputs
are checked against the package's `xlens` command and XProf's step count."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def text_of(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        data = o.get("data", {})
        out.append(data.get("text/html", "") + data.get("text/plain", "") + o.get("text", ""))
    return "\n".join(out)


def test_example_notebook_runs() -> None:
    nb = nbformat.read(ROOT / "examples/xlens.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "examples")}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    for c in code:
        assert not [o for o in c.outputs if o.output_type == "error"], text_of(c)
    xprof = json.loads((ROOT / "fixtures/expected/xprof/overview/jax_mlp_small.json").read_text())
    # The run's summary: XProf's step count, and the advice.
    assert f"{xprof['step_count']} steps" in text_of(code[0])
    assert f"('vm', {xprof['step_count']}, 'compute-bound')" in text_of(code[1])
    # The op profile's costliest op, as the command line says.
    cli = json.loads(subprocess.run([shutil.which("xlens"), "tool", "op_profile", str(ROOT / "fixtures/logdir"), "--run", "jax_mlp_small", "--json", "--peak-flops", "1e12", "--peak-bw", "1e11"], capture_output=True, text=True, check=True).stdout)
    leaves = []

    def walk(n):
        if n["kind"] == "op":
            leaves.append(n)
        for c in n["children"]:
            walk(c)

    walk(cli["hosts"][0]["by_program"])
    top = max(leaves, key=lambda n: n["metrics"]["time_ps"])["name"]
    assert top in text_of(code[2])
    # The steps table: XProf's step names.
    for name in xprof["step_names"]:
        assert name in text_of(code[3])
    assert "True" in text_of(code[5])
