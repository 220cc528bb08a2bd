"""The tile-level ops of the `sched` dialect, which materialize-schedule creates.

The CPU executor runs them with numpy and the Hopper lowering maps them to TMA and wgmma.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from xdsl.dialects.builtin import (
    IndexType,
    MemRefType,
    TensorType,
    f32,
)
from xdsl.ir import (
    Attribute,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion import (
    AxisRolesAttr,
    parse_operands_with_roles,
    print_operands_with_roles,
)
from mmcomp.dialects.fusion.ops import parse_optional_scales, print_scales
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.dialects.sched.problem import (
    format_dims,
)
from mmcomp.dialects.syntax import (
    parse_keyword_attributes,
    print_attributes_and_region,
    print_attributes_and_types,
    with_attributes,
)
from mmcomp.ir.narrowing import is_memref, is_tensor

# Tile-level ops (after materialize-schedule)


def _check_box(op: str, memref: Attribute, tile: Attribute, indices: int) -> None:
    """Ranks and element types of a tile and the memref box it moves from or to agree."""
    assert is_memref(memref) and is_tensor(tile)
    memref_rank, tile_rank = memref.get_num_dims(), tile.get_num_dims()
    if memref_rank != tile_rank or indices != memref_rank:
        raise VerifyException(
            f"{op}: memref {memref} has rank {memref_rank}, tile {tile} rank {tile_rank}, "
            f"with {indices} indices; all three must agree"
        )
    if memref.element_type != tile.element_type:
        raise VerifyException(
            f"{op}: tile element type {tile.element_type} differs from the memref's "
            f"{memref.element_type}"
        )


@irdl_op_definition
class LoadTileOp(IRDLOperation):
    """Load the box at `indices` of a memref as a tile; out-of-bounds elements read zero."""

    name = "sched.load_tile"

    source = operand_def(MemRefType)
    """The operand in global memory."""
    indices = var_operand_def(IndexType)
    """The box's first element, one index per dimension."""
    result = result_def(TensorType)
    """The tile."""

    assembly_format = "$source `[` $indices `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue], tile_type: TensorType):
        super().__init__(operands=[source, indices], result_types=[tile_type])

    def verify_(self) -> None:
        _check_box("sched.load_tile", self.source.type, self.result.type, len(self.indices))


