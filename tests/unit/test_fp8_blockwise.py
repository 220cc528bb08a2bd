"""Block-wise fp8 scales (1 x 128 groups of `a`, 128 x 128 blocks of `w`), end to end.

Each 128-wide K block's product is promoted into the f32 accumulator with its scales
(docs/fp8.md): the CPU executor against float64 of the dequantized inputs (computed here
with numpy alone), the schedule rules block-wise scales impose, the heuristic's choices for
them, the cuda kernel on the CPU (ptxas without spills; the PTX value model running the
emitted kernel), and on the GPU (marked `gpu`: each case in a child process, `python
test_fp8_blockwise.py CASE`, fresh inputs, poisoned outputs, against float64).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from typing import Any

import numpy as np
import pytest
from cases import relative_error, run_child
from test_fp8 import (
    HAS_NVDISASM,
    HAS_PTXAS,
    dequantized_linear,
    fp8_inputs,
    scale_shapes,
    scaled_linear,
)

import mmcomp
from mmcomp.arch import ptxas
from mmcomp.backend import build_cuda_kernel
from mmcomp.backend.kernel import lower_to_ptx
from mmcomp.dialects.sched.problem import Problem
from mmcomp.errors import ScheduleError
from mmcomp.pipeline import run_pipeline
from mmcomp.schedule.heuristics import choose_params

SCALE_BLOCK = 128
PINGPONG = {"tile": (64, 128, 128), "warp_specialization": "pingpong"}


@pytest.mark.parametrize(
    ("shape", "extra", "keywords"),
    [
        ((1, 300, 600), {}, {}),
        ((131, 257, 1000), {"bias": True, "activation": "gelu"}, {}),
        ((200, 400, 384), {"out": "bf16"}, PINGPONG),
        ((130, 260, 700), {}, {"split_k": 2}),
        ((300, 200, 520), {}, {"tile": (128, 64, 128), "swap_ab": True}),
    ],
    ids=["m1", "primes_bias_gelu", "pingpong_bf16", "split_k", "swap_ab_n64"],
)
def test_executor_matches_float64(
    shape: tuple[int, int, int], extra: dict[str, Any], keywords: dict[str, Any]
):
    """The CPU executor's per-K-block promotion equals the dequantized product (f32)."""
    rng = np.random.default_rng()
    f = scaled_linear(*shape, "block", "f8e4m3", "f8e5m2", **{"out": "f32", **extra})
    kernel = mmcomp.compile(f, backend="interp", **keywords)
    inputs = fp8_inputs(f, rng)
    (got,) = kernel(*inputs)
    want = dequantized_linear(*inputs[:4], "block")
    if "bias" in extra:
        want = want + inputs[4].astype(np.float64)
    if extra.get("activation") == "gelu":
        (want,) = mmcomp.reference(f, *inputs, accumulate=np.float64)
    tolerance = 1e-2 if extra.get("out") == "bf16" else 1e-5
    assert relative_error(np.asarray(got, dtype=np.float64), np.asarray(want)) < tolerance


