"""The ops of the `fusion` dialect: contractions, broadcasts and constants.

Every op checks its operand and result types itself (static tensors of a fusion dtype:
bf16, f16, f32, f8e4m3, f8e5m2); the helpers that do so serve the pointwise ops
(`pointwise.py`) too. Every op with operands
also has `DefinedBeforeUse`: xDSL's parser resolves forward references, so text may use a
value before the op that defines it, and nothing else in xDSL refuses that. The syntax of each op,
with one example, is in docs/fusion-dialect.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I1,
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion.attrs import (
    AxisRolesAttr,
    dtype_name,
    float_literal,
    format_extent,
    is_dynamic,
    is_finite_in,
    largest_finite,
    parse_role_list,
    print_role_list,
    tensor_type,
)
from mmcomp.dialects.fusion.scales import MODE_NAMES, ScaleAxes, scales_problem
from mmcomp.dialects.syntax import (
    OperandListSyntaxOp,
    parse_attributes_and_conversion,
    parse_attributes_and_type,
    print_attributes_and_types,
    print_operands,
    with_attributes,
)
from mmcomp.ir.diagnostics import location
from mmcomp.ir.dtypes import FP8_DTYPES, FUSION_DTYPE_NAMES
from mmcomp.ir.narrowing import is_tensor


def format_shape(shape: Sequence[int]) -> str:
    """A shape as the diagnostics write it: `[4, 8]`."""
    return "[" + ", ".join(format_extent(extent) for extent in shape) + "]"


# Traits


def _operand_label(index: int, operand: SSAValue) -> str:
    """`operand 1`, with the SSA name where the text gave one: `operand 1 (%y)`."""
    if operand.name_hint is None:
        return f"operand {index}"
    return f"operand {index} (%{operand.name_hint})"


class DefinedBeforeUse(OpTrait):
    """Operands defined in the op's block are defined before it (xDSL parses forward uses)."""

    def verify(self, op: Operation) -> None:
        for index, operand in enumerate(op.operands):
            owner = operand.owner
            if owner is op:
                raise VerifyException(
                    f"{op.name}: {_operand_label(index, operand)} is the op's own result"
                )
            if not isinstance(owner, Operation) or not op.is_before_in_block(owner):
                continue
            where = location(owner)
            definer = f"the {owner.name}" + (f" at {where}" if where is not None else "")
            raise VerifyException(
                f"{op.name}: {_operand_label(index, operand)} is used before it is defined "
                f"(by {definer}, later in the block)"
            )


# Attributes


def checked_tensor(op: IRDLOperation, what: str, value_type: Attribute) -> TensorType:
    """`value_type` as a static tensor of a fusion dtype, or a VerifyException naming it."""
    if not is_tensor(value_type):
        raise VerifyException(
            f"{op.name}: {what}: expected a ranked tensor of {FUSION_DTYPE_NAMES}, "
            f"found {value_type}"
        )
    if dtype_name(value_type.element_type) is None:
        raise VerifyException(
            f"{op.name}: {what}: unsupported element type: expected {FUSION_DTYPE_NAMES}, "
            f"found {value_type.element_type}"
        )
    if any(extent < 1 and not is_dynamic(extent) for extent in value_type.get_shape()):
        raise VerifyException(
            f"{op.name}: {what}: expected positive (or dynamic, ?) extents, found {value_type}"
        )
    return value_type


def static_shape(value_type: TensorType) -> tuple[int, ...]:
    """The shape of a tensor type as a tuple."""
    return tuple(value_type.get_shape())


def broadcast_shapes(
    lhs: Sequence[int], rhs: Sequence[int], *, align_right: bool = True
) -> tuple[int, ...] | None:
    """The numpy broadcast of two shapes, or None when some extents differ and neither is 1
    (a dynamic extent `?` broadcasts with 1 and with itself)."""
    rank = max(len(lhs), len(rhs))
    lhs = (1,) * (rank - len(lhs)) + tuple(lhs) if align_right else tuple(lhs)
    rhs = (1,) * (rank - len(rhs)) + tuple(rhs) if align_right else tuple(rhs)
    result: list[int] = []
    for left, right in zip(lhs, rhs, strict=True):
        if left != right and 1 not in (left, right):
            return None
        result.append(right if left == 1 else left)
    return tuple(result)


