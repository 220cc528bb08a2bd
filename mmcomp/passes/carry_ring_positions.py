"""`carry-ring-positions`: each warp role's place in the shared-memory ring, as IR.

The input is a partitioned kernel (after `partition-warp-roles`): a `func.func` whose
body is one `hopper.warp_specialize`. A role that walks the ring (the producer region's
elected thread with its TMA loads, the consumer region's warpgroups with their wgmmas)
holds one position for the whole kernel: stage 0 and phase 0 at the start, one stage on
per K block, the phase flipping at each wrap, across every tile and split-K unit of the
persistent loop. This pass writes that position into the role's region, so that a
lowering of one `sched.load_tile` or `sched.mma` finds the position it runs at in its
operands rather than in state threaded through a walk:

- the region opens with `%ring = hopper.ring_start : !hopper.ring_position<stages = S>`
  (S: the ring's depth, from `sched.params`);
- each `scf.for` around the role's K loop carries the position as its first `iter_arg`
  and yields the position its body leaves;
- each `scf.if` around it returns the position as its first result: the region that
  holds the K loop yields the position after it, the other the position from before (an
  else-block that only yields is made where there was none);
- the K loop carries it too, and its body yields `hopper.ring_advance` of it (one stage
  per K block) as its first value.

Before:

    scf.for %unit = %cta to %c12 step %grid {
      %acc = scf.for %kb = %c0 to %c4 step %c1 iter_args(%acc_1 = %zero) -> (...) {
        ... sched.mma ...
        scf.yield %acc_2 : tensor<128x128xf32>
      }
      ...
    }

After:

    %ring = hopper.ring_start : !hopper.ring_position<stages = 4>
    %0 = scf.for %unit = %cta to %c12 step %grid iter_args(%at = %ring) -> (...) {
      %1, %acc = scf.for %kb = %c0 to %c4 step %c1 iter_args(%at_1 = %at, %acc_1 = %zero) {
        ... sched.mma ...
        %next = hopper.ring_advance %at_1 : !hopper.ring_position<stages = 4>
        scf.yield %next, %acc_2 : !hopper.ring_position<stages = 4>, tensor<128x128xf32>
      }
      ...
      scf.yield %1 : !hopper.ring_position<stages = 4>
    }

Without warp specialization there is one region, and the position is the consumers'
(thread 0's loads ahead of them are the lowering's: they run `stages - 1` K blocks ahead
of this position, in branches that the lowering makes). The patterns: one per role
(`ProducerRingPosition`, `ConsumerRingPosition`), each matching the
`hopper.warp_specialize` whose region does not open with a ring start yet; a kernel that
carries its positions already is left as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis.ring_positions import ring_start_of
from mmcomp.analysis.warp_roles import (
    ROLES_ATTR,
    level_error,
    mainloop_of,
    producer_loop_of,
    warp_roles,
)
from mmcomp.dialects.hopper import (
    RingAdvanceOp,
    RingPositionType,
    RingStartOp,
    WarpSpecializeOp,
)
from mmcomp.errors import ScheduleError


def kernel_of(roles: WarpSpecializeOp) -> FuncOp:
    """The partitioned kernel whose body is `roles`."""
    func = roles.parent_op()
    if not isinstance(func, FuncOp) or ROLES_ATTR not in func.attributes:
        raise ScheduleError(
            "carry-ring-positions: a hopper.warp_specialize must be the body of a partitioned "
            "kernel (run partition-warp-roles)"
        )
    return func


def enclosing_ops(op: Operation, region: Region) -> list[Operation]:
    """The ops from the outermost op of `region` that holds `op` down to `op` itself."""
    chain = [op]
    parent = op.parent_op()
    while parent is not None and parent.parent_region() is not None:
        if chain[-1].parent_region() is region:
            break
        chain.append(parent)
        parent = parent.parent_op()
    if chain[-1].parent_region() is not region:
        raise ScheduleError(f"carry-ring-positions: {op.name} is not inside the role's region")
    return chain[::-1]


def name_results(old: Sequence[SSAValue], new: Sequence[SSAValue]) -> None:
    """Name the results of an op made again with a position first: the position `ring`,
    the others as the old op's."""
    new[0].name_hint = "ring"
    for before, after in zip(old, new[1:], strict=True):
        after.name_hint = before.name_hint


def carry_through_loop(
    rewriter: PatternRewriter, loop: scf.ForOp, incoming: SSAValue
) -> tuple[scf.ForOp, SSAValue]:
    """`loop` made again with `incoming` as its first `iter_arg`: the new loop and the
    position inside its body (the new block argument). The caller sets the first value
    its yield passes on."""
    body = loop.body.block
    inside = body.insert_arg(incoming.type, 1)
    inside.name_hint = "at"
    yielded = body.last_op
    assert isinstance(yielded, scf.YieldOp)
    yielded.operands = [inside, *yielded.operands]
    carried = scf.ForOp(
        loop.lb, loop.ub, loop.step, [incoming, *loop.iter_args], loop.detach_region(loop.body)
    )
    carried.attributes.update(loop.attributes)
    name_results(loop.results, carried.results)
    rewriter.replace(loop, carried, carried.results[1:])
    return carried, inside


