"""The `hopper` dialect: TMA, mbarriers, wgmma and warp roles on Hopper (sm_90a).

Its ops sit in the body of a `hopper.kernel` (the hopper level's kernel: its parameters
and launch data, its dynamic shared memory; `mmcomp.dialects.hopper.kernel`) next to ptx
instructions, and read the kernel's parameters as typed values (`hopper.array_param` an
array as a memref, `hopper.extent_param` a runtime extent as an index,
`hopper.tensormap_param` a tensor map). The ops that act (the copies, the mbarrier ops,
wgmma, stmatrix, ...) share the ptx dialect's syntax, including guards (`if %p`); those
that only name a value (the parameter reads, the barrier ring and its barriers, the
accumulators, the ring positions, the shared-memory addresses, ...) take no guard, and all
but the parameter reads have a declarative syntax (`assembly_format`). Each names one
Hopper mechanism at the level a kernel author thinks in: a tiled TMA load completing on an
mbarrier, a wait on an mbarrier phase, a wgmma whose shared-memory operands are described
by a tile layout (`#hopper.tile`), a warp role's register budget. The hardware objects are
typed values, in the style of MLIR's NVGPU dialect (`mmcomp.dialects.hopper.types`): a
tensor map (`!hopper.tensormap`, its global shape, box and swizzle), a ring of mbarriers
(`!hopper.barrier_ring`), one mbarrier of it (`!hopper.mbarrier`), a warpgroup's wgmma
accumulator (`!hopper.accumulator`), a role's position in the ring
(`!hopper.ring_position`, whose stage is an `index` and phase parity an `i32`), a wgmma
operand's descriptor (`!hopper.matrix_descriptor`) and shared memory (`!hopper.smem`,
...); coordinates are `index` values, other addresses ptx registers (`!ptx.reg<KIND>`).
`convert-hopper-to-ptx` makes each kernel a `ptx.module` with one `ptx.entry`, lowers
each op to ptx instructions (one or a few: the wait is a try_wait loop, a descriptor a few
integer ops) and each typed value to the register that holds it.

    %tmap = hopper.tensormap_param tmap0 : !hopper.tensormap<4096x5120xbf16, box 128x64,
                                                             swizzle 128>
    %full = hopper.barrier_ring %bars : (!ptx.reg<u32>) -> !hopper.barrier_ring<stages = 3,
                                                                                count = 1>
    %bar = hopper.ring_barrier %full[%stage] : !hopper.barrier_ring<...>
    hopper.mbarrier_arrive_expect_tx 32768 %bar if %leader : !hopper.mbarrier<count = 1>
    hopper.tma_load %smem, %tmap, %bar, %k, %m if %leader : (...) -> ()
    hopper.mbarrier_wait %bar, %phase : (!hopper.mbarrier<count = 1>, i32) -> ()
    %a = hopper.matrix_descriptor %slot {mn = 64, k = 16} : (!hopper.smem<align 1024>)
        -> !hopper.matrix_descriptor<k_major, swizzle 128, mn 128, k 64>
    %acc = hopper.zero_accumulator : !hopper.accumulator<64x128xf32>
    %next = hopper.wgmma_mma_async m64n128k16 bf16 %a, %b, %acc {...}
        : (...) -> !hopper.accumulator<64x128xf32>
    %e = hopper.accumulator_element %next[5] : !hopper.accumulator<64x128xf32>

Register arguments: shared-memory addresses are 32-bit (`u32`/`b32`/`s32`) shared-window
addresses; TMA coordinates (`index` values) are 32-bit registers once lowered (signed in
PTX: negative and out-of-range boxes are zero-filled), one per dimension of the tensor
map.

One structured op is not an instruction: `hopper.warp_specialize`, which
partition-warp-roles wraps around a kernel's body, one region per warp role
(`mmcomp.dialects.hopper.warp_specialize`). The package's modules: `attrs` (`#hopper.tile`,
`#hopper.warp_roles`), `types` (tensor maps, barrier rings, mbarriers, accumulators),
`base` (the ops' bases, checks and syntax pieces), `kernel` (the kernel and its
parameter reads), `tma` (tensor maps and TMA copies), `ops` (mbarriers, wgmma, stores,
ids), `lanes` (values exchanged between the lanes of a warp), `ring` (ring positions),
`smem` (shared memory), `warp_specialize`.
"""

from xdsl.ir import Attribute, Dialect, Operation