def _shape_of(value: SSAValue) -> tuple[int, ...]:
    """The shape of a tensor value (the verifier has checked its type)."""
    value_type = value.type
    return static_shape(value_type) if is_tensor(value_type) else ()


def _expect_result(op: IRDLOperation, expected: TensorType, found: Attribute) -> None:
    if expected != found:
        raise VerifyException(f"{op.name}: result: expected type {expected}, found {found}")


FP8_ELEMENT_TYPES: tuple[Attribute, ...] = tuple(dtype.element_type for dtype in FP8_DTYPES)
"""The fp8 element types (f8E4M3FN, f8E5M2), which a contraction may mix."""


def is_fp8(element_type: Attribute) -> bool:
    """Whether `element_type` is one of the fp8 types."""
    return element_type in FP8_ELEMENT_TYPES


def checked_factors(
    op: IRDLOperation, first: tuple[str, SSAValue], second: tuple[str, SSAValue]
) -> tuple[TensorType, TensorType]:
    """The (name, value) factors of a contraction as checked tensors of one element type
    (or of two fp8 types: e4m3 x e5m2 is allowed)."""
    (first_name, first_value), (second_name, second_value) = first, second
    first_type = checked_tensor(op, f"operand '{first_name}'", first_value.type)
    second_type = checked_tensor(op, f"operand '{second_name}'", second_value.type)
    first_element, second_element = first_type.element_type, second_type.element_type
    if first_element != second_element and not (is_fp8(first_element) and is_fp8(second_element)):
        raise VerifyException(
            f"{op.name}: operand '{second_name}': expected element type "
            f"{first_element} (that of '{first_name}'), "
            f"found {second_element}"
        )
    return first_type, second_type


# Custom syntax helpers


_EXPONENT = re.compile(r"[eE][+-]?[0-9]+")
"""An exponent written right after an integer literal, which xDSL lexes apart: `e-50`."""


def _source(parser: Parser, start: int, end: int) -> str:
    """The source text from `start` to `end` (clipped to the input)."""
    content = parser.lexer.input.content[start:end]
    if isinstance(content, bytes):
        return content.decode("utf-8", errors="replace")
    return content


def parse_operand_list(
    parser: Parser, counts: Sequence[int], op_name: str, what: str
) -> list[UnresolvedOperand]:
    """Parse `%x, %y, ...`, raising a located error unless their number is in `counts`."""
    pos = parser.pos
    operands = parser.parse_comma_separated_list(
        parser.Delimiter.NONE, parser.parse_unresolved_operand
    )
    if len(operands) not in counts:
        parser.raise_error(
            f"{op_name}: expected {what}, found {len(operands)} operands", pos, parser.pos
        )
    return operands


def resolve_functional(
    parser: Parser, operands: Sequence[UnresolvedOperand], op_name: str
) -> tuple[Sequence[SSAValue], dict[str, Attribute], Attribute]:
    """Parse `attr-dict : (T, ...) -> T` and resolve `operands` against it."""
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    pos = parser.pos
    input_types = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    if len(input_types) != len(operands):
        parser.raise_error(
            f"{op_name}: expected {len(operands)} operand types, found {len(input_types)}",
            pos,
            parser.pos,
        )
    parser.parse_punctuation("->")
    result_type = parser.parse_type()
    values = [
        parser.resolve_operand(operand, operand_type)
        for operand, operand_type in zip(operands, input_types, strict=True)
    ]
    return values, attributes, result_type


def _print_functional(printer: Printer, op: IRDLOperation, reserved: Sequence[str] = ()) -> None:
    printer.print_op_attributes(op.attributes, reserved_attr_names=reserved)
    printer.print_string(" : (")
    printer.print_list(op.operand_types, printer.print_attribute)
    printer.print_string(") -> ")
    printer.print_attribute(op.result_types[0])


