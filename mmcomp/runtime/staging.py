"""Padded staging copies of the operands whose rows TMA cannot address.

TMA's global strides are multiples of 16 bytes. A mainloop operand whose rows are not
(bf16 A[M, K] with K = 100 or 1001, B[K, N] with N odd) is read through a staging copy
whose rows are padded to the next multiple of 16 bytes: the lowering records the padded
row pitch (`TmaOperand.pitch`, in elements) and the view's strides in the copy. A bound
launch allocates each copy once, and every launch first refills it from the operand with
one `cuMemcpy2DAsync` on the launch stream (stream-ordered, so a CUDA graph captures it
with the kernel). The tensor map's extents are the operand's true ones, so TMA zero-fills
everything past them and never reads the padding, which is left as allocated.

    maps, staging = encode_operand_maps(plan.tensor_maps, arrays)
    staging.copy_in(stream)  # before each launch (nothing to do when nothing is staged)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mmcomp.errors import LaunchError
from mmcomp.runtime.arrays import DeviceArray, DeviceBuffer, as_device_array
from mmcomp.runtime.driver import check, driver_api
from mmcomp.runtime.tensormap import TensorMap, encode_tensor_map


class OperandMap(Protocol):
    """What a tensor map of the launch plan says (`TmaOperand` of the lowering)."""

    @property
    def arg(self) -> int:
        """The kernel argument the map reads."""
        ...

    @property
    def shape(self) -> tuple[int, ...]:
        """Global extents of the view, outermost first."""
        ...

    @property
    def byte_strides(self) -> tuple[int, ...]:
        """Byte strides of the view in the array the map reads."""
        ...

    @property
    def box(self) -> tuple[int, ...]:
        """The TMA box."""
        ...

    @property
    def swizzle(self) -> int:
        """Swizzle span in bytes."""
        ...

    @property
    def pitch(self) -> int:
        """Elements per row of the staging copy; 0 when the map reads the argument."""
        ...

    @property
    def rows(self) -> int:
        """Rows of the argument in the staging copy."""
        ...


@dataclass
class StagedCopy:
    """One operand and its padded copy."""

    arg: int
    """The kernel argument."""
    source: DeviceArray
    """The operand as the caller passed it (C-contiguous)."""
    buffer: DeviceBuffer
    """The padded copy the tensor map reads: `rows` rows of `pitch_bytes`."""
    row_bytes: int
    """Bytes of one row of the operand."""
    pitch_bytes: int
    """Bytes of one row of the copy (a multiple of 16)."""
    rows: int
    """Rows copied."""

    def copy(self, stream: Any = None) -> None:
        """Refill the copy from the operand, on `stream` (asynchronous)."""
        from mmcomp.runtime.stream import stream_handle

        driver = driver_api()
        device = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
        request = driver.CUDA_MEMCPY2D()
        request.srcMemoryType = device
        request.srcDevice = self.source.ptr
        request.srcPitch = self.row_bytes
        request.dstMemoryType = device
        request.dstDevice = self.buffer.ptr
        request.dstPitch = self.pitch_bytes
        request.WidthInBytes = self.row_bytes
        request.Height = self.rows
        check(
            driver.cuMemcpy2DAsync(request, stream_handle(stream)),
            f"staging argument #{self.arg} ({self.rows} rows of {self.row_bytes} bytes into "
            f"rows of {self.pitch_bytes}) (cuMemcpy2DAsync)",
        )


class Staging:
    """The staging copies of one bound launch."""

    def __init__(self, copies: Sequence[StagedCopy] = ()):
        self.copies = list(copies)
        """One per staged operand."""

    def copy_in(self, stream: Any = None) -> None:
        """Refill every copy from its operand, on the launch stream, before the kernel."""
        for staged in self.copies:
            staged.copy(stream)


def stage(operand: OperandMap, array: Any) -> StagedCopy:
    """A fresh padded copy for `operand`, read from `array` (checked C-contiguous)."""
    view = as_device_array(array, f"argument #{operand.arg}")
    if view is None:
        raise LaunchError(
            f"argument #{operand.arg}: expected a device array to stage, found "
            f"{type(array).__name__}"
        )
    if not view.is_c_contiguous:
        raise LaunchError(
            f"argument #{operand.arg}: its rows of {view.shape[-1] if view.shape else 1} "
            "elements are read through a padded staging copy, which needs a C-contiguous "
            f"array; found byte strides {list(view.strides)}"
        )
    itemsize = view.dtype.itemsize
    inner = operand.shape[-1]
    buffer = DeviceBuffer((operand.rows, operand.pitch), view.dtype)
    return StagedCopy(
        operand.arg, view, buffer, inner * itemsize, operand.pitch * itemsize, operand.rows
    )


def encode_operand_maps(
    operands: Sequence[OperandMap], arrays: Sequence[Any]
) -> tuple[list[TensorMap], Staging]:
    """The launch plan's tensor maps over the kernel's arrays (inputs, outputs, workspaces
    in argument order), staged operands through their padded copies; and the copies."""
    maps: list[TensorMap] = []
    copies: dict[int, StagedCopy] = {}
    for operand in operands:
        target = arrays[operand.arg]
        if operand.pitch:
            if operand.arg not in copies:
                copies[operand.arg] = stage(operand, target)
            target = copies[operand.arg].buffer
        maps.append(
            encode_tensor_map(
                target,
                shape=operand.shape,
                strides=operand.byte_strides,
                box=operand.box,
                swizzle=operand.swizzle,
            )
        )
    return maps, Staging(list(copies.values()))
