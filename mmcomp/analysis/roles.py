"""Axis roles: the one iteration space of a fusion and the role of each tensor axis in it.

A fusion kernel walks one iteration space, `b0, b1, ..., m, n, k` (batch axes outermost).
Every axis of every tensor value of the fusion is one of those iteration axes, or `_`
(absent: a size-1 axis that broadcasts). The contractions fix the roles of their operands
and results; pointwise ops, casts and broadcasts carry them to every other value (forwards
and backwards, so an epilogue operand such as bias[N] or T[M, N] gets its roles from the
value it meets). Values that no contraction reaches line up with the contraction's result,
`[b..., m, n]`, aligned to the right.

`infer_axis_mapping(func)` computes the mapping, and reports inconsistent roles as a
verifier error at the op where they meet. After `propagate-axis-mapping` the mapping is also
stored in the IR (`fusion.space` on the function, `fusion.roles` on every op and argument);
`roles_of` and `iteration_space` read it from there, or infer it when it is absent. IR
resumed from a printed stage may have been edited, so the passes that read the stored
mapping first compare it with the one inferred from the types and ops
(`check_annotations`). See docs/axis-roles.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NoReturn, cast

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion import (
    BLOCK_ROLES,
    GROUPED_N,
    QUANTIZE_GROUP,
    AxisRolesAttr,
    BroadcastOp,
    CastOp,
    FusedMultiplySumOp,
    GroupedLinearOp,
    IterationSpaceAttr,
    LinearOp,
    MatmulOp,
    MmaOp,
    PointwiseOp,
    QuantizeOp,
    QuantizeScaleOp,
    ScaledContraction,
    format_extent,
    is_dynamic,
    may_be_dynamic,
    role_order,
)
from mmcomp.errors import FusionError
from mmcomp.ir.diagnostics import at, location, stage_message

if TYPE_CHECKING:
    from mmcomp.frontend.builder import Fusion, Value

ABSENT = "_"
"""The role of a size-1 axis that broadcasts: it is no iteration axis."""

ROLES_KEY = "fusion.roles"
"""The attribute name of an op's result roles and of a function argument's roles."""

SPACE_KEY = "fusion.space"
"""The attribute name of a function's iteration space."""

_ROLE_NAMES = {"g": "G (the groups)", "m": "M", "n": "N", "k": "K"}

Node = tuple[SSAValue, int]
"""One axis of one tensor value."""


def batch_role(index: int) -> str:
    """The role of the batch axis `index` (0 is the outermost): b0, b1, ..."""
    return f"b{index}"


def axes_by_role(roles: Sequence[str]) -> dict[str, int]:
    """Iteration axis -> the tensor axis that has it, for the axes a value has (not `_`)."""
    return {role: axis for axis, role in enumerate(roles) if role != ABSENT}


def _role_name(role: str) -> str:
    if role in _ROLE_NAMES:
        return _ROLE_NAMES[role]
    return f"batch axis {role}"


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return tuple(value_type.get_shape())


def _fail(op: Operation, message: str) -> NoReturn:
    """Raise a verifier error at `op`, as a verifier would, so that diagnostics point at it
    (`file:line:col: error: ...` for an op parsed from text)."""
    message = at(op, message)
    op.emit_error(message, VerifyException(message))


@dataclass
class ContractionRoles:
    """The roles that one contraction gives its operands and result, and the extents it fixes."""

    op: Operation
    """The contraction: fusion.matmul, fusion.linear, fusion.fused_multiply_sum or fusion.mma."""
    a_roles: tuple[str, ...]
    """The roles of the first factor's axes."""
    b_roles: tuple[str, ...]
    """The roles of the second factor's axes."""
    out_roles: tuple[str, ...]
    """The roles of the result's axes."""
    extents: dict[str, int]
    """The extent of each iteration axis the contraction spans (absent axes are 1)."""
    bias_roles: tuple[str, ...] | None = None
    """The roles of fusion.linear's or fusion.grouped_linear's bias, when it has one."""
    scale_roles: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    """The roles of the per-tensor or row-wise scales of fp8 factors, when it has them."""

    def operand_roles(self) -> Iterator[tuple[str, SSAValue, tuple[str, ...]]]:
        """(what, value, roles) for each operand and the result."""
        yield "operand 'a'", self.op.operands[0], self.a_roles
        yield "operand 'b'", self.op.operands[1], self.b_roles
        if self.bias_roles is not None and isinstance(self.op, LinearOp | GroupedLinearOp):
            assert self.op.bias is not None
            yield "operand 'bias'", self.op.bias, self.bias_roles
        if isinstance(self.op, GroupedLinearOp):
            yield f"operand '{self.op.group_size_keyword}'", self.op.group_sizes, ("g",)
        if self.scale_roles is not None and isinstance(self.op, ScaledContraction):
            for name, value, roles in zip(
                ("scale_a", "scale_b"), self.op.scales, self.scale_roles, strict=True
            ):
                yield f"operand '{name}'", value, roles
        yield "result", self.op.results[0], self.out_roles


