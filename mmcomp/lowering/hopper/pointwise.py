"""The epilogue's pointwise math: fusion ops -> arith / math on f32, as rewrite patterns.

Every epilogue value is an f32 value standing for a value of its dtype (`Scalar`);
`Pointwise.rounded` rounds it to that dtype (`arith.truncf`, then `arith.extf` back)
before it is used, so bf16 and f16 intermediates round as the reference does. The
epilogue evaluates its body element by element; each pointwise op at an element is a copy
of the fusion op on the f32 values of its operands, which one pattern per op (`PATTERNS`,
applied by xDSL's pattern rewriter) replaces by arith and math ops: addf, subf, mulf,
divf, negf; relu as maxnumf with 0; exp, sigmoid and silu with exp2 and a reciprocal;
tanh with math.tanh; gelu as the tanh approximation or erf by Abramowitz and Stegun
7.1.26. `convert-arith-to-ptx` lowers each op to one ptx instruction, so the ops say
exactly which: a product or sum is marked `fastmath<contract>` (ptx's mul.f32 and add.f32
let ptxas fuse them), the approximations `fastmath<afn>` (ex2.approx, tanh.approx, and
`1.0 / x` as rcp.approx), and a fused multiply-add is written as `math.fma`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, FloatAttr
from xdsl.dialects.utils import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, RewritePattern

from mmcomp.dialects import ptx
from mmcomp.errors import ScheduleError

LOG2E = 1.4426950408889634
"""log2(e): exp(x) = 2^(x log2 e)."""
GELU_C = 0.7978845608028654
"""sqrt(2 / pi), of the tanh approximation of GELU."""
ERF_SCALE = 0.7071067811865476
"""1 / sqrt(2): GELU's erf argument is x / sqrt(2)."""
ERF_P = 0.3275911
"""p of the Abramowitz-Stegun 7.1.26 approximation of erf."""
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
"""a1..a5 of the Abramowitz-Stegun 7.1.26 approximation of erf."""


CONTRACT = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
"""The flags of a sum, difference or product: ptx's add.f32 / mul.f32, which ptxas may
fuse into an fma."""
APPROX = arith.FastMathFlagsAttr([FastMathFlag.APPROX_FUNC])
"""The flags of an approximation: ex2.approx, tanh.approx, rcp.approx."""
SIXTEEN_BIT: dict[str, Attribute] = {"bf16": BFloat16Type(), "f16": Float16Type()}
"""The builtin type of each 16-bit dtype."""


@dataclass
class Scalar:
    """One epilogue value at one element: an f32 value and the dtype it stands for."""

    value: SSAValue
    dtype: str
    exact: bool = False
    """The value is already one of `dtype` (a loaded element): no rounding."""


