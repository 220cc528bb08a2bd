"""The types of the `hopper` dialect: the typed values its TMA, mbarrier and wgmma ops take.

In the style of MLIR's NVGPU dialect, the hardware objects a kernel passes around are
values of their own types, not registers, so that each op says what it reads and its
verifier can check that the pieces fit:

    !hopper.tensormap<4096x5120xbf16, box 128x64, swizzle 128>
    !hopper.barrier_ring<stages = 3, count = 1>
    !hopper.mbarrier<count = 1>
    !hopper.accumulator<64x256xf32>
    !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>

- a tensor map (`TensorMapType`): the global view a TMA copy reads or writes (its
  extents and element type), the box one copy moves and the box's shared-memory swizzle;
  the same facts as the entry's `tmap<...>` launch data (`mmcomp.dialects.ptx.TensorMap`);
- a ring of mbarriers (`BarrierRingType`): one barrier per stage of the shared-memory
  ring, each completing a phase after `count` arrivals;
- one mbarrier (`MbarrierType`), a stage of a ring (`hopper.ring_barrier`), as the arrive,
  wait and TMA ops take it;
- a wgmma accumulator (`AccumulatorType`): the f32 m64nN tile one warpgroup accumulates,
  N / 2 registers per thread in the wgmma fragment layout (`hopper.accumulator` names
  them; `hopper.wgmma_mma_async` updates them in place);
- a wgmma operand's shared-memory matrix descriptor (`MatrixDescriptorType`), of a tile
  of the layout its parameters give (a `#hopper.tile`'s), which only wgmma reads.

`convert-hopper-to-ptx` turns each value back into the registers that hold it: a tensor
map's generic address (b64), a barrier's shared address (u32), an accumulator's f32
registers, a descriptor's b64 register.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, IntAttr, f32
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.attrs import TileAttr
from mmcomp.dialects.ptx import TensorMap
from mmcomp.ir import dtypes

WGMMA_M = 64
"""Rows of a wgmma tile (one warpgroup)."""

WARPGROUP_THREADS = 128
"""Threads of a warpgroup, over which an accumulator's elements are spread."""

MAX_TENSOR_RANK = 5
"""Dimensions of a TMA tensor map, at most."""

SWIZZLES = (0, 32, 64, 128)
"""Swizzle spans of a TMA box in shared memory, bytes (0: none)."""

MAX_ARRIVALS = 1 << 20
"""Arrival counts of an mbarrier are below this."""

BARRIER_BYTES = 8
"""Bytes of one mbarrier in shared memory (the stride of a ring's barriers)."""


def _ints(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(value) for value in values])


