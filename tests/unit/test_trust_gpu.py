"""GPU checks of the front end and schedule choices: nvFuser's classic broadcast form under
every schedule, and a split_k past the K blocks, against float64 on fresh random inputs
(the cuda kernel poisons its outputs before each launch). Skipped without an sm_90 GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cases import TOLERANCE, inputs_for, relative_error

import mmcomp

pytestmark = pytest.mark.gpu

SCHEDULES: list[dict[str, Any]] = [
    {"strategy": "one-tile-per-cta"},
    {"strategy": "persistent", "swizzle": 4, "tile": (128, 64, 64)},
    {"strategy": "persistent", "raster": "n", "swizzle": 2, "tile": (128, 64, 64)},
    {"split_k": 2, "tile": (128, 64, 64)},
    {"warp_specialization": "pingpong"},
    {"warp_specialization": "pingpong", "tile": (128, 64, 64), "cluster": (2, 1)},
    {"warp_specialization": "none", "tile": (128, 64, 64)},
    {"epilogue": "smem", "tile": (128, 64, 64)},
]
"""Schedules of the classic form (persistent + swizzle, split-K, every specialization)."""


def classic(m: int, n: int, k: int, epilogue: bool) -> mmcomp.Fusion:
    """fused_multiply_sum of broadcast(a, [F, T, F]) and broadcast(b, [T, F, F]) over 2."""
    f = mmcomp.Fusion("classic")
    a = f.input("a", [m, k], "bf16")
    b = f.input("b", [n, k], "bf16")
    y = f.fused_multiply_sum(
        f.broadcast(a, [False, True, False]), f.broadcast(b, [True, False, False]), axes=[2]
    )
    if epilogue:
        t = f.input("t", [m, n], "bf16")
        y = f.silu(y) * t
    f.output(f.cast(y, "bf16"))
    return f


def check(fusion: mmcomp.Fusion, **params: Any) -> mmcomp.Kernel:
    kernel = mmcomp.compile(fusion, **params)
    inputs = inputs_for(fusion)
    got = kernel(*inputs)
    want = mmcomp.reference(fusion, *inputs, accumulate=np.float64)
    for output, g, w in zip(fusion.outputs, got, want, strict=True):
        error = relative_error(g, np.asarray(w))
        assert error < TOLERANCE[output.dtype], (kernel.params.format(), error)
    return kernel


def _name(params: dict[str, Any]) -> str:
    return ",".join(f"{key}={value}" for key, value in params.items())


@pytest.mark.parametrize("params", SCHEDULES, ids=_name)
def test_classic_broadcast_form_matches_float64(params: dict[str, Any]):
    """a[300, 192] and b[264, 192] through the broadcasts, silu * t epilogue."""
    check(classic(300, 264, 192, epilogue=True), **params)


@pytest.mark.parametrize("params", SCHEDULES[:2] + SCHEDULES[3:5], ids=_name)
def test_classic_broadcast_form_at_m_1_matches_float64(params: dict[str, Any]):
    """M = 1: the folded a[1, K] has no m axis, as the declared a[1, 1, K] has none."""
    check(classic(1, 512, 256, epilogue=False), **params)


def test_split_k_past_the_k_blocks_runs_the_k_blocks():
    """split_k = 3 with k = 128 (two K blocks of 64) runs two slices and is correct."""
    f = mmcomp.Fusion("split_past_k")
    a = f.input("a", [200, 128], "bf16")
    w = f.input("w", [136, 128], "bf16")
    f.output(f.linear(a, w))
    kernel = check(f, tile=(128, 64, 64), split_k=3)
    assert kernel.params.split_k == 2
