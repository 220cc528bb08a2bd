"""`convert-arith-to-ptx`: lower the index arithmetic of each ptx entry to ptx instructions.

After `lower-schedule-to-hopper` the schedule's index arithmetic (persistent loop, split-K
slice, batch, grouped raster) is still `arith` on `index` values (and `i1` comparisons),
with `gpu.block_id` and `gpu.grid_dim` for the grid, in each role's program order. Each op
becomes the 32-bit unsigned ptx instruction(s) of the same meaning, one pattern per op:
a constant a `mov` of its immediate, a grid query a read of %ctaid.x or %nctaid.x, a binary
op the ptx instruction of its name, `arith.ceildivui` an add and a division (the tile
counts of a runtime extent), `arith.cmpi` a `setp` and a `selp` of 1 or 0, and
`arith.select` a `setp.ne` against 0 and a `selp`.

The lowering's own arithmetic (`mmcomp.lowering.hopper.values`) adds three forms, each the
instructions the lowering wrote by hand: an `arith.cmpi` that only ptx ops read as their
guard (an i1 guard) is the `setp` alone; an `arith.addi` marked `ptx.mad` and the
`arith.muli` it adds to (read by nothing else) are one `mad.lo`; an `arith.select` on a
predicate register is a `selp`, or a `mov` guarded by the predicate into its false value
where that is a fresh register that nothing else reads. The thread's identity adds two:
`gpu.thread_id x` is a read of %tid.x, and an `arith.andi` of i1 values read as a
predicate (a conjunction of the lowering's tests) is `and.pred` of its operands'
predicate registers; a comparison that such a conjunction reads counts as read as a
predicate. Replacing the i1 by the register puts each guard in it (wherever the guard
is: an op in a nested region reads the register as it read the i1); a guard that reads a
predicate register through a cast to i1 reads the register, and a guard that is not in a
predicate register after the pass (a comparison also read as a u32 truth value) is an
error naming the op.

The epilogue's math (`mmcomp.lowering.hopper.pointwise`) is `arith` and `math` on f32, each
op one f32 instruction of the same meaning: an f32 constant a `mov.f32`; `arith.addf`,
`subf` and `mulf`, which must be marked `fastmath<contract>` (ptx's add.f32, sub.f32 and
mul.f32, without a rounding modifier, let ptxas fuse a multiply and an add), `add.f32`,
`sub.f32`, `mul.f32`; `arith.divf` `div.rn.f32`, or, marked `fastmath<afn>` with the
constant 1.0 as its dividend (read by it alone), `rcp.approx.f32` of its divisor, which the
constant goes with; `arith.negf` `neg.f32`; `arith.maxnumf` `max.f32` (the other operand
of a NaN, as maxnum); `math.absf` `abs.f32`; `math.exp2` and `math.tanh`, which must be
marked `fastmath<afn>`, `ex2.approx.f32` and `tanh.approx.f32`; `math.fma` `fma.rn.f32`;
`arith.truncf` of f32 to bf16 / f16 `cvt.rn.bf16.f32` (`.f16`), `arith.extf` back the
exact `cvt.f32.bf16`. Every other float form is an error naming the op and what it needs
(a float type other than f32, an approximation without `afn`), and an `arith` or `math`
op that no pattern lowers is an error naming it and its types.

The 64-bit address sums (`mmcomp.lowering.hopper.values`: `add_scaled`, `mad_wide`) are
`arith` on i64, each the instruction the lowering wrote by hand: an i64 `arith.muli` of a
zero-extended index value (an `arith.index_cast` to i32 and an `arith.extui` to i64) and
an i64 constant below 2^32 is one `mul.wide.u32` (the constant a u32 `mov`, the extension
lowered with it); an i64 `arith.addi` marked `ptx.mad` of such a product is one
`mad.wide.u32`; an i64 `arith.addi` is `add.u64`, an i64 constant read otherwise a u64
`mov`. A zero extension read by anything but a widening multiply, a constant factor of
2^32 or more, and a sum of a value held in a 32-bit register are errors.

The hopper level reads registers where it meets an index value: a
`builtin.unrealized_conversion_cast` of the value to `!ptx.reg<u32>` (a hopper op's
coordinate, a branch's condition), or of a register to `index` (a loop's induction
variable, which the loop updates in place). The patterns read their operands through
these casts (`register_of`); once every op is lowered, a cast of a register to its own
type is replaced by the register and a cast no op reads is erased.

It runs after `convert-hopper-to-ptx`: an entry that still holds a hopper op is an error
naming that pass. A `func.func` that the pipeline has not yet lowered to a ptx.module (a
partitioned or materialized kernel, a fusion) is an error naming the passes to run first;
plain functions (a kernel's launch function) are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects import arith, gpu, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    UnitAttr,
    UnrealizedConversionCastOp,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Operation, OpResult, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import ptx
from mmcomp.dialects.ptx.module import is_structured_control
from mmcomp.passes.partition_warp_roles import check_lowered_to_ptx

BINARY: dict[type[Operation], type[ptx.BinaryOp] | type[ptx.ShiftOp]] = {
    arith.AddiOp: ptx.AddOp,
    arith.SubiOp: ptx.SubOp,
    arith.MuliOp: ptx.MulOp,
    arith.DivUIOp: ptx.DivOp,
    arith.RemUIOp: ptx.RemOp,
    arith.MinUIOp: ptx.MinOp,
    arith.MaxUIOp: ptx.MaxOp,
    arith.AndIOp: ptx.AndOp,
    arith.ShRUIOp: ptx.ShrOp,
    arith.XOrIOp: ptx.XorOp,
}
"""The ptx instruction of each binary index op."""
COMPARISONS = {0: "eq", 1: "ne", 6: "lo", 7: "ls", 8: "hi", 9: "hs", 2: "lo", 3: "ls"}
"""The unsigned setp comparison of each arith.cmpi predicate (index values are unsigned)."""
SPECIAL_REGISTERS: dict[type[Operation], str] = {
    gpu.BlockIdOp: "ctaid.x",
    gpu.GridDimOp: "nctaid.x",
}
"""The special register of each grid query (the kernels' grids are one-dimensional)."""
INDEX_OPS: tuple[type[Operation], ...] = (
    arith.ConstantOp,
    arith.CeilDivUIOp,
    arith.CmpiOp,
    arith.SelectOp,
    *SPECIAL_REGISTERS,
    *BINARY,
)
"""The ops of the index arithmetic that the hopper level keeps."""
MAD = "ptx.mad"
"""The unit attribute of an `arith.addi` whose left operand, an `arith.muli` read by it
alone, is lowered with it as one `mad.lo` (the lowering's own `a * b + c`)."""


def mark_mad(op: arith.AddiOp) -> arith.AddiOp:
    """`op`, marked to lower with its left operand's multiplication as one `mad`."""
    op.attributes[MAD] = UnitAttr()
    return op


def fused_multiply(op: Operation) -> arith.MuliOp | None:
    """The `arith.muli` that a marked `arith.addi` fuses with (its left operand); None for
    an op that is not such an addi. A marked addi whose left operand is not a muli read by
    it alone is an error."""
    if not isinstance(op, arith.AddiOp) or MAD not in op.attributes:
        return None
    product = op.lhs.owner
    if not isinstance(product, arith.MuliOp) or op.lhs.uses.get_length() != 1:
        raise DiagnosticException(
            f"convert-arith-to-ptx: an arith.addi marked {MAD} must add to the result of an "
            "arith.muli that nothing else reads"
        )
    return product


def feeds_mad(op: Operation) -> bool:
    """`op` is an `arith.muli` that a marked `arith.addi` lowers with it."""
    if not isinstance(op, arith.MuliOp) or op.result.uses.get_length() != 1:
        return False
    (use,) = op.result.uses
    user = use.operation
    return isinstance(user, arith.AddiOp) and MAD in user.attributes and use.index == 0


def is_guard_read(use: Use) -> bool:
    """`use` is the guard of a ptx instruction (its last operand)."""
    op = use.operation
    return (
        isinstance(op, ptx.PtxInstruction)
        and op.guard is not None
        and use.index == len(op.operands) - 1
    )


def read_as_predicate(value: SSAValue) -> bool:
    """Every read of the i1 `value` is a ptx op's guard, a cast to `!ptx.reg<pred>` or an
    `arith.andi` of i1 values whose result is read so (a predicate conjunction)."""
    return bool(value.uses) and all(
        is_guard_read(use)
        or (
            isinstance(use.operation, UnrealizedConversionCastOp)
            and all(result.type == ptx.PRED for result in use.operation.results)
        )
        or is_predicate_and(use.operation)
        for use in value.uses
    )


def is_predicate_and(op: Operation) -> bool:
    """`op` is an `arith.andi` of i1 values read as a predicate: an `and.pred`."""
    return isinstance(op, arith.AndIOp) and op.result.type == i1 and read_as_predicate(op.result)


def is_hopper_op(op: Operation) -> bool:
    """An op of the hopper dialect."""
    return op.name.startswith("hopper.")


def held_register(value: SSAValue) -> SSAValue | None:
    """The register holding `value`: the value itself, or the register a cast of one reads;
    None where it is neither."""
    if isinstance(value.type, ptx.RegType):
        return value
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        (source,) = owner.inputs
        if isinstance(source.type, ptx.RegType):
            return source
    return None


def register_of(value: SSAValue) -> SSAValue:
    """The register holding an operand: the value itself, or the register a cast reads."""
    held = held_register(value)
    if held is not None:
        return held
    raise DiagnosticException(
        f"convert-arith-to-ptx: a value of type {value.type} is not held in a register "
        "(it must come from the index arithmetic of this entry)"
    )


class ConstantToPtx(RewritePattern):
    """An integer constant becomes a `mov` of its 32-bit immediate."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        """Rewrite an integer `arith.constant`."""
        if not isinstance(op.value, IntegerAttr):
            return
        rewriter.replace(op, ptx.ConstOp(op.value.value.data & 0xFFFFFFFF, ptx.U32))


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
    """`arith.cmpi` becomes a `setp` and a `selp` of 1 or 0 (a u32 holding the truth)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter) -> None:
        """Rewrite an unsigned or equality comparison: only the `setp` where every read
        is as a predicate."""
        cmp = COMPARISONS.get(op.predicate.value.data)
        if cmp is None:
            return
        pred = ptx.SetpOp(cmp, register_of(op.lhs), register_of(op.rhs))
        if read_as_predicate(op.result):
            rewriter.replace(op, pred)
            return
        one = ptx.ConstOp(1, ptx.U32)
        zero = ptx.ConstOp(0, ptx.U32)
        select = ptx.SelpOp(one.result, zero.result, pred.result)
        rewriter.replace(op, [pred, one, zero, select], [select.result])


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