@irdl_attr_definition
class TensorMapType(ParametrizedAttribute, TypeAttribute):
    """A TMA tensor map: `!hopper.tensormap<4096x5120xbf16, box 128x64, swizzle 128>`.

    Extents and box are outermost first, as in the entry's launch data (the PTX copy
    takes its coordinates innermost first). An extent known only at launch is `?`.
    """

    name = "hopper.tensormap"

    shape: ArrayAttr[IntAttr]
    """The global extents of the view, outermost first (DYNAMIC_INDEX: known at launch)."""
    element_type: Attribute
    """The element type (bf16, f16, f32, f8e4m3 or f8e5m2)."""
    box: ArrayAttr[IntAttr]
    """The extents one TMA copy moves, outermost first."""
    swizzle: IntAttr
    """Swizzle span of the box in shared memory, bytes (0: none)."""

    def __init__(
        self, shape: Sequence[int], element_type: Attribute, box: Sequence[int], swizzle: int
    ):
        super().__init__(_ints(shape), element_type, _ints(box), IntAttr(swizzle))

    @staticmethod
    def of(tensor_map: TensorMap) -> TensorMapType:
        """The type of the map that launch data describes."""
        dtype = dtypes.by_name(tensor_map.dtype)
        if dtype is None:
            raise ValueError(f"unknown tensor-map element type '{tensor_map.dtype}'")
        return TensorMapType(
            tensor_map.shape, dtype.element_type, tensor_map.box, tensor_map.swizzle
        )

    @property
    def rank(self) -> int:
        """Dimensions of the view (the coordinates a copy takes)."""
        return len(self.shape.data)

    @property
    def extents(self) -> tuple[int, ...]:
        """The global extents, outermost first."""
        return tuple(extent.data for extent in self.shape.data)

    def describes(self, tensor_map: TensorMap) -> bool:
        """Whether the map of that launch data has this type (`?` extents match any)."""
        static = TensorMapType.of(tensor_map)
        extents = tuple(
            DYNAMIC_INDEX if ours == DYNAMIC_INDEX else theirs
            for ours, theirs in zip(self.extents, static.extents, strict=False)
        )
        return self.rank == static.rank and self == TensorMapType(
            extents, static.element_type, static.box_extents, static.swizzle.data
        )

    @property
    def box_extents(self) -> tuple[int, ...]:
        """The box, outermost first."""
        return tuple(extent.data for extent in self.box.data)

    def verify(self) -> None:
        if not 1 <= self.rank <= MAX_TENSOR_RANK:
            raise VerifyException(
                f"!hopper.tensormap: rank must be 1 to {MAX_TENSOR_RANK}, found {self.rank}"
            )
        if len(self.box.data) != self.rank:
            raise VerifyException(
                f"!hopper.tensormap: box {list(self.box_extents)} must have the rank of the "
                f"shape {list(self.extents)}"
            )
        extents = [extent for extent in self.extents if extent != DYNAMIC_INDEX]
        if any(extent < 1 for extent in extents + list(self.box_extents)):
            raise VerifyException(
                f"!hopper.tensormap: extents must be positive, found shape "
                f"{list(self.extents)} and box {list(self.box_extents)}"
            )
        if dtypes.of_element_type(self.element_type) not in dtypes.FUSION_DTYPES:
            raise VerifyException(
                f"!hopper.tensormap: element type must be {dtypes.FUSION_DTYPE_NAMES}, found "
                f"{self.element_type}"
            )
        if self.swizzle.data not in SWIZZLES:
            raise VerifyException(
                f"!hopper.tensormap: swizzle must be 0, 32, 64 or 128 bytes, found "
                f"{self.swizzle.data}"
            )

    def print_parameters(self, printer: Printer) -> None:
        dims = ("?" if extent == DYNAMIC_INDEX else str(extent) for extent in self.extents)
        printer.print_string("<" + "x".join(dims) + "x")
        printer.print_attribute(self.element_type)
        printer.print_string(", box " + "x".join(str(extent) for extent in self.box_extents))
        printer.print_string(f", swizzle {self.swizzle.data}>")

    @classmethod
    def parse_parameters(
        cls, parser: AttrParser
    ) -> tuple[ArrayAttr[IntAttr], Attribute, ArrayAttr[IntAttr], IntAttr]:
        with parser.in_angle_brackets():
            pos = parser.pos
            shape, element_type = parser.parse_ranked_shape()
            if not shape:
                parser.raise_error("!hopper.tensormap: expected a shape, as 4096x5120xbf16", pos)
            parser.parse_punctuation(",")
            parser.parse_keyword("box")
            pos = parser.pos
            box = parser.parse_dimension_list()
            if not box or any(extent < 0 for extent in box):
                parser.raise_error("!hopper.tensormap: expected a static box, as 128x64", pos)
            parser.parse_punctuation(",")
            parser.parse_keyword("swizzle")
            swizzle = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (_ints(shape), element_type, _ints(box), IntAttr(swizzle))


def _check_count(where: str, count: int) -> None:
    if not 1 <= count < MAX_ARRIVALS:
        raise VerifyException(f"{where}: count must be in [1, 2^20), found {count}")


def _parse_key(parser: AttrParser, key: str) -> int:
    """`key = N`."""
    parser.parse_keyword(key)
    parser.parse_punctuation("=")
    return parser.parse_integer(allow_boolean=False)


