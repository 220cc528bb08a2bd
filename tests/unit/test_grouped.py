"""Grouped linears: the front end, the op's roles, the reference and the interp back end,
each against a float64 computation of its own, on ragged groups (empty ones included)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import mmcomp
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion

BF16 = np.dtype(ml_dtypes.bfloat16)


def _rng() -> np.random.Generator:
    return np.random.default_rng()


def _normal(rng: np.random.Generator, shape: Any, dtype: Any = BF16) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _offsets(rng: np.random.Generator, groups: int, rows: int, empty: int = 0) -> np.ndarray:
    """Cumulative ends of `groups` ragged groups over `rows` rows, `empty` of them empty."""
    sizes = rng.multinomial(rows, rng.dirichlet(np.full(groups, 2.0)))
    if empty:
        chosen = rng.choice(groups, size=min(empty, groups), replace=False)
        for group in chosen:
            target = (group + 1) % groups
            sizes[target] += sizes[group]
            sizes[group] = 0
    return np.cumsum(sizes).astype(np.int32)


def _grouped64(x: np.ndarray, w: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The float64 product, row by row: row t of group g times w[g]^T; NaN past the end."""
    out = np.full((x.shape[0], w.shape[1]), np.nan)
    start = 0
    for group, end in enumerate(offsets.tolist()):
        for row in range(start, end):
            out[row] = w[group].astype(np.float64) @ x[row].astype(np.float64)
        start = end
    return out


def _close(found: np.ndarray, expected: np.ndarray, rows: int, tol: float = 1e-5) -> None:
    """Relative error of the first `rows` rows below `tol`; the rows after are NaN."""
    assert np.isnan(found[rows:]).all()
    found64 = found[:rows].astype(np.float64)
    scale = max(float(np.abs(expected[:rows]).max(initial=0.0)), 1e-30)
    assert float(np.abs(found64 - expected[:rows]).max(initial=0.0)) / scale < tol


def _moe_fusion(groups: int, n: int, k: int, rows: Any = "t") -> Fusion:
    f = Fusion("grouped")
    x = f.input("x", [rows, k], "bf16")
    w = f.input("w", [groups, n, k], "bf16")
    offsets = f.input("offsets", [groups], "i32")
    f.output(f.grouped_linear(x, w, offsets))
    return f


