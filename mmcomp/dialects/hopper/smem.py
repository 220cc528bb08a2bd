"""Shared memory as typed values: the aligned base, addresses at offsets from it, the
ring's slots and the slots of one ring stage.

The kernel's dynamic shared memory is one array; the lowering places the ring's stages,
its barriers and the epilogue's buffers at constant offsets from its base, aligned at run
time. These ops say so with types instead of u32 arithmetic:

    %smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>
    %bars = hopper.smem_offset %smem[147456] : !hopper.smem<align 1024> -> !hopper.smem<align 8>
    %slots = hopper.slot_ring %smem[0] : !hopper.smem<align 1024>
        -> !hopper.slot_ring<stages = 3, bytes = 49152, slots = [0, 16384]>
    %stage = hopper.slot_stage %slots[%pos] : !hopper.slot_ring<...>,
        !hopper.ring_position<stages = 3> -> !hopper.stage<slots = [0, 16384]>
    %a = hopper.ring_slot %stage[0] : !hopper.stage<slots = [0, 16384]>
    %bufs = hopper.smem_index %smem[148480 + %wg * 16384] : !hopper.smem<align 1024>
        -> !hopper.smem<align 1024>
    %row = hopper.smem_add %bufs[%row_bytes] : !hopper.smem<align 1024>
        -> !hopper.smem<align 128>

- `!hopper.smem<align A>`: a shared-memory address (the 32-bit shared window) known to be
  a multiple of A bytes; the barrier rings, the TMA loads and the wgmma descriptors take
  one, each checking the alignment it needs;
- `!hopper.slot_ring<stages, bytes, slots>`: `stages` stages of `bytes` bytes from an
  address, each holding one tile per slot at the slot's byte offset;
- `!hopper.stage<slots>`: the stage of a ring position (its slots' offsets).

`convert-hopper-to-ptx` holds each in one u32 register: the base is the array's address
rounded up to the alignment (`add`, `and`), an offset an `add` of a constant, a stage the
ring's address plus the stage's bytes times the position's stage (`mad`), a slot an `add`
of its offset, an index's strides an `add` of the offset and a `mad` of the index, a
dynamic offset an `add` of its register. A ptx
op or the index arithmetic reads one through a cast to `!ptx.reg<u32>` or `index`, which
that pass resolves to the register.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IndexType, IntAttr, StringAttr
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.base import HopperValueOp, Implied, shared_address
from mmcomp.dialects.hopper.ring import RingPositionType

SLOT_ALIGN = 1024
"""Alignment of a ring slot, bytes: a 128-byte swizzled tile repeats its pattern every
1024 bytes, which the TMA copies and the wgmma descriptors (base offset 0) assume."""


def _ints(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(value) for value in values])


def _parse_int_list(parser: AttrParser) -> list[int]:
    """`[a, b, ...]` of non-negative integers."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE,
        lambda: parser.parse_integer(allow_boolean=False, allow_negative=False),
    )


def _parse_key(parser: AttrParser, key: str) -> None:
    """`key =`."""
    parser.parse_keyword(key)
    parser.parse_punctuation("=")


def alignment_of(offset: int, align: int) -> int:
    """The alignment of an address `offset` bytes from one aligned to `align`."""
    if offset == 0:
        return align
    return min(align, offset & -offset)


@irdl_attr_definition
class SmemType(ParametrizedAttribute, TypeAttribute):
    """A shared-memory address aligned to `align` bytes: `!hopper.smem<align 1024>`."""

    name = "hopper.smem"

    align: IntAttr
    """The address is a multiple of this many bytes (a power of two)."""

    def __init__(self, align: int):
        super().__init__(IntAttr(align))

    def verify(self) -> None:
        align = self.align.data
        if align < 1 or align & (align - 1):
            raise VerifyException(f"!hopper.smem: align must be a power of two, found {align}")

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<align {self.align.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr]:
        with parser.in_angle_brackets():
            parser.parse_keyword("align")
            align = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (IntAttr(align),)


def _check_slots(where: str, slots: Sequence[int], limit: int | None) -> None:
    """Slot offsets: at least one, increasing, multiples of SLOT_ALIGN, below `limit`."""
    if not slots:
        raise VerifyException(f"{where}: expected at least one slot")
    for offset in slots:
        if offset % SLOT_ALIGN:
            raise VerifyException(
                f"{where}: slot offset {offset} is not a multiple of {SLOT_ALIGN} bytes"
            )
    if any(later <= earlier for earlier, later in zip(slots, slots[1:], strict=False)):
        raise VerifyException(f"{where}: slot offsets {list(slots)} must increase")
    if limit is not None and slots[-1] >= limit:
        raise VerifyException(
            f"{where}: slot offset {slots[-1]} lies outside a stage of {limit} bytes"
        )