@irdl_attr_definition
class BarrierRingType(ParametrizedAttribute, TypeAttribute):
    """The mbarriers of a shared-memory ring, one per stage:
    `!hopper.barrier_ring<stages = 3, count = 1>`."""

    name = "hopper.barrier_ring"

    stages: IntAttr
    """Barriers in the ring (one per stage), 8 bytes each, consecutive."""
    count: IntAttr
    """Arrivals that complete a phase of each barrier."""

    def __init__(self, stages: int, count: int):
        super().__init__(IntAttr(stages), IntAttr(count))

    def verify(self) -> None:
        if self.stages.data < 1:
            raise VerifyException(
                f"!hopper.barrier_ring: stages must be at least 1, found {self.stages.data}"
            )
        _check_count("!hopper.barrier_ring", self.count.data)

    @property
    def barrier(self) -> MbarrierType:
        """The type of one barrier of the ring."""
        return MbarrierType(self.count.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<stages = {self.stages.data}, count = {self.count.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr, IntAttr]:
        with parser.in_angle_brackets():
            stages = _parse_key(parser, "stages")
            parser.parse_punctuation(",")
            count = _parse_key(parser, "count")
        return (IntAttr(stages), IntAttr(count))


@irdl_attr_definition
class MbarrierType(ParametrizedAttribute, TypeAttribute):
    """One mbarrier in shared memory: `!hopper.mbarrier<count = 2>`."""

    name = "hopper.mbarrier"

    count: IntAttr
    """Arrivals that complete a phase."""

    def __init__(self, count: int):
        super().__init__(IntAttr(count))

    def verify(self) -> None:
        _check_count("!hopper.mbarrier", self.count.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<count = {self.count.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr]:
        with parser.in_angle_brackets():
            count = _parse_key(parser, "count")
        return (IntAttr(count),)


@irdl_attr_definition
class AccumulatorType(ParametrizedAttribute, TypeAttribute):
    """A warpgroup's wgmma accumulator: `!hopper.accumulator<64x256xf32>`.

    The m x n tile is spread over the warpgroup's 128 threads in the wgmma fragment layout:
    thread t = 32 w + l holds rows 16 w + l / 4 (+ 8) and columns 8 j + 2 (l % 4) (+ 1),
    n / 2 registers.
    """

    name = "hopper.accumulator"

    m: IntAttr
    """Rows of the tile (64, one wgmma's M)."""
    n: IntAttr
    """Columns of the tile: a multiple of 8 from 8 to 256 (one wgmma's N)."""
    element_type: Attribute
    """The element type (f32)."""

    def __init__(self, n: int, m: int = WGMMA_M):
        super().__init__(IntAttr(m), IntAttr(n), f32)

    @property
    def registers(self) -> int:
        """Registers per thread."""
        return self.m.data * self.n.data // WARPGROUP_THREADS

    def verify(self) -> None:
        m, n = self.m.data, self.n.data
        if m != WGMMA_M:
            raise VerifyException(f"!hopper.accumulator: m must be {WGMMA_M}, found {m}")
        if n % 8 or not 8 <= n <= 256:
            raise VerifyException(
                f"!hopper.accumulator: n must be a multiple of 8 in [8, 256], found {n}"
            )
        if self.element_type != f32:
            raise VerifyException(
                f"!hopper.accumulator: element type must be f32, found {self.element_type}"
            )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.m.data}x{self.n.data}x")
        printer.print_attribute(self.element_type)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr, IntAttr, Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            shape, element_type = parser.parse_ranked_shape()
            if len(shape) != 2 or any(extent < 0 for extent in shape):
                parser.raise_error(
                    "!hopper.accumulator: expected a static m x n shape, as 64x256xf32", pos
                )
        return (IntAttr(shape[0]), IntAttr(shape[1]), element_type)


@irdl_attr_definition
class MatrixDescriptorType(ParametrizedAttribute, TypeAttribute):
    """The 64-bit shared-memory matrix descriptor of a wgmma operand in a tile of the
    given layout: `!hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>`.

    A type of its own rather than an `i64`: the encoding (start address, leading and
    stride byte offsets, swizzle mode) is only for wgmma to read, not integer arithmetic,
    and the tile it carries lets wgmma's verifier check its operands' majors.
    """

    name = "hopper.matrix_descriptor"

    tile: TileAttr
    """The layout of the tile the operand lies in."""

    def __init__(self, tile: TileAttr):
        super().__init__(tile)

    def print_parameters(self, printer: Printer) -> None:
        self.tile.print_parameters(printer)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[TileAttr]:
        return (TileAttr.new(TileAttr.parse_parameters(parser)),)
