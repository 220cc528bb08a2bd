"""examples/moe_block.py as users run it: on the interp back end (a CPU, small blocks) its
mixture-of-experts block against float64, torch.compile with new routing included; on
the GPU (marked gpu) at a real size with CUDA-graph replays and timings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 600


def _run_example(*arguments: str) -> str:
    """The example's stdout; fails the test with its output where it exits non-zero."""
    path = os.pathsep.join(part for part in (str(ROOT), os.environ.get("PYTHONPATH")) if part)
    env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(ROOT / "examples" / "moe_block.py"), *arguments]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _errors(stdout: str) -> dict[str, float]:
    """The relative errors the example printed, by the line's label."""
    found: dict[str, float] = {}
    for line in stdout.splitlines():
        if line.startswith("- "):
            label, _, figures = line[2:].rpartition(": ")
            for index, figure in enumerate(figures.split(", ")):
                found[f"{label} {index}"] = float(figure.split()[-1])
    return found


def test_the_block_on_the_interp_back_end_matches_float64_under_torch_compile():
    stdout = _run_example("--backend", "interp")
    errors = _errors(stdout)
    assert "mmcomp 0" in errors
    assert "mmcomp under torch.compile(fullgraph=True), new tokens 0" in errors
    assert "torch._grouped_mm 0" in errors
    assert all(0 < error < 2e-2 for error in errors.values()), stdout


@pytest.mark.parametrize(("tokens", "experts"), [(5, 16), (1, 8)])
def test_the_block_with_experts_that_get_no_tokens(tokens: int, experts: int):
    # T tokens, 2 experts each, over G experts: at least G - 2 T experts get none.
    stdout = _run_example(
        "--backend", "interp", "--tokens", str(tokens), "--experts", str(experts), "--no-compile"
    )
    errors = _errors(stdout)
    assert {"mmcomp 0", "torch._grouped_mm 0"} <= set(errors)
    assert all(0 < error < 2e-2 for error in errors.values()), stdout


@pytest.mark.gpu
def test_the_block_on_the_gpu_with_graph_replays_and_timings():
    stdout = _run_example("--backend", "cuda", "--tokens", "1024", "--repeat", "10")
    errors = _errors(stdout)
    assert "mmcomp CUDA-graph replays, new tokens each 2" in errors
    assert all(0 < error < 2e-2 for error in errors.values()), stdout
    assert "| mmcomp |" in stdout and "| torch._grouped_mm |" in stdout
