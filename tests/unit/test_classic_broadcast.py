"""nvFuser's classic matmul form: explicit broadcasts of the inputs, then fused_multiply_sum.

`broadcast(a, [False, True, False])`, `broadcast(b, [True, False, False])` and
`fused_multiply_sum(..., axes=[2])` fold into the mma's axis map (propagate-axis-mapping):
the mma reads a[M, K] and b[N, K] themselves, as a linear does, under every schedule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cases import inputs_for, relative_error
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import mmcomp
from mmcomp.analysis.roles import roles_of
from mmcomp.dialects.fusion import BroadcastOp, MmaOp
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.passes.propagate_axis_mapping import propagate

SCHEDULES: list[dict[str, Any]] = [
    {},
    {"strategy": "persistent", "swizzle": 4, "tile": (128, 64, 64)},
    {"strategy": "persistent", "raster": "n", "swizzle": 2, "tile": (128, 64, 64)},
    {"strategy": "one-tile-per-cta"},
    {"split_k": 2, "tile": (128, 64, 64)},
    {"warp_specialization": "pingpong"},
    {"warp_specialization": "none", "tile": (128, 64, 64)},
    {"epilogue": "smem", "tile": (128, 64, 64)},
]
"""Schedules every form is compiled and run under (persistent + swizzle included)."""


def classic_linear(m: int, n: int, k: int, epilogue: bool = False) -> mmcomp.Fusion:
    """sum_k a[M, 1, K] * b[1, N, K] with the size-1 axes inserted by broadcasts."""
    f = mmcomp.Fusion("classic_linear")
    a = f.input("a", [m, k], "bf16")
    b = f.input("b", [n, k], "bf16")
    a3 = f.broadcast(a, [False, True, False])
    b3 = f.broadcast(b, [True, False, False])
    y = f.fused_multiply_sum(a3, b3, axes=[2])
    if epilogue:
        t = f.input("t", [m, n], "bf16")
        f.output(f.cast(f.silu(y) * t, "bf16"))
    else:
        f.output(f.cast(y, "bf16"))
    return f


def classic_matmul(m: int, n: int, k: int) -> mmcomp.Fusion:
    """sum_k a[M, K, 1] * b[1, K, N]: B as [K, N]."""
    f = mmcomp.Fusion("classic_matmul")
    a = f.input("a", [m, k], "bf16")
    b = f.input("b", [k, n], "bf16")
    a3 = f.broadcast(a, [False, False, True])
    b3 = f.broadcast(b, [True, False, False])
    f.output(f.fused_multiply_sum(a3, b3, axes=[1]))
    return f


def classic_batched(batch: int, m: int, n: int, k: int) -> mmcomp.Fusion:
    """sum_k a[B, M, 1, K] * b[B, 1, N, K]."""
    f = mmcomp.Fusion("classic_batched")
    a = f.input("a", [batch, m, k], "f16")
    b = f.input("b", [batch, n, k], "f16")
    a4 = f.broadcast(a, [False, False, True, False])
    b4 = f.broadcast(b, [False, True, False, False])
    f.output(f.cast(f.fused_multiply_sum(a4, b4, axes=[3]), "f16"))
    return f


def declared_linear(m: int, n: int, k: int) -> mmcomp.Fusion:
    """The same product with the size-1 axes declared on the inputs."""
    f = mmcomp.Fusion("declared_linear")
    a = f.input("a", [m, 1, k], "bf16")
    b = f.input("b", [1, n, k], "bf16")
    f.output(f.cast(f.fused_multiply_sum(a, b, axes=[2]), "bf16"))
    return f


def _mma(module: ModuleOp) -> MmaOp:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    (mma,) = [op for op in func.body.walk() if isinstance(op, MmaOp)]
    assert not [op for op in func.body.walk() if isinstance(op, BroadcastOp)]
    return mma


def test_the_broadcasts_fold_into_the_mma_axis_map():
    mma = _mma(propagate(classic_linear(300, 200, 128)))
    assert mma.a.name_hint == "a" and mma.b.name_hint == "b"
    assert (mma.a_roles.roles, mma.b_roles.roles, mma.out_roles.roles) == (
        ("m", "k"),
        ("n", "k"),
        ("m", "n"),
    )
    matmul = _mma(propagate(classic_matmul(300, 200, 128)))
    assert (matmul.a_roles.roles, matmul.b_roles.roles) == (("m", "k"), ("k", "n"))
    batched = _mma(propagate(classic_batched(3, 64, 80, 64)))
    assert (batched.a_roles.roles, batched.b_roles.roles) == (("b0", "m", "k"), ("b0", "n", "k"))


@pytest.mark.parametrize("m", [1, 300])
def test_roles_match_the_declared_size_one_form(m: int):
    """The folded inputs have the roles of the declared form without its size-1 axes (at
    M = 1 neither has an m axis)."""
    classic = classic_linear(m, 200, 128)
    declared = declared_linear(m, 200, 128)
    for folded, written in zip(classic.inputs, declared.inputs, strict=True):
        written_roles = tuple(role for role in roles_of(written) if role != "_")
        assert tuple(role for role in roles_of(folded) if role != "_") == written_roles
    assert mmcomp.analysis.roles.iteration_space(
        classic.func
    ) == mmcomp.analysis.roles.iteration_space(declared.func)


def _check_interp(fusion: mmcomp.Fusion, params: dict[str, Any]) -> None:
    inputs = inputs_for(fusion)
    got = mmcomp.compile(fusion, backend="interp", **params)(*inputs)
    want = mmcomp.reference(fusion, *inputs)
    for g, w in zip(got, want, strict=True):
        assert relative_error(g, np.asarray(w)) < 1e-2, params


@pytest.mark.parametrize(
    "params", SCHEDULES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default"
)
def test_the_classic_form_runs_on_the_cpu_under_every_schedule(params: dict[str, Any]):
    _check_interp(classic_linear(300, 200, 192, epilogue=True), params)
    _check_interp(classic_matmul(130, 136, 128), params)


def test_the_batched_classic_form_runs_on_the_cpu():
    _check_interp(classic_batched(3, 100, 72, 128), {"tile": (128, 64, 64)})


@pytest.mark.parametrize(
    "params", SCHEDULES, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default"
)
def test_the_classic_form_assembles_for_cuda_under_every_schedule(params: dict[str, Any]):
    kernel = mmcomp.compile(classic_linear(300, 200, 192, epilogue=True), **params)
    assert kernel.report.spills == 0
    assert "fusion.broadcast" not in kernel.ir("propagate-axis-mapping")


EXPANDING = """
func.func @expand(%a: tensor<1x64xbf16>, %b: tensor<1x128x64xbf16>) -> tensor<64x128xf32> {
  %wide = fusion.broadcast %a new_dims [true, false, false]
      : tensor<1x64xbf16> to tensor<64x1x64xbf16>
  %y = fusion.fused_multiply_sum %wide, %b axes [2]
      : (tensor<64x1x64xbf16>, tensor<1x128x64xbf16>) -> tensor<64x128xf32>
  func.return %y : tensor<64x128xf32>
}
"""


@pytest.mark.parametrize("backend", ["interp", "cuda"])
def test_a_broadcast_that_expands_m_stays_refused_with_a_reason(backend: str):
    """a[K] repeated along M is a prologue (every row the same), not an absent axis."""
    with pytest.raises((FusionError, ScheduleError), match=r"prologue fusion is not supported"):
        mmcomp.compile(EXPANDING, backend=backend)
