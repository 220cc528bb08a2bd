"""The group ops of the `sched` dialect: a grouped kernel's rows, read on the device.

A grouped contraction multiplies each group's rows by its own weights. Where the groups
lie is data: an int32 array the kernel reads on the device (never the host), so one
launch (and one CUDA graph) serves any routing.

- Contiguous groups: the rows of x [T, K] are sorted by group, `offsets[g]` is the end of
  group g (cumulative), group g holds the rows [offsets[g - 1], offsets[g]) (offsets[-1]
  is 0). The m tiles are numbered by a virtual tile index that needs no prefix sum:
  group g's tiles are the indices first(g) + j for j < ceil(rows(g) / tile_m), with
  first(g) = floor(offsets[g - 1] / tile_m) + g, which grows by at least the group's tile
  count from one group to the next. So floor(T / tile_m) + G indices hold every tile of
  every routing of T rows (`group_tiles_bound`), the kernel's loop bound is known on the
  host from T, and an index maps to its group by a binary search over the offsets
  (`sched.group_tile`). An index between two groups' tiles (at most one per group) has no
  rows. The kernel walks its (m tile, n tile) pairs group by group: a linear tile index t
  of the (virtual m tiles x n tiles) list lies in group g where first(g) <= t / n_tiles,
  and its index within the group's (tiles x n tiles) grid is t - first(g) * n_tiles,
  rastered and swizzled in that grid (mmcomp.lowering.materialize_schedule.kernel).
- Masked groups: x is [G, Mmax, K], `counts[g]` the rows of group g that hold tokens
  (`sched.group_rows`); a tile at or past the count is skipped, and rows past it are not
  written.

The stores of a grouped tile are clipped at the group's end (`sched.store_tile ... rows
%end`, `sched.write_tile ... rows %end`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IndexType, IntAttr, MemRefType, i32
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.syntax import with_attributes
from mmcomp.ir.narrowing import is_memref

MAX_GROUPS = 1024
"""The most groups a grouped kernel takes (its binary search is unrolled, one step per bit
of the group index: 10 steps at 1024)."""


def group_tiles_bound(rows: int, tile_m: int, groups: int) -> int:
    """The virtual m tile indices that hold every group's tiles for `rows` rows in `groups`
    contiguous groups: floor(rows / tile_m) + groups."""
    return rows // tile_m + groups


def search_steps(groups: int) -> list[int]:
    """The steps of the binary search over `groups` groups, largest first (powers of two
    below the group count)."""
    steps: list[int] = []
    step = 1
    while step < groups:
        steps.append(step)
        step *= 2
    return steps[::-1]


def _check_groups(name: str, array: SSAValue, what: str) -> None:
    """`array` is a static one-axis i32 memref of at most MAX_GROUPS groups."""
    typ = array.type
    if not is_memref(typ) or typ.get_num_dims() != 1 or typ.element_type != i32:
        raise VerifyException(f"{name}: {what} must be a memref<Gxi32>, found {typ}")
    groups = typ.get_shape()[0]
    if groups < 1 or groups > MAX_GROUPS:
        raise VerifyException(
            f"{name}: {what} hold {groups} groups; a grouped kernel takes 1 to {MAX_GROUPS}"
        )


@irdl_op_definition
class GroupTileOp(IRDLOperation):
    """The group of a virtual m tile of contiguous groups, and the group's rows:
    `%g, %start, %end = sched.group_tile %offsets[%tile] tile_m 128 : memref<8xi32>`.

    g is the last group whose first virtual tile first(g) = floor(offsets[g - 1] / tile_m)
    + g is at most `tile`; start = offsets[g - 1] (0 for g = 0), end = offsets[g]. Group
    g's m tiles are the virtual indices first(g) + j, j < ceil((end - start) / tile_m),
    holding the rows [start + j tile_m, min(start + (j + 1) tile_m, end)).
    """

    name = "sched.group_tile"

    offsets = operand_def(MemRefType)
    """The groups' cumulative ends, int32 [G], read on the device."""
    tile = operand_def(IndexType)
    """The virtual m tile index."""
    tile_m = prop_def(IntAttr)
    """Rows per m tile."""
    group = result_def(IndexType)
    """The tile's group."""
    start = result_def(IndexType)
    """The group's first row: offsets[g - 1], 0 for the first group."""
    end = result_def(IndexType)
    """The group's end: rows at or past it are another group's."""

    traits = traits_def(Pure())

    def __init__(self, offsets: SSAValue, tile: SSAValue, tile_m: int):
        super().__init__(
            operands=[offsets, tile],
            properties={"tile_m": IntAttr(tile_m)},
            result_types=[IndexType()] * 3,
        )

    @classmethod
    def parse(cls, parser: Parser) -> GroupTileOp:
        offsets = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        tile = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
        parser.parse_punctuation("]")
        parser.parse_keyword("tile_m")
        tile_m = parser.parse_integer(allow_boolean=False, allow_negative=False)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        offsets_type = parser.parse_type()
        op = cls(parser.resolve_operand(offsets, offsets_type), tile, tile_m)
        return with_attributes(op, attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.offsets)
        printer.print_string("[")
        printer.print_ssa_value(self.tile)
        printer.print_string(f"] tile_m {self.tile_m.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.offsets.type)

    def verify_(self) -> None:
        _check_groups(self.name, self.offsets, "the offsets")
        if self.tile_m.data < 1:
            raise VerifyException(f"{self.name}: tile_m must be positive, found {self.tile_m}")


@irdl_op_definition
class GroupRowsOp(IRDLOperation):
    """The rows of a masked group that hold tokens: `%count = sched.group_rows
    %counts[%g] : memref<64xi32>` is counts[g] as an index."""

    name = "sched.group_rows"
    counts = operand_def(MemRefType)
    """Each group's rows, int32 [G], read on the device."""
    group = operand_def(IndexType)
    """The group."""
    rows = result_def(IndexType)
    """counts[group]."""

    assembly_format = "$counts `[` $group `]` attr-dict `:` type($counts)"
    traits = traits_def(Pure())

    def __init__(self, counts: SSAValue, group: SSAValue):
        super().__init__(operands=[counts, group], result_types=[IndexType()])

    def verify_(self) -> None:
        _check_groups(self.name, self.counts, "the counts")