def _with_scales(contraction: ContractionRoles) -> ContractionRoles:
    """`contraction` with the roles of its scales: none for a per-tensor scale, its factor's
    roles without k for a row-wise one, its factor's roles with each blocked axis's block
    role (k128 for k, n128 for n: `BLOCK_ROLES`) for a block-wise one."""
    op = contraction.op
    assert isinstance(op, ScaledContraction)
    mode = op.scaling
    if mode is None:
        return contraction
    if mode == "tensor":
        return replace(contraction, scale_roles=((), ()))
    a_axes, b_axes = op.scale_axes()
    if mode == "block":
        blocks = {base: block for block, base in BLOCK_ROLES.items()}
        a_blocked, b_blocked = a_axes.blocked or (), b_axes.blocked or ()
        a_roles = tuple(
            blocks[r] if i in a_blocked else r for i, r in enumerate(contraction.a_roles)
        )
        b_roles = tuple(
            blocks[r] if i in b_blocked else r for i, r in enumerate(contraction.b_roles)
        )
        return replace(contraction, scale_roles=(a_roles, b_roles))
    a_roles = tuple(r for i, r in enumerate(contraction.a_roles) if i not in a_axes.summed)
    b_roles = tuple(r for i, r in enumerate(contraction.b_roles) if i not in b_axes.summed)
    return replace(contraction, scale_roles=(a_roles, b_roles))


def _batch_operand_roles(shape: Sequence[int], out_batch: Sequence[int]) -> tuple[str, ...]:
    """The roles of an operand's batch dims, aligned right to the result's (numpy rules)."""
    offset = len(out_batch) - len(shape)
    return tuple(
        batch_role(offset + axis) if extent == out_batch[offset + axis] else ABSENT
        for axis, extent in enumerate(shape)
    )


def _matmul_roles(op: MatmulOp) -> ContractionRoles:
    a, b, out = _shape(op.a), _shape(op.b), _shape(op.result)
    out_batch = out[:-2]
    extents = {batch_role(i): extent for i, extent in enumerate(out_batch)}
    extents |= {"m": a[-2], "n": b[-1], "k": a[-1]}
    return ContractionRoles(
        op,
        a_roles=(*_batch_operand_roles(a[:-2], out_batch), "m", "k"),
        b_roles=(*_batch_operand_roles(b[:-2], out_batch), "k", "n"),
        out_roles=(*(batch_role(i) for i in range(len(out_batch))), "m", "n"),
        extents=extents,
    )


def _linear_roles(op: LinearOp) -> ContractionRoles:
    a, w = _shape(op.a), _shape(op.w)
    batch = tuple(batch_role(i) for i in range(len(a) - 2))
    extents = {role: extent for role, extent in zip(batch, a[:-2], strict=True)}
    extents |= {"m": a[-2], "n": w[0], "k": a[-1]}
    return ContractionRoles(
        op,
        a_roles=(*batch, "m", "k"),
        b_roles=("n", "k"),
        out_roles=(*batch, "m", "n"),
        extents=extents,
        bias_roles=("n",) if op.bias is not None else None,
    )


