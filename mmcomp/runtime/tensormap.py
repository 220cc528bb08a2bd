"""TMA descriptors (CUtensorMap) for tiled bulk copies, encoded with cuTensorMapEncodeTiled.

Shapes, byte strides and boxes are given outermost first, as numpy writes them; the driver
wants them innermost first, and this module reverses them. So a row-major bf16 A[M, K]
with a 128x64 box is `encode_tensor_map(a, box=(128, 64), swizzle=128)`, and the kernel's
`cp.async.bulk.tensor.2d` coordinates are {k, m} (innermost first, as PTX writes them).

Every rule the driver would reject is checked first, with a clear `LaunchError`:
rank 1 to 5; a 16-byte aligned base; the innermost axis contiguous; the other strides
multiples of 16 and below 2^40; box extents from 1 to 256; the inner box a multiple of 16
bytes and, when swizzled, no wider than the swizzle span (32, 64 or 128 bytes). Out-of-bounds
elements of a box read as zero (the driver's OOB fill NONE; NaN fill is not used).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mmcomp.arch.limits import TMA_GLOBAL_ALIGNMENT, TMA_MAX_BOX
from mmcomp.errors import LaunchError
from mmcomp.ir.dtypes import F8E4M3, F8E5M2
from mmcomp.runtime.arrays import BFLOAT16, DeviceArray, as_device_array, as_dtype, dtype_name
from mmcomp.runtime.device import ensure_context
from mmcomp.runtime.driver import check, driver_api

TENSOR_MAP_BYTES = 128
"""Size of a CUtensorMap, the `.param .b8 name[128]` kernel parameter."""

MAX_BOX_EXTENT = TMA_MAX_BOX
"""Largest box extent per dimension (mmcomp.arch.limits.TMA_MAX_BOX)."""

SWIZZLE_SPANS = (0, 32, 64, 128)
"""Swizzle modes, by the width in bytes of the swizzle pattern (0 = none)."""

_DTYPE_NAMES = {
    BFLOAT16: "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
    np.dtype(np.float16): "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
    np.dtype(np.float32): "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
    np.dtype(np.float64): "CU_TENSOR_MAP_DATA_TYPE_FLOAT64",
    np.dtype(np.uint8): "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    # fp8: TMA copies bytes; the wgmma instruction gives them their type.
    F8E4M3.numpy_dtype: "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    F8E5M2.numpy_dtype: "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    np.dtype(np.uint16): "CU_TENSOR_MAP_DATA_TYPE_UINT16",
    np.dtype(np.uint32): "CU_TENSOR_MAP_DATA_TYPE_UINT32",
    np.dtype(np.int32): "CU_TENSOR_MAP_DATA_TYPE_INT32",
    np.dtype(np.uint64): "CU_TENSOR_MAP_DATA_TYPE_UINT64",
    np.dtype(np.int64): "CU_TENSOR_MAP_DATA_TYPE_INT64",
}
_SWIZZLE_NAMES = {
    0: "CU_TENSOR_MAP_SWIZZLE_NONE",
    32: "CU_TENSOR_MAP_SWIZZLE_32B",
    64: "CU_TENSOR_MAP_SWIZZLE_64B",
    128: "CU_TENSOR_MAP_SWIZZLE_128B",
}
_L2_NAMES = {
    0: "CU_TENSOR_MAP_L2_PROMOTION_NONE",
    64: "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
    128: "CU_TENSOR_MAP_L2_PROMOTION_L2_128B",
    256: "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
}


@dataclass(frozen=True)
class TensorMapLayout:
    """A validated tiled tensor-map request, outermost first (numpy order)."""

    dtype: np.dtype
    """Element type."""
    shape: tuple[int, ...]
    """Global extents."""
    strides: tuple[int, ...]
    """Global byte strides; the innermost equals the element size."""
    box: tuple[int, ...]
    """Box (tile) extents copied per TMA instruction."""
    element_strides: tuple[int, ...]
    """Traversal step per dimension (1 = every element)."""
    swizzle: int
    """Swizzle span in bytes: 0, 32, 64 or 128."""
    l2_promotion: int
    """L2 promotion in bytes: 0, 64, 128 or 256."""

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def box_bytes(self) -> int:
        """Bytes one box copies to shared memory (the mbarrier transaction count)."""
        return int(np.prod(self.box, dtype=np.int64)) * self.dtype.itemsize


def swizzle_span(swizzle: int | str | None) -> int:
    """The swizzle span in bytes from 0/32/64/128, 'none', '32B', '64B' or '128B'."""
    if swizzle is None:
        return 0
    if isinstance(swizzle, str):
        text = swizzle.strip().lower().removesuffix("b")
        swizzle = 0 if text in ("none", "") else int(text) if text.isdigit() else -1
    if swizzle not in SWIZZLE_SPANS:
        raise LaunchError(
            f"tensor map: swizzle must be one of none, 32B, 64B, 128B, found {swizzle!r}"
        )
    return int(swizzle)


def tensor_map_layout(
    dtype: Any,
    shape: Sequence[int],
    strides: Sequence[int] | None,
    box: Sequence[int],
    swizzle: int | str | None = 128,
    element_strides: Sequence[int] | None = None,
    l2_promotion: int = 256,
    base_address: int = 0,
) -> TensorMapLayout:
    """Check a tiled tensor-map request against the driver's rules (see module docstring)."""
    dtype = as_dtype(dtype)
    if dtype not in _DTYPE_NAMES:
        raise LaunchError(
            f"tensor map: unsupported dtype {dtype_name(dtype)} (expected bfloat16, "
            "float16, float32 or an integer type)"
        )
    itemsize = dtype.itemsize
    shape = tuple(int(extent) for extent in shape)
    rank = len(shape)
    if not 1 <= rank <= 5:
        raise LaunchError(f"tensor map: rank must be 1 to 5, found {rank} (shape {list(shape)})")
    if strides is None:
        strides = _compact(shape, itemsize)
    strides = tuple(int(stride) for stride in strides)
    box = tuple(int(extent) for extent in box)
    element_strides = tuple(int(s) for s in (element_strides or (1,) * rank))
    for what, values in (("strides", strides), ("box", box), ("element_strides", element_strides)):
        if len(values) != rank:
            raise LaunchError(
                f"tensor map: {what} has {len(values)} entries, expected {rank} (one per "
                f"dimension of shape {list(shape)})"
            )
    for axis, extent in enumerate(shape):
        if not 1 <= extent <= 1 << 32:
            raise LaunchError(f"tensor map: shape[{axis}] = {extent} is not in [1, 2^32]")
    if base_address % TMA_GLOBAL_ALIGNMENT:
        raise LaunchError(f"tensor map: global address 0x{base_address:x} is not 16-byte aligned")
    if strides[-1] != itemsize:
        raise LaunchError(
            f"tensor map: the innermost dimension must be contiguous (byte stride {itemsize} "
            f"for {dtype_name(dtype)}), found byte stride {strides[-1]}"
        )
    for axis, stride in enumerate(strides[:-1]):
        if stride % TMA_GLOBAL_ALIGNMENT or not 0 < stride < 1 << 40:
            raise LaunchError(
                f"tensor map: byte stride {stride} of dimension {axis} must be a positive "
                "multiple of 16 below 2^40"
            )
    for axis, extent in enumerate(box):
        if not 1 <= extent <= MAX_BOX_EXTENT:
            raise LaunchError(f"tensor map: box[{axis}] = {extent} is not in [1, {MAX_BOX_EXTENT}]")
    for axis, step in enumerate(element_strides):
        if not 1 <= step <= 8:
            raise LaunchError(f"tensor map: element_strides[{axis}] = {step} is not in [1, 8]")
    inner_bytes = box[-1] * itemsize
    if inner_bytes % 16:
        raise LaunchError(
            f"tensor map: the inner box ({box[-1]} x {itemsize} bytes = {inner_bytes} bytes) "
            "must be a multiple of 16 bytes"
        )
    span = swizzle_span(swizzle)
    if span and inner_bytes > span:
        raise LaunchError(
            f"tensor map: the inner box ({box[-1]} {dtype_name(dtype)} = {inner_bytes} bytes) "
            f"is wider than the {span}-byte swizzle span; use a box of at most "
            f"{span // itemsize} elements"
        )
    if l2_promotion not in _L2_NAMES:
        raise LaunchError(
            f"tensor map: l2_promotion must be 0, 64, 128 or 256 bytes, found {l2_promotion}"
        )
    return TensorMapLayout(dtype, shape, strides, box, element_strides, span, l2_promotion)


