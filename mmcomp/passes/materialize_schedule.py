"""`materialize-schedule`: lower a scheduled fusion to loops, index arithmetic and tile ops.

The input is a fusion function after `propagate-axis-mapping` whose body holds a
`sched.schedule` (built by tile-split, tile-merge, insert-persistent-loop and split-k).
The output is the kernel: a `func.func` of the same name on memrefs (the fusion's inputs,
then its outputs, then split-K scratch buffers) whose body is

    %cta = gpu.block_id x
    scf.for %t = %cta to %work step %grid {          // persistent; one-tile-per-CTA: no loop
      ... explicit arith index arithmetic: work unit -> split-K slice, batch, swizzled
          (m tile, n tile) under the raster order and group size, cluster rank ...
      %acc = scf.for %kb = %c0 to %k_blocks step %c1 iter_args(...) {  // split-K: %slice
        sched.load_tile of each mma operand at the starts its roles select  // to .. step S
        sched.mma per contraction
      }
      sched.load_tile of each epilogue operand, sched.epilogue, sched.store_tile per output
    }

With split-K, each unit stores its partial (`sched.store_partial`), counts its arrival
(`sched.arrive`), and the last slice to arrive sums the partials in slice order
(`sched.reduce_partials`) before the epilogue and the stores, inside an `scf.if`. Under
stream-K each CTA walks the tiles of its range of K-block iterations instead (the hybrid:
whole tiles of the full waves, then its segments of the partial wave's), and the last
segment of a shared tile to arrive sums the segments in K order
(`sched.arrive_segment`, `sched.accumulate_partial`).

Every start index comes from the roles: an axis with role m starts at the tile's m offset,
n at its n offset, k at the K block's offset, a batch role at the batch index, and an absent
axis (role _) at 0 with extent 1. So an operand never sees an axis it does not have.

The pass is a set of rewrite patterns (mmcomp.lowering.materialize_schedule), applied by
xDSL's rewriter: one per strategy rewrites a scheduled function into its kernel, each
work unit's tile a `sched.contract_tile` and a `sched.write_tile` (data-parallel:
persistent or one tile per CTA, with split-K's fixup; stream-K; hybrid stream-K), and
two tile patterns expand those into the K loop and the epilogue and stores.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

from mmcomp.analysis.schedule_plan import plan_of
from mmcomp.analysis.schedule_view import EXTENT_ATTR, ScheduleView, scheduled_functions
from mmcomp.lowering.materialize_schedule.body import analyze_body
from mmcomp.lowering.materialize_schedule.data_parallel import DataParallelKernel
from mmcomp.lowering.materialize_schedule.stream_k import HybridStreamKKernel, StreamKKernel
from mmcomp.lowering.materialize_schedule.tiles import ContractTileToKLoop, WriteTileToEpilogue

__all__ = ["EXTENT_ATTR", "MaterializeSchedule"]


class MaterializeSchedule(ModulePass):
    """Lower each scheduled function to its kernel: loops, index arithmetic, tile ops."""

    name = "materialize-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Check the module's scheduled functions (the plan of each schedule, the parts of
        each body), then rewrite them by the patterns."""
        del ctx
        for function, schedule in scheduled_functions(op, self.name):
            plan_of(ScheduleView(schedule, self.name))
            analyze_body(function)
        patterns = GreedyRewritePatternApplier(
            [
                DataParallelKernel(),
                StreamKKernel(),
                HybridStreamKKernel(),
                ContractTileToKLoop(),
                WriteTileToEpilogue(),
            ],
            dce_enabled=False,
        )
        PatternRewriteWalker(patterns).rewrite_module(op)
