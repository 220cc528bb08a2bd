"""The consumers' K loop (wgmma on the ring), one class per warp-specialization mode.

Per K block, every mode waits for the stage's full barrier, issues `wgmma.fence`, one
`wgmma.mma_async` per (k16 step, m64 block, N chunk), commits, waits until one group is
left in flight and releases the previous stage; after the loop it prefetches the epilogue
operands without an m axis, waits for the last group and releases the last stage. A
block-scaled K loop (fp8 with block-wise scales) issues each chunk into a partial as a
group of its own, promotes it once complete with the scales loaded one K block ahead,
and releases its own stage at the end of the K block (`promote_in_chunks`). The
accumulators are values: each chunk of a tile is a `hopper.zero_accumulator`, the K loop
carries it as an iter_arg, each wgmma takes it and returns the next, and the body yields
the last (the registers are made by convert-hopper-to-ptx). The
modes differ in how the consumer warpgroups share the work, which is also what split-K
and the epilogue ask of them (`part_offset`, `sync_tile_threads`, ...):

- `CooperativeMainloop`: consumer c takes rows 64c.. of every tile (warpgroup tile m);
- `PingPongMainloop`: consumer c takes the tiles whose per-CTA sequence number has
  parity c (the turn that carry-ring-positions writes around the rest of each tile, whose
  other branch moves the ring position past the other's K blocks); the order barriers
  make consumer 1 start tile t after consumer 0 has passed every wait of tile t - 1, and
  back, which keeps the ring's parity waits sound;
- `NonSpecializedMainloop`: as cooperative, and thread 0 also loads: the first
  `stages - 1` K blocks before the loop, and the block `stages - 1` ahead after each
  release, from its own load position (made once, carried across tiles and split-K
  units): the branches and the position that carry-ring-positions wrote, each lowered by
  `emit_load_ahead`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, f32
from xdsl.ir import SSAValue

from mmcomp.analysis.ring_positions import (
    is_load_ahead,
    k_block_advance,
    k_block_ops,
    load_start_of,
    positions_carried,
    ring_start_of,
    tile_counter,
    turn_of,
)
from mmcomp.analysis.warp_roles import WarpRoles, slot_of
from mmcomp.dialects import hopper, ptx, sched
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.addressing import Addressing
from mmcomp.lowering.hopper.context import Accumulator, ConsumerThreads, KernelContext
from mmcomp.lowering.hopper.control import branch, emit_loop
from mmcomp.lowering.hopper.index import place
from mmcomp.lowering.hopper.plan import ELEMENT_SIZE, SWIZZLE, TmaOperand
from mmcomp.lowering.hopper.pointwise import CONTRACT
from mmcomp.lowering.hopper.producer import Loads, emit_load_ahead
from mmcomp.lowering.hopper.ring import Ring, place_ring_start
from mmcomp.lowering.hopper.values import Values


def zero_accumulator(ctx: KernelContext) -> Accumulator:
    """Fresh zero accumulators: one `hopper.zero_accumulator` per chunk m_block * n_chunks +
    n_chunk, each a `!hopper.accumulator<64 x instr_n>`."""
    k = ctx.k
    fragment = hopper.AccumulatorType(ctx.params.instr[1])
    fragments: list[SSAValue] = [
        k.append(hopper.ZeroAccumulatorOp(fragment)).result
        for _ in range(ctx.m_blocks * ctx.n_chunks)
    ]
    return Accumulator([], fragments)


def wgmma_operands(op: sched.MmaOp, swap_ab: bool) -> tuple[sched.LoadTileOp, sched.LoadTileOp]:
    """The tile loads behind wgmma's A and B operands: the sched.mma's A and B, or with
    swap_ab its B (the tile's N rows, wgmma's m) and A (the tile's M rows, wgmma's n), so
    that the accumulator holds the tile's C^T."""
    a_load, b_load = op.a.owner, op.b.owner
    assert isinstance(a_load, sched.LoadTileOp)
    assert isinstance(b_load, sched.LoadTileOp)
    return (b_load, a_load) if swap_ab else (a_load, b_load)


