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

Without warp specialization there is one region, and the position is the consumers';
thread 0 also loads, `stages - 1` K blocks ahead of them, from its own position: a second
ring start after theirs (with `hopper.leader`, whether this thread is thread 0), carried
after theirs by the K loop and the loops around it; before the K loop the first
`stages - 1` K blocks, and after each K block's advance the one `stages - 1` ahead, each
in an `scf.if` marked `hopper.load_ahead` on thread 0 and the K loop's range, whose
then-block holds a copy of the K block's index arithmetic and ring loads at that
iteration and advances the load position, and whose else-block returns it unchanged:

    %loads_2 = scf.if %load -> (!hopper.ring_position<stages = 4>) {
      %k0 = arith.muli %kb_ahead, %c64 : index
      %a_tile = sched.load_tile %a[%m0, %k0] {hopper.slot = 0 : i64} : ...
      %filled = hopper.ring_advance %loading : !hopper.ring_position<stages = 4>
      scf.yield %filled : !hopper.ring_position<stages = 4>
    } else {
      scf.yield %loading : !hopper.ring_position<stages = 4>
    }{hopper.load_ahead}

Under ping-pong the consumer warpgroups take alternate tiles, which is IR too: after the
ring start a tile counter (`arith.constant 0 : index`) and the consumer's index
(`hopper.consumer_index`); each loop around the K loop carries the counter after the
position; the rest of each tile, from the K loop to the end of its block, is the
else-block of the turn, an `scf.if` marked `hopper.turn` on the counter's parity, whose
then-block (the other consumer's tile) moves the position past that tile's K blocks
(`hopper.ring_skip` over the K loop's range); the turn returns the position after the
tile, and the counter goes one on after it:

    %ring_4, %tiles_1 = scf.for ... iter_args(%at = %ring, %seen = %tiles) -> (..., index) {
      %parity = arith.andi %seen, %c1 : index
      %mine = arith.cmpi eq, %parity, %consumer : index
      %theirs = arith.xori %mine, %true : i1
      %ring_5 = scf.if %theirs -> (!hopper.ring_position<stages = 4>) {
        %skipped = hopper.ring_skip %at, %c0 to %c4 step %c1 : !hopper.ring_position<...>
        scf.yield %skipped : !hopper.ring_position<stages = 4>
      } else {
        %ring_6, %acc = scf.for %kb = %c0 to %c4 step %c1 iter_args(%at_1 = %at, ...) {...}
        ... the rest of the tile
        scf.yield %ring_6 : !hopper.ring_position<stages = 4>
      }{hopper.turn}
      %tiles_2 = arith.addi %seen, %c1_1 : index
      scf.yield %ring_5, %tiles_2 : !hopper.ring_position<stages = 4>, index
    }

The patterns: one per role (`ProducerRingPosition`, `ConsumerRingPosition`), each
matching the `hopper.warp_specialize` whose region does not open with a ring start yet,
`PingPongTurns`, matching a ping-pong one whose K loop is not in a turn yet, and
`LoadsAhead`, matching one without warp specialization that has no load position yet;
a kernel that carries its positions, turns and loads ahead already is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, UnitAttr, i1
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

from mmcomp.analysis.ring_positions import (
    k_block_ops,
    load_start_of,
    positions_carried,
    ring_start_of,
    turn_of,
)
from mmcomp.analysis.warp_roles import (
    ROLES_ATTR,
    level_error,
    mainloop_loads,
    mainloop_of,
    producer_loop_of,
    warp_roles,
)
from mmcomp.dialects.hopper import (
    LOAD_AHEAD_ATTR,
    TURN_ATTR,
    ConsumerIndexOp,
    LeaderOp,
    RingAdvanceOp,
    RingPositionType,
    RingSkipOp,
    RingStartOp,
    WarpSpecializeOp,
)
from mmcomp.dialects.hopper.warp_specialize import is_index_arithmetic
from mmcomp.errors import ScheduleError
from mmcomp.lowering.arith_to_ptx.registers import mark_mad

OpT = TypeVar("OpT", bound=Operation)


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


def name_results(
    old: Sequence[SSAValue], new: Sequence[SSAValue], at: int = 0, name: str = "ring"
) -> None:
    """Name the results of an op made again with one more result at `at`: that one
    `name`, the others as the old op's."""
    new[at].name_hint = name
    for before, after in zip(old, [*new[:at], *new[at + 1 :]], strict=True):
        after.name_hint = before.name_hint


def carry_through_loop(
    rewriter: PatternRewriter,
    loop: scf.ForOp,
    incoming: SSAValue,
    at: int = 0,
    names: tuple[str, str] = ("at", "ring"),
) -> tuple[scf.ForOp, SSAValue]:
    """`loop` made again with `incoming` as its `iter_arg` number `at` (its first by
    default): the new loop and the value inside its body (the new block argument, named
    `names[0]`; the result `names[1]`). The caller sets the value its yield passes on."""
    body = loop.body.block
    inside = body.insert_arg(incoming.type, 1 + at)
    inside.name_hint = names[0]
    yielded = body.last_op
    assert isinstance(yielded, scf.YieldOp)
    passed = list(yielded.operands)
    yielded.operands = [*passed[:at], inside, *passed[at:]]
    inits = list(loop.iter_args)
    carried = scf.ForOp(
        loop.lb,
        loop.ub,
        loop.step,
        [*inits[:at], incoming, *inits[at:]],
        loop.detach_region(loop.body),
    )
    carried.attributes.update(loop.attributes)
    name_results(loop.results, carried.results, at, names[1])
    results = list(carried.results)
    rewriter.replace(loop, carried, [*results[:at], *results[at + 1 :]])
    return carried, inside


def carry_through_branch(
    rewriter: PatternRewriter, branch: scf.IfOp, incoming: SSAValue, at: int = 0
) -> scf.IfOp:
    """`branch` made again with a position as its result number `at` (its first by
    default), each region yielding `incoming` (the position from before it) until the
    caller sets the one after the K loop; an else-block that only yields is made where
    there was none."""
    false_region = branch.detach_region(branch.false_region)
    if not false_region.blocks:
        false_region.add_block(Block([scf.YieldOp()]))
    true_region = branch.detach_region(branch.true_region)
    for region in (true_region, false_region):
        yielded = region.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        passed = list(yielded.operands)
        yielded.operands = [*passed[:at], incoming, *passed[at:]]
    types = [result.type for result in branch.results]
    result_types = [*types[:at], incoming.type, *types[at:]]
    carried = scf.IfOp(branch.cond, result_types, true_region, false_region)
    carried.attributes.update(branch.attributes)
    name_results(branch.results, carried.results, at)
    results = list(carried.results)
    rewriter.replace(branch, carried, [*results[:at], *results[at + 1 :]])
    return carried


def set_yielded_position(block: Block, position: SSAValue, at: int = 0) -> None:
    """Make `block`'s yield pass `position` on as its value number `at` (its first by
    default)."""
    yielded = block.last_op
    assert isinstance(yielded, scf.YieldOp)
    passed = list(yielded.operands)
    passed[at] = position
    yielded.operands = passed


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


def named(op: OpT, name: str) -> OpT:
    """`op`, its result named `name`."""
    op.results[0].name_hint = name
    return op


def turn_condition(counter: SSAValue, consumer: SSAValue) -> list[Operation]:
    """The ops of a ping-pong turn's condition: the other consumer's tile, the counter's
    parity not this consumer's index (`(counter & 1) == consumer`, negated)."""
    one = named(arith.ConstantOp(IntegerAttr(1, IndexType())), "c1")
    parity = named(arith.AndIOp(counter, one.results[0]), "parity")
    mine = named(arith.CmpiOp(parity.results[0], consumer, "eq"), "mine")
    true = named(arith.ConstantOp(IntegerAttr(1, i1)), "true")
    theirs = named(arith.XOrIOp(mine.results[0], true.results[0]), "theirs")
    return [one, parity, mine, true, theirs]


def skip_tile(k_loop: scf.ForOp) -> Block:
    """The then-block of a ping-pong turn: the position moved past the other consumer's K
    blocks (`hopper.ring_skip` over `k_loop`'s range)."""
    skipped = RingSkipOp(k_loop.iter_args[0], k_loop.lb, k_loop.ub, k_loop.step)
    skipped.result.name_hint = "skipped"
    return Block([skipped, scf.YieldOp(skipped.result)])


def take_turn(
    rewriter: PatternRewriter, k_loop: scf.ForOp, counter: SSAValue, consumer: SSAValue, where: str
) -> SSAValue:
    """Put the rest of the tile, from `k_loop` to the end of its block, into the
    else-block of a ping-pong turn on the counter's parity, whose result is the position
    after the tile; the counter after the tile (`counter + 1`, after the turn)."""
    block = k_loop.parent_block()
    assert block is not None
    terminator = block.last_op if isinstance(block.last_op, scf.YieldOp) else None
    rest: list[Operation] = []
    op: Operation | None = k_loop
    while op is not None and op is not terminator:
        rest.append(op)
        op = op.next_op
    rewriter.insert(turn_condition(counter, consumer), InsertPoint.before(k_loop))
    theirs = k_loop.prev_op
    assert theirs is not None
    position = k_loop.results[0]
    mine = Block()
    turn = scf.IfOp(theirs.results[0], [position.type], Region(skip_tile(k_loop)), Region(mine))
    turn.attributes[TURN_ATTR] = UnitAttr()
    turn.results[0].name_hint = "ring"
    rewriter.insert(turn, InsertPoint.before(k_loop))
    for op in rest:
        op.detach()
        mine.add_op(op)
    mine.add_op(scf.YieldOp(position))
    for result in (result for op in rest for result in op.results):
        if result is position:
            continue
        if any(not turn.is_ancestor(use.operation) for use in result.uses):
            raise ScheduleError(
                f"{where}: {result.owner.name} of a ping-pong tile is used after the tile"
            )
    position.replace_uses_with_if(turn.results[0], lambda use: not turn.is_ancestor(use.operation))
    one = named(arith.ConstantOp(IntegerAttr(1, IndexType())), "c1")
    following = named(arith.AddiOp(counter, one.results[0]), "tiles")
    rewriter.insert([one, following], InsertPoint.after(turn))
    return following.results[0]


def take_turns(
    rewriter: PatternRewriter, region: Region, start: RingStartOp, k_loop: scf.ForOp, where: str
) -> None:
    """Under ping-pong, the consumers' turns: a tile counter (0 after the ring start,
    carried by each loop around `k_loop` after its positions, one on per tile) and, around
    the rest of each tile, the turn on its parity."""
    chain = enclosing_ops(k_loop, region)
    if any(isinstance(op, scf.IfOp) for op in chain):
        raise ScheduleError(
            f"{where}: a ping-pong tile must end in the body of the loop over tiles, not "
            "inside a branch of it"
        )
    zero = named(arith.ConstantOp(IntegerAttr(0, IndexType())), "tiles")
    consumer = named(ConsumerIndexOp(), "consumer")
    rewriter.insert([zero, consumer], InsertPoint.after(start))

    def thread(depth: int, incoming: SSAValue) -> SSAValue:
        """Carry the counter `incoming` through `chain[depth]`; the counter after it."""
        op = chain[depth]
        if op is k_loop:
            return take_turn(rewriter, k_loop, incoming, consumer.results[0], where)
        assert isinstance(op, scf.ForOp)
        at = positions_carried(op)
        loop, inside = carry_through_loop(rewriter, op, incoming, at, ("seen", "tiles"))
        set_yielded_position(loop.body.block, thread(depth + 1, inside), at)
        return loop.results[at]

    thread(0, zero.results[0])


def thread_through(
    rewriter: PatternRewriter,
    chain: Sequence[Operation],
    incoming: SSAValue,
    at: int,
    names: tuple[str, str],
    at_k_loop: Callable[[SSAValue], SSAValue],
) -> SSAValue:
    """Carry `incoming` through the loops and branches of `chain` (from the outermost
    down to the K loop, its last op) as their `iter_arg` or result number `at` (the block
    argument named `names[0]`, the results `names[1]`); `at_k_loop` makes what the K loop
    does with the value it is given and returns the value after it. The value after the
    chain."""
    op = chain[0]
    if len(chain) == 1:
        return at_k_loop(incoming)
    if isinstance(op, scf.ForOp):
        loop, inside = carry_through_loop(rewriter, op, incoming, at, names)
        after = thread_through(rewriter, chain[1:], inside, at, names, at_k_loop)
        set_yielded_position(loop.body.block, after, at)
        return loop.results[at]
    assert isinstance(op, scf.IfOp)
    branch = carry_through_branch(rewriter, op, incoming, at)
    branch.results[at].name_hint = names[1]
    for block in (branch.true_region.block, branch.false_region.block):
        if chain[1].parent_block() is block:
            after = thread_through(rewriter, chain[1:], incoming, at, names, at_k_loop)
            set_yielded_position(block, after, at)
    return branch.results[at]


def load_iteration(
    k_loop: scf.ForOp, distance: int, base: SSAValue, leader: SSAValue
) -> tuple[list[Operation], SSAValue, SSAValue]:
    """The iteration `distance` K blocks after `base` (`distance * step + base`, one
    `mad`) and whether thread 0 loads it (inside the K loop's range, and the thread the
    CTA's thread 0): the ops, the iteration and the condition."""
    far = named(arith.ConstantOp(IntegerAttr(distance, IndexType())), f"c{distance}")
    offset = named(arith.MuliOp(far.results[0], k_loop.step), "ahead")
    iteration = named(mark_mad(arith.AddiOp(offset.results[0], base)), "kb_ahead")
    inside = named(arith.CmpiOp(iteration.results[0], k_loop.ub, "ult"), "in_range")
    load = named(arith.AndIOp(inside.results[0], leader), "load")
    ops: list[Operation] = [far, offset, iteration, inside, load]
    return ops, iteration.results[0], load.results[0]


def load_ahead(
    k_loop: scf.ForOp, iteration: SSAValue, cond: SSAValue, position: SSAValue
) -> scf.IfOp:
    """Thread 0's load of the K block at `iteration` (an index value), if `cond`: a
    branch marked `hopper.load_ahead` whose then-block holds a copy of the K block's
    index arithmetic and ring loads at that iteration and advances the load `position`,
    and whose else-block returns it unchanged."""
    mapping: dict[SSAValue, SSAValue] = {k_loop.body.block.args[0]: iteration}
    loads = set(mainloop_loads(k_loop))
    fill = Block()
    for op in k_block_ops(k_loop):
        if op in loads or is_index_arithmetic(op):
            fill.add_op(op.clone(value_mapper=mapping))
    filled = RingAdvanceOp(position)
    filled.result.name_hint = "filled"
    fill.add_ops([filled, scf.YieldOp(filled.result)])
    branch = scf.IfOp(cond, [position.type], Region(fill), Region(Block([scf.YieldOp(position)])))
    branch.attributes[LOAD_AHEAD_ATTR] = UnitAttr()
    branch.results[0].name_hint = "loads"
    return branch


def carry_loads_ahead(
    rewriter: PatternRewriter, region: Region, start: RingStartOp, k_loop: scf.ForOp, stages: int
) -> None:
    """Without warp specialization, thread 0's loads: its own ring position (a second
    ring start, carried by the K loop and each loop around it after the consumers'), the
    K loop's first `stages - 1` K blocks before it and, after each K block's advance, the
    K block `stages - 1` ahead, each in a branch on thread 0 and the K loop's range."""
    loads = RingStartOp(start.result.type)
    loads.result.name_hint = "loads"
    leader = named(LeaderOp(), "leader")
    rewriter.insert([loads, leader], InsertPoint.after(start))
    chain = enclosing_ops(k_loop, region)

    def at_k_loop(incoming: SSAValue) -> SSAValue:
        """The K loop's first blocks before it, then the loop carrying the position."""
        position = incoming
        for distance in range(stages - 1):
            ops, iteration, cond = load_iteration(k_loop, distance, k_loop.lb, leader.result)
            branch = load_ahead(k_loop, iteration, cond, position)
            rewriter.insert([*ops, branch], InsertPoint.before(k_loop))
            position = branch.results[0]
        loop, inside = carry_through_loop(rewriter, k_loop, position, 1, ("loading", "loads"))
        iv = loop.body.block.args[0]
        ops, iteration, cond = load_iteration(loop, stages - 1, iv, leader.result)
        branch = load_ahead(loop, iteration, cond, inside)
        yielded = loop.body.block.last_op
        assert yielded is not None
        rewriter.insert([*ops, branch], InsertPoint.before(yielded))
        set_yielded_position(loop.body.block, branch.results[0], 1)
        return loop.results[1]

    thread_through(rewriter, chain, loads.result, 1, ("loading", "loads"), at_k_loop)


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


class PingPongTurns(RewritePattern):
    """Under ping-pong, the consumers take alternate tiles: each counts the tiles it walks
    past, works on those whose count's parity is its index, and moves its position past
    the other's."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: WarpSpecializeOp, rewriter: PatternRewriter) -> None:
        """Write the turns, once, after the consumers' position."""
        start = ring_start_of(op.consumer)
        if op.specialization.data != "pingpong" or start is None:
            return
        func = kernel_of(op)
        loop = mainloop_of(func)
        if turn_of(loop) is not None:
            return
        take_turns(
            rewriter, op.consumer, start, loop, f"carry-ring-positions: @{func.sym_name.data}"
        )


class LoadsAhead(RewritePattern):
    """Without warp specialization, thread 0 of the consumers also loads, `stages - 1`
    K blocks ahead of them, from its own ring position."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: WarpSpecializeOp, rewriter: PatternRewriter) -> None:
        """Write thread 0's loads ahead, once, after the consumers' position."""
        start = ring_start_of(op.consumer)
        if op.specialized or start is None or load_start_of(op.consumer) is not None:
            return
        func = kernel_of(op)
        stages = warp_roles(func, "carry-ring-positions").stages
        carry_loads_ahead(rewriter, op.consumer, start, mainloop_of(func), stages)


class CarryRingPositions(ModulePass):
    """Carry each warp role's ring position through its loops as IR, with ping-pong's
    turns on the tiles and the non-specialized kernels' loads ahead."""

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
                [ProducerRingPosition(), ConsumerRingPosition(), PingPongTurns(), LoadsAhead()],
                dce_enabled=False,
            )
        )
        try:
            walker.rewrite_module(op)
        except ScheduleError as error:
            raise DiagnosticException(str(error)) from error
