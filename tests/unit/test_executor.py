"""The CPU executor runs every schedule of every fusion family and matches the reference.

Each case compiles a fusion with `mmcomp.compile(..., backend="interp")`, simulates every
CTA of the materialized kernel, and checks (1) the outputs against `mmcomp.reference` and
(2) that every output element was written exactly once. The executor itself is tested on
kernels broken on purpose: a doubled or a missed tile must raise CoverageError.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import mmcomp
from mmcomp.dialects.sched import swizzle_index
from mmcomp.interp.executor import CoverageError, Execution, execute
from mmcomp.interp.tile_functions import load_tile, mma_tile, reduce_partials, store_tile
from mmcomp.ir.dtypes import FUSION_DTYPES
from mmcomp.ir.registry import context

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {dtype.name: dtype.numpy_dtype for dtype in FUSION_DTYPES}


def linear(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("linear")
    a = f.input("a", (m, k), "bf16")
    w = f.input("w", (n, k), "bf16")
    f.output(f.linear(a, w))
    return f


def linear_bias(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("linear_bias")
    a = f.input("a", (m, k), "f16")
    w = f.input("w", (n, k), "f16")
    bias = f.input("bias", (n,), "f32")
    f.output(f.linear(a, w, bias))
    return f


def matmul(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("matmul")
    a = f.input("a", (m, k), "bf16")
    b = f.input("b", (k, n), "bf16")
    f.output(f.matmul(a, b))
    return f


def batched_matmul(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("bmm")
    a = f.input("a", (3, m, k), "f16")
    b = f.input("b", (3, k, n), "f16")
    f.output(f.matmul(a, b))
    return f


def fused_multiply_sum(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("fms")
    a = f.input("a", (m, 1, k), "bf16")
    b = f.input("b", (1, n, k), "bf16")
    f.output(f.cast(f.fused_multiply_sum(a, b, 2), "bf16"))
    return f


def silu_mul(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("silu_mul")
    a = f.input("a", (m, k), "bf16")
    w = f.input("w", (n, k), "bf16")
    t = f.input("t", (m, n), "bf16")
    y = f.linear(a, w)
    f.output(y)
    f.output(f.cast(f.silu(y) * f.cast(t, "f32"), "bf16"))
    return f


def gelu_bias(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("gelu_bias")
    a = f.input("a", (m, k), "bf16")
    w = f.input("w", (n, k), "bf16")
    bias = f.input("bias", (n,), "bf16")
    f.output(f.cast(f.gelu(f.linear(a, w, f.cast(bias, "f32"))), "bf16"))
    return f


def horizontal(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("horizontal")
    a = f.input("a", (m, k), "bf16")
    w1 = f.input("w1", (n, k), "bf16")
    w2 = f.input("w2", (n, k), "bf16")
    gate = f.linear(a, w1)
    up = f.linear(a, w2)
    f.output(gate)
    f.output(up)
    f.output(f.cast(f.silu(gate) * up, "bf16"))
    return f


def broadcast_batch(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("broadcast_batch")
    a = f.input("a", (2, 3, m, k), "bf16")
    b = f.input("b", (k, n), "bf16")
    t = f.input("t", (3, 1, n), "f32")
    f.output(f.matmul(a, b) + t)
    return f


FAMILIES: dict[str, Callable[[int, int, int], mmcomp.Fusion]] = {
    "linear": linear,
    "linear_bias": linear_bias,
    "matmul": matmul,
    "batched_matmul": batched_matmul,
    "fused_multiply_sum": fused_multiply_sum,
    "silu_mul": silu_mul,
    "gelu_bias": gelu_bias,
    "horizontal": horizontal,
}

SCHEDULES: dict[str, dict[str, object]] = {
    "one-tile-m-sw1-k1": dict(strategy="one-tile-per-cta", raster="m", swizzle=1, split_k=1),
    "persistent-n-sw4-k2": dict(strategy="persistent", raster="n", swizzle=4, split_k=2),
    "persistent-m-sw8-k3": dict(strategy="persistent", raster="m", swizzle=8, split_k=3),
    "one-tile-n-sw8-k2": dict(strategy="one-tile-per-cta", raster="n", swizzle=8, split_k=2),
}
"""Every strategy, raster order, swizzle (1, 4, 8) and split-K (1, 2, 3) appears."""


def random_inputs(fusion: mmcomp.Fusion) -> list[np.ndarray]:
    rng = np.random.default_rng()
    return [
        rng.uniform(-1.0, 1.0, value.shape).astype(DTYPES[value.dtype]) for value in fusion.inputs
    ]


def assert_close(found: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert found.shape == expected.shape, what
    assert found.dtype == expected.dtype, what
    found64 = found.astype(np.float64)
    expected64 = expected.astype(np.float64)
    scale = max(float(np.abs(expected64).max()), 1.0)
    tolerance = 2e-2 if found.dtype in (BF16, np.float16) else 1e-5
    error = float(np.abs(found64 - expected64).max()) / scale
    assert error <= tolerance, f"{what}: relative error {error:.3g} > {tolerance}"


def run(fusion: mmcomp.Fusion, **params: object) -> Execution:
    """Compile for the interp back end; simulate it; check outputs and write counts."""
    kernel = mmcomp.compile(fusion, backend="interp", **params)
    inputs = random_inputs(fusion)
    execution = execute(kernel.module, inputs)
    expected = mmcomp.reference(fusion, *inputs)
    assert len(execution.outputs) == len(expected)
    for index, (found, reference) in enumerate(zip(execution.outputs, expected, strict=True)):
        assert_close(found, reference, f"{fusion.name} output {index} with {params}")
        assert (execution.writes[index] == 1).all()
    return execution


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("family", FAMILIES)
def test_family_schedule(family: str, schedule: str):
    """300x500x200 with 128x128x64 tiles: no extent is a multiple of the tile."""
    run(FAMILIES[family](300, 500, 200), tile=(128, 128, 64), **SCHEDULES[schedule])


@pytest.mark.parametrize("swizzle", [2, 8])
def test_persistent_swizzle_broadcast_silu_mul(swizzle: int):
    """The seed's other failing case: silu(fms(a[M,1,K], b[1,N,K])) * t[M,N], persistent."""
    f = mmcomp.Fusion("broadcast_silu_mul")
    a = f.input("a", [300, 1, 200], "bf16")
    b = f.input("b", [1, 500, 200], "bf16")
    t = f.input("t", [300, 500], "bf16")
    f.output(f.cast(f.silu(f.fused_multiply_sum(a, b, [2])) * t, "bf16"))
    run(f, tile=(128, 128, 64), strategy="persistent", swizzle=swizzle, raster="n")


