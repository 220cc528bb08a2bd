"""The CUDA runtime on cuda-python: context, module load, TMA descriptors, launch, cache.

Importing this package needs neither a GPU nor a driver: the driver is first touched by a
call that needs it (loading a module, allocating, encoding a tensor map, launching), which
raises one clear `mmcomp.errors.LaunchError` where there is no usable sm_90 GPU. Its names
are imported when first used, so that the compile cache's store (mmcomp.runtime.cache)
imports neither numpy nor the CUDA bindings.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_PUBLIC = {
    "BFLOAT16": "mmcomp.runtime.arrays",
    "ArraySpec": "mmcomp.runtime.arrays",
    "BoundArrays": "mmcomp.runtime.arrays",
    "DeviceArray": "mmcomp.runtime.arrays",
    "DeviceBuffer": "mmcomp.runtime.arrays",
    "as_device_array": "mmcomp.runtime.arrays",
    "bind_arrays": "mmcomp.runtime.arrays",
    "check_device_array": "mmcomp.runtime.arrays",
    "check_host_array": "mmcomp.runtime.arrays",
    "KernelCache": "mmcomp.runtime.cache",
    "cache_key": "mmcomp.runtime.cache",
    "default_cache_dir": "mmcomp.runtime.cache",
    "DeviceInfo": "mmcomp.runtime.device",
    "device_info": "mmcomp.runtime.device",
    "ensure_context": "mmcomp.runtime.device",
    "gpu_unavailable_reason": "mmcomp.runtime.device",
    "synchronize": "mmcomp.runtime.device",
    "KernelArguments": "mmcomp.runtime.launch",
    "Function": "mmcomp.runtime.module",
    "LoadOptions": "mmcomp.runtime.module",
    "Module": "mmcomp.runtime.module",
    "load_module": "mmcomp.runtime.module",
    "Event": "mmcomp.runtime.stream",
    "Stream": "mmcomp.runtime.stream",
    "time_launches": "mmcomp.runtime.stream",
    "TensorMap": "mmcomp.runtime.tensormap",
    "encode_tensor_map": "mmcomp.runtime.tensormap",
    "tensor_map_layout": "mmcomp.runtime.tensormap",
}

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


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'mmcomp.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _Runtime(types.ModuleType):
    """This package's class: its attribute `launch` is the function, never the submodule of
    that name (which the import system would set on the package when it is first imported)."""

    @property
    def launch(self) -> Any:
        """mmcomp.runtime.launch.launch."""
        return importlib.import_module("mmcomp.runtime.launch").launch

    @launch.setter
    def launch(self, value: object) -> None:
        del value  # the submodule, set by its import: the function stays


sys.modules[__name__].__class__ = _Runtime
