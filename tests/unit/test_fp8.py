"""fp8 element types and scaled contractions, end to end (docs/fp8.md).

The front end (dtypes, scales and their modes, the errors), the IR's round trip through
mmcomp-opt, the reference against numpy in float64 on the dequantized inputs, the CPU
executor under the heuristic's fp8 schedules, and the cuda back end on the CPU (ptxas
without spills, k32 wgmma of both operand types). The GPU tests (marked `gpu`) run each
case in a child process (`python -m test_fp8 CASE`), with a timeout, against float64.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch
from cases import relative_error, run_child

import mmcomp
from mmcomp.arch import ptxas
from mmcomp.backend import build_cuda_kernel
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.interp.reference import reference
from mmcomp.pipeline import run_pipeline

HAS_PTXAS = ptxas.find_tool("ptxas") is not None
HAS_NVDISASM = ptxas.find_tool("nvdisasm") is not None
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
NUMPY = {"f8e4m3": E4M3, "f8e5m2": E5M2}
SCALE_BLOCK = 128


def scale_shapes(mode: str, m: int, n: int, k: int) -> tuple[list[int], list[int]]:
    """The shapes of a linear's scale_a and scale_b in `mode`."""
    blocks_k, blocks_n = -(-k // SCALE_BLOCK), -(-n // SCALE_BLOCK)
    return {
        "tensor": ([], []),
        "row": ([m], [n]),
        "block": ([m, blocks_k], [blocks_n, blocks_k]),
    }[mode]


def scaled_linear(
    m: int,
    n: int,
    k: int,
    mode: str,
    a_dtype: str = "f8e4m3",
    w_dtype: str = "f8e4m3",
    bias: bool = False,
    out: str = "bf16",
    activation: str | None = None,
) -> mmcomp.Fusion:
    """out(act(dequant(a) dequant(w)^T (+ bias))), the scales of `mode`."""
    f = mmcomp.Fusion("scaled_linear")
    a = f.input("a", [m, k], a_dtype)
    w = f.input("w", [n, k], w_dtype)
    shape_a, shape_b = scale_shapes(mode, m, n, k)
    scale_a = f.input("scale_a", shape_a, "f32")
    scale_b = f.input("scale_b", shape_b, "f32")
    b = f.input("bias", [n], "bf16") if bias else None
    y = f.linear(a, w, b, scale_a=scale_a, scale_b=scale_b)
    if activation == "gelu":
        y = f.gelu(y)
    elif activation == "silu":
        y = f.silu(y)
    f.output(f.cast(y, out) if out != "f32" else y)
    return f


def fp8_inputs(fusion: mmcomp.Fusion, rng: np.random.Generator) -> list[np.ndarray]:
    """Fresh inputs: fp8 factors from a standard normal, scales in [0.5, 1.5), others normal."""
    arrays: list[np.ndarray] = []
    for value in fusion.inputs:
        if value.dtype in NUMPY:
            arrays.append(rng.standard_normal(value.shape).astype(NUMPY[value.dtype]))
        elif value.name is not None and value.name.startswith("scale"):
            arrays.append(np.asarray(rng.uniform(0.5, 1.5, value.shape), dtype=np.float32))
        else:
            data = rng.standard_normal(value.shape).astype(np.float32)
            arrays.append(data.astype(value.numpy_dtype))
    return arrays


def dequantized_linear(
    a: np.ndarray, w: np.ndarray, scale_a: np.ndarray, scale_b: np.ndarray, mode: str
) -> np.ndarray:
    """float64 A W^T of the dequantized factors, computed here with numpy alone."""
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    sa, sb = scale_a.astype(np.float64), scale_b.astype(np.float64)
    if mode == "tensor":
        return (a64 * sa) @ (w64 * sb).T
    if mode == "row":
        return (a64 * sa[:, None]) @ (w64 * sb[:, None]).T
    k = a.shape[1]
    a_scales = np.repeat(sa, SCALE_BLOCK, axis=1)[:, :k]
    w_scales = np.repeat(np.repeat(sb, SCALE_BLOCK, axis=0), SCALE_BLOCK, axis=1)
    return (a64 * a_scales) @ (w64 * w_scales[: w.shape[0], :k]).T


# Front end


def test_fp8_dtypes_are_accepted_by_every_name():
    """Short names, numpy's and ml_dtypes' names and dtypes, and torch's dtypes."""
    f = mmcomp.Fusion("names")
    names: list[Any] = [
        "f8e4m3",
        "float8_e4m3fn",
        E4M3,
        torch.float8_e4m3fn,
        "f8e5m2",
        "float8_e5m2",
        E5M2,
        torch.float8_e5m2,
    ]
    values = [f.input(f"x{index}x", [4, 32], name) for index, name in enumerate(names)]
    assert [v.dtype for v in values] == ["f8e4m3"] * 4 + ["f8e5m2"] * 4
    assert values[0].numpy_dtype == E4M3 and values[4].numpy_dtype == E5M2
    assert "tensor<4x32xf8E4M3FN>" in str(f) and "tensor<4x32xf8E5M2>" in str(f)


def test_mixed_fp8_types_contract_and_others_do_not():
    """e4m3 x e5m2 is a contraction (what backward passes use); fp8 x bf16 is not."""
    f = mmcomp.Fusion("mixed")
    a = f.input("a", [8, 64], "f8e5m2")
    w = f.input("w", [16, 64], "f8e4m3")
    assert f.linear(a, w).dtype == "f32"
    x = f.input("x", [16, 64], "bf16")
    with pytest.raises(FusionError, match=r"argument 'w': expected dtype f8e5m2 \(that of 'a'\)"):
        f.linear(a, x)


@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
def test_scale_modes_print_and_parse(mode: str):
    """Each mode's scales print as `scales %a, %b` and parse back to the same IR."""
    f = scaled_linear(64, 96, 300, mode, bias=True)
    text = str(f)
    assert "fusion.linear %a, %w, %bias scales %scale_a, %scale_b" in text
    assert str(mmcomp.parse(text)) == text


def test_ir_round_trips_through_mmcomp_opt():
    """mmcomp-opt prints the scaled contractions as it parsed them, generic form included."""
    text = str(scaled_linear(64, 96, 300, "row", "f8e4m3", "f8e5m2", bias=True))
    opt = str(Path(sys.executable).parent / "mmcomp-opt")
    printed = subprocess.run([opt], input=text, capture_output=True, text=True, check=True)
    generic = subprocess.run(
        [opt, "--print-op-generic"], input=text, capture_output=True, text=True, check=True
    )
    back = subprocess.run([opt], input=generic.stdout, capture_output=True, text=True, check=True)
    assert printed.stdout.strip() == text.strip() == back.stdout.strip()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda f, a, w: f.linear(a, w, scale_a=f.input("sa", [], "f32")),
            r"argument 'scale_b': expected a scale, as 'scale_a' is given",
        ),
        (
            lambda f, a, w: f.linear(
                a, w, scale_a=f.input("sa", [7], "f32"), scale_b=f.input("sb", [48], "f32")
            ),
            r"operand 'scale_a': expected shape \[\] \(per-tensor\), \[64\] \(row-wise\) or "
            r"\[64, 3\] \(block-wise\) for 'a' of shape \[64, 300\], found \[7\]",
        ),
        (
            lambda f, a, w: f.linear(
                a, w, scale_a=f.input("sa", [64], "f32"), scale_b=f.input("sb", [1, 3], "f32")
            ),
            r"operand 'scale_b': expected shape \[48\] \(row-wise, as 'scale_a'\), found the "
            r"block-wise \[1, 3\]",
        ),
        (
            lambda f, a, w: f.linear(
                a, w, scale_a=f.input("sa", [], "bf16"), scale_b=f.input("sb", [], "f32")
            ),
            r"operand 'scale_a': expected element type f32, found bf16",
        ),
        (
            lambda f, a, w: f.linear(
                f.input("x", [64, 300], "bf16"),
                f.input("y", [48, 300], "bf16"),
                scale_a=f.input("sa", [], "f32"),
                scale_b=f.input("sb", [], "f32"),
            ),
            r"operand 'a': scales dequantize fp8 factors .* found bf16",
        ),
        (
            lambda f, a, w: f.fused_multiply_sum(
                f.input("x", [64, 1, 300], "f8e4m3"),
                f.input("y", [1, 48, 300], "f8e4m3"),
                2,
                scale_a=f.input("sa", [64, 1, 3], "f32"),
                scale_b=f.input("sb", [1, 1, 3], "f32"),
            ),
            r"expected shape \[\] \(per-tensor\) or \[64, 1\] \(row-wise\)",
        ),
    ],
    ids=["one_scale", "wrong_shape", "two_modes", "bf16_scale", "bf16_factors", "fms_block"],
)
def test_scale_errors_name_the_operand(build: Callable[..., Any], message: str):
    """A call with scales that do not fit raises FusionError naming what was expected."""
    f = mmcomp.Fusion("errors")
    a = f.input("a", [64, 300], "f8e4m3")
    w = f.input("w", [48, 300], "f8e4m3")
    with pytest.raises(FusionError, match=message):
        build(f, a, w)