def carry_through_branch(
    rewriter: PatternRewriter, branch: scf.IfOp, incoming: SSAValue
) -> scf.IfOp:
    """`branch` made again with a position as its first result, each region yielding
    `incoming` (the position from before it) until the caller sets the one after the K
    loop; an else-block that only yields is made where there was none."""
    false_region = branch.detach_region(branch.false_region)
    if not false_region.blocks:
        false_region.add_block(Block([scf.YieldOp()]))
    true_region = branch.detach_region(branch.true_region)
    for region in (true_region, false_region):
        yielded = region.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        yielded.operands = [incoming, *yielded.operands]
    result_types = [incoming.type, *(result.type for result in branch.results)]
    carried = scf.IfOp(branch.cond, result_types, true_region, false_region)
    carried.attributes.update(branch.attributes)
    name_results(branch.results, carried.results)
    rewriter.replace(branch, carried, carried.results[1:])
    return carried


def set_yielded_position(block: Block, position: SSAValue) -> None:
    """Make `block`'s yield pass `position` on as its first value."""
    yielded = block.last_op
    assert isinstance(yielded, scf.YieldOp)
    yielded.operands = [position, *yielded.operands[1:]]


def carry_position(
    rewriter: PatternRewriter, region: Region, k_loop: scf.ForOp, stages: int
) -> None:
    """Open `region` with a ring start and carry the position through the loops and
    branches around `k_loop` and through `k_loop` itself, whose body advances it."""
    start = RingStartOp(RingPositionType(stages))
    start.result.name_hint = "ring"
    rewriter.insert(start, InsertPoint.at_start(region.block))
    chain = enclosing_ops(k_loop, region)

    def thread(depth: int, incoming: SSAValue) -> SSAValue:
        """Carry `incoming` through `chain[depth]`; the position after it."""
        op = chain[depth]
        if isinstance(op, scf.ForOp):
            loop, inside = carry_through_loop(rewriter, op, incoming)
            if op is k_loop:
                advance = RingAdvanceOp(inside)
                advance.result.name_hint = "next"
                yielded = loop.body.block.last_op
                assert yielded is not None
                rewriter.insert(advance, InsertPoint.before(yielded))
                set_yielded_position(loop.body.block, advance.result)
            else:
                set_yielded_position(loop.body.block, thread(depth + 1, inside))
            return loop.results[0]
        if isinstance(op, scf.IfOp):
            inner = chain[depth + 1]
            branch = carry_through_branch(rewriter, op, incoming)
            for block in (branch.true_region.block, branch.false_region.block):
                if inner.parent_block() is block:
                    set_yielded_position(block, thread(depth + 1, incoming))
            return branch.results[0]
        raise ScheduleError(
            f"carry-ring-positions: a K loop inside {op.name} is not carried (only scf.for "
            "and scf.if may hold it)"
        )

    thread(0, start.result)


class ProducerRingPosition(RewritePattern):
    """The producer region's position: its TMA loads fill the ring, one stage per K
    block."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: WarpSpecializeOp, rewriter: PatternRewriter) -> None:
        """Carry the producer's position, once."""
        if not op.specialized or ring_start_of(op.producer) is not None:
            return
        func = kernel_of(op)
        where = f"carry-ring-positions: @{func.sym_name.data}"
        loop = producer_loop_of(op, where)
        carry_position(rewriter, op.producer, loop, warp_roles(func, "carry-ring-positions").stages)


class ConsumerRingPosition(RewritePattern):
    """The consumer region's position: its wgmmas read the ring, one stage per K block."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: WarpSpecializeOp, rewriter: PatternRewriter) -> None:
        """Carry the consumers' position, once."""
        if ring_start_of(op.consumer) is not None:
            return
        func = kernel_of(op)
        loop = mainloop_of(func)
        carry_position(rewriter, op.consumer, loop, warp_roles(func, "carry-ring-positions").stages)


class CarryRingPositions(ModulePass):
    """Carry each warp role's ring position through its loops as IR."""

    name = "carry-ring-positions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Carry the ring positions of every partitioned kernel; a function that has not
        reached that level is an error naming the passes to run first."""
        del ctx
        for func in op.walk():
            if not isinstance(func, FuncOp):
                continue
            too_early = level_error(self.name, func, f"no '{ROLES_ATTR}'")
            if too_early is not None:
                raise too_early
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [ProducerRingPosition(), ConsumerRingPosition()], dce_enabled=False
            )
        )
        try:
            walker.rewrite_module(op)
        except ScheduleError as error:
            raise DiagnosticException(str(error)) from error
