"""Arithmetic, logic, comparison, selection and conversion instructions."""

# The ptx dialect's modules share the private helpers of syntax.py and types.py.
# pyright: reportPrivateUsage=false

from __future__ import annotations

from abc import ABC
from typing import ClassVar

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def
from xdsl.irdl import operand_def as _operand_def
from xdsl.irdl import result_def as _result_def
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.ptx.syntax import (
    RegisterInstruction,
    _arith_type,
    _bits_type,
    _require,
    _require_category,
    _same_kind,
)
from mmcomp.dialects.ptx.types import BF16X2, PRED, RegKind, RegType, kind_of


class ArithmeticOp(RegisterInstruction, ABC):
    """Base of the ops spelled `OP[.MODIFIER].TYPE`, with a modifier per number class."""

    INT_MODIFIER: ClassVar[str] = ""
    """The modifier of the integer form (`lo` in `mul.lo.u32`), if any."""
    FLOAT_MODIFIER: ClassVar[str] = ""
    """The modifier of the float form (`rn` in `div.rn.f32`), if any."""

    def mnemonic(self) -> str:
        kind = kind_of(self.results[0])
        modifier = self.FLOAT_MODIFIER if kind.is_float else self.INT_MODIFIER
        parts = (self.name.removeprefix("ptx."), modifier, _arith_type(kind))
        return ".".join(part for part in parts if part)


class BinaryOp(ArithmeticOp, ABC):
    """Base of two-operand ops whose operands and result share one kind."""

    lhs = _operand_def(RegType)
    rhs = _operand_def(RegType)
    result = _result_def(RegType)

    CATEGORIES: ClassVar[str] = "b,u,s,f"
    """Allowed kind categories."""

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs, []], result_types=[lhs.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("lhs", self.lhs), ("rhs", self.rhs), ("result", self.result)])
        _require_category(self, "lhs", self.lhs, self.CATEGORIES)


