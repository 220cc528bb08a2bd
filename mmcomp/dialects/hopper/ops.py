"""The instructions of the `hopper` dialect: TMA, mbarriers, fences, wgmma, warp roles' ids.

Each op is a ptx instruction (`PtxInstruction`: ptx-style syntax, an optional guard) that
`convert-hopper-to-ptx` lowers to one or a few ptx instructions. The TMA and mbarrier ops
take typed values (`mmcomp.dialects.hopper.types`): tensor maps from
`hopper.tensormap_param`, mbarriers from `hopper.ring_barrier` on a `hopper.barrier_ring`;
wgmma takes its accumulator as one value (`hopper.accumulator` names its registers).
"""

from __future__ import annotations

import re
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Self, TypeVar

from xdsl.dialects.builtin import IntAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.parser.core import UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.dialects.hopper.attrs import TileAttr
from mmcomp.dialects.hopper.types import (
    AccumulatorType,
    BarrierRingType,
    MbarrierType,
    TensorMapType,
)
from mmcomp.dialects.ptx import (
    B64,
    F32,
    PRED,
    U32,
    EntryOp,
    NameOf,
    PtxInstruction,
    RegType,
    TensorMapAttr,
    check_below,
    check_choice,
    kind_of,
)

# ----------------------------------------------------------------------------------------
# Shared base, checks and syntax
# ----------------------------------------------------------------------------------------


class HopperInstruction(PtxInstruction, ABC):
    """Base of the hopper ops: ptx-style syntax and guard; lowered by convert-hopper-to-ptx."""

    def ptx_text(self, name: NameOf) -> str:
        raise DiagnosticException(
            f"{self.name} has no direct PTX text: run convert-hopper-to-ptx before emitting PTX"
        )


_HopperT = TypeVar("_HopperT", bound=HopperInstruction)


def _int_register(op: HopperInstruction, what: str, value: SSAValue, widths: Sequence[int]):
    """Raise unless `value` is an integer (b/u/s) register of one of `widths` bits."""
    kind = kind_of(value)
    if kind.is_int and kind.width in widths:
        return
    want = " or ".join(f"{w}-bit" for w in widths)
    raise VerifyException(
        f"{op.name}: {what} must be a {want} integer register, found !ptx.reg<{kind.name}>"
    )


def _shared_address(op: HopperInstruction, what: str, value: SSAValue) -> None:
    _int_register(op, what, value, (32,))


def _unguarded(op: HopperInstruction) -> None:
    """Raise if `op`, which only names a value, is guarded."""
    if op.guard is not None:
        raise VerifyException(f"{op.name}: names a value and takes no guard")


def _coordinates(
    op: HopperInstruction, tensor_map: SSAValue, coordinates: Sequence[SSAValue]
) -> None:
    """Raise unless there is one 32-bit coordinate per dimension of the tensor map."""
    assert isinstance(tensor_map.type, TensorMapType)
    rank = tensor_map.type.rank
    if len(coordinates) != rank:
        raise VerifyException(
            f"{op.name}: a copy of a rank-{rank} tensor map takes {rank} coordinates, "
            f"found {len(coordinates)}"
        )
    for index, value in enumerate(coordinates):
        _int_register(op, f"coordinate {index}", value, (32,))


def _print_guard(printer: Printer, op: HopperInstruction) -> None:
    """` if %p` or ` if not %p` when the op is guarded, then its attributes, if any."""
    if op.guard is not None:
        printer.print_string(" if not " if op.negated is not None else " if ")
        printer.print_operand(op.guard)
    printer.print_op_attributes(op.attributes)