@dataclass
class _Ops:
    """The arith and math ops a pattern builds, in order."""

    ops: list[Operation] = field(default_factory=list[Operation])

    def put(self, op: Operation) -> SSAValue:
        """Add `op`; its result."""
        self.ops.append(op)
        return op.results[0]

    def const(self, value: float) -> SSAValue:
        """An f32 constant."""
        return self.put(arith.ConstantOp(FloatAttr(value, Float32Type())))

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs + rhs` (add.f32)."""
        return self.put(arith.AddfOp(lhs, rhs, CONTRACT))

    def sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs - rhs` (sub.f32)."""
        return self.put(arith.SubfOp(lhs, rhs, CONTRACT))

    def mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs * rhs` (mul.f32)."""
        return self.put(arith.MulfOp(lhs, rhs, CONTRACT))

    def div(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs / rhs`, IEEE (div.rn.f32)."""
        return self.put(arith.DivfOp(lhs, rhs))

    def max(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """The larger, or the other operand of a NaN (max.f32)."""
        return self.put(arith.MaxnumfOp(lhs, rhs))

    def neg(self, value: SSAValue) -> SSAValue:
        """`-value` (neg.f32)."""
        return self.put(arith.NegfOp(value))

    def abs(self, value: SSAValue) -> SSAValue:
        """`|value|` (abs.f32)."""
        return self.put(math.AbsFOp(value))

    def exp2(self, value: SSAValue) -> SSAValue:
        """2^value, approximated (ex2.approx.f32)."""
        return self.put(math.Exp2Op(value, APPROX))

    def tanh(self, value: SSAValue) -> SSAValue:
        """tanh(value), approximated (tanh.approx.f32)."""
        return self.put(math.TanhOp(value, APPROX))

    def rcp(self, value: SSAValue) -> SSAValue:
        """1 / value, approximated (rcp.approx.f32): a divf of 1.0 marked afn."""
        return self.put(arith.DivfOp(self.const(1.0), value, APPROX))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """a * b + c, rounded once (fma.rn.f32)."""
        return self.put(math.FmaOp(a, b, c))


class _PointwisePattern(RewritePattern):
    """Rewrites one fusion op on f32 values (its operands) into arith and math ops."""

    names: tuple[str, ...] = ()
    """The fusion ops this pattern lowers."""

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """The ops of `op` on its operand values; returns the result."""
        raise NotImplementedError

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Replace a fusion op of `names` by the ops of `build`."""
        if op.name not in self.names:
            return
        out = _Ops()
        result = self.build(op, out)
        rewriter.replace(op, out.ops, [result])


class ArithmeticPattern(_PointwisePattern):
    """add, sub, mul, div: `arith.addf`, `subf`, `mulf`, `divf`."""

    names = ("fusion.add", "fusion.sub", "fusion.mul", "fusion.div")

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """One op."""
        lhs, rhs = op.operands[0], op.operands[1]
        if op.name == "fusion.add":
            return out.add(lhs, rhs)
        if op.name == "fusion.sub":
            return out.sub(lhs, rhs)
        if op.name == "fusion.mul":
            return out.mul(lhs, rhs)
        return out.div(lhs, rhs)


class NegPattern(_PointwisePattern):
    """neg: `arith.negf`."""

    names = ("fusion.neg",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """One op."""
        return out.neg(op.operands[0])


class ReluPattern(_PointwisePattern):
    """relu: max(x, 0)."""

    names = ("fusion.relu",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """maxnumf with a constant 0."""
        return out.max(op.operands[0], out.const(0.0))


class ExpPattern(_PointwisePattern):
    """exp: 2^(x log2 e)."""

    names = ("fusion.exp",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """mul by log2 e, exp2."""
        return out.exp2(out.mul(op.operands[0], out.const(LOG2E)))


class TanhPattern(_PointwisePattern):
    """tanh: `math.tanh`, approximated."""

    names = ("fusion.tanh",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """One op."""
        return out.tanh(op.operands[0])


class SigmoidPattern(_PointwisePattern):
    """sigmoid: 1 / (1 + 2^(-x log2 e)); silu: x sigmoid(x)."""

    names = ("fusion.sigmoid", "fusion.silu")

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """exp2, add 1, reciprocal (and mul by x for silu)."""
        x = op.operands[0]
        e = out.exp2(out.mul(x, out.const(-LOG2E)))
        sig = out.rcp(out.add(e, out.const(1.0)))
        return sig if op.name == "fusion.sigmoid" else out.mul(x, sig)


class GeluPattern(_PointwisePattern):
    """gelu: the tanh approximation (`approximate tanh`) or the erf form."""

    names = ("fusion.gelu",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """By the op's `approximate` property."""
        approximate = op.properties.get("approximate")
        if approximate is not None and getattr(approximate, "data", "") == "tanh":
            return self.gelu_tanh(op.operands[0], out)
        return self.gelu_erf(op.operands[0], out)

    @staticmethod
    def gelu_tanh(x: SSAValue, out: _Ops) -> SSAValue:
        """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), with an approximate tanh."""
        x3 = out.mul(out.mul(x, x), x)
        inner = out.mul(out.fma(x3, out.const(0.044715), x), out.const(GELU_C))
        t = out.tanh(inner)
        half_x = out.mul(x, out.const(0.5))
        return out.fma(half_x, t, half_x)

    @staticmethod
    def gelu_erf(x: SSAValue, out: _Ops) -> SSAValue:
        """0.5 x (1 + erf(x / sqrt 2)) = 0.5 x + 0.5 |x| erf(|x| / sqrt 2), the erf by
        Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, far under bf16's
        rounding): erf(z) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1 / (1 + p z)."""
        half_abs = out.mul(out.abs(x), out.const(0.5))
        z = out.mul(half_abs, out.const(2.0 * ERF_SCALE))
        t = out.rcp(out.fma(z, out.const(ERF_P), out.const(1.0)))
        poly = out.const(ERF_A[-1])
        for coefficient in reversed(ERF_A[:-1]):
            poly = out.fma(poly, t, out.const(coefficient))
        poly = out.mul(poly, t)
        squared = out.mul(z, z)
        decay = out.exp2(out.mul(squared, out.const(-LOG2E)))
        erf = out.fma(out.neg(poly), decay, out.const(1.0))
        return out.fma(half_abs, erf, out.mul(x, out.const(0.5)))


PATTERNS: tuple[RewritePattern, ...] = (
    ArithmeticPattern(),
    NegPattern(),
    ReluPattern(),
    ExpPattern(),
    TanhPattern(),
    SigmoidPattern(),
    GeluPattern(),
)
"""The patterns of the epilogue's pointwise ops."""
APPLIER = GreedyRewritePatternApplier(list(PATTERNS), dce_enabled=False)
"""Applies the first pattern that matches (the copies have no uses: no dead-code removal)."""


@dataclass(frozen=True)
class Pointwise:
    """Emits the pointwise fusion ops of an epilogue on f32 values."""

    k: ptx.KernelBuilder
    where: str
    """The prefix of error messages."""

    def rounded(self, value: Scalar) -> SSAValue:
        """The value rounded to the dtype it stands for (`arith.truncf` to it, `arith.extf`
        back to f32)."""
        if value.dtype == "f32" or value.exact:
            return value.value
        low = self.truncated(value.value, value.dtype)
        return self.k.append(arith.ExtFOp(low, Float32Type())).result

    def truncated(self, value: SSAValue, dtype: str) -> SSAValue:
        """An f32 value rounded to nearest even into the 16-bit float `dtype`."""
        return self.k.append(arith.TruncFOp(value, self.sixteen_bit(dtype))).result

    def sixteen_bit(self, dtype: str) -> Attribute:
        """The builtin type of a 16-bit float dtype."""
        found = SIXTEEN_BIT.get(dtype)
        if found is None:
            raise ScheduleError(f"{self.where}: dtype {dtype} is not a 16-bit float")
        return found

    def const_f32(self, value: float) -> SSAValue:
        """An f32 constant."""
        return self.k.append(arith.ConstantOp(FloatAttr(value, Float32Type()))).result

    def pointwise(self, op: Operation, values: list[SSAValue]) -> SSAValue:
        """Fusion op `op` on the f32 values `values` of its operands: a copy of it on
        them, rewritten by `PATTERNS` into arith and math ops where the builder appends."""
        copy = op.clone_without_regions(clone_name_hints=False, clone_operands=False)
        copy.operands = values
        self.k.append(copy)
        after = copy.next_op
        rewriter = PatternRewriter(copy)
        APPLIER.match_and_rewrite(copy, rewriter)
        if not rewriter.has_done_action:
            copy.detach()
            copy.erase()
            raise ScheduleError(f"{self.where}: epilogue op {op.name} is not lowered yet")
        last = self.k.block.last_op if after is None else after.prev_op
        assert last is not None and len(last.results) == 1
        return last.results[0]
