"""Split-K: partial tiles through the f32 workspace, the arrival counter, the reduction.

`sched.store_partial` writes this thread's partial accumulators to the tile's slab of the
workspace in fragment order (warpgroup part, register, thread: every access coalesced);
`sched.arrive` is a `fence.acq_rel.gpu`, a named barrier of the tile's threads and one
`atom.global.acq_rel.gpu.add` whose old value is broadcast through shared memory (the last
arriver resets the counter for the next launch); `sched.reduce_partials` sums slices
0, 1, ..., S-1 in that order (deterministic). Stream-K uses the same traffic:
`sched.arrive_segment` counts to the tile's segment count held in a register, and
`sched.accumulate_partial` adds one segment's partial into the running sum's registers,
in the segment loop's order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, MemRefType
from xdsl.ir import SSAValue

from mmcomp.arch import limits as hw
from mmcomp.dialects import hopper, ptx, sched
from mmcomp.lowering.hopper.addressing import WIDE_OFFSETS
from mmcomp.lowering.hopper.context import Accumulator, KernelContext
from mmcomp.lowering.hopper.mainloop import ConsumerMainloop
from mmcomp.lowering.hopper.plan import workspace_shape
from mmcomp.lowering.hopper.pointwise import CONTRACT
from mmcomp.lowering.hopper.ring import Ring
from mmcomp.lowering.hopper.values import Values

FRAGMENT_STRIDE = hw.WARPGROUP_SIZE * 4
"""Bytes between a thread's neighbouring registers in a slab (one f32 per thread)."""