def _compact(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Row-major compact byte strides."""
    strides: list[int] = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


class TensorMap:
    """An encoded CUtensorMap, passed to a kernel by value (its 128 bytes)."""

    def __init__(self, handle: Any, layout: TensorMapLayout, address: int, owner: Any):
        """Wrap an encoded CUtensorMap; `owner` keeps the global memory alive."""
        self.handle = handle
        """The driver's CUtensorMap (its getPtr() points at the 128 bytes)."""
        self.layout = layout
        """What it describes."""
        self.address = address
        """The global base address."""
        self.owner = owner
        """The array whose memory the map points into."""

    @property
    def ptr(self) -> int:
        """Host address of the 128-byte descriptor, for the kernel-parameter array."""
        return int(self.handle.getPtr())

    def __repr__(self) -> str:
        layout = self.layout
        return (
            f"TensorMap({dtype_name(layout.dtype)}{list(layout.shape)}, box={list(layout.box)}, "
            f"swizzle={layout.swizzle or 'none'}, address=0x{self.address:x})"
        )


def encode_tensor_map(
    array_or_ptr: Any,
    dtype: Any = None,
    shape: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
    box: Sequence[int] = (),
    swizzle: int | str | None = 128,
    *,
    element_strides: Sequence[int] | None = None,
    l2_promotion: int = 256,
) -> TensorMap:
    """Encode a tiled TMA descriptor over a device array or a raw device pointer.

    For an array (DeviceArray, torch/cupy tensor) dtype, shape and strides default to the
    array's own; for an int pointer they are required (strides default to compact).
    Everything is outermost first; strides are in bytes.
    """
    if isinstance(array_or_ptr, int) and not isinstance(array_or_ptr, bool):
        if dtype is None or shape is None:
            raise LaunchError("encode_tensor_map: a raw pointer needs dtype and shape")
        address, owner = int(array_or_ptr), None
    else:
        array = as_device_array(array_or_ptr, "tensor map")
        if array is None:
            raise LaunchError(
                "encode_tensor_map: expected a device array or a device pointer, found host "
                f"{type(array_or_ptr).__name__}"
            )
        address, owner = array.ptr, array
        dtype = array.dtype if dtype is None else dtype
        if shape is None:
            shape, strides = array.shape, array.strides if strides is None else strides
        _check_fits(array, as_dtype(dtype), shape, strides)
    if not box:
        raise LaunchError("encode_tensor_map: a box (tile extents) is required")
    layout = tensor_map_layout(
        dtype, shape, strides, box, swizzle, element_strides, l2_promotion, address
    )
    ensure_context()
    driver = driver_api()
    reversed_shape = [driver.cuuint64_t(extent) for extent in reversed(layout.shape)]
    reversed_strides = [driver.cuuint64_t(stride) for stride in reversed(layout.strides[:-1])]
    reversed_box = [driver.cuuint32_t(extent) for extent in reversed(layout.box)]
    reversed_steps = [driver.cuuint32_t(step) for step in reversed(layout.element_strides)]
    handle = check(
        driver.cuTensorMapEncodeTiled(
            getattr(driver.CUtensorMapDataType, _DTYPE_NAMES[layout.dtype]),
            layout.rank,
            address,
            reversed_shape,
            reversed_strides,
            reversed_box,
            reversed_steps,
            driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(driver.CUtensorMapSwizzle, _SWIZZLE_NAMES[layout.swizzle]),
            getattr(driver.CUtensorMapL2promotion, _L2_NAMES[layout.l2_promotion]),
            driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        ),
        f"encoding a tensor map over {dtype_name(layout.dtype)}{list(layout.shape)} "
        f"with box {list(layout.box)} (cuTensorMapEncodeTiled)",
    )
    return TensorMap(handle, layout, address, owner)


def _check_fits(
    array: DeviceArray, dtype: np.dtype, shape: Sequence[int], strides: Sequence[int] | None
) -> None:
    """LaunchError when a view's dtype, shape and strides reach beyond the array."""
    if dtype.itemsize != array.dtype.itemsize:
        raise LaunchError(
            f"encode_tensor_map: dtype {dtype_name(dtype)} does not match the array's "
            f"{dtype_name(array.dtype)}"
        )
    if strides is None:
        strides = _compact(tuple(int(extent) for extent in shape), dtype.itemsize)
    span = sum(
        (int(extent) - 1) * int(stride) for extent, stride in zip(shape, strides, strict=False)
    )
    array_span = sum(
        (extent - 1) * stride for extent, stride in zip(array.shape, array.strides, strict=True)
    )
    if span > array_span:
        raise LaunchError(
            f"encode_tensor_map: shape {list(shape)} with byte strides {list(strides)} reaches "
            f"{span + dtype.itemsize} bytes, beyond the array's {array_span + dtype.itemsize}"
        )
