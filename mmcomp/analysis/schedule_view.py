"""The schedule of a fusion function as the schedule passes see it, and the checks they share.

`ScheduleView` finds the axes that tile-split, tile-merge, insert-persistent-loop and
split-k created in a function's `sched.schedule`; `append`, `split` and `reorder` add
transforms to it. `scheduled_functions` gives the functions a schedule pass works on (a
fusion function without a schedule is an error there), and `check_fusion_annotations`
checks that the `fusion.space` and `fusion.roles` of IR resumed from a printed stage are
those propagate-axis-mapping derives from its types and ops.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis import roles
from mmcomp.analysis.groups import GROUP_ROLE, MASKED, grouping_of
from mmcomp.dialects import sched
from mmcomp.errors import FusionError
from mmcomp.ir.attributes import check_attributes
from mmcomp.ir.diagnostics import at, is_located

OperationT = TypeVar("OperationT", bound=Operation)

SPACE_ATTR = "fusion.space"
"""The function attribute holding the iteration space (from propagate-axis-mapping)."""

GRID_ATTR = "sched.grid"
"""The function attribute of a kernel built by materialize-schedule (its CTA count)."""

EXTENT_ATTR = "sched.extent"
"""The argument attribute of a runtime extent (an index argument): the axis it gives."""


def schedule_error(pass_name: str, function: str, message: str) -> DiagnosticException:
    """A diagnostic naming the pass and the scheduled function."""
    return DiagnosticException(f"{pass_name}: @{function}: {message}")


def schedule_of(function: func.FuncOp) -> sched.ScheduleOp | None:
    """The `sched.schedule` in the body of `function`, if any."""
    for op in function.body.block.ops:
        if isinstance(op, sched.ScheduleOp):
            return op
    return None


def is_materialized(function: func.FuncOp) -> bool:
    """Whether `function` is a kernel built by materialize-schedule (it has a grid)."""
    return GRID_ATTR in function.attributes


def is_empty_fusion(function: func.FuncOp) -> bool:
    """Whether `function` is a fusion with nothing in it: tensor arguments, no results, and
    a body of just func.return (refused by propagate-axis-mapping)."""
    inputs = function.function_type.inputs.data
    if not inputs or function.function_type.outputs.data or len(function.body.blocks) != 1:
        return False
    ops = list(function.body.block.ops)
    if len(ops) != 1 or not isinstance(ops[0], func.ReturnOp):
        return False
    return all(isinstance(arg, TensorType) for arg in inputs)


def is_fusion_function(function: func.FuncOp) -> bool:
    """Whether `function` is an unmaterialized fusion: an iteration space, fusion ops, or
    an empty fusion."""
    if is_materialized(function):
        return False
    if SPACE_ATTR in function.attributes:
        return True
    if any(op.name.startswith("fusion.") for block in function.body.blocks for op in block.ops):
        return True
    return is_empty_fusion(function)


def check_fusion_annotations(
    pass_name: str, function: func.FuncOp, complete: bool = True
) -> roles.AxisMapping:
    """The axis mapping of `function`; a diagnostic naming `pass_name` where its stored
    `fusion.space` or a `fusion.roles` differs from the derived one (or, if `complete`, is
    missing)."""
    try:
        return roles.check_annotations(function, complete=complete, pass_name=pass_name)
    except FusionError as error:
        message = str(error)
        raise DiagnosticException(
            message if is_located(message) else f"{pass_name}: {message}"
        ) from error


def _check_schedule_space(
    pass_name: str, function: func.FuncOp, schedule: sched.ScheduleOp, mapping: roles.AxisMapping
) -> None:
    """A diagnostic where the schedule's `sched.space` differs from the derived space."""
    space = schedule.space
    if space is None:
        return
    problem = roles.space_mismatch("sched.space", space.extents, mapping)
    if problem is not None:
        message = f"{pass_name}: @{function.sym_name.data}: {problem}"
        raise DiagnosticException(at(space, message))