@irdl_op_definition
class StoreTileOp(IRDLOperation):
    """Store a tile to the box at `indices` of a memref, clipped to the memref's bounds
    and, with `rows`, to the rows below it along the m axis (a grouped tile's group end:
    `sched.store_tile %o, %C[%m0, %n0] rows %end : ...`)."""

    name = "sched.store_tile"

    value = operand_def(TensorType)
    """The tile."""
    dest = operand_def(MemRefType)
    """The output in global memory."""
    indices = var_operand_def(IndexType)
    """The box's first element, one index per dimension."""
    rows = opt_operand_def(IndexType)
    """The row bound along the m axis, if any: rows at or past it are not written."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$value `,` $dest `[` $indices `]` (`rows` $rows^)? attr-dict `:` type($value) `,` "
        "type($dest)"
    )

    def __init__(
        self,
        value: SSAValue,
        dest: SSAValue,
        indices: Sequence[SSAValue],
        rows: SSAValue | None = None,
    ):
        super().__init__(operands=[value, dest, indices, [] if rows is None else [rows]])

    def verify_(self) -> None:
        _check_box("sched.store_tile", self.dest.type, self.value.type, len(self.indices))


@irdl_op_definition
class ZeroTileOp(IRDLOperation):
    """A tile of zeros (the initial accumulator)."""

    name = "sched.zero_tile"

    result = result_def(TensorType)
    """The tile."""

    assembly_format = "attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, tile_type: TensorType):
        super().__init__(result_types=[tile_type])


@irdl_op_definition
class MmaOp(IRDLOperation):
    """acc + the contraction of tiles a and b over k, axes named by roles, in f32."""

    name = "sched.mma"

    a = operand_def(TensorType)
    """The A tile."""
    b = operand_def(TensorType)
    """The B tile."""
    acc = operand_def(TensorType)
    """The f32 accumulator tile."""
    a_roles = prop_def(AxisRolesAttr)
    """Role of each axis of a (as in `fusion.mma`); absent and batch axes have extent 1."""
    b_roles = prop_def(AxisRolesAttr)
    """Role of each axis of b."""
    scales = var_operand_def(TensorType)
    """None, or the block-wise scale tiles of a and b (f32): a's roles with k as k128,
    b's with k as k128 and n as n128 (`block_scale_shape`). Each 128-wide K block's product is
    scaled by them before it is added to the accumulator."""
    acc_roles = prop_def(AxisRolesAttr)
    """Role of each axis of the accumulator."""
    result = result_def(TensorType)
    """The new accumulator."""

    traits = traits_def(Pure())

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        acc: SSAValue,
        a_roles: Sequence[str] | AxisRolesAttr,
        b_roles: Sequence[str] | AxisRolesAttr,
        acc_roles: Sequence[str] | AxisRolesAttr,
        scales: Sequence[SSAValue] = (),
    ):
        def roles(value: Sequence[str] | AxisRolesAttr) -> AxisRolesAttr:
            return value if isinstance(value, AxisRolesAttr) else AxisRolesAttr(value)

        super().__init__(
            operands=[a, b, acc, list(scales)],
            properties={
                "a_roles": roles(a_roles),
                "b_roles": roles(b_roles),
                "acc_roles": roles(acc_roles),
            },
            result_types=[acc.type],
        )

    def verify_(self) -> None:
        extents: dict[str, int] = {}
        for what, value, roles in (
            ("a", self.a, self.a_roles.roles),
            ("b", self.b, self.b_roles.roles),
            ("acc", self.acc, self.acc_roles.roles),
        ):
            typ = cast(TensorType, value.type)
            shape = typ.get_shape()
            if len(shape) != len(roles):
                raise VerifyException(
                    f"sched.mma operand '{what}': {len(roles)} roles {list(roles)} for a tile "
                    f"of rank {len(shape)}"
                )
            for role, extent in zip(roles, shape, strict=True):
                if role == "_" or role.startswith("b"):
                    if extent != 1:
                        raise VerifyException(
                            f"sched.mma operand '{what}': axis with role {role} has extent "
                            f"{extent}; a tile has extent 1 along absent and batch axes"
                        )
                    continue
                if extents.setdefault(role, extent) != extent:
                    raise VerifyException(
                        f"sched.mma operand '{what}': axis {role} has extent {extent}, "
                        f"expected {extents[role]}"
                    )
        if "k" in self.acc_roles.roles:
            raise VerifyException("sched.mma operand 'acc': the accumulator has no k axis")
        acc_type = cast(TensorType, self.acc.type)
        if acc_type.element_type != f32:
            raise VerifyException(
                f"sched.mma operand 'acc': expected element type f32, found {acc_type.element_type}"
            )
        if self.result.type != self.acc.type:
            raise VerifyException(
                f"sched.mma result {self.result.type} differs from the accumulator {self.acc.type}"
            )
        self._verify_scales()

    def _verify_scales(self) -> None:
        """The block-wise scale tiles: none, or two f32 tiles of `block_scale_shape`."""
        if not self.scales:
            return
        if len(self.scales) != 2:
            raise VerifyException(
                f"sched.mma: expected 2 scales (scale_a, scale_b), found {len(self.scales)}"
            )
        for name, scale, factor, roles in (
            ("scale_a", self.scales[0], self.a, self.a_roles.roles),
            ("scale_b", self.scales[1], self.b, self.b_roles.roles),
        ):
            scale_type = cast(TensorType, scale.type)
            factor_shape = cast(TensorType, factor.type).get_shape()
            expected = block_scale_shape(factor_shape, roles, blocks_n=name == "scale_b")
            if scale_type.element_type != f32 or tuple(scale_type.get_shape()) != expected:
                raise VerifyException(
                    f"sched.mma operand '{name}': expected a block-wise scale tile "
                    f"tensor<{'x'.join(map(str, expected))}xf32>, found {scale_type}"
                )

    @classmethod
    def parse(cls, parser: Parser) -> MmaOp:
        operands, roles = parse_operands_with_roles(parser, 3)
        scales = parse_optional_scales(parser, cls.name)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != 3 + len(scales):
            parser.raise_error(
                f"sched.mma expects {3 + len(scales)} types (a, b, acc"
                f"{', scale_a, scale_b' if scales else ''}), found {len(types)}"
            )
        a, b, acc, *scale_values = parser.resolve_operands([*operands, *scales], types, parser.pos)
        a_roles, b_roles, acc_roles = roles
        return with_attributes(cls(a, b, acc, a_roles, b_roles, acc_roles, scale_values), attrs)

    def print(self, printer: Printer) -> None:
        print_operands_with_roles(
            printer, ((self.a, self.a_roles), (self.b, self.b_roles), (self.acc, self.acc_roles))
        )
        print_scales(printer, self.scales)
        print_attributes_and_types(printer, self, self.operand_types)


def block_scale_shape(
    factor_shape: Sequence[int], roles: Sequence[str], blocks_n: bool
) -> tuple[int, ...]:
    """The block-wise scale tile of a factor tile with `roles`: its k axis in blocks of 128
    (k128), and for the right factor (`blocks_n`) its n axis too (n128); the other axes
    kept."""
    blocked = ("k", "n") if blocks_n else ("k",)
    return tuple(
        -(-extent // SCALE_BLOCK) if role in blocked else extent
        for extent, role in zip(factor_shape, roles, strict=True)
    )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminates a `sched.epilogue` region with the output tiles."""

    name = "sched.yield"

    values = var_operand_def()
    """The output tiles."""

    assembly_format = "($values^ `:` type($values))? attr-dict"
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class EpilogueOp(IRDLOperation):
    """The fusion's pointwise epilogue on tiles: block arguments are the input tiles."""

    name = "sched.epilogue"

    inputs = var_operand_def(TensorType)
    """The accumulator tiles and the epilogue operand tiles."""
    outputs = var_result_def(TensorType)
    """The output tiles, in the order of the region's `sched.yield`."""
    body = region_def("single_block")
    """fusion-dialect pointwise ops on the tiles."""

    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue], output_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[inputs], result_types=[output_types], regions=[body])

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [arg.type for arg in block.args]
        input_types = [value.type for value in self.inputs]
        if arg_types != input_types:
            raise VerifyException(
                "sched.epilogue: block argument types "
                f"({', '.join(map(str, arg_types))}) differ from the input tile types "
                f"({', '.join(map(str, input_types))})"
            )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("sched.epilogue: the region must end with sched.yield")
        yielded = [value.type for value in last.values]
        output_types = [value.type for value in self.outputs]
        if yielded != output_types:
            raise VerifyException(
                f"sched.epilogue yields ({', '.join(map(str, yielded))}) but its results are "
                f"({', '.join(map(str, output_types))})"
            )

    @classmethod
    def parse(cls, parser: Parser) -> EpilogueOp:
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        inputs = parser.resolve_operands(operands, function_type.inputs.data, parser.pos)
        attrs = parse_keyword_attributes(parser)
        body = parser.parse_region()
        return with_attributes(cls(inputs, function_type.outputs.data, body), attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") : ")
        printer.print_function_type([v.type for v in self.inputs], [v.type for v in self.outputs])
        print_attributes_and_region(printer, self, self.body, print_entry_block_args=True)


