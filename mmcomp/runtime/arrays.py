"""Kernel array arguments: device buffers, zero-copy device views, and checks before launch.

A kernel's array arguments are described by `ArraySpec` (name, dtype, shape, role, layout).
`bind_arrays(specs, values)` turns the caller's values into `DeviceArray`s:

- numpy arrays (ml_dtypes.bfloat16 for bf16) are copied to a fresh `DeviceBuffer` and,
  for outputs, copied back by `BoundArrays.finish()`;
- device arrays (torch, cupy, a `DeviceBuffer`, anything with `__cuda_array_interface__`
  or a CUDA `__dlpack__`) are used in place, with no copy;
- with `require_device=True` a host array is an error.

Every value is checked against its spec first (dtype, shape, contiguity of the innermost
dimension, 16-byte alignment of the base and of the other strides, as TMA requires) and a
mismatch raises `LaunchError` naming the argument, the expected and the found value.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from mmcomp.arch.limits import TMA_GLOBAL_ALIGNMENT
from mmcomp.errors import LaunchError
from mmcomp.frontend.argcheck import check_shape_and_dtype
from mmcomp.ir import dtypes
from mmcomp.ir.narrowing import is_ndarray
from mmcomp.runtime.device import ensure_context
from mmcomp.runtime.driver import check, driver_api

BFLOAT16 = dtypes.BF16.numpy_dtype
"""The host dtype of bf16 (ml_dtypes)."""

TMA_ALIGNMENT = TMA_GLOBAL_ALIGNMENT
"""TMA needs the global base address and every stride but the innermost to be multiples of 16."""

Role = Literal["input", "output", "inout"]
"""How the kernel uses an array: read, written, or both (decides host copies)."""

Layout = Literal["tma", "contiguous"]
"""'tma': innermost stride = element size, other strides and base 16-byte aligned;
'contiguous': C-contiguous (row-major, compact), base aligned to the element."""


def dtype_name(dtype: np.dtype) -> str:
    """A short name for messages: bfloat16, float16, float32, int32, ..."""
    return "bfloat16" if dtype == BFLOAT16 else dtype.name


def as_dtype(dtype: Any) -> np.dtype:
    """A numpy dtype from a dtype, a type, or a name ('bf16', 'bfloat16', 'f16', 'float32')."""
    known = dtypes.by_name(dtype) if isinstance(dtype, str) else None
    if known is not None:
        return known.numpy_dtype
    try:
        return np.dtype(dtype)
    except TypeError as error:
        raise LaunchError(f"unknown dtype {dtype!r}") from error


class DeviceArray:
    """A strided array in device memory that mmcomp does not own (or a base for one it does)."""

    def __init__(
        self,
        ptr: int,
        shape: Sequence[int],
        dtype: Any,
        strides: Sequence[int] | None = None,
        owner: Any = None,
    ):
        """A view of `ptr` with `shape`, `dtype` and byte `strides` (compact when None)."""
        self.ptr = int(ptr)
        """The device address of element [0, ..., 0]."""
        self.shape = tuple(int(extent) for extent in shape)
        """The extents, outermost first (numpy order)."""
        self.dtype = as_dtype(dtype)
        """The element type."""
        self.strides = (
            compact_strides(self.shape, self.dtype.itemsize)
            if strides is None
            else tuple(int(stride) for stride in strides)
        )
        """Byte strides, outermost first (numpy convention)."""
        self.owner = owner
        """Whatever keeps the memory alive (a torch tensor, a DLPack capsule, ...)."""

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes spanned when compact."""
        return self.size * self.dtype.itemsize

    @property
    def is_c_contiguous(self) -> bool:
        """True when the layout is row-major and compact (size-1 axes ignored)."""
        expected = compact_strides(self.shape, self.dtype.itemsize)
        return all(
            extent == 1 or stride == want
            for extent, stride, want in zip(self.shape, self.strides, expected, strict=True)
        )

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """Version 3 of the CUDA array interface, so torch/cupy can wrap this memory."""
        typestr = self.dtype.str
        return {
            "shape": self.shape,
            "typestr": typestr,
            "data": (self.ptr, False),
            "strides": None if self.is_c_contiguous else self.strides,
            "version": 3,
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(ptr=0x{self.ptr:x}, shape={self.shape}, "
            f"dtype={dtype_name(self.dtype)}, strides={self.strides})"
        )


def compact_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """Row-major compact byte strides of `shape`."""
    strides: list[int] = []
    step = itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


class DeviceBuffer(DeviceArray):
    """A compact array in device memory owned by mmcomp (cuMemAlloc / cuMemFree)."""

    def __init__(self, shape: Sequence[int], dtype: Any):
        """Allocate an uninitialized compact array of `shape` and `dtype` on the GPU."""
        ensure_context()
        dtype = as_dtype(dtype)
        nbytes = max(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize, 1)
        pointer = check(
            driver_api().cuMemAlloc(nbytes), f"allocating {nbytes} bytes of device memory"
        )
        super().__init__(int(pointer), shape, dtype)
        self._allocation: Any = pointer

    @classmethod
    def empty(cls, shape: Sequence[int], dtype: Any) -> DeviceBuffer:
        """An uninitialized buffer."""
        return cls(shape, dtype)

    @classmethod
    def from_host(cls, array: np.ndarray, stream: Any = None) -> DeviceBuffer:
        """A buffer holding a copy of the host array `array` (any layout)."""
        buffer = cls(array.shape, array.dtype)
        buffer.copy_from_host(array, stream)
        return buffer

    def copy_from_host(self, array: np.ndarray, stream: Any = None) -> None:
        """Copy the host `array` (same shape and dtype) into this buffer."""
        self._check_host(array, "copy_from_host")
        source = np.ascontiguousarray(array)
        if source.nbytes == 0:
            return
        driver = driver_api()
        if stream is None:
            check(
                driver.cuMemcpyHtoD(self.ptr, source.ctypes.data, source.nbytes),
                f"copying {source.nbytes} bytes to the device",
            )
            return
        from mmcomp.runtime.stream import stream_handle

        check(
            driver.cuMemcpyHtoDAsync(
                self.ptr, source.ctypes.data, source.nbytes, stream_handle(stream)
            ),
            f"copying {source.nbytes} bytes to the device",
        )
        check(driver.cuStreamSynchronize(stream_handle(stream)), "waiting for a copy")

    def copy_to_host(self, out: np.ndarray | None = None, stream: Any = None) -> np.ndarray:
        """Copy the buffer into `out` (or a new host array) and return it."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        self._check_host(out, "copy_to_host")
        target = out if out.flags.c_contiguous else np.empty(self.shape, self.dtype)
        if target.nbytes:
            driver = driver_api()
            if stream is None:
                check(
                    driver.cuMemcpyDtoH(target.ctypes.data, self.ptr, target.nbytes),
                    f"copying {target.nbytes} bytes from the device",
                )
            else:
                from mmcomp.runtime.stream import stream_handle

                handle = stream_handle(stream)
                check(
                    driver.cuMemcpyDtoHAsync(target.ctypes.data, self.ptr, target.nbytes, handle),
                    f"copying {target.nbytes} bytes from the device",
                )
                check(driver.cuStreamSynchronize(handle), "waiting for a copy")
        if target is not out:
            np.copyto(out, target)
        return out

    def to_host(self) -> np.ndarray:
        """A new host array holding the buffer's contents."""
        return self.copy_to_host()

    def fill_bytes(self, value: int) -> None:
        """Set every byte to `value` (e.g. 0xFF to poison an output with NaNs)."""
        if self.nbytes == 0:
            return
        check(
            driver_api().cuMemsetD8(self.ptr, value & 0xFF, self.nbytes),
            f"filling {self.nbytes} bytes of device memory",
        )

    def free(self) -> None:
        """Release the memory now (also done when the buffer is garbage-collected)."""
        allocation, self._allocation = self._allocation, None
        if allocation is None:
            return
        check(driver_api().cuMemFree(allocation), "freeing device memory")

    def __del__(self):
        allocation = getattr(self, "_allocation", None)
        if allocation is None:
            return
        self._allocation = None
        with contextlib.suppress(Exception):  # at shutdown the context frees it
            driver_api().cuMemFree(allocation)

    def _check_host(self, array: Any, what: str) -> None:
        """LaunchError unless `array` is a host array of this buffer's shape and dtype."""
        if not is_ndarray(array):
            raise LaunchError(f"{what}: expected a numpy array, found {type(array).__name__}")
        if array.shape != self.shape or array.dtype != self.dtype:
            raise LaunchError(
                f"{what}: expected {dtype_name(self.dtype)}{list(self.shape)}, "
                f"found {dtype_name(array.dtype)}{list(array.shape)}"
            )


# DLPack (the unversioned DLManagedTensor of the protocol) read with ctypes.
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13
_DLPACK_DTYPES = {
    (0, 8): np.dtype(np.int8),
    (0, 16): np.dtype(np.int16),
    (0, 32): np.dtype(np.int32),
    (0, 64): np.dtype(np.int64),
    (1, 8): np.dtype(np.uint8),
    (1, 16): np.dtype(np.uint16),
    (1, 32): np.dtype(np.uint32),
    (1, 64): np.dtype(np.uint64),
    (2, 16): np.dtype(np.float16),
    (2, 32): np.dtype(np.float32),
    (2, 64): np.dtype(np.float64),
    (4, 16): BFLOAT16,
}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


def _capsule_pointer(capsule: Any) -> int:
    """The DLManagedTensor address inside a 'dltensor' PyCapsule."""
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(capsule, b"dltensor")
    if not address:
        raise LaunchError("__dlpack__ returned a capsule that is not an unconsumed 'dltensor'")
    return int(address)


def _from_dlpack(value: Any, name: str) -> DeviceArray | None:
    """A zero-copy view of a CUDA DLPack tensor, None for a host one."""
    device_type, device_id = value.__dlpack_device__()
    if int(device_type) in (_KDL_CPU, _KDL_CUDA_HOST):
        return None
    if int(device_type) not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise LaunchError(
            f"argument {name!r}: expected a CUDA array, found a DLPack tensor on device type "
            f"{int(device_type)}"
        )
    if int(device_id) != ensure_context().info.ordinal:
        raise LaunchError(
            f"argument {name!r}: expected an array on CUDA device "
            f"{ensure_context().info.ordinal}, found device {int(device_id)}"
        )
    capsule = value.__dlpack__()
    managed = _DLManagedTensor.from_address(_capsule_pointer(capsule))
    tensor = managed.dl_tensor
    key = (int(tensor.dtype.code), int(tensor.dtype.bits))
    dtype = _DLPACK_DTYPES.get(key)
    if dtype is None or tensor.dtype.lanes != 1:
        raise LaunchError(
            f"argument {name!r}: unsupported DLPack dtype (code {key[0]}, bits {key[1]}, "
            f"lanes {tensor.dtype.lanes})"
        )
    shape = tuple(int(tensor.shape[axis]) for axis in range(tensor.ndim))
    strides = (
        None
        if not tensor.strides
        else tuple(int(tensor.strides[axis]) * dtype.itemsize for axis in range(tensor.ndim))
    )
    pointer = int(tensor.data or 0) + int(tensor.byte_offset)
    # The capsule owns the tensor's reference; it calls the deleter when collected.
    return DeviceArray(pointer, shape, dtype, strides, owner=(capsule, value))


def _from_cuda_array_interface(value: Any, interface: Mapping[str, Any], name: str) -> DeviceArray:
    """A zero-copy view of an object exposing `__cuda_array_interface__`."""
    typestr = str(interface.get("typestr", ""))
    try:
        dtype = np.dtype(typestr)
    except TypeError as error:
        raise LaunchError(
            f"argument {name!r}: unsupported __cuda_array_interface__ typestr {typestr!r}"
        ) from error
    if dtype.kind == "V" and dtype.itemsize == 2:
        dtype = BFLOAT16  # bfloat16 has no typestr of its own; ml_dtypes spells it '<V2'
    shape = tuple(int(extent) for extent in interface["shape"])
    raw_strides = interface.get("strides")
    strides = None if raw_strides is None else tuple(int(stride) for stride in raw_strides)
    pointer = int(interface["data"][0] or 0)
    return DeviceArray(pointer, shape, dtype, strides, owner=value)


def as_device_array(value: Any, name: str = "array") -> DeviceArray | None:
    """A zero-copy DeviceArray view of a device array, or None when `value` is a host array."""
    if isinstance(value, DeviceArray):
        return value
    if isinstance(value, np.ndarray):
        return None
    if type(value).__module__.split(".", 1)[0] == "torch" and hasattr(value, "data_ptr"):
        # Read directly: DLPack refuses tensors that require grad, CAI has no bfloat16.
        return importlib.import_module("mmcomp.torch").ARRAYS.device_view(value, name)
    try:
        interface = value.__cuda_array_interface__
    except AttributeError:
        interface = None
    except (TypeError, RuntimeError):  # e.g. torch bf16: no typestr; DLPack has one
        interface = None
    if interface is not None:
        return _from_cuda_array_interface(value, interface, name)
    if hasattr(value, "__dlpack_device__") and hasattr(value, "__dlpack__"):
        return _from_dlpack(value, name)
    return None


@dataclass(frozen=True)
class ArraySpec:
    """What a kernel expects of one array argument."""

    name: str
    """The argument's name, used in every error message."""
    dtype: Any
    """The element type (a numpy dtype; ml_dtypes.bfloat16 for bf16)."""
    shape: tuple[int, ...]
    """The extents, outermost first."""
    role: Role = "input"
    """Read, written, or both; decides the host copies."""
    layout: Layout = "tma"
    """The layout the kernel can address (see `Layout`)."""

    @property
    def np_dtype(self) -> np.dtype:
        """The dtype as a numpy dtype."""
        return as_dtype(self.dtype)

    def describe(self) -> str:
        """E.g. 'bfloat16[1024, 512]'."""
        return f"{dtype_name(self.np_dtype)}{list(self.shape)}"


def check_dtype_and_shape(
    spec: ArraySpec, dtype: np.dtype, shape: tuple[int, ...], where: str | None = None
) -> None:
    """LaunchError naming the argument (after `where`, if given) when dtype or shape differ
    from the spec (mmcomp.frontend.argcheck)."""
    label = f"argument {spec.name!r}" if where is None else f"{where}: argument {spec.name!r}"
    check_shape_and_dtype(
        label, shape, dtype, spec.shape, spec.np_dtype, dtype_first=True, show_dtype=dtype_name
    )


def check_layout(spec: ArraySpec, ptr: int, strides: tuple[int, ...], source: str) -> None:
    """LaunchError naming the argument when base or strides do not fit `spec.layout`."""
    itemsize = spec.np_dtype.itemsize
    shape = tuple(spec.shape)
    if spec.layout == "contiguous":
        expected = compact_strides(shape, itemsize)
        for axis, (extent, stride, want) in enumerate(zip(shape, strides, expected, strict=True)):
            if extent != 1 and stride != want:
                raise LaunchError(
                    f"argument {spec.name!r}: expected a C-contiguous array, found {source} "
                    f"byte stride {stride} on axis {axis} (expected {want})"
                )
        if ptr % itemsize:
            raise LaunchError(
                f"argument {spec.name!r}: base address 0x{ptr:x} is not aligned to its "
                f"{itemsize}-byte elements"
            )
        return
    if shape and shape[-1] != 1 and strides[-1] != itemsize:
        raise LaunchError(
            f"argument {spec.name!r}: expected the innermost axis to be contiguous (byte "
            f"stride {itemsize}), found {source} byte stride {strides[-1]}"
        )
    for axis, (extent, stride) in enumerate(zip(shape[:-1], strides[:-1], strict=True)):
        if extent != 1 and stride % TMA_ALIGNMENT:
            elements = TMA_ALIGNMENT // itemsize if itemsize < TMA_ALIGNMENT else 1
            raise LaunchError(
                f"argument {spec.name!r}: {source} byte stride {stride} on axis {axis} is not "
                f"a multiple of {TMA_ALIGNMENT} (TMA needs 16-byte aligned strides; pad the "
                f"inner extent to a multiple of {elements} {dtype_name(spec.np_dtype)} elements)"
            )
    if ptr % TMA_ALIGNMENT:
        raise LaunchError(
            f"argument {spec.name!r}: base address 0x{ptr:x} is not 16-byte aligned "
            "(TMA needs a 16-byte aligned global address)"
        )


def check_device_array(spec: ArraySpec, array: DeviceArray) -> None:
    """Check a device array against its spec: dtype, shape, layout and alignment."""
    check_dtype_and_shape(spec, array.dtype, array.shape)
    check_layout(spec, array.ptr, array.strides, "device array")


def check_host_array(spec: ArraySpec, array: np.ndarray) -> None:
    """Check a host array against its spec (the device copy is compact, so its strides)."""
    check_dtype_and_shape(spec, array.dtype, array.shape)
    if spec.role != "input" and not array.flags.writeable:
        raise LaunchError(f"argument {spec.name!r}: is an output, found a read-only host array")
    compact = compact_strides(array.shape, array.dtype.itemsize)
    check_layout(spec, 0, compact, "the device copy's")


@dataclass
class BoundArrays:
    """The device arrays of one launch, and the host copies to make after it."""

    arrays: list[DeviceArray]
    """The device array of each spec, in order."""
    _copy_back: list[tuple[DeviceBuffer, np.ndarray]]
    _temporaries: list[DeviceBuffer]

    def finish(self, stream: Any = None) -> None:
        """Copy the outputs that came from host arrays back, and free the temporaries."""
        for buffer, host in self._copy_back:
            buffer.copy_to_host(host, stream)
        for buffer in self._temporaries:
            buffer.free()
        self._copy_back.clear()
        self._temporaries.clear()


def bind_arrays(
    specs: Sequence[ArraySpec],
    values: Sequence[Any] | Mapping[str, Any],
    *,
    require_device: bool = False,
    stream: Any = None,
) -> BoundArrays:
    """Check `values` against `specs` and give each a device array (copying host arrays)."""
    if isinstance(values, Mapping):
        missing = [spec.name for spec in specs if spec.name not in values]
        unknown = sorted(set(values) - {spec.name for spec in specs})
        if missing or unknown:
            raise LaunchError(
                f"expected arguments {[spec.name for spec in specs]}, "
                f"missing {missing}, unexpected {unknown}"
            )
        ordered = [values[spec.name] for spec in specs]
    else:
        ordered = list(values)
        if len(ordered) != len(specs):
            raise LaunchError(
                f"expected {len(specs)} array arguments "
                f"({', '.join(spec.name for spec in specs)}), found {len(ordered)}"
            )
    device_views: list[DeviceArray | None] = []
    for spec, value in zip(specs, ordered, strict=True):
        view = as_device_array(value, spec.name)
        if view is not None:
            check_device_array(spec, view)
        elif require_device:
            raise LaunchError(
                f"argument {spec.name!r}: expected a device array (torch/cupy CUDA tensor or "
                f"DeviceBuffer), found host {type(value).__name__} {_describe(value)}"
            )
        elif is_ndarray(value):
            check_host_array(spec, value)
        else:
            raise LaunchError(
                f"argument {spec.name!r}: expected a numpy array or a CUDA device array "
                f"{spec.describe()}, found {type(value).__name__}"
            )
        device_views.append(view)
    arrays: list[DeviceArray] = []
    copy_back: list[tuple[DeviceBuffer, np.ndarray]] = []
    temporaries: list[DeviceBuffer] = []
    for spec, value, view in zip(specs, ordered, device_views, strict=True):
        if view is not None:
            arrays.append(view)
            continue
        buffer = DeviceBuffer(spec.shape, spec.np_dtype)
        if spec.role != "output":
            buffer.copy_from_host(value, stream)
        if spec.role != "input":
            copy_back.append((buffer, value))
        temporaries.append(buffer)
        arrays.append(buffer)
    return BoundArrays(arrays, copy_back, temporaries)


def _describe(value: Any) -> str:
    """dtype and shape of an array-like, for messages."""
    dtype = getattr(value, "dtype", None)
    shape = getattr(value, "shape", None)
    if dtype is None or shape is None:
        return ""
    name = dtype_name(cast("np.dtype[Any]", dtype)) if isinstance(dtype, np.dtype) else str(dtype)
    return f"{name}{list(shape)}"
