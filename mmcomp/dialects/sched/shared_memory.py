"""The kernel's dynamic shared memory: the one budget that the schedule checks and the
lowering lays out.

From the base of dynamic shared memory, aligned to SMEM_ALIGN:

    [ stage 0 | stage 1 | ... ]          the ring: `stages` stages of `stage_bytes`
    [ full barriers | empty barriers ]   one mbarrier per stage each
    [ scratch ]                          SCRATCH_BYTES (split-K's broadcast word)
    (up to the next SMEM_ALIGN)
    [ epilogue buffers ]                 the shared-memory epilogue's boxes, if any

and SMEM_ALIGN bytes more, the slack that aligning the base may take. `ScheduleParams`
checks a schedule against the device with it (`ScheduleParams.shared_memory`: the stage
of its A and B tiles, the epilogue buffers of every consumer warpgroup where the epilogue
is "smem"), and lower-schedule-to-hopper places the ring, the barriers and the buffers at
its offsets and launches with `dynamic_bytes` (its stage of the operands' TMA boxes, the
buffers where an output is stored through shared memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from mmcomp.arch import limits as hw

SMEM_ALIGN = 1024
"""Alignment of the ring (128-byte swizzle atoms repeat every 1024 bytes)."""
SCRATCH_BYTES = 16
"""Bytes after the barriers: split-K's broadcast word."""


def _align(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment


@dataclass(frozen=True)
class SharedMemoryLayout:
    """Where the ring, its barriers and the epilogue buffers lie in dynamic shared memory."""

    stage_bytes: int
    """Bytes of one ring stage (every mainloop operand's tile)."""
    stages: int
    """Stages of the ring."""
    epilogue_buffers: int = 0
    """Epilogue buffers (boxes of `buffer_bytes`); 0 without the shared-memory epilogue."""
    buffer_bytes: int = hw.EPILOGUE_BOX_BYTES
    """Bytes of one epilogue buffer."""

    @property
    def ring_bytes(self) -> int:
        """Bytes of the ring's stages."""
        return self.stage_bytes * self.stages

    @property
    def barrier_bytes(self) -> int:
        """Bytes of the full and empty barriers (one of each per stage)."""
        return 2 * hw.MBARRIER_BYTES * self.stages

    @property
    def epilogue_offset(self) -> int:
        """Offset of the epilogue buffers from the aligned base (after ring, barriers and
        scratch, aligned)."""
        return _align(self.ring_bytes + self.barrier_bytes + SCRATCH_BYTES, SMEM_ALIGN)

    @property
    def dynamic_bytes(self) -> int:
        """The launch's dynamic shared memory, the base's alignment slack included."""
        end = self.ring_bytes + self.barrier_bytes + SCRATCH_BYTES
        if self.epilogue_buffers:
            end = self.epilogue_offset + self.epilogue_buffers * self.buffer_bytes
        return end + SMEM_ALIGN

    def parts(self) -> dict[str, int]:
        """`dynamic_bytes` by what takes it: ring, barriers (with the scratch), epilogue
        buffers, alignment (the epilogue's and the base's)."""
        barriers = self.barrier_bytes + SCRATCH_BYTES
        epilogue = self.epilogue_buffers * self.buffer_bytes
        alignment = self.dynamic_bytes - self.ring_bytes - barriers - epilogue
        return {
            "ring": self.ring_bytes,
            "barriers": barriers,
            "epilogue": epilogue,
            "alignment": alignment,
        }
