"""The reference interpreter: each op against numpy in float64, rounding, and input binding."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

import mmcomp
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion
from mmcomp.interp.reference import contract, reference, run_function

BF16 = np.dtype(ml_dtypes.bfloat16)


def _rng() -> np.random.Generator:
    return np.random.default_rng()


def _normal(rng: np.random.Generator, shape, dtype: Any = np.float32) -> np.ndarray:
    values = rng.standard_normal(shape)
    return np.where(np.abs(values) < 1e-3, 0.25, values).astype(dtype)


def test_reference_is_public():
    assert mmcomp.reference is reference


UNARY_TRUTH = {
    "neg": lambda x: -x,
    "exp": np.exp,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "relu": lambda x: np.maximum(x, 0.0),
}


@pytest.mark.parametrize("kind", sorted(UNARY_TRUTH))
def test_unary_ops_round_once_to_the_declared_dtype(kind: str):
    f = Fusion(kind)
    x = f.input("x", [6, 10], "bf16")
    f.output(getattr(f, kind)(x))
    array = _normal(_rng(), (6, 10), BF16)
    (got,) = reference(f, array)
    want = UNARY_TRUTH[kind](array.astype(np.float64)).astype(BF16)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_gelu(approximate: str):
    f = Fusion("gelu")
    x = f.input("x", [4, 9], "f32")
    f.output(f.gelu(x, approximate=approximate))
    array = _normal(_rng(), (4, 9))
    (got,) = reference(f, array)
    wide = array.astype(np.float64)
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (wide + 0.044715 * wide**3)
        want = 0.5 * wide * (1 + np.tanh(inner))
    else:
        want = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in wide.flat])
        want = want.reshape(wide.shape)
    np.testing.assert_array_equal(got, want.astype(np.float32))


@pytest.mark.parametrize(
    "kind,op", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)]
)
def test_binary_ops(kind: str, op):
    f = Fusion(kind)
    x = f.input("x", [5, 7], "f16")
    y = f.input("y", [5, 7], "f16")
    f.output(getattr(f, kind)(x, y))
    rng = _rng()
    xs, ys = _normal(rng, (5, 7), np.float16), _normal(rng, (5, 7), np.float16)
    (got,) = reference(f, xs, ys)
    assert got.dtype == np.float16
    want = op(xs.astype(np.float64), ys.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(got, want)


def test_cast_rounds_to_nearest_even():
    f = Fusion("cast")
    x = f.input("x", [4], "f32")
    f.output(f.cast(x, "bf16"))
    # 1 + 2^-8 is halfway between two bf16 values: ties to the even one (1.0);
    # 1 + 3 * 2^-8 ties up to 1 + 2^-6.
    array = np.array([1 + 2**-8, 1 + 3 * 2**-8, -2.0, 3.0], dtype=np.float32)
    (got,) = reference(f, array)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float32), [1.0, 1 + 2**-6, -2.0, 3.0])


def test_scalar_constant_rounds_to_the_operand_dtype():
    f = Fusion("scale")
    x = f.input("x", [3, 4], "bf16")
    f.output(x * 0.1)
    array = _normal(_rng(), (3, 4), BF16)
    (got,) = reference(f, array)
    tenth = np.float64(np.array(0.1).astype(BF16).astype(np.float64))
    np.testing.assert_array_equal(got, (array.astype(np.float64) * tenth).astype(BF16))


def test_broadcast_inserts_and_expands():
    f = Fusion("broadcast")
    x = f.input("x", [1, 6], "f32")
    f.output(f.broadcast(x, [True, False, False]))
    bias = f.input("bias", [6], "f32")
    t = f.input("t", [4, 6], "f32")
    f.output(t + bias)
    rng = _rng()
    xs, bs, ts = _normal(rng, (1, 6)), _normal(rng, (6,)), _normal(rng, (4, 6))
    inserted, added = reference(f, xs, bs, ts)
    np.testing.assert_array_equal(inserted, xs[None])
    np.testing.assert_array_equal(added, ts + bs[None, :])


def test_matmul_broadcasts_batch_dims():
    f = Fusion("batched")
    a = f.input("a", [2, 1, 5, 8], "f32")
    b = f.input("b", [3, 8, 4], "f32")
    f.output(f.matmul(a, b))
    rng = _rng()
    xs, ys = _normal(rng, (2, 1, 5, 8)), _normal(rng, (3, 8, 4))
    (got,) = reference(f, xs, ys)
    want = np.einsum("pqmk,qkn->pqmn", np.broadcast_to(xs, (2, 3, 5, 8)).astype(np.float64), ys)
    assert got.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_linear_adds_its_bias_to_the_f32_accumulator():
    f = Fusion("linear")
    a = f.input("a", [6, 16], "bf16")
    w = f.input("w", [5, 16], "bf16")
    bias = f.input("bias", [5], "bf16")
    f.output(f.linear(a, w, bias))
    rng = _rng()
    xs, ws, bs = _normal(rng, (6, 16), BF16), _normal(rng, (5, 16), BF16), _normal(rng, (5,), BF16)
    (got,) = reference(f, xs, ws, bs)
    acc = (xs.astype(np.float64) @ ws.astype(np.float64).T).astype(np.float32)
    want = (acc.astype(np.float64) + bs.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_fused_multiply_sum_sums_the_listed_axis():
    f = Fusion("fms")
    a = f.input("a", [4, 1, 8], "f32")
    b = f.input("b", [1, 3, 8], "f32")
    f.output(f.fused_multiply_sum(a, b, [2]))
    rng = _rng()
    xs, ys = _normal(rng, (4, 1, 8)), _normal(rng, (1, 3, 8))
    (got,) = reference(f, xs, ys)
    want = (xs.astype(np.float64) * ys.astype(np.float64)).sum(axis=2)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_contract_follows_the_roles():
    rng = _rng()
    a = rng.standard_normal((2, 4, 1, 8))
    b = rng.standard_normal((1, 3, 8, 5))
    got = contract(a, b, ("b0", "m", "_", "k"), ("_", "b1", "k", "n"), ("b0", "b1", "m", "n"))
    want = np.einsum("pmk,qkn->pqmn", a[:, :, 0, :], b[0])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    kept = contract(a[0, :, 0, :], b[0, 0], ("m", "k"), ("k", "n"), ("m", "_", "n"))
    assert kept.shape == (4, 1, 5)


def test_float32_accumulation_differs_from_float64_but_is_close():
    f = Fusion("long_k")
    a = f.input("a", [8, 4096], "f32")
    b = f.input("b", [4096, 8], "f32")
    f.output(f.matmul(a, b))
    rng = _rng()
    xs, ys = _normal(rng, (8, 4096)), _normal(rng, (4096, 8))
    (wide,) = reference(f, xs, ys)
    (narrow,) = reference(f, xs, ys, accumulate=np.float32)
    np.testing.assert_allclose(narrow, wide, rtol=1e-3, atol=1e-3)
    with pytest.raises(FusionError, match="argument 'accumulate': expected float64 or float32"):
        reference(f, xs, ys, accumulate=np.float16)


def test_outputs_in_order_with_an_intermediate_output():
    f = Fusion("order")
    x = f.input("x", [3, 3], "f32")
    e = f.exp(x)
    f.output(f.neg(e))
    f.output(e)
    array = _normal(_rng(), (3, 3))
    negated, exponent = reference(f, array)
    np.testing.assert_array_equal(exponent, np.exp(array.astype(np.float64)).astype(np.float32))
    np.testing.assert_array_equal(negated, -exponent)


def test_runs_a_module_a_function_and_parsed_text():
    f = Fusion("text")
    a = f.input("a", [4, 8], "bf16")
    w = f.input("w", [6, 8], "bf16")
    f.output(f.relu(f.linear(a, w)))
    rng = _rng()
    xs, ws = _normal(rng, (4, 8), BF16), _normal(rng, (6, 8), BF16)
    (want,) = reference(f, xs, ws)
    parsed = mmcomp.parse(str(f))
    (from_text,) = reference(parsed, xs, ws)
    (from_module,) = reference(parsed.module, xs, ws)
    func = parsed.func
    assert isinstance(func, FuncOp)
    (from_func,) = run_function(func, [xs, ws])
    for got in (from_text, from_module, from_func):
        np.testing.assert_array_equal(got, want)


@pytest.fixture(name="linear")
def linear_fixture() -> Fusion:
    f = Fusion("bind")
    a = f.input("a", [4, 8], "bf16")
    w = f.input("w", [6, 8], "bf16")
    f.output(f.linear(a, w))
    return f


def test_inputs_bind_by_position_and_by_name(linear: Fusion):
    rng = _rng()
    xs, ws = _normal(rng, (4, 8), BF16), _normal(rng, (6, 8), BF16)
    (by_position,) = reference(linear, xs, ws)
    (by_name,) = reference(linear, w=ws, a=xs)
    (mixed,) = reference(linear, xs, w=ws)
    np.testing.assert_array_equal(by_name, by_position)
    np.testing.assert_array_equal(mixed, by_position)


BAD_CALLS = [
    (lambda xs, ws: ((xs,), {}), r"missing inputs \['w'\]"),
    (lambda xs, ws: ((xs, ws, ws), {}), r"expected at most 2 inputs \['a', 'w'\], found 3"),
    (lambda xs, ws: ((xs, ws[:5]), {}), r"input 'w': expected shape \[6, 8\], found \[5, 8\]"),
    (
        lambda xs, ws: ((xs.astype(np.float32), ws), {}),
        "input 'a': expected dtype bfloat16, found float32",
    ),
    (lambda xs, ws: ((xs.tolist(), ws), {}), "input 'a': expected a numpy array"),
    (lambda xs, ws: ((xs, ws), {"bias": ws}), r"no input named 'bias'; inputs are \['a', 'w'\]"),
    (lambda xs, ws: ((xs, ws), {"a": xs}), "input 'a': given both by position and by name"),
]


@pytest.mark.parametrize("call,message", BAD_CALLS)
def test_bad_inputs_name_the_input(linear: Fusion, call, message: str):
    rng = _rng()
    xs, ws = _normal(rng, (4, 8), BF16), _normal(rng, (6, 8), BF16)
    args, named = call(xs, ws)
    with pytest.raises(FusionError, match=message):
        reference(linear, *args, **named)


def test_reference_rejects_what_is_not_a_fusion():
    with pytest.raises(FusionError, match="expected a Fusion, a builtin.module or a func.func"):
        reference(42)  # type: ignore[arg-type]
