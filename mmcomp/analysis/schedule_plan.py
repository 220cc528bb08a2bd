"""The plan of a scheduled fusion, which materialize-schedule builds the kernel from.

`plan_of` reads the tiles, raster and swizzle, cluster, split-K slices, persistence, grid
and stream-K strategy off a function's `sched.schedule` (through tile-split's
ScheduleView) into a `SchedulePlan`, whose counts (tiles along m and n, K blocks, work
units, CTAs) are ints where the extents are static and dynamic otherwise.
`IndexBuilder` emits the index arithmetic of the kernel (folding constants and trivial
operations), and `SchedulePlan.counts` and `swizzled_tile` write the plan's counts and a
work unit's tile in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from mmcomp.analysis.groups import CONTIGUOUS, GROUP_ROLE, MASKED, grouping_of
from mmcomp.analysis.schedule_view import ScheduleView, extent
from mmcomp.dialects import sched
from mmcomp.dialects.fusion import DYNAMIC, is_dynamic
from mmcomp.dialects.sched.group_ops import group_tiles_bound

Count = int | SSAValue
"""A count the kernel uses: an int where the extents fix it, else an index SSA value
computed from the runtime extents."""


class IndexBuilder:
    """Emits index arithmetic into a block, folding constants and trivial operations.

    Constants are pooled per kernel and placed at the top of its entry block, so every
    nested block may use them.
    """

    def __init__(self, block: Block, constants: dict[int, SSAValue] | None = None):
        self.block = block
        self.constants: dict[int, SSAValue] = {} if constants is None else constants

    def at(self, block: Block) -> IndexBuilder:
        """An emitter into `block` sharing this one's constants."""
        return IndexBuilder(block, self.constants)

    def add(self, op: Operation) -> Operation:
        """Append `op` to the block."""
        self.block.add_op(op)
        return op

    def const(self, value: int) -> SSAValue:
        """The index constant `value`."""
        if value not in self.constants:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            op.results[0].name_hint = f"c{value}"
            self.constants[value] = op.results[0]
        return self.constants[value]

    def known(self, value: SSAValue) -> int | None:
        """The value of `value` if it is one of the pooled constants."""
        if isinstance(value.owner, arith.ConstantOp) and value in self.constants.values():
            attr = value.owner.value
            assert isinstance(attr, IntegerAttr)
            return attr.value.data
        return None

    def constant_ops(self) -> list[Operation]:
        """The pooled constant ops, by value."""
        return [self.constants[value].owner for value in sorted(self.constants)]  # pyright: ignore[reportReturnType]

    def _binary(
        self,
        op_type: type[arith.SignlessIntegerBinaryOperation],
        lhs: SSAValue,
        rhs: SSAValue,
        name: str,
    ) -> SSAValue:
        op = self.add(op_type(lhs, rhs))
        if name:
            op.results[0].name_hint = name
        return op.results[0]

    def mul(self, lhs: SSAValue, rhs: int, name: str = "") -> SSAValue:
        """lhs * rhs."""
        if rhs == 1:
            return lhs
        if (known := self.known(lhs)) is not None:
            return self.const(known * rhs)
        return self._binary(arith.MuliOp, lhs, self.const(rhs), name)

    def plus(self, lhs: SSAValue, rhs: SSAValue, name: str = "") -> SSAValue:
        """lhs + rhs."""
        if self.known(rhs) == 0:
            return lhs
        if self.known(lhs) == 0:
            return rhs
        return self._binary(arith.AddiOp, lhs, rhs, name)

    def div(self, lhs: SSAValue, rhs: int | SSAValue, name: str = "") -> SSAValue:
        """lhs floordiv rhs (both non-negative)."""
        if rhs == 1:
            return lhs
        divisor = self.const(rhs) if isinstance(rhs, int) else rhs
        return self._binary(arith.DivUIOp, lhs, divisor, name)

    def rem(self, lhs: SSAValue, rhs: int | SSAValue, name: str = "") -> SSAValue:
        """lhs mod rhs (both non-negative)."""
        if rhs == 1:
            return self.const(0)
        divisor = self.const(rhs) if isinstance(rhs, int) else rhs
        return self._binary(arith.RemUIOp, lhs, divisor, name)

    def minus(self, lhs: int | SSAValue, rhs: SSAValue, name: str = "") -> SSAValue:
        """lhs - rhs."""
        left = self.const(lhs) if isinstance(lhs, int) else lhs
        return self._binary(arith.SubiOp, left, rhs, name)

    def times(self, lhs: Count, rhs: Count, name: str = "") -> Count:
        """lhs * rhs: an int when both are, else the product's SSA value."""
        if isinstance(lhs, int) and isinstance(rhs, int):
            return lhs * rhs
        if isinstance(lhs, int):
            lhs, rhs = rhs, lhs
        assert isinstance(lhs, SSAValue)
        if isinstance(rhs, int):
            return self.mul(lhs, rhs, name)
        return self._binary(arith.MuliOp, lhs, rhs, name)

    def ceil_div(self, lhs: Count, rhs: int, name: str = "") -> Count:
        """lhs / rhs rounded up: an int when lhs is one, else its SSA value."""
        if isinstance(lhs, int):
            return _ceil_div(lhs, rhs)
        if rhs == 1:
            return lhs
        return self._binary(arith.CeilDivUIOp, lhs, self.const(rhs), name)

    def value(self, count: Count) -> SSAValue:
        """`count` as an SSA value (a pooled constant for an int)."""
        return self.const(count) if isinstance(count, int) else count

    def min(self, lhs: SSAValue, rhs: int, name: str = "") -> SSAValue:
        """min(lhs, rhs)."""
        return self._binary(arith.MinUIOp, lhs, self.const(rhs), name)

    def lesser(self, lhs: SSAValue, rhs: SSAValue, name: str = "") -> SSAValue:
        """min(lhs, rhs) of two values."""
        return self._binary(arith.MinUIOp, lhs, rhs, name)

    def greater(self, lhs: SSAValue, rhs: SSAValue, name: str = "") -> SSAValue:
        """max(lhs, rhs) of two values."""
        return self._binary(arith.MaxUIOp, lhs, rhs, name)

    def compare(self, predicate: str, lhs: SSAValue, rhs: SSAValue, name: str = "") -> SSAValue:
        """The i1 `lhs <predicate> rhs` (arith.cmpi: eq, ne, ult, ...)."""
        result = self.add(arith.CmpiOp(lhs, rhs, predicate)).results[0]
        if name:
            result.name_hint = name
        return result

    def select(self, cond: SSAValue, lhs: SSAValue, rhs: SSAValue, name: str = "") -> SSAValue:
        """`lhs` where `cond` holds, else `rhs`."""
        result = self.add(arith.SelectOp(cond, lhs, rhs)).results[0]
        if name:
            result.name_hint = name
        return result


