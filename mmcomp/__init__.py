"""mmcomp: a compiler from matmul fusions to persistent, warp-specialized Hopper kernels.

The public API is imported lazily, so that `mmcomp-opt` does not pay for numpy or the
CUDA bindings at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmcomp.analysis.roles import roles_of
    from mmcomp.autodiff import grad
    from mmcomp.backend.compiled import Kernel
    from mmcomp.backend.kernel import load_kernel
    from mmcomp.compiler import compile
    from mmcomp.errors import CudaError, FusionError, LaunchError, ScheduleError
    from mmcomp.frontend.builder import DYNAMIC, Fusion, Value, parse
    from mmcomp.interp.reference import reference
    from mmcomp.tuning import autotune

_PUBLIC = {
    "DYNAMIC": "mmcomp.frontend.builder",
    "Fusion": "mmcomp.frontend.builder",
    "Value": "mmcomp.frontend.builder",
    "parse": "mmcomp.frontend.builder",
    "reference": "mmcomp.interp.reference",
    "roles_of": "mmcomp.analysis.roles",
    "compile": "mmcomp.compiler",
    "grad": "mmcomp.autodiff",
    "autotune": "mmcomp.tuning",
    "Kernel": "mmcomp.backend.compiled",
    "load_kernel": "mmcomp.backend.kernel",
    "FusionError": "mmcomp.errors",
    "ScheduleError": "mmcomp.errors",
    "LaunchError": "mmcomp.errors",
    "CudaError": "mmcomp.errors",
}

__all__ = [
    "DYNAMIC",
    "CudaError",
    "Fusion",
    "FusionError",
    "Kernel",
    "LaunchError",
    "ScheduleError",
    "Value",
    "autotune",
    "compile",
    "grad",
    "load_kernel",
    "parse",
    "reference",
    "roles_of",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'mmcomp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once: later lookups find it without this function
    return value
