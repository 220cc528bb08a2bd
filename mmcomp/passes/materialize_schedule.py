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
(`sched.arrive_segment`, `sched.accumulate_partial`; mmcomp.passes.stream_k).

Every start index comes from the roles: an axis with role m starts at the tile's m offset,
n at its n offset, k at the K block's offset, a batch role at the batch index, and an absent
axis (role _) at 0 with extent 1. So an operand never sees an axis it does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis.schedule_plan import (
    IndexBuilder,
    SchedulePlan,
    plan_of,
    swizzled_tile,
)
from mmcomp.analysis.schedule_view import EXTENT_ATTR, GRID_ATTR, ScheduleView, scheduled_functions
from mmcomp.dialects import fusion, sched
from mmcomp.ir.diagnostics import at
from mmcomp.ir.narrowing import is_tensor
from mmcomp.passes.stream_k import StreamK

STREAM_K_SLOTS = 2
"""Partial tiles a stream-K CTA may leave in the workspace: its first tile's and its
last's (the tiles between are whole)."""

ROLES_ATTR = "fusion.roles"
"""The attribute holding the axis roles of an op result or a function argument."""


@dataclass
class _Body:
    """The parts of a fusion function after propagate-axis-mapping."""

    inputs: list[BlockArgument]
    """The function arguments, in order."""
    input_roles: list[tuple[str, ...]]
    """The roles of each argument."""
    mmas: list[fusion.MmaOp]
    """The contractions, in order."""
    epilogue: list[Operation]
    """Every other fusion op, in order (pointwise, broadcast, cast, splat)."""
    outputs: list[SSAValue]
    """The returned values, in order."""
    output_roles: list[tuple[str, ...]]
    """The roles of each returned value."""


def roles_of_value(value: SSAValue) -> tuple[str, ...] | None:
    """The roles of a function argument or op result, or None where none are attached."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        if not isinstance(owner, func.FuncOp) or owner.arg_attrs is None:
            return None
        attrs = owner.arg_attrs.data[value.index]
        assert isinstance(attrs, DictionaryAttr)
        roles = attrs.data.get(ROLES_ATTR)
    else:
        owner = value.owner
        assert isinstance(owner, Operation)
        roles = owner.attributes.get(ROLES_ATTR)
        if isinstance(owner, fusion.MmaOp):
            roles = owner.out_roles
    if not isinstance(roles, fusion.AxisRolesAttr):
        return None
    return roles.roles


def _fail(op: Operation, message: str) -> DiagnosticException:
    return DiagnosticException(at(op, f"materialize-schedule: {op.name}: {message}"))


def analyze_body(function: func.FuncOp) -> _Body:
    """Split the fusion body into inputs, contractions, epilogue ops and outputs."""
    name = f"@{function.sym_name.data}"
    inputs = list(function.body.block.args)
    input_roles: list[tuple[str, ...]] = []
    for index, arg in enumerate(inputs):
        roles = roles_of_value(arg)
        if roles is None:
            raise DiagnosticException(
                f"materialize-schedule: {name}: argument {index} has no '{ROLES_ATTR}' "
                "(run propagate-axis-mapping first)"
            )
        input_roles.append(roles)
    mmas: list[fusion.MmaOp] = []
    epilogue: list[Operation] = []
    outputs: list[SSAValue] = []
    for op in function.body.block.ops:
        if isinstance(op, sched.ScheduleOp):
            continue
        if isinstance(op, func.ReturnOp):
            outputs = list(op.operands)
            continue
        if isinstance(op, fusion.MmaOp):
            for operand_name, operand in (("a", op.a), ("b", op.b)):
                if not isinstance(operand, BlockArgument):
                    producer = operand.owner
                    assert isinstance(producer, Operation)
                    raise _fail(
                        op,
                        f"operand '{operand_name}' must be a function argument (loaded by "
                        f"tiles); found the result of {producer.name}",
                    )
            mmas.append(op)
            continue
        if not op.name.startswith("fusion."):
            raise _fail(op, "expected only fusion ops in the body of a scheduled function")
        roles = roles_of_value(op.results[0]) if op.results else None
        if roles is None:
            raise _fail(op, f"result has no '{ROLES_ATTR}' (run propagate-axis-mapping first)")
        if "k" in roles:
            raise _fail(
                op,
                f"roles {list(roles)} have a k axis: only fusion.mma may read along k "
                "(prologue fusion is not supported)",
            )
        epilogue.append(op)
    if not mmas:
        raise DiagnosticException(
            f"materialize-schedule: {name}: no fusion.mma in the body "
            "(run propagate-axis-mapping first)"
        )
    output_roles: list[tuple[str, ...]] = []
    for index, value in enumerate(outputs):
        roles = roles_of_value(value)
        if isinstance(value, BlockArgument) or roles is None:
            raise DiagnosticException(
                f"materialize-schedule: {name}: output {index} must be computed in the "
                "body and carry 'fusion.roles'"
            )
        if "k" in roles:
            raise DiagnosticException(
                f"materialize-schedule: {name}: output {index} has a k axis {list(roles)}"
            )
        output_roles.append(roles)
    return _Body(inputs, input_roles, mmas, epilogue, outputs, output_roles)


def tile_shape(roles: Sequence[str], plan: SchedulePlan) -> tuple[int, ...]:
    """The tile of a value with `roles`: the CTA tile along m, n and k, extent 1 elsewhere."""
    extents = {"m": plan.tile[0], "n": plan.tile[1], "k": plan.tile[2]}
    return tuple(extents.get(role, 1) for role in roles)


def tile_type(value_type: Attribute, roles: Sequence[str], plan: SchedulePlan) -> TensorType:
    """The tile-shaped tensor type of a value of `value_type` with `roles`."""
    assert is_tensor(value_type)
    return TensorType(value_type.element_type, tile_shape(roles, plan))


def _memref(value_type: Attribute) -> MemRefType:
    assert is_tensor(value_type)
    return MemRefType(value_type.element_type, value_type.get_shape())


@dataclass
class _Coordinates:
    """The index values one work unit computes at."""

    starts: dict[str, SSAValue]
    """Start of the tile along each role (m, n, batch roles); k is per K block."""
    cta_tile: SSAValue | None = None
    """Linear index of the CTA's output tile (split-K bookkeeping)."""
    slice: SSAValue | None = None
    """The split-K slice."""