def _fused_multiply_sum_roles(op: FusedMultiplySumOp) -> ContractionRoles:
    a, b = _shape(op.a), _shape(op.b)
    summed = op.summed_axes
    if len(summed) != 1:
        _fail(
            op,
            f"{op.name}: property 'axes': expected one summed axis (the K axis), "
            f"found {list(summed)}",
        )
    a_roles: list[str] = []
    b_roles: list[str] = []
    extents: dict[str, int] = {"m": 1, "n": 1}
    batch_count = 0
    for axis, (a_extent, b_extent) in enumerate(zip(a, b, strict=True)):
        if axis in summed:
            if a_extent != b_extent:
                _fail(
                    op,
                    f"{op.name}: summed axis {axis}: expected equal extents in 'a' and 'b', "
                    f"found {a_extent} and {b_extent}",
                )
            role = "k"
            a_roles.append(role)
            b_roles.append(role)
            extents[role] = a_extent
            continue
        if a_extent == b_extent == 1:
            a_roles.append(ABSENT)
            b_roles.append(ABSENT)
            continue
        if a_extent == b_extent:
            role = batch_role(batch_count)
            batch_count += 1
            a_roles.append(role)
            b_roles.append(role)
            extents[role] = a_extent
            continue
        role = "m" if b_extent == 1 else "n"
        if role in a_roles or role in b_roles:
            factor = "'a'" if role == "m" else "'b'"
            _fail(
                op,
                f"{op.name}: axis {axis}: a second {_role_name(role)} axis (extent > 1 in "
                f"{factor} only); expected one",
            )
        a_roles.append(role if role == "m" else ABSENT)
        b_roles.append(role if role == "n" else ABSENT)
        extents[role] = b_extent if a_extent == 1 else a_extent
    out_roles = tuple(
        role if role != ABSENT or b_role == ABSENT else b_role
        for axis, (role, b_role) in enumerate(zip(a_roles, b_roles, strict=True))
        if axis not in summed
    )
    return ContractionRoles(op, tuple(a_roles), tuple(b_roles), out_roles, extents)


def _mma_roles(op: MmaOp) -> ContractionRoles:
    extents: dict[str, int] = {"m": 1, "n": 1, "k": 1}
    for value, roles in (
        (op.a, op.a_roles.roles),
        (op.b, op.b_roles.roles),
        (op.result, op.out_roles.roles),
    ):
        for role, extent in zip(roles, _shape(value), strict=True):
            if role != ABSENT:
                extents[role] = extent
    return ContractionRoles(
        op, op.a_roles.roles, op.b_roles.roles, op.out_roles.roles, extents=extents
    )


def _grouped_linear_roles(op: GroupedLinearOp) -> ContractionRoles:
    """x [m, k] (offsets) or [g, m, k] (counts), w [g, n, k], bias [g, n], sizes [g]."""
    x, w = _shape(op.x), _shape(op.w)
    group = ("g",) if op.masked else ()
    return ContractionRoles(
        op,
        a_roles=(*group, "m", "k"),
        b_roles=("g", "n", "k"),
        out_roles=(*group, "m", "n"),
        extents={"g": w[0], "m": x[-2], "n": w[1], "k": w[2]},
        bias_roles=("g", "n") if op.bias is not None else None,
    )


def contraction_roles(op: Operation) -> ContractionRoles | None:
    """The roles a contraction gives its operands and result; None for other ops."""
    if isinstance(op, GroupedLinearOp):
        return _grouped_linear_roles(op)
    if isinstance(op, MatmulOp):
        return _with_scales(_matmul_roles(op))
    if isinstance(op, LinearOp):
        return _with_scales(_linear_roles(op))
    if isinstance(op, FusedMultiplySumOp):
        return _with_scales(_fused_multiply_sum_roles(op))
    if isinstance(op, MmaOp):
        return _with_scales(_mma_roles(op))
    return None


@dataclass
class _AxisClasses:
    """Union-find over tensor axes that must have one role; a class may carry that role."""

    parent: dict[Node, Node] = field(default_factory=dict[Node, Node])
    role: dict[Node, str] = field(default_factory=dict[Node, str])

    def find(self, node: Node) -> Node:
        """The representative of `node`'s class."""
        root = node
        while (up := self.parent.get(root, root)) != root:
            root = up
        while node != root:
            self.parent[node], node = root, self.parent.get(node, node)
        return root

    def role_of(self, node: Node) -> str | None:
        """The role of `node`'s class, or None when nothing has fixed it yet."""
        return self.role.get(self.find(node))

    def fix(self, node: Node, role: str) -> str | None:
        """Give `node`'s class `role`; returns the class's other role on a conflict."""
        root = self.find(node)
        found = self.role.get(root)
        if found is not None and found != role:
            return found
        self.role[root] = role
        return None

    def union(self, first: Node, second: Node) -> tuple[str, str] | None:
        """Merge two classes; returns their two roles when they differ."""
        first_root, second_root = self.find(first), self.find(second)
        if first_root == second_root:
            return None
        first_role, second_role = self.role.get(first_root), self.role.get(second_root)
        if first_role is not None and second_role is not None and first_role != second_role:
            return first_role, second_role
        self.parent[second_root] = first_root
        if first_role is None and second_role is not None:
            self.role[first_root] = second_role
        self.role.pop(second_root, None)
        return None


