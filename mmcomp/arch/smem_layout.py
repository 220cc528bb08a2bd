"""Shared-memory layouts of Hopper: swizzle modes and wgmma matrix descriptors.

A TMA load writes a box of a global tensor into shared memory row by row (innermost
dimension contiguous) and, with a swizzle mode, permutes the 16-byte chunks of each row
by XOR with bits of the address. wgmma reads its A and B operands from shared memory
through a 64-bit matrix descriptor that names the start address, two byte offsets (the
leading and the stride byte offset) and the same swizzle mode.

This module encodes both sides so that they agree:

- `SwizzleMode`: none / 32B / 64B / 128B, the byte pattern (`swizzle_address`), and the
  code that goes into the descriptor's bits 62-63.
- `matrix_descriptor` / `decode_matrix_descriptor`: the 64-bit encoding (start >> 4 in
  bits 0-13, LBO >> 4 in bits 16-29, SBO >> 4 in bits 32-45, swizzle in bits 62-63).
- `OperandTile`: an operand tile as mmcomp's TMA loads lay it out (a row of boxes, each
  as wide as the swizzle span), with the descriptor offsets and the per-instruction start
  address advance for K-major and MN-major operands: 16-bit elements (k16 steps) either
  way, 8-bit (fp8, k32 steps) K-major only, as wgmma transposes 16-bit operands only.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

CORE_MATRIX_ROWS = 8
"""Rows of a core matrix: 8 rows of 16 bytes each."""

CHUNK_BYTES = 16
"""Bytes of one row of a core matrix, the unit of the swizzle permutation."""

WGMMA_K = 16
"""K extent of one wgmma for 16-bit element types (bf16, f16)."""

WGMMA_K_BYTES = 32
"""Bytes of K one wgmma reads per row: k16 of 16-bit types, k32 of fp8."""


def wgmma_k(element_bytes: int) -> int:
    """The K extent of one wgmma for `element_bytes`-byte elements (16 or 32)."""
    return WGMMA_K_BYTES // element_bytes


DESCRIPTOR_FIELD_LIMIT = 1 << 18
"""Exclusive upper bound of a byte address or offset in a descriptor (14 bits, >> 4)."""


class SwizzleMode(Enum):
    """A shared-memory swizzle mode, as TMA writes and wgmma reads it."""

    NONE = "none"
    B32 = "32B"
    B64 = "64B"
    B128 = "128B"

    @property
    def span(self) -> int:
        """Bytes of a swizzled row: the width of one TMA box (16 for no swizzle)."""
        return _SPAN[self]

    @property
    def descriptor_code(self) -> int:
        """The value of the descriptor's bits 62-63 (1 = 128B, 2 = 64B, 3 = 32B)."""
        return _DESCRIPTOR_CODE[self]

    @property
    def xor_bits(self) -> int:
        """Address bits 7.. XORed into the 16-byte chunk index (bits 4..)."""
        return _XOR_BITS[self]

    @property
    def repeat(self) -> int:
        """Bytes after which the permutation repeats: 8 rows of `span` bytes."""
        return CORE_MATRIX_ROWS * self.span if self is not SwizzleMode.NONE else CHUNK_BYTES

    @property
    def alignment(self) -> int:
        """Alignment a tile's shared-memory base needs for the pattern to start at row 0."""
        return self.repeat if self is not SwizzleMode.NONE else 128

    @staticmethod
    def from_bytes(span: int) -> SwizzleMode:
        """The mode whose swizzled row is `span` bytes (0 for no swizzle)."""
        for mode in SwizzleMode:
            if (mode.span if mode is not SwizzleMode.NONE else 0) == span:
                return mode
        raise ValueError(f"swizzle span must be one of 0, 32, 64, 128 bytes, found {span}")

    @staticmethod
    def from_descriptor_code(code: int) -> SwizzleMode:
        """The mode whose descriptor code (bits 62-63) is `code`."""
        for mode in SwizzleMode:
            if mode.descriptor_code == code:
                return mode
        raise ValueError(f"swizzle descriptor code must be 0..3, found {code}")


_SPAN = {SwizzleMode.NONE: 16, SwizzleMode.B32: 32, SwizzleMode.B64: 64, SwizzleMode.B128: 128}
_DESCRIPTOR_CODE = {
    SwizzleMode.NONE: 0,
    SwizzleMode.B128: 1,
    SwizzleMode.B64: 2,
    SwizzleMode.B32: 3,
}
_XOR_BITS = {SwizzleMode.NONE: 0, SwizzleMode.B32: 1, SwizzleMode.B64: 2, SwizzleMode.B128: 3}


