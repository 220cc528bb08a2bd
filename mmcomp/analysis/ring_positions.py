"""The ring positions of a partitioned kernel, as carry-ring-positions writes them.

After `carry-ring-positions`, each role region of a kernel's `hopper.warp_specialize`
that walks the ring (the producer region, the consumer region) starts with one
`hopper.ring_start`; the loops around the role's K loop carry the position as their
leading `iter_args` (a `!hopper.ring_position`), a branch around it returns it as its
leading result, and the K loop's body yields `hopper.ring_advance` of it. These queries
read that IR for lower-schedule-to-hopper.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Region, SSAValue

from mmcomp.dialects.hopper import RingAdvanceOp, RingPositionType, RingStartOp, WarpSpecializeOp


def is_position(value: SSAValue) -> bool:
    """`value` is a ring position (a `!hopper.ring_position`)."""
    return isinstance(value.type, RingPositionType)


def ring_start_of(region: Region) -> RingStartOp | None:
    """The `hopper.ring_start` that opens a role region, None where there is none."""
    if not region.blocks:
        return None
    first = region.block.first_op
    return first if isinstance(first, RingStartOp) else None


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


def position_results(branch: scf.IfOp) -> int:
    """How many of `branch`'s leading results are ring positions."""
    count = 0
    for value in branch.results:
        if not is_position(value):
            break
        count += 1
    return count


def k_block_advance(loop: scf.ForOp) -> RingAdvanceOp:
    """The advance of the ring position in a role's K loop: the op its yield passes on."""
    yielded = loop.body.block.last_op
    assert isinstance(yielded, scf.YieldOp)
    advance = yielded.operands[0].owner
    if not isinstance(advance, RingAdvanceOp):
        raise ValueError("k_block_advance: the K loop does not yield a ring advance first")
    return advance
