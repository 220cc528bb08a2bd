"""GPU tests of the cuda back end: every case of mmcomp.backend.cases against float64.

Each case runs in a child process with a timeout (a wrong mbarrier parity hangs rather
than fails): `python tests/unit/test_cuda_gpu.py CASE` compiles the case, runs it on fresh
random inputs with poisoned outputs, and prints one JSON line with each output's relative
error against the float64 reference. Elsewhere the tests are skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmcomp.backend.cases import CASES, TOLERANCE, case, inputs_for

pytestmark = pytest.mark.gpu

CASE_TIMEOUT_S = 120
"""Seconds one case may take, compilation included."""


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want| (inf when got has NaN or inf)."""
    got64 = np.asarray(got).astype(np.float64)
    if not np.all(np.isfinite(got64)):
        return float("inf")
    scale = max(float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got64 - want)) / scale)


def run_case(name: str, seed: int = 0) -> dict[str, object]:
    """Compile and run one case on the GPU; its errors per output (in this process)."""
    from mmcomp.backend import build_cuda_kernel
    from mmcomp.compile import run_pipeline
    from mmcomp.interp.reference import reference

    selected = case(name)
    fusion = selected.fusion()
    module, params, _ = run_pipeline(fusion.module, selected.params)
    kernel = build_cuda_kernel(module)
    inputs = inputs_for(fusion, seed)
    got = kernel(*inputs)
    want = reference(fusion, *inputs, accumulate=np.float64)
    errors = []
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        dtype = fusion.outputs[index].dtype
        errors.append(
            {"output": index, "dtype": dtype, "error": relative_error(g, np.asarray(w))}
        )
    return {"case": name, "params": params.format(), "errors": errors}


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_matches_float64(name: str):
    """The kernel's outputs match the reference within the dtype's tolerance."""
    try:
        result = subprocess.run(
            [sys.executable, str(Path(__file__)), name],
            capture_output=True,
            text=True,
            timeout=CASE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"case {name} did not finish in {CASE_TIMEOUT_S} s (a hang?)")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    for entry in report["errors"]:
        assert entry["error"] < TOLERANCE[entry["dtype"]], report


if __name__ == "__main__":
    print(json.dumps(run_case(sys.argv[1])))
