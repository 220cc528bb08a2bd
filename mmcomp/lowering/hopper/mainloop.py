"""The consumers' K loop (wgmma on the ring), one class per warp-specialization mode.

Per K block, every mode waits for the stage's full barrier, issues `wgmma.fence`, one
`wgmma.mma_async` per (k16 step, m64 block, N chunk), commits, waits until one group is
left in flight and releases the previous stage; after the loop it prefetches the epilogue
operands without an m axis, waits for the last group and releases the last stage. The
accumulators are values: each chunk of a tile is a `hopper.zero_accumulator`, the K loop
carries it as an iter_arg, each wgmma takes it and returns the next, and the body yields
the last (the registers are made by convert-hopper-to-ptx). The
modes differ in how the consumer warpgroups share the work, which is also what split-K
and the epilogue ask of them (`part_offset`, `sync_tile_threads`, ...):

- `CooperativeMainloop`: consumer c takes rows 64c.. of every tile (warpgroup tile m);
- `PingPongMainloop`: consumer c takes the tiles whose per-CTA sequence number has
  parity c and, for the other's tiles, moves its ring position past their K blocks; the
  order barriers make consumer 1 start tile t after consumer 0 has passed every wait of
  tile t - 1, and back, which keeps the ring's parity waits sound;
- `NonSpecializedMainloop`: as cooperative, and thread 0 also loads: the first
  `stages - 1` K blocks before the loop, and the block `stages - 1` ahead after each
  release, from its own load position (made once, carried across tiles and split-K units).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import SSAValue

from mmcomp.analysis.ring_positions import k_block_advance, positions_carried, ring_start_of
from mmcomp.analysis.warp_roles import WarpRoles, slot_of
from mmcomp.dialects import hopper, ptx, sched
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.addressing import Addressing
from mmcomp.lowering.hopper.context import Accumulator, Carried, ConsumerThreads, KernelContext
from mmcomp.lowering.hopper.control import branch, emit_loop, with_results
from mmcomp.lowering.hopper.index import place
from mmcomp.lowering.hopper.plan import SWIZZLE
from mmcomp.lowering.hopper.pointwise import CONTRACT
from mmcomp.lowering.hopper.producer import Loads
from mmcomp.lowering.hopper.ring import Ring
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


def trip_count(ctx: KernelContext, loop: scf.ForOp) -> SSAValue:
    """The iterations of the hopper level's copy of `loop`, an index value:
    `ceil((ub - lb) / step)`, 0 where `lb >= ub`."""
    values = Values(ctx)
    lb, ub = ctx.index(loop.lb), ctx.index(loop.ub)
    trips = values.ceildiv(values.sub(ub, lb), ctx.index(loop.step))
    over = values.pred(values.cmp("hs", lb, ub))
    return values.select(over, values.const(0), trips)


def consumer_loop(ctx: KernelContext) -> scf.ForOp:
    """The consumers' K loop."""
    if ctx.mainloop is None:
        raise ScheduleError(f"{ctx.where}: the kernel has no K loop")
    return ctx.mainloop


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
        self.position_after: SSAValue | None = None
        """The partitioned kernel's position after the K loop being emitted (its first
        result)."""
        self.kept: list[tuple[Carried, SSAValue]] = []
        """The carried registers' values before the ping-pong turn (restored at its end)."""
        self.skip_label: str | None = None
        """The end label of the turn (`scf.if`) whose else-block the rest of a tile is
        emitted into (ping-pong), until `end_of_tile` leaves it."""
        self.turn: tuple[scf.IfOp, SSAValue] | None = None
        """The ping-pong turn being emitted and the ring position its then-block yields."""

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
        """What the mode does after each K block's release."""

    def after_loop(self) -> None:
        """What the mode does right after a tile's K loop."""

    def emit(self, loop: scf.ForOp) -> None:
        """The K loop of the consumers (wgmma on the ring)."""
        ctx = self.ctx
        k = ctx.k
        accumulators = ctx.accumulators
        yielded = loop.body.block.last_op
        assert isinstance(yielded, scf.YieldOp)
        if positions_carried(loop) != 1:
            raise ScheduleError(f"{ctx.where}: the K loop must carry the consumers' position")
        # The position: the loop's first iter_arg, block argument and result.
        self.at.take(loop.iter_args[0])
        self.before_loop(loop)
        # The stage of the previous K block, which waits for its release: an index value
        # carried by the K loop only (there is one from the loop's second iteration on).
        values = Values(ctx)
        prev_carried = ctx.carry(values.const(0), loop)
        # The accumulators' wgmma tiles, carried by the K loop only (its iter_args).
        tiles = [
            [ctx.carry(fragment, loop) for fragment in accumulators[init].fragments]
            for init in loop.iter_args[1:]
        ]
        at = self.at

        def k_block() -> None:
            """One K block: wait full, wgmmas, keep one group in flight, release."""
            at.take(loop.body.block.args[1])
            for arg, carried in zip(loop.body.block.args[2:], tiles, strict=True):
                accumulators[arg] = Accumulator([], [tile.value for tile in carried])
            for op in loop.body.block.ops:
                if not isinstance(op, sched.LoadTileOp | sched.MmaOp | scf.YieldOp):
                    place(ctx, op)
            # The block-wise scales of this K block, loaded before the wait so that their
            # latency hides behind it.
            scales = {
                op: self.block_scales(op)
                for op in loop.body.block.ops
                if isinstance(op, sched.MmaOp) and op.scales
            }
            self.ring.wait_full(at)
            stage = self.ring.stage_slots(at)
            k.append(ptx.WgmmaFenceOp())
            partials: dict[sched.MmaOp, list[SSAValue]] = {}
            for op in loop.body.block.ops:
                if isinstance(op, sched.MmaOp):
                    partials[op] = self.mma(op, stage, fresh=op in scales)
            k.append(ptx.WgmmaCommitOp())
            if scales:
                # Each block-scaled product is complete before it is promoted.
                k.append(ptx.WgmmaWaitOp(0))
                for op, row_scales in scales.items():
                    self.promote(op, partials[op], row_scales)
            for value, carried in zip(yielded.operands[1:], tiles, strict=True):
                for tile, fragment in zip(carried, accumulators[value].fragments, strict=True):
                    tile.value = fragment
            k.append(ptx.WgmmaWaitOp(1))
            iv, lower = ctx.index(loop.body.block.args[0]), ctx.index(loop.lb)
            self.ring.release(prev_carried.value, values.cmp("ne", iv, lower), self.threads)
            # A read of its own: the yield uses it after the advance (convert-hopper-to-ptx
            # copies it there), the waits and slots above read the stage register itself.
            prev_carried.value = k.append(hopper.RingStageOp(at.value)).result
            self.ring.advance_as(at, k_block_advance(loop))
            self.after_k_block(loop)

        emit_loop(ctx, loop, k_block)
        self.position_after = loop.results[0]
        at.take(loop.results[0])
        ctx.carried.remove(prev_carried)
        for result, carried in zip(loop.results[1:], tiles, strict=True):
            accumulators[result] = Accumulator([], [tile.value for tile in carried])
            for tile in carried:
                ctx.carried.remove(tile)
        self.after_loop()
        self.prefetch(loop)
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

    def block_scales(self, op: sched.MmaOp) -> list[SSAValue]:
        """The scales of a block-scaled sched.mma's K block at this thread's accumulator
        rows (per row slot: m block r // 2, upper or lower 8 rows), each `a`'s scale of the
        row times `w`'s of the tile's N block: f32 values, loaded from global memory (one
        `ld.global` per row slot and one for `w`'s, guarded by the row's bounds test)."""
        ctx = self.ctx
        tile_n = ctx.params.tile[1]
        if ctx.params.swap_ab or tile_n > SCALE_BLOCK:
            swapped = " with swap_ab" if ctx.params.swap_ab else ""
            raise ScheduleError(
                f"{ctx.where}: block-wise scales are promoted on unswapped tiles of at most "
                f"{SCALE_BLOCK} columns (one N block), found tile "
                f"{'x'.join(map(str, ctx.params.tile))}{swapped}"
            )
        values = Values(ctx)
        rows = [
            values.add(self.threads.row0, values.const(64 * (r // 2) + 8 * (r % 2)))
            for r in range(2 * ctx.m_blocks)
        ]
        addressing = Addressing(ctx, rows, self.threads.col0)
        loaded: list[list[SSAValue]] = []
        for scale in op.scales:
            load = scale.owner
            assert isinstance(load, sched.LoadTileOp)
            access = addressing.access(load.source, list(load.indices))
            elements: list[SSAValue] = []
            for half in range(len(access.bases)):
                base, offset, pred = addressing.element(access, half, 0)
                element = ctx.put(hopper.GlobalLoadOp(base, Float32Type(), 1, offset), pred)
                elements.append(element.values[0])
            loaded.append(elements)
        (a_scales, (b_scale, *_)) = loaded
        return [ctx.k.append(arith.MulfOp(scale, b_scale, CONTRACT)).result for scale in a_scales]

    def promote(self, op: sched.MmaOp, partial: list[SSAValue], row_scales: list[SSAValue]):
        """The main accumulator of a block-scaled sched.mma plus its K block's product
        times its row scales (`hopper.promote_accumulator` per fragment)."""
        ctx = self.ctx
        main = ctx.accumulators[op.acc].fragments
        promoted: list[SSAValue] = []
        for index, (held, block) in enumerate(zip(main, partial, strict=True)):
            m_block = index // ctx.n_chunks
            upper, lower = row_scales[2 * m_block], row_scales[2 * m_block + 1]
            promotion = hopper.PromoteAccumulatorOp(held, block, upper, lower)
            promoted.append(ctx.k.append(promotion).result)
        ctx.accumulators[op.result] = Accumulator([], promoted)

    def mma(self, op: sched.MmaOp, stage: SSAValue, fresh: bool = False) -> list[SSAValue]:
        """The wgmmas of one sched.mma on the ring stage `stage` (a `!hopper.stage`), into
        its accumulator, or (`fresh`: a block-scaled K block, promoted after) into fresh
        ones; the fragments they leave."""
        ctx = self.ctx
        k = ctx.k
        plan = ctx.plan
        instr_n = ctx.params.instr[1]
        tile_m, tile_n, tile_k = ctx.params.tile
        fragments = list(ctx.accumulators[op.acc].fragments)
        if fresh:
            fragments = zero_accumulator(ctx).fragments
        a_load, b_load = wgmma_operands(op, ctx.params.swap_ab)
        a_slot, b_slot = slot_of(a_load), slot_of(b_load)
        a_op = plan.operands[a_slot]
        b_op = plan.operands[b_slot]
        a_rows, b_rows = (tile_n, tile_m) if ctx.params.swap_ab else (tile_m, tile_n)
        a_bytes, b_bytes = a_op.element_bytes, b_op.element_bytes
        a_tile = hopper.TileAttr(a_op.major, SWIZZLE, a_rows, tile_k, a_bytes)
        b_tile = hopper.TileAttr(b_op.major, SWIZZLE, b_rows, tile_k, b_bytes)
        a_base = self.a_base(self.ring.slot(stage, a_slot), a_tile)
        b_base = self.ring.slot(stage, b_slot)
        instr_k = hopper.wgmma_instr_k(a_op.dtype)
        for kk in range(tile_k // instr_k):
            for m_block in range(ctx.m_blocks):
                a_desc = k.append(
                    hopper.MatrixDescriptorOp(a_base, a_tile, 64 * m_block, kk * instr_k)
                ).result
                for chunk in range(ctx.n_chunks):
                    index = m_block * ctx.n_chunks + chunk
                    b_desc = k.append(
                        hopper.MatrixDescriptorOp(b_base, b_tile, chunk * instr_n, kk * instr_k)
                    ).result
                    fragments[index] = k.append(
                        hopper.WgmmaMmaAsyncOp(
                            a_op.dtype,
                            a_desc,
                            b_desc,
                            fragments[index],
                            a_major=a_op.major,
                            b_major=b_op.major,
                            b_dtype=b_op.dtype,
                            scale_d=0 if fresh and kk == 0 else 1,
                        )
                    ).result
        if not fresh:
            ctx.accumulators[op.result] = Accumulator([], fragments)
        return fragments

    def end_of_tile(self) -> None:
        """After a tile's work (the block that holds the K loop ends)."""

    def turn_result(self, mine: SSAValue) -> SSAValue:
        """The ring position after the ping-pong turn, its result: its then-block (the
        other consumer's tile) yields the position past that tile's K blocks, its else-block
        (this consumer's tile) the one its K loop left (`mine`). The partitioned kernel's
        position after the K loop is this result from here on."""
        assert self.turn is not None
        turn, skipped = self.turn
        self.turn = None
        (moved,) = with_results(turn, [skipped], [mine])
        if self.position_after is not None:
            self.ctx.regs[self.position_after] = moved
        return moved


def with_position(branch: scf.IfOp, then_value: SSAValue, else_value: SSAValue) -> SSAValue:
    """`branch` (an `scf.if` without results) made again with a ring position as its
    result, yielded as `then_value` by its then-block and `else_value` by its else-block;
    the new op's result."""
    (result,) = with_results(branch, [then_value], [else_value])
    return result


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

    def start(self, threads: ConsumerThreads) -> None:
        """Take the consumer thread registers; count the tiles walked past."""
        super().start(threads)
        ctx = self.ctx
        self.tiles_carried = ctx.carry(Values(ctx).const(0), consumer_loop(ctx), inclusive=False)
        """Tiles the consumer has walked past (their parity says whose turn a tile is): an
        index value carried by the loops around the K loop."""

    @property
    def tiles_seen(self) -> SSAValue:
        """The tile counter's value at the builder's insertion point."""
        return self.tiles_carried.value

    def end_of_tile(self) -> None:
        """After a tile's work: the end of the turn; count the tile."""
        ctx = self.ctx
        k = ctx.k
        if self.skip_label is not None:
            k.leave()
            self.skip_label = None
            moved = self.at.value
            for carried, value in self.kept:
                carried.value = value
            self.at.carried.value = self.turn_result(moved)
        if ctx.loops and self.tiles_seen not in k.block.args:
            # A tile's end inside a branch of a loop: the count would not reach the loop's
            # yield (a branch has no results but ring positions).
            raise ScheduleError(
                f"{ctx.where}: a ping-pong tile must end in the body of the loop over tiles, "
                "not inside a branch of it"
            )
        values = Values(ctx)
        self.tiles_carried.value = values.add(self.tiles_seen, values.const(1))

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
        """Skip the other consumer's tile (moving the ring position past its K blocks); wait
        until the other consumer has passed all the waits of the previous tile."""
        ctx = self.ctx
        k = ctx.k
        consumer = self.threads.consumer
        order = ctx.barriers.order
        start = self.at.value
        values = Values(ctx)
        # This consumer's tile: the tile counter's parity is the consumer's index (an i1
        # comparison of the lowering, branched on as a predicate).
        parity = values.and_(self.tiles_seen, values.const(1))
        mine = values.cmp("eq", parity, consumer)
        work = k.fresh_label("my_tile")
        self.skip_label = k.fresh_label("tile_done")
        turn = branch(
            ctx, mine, (work, self.skip_label), negated=True, otherwise=True, predicate=True
        )
        with k.inside(turn.true_region.block):
            self.ring.advance_by(self.at, trip_count(ctx, loop))
        # The position past the other consumer's K blocks is what the then-block yields.
        self.turn = (turn, self.at.value)
        self.at.carried.value = start
        # The rest of the tile is this consumer's turn, up to `end_of_tile` (which restores
        # the carried registers' values from before the turn).
        self.kept = [(carried, carried.value) for carried in ctx.carried]
        k.enter(turn.false_region.block)
        first = values.cmp("eq", self.tiles_seen, values.const(0))
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
    """No producer warpgroup: both warpgroups compute and thread 0 also loads."""

    def __init__(
        self, ctx: KernelContext, ring: Ring, prefetch: Callable[[scf.ForOp], None]
    ) -> None:
        super().__init__(ctx, ring, prefetch)
        # Thread 0's load position, like the consumers' ring position, lives for the whole
        # kernel: it is carried across the persistent loop's tiles and split-K units, never
        # reset per tile (the ring's phases go on from tile to tile).
        self.load_at = ring.position(consumer_loop(ctx))
        self.loads = Loads(ctx, ring)

    def before_loop(self, loop: scf.ForOp) -> None:
        """The pipeline's prologue: the tile's first `stages - 1` K blocks."""
        self.load_ahead(loop, self.ctx.index(loop.lb), range(self.ctx.roles.stages - 1))

    def after_k_block(self, loop: scf.ForOp) -> None:
        """The K block `stages - 1` ahead, into the stage just released."""
        ctx = self.ctx
        self.load_ahead(loop, ctx.index(loop.body.block.args[0]), [ctx.roles.stages - 1])

    def load_ahead(self, loop: scf.ForOp, base: SSAValue, distances: Sequence[int]) -> None:
        """Thread 0 loads the K blocks `distance` iterations after iteration `base` (an
        induction-variable value), if they exist."""
        ctx = self.ctx
        k = ctx.k
        iv_arg = loop.body.block.args[0]
        saved = ctx.regs.get(iv_arg)
        values = Values(ctx)
        for distance in distances:
            at = values.mad(values.const(distance), ctx.index(loop.step), base)
            skip = k.fresh_label("no_load")
            inside = values.cmp("lo", at, ctx.index(loop.ub))
            load = branch(ctx, values.both(inside, ctx.threads.leader), (skip,), predicate=True)
            start = self.load_at.value
            with k.inside(load.true_region.block):
                ctx.regs[iv_arg] = at
                self.loads.issue(loop, self.load_at)
                self.ring.advance(self.load_at)
            # The load position after the branch: moved on where thread 0 loaded, else kept.
            self.load_at.carried.value = with_position(load, self.load_at.value, start)
        if saved is None:
            ctx.regs.pop(iv_arg, None)
        else:
            ctx.regs[iv_arg] = saved


MAINLOOPS: dict[str, type[ConsumerMainloop]] = {
    "cooperative": CooperativeMainloop,
    "pingpong": PingPongMainloop,
    "none": NonSpecializedMainloop,
}
"""The mainloop class of each warp specialization."""
