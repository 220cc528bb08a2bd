"""The types of the `sched` dialect: `!sched.axis<extent>`, a handle on one axis."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IntAttr,
)
from xdsl.ir import (
    Attribute,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


@irdl_attr_definition
class AxisType(ParametrizedAttribute, TypeAttribute):
    """A handle on one axis of the iteration space or of a transform's result."""

    name = "sched.axis"

    extent: IntAttr
    """How many values the axis takes."""

    def __init__(self, extent: int | IntAttr):
        super().__init__(IntAttr(extent) if isinstance(extent, int) else extent)

    def verify(self) -> None:
        if self.extent.data < 1 and self.extent.data != DYNAMIC_INDEX:
            raise VerifyException(f"!sched.axis extent must be positive, found {self.extent.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            if parser.parse_optional_punctuation("?") is not None:
                return [IntAttr(DYNAMIC_INDEX)]
            extent = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return [IntAttr(extent)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{show_extent(self.extent.data)}>")


def show_extent(extent: int) -> str:
    """An axis extent as schedule text writes it: the number, or `?` when dynamic."""
    return "?" if extent == DYNAMIC_INDEX else str(extent)


def extent_product(extents: Iterable[int]) -> int:
    """The product of axis extents; dynamic (`?`) if any of them is."""
    product = 1
    for extent in extents:
        if extent == DYNAMIC_INDEX:
            return DYNAMIC_INDEX
        product *= extent
    return product


def axis_extent(value: SSAValue) -> int:
    typ = value.type
    if not isinstance(typ, AxisType):
        raise VerifyException(f"expected a !sched.axis, found {typ}")
    return typ.extent.data
