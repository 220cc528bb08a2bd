"""The 64-bit address sums: `arith` on i64 (zero extensions of index values, widening
products) to `mul.wide.u32`, `mad.wide.u32` and `add.u64`.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IntegerAttr,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import ptx
from mmcomp.lowering.arith_to_ptx.registers import (
    MAD,
    feeds_mad,
    fused_multiply,
    is_signed_count,
    register_of,
)


def widened_index(value: SSAValue) -> SSAValue | None:
    """The u32 register that an i64 `value` zero-extends: `value` is an `arith.extui` of
    an i32 `arith.index_cast` of an index value (held in a register); None otherwise."""
    extend = value.owner
    if not isinstance(extend, arith.ExtUIOp) or extend.result.type != i64:
        return None
    narrow = extend.input.owner
    if not isinstance(narrow, arith.IndexCastOp) or narrow.result.type != i32:
        return None
    return register_of(narrow.input)


def is_widening_multiply(op: Operation) -> bool:
    """`op` is an i64 `arith.muli` of a zero-extended index value (its left operand): a
    `mul.wide.u32`, or with the marked addi that reads it a `mad.wide.u32`."""
    return (
        isinstance(op, arith.MuliOp) and op.result.type == i64 and widened_index(op.lhs) is not None
    )


def erase_widening(value: SSAValue, rewriter: PatternRewriter) -> None:
    """Erase the zero extension (and its index_cast) that `value` was, once unread."""
    extend = value.owner
    if not isinstance(extend, arith.ExtUIOp) or extend.result.uses:
        return
    narrow = extend.input.owner
    rewriter.erase(extend)
    if isinstance(narrow, arith.IndexCastOp) and not narrow.result.uses:
        rewriter.erase(narrow)


def narrow_factor(op: arith.MuliOp) -> SSAValue:
    """The u32 register of a widening multiply's right operand: a constant below 2^32
    (lowered to a u32 `mov`) or another zero-extended index value."""
    widened = widened_index(op.rhs)
    if widened is not None:
        return widened
    held = register_of(op.rhs)
    if held.type != ptx.U32:
        raise DiagnosticException(
            "convert-arith-to-ptx: the right operand of an i64 arith.muli of a zero-extended "
            f"index value is held in a {held.type}, expected a !ptx.reg<u32> (an i64 "
            "constant below 2^32 or a zero-extended index value): mul.wide multiplies two "
            "32-bit values"
        )
    return held


def reads_narrow(value: SSAValue) -> bool:
    """Every read of the i64 `value` is as the right operand of a widening multiply."""
    return bool(value.uses) and all(
        use.index == 1 and is_widening_multiply(use.operation) for use in value.uses
    )


class WideConstantToPtx(RewritePattern):
    """An i64 constant becomes a `mov` of its immediate: a u32 one where only widening
    multiplies read it (their 32-bit factor; it must be below 2^32), else a u64 one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        """Rewrite an i64 `arith.constant`."""
        if not isinstance(op.value, IntegerAttr) or op.result.type != i64:
            return
        value = op.value.value.data
        if not reads_narrow(op.result):
            rewriter.replace(op, ptx.ConstOp(value & 0xFFFFFFFFFFFFFFFF, ptx.U64))
            return
        if not 0 <= value < 1 << 32:
            raise DiagnosticException(
                f"convert-arith-to-ptx: the i64 constant {value} is the factor of a widening "
                "multiply (mul.wide.u32), expected a value in [0, 2^32)"
            )
        rewriter.replace(op, ptx.ConstOp(value, ptx.U32))