@pytest.mark.parametrize("family", ["linear", "matmul"])
@pytest.mark.parametrize("swizzle", [2, 4, 8])
def test_persistent_swizzle_linear_matmul(family: str, swizzle: int):
    """The case the seed system had to skip: LinearOp / MatmulOp, persistent, swizzle > 1."""
    execution = run(
        FAMILIES[family](520, 700, 96),
        tile=(64, 64, 32),
        strategy="persistent",
        swizzle=swizzle,
        raster="m",
    )
    assert sum(execution.tiles_per_cta) == 9 * 11


@pytest.mark.parametrize(
    ("family", "shape", "params"),
    [
        ("linear", (1, 500, 200), dict(tile=(64, 128, 64), swizzle=4)),
        ("matmul", (1, 300, 40), dict(tile=(64, 64, 64), strategy="one-tile-per-cta")),
        ("linear_bias", (300, 500, 40), dict(tile=(128, 128, 64), swizzle=8)),
        ("gelu_bias", (1, 70, 17), dict(tile=(64, 64, 32), raster="n")),
        ("horizontal", (65, 130, 33), dict(tile=(64, 64, 32), split_k=2, swizzle=4)),
        ("batched_matmul", (1, 100, 10), dict(tile=(64, 64, 16), swizzle=8)),
        ("fused_multiply_sum", (200, 1, 64), dict(tile=(64, 64, 32), split_k=2)),
        ("broadcast_batch", (100, 90, 70), dict(tile=(64, 64, 32), split_k=2, raster="n")),
    ],
    ids=[
        "linear-m1",
        "matmul-m1-ksmall",
        "bias-ksmall",
        "gelu-m1",
        "horiz-odd",
        "bmm-m1",
        "fms-n1",
        "batch-broadcast",
    ],
)
def test_boundary_shapes(family: str, shape: tuple[int, int, int], params: dict[str, object]):
    """M = 1, N = 1, K smaller than one tile, extents one past a tile, broadcast batch."""
    builder = broadcast_batch if family == "broadcast_batch" else FAMILIES[family]
    run(builder(*shape), **params)


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2), (2, 2)])
def test_clusters(cluster: tuple[int, int]):
    """A cluster tile may hang over the edge; its CTAs beyond the edge store nothing."""
    run(linear_bias(300, 500, 200), tile=(64, 64, 64), cluster=cluster, swizzle=2, split_k=2)


