"""The schedule's control flow -> the hopper level's `scf.for` and `scf.if`.

`Walker` emits a block of the materialized kernel in order: index arithmetic
(`mmcomp.lowering.hopper.index`), a grouped kernel's group ops
(`mmcomp.lowering.hopper.groups`), the ring position's start and skips
(`mmcomp.lowering.hopper.ring`), `scf.for` as a counted loop, `scf.if` as a branch around
its regions (a ping-pong turn, marked `hopper.turn`, on its condition as a predicate);
every other op goes to the role's own lowering (`special`). Each role walks its own
region of `hopper.warp_specialize`.

The loops and branches stay structured (`counted_loop`, `branch`): an `scf.for` on the
loop's index bounds, its induction variable the block argument (read as a register
through a cast), and an `scf.if` on the schedule's i1 or a ptx predicate (cast to i1),
their bodies emitted inside with `KernelBuilder.inside`. Each carries the names of the
labels that `convert-scf-to-ptx` writes for it, made here in emission order.

A loop carries the copies of its own leading `iter_args` that walk the ring (the ring
positions and ping-pong's tile counter, which carry-ring-positions wrote), then the
registers of `KernelContext.carried` whose scope it encloses (the previous stage, the
stream-K sums) as its `iter_args`: inside it each such register's value is the body's
block argument, at the end of the body the value there is yielded, and after the loop it
is the loop's result. An `scf.if` returns the positions it returns in the partitioned
kernel and carries no register (its regions restore the values from before it: the loops
inside carry each value in the register it had there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, UnrealizedConversionCastOp, i1
from xdsl.dialects.func import ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

from mmcomp.analysis.ring_positions import position_results, walk_carried
from mmcomp.dialects import ptx
from mmcomp.dialects.hopper import TURN_ATTR
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.context import KernelContext
from mmcomp.lowering.hopper.groups import place_group_op
from mmcomp.lowering.hopper.index import place
from mmcomp.lowering.hopper.ring import place_ring_op
from mmcomp.lowering.scf_to_ptx.control_flow import labeled, mark_predicate


def counted_loop(
    ctx: KernelContext, loop: scf.ForOp, iter_args: Sequence[SSAValue] = ()
) -> scf.ForOp:
    """An empty `scf.for` over `loop`'s range carrying `iter_args` (its yield passes its
    block arguments on), appended, labeled `loop` and `loop_end`."""
    k = ctx.k
    head = k.fresh_label("loop")
    end = k.fresh_label("loop_end")
    body = Block(arg_types=[IndexType(), *(value.type for value in iter_args)])
    body.add_op(scf.YieldOp(*body.args[1:]))
    counted = scf.ForOp(
        ctx.index(loop.lb), ctx.index(loop.ub), ctx.index(loop.step), iter_args, body
    )
    labeled(counted, (head, end))
    return k.append(counted)


def emit_loop(ctx: KernelContext, loop: scf.ForOp, body: Callable[[], None]) -> None:
    """A counted loop over `loop`'s range (an `scf.for`) carrying the copies of its
    leading iter_args that walk the ring (positions, a tile counter), then the registers
    of `ctx.carried` that it carries; `body` emits one iteration, and the values of those
    registers at its end are yielded."""
    k = ctx.k
    upper = ctx.reg(loop.ub)
    step = ctx.reg(loop.step)
    positions = walk_carried(loop)
    inits = [ctx.index(value) for value in loop.iter_args[:positions]]
    carried = ctx.carried_by(loop)
    counted = counted_loop(ctx, loop, [*inits, *(value.value for value in carried)])
    block = counted.body.block
    args = loop.body.block.args
    with k.inside(block):
        for arg, copy in zip(args[1 : 1 + positions], block.args[1 : 1 + positions], strict=True):
            ctx.regs[arg] = copy
        for value, arg in zip(carried, block.args[1 + positions :], strict=True):
            value.value = arg
        ctx.regs[args[0]] = block.args[0]
        iv = ctx.reg(args[0])
        ctx.loops.append((iv, upper, step))
        body()
        ctx.loops.pop()
    yielded = block.last_op
    assert isinstance(yielded, scf.YieldOp)
    moved = yielded_by(loop.body.block)[:positions]
    yielded.operands = [*(ctx.index(value) for value in moved), *(value.value for value in carried)]
    for result, copy in zip(loop.results[:positions], counted.results[:positions], strict=True):
        ctx.regs[result] = copy
    for value, result in zip(carried, counted.results[positions:], strict=True):
        value.value = result


def yielded_by(block: Block) -> Sequence[SSAValue]:
    """The values the `scf.yield` that ends `block` passes on."""
    yielded = block.last_op
    assert isinstance(yielded, scf.YieldOp)
    return yielded.operands


def with_results(
    branch: scf.IfOp, then_values: Sequence[SSAValue], else_values: Sequence[SSAValue]
) -> Sequence[SSAValue]:
    """`branch` (an `scf.if` without results) made again with results, which its
    then-block yields as `then_values` and its else-block as `else_values` (a block of its
    own, which only yields, where `branch` has no else-block); the new op's results."""
    types = [value.type for value in then_values]
    result = scf.IfOp(branch.cond, types, Region(), Region())
    result.attributes.update(branch.attributes)
    for old, new, values in (
        (branch.true_region, result.true_region, then_values),
        (branch.false_region, result.false_region, else_values),
    ):
        if not old.blocks:
            new.add_block(Block([scf.YieldOp(*values)]))
            continue
        block = old.detach_block(0)
        yielded = block.last_op
        assert isinstance(yielded, scf.YieldOp)
        block.insert_op_before(scf.YieldOp(*values), yielded)
        yielded.detach()
        yielded.erase()
        new.add_block(block)
    parent = branch.parent_block()
    assert parent is not None
    parent.insert_op_before(result, branch)
    branch.detach()
    branch.erase()
    return result.results