@irdl_attr_definition
class SlotRingType(ParametrizedAttribute, TypeAttribute):
    """The ring's stages in shared memory, each with one tile per slot:
    `!hopper.slot_ring<stages = 3, bytes = 49152, slots = [0, 16384]>`."""

    name = "hopper.slot_ring"

    stages: IntAttr
    """Stages of the ring, consecutive."""
    bytes: IntAttr
    """Bytes of one stage (a multiple of SLOT_ALIGN)."""
    slots: ArrayAttr[IntAttr]
    """Byte offset of each slot in a stage."""

    def __init__(self, stages: int, bytes: int, slots: Sequence[int]):
        super().__init__(IntAttr(stages), IntAttr(bytes), _ints(slots))

    @property
    def offsets(self) -> tuple[int, ...]:
        """The slots' byte offsets in a stage."""
        return tuple(slot.data for slot in self.slots.data)

    @property
    def stage(self) -> StageType:
        """The type of one stage of the ring."""
        return StageType(self.offsets)

    def verify(self) -> None:
        if self.stages.data < 1:
            raise VerifyException(
                f"!hopper.slot_ring: stages must be at least 1, found {self.stages.data}"
            )
        if self.bytes.data < SLOT_ALIGN or self.bytes.data % SLOT_ALIGN:
            raise VerifyException(
                f"!hopper.slot_ring: bytes must be a positive multiple of {SLOT_ALIGN}, found "
                f"{self.bytes.data}"
            )
        _check_slots("!hopper.slot_ring", self.offsets, self.bytes.data)

    def print_parameters(self, printer: Printer) -> None:
        slots = ", ".join(str(offset) for offset in self.offsets)
        printer.print_string(
            f"<stages = {self.stages.data}, bytes = {self.bytes.data}, slots = [{slots}]>"
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr, IntAttr, ArrayAttr[IntAttr]]:
        with parser.in_angle_brackets():
            _parse_key(parser, "stages")
            stages = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            _parse_key(parser, "bytes")
            size = parser.parse_integer(allow_boolean=False)
            parser.parse_punctuation(",")
            _parse_key(parser, "slots")
            slots = _parse_int_list(parser)
        return (IntAttr(stages), IntAttr(size), _ints(slots))


