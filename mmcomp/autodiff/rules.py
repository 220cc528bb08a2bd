"""The derivative rules of the fusion dialect's pointwise ops, written as fusion ops.

Each rule takes the backward fusion's builder, the op's operands and result as values of
that fusion (replayed from the forward, or recomputed), and the adjoint of the result (an
f32 value of the result's shape), and gives the adjoint of each operand (None where an
operand is a constant). Adjoints are f32: the rules compute in f32, as a kernel's
epilogue does, and the gradient is rounded to its input's dtype once, where it is written.

The dialect has no comparison or select, so the two rules that need a step function build
it from `relu` (`step`), and the exact GELU's normal CDF comes from the forward's own
`gelu(x) / x` away from 0 (`normal_cdf`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.ir import Operation

from mmcomp.dialects import fusion as fd
from mmcomp.frontend.builder import Fusion, Value

Operand = Value | float
"""An operand as the rules see it: a value of the backward fusion, or a splat constant."""

Rule = Callable[[Fusion, Operation, Sequence[Operand], Value, Value], Sequence[Value | None]]
"""(builder, forward op, operands, result, adjoint of the result) -> operand adjoints."""

_HUGE = 2.0**127
"""A power of two finite in f32 whose square overflows: x * HUGE * HUGE is >= 1 for every
positive f32 x, subnormals included."""

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def f32(f: Fusion, value: Operand) -> Operand:
    """`value` in f32 (a constant stays a constant)."""
    return f.cast(value, "f32") if isinstance(value, Value) else value


def step(f: Fusion, x: Value) -> Value:
    """1 where x > 0, else 0 (x f32): min(1, relu(x) * 2**127 * 2**127) = 1 - relu(1 - ...)."""
    scaled = f.relu(x) * _HUGE * _HUGE
    return 1.0 - f.relu(1.0 - scaled)


def normal_cdf(f: Fusion, x: Value) -> Value:
    """Phi(x) from gelu(x) = x Phi(x): gelu(x) / x where x != 0, 1/2 at 0 (x f32)."""
    nonzero = step(f, f.relu(x) + f.relu(-x))
    zero = 1.0 - nonzero
    return nonzero * f.gelu(x, "none") / (x + zero) + zero * 0.5


def _constant(operands: Sequence[Operand], index: int) -> bool:
    return not isinstance(operands[index], Value)


def _add(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    return [None if _constant(ops, 0) else g, None if _constant(ops, 1) else g]


def _sub(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    return [None if _constant(ops, 0) else g, None if _constant(ops, 1) else -g]


def _mul(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    lhs, rhs = f32(f, ops[0]), f32(f, ops[1])
    return [None if _constant(ops, 0) else g * rhs, None if _constant(ops, 1) else g * lhs]


def _div(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    quotient = g / f32(f, ops[1])
    return [
        None if _constant(ops, 0) else quotient,
        None if _constant(ops, 1) else -(quotient * f.cast(r, "f32")),
    ]


def _neg(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    return [-g]


def _exp(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    return [g * f.cast(r, "f32")]


def _tanh(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    t = f.cast(r, "f32")
    return [g * (1.0 - t * t)]


def _sigmoid(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    s = f.cast(r, "f32")
    return [g * (s * (1.0 - s))]


def _silu(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    x = f32(f, ops[0])
    assert isinstance(x, Value)
    s = f.sigmoid(x)
    return [g * (s * (1.0 + x * (1.0 - s)))]


def _relu(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    return [g * step(f, f.cast(r, "f32"))]


def _gelu(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    assert isinstance(op, fd.GeluOp)
    x = f32(f, ops[0])
    assert isinstance(x, Value)
    if op.approximate.data == "tanh":
        t = f.tanh(_SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x))
        du = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x * x)
        return [g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)]
    density = f.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return [g * (normal_cdf(f, x) + x * density)]


def _cast(f: Fusion, op: Operation, ops: Sequence[Operand], r: Value, g: Value):
    return [g]


RULES: dict[type[Operation], Rule] = {
    fd.AddOp: _add,
    fd.SubOp: _sub,
    fd.MulOp: _mul,
    fd.DivOp: _div,
    fd.NegOp: _neg,
    fd.ExpOp: _exp,
    fd.TanhOp: _tanh,
    fd.SigmoidOp: _sigmoid,
    fd.SiluOp: _silu,
    fd.ReluOp: _relu,
    fd.GeluOp: _gelu,
    fd.CastOp: _cast,
}
"""The rule of each pointwise op (broadcast, splat and the contractions are the
transformation's own: a broadcast's adjoint is a sum, a splat has none)."""