# Reference and executor


@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
@pytest.mark.parametrize("types", [("f8e4m3", "f8e4m3"), ("f8e5m2", "f8e4m3")])
def test_reference_is_the_dequantized_product(mode: str, types: tuple[str, str]):
    """The reference's f32 result is numpy's float64 product of the dequantized factors."""
    rng = np.random.default_rng()
    m, n, k = 70, 200, 300
    f = scaled_linear(m, n, k, mode, *types, out="f32")
    inputs = fp8_inputs(f, rng)
    (got,) = reference(f, *inputs)
    want = dequantized_linear(*inputs, mode=mode)
    assert got.dtype == np.float32
    assert relative_error(got, want) < 1e-6


def test_matmul_and_fused_multiply_sum_scales():
    """matmul's b [K, N] takes [K/128, N/128] blocks; fused_multiply_sum a row-wise scale per
    factor's kept axes; both against numpy's float64."""
    rng = np.random.default_rng()
    m, n, k = 33, 130, 260
    f = mmcomp.Fusion("others")
    a = f.input("a", [m, k], "f8e4m3")
    b = f.input("b", [k, n], "f8e5m2")
    sa = f.input("scale_a", [m, 3], "f32")
    sb = f.input("scale_b", [3, 2], "f32")
    f.output(f.matmul(a, b, scale_a=sa, scale_b=sb))
    x = f.input("x", [m, 1, k], "f8e4m3")
    y = f.input("y", [1, n, k], "f8e4m3")
    sx = f.input("scale_x", [m, 1], "f32")
    sy = f.input("scale_y", [1, n], "f32")
    f.output(f.fused_multiply_sum(x, y, 2, scale_a=sx, scale_b=sy))
    arrays = fp8_inputs(f, rng)
    got = reference(f, *arrays)
    a64, b64, sa64, sb64, x64, y64, sx64, sy64 = (v.astype(np.float64) for v in arrays)
    a_scales = np.repeat(sa64, SCALE_BLOCK, axis=1)[:, :k]
    b_scales = np.repeat(np.repeat(sb64, SCALE_BLOCK, axis=0), SCALE_BLOCK, axis=1)[:k, :n]
    assert relative_error(got[0], (a64 * a_scales) @ (b64 * b_scales)) < 1e-6
    want = (x64[:, 0, :] * sx64) @ (y64[0] * sy64[0][:, None]).T
    assert relative_error(got[1], want) < 1e-6