@dataclass
class AxisMapping:
    """The iteration space of one fusion function and the roles of its tensor values."""

    space: dict[str, int]
    """Iteration axis -> extent, in canonical order (b0, b1, ..., m, n, k)."""
    roles: dict[SSAValue, tuple[str, ...]]
    """Tensor value -> the role of each of its axes."""
    contractions: list[ContractionRoles]
    """The contractions of the function, in program order."""


def _is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType)


def _body(func: FuncOp) -> Block:
    block = func.body.blocks.first
    if block is None:
        raise FusionError(f"func.func @{func.sym_name.data}: expected a body, found none")
    return block


def _tensor_values(func: FuncOp) -> Iterator[SSAValue]:
    """The function's tensor arguments, then its ops' tensor results, in program order."""
    block = _body(func)
    yield from (arg for arg in block.args if _is_tensor(arg))
    for op in block.ops:
        yield from (result for result in op.results if _is_tensor(result))


def _build_space(func: FuncOp, contractions: list[ContractionRoles]) -> dict[str, int]:
    """The iteration space that every contraction must share."""
    if not contractions:
        _fail(
            func,
            f"func.func @{func.sym_name.data}: expected a contraction (fusion.matmul, "
            "fusion.linear, fusion.fused_multiply_sum or fusion.mma) to define the "
            "iteration space, found none",
        )
    first = contractions[0]
    space = {"m": 1, "n": 1, "k": 1} | first.extents
    for contraction in contractions[1:]:
        op = contraction.op
        _check_same_groups(first, contraction)
        batch = sorted(role for role in contraction.extents if role.startswith("b"))
        space_batch = sorted(role for role in space if role.startswith("b"))
        if batch != space_batch:
            _fail(
                op,
                f"{op.name}: {len(batch)} batch axes here, but the iteration space has "
                f"{len(space_batch)} (from the first contraction, {first.op.name}); every "
                "contraction of a fusion shares one iteration space",
            )
        for role in sorted(space, key=role_order):
            extent = contraction.extents.get(role, 1)
            if extent != space[role]:
                _fail(
                    op,
                    f"{op.name}: {_role_name(role)} is {format_extent(extent)} here, but the "
                    f"iteration space has {role} = {format_extent(space[role])} (from the first "
                    "contraction, "
                    f"{first.op.name}); every contraction of a fusion shares one iteration "
                    "space",
                )
    return dict(sorted(space.items(), key=lambda item: role_order(item[0])))


def _check_same_groups(first: ContractionRoles, other: ContractionRoles) -> None:
    """A verifier error where `other` and the first contraction are not both grouped over
    one group-size value, or both not grouped: a kernel walks one partition of its rows."""
    first_op, op = first.op, other.op
    if isinstance(first_op, GroupedLinearOp) and isinstance(op, GroupedLinearOp):
        if first_op.group_sizes is op.group_sizes and first_op.masked == op.masked:
            return
        _fail(
            op,
            f"{op.name}: operand '{op.group_size_keyword}': expected the group sizes of the "
            f"first contraction ({first_op.name} operand '{first_op.group_size_keyword}'), "
            "the same value in the same layout: the grouped linears of one fusion share one "
            "partition of the rows into groups",
        )
    grouped = first_op if isinstance(first_op, GroupedLinearOp) else op
    if isinstance(grouped, GroupedLinearOp):
        dense = op if grouped is first_op else first_op
        _fail(
            op,
            f"{op.name}: a {dense.name} and a {grouped.name} in one fusion: every "
            "contraction of a grouped fusion is a fusion.grouped_linear over the same group "
            "sizes (one iteration space, with its g axis)",
        )


