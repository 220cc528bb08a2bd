"""GPU tests of the cuda back end: every case of mmcomp.backend.cases against float64.

Each case runs in a child process with a timeout (a wrong mbarrier parity hangs rather
than fails): `python -m mmcomp.backend.cases CASE` compiles the case, runs it on fresh
random inputs with poisoned outputs, and prints one JSON line with each output's relative
error against the float64 reference. Elsewhere the tests are skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mmcomp.backend.cases import CASES, TOLERANCE

pytestmark = pytest.mark.gpu

CASE_TIMEOUT_S = 120
"""Seconds one case may take, compilation included."""


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_matches_float64(name: str):
    """The kernel's outputs match the reference within the dtype's tolerance."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "mmcomp.backend.cases", name],
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
