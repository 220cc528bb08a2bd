"""Parse and print helpers shared by the custom syntax of the mmcomp dialects.

Most custom op formats end the same way: an optional attribute dictionary, a colon and
the types (`... {attrs} : T`, `... : T1, T2`, `... : T1 to T2`). These helpers read and
write that tail, so that each op's `parse` and `print` only spell out what is its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TypeVar

from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer

_OpT = TypeVar("_OpT", bound=Operation)


def with_attributes(op: _OpT, attributes: Mapping[str, Attribute]) -> _OpT:
    """Add parsed `attributes` to `op`'s attribute dictionary and return `op`."""
    op.attributes |= attributes
    return op


def parse_keyword_attributes(parser: Parser) -> dict[str, Attribute]:
    """Parse an optional `attributes {...}` dictionary (before a region); {} when absent."""
    attributes = parser.parse_optional_attr_dict_with_keyword()
    return {} if attributes is None else dict(attributes.data)


def parse_attributes_and_type(parser: Parser) -> tuple[dict[str, Attribute], Attribute]:
    """Parse `{attrs}? : T`: the optional attribute dictionary, a colon and one type."""
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    return attributes, parser.parse_type()


def parse_attributes_and_conversion(
    parser: Parser,
) -> tuple[dict[str, Attribute], Attribute, Attribute]:
    """Parse `{attrs}? : T to U`: the attribute dictionary, a source and a result type."""
    attributes, source_type = parse_attributes_and_type(parser)
    parser.parse_keyword("to")
    return attributes, source_type, parser.parse_type()


def print_operands(printer: Printer, operands: Sequence[SSAValue]) -> None:
    """Print ` %a, %b, ...`: a space, then the operands separated by commas."""
    printer.print_string(" ")
    printer.print_list(operands, printer.print_ssa_value)


def print_attributes_and_region(
    printer: Printer, op: Operation, region: Region, print_entry_block_args: bool
) -> None:
    """Print ` attributes {...}` (when there are any), then the region."""
    printer.print_op_attributes(op.attributes, print_keyword=True)
    printer.print_string(" ")
    printer.print_region(region, print_entry_block_args=print_entry_block_args)


def print_attributes_and_types(
    printer: Printer, op: Operation, types: Sequence[Attribute], delimiter: str = ", "
) -> None:
    """Print `{attrs}? : T1, T2, ...`: the attributes (when any), a colon and the types."""
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_list(types, printer.print_attribute, delimiter)


class OperandListSyntaxOp(IRDLOperation, ABC):
    """Base of the ops printed ` %a, %b WORDS {attrs} : TYPES`, each family its TYPES."""

    def syntax_words(self) -> str:
        """What the op prints between its operands and its attributes."""
        return ""

    @abstractmethod
    def print_tail(self, printer: Printer) -> None:
        """Print what follows the words: the attributes, a colon and the types."""

    def print(self, printer: Printer) -> None:
        print_operands(printer, self.operands)
        printer.print_string(self.syntax_words())
        self.print_tail(printer)