def swizzle_address(address: int, mode: SwizzleMode) -> int:
    """The physical byte address of logical `address` under `mode`.

    The 16-byte chunk index (bits 4..4+b) is XORed with bits 7..7+b of the address, b being
    1, 2 or 3 for 32B, 64B and 128B swizzle: in 128B mode, chunk c of row r of an aligned
    1024-byte pattern lands in chunk c ^ (r % 8).
    """
    bits = mode.xor_bits
    if bits == 0:
        return address
    mask = (1 << bits) - 1
    return address ^ (((address >> 7) & mask) << 4)


def matrix_descriptor(
    start: int, leading_byte_offset: int, stride_byte_offset: int, swizzle: SwizzleMode
) -> int:
    """The 64-bit wgmma shared-memory matrix descriptor of the given fields."""
    for name, value in (
        ("start address", start),
        ("leading byte offset", leading_byte_offset),
        ("stride byte offset", stride_byte_offset),
    ):
        if value < 0 or value >= DESCRIPTOR_FIELD_LIMIT:
            raise ValueError(f"descriptor {name} must be in [0, 2^18), found {value}")
        if value % CHUNK_BYTES:
            raise ValueError(f"descriptor {name} must be a multiple of 16 bytes, found {value}")
    return (
        (start >> 4)
        | (leading_byte_offset >> 4) << 16
        | (stride_byte_offset >> 4) << 32
        | swizzle.descriptor_code << 62
    )


def descriptor_base(leading_byte_offset: int, stride_byte_offset: int, swizzle: SwizzleMode) -> int:
    """The descriptor with start address 0: add `start >> 4` to it at run time."""
    return matrix_descriptor(0, leading_byte_offset, stride_byte_offset, swizzle)


@dataclass(frozen=True)
class MatrixDescriptor:
    """The fields of a decoded matrix descriptor, in bytes."""

    start: int
    leading_byte_offset: int
    stride_byte_offset: int
    swizzle: SwizzleMode


def decode_matrix_descriptor(descriptor: int) -> MatrixDescriptor:
    """The fields of a 64-bit matrix descriptor."""
    if descriptor < 0 or descriptor >= 1 << 64:
        raise ValueError(f"a matrix descriptor is a 64-bit value, found {descriptor}")
    field = (1 << 14) - 1
    return MatrixDescriptor(
        start=(descriptor & field) << 4,
        leading_byte_offset=((descriptor >> 16) & field) << 4,
        stride_byte_offset=((descriptor >> 32) & field) << 4,
        swizzle=SwizzleMode.from_descriptor_code(descriptor >> 62),
    )


class Major(Enum):
    """Which dimension of an operand tile is contiguous in shared memory."""

    K = "k"
    MN = "mn"

    @property
    def transpose_bit(self) -> int:
        """wgmma's imm-trans-a / imm-trans-b value: 0 for K-major, 1 for MN-major."""
        return 0 if self is Major.K else 1