def parse_operands_with_roles(
    parser: Parser, count: int
) -> tuple[list[UnresolvedOperand], list[list[str]]]:
    """Parse `%x [r0, r1, ...], %y [...], ...`: `count` operands and their axes' roles."""
    operands: list[UnresolvedOperand] = []
    roles: list[list[str]] = []
    for index in range(count):
        if index:
            parser.parse_punctuation(",")
        operands.append(parser.parse_unresolved_operand())
        roles.append(parse_role_list(parser))
    return operands, roles


def print_operands_with_roles(
    printer: Printer, operands: Sequence[tuple[SSAValue, AxisRolesAttr]]
) -> None:
    """Print ` %x [r0, r1, ...], %y [...], ...`."""
    for index, (value, roles) in enumerate(operands):
        printer.print_string(", " if index else " ")
        printer.print_ssa_value(value)
        printer.print_string(" ")
        print_role_list(printer, roles.roles)


class FunctionalSyntaxOp(OperandListSyntaxOp):
    """Base of the contractions printed ` %a, %b WORDS {attrs} : (A, B) -> C`."""

    def print_tail(self, printer: Printer) -> None:
        _print_functional(printer, self)


def parse_optional_scales(parser: Parser, op_name: str) -> list[UnresolvedOperand]:
    """Parse an optional `scales %sa, %sb`: the two scale operands, or none."""
    if parser.parse_optional_keyword("scales") is None:
        return []
    return parse_operand_list(parser, (2,), op_name, "2 scales (scale_a, scale_b)")


def print_scales(printer: Printer, scales: Sequence[SSAValue]) -> None:
    """Print ` scales %sa, %sb` where there are scales."""
    if not scales:
        return
    printer.print_string(" scales")
    print_operands(printer, scales)


class ScaledContraction(FunctionalSyntaxOp):
    """The scale operands of a contraction: none, or one f32 scale per fp8 factor, whose
    shapes select the mode (`mmcomp.dialects.fusion.scales`)."""

    FACTORS: ClassVar[tuple[str, str]] = ("a", "b")
    """The names of the two factors, as diagnostics write them."""

    scales = var_operand_def()
    """None, or (scale_a, scale_b): f32 scales of the fp8 factors."""

    def factors(self) -> tuple[SSAValue, SSAValue]:
        """The two factors."""
        return (self.operands[0], self.operands[1])

    def scale_axes(self) -> tuple[ScaleAxes, ScaleAxes]:
        """Which axes of each factor are summed, and which a block-wise scale blocks."""
        raise NotImplementedError

    @property
    def scale_a(self) -> SSAValue | None:
        """The left factor's scale, if scaled."""
        return self.scales[0] if self.scales else None

    @property
    def scale_b(self) -> SSAValue | None:
        """The right factor's scale, if scaled."""
        return self.scales[1] if self.scales else None

    @property
    def scaling(self) -> str | None:
        """The scaling mode (tensor, row or block), or None without scales."""
        if not self.scales:
            return None
        return self._scaling()[0]

    def _scaling(self) -> tuple[str | None, str | None]:
        a, b = self.factors()
        a_axes, b_axes = self.scale_axes()
        names = ("scale_a", "scale_b")
        return scales_problem(
            [
                (self.FACTORS[0], _shape_of(a), a_axes),
                (self.FACTORS[1], _shape_of(b), b_axes),
            ],
            [(name, _shape_of(v)) for name, v in zip(names, self.scales, strict=True)],
        )

    def verify_scales(self, a: TensorType, b: TensorType) -> None:
        """The scales: none, or two f32 tensors of one mode's shapes on fp8 factors."""
        if not self.scales:
            return
        if len(self.scales) != 2:
            raise VerifyException(
                f"{self.name}: expected 2 scales (scale_a, scale_b), found {len(self.scales)}"
            )
        for factor, factor_type in zip(self.FACTORS, (a, b), strict=True):
            if not is_fp8(factor_type.element_type):
                element = factor_type.element_type
                raise VerifyException(
                    f"{self.name}: operand '{factor}': scales dequantize fp8 factors "
                    f"(f8E4M3FN, f8E5M2), found {element}; a {element} contraction takes no "
                    "scales"
                )
        for name, scale in zip(("scale_a", "scale_b"), self.scales, strict=True):
            scale_type = checked_tensor(self, f"operand '{name}'", scale.type)
            if dtype_name(scale_type.element_type) != "f32":
                raise VerifyException(
                    f"{self.name}: operand '{name}': expected element type f32, found "
                    f"{scale_type.element_type}"
                )
        mode, problem = self._scaling()
        if problem is not None:
            raise VerifyException(f"{self.name}: operand {problem}")
        assert mode in MODE_NAMES

    def unscaled_operands(self) -> Sequence[SSAValue]:
        """The operands before the scales (the factors, and a linear's bias)."""
        return self.operands[: len(self.operands) - len(self.scales)]

    def print(self, printer: Printer) -> None:
        print_operands(printer, self.unscaled_operands())
        printer.print_string(self.syntax_words())
        print_scales(printer, self.scales)
        self.print_tail(printer)


