"""The hardware limits of the target GPU (NVIDIA H200, sm_90a), each a named constant.

Every check of a schedule parameter and every heuristic reads its limits from here, so
that a different Hopper part needs changes in this one file only. Figures are from the
lent H200 (see HOPPER_NOTES.md), the CUDA programming guide and the PTX ISA.
"""

from __future__ import annotations

from typing import Final

from mmcomp.ir.dtypes import DTYPES

# The device.
SM_COUNT: Final = 132
"""Streaming multiprocessors on the H200."""
TPC_COUNT: Final = SM_COUNT // 2
"""Texture processing clusters (pairs of SMs). Memory-bound one-wave grids ran as if each
pair streamed at one rate whether it held one CTA or two (docs/schedule.md, "Small M")."""
COMPUTE_CAPABILITY: Final = (9, 0)
"""Compute capability (sm_90; the kernels use the sm_90a feature set)."""

# Shared memory.
MAX_DYNAMIC_SMEM_PER_BLOCK: Final = 232448
"""Dynamic shared memory per block after opting in (bytes)."""
SMEM_PER_SM: Final = 233472
"""Shared memory per SM (bytes)."""
SMEM_ALIGNMENT: Final = 1024
"""Alignment of a 128-byte-swizzled TMA destination in shared memory (bytes)."""
MBARRIER_BYTES: Final = 8
"""Size of one mbarrier object in shared memory (bytes)."""

# Registers and threads.
REGISTERS_PER_SM: Final = 65536
"""32-bit registers per SM."""
MAX_REGISTERS_PER_THREAD: Final = 255
"""Most registers one thread may use (without setmaxnreg)."""
SETMAXNREG_MIN: Final = 24
"""Smallest register count setmaxnreg accepts."""
SETMAXNREG_MAX: Final = 256
"""Largest register count setmaxnreg accepts."""
SETMAXNREG_STEP: Final = 8
"""setmaxnreg counts are multiples of this."""
MAX_THREADS_PER_BLOCK: Final = 1024
"""Most threads in one block."""
WARP_SIZE: Final = 32
"""Threads in a warp."""
WARPGROUP_SIZE: Final = 128
"""Threads in a warpgroup (four consecutive warps)."""
ACCUMULATOR_HEADROOM: Final = 64
"""Registers a consumer thread needs besides its f32 accumulators (addresses, epilogue)."""

# Clusters.
MAX_CLUSTER_SIZE: Final = 8
"""Largest portable thread-block cluster (CTAs)."""

# TMA.
TMA_MAX_BOX: Final = 256
"""Largest extent of a TMA box in any dimension (elements)."""
TMA_SWIZZLE_BYTES: Final = 128
"""Width of the 128-byte swizzle pattern (bytes): the inner box extent at most."""
TMA_GLOBAL_ALIGNMENT: Final = 16
"""Global strides and base addresses of TMA tensors are multiples of this (bytes)."""
TMA_MAX_GLOBAL_DIM: Final = 1 << 32
"""Largest extent of a TMA tensor dimension (elements; cuTensorMapEncodeTiled)."""
TMA_STRIDE_LIMIT: Final = 1 << 40
"""TMA global strides are below this (bytes; cuTensorMapEncodeTiled)."""

# Kernel index arithmetic.
INDEX_BITS: Final = 32
"""Width of the kernels' index registers: tile indices, loop bounds and TMA coordinates
(signed 32-bit in cp.async.bulk.tensor)."""
MAX_EXTENT: Final = (1 << (INDEX_BITS - 1)) - TMA_MAX_BOX
"""Largest extent of an iteration axis: every coordinate of a tile that starts inside it,
up to one box past the end, stays a non-negative signed 32-bit integer."""
MAX_WORK_UNITS: Final = (1 << (INDEX_BITS - 1)) - 1
"""Most work units (output tiles times split-K slices) of one kernel's tile loop."""

# wgmma.
WGMMA_M: Final = 64
"""Rows of one wgmma instruction (one warpgroup)."""
WGMMA_N_MIN: Final = 8
"""Smallest N of a wgmma instruction."""
WGMMA_N_MAX: Final = 256
"""Largest N of a wgmma instruction."""
WGMMA_N_STEP: Final = 8
"""wgmma N is a multiple of this."""
WGMMA_K_BYTES: Final = 32
"""Bytes of K one wgmma consumes per row (16 elements of a 16-bit type, 32 of fp8)."""
WGMMA_K_16BIT: Final = 16
"""K of one wgmma for 16-bit inputs (bf16, f16)."""

# Kernel structure (what mmcomp's Hopper kernels use).
MAX_CONSUMER_WARPGROUPS: Final = 2
"""Consumer warpgroups per CTA in mmcomp's warp-specialized kernels."""
EPILOGUE_BOX_BYTES: Final = WGMMA_M * TMA_SWIZZLE_BYTES
"""One shared-memory epilogue box: 64 rows of 128 bytes (stored by TMA)."""
EPILOGUE_BUFFERS: Final = 2
"""Epilogue boxes per consumer warpgroup, alternating (the outputs take turns)."""

ELEMENT_BYTES: Final = {dtype.name: dtype.bytes for dtype in DTYPES}
"""Bytes per element of the element types the kernels handle (from mmcomp.ir.dtypes)."""


def wgmma_k(element_bytes: int) -> int:
    """The K of one wgmma instruction for inputs of `element_bytes` bytes."""
    return WGMMA_K_BYTES // element_bytes
