"""The cuda back end: a materialized kernel to PTX, checked by ptxas, launched on the H200.

`build_cuda_kernel(module)` takes the module after `materialize-schedule` (what
`mmcomp.compiler.run_pipeline` returns) and runs the Hopper lowering on a copy:

    partition-warp-roles -> lower-schedule-to-hopper -> convert-hopper-to-ptx -> PTX text

then assembles the PTX with ptxas (when one is found) and requires 0 spill bytes. The
result, a `CudaKernel`, holds the PTX, the ptxas resource report and the `LaunchPlan`; it
is called on the fusion's inputs and returns its outputs. Loading and launching happen at
the first call, so compiling needs no GPU; calling without one raises LaunchError.
"""

from mmcomp.backend.kernel import (
    BoundLaunch,
    CudaKernel,
    build_cuda_kernel,
    lower_to_ptx,
)

__all__ = ["BoundLaunch", "CudaKernel", "build_cuda_kernel", "lower_to_ptx"]