PATTERNS: tuple[RewritePattern, ...] = (
    ThreadIdToPtx(),
    GuardOnRegister(),
    PredicateAndToPtx(),
    ConstantToPtx(),
    GridQueryToPtx(),
    MulAddToPtx(),
    BinaryToPtx(),
    CeilDivToPtx(),
    CompareToPtx(),
    SelectToPtx(),
)
"""The patterns of the index arithmetic."""


# ----------------------------------------------------------------------------------------
# The 64-bit address sums: arith on i64 (zero extensions of index values, widening products)
# ----------------------------------------------------------------------------------------


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
            raise DiagnosticException(
                "convert-arith-to-ptx: an arith.index_cast of an index value to i32 lowers "
                "only as the narrow side of an arith.extui to i64 (a widening multiply's "
                "operand)"
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


# ----------------------------------------------------------------------------------------
# The epilogue's float arithmetic: arith / math on f32 (and its 16-bit roundings)
# ----------------------------------------------------------------------------------------

CONTRACT = FastMathFlag.ALLOW_CONTRACT
"""`fastmath<contract>`: ptx's add.f32, sub.f32 and mul.f32 (no rounding modifier) let
ptxas fuse a multiply and an add into one fma, which this flag allows."""
APPROX = FastMathFlag.APPROX_FUNC
"""`fastmath<afn>`: an approximation is allowed (ex2.approx, tanh.approx, rcp.approx)."""
FLOAT_BINARY: dict[type[Operation], tuple[type[ptx.BinaryOp], bool]] = {
    arith.AddfOp: (ptx.AddOp, True),
    arith.SubfOp: (ptx.SubOp, True),
    arith.MulfOp: (ptx.MulOp, True),
    arith.DivfOp: (ptx.DivOp, False),
    arith.MaxnumfOp: (ptx.MaxOp, False),
}
"""The ptx instruction of each binary float op, and whether the op must allow contraction
(`div.rn.f32` is IEEE division; `max.f32` returns the other operand of a NaN, as maxnumf)."""
MATH_UNARY: dict[type[Operation], tuple[type[ptx.UnaryOp], bool]] = {
    math.AbsFOp: (ptx.AbsOp, False),
    math.Exp2Op: (ptx.Ex2Op, True),
    math.TanhOp: (ptx.TanhOp, True),
}
"""The ptx instruction of each one-operand math op, and whether it is an approximation
(the op must be marked `fastmath<afn>`)."""
SIXTEEN_BIT: dict[type[Attribute], str] = {BFloat16Type: "bf16", Float16Type: "f16"}
"""The register kind of each 16-bit float type."""


def fastmath_of(op: Operation) -> frozenset[FastMathFlag]:
    """The fastmath flags of a float op (none where it has no such property)."""
    flags = op.properties.get("fastmath")
    if not isinstance(flags, arith.FastMathFlagsAttr):
        return frozenset()
    return flags.data


def require_f32(op: Operation) -> None:
    """Raise unless every operand and result of a float op is f32."""
    for value in (*op.operands, *op.results):
        held = held_register(value)
        if value.type == Float32Type() or (held is not None and held.type == ptx.F32):
            continue
        raise DiagnosticException(
            f"convert-arith-to-ptx: {op.name} on {value.type}: the float arithmetic lowers "
            "on f32 only"
        )


def require_flag(op: Operation, flag: FastMathFlag, instruction: str, why: str) -> None:
    """Raise unless `op` carries fastmath flag `flag` (what its ptx instruction needs)."""
    if flag in fastmath_of(op):
        return
    raise DiagnosticException(
        f"convert-arith-to-ptx: {op.name} lowers to {instruction} only, which {why}: mark it "
        f"fastmath<{flag.value}>"
    )


def is_reciprocal(op: Operation) -> bool:
    """`op` is an `arith.divf` marked `fastmath<afn>` (an approximate reciprocal)."""
    return isinstance(op, arith.DivfOp) and APPROX in fastmath_of(op)


def feeds_reciprocal(op: Operation) -> bool:
    """`op` is the constant 1.0 that an approximate reciprocal divides, read by it alone."""
    if not isinstance(op, arith.ConstantOp) or op.result.uses.get_length() != 1:
        return False
    (use,) = op.result.uses
    return is_reciprocal(use.operation) and use.index == 0 and is_one(op)


def is_one(op: Operation) -> bool:
    """`op` is an `arith.constant 1.0`."""
    return (
        isinstance(op, arith.ConstantOp)
        and isinstance(op.value, FloatAttr)
        and op.value.value.data == 1.0
    )


class FloatConstantToPtx(RewritePattern):
    """An f32 constant becomes a `mov.f32` of its immediate (but the 1.0 of a reciprocal,
    which `ReciprocalToPtx` lowers with it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        """Rewrite a float `arith.constant`."""
        if not isinstance(op.value, FloatAttr) or feeds_reciprocal(op):
            return
        require_f32(op)
        rewriter.replace(op, ptx.ConstOp(op.value.value.data, ptx.F32))


class FloatBinaryToPtx(RewritePattern):
    """`arith.addf`, `subf`, `mulf` (marked `fastmath<contract>`), `divf` and `maxnumf`
    on f32 become the ptx instruction of the same meaning (`add.f32`, ..., `div.rn.f32`,
    `max.f32`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Rewrite a binary float op (not an approximate reciprocal)."""
        found = FLOAT_BINARY.get(type(op))
        if found is None or is_reciprocal(op):
            return
        kind, contracts = found
        require_f32(op)
        if contracts:
            instruction = kind.name.removeprefix("ptx.") + ".f32"
            require_flag(op, CONTRACT, instruction, "ptxas may fuse with a multiply or an add")
        lhs, rhs = (register_of(operand) for operand in op.operands)
        rewriter.replace(op, kind(lhs, rhs))


class ReciprocalToPtx(RewritePattern):
    """`arith.divf` of the constant 1.0 marked `fastmath<afn>` becomes `rcp.approx.f32`
    of its divisor, where the divf is (the constant goes with it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.DivfOp, rewriter: PatternRewriter) -> None:
        """Rewrite an approximate reciprocal."""
        if not is_reciprocal(op):
            return
        require_f32(op)
        one = op.lhs.owner
        if not isinstance(one, arith.ConstantOp) or not feeds_reciprocal(one):
            raise DiagnosticException(
                "convert-arith-to-ptx: an arith.divf marked fastmath<afn> lowers to "
                "rcp.approx.f32: its dividend must be an arith.constant 1.0 that nothing "
                "else reads"
            )
        rewriter.replace(op, ptx.RcpOp(register_of(op.rhs)))
        rewriter.erase(one)


class NegfToPtx(RewritePattern):
    """`arith.negf` on f32 becomes `neg.f32`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter) -> None:
        """Rewrite a negation."""
        require_f32(op)
        rewriter.replace(op, ptx.NegOp(register_of(op.operand)))


class MathUnaryToPtx(RewritePattern):
    """`math.absf` becomes `abs.f32`; `math.exp2` and `math.tanh`, marked
    `fastmath<afn>`, become `ex2.approx.f32` and `tanh.approx.f32`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Rewrite a one-operand math op on f32."""
        found = MATH_UNARY.get(type(op))
        if found is None:
            return
        kind, approximate = found
        require_f32(op)
        if approximate:
            instruction = kind.name.removeprefix("ptx.") + ".approx.f32"
            require_flag(op, APPROX, instruction, "is an approximation")
        rewriter.replace(op, kind(register_of(op.operands[0])))


class FmaToPtx(RewritePattern):
    """`math.fma` on f32 becomes `fma.rn.f32`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.FmaOp, rewriter: PatternRewriter) -> None:
        """Rewrite a fused multiply-add."""
        require_f32(op)
        a, b, c = (register_of(operand) for operand in op.operands)
        rewriter.replace(op, ptx.FmaOp(a, b, c))


class TruncfToPtx(RewritePattern):
    """`arith.truncf` of an f32 to bf16 or f16 becomes `cvt.rn.bf16.f32` (`.f16`): the
    rounding to nearest even."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.TruncFOp, rewriter: PatternRewriter) -> None:
        """Rewrite a rounding to a 16-bit float."""
        kind = SIXTEEN_BIT.get(type(op.result.type))
        source = held_register(op.input)
        if kind is None or source is None or source.type != ptx.F32:
            raise DiagnosticException(
                f"convert-arith-to-ptx: arith.truncf from {op.input.type} to {op.result.type}: "
                "only f32 to bf16 or f16 lowers"
            )
        rewriter.replace(op, ptx.CvtOp(source, ptx.reg(kind), "rn"))


class ExtfToPtx(RewritePattern):
    """`arith.extf` of a bf16 or f16 to f32 becomes `cvt.f32.bf16` (`.f16`): exact."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ExtFOp, rewriter: PatternRewriter) -> None:
        """Rewrite a widening to f32."""
        source = held_register(op.input)
        sixteen_bit = [ptx.reg(kind) for kind in SIXTEEN_BIT.values()]
        if op.result.type != Float32Type() or source is None or source.type not in sixteen_bit:
            raise DiagnosticException(
                f"convert-arith-to-ptx: arith.extf from {op.input.type} to {op.result.type}: "
                "only bf16 or f16 to f32 lowers"
            )
        rewriter.replace(op, ptx.CvtOp(source, ptx.F32))


FLOAT_PATTERNS: tuple[RewritePattern, ...] = (
    FloatConstantToPtx(),
    ReciprocalToPtx(),
    FloatBinaryToPtx(),
    NegfToPtx(),
    MathUnaryToPtx(),
    FmaToPtx(),
    TruncfToPtx(),
    ExtfToPtx(),
)
"""The patterns of the epilogue's float arithmetic."""
UNLOWERED_DIALECTS = ("arith.", "math.")
"""The dialects whose ops must all be lowered: what is left of them has no pattern."""


def check_all_lowered(entry: ptx.EntryOp) -> None:
    """Raise, naming the op and its types, if an arith or math op is left in `entry`."""
    for op in entry.walk():
        if not op.name.startswith(UNLOWERED_DIALECTS):
            continue
        types = ", ".join(str(value.type) for value in (*op.operands, *op.results))
        raise DiagnosticException(
            f"convert-arith-to-ptx: ptx.entry @{entry.sym_name.data}: no ptx lowering for "
            f"{op.name} ({types})"
        )


def check_guards(entry: ptx.EntryOp) -> None:
    """Raise, naming the op, if a guard in `entry` is not a predicate register."""
    for op in entry.walk():
        if not isinstance(op, ptx.PtxInstruction) or op.guard is None:
            continue
        if op.guard.type == ptx.PRED:
            continue
        raise DiagnosticException(
            f"convert-arith-to-ptx: ptx.entry @{entry.sym_name.data}: the guard of {op.name} "
            f"is held in a {op.guard.type}, expected a !ptx.reg<pred> (an i1 comparison or "
            "conjunction that only predicates read, or a predicate register)"
        )


class FoldRegisterCast(RewritePattern):
    """A cast of a register to its own type becomes the register, as does a cast back to a
    register's type of a cast from it (register -> index -> register); an unread cast of a
    register is erased."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter) -> None:
        """Fold or erase a cast of one register."""
        if len(op.inputs) != 1 or len(op.results) != 1:
            return
        (source,) = op.inputs
        (result,) = op.results
        inner = source.owner
        if (
            isinstance(inner, UnrealizedConversionCastOp)
            and len(inner.inputs) == 1
            and inner.inputs[0].type == result.type
            and isinstance(result.type, ptx.RegType)
        ):
            rewriter.replace(op, [], [inner.inputs[0]])
            return
        if not isinstance(source.type, ptx.RegType):
            return
        if result.type == source.type:
            rewriter.replace(op, [], [source])
        elif not result.uses:
            rewriter.erase(op)


def lower_index_arithmetic(entry: ptx.EntryOp) -> None:
    """Rewrite the index arithmetic of `entry` into ptx instructions, in place."""
    PatternRewriteWalker(
        GreedyRewritePatternApplier(
            [*WIDE_PATTERNS, *PATTERNS, *FLOAT_PATTERNS], dce_enabled=False
        ),
        apply_recursively=False,
    ).rewrite_region(entry.body)
    PatternRewriteWalker(FoldRegisterCast(), apply_recursively=True).rewrite_region(entry.body)
    check_all_lowered(entry)
    check_guards(entry)


_LOWERED_BEFORE: tuple[tuple[Callable[[Operation], bool], str, str], ...] = (
    (
        is_hopper_op,
        "convert-hopper-to-ptx",
        "the hopper ops read the index arithmetic this pass lowers",
    ),
    (
        is_structured_control,
        "convert-scf-to-ptx",
        "the loops' bounds and the branches' conditions read the index arithmetic this pass lowers",
    ),
)
"""What must be lowered before this pass, by (op test, pass, why)."""


class ConvertArithToPtx(ModulePass):
    """Lower the index arithmetic in the module's ptx entries to ptx instructions."""

    name = "convert-arith-to-ptx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Lower every entry's index arithmetic; a kernel or fusion still in a func.func is
        an error."""
        del ctx
        check_lowered_to_ptx(self.name, op)
        for entry in [entry for entry in op.walk() if isinstance(entry, ptx.EntryOp)]:
            for holds, needed, why in _LOWERED_BEFORE:
                found = next((inner for inner in entry.walk() if holds(inner)), None)
                if found is not None:
                    raise DiagnosticException(
                        f"{self.name}: ptx.entry @{entry.sym_name.data} still holds "
                        f"{found.name}: run {needed} first ({why})"
                    )
            lower_index_arithmetic(entry)
