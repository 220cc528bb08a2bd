"""Quantization to fp8 in the epilogue: `Fusion.quantize`, its ops, the saturating casts.

Each result is checked against float64: the dequantized values `q * scale` are within fp8
rounding of the float64 linear (half an ulp relative, 2^-4 for e4m3 and 2^-3 for e5m2,
plus half the smallest subnormal step times the scale), and the CPU executor's kernel
gives the reference's scales.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import mmcomp
from mmcomp.arch import ptxas
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.passes.propagate_axis_mapping import propagate

RELATIVE = {"f8e4m3": 2.0**-4, "f8e5m2": 2.0**-3}
"""Half an ulp of each fp8 type, relative to the value (3 and 2 mantissa bits)."""
SUBNORMAL = {"f8e4m3": 2.0**-10, "f8e5m2": 2.0**-17}
"""Half the smallest subnormal of each fp8 type (in units of the scale)."""


def _quantizing_linear(m: int, n: int, k: int, dtype: str, group: int | None):
    f = mmcomp.Fusion("quantized_linear")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    q, scale = f.quantize(f.silu(f.linear(a, w)), dtype, group=group)
    f.output(q)
    f.output(scale)
    return f


def _inputs(m: int, n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((n, k)).astype(ml_dtypes.bfloat16)
    return a, w


def _silu_linear64(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    y = a.astype(np.float64) @ w.astype(np.float64).T
    return y / (1.0 + np.exp(-y))


def _expanded(scale: np.ndarray, n: int, group: int | None) -> np.ndarray:
    if group is None:
        return np.repeat(scale[:, None].astype(np.float64), n, axis=1)
    return np.repeat(scale.astype(np.float64), 128, axis=1)[:, :n]


def _check_bound(q: np.ndarray, scale: np.ndarray, want: np.ndarray, dtype: str, group):
    expanded = _expanded(scale, want.shape[1], group)
    got = q.astype(np.float64) * expanded
    bound = RELATIVE[dtype] * np.abs(want) + SUBNORMAL[dtype] * expanded
    # f32 rounding of the accumulator and of the scale on top of fp8's own
    excess = np.abs(got - want) - bound * (1 + 1e-5) - 1e-6 * np.abs(want)
    assert excess.max() <= 0, f"dequantized values off by {excess.max()} beyond fp8 rounding"


@pytest.mark.parametrize(
    ("m", "n", "dtype", "group"),
    [
        (70, 300, "f8e4m3", 128),
        (1, 384, "f8e4m3", 128),
        (33, 64, "f8e5m2", 128),
        (70, 200, "f8e5m2", None),
        (5, 256, "f8e4m3", None),
    ],
)
def test_quantize_reference_and_interp(m: int, n: int, dtype: str, group: int | None):
    k = 96
    f = _quantizing_linear(m, n, k, dtype, group)
    a, w = _inputs(m, n, k, seed=m + n)
    want = _silu_linear64(a, w)
    q, scale = mmcomp.reference(f, a, w)
    assert q.dtype == np.dtype(ml_dtypes.finfo(getattr(ml_dtypes, _long(dtype))).dtype)
    groups = -(-n // 128)
    assert scale.shape == ((m, groups) if group else (m,))
    largest = float(ml_dtypes.finfo(q.dtype).max)
    magnitude = np.abs(want)
    amax = (
        magnitude.max(axis=1)
        if group is None
        else np.array(
            [[magnitude[r, g * 128 : (g + 1) * 128].max() for g in range(groups)] for r in range(m)]
        )
    )
    np.testing.assert_allclose(scale, amax / largest, rtol=1e-6)
    _check_bound(q, scale, want, dtype, group)
    kernel = mmcomp.compile(f, backend="interp")
    got_q, got_scale = kernel(a, w)
    np.testing.assert_allclose(got_scale, scale, rtol=1e-6)
    _check_bound(got_q, got_scale, want, dtype, group)
    # each group's largest element reaches the top of the fp8 range
    assert np.abs(got_q.astype(np.float32)).max() == largest


def _long(dtype: str) -> str:
    return {"f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}[dtype]


def test_quantize_zero_group_gives_zero_scale_and_values():
    f = _quantizing_linear(4, 256, 64, "f8e4m3", 128)
    a, w = _inputs(4, 256, 64, seed=1)
    w[128:] = 0  # the second group of every row is 0
    q, scale = mmcomp.compile(f, backend="interp")(a, w)
    assert np.all(scale[:, 1] == 0)
    assert np.all(q[:, 128:].astype(np.float32) == 0)
    assert np.all(scale[:, 0] > 0)


def test_quantize_with_a_given_scale_saturates():
    f = mmcomp.Fusion("static")
    a = f.input("a", [16, 64], "bf16")
    w = f.input("w", [128, 64], "bf16")
    s = f.input("s", [], "f32")
    q, scale = f.quantize(f.linear(a, w), "f8e4m3", scale=s)
    assert scale is s
    f.output(q)
    a_np, w_np = _inputs(16, 128, 64, seed=2)
    small = np.array(0.001, np.float32)  # y / s far beyond 448: saturates, no NaN
    (got,) = mmcomp.compile(f, backend="interp")(a_np, w_np, small)
    values = got.astype(np.float32)
    want = a_np.astype(np.float64) @ w_np.astype(np.float64).T
    assert not np.isnan(values).any()
    ratio = np.abs(want) / 0.001
    assert np.all(np.abs(values)[ratio >= 448] == 448)
    assert np.all(np.abs(values)[ratio < 416] < 448)
    assert (ratio >= 448).any() and (ratio < 416).any()
    (reference,) = mmcomp.reference(f, a_np, w_np, small)
    assert np.array_equal(reference.view(np.uint8), got.view(np.uint8))


@pytest.mark.parametrize(("dtype", "largest"), [("f8e4m3", 448.0), ("f8e5m2", 57344.0)])
def test_cast_to_fp8_saturates(dtype: str, largest: float):
    f = mmcomp.Fusion("cast")
    a = f.input("a", [8, 64], "bf16")
    w = f.input("w", [64, 64], "bf16")
    f.output(f.cast(f.linear(a, w) * 1.0e6, dtype))
    a_np, w_np = _inputs(8, 64, 64, seed=3)
    (got,) = mmcomp.reference(f, a_np, w_np)
    values = got.astype(np.float32)
    assert not np.isnan(values).any() and not np.isinf(values).any()
    assert np.abs(values).max() == largest
    (executed,) = mmcomp.compile(f, backend="interp")(a_np, w_np)
    assert np.array_equal(executed.view(np.uint8), got.view(np.uint8))


def test_quantize_refusals():
    f = mmcomp.Fusion("bad")
    a = f.input("a", [8, 300], "bf16")
    w = f.input("w", [512, 300], "bf16")
    y = f.linear(a, w)
    with pytest.raises(FusionError, match="argument 'group': expected 128"):
        f.quantize(y, group=64)
    with pytest.raises(FusionError, match="argument 'dtype': expected f8e4m3 or f8e5m2"):
        f.quantize(y, "bf16")
    other = mmcomp.Fusion("bad_scale")
    other_y = other.linear(other.input("a", [8, 300], "bf16"), other.input("w", [512, 300], "bf16"))
    with pytest.raises(FusionError, match=r"operand 'scale': expected shape \[\] \(per tensor\)"):
        other.quantize(other_y, scale=other.input("s", [3], "f32"))
    q, scale = f.quantize(y)
    f.output(q)
    f.output(scale)
    with pytest.raises(ScheduleError, match="tile n must be a multiple of 128"):
        mmcomp.compile(f, backend="interp", tile=(128, 64, 64))
    rows = mmcomp.Fusion("rows")
    a = rows.input("a", [8, 300], "bf16")
    w = rows.input("w", [512, 300], "bf16")
    q, scale = rows.quantize(rows.linear(a, w), group=None)
    rows.output(q)
    rows.output(scale)
    with pytest.raises(ScheduleError, match="tile n must cover n = 512"):
        mmcomp.compile(rows, backend="interp")


@pytest.mark.parametrize("group", [128, None])
@pytest.mark.parametrize("epilogue", ["offset", "divide"])
def test_the_executor_takes_no_amax_past_n(epilogue: str, group: int | None):
    """The epilogue's values past N (a ragged last tile) are no output's: an offset makes
    them 3, a division by a zero-padded operand NaN. The CPU executor's amax leaves them
    out (found by the fuzzer: `--backend interp --seed 2 --case 29 --feature fp8-only`,
    whose scales were NaN)."""
    m, n, k = 8, 100, 32
    f = mmcomp.Fusion("ragged_amax")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    y = f.linear(a, w)
    rng = np.random.default_rng(0)
    arrays = [  # y < 0 everywhere, |y| < 0.5
        np.abs(0.1 * rng.standard_normal((m, k))).astype(ml_dtypes.bfloat16),
        -np.abs(0.1 * rng.standard_normal((n, k))).astype(ml_dtypes.bfloat16),
    ]
    if epilogue == "offset":
        y = f.add(y, 0.5)  # in bounds, below 0.5; past N, exactly 0.5
    else:
        y = f.div(y, f.input("t", [1, n], "f32"))
        arrays.append(rng.uniform(0.5, 2.0, (1, n)).astype(np.float32))
    q, scale = f.quantize(y, "f8e4m3", group=group)
    f.output(q)
    f.output(scale)
    got = mmcomp.compile(f, backend="interp", tile=(128, 128, 64))(*arrays)
    want = mmcomp.reference(f, *arrays)
    got_scale, want_scale = (np.asarray(x, np.float64) for x in (got[1], want[1]))
    assert np.all(np.isfinite(got_scale))
    assert np.allclose(got_scale, want_scale, rtol=1e-6, atol=0)
    assert np.array_equal(np.asarray(got[0]).view(np.uint8), np.asarray(want[0]).view(np.uint8))


def test_a_row_quantization_that_no_tile_holds_names_no_tile():
    """A row's amax needs the whole row in one tile; where no such tile fits the registers,
    the refusal offers none of the narrower tiles (which the row rule refuses) (found by
    the fuzzer: `--backend interp --seed 1 --case 52 --feature fp8-only`)."""
    f = mmcomp.Fusion("rows_full")
    a = f.input("a", [128, 128], "bf16")
    w = f.input("w", [193, 128], "bf16")
    t = f.input("t", [128, 193], "f32")
    q, scale = f.quantize(f.add(f.linear(a, w), t), group=None)
    f.output(q)
    f.output(scale)
    with pytest.raises(ScheduleError, match="would spill; no tile fits") as refused:
        mmcomp.compile(f, backend="interp")
    assert "tiles that fit" not in str(refused.value)


def test_quantize_ir_round_trips():
    f = _quantizing_linear(64, 300, 96, "f8e4m3", 128)
    text = str(f)
    assert "= fusion.quantize_scale %1 for f8E4M3FN group 128 : " in text
    assert str(mmcomp.parse(text)) == text
    module = propagate(f)
    printed = str(module)
    assert "#fusion.roles<[m, n128]>" in printed
    assert str(mmcomp.parse(printed).module) == printed


# The cuda back end: fp8 outputs cast in the epilogue

HAS_PTXAS = ptxas.find_tool("ptxas") is not None

CAST_CASES: dict[str, tuple[tuple[int, int, int], str, str, dict[str, Any]]] = {
    "bf16_gelu_e4m3": ((256, 1024, 512), "bf16", "f8e4m3", {}),
    "bf16_m7_e5m2": ((7, 1024, 512), "bf16", "f8e5m2", {}),
    "fp8_row_e4m3_pingpong": (
        (300, 512, 1024),
        "f8e4m3",
        "f8e4m3",
        {"warp_specialization": "pingpong"},
    ),
    "bf16_split_k_e4m3": ((128, 256, 4096), "bf16", "f8e4m3", {"split_k": 2}),
}
"""Each case's shape (M, N, K), factor type, output type and schedule keywords."""


