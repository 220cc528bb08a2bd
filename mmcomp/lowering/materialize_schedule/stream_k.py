"""The stream-K kernels: the CTAs split the K-block iterations of all tiles evenly.

With `strategy = stream-k` the K blocks of every tile, tile after tile in the linear tile
order (batch, raster, swizzle: the order of the persistent kernels), make one sequence of
T = tiles x K blocks iterations. CTA c of the P in the grid takes the iterations
[c T / P, (c + 1) T / P) (rounded down): a run of K blocks that may start and end inside
a tile. It walks the tiles its range touches, one unit each, with a K loop over the
range's part of the tile:

    scf.for %u = %c0 to %units step %c1 {             // the tiles of this CTA's range
      ... %tile, %lo, %hi ...                          // K blocks [lo, hi) of the tile
      %acc = scf.for %kb = %lo to %hi step %c1 ...
      scf.if %whole { epilogue }                       // the CTA's range covers the tile
      else {                                           // a segment of a shared tile
        sched.store_partial %acc, %partials[%cta, %slot]
        %old = sched.arrive_segment %arrivals[%tile] of %segments
        scf.if %old == %segments - 1 {                 // the last segment to arrive
          %sum = scf.for %c = %first to %last + 1 iter_args(%zero) {  // in segment order
            sched.accumulate_partial %sum, %partials[%c, %slot_c] }
          epilogue
        }
      }
    }

A CTA leaves at most two partial tiles, its first tile's (slot 0) and its last's (slot 1):
the tiles between lie wholly in its range. So the workspace holds [P, 2, tile] f32 for
any problem, and the segments of a tile are those of the CTAs first..last whose ranges
meet it, in CTA order: the K order. Whichever arrives last sums them in that order from
zero, so the bits do not depend on which CTA finished first.

`strategy = hybrid-stream-k` runs every full wave data-parallel (CTA c takes tiles c,
c + P, ...: whole tiles, no workspace) and splits only the R tiles of the last, partial
wave, each into S segments of K blocks at fixed points (segment j: [j kb / S,
(j + 1) kb / S)). Tail unit u = j R + t (segment j of tail tile t) goes to CTA u mod P in
its round u div P, segment-major: the CTAs of one round work on neighbouring tiles of the
data-parallel order at the same K offset, so they share A and W panels in L2 as a
data-parallel wave does (a contiguous split would put every CTA at a different K offset).
S is the largest split that fits one round (P div R), or two rounds where that halves
the tail further, at most MAX_TAIL_SEGMENTS and kb; where the tail is over half a wave
S is 1 and the hybrid is data-parallel. The last segment to arrive sums the S partials
in segment order from zero, so the bits do not depend on which CTA finished first.

`StreamKKernel` and `HybridStreamKKernel` rewrite a scheduled fusion function of each
strategy into its kernel (`StreamKWork` writes the work into the kernel's frame); the
tiles are `sched.contract_tile` and `sched.write_tile`, as in the data-parallel kernels.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import func, scf
from xdsl.ir import Block, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from mmcomp.analysis.schedule_plan import MAX_TAIL_SEGMENTS, Count, IndexBuilder, tail_segments
from mmcomp.dialects import sched
from mmcomp.lowering.materialize_schedule.kernel import (
    Coordinates,
    KernelFrame,
    scheduled_plan,
    tile_coordinates,
)


class StreamKWork:
    """Writes a stream-K kernel's work into its frame: the CTA's units, their tiles'
    contractions and fixups."""

    def __init__(self, frame: KernelFrame, grid: SSAValue | None):
        self.frame = frame
        self.index = frame.index
        self.cta = frame.cta
        """This CTA (gpu.block_id)."""
        plan = frame.plan
        self.grid: Count = plan.grid if grid is None else grid
        """CTAs in the grid: the plan's where the extents are static, else gpu.grid_dim."""
        self.k_blocks = plan.k_blocks
        """K blocks per tile."""

    def _sub(self, index: IndexBuilder, lhs: Count, rhs: Count, name: str = "") -> Count:
        """lhs - rhs: an int when both are."""
        if isinstance(lhs, int) and isinstance(rhs, int):
            return lhs - rhs
        if isinstance(rhs, int) and rhs == 0:
            return lhs
        return index.minus(lhs, index.value(rhs), name)

    def _add(self, index: IndexBuilder, lhs: Count, rhs: Count, name: str = "") -> Count:
        """lhs + rhs: an int when both are."""
        if isinstance(lhs, int) and isinstance(rhs, int):
            return lhs + rhs
        return index.plus(index.value(lhs), index.value(rhs), name)

    def emit(self) -> None:
        """The CTA's loop: its stream-K range, or the hybrid's waves and tail segments."""
        frame, index = self.frame, self.index
        tiles: Count = frame.counts["work_units"]
        grid = self.grid
        if frame.plan.stream_k == "hybrid-stream-k":
            self._emit_hybrid(tiles, grid)
            return
        self.iterations = index.times(tiles, self.k_blocks, "iterations")
        """K-block iterations of all tiles."""
        cta = self.cta
        after = index.plus(cta, index.const(1))
        self.start = index.div(index.value(index.times(cta, self.iterations)), grid, "start")
        """The first iteration of this CTA's range."""
        self.end = index.div(index.value(index.times(after, self.iterations)), grid, "end")
        """The iteration after its range."""
        self.first_tile = index.div(self.start, self.k_blocks, "first_tile")
        """The first tile of the range."""
        end_tile = index.ceil_div(self.end, self.k_blocks, "end_tile")
        units = index.minus(end_tile, self.first_tile, "units")
        loop = Block(arg_types=[index.const(0).type])
        loop.args[0].name_hint = "unit"
        self._unit(index.at(loop), loop.args[0])
        loop.add_op(scf.YieldOp())
        index.add(scf.ForOp(index.const(0), index.value(units), index.const(1), [], loop))

    def _tail_plan(self, tiles: Count, grid: Count) -> tuple[Count, Count, Count]:
        """The hybrid's full waves, tail tiles R (at least 1, as a divisor) and segments S."""
        index = self.index
        if isinstance(tiles, int) and isinstance(grid, int):
            waves, tail = divmod(tiles, grid)
            return waves, max(tail, 1), tail_segments(tail, grid, self.k_blocks)
        tiles_v, grid_v = index.value(tiles), index.value(grid)
        waves = index.div(tiles_v, grid_v, "waves")
        tail = index.minus(tiles_v, index.value(index.times(waves, grid_v)), "tail")
        tail = index.greater(tail, index.const(1), "tail")
        cap = index.const(min(MAX_TAIL_SEGMENTS, self.k_blocks))
        one = index.lesser(index.div(grid_v, tail), cap, "one_round")
        two_grid = index.value(index.times(grid_v, 2))
        two = index.lesser(index.div(two_grid, tail), cap, "two_rounds")
        spare = index.minus(grid_v, index.const(1))
        product = index.value(index.times(tail, two))
        rounds = index.div(index.plus(product, spare), grid_v, "rounds")
        better = index.compare("ult", index.value(index.times(rounds, one)), two, "two_better")
        one = index.greater(one, index.const(1))
        return waves, tail, index.select(better, two, one, "segments")

    def _emit_hybrid(self, tiles: Count, grid: Count) -> None:
        """The hybrid's loop: full waves data-parallel, then this CTA's tail segments."""
        index = self.index
        waves, tail, segments = self._tail_plan(tiles, grid)
        self.waves = waves
        self.tail = tail
        """Tiles of the partial wave (1 where there are none: it divides)."""
        self.segments = segments
        """Segments per tail tile."""
        self.dp_tiles = index.times(waves, grid, "dp_tiles")
        # The tail units exist only where the partial wave does: R S of them then.
        remainder = self._sub(index, tiles, self.dp_tiles, "remainder")
        tail_units = index.times(remainder, segments, "tail_units")
        spare = index.minus(index.value(self._sub(index, grid, 1)), self.cta)
        mine = index.div(index.plus(index.value(tail_units), spare), grid, "tail_rounds")
        units = self._add(index, waves, mine, "units")
        loop = Block(arg_types=[index.const(0).type])
        loop.args[0].name_hint = "unit"
        self._hybrid_unit(index.at(loop), loop.args[0])
        loop.add_op(scf.YieldOp())
        index.add(scf.ForOp(index.const(0), index.value(units), index.const(1), [], loop))

    def _segment_bounds(self, index: IndexBuilder, segment: SSAValue) -> tuple[SSAValue, SSAValue]:
        """K blocks [j kb / S, (j + 1) kb / S) of segment j."""
        segments = index.value(self.segments)
        lo = index.div(index.mul(segment, self.k_blocks), segments, "kb_lo")
        after = index.plus(segment, index.const(1))
        hi = index.div(index.mul(after, self.k_blocks), segments, "kb_hi")
        return lo, hi

    def _hybrid_unit(self, index: IndexBuilder, unit: SSAValue) -> None:
        """One unit of the hybrid: a data-parallel tile or a segment of a tail tile."""
        kb = index.const(self.k_blocks)
        waves_value, grid = index.value(self.waves), index.value(self.grid)
        data_parallel = index.compare("ult", unit, waves_value, "data_parallel")
        past = index.minus(index.select(data_parallel, waves_value, unit), waves_value, "round")
        tail_unit = index.plus(index.value(index.times(past, grid)), self.cta, "tail_unit")
        tail_tile = index.rem(tail_unit, self.tail, "tail_tile")
        segment = index.div(tail_unit, self.tail, "segment")
        lo, hi = self._segment_bounds(index, segment)
        wave_tile = index.plus(index.value(index.times(unit, grid)), self.cta)
        tail_global = index.plus(index.value(self.dp_tiles), tail_tile)
        tile = index.select(data_parallel, wave_tile, tail_global, "tile")
        lo = index.select(data_parallel, index.const(0), lo, "kb_lo")
        hi = index.select(data_parallel, kb, hi, "kb_hi")
        self._tile_part(
            index,
            tile,
            lo,
            hi,
            lambda shared, at, accumulators: self._tail_fixup(
                shared, at, tile, tail_tile, past, accumulators
            ),
        )

    def _zero_sums(self, index: IndexBuilder) -> list[SSAValue]:
        """A zero tile per accumulator: the initial sums of a fixup's reduction."""
        zeros: list[SSAValue] = []
        for acc_type in self.frame.acc_types:
            value = index.add(sched.ZeroTileOp(acc_type)).results[0]
            value.name_hint = "zero"
            zeros.append(value)
        return zeros

    def _tail_fixup(
        self,
        index: IndexBuilder,
        at: Coordinates,
        tile: SSAValue,
        tail_tile: SSAValue,
        slot: SSAValue,
        accumulators: list[SSAValue],
    ) -> None:
        """Store this tail segment's partial in its round's slot, count it, and let the
        last segment sum the tile's S partials in segment order."""
        frame = self.frame
        zero, one = index.const(0), index.const(1)
        for accumulator, workspace in zip(accumulators, frame.workspaces, strict=True):
            index.add(sched.StorePartialOp(accumulator, workspace, [self.cta, slot]))
        segments = index.value(self.segments)
        assert frame.arrivals is not None
        arrived = index.add(sched.ArriveSegmentOp(frame.arrivals, tile, segments)).results[0]
        arrived.name_hint = "arrived"
        others = index.value(self._sub(index, self.segments, 1, "other_segments"))
        is_last = index.compare("eq", arrived, others, "last_segment")
        reduce = Block()
        red = index.at(reduce)
        zeros = self._zero_sums(red)
        body = Block(arg_types=[zero.type, *frame.acc_types])
        body.args[0].name_hint = "segment"
        inner = red.at(body)
        unit = inner.plus(
            inner.value(inner.times(body.args[0], self.tail)), tail_tile, "segment_unit"
        )
        owner = inner.rem(unit, self.grid, "segment_cta")
        owner_slot = inner.div(unit, self.grid, "segment_slot")
        sums: list[SSAValue] = []
        for total, workspace in zip(body.args[1:], frame.workspaces, strict=True):
            total.name_hint = "sum"
            op = sched.AccumulatePartialOp(total, workspace, [owner, owner_slot])
            result = inner.add(op).results[0]
            result.name_hint = "sum"
            sums.append(result)
        body.add_op(scf.YieldOp(*sums))
        loop = red.add(scf.ForOp(zero, segments, one, zeros, body))
        for result in loop.results:
            result.name_hint = "sum"
        frame.write(red, at, list(loop.results))
        reduce.add_op(scf.YieldOp())
        index.add(scf.IfOp(is_last, [], [reduce]))

    def _tile_part(
        self,
        index: IndexBuilder,
        tile: SSAValue,
        lo: SSAValue,
        hi: SSAValue,
        fixup: Callable[[IndexBuilder, Coordinates, list[SSAValue]], None],
    ) -> None:
        """K blocks [lo, hi) of `tile`: the K loop, then the epilogue where they are the
        whole tile, else `fixup` (the partial of a shared tile and its reduction)."""
        frame = self.frame
        kb = index.const(self.k_blocks)
        at = tile_coordinates(index, frame.plan, frame.counts, tile, index.const(0))
        accumulators = frame.contract(index, at, lo, hi, 1)
        whole = index.compare("eq", index.minus(hi, lo), kb, "whole_tile")
        alone = Block()
        frame.write(index.at(alone), at, accumulators)
        alone.add_op(scf.YieldOp())
        shared = Block()
        fixup(index.at(shared), at, accumulators)
        shared.add_op(scf.YieldOp())
        index.add(scf.IfOp(whole, [], [alone], [shared]))

    def _unit(self, index: IndexBuilder, unit: SSAValue) -> None:
        """One unit: the range's part of a tile."""
        kb = index.const(self.k_blocks)
        tile = index.plus(self.first_tile, unit, "sk_tile")
        base = index.mul(tile, self.k_blocks, "kb_base")
        lo = index.minus(index.greater(self.start, base), base, "kb_lo")
        hi = index.minus(index.lesser(self.end, index.plus(base, kb)), base, "kb_hi")
        self._tile_part(
            index,
            tile,
            lo,
            hi,
            lambda shared, at, accumulators: self._fixup(shared, at, tile, base, accumulators),
        )

    def _cta_before(self, index: IndexBuilder, bound: SSAValue, name: str) -> SSAValue:
        """The CTA whose range holds iteration `bound` - 1: the largest c with
        c T / P < bound, (bound P - 1) / T."""
        scaled = index.value(index.times(bound, self.grid))
        return index.div(index.minus(scaled, index.const(1)), self.iterations, name)

    def _fixup(
        self,
        index: IndexBuilder,
        at: Coordinates,
        tile: SSAValue,
        base: SSAValue,
        accumulators: list[SSAValue],
    ) -> None:
        """Store this segment's partial, count it, and let the last segment sum them all."""
        frame = self.frame
        zero, one = index.const(0), index.const(1)
        later = index.compare("ne", tile, self.first_tile, "later_tile")
        slot = index.select(later, one, zero, "slot")
        for accumulator, workspace in zip(accumulators, frame.workspaces, strict=True):
            index.add(sched.StorePartialOp(accumulator, workspace, [self.cta, slot]))
        first = self._cta_before(index, index.plus(base, one), "first_cta")
        last = self._cta_before(index, index.plus(base, index.const(self.k_blocks)), "last_cta")
        others = index.minus(last, first, "other_segments")
        segments = index.plus(others, one, "segments")
        assert frame.arrivals is not None
        arrived = index.add(sched.ArriveSegmentOp(frame.arrivals, tile, segments)).results[0]
        arrived.name_hint = "arrived"
        is_last = index.compare("eq", arrived, others, "last_segment")
        reduce = Block()
        red = index.at(reduce)
        first_start = red.div(
            red.value(red.times(first, self.iterations)), self.grid, "first_start"
        )
        first_later = red.compare("ne", first_start, base, "first_later")
        first_slot = red.select(first_later, one, zero, "first_slot")
        zeros = self._zero_sums(red)
        body = Block(arg_types=[zero.type, *frame.acc_types])
        body.args[0].name_hint = "segment"
        inner = red.at(body)
        is_first = inner.compare("eq", body.args[0], first, "is_first")
        segment_slot = inner.select(is_first, first_slot, zero, "segment_slot")
        sums: list[SSAValue] = []
        for total, workspace in zip(body.args[1:], frame.workspaces, strict=True):
            total.name_hint = "sum"
            op = sched.AccumulatePartialOp(total, workspace, [body.args[0], segment_slot])
            result = inner.add(op).results[0]
            result.name_hint = "sum"
            sums.append(result)
        body.add_op(scf.YieldOp(*sums))
        loop = red.add(scf.ForOp(first, red.plus(last, one), one, zeros, body))
        for result in loop.results:
            result.name_hint = "sum"
        frame.write(red, at, list(loop.results))
        reduce.add_op(scf.YieldOp())
        index.add(scf.IfOp(is_last, [], [reduce]))


def _rewrite(op: func.FuncOp, rewriter: PatternRewriter, strategy: str) -> None:
    """Rewrite `op`, if its schedule's strategy is `strategy`, into its stream-K kernel."""
    scheduled = scheduled_plan(op)
    if scheduled is None or scheduled[1].stream_k != strategy:
        return
    schedule, plan = scheduled
    frame = KernelFrame(op, plan, schedule.params)
    StreamKWork(frame, frame.grid_dim() if plan.dynamic_axes else None).emit()
    rewriter.insert(frame.kernel_ops(), InsertPoint.after(op))
    rewriter.erase(op)


class StreamKKernel(RewritePattern):
    """A stream-k schedule -> its kernel: each CTA's range of K-block iterations."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        _rewrite(op, rewriter, "stream-k")


class HybridStreamKKernel(RewritePattern):
    """A hybrid-stream-k schedule -> its kernel: full waves of whole tiles, then the
    segments of the partial wave's tiles."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        _rewrite(op, rewriter, "hybrid-stream-k")