def test_kernel_call_matches_reference():
    """The public path: Kernel.__call__ returns the outputs in fusion output order."""
    fusion = silu_mul(130, 200, 70)
    kernel = mmcomp.compile(fusion, backend="interp", tile=(64, 64, 32), swizzle=4)
    inputs = random_inputs(fusion)
    outputs = kernel(*inputs)
    for index, (found, expected) in enumerate(
        zip(outputs, mmcomp.reference(fusion, *inputs), strict=True)
    ):
        assert_close(found, expected, f"output {index}")


def test_scalar_input_of_shape_one_scales_the_output():
    """A scalar is a tensor of shape [1] (rank 0 is refused): it broadcasts over the tile."""
    fusion = mmcomp.Fusion("scaled")
    a = fusion.input("a", (100, 48), "bf16")
    w = fusion.input("w", (72, 48), "bf16")
    scale = fusion.input("scale", (1,), "f32")
    fusion.output(fusion.linear(a, w) * scale)
    execution = run(fusion, tile=(64, 64, 16), split_k=2)
    assert execution.outputs[0].shape == (100, 72)
    kernel = mmcomp.compile(fusion, backend="interp", tile=(64, 64, 16))
    a_in, w_in, _ = random_inputs(fusion)
    (doubled,) = kernel(a_in, w_in, np.array([2.0], np.float32))
    (single,) = kernel(a_in, w_in, np.array([1.0], np.float32))
    np.testing.assert_array_equal(doubled, 2 * single)


@pytest.mark.parametrize("raster", ["m", "n"])
@pytest.mark.parametrize("swizzle", [1, 2, 3, 8])
def test_tile_order_is_the_swizzle(raster: str, swizzle: int):
    """One tile per CTA: CTA t computes the tile that `sched.swizzle`'s inverse gives."""
    execution = run(
        matmul(5 * 64, 7 * 64, 32),
        tile=(64, 64, 32),
        strategy="one-tile-per-cta",
        raster=raster,
        swizzle=swizzle,
    )
    slow, fast = (7, 5) if raster == "m" else (5, 7)
    for cta, _, starts in execution.trace:
        slow_index, fast_index = swizzle_index(cta, slow, fast, swizzle)
        tile_m, tile_n = (fast_index, slow_index) if raster == "m" else (slow_index, fast_index)
        assert starts == (tile_m * 64, tile_n * 64)


def test_persistent_loop_walks_the_grid():
    """Persistent: CTA c stores tiles c, c + grid, ...; the grid is min(tiles, SMs)."""
    execution = run(linear(64 * 20, 64 * 10, 32), tile=(64, 64, 32), swizzle=1)
    assert execution.grid == 132
    assert sorted(set(execution.tiles_per_cta)) == [1, 2]
    assert sum(execution.tiles_per_cta) == 200


def _materialized(fusion: mmcomp.Fusion, **params: object) -> str:
    return mmcomp.compile(fusion, backend="interp", **params).ir("materialize-schedule")


def _parse(text: str) -> ModuleOp:
    from xdsl.parser import Parser

    return Parser(context(), text).parse_module()


def test_doubled_tile_is_an_error():
    """A tile loop that steps by 1 instead of the grid computes tiles twice."""
    fusion = linear(300, 500, 200)
    text = _materialized(fusion, tile=(128, 128, 64), strategy="persistent", swizzle=2)
    broken, count = re.subn(r"(scf\.for %\w+ = %cta to %\w+ step) %grid", r"\1 %c1", text)
    assert count == 1
    with pytest.raises(CoverageError, match=r"written [2-9]\d* times \(expected exactly once\)"):
        execute(_parse(broken), random_inputs(fusion))