def _cast_fusion(m: int, n: int, k: int, factor: str, out: str) -> mmcomp.Fusion:
    """gelu(linear (+ bias)) cast to an fp8 output (row scales on fp8 factors)."""
    f = mmcomp.Fusion("cast_fp8")
    a = f.input("a", [m, k], factor)
    w = f.input("w", [n, k], factor)
    scales: dict[str, Any] = {}
    if factor != "bf16":
        scales = {
            "scale_a": f.input("scale_a", [m], "f32"),
            "scale_b": f.input("scale_b", [n], "f32"),
        }
    bias = f.input("bias", [n], "bf16")
    f.output(f.cast(f.gelu(f.linear(a, w, bias, **scales)), out))
    return f


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("name", list(CAST_CASES))
def test_fp8_output_kernels_assemble_without_spills(name: str):
    """ptxas assembles each kernel with an fp8 output (saturating pair conversions, 16-bit
    stores of the pairs) without spills."""
    shape, factor, out, schedule = CAST_CASES[name]
    kernel = mmcomp.compile(_cast_fusion(*shape, factor, out), **schedule)
    device = kernel.device_kernel
    assert device.report is not None
    assert device.report.spills == 0 and device.report.stack_frame == 0
    pair = {"f8e4m3": "e4m3x2", "f8e5m2": "e5m2x2"}[out]
    assert f"cvt.rn.satfinite.{pair}.f32" in device.ptx
    assert "st.global.b16" in device.ptx
    assert not kernel.params.swap_ab


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CAST_CASES))
def test_fp8_output_kernel_matches_the_reference(name: str):
    """The fp8 output of the cuda kernel is within fp8 rounding of float64 and saturates."""
    shape, factor, out, schedule = CAST_CASES[name]
    f = _cast_fusion(*shape, factor, out)
    kernel = mmcomp.compile(f, **schedule)
    rng = np.random.default_rng()
    arrays = []
    for value in f.inputs:
        if value.name is not None and value.name.startswith("scale"):
            arrays.append(np.asarray(rng.uniform(0.5, 1.5, value.shape), np.float32))
        else:
            arrays.append(rng.standard_normal(value.shape).astype(value.numpy_dtype))
    (got,) = kernel(*arrays)
    (want,) = mmcomp.reference(f, *arrays)
    got64, want64 = np.asarray(got).astype(np.float64), want.astype(np.float64)
    assert not np.isnan(got64).any()
    # one fp8 rounding apart at most, on top of the accumulation's own error: the bf16
    # wgmma keeps f32, the fp8 one about 14 mantissa bits (docs/fp8.md), 2^-13 of the sum
    # of the magnitudes of the products, through gelu (slope below 1.2)
    accumulation = 1e-6
    if factor != "bf16":
        named = {value.name: array for value, array in zip(f.inputs, arrays, strict=True)}
        a = np.abs(named["a"].astype(np.float64)) * named["scale_a"][:, None]
        w = np.abs(named["w"].astype(np.float64)) * named["scale_b"][:, None]
        accumulation = 1.2 * 2.0**-13 * (a @ w.T)
    ulp = 2.0 * RELATIVE[out] * np.abs(want64) + 2 * SUBNORMAL[out]
    assert np.all(np.abs(got64 - want64) <= ulp + (1 + RELATIVE[out]) * accumulation)
