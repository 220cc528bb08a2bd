"""A grouped kernel's group ops at the hopper level: index arithmetic and word loads.

`sched.group_tile` (the group of a virtual m tile of contiguous groups, its start and
end) becomes the binary search it is defined by (mmcomp/dialects/sched/group_ops.py),
unrolled over the bits of the group index: each step loads one group start,
`offsets[probe - 1]` (a `hopper.global_load_index`), and keeps the probe where its first
tile, start / tile_m + probe, is at most the tile (its start kept with it); the group end
is one more load. So a
tile costs ceil(log2 G) + 1 dependent loads of a few hundred bytes that every CTA reads
(L1 hits after the first tile), and no shared memory, scan or barrier. `sched.group_rows`
(a masked group's rows) is one load. Both roles run the same arithmetic on the same
offsets, so the producer and the consumers walk the same tiles. The arithmetic is the
schedule's kind (`arith` on index: compare, select, min), which convert-arith-to-ptx
lowers; the loads come after the prologue's `griddepcontrol.wait`, so offsets that the
previous kernel of the stream writes are read after it finished.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from mmcomp.dialects import hopper, sched
from mmcomp.ir.narrowing import is_memref
from mmcomp.lowering.hopper.context import KernelContext
from mmcomp.lowering.hopper.values import Values

WORD_BYTES = 4
"""Bytes of one offset or count (int32)."""


def load_word(ctx: KernelContext, array: SSAValue, index: SSAValue) -> SSAValue:
    """`array[index]` of an int32 kernel array, as an index value."""
    values = Values(ctx)
    address = values.add_scaled(ctx.address(array), index, WORD_BYTES)
    return ctx.k.append(hopper.GlobalLoadIndexOp(address)).value


def place_group_op(ctx: KernelContext, op: Operation) -> bool:
    """Emit a group op's arithmetic and loads, mapping its results; False for any other
    op."""
    if isinstance(op, sched.GroupRowsOp):
        rows = load_word(ctx, op.counts, ctx.index(op.group))
        rows.name_hint = "group_rows"
        ctx.regs[op.rows] = rows
        return True
    if not isinstance(op, sched.GroupTileOp):
        return False
    group, start, end = group_tile(ctx, op)
    ctx.regs[op.group] = group
    ctx.regs[op.start] = start
    ctx.regs[op.end] = end
    return True


def group_tile(ctx: KernelContext, op: sched.GroupTileOp) -> tuple[SSAValue, SSAValue, SSAValue]:
    """The binary search of `sched.group_tile`: (group, group start, group end)."""
    k = ctx.k
    values = Values(ctx)
    offsets_type = op.offsets.type
    assert is_memref(offsets_type)
    groups = offsets_type.get_shape()[0]
    tile_m = values.const(op.tile_m.data)
    tile = ctx.index(op.tile)
    group = values.const(0)
    start = values.const(0)
    one = values.const(1)
    last = values.const(groups - 1)
    for step in sched.search_steps(groups):
        probe = k.append(arith.MinUIOp(values.add(group, values.const(step)), last)).result
        probe_start = load_word(ctx, op.offsets, values.sub(probe, one))
        first = values.add(k.append(arith.DivUIOp(probe_start, tile_m)).result, probe)
        within = k.append(arith.CmpiOp(first, tile, "ule")).result
        group = k.append(arith.SelectOp(within, probe, group)).result
        start = k.append(arith.SelectOp(within, probe_start, start)).result
    end = load_word(ctx, op.offsets, group)
    if sched.search_steps(groups):
        group.name_hint, start.name_hint = "group", "group_start"
    end.name_hint = "group_end"
    return group, start, end
