"""Bit-by-bit checks of the swizzle and wgmma matrix-descriptor encoding (mmcomp.arch.smem_layout).

The layout rules are restated here independently of the module: how TMA permutes 16-byte
chunks, and how wgmma finds element (row, k) of its operand from a descriptor (the
canonical layouts of the PTX ISA, with the swizzle applied to the address). Every
descriptor the module derives must make wgmma read exactly the element TMA wrote there.
"""

from __future__ import annotations

import itertools
from enum import Enum

import pytest

from mmcomp.arch.smem_layout import (
    Major,
    OperandTile,
    SwizzleMode,
    decode_matrix_descriptor,
    descriptor_base,
    matrix_descriptor,
    swizzle_address,
)

SWIZZLED = [SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128]


def test_descriptor_codes_and_spans():
    assert [m.descriptor_code for m in SwizzleMode] == [0, 3, 2, 1]
    assert [m.span for m in SwizzleMode] == [16, 32, 64, 128]
    assert SwizzleMode.from_bytes(0) is SwizzleMode.NONE
    assert SwizzleMode.from_bytes(128) is SwizzleMode.B128
    assert SwizzleMode.from_descriptor_code(2) is SwizzleMode.B64
    with pytest.raises(ValueError, match="0, 32, 64, 128 bytes, found 48"):
        SwizzleMode.from_bytes(48)


def test_descriptor_fields_bit_by_bit():
    descriptor = matrix_descriptor(0x400, 16, 1024, SwizzleMode.B128)
    assert descriptor == 0x4000_0040_0001_0040
    for bit in range(64):
        expected = bit in (6, 16, 38, 62)
        assert bool(descriptor >> bit & 1) == expected, f"bit {bit}"
    # Every field at its maximum fills exactly its bits and nothing else.
    full = matrix_descriptor((1 << 18) - 16, (1 << 18) - 16, (1 << 18) - 16, SwizzleMode.B32)
    assert full == (0x3FFF | 0x3FFF << 16 | 0x3FFF << 32 | 3 << 62)
    assert descriptor_base(16, 1024, SwizzleMode.B64) == 1 << 16 | 64 << 32 | 2 << 62


def test_descriptor_round_trip():
    for start, lbo, sbo, mode in itertools.product(
        (0, 16, 0x3FFF0), (16, 8192), (128, 1024), list(SwizzleMode)
    ):
        fields = decode_matrix_descriptor(matrix_descriptor(start, lbo, sbo, mode))
        assert (fields.start, fields.leading_byte_offset, fields.stride_byte_offset) == (
            start,
            lbo,
            sbo,
        )
        assert fields.swizzle is mode


def test_descriptor_rejects_bad_fields():
    with pytest.raises(ValueError, match="start address must be a multiple of 16 bytes, found 8"):
        matrix_descriptor(8, 16, 1024, SwizzleMode.B128)
    with pytest.raises(ValueError, match=r"stride byte offset must be in \[0, 2\^18\)"):
        matrix_descriptor(0, 16, 1 << 18, SwizzleMode.B128)


@pytest.mark.parametrize("row", range(8))
def test_swizzle_128b_pattern(row: int):
    for chunk in range(8):
        for byte in range(16):
            logical = row * 128 + chunk * 16 + byte
            assert (
                swizzle_address(logical, SwizzleMode.B128) == row * 128 + (chunk ^ row) * 16 + byte
            )
            # The pattern repeats every 1024 bytes.
            assert swizzle_address(logical + 3072, SwizzleMode.B128) == (
                swizzle_address(logical, SwizzleMode.B128) + 3072
            )