@pytest.mark.parametrize(
    ("shape", "mode", "types"),
    [
        ((1, 200, 1000), "tensor", ("f8e4m3", "f8e4m3")),
        ((70, 96, 300), "row", ("f8e4m3", "f8e5m2")),
        ((130, 333, 256), "row", ("f8e5m2", "f8e5m2")),
        ((16, 640, 1024), "tensor", ("f8e5m2", "f8e4m3")),
    ],
    ids=["m1_tensor", "ragged_row", "odd_n_row", "small_m_tensor"],
)
def test_executor_runs_the_heuristics_fp8_schedules(
    shape: tuple[int, int, int], mode: str, types: tuple[str, str]
):
    """The CPU executor, on the cuda heuristic's schedule (K tile 128, k32, swap-AB at small
    M), matches the reference: bias, gelu and a bf16 output after the scales."""
    rng = np.random.default_rng()
    f = scaled_linear(*shape, mode, *types, bias=True, activation="gelu")
    _, params, _ = run_pipeline(f.module, {}, until="choose-schedule")
    assert params.tile[2] % 128 == 0 and params.instr[2] == 32
    if shape[0] <= 16:
        assert params.swap_ab
    keywords = {"tile": params.tile, "swap_ab": params.swap_ab, "split_k": params.split_k}
    kernel = mmcomp.compile(f, backend="interp", **keywords)
    inputs = fp8_inputs(f, rng)
    (got,) = kernel(*inputs)
    (want,) = reference(f, *inputs)
    assert relative_error(got, want.astype(np.float64)) < 1e-2