def scheduled_functions(
    module: ModuleOp, pass_name: str
) -> Iterator[tuple[func.FuncOp, sched.ScheduleOp]]:
    """Each function of the module that holds a `sched.schedule`, with that schedule.

    A fusion function without one is an error naming `pass_name`: the passes after
    tile-split need its schedule. Other functions (plain ones, kernels) are left alone.
    An attribute in mmcomp's namespaces that no pass reads is an error first, and so is a
    scheduled function whose annotations or `sched.space` differ from what its types and
    ops give.
    """
    check_attributes(module, pass_name)
    for function in [op for op in module.ops if isinstance(op, func.FuncOp)]:
        schedule = schedule_of(function)
        if schedule is not None:
            mapping = check_fusion_annotations(pass_name, function, complete=False)
            _check_schedule_space(pass_name, function, schedule, mapping)
            yield function, schedule
            continue
        if not is_fusion_function(function):
            continue
        if sched.PARAMS_ATTR in function.attributes:
            missing = "no sched.schedule yet (it has 'sched.params': run tile-split first)"
        else:
            missing = (
                "no sched.schedule (run propagate-axis-mapping, choose the params with "
                "'sched.params' and run tile-split first)"
            )
        raise schedule_error(pass_name, function.sym_name.data, missing)


def append(schedule: sched.ScheduleOp, op: OperationT, *names: str) -> OperationT:
    """Append `op` to the schedule body, naming its results."""
    schedule.body.block.add_op(op)
    for result, name in zip(op.results, names, strict=False):
        result.name_hint = name
    return op


def split(
    schedule: sched.ScheduleOp, axis: SSAValue, factor: int, outer: str, inner: str
) -> tuple[SSAValue, SSAValue]:
    """Append `sched.split %axis by factor`; return (outer, inner)."""
    op = append(schedule, sched.SplitOp(axis, factor), outer, inner)
    return op.results[0], op.results[1]


def extent(axis: SSAValue) -> int:
    """The extent of an axis handle."""
    axis_type = axis.type
    assert isinstance(axis_type, sched.AxisType)
    return axis_type.extent.data


