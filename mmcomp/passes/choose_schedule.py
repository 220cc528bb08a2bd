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

The pass's options set parameters the same way, winning over the written keys (as
`mmcomp.compile`'s keywords do; `mmcomp.compile` runs this very pass with its keywords as
options):

    mmcomp-opt f.mlir -p 'choose-schedule{tile=128x128x64 stages=4 registers=40,232}'

Shapes are written `MxNxK` or as integer lists (`tile=128,128,64`, `cluster=2x1`,
`registers=40,232` or `registers="40/232"`); the other options take the words and
integers of `#sched.params` (`raster=n swizzle=4 strategy=persistent split-k=2
warp-specialization=pingpong epilogue=registers`).

The schedule is for a back end, the option `backend` (`choose-schedule{backend=interp}`):
"cuda", the default and what `compile-to-ptx` builds, refuses mma operands that its wgmma
cannot take (f32: tf32 is not built; fp8 with M or N contiguous: wgmma reads 8-bit operands
K-major only) and fp8 values outside the mma operands (epilogue operands, casts, outputs);
"interp", the CPU executor, takes them. Both take
dynamic extents (the kernel then takes them at launch).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis.groups import grouping_of
from mmcomp.analysis.roles import check_annotations
from mmcomp.analysis.schedule_view import SPACE_ATTR, is_fusion_function, schedule_error
from mmcomp.dialects.fusion import (
    AxisRolesAttr,
    CastOp,
    GroupedLinearOp,
    IterationSpaceAttr,
    MmaOp,
    QuantizeOp,
    dtype_name,
)
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr, problem_of
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.ir.attributes import check_attributes
from mmcomp.ir.diagnostics import at, is_located
from mmcomp.ir.narrowing import is_tensor
from mmcomp.schedule.grouped import choose_grouped_params
from mmcomp.schedule.heuristics import (
    PARAMETERS,
    check_schedule_m,
    choose_params,
    normalize_overrides,
)


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

CUDA_OPERAND_TYPES = ("bf16", "f16", "f8e4m3", "f8e5m2")
"""Element types the cuda back end's wgmma takes for mma operands (tf32 not built)."""

FP8_TYPES = ("f8e4m3", "f8e5m2")
"""The fp8 types: mma operands only on the cuda back end, K-major."""

_INTERP_HINT = (
    "or schedule for the CPU executor (backend='interp'; mmcomp-opt: "
    "choose-schedule{backend=interp})"
)


def _contiguous_role(roles: tuple[str, ...], shape: tuple[int, ...]) -> str:
    """The role of an operand's contiguous axis as its tensor map sees it: the last axis
    of extent other than 1, or of role k."""
    kept = [role for role, extent in zip(roles, shape, strict=True) if extent != 1 or role == "k"]
    return kept[-1] if kept else "_"


def _is_fp8_output(value: SSAValue, users: list[Operation]) -> bool:
    """Whether `value` is a cast to fp8 or a quantization that only the function returns,
    along n in pairs (the epilogue stores it with `cvt.rn.satfinite.e4m3x2.f32`, two columns
    at a time)."""
    owner = value.owner
    if not isinstance(owner, CastOp | QuantizeOp) or not all(
        isinstance(user, ReturnOp) for user in users
    ):
        return False
    roles = owner.attributes.get("fusion.roles")
    shape = tuple(owner.result.type.get_shape()) if is_tensor(owner.result.type) else ()
    return (
        isinstance(roles, AxisRolesAttr)
        and bool(roles.roles)
        and roles.roles[-1] == "n"
        and bool(shape)
        and shape[-1] % 2 == 0
    )


