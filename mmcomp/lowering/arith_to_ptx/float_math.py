"""The epilogue's float arithmetic: `arith` / `math` on f32 (and its 16-bit roundings) to
the one f32 instruction of each.
"""

from __future__ import annotations

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
)
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Operation
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import ptx
from mmcomp.lowering.arith_to_ptx.registers import (
    held_register,
    register_of,
    replace_comparison,
)

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
FLOAT_COMPARISONS: dict[int, str] = {
    1: "eq",
    2: "gt",
    3: "ge",
    4: "lt",
    5: "le",
    6: "ne",
    7: "num",
    8: "equ",
    9: "gtu",
    10: "geu",
    11: "ltu",
    12: "leu",
    13: "neu",
    14: "nan",
}
"""The `setp` comparison of each `arith.cmpf` predicate (oeq, ogt, ..., une, uno): ordered
ones fail on a NaN, unordered ones (`u`) hold on it."""


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


class FloatCompareToPtx(RewritePattern):
    """`arith.cmpf` on f32 becomes `setp.<cmp>.f32` (`une` is `setp.neu.f32`), and a
    `selp` of 1 or 0 where the i1 is read other than as a predicate (a u32 holding the
    truth, as an `arith.cmpi`'s)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter) -> None:
        """Rewrite a float comparison."""
        cmp = FLOAT_COMPARISONS.get(op.predicate.value.data)
        if cmp is None:
            raise DiagnosticException(
                f"convert-arith-to-ptx: arith.cmpf predicate {op.predicate.value.data}: a "
                "comparison that is always true or false does not lower (fold it)"
            )
        for value in op.operands:
            held = held_register(value)
            if value.type != Float32Type() and (held is None or held.type != ptx.F32):
                raise DiagnosticException(
                    f"convert-arith-to-ptx: arith.cmpf on {value.type}: the float "
                    "comparisons lower on f32 only"
                )
        replace_comparison(op, cmp, rewriter)


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
    FloatCompareToPtx(),
    TruncfToPtx(),
    ExtfToPtx(),
)
"""The patterns of the epilogue's float arithmetic."""
