"""The data-parallel kernels: each work unit one tile (or one split-K slice of one).

`DataParallelKernel` rewrites a scheduled fusion function whose strategy is persistent or
one-tile-per-CTA into its kernel: each CTA's loop over work units (persistent: from its
cluster to the work units, a grid of clusters apart; else the one unit of its cluster),
each unit's tile coordinates, its `sched.contract_tile` and `sched.write_tile`. With
split-K each unit contracts the K blocks slice, slice + S, ..., stores its partial
(`sched.store_partial`), counts its arrival (`sched.arrive`), and the last slice to arrive
sums the partials in slice order (`sched.reduce_partials`) before the epilogue, inside an
`scf.if`.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from mmcomp.analysis.schedule_plan import IndexBuilder
from mmcomp.dialects import sched
from mmcomp.lowering.materialize_schedule.kernel import (
    Coordinates,
    KernelFrame,
    scheduled_plan,
    tile_coordinates,
)


def emit_unit(frame: KernelFrame, index: IndexBuilder, unit: SSAValue, rank: SSAValue) -> None:
    """The work of one unit: its tile's contraction, then the epilogue or the split-K
    fixup."""
    at = tile_coordinates(index, frame.plan, frame.counts, unit, rank, frame.group_sizes)
    if at.live is None:
        emit_tile(frame, index, at)
        return
    # A grouped tile without rows (between two groups, or past a masked group's count)
    # is skipped, by the producer and the consumers alike.
    work = Block()
    emit_tile(frame, index.at(work), at)
    work.add_op(scf.YieldOp())
    index.add(scf.IfOp(at.live, [], [work]))


def emit_tile(frame: KernelFrame, index: IndexBuilder, at: Coordinates) -> None:
    """The work of one tile at `at`: its contraction, then the epilogue or the split-K
    fixup."""
    plan = frame.plan
    first = index.const(0) if at.slice is None else at.slice
    k_blocks = index.value(frame.counts["k_blocks"])
    accumulators = frame.contract(index, at, first, k_blocks, plan.split_k)
    if plan.split_k == 1:
        frame.write(index, at, accumulators)
        return
    assert at.cta_tile is not None and at.slice is not None and frame.arrivals is not None
    for accumulator, workspace in zip(accumulators, frame.workspaces, strict=True):
        index.add(sched.StorePartialOp(accumulator, workspace, [at.slice, at.cta_tile]))
    arrived = index.add(sched.ArriveOp(frame.arrivals, [at.cta_tile])).results[0]
    arrived.name_hint = "arrived"
    is_last = index.add(arith.CmpiOp(arrived, index.const(plan.split_k - 1), "eq")).results[0]
    is_last.name_hint = "last_slice"
    fixup = Block()
    fixup_index = index.at(fixup)
    sums: list[SSAValue] = []
    for workspace, acc_type in zip(frame.workspaces, frame.acc_types, strict=True):
        reduce = sched.ReducePartialsOp(workspace, [at.cta_tile], acc_type)
        total = fixup_index.add(reduce).results[0]
        total.name_hint = "sum"
        sums.append(total)
    frame.write(fixup_index, at, sums)
    fixup.add_op(scf.YieldOp())
    index.add(scf.IfOp(is_last, [], [fixup]))


class DataParallelKernel(RewritePattern):
    """A persistent or one-tile-per-CTA schedule -> its kernel."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        scheduled = scheduled_plan(op)
        if scheduled is None or scheduled[1].stream_k:
            return
        schedule, plan = scheduled
        frame = KernelFrame(op, plan, schedule.params)
        index = frame.index
        if plan.persistent:
            clusters = index.div(frame.grid_dim(), plan.cluster_size, "clusters")
            loop = Block(arg_types=[IndexType()])
            loop.args[0].name_hint = "unit"
            emit_unit(frame, index.at(loop), loop.args[0], frame.rank)
            loop.add_op(scf.YieldOp())
            units = index.value(frame.counts["work_units"])
            index.add(scf.ForOp(frame.cluster, units, clusters, [], loop))
        else:
            emit_unit(frame, index, frame.cluster, frame.rank)
        rewriter.insert(frame.kernel_ops(), InsertPoint.after(op))
        rewriter.erase(op)
