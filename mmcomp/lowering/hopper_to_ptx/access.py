"""The epilogue's element accesses as ptx loads and stores, one pattern per op.

`hopper.global_load` becomes one vector `ld.global` of the registers of its element type,
read as its typed results through casts (convert-arith-to-ptx folds them into the ops that
read the elements), `hopper.global_load_index` one `ld.global.u32` read as an index value;
`hopper.smem_load` one vector `ld.shared.f32` read likewise;
`hopper.global_store` and `hopper.smem_store` one vector `st` of the registers of their
values: an f32, bf16 or f16 value's register (a cast, folded likewise), a pair's bf16x2 /
f16x2 (its `hopper.truncf_pair`'s). The address is an i64 value's u64 register, or an
`!hopper.smem`'s u32 one; the guard stays the instruction's.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    UnrealizedConversionCastOp,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mmcomp.dialects import hopper, ptx
from mmcomp.ir.narrowing import is_vector
from mmcomp.lowering.hopper_to_ptx.registers import (
    Emitter,
    address_of,
    register_of,
    value_register,
)

PAIR_KINDS: dict[type[Attribute], str] = {
    BFloat16Type: "bf16x2",
    Float8E4M3FNType: "e4m3x2",
    Float8E5M2Type: "e5m2x2",
}
"""The register kind of a stored pair by element type (f16x2 otherwise)."""


def register_kind(value_type: Attribute) -> ptx.RegType:
    """The register type of an element type (f32, bf16, f16) or of a pair of 16-bit floats
    (bf16x2, f16x2) or of fp8 (e4m3x2, e5m2x2: 16 bits)."""
    if is_vector(value_type):
        element = value_type.get_element_type()
        return ptx.reg(PAIR_KINDS.get(type(element), "f16x2"))
    if isinstance(value_type, BFloat16Type):
        return ptx.reg("bf16")
    if isinstance(value_type, Float16Type):
        return ptx.reg("f16")
    return ptx.F32


def stored_registers(values: Sequence[SSAValue]) -> tuple[list[Operation], list[SSAValue]]:
    """The registers of stored values: a pair's register, or a cast of a scalar."""
    ops: list[Operation] = []
    registers: list[SSAValue] = []
    for value in values:
        if isinstance(value.type, VectorType):
            registers.append(register_of(value))
            continue
        cast, register = value_register(value, register_kind(value.type))
        ops += cast
        registers.append(register)
    return ops, registers


def offset_of(
    op: hopper.GlobalLoadOp | hopper.GlobalStoreOp | hopper.SmemLoadOp | hopper.SmemStoreOp,
) -> int:
    """The op's byte offset past its address."""
    return op.offset.data if op.offset is not None else 0


class LowerGlobalLoad(RewritePattern):
    """A global load: one `ld.global` of its elements' registers, read as its results; a
    guarded one with `zero_fill` into registers set to 0 before it (`zero_filled`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.GlobalLoadOp, rewriter: PatternRewriter) -> None:
        out = Emitter(op.guard, op.negated is not None)
        address_ops, address = value_register(op.address, ptx.U64)
        out.ops += address_ops
        kind = register_kind(op.values[0].type)
        if op.zero_fill is not None and op.guard is not None:
            registers = zero_filled(address, kind, len(op.values), offset_of(op), out)
        else:
            load = out.emit(ptx.LdOp("global", address, kind, len(op.values), offset_of(op)))
            registers = list(load.results)
        casts = [
            UnrealizedConversionCastOp.get([register], [value.type])
            for register, value in zip(registers, op.values, strict=True)
        ]
        for cast, value in zip(casts, op.values, strict=True):
            cast.results[0].name_hint = value.name_hint
        rewriter.replace(op, [*out.ops, *casts], [cast.results[0] for cast in casts])


def zero_filled(
    address: SSAValue, kind: ptx.RegType, count: int, offset: int, out: Emitter
) -> list[SSAValue]:
    """`count` registers of `kind` set to 0, then loaded under the guard (`ptx.ld_into`):
    what a guarded load leaves where its guard fails is 0, and no register holds a value
    from before it (the registers of a guarded `ptx.ld` keep their old value there, which
    ptxas keeps alive around every loop of the load). A 16-bit float's registers, which
    take no immediate, are set as b16 registers and read through a `mov`."""
    bits = kind if kind.kind.category == "f" else ptx.reg(kind.kind.decl)
    zero = 0.0 if kind.kind.category == "f" else 0
    targets = [ptx.ConstOp(zero, bits) for _ in range(count)]
    out.ops += targets
    out.emit(ptx.LdIntoOp("global", address, [target.result for target in targets], offset))
    if bits == kind:
        return [target.result for target in targets]
    moves = [ptx.MovOp(target.result, kind) for target in targets]
    out.ops += moves
    return [move.result for move in moves]


class LowerSmemLoad(RewritePattern):
    """A shared load of words: one `ld.shared` of f32 registers at the address's register,
    read as its results."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SmemLoadOp, rewriter: PatternRewriter) -> None:
        out = Emitter(op.guard, op.negated is not None)
        address = address_of(op.address)
        load = out.emit(ptx.LdOp("shared", address, ptx.F32, len(op.values), offset_of(op)))
        casts = [
            UnrealizedConversionCastOp.get([register], [value.type])
            for register, value in zip(load.results, op.values, strict=True)
        ]
        rewriter.replace(op, [*out.ops, *casts], [cast.results[0] for cast in casts])


class LowerGlobalLoadIndex(RewritePattern):
    """A word read as an index: one `ld.global.u32`, its register read through a cast."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.GlobalLoadIndexOp, rewriter: PatternRewriter) -> None:
        out = Emitter(op.guard, op.negated is not None)
        address_ops, address = value_register(op.address, ptx.U64)
        out.ops += address_ops
        load = out.emit(ptx.LdOp("global", address, ptx.U32))
        cast = UnrealizedConversionCastOp.get([load.results[0]], [op.value.type])
        cast.results[0].name_hint = op.value.name_hint
        rewriter.replace(op, [*out.ops, cast], cast.results)


class LowerGlobalStore(RewritePattern):
    """A global store: one `st.global` of its values' registers."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.GlobalStoreOp, rewriter: PatternRewriter) -> None:
        out = Emitter(op.guard, op.negated is not None)
        address_ops, address = value_register(op.address, ptx.U64)
        value_ops, registers = stored_registers(op.values)
        out.ops += [*address_ops, *value_ops]
        out.emit(ptx.StOp("global", address, registers, offset_of(op)))
        rewriter.replace(op, out.ops, [])


class LowerSmemStore(RewritePattern):
    """A shared store of f32 values: one `st.shared` of their registers at the address's
    register."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hopper.SmemStoreOp, rewriter: PatternRewriter) -> None:
        out = Emitter(op.guard, op.negated is not None)
        value_ops, registers = stored_registers(op.values)
        out.ops += value_ops
        out.emit(ptx.StOp("shared", address_of(op.address), registers, offset_of(op)))
        rewriter.replace(op, out.ops, [])


ACCESS_PATTERNS: tuple[RewritePattern, ...] = (
    LowerGlobalLoad(),
    LowerGlobalLoadIndex(),
    LowerSmemLoad(),
    LowerGlobalStore(),
    LowerSmemStore(),
)
"""The patterns of the element accesses."""
