"""The kernel function every strategy pattern of materialize-schedule builds on.

`KernelFrame` makes the kernel's signature (the fusion's inputs and outputs as memrefs,
the split-K or stream-K workspaces, the runtime extents), its entry block with the plan's
counts, this CTA's index and its cluster and rank; a strategy pattern writes its work
distribution there, each work unit's tile as `tile_coordinates`, `sched.contract_tile`
(`KernelFrame.contract`) and `sched.write_tile` (`KernelFrame.write`), and
`KernelFrame.finish` returns the `func.func`. `build_launch` makes the launch function of
a kernel with runtime extents.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func, gpu
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from mmcomp.analysis.groups import CONTIGUOUS, GROUP_ROLE, grouping_of
from mmcomp.analysis.schedule_plan import (
    Count,
    IndexBuilder,
    SchedulePlan,
    plan_of,
    swizzled_tile,
)
from mmcomp.analysis.schedule_view import EXTENT_ATTR, GRID_ATTR, ScheduleView, schedule_of
from mmcomp.dialects import fusion, sched
from mmcomp.lowering.materialize_schedule.body import (
    ROLES_ATTR,
    FusionBody,
    accumulator_types,
    analyze_body,
    contraction_region,
    epilogue_region,
    memref_of,
)

PASS_NAME = "materialize-schedule"
"""The pass these patterns make up (its name prefixes their errors)."""

STREAM_K_SLOTS = 2
"""Partial tiles a stream-K CTA may leave in the workspace: its first tile's and its
last's (the tiles between are whole)."""


@dataclass
class Coordinates:
    """The index values one work unit computes at."""

    starts: dict[str, SSAValue]
    """Start of the tile along each role (m, n, batch roles); k is per K block."""
    cta_tile: SSAValue | None = None
    """Linear index of the CTA's output tile (split-K bookkeeping)."""
    slice: SSAValue | None = None
    """The split-K slice."""
    rows: SSAValue | None = None
    """A grouped tile's row bound: its group's end (contiguous) or rows (masked); the
    stores are clipped below it."""
    live: SSAValue | None = None
    """A grouped tile's test that it holds rows (an i1): a virtual m tile between two
    groups, or one past a masked group's rows, has none and is skipped."""

    def roles(self) -> fusion.AxisRolesAttr:
        """The roles of the starts, as the tile ops take them."""
        return fusion.AxisRolesAttr(tuple(self.starts))

    def values(self) -> list[SSAValue]:
        """The starts, in the order of `roles`."""
        return list(self.starts.values())


def tile_coordinates(
    index: IndexBuilder,
    plan: SchedulePlan,
    counts: dict[str, Count],
    unit: SSAValue,
    rank: SSAValue,
    group_sizes: SSAValue | None = None,
) -> Coordinates:
    """Emit the arithmetic from a cluster's work unit to the CTA's tile coordinates (of a
    grouped plan, the group lookups on `group_sizes`: `contiguous_group_coordinates`,
    `grouped_coordinates`)."""
    slice_ = None
    if plan.split_k > 1:
        slice_ = index.rem(unit, plan.split_k, "slice")
        unit = index.div(unit, plan.split_k, "tile_unit")
    tile_unit = unit
    starts: dict[str, SSAValue] = {}
    mn_units = counts["mn_units"]
    if plan.batch_axes:
        batch = index.div(unit, mn_units, "batch")
        unit = index.rem(unit, mn_units, "mn_unit")
        outermost, *inner = plan.batch_axes
        for axis in reversed(inner):
            starts[axis] = index.rem(batch, counts[axis], axis)
            batch = index.div(batch, counts[axis], outermost if axis == inner[0] else "")
        starts[outermost] = batch
    if plan.groups == CONTIGUOUS:
        assert group_sizes is not None
        return contiguous_group_coordinates(index, plan, counts["tiles_n"], unit, group_sizes)
    tile_m, tile_n = swizzled_tile(
        index, unit, counts["tiles_m"], counts["tiles_n"], plan.raster, plan.swizzle
    )
    cluster_m, cluster_n = plan.cluster
    if plan.cluster_size > 1:
        tile_m = index.plus(index.mul(tile_m, cluster_m), index.rem(rank, cluster_m), "tile_m")
        tile_n = index.plus(index.mul(tile_n, cluster_n), index.div(rank, cluster_m), "tile_n")
    if plan.groups:
        assert group_sizes is not None
        return grouped_coordinates(index, plan, starts, tile_m, tile_n, group_sizes)
    starts["m"] = index.mul(tile_m, plan.tile[0], "m0")
    starts["n"] = index.mul(tile_n, plan.tile[1], "n0")
    cta_tile = None
    if plan.split_k > 1:
        cta_tile = index.plus(index.mul(tile_unit, plan.cluster_size), rank, "cta_tile")
    return Coordinates(starts, cta_tile, slice_)


