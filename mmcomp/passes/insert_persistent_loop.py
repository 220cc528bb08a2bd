"""`insert-persistent-loop`: bind the linear work index to the grid.

Persistent (`strategy = persistent`): the grid has min(work units, SMs / cluster size)
clusters, and each walks `for t = cluster; t < units; t += clusters`. In the schedule that
is a split of the work index by the grid, the inner index bound to blockIdx.x and the
outer one a serial loop, outermost:

    %iter, %slot = sched.split %tile by 132 : !sched.axis<300>
    sched.parallelize %slot to block_x : !sched.axis<132>
    sched.parallelize %iter to serial : !sched.axis<3>
    sched.reorder %iter, %k_blk, ...

With a dynamic extent the work count is known only at call time: the split is by the most
clusters the SMs hold (the launch takes min(units, that)), and the loop bound is the
runtime count of units (docs/dynamic-shapes.md).

Stream-K (`strategy = stream-k` or `hybrid-stream-k`) binds the work index as persistent,
split by as many CTAs as the SMs hold or the K-block iterations (tiles x K blocks) number,
whichever is fewer; materialize-schedule then gives each CTA its range of iterations
(the hybrid: its data-parallel tiles and its segments of the partial wave's tiles).

One tile per CTA (`strategy = one-tile-per-cta`): the grid is the number of work units and
the work index itself is bound to blockIdx.x. With clusters, the CTA's rank in its cluster
is merged in as the fastest part of blockIdx.x (`sched.merge %slot, %rank`).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from mmcomp.analysis.schedule_view import (
    ScheduleView,
    append,
    extent,
    reorder,
    scheduled_functions,
    split,
)
from mmcomp.arch import limits as hw
from mmcomp.dialects import sched
from mmcomp.dialects.fusion import DYNAMIC, is_dynamic


def bind_work(view: ScheduleView) -> None:
    """Bind the work index (and the cluster rank) to blockIdx.x, persistent or not."""
    schedule = view.schedule
    params = view.params
    work = view.work
    cluster_size = params.cluster[0] * params.cluster[1]
    slot: SSAValue = work
    if params.strategy == "persistent" or params.stream_k:
        clusters = max(hw.SM_COUNT // cluster_size, 1)
        units = extent(work)
        if params.stream_k:
            # The CTAs share the K-block iterations: at most one CTA per iteration.
            units = DYNAMIC if is_dynamic(units) else units * extent(view.tile_axis("k"))
        if not is_dynamic(units):
            clusters = min(units, clusters)
        iteration, slot = split(schedule, work, clusters, "iter", "slot")
        append(schedule, sched.ParallelizeOp(iteration, "serial"))
        reorder(schedule, iteration)
    cta = slot
    rank = view.rank
    if rank is not None:
        cta = append(schedule, sched.MergeOp([slot, rank]), "cta").results[0]
    append(schedule, sched.ParallelizeOp(cta, "block_x"))


def unbind_work(view: ScheduleView) -> None:
    """Remove what bind_work added, so that the work index can be changed (split-K)."""
    schedule = view.schedule
    work = view.work
    persistent = view.persistent
    bound = [work] if persistent is None else [work, *persistent.results]
    merges = [op for op in view.ops() if isinstance(op, sched.MergeOp) and op.axes[0] in bound]
    bound += [op.result for op in merges]
    users: list[Operation] = [
        op for op in view.ops() if isinstance(op, sched.ParallelizeOp) and op.axis in bound
    ]
    for op in view.ops():
        if not isinstance(op, sched.ReorderOp):
            continue
        axes = [axis for axis in op.axes if axis not in bound]
        if len(axes) != len(op.axes):
            append(schedule, sched.ReorderOp(axes))
            users.append(op)
    producers: list[Operation] = [*merges, *([persistent] if persistent is not None else [])]
    for op in [*users, *producers]:
        op.detach()
        op.erase()


class InsertPersistentLoop(ModulePass):
    """Turn the linear work index into a persistent loop over the grid (or one per CTA)."""

    name = "insert-persistent-loop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for _, schedule in scheduled_functions(op, self.name):
            view = ScheduleView(schedule, self.name)
            if view.bound("block_x"):
                raise view.fail("the work index is already bound to block_x")
            bind_work(view)