class WideningToPtx(RewritePattern):
    """A zero extension of an index value to i64 (`arith.index_cast` to i32, then
    `arith.extui`) lowers inside the widening multiply that reads it: any other read is an
    error."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Check that a widening is read by widening multiplies only."""
        del rewriter
        if isinstance(op, arith.IndexCastOp) and op.result.type == i32:
            readers = [use.operation for use in op.result.uses]
            if all(isinstance(reader, arith.ExtUIOp) for reader in readers):
                return
            if is_signed_count(op.result):
                return  # a signed count (SignedCountToPtx)
            raise DiagnosticException(
                "convert-arith-to-ptx: an arith.index_cast of an index value to i32 lowers "
                "only as the narrow side of an arith.extui to i64 (a widening multiply's "
                "operand) or as a signed count that signed comparisons read"
            )
        if not isinstance(op, arith.ExtUIOp):
            return
        if op.result.type != i64 or widened_index(op.result) is None:
            raise DiagnosticException(
                f"convert-arith-to-ptx: arith.extui from {op.input.type} to {op.result.type}: "
                "only an i32 index_cast of an index value to i64 lowers"
            )
        for use in op.result.uses:
            if is_widening_multiply(use.operation):
                continue
            raise DiagnosticException(
                "convert-arith-to-ptx: an arith.extui of an index value to i64 lowers only "
                "into an i64 arith.muli that reads it (mul.wide.u32 or mad.wide.u32); it is "
                f"read by {use.operation.name}"
            )


class WideMultiplyToPtx(RewritePattern):
    """An i64 `arith.muli` of a zero-extended index value and a 32-bit factor becomes one
    `mul.wide.u32` (but one that a marked addi reads: `WideMulAddToPtx`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.MuliOp, rewriter: PatternRewriter) -> None:
        """Rewrite a widening multiply."""
        if not is_widening_multiply(op) or feeds_mad(op):
            return
        lhs = widened_index(op.lhs)
        assert lhs is not None
        rhs = narrow_factor(op)
        rewriter.replace(op, ptx.MulWideOp(lhs, rhs))
        erase_widening(op.lhs, rewriter)
        erase_widening(op.rhs, rewriter)


class WideMulAddToPtx(RewritePattern):
    """An i64 `arith.addi` marked `ptx.mad` of a widening multiply and a 64-bit addend
    becomes one `mad.wide.u32`, where the addi is."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        """Rewrite a marked i64 addi with its widening multiplication."""
        if op.result.type != i64 or MAD not in op.attributes:
            return
        product = fused_multiply(op)
        if product is None or not is_widening_multiply(product):
            raise DiagnosticException(
                f"convert-arith-to-ptx: an i64 arith.addi marked {MAD} must add to an i64 "
                "arith.muli of a zero-extended index value (mad.wide.u32)"
            )
        a = widened_index(product.lhs)
        assert a is not None
        b = narrow_factor(product)
        addend = wide_register(op.rhs, "addend")
        rewriter.replace(op, ptx.MadWideOp(a, b, addend))
        rewriter.erase(product)
        erase_widening(product.lhs, rewriter)
        erase_widening(product.rhs, rewriter)


def wide_register(value: SSAValue, name: str) -> SSAValue:
    """The u64 register holding the i64 `value` (`name` says which operand it is)."""
    held = register_of(value)
    if held.type != ptx.U64:
        raise DiagnosticException(
            f"convert-arith-to-ptx: the {name} of an i64 address sum is held in a "
            f"{held.type}, expected a !ptx.reg<u64>"
        )
    return held


class WideAddToPtx(RewritePattern):
    """An i64 `arith.addi` of two 64-bit values becomes `add.u64`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        """Rewrite an unmarked 64-bit add."""
        if op.result.type != i64 or MAD in op.attributes:
            return
        lhs = wide_register(op.lhs, "left operand")
        rhs = wide_register(op.rhs, "right operand")
        rewriter.replace(op, ptx.AddOp(lhs, rhs))


WIDE_PATTERNS: tuple[RewritePattern, ...] = (
    WideConstantToPtx(),
    WideningToPtx(),
    WideMultiplyToPtx(),
    WideMulAddToPtx(),
    WideAddToPtx(),
)
"""The patterns of the 64-bit address sums (tried before the 32-bit index patterns)."""
