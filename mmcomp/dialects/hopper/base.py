"""The base of the hopper instructions, and the checks and syntax pieces they share.

`HopperInstruction` is a ptx instruction (ptx-style syntax, an optional guard) with no PTX
text of its own: `convert-hopper-to-ptx` lowers it. The checks name the op and the operand
(`int_register`, `shared_address`, `check_coordinates`, `unguarded`); the syntax pieces
print and parse a guard, a tensor map at box coordinates and typed operands.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Self, TypeVar

from xdsl.dialects.builtin import IndexType
from xdsl.ir import Attribute, SSAValue
from xdsl.parser import Parser
from xdsl.parser.core import UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.dialects.hopper.types import (
    TensorMapType,
)
from mmcomp.dialects.ptx import (
    NameOf,
    PtxInstruction,
    kind_of,
    parse_guard,
)

# ----------------------------------------------------------------------------------------
# Shared base, checks and syntax
# ----------------------------------------------------------------------------------------


class HopperInstruction(PtxInstruction, ABC):
    """Base of the hopper ops: ptx-style syntax and guard; lowered by convert-hopper-to-ptx."""

    def ptx_text(self, name: NameOf) -> str:
        raise DiagnosticException(
            f"{self.name} has no direct PTX text: run convert-hopper-to-ptx before emitting PTX"
        )


HopperT = TypeVar("HopperT", bound=HopperInstruction)


class FreshValueOp(HopperInstruction, ABC):
    """Base of the ops that take no operands and make a value of their result's type, the
    whole of their syntax: `%v = hopper.op : type` (convert-hopper-to-ptx makes its
    registers)."""

    RESULT_TYPE: ClassVar[type[Attribute]]
    """The class of the result's type."""
    RESULT_WHAT: ClassVar[str]
    """The result's type in a parse error: "a !hopper.... type"."""

    def __init__(self, result_type: Attribute):
        super().__init__(operands=[[]], result_types=[result_type])

    def verify_kinds(self) -> None:
        unguarded(self)

    def print(self, printer: Printer) -> None:
        print_guard(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        guard = Guard.parse(parser)
        parser.parse_punctuation(":")
        return guard.apply(cls(parse_typed(parser, cls.name, cls.RESULT_TYPE, cls.RESULT_WHAT)))


def int_register(op: HopperInstruction, what: str, value: SSAValue, widths: Sequence[int]):
    """Raise unless `value` is an integer (b/u/s) register of one of `widths` bits."""
    kind = kind_of(value)
    if kind.is_int and kind.width in widths:
        return
    want = " or ".join(f"{w}-bit" for w in widths)
    raise VerifyException(
        f"{op.name}: {what} must be a {want} integer register, found !ptx.reg<{kind.name}>"
    )


def shared_address(op: HopperInstruction, what: str, value: SSAValue) -> None:
    int_register(op, what, value, (32,))


def typed_value(op: HopperInstruction, what: str, value: SSAValue, expected: Attribute) -> None:
    """Raise unless `value` (an operand or result the op names `what`) is of type
    `expected`."""
    if value.type != expected:
        raise VerifyException(f"{op.name}: {what} must be {expected}, found {value.type}")


def unguarded(op: HopperInstruction) -> None:
    """Raise if `op`, which only names a value, is guarded."""
    if op.guard is not None:
        raise VerifyException(f"{op.name}: names a value and takes no guard")


def check_coordinates(
    op: HopperInstruction, tensor_map: SSAValue, coordinates: Sequence[SSAValue]
) -> None:
    """Raise unless there is one coordinate (an index value) per dimension of the map."""
    assert isinstance(tensor_map.type, TensorMapType)
    rank = tensor_map.type.rank
    if len(coordinates) != rank:
        raise VerifyException(
            f"{op.name}: a copy of a rank-{rank} tensor map takes {rank} coordinates, "
            f"found {len(coordinates)}"
        )


def print_guard(printer: Printer, op: HopperInstruction) -> None:
    """` if %p` or ` if not %p` when the op is guarded, then its attributes, if any."""
    if op.guard is not None:
        printer.print_string(" if not " if op.negated is not None else " if ")
        printer.print_operand(op.guard)
    printer.print_op_attributes(op.attributes)


@dataclass(frozen=True)
class Guard:
    """What follows the operands of a hand-written syntax: `[if [not] %p] [{attributes}]`."""

    guard: SSAValue | None
    negated: bool
    attributes: dict[str, Attribute]

    @staticmethod
    def parse(parser: Parser) -> Guard:
        """The optional guard and attribute dictionary."""
        guard = None
        negated = False
        if parser.parse_optional_keyword("if") is not None:
            negated = parser.parse_optional_keyword("not") is not None
            guard = parse_guard(parser)
        return Guard(guard, negated, dict(parser.parse_optional_attr_dict()))

    def apply(self, op: HopperT) -> HopperT:
        """`op` with these attributes, guarded by the guard when there is one."""
        op.attributes.update(self.attributes)
        if self.guard is None:
            return op
        guarded = op.set_guard(self.guard, self.negated)
        op.erase()
        return guarded


def print_register_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    """The registers' type, once if they all have it, else each in order."""
    types = [value.type for value in values]
    if all(t == types[0] for t in types):
        printer.print_attribute(types[0])
        return
    printer.print_list(types, printer.print_attribute)


def resolve_registers(
    parser: Parser, unresolved: Sequence[UnresolvedOperand], types: Sequence[Attribute], pos: int
) -> list[SSAValue]:
    """The registers of `unresolved`, of one type for all or of one type each."""
    if len(types) == 1:
        types = [types[0]] * len(unresolved)
    if len(types) != len(unresolved):
        parser.raise_error(
            f"expected one register type or {len(unresolved)}, found {len(types)}", pos, parser.pos
        )
    return [parser.resolve_operand(u, t) for u, t in zip(unresolved, types, strict=True)]


def resolve_indices(parser: Parser, unresolved: Sequence[UnresolvedOperand]) -> list[SSAValue]:
    """Operands that are index values (a copy's coordinates)."""
    return [parser.resolve_operand(operand, IndexType()) for operand in unresolved]


def print_tensor_access(printer: Printer, tensor_map: SSAValue, coords: Sequence[SSAValue]):
    """`%map[%c0, %c1]`: a tensor map at box coordinates, innermost first."""
    printer.print_operand(tensor_map)
    printer.print_string("[")
    printer.print_list(coords, printer.print_operand)
    printer.print_string("]")


def parse_tensor_access(parser: Parser) -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
    tensor_map = parser.parse_unresolved_operand()
    coords = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    return tensor_map, coords


def parse_typed(parser: Parser, op: str, base: type[Attribute], what: str) -> Attribute:
    """A type of class `base` (`what` names it in the error, after the op's name)."""
    pos = parser.pos
    found = parser.parse_type()
    if not isinstance(found, base):
        parser.raise_error(f"{op}: expected {what}, found {found}", pos, parser.pos)
    return found
