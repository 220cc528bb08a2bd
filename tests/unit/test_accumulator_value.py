"""The wgmma accumulator as a value at the hopper level.

Each tile's accumulator is a `hopper.zero_accumulator` per chunk (no registers at the
hopper level), the K loop carries it as an iter_arg, each `hopper.wgmma_mma_async` takes
it and returns the next, the body yields the last, and the epilogue and the split-K /
stream-K partial stores read the loop's result through `hopper.accumulator_element`.
convert-hopper-to-ptx and convert-scf-to-ptx then hold all of them in the zero
accumulator's registers (byte identity with the in-place lowering is
`tools/compare_ptx.py`'s check).
"""

from __future__ import annotations

from typing import Any

import pytest
from cases import gelu_bias, hopper_module, horizontal, linear, lowered_in_both_orders
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, OpResult, SSAValue

from mmcomp.dialects import hopper
from mmcomp.dialects.ptx.target import emit_ptx
from mmcomp.pipeline import run_pipeline

CASES = (
    "linear_ragged",
    "none_split_k",
    "pingpong_linear",
    "pingpong_64x256",
    "smem_split_k",
    "horizontal_small",
    "cluster_linear",
    "swap_ab_silu_mul",
)
"""Cooperative, non-specialized with split-K, ping-pong (two m64 blocks per warpgroup at
128x128), the smem epilogue with split-K, two accumulators, a cluster, swap-AB."""

STREAM_K: tuple[tuple[str, dict[str, Any]], ...] = (
    ("linear", {"tile": (128, 64, 64)}),
    ("gelu_bias", {"warp_specialization": "pingpong", "tile": (64, 128, 64)}),
    ("horizontal", {"warp_specialization": "none", "tile": (128, 64, 64)}),
)
"""Stream-K kernels under each warp specialization (the fixups store the K loop's result)."""


def stream_k_module(family: str, params: dict[str, Any], strategy: str) -> ModuleOp:
    """The module after lower-schedule-to-hopper for a stream-K kernel of `family`."""
    build = {"linear": linear, "gelu_bias": gelu_bias, "horizontal": horizontal}[family]
    fusion = build(1000, 1000, 1000)
    module, _, _ = run_pipeline(
        fusion.module, {**params, "strategy": strategy}, until="lower-schedule-to-hopper"
    )
    return module


def chain_start(value: SSAValue) -> SSAValue:
    """The accumulator a chain of wgmmas that returned `value` began with."""
    while isinstance(value.owner, hopper.WgmmaMmaAsyncOp):
        value = value.owner.accumulator
    return value


def check_value_semantics(module: ModuleOp) -> None:
    """Every wgmma accumulator is a value: zero accumulators carried by the K loops, each
    body yielding its wgmmas' last results, and read after the loops element by element."""
    ops = list(module.walk())
    assert not [op for op in ops if isinstance(op, hopper.AccumulatorOp)]
    wgmmas = [op for op in ops if isinstance(op, hopper.WgmmaMmaAsyncOp)]
    assert wgmmas
    k_loops: set[scf.ForOp] = set()
    for op in wgmmas:
        start = chain_start(op.result)
        assert isinstance(start, BlockArgument), "a wgmma must take a K loop's accumulator"
        loop = start.block.parent_op()
        assert isinstance(loop, scf.ForOp) and loop.is_ancestor(op)
        k_loops.add(loop)
    for loop in k_loops:
        yielded = loop.body.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        carried = [
            (position, arg)
            for position, arg in enumerate(loop.body.block.args[1:])
            if isinstance(arg.type, hopper.AccumulatorType)
        ]
        assert carried
        for position, arg in carried:
            assert isinstance(loop.iter_args[position].owner, hopper.ZeroAccumulatorOp)
            value = yielded.operands[position]
            assert isinstance(value.owner, hopper.WgmmaMmaAsyncOp)
            assert chain_start(value) is arg
    reads = [op for op in ops if isinstance(op, hopper.AccumulatorElementOp)]
    assert reads
    for op in reads:
        source = op.accumulator
        assert isinstance(source, OpResult) and source.op in k_loops


@pytest.mark.parametrize("name", CASES)
def test_the_k_loops_carry_their_accumulators_as_values(name: str):
    module = hopper_module(name)
    check_value_semantics(module)
    # Each zero accumulator starts a K loop's accumulator, and only that.
    zeros = [op for op in module.walk() if isinstance(op, hopper.ZeroAccumulatorOp)]
    assert zeros
    for op in zeros:
        users = [use.operation for use in op.result.uses]
        assert len(users) == 1 and isinstance(users[0], scf.ForOp)


@pytest.mark.parametrize(("family", "params"), STREAM_K)
@pytest.mark.parametrize("strategy", ("stream-k", "hybrid-stream-k"))
def test_stream_k_fixups_read_the_k_loops_result(
    family: str, params: dict[str, Any], strategy: str
):
    """The partial stores of a shared tile read the K loop's result through element reads;
    the running sums of the fixup stay f32 registers (ptx arithmetic, updated in place)."""
    check_value_semantics(stream_k_module(family, params, strategy))


@pytest.mark.parametrize("name", ("pingpong_64x256", "smem_split_k"))
def test_either_order_with_convert_scf_to_ptx_gives_the_same_ptx(name: str):
    """The loops' accumulators are held in the zero accumulator's registers whether the
    hopper ops or the loops are lowered first."""
    texts: list[str] = []
    for module in lowered_in_both_orders(name):
        assert not [op for op in module.walk() if op.name.startswith(("hopper.", "scf."))]
        texts.append(emit_ptx(module))
    assert texts[0] == texts[1]
