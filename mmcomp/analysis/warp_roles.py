"""The warp roles of a partitioned kernel, as every pass after partition-warp-roles reads them.

`warp_roles(func)` is the one function that reads how a CTA's warpgroups share a kernel's
work (`WarpRoles`: producer and consumer warpgroups, threads, the register split, the
ring's stages and slots) from `sched.params` and `hopper.warp_roles`, and rejects IR that
disagrees with itself. `mainloop_of`, `producer_loop_of` and `slot_of` find the K loop,
the producer's loop and a load's ring slot; `level_error` and `check_lowered_to_ptx` name
the passes a function still needs; `check_buildable` refuses the schedules the lowering
cannot build.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.analysis.ring_positions import ring_start_of
from mmcomp.analysis.schedule_view import (
    SPACE_ATTR,
    is_fusion_function,
    is_materialized,
    schedule_error,
    schedule_of,
)
from mmcomp.arch import limits as hw
from mmcomp.dialects import sched
from mmcomp.dialects.hopper import SLOT_ATTR, KernelOp, WarpRolesAttr, WarpSpecializeOp
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.ir.registry import DEFAULT_PIPELINE

ROLES_ATTR = "hopper.warp_roles"
"""The function attribute holding the warp-role plan."""
ROLE_ATTR = "hopper.role"
"""A per-op role mark: the roles are the regions of hopper.warp_specialize, so a kernel
whose ops carry this mark instead is refused (re-run partition-warp-roles)."""


@dataclass(frozen=True)
class WarpRoles:
    """How the warpgroups of a CTA share a kernel's work (made only by `warp_roles`)."""

    specialization: str
    """"cooperative" (two consumers split each tile along M), "pingpong" (they take
    alternate tiles, one's epilogue overlapping the other's mainloop), both with one
    producer, or "none" (no producer)."""
    producers: int
    """Producer warpgroups: 1 when specialized, 0 for "none" (thread 0 of the first
    consumer issues the loads, a pipelined prologue `stages - 1` K blocks ahead)."""
    consumers: int
    """Consumer (math) warpgroups."""
    registers: tuple[int, int]
    """setmaxnreg counts (producer, consumer)."""
    stages: int
    """Depth of the shared-memory ring."""
    slots: int
    """Tiles loaded per K block (slots of one ring stage)."""

    @staticmethod
    def of(params: ScheduleParams, slots: int) -> WarpRoles:
        """The roles that `params` and a ring stage of `slots` tiles imply."""
        return WarpRoles(
            params.warp_specialization,
            0 if params.warp_specialization == "none" else 1,
            params.consumer_warpgroups,
            params.registers,
            params.stages,
            slots,
        )

    @property
    def threads(self) -> int:
        """Threads per CTA."""
        return (self.producers + self.consumers) * hw.WARPGROUP_SIZE

    @property
    def consumer_threads(self) -> int:
        """Threads of the consumer warpgroups."""
        return self.consumers * hw.WARPGROUP_SIZE

    @property
    def entry_registers(self) -> int:
        """The register cap at entry (`.maxnreg`), the even split of the register file."""
        per_thread = hw.REGISTERS_PER_SM // self.threads
        return min(per_thread - per_thread % hw.SETMAXNREG_STEP, hw.MAX_REGISTERS_PER_THREAD)


