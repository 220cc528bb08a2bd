"""The ring's position as a value at the hopper level.

Each role's position is one `hopper.ring_start` made before its loops; the K loop and the
loops around it carry it as an iter_arg, each K block reads its stage and phase
(`hopper.ring_stage`, `hopper.ring_phase`) and yields `hopper.ring_advance`'s result; the
ping-pong turn and the non-specialized load ahead are `scf.if`s whose result is the
position after them. convert-hopper-to-ptx and convert-scf-to-ptx then hold every position
of a walk in the start's registers (byte identity with the in-place lowering is
`tools/compare_ptx.py`'s check).
"""

from __future__ import annotations

import pytest
from cases import CONTROL_FLOW_CASES, hopper_module, lowered_in_both_orders
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, UnrealizedConversionCastOp, i32
from xdsl.ir import BlockArgument, OpResult, SSAValue

from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.ptx.target import emit_ptx
from mmcomp.ir.registry import context
from mmcomp.lowering.scf_to_ptx.control_flow import position_storage
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
from mmcomp.passes.convert_scf_to_ptx import ConvertScfToPtx

CASES = CONTROL_FLOW_CASES


def walk_start(value: SSAValue) -> SSAValue:
    """The `hopper.ring_start` a position value descends from (through advances, loops'
    block arguments and results, and branches' results)."""
    held = position_storage(value)
    assert len(held) == 1
    return held[0]


@pytest.mark.parametrize("name", CASES)
def test_each_position_descends_from_one_start(name: str):
    """Every position value is a start, an advance of a position, a loop's block argument
    or result, or a branch's result; each descends from a start made outside every loop."""
    module = hopper_module(name)
    starts = [op for op in module.walk() if isinstance(op, hopper.RingStartOp)]
    assert starts
    for op in starts:
        assert not _loops_around(op)
    values = [
        value
        for op in module.walk()
        for value in (*op.results, *[arg for r in op.regions for b in r.blocks for arg in b.args])
        if isinstance(value.type, hopper.RingPositionType)
    ]
    assert values
    for value in values:
        if isinstance(value, BlockArgument):
            assert isinstance(value.block.parent_op(), scf.ForOp)
        else:
            assert isinstance(value, OpResult)
            assert isinstance(
                value.op,
                hopper.RingStartOp
                | hopper.RingAdvanceOp
                | hopper.RingAdvanceByOp
                | scf.ForOp
                | scf.IfOp,
            )
        start = walk_start(value).owner
        assert isinstance(start, hopper.RingStartOp)


def _loops_around(op: hopper.RingStartOp) -> list[scf.ForOp]:
    """The scf.for ops around `op`."""
    found: list[scf.ForOp] = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp):
            found.append(parent)
        parent = parent.parent_op()
    return found


@pytest.mark.parametrize("name", ("pingpong_linear", "cluster_pingpong"))
def test_the_ping_pong_turn_returns_the_position(name: str):
    """The turn's then-block (the other consumer's tile) yields the position advanced past
    that tile's K blocks; its else-block (this consumer's) the K loop's result."""
    module = hopper_module(name)
    turns = [
        op
        for op in module.walk()
        if isinstance(op, scf.IfOp)
        and any(isinstance(inner, hopper.RingAdvanceByOp) for inner in op.true_region.walk())
    ]
    assert turns
    for turn in turns:
        assert [result.type for result in turn.results] == [turn.results[0].type]
        assert isinstance(turn.results[0].type, hopper.RingPositionType)
        then_yield = turn.true_region.block.last_op
        else_yield = turn.false_region.block.last_op
        assert isinstance(then_yield, scf.YieldOp) and isinstance(else_yield, scf.YieldOp)
        assert isinstance(then_yield.operands[0].owner, hopper.RingAdvanceByOp)
        assert isinstance(else_yield.operands[0].owner, scf.ForOp)
        assert isinstance(then_yield.operands[0].owner.count.type, IndexType)


