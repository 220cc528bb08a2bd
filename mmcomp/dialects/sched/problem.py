"""The problem a schedule is checked against: extents, operand counts, element sizes.

`problem_of` reads it from a `func.func` after propagate-axis-mapping; `check_extents`
rejects problems past what a kernel can index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DictionaryAttr,
    MemRefType,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import (
    Attribute,
    BlockArgument,
    Operation,
    SSAValue,
)

from mmcomp.arch import limits as hw
from mmcomp.dialects.fusion import (
    QUANTIZE_GROUP,
    AxisRolesAttr,
    GroupedLinearOp,
    IterationSpaceAttr,
    QuantizeOp,
    QuantizeScaleOp,
    dtype_name,
)
from mmcomp.dialects.fusion import MmaOp as FusionMmaOp
from mmcomp.errors import ScheduleError
from mmcomp.ir.narrowing import is_memref, is_tensor


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, for positive b."""
    return -(-a // b)


def format_dims(dims: Sequence[int]) -> str:
    """Extents as written in schedule text: `128x256x64`."""
    return "x".join(str(d) for d in dims)


@dataclass(frozen=True)
class Problem:
    """What the parameters are checked against: extents, operand counts, element sizes."""

    extents: Mapping[str, int]
    """The iteration space, e.g. {"b0": 4, "m": 300, "n": 500, "k": 200}."""
    element_bytes: int = 2
    """Bytes per element of the A and B operands (2 for bf16 and f16, 1 for fp8)."""
    a_operands: int = 1
    """Distinct A tiles loaded per K block (1: a horizontal fusion shares A)."""
    b_operands: int = 1
    """Distinct B tiles loaded per K block (2 for a horizontal fusion)."""
    output_bytes: tuple[int, ...] = (2,)
    """Bytes per element of each fusion output (sizes the shared-memory epilogue)."""
    epilogue_tiles: int = 0
    """Full [M, N] tiles the epilogue holds besides the accumulator: [M, N] operands it
    reads, and outputs beyond the first (they raise its register pressure)."""
    contractions: int = 1
    """fusion.mma ops: one f32 accumulator tile each in every consumer thread."""
    tile_operands: int = 0
    """Epilogue operands with both an m and an n axis ([M, N]): a tile's worth each."""
    row_operands: int = 0
    """Epilogue operands with an n axis and no m axis (bias [N], rows [1, N])."""
    column_operands: int = 0
    """Epilogue operands with an m axis and no n axis (columns [M, 1])."""
    operand_shapes: tuple[tuple[int, ...], ...] = ()
    """Shapes of the mma operands (loaded by TMA), in the order they are first used."""
    row_divisions: int = 0
    """Epilogue divisions by a row value (n but no m axis, e.g. `y / bias`)."""
    block_scaled: bool = False
    """The contractions carry block-wise scales: each K block of 128 is accumulated apart
    and promoted into the accumulator with its scales (the K-block partials of
    `ScheduleParams.block_partial_registers` in every consumer thread; tile k 128)."""
    quantize: tuple[str, ...] = ()
    """The granularities of the scales the epilogue computes (`fusion.quantize_scale`) or
    reads per group (a `fusion.quantize` by a given group scale): "group" needs tile n a
    multiple of 128, "row" the whole row in one tile (tile n >= N)."""
    a_m_contiguous: bool = False
    """An A operand's contiguous axis is M (MN-major: TMA loads its tile in 64-wide boxes
    along M, so under swap_ab, where M is wgmma's n, the tile's m must be a multiple of 64)."""
    b_n_contiguous: bool = False
    """A B operand's contiguous axis is N (a [K, N] operand: TMA loads its tile in 64-wide
    boxes along N, so the tile's n must be a multiple of 64)."""

    @property
    def m(self) -> int:
        """Extent of the M axis (1 when absent)."""
        return self.extents.get("m", 1)

    @property
    def n(self) -> int:
        """Extent of the N axis (1 when absent)."""
        return self.extents.get("n", 1)

    @property
    def k(self) -> int:
        """Extent of the K axis (1 when absent)."""
        return self.extents.get("k", 1)

    @property
    def batch(self) -> int:
        """Product of the batch extents (1 when there are none; dynamic if one is)."""
        count = 1
        for name, extent in self.extents.items():
            if name.startswith("b"):
                if extent == DYNAMIC_INDEX:
                    return DYNAMIC_INDEX
                count *= extent
        return count

    @property
    def dynamic_axes(self) -> tuple[str, ...]:
        """The iteration axes whose extent is dynamic (`?`), known only at call time."""
        return tuple(axis for axis, extent in self.extents.items() if extent == DYNAMIC_INDEX)

    def with_extents(self, extents: Mapping[str, int]) -> Problem:
        """The same problem with these extents in place of the dynamic ones (1 for a dynamic
        axis that `extents` leaves out)."""
        resolved = {
            axis: extents.get(axis, 1) if extent == DYNAMIC_INDEX else extent
            for axis, extent in self.extents.items()
        }
        return dataclasses.replace(self, extents=resolved)


def _element_bytes(typ: Attribute) -> int:
    element = typ.element_type if is_tensor(typ) or is_memref(typ) else typ
    name = dtype_name(element)
    return hw.ELEMENT_BYTES.get(name or "f32", 4)


def check_extents(problem: Problem) -> None:
    """Raise ScheduleError for a problem past what a kernel can index.

    Tile indices, loop bounds and TMA coordinates are 32-bit (signed in TMA), so every
    iteration axis is at most MAX_EXTENT (so every TMA dimension is below
    TMA_MAX_GLOBAL_DIM too); an mma operand is a TMA tensor, whose byte strides are below
    TMA_STRIDE_LIMIT. (Its rank is checked where its tensor map is built.)
    """
    for axis, extent in problem.extents.items():
        if extent != DYNAMIC_INDEX and extent > hw.MAX_EXTENT:
            name = (
                f"{_AXIS_NAMES[axis]} (iteration axis {axis})"
                if axis in _AXIS_NAMES
                else f"batch axis {axis}"
            )
            raise ScheduleError(
                f"{name} = {extent}: past what the kernel can "
                f"index; each extent must be at most {hw.MAX_EXTENT} (2^31 - "
                f"{hw.TMA_MAX_BOX}: tile indices, loop bounds and TMA coordinates are "
                f"{hw.INDEX_BITS}-bit integers)"
            )
    for index, shape in enumerate(problem.operand_shapes):
        what = f"mma operand {index} ({format_dims(shape)})"
        stride = problem.element_bytes
        for axis in range(len(shape) - 1, 0, -1):
            if shape[axis] == DYNAMIC_INDEX:
                break  # checked at call time, with the actual extent
            stride *= shape[axis]
            if stride >= hw.TMA_STRIDE_LIMIT:
                raise ScheduleError(
                    f"{what}: axis {axis - 1} has a stride of {stride} bytes; TMA strides "
                    f"are below 2^40 = {hw.TMA_STRIDE_LIMIT} bytes"
                )


_AXIS_NAMES = {"m": "M", "n": "N", "k": "K"}


def problem_of(func: Operation) -> Problem:
    """The Problem of a `func.func` after propagate-axis-mapping (its space and its
    contractions: fusion.mma and fusion.grouped_linear ops)."""
    space = func.attributes.get("fusion.space")
    extents = dict(space.extents) if isinstance(space, IterationSpaceAttr) else {}
    a_values: list[SSAValue] = []
    b_values: list[SSAValue] = []
    scale_values: list[SSAValue] = []
    element_bytes = 0
    contractions = 0
    for op in func.walk():
        if isinstance(op, FusionMmaOp):
            a, b = op.a, op.b
        elif isinstance(op, GroupedLinearOp):
            a, b = op.x, op.w
        else:
            continue
        contractions += 1
        if isinstance(op, FusionMmaOp):
            scale_values += op.scales
        if a not in a_values:
            a_values.append(a)
        if b not in b_values:
            b_values.append(b)
        element_bytes = max(element_bytes, _element_bytes(a.type), _element_bytes(b.type))
    element_bytes = element_bytes or 2
    output_bytes: tuple[int, ...] = (2,)
    epilogue_tiles = 0
    operands = {"tile": 0, "row": 0, "column": 0}
    if isinstance(func, FuncOp):
        if func.function_type.outputs.data:
            output_bytes = tuple(_element_bytes(t) for t in func.function_type.outputs.data)
        operands = _epilogue_operands(func, a_values + b_values + scale_values)
        epilogue_tiles = len(output_bytes) - 1 + operands["tile"]
    return Problem(
        extents=extents,
        element_bytes=element_bytes,
        a_operands=max(len(a_values), 1),
        b_operands=max(len(b_values), 1),
        output_bytes=output_bytes,
        epilogue_tiles=epilogue_tiles,
        contractions=max(contractions, 1),
        row_divisions=sum(_divides_by_a_row(op) for op in func.walk()),
        operand_shapes=tuple(_tensor_shape(value) for value in a_values + b_values),
        tile_operands=operands["tile"],
        row_operands=operands["row"],
        column_operands=operands["column"],
        block_scaled=bool(scale_values),
        quantize=tuple(
            sorted(
                {op.granularity for op in func.walk() if isinstance(op, QuantizeScaleOp)}
                | {"group" for op in func.walk() if _given_group_scale(op)}
            )
        ),
        a_m_contiguous=any(_contiguous_role(value) == "m" for value in a_values),
        b_n_contiguous=any(_contiguous_role(value) == "n" for value in b_values),
    )


def _given_group_scale(op: Operation) -> bool:
    """`op` quantizes by a given scale of 1 x 128 groups (a tile then reads whole groups
    of it from n0 / 128)."""
    return isinstance(op, QuantizeOp) and op.granularity == "group"


def quantize_problem(problem: Problem, tile_n: int) -> str | None:
    """Why a tile `tile_n` wide cannot compute the problem's quantization scales, or None:
    a group scale needs whole groups in a tile, a row scale the whole row."""
    if "group" in problem.quantize and tile_n % QUANTIZE_GROUP:
        return (
            f"tile n = {tile_n}: a fusion.quantize_scale of 1 x {QUANTIZE_GROUP} groups "
            f"computes each group's amax in one tile, so tile n must be a multiple of "
            f"{QUANTIZE_GROUP}"
        )
    if "row" in problem.quantize and tile_n < problem.n:
        return (
            f"tile n = {tile_n}: a fusion.quantize_scale per row computes each row's amax in "
            f"one tile, so tile n must cover n = {problem.n}; quantize per 1 x "
            f"{QUANTIZE_GROUP} group (group=128) where N is wider than a tile"
        )
    return None


def _contiguous_role(value: SSAValue) -> str:
    """The role of a tensor's innermost axis of extent above 1 ("" where unknown)."""
    roles = _value_roles(value)
    if roles is None:
        return ""
    shape = _tensor_shape(value)
    kept = [role for role, extent in zip(roles, shape, strict=False) if extent != 1]
    return kept[-1] if kept else ""


def _value_roles(value: SSAValue) -> tuple[str, ...] | None:
    """The fusion.roles of a value: its op's attribute, or its function argument's."""
    owner = value.owner
    if isinstance(owner, Operation):
        roles = owner.attributes.get("fusion.roles")
    else:
        parent = owner.parent_op()
        index = value.index if isinstance(value, BlockArgument) else 0
        arg_attrs = parent.arg_attrs if isinstance(parent, FuncOp) else None
        entry = arg_attrs.data[index] if arg_attrs is not None else None
        roles = entry.data.get("fusion.roles") if isinstance(entry, DictionaryAttr) else None
    return tuple(roles.roles) if isinstance(roles, AxisRolesAttr) else None


def _divides_by_a_row(op: Operation) -> bool:
    """Whether `op` is a fusion.div whose divisor is a row value broadcast along m (roles
    with n and without m, before its casts and broadcasts)."""
    if op.name != "fusion.div":
        return False
    value = op.operands[1]
    while isinstance(value.owner, Operation) and value.owner.name in (
        "fusion.broadcast",
        "fusion.cast",
    ):
        value = value.owner.operands[0]
    roles = _value_roles(value)
    return roles is not None and "n" in roles and "m" not in roles


def _tensor_shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType | MemRefType)
    return tuple(value_type.get_shape())


def _epilogue_operands(func: FuncOp, mma_operands: Sequence[SSAValue]) -> dict[str, int]:
    """Function arguments other than mma operands, counted by shape: "tile" (roles with m
    and n), "row" (n, no m) and "column" (m, no n)."""
    arg_attrs = func.arg_attrs.data if func.arg_attrs is not None else ()
    counts = {"tile": 0, "row": 0, "column": 0}
    for arg, attrs in zip(func.body.block.args, arg_attrs, strict=False):
        roles = attrs.data.get("fusion.roles") if isinstance(attrs, DictionaryAttr) else None
        if arg in mma_operands or not isinstance(roles, AxisRolesAttr):
            continue
        has_m, has_n = "m" in roles.roles, "n" in roles.roles
        if has_m and has_n:
            counts["tile"] += 1
        elif has_n:
            counts["row"] += 1
        elif has_m:
            counts["column"] += 1
    return counts