def test_torch_fp8_tensors_are_inputs():
    """torch float8_e4m3fn / float8_e5m2 tensors (and a 0-d scale) go in as they are."""
    rng = np.random.default_rng()
    f = scaled_linear(40, 72, 256, "tensor", "f8e4m3", "f8e5m2", out="f32")
    arrays = fp8_inputs(f, rng)
    a, w = (
        torch.from_numpy(array.view(np.uint8)).view(torch_dtype)
        for array, torch_dtype in ((arrays[0], torch.float8_e4m3fn), (arrays[1], torch.float8_e5m2))
    )
    tensors = [a, w, *(torch.from_numpy(np.asarray(array)) for array in arrays[2:])]
    (got,) = mmcomp.compile(f, backend="interp")(*tensors)
    assert isinstance(got, torch.Tensor)
    (want,) = reference(f, *arrays)
    assert relative_error(got.numpy(), want.astype(np.float64)) < 1e-5


# The cuda back end on the CPU


def test_mn_major_fp8_operand_is_refused():
    """wgmma reads fp8 K-major only: a matmul's b [K, N] is refused, with what to do."""
    f = mmcomp.Fusion("mn_major")
    a = f.input("a", [128, 256], "f8e4m3")
    b = f.input("b", [256, 128], "f8e4m3")
    f.output(f.cast(f.matmul(a, b), "bf16"))
    with pytest.raises(FusionError, match=r"operand 'b' .* must have K contiguous \(K-major\)"):
        mmcomp.compile(f)
    assert mmcomp.compile(f, backend="interp") is not None


@pytest.mark.parametrize("where", ["epilogue", "odd_output", "quantize_odd"])
def test_fp8_outside_contractions_is_refused_on_cuda(where: str):
    """The cuda epilogue reads bf16, f16 and f32 and writes fp8 only as an output (cast
    or quantized) of even rows: other fp8 values are refused."""
    f = mmcomp.Fusion("outside")
    a = f.input("a", [128, 256], "f8e4m3")
    w = f.input("w", [128 if where == "epilogue" else 127, 256], "f8e4m3")
    y = f.linear(a, w)
    if where == "epilogue":
        y = y * f.cast(f.input("t", [128, 128], "f8e4m3"), "f32")
    if where == "quantize_odd":
        q, scale = f.quantize(y)
        f.output(q)
        f.output(scale)
    else:
        f.output(f.cast(y, "f8e4m3" if where == "odd_output" else "bf16"))
    with pytest.raises(FusionError, match=r"the cuda back end takes fp8 as mma operands and as"):
        mmcomp.compile(f)


def test_odd_rows_of_a_staged_fp8_operand_are_refused():
    """Rows of an odd number of bytes cannot be staged (the copy moves 16-bit words)."""
    f = scaled_linear(64, 96, 301, "tensor")
    with pytest.raises(ScheduleError, match=r"rows of 301 bytes.* must be even"):
        mmcomp.compile(f)