MAX_TAIL_SEGMENTS = 8
"""Most segments the hybrid splits a tail tile into (the last arriver reads each back)."""


def tail_segments(tail: int, grid: int, k_blocks: int) -> int:
    """Segments per tail tile of the hybrid: P div R (one round), or 2P div R where two
    rounds of those end sooner, capped at MAX_TAIL_SEGMENTS and the K blocks."""
    if tail <= 0:
        return 1
    cap = min(MAX_TAIL_SEGMENTS, k_blocks)
    one = min(grid // tail, cap)
    two = min(2 * grid // tail, cap)
    rounds = -(-tail * two // grid)
    return two if rounds * one < two else max(one, 1)


def swizzled_tile(
    index: IndexBuilder, unit: SSAValue, tiles_m: Count, tiles_n: Count, raster: str, swizzle: int
) -> tuple[SSAValue, SSAValue]:
    """Emit the (m tile, n tile) of the linear tile index `unit` under raster and swizzle.

    Consecutive indices walk the raster's major axis (m for raster m); the minor axis is cut
    into groups of `swizzle` tiles, and a group is finished before the next one starts (the
    grouped rasterization of CUTLASS and Triton). A last, partial group is walked with its
    own size, so every tile is visited exactly once. A tile count that is an SSA value (a
    dynamic extent) is used as such, and its group's size is always computed.
    """
    major_axis, minor_axis = ("m", "n") if raster == "m" else ("n", "m")
    major_tiles, minor_tiles = (tiles_m, tiles_n) if raster == "m" else (tiles_n, tiles_m)
    major_name, minor_name = f"tile_{major_axis}", f"tile_{minor_axis}"
    group = min(swizzle, minor_tiles) if isinstance(minor_tiles, int) else swizzle
    if group == 1:
        minor = index.div(unit, major_tiles, minor_name)
        major = index.rem(unit, major_tiles, major_name)
    elif isinstance(minor_tiles, int) and group == minor_tiles:
        minor = index.rem(unit, minor_tiles, minor_name)
        major = index.div(unit, minor_tiles, major_name)
    else:
        group_units = index.times(major_tiles, group, "group_units")
        group_index = index.div(unit, group_units, "group")
        first = index.mul(group_index, group, "group_first")
        offset = index.rem(unit, group_units, "group_offset")
        if isinstance(minor_tiles, int) and minor_tiles % group == 0:
            size = index.const(group)
        else:
            left = index.minus(minor_tiles, first, "group_left")
            size = index.min(left, group, "group_size")
        minor = index.plus(first, index.rem(offset, size), minor_name)
        major = index.div(offset, size, major_name)
    if raster == "m":
        return major, minor
    return minor, major


def _ceil_div(value: int, divisor: int) -> int:
    if is_dynamic(value):
        return DYNAMIC
    return -(-value // divisor)


def _product(*values: int) -> int:
    """The product of counts; dynamic if one of them is."""
    product = 1
    for value in values:
        if is_dynamic(value):
            return DYNAMIC
        product *= value
    return product


@dataclass(frozen=True)
class SchedulePlan:
    """What materialization needs from the schedule: extents, tiles, order and launch."""

    space: dict[str, int]
    """The iteration space: batch axes outermost, then m, n, k."""
    tile: tuple[int, int, int]
    """The CTA tile (m, n, k)."""
    cluster: tuple[int, int] = (1, 1)
    """CTAs per cluster along m and n."""
    raster: str = "m"
    """The major axis of the tile order: m or n."""
    swizzle: int = 1
    """Tiles per group along the raster's minor axis."""
    persistent: bool = True
    """Whether each CTA loops over work units (else one unit per CTA)."""
    split_k: int = 1
    """K slices per tile, reduced through an f32 workspace."""
    grid: int = 0
    """CTAs in the grid (0: one per work unit)."""
    stream_k: str = ""
    """"stream-k" or "hybrid-stream-k" where the CTAs split the K blocks of all tiles
    (mmcomp.lowering.materialize_schedule.stream_k), else empty."""
    groups: str = ""
    """The layout of a grouped fusion's rows (mmcomp.analysis.groups: "contiguous" or
    "masked"), else empty. A masked layout walks its group axis g as a batch axis; a
    contiguous one walks floor(M / tile m) + G virtual m tiles (`sched.group_tile`)."""
    batch_axes: tuple[str, ...] = field(init=False)
    """The batch axes, outermost first (with a masked layout's group axis last)."""

    def __post_init__(self) -> None:
        batch = [axis for axis in self.space if axis.startswith("b")]
        if self.groups == MASKED:
            batch.append(GROUP_ROLE)
        object.__setattr__(self, "batch_axes", tuple(batch))

    @property
    def tiles_m(self) -> int:
        """CTA tiles along m (of contiguous groups: the virtual m tiles)."""
        if self.groups == CONTIGUOUS:
            if is_dynamic(self.space["m"]):
                return DYNAMIC
            return group_tiles_bound(self.space["m"], self.tile[0], self.space[GROUP_ROLE])
        return _ceil_div(self.space["m"], self.tile[0])

    @property
    def tiles_n(self) -> int:
        """CTA tiles along n."""
        return _ceil_div(self.space["n"], self.tile[1])

    @property
    def k_blocks(self) -> int:
        """K blocks of the tile's k extent."""
        return _ceil_div(self.space["k"], self.tile[2])

    @property
    def cluster_size(self) -> int:
        """CTAs per cluster."""
        return self.cluster[0] * self.cluster[1]

    @property
    def cluster_tiles_m(self) -> int:
        """Cluster tiles along m."""
        return _ceil_div(self.tiles_m, self.cluster[0])

    @property
    def cluster_tiles_n(self) -> int:
        """Cluster tiles along n."""
        return _ceil_div(self.tiles_n, self.cluster[1])

    @property
    def batch_count(self) -> int:
        """Product of the batch extents."""
        return _product(*(self.space[axis] for axis in self.batch_axes))

    @property
    def cluster_units(self) -> int:
        """Output tiles of clusters (batch included), each done by one cluster."""
        return _product(self.batch_count, self.cluster_tiles_m, self.cluster_tiles_n)

    @property
    def work_units(self) -> int:
        """Work units of clusters: output cluster tiles times split-K slices."""
        return _product(self.cluster_units, self.split_k)

    @property
    def cta_tiles(self) -> int:
        """Output tiles of CTAs, including those a cluster tile has beyond the edge."""
        return _product(self.cluster_units, self.cluster_size)

    @property
    def grid_ctas(self) -> int:
        """CTAs in the grid (dynamic when a dynamic extent sets it)."""
        if self.dynamic_axes:
            return DYNAMIC
        if self.grid:
            return self.grid
        return self.work_units * self.cluster_size

    @property
    def dynamic_axes(self) -> tuple[str, ...]:
        """The iteration axes with a dynamic extent, in space order."""
        return tuple(axis for axis, extent in self.space.items() if is_dynamic(extent))

    def counts(self, index: IndexBuilder, extents: dict[str, SSAValue]) -> dict[str, Count]:
        """The tile and unit counts, emitted from the runtime `extents` where they depend on
        one (nothing is emitted for a static space): batch extents, tiles_m, tiles_n,
        mn_units, cluster_units, work_units, cta_tiles, k_blocks (the K blocks of a tile:
        ceil(K / tile k), from the runtime K where K is dynamic)."""
        space: dict[str, Count] = {
            axis: extents[axis] if is_dynamic(extent) else extent
            for axis, extent in self.space.items()
        }
        counts: dict[str, Count] = {axis: space[axis] for axis in self.batch_axes}
        tiles_m: Count = self.tiles_m
        if self.groups == CONTIGUOUS and is_dynamic(tiles_m):
            groups = space[GROUP_ROLE]
            assert isinstance(groups, int), "the groups are static"
            whole = index.div(index.value(space["m"]), self.tile[0], "whole_tiles_m")
            tiles_m = index.plus(whole, index.const(groups), "tiles_m")
        elif self.groups != CONTIGUOUS:
            tiles_m = index.ceil_div(space["m"], self.tile[0], "tiles_m")
        tiles_n = index.ceil_div(space["n"], self.tile[1], "tiles_n")
        counts["tiles_m"] = index.ceil_div(tiles_m, self.cluster[0], "cluster_tiles_m")
        counts["tiles_n"] = index.ceil_div(tiles_n, self.cluster[1], "cluster_tiles_n")
        counts["mn_units"] = index.times(counts["tiles_m"], counts["tiles_n"], "mn_units")
        units = counts["mn_units"]
        for axis in self.batch_axes:
            units = index.times(units, space[axis], "cluster_units")
        counts["cluster_units"] = units
        counts["work_units"] = index.times(units, self.split_k, "units")
        counts["cta_tiles"] = index.times(units, self.cluster_size, "cta_tiles")
        counts["k_blocks"] = index.ceil_div(space["k"], self.tile[2], "k_blocks")
        if self.stream_k:
            counts["iterations"] = index.times(units, self.k_blocks, "iterations")
        return counts


def plan_of(view: ScheduleView) -> SchedulePlan:
    """Read the tiles, order, cluster, split-K and grid from the schedule's transforms."""
    params = view.params
    tile = (view.tile_size("m"), view.tile_size("n"), view.tile_size("k"))
    cluster = tuple(
        1 if (split := view.cluster_split(role)) is None else split.factor.data
        for role in ("m", "n")
    )
    swizzle = view.swizzle
    if swizzle is None:
        raise view.fail("the m and n tile indices are not merged (run tile-merge first)")
    if swizzle.fast == view.cluster_axis("m") and swizzle.slow == view.cluster_axis("n"):
        raster = "m"
    elif swizzle.fast == view.cluster_axis("n") and swizzle.slow == view.cluster_axis("m"):
        raster = "n"
    else:
        raise view.fail("sched.swizzle must merge the n and m tile indices")
    tile_index = view.tile
    if view.batch_axes:
        merge = tile_index.owner
        if not isinstance(merge, sched.MergeOp) or list(merge.axes) != [
            *view.batch_axes,
            swizzle.result,
        ]:
            raise view.fail("expected the batch axes merged outermost with the m and n tiles")
    split_k = 1
    slices = view.k_slices
    if slices is not None:
        if slices.parts is not None:
            raise view.fail("split-K slices must be a split of the K blocks `by` the slices")
        split_k = slices.factor.data
    if split_k != params.split_k:
        raise view.fail(
            f"sched.params split_k = {params.split_k}, but the schedule splits the K blocks "
            f"into {split_k} slice{'s' if split_k != 1 else ''} (run split-k after tile-merge)"
        )
    work = view.work
    persistent = view.persistent
    cluster_size = cluster[0] * cluster[1]
    if persistent is not None:
        slot = persistent.inner
        grid = persistent.factor.data * cluster_size
    else:
        slot = work
        grid = 0 if is_dynamic(extent(work)) else extent(work) * cluster_size
    bound = view.bound("block_x")
    cta = slot
    rank = view.rank
    if rank is not None:
        merges = [
            op
            for op in view.users(slot, sched.MergeOp)
            if isinstance(op, sched.MergeOp) and list(op.axes) == [slot, rank]
        ]
        cta = merges[0].result if merges else None
    if cta is None or cta not in bound:
        raise view.fail("the work index is not bound to block_x (run insert-persistent-loop first)")
    stream_k = params.strategy if params.stream_k else ""
    del params
    function = view.schedule.parent_op()
    grouping = grouping_of(function) if isinstance(function, func.FuncOp) else None
    plan = SchedulePlan(
        space=view.extents,
        tile=tile,
        cluster=(cluster[0], cluster[1]),
        raster=raster,
        swizzle=swizzle.group.data,
        persistent=persistent is not None,
        split_k=split_k,
        grid=grid,
        stream_k=stream_k,
        groups="" if grouping is None else grouping.layout,
    )
    if plan.groups and (plan.split_k != 1 or stream_k or plan.cluster_size != 1):
        raise view.fail(
            f"a grouped fusion ({plan.groups} groups) is scheduled with one CTA per tile "
            "and all its K blocks: split_k = 1, no stream-K, cluster 1x1"
        )
    if not stream_k:
        return plan
    if plan.cluster_size != 1 or plan.split_k != 1 or not plan.persistent:
        raise view.fail(f"strategy {stream_k} needs a persistent grid of single CTAs, unsplit")
    if "k" in plan.dynamic_axes:
        raise view.fail(f"strategy {stream_k} needs a static K (it splits the K blocks)")
    iterations = _product(plan.cta_tiles, plan.k_blocks)
    if not is_dynamic(iterations) and plan.grid > iterations:
        raise view.fail(
            f"strategy {stream_k}: a grid of {plan.grid} CTAs for {iterations} K-block "
            "iterations leaves CTAs without one (run insert-persistent-loop on the schedule)"
        )
    return plan
