"""The skeleton of a lowered kernel: prologue, warp roles, the consumers' tile ops.

Prologue: dynamic shared memory aligned to 1024 at run time, the kernel's parameters read
as typed values (tensor maps, arrays as memrefs, runtime extents as index), the ring's barriers
initialized by thread 0, tensor-map prefetch, `bar.sync 0` (and a cluster barrier), then
`griddepcontrol.wait` and `griddepcontrol.launch_dependents` (programmatic dependent
launch: the prologue overlaps the previous grid's tail, and the next grid's ours). Then
warpgroup 0, the producer, lowers its register budget (`setmaxnreg.dec`) and its elected
thread runs the producer region of `hopper.warp_specialize`
(`mmcomp.lowering.hopper.producer`); the consumer warpgroups raise theirs and run the
consumer region with the mainloop of their warp-specialization mode, split-K and the
epilogue. Without specialization there is only the consumer region, run by every
warpgroup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue

from mmcomp.analysis.ring_positions import is_load_ahead, walk_carried
from mmcomp.arch import limits as hw
from mmcomp.dialects import hopper, ptx, sched
from mmcomp.errors import ScheduleError
from mmcomp.ir.narrowing import is_memref
from mmcomp.lowering.hopper.context import (
    Accumulator,
    Carried,
    ConsumerThreads,
    KernelContext,
    Threads,
)
from mmcomp.lowering.hopper.control import Walker, branch, emit_loop
from mmcomp.lowering.hopper.epilogue import Epilogue
from mmcomp.lowering.hopper.index import place
from mmcomp.lowering.hopper.mainloop import MAINLOOPS, ConsumerMainloop, zero_accumulator
from mmcomp.lowering.hopper.plan import SHARED_NAME, SMEM_ALIGN, extent_args
from mmcomp.lowering.hopper.pointwise import Pointwise
from mmcomp.lowering.hopper.producer import Loads, emit_load_ahead, emit_producer
from mmcomp.lowering.hopper.ring import Ring
from mmcomp.lowering.hopper.split_k import SplitK
from mmcomp.lowering.hopper.values import Values

WARPGROUP_SHIFT = hw.WARPGROUP_SIZE.bit_length() - 1
"""log2 of the threads of a warpgroup: %tid.x >> WARPGROUP_SHIFT is the warpgroup."""


def cluster_sync(ctx: KernelContext) -> None:
    """All threads of the cluster meet (after barrier init, before exit)."""
    if ctx.cluster.size == 1:
        return
    ctx.k.append(ptx.ClusterBarrierOp("arrive"))
    ctx.k.append(ptx.ClusterBarrierOp("wait"))


def emit_prologue(ctx: KernelContext) -> Ring:
    """Shared memory, barriers, tensor maps, the parameters' typed values; returns the
    ring."""
    k = ctx.k
    mode = MAINLOOPS[ctx.roles.specialization]
    values = Values(ctx)
    tid = values.thread_id()
    smem = k.append(hopper.SharedBaseOp(SHARED_NAME, hopper.SmemType(SMEM_ALIGN))).result
    ring = Ring.at(ctx, smem, mode.stage_readers(ctx.roles))
    tensor_maps = [*ctx.plan.operands, *ctx.plan.store_maps.values()]
    ctx.maps = [
        k.append(hopper.TensorMapParamOp(f"tmap{j}", hopper.TensorMapType.of(tensor_map))).result
        for j, tensor_map in enumerate(tensor_maps)
    ]
    for index, arg in enumerate(ctx.func.body.block.args):
        read = (
            hopper.ArrayParamOp(f"arg{index}", arg.type)
            if is_memref(arg.type)
            else hopper.ExtentParamOp(f"arg{index}", IndexType())
        )
        ctx.regs[arg] = k.append(read).results[0]
    for arg, name in extent_args(ctx.func):
        ctx.extents[name] = ctx.regs[arg]
    if ctx.launch_function is not None and ctx.plan.dynamic_workspaces:
        ctx.cta_tiles = emit_cta_tiles(ctx, ctx.launch_function)
    leader = values.cmp("eq", tid, values.const(0))
    ctx.threads = Threads(tid, leader)
    ring.init_barriers(leader)
    ctx.put(ptx.FenceOp("mbarrier_init"), leader)
    for tmap in ctx.maps:
        ctx.put(hopper.TensorMapPrefetchOp(tmap), leader)
    k.bar()
    cluster_sync(ctx)
    # Programmatic dependent launch: the grid before this one in the stream may still be
    # running up to here (so the prologue overlaps its tail); no thread touches global
    # memory before it completes. The next grid may launch now, and waits likewise.
    k.append(ptx.GridDepWaitOp())
    k.append(ptx.GridDepLaunchOp())
    cluster = ctx.cluster
    if cluster.size > 1:
        rank = k.append(hopper.IdOp("cluster_cta_rank")).result
        cluster.rank_is = [k.setp("eq", rank, k.const(q)) for q in range(cluster.size)]
        cluster.mask = k.const((1 << cluster.size) - 1, ptx.U16)
    return ring


def emit_cta_tiles(ctx: KernelContext, launch: func.FuncOp) -> SSAValue:
    """The CTA tiles at the kernel's runtime extents (the split-K workspaces' `?`): the
    launch function's arithmetic, placed in the prologue; returns its value."""
    for arg, name in extent_args(launch):
        ctx.regs[arg] = ctx.extent_value(name)
    for op in launch.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return op.operands[1]
        if not place(ctx, op):
            raise ScheduleError(f"{ctx.where}: cannot place {op.name} of @{launch.sym_name.data}")
    raise ScheduleError(f"{ctx.where}: @{launch.sym_name.data} returns nothing")