# Split-K: partial tiles through an f32 workspace, reduced in a fixed order.


def _check_workspace(op: str, workspace: Attribute, tile: Attribute, indices: int) -> None:
    """The workspace is [leading..., tile...] f32 with one index per leading dimension."""
    assert is_memref(workspace) and is_tensor(tile)
    ws_shape, tile_shape = tuple(workspace.get_shape()), tuple(tile.get_shape())
    lead = len(ws_shape) - len(tile_shape)
    if lead != indices or ws_shape[lead:] != tile_shape:
        raise VerifyException(
            f"{op}: workspace {workspace} must be [{indices} leading dims] x the tile shape "
            f"{format_dims(tile_shape)}, with one index per leading dim ({indices} given)"
        )
    if workspace.element_type != f32 or tile.element_type != f32:
        raise VerifyException(f"{op}: the workspace and the tile must be f32")


@irdl_op_definition
class StorePartialOp(IRDLOperation):
    """Store a whole f32 partial tile into the workspace at [slice, tile, ...] (no clipping)."""

    name = "sched.store_partial"

    value = operand_def(TensorType)
    """The partial accumulator tile."""
    workspace = operand_def(MemRefType)
    """The f32 workspace: [slices, tiles, tile...]."""
    indices = var_operand_def(IndexType)
    """One index per leading workspace dimension (slice, tile)."""

    assembly_format = (
        "$value `,` $workspace `[` $indices `]` attr-dict `:` type($value) `,` type($workspace)"
    )

    def __init__(self, value: SSAValue, workspace: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, workspace, indices])

    def verify_(self) -> None:
        _check_workspace(
            "sched.store_partial", self.workspace.type, self.value.type, len(self.indices)
        )


