"""The ring positions of a partitioned kernel, as carry-ring-positions writes them.

After `carry-ring-positions`, each role region of a kernel's `hopper.warp_specialize`
that walks the ring (the producer region, the consumer region) starts with one
`hopper.ring_start`; the loops around the role's K loop carry the position as their
leading `iter_args` (a `!hopper.ring_position`), a branch around it returns it as its
leading result, and the K loop's body yields `hopper.ring_advance` of it. Under ping-pong
the consumers' turn on each tile is IR too: the loops around the K loop carry the tile
counter (an `index`) after the position, and the K loop is in the else-block of the turn,
an `scf.if` marked `hopper.turn` on the counter's parity. Without warp specialization
thread 0's loads ahead of the consumers are IR too: its own ring start after the
consumers', carried after their position, and its loads in `scf.if`s marked
`hopper.load_ahead` (before the K loop, and after each K block's advance). These queries
read that IR for lower-schedule-to-hopper.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, Region, SSAValue

from mmcomp.dialects.hopper import (
    LOAD_AHEAD_ATTR,
    TURN_ATTR,
    RingAdvanceOp,
    RingPositionType,
    RingStartOp,
    WarpSpecializeOp,
)


def is_position(value: SSAValue) -> bool:
    """`value` is a ring position (a `!hopper.ring_position`)."""
    return isinstance(value.type, RingPositionType)


def ring_start_of(region: Region) -> RingStartOp | None:
    """The `hopper.ring_start` that opens a role region, None where there is none."""
    if not region.blocks:
        return None
    first = region.block.first_op
    return first if isinstance(first, RingStartOp) else None


def load_start_of(region: Region) -> RingStartOp | None:
    """Thread 0's load position of a region without warp specialization: the second
    `hopper.ring_start`, right after the consumers'; None where there is none."""
    start = ring_start_of(region)
    following = None if start is None else start.next_op
    return following if isinstance(following, RingStartOp) else None


def is_load_ahead(op: Operation) -> bool:
    """`op` is thread 0's load of a K block ahead (an `scf.if` marked
    `hopper.load_ahead`)."""
    return isinstance(op, scf.IfOp) and LOAD_AHEAD_ATTR in op.attributes


def has_ring_positions(roles: WarpSpecializeOp) -> bool:
    """carry-ring-positions has run on the kernel: its consumer region opens with a ring
    start."""
    return ring_start_of(roles.consumer) is not None


def positions_carried(loop: scf.ForOp) -> int:
    """How many of `loop`'s leading `iter_args` are ring positions."""
    count = 0
    for value in loop.iter_args:
        if not is_position(value):
            break
        count += 1
    return count


def walk_carried(loop: scf.ForOp) -> int:
    """How many of `loop`'s leading `iter_args` are a role's walk of the ring: its ring
    positions, then a ping-pong tile counter (an `index`)."""
    positions = positions_carried(loop)
    following = loop.iter_args[positions : positions + 1]
    return positions + sum(1 for value in following if isinstance(value.type, IndexType))


def position_results(branch: scf.IfOp) -> int:
    """How many of `branch`'s leading results are ring positions."""
    count = 0
    for value in branch.results:
        if not is_position(value):
            break
        count += 1
    return count


def k_block_ops(loop: scf.ForOp) -> list[Operation]:
    """The ops of one K block of a role's K loop: its body up to the position's advance
    (after it come thread 0's loads ahead, and the yield)."""
    advance = k_block_advance(loop)
    ops: list[Operation] = []
    for op in loop.body.block.ops:
        if op is advance:
            break
        ops.append(op)
    return ops


def k_block_advance(loop: scf.ForOp) -> RingAdvanceOp:
    """The advance of the ring position in a role's K loop: the op its yield passes on."""
    yielded = loop.body.block.last_op
    assert isinstance(yielded, scf.YieldOp)
    advance = yielded.operands[0].owner
    if not isinstance(advance, RingAdvanceOp):
        raise ValueError("k_block_advance: the K loop does not yield a ring advance first")
    return advance


def turn_of(loop: scf.ForOp) -> scf.IfOp | None:
    """The ping-pong turn whose else-block holds the K loop `loop`, None where there is
    none."""
    parent = loop.parent_op()
    if not isinstance(parent, scf.IfOp) or TURN_ATTR not in parent.attributes:
        return None
    if loop.parent_block() is not parent.false_region.block:
        raise ValueError("turn_of: the K loop must be in the turn's else-block")
    return parent


def tile_counter(turn: scf.IfOp) -> SSAValue:
    """The tile counter whose parity a ping-pong turn branches on: its condition is
    `(counter & 1) == consumer` negated (`arith.xori` with true)."""
    negation = turn.cond.owner
    if isinstance(negation, arith.XOrIOp):
        mine = negation.lhs.owner
        if isinstance(mine, arith.CmpiOp):
            parity = mine.lhs.owner
            if isinstance(parity, arith.AndIOp):
                return parity.lhs
    raise ValueError("tile_counter: the turn's condition is not the tile counter's parity")