# Contractions


@irdl_op_definition
class MatmulOp(ScaledContraction):
    """A[..., M, K] x B[..., K, N] -> f32[..., M, N]; batch dims broadcast as numpy does."""

    name = "fusion.matmul"

    a = operand_def()
    """The left operand, [..., M, K]."""
    b = operand_def()
    """The right operand, [..., K, N]."""
    result = result_def()
    """The f32 product, [..., M, N]."""

    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        result_type: Attribute,
        scales: Sequence[SSAValue] = (),
    ):
        super().__init__(operands=[a, b, list(scales)], result_types=[result_type])

    def scale_axes(self) -> tuple[ScaleAxes, ScaleAxes]:
        rank_a, rank_b = len(_shape_of(self.a)), len(_shape_of(self.b))
        return (
            ScaleAxes((rank_a - 1,), (rank_a - 1,)),
            ScaleAxes((rank_b - 2,), (rank_b - 2, rank_b - 1)),
        )

    @staticmethod
    def infer_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
        """The result shape for operand shapes `a` and `b`, or None when they do not fit."""
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            return None
        batch = broadcast_shapes(a[:-2], b[:-2])
        if batch is None:
            return None
        return (*batch, a[-2], b[-1])

    def verify_(self) -> None:
        a, b = checked_factors(self, ("a", self.a), ("b", self.b))
        a_shape, b_shape = static_shape(a), static_shape(b)
        for what, shape in (("a", a_shape), ("b", b_shape)):
            if len(shape) < 2:
                raise VerifyException(
                    f"{self.name}: operand '{what}': expected rank >= 2, "
                    f"found rank {len(shape)} ({format_shape(shape)})"
                )
        if a_shape[-1] != b_shape[-2]:
            raise VerifyException(
                f"{self.name}: operand 'b': K extent (axis {len(b_shape) - 2}): expected "
                f"{format_extent(a_shape[-1])} (the last axis of 'a'), "
                f"found {format_extent(b_shape[-2])}"
            )
        batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
        if batch is None:
            raise VerifyException(
                f"{self.name}: operand 'b': batch dims {format_shape(b_shape[:-2])} "
                f"do not broadcast with those of 'a', {format_shape(a_shape[:-2])}"
            )
        self.verify_scales(a, b)
        expected = tensor_type((*batch, a_shape[-2], b_shape[-1]), "f32")
        _expect_result(self, expected, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> MatmulOp:
        operands = parse_operand_list(parser, (2,), cls.name, "2 operands (a, b)")
        operands += parse_optional_scales(parser, cls.name)
        values, attributes, result_type = resolve_functional(parser, operands, cls.name)
        op = cls(values[0], values[1], result_type, values[2:])
        return with_attributes(op, attributes)


@irdl_op_definition
class LinearOp(ScaledContraction):
    """A[..., M, K] x W[N, K]^T (+ bias[N]) -> f32[..., M, N], as torch.nn.functional.linear."""

    name = "fusion.linear"

    a = operand_def()
    """The activations, [..., M, K]."""
    w = operand_def()
    """The weight, [N, K]."""
    bias = opt_operand_def()
    """The optional bias, [N]."""
    result = result_def()
    """The f32 result, [..., M, N]."""

    traits = traits_def(Pure(), DefinedBeforeUse())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    FACTORS: ClassVar[tuple[str, str]] = ("a", "w")

    def __init__(
        self,
        a: SSAValue,
        w: SSAValue,
        bias: SSAValue | None,
        result_type: Attribute,
        scales: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[a, w, [bias] if bias is not None else [], list(scales)],
            result_types=[result_type],
        )

    def scale_axes(self) -> tuple[ScaleAxes, ScaleAxes]:
        rank_a = len(_shape_of(self.a))
        return (ScaleAxes((rank_a - 1,), (rank_a - 1,)), ScaleAxes((1,), (0, 1)))

    def verify_(self) -> None:
        a, w = checked_factors(self, ("a", self.a), ("w", self.w))
        a_shape, w_shape = static_shape(a), static_shape(w)
        if len(a_shape) < 2:
            raise VerifyException(
                f"{self.name}: operand 'a': expected rank >= 2 ([..., M, K]), "
                f"found rank {len(a_shape)} ({format_shape(a_shape)})"
            )
        if len(w_shape) != 2:
            raise VerifyException(
                f"{self.name}: operand 'w': expected rank 2 ([N, K]), "
                f"found rank {len(w_shape)} ({format_shape(w_shape)})"
            )
        if a_shape[-1] != w_shape[1]:
            raise VerifyException(
                f"{self.name}: operand 'w': K extent (axis 1): expected "
                f"{format_extent(a_shape[-1])} (the last axis of 'a'), "
                f"found {format_extent(w_shape[1])}"
            )
        if self.bias is not None:
            bias = checked_tensor(self, "operand 'bias'", self.bias.type)
            if static_shape(bias) != (w_shape[0],):
                raise VerifyException(
                    f"{self.name}: operand 'bias': expected shape [{format_extent(w_shape[0])}] "
                    f"(N, the first axis of 'w'), found {format_shape(static_shape(bias))}"
                )
        self.verify_scales(a, w)
        expected = tensor_type((*a_shape[:-1], w_shape[0]), "f32")
        _expect_result(self, expected, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> LinearOp:
        operands = parse_operand_list(
            parser, (2, 3), cls.name, "2 or 3 operands (a, w, optional bias)"
        )
        unscaled = len(operands)
        operands += parse_optional_scales(parser, cls.name)
        values, attributes, result_type = resolve_functional(parser, operands, cls.name)
        bias = values[2] if unscaled == 3 else None
        op = cls(values[0], values[1], bias, result_type, values[unscaled:])
        return with_attributes(op, attributes)


@irdl_op_definition
class FusedMultiplySumOp(ScaledContraction):
    """The product of A and B (equal rank, size-1 axes broadcast) summed over `axes`, in f32."""

    name = "fusion.fused_multiply_sum"

    a = operand_def()
    """The first factor."""
    b = operand_def()
    """The second factor, of the same rank as `a`."""
    result = result_def()
    """The f32 sum: the broadcast shape of `a` and `b` without the summed axes."""
    axes = prop_def(DenseArrayBase[I64])
    """The summed axes (i64), each once."""

    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        axes: Sequence[int],
        result_type: Attribute,
        scales: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[a, b, list(scales)],
            result_types=[result_type],
            properties={"axes": DenseArrayBase.from_list(i64, axes)},
        )

    def scale_axes(self) -> tuple[ScaleAxes, ScaleAxes]:
        summed = tuple(sorted(self.summed_axes))
        return (ScaleAxes(summed, None), ScaleAxes(summed, None))

    @property
    def summed_axes(self) -> tuple[int, ...]:
        """The summed axes as ints."""
        return tuple(int(axis) for axis in self.axes.get_values())

    def verify_(self) -> None:
        a, b = checked_factors(self, ("a", self.a), ("b", self.b))
        a_shape, b_shape = static_shape(a), static_shape(b)
        if len(a_shape) != len(b_shape):
            raise VerifyException(
                f"{self.name}: operand 'b': expected rank {len(a_shape)} (that of 'a'), "
                f"found rank {len(b_shape)}"
            )
        axes = self.summed_axes
        if not axes:
            raise VerifyException(f"{self.name}: property 'axes': expected at least one axis")
        if len(set(axes)) != len(axes):
            raise VerifyException(
                f"{self.name}: property 'axes': an axis appears twice in {list(axes)}"
            )
        for axis in axes:
            if not 0 <= axis < len(a_shape):
                raise VerifyException(
                    f"{self.name}: property 'axes': expected axes in [0, {len(a_shape)}), "
                    f"found {axis}"
                )
        product = broadcast_shapes(a_shape, b_shape)
        if product is None:
            raise VerifyException(
                f"{self.name}: operand 'b': shape {format_shape(b_shape)} does not broadcast "
                f"with that of 'a', {format_shape(a_shape)} (extents must match or be 1)"
            )
        self.verify_scales(a, b)
        kept = tuple(extent for axis, extent in enumerate(product) if axis not in axes)
        _expect_result(self, tensor_type(kept, "f32"), self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> FusedMultiplySumOp:
        operands = parse_operand_list(parser, (2,), cls.name, "2 operands (a, b)")
        parser.parse_keyword("axes")
        axes = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
        )
        operands += parse_optional_scales(parser, cls.name)
        values, attributes, result_type = resolve_functional(parser, operands, cls.name)
        op = cls(values[0], values[1], axes, result_type, values[2:])
        return with_attributes(op, attributes)

    def syntax_words(self) -> str:
        return " axes [" + ", ".join(str(axis) for axis in self.summed_axes) + "]"


@irdl_op_definition
class MmaOp(ScaledContraction):
    """The canonical contraction: C[out_roles] = sum over k of A[a_roles] * B[b_roles]."""

    name = "fusion.mma"

    a = operand_def()
    """The first factor; one role per axis in `a_roles`."""
    b = operand_def()
    """The second factor; one role per axis in `b_roles`."""
    result = result_def()
    """The f32 result; one role per axis in `out_roles`."""
    a_roles = prop_def(AxisRolesAttr)
    """The role of each axis of `a`."""
    b_roles = prop_def(AxisRolesAttr)
    """The role of each axis of `b`."""
    out_roles = prop_def(AxisRolesAttr)
    """The role of each axis of the result."""

    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        a_roles: Sequence[str],
        b_roles: Sequence[str],
        out_roles: Sequence[str],
        result_type: Attribute,
        scales: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[a, b, list(scales)],
            result_types=[result_type],
            properties={
                "a_roles": AxisRolesAttr(a_roles),
                "b_roles": AxisRolesAttr(b_roles),
                "out_roles": AxisRolesAttr(out_roles),
            },
        )

    def scale_axes(self) -> tuple[ScaleAxes, ScaleAxes]:
        a_roles, b_roles = self.a_roles.roles, self.b_roles.roles
        a_k = tuple(axis for axis, role in enumerate(a_roles) if role == "k")
        b_k = tuple(axis for axis, role in enumerate(b_roles) if role == "k")
        b_blocked = tuple(axis for axis, role in enumerate(b_roles) if role in ("k", "n"))
        return (ScaleAxes(a_k, a_k), ScaleAxes(b_k, b_blocked))

    def verify_(self) -> None:
        a, b = checked_factors(self, ("a", self.a), ("b", self.b))
        result = checked_tensor(self, "result", self.result.type)
        if dtype_name(result.element_type) != "f32":
            raise VerifyException(
                f"{self.name}: result: expected element type f32, found {result.element_type}"
            )
        extents: dict[str, tuple[int, str]] = {}
        for what, roles_attr, shape in (
            ("a", self.a_roles, static_shape(a)),
            ("b", self.b_roles, static_shape(b)),
            ("out", self.out_roles, static_shape(result)),
        ):
            roles = roles_attr.roles
            if len(roles) != len(shape):
                raise VerifyException(
                    f"{self.name}: {what}_roles: expected {len(shape)} roles (the rank of "
                    f"{format_shape(shape)}), found {len(roles)} ({list(roles)})"
                )
            for axis, (role, extent) in enumerate(zip(roles, shape, strict=True)):
                if role == "_":
                    if extent != 1:
                        raise VerifyException(
                            f"{self.name}: {what}_roles: axis {axis} has role _ (absent), "
                            f"so expected extent 1, found {extent}"
                        )
                    continue
                if role in extents and extents[role][0] != extent:
                    raise VerifyException(
                        f"{self.name}: {what}_roles: axis {axis} (role {role}): expected "
                        f"extent {extents[role][0]} (as in {extents[role][1]}), found {extent}"
                    )
                extents.setdefault(role, (extent, f"{what}_roles"))
        a_roles, b_roles = set(self.a_roles.roles), set(self.b_roles.roles)
        out_roles = set(self.out_roles.roles)
        if "k" not in a_roles or "k" not in b_roles:
            raise VerifyException(
                f"{self.name}: expected role k in both a_roles and b_roles, found "
                f"{list(self.a_roles.roles)} and {list(self.b_roles.roles)}"
            )
        if "k" in out_roles:
            raise VerifyException(
                f"{self.name}: out_roles: expected no k (it is summed), "
                f"found {list(self.out_roles.roles)}"
            )
        for role in out_roles - {"_"}:
            if role not in a_roles | b_roles:
                raise VerifyException(
                    f"{self.name}: out_roles: role {role} appears in neither a_roles "
                    f"{list(self.a_roles.roles)} nor b_roles {list(self.b_roles.roles)}"
                )
        for role in (a_roles | b_roles) - {"_", "k"}:
            if role not in out_roles:
                raise VerifyException(
                    f"{self.name}: out_roles: expected role {role} (of a or b; only k is "
                    f"summed), found {list(self.out_roles.roles)}"
                )
        self.verify_scales(a, b)

    @classmethod
    def parse(cls, parser: Parser) -> MmaOp:
        operands, (a_roles, b_roles) = parse_operands_with_roles(parser, 2)
        parser.parse_punctuation("->")
        out_roles = parse_role_list(parser)
        operands += parse_optional_scales(parser, cls.name)
        values, attributes, result_type = resolve_functional(parser, operands, cls.name)
        op = cls(values[0], values[1], a_roles, b_roles, out_roles, result_type, values[2:])
        return with_attributes(op, attributes)

    def print(self, printer: Printer) -> None:
        print_operands_with_roles(printer, ((self.a, self.a_roles), (self.b, self.b_roles)))
        printer.print_string(" -> ")
        print_role_list(printer, self.out_roles.roles)
        print_scales(printer, self.scales)
        _print_functional(printer, self)


