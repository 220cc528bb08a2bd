"""Dynamic M and batch extents: the front end, the IR, the reference, and one interp kernel
per fusion family that runs at any M.

Each family is compiled once with a dynamic M (`f.input("a", ("m", K), ...)`) for the CPU
executor, then called at every M of `MS` on fresh random non-zero inputs, its outputs
poisoned (`out=` arrays of NaN), and compared with the float64 reference by relative
error. The executor also checks that every output element is written exactly once.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest

import mmcomp
from mmcomp.interp.executor import execute
from mmcomp.passes.propagate_axis_mapping import propagate

BF16 = np.dtype(ml_dtypes.bfloat16)
N, K = 48, 40
"""Small N and K keep the CI time small; neither is a multiple of the tile."""
MS = (1, 2, 7, 63, 64, 65, 127, 128, 129, 300, 1000)
"""The runtime extents every family runs at."""


def linear(n: int = N, k: int = K) -> mmcomp.Fusion:
    f = mmcomp.Fusion("linear")
    a = f.input("a", ("m", k), "bf16")
    w = f.input("w", (n, k), "bf16")
    f.output(f.linear(a, w))
    return f


def linear_bias_gelu(n: int = N, k: int = K) -> mmcomp.Fusion:
    f = mmcomp.Fusion("linear_bias_gelu")
    a = f.input("a", ("m", k), "bf16")
    w = f.input("w", (n, k), "bf16")
    bias = f.input("bias", (n,), "bf16")
    f.output(f.cast(f.gelu(f.linear(a, w, bias)), "bf16"))
    return f


def matmul(n: int = N, k: int = K) -> mmcomp.Fusion:
    f = mmcomp.Fusion("matmul")
    a = f.input("a", ("m", k), "bf16")
    b = f.input("b", (k, n), "bf16")
    f.output(f.matmul(a, b))
    return f


def fused_multiply_sum(n: int = N, k: int = K) -> mmcomp.Fusion:
    f = mmcomp.Fusion("fms")
    a = f.input("a", (None, 1, k), "bf16")
    b = f.input("b", (1, n, k), "bf16")
    f.output(f.fused_multiply_sum(a, b, 2))
    return f


def epilogue_operand(n: int = N, k: int = K) -> mmcomp.Fusion:
    f = mmcomp.Fusion("silu_mul")
    a = f.input("a", ("m", k), "bf16")
    w = f.input("w", (n, k), "bf16")
    t = f.input("t", ("m", n), "bf16")
    y = f.linear(a, w)
    f.output(y)
    f.output(f.cast(f.silu(y) * t, "bf16"))
    return f


def horizontal(n: int = N, k: int = K) -> mmcomp.Fusion:
    f = mmcomp.Fusion("horizontal")
    a = f.input("a", ("m", k), "bf16")
    w1 = f.input("w1", (n, k), "bf16")
    w2 = f.input("w2", (n, k), "bf16")
    gate = f.linear(a, w1)
    up = f.linear(a, w2)
    f.output(f.silu(gate) * up)
    return f


def batch(n: int = N, k: int = K) -> mmcomp.Fusion:
    f = mmcomp.Fusion("bmm")
    a = f.input("a", ("b", "m", k), "bf16")
    b = f.input("b", ("b", k, n), "bf16")
    f.output(f.matmul(a, b))
    return f


FAMILIES: dict[str, Callable[..., mmcomp.Fusion]] = {
    "linear": linear,
    "linear_bias_gelu": linear_bias_gelu,
    "matmul": matmul,
    "fused_multiply_sum": fused_multiply_sum,
    "epilogue_operand": epilogue_operand,
    "horizontal": horizontal,
    "batch": batch,
}

BATCH = 2
"""The batch extent of the batch family's calls at every M."""


def dynamic_inputs(
    fusion: mmcomp.Fusion, extents: dict[str, int], rng: np.random.Generator
) -> list[np.ndarray]:
    """Random non-zero inputs with each dynamic axis at its runtime extent."""
    arrays: list[np.ndarray] = []
    for value in fusion.inputs:
        roles = mmcomp.roles_of(value) if value.dynamic_axes else ()
        shape = tuple(
            extents[roles[axis]] if axis in value.dynamic_axes else extent
            for axis, extent in enumerate(value.shape)
        )
        magnitude = rng.uniform(0.25, 1.0, size=shape)
        sign = rng.choice((-1.0, 1.0), size=shape)
        arrays.append((magnitude * sign).astype(value.numpy_dtype))
    return arrays


