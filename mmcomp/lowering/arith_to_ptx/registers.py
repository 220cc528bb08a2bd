"""The registers the ptx patterns read, and the tables and tests they share.

An index value meets a register through a `builtin.unrealized_conversion_cast`
(`held_register`, `register_of`); a comparison only guards, conjunctions and f32 selects
read is a predicate (`read_as_predicate`); an `arith.addi` marked `ptx.mad` is one `mad.lo` with the
product it adds (`mark_mad`, `fused_multiply`).
"""

from __future__ import annotations

from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import (
    Float32Type,
    UnitAttr,
    UnrealizedConversionCastOp,
    i1,
    i32,
)
from xdsl.ir import Operation, SSAValue, Use
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import ptx

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
SIGNED_COMPARISONS = {2: "lt", 3: "le", 4: "gt", 5: "ge"}
"""The signed setp comparison of each signed arith.cmpi predicate on i32 (a signed count:
an index value cast to i32, or an i32 constant)."""
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


def is_signed_comparison(op: Operation) -> bool:
    """`op` is a signed `arith.cmpi` (slt, sle, sgt, sge) of i32 values (or of the s32
    register one is lowered to): a `setp` on s32 registers."""
    return (
        isinstance(op, arith.CmpiOp)
        and op.lhs.type in (i32, ptx.S32)
        and op.predicate.value.data in SIGNED_COMPARISONS
    )


def is_signed_count(value: SSAValue) -> bool:
    """The i32 `value` is read by signed comparisons only: it is held in an s32 register."""
    return (
        value.type == i32
        and bool(value.uses)
        and all(is_signed_comparison(use.operation) for use in value.uses)
    )


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
        or is_float_select_condition(use)
        for use in value.uses
    )


def replace_comparison(op: arith.CmpiOp | arith.CmpfOp, cmp: str, rewriter: PatternRewriter):
    """`op` as a `setp` of `cmp`: the predicate alone where every read is as a predicate
    (`read_as_predicate`), else a `selp` of 1 or 0 on it (a u32 holding the truth)."""
    pred = ptx.SetpOp(cmp, register_of(op.lhs), register_of(op.rhs))
    if read_as_predicate(op.result):
        rewriter.replace(op, pred)
        return
    one = ptx.ConstOp(1, ptx.U32)
    zero = ptx.ConstOp(0, ptx.U32)
    select = ptx.SelpOp(one.result, zero.result, pred.result)
    rewriter.replace(op, [pred, one, zero, select], [select.result])


def is_float_select_condition(use: Use) -> bool:
    """`use` is the condition of an `arith.select` of f32 values: a `selp.f32` on the
    predicate register (the epilogue's selects; those of index values read a u32)."""
    op = use.operation
    return isinstance(op, arith.SelectOp) and use.index == 0 and op.result.type == Float32Type()


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