@irdl_attr_definition
class StageType(ParametrizedAttribute, TypeAttribute):
    """One stage of a slot ring: `!hopper.stage<slots = [0, 16384]>`."""

    name = "hopper.stage"

    slots: ArrayAttr[IntAttr]
    """Byte offset of each slot from the stage's address."""

    def __init__(self, slots: Sequence[int]):
        super().__init__(_ints(slots))

    @property
    def offsets(self) -> tuple[int, ...]:
        """The slots' byte offsets."""
        return tuple(slot.data for slot in self.slots.data)

    def verify(self) -> None:
        _check_slots("!hopper.stage", self.offsets, None)

    def print_parameters(self, printer: Printer) -> None:
        slots = ", ".join(str(offset) for offset in self.offsets)
        printer.print_string(f"<slots = [{slots}]>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr[IntAttr]]:
        with parser.in_angle_brackets():
            _parse_key(parser, "slots")
            slots = _parse_int_list(parser)
        return (_ints(slots),)


def shared_operand(op: Operation, what: str, value: SSAValue, align: int) -> None:
    """Raise unless `value` is a 32-bit shared address register or an `!hopper.smem`
    address aligned to at least `align` bytes."""
    found = value.type
    if not isinstance(found, SmemType):
        shared_address(op, what, value)
        return
    if found.align.data < align:
        raise VerifyException(f"{op.name}: {what} must be aligned to {align} bytes, found {found}")


def _smem(value: SSAValue) -> SmemType:
    """The type of a verified op's shared-memory operand."""
    found = value.type
    assert isinstance(found, SmemType)
    return found


@irdl_op_definition
class SharedBaseOp(HopperValueOp):
    """The address of a shared array, rounded up to the result's alignment at run time:
    `%smem = hopper.shared_base mmcomp_shared : !hopper.smem<align 1024>`."""

    name = "hopper.shared_base"

    symbol = prop_def(StringAttr)
    """The `ptx.shared` array (the module's dynamic shared memory)."""
    result = result_def(SmemType)
    """The aligned address."""

    assembly_format = "custom<Identifier>($symbol) attr-dict `:` custom<Typed>(type($result))"

    def __init__(self, symbol: str, smem: SmemType):
        super().__init__(properties={"symbol": StringAttr(symbol)}, result_types=[smem])


_AT_OFFSET = (
    "$base `[` custom<Int>($offset) `]` attr-dict `:` custom<Typed>(type($base)) `->` "
    "custom<Typed>(type($result))"
)
"""The syntax of an op naming what lies `offset` bytes past a shared address:
`%base[OFFSET] : BASE_TYPE -> RESULT_TYPE`."""


@irdl_op_definition
class SmemOffsetOp(HopperValueOp):
    """The address `offset` bytes past a shared address:
    `%bars = hopper.smem_offset %smem[147456] : !hopper.smem<align 1024> -> !hopper.smem<align 8>`.

    The result's alignment is at most the base's and divides the offset.
    """

    name = "hopper.smem_offset"

    offset = prop_def(IntAttr)
    """Bytes past the base."""
    base = operand_def(SmemType)
    """The address offset from."""
    result = result_def(SmemType)

    assembly_format = _AT_OFFSET

    def __init__(self, base: SSAValue, offset: int, smem: Attribute | None = None):
        if smem is None:
            smem = SmemType(alignment_of(offset, _smem(base).align.data))
        super().__init__(
            properties={"offset": IntAttr(offset)}, operands=[base], result_types=[smem]
        )

    def verify_(self) -> None:
        offset = self.offset.data
        base, result = _smem(self.base).align.data, _smem(self.result).align.data
        if offset < 0:
            raise VerifyException(f"{self.name}: the offset must be non-negative, found {offset}")
        if result > base or offset % result:
            raise VerifyException(
                f"{self.name}: an address {offset} bytes past one aligned to {base} is not "
                f"aligned to {result} (the result's alignment)"
            )


@irdl_op_definition
class SlotRingOp(HopperValueOp):
    """The ring's stages `offset` bytes past a shared address:
    `%slots = hopper.slot_ring %smem[0] : !hopper.smem<align 1024> -> !hopper.slot_ring<...>`.

    The ring's address must be aligned to SLOT_ALIGN (every slot is).
    """

    name = "hopper.slot_ring"

    offset = prop_def(IntAttr)
    """Bytes past the base."""
    base = operand_def(SmemType)
    """The address offset from."""
    result = result_def(SlotRingType)

    assembly_format = _AT_OFFSET

    def __init__(self, base: SSAValue, offset: int, ring: SlotRingType):
        super().__init__(
            properties={"offset": IntAttr(offset)}, operands=[base], result_types=[ring]
        )

    def verify_(self) -> None:
        align = _smem(self.base).align.data
        if align < SLOT_ALIGN:
            raise VerifyException(
                f"{self.name}: the base must be aligned to {SLOT_ALIGN} bytes, found "
                f"{self.base.type}"
            )
        offset = self.offset.data
        if offset < 0 or offset % SLOT_ALIGN:
            raise VerifyException(
                f"{self.name}: the offset {offset} from the base is not a non-negative "
                f"multiple of {SLOT_ALIGN} bytes"
            )


def _stage_of(ring: Attribute) -> Attribute:
    """The stage type of a slot ring type."""
    assert isinstance(ring, SlotRingType)
    return ring.stage


@irdl_op_definition
class SlotStageOp(HopperValueOp):
    """The stage of a ring position in a slot ring:
    `%stage = hopper.slot_stage %slots[%pos] : !hopper.slot_ring<...>,
    !hopper.ring_position<stages = 3>` (a `!hopper.stage` of the ring's slots)."""

    name = "hopper.slot_stage"

    RING: ClassVar = VarConstraint("RING", base(SlotRingType))

    ring = operand_def(RING)
    """The ring."""
    position = operand_def(RingPositionType)
    """The position whose stage is taken."""
    result = result_def(Implied(source="RING", rule=_stage_of))
    """The ring's stage (a `!hopper.stage` of its slots)."""

    assembly_format = (
        "$ring `[` $position `]` attr-dict `:` custom<Typed>(type($ring)) `,` "
        "custom<Typed>(type($position))"
    )

    def __init__(self, ring: SSAValue, position: SSAValue):
        ring_type = ring.type
        assert isinstance(ring_type, SlotRingType)
        super().__init__(operands=[ring, position], result_types=[ring_type.stage])

    def verify_(self) -> None:
        ring = self.ring.type
        position = self.position.type
        assert isinstance(ring, SlotRingType) and isinstance(position, RingPositionType)
        if position.stages != ring.stages:
            raise VerifyException(
                f"{self.name}: a position of a {position.stages.data}-stage ring does not "
                f"walk a ring of {ring.stages.data} stages"
            )
        if self.result.type != ring.stage:
            raise VerifyException(
                f"{self.name}: the result must be {ring.stage}, the ring's stage, found "
                f"{self.result.type}"
            )


@irdl_op_definition
class RingSlotOp(HopperValueOp):
    """The address of slot `slot` of a ring stage:
    `%a = hopper.ring_slot %stage[1] : !hopper.stage<slots = [0, 16384]>` (an
    `!hopper.smem<align 1024>`)."""

    name = "hopper.ring_slot"

    slot = prop_def(IntAttr)
    """The slot (an index into the stage's slots)."""
    stage = operand_def(StageType)
    """The stage."""
    result = result_def(Implied(SmemType(SLOT_ALIGN)))
    """The slot's address, an `!hopper.smem<align 1024>`."""

    assembly_format = "$stage `[` custom<Int>($slot) `]` attr-dict `:` custom<Typed>(type($stage))"

    def __init__(self, stage: SSAValue, slot: int):
        super().__init__(
            properties={"slot": IntAttr(slot)},
            operands=[stage],
            result_types=[SmemType(SLOT_ALIGN)],
        )

    @property
    def offset(self) -> int:
        """The slot's byte offset in the stage."""
        stage = self.stage.type
        assert isinstance(stage, StageType)
        return stage.offsets[self.slot.data]

    def verify_(self) -> None:
        stage = self.stage.type
        assert isinstance(stage, StageType)
        slots = len(stage.offsets)
        if not 0 <= self.slot.data < slots:
            raise VerifyException(
                f"{self.name}: slot {self.slot.data} is past the stage's {slots} slots"
            )
        if self.result.type != SmemType(SLOT_ALIGN):
            raise VerifyException(
                f"{self.name}: the result must be {SmemType(SLOT_ALIGN)}, found {self.result.type}"
            )


@irdl_op_definition
class SmemIndexOp(HopperValueOp):
    """The address `offset + index * stride` bytes past a shared address, `index` a value
    of the kernel (the buffers of one consumer warpgroup):
    `%b = hopper.smem_index %smem[148480 + %i * 16384] : !hopper.smem<align 1024>
    -> !hopper.smem<align 1024>`.

    The result's alignment is at most the base's and divides the offset and the stride.
    """

    name = "hopper.smem_index"

    offset = prop_def(IntAttr)
    """Constant bytes past the base."""
    stride = prop_def(IntAttr)
    """Bytes per unit of the index."""
    base = operand_def(SmemType)
    """The address offset from."""
    index = operand_def(IndexType)
    """How many strides past the offset (non-negative)."""
    result = result_def(SmemType)

    assembly_format = (
        "$base `[` custom<Int>($offset) `+` $index `*` custom<Int>($stride) `]` attr-dict "
        "`:` custom<Typed>(type($base)) `->` custom<Typed>(type($result))"
    )

    def __init__(
        self,
        base: SSAValue,
        offset: int,
        index: SSAValue,
        stride: int,
        smem: Attribute | None = None,
    ):
        if smem is None:
            smem = SmemType(alignment_of(offset, alignment_of(stride, _smem(base).align.data)))
        super().__init__(
            properties={"offset": IntAttr(offset), "stride": IntAttr(stride)},
            operands=[base, index],
            result_types=[smem],
        )

    def verify_(self) -> None:
        offset, stride = self.offset.data, self.stride.data
        base, result = _smem(self.base).align.data, _smem(self.result).align.data
        if offset < 0:
            raise VerifyException(f"{self.name}: the offset must be non-negative, found {offset}")
        if stride < 1:
            raise VerifyException(f"{self.name}: the stride must be positive, found {stride}")
        if result > base or offset % result or stride % result:
            raise VerifyException(
                f"{self.name}: an address {offset} + i * {stride} bytes past one aligned to "
                f"{base} is not aligned to {result} (the result's alignment)"
            )


@irdl_op_definition
class SmemAddOp(HopperValueOp):
    """The address `offset` bytes past a shared address, `offset` an index value of the
    kernel's arithmetic (a thread's row in a swizzled box):
    `%row = hopper.smem_add %buf[%row_bytes] : !hopper.smem<align 1024> -> !hopper.smem<align 128>`.

    The result's alignment is at most the base's; that the offset is a multiple of it is
    the producer's claim (the layout it computes the offset for), which the verifier cannot
    check on a value of the arithmetic.
    """

    name = "hopper.smem_add"

    base = operand_def(SmemType)
    """The address offset from."""
    offset = operand_def(IndexType)
    """Bytes past the base (a multiple of the result's alignment)."""
    result = result_def(SmemType)

    assembly_format = (
        "$base `[` $offset `]` attr-dict `:` custom<Typed>(type($base)) `->` "
        "custom<Typed>(type($result))"
    )

    def __init__(self, base: SSAValue, offset: SSAValue, smem: Attribute):
        super().__init__(operands=[base, offset], result_types=[smem])

    def verify_(self) -> None:
        base, result = _smem(self.base).align.data, _smem(self.result).align.data
        if result > base:
            raise VerifyException(
                f"{self.name}: an address past one aligned to {base} is not aligned to "
                f"{result} (the result's alignment)"
            )