def warp_roles(func: FuncOp, pass_name: str = "lower-schedule-to-hopper") -> WarpRoles:
    """The warp roles of a partitioned kernel, from its `sched.params`, its
    `hopper.warp_specialize` and the ring slots of its `hopper.warp_roles`; a ScheduleError
    naming what disagrees.

    `sched.params` is the one source of the stages and the register split; the op's
    specialization must be the one `sched.params` names (its regions are built for it);
    `#hopper.warp_roles<slots = N>` must match the mainloop loads and their `hopper.slot`
    marks (0 to N - 1, each once, the same in both regions). `pass_name` prefixes the
    errors.
    """
    where = f"{pass_name}: @{func.sym_name.data}"
    attr = func.attributes.get(ROLES_ATTR)
    if not isinstance(attr, WarpRolesAttr):
        raise ScheduleError(
            f"{where}: {ROLES_ATTR} must be a #hopper.warp_roles<slots = N>, found {attr}; the "
            f"stages, registers and warp specialization are read from {PARAMS_ATTR} (run "
            "partition-warp-roles on the materialized kernel)"
        )
    params = kernel_params(func)
    check_buildable(params, where)
    roles_op = warp_specialize_of(func, where)
    try:
        roles_op.verify()
    except VerifyException as error:
        raise ScheduleError(f"{where}: {error}") from error
    mode = roles_op.specialization.data
    if mode != params.warp_specialization:
        raise ScheduleError(
            f"{where}: hopper.warp_specialize is {mode}, but {PARAMS_ATTR} has "
            f"warp_specialization = {params.warp_specialization}; the regions are built for "
            "one specialization (partition the materialized kernel with the params it is "
            "compiled with)"
        )
    slots = [slot_of(load) for load in mainloop_loads(mainloop_of(func))]
    if len(slots) != attr.slots.data:
        raise ScheduleError(
            f"{where}: {ROLES_ATTR} has slots = {attr.slots.data}, but the K loop loads "
            f"{len(slots)} tiles"
        )
    if sorted(slots) != list(range(len(slots))):
        raise ScheduleError(
            f"{where}: {ROLES_ATTR}: the K loop's loads have {SLOT_ATTR} {slots}; each of 0 "
            f"to {len(slots) - 1} must appear once"
        )
    if roles_op.specialized:
        produced = [slot_of(load) for load in mainloop_loads(producer_loop_of(roles_op, where))]
        if produced != slots:
            raise ScheduleError(
                f"{where}: the producer region loads slots {produced}, the consumer region "
                f"reads {slots}"
            )
    return WarpRoles.of(params, len(slots))


def warp_specialize_of(func: FuncOp, where: str) -> WarpSpecializeOp:
    """The `hopper.warp_specialize` that is a partitioned kernel's body."""
    found = [op for op in func.body.block.ops if isinstance(op, WarpSpecializeOp)]
    if len(found) == 1:
        return found[0]
    marked = any(ROLE_ATTR in op.attributes for op in func.walk())
    detail = f"its ops carry {ROLE_ATTR} marks instead" if marked else f"found {len(found)}"
    raise ScheduleError(
        f"{where}: a partitioned kernel's body is one hopper.warp_specialize, {detail} (run "
        "partition-warp-roles on the materialized kernel)"
    )


def producer_loop_of(roles_op: WarpSpecializeOp, where: str) -> scf.ForOp:
    """The producer's K loop: the one scf.for of the producer region that loads tiles."""
    loops = [
        op
        for op in roles_op.producer.walk()
        if isinstance(op, scf.ForOp)
        and any(isinstance(inner, sched.LoadTileOp) for inner in op.body.block.ops)
    ]
    if len(loops) != 1:
        raise ScheduleError(
            f"{where}: the producer region must have exactly one K loop of loads, found "
            f"{len(loops)}"
        )
    return loops[0]


def pipeline_position(func: FuncOp) -> tuple[str, str] | None:
    """Where the default pipeline has brought `func`: what it is, and the first pass it
    still needs, judged by what each pass leaves behind. None for a function no pass
    changes (no fusion ops, schedule or kernel attributes)."""
    if ROLES_ATTR in func.attributes:
        roles = [op for op in func.body.block.ops if isinstance(op, WarpSpecializeOp)]
        if roles and ring_start_of(roles[0].consumer) is None:
            return "a partitioned kernel without ring positions", "carry-ring-positions"
        return "a partitioned kernel", "lower-schedule-to-hopper"
    if is_materialized(func):
        return "a materialized kernel", "partition-warp-roles"
    if schedule_of(func) is not None:
        return "a fusion whose sched.schedule is not materialized", "tile-merge"
    if not is_fusion_function(func):
        return None
    if PARAMS_ATTR in func.attributes:
        return f"a fusion with '{PARAMS_ATTR}' but no sched.schedule", "tile-split"
    if SPACE_ATTR in func.attributes:
        return f"a fusion with '{SPACE_ATTR}' but no '{PARAMS_ATTR}'", "choose-schedule"
    return f"a fusion as written, without '{SPACE_ATTR}'", "propagate-axis-mapping"