def check_outputs(
    kernel: mmcomp.Kernel,
    fusion: mmcomp.Fusion,
    inputs: list[np.ndarray],
    tolerances: tuple[float, float] = (1e-2, 1e-5),
) -> None:
    """The kernel's outputs (written into NaN-poisoned `out=` arrays) against the float64
    reference, by relative error: (bf16 outputs', f32 outputs') tolerances."""
    expected = mmcomp.reference(fusion, *inputs)
    poisoned = [np.full(e.shape, np.nan, dtype=e.dtype) for e in expected]
    outputs = kernel(*inputs, out=poisoned)
    for index, (out, want) in enumerate(zip(outputs, expected, strict=True)):
        assert out.shape == want.shape, f"output {index}"
        want64 = want.astype(np.float64)
        scale = max(float(np.abs(want64).max(initial=0.0)), 1e-30)
        error = float(np.abs(out.astype(np.float64) - want64).max(initial=0.0)) / scale
        tolerance = tolerances[0] if want.dtype == BF16 else tolerances[1]
        assert error < tolerance, f"output {index}: relative error {error}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_runs_at_every_m(family: str) -> None:
    fusion = FAMILIES[family]()
    kernel = mmcomp.compile(fusion, backend="interp")
    rng = np.random.default_rng(12)
    for m in MS:
        check_outputs(kernel, fusion, dynamic_inputs(fusion, {"m": m, "b0": BATCH}, rng))


@pytest.mark.parametrize(
    "params",
    [
        {"tile": (64, 64, 32), "split_k": 2},
        {"tile": (64, 64, 16), "cluster": (2, 1), "raster": "n", "swizzle": 2},
        {"tile": (64, 64, 32), "strategy": "one-tile-per-cta", "raster": "m", "swizzle": 4},
        {"tile": (128, 64, 32), "raster": "n", "swizzle": 4, "split_k": 2, "cluster": (2, 1)},
    ],
)
def test_schedules_run_at_every_m(params: dict[str, object]) -> None:
    fusion = epilogue_operand()
    kernel = mmcomp.compile(fusion, backend="interp", **params)
    rng = np.random.default_rng(5)
    for m in MS:
        check_outputs(kernel, fusion, dynamic_inputs(fusion, {"m": m}, rng))


def test_dynamic_batch_extent() -> None:
    fusion = batch()
    kernel = mmcomp.compile(fusion, backend="interp", tile=(64, 64, 32), split_k=2)
    rng = np.random.default_rng(3)
    for b, m in ((1, 1), (3, 65), (5, 7)):
        check_outputs(kernel, fusion, dynamic_inputs(fusion, {"m": m, "b0": b}, rng))


# Front end and IR


def test_input_spells_a_dynamic_extent() -> None:
    f = mmcomp.Fusion("f")
    a = f.input("a", ("m", 64), "bf16")
    t = f.input("t", (None, 32), "f32")
    assert a.shape == (mmcomp.DYNAMIC, 64)
    assert a.dynamic_axes == (0,)
    assert t.dynamic_axes == (0,)
    assert repr(a) == "Value('a', shape=[?, 64], dtype=bf16)"
    assert "tensor<?x64xbf16>" in str(f)


def test_input_refuses_a_bad_extent_name() -> None:
    f = mmcomp.Fusion("f")
    with pytest.raises(mmcomp.FusionError, match=r"expected an identifier naming the dynamic"):
        f.input("a", ("2m", 64), "bf16")


def test_parse_round_trips_dynamic_extents() -> None:
    fusion = horizontal()
    again = mmcomp.parse(str(fusion))
    assert str(again) == str(fusion)
    assert [value.dynamic_axes for value in again.inputs] == [(0,), (), ()]


def test_propagate_ties_roles_to_one_extent() -> None:
    module = propagate(epilogue_operand())
    text = str(module)
    assert "#fusion.space<m = ?, n = 48, k = 40>" in text
    assert "%t: tensor<?x48xbf16> {fusion.roles = #fusion.roles<[m, n]>}" in text