# Shape and constant ops


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """Inserts axes where `new_dims` is true; input size-1 axes may expand to the output's."""

    name = "fusion.broadcast"

    input = operand_def()
    """The tensor to broadcast."""
    result = result_def()
    """The broadcast tensor; its type gives the output shape."""
    new_dims = prop_def(DenseArrayBase[I1])
    """One i1 per output axis: true where the axis is inserted."""

    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(self, input: SSAValue, new_dims: Sequence[bool], result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"new_dims": DenseArrayBase.from_list(i1, [int(d) for d in new_dims])},
        )

    @property
    def inserted(self) -> tuple[bool, ...]:
        """One bool per output axis: True where the axis is inserted."""
        return tuple(bool(flag) for flag in self.new_dims.get_values())

    def verify_(self) -> None:
        source = checked_tensor(self, "operand 'input'", self.input.type)
        result = checked_tensor(self, "result", self.result.type)
        if source.element_type != result.element_type:
            raise VerifyException(
                f"{self.name}: result: expected element type {source.element_type} "
                f"(that of 'input'), found {result.element_type}"
            )
        in_shape, out_shape = static_shape(source), static_shape(result)
        inserted = self.inserted
        if len(inserted) != len(out_shape):
            raise VerifyException(
                f"{self.name}: property 'new_dims': expected {len(out_shape)} entries (the "
                f"result rank), found {len(inserted)}"
            )
        kept = [axis for axis, flag in enumerate(inserted) if not flag]
        if len(kept) != len(in_shape):
            raise VerifyException(
                f"{self.name}: property 'new_dims': expected {len(in_shape)} false entries "
                f"(the rank of 'input'), found {len(kept)}"
            )
        for in_axis, out_axis in enumerate(kept):
            if in_shape[in_axis] not in (1, out_shape[out_axis]):
                raise VerifyException(
                    f"{self.name}: result: axis {out_axis}: expected extent "
                    f"{format_extent(in_shape[in_axis])} (axis {in_axis} of 'input'; only "
                    f"size-1 axes expand), found {format_extent(out_shape[out_axis])}"
                )

    @classmethod
    def parse(cls, parser: Parser) -> BroadcastOp:
        source = parser.parse_unresolved_operand()
        parser.parse_keyword("new_dims")
        new_dims = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_boolean(" in new_dims")
        )
        attributes, source_type, result_type = parse_attributes_and_conversion(parser)
        op = cls(parser.resolve_operand(source, source_type), new_dims, result_type)
        return with_attributes(op, attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.input)
        printer.print_string(" new_dims [")
        printer.print_list(
            self.inserted, lambda flag: printer.print_string("true" if flag else "false")
        )
        printer.print_string("]")
        print_attributes_and_types(printer, self, [self.input.type, self.result.type], " to ")


