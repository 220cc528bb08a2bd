"""The schedule ops of the `sched` dialect: the iteration space and its transforms."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Self

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    IntAttr,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import (
    Attribute,
    Block,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.sched.attrs import (
    AxisType,
    axis_extent,
    extent_product,
    show_extent,
)
from mmcomp.dialects.sched.params import (
    BINDINGS,
    ScheduleParams,
    ScheduleParamsAttr,
)
from mmcomp.dialects.sched.problem import (
    Problem,
    ceil_div,
    problem_of,
)
from mmcomp.dialects.syntax import (
    OperandListSyntaxOp,
    parse_attributes_and_type,
    parse_keyword_attributes,
    print_attributes_and_region,
    print_attributes_and_types,
    with_attributes,
)
from mmcomp.errors import ScheduleError

# Schedule ops: the iteration space and its transforms


class TransformOp(OperandListSyntaxOp):
    """Base of the transforms, printed ` %a, %b WORDS {attrs} : !sched.axis<A>, ...`."""

    def print_tail(self, printer: Printer) -> None:
        print_attributes_and_types(printer, self, self.operand_types)


class AxisListOp(TransformOp):
    """Base of the transforms of a list of axes and nothing else (merge, reorder)."""

    def __init__(self, axes: Sequence[SSAValue]):
        super().__init__(operands=[axes], result_types=self.axis_result_types(axes))

    @classmethod
    def axis_result_types(cls, axes: Sequence[SSAValue]) -> list[Attribute]:
        """The result types of the transform of `axes`."""
        return []

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        unresolved = _parse_axis_operands(parser)
        attrs = parser.parse_optional_attr_dict()
        return with_attributes(cls(_resolve_axes(parser, unresolved)), attrs)


@irdl_op_definition
class ScheduleOp(IRDLOperation):
    """The schedule of the enclosing `func.func`: params, iteration space, transforms."""

    name = "sched.schedule"

    params = prop_def(ScheduleParamsAttr)
    """The schedule parameters."""
    body = region_def("single_block")
    """The iteration space and the transforms, in order."""

    traits = traits_def(NoTerminator())

    def __init__(self, params: ScheduleParams | ScheduleParamsAttr, body: Region | None = None):
        """A schedule with these params, every key fixed (keys left out of a partial
        `#sched.params` keep their fill)."""
        if isinstance(params, ScheduleParamsAttr):
            params = params.data
        params = ScheduleParamsAttr(params.complete())
        super().__init__(
            properties={"params": params},
            regions=[body if body is not None else Region(Block())],
        )

    @property
    def space(self) -> SpaceOp | None:
        """The `sched.space` op of the body, if any."""
        for op in self.body.block.ops:
            if isinstance(op, SpaceOp):
                return op
        return None

    def problem(self) -> Problem | None:
        """The problem the params are checked against (None without a `sched.space`)."""
        space = self.space
        if space is None:
            return None
        parent = self.parent_op()
        if parent is not None and parent.name == "func.func":
            return dataclasses.replace(problem_of(parent), extents=space.extents)
        return Problem(space.extents)

    def verify_(self) -> None:
        spaces = [op for op in self.body.block.ops if isinstance(op, SpaceOp)]
        if len(spaces) > 1:
            raise VerifyException("sched.schedule holds more than one sched.space")
        problem = self.problem()
        if problem is None:
            return
        try:
            self.params.data.check(problem)
        except ScheduleError as error:
            raise VerifyException(f"sched.schedule: {error}") from error

    @classmethod
    def parse(cls, parser: Parser) -> ScheduleOp:
        parser.parse_keyword("params")
        pos = parser.pos
        params = parser.parse_attribute()
        if not isinstance(params, ScheduleParamsAttr):
            parser.raise_error(f"expected #sched.params<...>, found {params}", pos)
        attrs = parse_keyword_attributes(parser)
        body = parser.parse_region()
        if not body.blocks:
            body.add_block(Block())
        return with_attributes(cls(params, body), attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" params ")
        printer.print_attribute(self.params)
        print_attributes_and_region(printer, self, self.body, print_entry_block_args=False)


@irdl_op_definition
class SpaceOp(IRDLOperation):
    """The kernel's iteration space: one axis handle per axis, batch first, then m, n, k."""

    name = "sched.space"

    names = prop_def(ArrayAttr[StringAttr])
    """The axis names (b0, b1, ..., m, n, k)."""
    axes = var_result_def(AxisType)
    """One handle per axis."""

    def __init__(self, extents: Mapping[str, int]):
        super().__init__(
            properties={"names": ArrayAttr([StringAttr(name) for name in extents])},
            result_types=[[AxisType(extent) for extent in extents.values()]],
        )
        for result, name in zip(self.axes, extents, strict=True):
            result.name_hint = name

    @property
    def extents(self) -> dict[str, int]:
        """Axis name -> extent, in order."""
        return {
            name.data: axis_extent(axis) for name, axis in zip(self.names, self.axes, strict=True)
        }

    def axis(self, name: str) -> SSAValue:
        """The handle of the axis called `name`."""
        for axis_name, axis in zip(self.names, self.axes, strict=True):
            if axis_name.data == name:
                return axis
        raise KeyError(f"sched.space has no axis {name!r}")

    def verify_(self) -> None:
        if len(self.names) != len(self.axes):
            raise VerifyException(
                f"sched.space names {len(self.names)} axes but has {len(self.axes)} results"
            )
        seen: set[str] = set()
        for name in self.names:
            if not re.fullmatch(r"b\d+|g|m|n|k", name.data):
                raise VerifyException(
                    f"sched.space axis '{name.data}': expected b0, b1, ..., g (the groups), "
                    "m, n or k"
                )
            if name.data in seen:
                raise VerifyException(f"sched.space axis '{name.data}' appears twice")
            seen.add(name.data)

    @classmethod
    def parse(cls, parser: Parser) -> SpaceOp:
        def entry() -> tuple[str, int]:
            name = parser.parse_identifier(context_msg=" as an axis name")
            parser.parse_punctuation("=")
            if parser.parse_optional_punctuation("?") is not None:
                return name, DYNAMIC_INDEX
            return name, parser.parse_integer(allow_negative=False, allow_boolean=False)

        entries = parser.parse_comma_separated_list(parser.Delimiter.NONE, entry)
        return with_attributes(cls(dict(entries)), parser.parse_optional_attr_dict())

    def print(self, printer: Printer) -> None:
        printer.print_string(
            " " + ", ".join(f"{k} = {show_extent(v)}" for k, v in self.extents.items())
        )
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class SplitOp(TransformOp):
    """Split an axis: a = outer * inner_extent + inner; a >= extent is out of bounds."""

    name = "sched.split"

    axis = operand_def(AxisType)
    """The axis split."""
    factor = prop_def(IntAttr)
    """Extent of the inner axis (`by F`), or of the outer axis (`into P`, with `parts`)."""
    parts = opt_prop_def(UnitAttr)
    """Present for `into P`: P outer parts of ceil(extent / P) (the last may be short)."""
    outer = result_def(AxisType)
    """The outer axis."""
    inner = result_def(AxisType)
    """The inner axis."""

    def __init__(self, axis: SSAValue, factor: int, parts: bool = False):
        outer, inner = _split_extents(axis_extent(axis), factor, parts)
        super().__init__(
            operands=[axis],
            properties={"factor": IntAttr(factor)} | ({"parts": UnitAttr()} if parts else {}),
            result_types=[AxisType(outer), AxisType(inner)],
        )

    def verify_(self) -> None:
        factor = self.factor.data
        if factor < 1:
            raise VerifyException(f"sched.split factor must be positive, found {factor}")
        extent = axis_extent(self.axis)
        how = "into" if self.parts is not None else "by"
        expected = _split_extents(extent, factor, self.parts is not None)
        found = (axis_extent(self.outer), axis_extent(self.inner))
        if found != expected:
            raise VerifyException(
                f"sched.split of an axis of {show_extent(extent)} {how} {factor}: expected "
                f"outer x inner {show_extent(expected[0])} x {show_extent(expected[1])}, found "
                f"{show_extent(found[0])} x {show_extent(found[1])}"
            )
        if self.parts is not None and extent != DYNAMIC_INDEX and factor > extent:
            raise VerifyException(
                f"sched.split into {factor} parts of an axis of only {extent} values"
            )

    @classmethod
    def parse(cls, parser: Parser) -> SplitOp:
        operand = parser.parse_unresolved_operand()
        parts = parser.parse_keyword_in(("by", "into")) == "into"
        factor = parser.parse_integer(allow_negative=False, allow_boolean=False)
        attrs, typ = parse_attributes_and_type(parser)
        if factor < 1:
            parser.raise_error(f"sched.split factor must be positive, found {factor}")
        return with_attributes(cls(parser.resolve_operand(operand, typ), factor, parts), attrs)

    def syntax_words(self) -> str:
        how = "into" if self.parts is not None else "by"
        return f" {how} {self.factor.data}"