@dataclass(frozen=True)
class _Guard:
    """What follows the operands of a hand-written syntax: `[if [not] %p] [{attributes}]`."""

    guard: SSAValue | None
    negated: bool
    attributes: dict[str, Attribute]

    @staticmethod
    def parse(parser: Parser) -> _Guard:
        """The optional guard and attribute dictionary."""
        guard = None
        negated = False
        if parser.parse_optional_keyword("if") is not None:
            negated = parser.parse_optional_keyword("not") is not None
            guard = parser.resolve_operand(parser.parse_unresolved_operand(), PRED)
        return _Guard(guard, negated, dict(parser.parse_optional_attr_dict()))

    def apply(self, op: _HopperT) -> _HopperT:
        """`op` with these attributes, guarded by the guard when there is one."""
        op.attributes.update(self.attributes)
        if self.guard is None:
            return op
        guarded = op.set_guard(self.guard, self.negated)
        op.erase()
        return guarded


def _print_register_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    """The registers' type, once if they all have it, else each in order."""
    types = [value.type for value in values]
    if all(t == types[0] for t in types):
        printer.print_attribute(types[0])
        return
    printer.print_list(types, printer.print_attribute)


def _resolve_registers(
    parser: Parser, unresolved: Sequence[UnresolvedOperand], types: Sequence[Attribute], pos: int
) -> list[SSAValue]:
    """The registers of `unresolved`, of one type for all or of one type each."""
    if len(types) == 1:
        types = [types[0]] * len(unresolved)
    if len(types) != len(unresolved):
        parser.raise_error(
            f"expected one register type or {len(unresolved)}, found {len(types)}", pos, parser.pos
        )
    return [parser.resolve_operand(u, t) for u, t in zip(unresolved, types, strict=True)]


def _print_tensor_access(printer: Printer, tensor_map: SSAValue, coords: Sequence[SSAValue]):
    """`%map[%c0, %c1]`: a tensor map at box coordinates, innermost first."""
    printer.print_operand(tensor_map)
    printer.print_string("[")
    printer.print_list(coords, printer.print_operand)
    printer.print_string("]")


def _parse_tensor_access(parser: Parser) -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
    tensor_map = parser.parse_unresolved_operand()
    coords = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    return tensor_map, coords


def _parse_typed(parser: Parser, op: str, base: type[Attribute], what: str) -> Attribute:
    """A type of class `base` (`what` names it in the error, after the op's name)."""
    pos = parser.pos
    found = parser.parse_type()
    if not isinstance(found, base):
        parser.raise_error(f"{op}: expected {what}, found {found}", pos, parser.pos)
    return found


# ----------------------------------------------------------------------------------------
# TMA
# ----------------------------------------------------------------------------------------


def _print_tma_load(
    printer: Printer, op: TmaLoadOp | TmaLoadMulticastOp, mask: SSAValue | None
) -> None:
    """`%map[%c0, ...], %bar to %dst [mask %m] [guard] : map, barrier, registers[, mask]`."""
    printer.print_string(" ")
    _print_tensor_access(printer, op.tensor_map, op.coordinates)
    printer.print_string(", ")
    printer.print_operand(op.barrier)
    printer.print_string(" to ")
    printer.print_operand(op.dst)
    if mask is not None:
        printer.print_string(" mask ")
        printer.print_operand(mask)
    _print_guard(printer, op)
    printer.print_string(" : ")
    printer.print_list((op.tensor_map.type, op.barrier.type), printer.print_attribute)
    printer.print_string(", ")
    _print_register_types(printer, [op.dst, *op.coordinates])
    if mask is not None:
        printer.print_string(", ")
        printer.print_attribute(mask.type)