@dataclass
class ScheduleView:
    """The axes of a schedule built by the schedule passes, found from its transforms."""

    schedule: sched.ScheduleOp
    pass_name: str

    def fail(self, message: str) -> DiagnosticException:
        """A diagnostic naming the pass and the function."""
        function = self.schedule.parent_op()
        name = function.sym_name.data if isinstance(function, func.FuncOp) else "?"
        return schedule_error(self.pass_name, name, message)

    @property
    def params(self) -> sched.ScheduleParams:
        """The schedule parameters."""
        return self.schedule.params.data

    @property
    def space(self) -> sched.SpaceOp:
        """The `sched.space` op."""
        space = self.schedule.space
        if space is None:
            raise self.fail("the schedule has no sched.space")
        return space

    @property
    def extents(self) -> dict[str, int]:
        """The iteration space."""
        return self.space.extents

    @property
    def batch_axes(self) -> list[SSAValue]:
        """The batch axes of the space, outermost first; a masked grouped fusion's group
        axis g last (its groups are walked as a batch: mmcomp.analysis.groups)."""
        names = [name for name in self.extents if name.startswith("b")]
        function = self.schedule.parent_op()
        if isinstance(function, func.FuncOp):
            grouping = grouping_of(function)
            if grouping is not None and grouping.layout == MASKED:
                names.append(GROUP_ROLE)
        return [self.space.axis(name) for name in names]

    def ops(self) -> list[Operation]:
        """The transforms, in order."""
        return list(self.schedule.body.block.ops)

    def users(self, axis: SSAValue, kind: type[Operation]) -> list[Operation]:
        """The transforms of type `kind` that use `axis`."""
        return [op for op in self.ops() if isinstance(op, kind) and axis in op.operands]

    def split_of(self, axis: SSAValue) -> sched.SplitOp | None:
        """The split of `axis`, if there is one."""
        splits = self.users(axis, sched.SplitOp)
        if not splits:
            return None
        op = splits[0]
        assert isinstance(op, sched.SplitOp)
        return op

    def tile_split(self, role: str) -> sched.SplitOp:
        """The CTA-tile split of axis m, n or k."""
        if role not in self.extents:
            raise self.fail(f"the iteration space has no axis {role}")
        op = self.split_of(self.space.axis(role))
        if op is None:
            raise self.fail(f"axis {role} is not split into tiles (run tile-split first)")
        return op

    def tile_axis(self, role: str) -> SSAValue:
        """The tile index along m, n or k (the K block for k)."""
        return self.tile_split(role).outer

    def tile_size(self, role: str) -> int:
        """The CTA tile's extent along m, n or k."""
        return self.tile_split(role).factor.data

    def cluster_split(self, role: str) -> sched.SplitOp | None:
        """The split of the m or n tile index by the cluster shape, if any."""
        return self.split_of(self.tile_axis(role))

    def cluster_axis(self, role: str) -> SSAValue:
        """The cluster tile index along m or n (the tile index without clusters)."""
        op = self.cluster_split(role)
        return self.tile_axis(role) if op is None else op.outer

    @property
    def swizzle(self) -> sched.SwizzleOp | None:
        """The swizzle merging the m and n (cluster) tile indices, if any."""
        for op in self.ops():
            if isinstance(op, sched.SwizzleOp):
                return op
        return None

    @property
    def rank(self) -> SSAValue | None:
        """The CTA's rank in its cluster (m fastest), if clusters are used."""
        inner = [
            split.inner
            for split in (self.cluster_split("m"), self.cluster_split("n"))
            if split is not None
        ]
        for op in self.ops():
            if isinstance(op, sched.MergeOp) and inner and list(op.axes) == inner[::-1]:
                return op.result
        if len(inner) == 1:
            return inner[0]
        return None

    @property
    def tile(self) -> SSAValue:
        """The linear output tile index (batch outermost)."""
        swizzle = self.swizzle
        if swizzle is None:
            raise self.fail("the m and n tile indices are not merged (run tile-merge first)")
        merged = swizzle.result
        for op in self.users(merged, sched.MergeOp):
            assert isinstance(op, sched.MergeOp)
            if list(op.axes)[-1] == merged:
                return op.result
        return merged

    @property
    def k_slices(self) -> sched.SplitOp | None:
        """The split-K split of the K block axis, if any."""
        return self.split_of(self.tile_axis("k"))

    @property
    def work(self) -> SSAValue:
        """The linear work index: the tile index, merged with the split-K slice if any."""
        tile = self.tile
        slices = self.k_slices
        if slices is None:
            return tile
        for op in self.users(tile, sched.MergeOp):
            assert isinstance(op, sched.MergeOp)
            if list(op.axes) == [tile, slices.inner]:
                return op.result
        raise self.fail("the split-K slice is not merged with the tile index")

    @property
    def persistent(self) -> sched.SplitOp | None:
        """The split of the work index by the grid (the persistent loop), if any."""
        return self.split_of(self.work)

    def bound(self, to: str) -> list[SSAValue]:
        """The axes bound to `to` by sched.parallelize."""
        return [
            op.axis for op in self.ops() if isinstance(op, sched.ParallelizeOp) and op.to.data == to
        ]


def reorder(schedule: sched.ScheduleOp, outermost: SSAValue) -> None:
    """Put `outermost` first in the schedule's serial loop order."""
    block: Block = schedule.body.block
    old = [op for op in block.ops if isinstance(op, sched.ReorderOp)]
    axes = [outermost]
    for op in old:
        axes += [axis for axis in op.axes if axis not in axes]
        op.detach()
        op.erase()
    append(schedule, sched.ReorderOp(axes))