def _describe(value: SSAValue) -> str:
    if isinstance(value, BlockArgument):
        name = f" (%{value.name_hint})" if value.name_hint else ""
        return f"function argument #{value.index}{name}"
    return "result"


def _report_site(value: SSAValue, func: FuncOp) -> Operation:
    """The op at which a problem with `value` is reported: its definer, or its first user."""
    if isinstance(value, OpResult):
        return value.op
    for use in value.uses:
        return use.operation
    return func


def _propagate(op: Operation, classes: _AxisClasses) -> None:
    """Tie the axes of `op`'s operands to those of its result, per the op's semantics."""
    if isinstance(op, BroadcastOp):
        in_shape, out_shape = _shape(op.input), _shape(op.result)
        kept = [axis for axis, inserted in enumerate(op.inserted) if not inserted]
        for in_axis, out_axis in enumerate(kept):
            if in_shape[in_axis] != out_shape[out_axis]:
                found = classes.fix((op.input, in_axis), ABSENT)
                if found is not None:
                    _fail(
                        op,
                        f"{op.name}: operand 'input': axis {in_axis} expands from extent 1, "
                        f"so it must be absent (_), but it has role {found} elsewhere",
                    )
                continue
            conflict = classes.union((op.result, out_axis), (op.input, in_axis))
            if conflict is not None:
                _fail(
                    op,
                    f"{op.name}: operand 'input': axis {in_axis} has role {conflict[1]}, but "
                    f"axis {out_axis} of the result, which it becomes, has role {conflict[0]}",
                )
        return
    if isinstance(op, QuantizeOp | QuantizeScaleOp):
        _propagate_quantize(op, classes)
        return
    if not isinstance(op, PointwiseOp | CastOp):
        return
    names = op.operand_names() if isinstance(op, PointwiseOp) else ("input",)
    for name, operand in zip(names, op.operands, strict=True):
        for axis in range(len(_shape(operand))):
            conflict = classes.union((op.results[0], axis), (operand, axis))
            if conflict is not None:
                _fail(
                    op,
                    f"{op.name}: operand '{name}': axis {axis} has role {conflict[1]}, but "
                    f"axis {axis} of the result has role {conflict[0]}; pointwise operands "
                    "line up axis by axis",
                )


def _propagate_quantize(op: QuantizeOp | QuantizeScaleOp, classes: _AxisClasses) -> None:
    """Tie a quantization's values and scales to the input's axes: the fp8 values axis by
    axis; a scale's leading axes to the input's, a group scale's last axis the n axis in
    groups of 128 (n128), whose input axis must be n."""
    rank = len(_shape(op.input))
    if isinstance(op, QuantizeOp):
        tied = [(op.result, axis, axis) for axis in range(rank)]
        scale, granularity = op.scale, op.granularity
    else:
        tied = []
        scale, granularity = op.result, op.granularity
    if granularity != "tensor":
        tied += [(scale, axis, axis) for axis in range(rank - 1)]
    for value, axis, input_axis in tied:
        conflict = classes.union((value, axis), (op.input, input_axis))
        if conflict is not None:
            _fail(
                op,
                f"{op.name}: axis {axis} of {_describe(value)} has role {conflict[0]}, but "
                f"axis {input_axis} of 'input', which it follows, has role {conflict[1]}",
            )
    if granularity != "group":
        return
    found = classes.fix((op.input, rank - 1), "n")
    if found is not None:
        _fail(
            op,
            f"{op.name}: 1 x {QUANTIZE_GROUP} groups run along the contraction's n axis, the "
            f"last axis of 'input', which has role {found}",
        )
    found = classes.fix((scale, rank - 1), GROUPED_N)
    if found is not None:
        _fail(
            op,
            f"{op.name}: the last axis of the group scale is n in groups of {QUANTIZE_GROUP} "
            f"({GROUPED_N}), found role {found}",
        )