@dataclass(frozen=True)
class OperandTile:
    """A wgmma operand tile in shared memory, laid out as mmcomp's TMA loads write it.

    The tile is `mn` rows (M for A, N for B) by `k` columns of `element_bytes`-byte
    elements. Its contiguous dimension (`major`) is cut into boxes `swizzle.span` bytes
    wide; each box holds all of the other dimension, rows of `span` bytes one after the
    other, and the boxes follow each other in shared memory. This is what a TMA load of
    box [other extent, span / element_bytes] per box writes, box after box.
    """

    major: Major
    swizzle: SwizzleMode
    mn: int
    k: int
    element_bytes: int = 2

    def __post_init__(self):
        if self.element_bytes not in (1, 2):
            raise ValueError(
                f"wgmma operands from shared memory are 16-bit or 8-bit here, found "
                f"{self.element_bytes}-byte elements"
            )
        if self.element_bytes == 1 and self.major is not Major.K:
            raise ValueError(
                "an 8-bit (fp8) wgmma operand must be K-major: wgmma transposes 16-bit "
                "operands only"
            )
        contiguous = self.k if self.major is Major.K else self.mn
        other = self.mn if self.major is Major.K else self.k
        if (contiguous * self.element_bytes) % self.swizzle.span:
            raise ValueError(
                f"the contiguous extent of a {self.major.value}-major tile "
                f"({contiguous} elements) must fill whole {self.swizzle.span}-byte rows"
            )
        if other % CORE_MATRIX_ROWS:
            raise ValueError(f"the strided extent of a tile must be a multiple of 8, found {other}")
        if self.k % self.instr_k:
            raise ValueError(
                f"the K extent of a tile must be a multiple of {self.instr_k}, found {self.k}"
            )

    @property
    def instr_k(self) -> int:
        """The K extent of one wgmma on this tile (16, or 32 for fp8)."""
        return wgmma_k(self.element_bytes)

    @property
    def box_elements(self) -> int:
        """Elements of the contiguous dimension in one box (one swizzled row)."""
        return self.swizzle.span // self.element_bytes

    @property
    def box_rows(self) -> int:
        """Rows of one box: the extent of the strided dimension."""
        return self.mn if self.major is Major.K else self.k

    @property
    def box_bytes(self) -> int:
        """Bytes of one box."""
        return self.box_rows * self.swizzle.span

    @property
    def boxes(self) -> int:
        """Number of boxes along the contiguous dimension."""
        contiguous = self.k if self.major is Major.K else self.mn
        return contiguous // self.box_elements

    @property
    def bytes(self) -> int:
        """Bytes of the whole tile."""
        return self.box_bytes * self.boxes

    @property
    def leading_byte_offset(self) -> int:
        """The descriptor's leading byte offset for this layout.

        K-major swizzled: unused by the hardware (one k16 step lies inside a swizzled row),
        encoded as 16. K-major unswizzled: the distance between core matrices along K (one
        box). MN-major swizzled: the distance between boxes along MN. MN-major unswizzled:
        the distance between core matrices along K (8 rows of 16 bytes).
        """
        if self.major is Major.K:
            return self.box_bytes if self.swizzle is SwizzleMode.NONE else CHUNK_BYTES
        if self.swizzle is SwizzleMode.NONE:
            return CORE_MATRIX_ROWS * CHUNK_BYTES
        return self.box_bytes

    @property
    def stride_byte_offset(self) -> int:
        """The descriptor's stride byte offset for this layout.

        The distance between groups of 8 rows (8 MN rows when K-major, 8 K rows when
        MN-major swizzled); MN-major unswizzled: the distance between boxes along MN.
        """
        if self.major is Major.MN and self.swizzle is SwizzleMode.NONE:
            return self.box_bytes
        return CORE_MATRIX_ROWS * self.swizzle.span

    def offset(self, mn: int, k: int) -> int:
        """Byte offset, before swizzling, of the element (mn, k) from the tile base."""
        if self.major is Major.K:
            box, inner = divmod(k, self.box_elements)
            row = mn
        else:
            box, inner = divmod(mn, self.box_elements)
            row = k
        return box * self.box_bytes + row * self.swizzle.span + inner * self.element_bytes

    def start_offset(self, mn: int, k: int) -> int:
        """Start-address offset of the wgmma operand whose first element is (mn, k).

        `mn` must be a multiple of 8 (K-major) or of a box width (MN-major), and `k` a
        multiple of the instruction's K: for K-major 128B tiles each k16 step (bf16) or
        k32 step (fp8) adds 32 bytes, for MN-major bf16 ones 2048 bytes (16 rows of 128
        bytes) in a 64-row tile.
        """
        if k % self.instr_k:
            raise ValueError(f"a wgmma K offset must be a multiple of {self.instr_k}, found {k}")
        if self.major is Major.K and mn % CORE_MATRIX_ROWS:
            raise ValueError(f"a K-major MN offset must be a multiple of 8, found {mn}")
        if self.major is Major.MN and mn % self.box_elements:
            raise ValueError(
                f"an MN-major MN offset must be a multiple of {self.box_elements}, found {mn}"
            )
        return self.offset(mn, k)

    def descriptor(self, base: int, mn: int = 0, k: int = 0) -> int:
        """The descriptor of the wgmma operand at (mn, k) of a tile at shared address `base`."""
        if base % self.swizzle.alignment:
            raise ValueError(
                f"a {self.swizzle.value}-swizzled tile must be {self.swizzle.alignment}-byte "
                f"aligned, found base {base}"
            )
        return matrix_descriptor(
            base + self.start_offset(mn, k),
            self.leading_byte_offset,
            self.stride_byte_offset,
            self.swizzle,
        )

    def address(self, base: int, mn: int, k: int) -> int:
        """The physical shared-memory address of element (mn, k), as TMA placed it."""
        return swizzle_address(base + self.offset(mn, k), self.swizzle)
