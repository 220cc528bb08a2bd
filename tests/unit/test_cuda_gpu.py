"""GPU tests of the cuda back end: every case of tests/unit/cases.py against float64.

Each case runs in a child process with a timeout (a wrong mbarrier parity hangs rather
than fails): `python tests/unit/cases.py CASE` compiles the case, runs it on fresh
random inputs with poisoned outputs, and prints one JSON line with each output's relative
error against the float64 reference. Elsewhere the tests are skipped with the reason.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from cases import CASES, TOLERANCE, child_environment, run_child

pytestmark = pytest.mark.gpu

CASE_TIMEOUT_S = 120
"""Seconds one case may take, compilation included."""


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_matches_float64(name: str):
    """The kernel's outputs match the reference within the dtype's tolerance."""
    report = run_child(["-m", "cases", name], CASE_TIMEOUT_S, f"case {name}")
    for entry in report["errors"]:
        assert entry["error"] < TOLERANCE[entry["dtype"]], report


def test_persistent_cluster_grid_is_what_the_gpcs_hold():
    """A persistent grid of 4-CTA clusters is cut to the clusters that run at once (on the
    H200, 30 of 4 CTAs: 120, not 132); cluster_4x1_persistent checks its numbers."""
    script = "\n".join(
        [
            "from mmcomp.backend import build_cuda_kernel",
            "from cases import case, inputs_for",
            "from mmcomp.pipeline import run_pipeline",
            "from mmcomp.runtime import DeviceBuffer, synchronize",
            "from mmcomp.runtime.launch import max_active_clusters",
            "selected = case('cluster_4x1_persistent')",
            "fusion = selected.fusion()",
            "module, _, _ = run_pipeline(fusion.module, selected.params)",
            "kernel = build_cuda_kernel(module)",
            "plan = kernel.plan",
            "inputs = [DeviceBuffer.from_host(x) for x in inputs_for(fusion)]",
            "bound = kernel.bind([*inputs, *kernel.allocate_outputs()])",
            "bound.launch()",
            "synchronize()",
            "fits = max_active_clusters(kernel.function(), plan.threads, 4, plan.smem_bytes)",
            "print(plan.grid, bound.grid, fits)",
        ]
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=CASE_TIMEOUT_S,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the grid probe did not finish in {CASE_TIMEOUT_S} s (a hang?)")
    assert result.returncode == 0, result.stderr[-3000:]
    planned, launched, fits = (int(v) for v in result.stdout.split())
    assert launched == min(planned, 4 * fits)
    assert launched % 4 == 0 and launched <= planned
