"""The hopper level's shared memory as typed values: the aligned base, the barrier rings at
offsets from it, the ring's stages and slots, which the TMA loads and the wgmma
descriptors take, and the smem epilogue's buffers, which the TMA stores and stmatrix take."""

from __future__ import annotations

import pytest
from test_lowering_arith import hopper_level
from xdsl.dialects.builtin import IntAttr, UnrealizedConversionCastOp
from xdsl.ir import Operation, SSAValue

from mmcomp.dialects import hopper, ptx
from mmcomp.ir.registry import context
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx

CASES = [
    "linear_256",
    "pingpong_linear",
    "none_linear",
    "smem_linear",
    "smem_split_k",
    "cluster_linear",
    "matmul_mn_major",
    "swap_ab_horizontal",
]
"""Every warp specialization, both epilogues, split-K, a cluster (multicast loads), an
MN-major operand and swap-AB."""


def is_smem(value: SSAValue) -> bool:
    """`value` is a typed shared-memory address."""
    return isinstance(value.type, hopper.SmemType)


def from_slot(value: SSAValue) -> bool:
    """`value` is a ring slot, an offset from one (a box of it, or a consumer's part of
    the A tile: a `hopper.smem_index`), or index arithmetic on a slot's address read back
    as a register."""
    owner = value.owner
    if isinstance(owner, hopper.RingSlotOp):
        return True
    if isinstance(owner, hopper.SmemOffsetOp | hopper.SmemIndexOp):
        return from_slot(owner.base)
    if isinstance(owner, UnrealizedConversionCastOp):
        return any(from_slot(source) for source in owner.inputs)
    return any(from_slot(operand) for operand in getattr(owner, "operands", ()))


@pytest.mark.parametrize("name", CASES)
def test_the_loads_and_descriptors_take_the_ring_slots(name: str):
    module = hopper_level(name)
    ops = list(module.walk())
    assert sum(isinstance(op, hopper.SharedBaseOp) for op in ops) == 1
    assert sum(isinstance(op, hopper.SlotRingOp) for op in ops) == 1
    assert not any(isinstance(op, ptx.AddrOfOp) for op in ops), "no u32 shared base"
    rings = [op for op in ops if isinstance(op, hopper.BarrierRingOp)]
    assert len(rings) == 2 and all(is_smem(op.base) for op in rings)
    loads = [op for op in ops if isinstance(op, hopper.TmaLoadOp)]
    assert loads and all(is_smem(op.dst) and from_slot(op.dst) for op in loads)
    descriptors = [op for op in ops if isinstance(op, hopper.MatrixDescriptorOp)]
    assert descriptors and all(is_smem(op.base) and from_slot(op.base) for op in descriptors)
    assert any(isinstance(op.base.owner, hopper.RingSlotOp) for op in descriptors), (
        "the B slot is read as it is"
    )


@pytest.mark.parametrize("name", CASES)
def test_the_wgmmas_take_typed_descriptors(name: str):
    """Each wgmma's operands are `!hopper.matrix_descriptor`s of the tile layouts its
    majors name; a consumer's part of the A tile is a `hopper.smem_index` of its slot
    (ping-pong: the whole slot)."""
    module = hopper_level(name)
    wgmmas = [op for op in module.walk() if isinstance(op, hopper.WgmmaMmaAsyncOp)]
    assert wgmmas
    for op in wgmmas:
        for descriptor, major in ((op.a_desc, op.a_major), (op.b_desc, op.b_major)):
            assert isinstance(descriptor.owner, hopper.MatrixDescriptorOp)
            assert isinstance(descriptor.type, hopper.MatrixDescriptorType)
            assert descriptor.type.tile.major == major
        a_base = op.a_desc.owner.base
        assert isinstance(a_base.owner, hopper.RingSlotOp | hopper.SmemIndexOp)
        if "pingpong" in name:
            assert isinstance(a_base.owner, hopper.RingSlotOp)


@pytest.mark.parametrize("name", CASES)
def test_convert_hopper_to_ptx_leaves_no_shared_memory_value(name: str):
    module = hopper_level(name)
    ConvertHopperToPtx().apply(context(), module)
    for op in module.walk():
        assert not any(is_smem(value) for value in (*op.operands, *op.results)), op.name
    casts = [op for op in module.walk() if isinstance(op, UnrealizedConversionCastOp)]
    assert all(not is_smem(source) for op in casts for source in op.inputs)
    stage_mads = [
        op for op in module.walk() if isinstance(op, ptx.MadOp) and stage_bytes(op.operands[1])
    ]
    assert stage_mads, "each K block's stage address is one mad of the stage bytes"


def stage_bytes(value: SSAValue) -> bool:
    """`value` is a constant multiple of the slot alignment (a stage's bytes)."""
    owner = value.owner
    if not isinstance(owner, ptx.ConstOp):
        return False
    constant = owner.value
    return isinstance(constant, IntAttr) and constant.data % hopper.SLOT_ALIGN == 0


def from_buffer(value: SSAValue) -> bool:
    """`value` is an epilogue buffer (an offset from a warpgroup's buffers), a lane's row of
    one (`hopper.smem_add`) or a chunk of such a row (`hopper.smem_index`), or index
    arithmetic on one read back as a register."""
    owner = value.owner
    if isinstance(owner, hopper.SmemOffsetOp):
        return isinstance(owner.base.owner, hopper.SmemIndexOp)
    if isinstance(owner, hopper.SmemAddOp):
        return from_buffer(owner.base)
    if isinstance(owner, hopper.SmemIndexOp) and isinstance(owner.base.owner, hopper.SmemAddOp):
        return from_buffer(owner.base)
    if not isinstance(owner, Operation):
        return False
    if isinstance(owner, UnrealizedConversionCastOp) or owner.name.startswith("arith."):
        return any(from_buffer(operand) for operand in owner.operands)
    return False


@pytest.mark.parametrize("name", ["smem_linear", "smem_split_k"])
def test_the_smem_epilogue_stores_from_typed_buffers(name: str):
    module = hopper_level(name)
    ops = list(module.walk())
    places = [
        op
        for op in ops
        if isinstance(op, hopper.SmemIndexOp)
        and not from_slot(op.base)
        and not isinstance(op.base.owner, hopper.SmemAddOp)
    ]
    assert len(places) == 1, "one placement of the warpgroup's buffers (not an A tile's part)"
    (place,) = places
    assert isinstance(place.base.owner, hopper.SharedBaseOp)
    assert place.result.type == hopper.SmemType(hopper.SLOT_ALIGN)
    stores = [op for op in ops if isinstance(op, hopper.TmaStoreOp)]
    assert stores and all(is_smem(op.src) and from_buffer(op.src) for op in stores)
    matrices = [op for op in ops if isinstance(op, hopper.StmatrixOp)]
    assert matrices and all(from_buffer(op.address) for op in matrices)
    row = hopper.SmemType(hopper.STMATRIX_ROW_ALIGN)
    assert all(op.address.type == row for op in matrices), "a matrix row's 16 bytes"