def test_matmul_and_horizontal_fusion_share_a_and_its_scale():
    """A matmul's b [K, N] (scale [ceil(K/128), ceil(N/128)]) and two linears sharing A and
    its block scale, on the executor."""
    rng = np.random.default_rng()
    m, n, k = 70, 200, 300
    f = mmcomp.Fusion("shared_a")
    a = f.input("a", [m, k], "f8e4m3")
    w1 = f.input("w1", [n, k], "f8e4m3")
    w2 = f.input("w2", [n, k], "f8e5m2")
    sa_shape, sb_shape = scale_shapes("block", m, n, k)
    sa = f.input("scale_a", sa_shape, "f32")
    s1 = f.input("scale_w1", sb_shape, "f32")
    s2 = f.input("scale_w2", sb_shape, "f32")
    f.output(f.linear(a, w1, scale_a=sa, scale_b=s1))
    f.output(f.silu(f.linear(a, w2, scale_a=sa, scale_b=s2)))
    inputs = fp8_inputs(f, rng)
    got = mmcomp.compile(f, backend="interp")(*inputs)
    first = dequantized_linear(inputs[0], inputs[1], inputs[3], inputs[4], "block")
    second = dequantized_linear(inputs[0], inputs[2], inputs[3], inputs[5], "block")
    assert relative_error(np.asarray(got[0], np.float64), first) < 1e-5
    assert relative_error(np.asarray(got[1], np.float64), second / (1 + np.exp(-second))) < 1e-5

    g = mmcomp.Fusion("matmul_block")
    x = g.input("x", [m, k], "f8e4m3")
    b = g.input("b", [k, n], "f8e4m3")
    sx = g.input("scale_a", [m, -(-k // SCALE_BLOCK)], "f32")
    sb = g.input("scale_b", [-(-k // SCALE_BLOCK), -(-n // SCALE_BLOCK)], "f32")
    g.output(g.matmul(x, b, scale_a=sx, scale_b=sb))
    arrays = fp8_inputs(g, rng)
    (got_matmul,) = mmcomp.compile(g, backend="interp")(*arrays)
    (want,) = mmcomp.reference(g, *arrays, accumulate=np.float64)
    assert relative_error(np.asarray(got_matmul, np.float64), np.asarray(want)) < 1e-5


@pytest.mark.parametrize(
    ("shape", "bias", "tile_n"),
    [
        ((8192, 8192, 8192), False, 256),
        ((4096, 14336, 5120), False, 256),
        ((8192, 8192, 8192), True, 128),
        ((16, 14336, 4096), False, 128),
    ],
)
def test_heuristic_schedules_for_block_wise(shape: tuple[int, int, int], bias: bool, tile_n: int):
    """The heuristic gives block-wise scales tile k 128 (one scale block per ring stage), no
    swap-AB and no stream-K, wgmma chunks of at most one N block, and the widest tile whose
    accumulators and partials fit the registers: 128x256 for a lone GEMM (128 accumulators
    and one 64-register partial per thread), 128x128 beside a bias row."""
    f = scaled_linear(*shape, "block", bias=bias)
    _, params, _ = run_pipeline(f.module, {}, until="choose-schedule")
    assert params.tile[2] == SCALE_BLOCK and params.tile[1] == tile_n
    assert params.instr[1] == min(tile_n, SCALE_BLOCK)
    assert not params.swap_ab and params.strategy == "persistent"


def test_block_wise_register_model_counts_the_partials_in_flight():
    """The register model counts the block-wise partials a consumer thread holds at once:
    one 64 x 128 chunk (64 registers) of a 128x256 or 256x128 tile, two 64 x 64 ones of two
    64-wide contractions (pipelined), none without block-wise scales."""
    problem = Problem({"m": 8192, "n": 8192, "k": 8192}, element_bytes=1, block_scaled=True)
    wide = choose_params(problem, tile=(128, 256, 128))
    assert wide.instr == (64, 128, 32)
    assert wide.consumer_registers(problem)["block-wise partials"] == 64
    assert wide.block_partials_in_flight(2) == 1
    tall = choose_params(problem, tile=(256, 128, 128))
    assert tall.consumer_registers(problem)["block-wise partials"] == 64
    pair = dataclasses.replace(problem, contractions=2, b_operands=2)
    narrow = choose_params(pair, tile=(128, 64, 128))
    assert narrow.block_partials_in_flight(2) == 2
    assert narrow.consumer_registers(pair)["block-wise partials"] == 64
    plain = dataclasses.replace(problem, block_scaled=False)
    assert wide.consumer_registers(plain)["block-wise partials"] == 0


def test_wgmma_chunks_across_n_blocks_are_refused():
    """A wgmma n wider than an N block would promote columns of two N blocks with one
    scale: the params' check refuses it, naming the instruction and what fits."""
    problem = Problem({"m": 1024, "n": 1024, "k": 1024}, element_bytes=1, block_scaled=True)
    params = choose_params(problem, tile=(128, 256, 128)).replace(instr=(64, 256, 32))
    with pytest.raises(ScheduleError, match=r"instr m64n256k32: .* \(m64n128k32 or narrower\)"):
        params.check(problem)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"tile": (128, 128, 256)}, r"block-wise scales need tile k = 128 .* found 256"),
        ({"tile": (128, 192, 128)}, r"tile n that divides 128 or is a multiple of it"),
        ({"tile": (128, 256, 128)}, r"block-wise partials 64, rows 64"),
    ],
    ids=["tile_k", "tile_n", "registers"],
)
def test_schedules_block_wise_scales_cannot_take_are_refused(
    keywords: dict[str, Any], message: str
):
    """A tile k other than 128, a tile n across N blocks, and tiles whose accumulators,
    block partial and epilogue (here a bias row) do not fit the registers are refused,
    naming the rule."""
    f = scaled_linear(1024, 1024, 1024, "block", bias=True)
    with pytest.raises(ScheduleError, match=message):
        mmcomp.compile(f, backend="interp", **keywords)


def shared_a(m: int, n: int, k: int) -> mmcomp.Fusion:
    """Two block-scaled linears of one A and its scale (a horizontal fusion), f32 outputs."""
    f = mmcomp.Fusion("shared_a")
    a = f.input("a", [m, k], "f8e4m3")
    w1 = f.input("w1", [n, k], "f8e4m3")
    w2 = f.input("w2", [n, k], "f8e4m3")
    sa_shape, sb_shape = scale_shapes("block", m, n, k)
    sa = f.input("scale_a", sa_shape, "f32")
    s1 = f.input("scale_w1", sb_shape, "f32")
    s2 = f.input("scale_w2", sb_shape, "f32")
    f.output(f.linear(a, w1, scale_a=sa, scale_b=s1))
    f.output(f.linear(a, w2, scale_a=sa, scale_b=s2))
    return f


# The cuda kernel on the CPU


def test_swapped_block_wise_kernels_are_refused():
    """The cuda mainloop promotes unswapped fragments only: swap_ab is refused, naming it."""
    f = scaled_linear(16, 512, 512, "block")
    with pytest.raises(ScheduleError, match=r"promoted on unswapped tiles .* with swap_ab"):
        mmcomp.compile(f, tile=(16, 128, 128), swap_ab=True)


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize(
    ("shape", "bias", "keywords"),
    [
        ((8192, 8192, 8192), False, {}),
        ((4096, 14336, 5120), False, {"epilogue": "registers"}),
        ((8192, 8192, 8192), True, {}),
        ((4096, 14336, 5120), False, {"tile": (256, 128, 128)}),
        ((16, 14336, 4096), True, {}),
        ((300, 1000, 1000), True, {}),
    ],
    ids=["wide", "wide_registers", "bias", "tall", "decode", "small"],
)
def test_block_wise_kernels_assemble_without_spills(
    shape: tuple[int, int, int], bias: bool, keywords: dict[str, Any]
):
    """The heuristic's block-wise kernels (128x256 where nothing else competes for the
    registers) and 256x128: 0 spills, k32 QGMMA, one fma per accumulator element and K
    block (the promotion), the scales read from global memory."""
    f = scaled_linear(*shape, "block", bias=bias)
    module, params, _ = run_pipeline(f.module, keywords)
    kernel = build_cuda_kernel(module)
    assert kernel.report is not None
    assert kernel.report.spills == 0 and kernel.report.stack_frame == 0
    elements = params.warpgroup[0] * params.warpgroup[1] // 128
    assert kernel.ptx.count("fma.rn.f32") >= elements
    assert "wgmma.wait_group.sync.aligned 0;" in kernel.ptx
    assert "ld.global.f32" in kernel.ptx
    if HAS_NVDISASM and kernel.cubin is not None:
        ptxas.check_sass(kernel.cubin, present=[r"QGMMA\.64x\d+x32"], absent=[ptxas.LOCAL_MEMORY])


WIDE = {"tile": (128, 256, 128)}
VALUE_CASES: dict[str, tuple[tuple[int, int, int], dict[str, Any], int | None]] = {
    "cooperative_ragged": ((70, 128, 300), {"tile": (128, 128, 128)}, None),
    "pingpong_m1": ((1, 64, 400), {"tile": (64, 64, 128), "warp_specialization": "pingpong"}, None),
    "split_k": ((40, 64, 520), {"tile": (128, 64, 128), "split_k": 2}, None),
    "wide_ragged_n_k": ((70, 300, 300), WIDE, 1),
    "wide_past_n": ((20, 100, 260), WIDE, None),
    "wide_pingpong_m1": (
        (1, 512, 400),
        {"tile": (64, 256, 128), "warp_specialization": "pingpong"},
        1,
    ),
    "wide_split_k": ((40, 256, 520), {**WIDE, "split_k": 2}, None),
    "tall_ragged": ((200, 100, 260), {"tile": (256, 128, 128)}, None),
}
"""PTX value model cases: shape, schedule (the registers epilogue, which it models) and
the CTAs run (None: one per work unit; 1: one CTA walks every tile, so that the ring goes
on from tile to tile). The 128x256 cases promote two 128-wide chunks per K block, with
two N blocks' scales: ragged N and K with the last tile's second N block partly past N
(`wide_ragged_n_k`), a second N block wholly past N (`wide_past_n`, its scale's load
guarded), ping-pong at M = 1 over two tiles, split-K 2; 256x128 promotes two m64 blocks
per consumer."""


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_emitted_kernel_promotes_each_k_block(name: str):
    """The emitted PTX, run by the value model (every thread; TMA, k32 wgmma, the scale
    loads and the promotion's fma), equals float64 of the dequantized inputs. With the
    promotion's row scales wrong (each element the first row's) the model's error was 0.41,
    with the first N block's scale for both chunks of a 128x256 tile 0.38: a real check."""
    from ptx_value_model import run_values

    shape, params, grid = VALUE_CASES[name]
    f = scaled_linear(*shape, "block", "f8e4m3", "f8e5m2", out="f32")
    module, _, _ = run_pipeline(f.module, {"epilogue": "registers", **params})
    text, plan = lower_to_ptx(module)
    inputs = fp8_inputs(f, np.random.default_rng())
    want = dequantized_linear(*inputs, "block")
    outputs = [np.full(want.shape, np.nan, np.float32)]
    (got,) = run_values(text, plan, inputs, outputs, grid=grid)
    assert relative_error(np.asarray(got, np.float64), want) < 1e-6


def test_two_contractions_pipeline_their_partials():
    """Two block-scaled linears of one A (a horizontal fusion) at 64-wide tiles: each K
    block's second fragment is issued before the first is promoted (`wgmma.wait_group 1`,
    two 32-register partials in flight), and the value model's result equals float64."""
    from ptx_value_model import run_values

    f = shared_a(40, 64, 300)
    module, params, _ = run_pipeline(f.module, {"epilogue": "registers", "tile": (128, 64, 128)})
    assert params.instr[1] == 64
    text, plan = lower_to_ptx(module)
    steps = re.findall(r"wgmma\.(commit_group|wait_group\.sync\.aligned \d)|(fma)\.rn\.f32", text)
    order = ["".join(step) for step in steps]
    first_wait = order.index("wait_group.sync.aligned 1")
    assert order[:first_wait] == ["commit_group", "commit_group"]
    assert order[first_wait + 1] == "fma"
    assert order.index("wait_group.sync.aligned 0") > first_wait + 1
    inputs = fp8_inputs(f, np.random.default_rng())
    outputs = [np.full((40, 64), np.nan, np.float32) for _ in range(2)]
    got = run_values(text, plan, inputs, outputs)
    for output, w, s in zip(got, inputs[1:3], inputs[4:6], strict=True):
        want = dequantized_linear(inputs[0], w, inputs[3], s, "block")
        assert relative_error(np.asarray(output, np.float64), want) < 1e-6


# On the GPU


GPU_CASES: dict[str, tuple[tuple[int, int, int], tuple[str, str], dict[str, Any]]] = {
    "e4m3_k8192": ((1024, 1024, 8192), ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "e5m2_k8192": ((512, 768, 8192), ("f8e5m2", "f8e5m2"), {"out": "f32"}),
    "mixed_m1": ((1, 4096, 4096), ("f8e4m3", "f8e5m2"), {"out": "f32"}),
    "primes_ragged_k": ((257, 1031, 1000), ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "odd_n_bf16": ((300, 1001, 1024), ("f8e4m3", "f8e4m3"), {}),
    "n200_bias_gelu": (
        (512, 200, 2048),
        ("f8e4m3", "f8e4m3"),
        {"bias": True, "activation": "gelu", "out": "f32"},
    ),
    "small": ((128, 256, 384), ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "wide_k8192": ((1024, 1024, 8192), ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "wide_ragged": ((257, 1031, 1000), ("f8e4m3", "f8e5m2"), {"out": "f32"}),
    "wide_small": ((200, 300, 384), ("f8e4m3", "f8e4m3"), {"out": "f32"}),
    "tall_ragged": ((300, 1001, 1024), ("f8e4m3", "f8e4m3"), {}),
}
"""Each case's shape (M, N, K), factor types and scaled_linear keywords; `small` and
`wide_small` are the sanitizer's (`compute-sanitizer --tool memcheck|racecheck python
tests/unit/test_fp8_blockwise.py small`). The `wide` cases run on 128x256 tiles (two N
blocks, the second of the last tile partly or wholly past N), `tall_ragged` on 256x128
(GPU_SCHEDULES); the others on the heuristic's tile."""

GPU_SCHEDULES: dict[str, dict[str, Any]] = {
    "wide_k8192": {"tile": (128, 256, 128)},
    "wide_ragged": {"tile": (128, 256, 128)},
    "wide_small": {"tile": (128, 256, 128)},
    "tall_ragged": {"tile": (256, 128, 128)},
}
"""The schedule keywords of the cases that do not run on the heuristic's tile."""

GPU_TOLERANCE = {"f32": 1e-3, "bf16": 1.5e-2}
"""The bound on the relative error of a block-wise kernel against float64 of its
dequantized inputs: each K block's 128 products in the fp8 wgmma's accumulator, promoted
into f32 (docs/fp8.md), then the output's rounding."""

GPU_CASE_TIMEOUT_S = 240
"""Seconds one case may take, compilation and the float64 reference included."""


def run_gpu_case(name: str) -> dict[str, Any]:
    """Compile one GPU case, run it on fresh inputs (outputs poisoned by the call), compare
    every output with float64."""
    if name == "horizontal":
        f = shared_a(700, 640, 3000)
    else:
        shape, (a_type, w_type), extra = GPU_CASES[name]
        f = scaled_linear(*shape, "block", a_type, w_type, **extra)
    kernel = mmcomp.compile(f, **GPU_SCHEDULES.get(name, {}))
    inputs = fp8_inputs(f, np.random.default_rng())
    got = kernel(*inputs)
    want = mmcomp.reference(f, *inputs, accumulate=np.float64)
    errors = [
        relative_error(np.asarray(g, np.float64), np.asarray(w, np.float64))
        for g, w in zip(got, want, strict=True)
    ]
    return {
        "case": name,
        "params": kernel.params.format(),
        "dtype": f.outputs[0].dtype,
        "error": max(errors),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("name", [*GPU_CASES, "horizontal"])
def test_block_wise_kernel_matches_float64(name: str):
    """The block-wise kernel's output is within the documented bound of float64."""
    report = run_child(
        ["-m", "test_fp8_blockwise", name], GPU_CASE_TIMEOUT_S, f"block-wise case {name}"
    )
    assert report["error"] < GPU_TOLERANCE[report["dtype"]], report


if __name__ == "__main__":
    print(json.dumps(run_gpu_case(sys.argv[1])), flush=True)