def emit_kernel(ctx: KernelContext) -> None:
    """The whole kernel: prologue, then the producer and consumer roles."""
    k = ctx.k
    ring = emit_prologue(ctx)
    values = Values(ctx)
    warpgroup = values.shr(ctx.threads.tid, values.const(WARPGROUP_SHIFT))
    if not ctx.roles.producers:
        # Non-specialized: every warpgroup computes; thread 0 also issues the loads.
        emit_consumer(ctx, ring, values.reg(warpgroup))
        cluster_sync(ctx)
        k.ret()
        return
    is_producer = values.cmp("eq", warpgroup, values.const(0))
    consumer_label = k.fresh_label("consumer")
    done_label = k.fresh_label("done")
    roles = branch(ctx, is_producer, (consumer_label, done_label), otherwise=True, predicate=True)
    with k.inside(roles.true_region.block):
        k.append(ptx.SetmaxnregOp("dec", ctx.roles.registers[0]))
        # The elected thread's branch ends where the roles' does.
        elected = branch(ctx, ctx.threads.leader, (done_label,), predicate=True)
        with k.inside(elected.true_region.block):
            emit_producer(ctx, ring)
    with k.inside(roles.false_region.block):
        k.append(ptx.SetmaxnregOp("inc", ctx.roles.registers[1]))
        emit_consumer(ctx, ring, values.reg(values.sub(warpgroup, values.const(1))))
    cluster_sync(ctx)
    k.ret()


def emit_consumer(ctx: KernelContext, ring: Ring, consumer: SSAValue) -> None:
    """The consumer warpgroups: the schedule's loops with mainloop and epilogue."""
    k = ctx.k
    mainloop = MAINLOOPS[ctx.roles.specialization](
        ctx, ring, lambda loop: epilogue.prefetch_epilogue_operands(loop)
    )
    threads = consumer_threads(ctx, mainloop, consumer)
    thread_in_warpgroup = threads.thread_in_warpgroup
    mainloop.start(threads)
    values = Values(ctx)
    epilogue = Epilogue(ctx, ring, mainloop, threads, Pointwise(k, ctx.where))
    split_k = SplitK(ctx, ring, mainloop)

    # The split-K and stream-K partial ops, each lowered by its SplitK method.
    partial_ops: dict[type[Operation], Callable[[Any], None]] = {
        sched.ArriveSegmentOp: split_k.arrive_segment,
        sched.AccumulatePartialOp: split_k.accumulate_partial,
        sched.StorePartialOp: split_k.store_partial,
        sched.ArriveOp: split_k.arrive,
        sched.ReducePartialsOp: split_k.reduce_partials,
    }

    def special(op: Operation) -> bool:
        """The consumers' own lowering of a tile op; False for the generic one."""
        if isinstance(op, scf.ForOp) and op is ctx.mainloop:
            mainloop.emit(op)
            return True
        if isinstance(op, sched.ZeroTileOp):
            if is_sum_init(op, ctx.mainloop):
                ctx.accumulators[op.result] = split_k.zero_sum()
                return True
            ctx.accumulators[op.result] = zero_accumulator(ctx)
            return True
        if isinstance(op, hopper.ConsumerIndexOp):
            ctx.regs[op.result] = values.of(threads.consumer)
            return True
        if isinstance(op, hopper.LeaderOp):
            ctx.regs[op.result] = ctx.threads.leader
            return True
        if isinstance(op, scf.IfOp) and is_load_ahead(op):
            emit_load_ahead(ctx, Loads(ctx, ring), op)
            return True
        if (
            isinstance(op, scf.ForOp)
            and len(op.iter_args) > walk_carried(op)
            and op is not ctx.mainloop
        ):
            emit_sum_loop(ctx, op, walker)
            return True
        partial = partial_ops.get(type(op))
        if partial is not None:
            partial(op)
            return True
        return epilogue.collect(op)

    walker = Walker(ctx, special)
    walker.walk(ctx.warp_specialize.consumer.block.ops)
    if ctx.plan.store_maps:
        # Shared memory must outlive the TMA stores that read it.
        leader = values.cmp("eq", thread_in_warpgroup, values.const(0))
        ctx.put(ptx.BulkWaitOp(0, read=False), leader)