@dataclass(frozen=True)
class SplitK:
    """The split-K traffic of the consumer warpgroups."""

    ctx: KernelContext
    ring: Ring
    mode: ConsumerMainloop
    """The warp-specialization mode: which part of a tile this consumer holds."""

    @property
    def registers(self) -> int:
        """Accumulator registers per thread."""
        ctx = self.ctx
        return ctx.m_blocks * ctx.n_chunks * ctx.params.instr[1] // 2

    def partial_address(self, workspace: SSAValue, slab: SSAValue) -> SSAValue:
        """This thread's first float in tile slab `slab` of the f32 workspace: its 64-bit
        address, an i64.

        A slab holds one partial tile in the accumulator fragment order: warpgroup part,
        then register, then thread (so every store and load is coalesced). A workspace of
        more than 2^32 floats is addressed with a 64-bit slab offset.
        """
        ctx = self.ctx
        tile_elements = ctx.params.tile[0] * ctx.params.tile[1]
        part = self.registers * hw.WARPGROUP_SIZE
        thread = self.mode.threads.thread_in_warpgroup
        shape = workspace_shape(ctx.params, workspace)
        values = Values(ctx)
        if ptx.DYNAMIC in shape or math.prod(shape) > WIDE_OFFSETS:
            inner = self.mode.part_offset(thread, part)
            address = values.add_scaled(ctx.address(workspace), inner, 4)
            return values.mad_wide(slab, tile_elements * 4, address)
        first = values.mad(slab, values.const(tile_elements), thread)
        first = self.mode.part_offset(first, part)
        return values.add_scaled(ctx.address(workspace), first, 4)

    def workspace_slab(self, indices: Sequence[SSAValue], workspace: SSAValue) -> SSAValue:
        """The linear slab index of [slice, tile] (or [tile]) in the workspace's leading dims
        (an index value)."""
        ctx = self.ctx
        values = Values(ctx)
        memref_type = workspace.type
        assert isinstance(memref_type, MemRefType)
        slab: SSAValue | None = None
        for dim, index in enumerate(indices):
            term = ctx.index(index)
            if slab is None:
                slab = term
                continue
            extent = ctx.dimension(workspace, dim, "")
            size = extent if isinstance(extent, SSAValue) else values.const(extent)
            slab = values.mad(slab, size, term)
        assert slab is not None
        return slab

    def store_partial(self, op: sched.StorePartialOp) -> None:
        """Write this thread's partial accumulators to its slab of the workspace."""
        ctx = self.ctx
        acc = ctx.accumulators[op.value]
        slab = self.workspace_slab(list(op.indices), op.workspace)
        address = self.partial_address(op.workspace, slab)
        for index, value in enumerate(acc.values(ctx.k)):
            ctx.k.append(hopper.GlobalStoreOp(address, [value], index * FRAGMENT_STRIDE))

    def arrive(self, op: sched.ArriveOp) -> None:
        """Count this slice on the tile's counter; every thread gets the old count."""
        memref_type = op.counters.type
        assert isinstance(memref_type, MemRefType)
        ctx = self.ctx
        slices = ctx.params.split_k
        last = lambda: ctx.k.const(slices - 1)  # noqa: E731
        ctx.regs[op.old] = self.count_arrival(op.counters, op.indices[0], last)

    def arrive_segment(self, op: sched.ArriveSegmentOp) -> None:
        """Count this stream-K segment on the tile's counter; every thread gets the old
        count."""
        ctx = self.ctx
        last = lambda: ctx.k.sub(ctx.reg(op.segments), ctx.k.const(1))  # noqa: E731
        ctx.regs[op.old] = self.count_arrival(op.counters, op.index, last)

    def count_arrival(
        self, counters: SSAValue, index: SSAValue, last_count: Callable[[], SSAValue]
    ) -> SSAValue:
        """Add 1 to counter `index` (the arrival that finds `last_count()` resets it); the
        old count, broadcast to every thread of the tile."""
        ctx = self.ctx
        k = ctx.k
        k.append(ptx.FenceOp("acq_rel_gpu"))
        self.mode.sync_tile_threads()
        values = Values(ctx)
        counter = values.address(values.add_scaled(ctx.reg(counters), ctx.reg(index), 4))
        thread = self.mode.threads.thread_in_warpgroup
        leader = self.mode.arrive_leader(values.cmp("eq", thread, values.const(0)))
        slot = self.mode.arrive_slot(self.ring.after_barriers)
        old = ctx.put(
            ptx.InstOp("atom.global.acq_rel.gpu.add.u32 {0}, [{1}], 1", [counter], [ptx.U32]),
            leader,
        ).results[0]
        last = k.setp("eq", old, last_count())
        ctx.put(ptx.StOp("global", counter, [k.const(0)]), values.both(leader, last))
        ctx.put(ptx.StOp("shared", slot, [old]), leader)
        self.mode.sync_tile_threads()
        (shared,) = k.ld("shared", slot, ptx.U32)
        k.append(ptx.FenceOp("acq_rel_gpu"))
        return shared

    def accumulate_partial(self, op: sched.AccumulatePartialOp) -> None:
        """Add a stream-K segment's partial tile, at [CTA, slot] of the workspace, to the
        running sum's registers (in place: the sum is carried by the segment loop)."""
        ctx = self.ctx
        k = ctx.k
        total = ctx.accumulators[op.acc]
        slab = self.workspace_slab(list(op.indices), op.workspace)
        address = Values(ctx).address(self.partial_address(op.workspace, slab))
        flat = [reg for chunk in total.chunks for reg in chunk]
        for index, reg in enumerate(flat):
            (value,) = k.ld("global", address, ptx.F32, 1, index * FRAGMENT_STRIDE)
            k.assign(reg, k.add(reg, value))
        ctx.accumulators[op.result] = total

    def zero_sum(self) -> Accumulator:
        """Fresh f32 registers of zero for a sum of partial tiles (no wgmma fragments)."""
        ctx = self.ctx
        k = ctx.k
        n = ctx.params.instr[1] // 2
        chunks = [[k.const(0.0, ptx.F32) for _ in range(n)] for _ in range(self.registers // n)]
        return Accumulator(chunks)

    def reduce_partials(self, op: sched.ReducePartialsOp) -> None:
        """Sum the slices' partial tiles in slice order 0, 1, ..., S-1 into accumulators:
        `hopper.global_load`s of f32 values and `arith.addf`s (add.f32)."""
        ctx = self.ctx
        k = ctx.k
        memref_type = op.workspace.type
        assert isinstance(memref_type, MemRefType)
        shape = list(memref_type.get_shape())
        slices = shape[0]
        tiles = ctx.dimension(op.workspace, 1, "")
        registers = self.registers
        values = Values(ctx)
        tile = ctx.index(op.indices[0])
        sums: list[SSAValue] = []
        for piece in range(slices):
            if isinstance(tiles, SSAValue):
                slab = values.mad(values.const(piece), tiles, tile) if piece else tile
            else:
                slab = values.add(tile, values.const(piece * tiles))
            address = self.partial_address(op.workspace, slab)
            for index in range(registers):
                load = hopper.GlobalLoadOp(address, Float32Type(), 1, index * FRAGMENT_STRIDE)
                (value,) = k.append(load).values
                if piece == 0:
                    sums.append(value)
                else:
                    sums[index] = k.append(arith.AddfOp(sums[index], value, CONTRACT)).result
        n = ctx.params.instr[1] // 2
        ctx.accumulators[op.result] = Accumulator([sums[i : i + n] for i in range(0, registers, n)])