def branch(
    ctx: KernelContext,
    pred: SSAValue,
    labels: tuple[str, ...],
    *,
    negated: bool = False,
    otherwise: bool = False,
    predicate: bool = False,
) -> scf.IfOp:
    """An empty `scf.if` on the predicate register `pred` (cast to i1), on an i1 predicate
    of the lowering (`predicate`: a comparison or conjunction of `Values`, branched on as
    a predicate register) or on an i1 of the index arithmetic (on `!pred` if `negated`:
    an `arith.xori` with true), appended, with an else-block if `otherwise`; `labels` are
    (else, end) with an else-block, (end) without."""
    k = ctx.k
    cond = pred
    if isinstance(pred.type, ptx.RegType):
        cond = k.append(UnrealizedConversionCastOp.get([pred], [i1])).results[0]
    if negated:
        true = k.append(arith.ConstantOp(IntegerAttr(1, i1))).result
        cond = k.append(arith.XOrIOp(cond, true)).result
    structured = scf.IfOp(cond, [], [scf.YieldOp()], [scf.YieldOp()] if otherwise else None)
    labeled(structured, labels)
    if predicate:
        mark_predicate(structured)
    return k.append(structured)


@dataclass
class Walker:
    """Emits the ops of one role: the generic ones here, the rest by `special`."""

    ctx: KernelContext
    special: Callable[[Operation], bool]
    """The role's lowering of an op; False leaves it to the generic one."""

    def walk(self, ops: Iterable[Operation]) -> None:
        """Emit `ops` in order."""
        for op in ops:
            if self.special(op):
                continue
            if place(self.ctx, op) or place_group_op(self.ctx, op) or place_ring_op(self.ctx, op):
                continue
            if isinstance(op, scf.ForOp):
                emit_loop(self.ctx, op, lambda op=op: self.walk(op.body.block.ops))
                continue
            if isinstance(op, scf.IfOp):
                self.emit_if(op)
                continue
            if isinstance(op, scf.YieldOp | ReturnOp):
                continue
            raise ScheduleError(f"{self.ctx.where}: cannot lower {op.name} here")

    def emit_if(self, op: scf.IfOp) -> None:
        """`scf.if` without results but ring positions: a branch around its then-block
        and else-block (a ping-pong turn's labelled `my_tile` and `tile_done`, on its
        condition as a predicate), returning the positions' copies."""
        ctx = self.ctx
        k = ctx.k
        positions = position_results(op)
        if len(op.results) != positions:
            raise ScheduleError(f"{ctx.where}: scf.if with results is not lowered")
        turn = TURN_ATTR in op.attributes
        other = k.fresh_label("my_tile" if turn else "else")
        end = k.fresh_label("tile_done" if turn else "endif")
        structured = branch(ctx, ctx.index(op.cond), (other, end), otherwise=True, predicate=turn)
        with k.inside(structured.true_region.block), ctx.carried_kept():
            self.walk(op.true_region.block.ops)
            then_values = [ctx.index(value) for value in yielded_by(op.true_region.block)]
        with k.inside(structured.false_region.block), ctx.carried_kept():
            else_values: list[SSAValue] = []
            if op.false_region.blocks:
                self.walk(op.false_region.block.ops)
                else_values = [ctx.index(value) for value in yielded_by(op.false_region.block)]
        if not positions:
            return
        results = with_results(structured, then_values, else_values)
        for result, copy in zip(op.results, results, strict=True):
            ctx.regs[result] = copy