@irdl_op_definition
class SplatOp(IRDLOperation):
    """A tensor whose every element is `value` (how scalar constants enter a fusion)."""

    name = "fusion.splat"

    result = result_def()
    """The constant tensor."""
    value = prop_def(FloatAttr)
    """The constant, an f64 float, rounded to the result's element type when used."""

    traits = traits_def(Pure())

    def __init__(self, value: float, result_type: Attribute):
        super().__init__(
            result_types=[result_type],
            properties={"value": FloatAttr(float(value), Float64Type())},
        )

    @property
    def scalar(self) -> float:
        """The constant as a Python float."""
        return float(self.value.value.data)

    def verify_(self) -> None:
        result = checked_tensor(self, "result", self.result.type)
        if self.value.type != Float64Type():
            raise VerifyException(
                f"{self.name}: property 'value': expected an f64 float, found {self.value}"
            )
        if not math.isfinite(self.scalar):
            raise VerifyException(
                f"{self.name}: property 'value': expected a finite number, found {self.scalar}"
            )
        dtype = dtype_name(result.element_type)
        assert dtype is not None
        if not is_finite_in(self.scalar, dtype):
            raise VerifyException(
                f"{self.name}: value {self.scalar!r} is not finite in {dtype} "
                f"(largest finite {largest_finite(dtype)})"
            )

    @classmethod
    def parse(cls, parser: Parser) -> SplatOp:
        start = parser.pos
        value = parser.parse_number(context_msg=" as the splat value")
        literal = _source(parser, start, parser.pos).rstrip()
        end = start + len(literal)
        if "0x" in literal:
            parser.raise_error(
                f"{cls.name}: expected a decimal literal as the splat value, found the "
                f"hexadecimal {literal} (MLIR reads hexadecimal float literals as bit "
                "patterns; write the value in decimal)",
                start,
                end,
            )
        exponent = _EXPONENT.match(_source(parser, end, end + 32))
        if isinstance(value, int) and exponent is not None:
            parser.raise_error(
                f"{cls.name}: a float literal with an exponent needs a '.' before it: "
                f"write {literal}.0{exponent.group()}, not {literal}{exponent.group()}",
                start,
                end + exponent.end(),
            )
        try:
            scalar = float(value)
        except OverflowError:
            parser.raise_error(f"{cls.name}: the splat value is not finite in f64", start, end)
        attributes, result_type = parse_attributes_and_type(parser)
        return with_attributes(cls(scalar, result_type), attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {float_literal(self.scalar)}")
        print_attributes_and_types(printer, self, [self.result.type])


DENSE_CONTRACTION_OPS: tuple[type[IRDLOperation], ...] = (
    MatmulOp,
    LinearOp,
    FusedMultiplySumOp,
    MmaOp,
)
"""The contractions of one weight for every row (the grouped one is in grouped.py)."""
