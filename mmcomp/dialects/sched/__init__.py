"""The `sched` dialect: which CTA computes which tile, in what order, over which K range.

Design (the passes and the executor that read it are described in
docs/schedule-passes.md):

* The schedule parameters live in ONE attribute, `#sched.params<...>` (ScheduleParamsAttr;
  `.data` is a frozen `ScheduleParams`, always valid). Before `tile-split` they sit on the
  `func.func` as the discardable attribute `sched.params` (PARAMS_ATTR). The attribute
  remembers which keys its text wrote (`ScheduleParams.written`): `choose-schedule` keeps
  those and lets the heuristic choose the others for the problem, as `mmcomp.compile` does
  with its keywords. Until then a key left out holds a problem-free fill (the defaults
  below, a 64-row tile under ping-pong, warpgroup / instr derived from the tile), which
  must be valid with the written keys, so `#sched.params<tile = 128x128x64>` and
  `#sched.params<warp_specialization = pingpong>` are valid. A partial attribute prints
  only its written keys; `sched.schedule` fixes every key. Printed in full:

      #sched.params<tile = 128x256x64, warpgroup = 64x256, instr = m64n256k16, stages = 4,
                    cluster = 1x1, raster = m, swizzle = 8, strategy = persistent,
                    split_k = 1, warp_specialization = cooperative, registers = 40/232,
                    epilogue = smem>

  `swap_ab` (false unless written) is printed only where it is true: `swap_ab = true`
  computes each tile's C^T = W A^T, the tile's N being wgmma's m and its M wgmma's n;
  tile and warpgroup stay in problem terms, instr is the wgmma as it runs (docs/
  schedule.md, "Swap-AB"). `#sched.params<swap_ab = true>` fills a 64-row tile and the
  registers epilogue.

* The iteration space and its transforms: one `sched.schedule params #sched.params<...>`
  op in the body of the scheduled `func.func` (its verifier checks the params against the
  function: shared memory for every A and B operand, split-K against the K blocks, ...).
  Its single block lists transforms on axis handles of type `!sched.axis<extent>`:

      sched.schedule params #sched.params<tile = 128x128x64, swizzle = 8> {
        %m, %n, %k = sched.space m = 300, n = 500, k = 200
        %mt, %mi = sched.split %m by 128 : !sched.axis<300>        // m = mt * 128 + mi
        %nt, %ni = sched.split %n by 128 : !sched.axis<500>
        %kt, %ki = sched.split %k by 64 : !sched.axis<200>
        %ks, %kb = sched.split %kt into 2 : !sched.axis<4>         // split-K: 2 slices
        %t = sched.swizzle %nt, %mt group 8 : !sched.axis<4>, !sched.axis<3>
        %it, %cta = sched.split %t by 12 : !sched.axis<12>          // persistent loop
        sched.parallelize %cta to block_x : !sched.axis<12>
        sched.parallelize %it to serial : !sched.axis<1>
        sched.reorder %it, %kb : !sched.axis<1>, !sched.axis<2>
      }

  - `sched.split %a by F`: a = outer * F + inner; outer has ceil(E / F) values, inner F.
    `sched.split %a into P`: P outer values, inner ceil(E / P), same formula (the last
    parts may be short or empty). Indices a >= E are out of bounds (boundary tiles).
  - `sched.merge %x, %y, ...`: t = (x * Y + y) * Z + ...; the LAST operand varies fastest.
  - `sched.swizzle %slow, %fast group G`: a merge of two axes in grouped order (CUTLASS's and
    Triton's grouped rasterization): the slow axis is cut into bands of G; bands are
    visited in order; inside a band the fast axis advances slowest and the slow axis
    fastest. G = 1 is `sched.merge %slow, %fast`. Inverse, with
    S, F the extents (`swizzle_index`):
      band = t / (G * F); r = t % (G * F); g = min(G, S - band * G)
      slow = band * G + r % g; fast = r / g
    Raster m (the M tile index fastest for swizzle 1) is `sched.swizzle %nt, %mt`; raster n
    is `sched.swizzle %mt, %nt`.
  - `sched.parallelize %a to block_x | block_y | block_z | warpgroup | instruction |
    serial`: binds an axis to a hardware index or a sequential loop. The persistent loop
    `for t = blockIdx.x; t < tiles; t += gridDim.x` is `split %t by grid`, inner on
    block_x, outer serial.
  - `sched.reorder %a, %b, ...`: the serial loop order, outermost first.
  Every op takes an optional `{...}` attribute dictionary before its `:` for pass-specific
  annotations (e.g. `{grid = 12 : i64}`).

* `materialize-schedule` lowers to scf / arith / memref / gpu plus these tile-level ops,
  which the CPU executor runs with numpy and the Hopper lowering maps to TMA / wgmma:

      %a = sched.load_tile %A[%i, %j] : memref<300x200xbf16> -> tensor<128x64xbf16>
      %z = sched.zero_tile : tensor<128x128xf32>
      %c = sched.mma %a [m, k], %b [n, k], %z [m, n]
             : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<128x128xf32>
      %o = sched.epilogue(%c, %bias) : (tensor<128x128xf32>, tensor<1x128xf32>)
             -> tensor<128x128xbf16> { ^bb0(...): fusion ops ...; sched.yield %r : ... }
      sched.store_tile %o, %C[%i, %j] : tensor<128x128xbf16>, memref<300x500xbf16>
      // split-K through an f32 workspace, reduced in slice order 0, 1, ..., S-1:
      sched.store_partial %c, %ws[%slice, %tile] : tensor<128x128xf32>, memref<2x12x128x128xf32>
      %old = sched.arrive %counters[%tile] : memref<12xi32> -> index
      %sum = sched.reduce_partials %ws[%tile] : memref<2x12x128x128xf32> -> tensor<128x128xf32>

  Between the strategy patterns of materialize-schedule and its tile patterns, a work
  unit's tile is `sched.contract_tile` (its contractions over a range of K blocks, the
  region one block's `fusion.mma`s on tiles) and `sched.write_tile` (its epilogue on
  tiles and the stores): mmcomp/dialects/sched/work_ops.py.

  load_tile reads the box starting at the indices (one per memref dimension) and reads
  zeros out of bounds; store_tile writes the box clipped to the memref's bounds; mma adds
  the product over k to the f32 accumulator, tile axes named by roles as in `fusion.mma`
  (batch and absent axes have extent 1 in a tile).
"""

