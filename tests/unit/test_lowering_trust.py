"""The Hopper lowering on operands without an m or n axis, arrays past 2^32 elements, and
rows that are not a multiple of 16 bytes (CPU: plans, PTX and ptxas; the numbers are
checked on the GPU in test_lowering_trust_gpu.py)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from typing import Any

import cases
import pytest

import mmcomp
from mmcomp.arch import ptxas
from mmcomp.backend.kernel import lower_to_ptx
from mmcomp.errors import ScheduleError
from mmcomp.frontend.builder import Fusion
from mmcomp.pipeline import run_pipeline

needs_ptxas = pytest.mark.skipif(ptxas.find_tool("ptxas") is None, reason="needs ptxas")


def fms(a_shape: list[int], b_shape: list[int]) -> Fusion:
    """fused_multiply_sum of a and b over their last axis, cast to bf16."""
    f = Fusion("fms")
    a = f.input("a", a_shape, "bf16")
    b = f.input("b", b_shape, "bf16")
    f.output(f.cast(f.fused_multiply_sum(a, b, [len(a_shape) - 1]), "bf16"))
    return f


def plan_of(f: Fusion, **params: Any):
    """The launch plan and PTX of `f` under `params`."""
    module, _, _ = run_pipeline(f.module, params)
    text, plan = lower_to_ptx(module)
    return plan, text


# --- operands and outputs without an m or n axis -------------------------------------------


def test_operand_without_m_loads_whole_zero_filled_tiles():
    """a[1, 1, K] has roles [_, _, k]: its map views it as [1, K] with a box of the tile's
    128 rows, so the ring slot holds a whole tile and B's slot stays 1024-aligned."""
    plan, _ = plan_of(cases.broadcast_inputs(1, 512, 256), tile=(128, 128, 64), split_k=1)
    a, b = plan.tensor_maps[:2]
    assert (a.shape, a.box, a.axes, a.pitch) == ((1, 256), (128, 64), (-1, 2), 0)
    assert (b.shape, b.box, b.axes) == ((512, 256), (128, 64), (1, 2))
    assert a.tile_bytes == b.tile_bytes == 128 * 64 * 2
    assert all(stride % 16 == 0 for stride in a.byte_strides[:-1])


def test_operand_without_n_loads_whole_zero_filled_tiles():
    """b[1, 1, K] (N = 1) gets a box of the tile's n rows."""
    plan, _ = plan_of(fms([300, 1, 256], [1, 1, 256]), tile=(128, 64, 64), split_k=1)
    a, b = plan.tensor_maps[:2]
    assert (a.shape, a.box) == ((300, 256), (128, 64))
    assert (b.shape, b.box, b.axes) == ((1, 256), (64, 64), (-1, 2))


@needs_ptxas
@pytest.mark.parametrize(
    "params",
    [
        {"epilogue": "registers", "split_k": 1},
        {"epilogue": "smem", "split_k": 1},
        {"warp_specialization": "pingpong", "split_k": 1},
        {"warp_specialization": "none", "tile": (128, 128, 64), "split_k": 1},
        {"strategy": "one-tile-per-cta", "split_k": 1},
        {"split_k": 2, "tile": (128, 128, 64)},
        {"cluster": (1, 2), "tile": (128, 128, 64), "split_k": 1},
    ],
)
def test_m1_broadcast_compiles_under_every_schedule(params: dict[str, Any]):
    for fusion in (cases.broadcast_inputs(1, 512, 256), cases.broadcast_silu_mul(1, 512, 256)):
        assert mmcomp.compile(fusion, **params).report.spills == 0


def test_split_k_workspace_holds_whole_tiles():
    """The accumulator [1, 128] of an M = 1 fusion is still a 128 x 128 fragment tile in
    the workspace the kernel writes."""
    plan, _ = plan_of(cases.broadcast_inputs(1, 512, 256), tile=(128, 128, 64), split_k=2)
    partials = [
        shape
        for name, (shape, _) in zip(plan.arguments, plan.argument_types, strict=True)
        if name.startswith("partials")
    ]
    assert partials == [(2, 4, 128, 128)]