def _split_extents(extent: int, factor: int, parts: bool) -> tuple[int, int]:
    """(outer, inner) extents of `sched.split` by or into `factor`; the part of a dynamic
    axis that the factor does not fix is dynamic."""
    factor = max(factor, 1)
    if extent == DYNAMIC_INDEX:
        return (factor, DYNAMIC_INDEX) if parts else (DYNAMIC_INDEX, factor)
    if parts:
        return factor, ceil_div(extent, factor)
    return ceil_div(extent, factor), factor


@irdl_op_definition
class MergeOp(AxisListOp):
    """Merge axes into one: t = (x * Y + y) * Z + z; the last axis varies fastest."""

    name = "sched.merge"

    axes = var_operand_def(AxisType)
    """The merged axes, slowest first."""
    result = result_def(AxisType)
    """The product of the extents."""

    @classmethod
    def axis_result_types(cls, axes: Sequence[SSAValue]) -> list[Attribute]:
        return [AxisType(extent_product(axis_extent(axis) for axis in axes))]

    def verify_(self) -> None:
        if not self.axes:
            raise VerifyException("sched.merge needs at least one axis")
        extent = extent_product(axis_extent(axis) for axis in self.axes)
        if axis_extent(self.result) != extent:
            raise VerifyException(
                f"sched.merge result extent {show_extent(axis_extent(self.result))} is not the "
                f"product {show_extent(extent)} of its axes"
            )


