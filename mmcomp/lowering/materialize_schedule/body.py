"""The fusion function a kernel is materialized from: its parts, and its ops on tiles.

`FusionBody` splits a scheduled fusion function into its inputs, contractions, epilogue
ops and outputs (checking what the kernel needs of them); `contraction_region` and
`epilogue_region` are the regions of `sched.contract_tile` and `sched.write_tile`: the
same ops on tile-shaped tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, MemRefType, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import fusion, sched
from mmcomp.dialects.fusion import GroupedLinearOp
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.ir.diagnostics import at
from mmcomp.ir.narrowing import is_tensor

ROLES_ATTR = "fusion.roles"
"""The attribute holding the axis roles of an op result or a function argument."""


def roles_of_value(value: SSAValue) -> tuple[str, ...] | None:
    """The roles of a function argument or op result, or None where none are attached."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
        if not isinstance(owner, func.FuncOp) or owner.arg_attrs is None:
            return None
        attrs = owner.arg_attrs.data[value.index]
        assert isinstance(attrs, DictionaryAttr)
        roles = attrs.data.get(ROLES_ATTR)
    else:
        owner = value.owner
        assert isinstance(owner, Operation)
        roles = owner.attributes.get(ROLES_ATTR)
        if isinstance(owner, fusion.MmaOp):
            roles = owner.out_roles
    if not isinstance(roles, fusion.AxisRolesAttr):
        return None
    return roles.roles


