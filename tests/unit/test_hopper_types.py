"""The hopper level's typed values: tensor maps, barrier rings, mbarriers, accumulators.

The hopper-level IR that lower-schedule-to-hopper prints is a level of its own: it parses
back to the same text, and convert-arith-to-ptx and convert-hopper-to-ptx on the parsed file
give the PTX that the whole pipeline gives (the index arithmetic and every typed value back
in the registers that held them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cases import case
from test_launch_data import options
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import DYNAMIC_INDEX, bf16, f32
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.cli import main as mmcomp_opt
from mmcomp.dialects import hopper, ptx
from mmcomp.ir.registry import DEFAULT_PIPELINE
from mmcomp.passes.convert_hopper_to_ptx import registers_of

LEVEL_CASES = [
    "linear_ragged",
    "matmul_batch",
    "smem_ragged",
    "cluster_matmul",
    "pingpong_linear",
    "none_split_k",
    "gelu_bias",
    "smem_split_k",
]
"""One case per mechanism whose ops take typed values: 2-D and 3-D tensor maps, TMA stores,
multicast loads and remote arrives, both rings under each warp specialization, split-K,
an epilogue operand's loads, split-K through the shared-memory epilogue."""


def _run(tmp_path: Path, source: Path, passes: str, out: str, target: str = "mlir") -> str:
    result = tmp_path / out
    mmcomp_opt([str(source), "-p", passes, "-t", target, "-o", str(result)])
    return result.read_text()


@pytest.mark.parametrize("name", LEVEL_CASES)
def test_hopper_level_round_trips_and_lowers_alone(tmp_path: Path, name: str):
    selected = case(name)
    source = tmp_path / "fusion.mlir"
    source.write_text(str(selected.fusion()))
    stages = list(DEFAULT_PIPELINE)
    stages[stages.index("choose-schedule")] = f"choose-schedule{{{options(selected.params)}}}"
    whole = _run(tmp_path, source, ",".join(stages), "whole.ptx", "ptx")
    level = tmp_path / "hopper.mlir"
    hopper_level = stages[: stages.index("lower-schedule-to-hopper") + 1]
    level.write_text(_run(tmp_path, source, ",".join(hopper_level), "level.mlir"))
    text = level.read_text()
    assert "hopper.tensormap_param" in text and "hopper.ring_barrier" in text
    assert "hopper.accumulator" in text
    assert "arith.divui" in text and "gpu.block_id" in text
    reprinted = tmp_path / "reprinted.mlir"
    mmcomp_opt([str(level), "-o", str(reprinted)])
    assert reprinted.read_text() == text
    lowered = _run(
        tmp_path,
        level,
        "convert-hopper-to-ptx,convert-scf-to-ptx,convert-arith-to-ptx",
        "alone.ptx",
        "ptx",
    )
    assert lowered == whole


def test_tensor_map_type_of_launch_data():
    launch = ptx.TensorMap(arg=0, dtype="bf16", shape=(300, 200), box=(128, 64), boxes=1, major="k")
    tensor_map = hopper.TensorMapType.of(launch)
    assert tensor_map == hopper.TensorMapType((300, 200), bf16, (128, 64), 128)
    assert str(tensor_map) == "!hopper.tensormap<300x200xbf16, box 128x64, swizzle 128>"
    assert tensor_map.rank == 2
    assert tensor_map.describes(launch)
    dynamic = hopper.TensorMapType((DYNAMIC_INDEX, 200), bf16, (128, 64), 128)
    assert dynamic.describes(launch)
    assert not hopper.TensorMapType((300, 200), bf16, (64, 64), 128).describes(launch)
    assert not hopper.TensorMapType((300, 200), f32, (128, 64), 128).describes(launch)


def test_ring_and_accumulator_types():
    ring = hopper.BarrierRingType(3, 2)
    assert ring.barrier == hopper.MbarrierType(2)
    assert str(ring) == "!hopper.barrier_ring<stages = 3, count = 2>"
    accumulator = hopper.AccumulatorType(256)
    assert accumulator.registers == 128
    assert str(accumulator) == "!hopper.accumulator<64x256xf32>"


def test_a_typed_value_not_made_by_a_hopper_op_has_no_registers():
    tensor_map = hopper.TensorMapType((300, 200), bf16, (128, 64), 128)
    value = test_dialect.TestOp(result_types=[tensor_map]).results[0]
    with pytest.raises(DiagnosticException, match="is not held in registers"):
        registers_of(value)
