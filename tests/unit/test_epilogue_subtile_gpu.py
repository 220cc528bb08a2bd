"""Epilogue subtiles on the GPU: each forced schedule whose whole-tile epilogue does not fit
the registers (tests/unit/test_epilogue_subtile.py's SUBTILED: 128x256 with an [M, N]
operand under both epilogues, ping-pong 128x128 silu*mul, the horizontal fusion with two
[M, N] operands at 128x128), compiled with the heuristic's subtile, run on fresh random
inputs with poisoned outputs (`check=True`) at ragged and whole-tile shapes, every output
against the float64 reference; and the widest and narrowest subtiles pinned.

Skipped (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

import cases
import numpy as np
import pytest
from test_epilogue_subtile import SUBTILED

import mmcomp
from mmcomp.frontend.builder import Fusion
from mmcomp.interp.reference import reference

pytestmark = pytest.mark.gpu

SHAPES = ((1000, 1000, 1000), (2048, 4096, 1024), (300, 520, 192))
"""A shape ragged against every tile, one of whole tiles over more tiles than SMs, and a
small one whose last N tile is 8 columns wide."""


def _errors(fusion: Fusion, got: tuple[np.ndarray, ...], inputs: list[np.ndarray]) -> list[float]:
    """Each output's relative error against the float64 reference."""
    want = reference(fusion, *inputs, accumulate=np.float64)
    return [cases.relative_error(g, np.asarray(w)) for g, w in zip(got, want, strict=True)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", list(SUBTILED))
def test_subtiled_schedule_is_correct(name: str, shape: tuple[int, int, int]) -> None:
    build, keywords, subtile = SUBTILED[name]
    fusion = build(*shape)
    kernel = mmcomp.compile(fusion, **keywords)
    assert kernel.params.epilogue_subtile == subtile
    inputs = cases.inputs_for(fusion)
    got = kernel(*inputs, check=True)
    for index, error in enumerate(_errors(fusion, got, inputs)):
        dtype = fusion.outputs[index].dtype
        assert error < cases.TOLERANCE[dtype], f"output {index}: {error}"


PINNED = [
    ("silu_mul", "smem", 64),
    ("gelu_residual", "registers", 8),
    ("gelu_residual", "registers", 32),
]
"""Subtiles other than the heuristic's, pinned at 128x256: one box of the bf16 output and
two of the f32 one; one 8-column block; four."""


@pytest.mark.parametrize(("family", "epilogue", "subtile"), PINNED)
def test_pinned_subtiles(family: str, epilogue: str, subtile: int) -> None:
    fusion = getattr(cases, family)(1000, 1000, 1000)
    keywords = {"tile": (128, 256, 64), "epilogue": epilogue, "epilogue_subtile": subtile}
    kernel = mmcomp.compile(fusion, **keywords)
    assert kernel.params.epilogue_subtile == subtile
    inputs = cases.inputs_for(fusion)
    got = kernel(*inputs, check=True)
    for index, error in enumerate(_errors(fusion, got, inputs)):
        dtype = fusion.outputs[index].dtype
        assert error < cases.TOLERANCE[dtype], f"output {index}: {error}"
