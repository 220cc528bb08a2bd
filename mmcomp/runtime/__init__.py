"""The CUDA runtime on cuda-python: context, module load, TMA descriptors, launch, cache.

Importing this package needs neither a GPU nor a driver: the driver is first touched by a
call that needs it (loading a module, allocating, encoding a tensor map, launching), which
raises one clear `mmcomp.errors.LaunchError` where there is no usable sm_90 GPU.
"""

from mmcomp.runtime.arrays import (
    BFLOAT16,
    ArraySpec,
    BoundArrays,
    DeviceArray,
    DeviceBuffer,
    as_device_array,
    bind_arrays,
    check_device_array,
    check_host_array,
)
from mmcomp.runtime.cache import KernelCache, cache_key, default_cache_dir
from mmcomp.runtime.device import (
    DeviceInfo,
    device_info,
    ensure_context,
    gpu_unavailable_reason,
    synchronize,
)
from mmcomp.runtime.launch import KernelArguments, launch
from mmcomp.runtime.module import Function, LoadOptions, Module, load_module
from mmcomp.runtime.stream import Event, Stream, time_launches
from mmcomp.runtime.tensormap import TensorMap, encode_tensor_map, tensor_map_layout

__all__ = [
    "BFLOAT16",
    "ArraySpec",
    "BoundArrays",
    "DeviceArray",
    "DeviceBuffer",
    "DeviceInfo",
    "Event",
    "Function",
    "KernelArguments",
    "KernelCache",
    "LoadOptions",
    "Module",
    "Stream",
    "TensorMap",
    "as_device_array",
    "bind_arrays",
    "cache_key",
    "check_device_array",
    "check_host_array",
    "default_cache_dir",
    "device_info",
    "encode_tensor_map",
    "ensure_context",
    "gpu_unavailable_reason",
    "launch",
    "load_module",
    "synchronize",
    "tensor_map_layout",
    "time_launches",
]
