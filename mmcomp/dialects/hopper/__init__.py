"""The `hopper` dialect: TMA, mbarriers, wgmma and warp roles on Hopper (sm_90a).

Its ops sit in a `ptx.entry` body next to ptx instructions and work on the same virtual
registers (`!ptx.reg<KIND>`); they share the ptx dialect's syntax, including guards
(`if %p`). Each names one Hopper mechanism at the level a kernel author thinks in: a
tiled TMA load completing on an mbarrier, a wait on an mbarrier phase, a wgmma whose
shared-memory operands are described by a tile layout (`#hopper.tile`), a warp role's
register budget. `convert-hopper-to-ptx` lowers each to ptx instructions (one or a few:
the wait is a try_wait loop, a descriptor a few integer ops).

    %bar = ptx.addr_of bars : !ptx.reg<u32>
    hopper.mbarrier_arrive_expect_tx 32768 %bar if %leader : !ptx.reg<u32>
    hopper.tma_load %smem, %tmap, %bar, %k, %m if %leader : (...) -> ()
    hopper.mbarrier_wait %bar, %phase : !ptx.reg<u32>
    %a = hopper.matrix_descriptor %smem {tile = #hopper.tile<k_major, swizzle 128,
                                         mn 128, k 64>, mn = 64, k = 16}
        : (!ptx.reg<u32>) -> !ptx.reg<b64>
    hopper.wgmma_mma_async m64n128k16 bf16 %a, %b, %d0, ..., %d63 {...} : (...) -> ()

Register arguments: shared-memory addresses and barriers are 32-bit (`u32`/`b32`/`s32`)
shared-window addresses; tensor maps and descriptors are 64-bit; TMA coordinates are
32-bit (signed in PTX: negative and out-of-range boxes are zero-filled).

One structured op is not an instruction: `hopper.warp_specialize`, which
partition-warp-roles wraps around a kernel's body, one region per warp role
(`mmcomp.dialects.hopper.warp_specialize`). The package's modules: `attrs` (`#hopper.tile`,
`#hopper.warp_roles`), `ops` (the instructions), `warp_specialize`.
"""

from xdsl.ir import Attribute, Dialect, Operation

from mmcomp.dialects.hopper.attrs import TileAttr, WarpRolesAttr, tile
from mmcomp.dialects.hopper.ops import (
    IDS,
    WGMMA_SHAPE,
    WGMMA_TYPES,
    BulkCommitGroupOp,
    BulkWaitGroupOp,
    ElectSyncOp,
    FenceMbarrierInitOp,
    FenceProxyAsyncOp,
    HopperInstruction,
    IdOp,
    MapaOp,
    MatrixDescriptorOp,
    MbarrierArriveExpectTxOp,
    MbarrierArriveOp,
    MbarrierInitOp,
    MbarrierWaitOp,
    NamedBarrierOp,
    SetmaxnregOp,
    StmatrixOp,
    TensorMapAddressOp,
    TensorMapPrefetchOp,
    TmaLoadMulticastOp,
    TmaLoadOp,
    TmaStoreOp,
    WgmmaCommitGroupOp,
    WgmmaFenceOp,
    WgmmaMmaAsyncOp,
    WgmmaWaitGroupOp,
)
from mmcomp.dialects.hopper.warp_specialize import (
    GRID_QUERIES,
    SLOT_ATTR,
    SPECIALIZATIONS,
    WarpSpecializeOp,
)

__all__ = [
    "BulkCommitGroupOp",
    "BulkWaitGroupOp",
    "ElectSyncOp",
    "FenceMbarrierInitOp",
    "FenceProxyAsyncOp",
    "GRID_QUERIES",
    "Hopper",
    "HopperInstruction",
    "IDS",
    "IdOp",
    "MapaOp",
    "MatrixDescriptorOp",
    "MbarrierArriveExpectTxOp",
    "MbarrierArriveOp",
    "MbarrierInitOp",
    "MbarrierWaitOp",
    "NamedBarrierOp",
    "SLOT_ATTR",
    "SPECIALIZATIONS",
    "SetmaxnregOp",
    "StmatrixOp",
    "TensorMapAddressOp",
    "TensorMapPrefetchOp",
    "TileAttr",
    "TmaLoadMulticastOp",
    "TmaLoadOp",
    "TmaStoreOp",
    "WGMMA_SHAPE",
    "WGMMA_TYPES",
    "WarpRolesAttr",
    "WarpSpecializeOp",
    "WgmmaCommitGroupOp",
    "WgmmaFenceOp",
    "WgmmaMmaAsyncOp",
    "WgmmaWaitGroupOp",
    "all_ops",
    "tile",
]


def all_ops() -> list[type[Operation]]:
    """Every op of the dialect."""
    return [
        TensorMapAddressOp,
        TensorMapPrefetchOp,
        TmaLoadOp,
        TmaLoadMulticastOp,
        TmaStoreOp,
        BulkCommitGroupOp,
        BulkWaitGroupOp,
        MbarrierInitOp,
        MbarrierArriveOp,
        MbarrierArriveExpectTxOp,
        MbarrierWaitOp,
        FenceProxyAsyncOp,
        FenceMbarrierInitOp,
        WgmmaFenceOp,
        WgmmaCommitGroupOp,
        WgmmaWaitGroupOp,
        MatrixDescriptorOp,
        WgmmaMmaAsyncOp,
        SetmaxnregOp,
        ElectSyncOp,
        NamedBarrierOp,
        StmatrixOp,
        IdOp,
        MapaOp,
        WarpSpecializeOp,
    ]


_ATTRIBUTES: list[type[Attribute]] = [TileAttr, WarpRolesAttr]

Hopper = Dialect("hopper", all_ops(), _ATTRIBUTES)
"""The hopper dialect."""
