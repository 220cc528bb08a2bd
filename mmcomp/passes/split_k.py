"""`split-k`: give the K blocks of every tile to `split_k` CTAs and reduce their partials.

The K block index is split by the slice count: slice j of a tile takes the K blocks
j, j + S, j + 2S, ... (kb = k_iter * S + slice; the counts differ by at most one). The
slice joins the work index as its fastest part, so the slices of one tile go to
neighbouring CTAs:

    %k_iter, %slice = sched.split %k_blk by 3 : !sched.axis<4>
    %work = sched.merge %tile, %slice : !sched.axis<12>, !sched.axis<3>

If the work index was already bound to the grid (insert-persistent-loop ran first), the
binding is rebuilt on the new work index. `materialize-schedule` then makes each slice
store its f32 partial tile into a workspace and count its arrival on the tile atomically;
the last slice to arrive sums the partials in the fixed order 0, 1, ..., S-1 (so the
result does not depend on which CTA finished first), applies the epilogue once and stores
the outputs. With split_k = 1 the pass changes nothing.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mmcomp.analysis.schedule_view import ScheduleView, append, scheduled_functions, split
from mmcomp.dialects import sched
from mmcomp.passes.insert_persistent_loop import bind_work, unbind_work


class SplitK(ModulePass):
    """Split the K blocks of each tile over `split_k` CTAs (reduced in a fixed order)."""

    name = "split-k"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for _, schedule in scheduled_functions(op, self.name):
            view = ScheduleView(schedule, self.name)
            _ = view.tile  # tile-merge must have run, even for split_k = 1
            if view.params.split_k > 1:
                self._split(view)

    def _split(self, view: ScheduleView) -> None:
        if view.k_slices is not None:
            raise view.fail("the K blocks are already split into slices")
        schedule = view.schedule
        tile = view.tile
        bound = bool(view.bound("block_x"))
        if bound:
            unbind_work(view)
        k_block = view.tile_axis("k")
        k_iter, slice_ = split(schedule, k_block, view.params.split_k, "k_iter", "slice")
        append(schedule, sched.ParallelizeOp(k_iter, "serial"))
        append(schedule, sched.MergeOp([tile, slice_]), "work")
        for op in view.ops():
            if isinstance(op, sched.ReorderOp) and k_block in op.axes:
                axes = [k_iter if axis == k_block else axis for axis in op.axes]
                append(schedule, sched.ReorderOp(axes))
                op.detach()
                op.erase()
        if bound:
            bind_work(view)
