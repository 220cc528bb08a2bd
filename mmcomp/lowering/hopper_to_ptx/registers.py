"""The registers behind the hopper level's typed values, as convert-hopper-to-ptx reads them.

Each pattern leaves the registers of the value it lowers behind a
`builtin.unrealized_conversion_cast` to the value's type (`replace_by_registers`); the
patterns of the ops that use the value read them through it (`registers_of`). A value of
the arithmetic that convert-arith-to-ptx lowers later (an index, an i64 address, an f32)
is read through a cast to its register type, which that pass folds into the register of
the op that makes it. `Emitter` collects the instructions one hopper op becomes, each
predicated by the op's guard.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import UnrealizedConversionCastOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.dialects import hopper, ptx
from mmcomp.lowering.scf_to_ptx.control_flow import branch_yielded, loop_init


def reg_type(value: SSAValue) -> ptx.RegType:
    """The register type of a value of a verified op."""
    assert isinstance(value.type, ptx.RegType)
    return value.type


def registers_of(value: SSAValue) -> Sequence[SSAValue]:
    """The registers holding a hopper value: the value itself if a register, the registers
        behind the cast that the lowering of the op making it left, or, for a value an scf.for
        carries (a block argument or result of the loop), those of the loop's init, and for a
    result of an scf.if, those of the value its then-region yields."""
    if isinstance(value.type, ptx.RegType):
        return [value]
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp) and all(
        isinstance(source.type, ptx.RegType) for source in owner.inputs
    ):
        return owner.inputs
    init = loop_init(value)
    if init is not None:
        # A loop-carried value (an accumulator) lives in its init's registers.
        return registers_of(init)
    yielded = branch_yielded(value)
    if yielded is not None:
        # A branch's result (a ring position) lives in the registers its regions yield.
        return registers_of(yielded)
    raise DiagnosticException(
        f"convert-hopper-to-ptx: a value of type {value.type} is not held in registers "
        "(it must come from a hopper op of this entry)"
    )


def register_of(value: SSAValue) -> SSAValue:
    """The one register holding a hopper value (a tensor map, a barrier)."""
    (register,) = registers_of(value)
    return register


def address_of(value: SSAValue) -> SSAValue:
    """The u32 register of a shared address: the value itself, or the register holding an
    `!hopper.smem` value."""
    if isinstance(value.type, hopper.SmemType):
        return register_of(value)
    return value


def guarded(op: ptx.PtxInstruction, guard: SSAValue, negated: bool) -> ptx.PtxInstruction:
    """A copy of `op` predicated by `guard`; the unguarded original is erased."""
    guarded = op.set_guard(guard, negated)
    op.erase()
    return guarded


class Emitter:
    """Collects the ptx ops one hopper op becomes, predicating each by the op's guard."""

    def __init__(self, guard: SSAValue | None, negated: bool):
        self.guard = guard
        self.negated = negated
        self.ops: list[Operation] = []

    def emit(self, op: ptx.PtxInstruction) -> ptx.PtxInstruction:
        """Append `op`, guarded like the hopper op, and return it."""
        if self.guard is not None:
            op = guarded(op, self.guard, self.negated)
        self.ops.append(op)
        return op

    def value(self, op: ptx.PtxInstruction) -> SSAValue:
        """Append `op` and return its single result."""
        return self.emit(op).results[0]


def coordinate_registers(coordinates: Sequence[SSAValue], out: Emitter) -> list[SSAValue]:
    """The registers of a copy's index coordinates (`integer_register` of each)."""
    return [integer_register(coordinate, out) for coordinate in coordinates]


def integer_register(value: SSAValue, out: Emitter) -> SSAValue:
    """The u32 register of an integer value (`index`, `i32`): the register behind a value
    that is a cast of one (a ring position's stage or phase), else a cast to u32, which
    convert-arith-to-ptx resolves when it lowers the arithmetic behind it."""
    owner = value.owner
    if (
        isinstance(owner, UnrealizedConversionCastOp)
        and len(owner.inputs) == 1
        and isinstance(owner.inputs[0].type, ptx.RegType)
    ):
        return owner.inputs[0]
    cast = UnrealizedConversionCastOp.get([value], [ptx.U32])
    out.ops.append(cast)
    return cast.results[0]


def replace_by_registers(
    rewriter: PatternRewriter,
    op: hopper.HopperInstruction | hopper.HopperValueOp,
    out: Emitter,
    registers: Sequence[SSAValue],
) -> None:
    """Replace `op` by the instructions of `out` and its typed result by `registers`, cast
    to the result's type."""
    result_type: Attribute = op.results[0].type
    cast = UnrealizedConversionCastOp.get(registers, [result_type])
    cast.results[0].name_hint = op.results[0].name_hint
    rewriter.replace(op, [*out.ops, cast], cast.results)


def value_register(value: SSAValue, kind: ptx.RegType) -> tuple[list[Operation], SSAValue]:
    """The `kind` register of a value of the arithmetic (an f32, a bf16, an i64 address):
    the register behind a cast of one, or a cast of the value (which convert-arith-to-ptx
    folds into the register of the op making it); the ops to insert, and the register."""
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1:
        (source,) = owner.inputs
        if source.type == kind:
            return [], source
    cast = UnrealizedConversionCastOp.get([value], [kind])
    return [cast], cast.results[0]


def f32_register(value: SSAValue) -> tuple[list[Operation], SSAValue]:
    """The f32 register of an f32 value (`value_register`)."""
    return value_register(value, ptx.F32)