@dataclass(frozen=True)
class WgmmaOperands:
    """The shared tiles a sched.mma's wgmmas read on one ring stage."""

    a: TmaOperand
    """wgmma's A operand (the tile's A, or its B under swap_ab)."""
    b: TmaOperand
    """wgmma's B operand."""
    a_tile: hopper.TileAttr
    """The A tile's shared layout."""
    b_tile: hopper.TileAttr
    """The B tile's shared layout."""
    a_base: SSAValue
    """This consumer's rows of the A tile, an `!hopper.smem`."""
    b_base: SSAValue
    """The B tile, an `!hopper.smem`."""


@dataclass
class BlockScales:
    """The block-wise scales of one K block at a consumer thread's accumulator rows."""

    ctx: KernelContext
    a_scales: list[SSAValue]
    """Per row slot (m block r // 2, upper or lower 8 rows): `a`'s scale of the row."""
    w_scales: list[SSAValue]
    """Per N block of the tile: `w`'s scale."""
    products: dict[tuple[int, int], SSAValue] = field(
        default_factory=dict[tuple[int, int], SSAValue]
    )
    """The products made so far, by (row slot, N block)."""

    @property
    def values(self) -> list[SSAValue]:
        """The loaded scales, `a`'s then `w`'s (what the K loop carries)."""
        return [*self.a_scales, *self.w_scales]

    @staticmethod
    def of(ctx: KernelContext, values: Sequence[SSAValue]) -> BlockScales:
        """The scales whose `values` are these: two per m64 block, then one per N block."""
        rows = 2 * ctx.m_blocks
        return BlockScales(ctx, list(values[:rows]), list(values[rows:]))

    def rows(self, m_block: int, n_block: int) -> tuple[SSAValue, SSAValue]:
        """The scales of m64 block `m_block`'s two row slots in N block `n_block`: `a`'s
        of the row times `w`'s of the N block (`arith.mulf`), made at their first use, the
        first promotion that needs them, so that the loads' latency hides behind the
        wgmmas issued before it."""
        scales: list[SSAValue] = []
        for slot in (2 * m_block, 2 * m_block + 1):
            product = self.products.get((slot, n_block))
            if product is None:
                mul = arith.MulfOp(self.a_scales[slot], self.w_scales[n_block], CONTRACT)
                product = self.products[(slot, n_block)] = self.ctx.k.append(mul).result
            scales.append(product)
        return scales[0], scales[1]


