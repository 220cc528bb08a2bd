"""Kernel launch through cuLaunchKernelEx, with a cluster dimension, on a stream.

The kernel-parameter array holds one host pointer per argument, pointing at its bytes:

- a `TensorMap`: its 128 bytes (`CUtensorMap.getPtr()`), passed by value;
- a `DeviceArray` (or a torch/cupy tensor, anything `as_device_array` accepts): the 64-bit
  device address;
- a numpy scalar (`np.int32(5)`, `np.float32(0.5)`, `np.uint64(...)`): its bytes;
- a ctypes scalar (`ctypes.c_uint32(7)`): its bytes.

Plain Python ints and floats are refused: their PTX width would be a guess. When the kernel
reports its parameters (cuFuncGetParamInfo), count and sizes are checked before launching.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from mmcomp.arch.limits import MAX_CLUSTER_SIZE, MAX_THREADS_PER_BLOCK
from mmcomp.errors import LaunchError
from mmcomp.ir.narrowing import is_ctypes_scalar
from mmcomp.runtime.arrays import DeviceArray, as_device_array
from mmcomp.runtime.device import ensure_context
from mmcomp.runtime.driver import check, driver_api
from mmcomp.runtime.module import Function
from mmcomp.runtime.stream import stream_handle
from mmcomp.runtime.tensormap import TENSOR_MAP_BYTES, TensorMap

STATIC_SHARED_LIMIT = 48 * 1024
"""Dynamic shared memory above this needs the function's opt-in attribute."""


def _dim3(value: int | Sequence[int], what: str) -> tuple[int, int, int]:
    """A (x, y, z) triple of positive ints from an int or a sequence of 1 to 3 ints."""
    values = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(values) <= 3:
        raise LaunchError(f"launch: {what} must have 1 to 3 dimensions, found {values}")
    values += [1] * (3 - len(values))
    for entry in values:
        if isinstance(entry, bool) or not isinstance(entry, int | np.integer) or entry < 1:
            raise LaunchError(f"launch: {what} must be positive integers, found {values}")
    x, y, z = (int(entry) for entry in values)
    return x, y, z


class KernelArguments:
    """The packed parameter array of one launch, and the storage it points into."""

    def __init__(self, args: Sequence[Any]):
        """Pack `args` (see the module docstring for what each may be)."""
        self._storage: list[Any] = []
        self.sizes: list[int] = []
        """Bytes of each argument, as the kernel will read it."""
        addresses: list[int] = []
        for index, value in enumerate(args):
            address, size = self._pack(index, value)
            addresses.append(address)
            self.sizes.append(size)
        self.pointers = np.array(addresses, dtype=np.uint64)
        """One host address per argument (the `void**` kernelParams)."""

    def _pack(self, index: int, value: Any) -> tuple[int, int]:
        """(host address of the argument's bytes, their size)."""
        if isinstance(value, TensorMap):
            self._storage.append(value)
            return value.ptr, TENSOR_MAP_BYTES
        if isinstance(value, np.generic) and not isinstance(value, np.void):
            holder: np.ndarray[Any, Any] = np.array(cast("np.generic[Any]", value))
            self._storage.append(holder)
            return holder.ctypes.data, holder.itemsize
        if is_ctypes_scalar(value):
            self._storage.append(value)
            return ctypes.addressof(value), ctypes.sizeof(value)
        if isinstance(value, bool | int | float):
            raise LaunchError(
                f"launch: argument {index} is a Python {type(value).__name__}; pass a sized "
                "scalar (np.int32, np.uint32, np.uint64, np.float32, ...)"
            )
        if isinstance(value, np.ndarray):
            raise LaunchError(
                f"launch: argument {index} is a host numpy array; copy it to the device first "
                "(DeviceBuffer.from_host or bind_arrays)"
            )
        array = value if isinstance(value, DeviceArray) else as_device_array(value, f"#{index}")
        if array is None:
            raise LaunchError(
                f"launch: argument {index} ({type(value).__name__}) is neither a tensor map, "
                "a device array nor a sized scalar"
            )
        holder = np.array(array.ptr, dtype=np.uint64)
        self._storage.extend((holder, array))
        return holder.ctypes.data, 8


def kernel_parameter_sizes(function: Function) -> list[int] | None:
    """The byte size of each kernel parameter, or None where the driver cannot say.

    A function loaded from PTX knows its parameters from the `.entry` declaration, and the
    driver is not asked. Otherwise the count comes from cuFuncGetParamCount where the driver
    answers it, so that no query goes past the last parameter (a failed driver call shows up
    as an error under compute-sanitizer's memcheck); elsewhere cuFuncGetParamInfo is asked
    for one index after another until it refuses one.
    """
    if function.parameter_sizes is not None:
        return function.parameter_sizes
    driver = driver_api()
    info_query = getattr(driver, "cuFuncGetParamInfo", None)
    if info_query is None:
        return None
    count = _parameter_count(driver, function)
    sizes: list[int] = []
    while count is None or len(sizes) < count:
        info = info_query(function.handle, len(sizes))
        if count is None and info[0] == driver.CUresult.CUDA_ERROR_INVALID_VALUE:
            return sizes
        if info[0] != driver.CUresult.CUDA_SUCCESS:
            return None
        sizes.append(int(info[2]))
    return sizes


