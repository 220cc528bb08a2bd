"""The shared-memory ring and its mbarrier pipeline.

`stages` stages of `stage_bytes` each at the 1024-aligned base of dynamic shared memory,
then `stages` full barriers (count 1: the producer's expect_tx; TMA completes the bytes)
and `stages` empty barriers (one arrival per consumer warpgroup that reads a stage, times
the CTAs of the cluster), each array a `!hopper.barrier_ring` value whose stages' barriers
(`hopper.ring_barrier`) the mbarrier and TMA ops take. A role walks the ring with a
position: a `!hopper.ring_position` value made once at the kernel's top level
(`hopper.ring_start`; the copy of the one that opens the role's region, which
carry-ring-positions wrote), moved one stage per K block (`hopper.ring_advance`: the phase flips
at the wrap), whose stage and phase (`hopper.ring_stage`, an `index`; `hopper.ring_phase`,
an `i32`, which the empty barrier's wait flips with an `arith.xori`) the waits, arrivals
and slot addresses read. The K loop and the loops around it carry the position (their
`iter_args`, the copies of the partitioned kernel's); the body advances it and yields the
result, which convert-hopper-to-ptx
holds in the start's registers (the advance writes them in place).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.ir import Operation, SSAValue

from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.hopper import BARRIER_BYTES
from mmcomp.lowering.hopper.context import Carried, ConsumerThreads, KernelContext
from mmcomp.lowering.hopper.values import Values


@dataclass(eq=False)
class Position:
    """A role's place in the ring: a `!hopper.ring_position` value, which the loops around
    the role's K loop carry (and the K loop itself), and the reads of its registers."""

    ctx: KernelContext
    carried: Carried
    """The position's value at the builder's insertion point."""
    reads: dict[tuple[SSAValue, type[hopper.RingStageOp | hopper.RingPhaseOp]], SSAValue] = field(
        default_factory=dict[
            tuple[SSAValue, type[hopper.RingStageOp | hopper.RingPhaseOp]], SSAValue
        ]
    )
    """The `hopper.ring_stage` / `hopper.ring_phase` read of each position value so far."""

    @property
    def value(self) -> SSAValue:
        """The position at the builder's insertion point."""
        return self.carried.value

    def take(self, position: SSAValue) -> None:
        """Be at `position`, a ring position of the partitioned kernel (carried there by
        carry-ring-positions): the hopper level's value of it."""
        self.carried.value = self.ctx.index(position)

    def _read(self, part: type[hopper.RingStageOp | hopper.RingPhaseOp]) -> SSAValue:
        """A register of the current position (read again where the earlier read is out of
        scope)."""
        k = self.ctx.k
        found = self.reads.get((self.value, part))
        if found is None or not k.sees(found):
            found = self.reads[(self.value, part)] = k.append(part(self.value)).result
        return found

    @property
    def stage(self) -> SSAValue:
        """The stage (an index value) of the position at the builder's insertion point."""
        return self._read(hopper.RingStageOp)

    @property
    def phase(self) -> SSAValue:
        """The phase parity (an i32 value) of the position at the builder's insertion
        point."""
        return self._read(hopper.RingPhaseOp)


