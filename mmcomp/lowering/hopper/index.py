"""Index arithmetic of the schedule -> 32-bit integer ptx instructions, one per op.

What runs on the GPU is exactly the schedule's arithmetic (persistent loop, split-K slice,
batch, grouped raster): `arith` on `index`, `gpu.block_id` and `gpu.grid_dim` each become
the ptx instruction(s) of the same meaning on 32-bit registers.
"""

from __future__ import annotations

from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from mmcomp.dialects import ptx
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.context import KernelContext

BINARY: dict[type[Operation], type[ptx.BinaryOp]] = {
    arith.AddiOp: ptx.AddOp,
    arith.SubiOp: ptx.SubOp,
    arith.MuliOp: ptx.MulOp,
    arith.DivUIOp: ptx.DivOp,
    arith.RemUIOp: ptx.RemOp,
    arith.MinUIOp: ptx.MinOp,
    arith.MaxUIOp: ptx.MaxOp,
}
"""The ptx instruction of each binary index op."""
COMPARISONS = {0: "eq", 1: "ne", 6: "lo", 7: "ls", 8: "hi", 9: "hs", 2: "lo", 3: "ls"}
"""The unsigned setp comparison of each arith.cmpi predicate (index values are unsigned)."""


def emit_index_op(ctx: KernelContext, op: Operation) -> bool:
    """Emit an index op; False if `op` is not one."""
    k = ctx.k
    if isinstance(op, arith.ConstantOp):
        value = op.value
        if not isinstance(value, IntegerAttr):
            raise ScheduleError(f"{ctx.where}: unsupported constant {value}")
        ctx.regs[op.result] = k.const(value.value.data & 0xFFFFFFFF)
        return True
    if isinstance(op, gpu.BlockIdOp):
        ctx.regs[op.result] = k.sreg("ctaid.x")
        return True
    if isinstance(op, gpu.GridDimOp):
        ctx.regs[op.result] = k.sreg("nctaid.x")
        return True
    kind = BINARY.get(type(op))
    if kind is not None:
        ctx.regs[op.results[0]] = k.binary(kind, ctx.reg(op.operands[0]), ctx.reg(op.operands[1]))
        return True
    if isinstance(op, arith.CmpiOp):
        predicate = op.predicate.value.data
        cmp = COMPARISONS.get(predicate)
        if cmp is None:
            raise ScheduleError(f"{ctx.where}: unsupported arith.cmpi predicate {predicate}")
        pred = k.setp(cmp, ctx.reg(op.lhs), ctx.reg(op.rhs))
        ctx.regs[op.result] = k.selp(k.const(1), k.const(0), pred)
        return True
    if isinstance(op, arith.SelectOp):
        cond = k.setp("ne", ctx.reg(op.cond), k.const(0))
        ctx.regs[op.result] = k.selp(ctx.reg(op.lhs), ctx.reg(op.rhs), cond)
        return True
    return False
