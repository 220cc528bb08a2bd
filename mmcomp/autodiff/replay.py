"""Replaying a fusion function's ops into another Fusion through the builder API."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from mmcomp.dialects import fusion as fd
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import Fusion, Value
from mmcomp.ir.narrowing import is_tensor

Operand = Value | float
"""A replayed value: a value of the target fusion, or a splat's constant."""

_BINARY: dict[type[Operation], str] = {
    fd.AddOp: "add",
    fd.SubOp: "sub",
    fd.MulOp: "mul",
    fd.DivOp: "div",
}
_UNARY: dict[type[Operation], str] = {
    fd.NegOp: "neg",
    fd.ExpOp: "exp",
    fd.TanhOp: "tanh",
    fd.SigmoidOp: "sigmoid",
    fd.SiluOp: "silu",
    fd.ReluOp: "relu",
}


def extents(shape: Sequence[int]) -> list[int | None]:
    """A shape for `Fusion.input`: a dynamic extent as None."""
    return [None if fd.is_dynamic(extent) else extent for extent in shape]


def _tensor(ssa: SSAValue) -> TensorType:
    value_type = ssa.type
    assert is_tensor(value_type)
    return value_type


def shape_of(ssa: SSAValue) -> tuple[int, ...]:
    """The shape of a tensor SSA value (dynamic extents as mmcomp.DYNAMIC)."""
    return tuple(_tensor(ssa).get_shape())


def dtype_of(ssa: SSAValue) -> str:
    """The short element type name of a tensor SSA value."""
    found = fd.dtype_name(_tensor(ssa).element_type)
    assert found is not None
    return found


class Replayer:
    """Replays the values of `source` into `target`, each once, on demand."""

    def __init__(
        self,
        target: Fusion,
        source: FuncOp,
        on_arg: Callable[[BlockArgument], Operand],
        on_op: Callable[[Operation], Operand | None] | None = None,
    ):
        self.target = target
        """The Fusion built into."""
        self.source = source
        """The function replayed."""
        self.on_arg = on_arg
        """The replayed value of a function argument."""
        self.on_op = on_op
        """A replacement for an op's result (None: replay the op)."""
        self.memo: dict[SSAValue, Operand] = {}

    def outputs(self) -> list[Operand]:
        """The replayed values of the function's results."""
        last = self.source.body.block.last_op
        assert isinstance(last, ReturnOp)
        return [self.value(value) for value in last.operands]

    def value(self, ssa: SSAValue) -> Operand:
        """The replayed value of `ssa`."""
        found = self.memo.get(ssa)
        if found is not None:
            return found
        if isinstance(ssa, BlockArgument):
            found = self.on_arg(ssa)
        else:
            assert isinstance(ssa.owner, Operation)
            replaced = self.on_op(ssa.owner) if self.on_op is not None else None
            found = replaced if replaced is not None else self._replay(ssa.owner)
        self.memo[ssa] = found
        return found

    def tensor(self, ssa: SSAValue, where: str) -> Value:
        """The replayed value of `ssa`, which must not be a constant."""
        found = self.value(ssa)
        if not isinstance(found, Value):
            raise FusionError(
                f"mmcomp.grad: {where}: a constant (fusion.splat) operand is not differentiated "
                "here; write the constant on the other side of a binary op"
            )
        return found

    def _replay(self, op: Operation) -> Operand:
        f = self.target
        where = op.name
        if isinstance(op, fd.SplatOp):
            return op.scalar
        scales: dict[str, Value] = {}
        if isinstance(op, fd.ScaledContraction) and op.scales:
            scale_a, scale_b = (self.tensor(scale, where) for scale in op.scales)
            scales = {"scale_a": scale_a, "scale_b": scale_b}
        if isinstance(op, fd.LinearOp):
            bias = self.tensor(op.bias, where) if op.bias is not None else None
            return f.linear(self.tensor(op.a, where), self.tensor(op.w, where), bias, **scales)
        if isinstance(op, fd.MatmulOp):
            return f.matmul(self.tensor(op.a, where), self.tensor(op.b, where), **scales)
        if isinstance(op, fd.FusedMultiplySumOp):
            axes = [int(axis) for axis in op.axes.get_values()]
            a, b = self.tensor(op.a, where), self.tensor(op.b, where)
            return f.fused_multiply_sum(a, b, axes, **scales)
        if isinstance(op, fd.BroadcastOp):
            found = self.value(op.input)
            if not isinstance(found, Value) or not any(op.inserted):
                return found
            return f.broadcast(found, list(op.inserted))
        if isinstance(op, fd.CastOp):
            return f.cast(self.tensor(op.input, where), dtype_of(op.result))
        if isinstance(op, fd.GeluOp):
            return f.gelu(self.tensor(op.input, where), op.approximate.data)
        binary = _BINARY.get(type(op))
        if binary is not None:
            assert isinstance(op, fd.BinaryOp)
            lhs, rhs = self.value(op.lhs), self.value(op.rhs)
            return getattr(f, binary)(lhs, rhs)
        unary = _UNARY.get(type(op))
        if unary is not None:
            assert isinstance(op, fd.UnaryOp)
            return getattr(f, unary)(self.tensor(op.input, where))
        raise FusionError(f"mmcomp.grad: {op.name} is not replayed (an op the fusion API lacks)")
