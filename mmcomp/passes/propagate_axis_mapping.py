"""`propagate-axis-mapping`: lower contractions to `fusion.mma` and attach the axis roles.

Every `fusion.matmul`, `fusion.linear` and `fusion.fused_multiply_sum` becomes a
`fusion.mma` whose axis map names the role of each axis of A, B and the result (a linear's
bias becomes a cast to f32, a broadcast and an add: the epilogue a kernel runs on its f32
accumulator). The function then carries its iteration space (`fusion.space`), and every
tensor value its roles (`fusion.roles` on op results and function arguments); see
`mmcomp.roles` and docs/axis-roles.md. Inconsistent roles are verifier errors at the op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion import AddOp, BroadcastOp, CastOp, LinearOp, MmaOp, tensor_type
from mmcomp.errors import FusionError
from mmcomp.roles import ContractionRoles, annotate, infer_axis_mapping

if TYPE_CHECKING:
    from mmcomp.frontend import Fusion


def _lower(contraction: ContractionRoles) -> None:
    """Replace one contraction by `fusion.mma` (plus the bias epilogue of a linear)."""
    op = contraction.op
    if isinstance(op, MmaOp):
        return
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    mma = MmaOp(
        op.operands[0],
        op.operands[1],
        contraction.a_roles,
        contraction.b_roles,
        contraction.out_roles,
        result_type,
    )
    new_ops: list[Operation] = [mma]
    result: SSAValue = mma.result
    if isinstance(op, LinearOp) and op.bias is not None:
        hint = op.results[0].name_hint
        bias = op.bias
        bias_hint = bias.name_hint or "bias"
        bias_type = bias.type
        assert isinstance(bias_type, TensorType)
        if bias_type.element_type != result_type.element_type:
            cast = CastOp(bias, tensor_type(bias_type.get_shape(), "f32"))
            cast.result.name_hint = f"{bias_hint}_f32"
            new_ops.append(cast)
            bias = cast.result
        rank = len(result_type.get_shape())
        broadcast = BroadcastOp(bias, [True] * (rank - 1) + [False], result_type)
        add = AddOp(mma.result, broadcast.result, result_type)
        broadcast.result.name_hint = f"{bias_hint}_row"
        if hint is not None:
            mma.result.name_hint = f"{hint}_acc"
            add.result.name_hint = hint
        new_ops += [broadcast, add]
        result = add.result
    Rewriter.replace_op(op, new_ops, [result])


def propagate_function(func: FuncOp) -> None:
    """Lower `func`'s contractions to fusion.mma and store its axis mapping in the IR."""
    mapping = infer_axis_mapping(func)
    for contraction in mapping.contractions:
        _lower(contraction)
    annotate(func, infer_axis_mapping(func))


def _is_fusion_function(func: FuncOp) -> bool:
    return any(op.name.startswith("fusion.") for op in func.body.walk())


@dataclass(frozen=True)
class PropagateAxisMapping(ModulePass):
    """Lower contractions to fusion.mma and give every tensor axis its role."""

    name = "propagate-axis-mapping"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [child for child in op.walk() if isinstance(child, FuncOp)]:
            if _is_fusion_function(func):
                propagate_function(func)


def propagate(fusion: Fusion | ModuleOp) -> ModuleOp:
    """A copy of the fusion's module after propagate-axis-mapping; FusionError if roles clash."""
    module = fusion if isinstance(fusion, ModuleOp) else getattr(fusion, "module", None)
    if not isinstance(module, ModuleOp):
        raise FusionError(
            f"propagate: expected a Fusion or a builtin.module, found {type(fusion).__name__}"
        )
    copy = module.clone()
    try:
        PropagateAxisMapping().apply(Context(), copy)
        copy.verify()
    except VerifyException as error:
        raise FusionError(str(error)) from None
    return copy