def infer_axis_mapping(func: FuncOp) -> AxisMapping:
    """The iteration space and every tensor value's roles; a verifier error where none fit."""
    block = _body(func)
    contractions: list[ContractionRoles] = []
    for op in block.ops:
        contraction = contraction_roles(op)
        if contraction is not None:
            contractions.append(contraction)
    space = _build_space(func, contractions)

    classes = _AxisClasses()
    for contraction in contractions:
        for what, value, fixed in contraction.operand_roles():
            _check_dynamic_roles(contraction.op, what, value, fixed)
            for axis, role in enumerate(fixed):
                found = classes.fix((value, axis), role)
                if found is None:
                    continue
                hint = ""
                if isinstance(value, OpResult) and contraction_roles(value.op) is not None:
                    hint = " (chained contractions are not one iteration space)"
                _fail(
                    contraction.op,
                    f"{contraction.op.name}: {what}: axis {axis} needs role {role} here, "
                    f"but has role {found} elsewhere in the fusion{hint}",
                )
    for op in block.ops:
        _propagate(op, classes)

    batch = [role for role in space if role.startswith("b")]
    layout = (*batch, "m", "n")
    if isinstance(contractions[0].op, GroupedLinearOp):
        layout = contractions[0].out_roles
    mapping: dict[SSAValue, tuple[str, ...]] = {}
    for value in _tensor_values(func):
        shape = _shape(value)
        roles: list[str] = []
        for axis, extent in enumerate(shape):
            role = classes.role_of((value, axis))
            if role is None and extent == 1:
                role = ABSENT
            if role is None:
                position = axis - (len(shape) - len(layout))
                candidate = layout[position] if 0 <= position < len(layout) else None
                if candidate is None or space[candidate] != extent or candidate in roles:
                    site = _report_site(value, func)
                    sizes = ", ".join(
                        f"{role} = {format_extent(size)}" for role, size in space.items()
                    )
                    _fail(
                        site,
                        f"{site.name}: {_describe(value)}: axis {axis} (extent "
                        f"{format_extent(extent)}) fits "
                        f"no axis of the iteration space ({sizes}); an epilogue operand must "
                        "line up with the contraction's result, as [M, N], [1, N], [M, 1] or [N]",
                    )
                role = candidate
            classes.fix((value, axis), role)
            roles.append(role)
        present = [role for role in roles if role != ABSENT]
        if len(set(present)) != len(present):
            site = _report_site(value, func)
            _fail(
                site,
                f"{site.name}: {_describe(value)}: expected each iteration axis at most once "
                f"among the axis roles, found {roles}",
            )
        site = _report_site(value, func)
        _check_dynamic_roles(site, _describe(value), value, roles)
        _check_tied(site, _describe(value), value, roles, space)
        mapping[value] = tuple(roles)
    return AxisMapping(space, mapping, contractions)


def _check_dynamic_roles(op: Operation, what: str, value: SSAValue, roles: Sequence[str]) -> None:
    """A verifier error at `op` where a dynamic axis of `value` has a role other than m, k
    or a batch role (n is static: the tiles along n and operand strides depend on it)."""
    for axis, (extent, role) in enumerate(zip(_shape(value), roles, strict=True)):
        if not is_dynamic(extent) or may_be_dynamic(role):
            continue
        described = _role_name(role) if role != ABSENT else "absent (_)"
        _fail(
            op,
            f"{op.name}: {what}: axis {axis} is dynamic (?) but has role {role} "
            f"({described}); only M, K and batch extents may be dynamic, N is static",
        )


def _check_tied(
    op: Operation, what: str, value: SSAValue, roles: Sequence[str], space: dict[str, int]
) -> None:
    """A verifier error at `op` where an axis of `value` is static but its role's extent is
    dynamic, or the other way round: every axis of one role is one runtime extent."""
    for axis, (extent, role) in enumerate(zip(_shape(value), roles, strict=True)):
        role = BLOCK_ROLES.get(role, role)
        if role == ABSENT or is_dynamic(extent) == is_dynamic(space[role]):
            continue
        _fail(
            op,
            f"{op.name}: {what}: axis {axis} has extent {format_extent(extent)}, but the "
            f"iteration space has {role} = {format_extent(space[role])}; every axis of one "
            "role is one runtime extent",
        )


