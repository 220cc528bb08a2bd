"""Lint (ruff) and type-check (pyright) the code base, as xDSL's CI does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize(
    "command",
    [("ruff", "check", "."), ("ruff", "format", "--check", ".")],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff(command: tuple[str, ...]):
    result = _run(str(BIN / command[0]), *command[1:])
    assert result.returncode == 0, result.stdout + result.stderr


def test_pyright():
    result = _run(str(BIN / "pyright"))
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