def consumer_threads(
    ctx: KernelContext, mainloop: ConsumerMainloop, consumer: SSAValue
) -> ConsumerThreads:
    """A consumer thread's warpgroup, warp, lane and first accumulator row and column: the
    hopper level's index arithmetic on %tid.x, read by the ptx ops as registers."""
    values = Values(ctx)
    tid = ctx.threads.tid
    thread_in_warpgroup = values.and_(tid, values.const(hw.WARPGROUP_SIZE - 1))
    signaller = values.cmp("lo", thread_in_warpgroup, values.const(ctx.cluster.size))
    warp = values.and_(values.shr(tid, values.const(5)), values.const(3))
    lane = values.and_(tid, values.const(31))
    # Row of this thread's first accumulator element in the CTA tile, and its column.
    first = values.add(values.mul(warp, values.const(16)), values.shr(lane, values.const(2)))
    row0 = mainloop.first_row(consumer, values.reg(first))
    col0 = values.mul(values.and_(lane, values.const(3)), values.const(2))
    return ConsumerThreads(
        consumer,
        values.reg(thread_in_warpgroup),
        signaller,
        values.reg(warp),
        values.reg(lane),
        row0,
        values.reg(col0),
    )


def is_sum_init(op: sched.ZeroTileOp, mainloop: scf.ForOp | None) -> bool:
    """The zero tile starts a sum of partial tiles (a loop other than the K loop)."""
    users = [use.operation for use in op.result.uses]
    return bool(users) and all(
        isinstance(user, scf.ForOp) and user is not mainloop for user in users
    )


def emit_sum_loop(ctx: KernelContext, loop: scf.ForOp, walker: Walker) -> None:
    """A loop that carries sums of partial tiles (stream-K's segments): the hopper level's
    loop carries every register of its accumulators (its `iter_args`), which the body
    updates in place."""
    positions = walk_carried(loop)
    sums = [carried_sum(ctx, ctx.accumulators[init], loop) for init in loop.iter_args[positions:]]
    yielded = loop.body.block.last_op
    assert isinstance(yielded, scf.YieldOp)
    args = loop.body.block.args[1 + positions :]

    def body() -> None:
        """One segment: the sums are the registers the loop carries."""
        for arg, chunks in zip(args, sums, strict=True):
            ctx.accumulators[arg] = Accumulator([[reg.value for reg in chunk] for chunk in chunks])
        walker.walk(loop.body.block.ops)
        for arg, value in zip(args, yielded.operands[positions:], strict=True):
            if ctx.accumulators[value] is not ctx.accumulators[arg]:
                raise ScheduleError(f"{ctx.where}: a sum loop must update its sums in place")

    emit_loop(ctx, loop, body)
    for result, chunks in zip(loop.results[positions:], sums, strict=True):
        ctx.accumulators[result] = Accumulator([[reg.value for reg in chunk] for chunk in chunks])
        for chunk in chunks:
            for reg in chunk:
                ctx.carried.remove(reg)


def carried_sum(ctx: KernelContext, sums: Accumulator, loop: scf.ForOp) -> list[list[Carried]]:
    """The registers of a sum of partial tiles, carried by `loop` (per chunk)."""
    if sums.fragments:
        raise ScheduleError(f"{ctx.where}: a sum loop must carry sums of partial tiles")
    return [[ctx.carry(reg, loop) for reg in chunk] for chunk in sums.chunks]