@dataclass(frozen=True)
class Ring:
    """The ring's shared addresses, its barriers and its depth."""

    ctx: KernelContext
    smem: SSAValue
    """The 1024-aligned base of dynamic shared memory, stage 0 (`!hopper.smem`)."""
    empty_address: SSAValue
    """Shared address of the empty barriers (`!hopper.smem`; the split-K broadcast word
    follows them)."""
    full: SSAValue
    """The full barriers, one per stage (a `!hopper.barrier_ring`)."""
    empty: SSAValue
    """The empty barriers, one per stage (a `!hopper.barrier_ring`)."""
    slots: SSAValue
    """The stages and their slots (a `!hopper.slot_ring` at the base)."""

    @staticmethod
    def at(ctx: KernelContext, smem: SSAValue, stage_readers: int) -> Ring:
        """The ring at the shared base `smem`, its barriers after its stages;
        `stage_readers` consumer warpgroups of each CTA of the cluster release each stage."""
        k = ctx.k
        stages = ctx.roles.stages
        plan = ctx.plan
        full_address = k.append(hopper.SmemOffsetOp(smem, plan.stage_bytes * stages)).result
        empty_address = k.append(hopper.SmemOffsetOp(full_address, BARRIER_BYTES * stages)).result
        full_ring = hopper.BarrierRingType(stages, 1)
        empty_ring = hopper.BarrierRingType(stages, stage_readers * ctx.cluster.size)
        full = k.append(hopper.BarrierRingOp(full_address, full_ring)).result
        empty = k.append(hopper.BarrierRingOp(empty_address, empty_ring)).result
        slot_ring = hopper.SlotRingType(stages, plan.stage_bytes, plan.slot_offsets)
        slots = k.append(hopper.SlotRingOp(smem, 0, slot_ring)).result
        return Ring(ctx, smem, empty_address, full, empty, slots)

    @property
    def base(self) -> SSAValue:
        """The base of dynamic shared memory as a u32 register (a cast of `smem`, for a
        ptx op or index arithmetic that reads it)."""
        return self.ctx.cast(self.smem, ptx.U32)

    @property
    def stages(self) -> int:
        """Depth of the ring."""
        return self.ctx.roles.stages

    @property
    def after_barriers(self) -> SSAValue:
        """The shared address after the empty barriers (the split-K broadcast word), as a
        u32 register."""
        offset = hopper.SmemOffsetOp(self.empty_address, BARRIER_BYTES * self.stages)
        return self.ctx.cast(self.ctx.k.append(offset).result, ptx.U32)

    def init_barriers(self, leader: SSAValue) -> None:
        """Initialize every stage's full and empty barrier (by `leader`)."""
        for stage in range(self.stages):
            self.ctx.put(hopper.MbarrierInitOp(self.barrier(self.full, stage)), leader)
            self.ctx.put(hopper.MbarrierInitOp(self.barrier(self.empty, stage)), leader)

    def start(self, op: hopper.RingStartOp) -> Position:
        """The position of a role's `hopper.ring_start` (made by carry-ring-positions),
        whose copy is made here; its loops carry it as the partitioned kernel's do."""
        return Position(self.ctx, Carried(place_ring_start(self.ctx, op), op, inclusive=False))

    def barrier(self, ring: SSAValue, stage: SSAValue | int) -> SSAValue:
        """The barrier of stage `stage` (an index value, a u32 register read as one, or a
        constant) of `ring`."""
        if isinstance(stage, SSAValue):
            stage = Values(self.ctx).of(stage)
        return self.ctx.k.append(hopper.RingBarrierOp(ring, stage)).result

    def stage_slots(self, at: Position) -> SSAValue:
        """The slots of the stage at `at` (`hopper.slot_stage`: a `!hopper.stage`)."""
        return self.ctx.k.append(hopper.SlotStageOp(self.slots, at.value)).result

    def slot(self, stage: SSAValue, slot: int) -> SSAValue:
        """The address of slot `slot` of a stage (`hopper.ring_slot`: an `!hopper.smem`)."""
        return self.ctx.k.append(hopper.RingSlotOp(stage, slot)).result

    def advance(self, at: Position) -> None:
        """Move a ring position one stage on (the phase flips at the wrap): the position is
        now `hopper.ring_advance`'s result."""
        at.carried.value = self.ctx.k.append(hopper.RingAdvanceOp(at.value)).result

    def advance_as(self, at: Position, op: hopper.RingAdvanceOp) -> None:
        """Move a ring position one stage on as the partitioned kernel's `op` does (the K
        block's advance): the copy of `op`'s result."""
        self.advance(at)
        self.ctx.regs[op.result] = at.value

    def wait_full(self, at: Position) -> None:
        """Wait until the stage at `at` has been filled."""
        k = self.ctx.k
        k.append(hopper.MbarrierWaitOp(self.barrier(self.full, at.stage), at.phase))

    def wait_empty(self, at: Position) -> None:
        """Wait until the stage at `at` has been released (the parity flipped, an
        `arith.xori` with 1: the first pass through the ring does not block)."""
        k = self.ctx.k
        empty = self.barrier(self.empty, at.stage)
        phase = at.phase
        one = k.append(arith.ConstantOp(IntegerAttr(1, i32))).result
        parity = k.append(arith.XOrIOp(phase, one)).result
        k.append(hopper.MbarrierWaitOp(empty, parity))

    def release(self, stage: SSAValue, pred: SSAValue | None, threads: ConsumerThreads) -> None:
        """Arrive on the empty barrier of `stage` (an index value or a u32 register read as
        one) (if `pred`, where given): one thread of each consumer
        warpgroup arrives once at every CTA of the cluster (thread t at CTA rank t).

        One arrival per warpgroup suffices: `wgmma.wait_group` returns only when the
        warpgroup's wgmma groups, which read the stage, are complete.
        """
        k = self.ctx.k
        empty = self.barrier(self.empty, stage)
        signal = threads.signaller
        if pred is not None:
            signal = Values(self.ctx).both(pred, signal)
        if self.ctx.cluster.size == 1:
            self.ctx.put(hopper.MbarrierArriveOp(empty), signal)
            return
        remote = k.append(hopper.MapaOp(empty, threads.thread_in_warpgroup)).result
        self.ctx.put(hopper.MbarrierArriveOp(remote, "cluster"), signal)


def place_ring_op(ctx: KernelContext, op: Operation) -> bool:
    """Emit the copy of a role's ring start, or a ping-pong turn's skip of the other
    consumer's K blocks (`hopper.ring_skip`: the loop's trip count, then
    `hopper.ring_advance_by`); False for another op."""
    if isinstance(op, hopper.RingStartOp):
        place_ring_start(ctx, op)
        return True
    if not isinstance(op, hopper.RingSkipOp):
        return False
    count = trip_count(ctx, op.lower, op.upper, op.step)
    skip = hopper.RingAdvanceByOp(ctx.index(op.position), count)
    ctx.regs[op.result] = ctx.k.append(skip).result
    return True


def trip_count(ctx: KernelContext, lower: SSAValue, upper: SSAValue, step: SSAValue) -> SSAValue:
    """The iterations of a loop from `lower` to `upper` by `step` (kernel values) at the
    hopper level, an index value: `ceil((upper - lower) / step)`, 0 where
    `lower >= upper` (a select on the comparison's predicate)."""
    values = Values(ctx)
    lb, ub = ctx.index(lower), ctx.index(upper)
    trips = values.ceildiv(values.sub(ub, lb), ctx.index(step))
    over = values.pred(values.cmp("hs", lb, ub))
    return values.select(over, values.const(0), trips)


def place_ring_start(ctx: KernelContext, op: hopper.RingStartOp) -> SSAValue:
    """The copy of a role's `hopper.ring_start`: made at the first call, where the role
    starts walking the ring (the consumers' before their thread arithmetic)."""
    found = ctx.regs.get(op.result)
    if found is None:
        copy = hopper.RingStartOp(op.result.type)
        found = ctx.regs[op.result] = ctx.k.append(copy).result
    return found