@pytest.mark.parametrize("groups", [1, 3, 8])
@pytest.mark.parametrize("rows", [1, 7, 40])
def test_reference_matches_float64(groups: int, rows: int):
    rng = _rng()
    f = _moe_fusion(groups, 24, 32)
    x, w = _normal(rng, (rows, 32)), _normal(rng, (groups, 24, 32))
    offsets = _offsets(rng, groups, rows, empty=groups // 3)
    (y,) = mmcomp.reference(f, x, w, offsets)
    assert y.dtype == np.float32 and y.shape == (rows, 24)
    _close(y, _grouped64(x, w, offsets), rows)


def test_rows_past_the_last_offset_are_nan():
    rng = _rng()
    f = _moe_fusion(3, 16, 16)
    x, w = _normal(rng, (12, 16)), _normal(rng, (3, 16, 16))
    offsets = np.array([2, 2, 9], np.int32)
    (y,) = mmcomp.reference(f, x, w, offsets)
    _close(y, _grouped64(x, w, offsets), 9)


def test_static_rows_and_every_group_empty():
    rng = _rng()
    f = _moe_fusion(4, 16, 16, rows=5)
    x, w = _normal(rng, (5, 16)), _normal(rng, (4, 16, 16))
    (y,) = mmcomp.reference(f, x, w, np.zeros(4, np.int32))
    assert np.isnan(y).all()


def test_bias_per_group_and_epilogue():
    rng = _rng()
    f = Fusion("biased")
    x = f.input("x", ["t", 32], "f16")
    w = f.input("w", [3, 16, 32], "f16")
    bias = f.input("bias", [3, 16], "f32")
    offsets = f.input("offsets", [3], "i32")
    t = f.input("t", ["t", 16], "f32")
    y = f.grouped_linear(x, w, offsets, bias)
    f.output(f.cast(f.gelu(y) + t, "bf16"))
    xs, ws = _normal(rng, (20, 32), np.float16), _normal(rng, (3, 16, 32), np.float16)
    bs, ts = _normal(rng, (3, 16), np.float32), _normal(rng, (20, 16), np.float32)
    offs = _offsets(rng, 3, 20, empty=1)
    (out,) = mmcomp.reference(f, xs, ws, bs, offs, ts)
    product = _grouped64(xs, ws, offs)
    groups = np.searchsorted(offs, np.arange(20), side="right")
    biased = product + bs.astype(np.float64)[groups]
    inner = np.sqrt(2 / np.pi) * (biased + 0.044715 * biased**3)
    expected = 0.5 * biased * (1 + np.tanh(inner)) + ts
    assert out.dtype == BF16
    _close(out.astype(np.float32), expected, 20, tol=1e-2)


def test_swiglu_of_two_grouped_linears_with_router_weights():
    """silu(x Wg[g]^T) * (x Wu[g]^T) * r, r [T, 1] per row: one fusion, one partition."""
    rng = _rng()
    f = Fusion("swiglu")
    x = f.input("x", ["t", 32], "bf16")
    wg = f.input("wg", [8, 16, 32], "bf16")
    wu = f.input("wu", [8, 16, 32], "bf16")
    offsets = f.input("offsets", [8], "i32")
    r = f.input("r", ["t", 1], "f32")
    gate = f.grouped_linear(x, wg, offsets)
    up = f.grouped_linear(x, wu, offsets, scale=r)
    f.output(f.silu(gate) * up)
    assert mmcomp.roles_of(r) == ("m", "_")
    rows = 33
    xs, wgs, wus = _normal(rng, (rows, 32)), _normal(rng, (8, 16, 32)), _normal(rng, (8, 16, 32))
    rs = rng.random((rows, 1)).astype(np.float32)
    offs = _offsets(rng, 8, rows, empty=3)
    (out,) = mmcomp.reference(f, xs, wgs, wus, offs, rs)
    g64, u64 = _grouped64(xs, wgs, offs), _grouped64(xs, wus, offs)
    expected = g64 / (1 + np.exp(-g64)) * u64 * rs.astype(np.float64)
    _close(out, expected, rows)


def test_masked_layout():
    rng = _rng()
    f = Fusion("masked")
    x = f.input("x", [4, 6, 16], "bf16")
    w = f.input("w", [4, 8, 16], "bf16")
    counts = f.input("counts", [4], "i32")
    bias = f.input("bias", [4, 8], "bf16")
    y = f.grouped_linear(x, w, bias=bias, counts=counts)
    assert y.shape == (4, 6, 8)
    assert mmcomp.roles_of(x) == ("g", "m", "k") and mmcomp.roles_of(y) == ("g", "m", "n")
    f.output(f.relu(y))
    xs, ws, bs = _normal(rng, (4, 6, 16)), _normal(rng, (4, 8, 16)), _normal(rng, (4, 8))
    cs = np.array([6, 0, 1, 3], np.int32)
    (out,) = mmcomp.reference(f, xs, ws, cs, bs)
    for group, count in enumerate(cs.tolist()):
        product = xs[group, :count].astype(np.float64) @ ws[group].astype(np.float64).T
        expected = np.maximum(product + bs[group].astype(np.float64), 0)
        found = out[group, :count].astype(np.float64)
        scale = max(float(np.abs(expected).max(initial=1.0)), 1.0)
        assert np.abs(found - expected).max(initial=0.0) <= 1e-5 * scale
        assert np.isnan(out[group, count:]).all()


def test_roles_and_space():
    f = _moe_fusion(8, 64, 32)
    x, w, offsets = f.inputs
    assert mmcomp.roles_of(x) == ("m", "k")
    assert mmcomp.roles_of(w) == ("g", "n", "k")
    assert mmcomp.roles_of(offsets) == ("g",)
    assert mmcomp.roles_of(f.outputs[0]) == ("m", "n")
    from mmcomp.analysis.roles import iteration_space

    assert iteration_space(f.func) == {"g": 8, "m": mmcomp.DYNAMIC, "n": 64, "k": 32}


def test_printed_form_parses_back():
    f = _moe_fusion(3, 16, 16)
    again = mmcomp.parse(str(f))
    assert str(again) == str(f)
    assert [value.dtype for value in again.inputs] == ["bf16", "bf16", "i32"]


def test_interp_back_end_runs_it():
    rng = _rng()
    f = _moe_fusion(3, 16, 32)
    kernel = mmcomp.compile(f, backend="interp")
    assert "fusion.space = #fusion.space<g = 3" in kernel.ir("propagate-axis-mapping")
    for rows in (1, 17):
        x, w = _normal(rng, (rows, 32)), _normal(rng, (3, 16, 32))
        offsets = _offsets(rng, 3, rows, empty=1)
        (y,) = kernel(x, w, offsets)
        _close(y, _grouped64(x, w, offsets), rows)


def test_bad_offsets_values_are_named():
    rng = _rng()
    f = _moe_fusion(3, 16, 16)
    x, w = _normal(rng, (8, 16)), _normal(rng, (3, 16, 16))
    with pytest.raises(FusionError, match=r"offsets\[1\] = 2: expected an offset in \[5, 8\]"):
        mmcomp.reference(f, x, w, np.array([5, 2, 8], np.int32))
    with pytest.raises(FusionError, match=r"offsets\[2\] = 9: expected an offset in \[5, 8\]"):
        mmcomp.reference(f, x, w, np.array([5, 5, 9], np.int32))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda f, x, w, o, x3: f.grouped_linear(x, w),
            "expected one of 'offsets' .* and 'counts' .*, found neither",
        ),
        (
            lambda f, x, w, o, x3: f.grouped_linear(x, w, o, counts=o),
            "found both",
        ),
        (
            lambda f, x, w, o, x3: f.grouped_linear(x3, w, o),
            r"argument 'x': expected rank 2 \(\[T, K\], with 'offsets'\), found rank 3",
        ),
        (
            lambda f, x, w, o, x3: f.grouped_linear(x, w, counts=o),
            r"argument 'x': expected rank 3 \(\[G, Mmax, K\], with 'counts'\), found rank 2",
        ),
        (
            lambda f, x, w, o, x3: f.grouped_linear(x, w, x),
            r"argument 'offsets': expected an i32 input of shape \[4\]",
        ),
        (
            lambda f, x, w, o, x3: f.grouped_linear(x, w, o, scale=x),
            r"argument 'scale': expected shape \[\?, 1\]",
        ),
        (
            lambda f, x, w, o, x3: f.add(o, 1.0),
            "'lhs': Value\\('o'.*is i32, the group sizes of a grouped_linear",
        ),
        (
            lambda f, x, w, o, x3: f.grouped_linear(x, f.input("d", [4, 8, 16], "bf16"), o),
            r"argument 'w': expected K = 32 \(the last axis of 'x'\) at axis 2, found 16",
        ),
    ],
)
def test_front_end_errors(build: Any, message: str):
    f = Fusion("bad")
    x = f.input("x", ["t", 32], "bf16")
    w = f.input("w", [4, 8, 32], "bf16")
    o = f.input("o", [4], "i32")
    x3 = f.input("x3", [4, 5, 32], "bf16")
    with pytest.raises(FusionError, match=message):
        build(f, x, w, o, x3)


def test_i32_dtype_spellings():
    import torch

    f = Fusion("dtypes")
    for index, dtype in enumerate(("i32", "int32", np.int32, np.dtype("int32"), torch.int32)):
        assert f.input(f"o{index}", [4], dtype).dtype == "i32"
    with pytest.raises(FusionError, match="or i32 \\(the group sizes"):
        f.input("bad", [4], "int64")


def test_i32_input_used_elsewhere_is_refused_on_parse():
    text = """
    func.func @f(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %o: tensor<4xi32>)
        -> tensor<4x16xf32> {
      %0 = fusion.linear %x, %w : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xf32>
      %1 = "fusion.cast"(%o) : (tensor<4xi32>) -> tensor<4xf32>
      func.return %0 : tensor<4x16xf32>
    }
    """
    with pytest.raises(FusionError, match="fusion.cast"):
        mmcomp.parse(text)
