"""The quantizing epilogue: group scales from the accumulator fragment, fp8 values by them.

`fusion.quantize_scale` reduces a row's group of elements: a thread holds 32 elements of a
row's 1 x 128 group (columns 8j + 2(l % 4) + {0, 1} of the fragment) and the lanes l, l ^ 1,
l ^ 2, l ^ 3 of its quad hold the rest of the row's group, so the group's amax is the
`math.absf` and `arith.maxnumf` of the thread's elements, then of the quad's
(`hopper.shuffle_xor` with masks 1 and 2); its scale an `arith.divf` by the fp8 type's
largest finite value. Per row (no group), the thread's elements are the row's columns of
the tile. Elements past the array's last column are left out of the amax (a select of 0:
past N the epilogue's values are those of zero-filled tiles and unloaded operands).

`fusion.quantize` at an element is the value times its scale's multiplier: the reciprocal
of the scale, 0 where the scale is 0 (an all-zero group gives scale 0 and values 0), made
once per scale value. The fp8 output then rounds the products in pairs with saturation
(`hopper.truncf_pair`, `cvt.rn.satfinite.e4m3x2.f32`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from mmcomp.dialects import hopper
from mmcomp.dialects.fusion import QuantizeScaleOp
from mmcomp.lowering.hopper.context import KernelContext
from mmcomp.lowering.hopper.pointwise import CONTRACT, Pointwise
from mmcomp.lowering.hopper.values import Values

QUAD_MASKS = (1, 2)
"""The lane masks of the butterfly over a quad (the four lanes holding one row)."""

Column = tuple[int, int, int]
"""An element column of the fragment: (chunk, block8, e), at chunk * instr n + 8 block8 + e."""


@dataclass
class GroupScales:
    """The quantizing epilogue's values of the current tile (see the module docstring)."""

    ctx: KernelContext
    math: Pointwise
    span: int
    """Columns of one group of the warpgroup tile: 128, or the warpgroup's n (per row)."""
    extent: int
    """The n extent of the quantized values (N)."""
    scales: dict[tuple[SSAValue, int, int], SSAValue] = field(
        default_factory=dict[tuple[SSAValue, int, int], SSAValue]
    )
    """Each scale computed in this tile, by (op result, row slot, group)."""
    multipliers: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    """The multiplier of each scale value read in this tile."""

    def reset(self) -> None:
        """A new tile."""
        self.scales = {}
        self.multipliers = {}

    @property
    def groups(self) -> int:
        """The groups of a row of the warpgroup tile."""
        return self.ctx.params.wgmma_warpgroup[1] // self.span

    def group_of(self, col: int) -> int:
        """The group of a column of the warpgroup tile."""
        return col // self.span

    def columns(self, group: int) -> list[Column]:
        """This thread's columns of `group` (a pair per 8-column block)."""
        instr_n = self.ctx.params.instr[1]
        first = group * self.span
        return [
            (col8 // instr_n, (col8 % instr_n) // 8, e)
            for col8 in range(first, first + self.span, 8)
            for e in range(2)
        ]

    def column(self, column: Column) -> int:
        """The column of the warpgroup tile (this thread's col0 added at run time)."""
        chunk, block8, e = column
        return chunk * self.ctx.params.instr[1] + 8 * block8 + e

    def scale(
        self,
        op: QuantizeScaleOp,
        half: int,
        group: int,
        element: Callable[[Column], SSAValue],
        column_limit: Callable[[], SSAValue] | None,
    ) -> SSAValue:
        """The scale of row slot `half`'s group `group`: amax(|element|) over the quad's
        elements, divided by the target's largest finite value (made once per tile).

        `element` gives the f32 input at one of this thread's columns; `column_limit` the
        columns left from this thread's col0 to the array's last (a signed i32), where some
        of the group's columns may lie past it (None where none can)."""
        key = (op.result, half, group)
        found = self.scales.get(key)
        if found is not None:
            return found
        k = self.ctx.k
        magnitudes: list[SSAValue] = []
        columns = self.columns(group)
        masked = [self.may_lie_past(self.column(column)) for column in columns]
        limit = column_limit() if column_limit is not None and any(masked) else None
        for column, past in zip(columns, masked, strict=True):
            magnitude = k.append(math.AbsFOp(element(column))).result
            if limit is not None and past:
                inside = Values(self.ctx).greater(limit, self.column(column))
                magnitude = self.select(inside, magnitude, self.math.const_f32(0.0))
            magnitudes.append(magnitude)
        amax = self.largest(magnitudes)
        for mask in QUAD_MASKS:
            other = self.ctx.k.append(hopper.ShuffleXorOp(amax, mask)).result
            amax = self.ctx.k.append(arith.MaxnumfOp(amax, other)).result
        largest = self.math.const_f32(op.largest)
        scale = self.ctx.k.append(arith.DivfOp(amax, largest)).result
        self.scales[key] = scale
        return scale

    def may_lie_past(self, col: int) -> bool:
        """Whether a column's element may lie past N in some tile: its group is a partial
        one (N % span columns of it inside) and some lane's column of its 8-column block
        lies past those. Groups start at multiples of the span, so this is static."""
        inside = self.extent % self.span
        return inside != 0 and col % self.span - col % 8 + 8 > inside

    def largest(self, values: Sequence[SSAValue]) -> SSAValue:
        """The largest of `values` (`max.f32`), as a balanced tree."""
        level = list(values)
        while len(level) > 1:
            paired = [
                self.ctx.k.append(arith.MaxnumfOp(level[i], level[i + 1])).result
                for i in range(0, len(level) - 1, 2)
            ]
            level = paired + level[len(level) - len(level) % 2 :]
        return level[0]

    def multiplier(self, scale: SSAValue) -> SSAValue:
        """1 / scale (`div.rn.f32`), 0 where the scale is 0, made once per scale value."""
        found = self.multipliers.get(scale)
        if found is not None:
            return found
        zero = self.math.const_f32(0.0)
        nonzero = self.ctx.k.append(arith.CmpfOp(scale, zero, "une")).result
        inverse = self.ctx.k.append(arith.DivfOp(self.math.const_f32(1.0), scale)).result
        found = self.select(nonzero, inverse, self.math.const_f32(0.0))
        self.multipliers[scale] = found
        return found

    def quantized(self, value: SSAValue, scale: SSAValue) -> SSAValue:
        """`value / scale` as the product with the scale's multiplier (`mul.f32`)."""
        multiplier = self.multiplier(scale)
        return self.ctx.k.append(arith.MulfOp(value, multiplier, CONTRACT)).result

    def select(self, cond: SSAValue, if_true: SSAValue, if_false: SSAValue) -> SSAValue:
        """`cond ? if_true : if_false` on f32 values (`selp.f32`)."""
        return self.ctx.k.append(arith.SelectOp(cond, if_true, if_false)).result