def test_propagate_refuses_a_dynamic_n() -> None:
    f = mmcomp.Fusion("f")
    a = f.input("a", (8, K), "bf16")
    w = f.input("w", ("n", K), "bf16")
    f.output(f.linear(a, w))
    with pytest.raises(mmcomp.FusionError, match=r"axis 0 is dynamic \(\?\) but has role n"):
        propagate(f)


def test_reference_takes_any_m() -> None:
    fusion = linear_bias_gelu()
    rng = np.random.default_rng(1)
    for m in (1, 33):
        inputs = dynamic_inputs(fusion, {"m": m}, rng)
        (out,) = mmcomp.reference(fusion, *inputs)
        assert out.shape == (m, N)


def test_reference_names_inputs_that_disagree() -> None:
    fusion = epilogue_operand()
    a, w, _ = dynamic_inputs(fusion, {"m": 100}, np.random.default_rng(0))
    t = np.ones((99, N), BF16)
    with pytest.raises(mmcomp.FusionError, match=r"inputs 'a' and 't' disagree"):
        mmcomp.reference(fusion, a, w, t)


# Bad input at call time


@pytest.fixture(scope="module")
def silu_mul_kernel() -> mmcomp.Kernel:
    return mmcomp.compile(epilogue_operand(), backend="interp")


def test_static_extent_mismatch_names_argument_and_axis(silu_mul_kernel: mmcomp.Kernel) -> None:
    a, w, t = dynamic_inputs(silu_mul_kernel.fusion, {"m": 10}, np.random.default_rng(0))
    with pytest.raises(
        mmcomp.FusionError,
        match=r"kernel @silu_mul: input 'w': axis 1 \(K\): expected extent 40 \(a static axis\), "
        r"found 39",
    ):
        silu_mul_kernel(a, w[:, :39], t)


def test_disagreeing_dynamic_extents_name_both(silu_mul_kernel: mmcomp.Kernel) -> None:
    a, w, _ = dynamic_inputs(silu_mul_kernel.fusion, {"m": 100}, np.random.default_rng(0))
    t = np.ones((99, N), BF16)
    with pytest.raises(
        mmcomp.FusionError,
        match=r"kernel @silu_mul: inputs 'a' and 't' disagree on the dynamic extent M: 'a' "
        r"axis 0 is 100, 't' axis 0 is 99",
    ):
        silu_mul_kernel(a, w, t)


def test_m_zero_gives_empty_outputs_without_a_launch(silu_mul_kernel: mmcomp.Kernel) -> None:
    inputs = dynamic_inputs(silu_mul_kernel.fusion, {"m": 0}, np.random.default_rng(0))
    y, o = silu_mul_kernel(*inputs)
    assert y.shape == (0, N) and o.shape == (0, N)
    execution = execute(silu_mul_kernel.module, inputs)
    assert execution.grid == 0
    assert execution.tiles_per_cta == ()


def test_m_past_the_index_range_is_refused(silu_mul_kernel: mmcomp.Kernel) -> None:
    rows = 2**31
    a = np.broadcast_to(np.ones((1, K), BF16), (rows, K))
    w = np.ones((N, K), BF16)
    t = np.broadcast_to(np.ones((1, N), BF16), (rows, N))
    with pytest.raises(
        mmcomp.FusionError, match=r"the dynamic extent M = 2147483648 is past what the kernel"
    ):
        silu_mul_kernel(a, w, t)


def test_materialized_kernel_carries_the_extent_as_an_argument() -> None:
    kernel = mmcomp.compile(linear(), backend="interp", tile=(64, 64, 32))
    text = kernel.ir()
    assert '%m: index {sched.extent = "m"}' in text
    assert "sched.grid = @linear_launch" in text
    assert "arith.ceildivui %m, %c64" in text
    again = mmcomp.ir.registry.context()
    from xdsl.parser import Parser

    module = Parser(again, text).parse_module()
    inputs = dynamic_inputs(kernel.fusion, {"m": 70}, np.random.default_rng(0))
    (out,) = execute(module, inputs).outputs
    (want,) = mmcomp.reference(kernel.fusion, *inputs)
    assert np.allclose(out, want, rtol=1e-5, atol=1e-5)
