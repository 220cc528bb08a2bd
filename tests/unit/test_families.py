"""Every fusion family: API, IR text, reference interpreter and axis roles.

For each family: (1) the reference interpreter matches a float64 numpy computation written
here, independently of mmcomp; (2) it gives the same numbers before and after
`propagate-axis-mapping`; (3) every value has the roles it should, and the IR text after
the pass parses back and runs through the pass again unchanged.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp

import mmcomp
from mmcomp.analysis.roles import iteration_space
from mmcomp.dialects.fusion import AxisRolesAttr, IterationSpaceAttr, MmaOp
from mmcomp.frontend.builder import Fusion, Value
from mmcomp.interp.reference import reference, run_function
from mmcomp.ir.dtypes import FUSION_DTYPES
from mmcomp.passes.propagate_axis_mapping import propagate

NUMPY = {dtype.name: dtype.numpy_dtype for dtype in FUSION_DTYPES}
TOLERANCE = {"bf16": 1e-2, "f16": 2e-3, "f32": 1e-5}


def random(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, scale=1.0):
    """Fresh normal random values of `dtype`, none of them zero."""
    values = rng.standard_normal(shape) * scale
    values = np.where(np.abs(values) < 1e-3, 0.5, values)
    return values.astype(NUMPY[dtype])


def f64(array: np.ndarray) -> np.ndarray:
    return np.asarray(array).astype(np.float64)


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want|."""
    return float(np.max(np.abs(f64(got) - want)) / np.max(np.abs(want)))


@dataclass
class Family:
    """A fusion, its inputs, the float64 truth of its outputs and the roles of its values."""

    fusion: Fusion
    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    space: dict[str, int]
    roles: list[tuple[Value, tuple[str, ...]]] = field(default_factory=list)


def linear_family(dtype: str, with_bias: bool) -> Family:
    rng = np.random.default_rng(1 + with_bias)
    m, n, k = 48, 40, 64
    f = Fusion(f"linear_{dtype}")
    a = f.input("a", [m, k], dtype)
    w = f.input("w", [n, k], dtype)
    bias = f.input("bias", [n], dtype) if with_bias else None
    y = f.linear(a, w, bias)
    f.output(y)
    low = f.output(f.cast(y, dtype))
    arrays = [random(rng, (m, k), dtype), random(rng, (n, k), dtype, 1 / 8)]
    truth = f64(arrays[0]) @ f64(arrays[1]).T
    roles: list[tuple[Value, tuple[str, ...]]] = [
        (a, ("m", "k")),
        (w, ("n", "k")),
        (y, ("m", "n")),
        (low, ("m", "n")),
    ]
    if bias is not None:
        arrays.append(random(rng, (n,), dtype))
        truth = truth + f64(arrays[2])
        roles.append((bias, ("n",)))
    return Family(f, arrays, [truth, truth], {"m": m, "n": n, "k": k}, roles)


def matmul_family() -> Family:
    rng = np.random.default_rng()
    m, n, k = 32, 24, 80
    f = Fusion("matmul")
    a = f.input("a", [m, k], "bf16")
    b = f.input("b", [k, n], "bf16")
    y = f.output(f.matmul(a, b))
    arrays = [random(rng, (m, k), "bf16"), random(rng, (k, n), "bf16")]
    truth = f64(arrays[0]) @ f64(arrays[1])
    roles = [(a, ("m", "k")), (b, ("k", "n")), (y, ("m", "n"))]
    return Family(f, arrays, [truth], {"m": m, "n": n, "k": k}, roles)


def batched_matmul_family() -> Family:
    rng = np.random.default_rng()
    batch, m, n, k = 3, 16, 24, 32
    f = Fusion("batched_matmul")
    a = f.input("a", [batch, m, k], "f16")
    b = f.input("b", [batch, k, n], "f16")
    y = f.output(f.matmul(a, b))
    arrays = [random(rng, (batch, m, k), "f16"), random(rng, (batch, k, n), "f16")]
    truth = np.einsum("bmk,bkn->bmn", f64(arrays[0]), f64(arrays[1]))
    roles = [(a, ("b0", "m", "k")), (b, ("b0", "k", "n")), (y, ("b0", "m", "n"))]
    return Family(f, arrays, [truth], {"b0": batch, "m": m, "n": n, "k": k}, roles)


def fused_multiply_sum_family() -> Family:
    rng = np.random.default_rng()
    m, n, k = 24, 40, 48
    f = Fusion("broadcast_inputs")
    a = f.input("a", [m, 1, k], "bf16")
    b = f.input("b", [1, n, k], "bf16")
    s = f.fused_multiply_sum(a, b, [2])
    o = f.output(f.cast(s, "bf16"))
    arrays = [random(rng, (m, 1, k), "bf16"), random(rng, (1, n, k), "bf16")]
    truth = np.einsum("mk,nk->mn", f64(arrays[0])[:, 0, :], f64(arrays[1])[0])
    roles = [(a, ("m", "_", "k")), (b, ("_", "n", "k")), (s, ("m", "n")), (o, ("m", "n"))]
    return Family(f, arrays, [truth], {"m": m, "n": n, "k": k}, roles)


