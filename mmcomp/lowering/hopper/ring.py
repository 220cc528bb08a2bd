"""The shared-memory ring and its mbarrier pipeline.

`stages` stages of `stage_bytes` each at the 1024-aligned base of dynamic shared memory,
then `stages` full barriers (count 1: the producer's expect_tx; TMA completes the bytes)
and `stages` empty barriers (one arrival per consumer warpgroup that reads a stage, times
the CTAs of the cluster). A role walks the ring with a position: a (stage, phase) register
pair made once at the kernel's top level, moved one stage per K block (the phase flips at
the wrap).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from mmcomp.dialects import hopper, ptx
from mmcomp.lowering.hopper.context import ConsumerThreads, KernelContext

BARRIER_BYTES = 8
"""Bytes of one mbarrier."""


@dataclass(frozen=True)
class Position:
    """A role's place in the ring: the stage register and the phase-parity register."""

    stage: SSAValue
    phase: SSAValue


@dataclass(frozen=True)
class Ring:
    """The ring's shared addresses and depth."""

    ctx: KernelContext
    base: SSAValue
    """Shared address of stage 0 (the 1024-aligned base of dynamic shared memory)."""
    full: SSAValue
    """Shared address of the full barriers, one per stage."""
    empty: SSAValue
    """Shared address of the empty barriers, one per stage."""

    @staticmethod
    def at(ctx: KernelContext, base: SSAValue) -> Ring:
        """The ring at `base`, its barriers after its stages."""
        k = ctx.k
        stages = ctx.roles.stages
        full = k.add(base, k.const(ctx.plan.stage_bytes * stages))
        empty = k.add(full, k.const(BARRIER_BYTES * stages))
        return Ring(ctx, base, full, empty)

    @property
    def stages(self) -> int:
        """Depth of the ring."""
        return self.ctx.roles.stages

    @property
    def after_barriers(self) -> SSAValue:
        """The shared address after the empty barriers (the split-K broadcast word)."""
        k = self.ctx.k
        return k.add(self.empty, k.const(BARRIER_BYTES * self.stages))

    def init_barriers(self, stage_readers: int, leader: SSAValue) -> None:
        """Initialize every stage's full and empty barrier (by `leader`)."""
        k = self.ctx.k
        for stage in range(self.stages):
            full = k.add(self.full, k.const(BARRIER_BYTES * stage))
            self.ctx.put(hopper.MbarrierInitOp(full, 1), leader)
            empty = k.add(self.empty, k.const(BARRIER_BYTES * stage))
            readers = stage_readers * self.ctx.cluster.size
            self.ctx.put(hopper.MbarrierInitOp(empty, readers), leader)

    def position(self) -> Position:
        """Fresh (stage, phase) registers of a ring position, both 0."""
        k = self.ctx.k
        stage = k.const(0)
        phase = k.const(0)
        return Position(stage, phase)

    def barrier(self, which: SSAValue, stage: SSAValue) -> SSAValue:
        """The address of stage `stage`'s barrier in the array at `which`."""
        k = self.ctx.k
        return k.mad(stage, k.const(BARRIER_BYTES), which)

    def slot_base(self, stage: SSAValue) -> SSAValue:
        """The shared address of stage `stage`."""
        k = self.ctx.k
        return k.mad(stage, k.const(self.ctx.plan.stage_bytes), self.base)

    def advance(self, at: Position) -> None:
        """Move a ring position one stage on (the phase flips at the wrap)."""
        k = self.ctx.k
        k.assign(at.stage, k.add(at.stage, k.const(1)))
        wrap = k.setp("eq", at.stage, k.const(self.stages))
        self.ctx.put(ptx.AssignOp(at.stage, k.const(0)), wrap)
        self.ctx.put(ptx.AssignOp(at.phase, k.binary(ptx.XorOp, at.phase, k.const(1))), wrap)

    def advance_by(self, at: Position, count: SSAValue) -> None:
        """Move a ring position `count` K blocks ahead (the other consumer's tile)."""
        k = self.ctx.k
        stages = k.const(self.stages)
        total = k.add(at.stage, count)
        laps = k.binary(ptx.DivOp, total, stages)
        k.assign(at.stage, k.binary(ptx.RemOp, total, stages))
        flip = k.binary(ptx.AndOp, laps, k.const(1))
        k.assign(at.phase, k.binary(ptx.XorOp, at.phase, flip))

    def wait_full(self, at: Position) -> None:
        """Wait until the stage at `at` has been filled."""
        k = self.ctx.k
        k.append(hopper.MbarrierWaitOp(self.barrier(self.full, at.stage), at.phase))

    def wait_empty(self, at: Position) -> None:
        """Wait until the stage at `at` has been released (the parity flipped: the first
        pass through the ring does not block)."""
        k = self.ctx.k
        empty = self.barrier(self.empty, at.stage)
        parity = k.binary(ptx.XorOp, at.phase, k.const(1))
        k.append(hopper.MbarrierWaitOp(empty, parity))

    def release(self, stage: SSAValue, pred: SSAValue, threads: ConsumerThreads) -> None:
        """Arrive on the empty barrier of `stage` (if `pred`): one thread of each consumer
        warpgroup arrives once at every CTA of the cluster (thread t at CTA rank t).

        One arrival per warpgroup suffices: `wgmma.wait_group` returns only when the
        warpgroup's wgmma groups, which read the stage, are complete.
        """
        k = self.ctx.k
        empty = self.barrier(self.empty, stage)
        signal = k.binary(ptx.AndOp, pred, threads.signaller)
        if self.ctx.cluster.size == 1:
            self.ctx.put(hopper.MbarrierArriveOp(empty), signal)
            return
        remote = k.append(hopper.MapaOp(empty, threads.thread_in_warpgroup)).result
        self.ctx.put(hopper.MbarrierArriveOp(remote, "cluster"), signal)
