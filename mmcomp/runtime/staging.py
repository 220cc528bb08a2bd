"""Padded staging copies of the operands whose rows TMA cannot address.

TMA's global strides are multiples of 16 bytes. A mainloop operand whose rows are not
(bf16 A[M, K] with K = 100 or 1001, B[K, N] with N odd, fp8 A[M, K] with K = 1000) is
read through a staging copy
whose rows are padded to the next multiple of 16 bytes: the lowering records the padded
row pitch (`TmaOperand.pitch`, in elements) and the view's strides in the copy. A bound
launch first refills the copy from the operand on the launch stream (stream-ordered, so a
CUDA graph captures it with the kernel): by `cuMemcpy2DAsync`, or, where the driver refuses
the pitches, by the staging kernel `STAGE_ROWS`. Copies are pooled per stream and shape:
launches on one stream run in order, so every binding of every kernel shares them there,
and a binding launched on another stream points its maps at that stream's copy
(cuTensorMapReplaceAddress, on the host). The tensor map's extents are the operand's true
ones, so TMA zero-fills everything past them and never reads the padding.

Why both: the driver documents that an intra-device 2-D copy may fail for pitches that
cuMemAllocPitch did not compute, and an operand's rows of an odd number of 16-bit elements
are 2-byte aligned; on the H200 (driver 580) it took rows of 8190 bytes into rows of 8192
and ran at 1.4 TB/s, the staging kernel (16-bit loads of the source rows, 32-bit stores of
the zero-padded copy) at 0.8 TB/s (tools/staging_cost.py,
docs/results/2026-12-01-h200-staging-cost.md).

    maps, staging = encode_operand_maps(plan.tensor_maps, arrays)
    staging.copy_in(stream)  # before each launch (nothing to do when nothing is staged)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from mmcomp.errors import LaunchError
from mmcomp.runtime.arrays import DeviceArray, DeviceBuffer, as_device_array, as_dtype
from mmcomp.runtime.driver import check, driver_api
from mmcomp.runtime.stream import relaxed_capture
from mmcomp.runtime.tensormap import TensorMap, encode_tensor_map

TMA_STRIDE_BYTES = 16
"""TMA's global strides and base address are multiples of this many bytes."""


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
    def axes(self) -> tuple[int, ...]:
        """The argument's axis behind each view axis (-1: one it lacks); () for all."""
        ...

    @property
    def rows(self) -> int:
        """Rows of the argument in the staging copy."""
        ...


STAGE_ROWS_ENTRY = "mmcomp_stage_rows"
"""The staging kernel's name."""

STAGE_THREADS = 256
"""Threads per CTA of the staging kernel: each writes one 32-bit word of a padded row."""

MAX_GRID_Y = 65535
"""Rows of the copy walked at once (gridDim.y); the kernel strides over the rest."""