def test_swizzle_64b_and_32b_patterns():
    for row, chunk in itertools.product(range(8), range(4)):
        expected = row * 64 + (chunk ^ (row // 2) % 4) * 16
        assert swizzle_address(row * 64 + chunk * 16, SwizzleMode.B64) == expected
    for row, chunk in itertools.product(range(8), range(2)):
        expected = row * 32 + (chunk ^ (row // 4) % 2) * 16
        assert swizzle_address(row * 32 + chunk * 16, SwizzleMode.B32) == expected
    assert swizzle_address(0x1234, SwizzleMode.NONE) == 0x1234


@pytest.mark.parametrize("mode", list(SwizzleMode))
def test_swizzle_is_a_permutation_of_each_pattern(mode: SwizzleMode):
    base = 4096
    images = {swizzle_address(base + a, mode) for a in range(mode.repeat)}
    assert images == set(range(base, base + mode.repeat))


def test_verified_kmajor_128b_offsets():
    """Values confirmed on the H200: K-major 128B, SBO 1024, LBO 16, +32 bytes per k16."""
    tile = OperandTile(Major.K, SwizzleMode.B128, mn=128, k=64)
    assert (tile.leading_byte_offset, tile.stride_byte_offset) == (16, 1024)
    assert [tile.start_offset(0, k) for k in (0, 16, 32, 48)] == [0, 32, 64, 96]
    assert tile.start_offset(64, 0) == 64 * 128
    assert tile.bytes == 128 * 128


def test_verified_mnmajor_128b_offsets():
    """Values confirmed on the H200: MN-major 128B, 64 K rows: SBO 1024, LBO 8192, +2048."""
    tile = OperandTile(Major.MN, SwizzleMode.B128, mn=128, k=64)
    assert (tile.leading_byte_offset, tile.stride_byte_offset) == (8192, 1024)
    assert [tile.start_offset(0, k) for k in (0, 16, 32, 48)] == [0, 2048, 4096, 6144]
    assert tile.start_offset(64, 0) == 8192
    descriptor = tile.descriptor(0x2000, 0, 16)
    assert descriptor == matrix_descriptor(0x2000 + 2048, 8192, 1024, SwizzleMode.B128)


def wgmma_reads(descriptor: int, major: Major, row: int, k: int) -> int:
    """The address wgmma reads operand element (row, k) of a 16-bit operand from.

    The canonical layouts of the PTX ISA: core matrices of 8 rows of 16 bytes; the
    swizzle permutes 16-byte chunks of the computed address.
    """
    fields = decode_matrix_descriptor(descriptor)
    mode, lbo, sbo = fields.swizzle, fields.leading_byte_offset, fields.stride_byte_offset
    span = mode.span
    if major is Major.K:
        k_byte = 2 * k
        if mode is SwizzleMode.NONE:
            address = (
                fields.start
                + (row // 8) * sbo
                + (row % 8) * 16
                + (k_byte // 16) * lbo
                + k_byte % 16
            )
        else:
            address = fields.start + (row // 8) * sbo + (row % 8) * span + k_byte
    else:
        row_byte = 2 * row
        if mode is SwizzleMode.NONE:
            address = (
                fields.start
                + (row_byte // 16) * sbo
                + (k // 8) * lbo
                + (k % 8) * 16
                + row_byte % 16
            )
        else:
            address = (
                fields.start
                + (row_byte // span) * lbo
                + (k // 8) * sbo
                + (k % 8) * span
                + row_byte % span
            )
    return swizzle_address(address, mode)


def _formable_tiles() -> list[tuple[SwizzleMode, Major, int, int]]:
    """Every (mode, major, mn, k) whose contiguous extent fills whole swizzled rows."""
    cases = []
    for mode, major, (mn, k) in itertools.product(
        SwizzleMode, Major, [(128, 64), (64, 32), (256, 16)]
    ):
        if (k if major is Major.K else mn) * 2 % mode.span == 0:
            cases.append((mode, major, mn, k))
    return cases


@pytest.mark.parametrize(
    ("mode", "major", "mn", "k"),
    _formable_tiles(),
    ids=lambda v: v.value if isinstance(v, Enum) else str(v),
)
def test_wgmma_reads_what_tma_wrote(mode: SwizzleMode, major: Major, mn: int, k: int):
    tile = OperandTile(major, mode, mn=mn, k=k)
    base = 3 * 1024
    placed = {tile.address(base, r, c) + b for r in range(mn) for c in range(k) for b in (0, 1)}
    assert placed == set(range(base, base + tile.bytes)), "TMA placement is not a bijection"
    rows = 64
    mn_step = 8 if major is Major.K else max(tile.box_elements, 8)
    for mn0 in range(0, mn - rows + 1, max(mn_step, rows)):
        for k0 in range(0, k, 16):
            descriptor = tile.descriptor(base, mn0, k0)
            for r, kk in itertools.product(range(rows), range(16)):
                got = wgmma_reads(descriptor, major, r, kk)
                assert got == tile.address(base, mn0 + r, k0 + kk), (mn0, k0, r, kk)


def test_operand_tile_rejects_bad_layouts():
    with pytest.raises(ValueError, match=r"contiguous extent of a k-major tile \(48 elements\)"):
        OperandTile(Major.K, SwizzleMode.B128, mn=64, k=48)
    with pytest.raises(ValueError, match="multiple of 8, found 60"):
        OperandTile(Major.K, SwizzleMode.B32, mn=60, k=16)
    tile = OperandTile(Major.K, SwizzleMode.B128, mn=64, k=64)
    with pytest.raises(ValueError, match="1024-byte aligned, found base 512"):
        tile.descriptor(512)
    with pytest.raises(ValueError, match="K offset must be a multiple of 16, found 8"):
        tile.start_offset(0, 8)