@pytest.mark.parametrize("name", ("pingpong_linear", "cluster_pingpong"))
def test_the_ping_pong_turn_is_an_i1(name: str):
    """The turn branches on the negation of an i1 comparison (the tile counter's parity
    against the consumer's index: `arith.andi`, `arith.cmpi`), marked to be branched on as
    a predicate, not on a ptx predicate register."""
    module = hopper_module(name)
    turns = [
        op
        for op in module.walk()
        if isinstance(op, scf.IfOp) and "my_tile" in str(op.attributes.get("ptx.labels"))
    ]
    assert turns
    for turn in turns:
        assert "ptx.predicate" in turn.attributes
        negation = turn.cond.owner
        assert isinstance(negation, arith.XOrIOp)
        mine = negation.lhs.owner
        assert isinstance(mine, arith.CmpiOp)
        assert isinstance(mine.lhs.owner, arith.AndIOp)


def test_the_load_ahead_returns_the_load_position():
    """Each load ahead of the non-specialized kernel is an scf.if whose then-block yields
    the load position advanced and whose else-block only yields the position unchanged."""
    module = hopper_module("none_split_k")
    loads = [
        op
        for op in module.walk()
        if isinstance(op, scf.IfOp)
        and op.results
        and any(isinstance(inner, hopper.TmaLoadOp) for inner in op.true_region.walk())
    ]
    assert loads
    for load in loads:
        then_yield = load.true_region.block.last_op
        (else_yield,) = load.false_region.block.ops
        assert isinstance(then_yield, scf.YieldOp) and isinstance(else_yield, scf.YieldOp)
        assert isinstance(then_yield.operands[0].owner, hopper.RingAdvanceOp)
        assert then_yield.operands[0].owner.position is else_yield.operands[0]


@pytest.mark.parametrize("name", CASES)
def test_either_order_with_convert_scf_to_ptx_gives_the_same_ptx(name: str):
    """Every position of a walk is held in its start's registers whether the hopper ops or
    the loops and branches are lowered first; no position or cast of one is left."""
    texts: list[str] = []
    for module in lowered_in_both_orders(name):
        ops = list(module.walk())
        assert not [op for op in ops if op.name.startswith(("hopper.", "scf."))]
        assert not [
            op
            for op in ops
            if isinstance(op, UnrealizedConversionCastOp)
            and isinstance(op.results[0].type, hopper.RingPositionType)
        ]
        texts.append(emit_ptx(module))
    assert texts[0] == texts[1]


def test_the_advance_writes_the_position_registers_in_place():
    """convert-hopper-to-ptx lowers an advance to `stage += 1` and the predicated wrap on
    the start's two registers: no register of its own."""
    module = hopper_module("linear_ragged")
    ConvertHopperToPtx().apply(context(), module)
    ConvertScfToPtx().apply(context(), module)
    assigns = [op for op in module.walk() if isinstance(op, ptx.AssignOp)]
    wraps = [op for op in assigns if op.guard is not None]
    targets = {op.dst for op in wraps}
    # Both roles' stage and phase registers take the wrap, each a `mov.u32 %r, 0` start.
    assert len(targets) >= 4
    for target in targets:
        assert isinstance(target.owner, ptx.ConstOp)


@pytest.mark.parametrize("name", CASES)
def test_the_stage_is_an_index_and_the_phase_an_i32(name: str):
    """Each stage read is an index, which the barriers take; each phase read an i32, which
    the waits take, as it is (the full barrier's) or flipped by an `arith.xori` with the
    i32 constant 1 (the empty barrier's); no ptx op reads either and no ptx xor is left."""
    module = hopper_module(name)
    ops = list(module.walk())
    assert not any(isinstance(op, ptx.XorOp) for op in ops)
    stages = [op for op in ops if isinstance(op, hopper.RingStageOp)]
    assert stages and all(op.result.type == IndexType() for op in stages)
    for op in ops:
        if isinstance(op, hopper.RingBarrierOp) and op.stage is not None:
            assert op.stage.type == IndexType()
    waits = [op for op in ops if isinstance(op, hopper.MbarrierWaitOp)]
    assert waits
    flips = 0
    for wait in waits:
        phase = wait.phase.owner
        if isinstance(phase, arith.XOrIOp):
            flips += 1
            one = phase.rhs.owner
            assert isinstance(one, arith.ConstantOp)
            assert one.value == IntegerAttr(1, i32)
            phase = phase.lhs.owner
        assert isinstance(phase, hopper.RingPhaseOp)
        assert phase.result.type == i32
        for use in phase.result.uses:
            assert not isinstance(use.operation, ptx.PtxInstruction) or isinstance(
                use.operation, hopper.MbarrierWaitOp
            )
    assert flips, "the empty barrier's wait flips the phase"