def annotate(func: FuncOp, mapping: AxisMapping) -> None:
    """Store `mapping` in the IR: `fusion.space` on `func`, `fusion.roles` on ops and args."""
    func.attributes[SPACE_KEY] = IterationSpaceAttr(mapping.space)
    block = _body(func)
    for op in block.ops:
        if len(op.results) == 1 and op.results[0] in mapping.roles:
            op.attributes[ROLES_KEY] = AxisRolesAttr(mapping.roles[op.results[0]])
    arg_attrs: list[DictionaryAttr] = []
    for index, arg in enumerate(block.args):
        entries: dict[str, Any] = {}
        if func.arg_attrs is not None:
            entries |= func.arg_attrs.data[index].data
        if arg in mapping.roles:
            entries[ROLES_KEY] = AxisRolesAttr(mapping.roles[arg])
        arg_attrs.append(DictionaryAttr(entries))
    func.arg_attrs = ArrayAttr(arg_attrs)


def format_roles(roles: Sequence[str]) -> str:
    """Roles as `#fusion.roles` writes them: `[_, m]`."""
    return "[" + ", ".join(roles) + "]"


def _operand_label(value: SSAValue) -> str:
    """`%name: type`, or the type alone for a value without a name."""
    return f"%{value.name_hint}: {value.type}" if value.name_hint else str(value.type)


def extent_source(mapping: AxisMapping, role: str) -> str:
    """Where the iteration axis `role` gets its extent: the first contraction operand (or
    result) with that axis, e.g. `k = 257 from fusion.mma operand 'a' (%a: tensor<...>)`."""
    extent = format_extent(mapping.space[role])
    for contraction in mapping.contractions:
        for what, value, roles in contraction.operand_roles():
            if role in roles:
                return (
                    f"{role} = {extent} from {contraction.op.name} {what} ({_operand_label(value)})"
                )
    return f"{role} = {extent}, as no contraction operand has an axis {role}"


def space_mismatch(name: str, written: Mapping[str, int], mapping: AxisMapping) -> str | None:
    """How the iteration space `written` in the attribute or op `name` differs from the one
    the operands give, or None where they agree."""
    derived = mapping.space
    for role in sorted(set(written) | set(derived), key=role_order):
        if role not in derived:
            axes = ", ".join(f"{axis} = {format_extent(size)}" for axis, size in derived.items())
            return (
                f"{name} {role} = {format_extent(written[role])} disagrees with the operands "
                f"(they have no axis {role}: {axes})"
            )
        if role not in written:
            return (
                f"{name} has no axis {role}, which the operands have "
                f"({extent_source(mapping, role)})"
            )
        if written[role] != derived[role]:
            return (
                f"{name} {role} = {format_extent(written[role])} disagrees with the operands "
                f"({extent_source(mapping, role)})"
            )
    return None


def _roles_mismatch(
    what: str, stored: Attribute | None, derived: tuple[str, ...] | None, complete: bool
) -> str | None:
    """How the `fusion.roles` attribute `stored` of a value differs from the `derived` roles
    (None for a value that is no tensor), or None where they agree."""
    if stored is None:
        if derived is None or not complete:
            return None
        return f"{what}: no {ROLES_KEY}, but propagate-axis-mapping derives {format_roles(derived)}"
    if not isinstance(stored, AxisRolesAttr):
        return f"{what}: {ROLES_KEY} must be #fusion.roles<[...]>, found {stored}"
    if derived is None:
        return (
            f"{what}: {ROLES_KEY} {format_roles(stored.roles)}, but propagate-axis-mapping "
            "gives roles only to tensor values"
        )
    if stored.roles == derived:
        return None
    return (
        f"{what}: {ROLES_KEY} {format_roles(stored.roles)} but propagate-axis-mapping derives "
        f"{format_roles(derived)}"
    )


def _annotation_mismatches(
    func: FuncOp, mapping: AxisMapping, complete: bool
) -> Iterator[tuple[Operation, str]]:
    """(where, how) for each stored annotation of `func` that differs from `mapping`."""
    space = func.attributes.get(SPACE_KEY)
    if isinstance(space, IterationSpaceAttr):
        problem = space_mismatch(SPACE_KEY, space.extents, mapping)
        if problem is not None:
            yield func, problem
    elif space is not None:
        yield func, f"{SPACE_KEY} must be #fusion.space<...>, found {space}"
    elif complete:
        yield func, f"no {SPACE_KEY} (run propagate-axis-mapping first)"
    block = _body(func)
    entries = func.arg_attrs.data if func.arg_attrs is not None else ()
    for arg in block.args:
        stored = entries[arg.index].data.get(ROLES_KEY) if arg.index < len(entries) else None
        name = f"%{arg.name_hint}: " if arg.name_hint else ""
        what = f"argument #{arg.index} ({name}{arg.type})"
        problem = _roles_mismatch(what, stored, mapping.roles.get(arg), complete)
        if problem is not None:
            yield func, problem
    for index, op in enumerate(block.ops):
        derived = mapping.roles.get(op.results[0]) if len(op.results) == 1 else None
        hint = op.results[0].name_hint if len(op.results) == 1 else None
        what = f"{op.name} (op #{index} of the body{f', %{hint}' if hint else ''})"
        problem = _roles_mismatch(what, op.attributes.get(ROLES_KEY), derived, complete)
        if problem is not None:
            yield op, problem