def level_error(pass_name: str, func: FuncOp, missing: str) -> DiagnosticException | None:
    """The error of the pipeline pass `pass_name` on a `func` that has not reached its
    input level: the pass, the function, what is `missing`, what `func` is and the passes
    to run first. None when `func` is at that level or past it, or is a plain function."""
    position = pipeline_position(func)
    if position is None:
        return None
    found, first = position
    order = list(DEFAULT_PIPELINE)
    if pass_name not in order:
        raise ValueError(f"level_error: {pass_name!r} is not a pass of the default pipeline")
    if order.index(first) >= order.index(pass_name):
        return None
    last = order[order.index(pass_name) - 1]
    if first == "tile-merge":
        # Which of the passes between tile-split and materialize-schedule ran does not show
        # reliably (split-k with one slice changes nothing), so all of them are named.
        lacking = order[order.index(first) : order.index("materialize-schedule")]
        steps = f"the passes it lacks of {', '.join(lacking)}, then materialize-schedule"
        if last != "materialize-schedule":
            steps += f" through {last}"
    else:
        steps = first if first == last else f"{first} through {last}"
    return schedule_error(pass_name, func.sym_name.data, f"{missing} ({found}): run {steps} first")


def check_lowered_to_ptx(pass_name: str, module: ModuleOp, hopper_kernels: bool = False) -> None:
    """Raise `level_error` for a kernel or fusion of `module` still in a func.func (the
    passes after lower-schedule-to-hopper take hopper kernels, the passes after
    convert-hopper-to-ptx ptx modules; plain functions pass), and, unless the pass takes
    `hopper_kernels` too, an error for a `hopper.kernel` that convert-hopper-to-ptx has not
    lowered yet."""
    order = list(DEFAULT_PIPELINE)
    hopper_level = order.index(pass_name) <= order.index("convert-hopper-to-ptx")
    missing = "not lowered to a hopper.kernel" if hopper_level else "not lowered to a ptx.module"
    for op in module.walk():
        if isinstance(op, KernelOp) and not hopper_kernels:
            last = order[order.index(pass_name) - 1]
            steps = "convert-hopper-to-ptx"
            if last != steps:
                steps += f" through {last}"
            raise schedule_error(
                pass_name,
                op.sym_name.data,
                f"not lowered to a ptx.module (a hopper.kernel): run {steps} first",
            )
        if not isinstance(op, FuncOp):
            continue
        too_early = level_error(pass_name, op, missing)
        if too_early is not None:
            raise too_early


def kernel_params(func: FuncOp) -> ScheduleParams:
    """The `sched.params` of a materialized kernel, or a ScheduleError naming the function."""
    attr = func.attributes.get(PARAMS_ATTR)
    if not isinstance(attr, ScheduleParamsAttr):
        raise ScheduleError(
            f"partition-warp-roles: @{func.sym_name.data} has no {PARAMS_ATTR}; run the "
            "schedule pipeline through materialize-schedule first"
        )
    return attr.data


