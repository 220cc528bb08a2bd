"""The hopper level's structured control flow and `convert-scf-to-ptx`.

`lower-schedule-to-hopper` leaves no label or branch of its own: each loop is an `scf.for`,
each branch an `scf.if`, every value read where it is defined (the text parses back).
`convert-scf-to-ptx` leaves no scf op, places each carried label once, and the PTX of the
whole pipeline is what the passes run one by one give. Byte identity with the earlier
lowering, which wrote the labels itself, is `tools/compare_ptx.py`'s check.
"""

from __future__ import annotations

import pytest
from cases import CONTROL_FLOW_CASES, case
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, ModuleOp, i1
from xdsl.ir import Block, Operation
from xdsl.parser import Parser

from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.ptx.builder import encloses
from mmcomp.dialects.ptx.module import carried_label_names
from mmcomp.dialects.ptx.target import emit_ptx
from mmcomp.ir.registry import context
from mmcomp.passes.convert_arith_to_ptx import ConvertArithToPtx
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
from mmcomp.passes.convert_scf_to_ptx import ConvertScfToPtx
from mmcomp.pipeline import run_pipeline

CASES = CONTROL_FLOW_CASES


def hopper_level(name: str) -> tuple[ModuleOp, str]:
    """The module and its text after lower-schedule-to-hopper for a case."""
    selected = case(name)
    module, _, stages = run_pipeline(
        selected.fusion().module, selected.params, until="lower-schedule-to-hopper"
    )
    return module, stages["lower-schedule-to-hopper"]


def k_loops(module: Operation) -> list[scf.ForOp]:
    """The K loops of a hopper-level module: the scf.for whose body waits on a barrier."""
    return [
        op
        for op in module.walk()
        if isinstance(op, scf.ForOp)
        and any(isinstance(inner, hopper.MbarrierWaitOp) for inner in op.body.block.ops)
    ]


def out_of_scope(module: Operation) -> list[str]:
    """The ops of `module` that read a value defined in a block not around them."""
    found: list[str] = []
    for op in module.walk():
        for operand in op.operands:
            owner = operand.owner
            home = owner if isinstance(owner, Block) else owner.parent_block()
            if not encloses(home, op.parent_block()):
                found.append(op.name)
    return found


@pytest.mark.parametrize("name", CASES)
def test_the_hopper_level_is_structured_and_in_scope(name: str):
    module, text = hopper_level(name)
    names = {op.name for op in module.walk()}
    assert {"scf.for", "scf.if"} <= names
    assert not {"ptx.label", "ptx.bra"} & names
    assert not out_of_scope(module)
    Parser(context(), text).parse_module().verify()
    for op in module.walk():
        if isinstance(op, scf.ForOp | scf.IfOp):
            assert carried_label_names(op), f"{op.name} carries no labels"


@pytest.mark.parametrize("name", CASES)
def test_convert_scf_to_ptx_places_every_carried_label_once(name: str):
    module, _ = hopper_level(name)
    carried = {label for op in module.walk() for label in carried_label_names(op)}
    ConvertHopperToPtx().apply(context(), module)
    ConvertScfToPtx().apply(context(), module)
    assert not [op for op in module.walk() if op.name.startswith("scf.")]
    entry = next(op for op in module.walk() if isinstance(op, ptx.EntryOp))
    assert all(op.parent_op() is entry for op in entry.walk() if op is not entry)
    placed = [op.label.data for op in entry.walk() if isinstance(op, ptx.LabelOp)]
    assert len(placed) == len(set(placed))
    assert carried <= set(placed)
    targets = {op.target.data for op in entry.walk() if isinstance(op, ptx.BraOp)}
    assert targets <= set(placed)
    ConvertArithToPtx().apply(context(), module)
    selected = case(name)
    whole, _, _ = run_pipeline(selected.fusion().module, selected.params)
    assert emit_ptx(module) == emit_ptx(whole)


def test_a_ping_pong_turn_branches_on_its_predicate():
    """The other consumer's tile is the then-block of an scf.if on `!mine`, which becomes
    one branch on `mine` to this consumer's tile (no negation instruction)."""
    module, _ = hopper_level("pingpong_linear")
    turns = [
        op
        for op in module.walk()
        if isinstance(op, scf.IfOp)
        and any(n.startswith("my_tile") for n in carried_label_names(op))
    ]
    assert turns and all(op.cond.owner.name == "arith.xori" for op in turns)
    ConvertHopperToPtx().apply(context(), module)
    ConvertScfToPtx().apply(context(), module)
    branches = [
        op
        for op in module.walk()
        if isinstance(op, ptx.BraOp) and op.target.data.startswith("my_tile")
    ]
    assert branches and all(op.guard is not None and op.negated is None for op in branches)
    # No negation is left (the empty barriers' parity flips, i32, are convert-arith-to-ptx's).
    negations = [
        op for op in module.walk() if isinstance(op, arith.XOrIOp) and op.result.type == i1
    ]
    assert not negations


