"""`lower-schedule-to-hopper`: a partitioned, materialized kernel becomes a `hopper.kernel`.

The input is a kernel after `materialize-schedule` and `partition-warp-roles`. Each such
`func.func` is replaced by a `hopper.kernel` (its parameters with their launch data, the
register cap, the block size, the launch and the dynamic shared memory) whose body mixes
hopper ops (TMA, mbarriers, wgmma), the index arithmetic and ptx instructions (fences,
setmaxnreg, named barriers), in `scf.for` / `scf.if`; the body reads the parameters as
typed values (`hopper.array_param` an array as the kernel's memref,
`hopper.extent_param` a runtime extent as an index, `hopper.tensormap_param` a tensor
map). `convert-hopper-to-ptx` then makes it a `ptx.module` / `ptx.entry` and lowers the
hopper ops, `convert-scf-to-ptx` the loops and branches, `convert-arith-to-ptx` the index
arithmetic (the TMA copies' coordinates among it), and `-t ptx` prints PTX.

What each piece of the materialized IR becomes:

- the kernel's arguments are its parameters: an array a `hopper.array_param` (a ptx op
  that takes its address reads it through a cast to `!ptx.reg<u64>`), a runtime extent a
  `hopper.extent_param` (an index value of the arithmetic);
- index arithmetic (`arith` on `index`, `gpu.block_id`, `gpu.grid_dim`) is copied as it
  is, in each role's program order: what runs on the GPU is exactly the schedule's
  arithmetic (persistent loop, split-K slice, batch, grouped raster); where a ptx or
  hopper op reads an index value, a `builtin.unrealized_conversion_cast` gives its u32
  register, and `convert-arith-to-ptx` lowers the arithmetic to 32-bit instructions;
- `scf.for` / `scf.if` stay structured: an `scf.for` on the index bounds (its induction
  variable the block argument) and an `scf.if` on the condition, each carrying the names
  of the labels convert-scf-to-ptx makes of it; the roles' dispatch, the ping-pong turn
  and the skipped order waits and loads are `scf.if`s on ptx predicates (cast to i1);
- `hopper.warp_specialize`: each region is lowered as its role's program (the producer
  region by the producer warpgroup, the consumer region by the consumer warpgroups);
- the mainloop `sched.load_tile`s of the producer region become TMA loads issued by one
  elected thread of the producer warpgroup into slot `hopper.slot` of a `stages`-deep ring in
  dynamic shared memory, after waiting on the stage's empty barrier, with the stage's
  bytes announced on its full barrier (`mbarrier.arrive.expect_tx`). Tensor maps come
  from each operand's roles and layout: the contiguous axis (k for A[M,K] and W[N,K], n
  for B[K,N]) is cut into 64-element boxes written with the 128-byte swizzle; batch and
  absent axes are box dimensions of extent 1. Boundary boxes are zero-filled by TMA;
- `sched.mma` becomes, per K block, a wait on the stage's full barrier, `wgmma.fence`,
  one `wgmma.mma_async` per k16 step and N chunk, `wgmma.commit_group`, then
  `wgmma.wait_group 1` and the release of the previous stage on its empty barrier (one
  group stays in flight). Cooperative: the two consumer warpgroups each take 64 rows of
  every tile. Ping-pong: they take alternate tiles (named barriers order their
  mainloops; each skips the other's K blocks in the ring). Non-specialized: both compute
  and thread 0 also loads, `stages - 1` K blocks ahead;
- `sched.zero_tile` becomes a `hopper.zero_accumulator` per wgmma chunk, which the K loop
  carries (each wgmma returns the next) and the epilogue and the partial stores read
  element by element (`hopper.accumulator_element`); the zero tile of a stream-K sum is
  f32 registers set to zero;
- `sched.epilogue` is evaluated in registers on the wgmma accumulator layout, element
  by element (its fusion ops are pointwise; an operand tile is read at the element's
  coordinates through its roles, so a bias [n], a [1, n] row or an [m, n] operand all
  work), as arith and math on f32 values (the roundings to bf16 / f16 `arith.truncf`,
  each stored pair one `hopper.truncf_pair`, which convert-arith-to-ptx and
  convert-hopper-to-ptx lower); an operand's elements are `hopper.global_load`s of
  typed values; each `sched.store_tile` is a guarded, vectorized `hopper.global_store`
  clipped at the output's bounds (epilogue "registers": i64 addresses, i1 bounds tests,
  the column's a signed i32 count), or 64 x 128-byte swizzled boxes staged in shared
  memory (stmatrix, `hopper.smem_store` for f32) and stored by TMA (epilogue "smem", for
  outputs with 16-byte rows);
- split-K: `sched.store_partial` / `sched.arrive` / `sched.reduce_partials` become
  coalesced f32 workspace traffic (`hopper.global_store` / `hopper.global_load` of f32
  values, the sum `arith.addf` in slice order) and an acq_rel atomic counter (ptx).

`lower_kernel(func)` returns the hopper.kernel; it carries the launch data (each
parameter's array, extent or tensor map, the grid, cluster and shared memory) that
convert-hopper-to-ptx copies onto the ptx.entry, where the cuda back end reads it
(mmcomp.backend.plan). The pieces live
in `mmcomp.lowering.hopper`, one module per concern.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    UnrealizedConversionCastOp,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

from mmcomp.analysis.ring_positions import has_ring_positions, ring_start_of
from mmcomp.analysis.warp_roles import (
    ROLES_ATTR,
    level_error,
    mainloop_of,
    warp_roles,
    warp_specialize_of,
)
from mmcomp.dialects import hopper, ptx
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParamsAttr
from mmcomp.errors import ScheduleError
from mmcomp.lowering.hopper.barriers import NamedBarriers
from mmcomp.lowering.hopper.context import Cluster, KernelContext
from mmcomp.lowering.hopper.kernel import emit_kernel
from mmcomp.lowering.hopper.plan import (
    SHARED_NAME,
    SMEM_ALIGN,
    OperandPlan,
    TmaOperand,
    extent_args,
    launch_data,
)

__all__ = ["LowerScheduleToHopper", "TmaOperand", "lower_kernel"]


def launch_function_of(func: FuncOp) -> FuncOp | None:
    """The launch function of a kernel with runtime extents (its `sched.grid` symbol, in
    the kernel's module), None for a static kernel."""
    grid = func.attributes.get("sched.grid")
    if not isinstance(grid, SymbolRefAttr):
        return None
    found = SymbolTable.lookup_symbol(func, grid)
    if not isinstance(found, FuncOp):
        raise ScheduleError(
            f"lower-schedule-to-hopper: @{func.sym_name.data}: no launch function "
            f"@{grid.root_reference.data} in the module (its 'sched.grid')"
        )
    return found


def lower_kernel(func: FuncOp, launch: FuncOp | None = None) -> hopper.KernelOp:
    """Lower one partitioned kernel: the hopper.kernel, its launch data on it. A kernel
    with runtime extents needs its launch function (`launch`, else looked up in the
    kernel's module), which sizes its split-K workspaces."""
    where = f"lower-schedule-to-hopper: @{func.sym_name.data}"
    params = func.attributes.get(PARAMS_ATTR)
    if not isinstance(params, ScheduleParamsAttr) or ROLES_ATTR not in func.attributes:
        raise ScheduleError(f"{where}: run materialize-schedule and partition-warp-roles first")
    roles = warp_roles(func)
    roles_op = warp_specialize_of(func, where)
    check_ring_positions(roles_op, roles.stages, where)
    if not has_ring_positions(roles_op):
        raise ScheduleError(
            f"{where}: the kernel carries no ring positions; run carry-ring-positions first"
        )
    if launch is None:
        launch = launch_function_of(func)
    func = func.clone()
    plan = OperandPlan.build(func, params.data, roles)
    arguments = [
        (f"arg{arg.index}", "ptr" if isinstance(arg.type, MemRefType) else "u32")
        for arg in func.body.block.args
    ]
    tensor_maps = [(f"tmap{j}", "tmap") for j in range(plan.tensor_maps)]
    kernel = hopper.KernelOp(
        func.sym_name.data,
        arguments + tensor_maps,
        maxnreg=roles.entry_registers,
        reqntid=(roles.threads,),
        shared=SHARED_NAME,
        shared_align=SMEM_ALIGN,
    )
    builder = ptx.KernelBuilder(kernel)
    ctx = KernelContext(
        func,
        params.data,
        roles,
        plan,
        builder,
        NamedBarriers.allocate(roles),
        Cluster(plan.cluster_size),
        warp_specialize_of(func, where),
        mainloop=mainloop_of(func),
        launch_function=launch,
    )
    emit_kernel(ctx)
    erase_unread_casts(kernel)
    arrays, launch_attr = launch_data(plan)
    extents = [ptx.KernelExtent(name) for _, name in extent_args(func)]
    maps = [*plan.operands, *plan.store_maps.values()]
    write_launch_data(kernel, arrays, extents, maps, launch_attr)
    return kernel


def check_ring_positions(roles_op: hopper.WarpSpecializeOp, stages: int, where: str) -> None:
    """Refuse a role's ring position whose depth is not the ring's (`stages`, from
    sched.params): the params were edited after carry-ring-positions."""
    for role, region in zip(roles_op.ROLES, roles_op.regions, strict=True):
        start = ring_start_of(region)
        if start is None:
            continue
        position = start.result.type
        assert isinstance(position, hopper.RingPositionType)
        if position.stages.data != stages:
            raise ScheduleError(
                f"{where}: the {role} region's ring position has {position.stages.data} stages, "
                f"but sched.params has stages = {stages} (run carry-ring-positions after "
                "editing the stages)"
            )


def erase_unread_casts(kernel: hopper.KernelOp) -> None:
    """Erase the casts of a value to a register that nothing reads (made for a read the
    lowering ended up not emitting), innermost first."""
    for op in reversed(list(kernel.walk())):
        if isinstance(op, UnrealizedConversionCastOp) and not any(r.uses for r in op.results):
            op.detach()
            op.erase()


def write_launch_data(
    kernel: hopper.KernelOp,
    arrays: Sequence[ptx.KernelArray],
    extents: Sequence[ptx.KernelExtent],
    maps: Sequence[ptx.TensorMap],
    launch: ptx.Launch,
) -> None:
    """Put the launch data on the kernel, parameter by parameter (pointers, runtime extents,
    then tensor maps), and the launch (mmcomp.dialects.ptx.launch)."""
    infos: list[Attribute] = [ptx.KernelArrayAttr(array) for array in arrays]
    infos += [ptx.KernelExtentAttr(extent) for extent in extents]
    infos += [ptx.TensorMapAttr(tensor_map) for tensor_map in maps]
    kernel.properties["params"] = ArrayAttr(
        [
            ptx.ParamAttr(param.param_name.data, param.kind.data, info)
            for param, info in zip(kernel.params.data, infos, strict=True)
        ]
    )
    kernel.properties["launch"] = ptx.LaunchAttr(launch)


class LowerScheduleToHopper(ModulePass):
    """Replace each partitioned kernel by a hopper.kernel of hopper ops on typed values."""

    name = "lower-schedule-to-hopper"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """Lower every partitioned kernel of the module; a kernel not yet partitioned, or a
        fusion not yet materialized, is an error naming the passes to run first."""

        del ctx
        functions = [func for func in op.ops if isinstance(func, FuncOp)]
        for func in functions:
            missing = "no ring positions" if ROLES_ATTR in func.attributes else f"no '{ROLES_ATTR}'"
            too_early = level_error(self.name, func, missing)
            if too_early is not None:
                raise too_early
        for func in functions:
            if ROLES_ATTR not in func.attributes:
                continue
            try:
                kernel = lower_kernel(func)
            except ScheduleError as error:
                raise DiagnosticException(str(error)) from error
            op.body.block.insert_op_before(kernel, func)
            func.detach()
            func.erase()