def check_annotations(
    func: FuncOp, mapping: AxisMapping | None = None, complete: bool = False, pass_name: str = ""
) -> AxisMapping:
    """The mapping infer_axis_mapping derives from `func`'s types and ops; FusionError (at
    the site, naming `pass_name` there) where a stored `fusion.space` or `fusion.roles`
    differs from it, or, if `complete`, is missing."""
    if mapping is None:
        try:
            mapping = infer_axis_mapping(func)
        except VerifyException as error:
            raise FusionError(str(error)) from None
    for site, problem in _annotation_mismatches(func, mapping, complete):
        message = f"@{func.sym_name.data}: {problem}"
        if pass_name and location(site) is not None:
            message = f"{pass_name}: {message}"
        raise FusionError(at(site, message))
    return mapping


def _enclosing_func(value: SSAValue) -> FuncOp | None:
    op = value.owner.parent_op()
    while op is not None and not isinstance(op, FuncOp):
        op = op.parent_op()
    return op


def _stored_roles(value: SSAValue, func: FuncOp) -> tuple[str, ...] | None:
    """The roles that `propagate-axis-mapping` stored for `value`, if any."""
    if isinstance(value, OpResult):
        attr = value.op.attributes.get(ROLES_KEY)
        return attr.roles if isinstance(attr, AxisRolesAttr) else None
    if isinstance(value, BlockArgument) and func.arg_attrs is not None:
        attr = func.arg_attrs.data[value.index].data.get(ROLES_KEY)
        return attr.roles if isinstance(attr, AxisRolesAttr) else None
    return None


def roles_of(value: SSAValue | Value) -> tuple[str, ...]:
    """The role of each axis of a tensor value, e.g. ("m", "_", "k")."""
    if not isinstance(value, SSAValue):
        ssa = getattr(value, "ssa", None)
        if not isinstance(ssa, SSAValue):
            raise FusionError(
                f"roles_of: expected an xDSL SSAValue or an mmcomp Value, found "
                f"{type(value).__name__}"
            )
        value = cast(SSAValue, ssa)
    if not _is_tensor(value):
        raise FusionError(f"roles_of: expected a tensor value, found one of type {value.type}")
    func = _enclosing_func(value)
    if func is None:
        raise FusionError("roles_of: expected a value inside a func.func, found a detached one")
    stored = _stored_roles(value, func)
    if stored is not None:
        return stored
    try:
        return infer_axis_mapping(func).roles[value]
    except VerifyException as error:
        raise FusionError(str(error)) from None


def iteration_space(func: FuncOp) -> dict[str, int]:
    """The extent of each iteration axis of a fusion function, b0, ..., m, n, k in order."""
    stored = func.attributes.get(SPACE_KEY)
    if isinstance(stored, IterationSpaceAttr):
        return stored.extents
    try:
        return infer_axis_mapping(func).space
    except VerifyException as error:
        raise FusionError(str(error)) from None


def dynamic_input_roles(fusion: Fusion) -> list[tuple[str, ...]] | None:
    """The axis roles of each input of a fusion with dynamic extents, else None;
    FusionError where the roles do not fit, as propagate-axis-mapping reports it."""
    inputs = fusion.inputs
    if not any(value.dynamic_axes for value in inputs):
        return None
    try:
        mapping = infer_axis_mapping(fusion.peek_func())
    except VerifyException as error:
        raise FusionError(stage_message("propagate-axis-mapping", error)) from None
    return [mapping.roles[value.peek_ssa()] for value in inputs]
