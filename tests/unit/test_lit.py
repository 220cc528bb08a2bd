"""Runs the FileCheck suite in tests/lit through lit, so one `pytest` runs every test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LIT_DIR = Path(__file__).resolve().parents[1] / "lit"


@pytest.mark.timeout(900)  # the whole suite in one test: lit's own limit, not the default
def test_lit_suite():
    lit = [str(Path(sys.executable).parent / "lit"), "-v", str(LIT_DIR)]
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    result = subprocess.run(lit, capture_output=True, text=True, env=env, timeout=900)
    failures = [line for line in result.stdout.splitlines() if line.startswith(("FAIL", "UNRES"))]
    assert result.returncode == 0, "\n".join(failures) + "\n" + result.stdout[-6000:]
    assert "Passed" in result.stdout or "passed" in result.stdout.lower()
