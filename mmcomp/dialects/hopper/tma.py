"""The TMA ops of the `hopper` dialect: tensor maps and the tiled copies through them.

A tensor map is a typed value (`!hopper.tensormap`) that `hopper.tensormap_param` makes
from a `tmap` entry parameter; the copies take it at box coordinates, in the style of
NVGPU's TMA ops: `hopper.tma_load %t[%k, %m], %bar to %smem`, `hopper.tma_store %smem to
%t[...]`, the coordinates `index` values (the schedule's arithmetic, which
convert-arith-to-ptx lowers after the copies became ptx instructions).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from xdsl.dialects.builtin import IndexType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.base import (
    Guard,
    HopperInstruction,
    check_coordinates,
    int_register,
    parse_tensor_access,
    parse_typed,
    print_guard,
    print_tensor_access,
    resolve_indices,
)
from mmcomp.dialects.hopper.kernel import ParamReadOp, kernel_param
from mmcomp.dialects.hopper.smem import SmemType, shared_operand
from mmcomp.dialects.hopper.types import (
    MbarrierType,
    TensorMapType,
)
from mmcomp.dialects.ptx import (
    RegType,
    TensorMapAttr,
)

# ----------------------------------------------------------------------------------------
# TMA
# ----------------------------------------------------------------------------------------


def _print_tma_load(printer: Printer, op: TmaLoadOp, mask: SSAValue | None) -> None:
    """`%map[%c0, ...], %bar to %dst [mask %m] [guard] : map, barrier, dst[, mask]` (the
    coordinates are index values)."""
    printer.print_string(" ")
    print_tensor_access(printer, op.tensor_map, op.coordinates)
    printer.print_string(", ")
    printer.print_operand(op.barrier)
    printer.print_string(" to ")
    printer.print_operand(op.dst)
    if mask is not None:
        printer.print_string(" mask ")
        printer.print_operand(mask)
    print_guard(printer, op)
    printer.print_string(" : ")
    printer.print_list((op.tensor_map.type, op.barrier.type, op.dst.type), printer.print_attribute)
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
    guard: Guard

    @staticmethod
    def parse(parser: Parser, name: str) -> _TmaLoadSyntax:
        """What `_print_tma_load` printed."""
        tensor_map, coords = parse_tensor_access(parser)
        parser.parse_punctuation(",")
        barrier = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        dst = parser.parse_unresolved_operand()
        mask = None
        if parser.parse_optional_keyword("mask") is not None:
            mask = parser.parse_unresolved_operand()
        guard = Guard.parse(parser)
        parser.parse_punctuation(":")
        map_type = parse_typed(parser, name, TensorMapType, "a !hopper.tensormap type")
        parser.parse_punctuation(",")
        barrier_type = parse_typed(parser, name, MbarrierType, "a !hopper.mbarrier type")
        parser.parse_punctuation(",")
        dst_value = parser.resolve_operand(dst, parser.parse_type())
        mask_value = None
        if mask is not None:
            parser.parse_punctuation(",")
            mask_value = parser.resolve_operand(mask, parser.parse_type())
        return _TmaLoadSyntax(
            dst_value,
            parser.resolve_operand(tensor_map, map_type),
            parser.resolve_operand(barrier, barrier_type),
            mask_value,
            resolve_indices(parser, coords),
            guard,
        )


@irdl_op_definition
class TensorMapParamOp(ParamReadOp):
    """The tensor map of a `tmap` kernel parameter, as TMA copies take it."""

    name = "hopper.tensormap_param"

    result = result_def(TensorMapType)
    """The tensor map."""

    def __init__(self, param: str, tensor_map: TensorMapType):
        super().__init__(param, tensor_map)

    def verify_(self) -> None:
        param = kernel_param(self, self.param.data, "tmap")
        if param is None or not isinstance(param.info, TensorMapAttr):
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
    """Tiled TMA load of one box into shared memory, completing bytes on an mbarrier; with a
    CTA mask, written to the same offset in every CTA of the mask (multicast)."""

    name = "hopper.tma_load"

    dst = operand_def(RegType | SmemType)
    """Shared-memory destination (a 32-bit shared address, or an `!hopper.smem` aligned to
    the box's swizzle pattern; the same offset in each CTA)."""
    tensor_map = operand_def(TensorMapType)
    """The tensor map read."""
    barrier = operand_def(MbarrierType)
    """The mbarrier whose transaction count the copy completes (the same offset in each CTA)."""
    cta_mask = opt_operand_def(RegType)
    """16-bit mask of the destination CTA ranks in the cluster (a multicast load), if any."""
    coordinates = var_operand_def(IndexType)
    """Box coordinates in elements, innermost dimension first."""

    def __init__(
        self,
        dst: SSAValue,
        tensor_map: SSAValue,
        barrier: SSAValue,
        coordinates: Sequence[SSAValue],
        cta_mask: SSAValue | None = None,
    ):
        mask = [] if cta_mask is None else [cta_mask]
        super().__init__(operands=[dst, tensor_map, barrier, mask, list(coordinates), []])

    def verify_kinds(self) -> None:
        tensor_map = self.tensor_map.type
        assert isinstance(tensor_map, TensorMapType)
        shared_operand(self, "the destination", self.dst, max(128, 8 * tensor_map.swizzle.data))
        if self.cta_mask is not None:
            int_register(self, "the CTA mask", self.cta_mask, (16,))
        check_coordinates(self, self.tensor_map, self.coordinates)

    def print(self, printer: Printer) -> None:
        _print_tma_load(printer, self, self.cta_mask)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        load = _TmaLoadSyntax.parse(parser, cls.name)
        op = cls(load.dst, load.tensor_map, load.barrier, load.coordinates, load.mask)
        return load.guard.apply(op)


@irdl_op_definition
class TmaStoreOp(HopperInstruction):
    """Tiled TMA store of one box from shared memory, in the current bulk group."""

    name = "hopper.tma_store"

    tensor_map = operand_def(TensorMapType)
    """The tensor map written."""
    src = operand_def(RegType | SmemType)
    """Shared-memory source (a 32-bit shared address, or an `!hopper.smem` aligned to the
    box's swizzle pattern)."""
    coordinates = var_operand_def(IndexType)
    """Box coordinates in elements, innermost first (out-of-bounds parts are clipped)."""

    def __init__(self, tensor_map: SSAValue, src: SSAValue, coordinates: Sequence[SSAValue]):
        super().__init__(operands=[tensor_map, src, list(coordinates), []])

    def verify_kinds(self) -> None:
        tensor_map = self.tensor_map.type
        assert isinstance(tensor_map, TensorMapType)
        shared_operand(self, "the source", self.src, max(128, 8 * tensor_map.swizzle.data))
        check_coordinates(self, self.tensor_map, self.coordinates)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_string(" to ")
        print_tensor_access(printer, self.tensor_map, self.coordinates)
        print_guard(printer, self)
        printer.print_string(" : ")
        printer.print_list((self.tensor_map.type, self.src.type), printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        src = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        tensor_map, coords = parse_tensor_access(parser)
        guard = Guard.parse(parser)
        parser.parse_punctuation(":")
        map_type = parse_typed(parser, cls.name, TensorMapType, "a !hopper.tensormap type")
        parser.parse_punctuation(",")
        src_value = parser.resolve_operand(src, parser.parse_type())
        op = cls(
            parser.resolve_operand(tensor_map, map_type), src_value, resolve_indices(parser, coords)
        )
        return guard.apply(op)