PTX_CASES: dict[str, tuple[tuple[int, int, int], str, tuple[str, str], dict[str, Any]]] = {
    "per_tensor_e4m3": ((2048, 2048, 4096), "tensor", ("f8e4m3", "f8e4m3"), {}),
    "row_mixed_bias": ((1000, 1536, 1000), "row", ("f8e4m3", "f8e5m2"), {"bias": True}),
    "swap_ab_m16": ((16, 4096, 4096), "row", ("f8e5m2", "f8e5m2"), {}),
    "m1_gelu": ((1, 1024, 2048), "tensor", ("f8e4m3", "f8e4m3"), {"activation": "gelu"}),
    "f32_out_odd_n": ((256, 1001, 512), "row", ("f8e4m3", "f8e4m3"), {"out": "f32"}),
}


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("name", list(PTX_CASES))
def test_fp8_kernels_assemble_without_spills(name: str):
    """ptxas assembles each fp8 kernel without spills; its wgmmas are k32 of the two types."""
    shape, mode, (a_type, w_type), extra = PTX_CASES[name]
    f = scaled_linear(*shape, mode, a_type, w_type, **extra)
    module, params, _ = run_pipeline(f.module, {})
    kernel = build_cuda_kernel(module)
    assert kernel.report is not None
    assert kernel.report.spills == 0 and kernel.report.stack_frame == 0
    ptx_types = {"f8e4m3": "e4m3", "f8e5m2": "e5m2"}
    if params.swap_ab:
        a_type, w_type = w_type, a_type
    instruction = f"k32.f32.{ptx_types[a_type]}.{ptx_types[w_type]} "
    assert instruction in kernel.ptx
    assert "k16" not in kernel.ptx
    assert all(m.box[-1] == 128 for m in kernel.plan.tensor_maps[:2])
    if HAS_NVDISASM and kernel.cubin is not None:
        ptxas.check_sass(kernel.cubin, present=[r"QGMMA\.64x\d+x32"], absent=[ptxas.LOCAL_MEMORY])


# On the GPU


GPU_CASES: dict[str, tuple[tuple[int, int, int], str, tuple[str, str], dict[str, Any]]] = {
    "tensor_e4m3": ((1024, 1024, 4096), "tensor", ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "tensor_e5m2": ((1024, 1024, 4096), "tensor", ("f8e5m2", "f8e5m2"), {"out": "f32"}),
    "row_e4m3_ragged_k": ((1000, 1000, 1000), "row", ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "row_mixed_k4000": ((777, 1536, 4000), "row", ("f8e4m3", "f8e5m2"), {"out": "f32"}),
    "row_e5m2_bias_gelu": (
        (512, 768, 2048),
        "row",
        ("f8e5m2", "f8e5m2"),
        {"bias": True, "activation": "gelu", "out": "f32"},
    ),
    "tensor_m1": ((1, 4096, 4096), "tensor", ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "row_m16_swap_ab": ((16, 4096, 4096), "row", ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "row_odd_n_bf16": ((300, 1001, 1024), "row", ("f8e4m3", "f8e4m3"), {}),
}
"""Each case's shape (M, N, K), mode, factor types and scaled_linear keywords."""

GPU_TOLERANCE = {"f32": 1e-2, "bf16": 1.5e-2}
"""The bound on the relative error (max |got - want| / max |want|) of an fp8 kernel against
float64 of its dequantized inputs, K up to 4096: the inputs are exact, the error is the
wgmma's fp8 accumulation (docs/fp8.md) plus the output's rounding."""

GPU_CASE_TIMEOUT_S = 180
"""Seconds one case may take, compilation included (a hang fails it)."""


def run_gpu_case(name: str) -> dict[str, Any]:
    """Compile one GPU case, run it on fresh random inputs, compare with float64."""
    shape, mode, (a_type, w_type), extra = GPU_CASES[name]
    f = scaled_linear(*shape, mode, a_type, w_type, **extra)
    kernel = mmcomp.compile(f)
    inputs = fp8_inputs(f, np.random.default_rng())
    (got,) = kernel(*inputs)
    (want,) = reference(f, *inputs, accumulate=np.float64)
    return {
        "case": name,
        "params": kernel.params.format(),
        "dtype": f.outputs[0].dtype,
        "error": relative_error(np.asarray(got), np.asarray(want).astype(np.float64)),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_fp8_kernel_matches_float64(name: str):
    """The fp8 kernel's output is within the documented bound of float64."""
    report = run_child(["-m", "test_fp8", name], GPU_CASE_TIMEOUT_S, f"fp8 case {name}")
    assert report["error"] < GPU_TOLERANCE[report["dtype"]], report


if __name__ == "__main__":
    print(json.dumps(run_gpu_case(sys.argv[1])), flush=True)