from xdsl.ir import Dialect

from mmcomp.dialects.sched.attrs import (
    AxisType,
    axis_extent,
)
from mmcomp.dialects.sched.group_ops import (
    MAX_GROUPS,
    GroupRowsOp,
    GroupTileOp,
    group_tiles_bound,
    search_steps,
)
from mmcomp.dialects.sched.ops import (
    AxisListOp,
    MergeOp,
    ParallelizeOp,
    ReorderOp,
    ScheduleOp,
    SpaceOp,
    SplitOp,
    SwizzleOp,
    TransformOp,
    swizzle_index,
)
from mmcomp.dialects.sched.params import (
    BINDINGS,
    EPILOGUES,
    PARAMS_ATTR,
    RASTERS,
    REGISTER_BASE,
    STRATEGIES,
    STREAM_K_STRATEGIES,
    SWIZZLE_LIMIT,
    WARP_SPECIALIZATIONS,
    ScheduleParams,
    ScheduleParamsAttr,
    derive_instr,
    derive_warpgroup,
    tile_rows,
)
from mmcomp.dialects.sched.problem import (
    Problem,
    ceil_div,
    check_extents,
    format_dims,
    problem_of,
)
from mmcomp.dialects.sched.tile_ops import (
    AccumulatePartialOp,
    ArriveOp,
    ArriveSegmentOp,
    EpilogueOp,
    LoadTileOp,
    MmaOp,
    ReducePartialsOp,
    StorePartialOp,
    StoreTileOp,
    YieldOp,
    ZeroTileOp,
)
from mmcomp.dialects.sched.work_ops import ContractTileOp, WriteTileOp

__all__ = [
    "ceil_div",
    "format_dims",
    "Problem",
    "check_extents",
    "problem_of",
    "PARAMS_ATTR",
    "RASTERS",
    "STRATEGIES",
    "WARP_SPECIALIZATIONS",
    "EPILOGUES",
    "BINDINGS",
    "SWIZZLE_LIMIT",
    "REGISTER_BASE",
    "tile_rows",
    "derive_warpgroup",
    "derive_instr",
    "ScheduleParams",
    "ScheduleParamsAttr",
    "AxisType",
    "axis_extent",
    "TransformOp",
    "AxisListOp",
    "ScheduleOp",
    "SpaceOp",
    "SplitOp",
    "MergeOp",
    "SwizzleOp",
    "swizzle_index",
    "ReorderOp",
    "ParallelizeOp",
    "LoadTileOp",
    "StoreTileOp",
    "ZeroTileOp",
    "MmaOp",
    "YieldOp",
    "EpilogueOp",
    "StorePartialOp",
    "ArriveOp",
    "ReducePartialsOp",
    "ArriveSegmentOp",
    "AccumulatePartialOp",
    "ContractTileOp",
    "WriteTileOp",
    "GroupTileOp",
    "GroupRowsOp",
    "MAX_GROUPS",
    "group_tiles_bound",
    "search_steps",
    "STREAM_K_STRATEGIES",
    "Sched",
]

Sched = Dialect(
    "sched",
    [
        ScheduleOp,
        SpaceOp,
        SplitOp,
        MergeOp,
        SwizzleOp,
        ReorderOp,
        ParallelizeOp,
        LoadTileOp,
        StoreTileOp,
        ZeroTileOp,
        MmaOp,
        EpilogueOp,
        YieldOp,
        StorePartialOp,
        ArriveOp,
        ReducePartialsOp,
        ArriveSegmentOp,
        AccumulatePartialOp,
        ContractTileOp,
        WriteTileOp,
        GroupTileOp,
        GroupRowsOp,
    ],
    [ScheduleParamsAttr, AxisType],
)
"""The schedule dialect."""