def _parameter_count(driver: Any, function: Function) -> int | None:
    """cuFuncGetParamCount's answer, or None where the bindings or the driver lack it."""
    count_query = getattr(driver, "cuFuncGetParamCount", None)
    if count_query is None:
        return None
    try:
        returned = count_query(function.handle)
    except RuntimeError:  # the bindings know the call, the installed driver does not
        return None
    if returned[0] != driver.CUresult.CUDA_SUCCESS:
        return None
    return int(returned[1])


def check_arguments(function: Function, packed: KernelArguments) -> None:
    """LaunchError when the arguments' count or sizes differ from the kernel's parameters."""
    expected = kernel_parameter_sizes(function)
    if expected is None:
        return
    if len(expected) != len(packed.sizes):
        raise LaunchError(
            f"launch: kernel {function.name} takes {len(expected)} parameters, "
            f"found {len(packed.sizes)} arguments"
        )
    for index, (want, found) in enumerate(zip(expected, packed.sizes, strict=True)):
        if want != found:
            raise LaunchError(
                f"launch: kernel {function.name} parameter {index} is {want} bytes, "
                f"found an argument of {found} bytes"
            )


def cluster_launch_config(
    function: Function,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    cluster: int | Sequence[int],
    smem_bytes: int,
    programmatic: bool = False,
) -> Any:
    """A CUlaunchConfig with a cluster dimension, on the default stream (raises the
    function's dynamic shared memory limit first when needed); grid, block and cluster as
    for `launch`; `programmatic`: with a programmatic dependency on the stream's previous
    grid (for a kernel that runs `griddepcontrol.wait` before touching global memory)."""
    if smem_bytes > STATIC_SHARED_LIMIT and smem_bytes > function.max_dynamic_shared_bytes:
        function.set_max_dynamic_shared_bytes(smem_bytes)
    driver = driver_api()
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = _dim3(grid, "grid")
    config.blockDimX, config.blockDimY, config.blockDimZ = _dim3(block, "block")
    config.sharedMemBytes = smem_bytes
    attribute = driver.CUlaunchAttribute()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    dims = attribute.value.clusterDim
    dims.x, dims.y, dims.z = _dim3(cluster, "cluster")
    attributes = [attribute]
    if programmatic:
        serialization = driver.CUlaunchAttribute()
        serialization.id = (
            driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        )
        serialization.value.programmaticStreamSerializationAllowed = 1
        attributes.append(serialization)
    config.attrs = attributes
    config.numAttrs = len(attributes)
    return config


def max_active_clusters(function: Function, threads: int, cluster: int, smem_bytes: int) -> int:
    """How many clusters of `cluster` CTAs (each `threads` threads and `smem_bytes` of
    dynamic shared memory) the device runs at once (cuOccupancyMaxActiveClusters).

    A cluster's CTAs must share a GPC, so this can be fewer than SMs / cluster: on the
    H200, 30 clusters of 4 CTAs of 227 KiB (120 SMs), but 66 of 2.
    """
    ensure_context()
    config = cluster_launch_config(function, cluster, threads, cluster, smem_bytes)
    count = check(
        driver_api().cuOccupancyMaxActiveClusters(function.handle, config),
        f"querying the active clusters of kernel {function.name} (cluster of {cluster}, "
        f"{threads} threads, {smem_bytes} bytes of dynamic shared memory)",
    )
    return int(count)


def launch(
    function: Function,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    args: Sequence[Any] = (),
    *,
    cluster: int | Sequence[int] = 1,
    smem_bytes: int = 0,
    stream: Any = None,
    programmatic: bool = False,
) -> None:
    """Launch `function` on `grid` x `block` threads, `cluster` CTAs per cluster, on `stream`
    (`programmatic`: see `cluster_launch_config`).

    Dynamic shared memory above 48 KiB raises the function's limit first. The launch is
    asynchronous: synchronize the stream (or copy results back) to see its effects.
    """
    ensure_context()
    grid3 = _dim3(grid, "grid")
    block3 = _dim3(block, "block")
    cluster3 = _dim3(cluster, "cluster")
    threads = block3[0] * block3[1] * block3[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise LaunchError(
            f"launch: block {list(block3)} has {threads} threads, at most {MAX_THREADS_PER_BLOCK}"
        )
    cluster_size = cluster3[0] * cluster3[1] * cluster3[2]
    if cluster_size > MAX_CLUSTER_SIZE:
        raise LaunchError(
            f"launch: cluster {list(cluster3)} has {cluster_size} CTAs, at most {MAX_CLUSTER_SIZE}"
        )
    for axis, (blocks, ctas) in enumerate(zip(grid3, cluster3, strict=True)):
        if blocks % ctas:
            raise LaunchError(
                f"launch: grid {list(grid3)} is not a multiple of cluster {list(cluster3)} "
                f"along {'xyz'[axis]}"
            )
    if smem_bytes < 0:
        raise LaunchError(f"launch: smem_bytes must be >= 0, found {smem_bytes}")
    config = cluster_launch_config(function, grid3, block3, cluster3, smem_bytes, programmatic)
    config.hStream = stream_handle(stream)
    packed = KernelArguments(args)
    check_arguments(function, packed)
    params = packed.pointers.ctypes.data if len(packed.sizes) else 0
    check(
        driver_api().cuLaunchKernelEx(config, function.handle, params, 0),
        f"launching kernel {function.name} (grid {list(grid3)}, block {list(block3)}, "
        f"cluster {list(cluster3)}, {smem_bytes} bytes of dynamic shared memory)",
    )