STAGE_ROWS = f"""//
// Copy rows of 16-bit elements into rows of a larger even pitch, zero-padded.
// Thread (x, y) writes word w = ctaid.x * ntid.x + tid.x (elements 2w, 2w + 1) of the
// rows y, y + nctaid.y, ...; elements at or past `width` are written as zero.
.version 8.0
.target sm_90a
.address_size 64

.visible .entry {STAGE_ROWS_ENTRY}(
    .param .u64 src, .param .u64 dst, .param .u32 rows, .param .u32 width, .param .u32 pitch)
.maxntid {STAGE_THREADS}, 1, 1
{{
    .reg .pred %p<5>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u32 %r1, [rows];
    ld.param.u32 %r2, [width];
    ld.param.u32 %r3, [pitch];
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %ntid.x;
    mov.u32 %r6, %tid.x;
    mad.lo.u32 %r7, %r4, %r5, %r6;
    shl.b32 %r8, %r7, 1;
    setp.ge.u32 %p1, %r8, %r3;
    @%p1 bra DONE;
    add.u32 %r9, %r8, 1;
    setp.lt.u32 %p2, %r8, %r2;
    setp.lt.u32 %p3, %r9, %r2;
    cvt.u64.u32 %rd3, %r8;
    mov.u32 %r10, %ctaid.y;
    mov.u32 %r11, %nctaid.y;
ROW:
    setp.ge.u32 %p4, %r10, %r1;
    @%p4 bra DONE;
    mul.wide.u32 %rd4, %r10, %r2;
    add.u64 %rd5, %rd4, %rd3;
    shl.b64 %rd5, %rd5, 1;
    add.u64 %rd6, %rd1, %rd5;
    mov.u32 %r12, 0;
    mov.u32 %r13, 0;
    @%p2 ld.global.nc.u16 %r12, [%rd6];
    @%p3 ld.global.nc.u16 %r13, [%rd6+2];
    shl.b32 %r13, %r13, 16;
    or.b32 %r14, %r12, %r13;
    mul.wide.u32 %rd7, %r10, %r3;
    add.u64 %rd8, %rd7, %rd3;
    shl.b64 %rd8, %rd8, 1;
    add.u64 %rd9, %rd2, %rd8;
    st.global.b32 [%rd9], %r14;
    add.u32 %r10, %r10, %r11;
    bra ROW;
DONE:
    ret;
}}
"""
"""The staging kernel (PTX): rows of `width` 16-bit elements into rows of `pitch`."""


@functools.cache
def stage_rows_function() -> Any:
    """The loaded staging kernel (mmcomp.runtime.Function), loaded once."""
    from mmcomp.runtime.module import load_module

    return load_module(STAGE_ROWS).function(STAGE_ROWS_ENTRY)


