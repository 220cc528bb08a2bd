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
raises LaunchError.
"""

from mmcomp.backend.kernel import (
    BoundLaunch,
    CudaKernel,
    build_cuda_kernel,
    load_kernel,
    lower_to_ptx,
)
from mmcomp.backend.plan import LaunchPlan, launch_plan

__all__ = [
    "BoundLaunch",
    "CudaKernel",
    "LaunchPlan",
    "build_cuda_kernel",
    "launch_plan",
    "load_kernel",
    "lower_to_ptx",
]
