"""Epilogue subtiles (`epilogue_subtile`): the parameter, the heuristic's choice, ptxas
without spills at the tiles whose whole-tile epilogue was refused, and the PTX value model
running subtiled kernels of both epilogues against float64 (outputs poisoned with NaN).

The GPU runs of the same schedules are in tests/unit/test_epilogue_subtile_gpu.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cases
import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError

import mmcomp
from mmcomp.dialects.sched import Problem, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.frontend.builder import Fusion
from mmcomp.ir.registry import context
from mmcomp.schedule.heuristics import choose_params

PROBLEM = Problem({"m": 4096, "n": 4096, "k": 4096}, tile_operands=1, row_operands=1)
"""gelu(A W^T + bias) + residual: one [M, N] operand and one row."""

SUBTILED: dict[str, tuple[Callable[[int, int, int], Fusion], dict[str, Any], int]] = {
    "gelu_residual-128x256-smem": (
        cases.gelu_residual,
        {"tile": (128, 256, 64), "epilogue": "smem"},
        64,
    ),
    "gelu_residual-128x256-registers": (
        cases.gelu_residual,
        {"tile": (128, 256, 64), "epilogue": "registers"},
        64,
    ),
    "silu_mul-128x256-smem": (cases.silu_mul, {"tile": (128, 256, 64), "epilogue": "smem"}, 128),
    "silu_mul-128x256-registers": (
        cases.silu_mul,
        {"tile": (128, 256, 64), "epilogue": "registers"},
        128,
    ),
    "row_ops-128x256-registers": (
        cases.row_ops,
        {"tile": (128, 256, 64), "epilogue": "registers"},
        64,
    ),
    "silu_mul-pingpong-128x128": (
        cases.silu_mul,
        {"tile": (128, 128, 64), "warp_specialization": "pingpong"},
        64,
    ),
    "gated_residual-128x128": (cases.gated_residual, {"tile": (128, 128, 64)}, 64),
    "gelu_residual-128x256-none": (
        cases.gelu_residual,
        {"tile": (128, 256, 64), "warp_specialization": "none", "epilogue": "registers"},
        64,
    ),
    "gelu_residual-128x256-split_k": (
        cases.gelu_residual,
        {"tile": (128, 256, 64), "epilogue": "registers", "split_k": 2},
        16,
    ),
    "gelu_residual-128x256-stream-k": (
        cases.gelu_residual,
        {"tile": (128, 256, 64), "epilogue": "smem", "strategy": "stream-k"},
        64,
    ),
}
"""Forced schedules whose whole-tile epilogue does not fit the consumer registers: the
fusion, the keywords and the subtile the heuristic takes."""


def parse_params(text: str) -> ScheduleParams:
    """The params of a `#sched.params<...>` text."""
    attr = Parser(context(), text).parse_attribute()
    assert isinstance(attr, ScheduleParamsAttr)
    return attr.params


def test_the_subtile_prints_only_where_it_is_set():
    whole = ScheduleParams()
    assert "epilogue_subtile" not in whole.format()
    subtiled = whole.replace(epilogue_subtile=64)
    assert subtiled.format().endswith("epilogue = smem, epilogue_subtile = 64")
    assert parse_params(f"#sched.params<{subtiled.format()}>") == subtiled
    written = parse_params("#sched.params<tile = 128x256x64, epilogue_subtile = 32>")
    assert written.epilogue_subtile == 32 and written.written == {"tile", "epilogue_subtile"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("epilogue_subtile = 12", "a multiple of 8 columns dividing the warpgroup tile's n = 256"),
        ("epilogue_subtile = 96", "a multiple of 8 columns dividing the warpgroup tile's n = 256"),
        ("epilogue_subtile = -8", "must be 0 \\(the whole tile\\) or a positive number"),
    ],
)
def test_a_subtile_that_is_not_whole_blocks_is_refused(text: str, message: str):
    with pytest.raises(ParseError, match=message):
        parse_params(f"#sched.params<tile = 128x256x64, {text}>")


def test_the_staged_epilogue_takes_whole_boxes():
    """A subtile of the shared-memory epilogue is whole 128-byte boxes of each output."""
    with pytest.raises(ScheduleError, match="must be a multiple of 64"):
        choose_params(PROBLEM, tile=(128, 256, 64), epilogue="smem", epilogue_subtile=32)
    assert choose_params(PROBLEM, tile=(128, 256, 64), epilogue="registers", epilogue_subtile=32)


def test_the_quantizing_epilogue_is_not_subtiled():
    quantizing = Problem(
        {"m": 4096, "n": 4096, "k": 4096}, output_bytes=(1, 4), quantize=("group",)
    )
    with pytest.raises(ScheduleError, match="is not subtiled"):
        choose_params(quantizing, epilogue_subtile=64)
    assert ScheduleParams().subtiles(quantizing) == []


def test_the_register_rule_counts_one_subtile_of_operands():
    params = ScheduleParams.build({"tile": (128, 256, 64), "epilogue": "registers"})
    whole = params.consumer_registers(PROBLEM)
    assert (whole["[M, N] operands"], whole["rows"]) == (128, 64)
    subtiled = params.replace(epilogue_subtile=64).consumer_registers(PROBLEM)
    assert (subtiled["[M, N] operands"], subtiled["rows"]) == (32, 16)
    assert params.fitting_subtile(PROBLEM) == 64


@pytest.mark.parametrize("name", list(SUBTILED))
def test_the_heuristic_takes_the_widest_subtile_that_fits(name: str):
    build, keywords, subtile = SUBTILED[name]
    kernel = mmcomp.compile(build(4096, 4096, 4096), backend="interp", **keywords)
    assert kernel.params.epilogue_subtile == subtile


@pytest.mark.parametrize("family", ["linear", "gelu_bias", "silu_mul", "horizontal", "row_ops"])
def test_the_heuristic_keeps_the_whole_tile_where_it_fits(family: str):
    """The heuristic's own schedules (the tile left to it) keep the whole-tile epilogue."""
    fusion = getattr(cases, family)(4096, 4096, 4096)
    assert mmcomp.compile(fusion, backend="interp").params.epilogue_subtile == 0


