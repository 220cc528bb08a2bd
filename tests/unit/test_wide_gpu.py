"""Operands and workspaces past 2^32 elements on the H200: an [M, N] epilogue operand read
through 64-bit offsets in both epilogues, and a split-K workspace of more than 2^32 f32
partials. Inputs are made on the device by torch (a host copy of 8.6 GB of random bf16
would take minutes); sampled rows on both sides of element 2^32, and columns, are checked
against float64."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from cases import child_environment

pytestmark = pytest.mark.gpu

TIMEOUT_S = 400
"""A case's child process gets this long (compile, 8.6 GB inputs, the launch, sampling)."""

CHILD = r"""
import json, sys
import torch
import mmcomp

spec = json.loads(sys.argv[1])
m, n, k = spec["shape"]
f = mmcomp.Fusion("wide")
a = f.input("a", [m, k], "bf16")
w = f.input("w", [n, k], "bf16")
y = f.linear(a, w)
if spec["operand"]:
    t = f.input("t", [m, n], "bf16")
    y = y + t
f.output(f.cast(y, "bf16"))
kernel = mmcomp.compile(f, **spec["params"])
torch.manual_seed(spec["seed"])
args = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
        torch.randn(n, k, device="cuda", dtype=torch.bfloat16)]
if spec["operand"]:
    args.append(torch.randn(m, n, device="cuda", dtype=torch.bfloat16))
(out,) = kernel(*args, check=True)
# The row holding element 2^32 of an [M, N] array, or of the second K slice's partials
# (rows of the output past M wrap into the next slice of the workspace).
boundary = ((1 << 32) // n) % m
rows = sorted({0, 1, boundary - 1, boundary, boundary + 1, m - 2, m - 1,
               *torch.randint(0, m, (40,)).tolist()})
columns = sorted({0, n - 1, *torch.randint(0, n, (6,)).tolist()})
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
# The float64 reference of the sampled rows and columns, on the host.
a64, w64 = args[0].cpu().double(), args[1].cpu().double()
want_rows = a64[rows] @ w64.T
want_columns = a64 @ w64[columns].T
if spec["operand"]:
    want_rows += args[2][rows].cpu().double()
    want_columns += args[2][:, columns].cpu().double()
def error(got, want):
    got = got.cpu().double()
    if not torch.isfinite(got).all():
        return float("inf")
    return float((got - want).abs().max() / want.abs().max())
print(json.dumps({"params": kernel.params.format(), "elements": m * n,
                  "free_gib": free / 2**30,
                  "rows": error(out[rows], want_rows),
                  "columns": error(out[:, columns], want_columns)}), flush=True)
"""

CASES = [
    ("operand_registers", (32768, 131200, 256), True, {"epilogue": "registers", "split_k": 1}),
    ("operand_smem", (32768, 131200, 256), True, {"epilogue": "smem", "split_k": 1}),
    ("split_k_workspace", (32768, 65600, 512), False, {"epilogue": "registers", "split_k": 2}),
]
"""(name, (m, n, k), with the [M, N] operand, keywords): each past 2^32 elements where it
counts (the operand and output: 4.30e9; the two K slices' partials: 4.30e9)."""


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """The child's report (its last stdout line)."""
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the case did not finish in {TIMEOUT_S} s (a hang?)")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("name", "shape", "operand", "params"), CASES, ids=[c[0] for c in CASES])
def test_past_2_32_elements_matches_float64(
    name: str, shape: tuple[int, int, int], operand: bool, params: dict[str, Any]
):
    """Sampled rows and columns within bf16's tolerance of float64."""
    pytest.importorskip("torch")
    spec = {"shape": shape, "operand": operand, "params": params, "seed": len(name)}
    report = run_child(spec)
    # The operand and output, or the K slices' partials, hold more than 2^32 elements.
    assert report["elements"] * params["split_k"] > 1 << 32
    assert report["rows"] < 1e-2, report
    assert report["columns"] < 1e-2, report