def test_missed_tile_is_an_error():
    """A tile loop that stops one tile early leaves elements unwritten."""
    fusion = matmul(300, 500, 200)
    text = _materialized(fusion, tile=(128, 128, 64), strategy="persistent", swizzle=1)
    broken, count = re.subn(r"(scf\.for %\w+ = %cta to) %c12 ", r"\1 %c11 ", text)
    assert count == 1
    broken = broken.replace(
        "arith.constant 1 : index",
        "arith.constant 1 : index\n    %c11 = arith.constant 11 : index",
        1,
    )
    with pytest.raises(CoverageError, match=r"written 0 times"):
        execute(_parse(broken), random_inputs(fusion))


def test_wrong_input_is_named():
    fusion = linear(64, 64, 32)
    module = mmcomp.compile(fusion, backend="interp", tile=(64, 64, 32)).module
    inputs = random_inputs(fusion)
    with pytest.raises(ValueError, match=r"input 1 of kernel @linear: expected shape \(64, 32\)"):
        execute(module, [inputs[0], inputs[1][:10]])
    with pytest.raises(ValueError, match=r"expected dtype bfloat16, found float32"):
        execute(module, [inputs[0].astype(np.float32), inputs[1]])
    with pytest.raises(ValueError, match=r"takes 2 inputs, 1 given"):
        execute(module, inputs[:1])


def test_load_tile_fills_zeros_out_of_bounds():
    source = np.arange(12, dtype=np.float32).reshape(3, 4)
    tile = load_tile(source, [2, 2], [2, 4])
    assert tile.tolist() == [[10, 11, 0, 0], [0, 0, 0, 0]]


def test_store_tile_clips_and_counts():
    destination = np.zeros((3, 4), dtype=np.float32)
    writes = np.zeros((3, 4), dtype=np.int64)
    store_tile(destination, np.ones((2, 3), dtype=np.float32), [2, 2], writes)
    assert writes.tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 1, 1]]
    assert destination[2, 2:].tolist() == [1, 1]


def test_mma_tile_follows_roles():
    rng = np.random.default_rng()
    a = rng.standard_normal((4, 1, 3)).astype(np.float32)  # [m, _, k]
    b = rng.standard_normal((1, 5, 3)).astype(np.float32)  # [_, n, k]
    acc = np.ones((4, 5), dtype=np.float32)
    result = mma_tile(a, b, acc, ["m", "_", "k"], ["_", "n", "k"], ["m", "n"])
    np.testing.assert_allclose(result, 1 + a[:, 0, :] @ b[0].T, rtol=1e-5, atol=1e-5)
    transposed = mma_tile(
        a[:, 0, :].T.copy(), b[0].T.copy(), acc.T.copy(), ["k", "m"], ["k", "n"], ["n", "m"]
    )
    np.testing.assert_allclose(transposed, result.T, rtol=1e-5, atol=1e-5)


def test_reduce_partials_in_slice_order():
    partials = np.array([[1e8], [1.0], [-1e8]], dtype=np.float32)
    assert reduce_partials(partials)[0] == np.float32(np.float32(1e8 + 1.0) - 1e8)


def test_split_k_is_deterministic():
    fusion = linear_bias(300, 500, 1000)
    kernel = mmcomp.compile(fusion, backend="interp", tile=(128, 128, 64), split_k=3)
    inputs = random_inputs(fusion)
    first = kernel(*inputs)[0]
    second = kernel(*inputs)[0]
    assert np.array_equal(first, second)


def test_1024_cubed_linear_persistent_under_10_seconds():
    fusion = linear(1024, 1024, 1024)
    kernel = mmcomp.compile(fusion, backend="interp", strategy="persistent")
    inputs = random_inputs(fusion)
    start = time.perf_counter()
    execution = execute(kernel.module, inputs)
    elapsed = time.perf_counter() - start
    assert (execution.writes[0] == 1).all()
    assert elapsed < 10.0, f"{elapsed:.2f} s"
