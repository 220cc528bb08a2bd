"""`partition-warp-roles`: assign every tile-level op of a materialized kernel to a warp role.

The input is a kernel after `materialize-schedule` (a `func.func` on memrefs carrying
`sched.params`). The pass decides how the CTA's warpgroups share the work and records the
decision as data that `lower-schedule-to-hopper` reads:

- on the function, `hopper.warp_roles = #hopper.warp_roles<slots = N>`: the number of
  mainloop operands (tiles loaded per K block, each one slot of the shared-memory ring),
  the one thing `sched.params` does not say. The specialization, the producer and
  consumer warpgroups, the threads, the register split and the stages are read from
  `sched.params` by `warp_roles(func)`, the one function every later pass calls, which
  also rejects an attribute that disagrees with the IR;
- on each tile-level op, `hopper.role`: `producer` for the tile loads of the mainloop
  (the TMA loads into the ring, issued by one elected thread of the producer warpgroup
  that runs ahead across tiles), `consumer` for everything the consumer warpgroups do
  (wait on the ring, wgmma, release, epilogue loads, epilogue, stores, split-K traffic).
  Each mainloop load also gets `hopper.slot`, its slot in a ring stage.

The index arithmetic stays shared: each role re-runs the part of it that it needs (the
producer the backward slice of its loads, the consumers all of it), so both walk the same
persistent tile sequence. The IR stays executable by the CPU executor: the annotations are
discardable attributes.

Combinations that the lowering cannot build are refused here with a ScheduleError that
names the parameter: clusters other than 1x1, 2 or 4 CTAs along one axis, tile k not a
multiple of 64, warpgroup tiles whose m is not a multiple of 64.

A function that the pipeline has not yet brought to a materialized kernel (a fusion, with
or without its schedule) is an error naming the passes to run first (`level_error`, which
lower-schedule-to-hopper and convert-hopper-to-ptx use too); plain functions are left
alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mmcomp import hardware as hw
from mmcomp.dialects import sched
from mmcomp.dialects.hopper import WarpRolesAttr
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.passes.tile_split import (
    GRID_ATTR,
    SPACE_ATTR,
    is_fusion_function,
    is_materialized,
    schedule_error,
    schedule_of,
)
from mmcomp.registry import DEFAULT_PIPELINE

ROLES_ATTR = "hopper.warp_roles"
"""The function attribute holding the warp-role plan."""
ROLE_ATTR = "hopper.role"
"""The op attribute naming the role that runs a tile-level op."""
SLOT_ATTR = "hopper.slot"
"""The op attribute giving a mainloop load its slot in a ring stage."""

TILE_OPS = (
    sched.LoadTileOp,
    sched.StoreTileOp,
    sched.ZeroTileOp,
    sched.MmaOp,
    sched.EpilogueOp,
    sched.StorePartialOp,
    sched.ArriveOp,
    sched.ReducePartialsOp,
)
"""The tile-level ops that get a role."""


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
    """The warp roles of a partitioned kernel, from its `sched.params` and the ring slots of
    its `hopper.warp_roles`; a ScheduleError naming what disagrees.

    `sched.params` is the one source of the stages, the register split and the warp
    specialization; `#hopper.warp_roles<slots = N>` must match the mainloop loads and their
    `hopper.slot` marks (0 to N - 1, each once). `pass_name` prefixes the errors.
    """
    where = f"{pass_name}: @{func.sym_name.data}: {ROLES_ATTR}"
    attr = func.attributes.get(ROLES_ATTR)
    if not isinstance(attr, WarpRolesAttr):
        raise ScheduleError(
            f"{where} must be a #hopper.warp_roles<slots = N>, found {attr}; the stages, "
            f"registers and warp specialization are read from {PARAMS_ATTR} (run "
            "partition-warp-roles on the materialized kernel)"
        )
    params = kernel_params(func)
    check_buildable(params, f"{pass_name}: @{func.sym_name.data}")
    slots = [slot_of(load) for load in mainloop_loads(mainloop_of(func))]
    if len(slots) != attr.slots.data:
        raise ScheduleError(
            f"{where} has slots = {attr.slots.data}, but the K loop loads {len(slots)} tiles"
        )
    if sorted(slots) != list(range(len(slots))):
        raise ScheduleError(
            f"{where}: the K loop's loads have {SLOT_ATTR} {slots}; each of 0 to "
            f"{len(slots) - 1} must appear once"
        )
    return WarpRoles.of(params, len(slots))


def pipeline_position(func: FuncOp) -> tuple[str, str] | None:
    """Where the default pipeline has brought `func`: what it is, and the first pass it
    still needs, judged by what each pass leaves behind. None for a function no pass
    changes (no fusion ops, schedule or kernel attributes)."""
    if ROLES_ATTR in func.attributes:
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
    if params.consumer_warpgroups != 2:
        raise ScheduleError(
            f"{where}: the kernels have 2 consumer warpgroups; tile "
            f"{params.tile[0]}x{params.tile[1]} with warpgroup tile "
            f"{params.warpgroup[0]}x{params.warpgroup[1]} gives {params.consumer_warpgroups}; "
            f"use a tile of 128 rows (tile=(128, {params.tile[1]}, {params.tile[2]})) or "
            "warp_specialization='pingpong'"
        )
    if params.warpgroup[0] % hw.WGMMA_M:
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
    """The K loop of a kernel: the one scf.for whose body holds sched.mma ops."""
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
    """The tile loads of the K loop, in program order."""
    return [op for op in loop.body.block.ops if isinstance(op, sched.LoadTileOp)]


def slot_of(load: Operation) -> int:
    """The ring slot of a mainloop load (its `hopper.slot`)."""
    slot = load.attributes.get(SLOT_ATTR)
    if not isinstance(slot, IntegerAttr):
        raise ScheduleError(
            f"{load.name}: a mainloop load has no {SLOT_ATTR}; run partition-warp-roles"
        )
    return slot.value.data


def _tile_ops(func: FuncOp) -> Iterator[Operation]:
    """Every tile-level op of the kernel."""
    for op in func.walk():
        if isinstance(op, TILE_OPS):
            yield op


def partition(func: FuncOp) -> WarpRoles:
    """Annotate `func` with its warp roles (see the module docstring) and return the plan."""
    where = f"partition-warp-roles: @{func.sym_name.data}"
    params = kernel_params(func)
    check_buildable(params, where)
    loop = mainloop_of(func)
    loads = mainloop_loads(loop)
    for op in _tile_ops(func):
        op.attributes[ROLE_ATTR] = StringAttr("consumer")
    for slot, load in enumerate(loads):
        load.attributes[ROLE_ATTR] = StringAttr("producer")
        load.attributes[SLOT_ATTR] = IntegerAttr(slot, i64)
    func.attributes[ROLES_ATTR] = WarpRolesAttr(len(loads))
    return warp_roles(func, "partition-warp-roles")


class PartitionWarpRoles(ModulePass):
    """Assign the tile ops of each materialized kernel to producer and consumer warpgroups."""

    name = "partition-warp-roles"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Partition every materialized kernel of the module; a fusion function not yet
        materialized is an error naming the passes to run first."""
        del ctx
        functions = [func for func in op.walk() if isinstance(func, FuncOp)]
        for func in functions:
            too_early = level_error(
                self.name, func, f"not a materialized kernel (no '{GRID_ATTR}')"
            )
            if too_early is not None:
                raise too_early
        for func in functions:
            if not is_materialized(func):
                continue
            try:
                partition(func)
            except ScheduleError as error:
                raise DiagnosticException(str(error)) from error
