"""Index arithmetic of the schedule -> 32-bit integer ptx instructions, as rewrite patterns.

What runs on the GPU is exactly the schedule's arithmetic (persistent loop, split-K slice,
batch, grouped raster). `lower_index_arithmetic` rewrites, in a copy of the kernel, each
`arith` op on `index`, `gpu.block_id` and `gpu.grid_dim` into the ptx instruction(s) of
the same meaning on 32-bit registers, one pattern per op, applied by xDSL's pattern
rewriter. The roles then place those instructions where they need them (`place`): the
producer the backward slice of its loads, the consumers all of them, each K block its own
copy. An op no pattern matches (a constant that is not an integer, a comparison without
an unsigned form) is left in place and refused when a role reaches it; the ops of an
epilogue body are the epilogue's (`mmcomp.lowering.hopper.pointwise`).
"""

from __future__ import annotations

from xdsl.dialects import arith, gpu, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from mmcomp.dialects import ptx, sched
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.context import KernelContext

BINARY: dict[type[Operation], type[ptx.BinaryOp]] = {
    arith.AddiOp: ptx.AddOp,
    arith.SubiOp: ptx.SubOp,
    arith.MuliOp: ptx.MulOp,
    arith.DivUIOp: ptx.DivOp,
    arith.RemUIOp: ptx.RemOp,
    arith.MinUIOp: ptx.MinOp,
    arith.MaxUIOp: ptx.MaxOp,
}
"""The ptx instruction of each binary index op."""
COMPARISONS = {0: "eq", 1: "ne", 6: "lo", 7: "ls", 8: "hi", 9: "hs", 2: "lo", 3: "ls"}
"""The unsigned setp comparison of each arith.cmpi predicate (index values are unsigned)."""
SPECIAL_REGISTERS: dict[type[Operation], str] = {
    gpu.BlockIdOp: "ctaid.x",
    gpu.GridDimOp: "nctaid.x",
}
"""The special register of each grid query (the kernels' grids are one-dimensional)."""


def _in_epilogue(op: Operation) -> bool:
    """The op belongs to an epilogue's body (lowered by the epilogue, not here)."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, sched.EpilogueOp):
            return True
        parent = parent.parent_op()
    return False


class InductionVariableToRegister(RewritePattern):
    """The induction variable of an `scf.for` becomes a 32-bit register value."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        """Retype the loop's induction variable."""
        iv = op.body.block.args[0]
        if not isinstance(iv.type, IndexType):
            return
        rewriter.replace_value_with_new_type(iv, ptx.U32)


class ConstantToPtx(RewritePattern):
    """An integer index constant becomes a `mov` of its 32-bit immediate."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        """Rewrite an integer `arith.constant` of index type."""
        if not isinstance(op.value, IntegerAttr) or _in_epilogue(op):
            return
        rewriter.replace(op, ptx.ConstOp(op.value.value.data & 0xFFFFFFFF, ptx.U32))


class GridQueryToPtx(RewritePattern):
    """`gpu.block_id` / `gpu.grid_dim` become reads of %ctaid.x / %nctaid.x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Rewrite a grid query."""
        sreg = SPECIAL_REGISTERS.get(type(op))
        if sreg is None or _in_epilogue(op):
            return
        rewriter.replace(op, ptx.SregOp(sreg, ptx.U32))


class BinaryToPtx(RewritePattern):
    """A binary index op becomes the ptx instruction of the same name (32-bit, unsigned)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Rewrite `arith.addi`, `subi`, `muli`, `divui`, `remui`, `minui`, `maxui`."""
        kind = BINARY.get(type(op))
        if kind is None or _in_epilogue(op):
            return
        rewriter.replace(op, kind(op.operands[0], op.operands[1]))


class CompareToPtx(RewritePattern):
    """`arith.cmpi` becomes a `setp` and a `selp` of 1 or 0 (an index holding the truth)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter) -> None:
        """Rewrite an unsigned or equality comparison."""
        cmp = COMPARISONS.get(op.predicate.value.data)
        if cmp is None or _in_epilogue(op):
            return
        pred = ptx.SetpOp(cmp, op.lhs, op.rhs)
        one = ptx.ConstOp(1, ptx.U32)
        zero = ptx.ConstOp(0, ptx.U32)
        select = ptx.SelpOp(one.result, zero.result, pred.result)
        rewriter.replace(op, [pred, one, zero, select], [select.result])


class SelectToPtx(RewritePattern):
    """`arith.select` on an index condition becomes `setp.ne` against 0 and a `selp`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter) -> None:
        """Rewrite a select of index values."""
        if _in_epilogue(op):
            return
        zero = ptx.ConstOp(0, ptx.U32)
        cond = ptx.SetpOp("ne", op.cond, zero.result)
        select = ptx.SelpOp(op.lhs, op.rhs, cond.result)
        rewriter.replace(op, [zero, cond, select], [select.result])


PATTERNS: tuple[RewritePattern, ...] = (
    InductionVariableToRegister(),
    ConstantToPtx(),
    GridQueryToPtx(),
    BinaryToPtx(),
    CompareToPtx(),
    SelectToPtx(),
)
"""The patterns of the index arithmetic."""


def lower_index_arithmetic(func: FuncOp) -> None:
    """Rewrite the index arithmetic of `func` into ptx instructions, in place."""
    walker = PatternRewriteWalker(
        GreedyRewritePatternApplier(list(PATTERNS), dce_enabled=False), apply_recursively=False
    )
    walker.rewrite_region(func.body)


def place(ctx: KernelContext, op: Operation) -> bool:
    """Emit a copy of a rewritten index instruction on the registers of its operands;
    False if `op` is not index arithmetic (an index op no pattern matched is an error)."""
    if isinstance(op, arith.ConstantOp):
        raise ScheduleError(f"{ctx.where}: unsupported constant {op.value}")
    if isinstance(op, arith.CmpiOp):
        predicate = op.predicate.value.data
        raise ScheduleError(f"{ctx.where}: unsupported arith.cmpi predicate {predicate}")
    if not isinstance(op, ptx.PtxInstruction):
        return False
    mapping = {operand: ctx.reg(operand) for operand in op.operands}
    copy = op.clone(value_mapper=mapping, clone_name_hints=False)
    ctx.k.append(copy)
    for old, new in zip(op.results, copy.results, strict=True):
        ctx.regs[old] = new
    return True