def test_either_order_with_convert_hopper_to_ptx_gives_the_same_ptx():
    texts: list[str] = []
    for passes in (
        (ConvertHopperToPtx(), ConvertScfToPtx()),
        (ConvertScfToPtx(), ConvertHopperToPtx()),
    ):
        module, _ = hopper_level("pingpong_linear")
        for lowering in (*passes, ConvertArithToPtx()):
            lowering.apply(context(), module)
        texts.append(emit_ptx(module))
    assert texts[0] == texts[1]


def written_in_place(module: Operation) -> list[tuple[ptx.AssignOp, bool]]:
    """Each ptx.assign of `module`, and whether an scf.for around it carries the register
    it writes (a block argument of its body) or the register is made in the assign's block."""
    found: list[tuple[ptx.AssignOp, bool]] = []
    for op in module.walk():
        if not isinstance(op, ptx.AssignOp):
            continue
        owner = op.dst.owner
        if not isinstance(owner, Block):
            found.append((op, owner.parent_block() is op.parent_block()))
            continue
        loop = owner.parent_op()
        found.append((op, isinstance(loop, scf.ForOp) and loop.is_ancestor(op)))
    return found


@pytest.mark.parametrize("name", CASES)
def test_loop_values_are_carried_by_their_loops(name: str):
    """A register written in place (a stream-K sum) is an iter_arg of the loops around its
    writes, or made in the assign's block; each K loop carries its previous stage as an
    index value, yields the stage read right before the ring position's advance, and reads
    the stages of the ring from what it carries (the previous stage, or the stage of its
    ring position)."""
    module, _ = hopper_level(name)
    writes = written_in_place(module)
    assert all(carried for _, carried in writes), [str(op) for op, carried in writes if not carried]
    loops = k_loops(module)
    assert loops
    for loop in loops:
        yielded = loop.body.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        carried = loop.body.block.args[1:]
        previous = [
            value
            for arg, value in zip(carried, yielded.operands, strict=True)
            if isinstance(arg.type, IndexType)
        ]
        releases = [op for op in loop.body.block.ops if isinstance(op, hopper.MbarrierArriveOp)]
        if not releases:
            # The producer's K loop: it waits for the stages' release, releases none.
            assert not previous
            continue
        assert len(previous) == 1
        read = previous[0].owner
        assert isinstance(read, hopper.RingStageOp)
        advance = read.next_op
        assert isinstance(advance, hopper.RingAdvanceOp) and advance.position is read.position
        stages = [
            op.stage
            for op in loop.body.block.ops
            if isinstance(op, hopper.RingBarrierOp) and op.stage is not None
        ]
        for stage in stages:
            owner = stage.owner
            if isinstance(owner, hopper.RingStageOp):
                stage = owner.position
            assert stage in carried


@pytest.mark.parametrize("name", CASES)
def test_the_k_loops_yield_their_advanced_ring_position(name: str):
    """Each K loop carries a ring position, advances it once per K block and yields the
    advance's result (or the load ahead's, which advances the load position); no loop
    yields a position unchanged."""
    module, _ = hopper_level(name)
    loops = k_loops(module)
    assert loops
    for loop in loops:
        yielded = loop.body.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        positions = [
            (arg, value)
            for arg, value in zip(loop.body.block.args[1:], yielded.operands, strict=True)
            if isinstance(arg.type, hopper.RingPositionType)
        ]
        assert positions
        for arg, value in positions:
            assert value is not arg
            # Advanced in the body, or by thread 0's load ahead (a branch with the result).
            assert isinstance(value.owner, hopper.RingAdvanceOp | scf.IfOp)
    assert not [
        op
        for op in module.walk()
        if isinstance(op, scf.YieldOp)
        and any(
            isinstance(value.type, hopper.RingPositionType) and value in op.parent_block().args
            for value in op.operands
        )
    ]


def test_the_tile_counter_is_yielded_plus_one():
    """Ping-pong's tile counter: the persistent loop carries it and yields it plus one."""
    module, _ = hopper_level("pingpong_linear")
    yields = [
        op
        for op in module.walk()
        if isinstance(op, scf.YieldOp)
        and isinstance(op.parent_op(), scf.ForOp)
        and any(isinstance(value.owner, arith.AddiOp) for value in op.operands)
    ]
    assert len(yields) == 1
    (counted,) = [value for value in yields[0].operands if isinstance(value.owner, arith.AddiOp)]
    add = counted.owner
    assert isinstance(add, arith.AddiOp) and counted.type == IndexType()
    assert add.operands[0] in yields[0].parent_block().args[1:]