@dataclass
class _TmaLoadSyntax:
    """The operands of a TMA load as its syntax gives them."""

    dst: SSAValue
    tensor_map: SSAValue
    barrier: SSAValue
    mask: SSAValue | None
    coordinates: list[SSAValue]
    guard: _Guard

    @staticmethod
    def parse(parser: Parser, name: str, with_mask: bool) -> _TmaLoadSyntax:
        """What `_print_tma_load` printed (with the mask where `with_mask`)."""
        tensor_map, coords = _parse_tensor_access(parser)
        parser.parse_punctuation(",")
        barrier = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        dst = parser.parse_unresolved_operand()
        mask = None
        if with_mask:
            parser.parse_keyword("mask")
            mask = parser.parse_unresolved_operand()
        guard = _Guard.parse(parser)
        parser.parse_punctuation(":")
        map_type = _parse_typed(parser, name, TensorMapType, "a !hopper.tensormap type")
        parser.parse_punctuation(",")
        barrier_type = _parse_typed(parser, name, MbarrierType, "a !hopper.mbarrier type")
        parser.parse_punctuation(",")
        pos = parser.pos
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        mask_value = None
        if mask is not None:
            *types, mask_type = types
            mask_value = parser.resolve_operand(mask, mask_type)
        dst_value, *coord_values = _resolve_registers(parser, [dst, *coords], types, pos)
        return _TmaLoadSyntax(
            dst_value,
            parser.resolve_operand(tensor_map, map_type),
            parser.resolve_operand(barrier, barrier_type),
            mask_value,
            coord_values,
            guard,
        )


@irdl_op_definition
class TensorMapParamOp(HopperInstruction):
    """The tensor map of a `tmap` kernel parameter, as TMA copies take it."""

    name = "hopper.tensormap_param"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("param",)

    param = prop_def(StringAttr)
    """The entry parameter (of kind `tmap`)."""
    result = result_def(TensorMapType)

    def __init__(self, param: str, tensor_map: TensorMapType):
        super().__init__(
            properties={"param": StringAttr(param)}, operands=[[]], result_types=[tensor_map]
        )

    def verify_kinds(self) -> None:
        entry = self.parent_op()
        if not isinstance(entry, EntryOp):
            return
        param = entry.param(self.param.data)
        if param is None or param.kind.data != "tmap":
            found = "no such parameter" if param is None else f"a {param.kind.data} parameter"
            raise VerifyException(
                f"{self.name}: '{self.param.data}' must be a tmap parameter of entry "
                f"@{entry.sym_name.data}, found {found}"
            )
        if not isinstance(param.info, TensorMapAttr):
            return
        assert isinstance(self.result.type, TensorMapType)
        if not self.result.type.describes(param.info.data):
            raise VerifyException(
                f"{self.name}: the type of '{self.param.data}' must be the map its launch "
                f"data describes, {TensorMapType.of(param.info.data)}, found "
                f"{self.result.type}"
            )


@irdl_op_definition
class TensorMapPrefetchOp(HopperInstruction):
    """Prefetch a tensor map into the descriptor cache: `prefetch.tensormap`."""

    name = "hopper.tensor_map_prefetch"

    tensor_map = operand_def(TensorMapType)
    """The tensor map."""

    def __init__(self, tensor_map: SSAValue):
        super().__init__(operands=[tensor_map, []])


@irdl_op_definition
class TmaLoadOp(HopperInstruction):
    """Tiled TMA load of one box into shared memory, completing bytes on an mbarrier."""

    name = "hopper.tma_load"

    dst = operand_def(RegType)
    """Shared-memory destination (32-bit shared address)."""
    tensor_map = operand_def(TensorMapType)
    """The tensor map read."""
    barrier = operand_def(MbarrierType)
    """The mbarrier whose transaction count the copy completes."""
    coordinates = var_operand_def(RegType)
    """Box coordinates in elements, innermost dimension first."""

    def __init__(
        self,
        dst: SSAValue,
        tensor_map: SSAValue,
        barrier: SSAValue,
        coordinates: Sequence[SSAValue],
    ):
        super().__init__(operands=[dst, tensor_map, barrier, list(coordinates), []])

    def verify_kinds(self) -> None:
        _shared_address(self, "the destination", self.dst)
        _coordinates(self, self.tensor_map, self.coordinates)

    def print(self, printer: Printer) -> None:
        _print_tma_load(printer, self, None)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        load = _TmaLoadSyntax.parse(parser, cls.name, with_mask=False)
        return load.guard.apply(cls(load.dst, load.tensor_map, load.barrier, load.coordinates))


