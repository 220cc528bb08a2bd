"""The lowering's own index arithmetic at the hopper level: `arith` on `index` values.

What the lowering derives from the schedule's values (the trip count of a ping-pong skip,
the next-tile test of its order barrier) and the consumers' thread arithmetic are written as
`arith` ops on `index` (and `i1` comparisons), like the schedule's own arithmetic
(`mmcomp.lowering.hopper.index`); `convert-arith-to-ptx` lowers them to the 32-bit
instructions the lowering wrote before, in the same order. A ptx register enters through a
cast to `index` (`of`); a ptx op reads an index value through a cast to `!ptx.reg<u32>`
(`reg`). A comparison (or a conjunction, `both`) guards a ptx or hopper op as the i1
itself, which convert-arith-to-ptx lowers to the `setp` alone (and `and.pred`). `mad` is
`a * b + c` as one `mad.lo`: an `arith.muli` and the `arith.addi` marked `ptx.mad` that
reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IndexType, IntegerAttr, UnrealizedConversionCastOp, i1, i32, i64
from xdsl.ir import SSAValue

from mmcomp.dialects import hopper, ptx
from mmcomp.lowering.arith_to_ptx.registers import mark_mad
from mmcomp.lowering.hopper.context import KernelContext

PREDICATES = {"eq": "eq", "ne": "ne", "lo": "ult", "ls": "ule", "hi": "ugt", "hs": "uge"}
"""The arith.cmpi predicate of each unsigned setp comparison."""


@dataclass(frozen=True)
class Values:
    """Appends the lowering's own index arithmetic at the builder's insertion point."""

    ctx: KernelContext

    def of(self, value: SSAValue) -> SSAValue:
        """`value` as an index value: itself, the index value a register cast reads, or a
        register or shared address (`!hopper.smem`) read through a cast to `index`."""
        if isinstance(value.type, IndexType):
            return value
        if isinstance(value.type, hopper.SmemType):
            return self.ctx.cast(value, IndexType())
        owner = value.owner
        if (
            isinstance(owner, UnrealizedConversionCastOp)
            and len(owner.inputs) == 1
            and isinstance(owner.inputs[0].type, IndexType)
            and self.ctx.k.sees(owner.inputs[0])
        ):
            return owner.inputs[0]
        if value.type != ptx.U32:
            raise ValueError(
                f"Values.of: expected an index value or a u32 register, got {value.type}"
            )
        return self.ctx.register_index(value)

    def reg(self, value: SSAValue) -> SSAValue:
        """The index value `value` read by a ptx op: a cast to `!ptx.reg<u32>`."""
        if value.type == ptx.U32:
            return value
        return self.ctx.cast(value, ptx.U32)

    def pred(self, value: SSAValue) -> SSAValue:
        """The i1 `value` read as a predicate register (the condition of a `select`, lowered
        to a `selp` on the comparison's `setp`): a cast to `!ptx.reg<pred>`."""
        if value.type != i1:
            raise ValueError(f"Values.pred: expected an i1 comparison, got {value.type}")
        return self.ctx.cast(value, ptx.PRED)

    def as_condition(self, pred: SSAValue) -> SSAValue:
        """A predicate register read as the i1 condition of an `arith.select`."""
        if pred.type != ptx.PRED:
            raise ValueError(f"Values.as_condition: expected a predicate, got {pred.type}")
        return self.ctx.cast(pred, i1)

    def const(self, value: int) -> SSAValue:
        """An index constant."""
        return self.ctx.index_constant(value)

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs + rhs`."""
        return self.ctx.k.append(arith.AddiOp(self.of(lhs), self.of(rhs))).result

    def sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs - rhs`."""
        return self.ctx.k.append(arith.SubiOp(self.of(lhs), self.of(rhs))).result

    def mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs * rhs`."""
        return self.ctx.k.append(arith.MuliOp(self.of(lhs), self.of(rhs))).result

    def mad(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """`a * b + c`, lowered as one `mad.lo`."""
        k = self.ctx.k
        a, b, c = self.of(a), self.of(b), self.of(c)
        product = k.append(arith.MuliOp(a, b)).result
        return k.append(mark_mad(arith.AddiOp(product, c))).result

    def ceildiv(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`ceil(lhs / rhs)` (unsigned)."""
        return self.ctx.k.append(arith.CeilDivUIOp(self.of(lhs), self.of(rhs))).result

    def and_(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs & rhs`."""
        return self.ctx.k.append(arith.AndIOp(self.of(lhs), self.of(rhs))).result

    def xor(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs ^ rhs`."""
        return self.ctx.k.append(arith.XOrIOp(self.of(lhs), self.of(rhs))).result

    def shr(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs >> rhs` (logical)."""
        return self.ctx.k.append(arith.ShRUIOp(self.of(lhs), self.of(rhs))).result

    def cmp(self, cmp: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """The unsigned comparison `cmp` (a setp name: eq, ne, lo, ls, hi, hs) as an i1."""
        predicate = PREDICATES.get(cmp)
        if predicate is None:
            raise ValueError(f"Values.cmp: expected one of {sorted(PREDICATES)}, got {cmp!r}")
        op = arith.CmpiOp(self.of(lhs), self.of(rhs), predicate)
        return self.ctx.k.append(op).result

    def signed(self, value: SSAValue) -> SSAValue:
        """The index value `value` as a signed 32-bit count (an `arith.index_cast` to i32,
        lowered to a `mov` into an s32 register): a difference that may be negative."""
        return self.ctx.k.append(arith.IndexCastOp(self.of(value), i32)).result

    def greater(self, count: SSAValue, bound: int) -> SSAValue:
        """`count > bound` of a signed count (`signed`) as an i1: an `arith.cmpi sgt` with
        an i32 constant (`setp.gt.s32`)."""
        k = self.ctx.k
        constant = k.append(arith.ConstantOp(IntegerAttr(bound, i32))).result
        return k.append(arith.CmpiOp(count, constant, "sgt")).result

    def thread_id(self) -> SSAValue:
        """The thread's index in its block (`gpu.thread_id x`, %tid.x)."""
        op = gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))
        return self.ctx.k.append(op).result

    def condition(self, value: SSAValue) -> SSAValue:
        """`value` as an i1 predicate: itself, or a predicate register read through a cast
        to i1."""
        if value.type == i1:
            return value
        return self.as_condition(value)

    def both(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs and rhs` of two predicates (i1 values or predicate registers): an
        `arith.andi` on i1, lowered as `and.pred`."""
        op = arith.AndIOp(self.condition(lhs), self.condition(rhs))
        return self.ctx.k.append(op).result

    def select(self, cond: SSAValue, if_true: SSAValue, if_false: SSAValue) -> SSAValue:
        """`cond ? if_true : if_false` on a predicate register `cond`."""
        condition = self.as_condition(cond)
        op = arith.SelectOp(condition, self.of(if_true), self.of(if_false))
        return self.ctx.k.append(op).result

    def widen(self, value: SSAValue) -> SSAValue:
        """The index value `value` zero-extended to i64: an `arith.index_cast` to i32 (exact:
        the index values are 32-bit) and an `arith.extui` (xDSL's arith has no
        `index_castui`, and `index_cast` to i64 would extend the sign)."""
        k = self.ctx.k
        narrow = k.append(arith.IndexCastOp(self.of(value), i32)).result
        return k.append(arith.ExtUIOp(narrow, i64)).result

    def wide_const(self, value: int) -> SSAValue:
        """An i64 constant."""
        return self.ctx.k.append(arith.ConstantOp(IntegerAttr(value, i64))).result

    def wide(self, value: SSAValue) -> SSAValue:
        """A 64-bit value as i64: itself, or a u64 register (a pointer parameter, an address)
        read through a cast."""
        if value.type == i64:
            return value
        owner = value.owner
        if (
            isinstance(owner, UnrealizedConversionCastOp)
            and len(owner.inputs) == 1
            and owner.inputs[0].type == i64
            and self.ctx.k.sees(owner.inputs[0])
        ):
            return owner.inputs[0]
        if value.type != ptx.U64:
            raise ValueError(
                f"Values.wide: expected an i64 value or a u64 register, got {value.type}"
            )
        return self.ctx.cast(value, i64)

    def address(self, value: SSAValue) -> SSAValue:
        """The i64 `value` read by a ptx op as an address: a cast to `!ptx.reg<u64>`."""
        if value.type == ptx.U64:
            return value
        return self.ctx.cast(value, ptx.U64)

    def add_scaled(self, base: SSAValue, index: SSAValue, size: int) -> SSAValue:
        """`base + index * size` in 64 bits (`index` a 32-bit index value, `size` below
        2^32), as an i64 value: one `mul.wide.u32` and an `add.u64`."""
        k = self.ctx.k
        base = self.wide(base)
        product = k.append(arith.MuliOp(self.widen(index), self.wide_const(size))).result
        return k.append(arith.AddiOp(base, product)).result

    def mad_wide(self, index: SSAValue, size: int, base: SSAValue) -> SSAValue:
        """`index * size + base` in 64 bits (`index` a 32-bit index value, `size` below
        2^32), as an i64 value: one `mad.wide.u32`."""
        k = self.ctx.k
        base = self.wide(base)
        product = k.append(arith.MuliOp(self.widen(index), self.wide_const(size))).result
        return k.append(mark_mad(arith.AddiOp(product, base))).result
