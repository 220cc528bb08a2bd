"""The index arithmetic and the predicates: `arith` on `index` and `i1`, `gpu.block_id`,
`gpu.grid_dim` and `gpu.thread_id` to 32-bit unsigned ptx instructions, one pattern per op.
"""

from __future__ import annotations

from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import (
    IntegerAttr,
)
from xdsl.ir import Operation, OpResult
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import ptx
from mmcomp.lowering.arith_to_ptx.registers import (
    BINARY,
    COMPARISONS,
    MAD,
    SIGNED_COMPARISONS,
    SPECIAL_REGISTERS,
    feeds_mad,
    fused_multiply,
    held_register,
    is_predicate_and,
    is_signed_comparison,
    is_signed_count,
    register_of,
    replace_comparison,
)


class ConstantToPtx(RewritePattern):
    """An integer constant becomes a `mov` of its 32-bit immediate (into an s32 register
    where signed comparisons read it, `is_signed_count`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        """Rewrite an integer `arith.constant`."""
        if not isinstance(op.value, IntegerAttr):
            return
        value = op.value.value.data
        if is_signed_count(op.result):
            rewriter.replace(op, ptx.ConstOp(value, ptx.S32))
            return
        rewriter.replace(op, ptx.ConstOp(value & 0xFFFFFFFF, ptx.U32))


class SignedCountToPtx(RewritePattern):
    """An index value cast to i32 that signed comparisons read (a count that may be
    negative: the columns left of an edge tile) becomes a `mov` of its register into an
    s32 register."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.IndexCastOp, rewriter: PatternRewriter) -> None:
        """Rewrite a signed count."""
        if not is_signed_count(op.result):
            return
        rewriter.replace(op, ptx.MovOp(register_of(op.input), ptx.S32))


class GridQueryToPtx(RewritePattern):
    """`gpu.block_id` / `gpu.grid_dim` become reads of %ctaid.x / %nctaid.x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Rewrite a grid query."""
        sreg = SPECIAL_REGISTERS.get(type(op))
        if sreg is None:
            return
        rewriter.replace(op, ptx.SregOp(sreg, ptx.U32))


class BinaryToPtx(RewritePattern):
    """A binary index op becomes the ptx instruction of the same name (32-bit, unsigned)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Rewrite `arith.addi`, `subi`, `muli`, `divui`, `remui`, `minui`, `maxui`."""
        kind = BINARY.get(type(op))
        if kind is None or feeds_mad(op) or MAD in op.attributes:
            return
        lhs, rhs = (register_of(operand) for operand in op.operands)
        rewriter.replace(op, kind(lhs, rhs))


class MulAddToPtx(RewritePattern):
    """An `arith.addi` marked `ptx.mad` and the `arith.muli` it adds to become one
    `mad.lo` (`a * b + c`), where the addi is."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Rewrite a marked `arith.addi` with its multiplication."""
        product = fused_multiply(op)
        if product is None:
            return
        a, b = register_of(product.lhs), register_of(product.rhs)
        mad = ptx.MadOp(a, b, register_of(op.operands[1]))
        rewriter.replace(op, mad)
        rewriter.erase(product)


class CeilDivToPtx(RewritePattern):
    """`arith.ceildivui` becomes `(a + b - 1) / b`: the kernels' operands (tile counts of
    extents at most hardware.MAX_EXTENT) cannot wrap."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CeilDivUIOp, rewriter: PatternRewriter) -> None:
        """Rewrite an unsigned ceiling division."""
        lhs, rhs = register_of(op.lhs), register_of(op.rhs)
        one = ptx.ConstOp(1, ptx.U32)
        less = ptx.SubOp(rhs, one.result)
        total = ptx.AddOp(lhs, less.result)
        quotient = ptx.DivOp(total.result, rhs)
        rewriter.replace(op, [one, less, total, quotient], [quotient.result])


class CompareToPtx(RewritePattern):
    """`arith.cmpi` becomes a `setp` and a `selp` of 1 or 0 (a u32 holding the truth):
    unsigned on index values, signed on i32 counts (`is_signed_comparison`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter) -> None:
        """Rewrite an unsigned or equality comparison: only the `setp` where every read
        is as a predicate."""
        predicate = op.predicate.value.data
        signed = is_signed_comparison(op)
        cmp = SIGNED_COMPARISONS.get(predicate) if signed else COMPARISONS.get(predicate)
        if cmp is None:
            return
        replace_comparison(op, cmp, rewriter)


