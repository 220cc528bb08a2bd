"""`partition-warp-roles`: split a materialized kernel into the programs of its warp roles.

The input is a kernel after `materialize-schedule` (a `func.func` on memrefs carrying
`sched.params`). The pass decides how the CTA's warpgroups share the work and writes the
decision as IR that `lower-schedule-to-hopper` lowers role by role:

- the body becomes one `hopper.warp_specialize` (then `func.return`), with one region per
  role (mmcomp/dialects/hopper/warp_specialize.py):
  - `producer`: a copy of exactly what the producer's TMA loads need: the K loop's loads
    and index arithmetic, the index arithmetic those use (persistent loop, raster,
    swizzle, split-K slice, batch) and the loops and branches around them, in program
    order. The producer slicing happens here, once;
  - `consumer`: the kernel's own ops, everything the consumer warpgroups do (the index
    arithmetic, wait on the ring, wgmma, release, epilogue loads, epilogue, stores,
    split-K traffic);
  For `warp_specialization = "none"` there is no producer warpgroup and no producer
  region: the consumer region is the whole kernel, and its first thread also loads;
- each mainloop load, in both regions, gets `hopper.slot`: its slot in a ring stage (the
  producer fills it, the consumers wait for it and read it);
- on the function, `hopper.warp_roles = #hopper.warp_roles<slots = N>`: the slots of a
  ring stage. The producer and consumer warpgroups, the threads, the register split and
  the stages are read from `sched.params` by `warp_roles(func)`, the one function every
  later pass calls, which also rejects IR that disagrees with itself (slots, the regions'
  loads, the op's specialization against `sched.params`).

Both regions walk the same persistent tile sequence: each holds its own copy of the index
arithmetic it needs. Partitioning a partitioned kernel again changes nothing.

Combinations that the lowering cannot build are refused here with a ScheduleError that
names the parameter: clusters other than 1x1, 2 or 4 CTAs along one axis, tile k not a
multiple of 64, warpgroup tiles whose m is not a multiple of 64.

A function that the pipeline has not yet brought to a materialized kernel (a fusion, with
or without its schedule) is an error naming the passes to run first (`level_error`, which
lower-schedule-to-hopper and convert-hopper-to-ptx use too); plain functions are left
alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis.schedule_view import (
    GRID_ATTR,
    is_materialized,
)
from mmcomp.analysis.warp_roles import (
    ROLES_ATTR,
    WarpRoles,
    check_buildable,
    kernel_params,
    level_error,
    mainloop_loads,
    mainloop_of,
    warp_roles,
)
from mmcomp.dialects.hopper import SLOT_ATTR, WarpRolesAttr, WarpSpecializeOp
from mmcomp.dialects.hopper.warp_specialize import is_index_arithmetic
from mmcomp.errors import ScheduleError


def producer_slice(loop: scf.ForOp) -> set[Operation]:
    """The ops the producer runs: the K loop's loads and index arithmetic, the ops whose
    results they use, and the loops and branches around all of them."""
    needed: set[Operation] = set()
    loads = mainloop_loads(loop)
    work = [op for op in loop.body.block.ops if op in loads or is_index_arithmetic(op)]
    while work:
        op = work.pop()
        if op in needed:
            continue
        needed.add(op)
        parent = op.parent_op()
        if parent is not None and not isinstance(parent, FuncOp):
            work.append(parent)
        operands = (op.lb, op.ub, op.step) if isinstance(op, scf.ForOp) else op.operands
        for value in operands:
            if isinstance(value.owner, Operation):
                work.append(value.owner)
    return needed


def clone_slice(
    ops: Iterable[Operation],
    needed: set[Operation],
    values: dict[SSAValue, SSAValue],
    into: Block,
) -> None:
    """Copy the ops of `ops` in `needed` into `into`, in order: loops without carried values
    and branches without results, around the copies of what they hold."""
    for op in ops:
        if op not in needed:
            continue
        if isinstance(op, scf.ForOp):
            iv = op.body.block.args[0]
            body = Block(arg_types=[iv.type])
            body.args[0].name_hint = iv.name_hint
            values[iv] = body.args[0]
            clone_slice(op.body.block.ops, needed, values, body)
            body.add_op(scf.YieldOp())
            lower, upper, step = (values.get(value, value) for value in (op.lb, op.ub, op.step))
            into.add_op(scf.ForOp(lower, upper, step, [], body))
            continue
        if isinstance(op, scf.IfOp):
            taken = Block()
            clone_slice(op.true_region.block.ops, needed, values, taken)
            taken.add_op(scf.YieldOp())
            other: Region | None = None
            if op.false_region.blocks:
                block = Block()
                clone_slice(op.false_region.block.ops, needed, values, block)
                block.add_op(scf.YieldOp())
                other = Region(block)
            into.add_op(scf.IfOp(values.get(op.cond, op.cond), [], Region(taken), other))
            continue
        into.add_op(op.clone(value_mapper=values))


def partition(func: FuncOp) -> WarpRoles:
    """Split `func` into its warp roles' regions (see the module docstring) and return the
    plan; a kernel already partitioned is left as it is."""
    where = f"partition-warp-roles: @{func.sym_name.data}"
    if any(isinstance(op, WarpSpecializeOp) for op in func.body.block.ops):
        return warp_roles(func, "partition-warp-roles")
    params = kernel_params(func)
    check_buildable(params, where)
    loop = mainloop_of(func)
    loads = mainloop_loads(loop)
    for slot, load in enumerate(loads):
        load.attributes[SLOT_ATTR] = IntegerAttr(slot, i64)
    body = func.body.block
    end = body.last_op
    if not isinstance(end, ReturnOp):
        raise ScheduleError(f"{where}: the kernel's body must end with func.return")
    producer = Region()
    if params.warp_specialization != "none":
        producer = Region(Block())
        clone_slice(body.ops, producer_slice(loop), {}, producer.block)
    consumer = Block()
    for op in list(body.ops):
        if op is end:
            continue
        op.detach()
        consumer.add_op(op)
    body.insert_op_before(
        WarpSpecializeOp(params.warp_specialization, producer, Region(consumer)), end
    )
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