def test_accumulators_that_do_not_fit_are_refused_without_a_subtile():
    """The horizontal fusion at 128x256: its two accumulators take 256 registers a thread,
    the whole register file of the consumers; no subtile of the epilogue helps."""
    with pytest.raises(ScheduleError, match=r"accumulators 256, addresses and indices 40") as info:
        mmcomp.compile(cases.horizontal(4096, 4096, 4096), backend="interp", tile=(128, 256, 64))
    assert "epilogue_subtile" not in str(info.value)


@pytest.mark.parametrize("name", list(SUBTILED))
def test_subtiled_kernels_assemble_without_spills(name: str):
    """ptxas assembles each forced schedule's kernel with 0 spill bytes and no stack frame
    (the whole-tile epilogue of these schedules was refused: 264 to 296 registers)."""
    build, keywords, subtile = SUBTILED[name]
    kernel = mmcomp.compile(build(4096, 4096, 4096), **keywords)
    assert kernel.params.epilogue_subtile == subtile
    report = kernel.report  # pyright: ignore[reportAttributeAccessIssue]
    assert report.spills == 0 and report.stack_frame == 0, report


def test_guarded_operand_loads_are_zero_filled():
    """A subtiled epilogue's guarded operand loads write registers set to 0 just before
    (`ptx.ld_into`): none keeps a value from an earlier tile, which ptxas would hold around
    the persistent loop (that, not the operands of one tile, spilled 128x256 before)."""
    kernel = mmcomp.compile(cases.gelu_residual(4096, 4096, 4096), tile=(128, 256, 64))
    lines = [line.strip() for line in kernel.ptx.splitlines()]
    loads = [i for i, line in enumerate(lines) if "ld.global.v2.b16" in line]
    assert loads
    for index in loads:
        target = lines[index].split("{")[1].split(",")[0]
        assert f"mov.b16 {target}, 0;" in lines[index - 2 : index], lines[index - 3 : index + 1]


WIDE = {"tile": (128, 256, 64), "stages": 2, "split_k": 1}
"""The 128x256 tile at the value model's smallest ring."""
VALUE_CASES: dict[str, tuple[Callable[[int, int, int], Fusion], dict[str, Any]]] = {
    "gelu_residual-smem": (cases.gelu_residual, {**WIDE, "epilogue": "smem"}),
    "gelu_residual-registers": (cases.gelu_residual, {**WIDE, "epilogue": "registers"}),
    "silu_mul-smem": (cases.silu_mul, {**WIDE, "epilogue": "smem"}),
    "gelu_residual-swap_ab": (
        cases.gelu_residual,
        {"swap_ab": True, "epilogue_subtile": 8, "stages": 2, "split_k": 1},
    ),
}
"""Subtiled kernels run by the PTX value model: at 128x256 one [M, N] operand and a row
(both epilogues), and two outputs (an f32 one in boxes of 32 columns, a bf16 one in 64);
swapped (the fragment's columns along M: 40 rows in subtiles of 8)."""


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_subtiled_epilogue_values(name: str):
    """The emitted kernel run by the PTX value model on every thread: M and N ragged
    against the tile (at 128x256 the second N tile 4 columns wide), outputs poisoned with
    NaN, each output against float64."""
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.interp.reference import reference
    from mmcomp.pipeline import run_pipeline

    build, params = VALUE_CASES[name]
    fusion = build(40, 200, 64) if params.get("swap_ab") else build(100, 260, 64)
    module, chosen, _ = run_pipeline(fusion.module, params)
    assert chosen.epilogue_subtile > 0
    text, plan = lower_to_ptx(module)
    inputs = cases.inputs_for(fusion)
    want = reference(fusion, *inputs, accumulate=np.float64)
    poisoned = [
        np.full(w.shape, np.nan, dtype=output.numpy_dtype)
        for w, output in zip(want, fusion.outputs, strict=True)
    ]
    got = run_values(text, plan, inputs, poisoned)
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        dtype = fusion.outputs[index].dtype
        error = cases.relative_error(g, np.asarray(w, np.float64))
        assert error < cases.TOLERANCE[dtype], f"output {index}: {error}"