@irdl_op_definition
class TmaLoadMulticastOp(HopperInstruction):
    """Tiled TMA load written to the same offset in every CTA of a cluster mask."""

    name = "hopper.tma_load_multicast"

    dst = operand_def(RegType)
    """Shared-memory destination (32-bit, the same offset in each destination CTA)."""
    tensor_map = operand_def(TensorMapType)
    """The tensor map read."""
    barrier = operand_def(MbarrierType)
    """The mbarrier (same offset in each destination CTA) the copy completes bytes on."""
    cta_mask = operand_def(RegType)
    """16-bit mask of destination CTA ranks in the cluster."""
    coordinates = var_operand_def(RegType)
    """Box coordinates in elements, innermost dimension first."""

    def __init__(
        self,
        dst: SSAValue,
        tensor_map: SSAValue,
        barrier: SSAValue,
        cta_mask: SSAValue,
        coordinates: Sequence[SSAValue],
    ):
        super().__init__(operands=[dst, tensor_map, barrier, cta_mask, list(coordinates), []])

    def verify_kinds(self) -> None:
        _shared_address(self, "the destination", self.dst)
        _int_register(self, "the CTA mask", self.cta_mask, (16,))
        _coordinates(self, self.tensor_map, self.coordinates)

    def print(self, printer: Printer) -> None:
        _print_tma_load(printer, self, self.cta_mask)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        load = _TmaLoadSyntax.parse(parser, cls.name, with_mask=True)
        assert load.mask is not None
        op = cls(load.dst, load.tensor_map, load.barrier, load.mask, load.coordinates)
        return load.guard.apply(op)


@irdl_op_definition
class TmaStoreOp(HopperInstruction):
    """Tiled TMA store of one box from shared memory, in the current bulk group."""

    name = "hopper.tma_store"

    tensor_map = operand_def(TensorMapType)
    """The tensor map written."""
    src = operand_def(RegType)
    """Shared-memory source (32-bit shared address)."""
    coordinates = var_operand_def(RegType)
    """Box coordinates in elements, innermost first (out-of-bounds parts are clipped)."""

    def __init__(self, tensor_map: SSAValue, src: SSAValue, coordinates: Sequence[SSAValue]):
        super().__init__(operands=[tensor_map, src, list(coordinates), []])

    def verify_kinds(self) -> None:
        _shared_address(self, "the source", self.src)
        _coordinates(self, self.tensor_map, self.coordinates)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_string(" to ")
        _print_tensor_access(printer, self.tensor_map, self.coordinates)
        _print_guard(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.tensor_map.type)
        printer.print_string(", ")
        _print_register_types(printer, [self.src, *self.coordinates])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        src = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        tensor_map, coords = _parse_tensor_access(parser)
        guard = _Guard.parse(parser)
        parser.parse_punctuation(":")
        map_type = _parse_typed(parser, cls.name, TensorMapType, "a !hopper.tensormap type")
        parser.parse_punctuation(",")
        pos = parser.pos
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        src_value, *coord_values = _resolve_registers(parser, [src, *coords], types, pos)
        op = cls(parser.resolve_operand(tensor_map, map_type), src_value, coord_values)
        return guard.apply(op)


# ----------------------------------------------------------------------------------------
# mbarriers
# ----------------------------------------------------------------------------------------


@irdl_op_definition
class BarrierRingOp(HopperInstruction):
    """The ring of mbarriers at a shared address: `stages` barriers of 8 bytes."""

    name = "hopper.barrier_ring"

    base = operand_def(RegType)
    """Shared address of the first barrier (32-bit, 8-byte aligned)."""
    result = result_def(BarrierRingType)

    def __init__(self, base: SSAValue, ring: BarrierRingType):
        super().__init__(operands=[base, []], result_types=[ring])

    def verify_kinds(self) -> None:
        _shared_address(self, "the base", self.base)
        _unguarded(self)


