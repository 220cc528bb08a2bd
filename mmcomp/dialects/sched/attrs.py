"""The types of the `sched` dialect: `!sched.axis<extent>`, a handle on one axis."""

from __future__ import annotations

from xdsl.dialects.builtin import (
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
        if self.extent.data < 1:
            raise VerifyException(f"!sched.axis extent must be positive, found {self.extent.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            extent = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return [IntAttr(extent)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.extent.data}>")


def axis_extent(value: SSAValue) -> int:
    typ = value.type
    if not isinstance(typ, AxisType):
        raise VerifyException(f"expected a !sched.axis, found {typ}")
    return typ.extent.data