def silu_mul_family() -> Family:
    rng = np.random.default_rng()
    m, n, k = 40, 56, 64
    f = Fusion("epilogue_silu")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    t = f.input("t", [m, n], "bf16")
    y = f.output(f.linear(a, w))
    o = f.output(f.cast(f.silu(f.cast(y, "f32")) * t, "bf16"))
    arrays = [
        random(rng, (m, k), "bf16"),
        random(rng, (n, k), "bf16", 1 / 8),
        random(rng, (m, n), "bf16"),
    ]
    y64 = f64(arrays[0]) @ f64(arrays[1]).T
    roles = [(a, ("m", "k")), (w, ("n", "k")), (t, ("m", "n")), (y, ("m", "n")), (o, ("m", "n"))]
    return Family(f, arrays, [y64, silu(y64) * f64(arrays[2])], {"m": m, "n": n, "k": k}, roles)


def gelu_bias_family() -> Family:
    rng = np.random.default_rng()
    m, n, k = 32, 48, 96
    f = Fusion("gelu_linear_bias")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    bias = f.input("bias", [n], "bf16")
    y = f.linear(a, w, bias)
    g = f.output(f.cast(f.gelu(y, approximate="tanh"), "bf16"))
    arrays = [
        random(rng, (m, k), "bf16"),
        random(rng, (n, k), "bf16", 1 / 8),
        random(rng, (n,), "bf16"),
    ]
    truth = gelu_tanh(f64(arrays[0]) @ f64(arrays[1]).T + f64(arrays[2]))
    roles = [(a, ("m", "k")), (w, ("n", "k")), (bias, ("n",)), (y, ("m", "n")), (g, ("m", "n"))]
    return Family(f, arrays, [truth], {"m": m, "n": n, "k": k}, roles)


def relu_family() -> Family:
    rng = np.random.default_rng()
    m, n, k = 16, 32, 48
    f = Fusion("relu_linear")
    a = f.input("a", [m, k], "f16")
    w = f.input("w", [n, k], "f16")
    y = f.linear(a, w)
    r = f.output(f.relu(y))
    arrays = [random(rng, (m, k), "f16"), random(rng, (n, k), "f16")]
    truth = np.maximum(f64(arrays[0]) @ f64(arrays[1]).T, 0.0)
    roles = [(a, ("m", "k")), (w, ("n", "k")), (y, ("m", "n")), (r, ("m", "n"))]
    return Family(f, arrays, [truth], {"m": m, "n": n, "k": k}, roles)


def scale_family() -> Family:
    rng = np.random.default_rng()
    m, n, k = 24, 16, 32
    f = Fusion("scaled_matmul")
    a = f.input("a", [m, k], "bf16")
    b = f.input("b", [k, n], "bf16")
    y = f.matmul(a, b)
    scaled = f.output(f.cast(y * 0.125, "bf16"))
    arrays = [random(rng, (m, k), "bf16"), random(rng, (k, n), "bf16")]
    truth = 0.125 * (f64(arrays[0]) @ f64(arrays[1]))
    roles = [(a, ("m", "k")), (b, ("k", "n")), (y, ("m", "n")), (scaled, ("m", "n"))]
    return Family(f, arrays, [truth], {"m": m, "n": n, "k": k}, roles)


def horizontal_family() -> Family:
    rng = np.random.default_rng()
    m, n, k = 32, 40, 64
    f = Fusion("horizontal_swiglu")
    a = f.input("a", [m, k], "bf16")
    w1 = f.input("w1", [n, k], "bf16")
    w2 = f.input("w2", [n, k], "bf16")
    gate = f.output(f.linear(a, w1))
    up = f.output(f.linear(a, w2))
    o = f.output(f.cast(f.silu(gate) * up, "bf16"))
    arrays = [
        random(rng, (m, k), "bf16"),
        random(rng, (n, k), "bf16", 1 / 8),
        random(rng, (n, k), "bf16", 1 / 8),
    ]
    g64 = f64(arrays[0]) @ f64(arrays[1]).T
    u64 = f64(arrays[0]) @ f64(arrays[2]).T
    roles = [
        (a, ("m", "k")),
        (w1, ("n", "k")),
        (w2, ("n", "k")),
        (gate, ("m", "n")),
        (up, ("m", "n")),
        (o, ("m", "n")),
    ]
    return Family(f, arrays, [g64, u64, silu(g64) * u64], {"m": m, "n": n, "k": k}, roles)


