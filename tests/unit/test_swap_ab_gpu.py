"""Swap-AB on the GPU: every fusion family at ragged small M, forced with
`mmcomp.compile(f, swap_ab=True, ...)`, against the float64 reference on fresh random
inputs with poisoned outputs (`check=True`); and a dynamic M compiled with swap_ab in
every M bucket.

Skipped (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

from typing import Any

import cases
import numpy as np
import pytest
from test_dynamic import FAMILIES as DYNAMIC_FAMILIES
from test_dynamic import dynamic_inputs
from test_swap_ab import FAMILIES

import mmcomp
from mmcomp.frontend.builder import Fusion
from mmcomp.interp.reference import reference
from mmcomp.schedule import heuristics

pytestmark = pytest.mark.gpu

N, K = 200, 300
"""N and K ragged against every tile (K a whole number of 16-byte rows)."""
MS = (1, 7, 33)
"""Ragged small M: one row, part of wgmma's n = 8, and past 32."""
SCHEDULES: dict[str, dict[str, Any]] = {
    "heuristic": {},
    "split_k": {"split_k": 2},
    "pingpong": {"warp_specialization": "pingpong", "tile": (40, 64, 64)},
    "wide": {"tile": (16, 256, 64), "stages": 3},
}
"""Swapped schedules, as keywords besides swap_ab=True (tile in problem terms: m x n x k)."""


def _errors(fusion: Fusion, got: tuple[np.ndarray, ...], inputs: list[np.ndarray]) -> list[float]:
    """Each output's relative error against the float64 reference."""
    want = reference(fusion, *inputs, accumulate=np.float64)
    return [cases.relative_error(g, np.asarray(w)) for g, w in zip(got, want, strict=True)]


@pytest.mark.parametrize("schedule", list(SCHEDULES))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_at_ragged_small_m(family: str, schedule: str) -> None:
    for m in MS:
        fusion = FAMILIES[family](m, N, K)
        kernel = mmcomp.compile(fusion, swap_ab=True, **SCHEDULES[schedule])
        assert kernel.params.swap_ab
        inputs = cases.inputs_for(fusion)
        got = kernel(*inputs, check=True)
        for index, error in enumerate(_errors(fusion, got, inputs)):
            dtype = fusion.outputs[index].dtype
            assert error < cases.TOLERANCE[dtype], f"M = {m}, output {index}: {error}"


@pytest.mark.parametrize("family", ["linear", "linear_bias_gelu", "epilogue_operand", "horizontal"])
def test_dynamic_m_in_every_bucket(family: str) -> None:
    fusion = DYNAMIC_FAMILIES[family](N, K)
    kernel = mmcomp.compile(fusion, swap_ab=True)
    rng = np.random.default_rng(5)
    for m in (1, 7, 16, 24, 33, 100, 1000):
        inputs = dynamic_inputs(fusion, {"m": m, "b0": 2}, rng)
        got = kernel(*inputs, check=True)
        for index, error in enumerate(_errors(fusion, got, inputs)):
            dtype = fusion.outputs[index].dtype
            assert error < 2 * cases.TOLERANCE[dtype], f"M = {m}, output {index}: {error}"


def test_swap_rule_runs_a_decode_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heuristic's swap rule at its widest (heuristics.SWAP_AB_MAX_M set to
    SWAP_AB_CANDIDATE_M, the value it has today), and its pick run."""
    monkeypatch.setattr(heuristics, "SWAP_AB_MAX_M", heuristics.SWAP_AB_CANDIDATE_M)
    fusion = cases.linear(16, 4096, 1024)
    kernel = mmcomp.compile(fusion)
    assert kernel.params.swap_ab
    inputs = cases.inputs_for(fusion)
    (got,) = kernel(*inputs, check=True)
    (error,) = _errors(fusion, (got,), inputs)
    assert error < cases.TOLERANCE["bf16"]
