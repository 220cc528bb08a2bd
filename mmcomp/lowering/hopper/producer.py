"""The producer: TMA loads of the mainloop operands into the ring.

The elected thread of the producer warpgroup runs the producer region of the kernel's
`hopper.warp_specialize` (its loads, the index arithmetic they need and the loops around
them: persistent loop, raster, swizzle, split-K slice, batch, which carry the producer's
ring position: carry-ring-positions) and, per K block at the loop's position, waits for
the stage to be empty, announces the stage's bytes on its full barrier and issues one TMA
load per 64-element box of each operand (its share of the box, multicast to the cluster,
where the cluster's CTAs share a tile). It runs ahead across tile boundaries.
The non-specialized kernels' thread 0 issues the same loads (`Loads.issue`), in the
branches that carry-ring-positions wrote (`emit_load_ahead`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from mmcomp.analysis.ring_positions import k_block_advance, k_block_ops, ring_start_of
from mmcomp.analysis.warp_roles import is_block_scale_load, producer_loop_of, slot_of
from mmcomp.dialects import hopper, ptx, sched
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.context import Carried, KernelContext
from mmcomp.lowering.hopper.control import Walker, branch, emit_loop, with_results, yielded_by
from mmcomp.lowering.hopper.index import place
from mmcomp.lowering.hopper.plan import TmaOperand
from mmcomp.lowering.hopper.ring import Position, Ring


@dataclass(frozen=True)
class Loads:
    """Fills ring stages with the K loop's loads."""

    ctx: KernelContext
    ring: Ring

    def issue(self, ops: Sequence[Operation], at: Position) -> None:
        """Wait for the ring position `at` to be empty and fill it with the ring loads of
        `ops` (one K block: a K loop's, or a copy of it at another iteration), after their
        index arithmetic (the caller advances the position)."""
        ctx = self.ctx
        k = ctx.k
        plan = ctx.plan
        for op in ops:
            if not isinstance(op, sched.LoadTileOp):
                place(ctx, op)
        self.ring.wait_empty(at)
        full = self.ring.barrier(self.ring.full, at.stage)
        k.append(hopper.MbarrierArriveExpectTxOp(full, plan.stage_bytes))
        stage = self.ring.stage_slots(at)
        loads = [op for op in ops if isinstance(op, sched.LoadTileOp)]
        for op in (op for op in loads if not is_block_scale_load(op)):
            slot = slot_of(op)
            operand = plan.operands[slot]
            coords = [
                ctx.index(op.indices[axis]) if axis >= 0 else ctx.index_constant(0)
                for axis in reversed(operand.axes)
            ]
            dst = self.ring.slot(stage, slot)
            if operand.multicast > 1:
                self.multicast(operand, slot, dst, coords, full)
                continue
            for box in range(operand.boxes):
                inner = coords[0]
                if box:
                    inner = ctx.index_add(inner, ctx.index_constant(box * operand.box[-1]))
                k.append(
                    hopper.TmaLoadOp(
                        shared_offset(k, dst, box * operand.box_bytes),
                        ctx.maps[slot],
                        full,
                        [inner, *coords[1:]],
                    )
                )

    def multicast(
        self,
        operand: TmaOperand,
        slot: int,
        dst: SSAValue,
        coords: Sequence[SSAValue],
        full: SSAValue,
    ) -> None:
        """This CTA's share of a tile common to the cluster, multicast to every CTA."""
        ctx = self.ctx
        k = ctx.k
        size = operand.multicast
        cluster = ctx.cluster
        assert cluster.mask is not None
        rows = operand.box[-2]
        unit = 0
        for box in range(operand.boxes):
            for piece in range(operand.row_pieces):
                offset = (box * operand.row_pieces + piece) * operand.box_bytes
                inner = coords[0]
                if box:
                    inner = ctx.index_add(inner, ctx.index_constant(box * operand.box[-1]))
                outer = list(coords[1:])
                if piece:
                    outer[0] = ctx.index_add(outer[0], ctx.index_constant(piece * rows))
                ctx.put(
                    hopper.TmaLoadOp(
                        shared_offset(k, dst, offset),
                        ctx.maps[slot],
                        full,
                        [inner, *outer],
                        cluster.mask,
                    ),
                    cluster.rank_is[unit % size],
                )
                unit += 1


def shared_offset(k: ptx.KernelBuilder, smem: SSAValue, offset: int) -> SSAValue:
    """The shared address `offset` bytes past `smem` (itself at offset 0)."""
    if not offset:
        return smem
    return k.append(hopper.SmemOffsetOp(smem, offset)).result


def emit_load_ahead(ctx: KernelContext, loads: Loads, op: scf.IfOp) -> None:
    """Thread 0's load of a K block ahead of the consumers (a branch marked
    `hopper.load_ahead`): a branch on its condition as a predicate (labelled `no_load`)
    whose then-block fills the stage at the load position with the copy of the K block in
    the partitioned kernel's then-block and advances the position, returned by the branch
    (unchanged where thread 0 does not load)."""
    k = ctx.k
    skip = k.fresh_label("no_load")
    load = branch(ctx, ctx.index(op.cond), (skip,), predicate=True)
    start = ctx.index(yielded_by(op.false_region.block)[0])
    fill = list(op.true_region.block.ops)
    advance = fill[-2]
    if not isinstance(advance, hopper.RingAdvanceOp):
        raise ScheduleError(f"{ctx.where}: a load ahead must end by advancing its position")
    with k.inside(load.true_region.block):
        at = Position(ctx, Carried(start, op, inclusive=False))
        loads.issue(fill, at)
        loads.ring.advance_as(at, advance)
    (ctx.regs[op.results[0]],) = with_results(load, [at.value], [start])


def emit_producer(ctx: KernelContext, ring: Ring) -> None:
    """The elected producer thread: the producer region of the kernel's warp_specialize."""
    region = ctx.warp_specialize.producer
    loop = producer_loop_of(ctx.warp_specialize, ctx.where)
    start = ring_start_of(region)
    if start is None:
        raise ScheduleError(f"{ctx.where}: the producer region has no ring position")
    at = ring.start(start)
    loads = Loads(ctx, ring)

    def k_block() -> None:
        """One K block: the loads at the loop's position, then its advance."""
        at.take(loop.body.block.args[1])
        loads.issue(k_block_ops(loop), at)
        ring.advance_as(at, k_block_advance(loop))

    def special(op: Operation) -> bool:
        """The K loop: this role's loads per iteration."""
        if op is not loop:
            return False
        emit_loop(ctx, loop, k_block)
        return True

    Walker(ctx, special).walk(region.block.ops)
