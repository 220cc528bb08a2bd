"""The shared-memory ring and its mbarrier pipeline.

`stages` stages of `stage_bytes` each at the 1024-aligned base of dynamic shared memory,
then `stages` full barriers (count 1: the producer's expect_tx; TMA completes the bytes)
and `stages` empty barriers (one arrival per consumer warpgroup that reads a stage, times
the CTAs of the cluster), each array a `!hopper.barrier_ring` value whose stages' barriers
(`hopper.ring_barrier`) the mbarrier and TMA ops take. A role walks the ring with a
position: a (stage, phase) register pair made once at the kernel's top level, moved one
stage per K block (the phase flips at the wrap), in place: the K loop and the loops around
it carry the pair (their `iter_args`), and the body writes the registers it carries.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.hopper import BARRIER_BYTES
from mmcomp.lowering.hopper.context import Carried, ConsumerThreads, KernelContext


@dataclass(frozen=True)
class Position:
    """A role's place in the ring: the stage register and the phase-parity register, which
    the loops around the role's K loop carry (and the K loop itself)."""

    stage_carried: Carried
    """The stage register."""
    phase_carried: Carried
    """The phase-parity register."""

    @property
    def stage(self) -> SSAValue:
        """The stage register's value at the builder's insertion point."""
        return self.stage_carried.value

    @property
    def phase(self) -> SSAValue:
        """The phase-parity register's value at the builder's insertion point."""
        return self.phase_carried.value


@dataclass(frozen=True)
class Ring:
    """The ring's shared addresses, its barriers and its depth."""

    ctx: KernelContext
    base: SSAValue
    """Shared address of stage 0 (the 1024-aligned base of dynamic shared memory)."""
    empty_address: SSAValue
    """Shared address of the empty barriers (the split-K broadcast word follows them)."""
    full: SSAValue
    """The full barriers, one per stage (a `!hopper.barrier_ring`)."""
    empty: SSAValue
    """The empty barriers, one per stage (a `!hopper.barrier_ring`)."""

    @staticmethod
    def at(ctx: KernelContext, base: SSAValue, stage_readers: int) -> Ring:
        """The ring at `base`, its barriers after its stages; `stage_readers` consumer
        warpgroups of each CTA of the cluster release each stage."""
        k = ctx.k
        stages = ctx.roles.stages
        full_address = k.add(base, k.const(ctx.plan.stage_bytes * stages))
        empty_address = k.add(full_address, k.const(BARRIER_BYTES * stages))
        full_ring = hopper.BarrierRingType(stages, 1)
        empty_ring = hopper.BarrierRingType(stages, stage_readers * ctx.cluster.size)
        full = k.append(hopper.BarrierRingOp(full_address, full_ring)).result
        empty = k.append(hopper.BarrierRingOp(empty_address, empty_ring)).result
        return Ring(ctx, base, empty_address, full, empty)

    @property
    def stages(self) -> int:
        """Depth of the ring."""
        return self.ctx.roles.stages

    @property
    def after_barriers(self) -> SSAValue:
        """The shared address after the empty barriers (the split-K broadcast word)."""
        k = self.ctx.k
        return k.add(self.empty_address, k.const(BARRIER_BYTES * self.stages))

    def init_barriers(self, leader: SSAValue) -> None:
        """Initialize every stage's full and empty barrier (by `leader`)."""
        for stage in range(self.stages):
            self.ctx.put(hopper.MbarrierInitOp(self.barrier(self.full, stage)), leader)
            self.ctx.put(hopper.MbarrierInitOp(self.barrier(self.empty, stage)), leader)

    def position(self, loop: scf.ForOp) -> Position:
        """Fresh (stage, phase) registers of a ring position, both 0, carried by the K loop
        `loop` and the loops around it."""
        ctx = self.ctx
        stage = ctx.k.const(0)
        phase = ctx.k.const(0)
        return Position(ctx.carry(stage, loop), ctx.carry(phase, loop))

    def barrier(self, ring: SSAValue, stage: SSAValue | int) -> SSAValue:
        """The barrier of stage `stage` (a register or a constant) of `ring`."""
        return self.ctx.k.append(hopper.RingBarrierOp(ring, stage)).result

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
