"""Dynamic M and batch extents on the GPU: one compiled kernel per fusion family, called at
every M of `MS` on fresh random inputs with poisoned outputs, against the float64
reference. Each family is compiled once (`mmcomp.compile` of the dynamic fusion); the M
buckets compile a kernel per bucket on first use, and the test prints how many were built
(`pytest -rP` shows it). The torch ops and modules on dynamic fusions run under
`torch.compile(dynamic=True)` with one trace for every M.

Skipped (gpu marker) without an sm_90 GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_dynamic import (
    FAMILIES,
    batch,
    check_outputs,
    dynamic_inputs,
    epilogue_operand,
    linear,
)

import mmcomp
from mmcomp.pipeline import BucketedKernel

pytestmark = pytest.mark.gpu

N, K = 200, 136
"""N ragged against every tile; K a whole number of 16-byte rows but not of K blocks."""
MS = (1, 2, 7, 63, 64, 65, 127, 128, 129, 1000, 4095, 4096, 8191)
"""The runtime extents every family runs at."""


def _check(kernel: mmcomp.Kernel, fusion: mmcomp.Fusion, inputs: list[np.ndarray]) -> None:
    """Against the float64 reference, with the tolerances of f32 accumulation on the GPU."""
    check_outputs(kernel, fusion, inputs, (2e-2, 1e-2))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_runs_at_every_m(family: str) -> None:
    fusion = FAMILIES[family](N, K)
    kernel = mmcomp.compile(fusion)
    rng = np.random.default_rng(21)
    for m in MS:
        _check(kernel, fusion, dynamic_inputs(fusion, {"m": m, "b0": 2}, rng))
    built = len(kernel.kernels) if isinstance(kernel, BucketedKernel) else 1
    print(f"{family}: {len(MS)} extents of M, {built} kernels built")  # shown by pytest -rP
    assert built <= 8


def test_dynamic_batch_extent() -> None:
    fusion = batch(N, K)
    kernel = mmcomp.compile(fusion)
    rng = np.random.default_rng(3)
    for b, m in ((1, 1), (3, 65), (5, 7), (2, 1000), (7, 129)):
        _check(kernel, fusion, dynamic_inputs(fusion, {"m": m, "b0": b}, rng))


@pytest.mark.parametrize(
    "params",
    [
        {"tile": (128, 64, 64), "split_k": 2},
        {"tile": (128, 128, 64), "cluster": (2, 1), "raster": "n", "swizzle": 2},
        {"tile": (128, 128, 64), "strategy": "one-tile-per-cta", "raster": "m", "swizzle": 4},
        {"tile": (128, 64, 64), "warp_specialization": "pingpong", "split_k": 2},
        {"tile": (128, 64, 64), "warp_specialization": "none", "epilogue": "registers"},
    ],
)
def test_pinned_schedules_run_at_every_m(params: dict[str, Any]) -> None:
    fusion = epilogue_operand(N, K)
    kernel = mmcomp.compile(fusion, schedule_m=4096, **params)
    rng = np.random.default_rng(5)
    for m in (1, 7, 64, 129, 1000, 4095):
        _check(kernel, fusion, dynamic_inputs(fusion, {"m": m}, rng))


def test_device_arrays_and_an_empty_m() -> None:
    torch = pytest.importorskip("torch")
    fusion = linear(N, K)
    kernel = mmcomp.compile(fusion, schedule_m=128)
    rng = np.random.default_rng(8)
    for m in (0, 1, 77, 300, 77):
        a, w = dynamic_inputs(fusion, {"m": m}, rng)
        (y,) = kernel(
            torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda(),
            torch.from_numpy(w.view(np.int16)).view(torch.bfloat16).cuda(),
        )
        assert isinstance(y, torch.Tensor) and y.is_cuda and tuple(y.shape) == (m, N)
        if m == 0:
            continue
        (want,) = mmcomp.reference(fusion, a, w)
        got = y.float().cpu().numpy()
        error = float(np.abs(got - want).max()) / float(np.abs(want).max())
        assert error < 1e-2


def test_torch_compile_dynamic_traces_once() -> None:
    torch = pytest.importorskip("torch")
    from torch._dynamo.testing import CompileCounter  # pyright: ignore[reportMissingImports]

    import mmcomp.torch as mt

    torch.manual_seed(0)
    linear = torch.nn.Linear(K, N, dtype=torch.bfloat16, device="cuda")
    fused = mt.FusedLinear(linear, "silu")
    counter = CompileCounter()
    compiled = torch.compile(fused, backend=counter, dynamic=True, fullgraph=True)
    weight, bias = linear.weight.double(), linear.bias.double()
    with torch.no_grad():
        for m in (5, 64, 130, 1000, 77):
            x = torch.randn(m, K, dtype=torch.bfloat16, device="cuda")
            got = compiled(x)
            want = torch.nn.functional.silu(x.double() @ weight.t() + bias)
            error = float((got.double() - want).abs().max() / want.abs().max())
            assert tuple(got.shape) == (m, N) and error < 2e-2, (m, error)
    assert counter.frame_count == 1  # one trace for every M

    op = mt.op(epilogue_operand(N, K))
    inductor = torch.compile(lambda a, w, t: op(a, w, t), dynamic=True, fullgraph=True)
    rng = np.random.default_rng(4)
    for m in (3, 200, 129):
        arrays = dynamic_inputs(epilogue_operand(N, K), {"m": m}, rng)
        tensors = [torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda() for a in arrays]
        y, o = inductor(*tensors)
        want_y, want_o = mmcomp.reference(epilogue_operand(N, K), *arrays)
        for got, want in ((y, want_y), (o, want_o)):
            assert tuple(got.shape) == (m, N)
            error = float(np.abs(got.float().cpu().numpy() - want).max() / np.abs(want).max())
            assert error < 2e-2, (m, error)