class SelectToPtx(RewritePattern):
    """`arith.select` becomes `setp.ne` of its condition against 0 and a `selp`; on a
    predicate register (read as i1 through a cast) the `selp` alone, or, where the false
    value is a fresh register that nothing else reads, a move into it guarded by the
    predicate (`@p mov`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter) -> None:
        """Rewrite a select of index values."""
        held = register_of(op.cond)
        if held.type == ptx.PRED:
            if_true, if_false = register_of(op.lhs), register_of(op.rhs)
            fresh = isinstance(if_false, OpResult) and op.rhs is if_false
            if fresh and if_false.uses.get_length() == 1:
                move = ptx.AssignOp(if_false, if_true)
                guarded = move.set_guard(held)
                move.erase()
                rewriter.replace(op, guarded, [if_false])
                return
            rewriter.replace(op, ptx.SelpOp(if_true, if_false, held))
            return
        zero = ptx.ConstOp(0, ptx.U32)
        cond = ptx.SetpOp("ne", register_of(op.cond), zero.result)
        select = ptx.SelpOp(register_of(op.lhs), register_of(op.rhs), cond.result)
        rewriter.replace(op, [zero, cond, select], [select.result])


class ThreadIdToPtx(RewritePattern):
    """`gpu.thread_id x` becomes a read of %tid.x (the kernels' blocks are one-dimensional:
    another dimension is an error)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: gpu.ThreadIdOp, rewriter: PatternRewriter) -> None:
        """Rewrite a thread-index query."""
        dimension = op.dimension.data
        if dimension != gpu.DimensionEnum.X:
            raise DiagnosticException(
                f"convert-arith-to-ptx: gpu.thread_id {dimension.value}: expected dimension x "
                "(the kernels' thread blocks are one-dimensional)"
            )
        rewriter.replace(op, ptx.SregOp("tid.x", ptx.U32))


class PredicateAndToPtx(RewritePattern):
    """An `arith.andi` of i1 values read as a predicate becomes `and.pred` of its operands'
    predicate registers (comparisons lowered to the `setp` alone, or predicates read as
    i1 through casts)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AndIOp, rewriter: PatternRewriter) -> None:
        """Rewrite a predicate conjunction."""
        if not is_predicate_and(op):
            return
        lhs, rhs = register_of(op.lhs), register_of(op.rhs)
        for name, held in (("left", lhs), ("right", rhs)):
            if held.type != ptx.PRED:
                raise DiagnosticException(
                    f"convert-arith-to-ptx: the {name} operand of an arith.andi read as a "
                    f"predicate is held in a {held.type}, expected a !ptx.reg<pred> (a "
                    "comparison that only predicates read, or a predicate cast to i1)"
                )
        rewriter.replace(op, ptx.AndOp(lhs, rhs))


class GuardOnRegister(RewritePattern):
    """A guard that is a predicate register read as i1 through a cast becomes the
    register."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Guard a ptx instruction by the register behind its i1 guard."""
        if not isinstance(op, ptx.PtxInstruction) or op.guard is None:
            return
        if op.guard.type == ptx.PRED:
            return
        held = held_register(op.guard)
        if held is None or held.type != ptx.PRED:
            return
        op.operands = [*op.operands[:-1], held]
        rewriter.handle_operation_modification(op)


INDEX_PATTERNS: tuple[RewritePattern, ...] = (
    ThreadIdToPtx(),
    GuardOnRegister(),
    PredicateAndToPtx(),
    ConstantToPtx(),
    SignedCountToPtx(),
    GridQueryToPtx(),
    MulAddToPtx(),
    BinaryToPtx(),
    CeilDivToPtx(),
    CompareToPtx(),
    SelectToPtx(),
)
"""The patterns of the index arithmetic."""