def test_operand_that_would_need_replicated_rows_is_refused():
    """A without an m axis while M > 1 (written as fusion.mma): a clear error."""
    a, b, y = "tensor<1x1x256xbf16>", "tensor<300x512x256xbf16>", "tensor<300x512xf32>"
    text = f"""
    func.func @rows(%a: {a}, %b: {b}) -> {y} {{
      %y = fusion.mma %a [_, _, k], %b [m, n, k] -> [m, n] : ({a}, {b}) -> {y}
      func.return %y : {y}
    }}
    """
    with pytest.raises(ScheduleError, match=r"%a \(roles \[_, _, k\]\) has no m axis while the"):
        mmcomp.compile(text, tile=(128, 128, 64))


# --- 64-bit offsets -------------------------------------------------------------------------


def sass_instructions(text: str) -> int:
    """SASS instructions of the assembled PTX."""
    assembled = ptxas.assemble(text)
    sass = ptxas.disassemble(assembled.cubin)
    return len(re.findall(r"/\*[0-9a-f]{4,}\*/\s+[@A-Z]", sass))


@needs_ptxas
def test_outputs_past_2_32_elements_get_64_bit_offsets():
    """[32768, 152064] has 4.98e9 elements: its addresses are summed in 64 bits (mad.wide),
    those of [32768, 16384] stay 32-bit; both assemble without spills, and the wide one
    costs a few percent more SASS instructions."""
    params = {"epilogue": "registers", "tile": (128, 256, 64), "split_k": 1}
    wide = mmcomp.compile(cases.linear(32768, 152064, 512), **params)
    narrow = mmcomp.compile(cases.linear(32768, 16384, 512), **params)
    assert 32768 * 152064 > 2**32 >= 32768 * 16384
    assert "mad.wide.u32" in wide.ptx and "mad.wide.u32" not in narrow.ptx
    assert wide.report.spills == narrow.report.spills == 0
    assert sass_instructions(wide.ptx) <= 1.1 * sass_instructions(narrow.ptx)


@needs_ptxas
def test_epilogue_operands_and_workspaces_past_2_32_elements():
    """An [M, N] epilogue operand and a split-K workspace of more than 2^32 floats."""
    silu = mmcomp.compile(
        cases.silu_mul(32768, 152064, 512), epilogue="registers", tile=(128, 128, 64)
    )
    assert silu.ptx.count("mad.wide.u32") >= 2 * 3  # y, t and the bf16 output, 2 row slots
    split = mmcomp.compile(
        cases.linear(65536, 65536, 512), epilogue="registers", split_k=2, tile=(128, 128, 64)
    )
    assert math.prod(split.device_kernel.plan.argument_types[3][0]) > 2**32
    assert "mad.wide.u32" in split.ptx
    assert silu.report.spills == split.report.spills == 0


def test_registered_cases_keep_32_bit_offsets():
    """Every case the GPU tests run has arrays below 2^32 elements: no wide offsets."""
    for selected in cases.CASES[:12]:
        _, text = plan_of(selected.fusion(), **selected.params)
        assert "mad.wide" not in text, selected.name


# --- rows that are not a multiple of 16 bytes ------------------------------------------------


def test_unaligned_rows_read_through_padded_staging_copies():
    """K = 100: A's rows of 200 bytes are staged in rows of 104 elements (208 bytes); B[K, N]
    with N = 7 in rows of 8; aligned operands read the argument itself."""
    plan, _ = plan_of(cases.matmul(300, 264, 100), split_k=1)
    a, b = plan.tensor_maps[:2]
    assert (a.shape, a.strides, a.pitch, a.rows) == ((300, 100), (104, 1), 104, 300)
    assert b.pitch == 0
    plan, _ = plan_of(cases.matmul(300, 7, 256), split_k=1)
    assert plan.tensor_maps[1].pitch == 8
    plan, _ = plan_of(cases.matmul(300, 263, 100, batch=2), split_k=1)
    a, b = plan.tensor_maps[:2]
    assert (a.shape, a.strides, a.rows) == ((2, 300, 100), (300 * 104, 104, 1), 600)
    assert (b.shape, b.strides, b.pitch) == ((2, 100, 263), (100 * 264, 264, 1), 264)
    for operand in plan.tensor_maps:
        assert all(stride % 16 == 0 for stride in operand.byte_strides[:-1])