class _KernelBuilder:
    """Builds the kernel function of one scheduled fusion function."""

    def __init__(self, function: func.FuncOp, plan: SchedulePlan):
        self.function = function
        self.plan = plan
        self.body = analyze_body(function)

    def build(self) -> func.FuncOp:
        """The kernel: same name, memref arguments, the schedule as loops and tile ops."""
        plan, body = self.plan, self.body
        arg_types: list[Attribute] = [_memref(arg.type) for arg in body.inputs]
        arg_types += [_memref(value.type) for value in body.outputs]
        arg_attrs: list[DictionaryAttr] = [
            DictionaryAttr({ROLES_ATTR: fusion.AxisRolesAttr(roles)}) for roles in body.input_roles
        ]
        arg_attrs += [
            DictionaryAttr({ROLES_ATTR: fusion.AxisRolesAttr(roles), "sched.output": UnitAttr()})
            for roles in body.output_roles
        ]
        self.acc_types = [
            tile_type(mma.result.type, mma.out_roles.roles, plan) for mma in body.mmas
        ]
        if plan.stream_k:
            for acc_type in self.acc_types:
                leading = (plan.grid, STREAM_K_SLOTS)
                arg_types.append(MemRefType(f32, (*leading, *acc_type.get_shape())))
                arg_attrs.append(DictionaryAttr({"sched.workspace": StringAttr("partials")}))
            arg_types.append(MemRefType(i32, (plan.cta_tiles,)))
            arg_attrs.append(DictionaryAttr({"sched.workspace": StringAttr("arrivals")}))
        if plan.split_k > 1:
            for acc_type in self.acc_types:
                leading = (plan.split_k, plan.cta_tiles)
                arg_types.append(MemRefType(f32, (*leading, *acc_type.get_shape())))
                arg_attrs.append(DictionaryAttr({"sched.workspace": StringAttr("partials")}))
            arg_types.append(MemRefType(i32, (plan.cta_tiles,)))
            arg_attrs.append(DictionaryAttr({"sched.workspace": StringAttr("arrivals")}))
        for axis in plan.dynamic_axes:
            arg_types.append(IndexType())
            arg_attrs.append(DictionaryAttr({EXTENT_ATTR: StringAttr(axis)}))
        entry = Block(arg_types=arg_types)
        extent_args = entry.args[len(entry.args) - len(plan.dynamic_axes) :]
        self.extents: dict[str, SSAValue] = {}
        for axis, arg in zip(plan.dynamic_axes, extent_args, strict=True):
            arg.name_hint = axis
            self.extents[axis] = arg
        self.args = list(entry.args)
        for arg, source in zip(self.args, body.inputs, strict=False):
            arg.name_hint = source.name_hint
        self.outputs = self.args[len(body.inputs) : len(body.inputs) + len(body.outputs)]
        for index, arg in enumerate(self.outputs):
            arg.name_hint = f"out{index}"
        scratch = self.args[
            len(body.inputs) + len(body.outputs) : len(arg_types) - len(extent_args)
        ]
        self.workspaces = scratch[: len(body.mmas)]
        self.arrivals = scratch[-1] if scratch else None
        for index, arg in enumerate(self.workspaces):
            arg.name_hint = f"partials{index}"
        if self.arrivals is not None:
            self.arrivals.name_hint = "arrivals"

        index = IndexBuilder(entry)
        self.counts = plan.counts(index, self.extents)
        count_ops = list(entry.ops)
        cta = index.add(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
        cta.name_hint = "cta"
        size = plan.cluster_size
        cluster = index.div(cta, size, "cluster")
        rank = index.rem(cta, size, "rank")
        if plan.stream_k:
            ctas = None
            if plan.dynamic_axes:
                ctas = index.add(gpu.GridDimOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
                ctas.name_hint = "grid"
            StreamK(self, index, cta, ctas).emit()
        elif plan.persistent:
            ctas = index.add(gpu.GridDimOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
            ctas.name_hint = "grid"
            clusters = index.div(ctas, size, "clusters")
            loop_block = Block(arg_types=[IndexType()])
            loop_block.args[0].name_hint = "unit"
            self._unit(index.at(loop_block), loop_block.args[0], rank)
            loop_block.add_op(scf.YieldOp())
            units = index.value(self.counts["work_units"])
            index.add(scf.ForOp(cluster, units, clusters, [], loop_block))
        else:
            self._unit(index, cluster, rank)
        entry.add_op(func.ReturnOp())
        for op in reversed(count_ops):
            if not any(result.uses for result in op.results):
                op.detach()
                op.erase()
        constants = index.constant_ops()
        if plan.dynamic_axes:
            constants = [op for op in constants if op.results[0].uses]
        if entry.first_op is not None:
            entry.insert_ops_before(constants, entry.first_op)

        kernel = func.FuncOp(
            self.function.sym_name.data,
            (arg_types, []),
            Region(entry),
            arg_attrs=ArrayAttr(arg_attrs),
        )
        if plan.dynamic_axes:
            kernel.attributes[GRID_ATTR] = SymbolRefAttr(launch_name(kernel.sym_name.data))
        else:
            kernel.attributes[GRID_ATTR] = IntegerAttr(plan.grid_ctas, i64)
        kernel.attributes["sched.cluster"] = IntegerAttr(plan.cluster_size, i64)
        kernel.attributes["sched.num_inputs"] = IntegerAttr(len(body.inputs), i64)
        kernel.attributes["sched.num_outputs"] = IntegerAttr(len(body.outputs), i64)
        for name in ("fusion.space", "sched.params"):
            if name in self.function.attributes:
                kernel.attributes[name] = self.function.attributes[name]
        return kernel

    def _coordinates(self, index: IndexBuilder, unit: SSAValue, rank: SSAValue) -> _Coordinates:
        """Emit the arithmetic from a cluster's work unit to the CTA's tile coordinates."""
        plan = self.plan
        slice_ = None
        if plan.split_k > 1:
            slice_ = index.rem(unit, plan.split_k, "slice")
            unit = index.div(unit, plan.split_k, "tile_unit")
        tile_unit = unit
        starts: dict[str, SSAValue] = {}
        counts = self.counts
        mn_units = counts["mn_units"]
        if plan.batch_axes:
            batch = index.div(unit, mn_units, "batch")
            unit = index.rem(unit, mn_units, "mn_unit")
            outermost, *inner = plan.batch_axes
            for axis in reversed(inner):
                starts[axis] = index.rem(batch, counts[axis], axis)
                batch = index.div(batch, counts[axis], outermost if axis == inner[0] else "")
            starts[outermost] = batch
        tile_m, tile_n = swizzled_tile(
            index, unit, counts["tiles_m"], counts["tiles_n"], plan.raster, plan.swizzle
        )
        cluster_m, cluster_n = plan.cluster
        if plan.cluster_size > 1:
            tile_m = index.plus(index.mul(tile_m, cluster_m), index.rem(rank, cluster_m), "tile_m")
            tile_n = index.plus(index.mul(tile_n, cluster_n), index.div(rank, cluster_m), "tile_n")
        starts["m"] = index.mul(tile_m, plan.tile[0], "m0")
        starts["n"] = index.mul(tile_n, plan.tile[1], "n0")
        cta_tile = None
        if plan.split_k > 1:
            cta_tile = index.plus(index.mul(tile_unit, plan.cluster_size), rank, "cta_tile")
        return _Coordinates(starts, cta_tile, slice_)

    def _starts(
        self, index: IndexBuilder, roles: Sequence[str], starts: dict[str, SSAValue]
    ) -> list[SSAValue]:
        return [starts[role] if role in starts else index.const(0) for role in roles]

    def _unit(self, index: IndexBuilder, unit: SSAValue, rank: SSAValue) -> None:
        """Emit the work of one unit: its K loop, then the epilogue or the split-K fixup."""
        plan = self.plan
        at = self._coordinates(index, unit, rank)
        k_blocks = plan.k_blocks
        first = index.const(0) if at.slice is None else at.slice
        accumulators = self._k_loop(index, at, first, index.const(k_blocks), plan.split_k)
        if plan.split_k == 1:
            self._epilogue(index, at, accumulators)
            return
        assert at.cta_tile is not None and at.slice is not None and self.arrivals is not None
        for accumulator, workspace in zip(accumulators, self.workspaces, strict=True):
            index.add(sched.StorePartialOp(accumulator, workspace, [at.slice, at.cta_tile]))
        arrived = index.add(sched.ArriveOp(self.arrivals, [at.cta_tile])).results[0]
        arrived.name_hint = "arrived"
        is_last = index.add(arith.CmpiOp(arrived, index.const(plan.split_k - 1), "eq")).results[0]
        is_last.name_hint = "last_slice"
        fixup = Block()
        fixup_index = index.at(fixup)
        sums: list[SSAValue] = []
        for workspace, acc_type in zip(self.workspaces, self.acc_types, strict=True):
            reduce = sched.ReducePartialsOp(workspace, [at.cta_tile], acc_type)
            total = fixup_index.add(reduce).results[0]
            total.name_hint = "sum"
            sums.append(total)
        self._epilogue(fixup_index, at, sums)
        fixup.add_op(scf.YieldOp())
        index.add(scf.IfOp(is_last, [], [fixup]))

    def _k_loop(
        self, index: IndexBuilder, at: _Coordinates, first: SSAValue, last: SSAValue, step: int
    ) -> list[SSAValue]:
        """Emit the K loop over blocks first, first + step, ... < last: load, then mma."""
        plan, body = self.plan, self.body
        zeros: list[SSAValue] = []
        acc_types: list[TensorType] = []
        for mma in body.mmas:
            acc_type = tile_type(mma.result.type, mma.out_roles.roles, plan)
            acc_types.append(acc_type)
            zero = index.add(sched.ZeroTileOp(acc_type)).results[0]
            zero.name_hint = "zero"
            zeros.append(zero)
        loop = Block(arg_types=[IndexType(), *acc_types])
        loop.args[0].name_hint = "kb"
        for arg in loop.args[1:]:
            arg.name_hint = "acc"
        inner = index.at(loop)
        k_starts = dict(at.starts)
        k_starts["k"] = inner.mul(loop.args[0], plan.tile[2], "k0")
        tiles: dict[SSAValue, SSAValue] = {}
        results: list[SSAValue] = []
        for mma, acc in zip(body.mmas, loop.args[1:], strict=True):
            for operand in (mma.a, mma.b):
                if operand in tiles:
                    continue
                position = body.inputs.index(operand)  # pyright: ignore[reportArgumentType]
                roles = body.input_roles[position]
                tiles[operand] = self._load(inner, position, roles, k_starts)
            product = inner.add(
                sched.MmaOp(
                    tiles[mma.a], tiles[mma.b], acc, mma.a_roles, mma.b_roles, mma.out_roles
                )
            ).results[0]
            product.name_hint = "acc"
            results.append(product)
        loop.add_op(scf.YieldOp(*results))
        op = index.add(scf.ForOp(first, last, index.const(step), zeros, loop))
        for result in op.results:
            result.name_hint = "acc"
        return list(op.results)

    def _load(
        self,
        index: IndexBuilder,
        position: int,
        roles: Sequence[str],
        starts: dict[str, SSAValue],
    ) -> SSAValue:
        """Emit the load of input `position`'s tile at the starts its roles select."""
        source = self.body.inputs[position]
        result_type = tile_type(source.type, roles, self.plan)
        op = index.add(
            sched.LoadTileOp(self.args[position], self._starts(index, roles, starts), result_type)
        )
        name = source.name_hint or f"arg{position}"
        op.results[0].name_hint = f"{name}_tile"
        return op.results[0]

    def _epilogue(
        self, index: IndexBuilder, at: _Coordinates, accumulators: Sequence[SSAValue]
    ) -> None:
        """Emit the epilogue operand loads, the sched.epilogue region and the stores."""
        plan, body = self.plan, self.body
        used_inputs: list[int] = []
        for op in body.epilogue:
            for operand in op.operands:
                if isinstance(operand, BlockArgument) and operand in body.inputs:
                    position = body.inputs.index(operand)
                    if position not in used_inputs:
                        used_inputs.append(position)
        operands = list(accumulators)
        operands += [
            self._load(index, position, body.input_roles[position], at.starts)
            for position in used_inputs
        ]
        region_block = Block(arg_types=[operand.type for operand in operands])
        mapping: dict[SSAValue, SSAValue] = {}
        for mma, arg in zip(body.mmas, region_block.args, strict=False):
            mapping[mma.result] = arg
            arg.name_hint = mma.result.name_hint
        for position, arg in zip(used_inputs, region_block.args[len(body.mmas) :], strict=True):
            mapping[body.inputs[position]] = arg
            arg.name_hint = body.inputs[position].name_hint
        for op in body.epilogue:
            roles = roles_of_value(op.results[0])
            assert roles is not None
            clone = type(op).create(
                operands=[mapping[operand] for operand in op.operands],
                result_types=[tile_type(op.results[0].type, roles, plan)],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            clone.results[0].name_hint = op.results[0].name_hint
            region_block.add_op(clone)
            mapping[op.results[0]] = clone.results[0]
        yielded = [mapping[value] for value in body.outputs]
        region_block.add_op(sched.YieldOp(yielded))
        epilogue = index.add(
            sched.EpilogueOp(operands, [value.type for value in yielded], Region(region_block))
        )
        for position, (result, roles) in enumerate(
            zip(epilogue.results, body.output_roles, strict=True)
        ):
            result.name_hint = body.outputs[position].name_hint
            index.add(
                sched.StoreTileOp(
                    result, self.outputs[position], self._starts(index, roles, at.starts)
                )
            )


def launch_name(kernel: str) -> str:
    """The symbol of the launch function of the dynamic kernel `kernel`."""
    return f"{kernel}_launch"


def build_launch(name: str, plan: SchedulePlan) -> func.FuncOp:
    """The launch function of a kernel with dynamic extents: from the runtime extents (one
    index argument per dynamic axis, in space order) to (grid CTAs, CTA tiles, work units).
    The CTA tiles size the split-K workspaces (and stream-K's counters); the work units
    bound the tile loop (under stream-K: the iterations times the grid, the largest
    product its iteration ranges compute)."""
    entry = Block(arg_types=[IndexType() for _ in plan.dynamic_axes])
    extents: dict[str, SSAValue] = {}
    for axis, arg in zip(plan.dynamic_axes, entry.args, strict=True):
        arg.name_hint = axis
        extents[axis] = arg
    index = IndexBuilder(entry)
    counts = plan.counts(index, extents)
    clusters = index.value(counts["work_units"])
    units = index.value(counts["work_units"])
    if plan.stream_k:
        clusters = index.value(counts["iterations"])
    if plan.persistent:
        clusters = index.min(clusters, plan.grid // plan.cluster_size, "clusters")
    grid = index.value(index.times(clusters, plan.cluster_size, "grid"))
    if plan.stream_k:
        # The largest product of stream-K's 32-bit iteration arithmetic (a CTA's range
        # starts at cta x iterations / grid), checked as the work units are.
        units = index.value(index.times(counts["iterations"], grid, "iteration_products"))
    results = [grid, index.value(counts["cta_tiles"]), units]
    entry.add_op(func.ReturnOp(*results))
    constants = index.constant_ops()
    if entry.first_op is not None:
        entry.insert_ops_before(constants, entry.first_op)
    return func.FuncOp(
        launch_name(name),
        ([IndexType()] * len(plan.dynamic_axes), [IndexType()] * 3),
        Region(entry),
        arg_attrs=ArrayAttr(
            [DictionaryAttr({EXTENT_ATTR: StringAttr(axis)}) for axis in plan.dynamic_axes]
        ),
    )


class MaterializeSchedule(ModulePass):
    """Lower each scheduled function to its kernel: loops, index arithmetic, tile ops."""

    name = "materialize-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function, schedule in list(scheduled_functions(op, self.name)):
            plan = plan_of(ScheduleView(schedule, self.name))
            kernel = _KernelBuilder(function, plan).build()
            kernel.attributes["sched.params"] = schedule.params
            op.body.block.insert_op_after(kernel, function)
            if plan.dynamic_axes:
                op.body.block.insert_op_after(build_launch(kernel.sym_name.data, plan), kernel)
            function.detach()
            function.erase()