from mmcomp.dialects.hopper.access import (
    GlobalLoadIndexOp,
    GlobalLoadOp,
    GlobalStoreOp,
    SmemLoadOp,
    SmemStoreOp,
)
from mmcomp.dialects.hopper.attrs import TileAttr, WarpRolesAttr, tile
from mmcomp.dialects.hopper.base import HopperInstruction, HopperValueOp, Implied
from mmcomp.dialects.hopper.kernel import ArrayParamOp, ExtentParamOp, KernelOp, kernel_param
from mmcomp.dialects.hopper.lanes import ShuffleXorOp
from mmcomp.dialects.hopper.ops import (
    IDS,
    STMATRIX_ROW_ALIGN,
    WGMMA_SHAPE,
    WGMMA_TYPES,
    AccumulatorElementOp,
    AccumulatorOp,
    BarrierRingOp,
    IdOp,
    MapaOp,
    MatrixDescriptorOp,
    MbarrierArriveExpectTxOp,
    MbarrierArriveOp,
    MbarrierInitOp,
    MbarrierWaitOp,
    PromoteAccumulatorOp,
    RingBarrierOp,
    StmatrixOp,
    TruncfPairOp,
    WgmmaMmaAsyncOp,
    ZeroAccumulatorOp,
    wgmma_instr_k,
)
from mmcomp.dialects.hopper.ring import (
    RingAdvanceByOp,
    RingAdvanceOp,
    RingPhaseOp,
    RingPositionType,
    RingSkipOp,
    RingStageOp,
    RingStartOp,
)
from mmcomp.dialects.hopper.smem import (
    SLOT_ALIGN,
    RingSlotOp,
    SharedBaseOp,
    SlotRingOp,
    SlotRingType,
    SlotStageOp,
    SmemAddOp,
    SmemIndexOp,
    SmemOffsetOp,
    SmemType,
    StageType,
    alignment_of,
)
from mmcomp.dialects.hopper.tma import (
    TensorMapParamOp,
    TensorMapPrefetchOp,
    TmaLoadOp,
    TmaStoreOp,
)
from mmcomp.dialects.hopper.types import (
    BARRIER_BYTES,
    AccumulatorType,
    BarrierRingType,
    MatrixDescriptorType,
    MbarrierType,
    TensorMapType,
)
from mmcomp.dialects.hopper.warp_specialize import (
    GRID_QUERIES,
    LOAD_AHEAD_ATTR,
    SLOT_ATTR,
    SPECIALIZATIONS,
    TURN_ATTR,
    ConsumerIndexOp,
    LeaderOp,
    WarpSpecializeOp,
)

__all__ = [
    "ArrayParamOp",
    "ExtentParamOp",
    "KernelOp",
    "kernel_param",
    "alignment_of",
    "StageType",
    "SmemType",
    "SmemOffsetOp",
    "SmemIndexOp",
    "SmemAddOp",
    "STMATRIX_ROW_ALIGN",
    "SlotStageOp",
    "SlotRingType",
    "ShuffleXorOp",
    "SlotRingOp",
    "SharedBaseOp",
    "RingSlotOp",
    "SLOT_ALIGN",
    "BARRIER_BYTES",
    "AccumulatorElementOp",
    "PromoteAccumulatorOp",
    "AccumulatorOp",
    "AccumulatorType",
    "BarrierRingOp",
    "BarrierRingType",
    "ConsumerIndexOp",
    "GRID_QUERIES",
    "Hopper",
    "HopperInstruction",
    "HopperValueOp",
    "Implied",
    "IDS",
    "IdOp",
    "LOAD_AHEAD_ATTR",
    "LeaderOp",
    "MapaOp",
    "MatrixDescriptorType",
    "MatrixDescriptorOp",
    "MbarrierArriveExpectTxOp",
    "MbarrierArriveOp",
    "MbarrierInitOp",
    "MbarrierType",
    "MbarrierWaitOp",
    "RingAdvanceByOp",
    "RingAdvanceOp",
    "RingBarrierOp",
    "RingPhaseOp",
    "RingPositionType",
    "RingSkipOp",
    "RingStageOp",
    "RingStartOp",
    "SLOT_ATTR",
    "SPECIALIZATIONS",
    "TURN_ATTR",
    "SmemLoadOp",
    "SmemStoreOp",
    "GlobalLoadOp",
    "GlobalLoadIndexOp",
    "GlobalStoreOp",
    "StmatrixOp",
    "TensorMapParamOp",
    "TensorMapPrefetchOp",
    "TensorMapType",
    "TileAttr",
    "TmaLoadOp",
    "TmaStoreOp",
    "TruncfPairOp",
    "WGMMA_SHAPE",
    "WGMMA_TYPES",
    "wgmma_instr_k",
    "WarpRolesAttr",
    "WarpSpecializeOp",
    "WgmmaMmaAsyncOp",
    "ZeroAccumulatorOp",
    "all_ops",
    "tile",
]


def all_ops() -> list[type[Operation]]:
    """Every op of the dialect."""
    return [
        KernelOp,
        ArrayParamOp,
        ExtentParamOp,
        TensorMapParamOp,
        TensorMapPrefetchOp,
        TmaLoadOp,
        TmaStoreOp,
        BarrierRingOp,
        RingBarrierOp,
        MbarrierInitOp,
        MbarrierArriveOp,
        MbarrierArriveExpectTxOp,
        MbarrierWaitOp,
        MatrixDescriptorOp,
        AccumulatorOp,
        ZeroAccumulatorOp,
        AccumulatorElementOp,
        PromoteAccumulatorOp,
        WgmmaMmaAsyncOp,
        RingStartOp,
        RingAdvanceOp,
        RingAdvanceByOp,
        RingSkipOp,
        RingStageOp,
        RingPhaseOp,
        SharedBaseOp,
        SmemOffsetOp,
        SmemIndexOp,
        SmemAddOp,
        SlotRingOp,
        SlotStageOp,
        RingSlotOp,
        SmemLoadOp,
        SmemStoreOp,
        GlobalLoadOp,
        GlobalLoadIndexOp,
        GlobalStoreOp,
        StmatrixOp,
        TruncfPairOp,
        ShuffleXorOp,
        IdOp,
        MapaOp,
        ConsumerIndexOp,
        LeaderOp,
        WarpSpecializeOp,
    ]


_ATTRIBUTES: list[type[Attribute]] = [
    TileAttr,
    WarpRolesAttr,
    TensorMapType,
    BarrierRingType,
    MbarrierType,
    AccumulatorType,
    RingPositionType,
    SmemType,
    SlotRingType,
    StageType,
    MatrixDescriptorType,
]

Hopper = Dialect("hopper", all_ops(), _ATTRIBUTES)
"""The hopper dialect."""
