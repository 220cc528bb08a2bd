"""The epilogue's pointwise math: fusion ops -> ptx float instructions, as rewrite patterns.

Every epilogue value is an f32 register standing for a value of its dtype (`Scalar`);
`Pointwise.rounded` rounds it to that dtype before it is used, so bf16 and f16
intermediates round as the reference does. The epilogue evaluates its body element by
element; each pointwise op at an element is a copy of the fusion op on the f32 registers of
its operands, which one pattern per op (`PATTERNS`, applied by xDSL's pattern rewriter)
replaces by ptx instructions: add, sub, mul, div, neg; relu as max with 0; exp, sigmoid
and silu with ex2 and rcp; tanh with tanh.approx; gelu as the tanh approximation or erf by
Abramowitz and Stegun 7.1.26.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue
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


@dataclass
class Scalar:
    """One epilogue value at one element: an f32 register and the dtype it stands for."""

    reg: SSAValue
    dtype: str
    exact: bool = False
    """The register already holds a value of `dtype` (a loaded element): no rounding."""


@dataclass
class _Ops:
    """The ptx instructions a pattern builds, in order."""

    ops: list[Operation] = field(default_factory=list[Operation])

    def put(self, op: ptx.PtxInstruction) -> SSAValue:
        """Add `op`; its result."""
        self.ops.append(op)
        return op.results[0]

    def const(self, value: float) -> SSAValue:
        """An f32 immediate in a register."""
        return self.put(ptx.ConstOp(value, ptx.F32))

    def binary(self, kind: type[ptx.BinaryOp], lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """A two-operand instruction."""
        return self.put(kind(lhs, rhs))

    def unary(self, kind: type[ptx.UnaryOp], value: SSAValue) -> SSAValue:
        """A one-operand instruction."""
        return self.put(kind(value))

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """`fma.rn.f32` a * b + c."""
        return self.put(ptx.FmaOp(a, b, c))


class _PointwisePattern(RewritePattern):
    """Rewrites one fusion op on f32 registers (its operands) into ptx instructions."""

    names: tuple[str, ...] = ()
    """The fusion ops this pattern lowers."""

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """The instructions of `op` on its operand registers; returns the result."""
        raise NotImplementedError

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        """Replace a fusion op of `names` by the instructions of `build`."""
        if op.name not in self.names:
            return
        out = _Ops()
        result = self.build(op, out)
        rewriter.replace(op, out.ops, [result])


class ArithmeticToPtx(_PointwisePattern):
    """add, sub, mul, div: the ptx instruction of the same name."""

    KINDS: dict[str, type[ptx.BinaryOp]] = {
        "fusion.add": ptx.AddOp,
        "fusion.sub": ptx.SubOp,
        "fusion.mul": ptx.MulOp,
        "fusion.div": ptx.DivOp,
    }
    names = tuple(KINDS)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """One instruction."""
        return out.binary(self.KINDS[op.name], op.operands[0], op.operands[1])


class NegToPtx(_PointwisePattern):
    """neg: `neg.f32`."""

    names = ("fusion.neg",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """One instruction."""
        return out.unary(ptx.NegOp, op.operands[0])


class ReluToPtx(_PointwisePattern):
    """relu: max(x, 0)."""

    names = ("fusion.relu",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """max with an immediate 0."""
        return out.binary(ptx.MaxOp, op.operands[0], out.const(0.0))


class ExpToPtx(_PointwisePattern):
    """exp: 2^(x log2 e)."""

    names = ("fusion.exp",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """mul by log2 e, ex2."""
        return out.unary(ptx.Ex2Op, out.binary(ptx.MulOp, op.operands[0], out.const(LOG2E)))


class TanhToPtx(_PointwisePattern):
    """tanh: `tanh.approx.f32`."""

    names = ("fusion.tanh",)

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """One instruction."""
        return out.unary(ptx.TanhOp, op.operands[0])


class SigmoidToPtx(_PointwisePattern):
    """sigmoid: 1 / (1 + 2^(-x log2 e)); silu: x sigmoid(x)."""

    names = ("fusion.sigmoid", "fusion.silu")

    def build(self, op: Operation, out: _Ops) -> SSAValue:
        """ex2, add 1, rcp (and mul by x for silu)."""
        x = op.operands[0]
        e = out.unary(ptx.Ex2Op, out.binary(ptx.MulOp, x, out.const(-LOG2E)))
        sig = out.unary(ptx.RcpOp, out.binary(ptx.AddOp, e, out.const(1.0)))
        return sig if op.name == "fusion.sigmoid" else out.binary(ptx.MulOp, x, sig)


class GeluToPtx(_PointwisePattern):
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
        """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), with tanh.approx."""
        x3 = out.binary(ptx.MulOp, out.binary(ptx.MulOp, x, x), x)
        inner = out.binary(ptx.MulOp, out.fma(x3, out.const(0.044715), x), out.const(GELU_C))
        t = out.unary(ptx.TanhOp, inner)
        half_x = out.binary(ptx.MulOp, x, out.const(0.5))
        return out.fma(half_x, t, half_x)

    @staticmethod
    def gelu_erf(x: SSAValue, out: _Ops) -> SSAValue:
        """0.5 x (1 + erf(x / sqrt 2)) = 0.5 x + 0.5 |x| erf(|x| / sqrt 2), the erf by
        Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, far under bf16's
        rounding): erf(z) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1 / (1 + p z)."""
        half_abs = out.binary(ptx.MulOp, out.unary(ptx.AbsOp, x), out.const(0.5))
        z = out.binary(ptx.MulOp, half_abs, out.const(2.0 * ERF_SCALE))
        t = out.unary(ptx.RcpOp, out.fma(z, out.const(ERF_P), out.const(1.0)))
        poly = out.const(ERF_A[-1])
        for coefficient in reversed(ERF_A[:-1]):
            poly = out.fma(poly, t, out.const(coefficient))
        poly = out.binary(ptx.MulOp, poly, t)
        squared = out.binary(ptx.MulOp, z, z)
        decay = out.unary(ptx.Ex2Op, out.binary(ptx.MulOp, squared, out.const(-LOG2E)))
        erf = out.fma(out.unary(ptx.NegOp, poly), decay, out.const(1.0))
        return out.fma(half_abs, erf, out.binary(ptx.MulOp, x, out.const(0.5)))


PATTERNS: tuple[RewritePattern, ...] = (
    ArithmeticToPtx(),
    NegToPtx(),
    ReluToPtx(),
    ExpToPtx(),
    TanhToPtx(),
    SigmoidToPtx(),
    GeluToPtx(),
)
"""The patterns of the epilogue's pointwise ops."""
APPLIER = GreedyRewritePatternApplier(list(PATTERNS), dce_enabled=False)
"""Applies the first pattern that matches (the copies have no uses: no dead-code removal)."""


@dataclass(frozen=True)
class Pointwise:
    """Emits the pointwise fusion ops of an epilogue on f32 registers."""

    k: ptx.KernelBuilder
    where: str
    """The prefix of error messages."""

    def rounded(self, value: Scalar) -> SSAValue:
        """The register rounded to the dtype it stands for."""
        k = self.k
        if value.dtype == "f32" or value.exact:
            return value.reg
        low = k.cvt(value.reg, ptx.reg(value.dtype), "rn")
        return k.cvt(low, ptx.F32)

    def const_f32(self, value: float) -> SSAValue:
        """An f32 immediate in a register."""
        return self.k.const(value, ptx.F32)

    def pointwise(self, op: Operation, regs: list[SSAValue]) -> SSAValue:
        """Fusion op `op` on the f32 registers `regs` of its operands: a copy of it on
        them, rewritten by `PATTERNS` into ptx instructions where the builder appends."""
        copy = op.clone_without_regions(clone_name_hints=False, clone_operands=False)
        copy.operands = regs
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