def check_buildable(params: ScheduleParams, where: str) -> None:
    """Raise ScheduleError for a parameter combination the Hopper lowering cannot build."""
    if params.swap_ab and params.consumer_warpgroups != 2:
        raise ScheduleError(
            f"{where}: the kernels have 2 consumer warpgroups; swap_ab with tile "
            f"{params.tile[0]}x{params.tile[1]} and warpgroup tile "
            f"{params.warpgroup[0]}x{params.warpgroup[1]} gives {params.consumer_warpgroups} "
            f"(the consumers split the tile's n); use a tile n of 128 or more "
            f"(tile=({params.tile[0]}, 128, {params.tile[2]})) or warp_specialization='pingpong'"
        )
    if params.consumer_warpgroups != 2:
        raise ScheduleError(
            f"{where}: the kernels have 2 consumer warpgroups; tile "
            f"{params.tile[0]}x{params.tile[1]} with warpgroup tile "
            f"{params.warpgroup[0]}x{params.warpgroup[1]} gives {params.consumer_warpgroups}; "
            f"use a tile of 128 rows (tile=(128, {params.tile[1]}, {params.tile[2]})) or "
            "warp_specialization='pingpong'"
        )
    if params.swap_ab and params.warpgroup[1] % hw.WGMMA_M:
        raise ScheduleError(
            f"{where}: swap_ab: the warpgroup tile n = {params.warpgroup[1]} is wgmma's m, so "
            f"it must be a multiple of {hw.WGMMA_M}"
        )
    if not params.swap_ab and params.warpgroup[0] % hw.WGMMA_M:
        raise ScheduleError(
            f"{where}: the warpgroup tile m = {params.warpgroup[0]} must be a multiple of "
            f"{hw.WGMMA_M} (wgmma m)"
        )
    cluster_m, cluster_n = params.cluster
    if min(cluster_m, cluster_n) != 1 or max(cluster_m, cluster_n) not in (1, 2, 4):
        raise ScheduleError(
            f"{where}: cluster {cluster_m}x{cluster_n} is not built by the Hopper lowering; "
            "use 1x1, or 2 or 4 CTAs along one axis (2x1, 4x1, 1x2, 1x4)"
        )
    if params.tile[2] % 64:
        raise ScheduleError(
            f"{where}: tile k = {params.tile[2]} must be a multiple of 64 (one 128-byte "
            "swizzled row of 16-bit elements)"
        )


def mainloop_of(func: FuncOp) -> scf.ForOp:
    """The K loop of a kernel (of a partitioned one: the consumers' K loop), the one scf.for
    whose body holds sched.mma ops."""
    loops = [
        op
        for op in func.walk()
        if isinstance(op, scf.ForOp)
        and any(isinstance(inner, sched.MmaOp) for inner in op.body.block.ops)
    ]
    if len(loops) != 1:
        raise ScheduleError(
            f"partition-warp-roles: @{func.sym_name.data} must have exactly one K loop holding "
            f"sched.mma ops, found {len(loops)}"
        )
    return loops[0]


def mainloop_loads(loop: scf.ForOp) -> list[sched.LoadTileOp]:
    """The tile loads of the K loop that fill the ring (TMA), in program order: all but
    the block-wise scale tiles, which the consumers read from global memory."""
    return [
        op
        for op in loop.body.block.ops
        if isinstance(op, sched.LoadTileOp) and not is_block_scale_load(op)
    ]


def is_block_scale_load(load: sched.LoadTileOp) -> bool:
    """Whether `load` is a block-wise scale tile: a scale operand of the sched.mma ops that
    read it (the consumers load its few values from global memory per K block)."""
    uses = [use.operation for use in load.result.uses]
    return bool(uses) and all(
        isinstance(user, sched.MmaOp) and load.result in user.scales for user in uses
    )


def slot_of(load: Operation) -> int:
    """The ring slot of a mainloop load (its `hopper.slot`)."""
    slot = load.attributes.get(SLOT_ATTR)
    if not isinstance(slot, IntegerAttr):
        raise ScheduleError(
            f"{load.name}: a mainloop load has no {SLOT_ATTR}; run partition-warp-roles"
        )
    return slot.value.data
