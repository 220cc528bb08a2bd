"""`tile-merge`: merge the m and n tile indices (and the batch) into one linear tile index.

The order of the tiles follows the raster order and the swizzle group size of the params
(the grouped rasterization of CUTLASS and Triton). For raster m, the m tile index varies
fastest, and the n tile index is cut into groups of `swizzle` tiles:

    %tile_mn = sched.swizzle %n_tile, %m_tile group 8 : !sched.axis<4>, !sched.axis<3>
    %tile = sched.merge %b0, %tile_mn : !sched.axis<2>, !sched.axis<12>

With a cluster of cm x cn CTAs, the m and n tile indices are first split by the cluster
shape; the swizzle then orders cluster tiles, and the CTA's rank in the cluster (m fastest)
picks its tile inside the cluster tile:

    %m_cluster, %m_rank = sched.split %m_tile by 2 : !sched.axis<3>
    %rank = sched.merge %n_rank, %m_rank : ...
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from mmcomp.analysis.schedule_view import ScheduleView, append, extent, scheduled_functions, split
from mmcomp.dialects import sched


class TileMerge(ModulePass):
    """Merge the batch, m and n tile indices under the raster order and swizzle."""

    name = "tile-merge"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for _, schedule in scheduled_functions(op, self.name):
            self._merge(ScheduleView(schedule, self.name))

    def _merge(self, view: ScheduleView) -> None:
        if view.swizzle is not None:
            raise view.fail("the tile indices are already merged")
        params = view.params
        schedule = view.schedule
        cluster_axes: dict[str, SSAValue] = {}
        ranks: list[SSAValue] = []
        for role, size in zip(("m", "n"), params.cluster, strict=True):
            tile = view.tile_axis(role)
            if size == 1:
                cluster_axes[role] = tile
                continue
            outer, inner = split(schedule, tile, size, f"{role}_cluster", f"{role}_rank")
            cluster_axes[role] = outer
            ranks.append(inner)
        if len(ranks) == 2:
            append(schedule, sched.MergeOp([ranks[1], ranks[0]]), "rank")
        raster = params.raster_for(extent(cluster_axes["m"]), extent(cluster_axes["n"]))
        fast, slow = ("m", "n") if raster == "m" else ("n", "m")
        swizzle = sched.SwizzleOp(cluster_axes[slow], cluster_axes[fast], params.swizzle)
        append(schedule, swizzle, "tile_mn" if not view.batch_axes else "mn")
        if view.batch_axes:
            append(schedule, sched.MergeOp([*view.batch_axes, swizzle.result]), "tile")
