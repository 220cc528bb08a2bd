"""`propagate-axis-mapping`: lower contractions to `fusion.mma` and attach the axis roles.

Every `fusion.matmul`, `fusion.linear` and `fusion.fused_multiply_sum` becomes a
`fusion.mma` whose axis map names the role of each axis of A, B and the result (a linear's
bias becomes a cast to f32, a broadcast and an add: the epilogue a kernel runs on its f32
accumulator). A `fusion.broadcast` of a factor folds into the mma's axis map: the mma
reads the broadcast's input, whose inserted axes are simply absent, exactly as if the
input had been declared with size-1 axes there (nvFuser's `broadcast(a, [False, True,
False])`, `broadcast(b, [True, False, False])`, `fused_multiply_sum(..., [2])` becomes the
mma of a[M, K] and b[N, K]). The function then carries its iteration space
(`fusion.space`), and every tensor value its roles (`fusion.roles` on op results and
function arguments); see `mmcomp.analysis.roles` and docs/axis-roles.md. Inconsistent roles are
verifier errors at the op. On IR that already carries them (a printed stage resumed), the
stored space and roles must be those it derives again: one that differs is an error, not
silently replaced. A `fusion.grouped_linear` stays as it is: its layout gives its roles
(`[m, k]` or `[g, m, k]` x, `[g, n, k]` w, `[g]` group sizes; docs/grouped.md). An empty
fusion (tensor arguments, nothing computed, nothing returned) is an error too, as is any
fusion function without outputs or without a contraction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.analysis.roles import (
    ABSENT,
    ContractionRoles,
    annotate,
    check_annotations,
    infer_axis_mapping,
)
from mmcomp.analysis.schedule_view import is_empty_fusion
from mmcomp.dialects.fusion import (
    AddOp,
    BroadcastOp,
    CastOp,
    GroupedLinearOp,
    LinearOp,
    MmaOp,
    MulOp,
    ScaledContraction,
    tensor_type,
)
from mmcomp.dialects.sched import ScheduleOp
from mmcomp.errors import FusionError
from mmcomp.frontend.builder import function_problem
from mmcomp.ir.attributes import check_attributes
from mmcomp.ir.diagnostics import at, is_located
from mmcomp.ir.narrowing import is_tensor

if TYPE_CHECKING:
    from mmcomp.frontend.builder import Fusion


def _unbroadcast(value: SSAValue, roles: tuple[str, ...]) -> tuple[SSAValue, tuple[str, ...]]:
    """The input of a `fusion.broadcast` chain ending in `value`, with its axes' roles.

    An inserted axis is absent from the input; a kept axis keeps its role, or becomes
    absent (_) where the broadcast expands it from extent 1.
    """
    while isinstance(value, OpResult) and isinstance(value.op, BroadcastOp):
        broadcast = value.op
        in_shape = broadcast.input.type
        assert isinstance(in_shape, TensorType)
        kept = [axis for axis, inserted in enumerate(broadcast.inserted) if not inserted]
        out_shape = tuple(_shape_of(value))
        roles = tuple(
            roles[out_axis] if extent == out_shape[out_axis] else ABSENT
            for extent, out_axis in zip(in_shape.get_shape(), kept, strict=True)
        )
        value = broadcast.input
    return value, roles


def _shape_of(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return tuple(value_type.get_shape())


def _folded_factors(
    contraction: ContractionRoles,
) -> tuple[SSAValue, tuple[str, ...], SSAValue, tuple[str, ...]]:
    """The contraction's factors with their broadcasts folded into the axis map.

    A broadcast of a factor only says which iteration axes it lacks: the mma reads the
    broadcast's input, its roles without the inserted axes (as if the input had been
    declared with size-1 axes there). A fold that would leave an output axis in neither
    factor (a broadcast that expands m or n) is not made.
    """
    a, b = contraction.op.operands[0], contraction.op.operands[1]
    a_roles, b_roles = contraction.a_roles, contraction.b_roles
    folded_a, folded_a_roles = _unbroadcast(a, a_roles)
    folded_b, folded_b_roles = _unbroadcast(b, b_roles)
    present = set(folded_a_roles) | set(folded_b_roles)
    if any(role not in present for role in contraction.out_roles if role != ABSENT):
        return a, a_roles, b, b_roles
    if "k" not in folded_a_roles or "k" not in folded_b_roles:
        return a, a_roles, b, b_roles
    return folded_a, folded_a_roles, folded_b, folded_b_roles


def _scale_broadcast(
    op: Operation, scale: SSAValue, roles: tuple[str, ...], out_roles: tuple[str, ...]
) -> list[bool]:
    """The `new_dims` that broadcast a scale of `roles` to the result's `out_roles`: each
    scale axis lines up with the result axis of its role (an absent one, of extent 1, with
    the next result axis that no later scale axis needs)."""
    new_dims: list[bool] = []
    position = 0
    for role in out_roles:
        if position < len(roles) and (
            roles[position] == role or (roles[position] == ABSENT and role not in roles[position:])
        ):
            new_dims.append(False)
            position += 1
            continue
        new_dims.append(True)
    if position != len(roles):
        raise FusionError(
            at(
                op,
                f"{op.name}: a scale of roles {list(roles)} (%{scale.name_hint or 'scale'}) does "
                f"not line up with the result's roles {list(out_roles)} in order",
            )
        )
    return new_dims


def _scaled(contraction: ContractionRoles, result: SSAValue, new_ops: list[Operation]) -> SSAValue:
    """`result` times the contraction's per-tensor or row-wise scales (f32 multiplies of the
    accumulator, in the epilogue), the ops appended to `new_ops`."""
    op = contraction.op
    if contraction.scale_roles is None or not isinstance(op, ScaledContraction):
        return result
    if op.scaling == "block":
        return result
    result_type = result.type
    assert is_tensor(result_type)
    hint = op.results[0].name_hint
    for suffix, scale, roles in zip(("a", "b"), op.scales, contraction.scale_roles, strict=True):
        operand = scale
        if _shape_of(scale) != tuple(result_type.get_shape()):
            new_dims = _scale_broadcast(op, scale, roles, contraction.out_roles)
            broadcast = BroadcastOp(scale, new_dims, result_type)
            broadcast.result.name_hint = f"{scale.name_hint or 'scale'}_bcast"
            new_ops.append(broadcast)
            operand = broadcast.result
        mul = MulOp(result, operand, result_type)
        if hint is not None:
            mul.result.name_hint = f"{hint}_scale_{suffix}"
        new_ops.append(mul)
        result = mul.result
    return result


def _lower(contraction: ContractionRoles) -> None:
    """Replace one contraction by `fusion.mma` (plus the scale and bias epilogue), its
    factors' broadcasts folded into the mma's axis map."""
    op = contraction.op
    a, a_roles, b, b_roles = _folded_factors(contraction)
    blocked = isinstance(op, ScaledContraction) and op.scaling == "block"
    scaled = contraction.scale_roles is not None and not blocked
    if isinstance(op, MmaOp) and a is op.a and b is op.b and not scaled:
        return
    result_type = op.results[0].type
    assert is_tensor(result_type)
    # Block-wise scales stay on the mma: each K block's product takes its own scales (the
    # promotion in the mainloop), they do not factor out of the sum.
    scales = op.scales if blocked and isinstance(op, ScaledContraction) else ()
    mma = MmaOp(a, b, a_roles, b_roles, contraction.out_roles, result_type, scales)
    mma.location = op.location
    if blocked:
        mma.result.name_hint = op.results[0].name_hint
    if isinstance(op, MmaOp) and not scaled:
        mma.result.name_hint = op.result.name_hint
        Rewriter.replace_op(op, [mma])
        return
    new_ops: list[Operation] = [mma]
    result: SSAValue = _scaled(contraction, mma.result, new_ops)
    if result is not mma.result and op.results[0].name_hint is not None:
        mma.result.name_hint = f"{op.results[0].name_hint}_acc"
        if not (isinstance(op, LinearOp) and op.bias is not None):
            result.name_hint = op.results[0].name_hint
    if isinstance(op, LinearOp) and op.bias is not None:
        hint = op.results[0].name_hint
        bias = op.bias
        bias_hint = bias.name_hint or "bias"
        bias_type = bias.type
        assert is_tensor(bias_type)
        if bias_type.element_type != result_type.element_type:
            cast = CastOp(bias, tensor_type(bias_type.get_shape(), "f32"))
            cast.result.name_hint = f"{bias_hint}_f32"
            new_ops.append(cast)
            bias = cast.result
        rank = len(result_type.get_shape())
        broadcast = BroadcastOp(bias, [True] * (rank - 1) + [False], result_type)
        add = AddOp(result, broadcast.result, result_type)
        broadcast.result.name_hint = f"{bias_hint}_row"
        if hint is not None:
            mma.result.name_hint = f"{hint}_acc"
            add.result.name_hint = hint
        new_ops += [broadcast, add]
        result = add.result
    Rewriter.replace_op(op, new_ops, [result])


def _erase_dead_broadcasts(func: FuncOp) -> None:
    """Erase the broadcasts that folding left without uses (last first, so chains go)."""
    for op in reversed(list(func.body.walk())):
        if isinstance(op, BroadcastOp) and not op.result.uses:
            op.detach()
            op.erase()


def _check_outputs(func: FuncOp) -> None:
    """A kernel computes its outputs: a fusion function without any is refused."""
    terminator = func.body.block.last_op
    if isinstance(terminator, ReturnOp) and not terminator.operands:
        message = at(
            func,
            f"func.func @{func.sym_name.data}: expected at least one output (a func.return "
            "operand; Fusion.output in Python), found none",
        )
        func.emit_error(message, VerifyException(message))


def propagate_function(func: FuncOp) -> None:
    """Lower `func`'s contractions to fusion.mma and store its axis mapping in the IR
    (FusionError where a space or roles already stored differ from it)."""
    _check_outputs(func)
    mapping = check_annotations(func, infer_axis_mapping(func), pass_name=PropagateAxisMapping.name)
    for contraction in mapping.contractions:
        if not isinstance(contraction.op, GroupedLinearOp):
            _lower(contraction)
    _erase_dead_broadcasts(func)
    annotate(func, infer_axis_mapping(func))


def _is_fusion_function(func: FuncOp) -> bool:
    """Whether the pass takes `func`: fusion ops, or an empty fusion (refused)."""
    return any(op.name.startswith("fusion.") for op in func.body.walk()) or is_empty_fusion(func)


@dataclass(frozen=True)
class PropagateAxisMapping(ModulePass):
    """Lower contractions to fusion.mma and give every tensor axis its role."""

    name = "propagate-axis-mapping"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_attributes(op, self.name)
        for func in [child for child in op.walk() if isinstance(child, FuncOp)]:
            if not _is_fusion_function(func):
                continue
            if not any(isinstance(inner, ScheduleOp) for inner in func.body.walk()):
                problem = function_problem(func)
                if problem is not None:
                    raise DiagnosticException(
                        problem if is_located(problem) else f"{self.name}: {problem}"
                    )
            try:
                propagate_function(func)
            except FusionError as error:
                message = str(error)
                raise DiagnosticException(
                    message if is_located(message) else f"{self.name}: {message}"
                ) from error


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
    except (VerifyException, DiagnosticException) as error:
        raise FusionError(str(error)) from None
    return copy
