"""GPU regression tests of the ring across persistent tiles and split-K units: the two
non-specialized kernels the fuzzer found hanging (seed 1, cases 1894 and 713), at their
shapes, and neighbours (more stages than K blocks; none + persistent + horizontal; none +
split-K with one K block per unit; the specialized mainloops on the same shapes), against
the float64 reference. The CPU side (PTX structure, the ring model) is test_ring_protocol.py.

Each case runs in a child process (test_lowering_trust_gpu.CHILD: fresh random inputs,
outputs poisoned with 0xFF bytes, workspaces zeroed, two launches on two streams) under a
timeout, since a ring out of step hangs rather than fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import cases
import pytest
from cases import TOLERANCE, child_environment
from test_lowering_trust_gpu import CHILD
from test_ring_protocol import NONE, NONE_713, NONE_1894, horizontal_1894, linear_713

from mmcomp.frontend.builder import Fusion

pytestmark = pytest.mark.gpu

CASE_TIMEOUT_S = 60
"""Seconds one case may take, compilation and the float64 reference included (the fuzzer
reported these kernels as hung after 60 s on the GPU)."""

REGRESSIONS: list[tuple[str, Fusion, dict[str, Any]]] = [
    ("fuzz_1894", horizontal_1894(), NONE_1894),
    ("fuzz_713", linear_713(), NONE_713),
    ("stages_over_k_blocks", cases.linear(2000, 2000, 128), {**NONE, "stages": 6}),
    ("one_k_block_4_stages", cases.linear(1200, 4096, 64), {**NONE, "stages": 4}),
    ("none_horizontal", cases.horizontal(2000, 2000, 200), {**NONE, "split_k": 1}),
    ("none_split_k_1_block", cases.linear(1024, 1024, 256), {**NONE, "split_k": 4}),
    ("none_split_k_m1", linear_713(1, 2048, 1024), {**NONE_713, "split_k": 16}),
    (
        "cooperative_1894",
        horizontal_1894(),
        {**NONE_1894, "warp_specialization": "cooperative", "stages": 6},
    ),
    (
        "pingpong_split_k_1_block",
        cases.linear(1024, 1024, 256),
        {"warp_specialization": "pingpong", "split_k": 4},
    ),
]


@pytest.mark.parametrize(
    ("fusion", "params"),
    [pytest.param(f, p, id=name) for name, f, p in REGRESSIONS],
)
def test_units_after_the_first_match_float64(fusion: Fusion, params: dict[str, Any]):
    """Every CTA runs several tiles or split-K units; both launches match float64."""
    spec = {"ir": str(fusion), "params": params}
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=CASE_TIMEOUT_S,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the case did not finish in {CASE_TIMEOUT_S} s (a hang?)")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(report["rounds"]) == 2, report
    for errors in report["rounds"]:
        assert len(errors) == len(fusion.outputs), report
        for entry in errors:
            assert entry["error"] < TOLERANCE[entry["dtype"]], report