@needs_ptxas
@pytest.mark.parametrize(
    "params",
    [
        {"split_k": 1},
        {"warp_specialization": "pingpong", "split_k": 1},
        {"warp_specialization": "none", "tile": (128, 128, 64), "split_k": 1},
        {"split_k": 2, "tile": (128, 128, 64)},
        {"epilogue": "smem", "split_k": 1, "tile": (128, 128, 64)},
        {"epilogue": "registers", "cluster": (2, 1), "tile": (128, 128, 64), "split_k": 1},
    ],
)
def test_any_k_and_odd_n_compile(params: dict[str, Any]):
    for fusion in (
        cases.linear(300, 264, 100),
        cases.linear(300, 264, 1001),
        cases.matmul(300, 263, 700),
        cases.row_ops(301, 263, 255),
    ):
        assert mmcomp.compile(fusion, **params).report.spills == 0


def test_compile_and_mmcomp_opt_agree_on_unaligned_rows(tmp_path):
    """Both take K = 100 (the CLI emitted PTX for it before; compile now does too)."""
    fusion = cases.linear(300, 264, 100)
    source = tmp_path / "k100.mlir"
    source.write_text(str(fusion))
    result = subprocess.run(
        [sys.executable, "-m", "mmcomp.cli", str(source), "-p", "compile-to-ptx", "-t", "ptx"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert ".entry linear" in result.stdout
    assert ".entry linear" in mmcomp.compile(fusion).ptx


@needs_ptxas
def test_staging_kernel_assembles():
    """The staging kernel: 0 spills, 16-bit loads and 32-bit stores in its SASS."""
    from mmcomp.runtime.staging import STAGE_ROWS, STAGE_ROWS_ENTRY

    assembled = ptxas.assemble(STAGE_ROWS)
    assert assembled.resources[STAGE_ROWS_ENTRY].spills == 0
    sass = ptxas.disassemble(assembled.cubin)
    assert "LDG.E.U16" in sass and "STG.E " in sass


def test_maps_read_strided_views_with_their_own_strides():
    """A map over an argument that is a strided view takes the view's strides; a view
    whose rows are 16-byte multiples is read in place although the plan stages it."""
    from mmcomp.runtime import DeviceArray
    from mmcomp.runtime.staging import array_strides, reads_in_place

    plan, _ = plan_of(cases.linear(300, 264, 100), split_k=1)
    a = plan.tensor_maps[0]
    assert a.pitch == 104
    compact = DeviceArray(1 << 20, (300, 100), "bfloat16")
    padded = DeviceArray(1 << 20, (300, 100), "bfloat16", (208, 2))
    assert not reads_in_place(a, compact)
    assert reads_in_place(a, padded)
    assert array_strides(a, padded) == (208, 2)
    assert not reads_in_place(a, DeviceArray((1 << 20) + 2, (300, 100), "bfloat16", (208, 2)))
    assert not reads_in_place(a, DeviceArray(1 << 20, (299, 100), "bfloat16", (208, 2)))
    plan, _ = plan_of(cases.broadcast_inputs(1, 512, 256), tile=(128, 128, 64), split_k=1)
    m_less = plan.tensor_maps[0]
    # The view [1, K] of a[1, 1, K]: the virtual row axis keeps the plan's stride.
    assert array_strides(m_less, DeviceArray(1 << 20, (1, 1, 256), "bfloat16")) == (512, 2)


@needs_ptxas
def test_bind_checks_the_view_each_map_reads():
    """a[M, K, 1] (C-contiguous: K has byte stride 2, its last axis extent 1) is read as the
    view [M, K] and bound; a strided view whose rows TMA cannot address is refused, naming
    the argument and the stride."""
    from mmcomp.backend.kernel import _check_arrays
    from mmcomp.errors import LaunchError
    from mmcomp.runtime import DeviceArray

    f = Fusion("trailing")
    a = f.input("a", [300, 256, 1], "bf16")
    b = f.input("b", [1, 256, 264], "bf16")
    f.output(f.cast(f.fused_multiply_sum(a, b, [1]), "bf16"))
    kernel = mmcomp.compile(f).device_kernel
    assert kernel.plan.tensor_maps[0].axes == (0, 1)
    arrays = [DeviceArray(1 << 20, shape, dtype) for _, shape, dtype in kernel.argument_specs()]
    _check_arrays(kernel, arrays)
    linear = mmcomp.compile(cases.linear(300, 264, 256)).device_kernel
    arrays = [DeviceArray(1 << 20, shape, dtype) for _, shape, dtype in linear.argument_specs()]
    arrays[0] = DeviceArray(1 << 20, (300, 256), "bfloat16", (520, 2))
    with pytest.raises(LaunchError, match=r"'a'.*byte stride 520 on axis 0"):
        _check_arrays(linear, arrays)