def contiguous_group_coordinates(
    index: IndexBuilder, plan: SchedulePlan, tiles_n: Count, unit: SSAValue, offsets: SSAValue
) -> Coordinates:
    """A tile of contiguous groups from its linear index `unit`, in group-major order.

    The (virtual m tile x n tile) list is walked group by group: `sched.group_tile` finds
    the group g of the virtual m tile unit / tiles_n (its units are those from
    first(g) x tiles_n, first(g) = floor(start / tile m) + g), and the unit's index within
    the group, unit - first(g) x tiles_n, is rastered and swizzled over the group's own
    (ceil(rows / tile m) x tiles_n) grid, so a swizzle band never holds two groups' tiles
    (two weights). A unit past the group's tiles (the virtual tile between two groups, or
    past the last group) has no rows: it is skipped, and walks the grid's first tile."""
    tile_m, tile_n = plan.tile[0], plan.tile[1]
    virtual = index.div(unit, tiles_n, "virtual_m")
    lookup = index.add(sched.GroupTileOp(offsets, virtual, tile_m))
    group, start, end = lookup.results
    group.name_hint, start.name_hint, end.name_hint = "g", "group_start", "group_end"
    first = index.plus(index.div(start, tile_m), group, "group_first_m")
    tiles = index.ceil_div(index.minus(end, start, "group_rows"), tile_m, "group_m_tiles")
    assert isinstance(tiles, SSAValue)
    local = index.minus(unit, index.value(index.times(first, tiles_n)), "group_unit")
    group_units = index.value(index.times(tiles, tiles_n, "group_units"))
    live = index.compare("ult", local, group_units, "has_rows")
    local = index.select(live, local, index.const(0), "group_local")
    span = index.greater(tiles, index.const(1), "group_span")
    m_tile, n_tile = swizzled_tile(index, local, span, tiles_n, plan.raster, plan.swizzle)
    m0 = index.plus(start, index.mul(m_tile, tile_m), "m0")
    n0 = index.mul(n_tile, tile_n, "n0")
    return Coordinates({GROUP_ROLE: group, "m": m0, "n": n0}, rows=end, live=live)


def grouped_coordinates(
    index: IndexBuilder,
    plan: SchedulePlan,
    starts: dict[str, SSAValue],
    tile_m: SSAValue,
    tile_n: SSAValue,
    group_sizes: SSAValue,
) -> Coordinates:
    """A masked group's tile: its starts, row bound and live test, from its m and n tile
    indices. The group is the batch index (already in `starts`), the rows are the group's
    count (`sched.group_rows`)."""
    n0 = index.mul(tile_n, plan.tile[1], "n0")
    m0 = index.mul(tile_m, plan.tile[0], "m0")
    rows = index.add(sched.GroupRowsOp(group_sizes, starts[GROUP_ROLE])).results[0]
    rows.name_hint = "group_rows"
    live = index.compare("ult", m0, rows, "has_rows")
    return Coordinates({**starts, "m": m0, "n": n0}, rows=rows, live=live)