@irdl_op_definition
class AddOp(BinaryOp):
    """`add.{u,s,f}NN` (bits count as unsigned)."""

    name = "ptx.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """`sub.{u,s,f}NN`."""

    name = "ptx.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """`mul.lo.{u,s}NN` for integers, `mul.f32` for floats."""

    name = "ptx.mul"
    INT_MODIFIER: ClassVar[str] = "lo"


@irdl_op_definition
class MulHiOp(BinaryOp):
    """`mul.hi.{u,s}NN`: the high half of an integer product."""

    name = "ptx.mul_hi"
    CATEGORIES: ClassVar[str] = "b,u,s"

    def mnemonic(self) -> str:
        return f"mul.hi.{_arith_type(kind_of(self.result))}"


@irdl_op_definition
class DivOp(BinaryOp):
    """`div.{u,s}NN` for integers, `div.rn.f32` for floats."""

    name = "ptx.div"
    FLOAT_MODIFIER: ClassVar[str] = "rn"


@irdl_op_definition
class RemOp(BinaryOp):
    """`rem.{u,s}NN`."""

    name = "ptx.rem"
    CATEGORIES: ClassVar[str] = "b,u,s"


@irdl_op_definition
class MinOp(BinaryOp):
    """`min.{u,s,f}NN`."""

    name = "ptx.min"


@irdl_op_definition
class MaxOp(BinaryOp):
    """`max.{u,s,f}NN`."""

    name = "ptx.max"


class LogicOp(BinaryOp, ABC):
    """Base of bitwise ops: `.bNN` or `.pred`."""

    CATEGORIES: ClassVar[str] = "b,u,s,pred"

    def mnemonic(self) -> str:
        return f"{self.name.removeprefix('ptx.')}.{_bits_type(kind_of(self.result))}"


@irdl_op_definition
class AndOp(LogicOp):
    """`and.bNN` or `and.pred`."""

    name = "ptx.and"


@irdl_op_definition
class OrOp(LogicOp):
    """`or.bNN` or `or.pred`."""

    name = "ptx.or"


@irdl_op_definition
class XorOp(LogicOp):
    """`xor.bNN` or `xor.pred`."""

    name = "ptx.xor"


class ShiftOp(RegisterInstruction, ABC):
    """Base of shifts: the amount is any 32-bit integer register."""

    value = _operand_def(RegType)
    amount = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, value: SSAValue, amount: SSAValue):
        super().__init__(operands=[value, amount, []], result_types=[value.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("value", self.value), ("result", self.result)])
        _require_category(self, "value", self.value, "b,u,s")
        _require(self, "amount", self.amount, "u32")

    def mnemonic(self) -> str:
        kind = kind_of(self.result)
        op = self.name.removeprefix("ptx.")
        suffix = f"b{kind.width}" if op == "shl" else kind.name
        return f"{op}.{suffix}"


@irdl_op_definition
class ShlOp(ShiftOp):
    """`shl.bNN`."""

    name = "ptx.shl"


@irdl_op_definition
class ShrOp(ShiftOp):
    """`shr.{b,u,s}NN` (b and u shift in zeros, s the sign)."""

    name = "ptx.shr"


def _require_double_width(
    op: Operation, wide_what: str, wide: RegKind, narrow_what: str, narrow: RegKind
) -> None:
    """Raise unless `narrow` is 16 or 32 bits wide and `wide` twice as wide."""
    if narrow.width not in (16, 32) or wide.width != 2 * narrow.width:
        raise VerifyException(
            f"{op.name}: {wide_what} must be twice as wide as {narrow_what} "
            f"(!ptx.reg<{narrow.name}>), found !ptx.reg<{wide.name}>"
        )


@irdl_op_definition
class MulWideOp(RegisterInstruction):
    """`mul.wide.{u,s}NN`: the full double-width product."""

    name = "ptx.mul_wide"

    lhs = _operand_def(RegType)
    rhs = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, type: RegType | None = None):
        if type is None:
            kind = kind_of(lhs)
            wide = "s" if kind.category == "s" else "u"
            type = RegType(f"{wide}{kind.width * 2}")
        super().__init__(operands=[lhs, rhs, []], result_types=[type])

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("lhs", self.lhs), ("rhs", self.rhs)])
        _require_category(self, "lhs", self.lhs, "b,u,s")
        out = _require_category(self, "result", self.result, "b,u,s")
        _require_double_width(self, "result", out, "the operands", kind)

    def mnemonic(self) -> str:
        return f"mul.wide.{_arith_type(kind_of(self.lhs))}"


@irdl_op_definition
class MadWideOp(RegisterInstruction):
    """`mad.wide.{u,s}NN`: the full double-width product plus a double-width addend."""

    name = "ptx.mad_wide"

    a = _operand_def(RegType)
    b = _operand_def(RegType)
    c = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue):
        super().__init__(operands=[a, b, c, []], result_types=[c.type])

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("a", self.a), ("b", self.b)])
        _require_category(self, "a", self.a, "b,u,s")
        out = _same_kind(self, [("c", self.c), ("result", self.result)])
        _require_category(self, "result", self.result, "b,u,s")
        _require_double_width(self, "c and the result", out, "a and b", kind)

    def mnemonic(self) -> str:
        return f"mad.wide.{_arith_type(kind_of(self.a))}"


class TernaryOp(ArithmeticOp, ABC):
    """Base of `a * b + c` ops whose operands and result share one kind."""

    a = _operand_def(RegType)
    b = _operand_def(RegType)
    c = _operand_def(RegType)
    result = _result_def(RegType)

    CATEGORIES: ClassVar[str] = "b,u,s,f"
    """Allowed kind categories."""
    INT_MODIFIER: ClassVar[str] = "lo"
    FLOAT_MODIFIER: ClassVar[str] = "rn"

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue):
        super().__init__(operands=[a, b, c, []], result_types=[a.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("a", self.a), ("b", self.b), ("c", self.c), ("result", self.result)])
        _require_category(self, "a", self.a, self.CATEGORIES)


@irdl_op_definition
class MadOp(TernaryOp):
    """`mad.lo.{u,s}NN` for integers, `mad.rn.f32` for floats."""

    name = "ptx.mad"


@irdl_op_definition
class FmaOp(TernaryOp):
    """`fma.rn.f32`: fused multiply-add of floats."""

    name = "ptx.fma"
    CATEGORIES: ClassVar[str] = "f"


class UnaryOp(RegisterInstruction, ABC):
    """Base of one-operand ops whose operand and result share one kind."""

    src = _operand_def(RegType)
    result = _result_def(RegType)

    CATEGORIES: ClassVar[str] = "f"
    """Allowed kind categories."""

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src, []], result_types=[src.type])

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("src", self.src), ("result", self.result)])
        _require_category(self, "src", self.src, self.CATEGORIES)
        if self.CATEGORIES == "f" and kind.width != 32:
            raise VerifyException(
                f"{self.name}: only f32 is supported, found !ptx.reg<{kind.name}>"
            )

    def mnemonic(self) -> str:
        return f"{self.name.removeprefix('ptx.')}.approx.{kind_of(self.result).name}"


@irdl_op_definition
class Ex2Op(UnaryOp):
    """`ex2.approx.f32`: 2 to the power x."""

    name = "ptx.ex2"


@irdl_op_definition
class Lg2Op(UnaryOp):
    """`lg2.approx.f32`: log base 2."""

    name = "ptx.lg2"


@irdl_op_definition
class TanhOp(UnaryOp):
    """`tanh.approx.f32`."""

    name = "ptx.tanh"


@irdl_op_definition
class RcpOp(UnaryOp):
    """`rcp.approx.f32`: reciprocal."""

    name = "ptx.rcp"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """`sqrt.approx.f32`."""

    name = "ptx.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """`rsqrt.approx.f32`: reciprocal square root."""

    name = "ptx.rsqrt"


class SignedUnaryOp(UnaryOp, ABC):
    """Base of neg/abs: integers are treated as signed."""

    CATEGORIES: ClassVar[str] = "b,u,s,f"

    def mnemonic(self) -> str:
        kind = kind_of(self.result)
        op = self.name.removeprefix("ptx.")
        return f"{op}.{kind.name if kind.is_float else f's{kind.width}'}"


@irdl_op_definition
class NegOp(SignedUnaryOp):
    """`neg.{s,f}NN` (integers are negated as signed)."""

    name = "ptx.neg"


@irdl_op_definition
class AbsOp(SignedUnaryOp):
    """`abs.{s,f}NN`."""

    name = "ptx.abs"


@irdl_op_definition
class NotOp(UnaryOp):
    """`not.bNN` or `not.pred`."""

    name = "ptx.not"
    CATEGORIES: ClassVar[str] = "b,u,s,pred"

    def mnemonic(self) -> str:
        return f"not.{_bits_type(kind_of(self.result))}"


INT_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
FLOAT_COMPARISONS = (
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "equ",
    "neu",
    "ltu",
    "leu",
    "gtu",
    "geu",
    "num",
    "nan",
)


@irdl_op_definition
class SetpOp(RegisterInstruction):
    """Compare two registers into a predicate: `setp.lt.s32 %p1, %r1, %r2;`."""

    name = "ptx.setp"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("cmp",)

    cmp = prop_def(StringAttr)
    """The comparison (`eq ne lt le gt ge`, unsigned `lo ls hi hs`, float `equ ... nan`)."""
    lhs = _operand_def(RegType)
    rhs = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, cmp: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            properties={"cmp": StringAttr(cmp)}, operands=[lhs, rhs, []], result_types=[PRED]
        )

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("lhs", self.lhs), ("rhs", self.rhs)])
        _require_category(self, "lhs", self.lhs, "b,u,s,f")
        _require_category(self, "result", self.result, "pred")
        cmp = self.cmp.data
        allowed = FLOAT_COMPARISONS if kind.is_float else INT_COMPARISONS
        if cmp not in allowed:
            raise VerifyException(
                f"ptx.setp: comparison '{cmp}' is not defined on !ptx.reg<{kind.name}>, "
                f"expected one of {', '.join(allowed)}"
            )
        if kind.category == "b" and cmp not in ("eq", "ne"):
            raise VerifyException(
                f"ptx.setp: comparison '{cmp}' on untyped !ptx.reg<{kind.name}> is "
                f"ambiguous; use u{kind.width} or s{kind.width} registers"
            )

    def mnemonic(self) -> str:
        return f"setp.{self.cmp.data}.{kind_of(self.lhs).name}"


@irdl_op_definition
class SelpOp(RegisterInstruction):
    """Select by predicate: `selp.b32 %r3, %r1, %r2, %p1;` (`if_true` when p holds)."""

    name = "ptx.selp"

    if_true = _operand_def(RegType)
    if_false = _operand_def(RegType)
    cond = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, if_true: SSAValue, if_false: SSAValue, cond: SSAValue):
        super().__init__(operands=[if_true, if_false, cond, []], result_types=[if_true.type])

    def verify_kinds(self) -> None:
        _same_kind(
            self,
            [("if_true", self.if_true), ("if_false", self.if_false), ("result", self.result)],
        )
        _require_category(self, "if_true", self.if_true, "b,u,s,f,x")
        _require_category(self, "cond", self.cond, "pred")

    def mnemonic(self) -> str:
        kind = kind_of(self.result)
        suffix = f"b{kind.width}" if kind.category == "x" else kind.name
        return f"selp.{suffix}"


FLOAT_ROUNDING = ("rn", "rz", "rm", "rp")
INT_ROUNDING = ("rni", "rzi", "rmi", "rpi")


@irdl_op_definition
class CvtOp(RegisterInstruction):
    """Convert between types: `cvt.rn.bf16.f32 %rs1, %f1;`, `cvt.u64.u32 %rd1, %r1;`."""

    name = "ptx.cvt"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("rounding",)

    rounding = opt_prop_def(StringAttr)
    """Rounding mode: rn/rz/rm/rp to a float, rni/rzi/rmi/rpi float to integer."""
    src = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, src: SSAValue, type: RegType, rounding: str | None = None):
        super().__init__(
            properties={"rounding": StringAttr(rounding) if rounding else None},
            operands=[src, []],
            result_types=[type],
        )

    def verify_kinds(self) -> None:
        src = _require_category(self, "source", self.src, "b,u,s,f,h")
        dst = _require_category(self, "result", self.result, "b,u,s,f,h")
        rounding = None if self.rounding is None else self.rounding.data
        src_float = src.category in ("f", "h")
        dst_float = dst.category in ("f", "h")
        if dst_float and (not src_float or dst.width < src.width):
            allowed: tuple[str, ...] = FLOAT_ROUNDING
            required = True
        elif src_float and not dst_float:
            allowed, required = INT_ROUNDING, True
        elif src_float and dst_float and dst.width > src.width:
            allowed, required = (), False
        elif src_float and dst_float:
            allowed, required = INT_ROUNDING, False
        else:
            allowed, required = (), False
        if rounding is None and required:
            raise VerifyException(
                f"ptx.cvt: converting !ptx.reg<{src.name}> to !ptx.reg<{dst.name}> needs a "
                f"rounding mode, one of {', '.join(allowed)}"
            )
        if rounding is not None and rounding not in allowed:
            expected = ", ".join(allowed) if allowed else "none"
            raise VerifyException(
                f"ptx.cvt: rounding '{rounding}' is not valid from !ptx.reg<{src.name}> to "
                f"!ptx.reg<{dst.name}>, expected {expected}"
            )

    def mnemonic(self) -> str:
        src = _arith_type(kind_of(self.src))
        dst = _arith_type(kind_of(self.result))
        rnd = "" if self.rounding is None else f".{self.rounding.data}"
        return f"cvt{rnd}.{dst}.{src}"


@irdl_op_definition
class CvtPackOp(RegisterInstruction):
    """Pack two f32 into bf16x2/f16x2: `cvt.rn.bf16x2.f32 %r1, %f_hi, %f_lo;`, or into a
    pair of fp8 with saturation: `cvt.rn.satfinite.e4m3x2.f32 %rs1, %f_hi, %f_lo;`."""

    name = "ptx.cvt_pack"

    hi = _operand_def(RegType)
    """Goes to the upper 16 bits."""
    lo = _operand_def(RegType)
    """Goes to the lower 16 bits."""
    result = _result_def(RegType)

    def __init__(self, hi: SSAValue, lo: SSAValue, type: RegType = BF16X2):
        super().__init__(operands=[hi, lo, []], result_types=[type])

    def verify_kinds(self) -> None:
        _require(self, "hi", self.hi, "f32")
        _require(self, "lo", self.lo, "f32")
        kind = kind_of(self.result)
        if kind.name not in ("bf16x2", "f16x2", *FP8_PAIRS):
            raise VerifyException(
                f"ptx.cvt_pack: result must be !ptx.reg<bf16x2>, !ptx.reg<f16x2>, "
                f"!ptx.reg<e4m3x2> or !ptx.reg<e5m2x2>, found !ptx.reg<{kind.name}>"
            )

    def mnemonic(self) -> str:
        name = kind_of(self.result).name
        saturate = ".satfinite" if name in FP8_PAIRS else ""
        return f"cvt.rn{saturate}.{name}.f32"


FP8_PAIRS = ("e4m3x2", "e5m2x2")
"""The register kinds of two fp8 values (a 16-bit register), which cvt_pack saturates into."""
