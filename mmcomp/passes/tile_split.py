"""`tile-split`: start the schedule of a fusion and split m, n and k into tiles.

For each `func.func` that carries `sched.params` (and `fusion.space` from
propagate-axis-mapping), the pass puts a `sched.schedule params #sched.params<...>` op
first in its body, moving the params there. Its body holds the iteration space and three
levels of splits per axis:

    %b0, %m, %n, %k = sched.space b0 = 2, m = 300, n = 500, k = 200
    %m_tile, %m_cta = sched.split %m by 128          // CTA tile
    %m_wg, %m_wgi = sched.split %m_cta by 64         // warpgroup tile
    %m_instr, %m_lane = sched.split %m_wgi by 64     // wgmma instruction
    ... n likewise; k by the CTA tile's k and the instruction's k ...
    sched.parallelize %m_wg to warpgroup
    sched.parallelize %m_lane to instruction
    sched.reorder %k_blk, %k_instr, %m_instr, %n_instr

A fusion function (one with `fusion.space` or fusion ops, or an empty one: tensor
arguments, no results, nothing but func.return) without `sched.params` is an error, as is
one that already has a schedule; so is a fusion function without a schedule for the passes
after this one (`scheduled_functions`). Plain functions and the kernels that
materialize-schedule built are left alone. The `fusion.space` and `fusion.roles` of a
function that this pass or a later one schedules must be those propagate-axis-mapping
derives from its types and ops (`check_fusion_annotations`), and so must the schedule's
`sched.space`: IR resumed from a printed stage may have been edited.

`ScheduleView` (mmcomp.analysis.schedule_view) finds the axes that this pass and the later
schedule passes create.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from mmcomp.analysis.schedule_view import (
    SPACE_ATTR,
    append,
    check_fusion_annotations,
    is_fusion_function,
    is_materialized,
    schedule_error,
    schedule_of,
    split,
)
from mmcomp.dialects import fusion, sched
from mmcomp.errors import ScheduleError
from mmcomp.ir.attributes import check_attributes


def _problem(function: func.FuncOp) -> sched.Problem:
    return sched.problem_of(function)


class TileSplit(ModulePass):
    """Split m, n and k by the CTA tile, the warpgroup tile and the instruction shape."""

    name = "tile-split"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_attributes(op, self.name)
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if is_materialized(function):
                continue
            if sched.PARAMS_ATTR in function.attributes:
                self._split(function)
                continue
            if not is_fusion_function(function):
                continue
            name = function.sym_name.data
            if schedule_of(function) is not None:
                raise schedule_error(
                    self.name, name, "already has a sched.schedule (tile-split already ran)"
                )
            raise schedule_error(
                self.name,
                name,
                f"no '{sched.PARAMS_ATTR}' attribute: choose the schedule first (mmcomp.compile's "
                f"choose-schedule stage, or write {sched.PARAMS_ATTR} = #sched.params<...> on "
                "the func)",
            )

    def _split(self, function: func.FuncOp) -> None:
        name = function.sym_name.data
        if schedule_of(function) is not None:
            raise schedule_error(self.name, name, "already has a sched.schedule")
        params_attr = function.attributes[sched.PARAMS_ATTR]
        if not isinstance(params_attr, sched.ScheduleParamsAttr):
            raise schedule_error(
                self.name,
                name,
                f"'{sched.PARAMS_ATTR}' must be #sched.params<...>, found {params_attr}",
            )
        space = function.attributes.get(SPACE_ATTR)
        if not isinstance(space, fusion.IterationSpaceAttr):
            raise schedule_error(
                self.name, name, f"no '{SPACE_ATTR}' attribute (run propagate-axis-mapping first)"
            )
        extents = space.extents
        for axis in ("m", "n", "k"):
            if axis not in extents:
                raise schedule_error(
                    self.name, name, f"the iteration space {extents} has no axis {axis}"
                )
        check_fusion_annotations(self.name, function)
        params = params_attr.data
        try:
            params.check(_problem(function))
        except ScheduleError as error:
            raise schedule_error(self.name, name, str(error)) from error

        schedule = sched.ScheduleOp(params_attr)
        block = function.body.block
        if block.first_op is None:
            raise schedule_error(self.name, name, "has an empty body")
        block.insert_op_before(schedule, block.first_op)
        del function.attributes[sched.PARAMS_ATTR]
        space_op = append(schedule, sched.SpaceOp(extents), *extents)
        tile_m, tile_n, tile_k = params.tile
        wg_m, wg_n = params.warpgroup
        instr_m, instr_n, instr_k = params.instr
        serial: list[SSAValue] = []
        lanes: list[SSAValue] = []
        warpgroups: list[SSAValue] = []
        for axis, tile, warpgroup, instr in (
            ("m", tile_m, wg_m, instr_m),
            ("n", tile_n, wg_n, instr_n),
        ):
            _, cta = split(schedule, space_op.axis(axis), tile, f"{axis}_tile", f"{axis}_cta")
            wg, wg_inner = split(schedule, cta, warpgroup, f"{axis}_wg", f"{axis}_wgi")
            step, lane = split(schedule, wg_inner, instr, f"{axis}_instr", f"{axis}_lane")
            warpgroups.append(wg)
            serial.append(step)
            lanes.append(lane)
        k_block, k_inner = split(schedule, space_op.axis("k"), tile_k, "k_blk", "k_cta")
        k_step, k_lane = split(schedule, k_inner, instr_k, "k_instr", "k_lane")
        for axis in warpgroups:
            append(schedule, sched.ParallelizeOp(axis, "warpgroup"))
        for axis in [*lanes, k_lane]:
            append(schedule, sched.ParallelizeOp(axis, "instruction"))
        for axis in [k_block, k_step, *serial]:
            append(schedule, sched.ParallelizeOp(axis, "serial"))
        append(schedule, sched.ReorderOp([k_block, k_step, *serial]))