def tile_shape(roles: Sequence[str], tile: tuple[int, int, int]) -> tuple[int, ...]:
    """The tile of a value with `roles`: the CTA tile along m, n and k, its groups of 128
    along n128 and k128 (a quantization scale's, a block-wise fp8 scale's), extent 1
    elsewhere."""
    extents = {"m": tile[0], "n": tile[1], "k": tile[2]}
    extents |= {fusion.GROUPED_N: -(-tile[1] // SCALE_BLOCK), "k128": -(-tile[2] // SCALE_BLOCK)}
    return tuple(extents.get(role, 1) for role in roles)


def tile_type(
    value_type: Attribute, roles: Sequence[str], tile: tuple[int, int, int]
) -> TensorType:
    """The tile-shaped tensor type of a value of `value_type` with `roles`."""
    assert is_tensor(value_type)
    return TensorType(value_type.element_type, tile_shape(roles, tile))


def memref_of(value_type: Attribute) -> MemRefType:
    """The memref of a tensor type (the kernel's argument for a fusion value)."""
    assert is_tensor(value_type)
    return MemRefType(value_type.element_type, value_type.get_shape())


def _fail(op: Operation, message: str) -> DiagnosticException:
    """The error about `op`, at its location."""
    return DiagnosticException(at(op, f"materialize-schedule: {op.name}: {message}"))


@dataclass
class FusionBody:
    """The parts of a fusion function after propagate-axis-mapping."""

    inputs: list[BlockArgument]
    """The function arguments, in order."""
    input_roles: list[tuple[str, ...]]
    """The roles of each argument."""
    mmas: list[fusion.MmaOp]
    """The contractions, in order."""
    epilogue: list[Operation]
    """Every other fusion op, in order (pointwise, broadcast, cast, splat)."""
    outputs: list[SSAValue]
    """The returned values, in order."""
    output_roles: list[tuple[str, ...]]
    """The roles of each returned value."""
    grouped: dict[fusion.MmaOp, GroupedLinearOp] = field(
        default_factory=dict[fusion.MmaOp, GroupedLinearOp]
    )
    """The grouped contraction each of `mmas` stands for, where it is one (its `fusion.mma`
    on tiles: `grouped_tile_mma`)."""

    def result_of(self, mma: fusion.MmaOp) -> SSAValue:
        """The fusion value a contraction's accumulator gives: its own result, or that of
        the grouped contraction it stands for."""
        grouped = self.grouped.get(mma)
        return mma.result if grouped is None else grouped.result

    @property
    def contraction_inputs(self) -> list[int]:
        """The positions of the inputs the contractions read, in the order they first do."""
        positions: list[int] = []
        for mma in self.mmas:
            for operand in (mma.a, mma.b, *mma.scales):
                position = self.inputs.index(operand)  # pyright: ignore[reportArgumentType]
                if position not in positions:
                    positions.append(position)
        return positions

    @property
    def epilogue_inputs(self) -> list[int]:
        """The positions of the inputs the epilogue reads, in the order it first does."""
        positions: list[int] = []
        biases = [op.bias for op in self.grouped.values() if op.bias is not None]
        for op in [*self.epilogue, *biases]:
            operands = [op] if isinstance(op, SSAValue) else op.operands
            for operand in operands:
                if isinstance(operand, BlockArgument) and operand in self.inputs:
                    position = self.inputs.index(operand)
                    if position not in positions:
                        positions.append(position)
        return positions


def analyze_body(function: func.FuncOp) -> FusionBody:
    """Split the fusion body into inputs, contractions, epilogue ops and outputs."""
    name = f"@{function.sym_name.data}"
    inputs = list(function.body.block.args)
    input_roles: list[tuple[str, ...]] = []
    for index, arg in enumerate(inputs):
        roles = roles_of_value(arg)
        if roles is None:
            raise DiagnosticException(
                f"materialize-schedule: {name}: argument {index} has no '{ROLES_ATTR}' "
                "(run propagate-axis-mapping first)"
            )
        input_roles.append(roles)
    mmas: list[fusion.MmaOp] = []
    grouped: dict[fusion.MmaOp, GroupedLinearOp] = {}
    epilogue: list[Operation] = []
    outputs: list[SSAValue] = []
    for op in function.body.block.ops:
        if isinstance(op, sched.ScheduleOp):
            continue
        if isinstance(op, func.ReturnOp):
            outputs = list(op.operands)
            continue
        if isinstance(op, GroupedLinearOp):
            mma = grouped_tile_mma(op)
            grouped[mma] = op
            mmas.append(mma)
            continue
        if isinstance(op, fusion.MmaOp):
            for operand_name, operand in (("a", op.a), ("b", op.b)):
                if not isinstance(operand, BlockArgument):
                    producer = operand.owner
                    assert isinstance(producer, Operation)
                    raise _fail(
                        op,
                        f"operand '{operand_name}' must be a function argument (loaded by "
                        f"tiles); found the result of {producer.name}",
                    )
            mmas.append(op)
            continue
        if not op.name.startswith("fusion."):
            raise _fail(op, "expected only fusion ops in the body of a scheduled function")
        roles = roles_of_value(op.results[0]) if op.results else None
        if roles is None:
            raise _fail(op, f"result has no '{ROLES_ATTR}' (run propagate-axis-mapping first)")
        if "k" in roles:
            raise _fail(
                op,
                f"roles {list(roles)} have a k axis: only fusion.mma may read along k "
                "(prologue fusion is not supported)",
            )
        epilogue.append(op)
    if not mmas:
        raise DiagnosticException(
            f"materialize-schedule: {name}: no fusion.mma in the body "
            "(run propagate-axis-mapping first)"
        )
    output_roles: list[tuple[str, ...]] = []
    for index, value in enumerate(outputs):
        roles = roles_of_value(value)
        if isinstance(value, BlockArgument) or roles is None:
            raise DiagnosticException(
                f"materialize-schedule: {name}: output {index} must be computed in the "
                "body and carry 'fusion.roles'"
            )
        if "k" in roles:
            raise DiagnosticException(
                f"materialize-schedule: {name}: output {index} has a k axis {list(roles)}"
            )
        output_roles.append(roles)
    return FusionBody(inputs, input_roles, mmas, epilogue, outputs, output_roles, grouped)


def grouped_tile_mma(op: GroupedLinearOp) -> fusion.MmaOp:
    """The contraction of a grouped linear on one tile, a `fusion.mma` (not inserted
    anywhere: `contraction_region` clones it on tiles).

    A tile lies in one group, whose weight tile the loads select (the w tile starts at
    the group along g); on the tile, x [m, k] times that weight [1, n, k] is a plain
    contraction, with the weight's group axis absent (`_`, extent 1) where the result has
    none (the contiguous layout). x, w and the group sizes must be function arguments:
    the kernel loads them.
    """
    for operand_name, operand in (("x", op.x), ("w", op.w), ("group sizes", op.group_sizes)):
        if not isinstance(operand, BlockArgument):
            producer = operand.owner
            assert isinstance(producer, Operation)
            raise _fail(
                op,
                f"operand '{operand_name}' must be a function argument (read by the kernel); "
                f"found the result of {producer.name}",
            )
    x_roles, w_roles = roles_of_value(op.x), roles_of_value(op.w)
    out_roles = roles_of_value(op.result)
    if x_roles is None or w_roles is None or out_roles is None:
        raise _fail(op, f"operands without '{ROLES_ATTR}' (run propagate-axis-mapping first)")
    tile_w_roles = [role if role in out_roles or role == "k" else "_" for role in w_roles]
    mma = fusion.MmaOp(op.x, op.w, x_roles, tile_w_roles, out_roles, op.result.type)
    mma.result.name_hint = op.result.name_hint
    return mma


def _grouped_epilogue(
    body: FusionBody, mapping: dict[SSAValue, SSAValue], tile: tuple[int, int, int]
) -> list[Operation]:
    """On tiles, each grouped contraction's bias added to its accumulator (the tile's
    group's bias row, broadcast over the tile's rows; cast to f32 first where it is not),
    mapping the contraction's result to the sum."""
    ops: list[Operation] = []
    for mma, op in body.grouped.items():
        if op.bias is None:
            continue
        acc = mapping[op.result]
        acc_type = acc.type
        assert is_tensor(acc_type)
        bias = mapping[op.bias]
        bias_type = bias.type
        assert is_tensor(bias_type)
        if bias_type.element_type != acc_type.element_type:
            cast = fusion.CastOp(bias, TensorType(acc_type.element_type, bias_type.get_shape()))
            ops.append(cast)
            bias = cast.result
        rank, bias_rank = len(acc_type.get_shape()), len(bias_type.get_shape())
        inserted = [False] * rank
        if rank > bias_rank:
            inserted[rank - 2] = True  # [g, n] against [g, m, n]: the m axis
        broadcast = fusion.BroadcastOp(bias, inserted, acc_type)
        total = fusion.AddOp(acc, broadcast.result, acc_type)
        broadcast.result.name_hint = f"{op.bias.name_hint or 'bias'}_row"
        total.result.name_hint = mma.result.name_hint
        ops += [broadcast, total]
        mapping[op.result] = total.result
    return ops


def _on_tiles(
    ops: Sequence[Operation], mapping: dict[SSAValue, SSAValue], tile: tuple[int, int, int]
) -> list[Operation]:
    """Clones of `ops` on tiles: operands through `mapping` (which takes each result's
    clone), each result of its tile type."""
    clones: list[Operation] = []
    for op in ops:
        roles = roles_of_value(op.results[0])
        assert roles is not None
        clone = type(op).create(
            operands=[mapping[operand] for operand in op.operands],
            result_types=[tile_type(op.results[0].type, roles, tile)],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        clone.results[0].name_hint = op.results[0].name_hint
        mapping[op.results[0]] = clone.results[0]
        clones.append(clone)
    return clones


def contraction_region(body: FusionBody, tile: tuple[int, int, int]) -> Region:
    """One K block's contractions: a block argument per input they read (its tile), the
    `fusion.mma`s on those tiles, `sched.yield` of their products."""
    positions = body.contraction_inputs
    types = [tile_type(body.inputs[p].type, body.input_roles[p], tile) for p in positions]
    block = Block(arg_types=types)
    mapping: dict[SSAValue, SSAValue] = {}
    for position, arg in zip(positions, block.args, strict=True):
        source = body.inputs[position]
        arg.name_hint = f"{source.name_hint or f'arg{position}'}_tile"
        mapping[source] = arg
    mmas = _on_tiles(body.mmas, mapping, tile)
    block.add_ops(mmas)
    block.add_op(sched.YieldOp([mma.results[0] for mma in mmas]))
    return Region(block)


def accumulator_types(body: FusionBody, tile: tuple[int, int, int]) -> list[TensorType]:
    """The f32 accumulator tile of each contraction."""
    return [tile_type(mma.result.type, mma.out_roles.roles, tile) for mma in body.mmas]


def epilogue_region(body: FusionBody, tile: tuple[int, int, int]) -> Region:
    """The epilogue on tiles: a block argument per accumulator and per input it reads,
    the pointwise ops on those tiles, `sched.yield` of the output tiles."""
    positions = body.epilogue_inputs
    types: list[Attribute] = [*accumulator_types(body, tile)]
    types += [tile_type(body.inputs[p].type, body.input_roles[p], tile) for p in positions]
    block = Block(arg_types=types)
    mapping: dict[SSAValue, SSAValue] = {}
    for mma, arg in zip(body.mmas, block.args, strict=False):
        mapping[body.result_of(mma)] = arg
        arg.name_hint = mma.result.name_hint
    for position, arg in zip(positions, block.args[len(body.mmas) :], strict=True):
        mapping[body.inputs[position]] = arg
        arg.name_hint = body.inputs[position].name_hint
    block.add_ops(_grouped_epilogue(body, mapping, tile))
    block.add_ops(_on_tiles(body.epilogue, mapping, tile))
    block.add_op(sched.YieldOp([mapping[value] for value in body.outputs]))
    return Region(block)