class KernelFrame:
    """The kernel of one scheduled fusion function while a strategy pattern builds it."""

    def __init__(self, function: func.FuncOp, plan: SchedulePlan, params: Attribute):
        self.function = function
        self.plan = plan
        self.params = params
        """The schedule's `#sched.params`, which the kernel carries."""
        self.body: FusionBody = analyze_body(function)
        body = self.body
        self.acc_types = accumulator_types(body, plan.tile)
        """The f32 accumulator tile of each contraction."""
        arg_types: list[Attribute] = [memref_of(arg.type) for arg in body.inputs]
        arg_types += [memref_of(value.type) for value in body.outputs]
        arg_attrs: list[DictionaryAttr] = [
            DictionaryAttr({ROLES_ATTR: fusion.AxisRolesAttr(roles)}) for roles in body.input_roles
        ]
        arg_attrs += [
            DictionaryAttr({ROLES_ATTR: fusion.AxisRolesAttr(roles), "sched.output": UnitAttr()})
            for roles in body.output_roles
        ]
        leading: list[tuple[int, int]] = []
        if plan.stream_k:
            leading.append((plan.grid, STREAM_K_SLOTS))
        if plan.split_k > 1:
            leading.append((plan.split_k, plan.cta_tiles))
        for lead in leading:
            for acc_type in self.acc_types:
                arg_types.append(MemRefType(f32, (*lead, *acc_type.get_shape())))
                arg_attrs.append(DictionaryAttr({"sched.workspace": StringAttr("partials")}))
            arg_types.append(MemRefType(i32, (plan.cta_tiles,)))
            arg_attrs.append(DictionaryAttr({"sched.workspace": StringAttr("arrivals")}))
        for axis in plan.dynamic_axes:
            arg_types.append(IndexType())
            arg_attrs.append(DictionaryAttr({EXTENT_ATTR: StringAttr(axis)}))
        self.arg_types = arg_types
        self.arg_attrs = arg_attrs
        self.entry = Block(arg_types=arg_types)
        entry = self.entry
        extent_args = entry.args[len(entry.args) - len(plan.dynamic_axes) :]
        self.extents: dict[str, SSAValue] = {}
        """The index argument of each runtime extent."""
        for axis, arg in zip(plan.dynamic_axes, extent_args, strict=True):
            arg.name_hint = axis
            self.extents[axis] = arg
        self.args = list(entry.args)
        for arg, source in zip(self.args, body.inputs, strict=False):
            arg.name_hint = source.name_hint
        self.inputs = self.args[: len(body.inputs)]
        """The fusion's inputs, as the kernel's memrefs."""
        self.outputs = self.args[len(body.inputs) : len(body.inputs) + len(body.outputs)]
        """The fusion's outputs, as the kernel's memrefs."""
        for position, arg in enumerate(self.outputs):
            arg.name_hint = f"out{position}"
        scratch = self.args[
            len(body.inputs) + len(body.outputs) : len(arg_types) - len(extent_args)
        ]
        self.workspaces = scratch[: len(body.mmas)]
        """The f32 partial tiles of each contraction (split-K, stream-K)."""
        self.arrivals = scratch[-1] if scratch else None
        """The arrival counters (split-K, stream-K)."""
        for position, arg in enumerate(self.workspaces):
            arg.name_hint = f"partials{position}"
        if self.arrivals is not None:
            self.arrivals.name_hint = "arrivals"
        self.index = IndexBuilder(entry)
        """The entry block's index arithmetic (its constants pooled for the kernel)."""
        self.counts = plan.counts(self.index, self.extents)
        """The plan's counts (ints, or the entry's arithmetic on the runtime extents)."""
        self._count_ops = list(entry.ops)
        index = self.index
        self.cta = index.add(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
        """This CTA: gpu.block_id x."""
        self.cta.name_hint = "cta"
        self.cluster = index.div(self.cta, plan.cluster_size, "cluster")
        """This CTA's cluster."""
        self.rank = index.rem(self.cta, plan.cluster_size, "rank")
        """This CTA's rank in its cluster."""
        grouping = grouping_of(function)
        self.group_sizes = None if grouping is None else self.inputs[grouping.sizes]
        """A grouped fusion's group sizes (offsets or counts), which its tiles look up."""

    def grid_dim(self) -> SSAValue:
        """The CTAs of the grid: gpu.grid_dim x."""
        grid = self.index.add(gpu.GridDimOp(gpu.DimensionAttr(gpu.DimensionEnum.X))).results[0]
        grid.name_hint = "grid"
        return grid

    def contract(
        self, index: IndexBuilder, at: Coordinates, first: SSAValue, last: SSAValue, step: int
    ) -> list[SSAValue]:
        """The tile's contractions over K blocks first, first + step, ... < last: a
        `sched.contract_tile`; its accumulators."""
        plan, body = self.plan, self.body
        inputs = [self.inputs[position] for position in body.contraction_inputs]
        op = sched.ContractTileOp(
            inputs,
            at.roles(),
            at.values(),
            (first, last, index.const(step)),
            self.acc_types,
            contraction_region(body, plan.tile),
        )
        index.add(op)
        for result in op.results:
            result.name_hint = "acc"
        return list(op.results)

    def write(self, index: IndexBuilder, at: Coordinates, accumulators: Sequence[SSAValue]) -> None:
        """The tile's epilogue and stores: a `sched.write_tile`."""
        body = self.body
        inputs = [self.inputs[position] for position in body.epilogue_inputs]
        region = epilogue_region(body, self.plan.tile)
        index.add(
            sched.WriteTileOp(
                accumulators, inputs, self.outputs, at.roles(), at.values(), region, at.rows
            )
        )

    def finish(self) -> func.FuncOp:
        """The kernel: the entry block returned, the unused counts dropped, the constants
        placed first; the grid, cluster, argument counts and schedule on it."""
        plan, body, entry = self.plan, self.body, self.entry
        entry.add_op(func.ReturnOp())
        for op in reversed(self._count_ops):
            if not any(result.uses for result in op.results):
                op.detach()
                op.erase()
        constants = self.index.constant_ops()
        if plan.dynamic_axes:
            constants = [op for op in constants if op.results[0].uses]
        if entry.first_op is not None:
            entry.insert_ops_before(constants, entry.first_op)
        kernel = func.FuncOp(
            self.function.sym_name.data,
            (self.arg_types, []),
            Region(entry),
            arg_attrs=ArrayAttr(self.arg_attrs),
        )
        if plan.dynamic_axes:
            kernel.attributes[GRID_ATTR] = SymbolRefAttr(launch_name(kernel.sym_name.data))
        else:
            kernel.attributes[GRID_ATTR] = IntegerAttr(plan.grid_ctas, i64)
        kernel.attributes["sched.cluster"] = IntegerAttr(plan.cluster_size, i64)
        kernel.attributes["sched.num_inputs"] = IntegerAttr(len(body.inputs), i64)
        kernel.attributes["sched.num_outputs"] = IntegerAttr(len(body.outputs), i64)
        for name in ("fusion.space", sched.PARAMS_ATTR):
            if name in self.function.attributes:
                kernel.attributes[name] = self.function.attributes[name]
        kernel.attributes[sched.PARAMS_ATTR] = self.params
        return kernel

    def kernel_ops(self) -> list[Operation]:
        """The kernel (`finish`), and its launch function where it has runtime extents."""
        kernel = self.finish()
        if not self.plan.dynamic_axes:
            return [kernel]
        return [kernel, build_launch(kernel.sym_name.data, self.plan)]


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
    for op in reversed(list(entry.ops)[:-1]):
        if not any(result.uses for result in op.results):  # a count the launch does not need
            op.detach()
            op.erase()
    constants = [op for op in index.constant_ops() if op.results[0].uses]
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


def scheduled_plan(function: func.FuncOp) -> tuple[sched.ScheduleOp, SchedulePlan] | None:
    """The `sched.schedule` of a scheduled fusion function and the plan read from it; None
    for any other function."""
    schedule = schedule_of(function)
    if schedule is None:
        return None
    return schedule, plan_of(ScheduleView(schedule, PASS_NAME))