def _check_fp8_values(function: FuncOp) -> None:
    """fp8 values other than mma operands (epilogue operands, casts, outputs) are refused."""
    operands = {
        operand for mma in function.walk() if isinstance(mma, MmaOp) for operand in (mma.a, mma.b)
    }
    values = [*function.body.block.args]
    values += [result for op in function.body.walk() for result in op.results]
    for value in values:
        tensor = value.type
        if not is_tensor(tensor) or dtype_name(tensor.element_type) not in FP8_TYPES:
            continue
        users = [use.operation for use in value.uses]
        if value in operands and all(isinstance(user, MmaOp) for user in users):
            continue
        if _is_fp8_output(value, users):
            continue
        label = f"%{value.name_hint}: " if value.name_hint else ""
        user = next((u for u in users if not isinstance(u, MmaOp)), None)
        site = user if user is not None else function
        raise FusionError(
            at(
                site,
                f"{site.name}: the fp8 value ({label}{tensor}) is used outside a contraction; "
                "the cuda back end takes fp8 as mma operands and as outputs cast or "
                "quantized to fp8 (`fusion.cast`, `fusion.quantize`: an output only, its last "
                "axis n of even extent; its epilogue reads bf16, f16 and f32); "
                f"cast it to a 16-bit type, {_INTERP_HINT}",
            )
        )


def check_cuda_operands(function: FuncOp) -> None:
    """Raise FusionError for an mma operand that the cuda back end's wgmma cannot take
    (of a fusion.mma or a fusion.grouped_linear)."""
    for mma in function.walk():
        if isinstance(mma, GroupedLinearOp):
            x_roles = ("g", "m", "k") if mma.masked else ("m", "k")
            factors = [("x", mma.x, x_roles), ("w", mma.w, ("g", "n", "k"))]
        elif isinstance(mma, MmaOp):
            factors = [("a", mma.a, mma.a_roles.roles), ("b", mma.b, mma.b_roles.roles)]
        else:
            continue
        for name, operand, roles in factors:
            tensor = operand.type
            assert is_tensor(tensor)
            dtype = dtype_name(tensor.element_type)
            label = f"%{operand.name_hint}: " if operand.name_hint else ""
            if dtype not in CUDA_OPERAND_TYPES:
                raise FusionError(
                    at(
                        mma,
                        f"{mma.name} operand '{name}' ({label}{tensor}): the cuda back end's "
                        f"wgmma takes bf16, f16, f8e4m3 or f8e5m2 (tf32 is not built), found "
                        f"{dtype}; cast it, {_INTERP_HINT}",
                    )
                )
            contiguous = _contiguous_role(roles, tuple(tensor.get_shape()))
            if dtype in FP8_TYPES and contiguous != "k":
                raise FusionError(
                    at(
                        mma,
                        f"{mma.name} operand '{name}' ({label}{tensor}, roles "
                        f"[{', '.join(roles)}]): an fp8 operand must have K contiguous "
                        f"(K-major), found {contiguous}: Hopper's wgmma transposes 16-bit "
                        "operands only; store it K-major (a matmul's b as [N, K] in a "
                        f"linear's w), {_INTERP_HINT}",
                    )
                )
    _check_fp8_values(function)


def choose_schedule(
    function: FuncOp,
    overrides: Mapping[str, object],
    backend: str = "cuda",
    schedule_m: int | None = None,
) -> ScheduleParams:
    """Choose `function`'s params for `backend` (written keys, then `overrides`, win) and
    attach them (for a dynamic M, chosen as if M were `schedule_m`, default 4096);
    FusionError for what the back end cannot run."""
    if not isinstance(function.attributes.get(SPACE_ATTR), IterationSpaceAttr):
        raise ScheduleError(f"no '{SPACE_ATTR}': run propagate-axis-mapping first")
    check_annotations(function, complete=True, pass_name=ChooseSchedule.name)
    if backend not in BACKENDS:
        raise ScheduleError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "cuda":
        check_cuda_operands(function)
    given = {**written_params(function), **overrides}
    grouping = grouping_of(function)
    if grouping is not None:
        params = choose_grouped_params(problem_of(function), grouping, schedule_m, **given)
    else:
        params = choose_params(problem_of(function), schedule_m, **given)
    function.attributes[PARAMS_ATTR] = ScheduleParamsAttr(params)
    return params


