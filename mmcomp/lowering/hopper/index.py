"""The schedule's index arithmetic at the hopper level: `arith` on `index` values.

What runs on the GPU is exactly the schedule's arithmetic (persistent loop, split-K slice,
batch, grouped raster). The roles place copies of its ops (`arith` on `index`,
`gpu.block_id`, `gpu.grid_dim`) where they need them (`place`): the producer its region's,
the consumers theirs, each K block its own copy. The copies stay `arith` ops on index
values, read through the kernel context (a loop's induction variable is a register, read
as an index through a cast); `convert-arith-to-ptx` lowers them to 32-bit ptx
instructions. An op that pass cannot lower (a constant that is not an integer, a
comparison without an unsigned form) is refused here; the ops of an epilogue body are the
epilogue's (`mmcomp.lowering.hopper.pointwise`).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from mmcomp.errors import ScheduleError
from mmcomp.lowering.arith_to_ptx.registers import COMPARISONS, INDEX_OPS
from mmcomp.lowering.hopper.context import KernelContext


def place(ctx: KernelContext, op: Operation) -> bool:
    """Emit a copy of an index op on the index values of its operands; False if `op` is
    not index arithmetic (an index op convert-arith-to-ptx cannot lower is an error)."""
    if not isinstance(op, INDEX_OPS):
        return False
    if isinstance(op, arith.ConstantOp) and not isinstance(op.value, IntegerAttr):
        raise ScheduleError(f"{ctx.where}: unsupported constant {op.value}")
    if isinstance(op, arith.CmpiOp) and op.predicate.value.data not in COMPARISONS:
        predicate = op.predicate.value.data
        raise ScheduleError(f"{ctx.where}: unsupported arith.cmpi predicate {predicate}")
    mapping = {operand: ctx.index(operand) for operand in op.operands}
    copy = op.clone(value_mapper=mapping, clone_name_hints=False)
    ctx.k.append(copy)
    for old, new in zip(op.results, copy.results, strict=True):
        ctx.regs[old] = new
    return True