@irdl_op_definition
class SwizzleOp(TransformOp):
    """Merge two tile axes in grouped order: bands of `group` along the slow axis."""

    name = "sched.swizzle"

    slow = operand_def(AxisType)
    """The axis cut into bands (fastest inside a band)."""
    fast = operand_def(AxisType)
    """The axis walked inside each band."""
    group = prop_def(IntAttr)
    """Band width (the swizzle parameter); 1 is a plain merge."""
    result = result_def(AxisType)
    """The linear tile index."""

    def __init__(self, slow: SSAValue, fast: SSAValue, group: int):
        super().__init__(
            operands=[slow, fast],
            properties={"group": IntAttr(group)},
            result_types=[AxisType(extent_product((axis_extent(slow), axis_extent(fast))))],
        )

    def verify_(self) -> None:
        if self.group.data < 1:
            raise VerifyException(
                f"sched.swizzle group must be at least 1, found {self.group.data}"
            )
        extent = extent_product((axis_extent(self.slow), axis_extent(self.fast)))
        if axis_extent(self.result) != extent:
            raise VerifyException(
                f"sched.swizzle result extent {show_extent(axis_extent(self.result))} is not "
                f"{show_extent(extent)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> SwizzleOp:
        unresolved = _parse_axis_operands(parser)
        if len(unresolved) != 2:
            parser.raise_error(f"sched.swizzle takes two axes, found {len(unresolved)}")
        parser.parse_keyword("group")
        group = parser.parse_integer(allow_negative=False, allow_boolean=False)
        attrs = parser.parse_optional_attr_dict()
        slow, fast = _resolve_axes(parser, unresolved)
        return with_attributes(cls(slow, fast, group), attrs)

    def syntax_words(self) -> str:
        return f" group {self.group.data}"


def swizzle_index(t: int, slow_extent: int, fast_extent: int, group: int) -> tuple[int, int]:
    """The (slow, fast) indices that `sched.swizzle ... group G` maps linear index t to."""
    band_size = group * fast_extent
    band, rest = divmod(t, band_size)
    width = min(group, slow_extent - band * group)
    return band * group + rest % width, rest // width


def _parse_axis_operands(parser: Parser) -> list[UnresolvedOperand]:
    """Parse the axis operands of a transform: `%a, %b, ...`."""
    return parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)


def _resolve_axes(parser: Parser, unresolved: Sequence[UnresolvedOperand]) -> list[SSAValue]:
    """Parse `: type, type, ...` and resolve the axis operands with them."""
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    if len(types) != len(unresolved):
        parser.raise_error(f"expected {len(unresolved)} axis types, found {len(types)}")
    return list(parser.resolve_operands(unresolved, types, parser.pos))


@irdl_op_definition
class ReorderOp(AxisListOp):
    """The order of the serial loops over these axes, outermost first."""

    name = "sched.reorder"

    axes = var_operand_def(AxisType)
    """The axes, outermost first."""

    def verify_(self) -> None:
        if len(set(self.axes)) != len(self.axes):
            raise VerifyException("sched.reorder lists an axis twice")


@irdl_op_definition
class ParallelizeOp(TransformOp):
    """Bind an axis to blockIdx.x/y/z, a warpgroup, one instruction, or a serial loop."""

    name = "sched.parallelize"

    axis = operand_def(AxisType)
    """The axis bound."""
    to = prop_def(StringAttr)
    """One of BINDINGS."""

    def __init__(self, axis: SSAValue, to: str):
        super().__init__(operands=[axis], properties={"to": StringAttr(to)})

    def verify_(self) -> None:
        if self.to.data not in BINDINGS:
            raise VerifyException(
                f"sched.parallelize to '{self.to.data}': expected one of {', '.join(BINDINGS)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ParallelizeOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        pos = parser.pos
        to = parser.parse_identifier(context_msg=" as a binding")
        if to not in BINDINGS:
            parser.raise_error(
                f"sched.parallelize to '{to}': expected one of {', '.join(BINDINGS)}",
                pos,
                parser.pos,
            )
        attrs, typ = parse_attributes_and_type(parser)
        return with_attributes(cls(parser.resolve_operand(operand, typ), to), attrs)

    def syntax_words(self) -> str:
        return f" to {self.to.data}"