class ConsumerMainloop:
    """The K loop of the consumer warpgroups; subclasses are the warp-specialization modes."""

    def __init__(
        self, ctx: KernelContext, ring: Ring, prefetch: Callable[[scf.ForOp], None]
    ) -> None:
        self.ctx = ctx
        self.ring = ring
        self.prefetch = prefetch
        """Loads the epilogue operands that can hide behind the last wgmma group."""
        start = ring_start_of(ctx.warp_specialize.consumer)
        if start is None:
            raise ScheduleError(f"{ctx.where}: the consumer region has no ring position")
        self.at = ring.start(start)
        """The consumers' ring position, made once for the whole kernel (the copy of the
        consumer region's ring start)."""

    @staticmethod
    def stage_readers(roles: WarpRoles) -> int:
        """Consumer warpgroups that read (and release) each ring stage."""
        return roles.consumers

    def first_row(self, consumer: SSAValue, row: SSAValue) -> SSAValue:
        """This thread's first accumulator row in the tile, from its row in the warpgroup."""
        values = Values(self.ctx)
        rows = values.const(self.ctx.params.wgmma_warpgroup[0])
        return values.reg(values.add(values.mul(consumer, rows), row))

    def start(self, threads: ConsumerThreads) -> None:
        """Take the consumer thread registers."""
        self.threads = threads

    def part_offset(self, value: SSAValue, stride: int) -> SSAValue:
        """`value` moved to this consumer's part of the tile (`stride` per warpgroup), read
        as a register."""
        values = Values(self.ctx)
        return values.reg(values.mad(self.threads.consumer, values.const(stride), value))

    def sync_tile_threads(self) -> None:
        """Barrier of the threads that share the current tile."""
        family = self.ctx.barriers.split_k_all
        self.ctx.k.append(ptx.BarOp("sync", family.of(0), family.threads))

    def arrive_leader(self, leader: SSAValue) -> SSAValue:
        """The thread that counts the tile's split-K arrival, from each warpgroup's first."""
        values = Values(self.ctx)
        first = values.cmp("eq", self.threads.consumer, values.const(0))
        return values.both(leader, first)

    def arrive_slot(self, slot: SSAValue) -> SSAValue:
        """The shared word that broadcasts the old split-K count to the tile's threads."""
        return slot

    def before_loop(self, loop: scf.ForOp) -> None:
        """What the mode does before a tile's K loop."""

    def after_k_block(self, loop: scf.ForOp) -> None:
        """After each K block's release and advance: the ops that follow the advance in
        the K loop's body (without warp specialization, thread 0's load of the K block
        `stages - 1` ahead: its iteration's index arithmetic and its branch)."""
        ctx = self.ctx
        op = k_block_advance(loop).next_op
        while op is not None and not isinstance(op, scf.YieldOp):
            if not place(ctx, op):
                if not isinstance(op, scf.IfOp) or not is_load_ahead(op):
                    raise ScheduleError(f"{ctx.where}: cannot lower {op.name} after a K block")
                emit_load_ahead(ctx, Loads(ctx, self.ring), op)
            op = op.next_op

    def after_loop(self) -> None:
        """What the mode does right after a tile's K loop."""

    def emit(self, loop: scf.ForOp) -> None:
        """The K loop of the consumers (wgmma on the ring)."""
        ctx = self.ctx
        k = ctx.k
        accumulators = ctx.accumulators
        yielded = loop.body.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        positions = positions_carried(loop)
        if not positions:
            raise ScheduleError(f"{ctx.where}: the K loop must carry the consumers' position")
        # The position: the loop's first iter_arg, block argument and result.
        self.at.take(loop.iter_args[0])
        self.before_loop(loop)
        # The stage of the previous K block, which waits for its release: an index value
        # carried by the K loop only (there is one from the loop's second iteration on).
        # A block-scaled K loop has none: each K block's groups are complete at its end
        # (their products promoted), so it releases its own stage there.
        values = Values(ctx)
        block_scaled = any(isinstance(op, sched.MmaOp) and op.scales for op in k_block_ops(loop))
        prev_carried = None if block_scaled else ctx.carry(values.const(0), loop)
        # The block-wise scales of the K block to come, loaded one K block ahead (the
        # first before the loop) and carried by the K loop only, as f32 registers, so that
        # their latency hides behind a K block's wgmmas.
        ahead = {
            op: [ctx.carry(ctx.cast(value, ptx.F32), loop) for value in scales.values]
            for op, scales in self.scales_at(loop, ctx.index(loop.lb)).items()
        }
        # The accumulators' wgmma tiles, carried by the K loop only (its iter_args).
        tiles = [
            [ctx.carry(fragment, loop) for fragment in accumulators[init].fragments]
            for init in loop.iter_args[positions:]
        ]
        at = self.at

        def k_block() -> None:
            """One K block: wait full, wgmmas, keep one group in flight, release."""
            at.take(loop.body.block.args[1])
            for arg, carried in zip(loop.body.block.args[1 + positions :], tiles, strict=True):
                accumulators[arg] = Accumulator([], [tile.value for tile in carried])
            scales = {
                op: BlockScales.of(ctx, [ctx.cast(value.value, f32) for value in carried])
                for op, carried in ahead.items()
            }
            if ahead:
                iv = ctx.index(loop.body.block.args[0])
                following = self.scales_at(loop, values.add(iv, ctx.index(loop.step)))
                for op, carried in ahead.items():
                    for value, loaded in zip(carried, following[op].values, strict=True):
                        value.value = ctx.cast(loaded, ptx.F32)
            for op in k_block_ops(loop):
                if not isinstance(op, sched.LoadTileOp | sched.MmaOp):
                    place(ctx, op)
            self.ring.wait_full(at)
            stage = self.ring.stage_slots(at)
            k.append(ptx.WgmmaFenceOp())
            for op in k_block_ops(loop):
                if isinstance(op, sched.MmaOp) and op not in scales:
                    self.mma(op, stage)
            if prev_carried is None:
                # Chunk by chunk, each product complete before it is promoted: no group
                # is left in flight, and the stage is free for the producer at once.
                self.promote_in_chunks(scales, stage)
                self.ring.release(k.append(hopper.RingStageOp(at.value)).result, None, self.threads)
            else:
                k.append(ptx.WgmmaCommitOp())
            for value, carried in zip(yielded.operands[positions:], tiles, strict=True):
                for tile, fragment in zip(carried, accumulators[value].fragments, strict=True):
                    tile.value = fragment
            if prev_carried is not None:
                k.append(ptx.WgmmaWaitOp(1))
                iv, lower = ctx.index(loop.body.block.args[0]), ctx.index(loop.lb)
                self.ring.release(prev_carried.value, values.cmp("ne", iv, lower), self.threads)
                # A read of its own: the yield uses it after the advance (convert-hopper-to-
                # ptx copies it there), the waits and slots above read the stage register.
                prev_carried.value = k.append(hopper.RingStageOp(at.value)).result
            self.ring.advance_as(at, k_block_advance(loop))
            self.after_k_block(loop)

        emit_loop(ctx, loop, k_block)
        at.take(loop.results[0])
        if prev_carried is not None:
            ctx.carried.remove(prev_carried)
        for carried in ahead.values():
            for value in carried:
                ctx.carried.remove(value)
        for result, carried in zip(loop.results[positions:], tiles, strict=True):
            accumulators[result] = Accumulator([], [tile.value for tile in carried])
            for tile in carried:
                ctx.carried.remove(tile)
        self.after_loop()
        self.prefetch(loop)
        if prev_carried is None:
            return
        k.append(ptx.WgmmaWaitOp(0))
        # The last K block's stage, if the loop ran at all.
        ran = values.cmp("lo", ctx.index(loop.lb), ctx.index(loop.ub))
        self.ring.release(prev_carried.value, ran, self.threads)

    def a_base(self, base: SSAValue, tile: hopper.TileAttr) -> SSAValue:
        """The shared address of this consumer's rows of the A tile at `base` (an
        `!hopper.smem`): `hopper.smem_index` of the consumer's index, a warpgroup's rows
        per unit."""
        rows = self.ctx.params.wgmma_warpgroup[0]
        consumer = Values(self.ctx).of(self.threads.consumer)
        part = hopper.SmemIndexOp(base, 0, consumer, tile.layout.start_offset(rows, 0))
        return self.ctx.k.append(part).result

    def scales_at(self, loop: scf.ForOp, iv: SSAValue) -> dict[sched.MmaOp, BlockScales]:
        """The block-wise scales of each block-scaled sched.mma of `loop` in the K block
        of induction value `iv` (an index value), loaded if that K block is in the loop's
        range: the body's index arithmetic placed at `iv`, then `block_scales`."""
        ctx = self.ctx
        scaled = [op for op in k_block_ops(loop) if isinstance(op, sched.MmaOp) and op.scales]
        if not scaled:
            return {}
        iv_arg = loop.body.block.args[0]
        saved = ctx.regs.get(iv_arg)
        ctx.regs[iv_arg] = iv
        for op in k_block_ops(loop):
            if not isinstance(op, sched.LoadTileOp | sched.MmaOp):
                place(ctx, op)
        inside = Values(ctx).cmp("lo", iv, ctx.index(loop.ub))
        found = {op: self.block_scales(op, inside) for op in scaled}
        if saved is None:
            ctx.regs.pop(iv_arg, None)
        else:
            ctx.regs[iv_arg] = saved
        return found

    def block_scales(self, op: sched.MmaOp, inside: SSAValue) -> BlockScales:
        """The scales of a block-scaled sched.mma's K block: `a`'s at this thread's
        accumulator rows (per row slot: m block r // 2, upper or lower 8 rows) and `w`'s of
        the tile's N blocks, f32 values loaded from global memory if `inside` (an i1: the
        K block is in the loop's range), one `ld.global` per row slot, guarded by the row's
        bounds test too, and one per N block, guarded by the N blocks' extent past the
        first; their products are made where a promotion needs them
        (`BlockScales.rows`)."""
        ctx = self.ctx
        if ctx.params.swap_ab or SCALE_BLOCK % ctx.params.instr[1]:
            swapped = " with swap_ab" if ctx.params.swap_ab else ""
            raise ScheduleError(
                f"{ctx.where}: block-wise scales are promoted on unswapped tiles whose wgmma "
                f"chunks lie in one N block of {SCALE_BLOCK} columns, found tile "
                f"{'x'.join(map(str, ctx.params.tile))}, instr n{ctx.params.instr[1]}{swapped}"
            )
        values = Values(ctx)
        rows = [
            values.add(self.threads.row0, values.const(64 * (r // 2) + 8 * (r % 2)))
            for r in range(2 * ctx.m_blocks)
        ]
        addressing = Addressing(ctx, rows, self.threads.col0)
        a_load, b_load = (scale.owner for scale in op.scales)
        assert isinstance(a_load, sched.LoadTileOp)
        assert isinstance(b_load, sched.LoadTileOp)
        access = addressing.access(a_load.source, list(a_load.indices))
        a_scales: list[SSAValue] = []
        for half in range(len(access.bases)):
            base, offset, row_ok = addressing.element(access, half, 0)
            pred = inside if row_ok is None else values.both(inside, row_ok)
            a_scales.append(ctx.put(hopper.GlobalLoadOp(base, f32, 1, offset), pred).values[0])
        n_blocks = max(ctx.params.wgmma_warpgroup[1] // SCALE_BLOCK, 1)
        w_scales = [
            self.n_block_scale(addressing, b_load, block, inside) for block in range(n_blocks)
        ]
        return BlockScales(ctx, a_scales, w_scales)

    def n_block_scale(
        self, addressing: Addressing, load: sched.LoadTileOp, block: int, inside: SSAValue
    ) -> SSAValue:
        """`w`'s scale of the tile's N block `block` in this K block: the element `block`
        rows (N blocks) past the scale tile's origin, an f32 loaded from global memory if
        `inside` (and, past the first block, inside the N blocks' extent: a last tile may
        reach past N)."""
        ctx = self.ctx
        values = Values(ctx)
        access = addressing.access(load.source, list(load.indices))
        base, offset, _ = addressing.element(access, 0, 0)
        if block == 0:
            return ctx.put(hopper.GlobalLoadOp(base, f32, 1, offset), inside).values[0]
        memref = load.source
        memref_type = memref.type
        assert isinstance(memref_type, MemRefType)
        roles = addressing.memref_roles(memref)
        dims = [ctx.dimension(memref, axis, role) for axis, role in enumerate(roles)]
        stride = addressing.stride(dims[1:])
        if isinstance(stride, int):
            offset += block * stride * ELEMENT_SIZE["f32"]
        else:
            step = values.reg(values.const(block))
            base = values.wide(addressing.add_wide(base, step, stride, ELEMENT_SIZE["f32"]))
        extent = dims[0]
        limit = extent if isinstance(extent, SSAValue) else values.const(extent)
        n_block = values.add(ctx.index(load.indices[0]), values.const(block))
        pred = values.both(inside, values.cmp("lo", n_block, limit))
        return ctx.put(hopper.GlobalLoadOp(base, f32, 1, offset), pred).values[0]

    def promote_in_chunks(self, scales: dict[sched.MmaOp, BlockScales], stage: SSAValue) -> None:
        """The wgmmas of the block-scaled sched.mmas on the ring stage `stage`, one
        fragment (m64 block, N chunk) at a time into a partial, each committed as a group
        of its own and promoted into its main fragment once complete.

        With `block_partials_in_flight` two, the next fragment's wgmmas are issued before
        a fragment is promoted (`wgmma.wait_group 1`), so that the tensor cores work on one
        while the promotion's fma run; with one, each fragment waits for its own
        (`wgmma.wait_group 0`). Every group is complete at the end. The partials in flight
        are the only ones: a fragment's wgmmas take the registers of the partial promoted
        before it (their first step with scale-d 0 ignores the old values), so that ptxas
        cannot start them before that promotion has read its registers (with fresh
        registers it moved the next fragment's wgmmas among the fma, and both partials of
        a 128x256 tile were live: spills)."""
        ctx = self.ctx
        k = ctx.k
        fragments = [(op, index) for op in scales for index in range(ctx.m_blocks * ctx.n_chunks)]
        in_flight = ctx.params.block_partials_in_flight(len(fragments))
        held = {op: list(ctx.accumulators[op.acc].fragments) for op in scales}
        pending: deque[tuple[sched.MmaOp, int, SSAValue]] = deque()
        promoted: deque[SSAValue] = deque()
        """The partials promoted, whose registers the next fragments take."""

        def promote_oldest() -> None:
            """Wait for the oldest partial's group and promote it."""
            k.append(ptx.WgmmaWaitOp(len(pending) - 1))
            op, index, partial = pending.popleft()
            m_block, chunk = divmod(index, ctx.n_chunks)
            upper, lower = scales[op].rows(m_block, chunk * ctx.params.instr[1] // SCALE_BLOCK)
            promotion = hopper.PromoteAccumulatorOp(held[op][index], partial, upper, lower)
            held[op][index] = k.append(promotion).result
            promoted.append(partial)

        for number, (op, index) in enumerate(fragments):
            if number:
                # The registers the wgmmas take were read since the last fence.
                k.append(ptx.WgmmaFenceOp())
            start = promoted.popleft() if promoted else None
            pending.append((op, index, self.partial(op, stage, index, start)))
            k.append(ptx.WgmmaCommitOp())
            if len(pending) == in_flight:
                promote_oldest()
        while pending:
            promote_oldest()
        for op, fragments_held in held.items():
            ctx.accumulators[op.result] = Accumulator([], fragments_held)

    def operand_tiles(self, op: sched.MmaOp, stage: SSAValue) -> WgmmaOperands:
        """The shared tiles of a sched.mma's wgmmas on the ring stage `stage`."""
        ctx = self.ctx
        plan = ctx.plan
        tile_m, tile_n, tile_k = ctx.params.tile
        a_load, b_load = wgmma_operands(op, ctx.params.swap_ab)
        a_slot, b_slot = slot_of(a_load), slot_of(b_load)
        a_op = plan.operands[a_slot]
        b_op = plan.operands[b_slot]
        a_rows, b_rows = (tile_n, tile_m) if ctx.params.swap_ab else (tile_m, tile_n)
        a_tile = hopper.TileAttr(a_op.major, SWIZZLE, a_rows, tile_k, a_op.element_bytes)
        b_tile = hopper.TileAttr(b_op.major, SWIZZLE, b_rows, tile_k, b_op.element_bytes)
        a_base = self.a_base(self.ring.slot(stage, a_slot), a_tile)
        b_base = self.ring.slot(stage, b_slot)
        return WgmmaOperands(a_op, b_op, a_tile, b_tile, a_base, b_base)

    def wgmma(
        self, tiles: WgmmaOperands, fragment: SSAValue, index: int, kk: int, fresh: bool
    ) -> SSAValue:
        """One k32 (k16) step `kk` of fragment `index` (m64 block index // n_chunks, N chunk
        index % n_chunks) into `fragment`; with `fresh` (a partial's first step) its old
        value ignored (scale-d 0). The fragment it leaves."""
        ctx = self.ctx
        k = ctx.k
        instr_n = ctx.params.instr[1]
        instr_k = hopper.wgmma_instr_k(tiles.a.dtype)
        m_block, chunk = divmod(index, ctx.n_chunks)
        a_desc = k.append(
            hopper.MatrixDescriptorOp(tiles.a_base, tiles.a_tile, 64 * m_block, kk * instr_k)
        ).result
        b_desc = k.append(
            hopper.MatrixDescriptorOp(tiles.b_base, tiles.b_tile, chunk * instr_n, kk * instr_k)
        ).result
        return k.append(
            hopper.WgmmaMmaAsyncOp(
                tiles.a.dtype,
                a_desc,
                b_desc,
                fragment,
                a_major=tiles.a.major,
                b_major=tiles.b.major,
                b_dtype=tiles.b.dtype,
                scale_d=0 if fresh else 1,
            )
        ).result

    def partial(
        self, op: sched.MmaOp, stage: SSAValue, index: int, start: SSAValue | None
    ) -> SSAValue:
        """The wgmmas of fragment `index` of a block-scaled sched.mma on the ring stage
        `stage` into a partial, `start` (a promoted partial, whose registers they take) or
        a fresh one (`hopper.zero_accumulator`), the first step with scale-d 0: the K
        block's product of that fragment, unscaled."""
        ctx = self.ctx
        tiles = self.operand_tiles(op, stage)
        fragment = start
        if fragment is None:
            fresh = hopper.ZeroAccumulatorOp(hopper.AccumulatorType(ctx.params.instr[1]))
            fragment = ctx.k.append(fresh).result
        steps = ctx.params.tile[2] // hopper.wgmma_instr_k(tiles.a.dtype)
        for kk in range(steps):
            fragment = self.wgmma(tiles, fragment, index, kk, fresh=kk == 0)
        return fragment

    def mma(self, op: sched.MmaOp, stage: SSAValue) -> None:
        """The wgmmas of one sched.mma on the ring stage `stage` (a `!hopper.stage`), into
        its accumulator."""
        ctx = self.ctx
        tiles = self.operand_tiles(op, stage)
        fragments = list(ctx.accumulators[op.acc].fragments)
        steps = ctx.params.tile[2] // hopper.wgmma_instr_k(tiles.a.dtype)
        for kk in range(steps):
            for index in range(ctx.m_blocks * ctx.n_chunks):
                fragments[index] = self.wgmma(tiles, fragments[index], index, kk, fresh=False)
        ctx.accumulators[op.result] = Accumulator([], fragments)


class CooperativeMainloop(ConsumerMainloop):
    """Both consumer warpgroups work on every tile, 64-row blocks each."""


class PingPongMainloop(ConsumerMainloop):
    """The consumer warpgroups take alternate tiles; one's epilogue overlaps the other's
    mainloop."""

    @staticmethod
    def stage_readers(roles: WarpRoles) -> int:
        """One consumer warpgroup reads each stage (the one whose tile it holds)."""
        return 1

    def first_row(self, consumer: SSAValue, row: SSAValue) -> SSAValue:
        """Each consumer holds whole tiles: its row in the warpgroup is its row in the tile."""
        return row

    def part_offset(self, value: SSAValue, stride: int) -> SSAValue:
        """A consumer's part is the whole tile."""
        return value

    def a_base(self, base: SSAValue, tile: hopper.TileAttr) -> SSAValue:
        """A consumer's A rows are the whole tile at `base`."""
        return base

    def sync_tile_threads(self) -> None:
        """Barrier of the tile's one consumer warpgroup."""
        values = Values(self.ctx)
        family = self.ctx.barriers.split_k_tile
        consumer = self.threads.consumer
        first = values.cmp("eq", consumer, values.const(0))
        self.ctx.put(ptx.BarOp("sync", family.of(0), family.threads), first)
        second = values.cmp("ne", consumer, values.const(0))
        self.ctx.put(ptx.BarOp("sync", family.of(1), family.threads), second)

    def arrive_leader(self, leader: SSAValue) -> SSAValue:
        """Each consumer counts its own tiles' arrivals."""
        return leader

    def arrive_slot(self, slot: SSAValue) -> SSAValue:
        """One broadcast word per consumer warpgroup."""
        values = Values(self.ctx)
        return values.reg(values.mad(self.threads.consumer, values.const(4), slot))

    def before_loop(self, loop: scf.ForOp) -> None:
        """In this consumer's turn (the else-block of the turn around the rest of the
        tile): wait until the other consumer has passed all the waits of the previous
        tile, unless this is the first tile."""
        ctx = self.ctx
        k = ctx.k
        turn = turn_of(loop)
        if turn is None:
            raise ScheduleError(
                f"{ctx.where}: a ping-pong K loop must be in the else-block of its turn "
                "(run carry-ring-positions)"
            )
        consumer = self.threads.consumer
        order = ctx.barriers.order
        values = Values(ctx)
        first = values.cmp("eq", ctx.index(tile_counter(turn)), values.const(0))
        is_second = values.cmp("ne", consumer, values.const(0))
        is_first = values.cmp("eq", consumer, values.const(0))
        skip_sync = k.fresh_label("no_order_wait")
        wait = branch(ctx, first, (skip_sync,), negated=True, predicate=True)
        with k.inside(wait.true_region.block):
            ctx.put(ptx.BarOp("sync", order.of(1), order.threads), is_first)
            ctx.put(ptx.BarOp("sync", order.of(0), order.threads), is_second)
        self.order = (is_second, is_first)

    def after_loop(self) -> None:
        """Let the other consumer start the next tile's mainloop, if there is a next tile."""
        ctx = self.ctx
        order = ctx.barriers.order
        is_second, is_first = self.order
        values = Values(ctx)
        has_next: SSAValue = values.cmp("eq", values.const(0), values.const(1))
        if ctx.loops:
            iv, upper, step = ctx.loops[-1]
            has_next = values.cmp("lo", values.add(iv, step), upper)
        signal_first = values.both(has_next, is_first)
        signal_second = values.both(has_next, is_second)
        ctx.put(ptx.BarOp("arrive", order.of(0), order.threads), signal_first)
        ctx.put(ptx.BarOp("arrive", order.of(1), order.threads), signal_second)


class NonSpecializedMainloop(CooperativeMainloop):
    """No producer warpgroup: both warpgroups compute and thread 0 also loads (the loads
    ahead that carry-ring-positions wrote: the first `stages - 1` K blocks before the K
    loop, the block `stages - 1` ahead after each K block's advance)."""

    def __init__(
        self, ctx: KernelContext, ring: Ring, prefetch: Callable[[scf.ForOp], None]
    ) -> None:
        super().__init__(ctx, ring, prefetch)
        # Thread 0's load position, like the consumers' ring position, lives for the whole
        # kernel: its copy is made once, before the consumers' thread arithmetic.
        start = load_start_of(ctx.warp_specialize.consumer)
        if start is None:
            raise ScheduleError(f"{ctx.where}: the consumer region has no load position")
        place_ring_start(ctx, start)


MAINLOOPS: dict[str, type[ConsumerMainloop]] = {
    "cooperative": CooperativeMainloop,
    "pingpong": PingPongMainloop,
    "none": NonSpecializedMainloop,
}
"""The mainloop class of each warp specialization."""
