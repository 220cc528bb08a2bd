"""The grouped contraction of the `fusion` dialect: `fusion.grouped_linear`.

A mixture-of-experts layer multiplies each token's row by its expert's weight. The tokens
are grouped by expert; the group sizes are an i32 input whose values are read where the
kernel runs (on the device), never when it is compiled. Two layouts:

- contiguous (`offsets`): x [T, K], rows sorted by group; offsets [G] the cumulative ends
  of the groups, as torch._grouped_mm's `offs` (group g is rows offsets[g-1] ..
  offsets[g], with offsets[-1] = 0); the result is [T, N];
- masked (`counts`): x [G, Mmax, K], counts [G] the rows of each group; the result is
  [G, Mmax, N].

Each row of group g is multiplied by w[g]^T (w is [G, N, K]), plus bias[g] (bias [G, N])
where given. Rows past the last group (offsets) or past their group's count (counts) are
no row of any group: they are neither computed nor written (docs/grouped.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion.attrs import (
    format_extent,
    group_size_dtype_name,
    is_dynamic,
    tensor_type,
)
from mmcomp.dialects.fusion.ops import (
    DefinedBeforeUse,
    checked_factors,
    checked_tensor,
    format_shape,
    is_fp8,
    parse_operand_list,
    resolve_functional,
    static_shape,
)
from mmcomp.dialects.syntax import print_operands, with_attributes
from mmcomp.ir.narrowing import is_tensor

GROUP_SIZE_KEYWORDS = ("offsets", "counts")
"""The keyword naming the group-size operand of each layout: contiguous, masked."""


@irdl_op_definition
class GroupedLinearOp(IRDLOperation):
    """Each row of group g times w[g]^T (+ bias[g]) -> f32; the groups from i32 sizes.

    Contiguous: x [T, K] and `offsets` [G] (cumulative group ends) give [T, N]. Masked:
    x [G, Mmax, K] and `counts` [G] give [G, Mmax, N]. w is [G, N, K], bias [G, N].
    """

    name = "fusion.grouped_linear"

    x = operand_def()
    """The rows, [T, K] sorted by group (offsets) or [G, Mmax, K] (counts)."""
    w = operand_def()
    """The weights, [G, N, K]: group g's rows are multiplied by w[g]^T."""
    bias = opt_operand_def()
    """The optional per-group bias, [G, N]."""
    group_sizes = operand_def()
    """i32 [G]: the cumulative group ends (x of rank 2) or each group's row count (rank 3)."""
    result = result_def()
    """The f32 result, [T, N] or [G, Mmax, N]; rows of no group are not written."""

    traits = traits_def(Pure(), DefinedBeforeUse())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    FACTORS: ClassVar[tuple[str, str]] = ("x", "w")

    def __init__(
        self,
        x: SSAValue,
        w: SSAValue,
        bias: SSAValue | None,
        group_sizes: SSAValue,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[x, w, [bias] if bias is not None else [], group_sizes],
            result_types=[result_type],
        )

    @property
    def masked(self) -> bool:
        """Whether the layout is masked (x [G, Mmax, K] with counts), not contiguous."""
        x_type = self.x.type
        return is_tensor(x_type) and len(x_type.get_shape()) == 3

    @property
    def group_size_keyword(self) -> str:
        """`offsets` (contiguous) or `counts` (masked), as the syntax writes the operand."""
        return GROUP_SIZE_KEYWORDS[1 if self.masked else 0]

    def verify_(self) -> None:
        x, w = checked_factors(self, ("x", self.x), ("w", self.w))
        if is_fp8(x.element_type):
            raise VerifyException(
                f"{self.name}: operand 'x': fp8 grouped contractions (and their scales) are "
                f"not built; expected bf16, f16 or f32, found {x.element_type}"
            )
        x_shape, w_shape = static_shape(x), static_shape(w)
        if len(x_shape) not in (2, 3):
            raise VerifyException(
                f"{self.name}: operand 'x': expected rank 2 ([T, K], with offsets) or 3 "
                f"([G, Mmax, K], with counts), found rank {len(x_shape)} "
                f"({format_shape(x_shape)})"
            )
        if len(w_shape) != 3:
            raise VerifyException(
                f"{self.name}: operand 'w': expected rank 3 ([G, N, K]), found rank "
                f"{len(w_shape)} ({format_shape(w_shape)})"
            )
        groups, n, k = w_shape
        if any(is_dynamic(extent) for extent in w_shape):
            raise VerifyException(
                f"{self.name}: operand 'w': expected a static shape [G, N, K], found "
                f"{format_shape(w_shape)}"
            )
        if x_shape[-1] != k:
            raise VerifyException(
                f"{self.name}: operand 'w': K extent (axis 2): expected "
                f"{format_extent(x_shape[-1])} (the last axis of 'x'), found {k}"
            )
        if self.masked and x_shape[0] != groups:
            raise VerifyException(
                f"{self.name}: operand 'x': G extent (axis 0): expected {groups} (the first "
                f"axis of 'w'), found {format_extent(x_shape[0])}"
            )
        self._verify_group_sizes(groups)
        if self.bias is not None:
            bias = checked_tensor(self, "operand 'bias'", self.bias.type)
            if static_shape(bias) != (groups, n):
                raise VerifyException(
                    f"{self.name}: operand 'bias': expected shape [{groups}, {n}] (G, N: the "
                    f"first two axes of 'w'), found {format_shape(static_shape(bias))}"
                )
        expected = tensor_type((*x_shape[:-1], n), "f32")
        if self.result.type != expected:
            raise VerifyException(
                f"{self.name}: result: expected type {expected}, found {self.result.type}"
            )

    def _verify_group_sizes(self, groups: int) -> None:
        """The group sizes: an i32 tensor [G]."""
        what = f"operand '{self.group_size_keyword}'"
        found = self.group_sizes.type
        if not is_tensor(found) or group_size_dtype_name(found.element_type) is None:
            raise VerifyException(
                f"{self.name}: {what}: expected a tensor of i32 (the group sizes, read on the "
                f"device), found {found}"
            )
        shape = static_shape(found)
        if shape != (groups,):
            raise VerifyException(
                f"{self.name}: {what}: expected shape [{groups}] (G, the first axis of 'w'), "
                f"found {format_shape(shape)}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> GroupedLinearOp:
        operands = parse_operand_list(
            parser, (2, 3), cls.name, "2 or 3 operands (x, w, optional bias)"
        )
        pos = parser.pos
        keyword = parser.parse_optional_keyword("offsets") or parser.parse_optional_keyword(
            "counts"
        )
        if keyword is None:
            parser.raise_error(
                f"{cls.name}: expected `offsets %o` (x [T, K]) or `counts %c` "
                "(x [G, Mmax, K]) after the operands",
                pos,
            )
        operands.append(parser.parse_unresolved_operand())
        values, attributes, result_type = resolve_functional(parser, operands, cls.name)
        bias = values[2] if len(values) == 4 else None
        op = cls(values[0], values[1], bias, values[-1], result_type)
        x_type = values[0].type
        rank = len(x_type.get_shape()) if isinstance(x_type, TensorType) else None
        wanted = {2: "offsets", 3: "counts"}.get(rank) if rank is not None else None
        if wanted is not None and keyword != wanted:
            layout = "x [G, Mmax, K]" if keyword == "counts" else "x [T, K]"
            parser.raise_error(
                f"{cls.name}: `{keyword}` goes with {layout}; x here has rank {rank}: "
                f"write `{wanted}`",
                pos,
            )
        return with_attributes(op, attributes)

    def print(self, printer: Printer) -> None:
        operands: Sequence[SSAValue] = [self.x, self.w]
        if self.bias is not None:
            operands = [*operands, self.bias]
        print_operands(printer, operands)
        printer.print_string(f" {self.group_size_keyword} ")
        printer.print_ssa_value(self.group_sizes)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("operandSegmentSizes",))
        printer.print_string(" : (")
        printer.print_list(self.operand_types, printer.print_attribute)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)


def group_rows(
    sizes: Sequence[int], masked: bool, rows: int
) -> tuple[list[tuple[int, int]], str | None]:
    """The rows [start, end) of each group from the group sizes' values, and what is wrong
    with those values (None where they fit): offsets must not decrease and lie in
    [0, rows] (rows = T); counts must lie in [0, rows] (rows = Mmax). The rows of a masked
    group are those of its own [Mmax, K] slice of x."""
    ranges: list[tuple[int, int]] = []
    start = 0
    for group, size in enumerate(int(value) for value in sizes):
        if masked:
            if not 0 <= size <= rows:
                return ranges, f"counts[{group}] = {size}: expected a count in [0, {rows}] (Mmax)"
            ranges.append((0, size))
            continue
        if not start <= size <= rows:
            bound = f"[{start}, {rows}]: offsets do not decrease and end by T = {rows}"
            return ranges, f"offsets[{group}] = {size}: expected an offset in {bound}"
        ranges.append((start, size))
        start = size
    return ranges, None
