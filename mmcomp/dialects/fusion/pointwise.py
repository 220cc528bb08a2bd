"""The pointwise ops of the `fusion` dialect: every operand and the result have one type.

Except `fusion.cast`, which converts the element type and keeps the shape.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    StringAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion.ops import (
    DefinedBeforeUse,
    checked_tensor,
    format_shape,
    static_shape,
)
from mmcomp.dialects.syntax import (
    OperandListSyntaxOp,
    parse_attributes_and_type,
    print_attributes_and_types,
    with_attributes,
)

GELU_APPROXIMATIONS = ("tanh", "none")
"""The values of `fusion.gelu`'s `approximate` property."""


# Pointwise ops


class PointwiseOp(OperandListSyntaxOp):
    """Base of the pointwise ops: every operand and the result have one type."""

    def _verify_pointwise(self) -> None:
        names = self.operand_names()
        types = [
            checked_tensor(self, f"operand '{name}'", operand.type)
            for name, operand in zip(names, self.operands, strict=True)
        ]
        first_name, first = names[0], types[0]
        for name, operand_type in zip(names[1:], types[1:], strict=True):
            if static_shape(operand_type) != static_shape(first):
                raise VerifyException(
                    f"{self.name}: operand '{name}': expected shape "
                    f"{format_shape(static_shape(first))} (that of '{first_name}'; "
                    f"broadcasts are explicit in IR), found "
                    f"{format_shape(static_shape(operand_type))}"
                )
            if operand_type.element_type != first.element_type:
                raise VerifyException(
                    f"{self.name}: operand '{name}': expected element type "
                    f"{first.element_type} (that of '{first_name}'; casts are explicit in IR), "
                    f"found {operand_type.element_type}"
                )
        result = checked_tensor(self, "result", self.result_types[0])
        if result != first:
            raise VerifyException(
                f"{self.name}: result: expected type {first} (that of '{first_name}'), "
                f"found {result}"
            )

    @classmethod
    def operand_names(cls) -> tuple[str, ...]:
        """The operand field names, in order."""
        return ("input",)

    def verify_(self) -> None:
        self._verify_pointwise()

    def print_tail(self, printer: Printer) -> None:
        print_attributes_and_types(printer, self, self.result_types)


class BinaryOp(PointwiseOp):
    """A pointwise op of two operands of one type: `%r = fusion.OP %lhs, %rhs : T`."""

    lhs = operand_def()
    """The left operand."""
    rhs = operand_def()
    """The right operand, of the same type."""
    result = result_def()
    """The result, of the operands' type."""

    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            result_type = lhs.type
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    @classmethod
    def operand_names(cls) -> tuple[str, ...]:
        return ("lhs", "rhs")

    @classmethod
    def parse(cls, parser: Parser):
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attributes, value_type = parse_attributes_and_type(parser)
        op = cls(
            parser.resolve_operand(lhs, value_type),
            parser.resolve_operand(rhs, value_type),
            value_type,
        )
        return with_attributes(op, attributes)


class UnaryOp(PointwiseOp):
    """A pointwise op of one operand: `%r = fusion.OP %input : T`."""

    input = operand_def()
    """The operand."""
    result = result_def()
    """The result, of the operand's type."""

    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(self, input: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            result_type = input.type
        super().__init__(operands=[input], result_types=[result_type])

    @classmethod
    def parse(cls, parser: Parser):
        source = parser.parse_unresolved_operand()
        attributes, value_type = parse_attributes_and_type(parser)
        op = cls(parser.resolve_operand(source, value_type), value_type)
        return with_attributes(op, attributes)


@irdl_op_definition
class AddOp(BinaryOp):
    """Elementwise lhs + rhs."""

    name = "fusion.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """Elementwise lhs - rhs."""

    name = "fusion.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """Elementwise lhs * rhs."""

    name = "fusion.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Elementwise lhs / rhs."""

    name = "fusion.div"


@irdl_op_definition
class NegOp(UnaryOp):
    """Elementwise -x."""

    name = "fusion.neg"


@irdl_op_definition
class ExpOp(UnaryOp):
    """Elementwise e**x."""

    name = "fusion.exp"


@irdl_op_definition
class TanhOp(UnaryOp):
    """Elementwise tanh(x)."""

    name = "fusion.tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """Elementwise 1 / (1 + exp(-x))."""

    name = "fusion.sigmoid"


@irdl_op_definition
class SiluOp(UnaryOp):
    """Elementwise x * sigmoid(x)."""

    name = "fusion.silu"


@irdl_op_definition
class ReluOp(UnaryOp):
    """Elementwise max(x, 0)."""

    name = "fusion.relu"


@irdl_op_definition
class GeluOp(PointwiseOp):
    """Elementwise GELU, exact (approximate "none") or with the tanh approximation."""

    name = "fusion.gelu"

    input = operand_def()
    """The operand."""
    result = result_def()
    """The result, of the operand's type."""
    approximate = prop_def(StringAttr)
    """"tanh" or "none", as in torch.nn.functional.gelu."""

    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(
        self, input: SSAValue, approximate: str = "tanh", result_type: Attribute | None = None
    ):
        if result_type is None:
            result_type = input.type
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"approximate": StringAttr(approximate)},
        )

    def verify_(self) -> None:
        if self.approximate.data not in GELU_APPROXIMATIONS:
            raise VerifyException(
                f'{self.name}: property \'approximate\': expected "tanh" or "none", '
                f"found {self.approximate.data!r}"
            )
        self._verify_pointwise()

    @classmethod
    def parse(cls, parser: Parser) -> GeluOp:
        source = parser.parse_unresolved_operand()
        parser.parse_keyword("approximate")
        approximate = parser.parse_keyword_in(GELU_APPROXIMATIONS, " as gelu's approximation")
        attributes, value_type = parse_attributes_and_type(parser)
        op = cls(parser.resolve_operand(source, value_type), approximate, value_type)
        return with_attributes(op, attributes)

    def syntax_words(self) -> str:
        return f" approximate {self.approximate.data}"


@irdl_op_definition
class CastOp(IRDLOperation):
    """Converts the element type (round to nearest even), keeping the shape."""

    name = "fusion.cast"

    input = operand_def()
    """The tensor to convert."""
    result = result_def()
    """The converted tensor, of the same shape."""

    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"
    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        source = checked_tensor(self, "operand 'input'", self.input.type)
        result = checked_tensor(self, "result", self.result.type)
        if static_shape(source) != static_shape(result):
            raise VerifyException(
                f"{self.name}: result: expected shape {format_shape(static_shape(source))} (that "
                f"of 'input'), found {format_shape(static_shape(result))}"
            )


BINARY_OPS: dict[str, type[BinaryOp]] = {
    "add": AddOp,
    "sub": SubOp,
    "mul": MulOp,
    "div": DivOp,
}
"""The binary pointwise ops by short name."""

UNARY_OPS: dict[str, type[UnaryOp]] = {
    "neg": NegOp,
    "exp": ExpOp,
    "tanh": TanhOp,
    "sigmoid": SigmoidOp,
    "silu": SiluOp,
    "relu": ReluOp,
}
"""The unary pointwise ops without properties by short name (gelu and cast have their own)."""