@irdl_op_definition
class ArriveOp(IRDLOperation):
    """Atomically add 1 to a counter and return its old value (split-K arrival)."""

    name = "sched.arrive"

    counters = operand_def(MemRefType)
    """The i32 arrival counters, one per tile."""
    indices = var_operand_def(IndexType)
    """The counter's index."""
    old = result_def(IndexType)
    """The value before the increment."""

    assembly_format = "$counters `[` $indices `]` attr-dict `:` type($counters) `->` type($old)"

    def __init__(self, counters: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[counters, indices], result_types=[IndexType()])

    def verify_(self) -> None:
        typ = cast(MemRefType, self.counters.type)
        if typ.get_num_dims() != len(self.indices):
            raise VerifyException(
                f"sched.arrive: counters {typ} need {typ.get_num_dims()} indices, "
                f"found {len(self.indices)}"
            )


@irdl_op_definition
class ReducePartialsOp(IRDLOperation):
    """The sum of the workspace's partial tiles over its first axis, in order 0, 1, ..."""

    name = "sched.reduce_partials"

    workspace = operand_def(MemRefType)
    """The f32 workspace: [slices, tiles, tile...]."""
    indices = var_operand_def(IndexType)
    """One index per workspace dimension between the slice axis and the tile (the tile)."""
    result = result_def(TensorType)
    """The reduced f32 tile."""

    assembly_format = (
        "$workspace `[` $indices `]` attr-dict `:` type($workspace) `->` type($result)"
    )

    def __init__(self, workspace: SSAValue, indices: Sequence[SSAValue], tile_type: TensorType):
        super().__init__(operands=[workspace, indices], result_types=[tile_type])

    def verify_(self) -> None:
        _check_workspace(
            "sched.reduce_partials", self.workspace.type, self.result.type, len(self.indices) + 1
        )


# Stream-K: a tile's K-block segments, fixed up through the f32 workspace in segment order.


@irdl_op_definition
class ArriveSegmentOp(IRDLOperation):
    """Atomically add 1 to a tile's counter of `segments` arrivals; the old value (stream-K).

    The arrival whose old value is `segments - 1` is the tile's last; on the GPU it also
    resets the counter to 0 for the next launch.
    """

    name = "sched.arrive_segment"

    counters = operand_def(MemRefType)
    """The i32 arrival counters, one per tile."""
    index = operand_def(IndexType)
    """The counter's index (the tile)."""
    segments = operand_def(IndexType)
    """How many segments of the tile arrive in all."""
    old = result_def(IndexType)
    """The value before the increment."""

    assembly_format = (
        "$counters `[` $index `]` `of` $segments attr-dict `:` type($counters) `->` type($old)"
    )

    def __init__(self, counters: SSAValue, index: SSAValue, segments: SSAValue):
        super().__init__(operands=[counters, index, segments], result_types=[IndexType()])

    def verify_(self) -> None:
        typ = cast(MemRefType, self.counters.type)
        if typ.get_num_dims() != 1:
            raise VerifyException(
                f"sched.arrive_segment: counters {typ} must be one-dimensional (one per tile)"
            )


@irdl_op_definition
class AccumulatePartialOp(IRDLOperation):
    """acc + the f32 partial tile of the workspace at [cta, slot] (stream-K's fixup)."""

    name = "sched.accumulate_partial"

    acc = operand_def(TensorType)
    """The running f32 sum."""
    workspace = operand_def(MemRefType)
    """The f32 workspace: [CTAs, slots, tile...]."""
    indices = var_operand_def(IndexType)
    """The partial's CTA and slot."""
    result = result_def(TensorType)
    """The new sum."""

    assembly_format = (
        "$acc `,` $workspace `[` $indices `]` attr-dict `:` type($acc) `,` type($workspace) "
        "`->` type($result)"
    )

    def __init__(self, acc: SSAValue, workspace: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[acc, workspace, indices], result_types=[acc.type])

    def verify_(self) -> None:
        _check_workspace(
            "sched.accumulate_partial", self.workspace.type, self.acc.type, len(self.indices)
        )
        if self.result.type != self.acc.type:
            raise VerifyException(
                f"sched.accumulate_partial: result {self.result.type} differs from the sum "
                f"{self.acc.type}"
            )