class StagedCopy:
    """One staged operand: its source, the tensor maps that read its copy, and the copy
    and staging launch of each stream it has been launched on."""

    def __init__(self, arg: int, slot: int, source: DeviceArray, width: int, pitch: int, rows: int):
        self.arg = arg
        """The kernel argument."""
        self.slot = slot
        """Its place among the staged operands of its launch (copies of one shape on one
        stream are shared between launches, never between the operands of one launch)."""
        self.source = source
        """The operand as the caller passed it (C-contiguous)."""
        self.rows = rows
        """Rows copied."""
        element = source.dtype.itemsize
        self.row_bytes = width * element
        """Bytes of one row of the operand (even: the staging kernel moves 16-bit words)."""
        self.pitch_bytes = pitch * element
        """Bytes of one row of the copy (a multiple of 16)."""
        self.maps: list[TensorMap] = []
        """The tensor maps reading the copy (pointed at the current stream's copy)."""
        self._width = width
        self._pitch = pitch
        self._function: Any = None
        self._launches: dict[int, tuple[DeviceBuffer, Any, Any, Any]] = {}
        self.by_copy_engine = True
        """Refill by cuMemcpy2DAsync until the driver refuses these pitches, then by the
        staging kernel."""
        self.buffer = self.prepare(0)[0]
        """The copy the maps read now."""

    def prepare(self, stream: int) -> tuple[DeviceBuffer, Any, Any, Any]:
        """(copy, 2-D copy request, packed kernel arguments, kernel launch configuration)
        of the refill on the stream of handle `stream`, made on first use."""
        from mmcomp.runtime.launch import KernelArguments, cluster_launch_config

        found = self._launches.get(stream)
        if found is not None:
            return found
        buffer = pooled_copy((stream, self.slot, self.rows, self._pitch, str(self.source.dtype)))
        driver = driver_api()
        device = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
        request = driver.CUDA_MEMCPY2D()
        request.srcMemoryType = device
        request.srcDevice = self.source.ptr
        request.srcPitch = self.row_bytes
        request.dstMemoryType = device
        request.dstDevice = buffer.ptr
        request.dstPitch = self.pitch_bytes
        request.WidthInBytes = self.row_bytes
        request.Height = self.rows
        if self._function is None:
            self._function = stage_rows_function()
        words = self.pitch_bytes // 2
        arguments = KernelArguments(
            [self.source, buffer, np.uint32(self.rows), np.uint32(self.row_bytes // 2)]
            + [np.uint32(words)]
        )
        grid = (-(-words // STAGE_THREADS), min(max(self.rows, 1), MAX_GRID_Y))
        config = cluster_launch_config(self._function, grid, STAGE_THREADS, 1, 0)
        found = (buffer, request, arguments, config)
        self._launches[stream] = found
        return found

    def copy(self, stream: Any = None) -> None:
        """Refill the copy of `stream` from the operand, on `stream` (asynchronous), and
        point the maps at it."""
        from mmcomp.runtime.stream import stream_handle

        handle = stream_handle(stream)
        buffer, request, arguments, config = self.prepare(int(handle))
        driver = driver_api()
        if buffer is not self.buffer:
            for tensor_map in self.maps:
                check(
                    driver.cuTensorMapReplaceAddress(tensor_map.handle, buffer.ptr),
                    f"pointing a tensor map of argument #{self.arg} at its staging copy",
                )
                tensor_map.address = buffer.ptr
            self.buffer = buffer
        if self.by_copy_engine:
            (result,) = driver.cuMemcpy2DAsync(request, handle)
            if result == driver.CUresult.CUDA_SUCCESS:
                return
            # Refused at once (these pitches): the staging kernel from now on.
            self.by_copy_engine = False
        config.hStream = handle
        check(
            driver.cuLaunchKernelEx(
                config, self._function.handle, arguments.pointers.ctypes.data, 0
            ),
            f"staging argument #{self.arg} ({self.rows} rows of {self.row_bytes} bytes into "
            f"rows of {self.pitch_bytes})",
        )


_POOL: dict[tuple[int, int, int, int, str], DeviceBuffer] = {}
"""Staging copies by (stream handle, slot, rows, pitch, dtype): launches on one stream run
in order, so the bindings of every kernel on that stream can share the copy of a slot."""

_POOL_LOCK = threading.Lock()


def pooled_copy(key: tuple[int, int, int, int, str]) -> DeviceBuffer:
    """The staging copy of key (stream handle, slot, rows, pitch, dtype): `rows` x `pitch`
    elements, allocated on first use (outside any stream capture)."""
    with _POOL_LOCK:
        found = _POOL.get(key)
        if found is None:
            _, _, rows, pitch, dtype = key
            with relaxed_capture():
                found = DeviceBuffer((rows, pitch), as_dtype(dtype))
            _POOL[key] = found
    return found


class Staging:
    """The staging copies of one bound launch."""

    def __init__(self, copies: Sequence[StagedCopy] = ()):
        self.copies = list(copies)
        """One per staged operand."""

    def copy_in(self, stream: Any = None) -> None:
        """Refill every copy from its operand, on the launch stream, before the kernel."""
        for staged in self.copies:
            staged.copy(stream)


def stage(operand: OperandMap, array: Any, slot: int) -> StagedCopy:
    """The staged copy for `operand`, read from `array` (checked C-contiguous, 16-bit), the
    `slot`-th of its launch."""
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
    if itemsize not in (1, 2) or (operand.shape[-1] * itemsize) % 2:
        raise LaunchError(
            f"argument #{operand.arg}: staging copies rows of 16-bit words, found rows of "
            f"{operand.shape[-1]} {itemsize}-byte elements"
        )
    if operand.rows >= 1 << 32 or operand.pitch >= 1 << 32:
        raise LaunchError(
            f"argument #{operand.arg}: {operand.rows} rows of {operand.pitch} elements are "
            "past what the staging kernel indexes (2^32 each)"
        )
    return StagedCopy(operand.arg, slot, view, operand.shape[-1], operand.pitch, operand.rows)


def array_strides(operand: OperandMap, array: Any) -> tuple[int, ...]:
    """The byte strides of the map's view in the caller's array, which may be a strided
    view (its own stride on each axis the view keeps); an axis of extent 1 keeps the
    plan's stride, which no in-bounds coordinate multiplies."""
    view = as_device_array(array, f"argument #{operand.arg}")
    if view is None:
        raise LaunchError(
            f"argument #{operand.arg}: expected a device array, found {type(array).__name__}"
        )
    axes = operand.axes or tuple(range(len(view.strides)))
    return tuple(
        planned if extent == 1 or axis < 0 else int(view.strides[axis])
        for axis, extent, planned in zip(axes, operand.shape, operand.byte_strides, strict=True)
    )


def reads_in_place(operand: OperandMap, array: Any) -> bool:
    """The map can read `array` itself although the plan stages it: a view whose own rows
    are 16-byte multiples (an operand padded once by its owner and sliced to its extent)."""
    view = as_device_array(array, f"argument #{operand.arg}")
    if view is None or view.ptr % TMA_STRIDE_BYTES:
        return False
    axes = operand.axes or tuple(range(len(view.shape)))
    if len(axes) != len(operand.shape) or any(
        axis >= len(view.shape) or (axis >= 0 and view.shape[axis] != extent)
        for axis, extent in zip(axes, operand.shape, strict=True)
    ):
        return False  # not the kernel's shape: the bind checks say so
    strides = array_strides(operand, view)
    if operand.shape[-1] > 1 and strides[-1] != view.dtype.itemsize:
        return False
    return all(
        extent == 1 or stride % TMA_STRIDE_BYTES == 0
        for extent, stride in zip(operand.shape[:-1], strides[:-1], strict=True)
    )


_PLACEHOLDERS: dict[tuple[tuple[int, ...], str], DeviceBuffer] = {}
"""Stand-ins for empty operands, by (shape, dtype)."""


def placeholder(shape: Sequence[int], dtype: Any) -> DeviceBuffer:
    """A device array of `shape` for the tensor map of an empty operand: at a runtime
    contraction extent of 0 the kernel loads no block, but TMA takes no empty dimension and
    an empty array may have no address, so the map (whose extents are at least 1) is
    encoded over this one, allocated on first use (outside any stream capture)."""
    key = (tuple(int(extent) for extent in shape), as_dtype(dtype).str)
    with _POOL_LOCK:
        found = _PLACEHOLDERS.get(key)
        if found is None:
            with relaxed_capture():
                found = DeviceBuffer(key[0], as_dtype(dtype))
            _PLACEHOLDERS[key] = found
    return found


def encode_operand_maps(
    operands: Sequence[OperandMap], arrays: Sequence[Any]
) -> tuple[list[TensorMap], Staging]:
    """The launch plan's tensor maps over the kernel's arrays (inputs, outputs, workspaces
    in argument order), staged operands through their padded copies, an empty operand
    through a placeholder (`placeholder`); and the copies."""
    maps: list[TensorMap] = []
    copies: dict[int, StagedCopy] = {}
    for operand in operands:
        target = arrays[operand.arg]
        view = as_device_array(target, f"argument #{operand.arg}")
        if view is not None and view.nbytes == 0:
            # A staged operand's rows are not 16-byte multiples: its stand-in has the rows
            # of the padded copy. The map reads the stand-in with the plan's strides (the
            # copy's; an axis of extent 1 keeps the aligned stride the plan gives it, e.g.
            # the [1, T] view of a [T, 1] operand).
            padded = (*operand.shape[:-1], operand.pitch) if operand.pitch else operand.shape
            stand_in = placeholder(padded, view.dtype)
            maps.append(
                encode_tensor_map(
                    stand_in,
                    shape=operand.shape,
                    strides=operand.byte_strides,
                    box=operand.box,
                    swizzle=operand.swizzle,
                )
            )
            continue
        staged = None
        if operand.pitch and not reads_in_place(operand, target):
            if operand.arg not in copies:
                copies[operand.arg] = stage(operand, target, len(copies))
            staged = copies[operand.arg]
            target = staged.buffer
        tensor_map = encode_tensor_map(
            target,
            shape=operand.shape,
            strides=operand.byte_strides if staged is not None else array_strides(operand, target),
            box=operand.box,
            swizzle=operand.swizzle,
        )
        if staged is not None:
            staged.maps.append(tensor_map)
        maps.append(tensor_map)
    return maps, Staging(list(copies.values()))