@irdl_op_definition
class RingBarrierOp(HopperInstruction):
    """The mbarrier of one stage of a ring: `hopper.ring_barrier %ring[%stage]` (or `[2]`).

    The stage is a register, or a constant `index`.
    """

    name = "hopper.ring_barrier"

    index = opt_prop_def(IntAttr)
    """The stage, when it is a constant."""
    ring = operand_def(BarrierRingType)
    """The ring."""
    stage = opt_operand_def(RegType)
    """The stage, when it is a register (32-bit)."""
    result = result_def(MbarrierType)

    def __init__(self, ring: SSAValue, stage: SSAValue | int):
        assert isinstance(ring.type, BarrierRingType)
        constant = isinstance(stage, int)
        super().__init__(
            properties={"index": IntAttr(stage) if constant else None},
            operands=[ring, [] if constant else [stage], []],
            result_types=[ring.type.barrier],
        )

    @property
    def ring_type(self) -> BarrierRingType:
        """The type of the ring."""
        assert isinstance(self.ring.type, BarrierRingType)
        return self.ring.type

    def verify_kinds(self) -> None:
        _unguarded(self)
        ring = self.ring_type
        if (self.index is None) == (self.stage is None):
            raise VerifyException(
                f"{self.name}: expected the stage as a register or as a constant, not both"
            )
        if self.stage is not None:
            _int_register(self, "the stage", self.stage, (32,))
        if self.index is not None and not 0 <= self.index.data < ring.stages.data:
            raise VerifyException(
                f"{self.name}: stage {self.index.data} is outside the ring of "
                f"{ring.stages.data} stages"
            )
        if self.result.type != ring.barrier:
            raise VerifyException(
                f"{self.name}: the result must be {ring.barrier}, the ring's barrier, found "
                f"{self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.ring)
        printer.print_string("[")
        if self.stage is not None:
            printer.print_operand(self.stage)
        elif self.index is not None:
            printer.print_string(str(self.index.data))
        printer.print_string("]")
        _print_guard(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.ring.type)
        if self.stage is not None:
            printer.print_string(", ")
            printer.print_attribute(self.stage.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        ring = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        index = parser.parse_optional_integer(allow_boolean=False, allow_negative=False)
        stage = None if index is not None else parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        guard = _Guard.parse(parser)
        parser.parse_punctuation(":")
        ring_type = _parse_typed(parser, cls.name, BarrierRingType, "a !hopper.barrier_ring type")
        ring_value = parser.resolve_operand(ring, ring_type)
        if stage is None:
            assert index is not None
            return guard.apply(cls(ring_value, index))
        parser.parse_punctuation(",")
        return guard.apply(cls(ring_value, parser.resolve_operand(stage, parser.parse_type())))


@irdl_op_definition
class MbarrierInitOp(HopperInstruction):
    """Initialize an mbarrier with the arrival count of its type."""

    name = "hopper.mbarrier_init"

    barrier = operand_def(MbarrierType)
    """The mbarrier."""

    def __init__(self, barrier: SSAValue):
        super().__init__(operands=[barrier, []])

    @property
    def count(self) -> int:
        """Arrivals that complete a phase."""
        assert isinstance(self.barrier.type, MbarrierType)
        return self.barrier.type.count.data


@irdl_op_definition
class MbarrierArriveOp(HopperInstruction):
    """Arrive on an mbarrier: in this CTA, or (`cluster`) in another (from hopper.mapa)."""

    name = "hopper.mbarrier_arrive"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("scope",)

    scope = opt_prop_def(StringAttr)
    """`cluster` for a barrier of another CTA (from hopper.mapa); `cta` if absent."""
    barrier = operand_def(MbarrierType)
    """The mbarrier."""

    def __init__(self, barrier: SSAValue, scope: str | None = None):
        super().__init__(
            properties={"scope": StringAttr(scope) if scope else None}, operands=[barrier, []]
        )

    def verify_kinds(self) -> None:
        if self.scope is not None:
            check_choice(self, "scope", self.scope.data, ("cta", "cluster"))


@irdl_op_definition
class MbarrierArriveExpectTxOp(HopperInstruction):
    """Arrive on an mbarrier and add the bytes the phase's copies will complete."""

    name = "hopper.mbarrier_arrive_expect_tx"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("bytes",)

    bytes = prop_def(IntAttr)
    """Transaction bytes expected in this phase."""
    barrier = operand_def(MbarrierType)
    """The mbarrier."""

    def __init__(self, barrier: SSAValue, bytes: int):
        super().__init__(properties={"bytes": IntAttr(bytes)}, operands=[barrier, []])

    def verify_kinds(self) -> None:
        check_below(self, "transaction bytes", self.bytes.data, 0, 1 << 20, "2^20")


@irdl_op_definition
class MbarrierWaitOp(HopperInstruction):
    """Block until the mbarrier phase of the given parity has completed (try_wait loop)."""

    name = "hopper.mbarrier_wait"

    barrier = operand_def(MbarrierType)
    """The mbarrier."""
    phase = operand_def(RegType)
    """Parity (0 or 1) of the phase waited for, in a 32-bit register."""

    def __init__(self, barrier: SSAValue, phase: SSAValue):
        super().__init__(operands=[barrier, phase, []])

    def verify_kinds(self) -> None:
        _int_register(self, "the phase", self.phase, (32,))


# ----------------------------------------------------------------------------------------
# wgmma
# ----------------------------------------------------------------------------------------

WGMMA_SHAPE = re.compile(r"^m64n(\d+)k16$")
WGMMA_TYPES = ("bf16", "f16")


@irdl_op_definition
class MatrixDescriptorOp(HopperInstruction):
    """The 64-bit shared-memory matrix descriptor of a wgmma operand inside a tile.

    `base` is the tile's shared address (aligned as its swizzle needs); `mn` and `k` pick
    the operand's first row and K column in the tile (k a multiple of 16).
    """

    name = "hopper.matrix_descriptor"

    tile = prop_def(TileAttr)
    """The tile's layout."""
    mn = prop_def(IntAttr, default_value=IntAttr(0))
    """First row (M or N) of the operand within the tile."""
    k = prop_def(IntAttr, default_value=IntAttr(0))
    """First K column of the operand within the tile."""
    base = operand_def(RegType)
    """The tile's shared address (32-bit)."""
    result = result_def(RegType)

    def __init__(self, base: SSAValue, tile: TileAttr, mn: int = 0, k: int = 0):
        super().__init__(
            properties={"tile": tile, "mn": IntAttr(mn), "k": IntAttr(k)},
            operands=[base, []],
            result_types=[B64],
        )

    def verify_kinds(self) -> None:
        _shared_address(self, "the tile base", self.base)
        _int_register(self, "the result", self.result, (64,))
        layout = self.tile.layout
        if not (0 <= self.mn.data < layout.mn and 0 <= self.k.data < layout.k):
            raise VerifyException(
                f"{self.name}: operand origin (mn {self.mn.data}, k {self.k.data}) lies "
                f"outside the {layout.mn}x{layout.k} tile"
            )
        try:
            layout.start_offset(self.mn.data, self.k.data)
        except ValueError as error:
            raise VerifyException(f"{self.name}: {error}") from error


@irdl_op_definition
class AccumulatorOp(HopperInstruction):
    """The wgmma accumulator held in these f32 registers, in fragment order:
    `%acc = hopper.accumulator %d0, ..., %d3 : !hopper.accumulator<64x8xf32>`."""

    name = "hopper.accumulator"

    registers = var_operand_def(RegType)
    """This thread's f32 registers of the tile (n / 2)."""
    result = result_def(AccumulatorType)

    def __init__(self, registers: Sequence[SSAValue], accumulator: AccumulatorType):
        super().__init__(operands=[list(registers), []], result_types=[accumulator])

    def verify_kinds(self) -> None:
        _unguarded(self)
        accumulator = self.result.type
        assert isinstance(accumulator, AccumulatorType)
        if len(self.registers) != accumulator.registers:
            raise VerifyException(
                f"{self.name}: {accumulator} is held in {accumulator.registers} f32 registers "
                f"per thread, found {len(self.registers)}"
            )
        for index, value in enumerate(self.registers):
            if kind_of(value).name != "f32":
                raise VerifyException(
                    f"{self.name}: register {index} must be !ptx.reg<f32>, found {value.type}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.registers, printer.print_operand)
        _print_guard(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        registers = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        guard = _Guard.parse(parser)
        parser.parse_punctuation(":")
        accumulator = _parse_typed(parser, cls.name, AccumulatorType, "a !hopper.accumulator type")
        assert isinstance(accumulator, AccumulatorType)
        return guard.apply(cls([parser.resolve_operand(r, F32) for r in registers], accumulator))


@irdl_op_definition
class WgmmaMmaAsyncOp(HopperInstruction):
    """One warpgroup MMA, D (f32) += A * B, both operands from shared-memory descriptors.

    The accumulator's registers are read and written in place.
    """

    name = "hopper.wgmma_mma_async"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("shape", "dtype")

    shape = prop_def(StringAttr)
    """`m64nNk16`, N a multiple of 8 from 8 to 256."""
    dtype = prop_def(StringAttr)
    """Element type of A and B: bf16 or f16."""
    a_major = prop_def(StringAttr, default_value=StringAttr("k"))
    """`k` or `mn`: the layout of A (its transpose bit)."""
    b_major = prop_def(StringAttr, default_value=StringAttr("k"))
    """`k` or `mn`: the layout of B (its transpose bit)."""
    scale_d = prop_def(IntAttr, default_value=IntAttr(1))
    """1: D += A * B; 0: D = A * B (the accumulator's values are ignored)."""
    a_desc = operand_def(RegType)
    """Descriptor of A (64 x 16), from hopper.matrix_descriptor."""
    b_desc = operand_def(RegType)
    """Descriptor of B (N x 16), from hopper.matrix_descriptor."""
    accumulator = operand_def(AccumulatorType)
    """The 64 x N f32 accumulator, updated in place."""

    def __init__(
        self,
        dtype: str,
        a_desc: SSAValue,
        b_desc: SSAValue,
        accumulator: SSAValue,
        a_major: str = "k",
        b_major: str = "k",
        scale_d: int = 1,
    ):
        assert isinstance(accumulator.type, AccumulatorType)
        super().__init__(
            properties={
                "shape": StringAttr(f"m64n{accumulator.type.n.data}k16"),
                "dtype": StringAttr(dtype),
                "a_major": StringAttr(a_major),
                "b_major": StringAttr(b_major),
                "scale_d": IntAttr(scale_d),
            },
            operands=[a_desc, b_desc, accumulator, []],
        )

    @property
    def n(self) -> int:
        """The N extent of the shape."""
        match = WGMMA_SHAPE.match(self.shape.data)
        return int(match.group(1)) if match else 0

    def verify_kinds(self) -> None:
        n = self.n
        if n == 0 or n % 8 or not 8 <= n <= 256:
            raise VerifyException(
                f"{self.name}: shape must be m64nNk16 with N a multiple of 8 in [8, 256], "
                f"found '{self.shape.data}'"
            )
        check_choice(self, "dtype", self.dtype.data, WGMMA_TYPES)
        check_choice(self, "a_major", self.a_major.data, ("k", "mn"))
        check_choice(self, "b_major", self.b_major.data, ("k", "mn"))
        if self.scale_d.data not in (0, 1):
            raise VerifyException(f"{self.name}: scale_d must be 0 or 1, found {self.scale_d.data}")
        _int_register(self, "the A descriptor", self.a_desc, (64,))
        _int_register(self, "the B descriptor", self.b_desc, (64,))
        accumulator = self.accumulator.type
        assert isinstance(accumulator, AccumulatorType)
        if accumulator.n.data != n:
            raise VerifyException(
                f"{self.name}: {self.shape.data} accumulates into a 64x{n} tile, found "
                f"{accumulator}"
            )


# ----------------------------------------------------------------------------------------
# Epilogue stores and ids
# ----------------------------------------------------------------------------------------


@irdl_op_definition
class StmatrixOp(HopperInstruction):
    """Store 1, 2 or 4 8x8 b16 matrices from the warp's fragments to shared memory."""

    name = "hopper.stmatrix"

    trans = opt_prop_def(UnitAttr)
    """Store each 8x8 matrix transposed."""
    address = operand_def(RegType)
    """This lane's row address (32-bit shared address)."""
    values = var_operand_def(RegType)
    """One 32-bit register (two b16) per matrix."""

    def __init__(self, address: SSAValue, values: Sequence[SSAValue], trans: bool = False):
        super().__init__(
            properties={"trans": UnitAttr() if trans else None},
            operands=[address, list(values), []],
        )

    def verify_kinds(self) -> None:
        _shared_address(self, "the address", self.address)
        if len(self.values) not in (1, 2, 4):
            raise VerifyException(
                f"{self.name}: expected 1, 2 or 4 registers, found {len(self.values)}"
            )
        for index, value in enumerate(self.values):
            kind = kind_of(value)
            if kind.width != 32 or kind.category in ("f", "pred"):
                raise VerifyException(
                    f"{self.name}: value {index} must be a 32-bit register of two 16-bit "
                    f"elements (b32, bf16x2, f16x2), found !ptx.reg<{kind.name}>"
                )


IDS: dict[str, tuple[str, int, int]] = {
    **{f"thread.{d}": (f"tid.{d}", 0, 0) for d in "xyz"},
    **{f"cta.{d}": (f"ctaid.{d}", 0, 0) for d in "xyz"},
    **{f"cluster.{d}": (f"clusterid.{d}", 0, 0) for d in "xyz"},
    **{f"cta_in_cluster.{d}": (f"cluster_ctaid.{d}", 0, 0) for d in "xyz"},
    **{f"cluster_shape.{d}": (f"cluster_nctaid.{d}", 0, 0) for d in "xyz"},
    "cluster_cta_rank": ("cluster_ctarank", 0, 0),
    "cluster_size": ("cluster_nctarank", 0, 0),
    "lane": ("laneid", 0, 0),
    "warp": ("tid.x", 5, 0),
    "warpgroup": ("tid.x", 7, 0),
    "warp_in_warpgroup": ("tid.x", 5, 3),
    "thread_in_warpgroup": ("tid.x", 0, 127),
}
"""Ids readable with hopper.id: special register, right shift, then mask (0: none).

The warp and warpgroup ids are computed from %tid.x (a one-dimensional CTA)."""


@irdl_op_definition
class IdOp(HopperInstruction):
    """A thread, warp, warpgroup, CTA or cluster id: `%w = hopper.id warpgroup`."""

    name = "hopper.id"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("which",)

    which = prop_def(StringAttr)
    """A key of `IDS`."""
    result = result_def(RegType)

    def __init__(self, which: str):
        super().__init__(properties={"which": StringAttr(which)}, operands=[[]], result_types=[U32])

    def verify_kinds(self) -> None:
        if self.which.data not in IDS:
            raise VerifyException(
                f"{self.name}: unknown id '{self.which.data}', expected one of {', '.join(IDS)}"
            )
        _int_register(self, "the result", self.result, (32,))


@irdl_op_definition
class MapaOp(HopperInstruction):
    """The mbarrier at the same shared offset in the CTA of the given cluster rank."""

    name = "hopper.mapa"

    barrier = operand_def(MbarrierType)
    """An mbarrier of this CTA."""
    rank = operand_def(RegType)
    """The target CTA's rank in the cluster."""
    result = result_def(MbarrierType)
    """The target CTA's mbarrier (a shared::cluster address: arrive with scope cluster)."""

    def __init__(self, barrier: SSAValue, rank: SSAValue):
        super().__init__(operands=[barrier, rank, []], result_types=[barrier.type])

    def verify_kinds(self) -> None:
        _int_register(self, "the rank", self.rank, (32,))
        if self.result.type != self.barrier.type:
            raise VerifyException(
                f"{self.name}: the result must have the barrier's type {self.barrier.type}, "
                f"found {self.result.type}"
            )
