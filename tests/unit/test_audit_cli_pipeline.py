"""mmcomp-opt runs the whole schedule pipeline on every example, and its output is exact.

`mmcomp-opt` shows each schedule pass on an example; these tests run the
full pipeline (propagate-axis-mapping through materialize-schedule) from the command line on
every file in examples/, with a `sched.params` attribute on the function, and check that the
materialized IR round-trips. A small fusion sent through the same command line, parsed back
and simulated by the CPU executor, gives the reference's numbers with every output element
written once: the CLI path and `mmcomp.compile` agree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

import mmcomp
from mmcomp.interp.executor import execute
from mmcomp.ir.registry import context

EXAMPLES = sorted(
    path
    for path in (Path(__file__).resolve().parents[2] / "examples").glob("*.mlir")
    if "sched.params" not in path.read_text()
)
"""The example fusions that do not carry their own schedule parameters."""

PIPELINE = ",".join(
    [
        "propagate-axis-mapping",
        "tile-split",
        "tile-merge",
        "split-k",
        "insert-persistent-loop",
        "materialize-schedule",
    ]
)

PARAMS = "#sched.params<tile = 128x128x64, swizzle = 4, split_k = 2, epilogue = registers>"
"""Split-K with the register epilogue: two accumulators of 128x128 tiles fit beside their
partials there (with the shared-memory epilogue the horizontal fusion's would not)."""


def mmcomp_opt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `mmcomp-opt` beside this Python."""
    script = os.path.join(os.path.dirname(sys.executable), "mmcomp-opt")
    return subprocess.run([script, *args], input=stdin, capture_output=True, text=True, timeout=120)


def with_params(text: str, params: str) -> str:
    """The IR text with `sched.params` set on its (single) func.func."""
    pattern = re.compile(r"^(\s*func\.func @.*) \{$", re.MULTILINE)
    assert len(pattern.findall(text)) == 1, "expected one func.func header line"
    return pattern.sub(lambda match: f"{match[1]} attributes {{sched.params = {params}}} {{", text)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_full_schedule_pipeline_on_every_example(example: Path, tmp_path: Path):
    source = tmp_path / example.name
    source.write_text(with_params(example.read_text(), PARAMS))
    first = tmp_path / "first.mlir"
    result = mmcomp_opt(str(source), "-p", PIPELINE, "-o", str(first))
    assert result.returncode == 0, result.stderr
    text = first.read_text()
    for marker in ("sched.load_tile", "sched.store_tile", "sched.store_partial", "scf.for"):
        assert marker in text, marker
    assert "sched.schedule" not in text and "fusion.mma" not in text
    second = tmp_path / "second.mlir"
    again = mmcomp_opt(str(first), "-o", str(second))
    assert again.returncode == 0, again.stderr
    assert second.read_text() == text


def test_cli_materialized_kernel_matches_the_reference():
    f = mmcomp.Fusion("silu_mul")
    a = f.input("a", [150, 70], "bf16")
    w = f.input("w", [130, 70], "bf16")
    t = f.input("t", [150, 130], "bf16")
    y = f.output(f.linear(a, w))
    f.output(f.cast(f.silu(y) * t, "bf16"))
    params = "#sched.params<tile = 64x64x32, raster = n, swizzle = 2, split_k = 3>"
    result = mmcomp_opt("-p", PIPELINE, stdin=with_params(str(f), params))
    assert result.returncode == 0, result.stderr
    module = Parser(context(), result.stdout, "cli-output").parse_module()
    rng = np.random.default_rng()
    inputs = [rng.uniform(-1.0, 1.0, v.shape).astype(v.numpy_dtype) for v in f.inputs]
    execution = execute(module, inputs)
    expected = mmcomp.reference(f, *inputs)
    for index, (found, want) in enumerate(zip(execution.outputs, expected, strict=True)):
        assert (execution.writes[index] == 1).all(), f"output {index}"
        assert found.dtype == want.dtype and found.shape == want.shape
        found64 = found.astype(np.float64)
        want64 = want.astype(np.float64)
        error = float(np.abs(found64 - want64).max()) / max(float(np.abs(want64).max()), 1.0)
        assert error < 2e-2, f"output {index}: relative error {error:.3g}"
