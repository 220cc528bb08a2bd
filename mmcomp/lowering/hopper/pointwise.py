"""The epilogue's pointwise math: fusion ops -> ptx float instructions on f32 registers.

Every epilogue value is an f32 register standing for a value of its dtype (`Scalar`);
`rounded` rounds it to that dtype before it is used, so bf16 and f16 intermediates round
as the reference does. exp, sigmoid and silu use ex2 and rcp; gelu is the tanh
approximation or erf by Abramowitz and Stegun 7.1.26.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

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


@dataclass(frozen=True)
class Pointwise:
    """Emits the pointwise fusion ops of an epilogue."""

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

    def pointwise(self, name: str, op: Operation, regs: list[SSAValue]) -> SSAValue:
        """One pointwise fusion op on f32 registers."""
        k = self.k
        if name == "fusion.add":
            return k.add(regs[0], regs[1])
        if name == "fusion.sub":
            return k.sub(regs[0], regs[1])
        if name == "fusion.mul":
            return k.mul(regs[0], regs[1])
        if name == "fusion.div":
            return k.binary(ptx.DivOp, regs[0], regs[1])
        if name == "fusion.neg":
            return k.unary(ptx.NegOp, regs[0])
        if name == "fusion.relu":
            return k.binary(ptx.MaxOp, regs[0], self.const_f32(0.0))
        if name == "fusion.exp":
            return k.unary(ptx.Ex2Op, k.mul(regs[0], self.const_f32(LOG2E)))
        if name == "fusion.tanh":
            return k.unary(ptx.TanhOp, regs[0])
        if name in ("fusion.sigmoid", "fusion.silu"):
            x = regs[0]
            e = k.unary(ptx.Ex2Op, k.mul(x, self.const_f32(-LOG2E)))
            sig = k.unary(ptx.RcpOp, k.add(e, self.const_f32(1.0)))
            return sig if name == "fusion.sigmoid" else k.mul(x, sig)
        if name == "fusion.gelu":
            approximate = op.properties.get("approximate")
            if approximate is not None and getattr(approximate, "data", "") == "tanh":
                return self.gelu_tanh(regs[0])
            return self.gelu_erf(regs[0])
        raise ScheduleError(f"{self.where}: epilogue op {name} is not lowered yet")

    def gelu_tanh(self, x: SSAValue) -> SSAValue:
        """0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), with tanh.approx."""
        k = self.k
        x3 = k.mul(k.mul(x, x), x)
        inner = k.mul(k.fma(x3, self.const_f32(0.044715), x), self.const_f32(GELU_C))
        t = k.unary(ptx.TanhOp, inner)
        half_x = k.mul(x, self.const_f32(0.5))
        return k.fma(half_x, t, half_x)

    def gelu_erf(self, x: SSAValue) -> SSAValue:
        """0.5 x (1 + erf(x / sqrt 2)) = 0.5 x + 0.5 |x| erf(|x| / sqrt 2), the erf by
        Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, far under bf16's
        rounding): erf(z) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1 / (1 + p z)."""
        k = self.k
        half_abs = k.mul(k.unary(ptx.AbsOp, x), self.const_f32(0.5))
        z = k.mul(half_abs, self.const_f32(2.0 * ERF_SCALE))
        t = k.unary(ptx.RcpOp, k.fma(z, self.const_f32(ERF_P), self.const_f32(1.0)))
        poly = self.const_f32(ERF_A[-1])
        for coefficient in reversed(ERF_A[:-1]):
            poly = k.fma(poly, t, self.const_f32(coefficient))
        poly = k.mul(poly, t)
        decay = k.unary(ptx.Ex2Op, k.mul(k.mul(z, z), self.const_f32(-LOG2E)))
        erf = k.fma(k.unary(ptx.NegOp, poly), decay, self.const_f32(1.0))
        return k.fma(half_abs, erf, k.mul(x, self.const_f32(0.5)))
