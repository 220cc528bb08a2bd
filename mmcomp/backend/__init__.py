"""The cuda back end: a ptx-level module to PTX, checked by ptxas, launched on the H200.

`build_cuda_kernel(module)` takes the ptx module at the end of `compile-to-ptx` (what
`mmcomp.pipeline.run_pipeline` returns for the cuda back end): it prints the PTX,
assembles it with ptxas (when one is found, requiring 0 spill bytes), and reads the
`LaunchPlan` from the entry's launch data (mmcomp.backend.plan). `lower_to_ptx(module)`
runs the rest of the pipeline on a copy of a materialized kernel first:

    partition-warp-roles -> lower-schedule-to-hopper -> convert-hopper-to-ptx
                         -> convert-scf-to-ptx -> convert-arith-to-ptx -> PTX text

`load_kernel(path)` (also `mmcomp.load_kernel`) builds the kernel of a ptx-level IR file
that `mmcomp-opt` wrote. The result, a `CudaKernel`, holds the PTX, the ptxas resource
report and the plan; it is called on the fusion's inputs and returns its outputs. Loading
and launching happen at the first call, so compiling needs no GPU; calling without one
raises LaunchError. The names are imported when first used, so that a kernel loaded from
the compile cache (mmcomp.backend.compiled) imports neither xDSL nor numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mmcomp.backend.kernel import (
        BoundLaunch,
        CudaKernel,
        build_cuda_kernel,
        load_kernel,
        lower_to_ptx,
    )
    from mmcomp.backend.plan import LaunchPlan, launch_plan

_PUBLIC = {
    "BoundLaunch": "mmcomp.backend.kernel",
    "CudaKernel": "mmcomp.backend.kernel",
    "build_cuda_kernel": "mmcomp.backend.kernel",
    "load_kernel": "mmcomp.backend.kernel",
    "lower_to_ptx": "mmcomp.backend.kernel",
    "LaunchPlan": "mmcomp.backend.plan",
    "launch_plan": "mmcomp.backend.plan",
}

__all__ = [
    "BoundLaunch",
    "CudaKernel",
    "LaunchPlan",
    "build_cuda_kernel",
    "launch_plan",
    "load_kernel",
    "lower_to_ptx",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'mmcomp.backend' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
