"""The bases of the hopper ops, and the checks and syntax pieces they share.

`HopperInstruction` is a ptx instruction (ptx-style syntax, an optional guard) with no PTX
text of its own: `convert-hopper-to-ptx` lowers it. `HopperValueOp` is an op that only
names a value (a typed value or a part of one): no guard, and a declarative syntax
(`assembly_format`) whose custom directives are here (`Int`, `Identifier`, `Typed`), as is
`Implied`, the constraint of a type that the syntax leaves out. The checks name the op and
the operand (`int_register`, `shared_address`, `check_coordinates`); the hand-written syntax
pieces of the guarded ops print and parse a guard, a tensor map at box coordinates and
typed operands.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from typing_extensions import TypeVar
from xdsl.dialects.builtin import IndexType, IntAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, traits_def
from xdsl.irdl.constraints import (
    AttrConstraint,
    InferenceContext,
    IntConstraint,
    RangeLengthConstraint,
    RangeOf,
    VerificationContext,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    OperandDirective,
    ParsingState,
    PrintingState,
    TypeDirective,
    VariableDirective,
    irdl_custom_directive,
)
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
    UnloweredInstruction,
    kind_of,
    parse_guard,
)
from mmcomp.ir.narrowing import is_int_attr

# ----------------------------------------------------------------------------------------
# The value ops' syntax: a constraint and custom directives
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Implied(AttrConstraint[Attribute]):
    """A type that an op's syntax leaves out, implied as MLIR's `TypesMatchWith` implies
    one: `type`, or `rule` of the type that the variable `source` binds (a `VarConstraint`
    on another operand; that type itself without a rule). It admits any type: the op's
    verifier checks the type and names the op in its error."""

    type: Attribute | None = None
    """The type, when it is a constant."""
    source: str | None = None
    """Else the variable whose type implies it."""
    rule: Callable[[Attribute], Attribute] | None = None
    """The type the source's type implies, if not the same."""

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        """Admit any type (the op's verifier checks it)."""

    def can_infer(self, var_constraint_names: AbstractSet[str]) -> bool:
        return self.type is not None or self.source in var_constraint_names

    def infer(self, context: InferenceContext) -> Attribute:
        if self.type is not None:
            return self.type
        assert self.source is not None
        found = context.get_variable(self.source)
        assert found is not None
        return found if self.rule is None else self.rule(found)

    def mapping_type_vars(
        self, type_var_mapping: Mapping[TypeVar, AttrConstraint | IntConstraint]
    ) -> Implied:
        return self


@irdl_custom_directive
class Int(CustomDirective):
    """An `IntAttr` property as a bare integer, `5` (a format prints `#builtin.int<5>`)."""

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.value.set(state, IntAttr(parser.parse_integer(allow_boolean=False)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        value = self.value.get(op)
        assert is_int_attr(value)
        state.print_whitespace(printer)
        printer.print_string(str(value.data))


@irdl_custom_directive
class Identifier(CustomDirective):
    """A `StringAttr` property as a bare identifier, `mmcomp_shared` (a format prints a
    string literal)."""

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.value.set(state, StringAttr(parser.parse_identifier()))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        value = self.value.get(op)
        assert isinstance(value, StringAttr)
        state.print_whitespace(printer)
        printer.print_string(value.data)


@irdl_custom_directive
class Typed(CustomDirective):
    """The type of an operand or result, of the class its definition admits: another is an
    error at the type that names the op (`hopper.ring_stage: expected a
    !hopper.ring_position type, found index`), before the types it implies are inferred."""

    type: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        start = parser.pos
        found = parser.parse_type()
        expected = _admitted_class(state.op_type, self.type)
        if expected is not None and not isinstance(found, expected):
            parser.raise_error(
                f"{state.op_type.name}: expected a !{expected.name} type, found {found}",
                start,
                parser.pos,
            )
        self.type.set(state, (found,))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        self.type.print(printer, state, op)


def _admitted_class(op: type[IRDLOperation], directive: TypeDirective) -> type[Attribute] | None:
    """The one attribute class that the definition of the operand or result whose type
    `directive` is admits, if there is one."""
    variable = directive.inner
    assert isinstance(variable, VariableDirective)
    definition = op.get_irdl_definition()
    defs = definition.operands if isinstance(variable, OperandDirective) else definition.results
    constraint = defs[variable.index][1].constr
    if isinstance(constraint, RangeLengthConstraint):
        constraint = constraint.constraint
    if not isinstance(constraint, RangeOf):
        return None
    bases = constraint.constr.get_bases()
    return next(iter(bases)) if bases is not None and len(bases) == 1 else None


# ----------------------------------------------------------------------------------------
# Shared bases
# ----------------------------------------------------------------------------------------


class HopperInstruction(PtxInstruction, ABC):
    """Base of the hopper ops that may be guarded: ptx-style syntax and guard; lowered by
    convert-hopper-to-ptx."""

    def ptx_text(self, name: NameOf) -> str:
        raise DiagnosticException(
            f"{self.name} has no direct PTX text: run convert-hopper-to-ptx before emitting PTX"
        )


HopperT = TypeVar("HopperT", bound=HopperInstruction)


class HopperValueOp(IRDLOperation, ABC):
    """Base of the hopper ops that only name a value (a typed value or a part of one): no
    guard, a declarative syntax where one fits (`assembly_format`, with the custom
    directives `Int`, `Identifier` and `Typed`), and a place in a ptx.entry's body until
    convert-hopper-to-ptx replaces it by the registers that hold its value."""

    traits = traits_def(UnloweredInstruction())
    custom_directives = (Int, Identifier, Typed)


class FreshValueOp(HopperValueOp, ABC):
    """Base of the ops that take no operands and make a value of their result's type, the
    whole of their syntax: `%v = hopper.op : type` (convert-hopper-to-ptx makes its
    registers)."""

    assembly_format = "attr-dict `:` custom<Typed>(type($result))"

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])


# ----------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------


def int_register(op: Operation, what: str, value: SSAValue, widths: Sequence[int]):
    """Raise unless `value` is an integer (b/u/s) register of one of `widths` bits."""
    kind = kind_of(value)
    if kind.is_int and kind.width in widths:
        return
    want = " or ".join(f"{w}-bit" for w in widths)
    raise VerifyException(
        f"{op.name}: {what} must be a {want} integer register, found !ptx.reg<{kind.name}>"
    )


def shared_address(op: Operation, what: str, value: SSAValue) -> None:
    int_register(op, what, value, (32,))


def typed_value(op: Operation, what: str, value: SSAValue, expected: Attribute) -> None:
    """Raise unless `value` (an operand or result the op names `what`) is of type
    `expected`."""
    if value.type != expected:
        raise VerifyException(f"{op.name}: {what} must be {expected}, found {value.type}")


def check_coordinates(op: Operation, tensor_map: SSAValue, coordinates: Sequence[SSAValue]) -> None:
    """Raise unless there is one coordinate (an index value) per dimension of the map."""
    assert isinstance(tensor_map.type, TensorMapType)
    rank = tensor_map.type.rank
    if len(coordinates) != rank:
        raise VerifyException(
            f"{op.name}: a copy of a rank-{rank} tensor map takes {rank} coordinates, "
            f"found {len(coordinates)}"
        )


# ----------------------------------------------------------------------------------------
# The guarded ops' hand-written syntax
# ----------------------------------------------------------------------------------------


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
