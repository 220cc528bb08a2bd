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

The schedule is for a back end, the option `backend` (`choose-schedule{backend=interp}`):
"cuda", the default and what `compile-to-ptx` builds, refuses mma operands that its wgmma
cannot take (f32: tf32 is not built); "interp", the CPU executor, takes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.attributes import check_attributes
from mmcomp.diagnostics import at, is_located
from mmcomp.dialects.fusion import IterationSpaceAttr, MmaOp, dtype_name
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr, problem_of
from mmcomp.errors import FusionError, ScheduleError
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


BACKENDS = ("cuda", "interp")
"""The back ends a schedule is chosen for."""

CUDA_OPERAND_TYPES = ("bf16", "f16")
"""Element types the cuda back end's wgmma takes for mma operands (tf32, fp8 not built)."""


def check_cuda_operands(function: FuncOp) -> None:
    """Raise FusionError for an mma operand that the cuda back end's wgmma cannot take."""
    for mma in function.walk():
        if not isinstance(mma, MmaOp):
            continue
        for name, operand in (("a", mma.a), ("b", mma.b)):
            tensor = operand.type
            assert isinstance(tensor, TensorType)
            dtype = dtype_name(tensor.element_type)
            if dtype in CUDA_OPERAND_TYPES:
                continue
            label = f"%{operand.name_hint}: " if operand.name_hint else ""
            raise FusionError(
                at(
                    mma,
                    f"{mma.name} operand '{name}' ({label}{tensor}): the cuda back end's "
                    f"wgmma takes bf16 or f16 (tf32 is not built), found {dtype}; cast it, "
                    "or schedule for the CPU executor (backend='interp'; mmcomp-opt: "
                    "choose-schedule{backend=interp})",
                )
            )


def choose_schedule(
    function: FuncOp, overrides: Mapping[str, object], backend: str = "cuda"
) -> ScheduleParams:
    """Choose `function`'s params for `backend` (written keys, then `overrides`, win) and
    attach them; FusionError for what the back end cannot run."""
    if not isinstance(function.attributes.get(SPACE_ATTR), IterationSpaceAttr):
        raise ScheduleError(f"no '{SPACE_ATTR}': run propagate-axis-mapping first")
    if backend not in BACKENDS:
        raise ScheduleError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "cuda":
        check_cuda_operands(function)
    params = choose_params(problem_of(function), **{**written_params(function), **overrides})
    function.attributes[PARAMS_ATTR] = ScheduleParamsAttr(params)
    return params


@dataclass(frozen=True)
class ChooseSchedule(ModulePass):
    """Attach the heuristic's schedule parameters to every fusion function."""

    name = "choose-schedule"

    backend: str = "cuda"
    """The back end the schedule is for: "cuda" (refuses what wgmma cannot take) or
    "interp" (the CPU executor)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        check_attributes(op, self.name)
        for function in op.walk():
            if not isinstance(function, FuncOp) or not is_fusion_function(function):
                continue
            try:
                choose_schedule(function, {}, self.backend)
            except FusionError as error:
                message = str(error)
                if not is_located(message):
                    message = f"{self.name}: @{function.sym_name.data}: {message}"
                raise DiagnosticException(message) from error
            except ScheduleError as error:
                raise schedule_error(self.name, function.sym_name.data, str(error)) from error
