"""Access to the CUDA driver API of cuda-python, with every failure turned into an mmcomp error.

`driver_api()` imports `cuda.bindings.driver` on first use (importing mmcomp never does), and
`check(result, what)` turns a `CUresult` that is not `CUDA_SUCCESS` into
`mmcomp.errors.CudaError(what, error_name)`, so that no caller has to look at status codes.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import Any, cast

from mmcomp.errors import CudaError, LaunchError

_KERNEL_FAULTS = frozenset(
    {
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_TENSOR_MEMORY_LEAK",
    }
)
"""Errors raised by a kernel while it ran: they surface at the next call and are sticky."""


@functools.cache
def driver_api() -> ModuleType:
    """The `cuda.bindings.driver` module; LaunchError when cuda-python is not installed."""
    try:
        driver = importlib.import_module("cuda.bindings.driver")
    except ImportError as error:
        raise LaunchError(
            f"cannot use the GPU: cuda-python (cuda.bindings.driver) is not importable: {error}"
        ) from error
    return driver


def error_name(result: Any) -> str:
    """The driver's name for a `CUresult` (cuGetErrorName), or the enum's own name."""
    driver = driver_api()
    try:
        err, name = driver.cuGetErrorName(result)
    except Exception:  # no driver library: fall back to the binding's enum name
        return getattr(result, "name", str(result))
    if err != driver.CUresult.CUDA_SUCCESS or not name:
        return getattr(result, "name", str(result))
    return name.decode() if isinstance(name, bytes) else str(name)


def error_string(result: Any) -> str:
    """The driver's description of a `CUresult` (cuGetErrorString), or an empty string."""
    driver = driver_api()
    try:
        err, text = driver.cuGetErrorString(result)
    except Exception:
        return ""
    if err != driver.CUresult.CUDA_SUCCESS or not text:
        return ""
    return text.decode() if isinstance(text, bytes) else str(text)


def check(returned: Any, what: str, detail: str = "") -> Any:
    """Raise CudaError(what, name) unless a driver call succeeded; return its other results.

    cuda-python returns `(CUresult, value, ...)` or a bare 1-tuple: the value (or a tuple of
    values, or None) is returned.
    """
    driver = driver_api()
    if isinstance(returned, tuple):
        items = cast("tuple[Any, ...]", returned)
        result, values = items[0], items[1:]
    else:
        result, values = returned, ()
    if result != driver.CUresult.CUDA_SUCCESS:
        name = error_name(result)
        hint = (
            "raised by an earlier asynchronous kernel launch; the context is now unusable"
            if name in _KERNEL_FAULTS
            else ""
        )
        message = "; ".join(part for part in (error_string(result), detail, hint) if part)
        raise CudaError(what, name, message)
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return values