FAMILIES: dict[str, Callable[[], Family]] = {
    "linear-bf16": lambda: linear_family("bf16", with_bias=False),
    "linear-bias-bf16": lambda: linear_family("bf16", with_bias=True),
    "linear-f16": lambda: linear_family("f16", with_bias=False),
    "linear-bias-f16": lambda: linear_family("f16", with_bias=True),
    "matmul": matmul_family,
    "batched-matmul": batched_matmul_family,
    "fused-multiply-sum-bf16": fused_multiply_sum_family,
    "silu-mul-linear-output": silu_mul_family,
    "gelu-linear-bias": gelu_bias_family,
    "relu": relu_family,
    "scale-by-constant": scale_family,
    "horizontal-three-outputs": horizontal_family,
}


@pytest.fixture(params=sorted(FAMILIES), name="family")
def family_fixture(request: pytest.FixtureRequest) -> Family:
    return FAMILIES[request.param]()


def _func(module) -> FuncOp:
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    return func


def test_reference_matches_float64_numpy(family: Family):
    outputs = reference(family.fusion, *family.inputs)
    assert len(outputs) == len(family.expected)
    for output, value, want in zip(outputs, family.fusion.outputs, family.expected, strict=True):
        assert output.dtype == NUMPY[value.dtype]
        assert output.shape == want.shape
        error = relative_error(output, want)
        assert error < TOLERANCE[value.dtype], (value, error)


def test_float32_accumulation_is_close(family: Family):
    wide = reference(family.fusion, *family.inputs)
    narrow = reference(family.fusion, *family.inputs, accumulate=np.float32)
    for value, got, want in zip(family.fusion.outputs, narrow, wide, strict=True):
        assert relative_error(got, f64(want)) < TOLERANCE[value.dtype]


def test_inputs_bind_by_name(family: Family):
    named = {
        str(value.name): array
        for value, array in zip(family.fusion.inputs, family.inputs, strict=True)
    }
    by_name = reference(family.fusion, **named)
    by_position = reference(family.fusion, *family.inputs)
    for got, want in zip(by_name, by_position, strict=True):
        np.testing.assert_array_equal(got, want)


def test_same_numbers_after_the_pass(family: Family):
    before = reference(family.fusion, *family.inputs)
    lowered = propagate(family.fusion)
    func = _func(lowered)
    assert not [op for op in func.body.walk() if op.name in CONTRACTION_NAMES]
    assert [op for op in func.body.walk() if isinstance(op, MmaOp)]
    after = run_function(func, family.inputs)
    for got, want in zip(after, before, strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


CONTRACTION_NAMES = ("fusion.matmul", "fusion.linear", "fusion.fused_multiply_sum")


def test_roles_of_every_value(family: Family):
    for value, roles in family.roles:
        assert mmcomp.roles_of(value) == roles, value
    named = {value.ssa for value, _ in family.roles}
    batch = tuple(axis for axis in family.space if axis.startswith("b"))
    block = family.fusion.func.body.block
    for op in block.ops:
        for result in op.results:
            if result not in named:
                # every other value is part of the epilogue: it lines up with the result
                assert mmcomp.roles_of(result) == (*batch, "m", "n"), op
    assert iteration_space(family.fusion.func) == family.space

    func = _func(propagate(family.fusion))
    assert iteration_space(func) == family.space
    assert isinstance(func.attributes["fusion.space"], IterationSpaceAttr)
    for arg, value in zip(func.body.block.args, family.fusion.inputs, strict=True):
        assert mmcomp.roles_of(arg) == mmcomp.roles_of(value)
    for op in func.body.block.ops:
        for result in op.results:
            if not isinstance(result.type, TensorType):
                continue
            stored = op.attributes.get("fusion.roles")
            assert isinstance(stored, AxisRolesAttr), op
            assert len(stored.roles) == len(result.type.get_shape())
    returned = func.body.block.last_op
    assert returned is not None
    for result, value in zip(returned.operands, family.fusion.outputs, strict=True):
        assert mmcomp.roles_of(result) == mmcomp.roles_of(value)
    for op in func.body.block.ops:
        if isinstance(op, MmaOp):
            assert mmcomp.roles_of(op.result) == op.out_roles.roles


def test_mmcomp_opt_runs_the_pass_on_the_printed_ir(family: Family):
    command = [sys.executable, "-m", "mmcomp.cli", "-p", "propagate-axis-mapping"]
    result = subprocess.run(
        command, input=str(family.fusion), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(propagate(family.fusion)).strip()
    again = subprocess.run(
        command, input=result.stdout, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == result.stdout


def test_ir_text_round_trips_through_the_pass(family: Family):
    text = str(family.fusion)
    reparsed = mmcomp.parse(text)
    lowered = propagate(reparsed)
    printed = str(lowered)
    again = mmcomp.parse(printed)
    assert str(again.module) == str(lowered)
    assert str(propagate(again)) == printed
    after = run_function(_func(again.module), family.inputs)
    before = reference(family.fusion, *family.inputs)
    for got, want in zip(after, before, strict=True):
        np.testing.assert_array_equal(got, want)