Dims = tuple[int, ...] | str | None
"""An option giving a shape: `128x128x64`, `128,128,64` or (from Python) a tuple."""

SHAPE_OPTIONS = {"tile": 3, "cluster": 2, "registers": 2}
"""Options that give a shape, and how many integers each takes."""


def _dims(name: str, value: tuple[int, ...] | str) -> tuple[int, ...]:
    """The integers of a shape option; ScheduleError naming the option otherwise."""
    count = SHAPE_OPTIONS[name]
    dims: tuple[int, ...] | None = value if isinstance(value, tuple) else None
    if isinstance(value, str):
        separator = "/" if name == "registers" and "/" in value else "x"
        with contextlib.suppress(ValueError):
            dims = tuple(int(part) for part in value.split(separator))
    if dims is None or len(dims) != count:
        written = ",".join(str(d) for d in value) if isinstance(value, tuple) else value
        raise ScheduleError(
            f"{name}={written}: expected {count} integers, written "
            f"{'x'.join('N' * count)} or {','.join('N' * count)}"
        )
    return dims


@dataclass(frozen=True)
class ChooseSchedule(ModulePass):
    """Attach the heuristic's schedule parameters to every fusion function."""

    name = "choose-schedule"

    backend: str = "cuda"
    """The back end the schedule is for: "cuda" (refuses what wgmma cannot take) or
    "interp" (the CPU executor)."""
    tile: Dims = None
    """The CTA tile, m x n x k."""
    stages: int | None = None
    """Pipeline stages of the operand ring."""
    cluster: Dims = None
    """CTAs per cluster along m and n."""
    raster: str | None = None
    """Tile order: m, n or auto."""
    swizzle: int | None = None
    """Tiles per raster group."""
    strategy: str | None = None
    """one-tile-per-cta, persistent, stream-k or hybrid-stream-k."""
    split_k: int | None = None
    """K slices."""
    warp_specialization: str | None = None
    """none, cooperative or pingpong."""
    registers: Dims = None
    """Registers per thread of the producer and consumer warpgroups."""
    epilogue: str | None = None
    """registers or smem."""
    epilogue_subtile: int | None = None
    """Columns of the epilogue's subtile (0: the whole tile at once)."""
    swap_ab: bool | None = None
    """Compute the transposed product (true or false)."""
    schedule_m: int | None = None
    """For a fusion with a dynamic M: the M its schedule is chosen for (default 4096)."""

    @classmethod
    def with_keywords(
        cls, backend: str, keywords: Mapping[str, object], schedule_m: int | None = None
    ) -> ChooseSchedule:
        """The pass for `mmcomp.compile`'s keywords (checked by normalize_overrides)."""
        checked = normalize_overrides(keywords)
        return cls(backend, schedule_m=schedule_m, **checked)  # pyright: ignore[reportArgumentType]

    def overrides(self) -> dict[str, object]:
        """The parameters the options set, as `mmcomp.compile`'s keywords."""
        given: dict[str, object] = {}
        for name in PARAMETERS:
            value = getattr(self, name)
            if value is None:
                continue
            given[name] = _dims(name, value) if name in SHAPE_OPTIONS else value
        check_schedule_m(self.schedule_m)
        return normalize_overrides(given)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        del ctx
        check_attributes(op, self.name)
        try:
            overrides = self.overrides()
        except ScheduleError as error:
            raise DiagnosticException(f"{self.name}: option {error}") from error
        for function in op.walk():
            if not isinstance(function, FuncOp) or not is_fusion_function(function):
                continue
            try:
                choose_schedule(function, overrides, self.backend, self.schedule_m)
            except FusionError as error:
                message = str(error)
                if not is_located(message):
                    named = f"@{function.sym_name.data}: "
                    message = (
                        self.name + ": " + ("" if message.startswith(named) else named) + message
                    )
                raise DiagnosticException(message) from error
            except ScheduleError as error:
                raise schedule_error(self.name, function.sym_name.data, str(error)) from error
