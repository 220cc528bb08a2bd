"""`choose-schedule`: put the heuristic's `#sched.params` on each fusion function.

It runs after `propagate-axis-mapping` (the heuristic reads the iteration space and the
mma operands). The keys written in a `sched.params` already on the function (all of them
when it is complete) are kept as overrides, like `mmcomp.compile`'s keywords; the heuristic
chooses the rest around them (warpgroup and instr are derived from the tile again), and the
result is checked against the problem, so `mmcomp-opt` can take a plain fusion file down to
PTX:

    func.func @f(...) attributes {fusion.space = #fusion.space<m = 4096, n = 14336, k = 5120>}

becomes

    func.func @f(...) attributes {fusion.space = ..., sched.params = #sched.params<tile =
        128x256x64, ..., epilogue = smem>}

`mmcomp.compile` runs the same step with its keyword arguments as further overrides.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from mmcomp.dialects.fusion import IterationSpaceAttr
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr, problem_of
from mmcomp.errors import ScheduleError
from mmcomp.heuristics import PARAMETERS, choose_params
from mmcomp.passes.tile_split import SPACE_ATTR, is_fusion_function, schedule_error


def written_params(function: FuncOp) -> dict[str, object]:
    """The parameters a `#sched.params` already on `function` fixes (its written keys),
    except warpgroup and instr, which follow the tile."""
    attr = function.attributes.get(PARAMS_ATTR)
    if attr is None:
        return {}
    if not isinstance(attr, ScheduleParamsAttr):
        raise ScheduleError(f"'{PARAMS_ATTR}' must be #sched.params<...>, found {attr}")
    return {name: value for name, value in attr.data.written_values().items() if name in PARAMETERS}


def choose_schedule(function: FuncOp, overrides: Mapping[str, object]) -> ScheduleParams:
    """Choose `function`'s params (written keys, then `overrides`, win) and attach them."""
    if not isinstance(function.attributes.get(SPACE_ATTR), IterationSpaceAttr):
        raise ScheduleError(f"no '{SPACE_ATTR}': run propagate-axis-mapping first")
    params = choose_params(problem_of(function), **{**written_params(function), **overrides})
    function.attributes[PARAMS_ATTR] = ScheduleParamsAttr(params)
    return params


class ChooseSchedule(ModulePass):
    """Attach the heuristic's schedule parameters to every fusion function."""

    name = "choose-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        for function in op.walk():
            if not isinstance(function, FuncOp) or not is_fusion_function(function):
                continue
            try:
                choose_schedule(function, {})
            except ScheduleError as error:
                raise schedule_error(self.name, function.sym_name.data, str(error)) from error
