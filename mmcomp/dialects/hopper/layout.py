"""The kernel-wide check of the ring: one depth, disjoint shared memory, every barrier set up.

The ring's depth (`stages`) is written in several places of a hopper-level kernel: the
types of the slot ring, of the barrier rings and of the ring positions, the shared-memory
offsets of the barriers after the stages, the `hopper.mbarrier_init` of each stage's
barriers, and the launch's shared-memory bytes. Each op's verifier sees only its own
operands, so an edit of one place (say `stages = 3` to `stages = 4` in every type, but not
the offsets) would verify op by op and run with barriers inside the last stage.
`check_ring_layout` checks them together, naming what disagrees:

- every slot ring, barrier ring and ring position has the same `stages`;
- the shared memory of the slot ring (`stages * bytes`) and of each barrier ring (`stages`
  barriers), where their offsets from the kernel's shared base are constants, overlaps
  nothing else: neither each other nor a buffer of `hopper.smem_index` (its first `stride`
  bytes; the buffers themselves may be indexed more than once); all end inside the
  launch's dynamic shared memory (less the base's alignment slack);
- a barrier ring that is initialized at all has each of its stages' barriers initialized
  exactly once (`hopper.mbarrier_init` of `hopper.ring_barrier %ring[i]`, i constant).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.ops import BarrierRingOp, MbarrierInitOp, RingBarrierOp
from mmcomp.dialects.hopper.ring import RingPositionType, RingStartOp
from mmcomp.dialects.hopper.smem import (
    SharedBaseOp,
    SlotRingOp,
    SlotRingType,
    SmemIndexOp,
    SmemOffsetOp,
    SmemType,
)
from mmcomp.dialects.hopper.types import BARRIER_BYTES, BarrierRingType

__all__ = ["check_ring_layout"]

DYNAMIC_SMEM_BASE_ALIGN = 16
"""The alignment dynamic shared memory starts at, at least: an aligned base
(`hopper.shared_base`) moves up by at most its alignment less this."""


@dataclass(frozen=True)
class Region:
    """Bytes of shared memory an op owns, as offsets from the shared base."""

    op: Operation
    start: int
    end: int

    def describe(self) -> str:
        """`hopper.slot_ring at [0, 196608)`."""
        return f"{self.op.name} at [{self.start}, {self.end})"


def _offsets(block: Block) -> dict[SSAValue, int]:
    """The constant offset from the shared base of every `!hopper.smem` value that has one."""
    offsets: dict[SSAValue, int] = {}
    for op in block.walk():
        if isinstance(op, SharedBaseOp):
            offsets[op.result] = 0
        elif isinstance(op, SmemOffsetOp) and op.base in offsets:
            offsets[op.result] = offsets[op.base] + op.offset.data
    return offsets


def _regions(block: Block, offsets: dict[SSAValue, int]) -> list[Region]:
    """The regions of the slot rings, barrier rings and indexed buffers at known offsets."""
    regions: list[Region] = []
    for op in block.walk():
        if isinstance(op, SlotRingOp) and op.base in offsets:
            start = offsets[op.base] + op.offset.data
            ring = op.result.type
            if not isinstance(ring, SlotRingType):
                continue
            regions.append(Region(op, start, start + ring.stages.data * ring.bytes.data))
        elif isinstance(op, BarrierRingOp) and op.base in offsets:
            ring = op.result.type
            if not isinstance(ring, BarrierRingType):
                continue
            start = offsets[op.base]
            regions.append(Region(op, start, start + ring.stages.data * BARRIER_BYTES))
        elif isinstance(op, SmemIndexOp) and op.base in offsets:
            start = offsets[op.base] + op.offset.data
            regions.append(Region(op, start, start + op.stride.data))
    return regions


def _depths(block: Block) -> list[tuple[Operation, int]]:
    """Each op that fixes the ring's depth, with the depth its result's type gives."""
    found: list[tuple[Operation, int]] = []
    for op in block.walk():
        if not isinstance(op, SlotRingOp | RingStartOp | BarrierRingOp):
            continue
        ring = op.result.type
        if isinstance(ring, SlotRingType | RingPositionType | BarrierRingType):
            found.append((op, ring.stages.data))
    return found


def _check_depths(where: str, block: Block) -> None:
    depths = _depths(block)
    if len({stages for _, stages in depths}) <= 1:
        return
    listed = ", ".join(f"{op.name} {stages}" for op, stages in depths)
    raise VerifyException(
        f"{where}: the ring's stages disagree ({listed}): the slot ring, the barrier rings and "
        "the ring positions must have one depth (change `stages` in sched.params and "
        "lower again)"
    )


def _check_regions(where: str, regions: list[Region], smem_bytes: int | None, align: int):
    """No ring region overlaps another region (the epilogue's buffers may share bytes: each
    branch of the kernel that stores a tile indexes the same buffers), and all end inside the
    launch's shared memory."""
    ordered = sorted(regions, key=lambda region: (region.start, region.end))
    rings = [region for region in ordered if not isinstance(region.op, SmemIndexOp)]
    for ring in rings:
        for other in ordered:
            if other is ring or other.end <= ring.start or ring.end <= other.start:
                continue
            first, second = sorted((ring, other), key=lambda region: (region.start, region.end))
            raise VerifyException(
                f"{where}: shared memory overlaps: {first.describe()} and "
                f"{second.describe()} (the offsets do not match the ring's stages)"
            )
    if smem_bytes is None or not ordered:
        return
    usable = smem_bytes - max(align - DYNAMIC_SMEM_BASE_ALIGN, 0)
    last = max(ordered, key=lambda region: region.end)
    if last.end > usable:
        raise VerifyException(
            f"{where}: {last.describe()} ends past the {usable} bytes of shared memory the "
            f"launch gives ({smem_bytes}, less the base's alignment slack)"
        )


def _check_inits(where: str, block: Block) -> None:
    """Each initialized barrier ring has each stage's barrier initialized exactly once."""
    inits: dict[SSAValue, list[int]] = {}
    for op in block.walk():
        if not isinstance(op, MbarrierInitOp):
            continue
        barrier = op.barrier.owner
        if not isinstance(barrier, RingBarrierOp) or barrier.index is None:
            continue
        inits.setdefault(barrier.ring, []).append(barrier.index.data)
    for ring, stages_set in inits.items():
        ring_type = ring.type
        if not isinstance(ring_type, BarrierRingType):
            continue
        stages = ring_type.stages.data
        if sorted(stages_set) == list(range(stages)):
            continue
        raise VerifyException(
            f"{where}: a barrier ring of {stages} stages has the barriers of stages "
            f"{sorted(stages_set)} initialized: each stage's barrier must be initialized once"
        )


def check_ring_layout(where: str, block: Block, smem_bytes: int | None) -> None:
    """Raise unless the ring of the kernel whose body is `block` is consistent (module
    docstring); `smem_bytes` is the launch's dynamic shared memory, if known."""
    _check_depths(where, block)
    offsets = _offsets(block)
    bases = [op for op in block.walk() if isinstance(op, SharedBaseOp)]
    align = max(
        (base.result.type.align.data for base in bases if isinstance(base.result.type, SmemType)),
        default=0,
    )
    _check_regions(where, _regions(block, offsets), smem_bytes, align)
    _check_inits(where, block)
