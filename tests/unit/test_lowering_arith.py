"""The lowering's own index arithmetic at the hopper level: `arith` on index values (the
ping-pong trip count, the next-tile test, the load-ahead iteration, the consumers' thread
arithmetic, the epilogue's and split-K's 32-bit offsets, the 64-bit address sums on i64) until
convert-arith-to-ptx."""

from __future__ import annotations

import pytest
from cases import partitioned
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import ModuleOp, UnrealizedConversionCastOp, i1, i64
from xdsl.ir import Operation, SSAValue

from mmcomp.dialects import ptx
from mmcomp.ir.registry import context
from mmcomp.lowering.arith_to_ptx.registers import INDEX_OPS, MAD
from mmcomp.passes.convert_arith_to_ptx import ConvertArithToPtx
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
from mmcomp.passes.convert_scf_to_ptx import ConvertScfToPtx
from mmcomp.passes.lower_schedule_to_hopper import lower_kernel


def hopper_level(name: str) -> ModuleOp:
    """The hopper level of a case's kernel (lower-schedule-to-hopper's module)."""
    return ModuleOp([lower_kernel(partitioned(name))])


def before_arith(module: ModuleOp) -> None:
    """convert-hopper-to-ptx and convert-scf-to-ptx, in place."""
    ConvertHopperToPtx().apply(context(), module)
    ConvertScfToPtx().apply(context(), module)


def to_ptx(module: ModuleOp) -> None:
    """convert-hopper-to-ptx, convert-scf-to-ptx, convert-arith-to-ptx, in place."""
    before_arith(module)
    ConvertArithToPtx().apply(context(), module)


def reads_tid(op: Operation) -> bool:
    """`op` reads the thread index, `gpu.thread_id x`, an index value."""
    return any(isinstance(operand.owner, gpu.ThreadIdOp) for operand in op.operands)


def marked_mads(module: ModuleOp) -> list[arith.AddiOp]:
    """The arith.addi ops marked to lower as one mad with their multiplication."""
    return [op for op in module.walk() if isinstance(op, arith.AddiOp) and MAD in op.attributes]


@pytest.mark.parametrize("name", ["linear_256", "pingpong_linear", "none_linear", "smem_linear"])
def test_the_consumer_thread_arithmetic_is_arith_on_tid(name: str):
    module = hopper_level(name)
    on_tid = {op.name for op in module.walk() if reads_tid(op)}
    assert {"arith.andi", "arith.shrui", "arith.cmpi"} <= on_tid
    assert on_tid <= {"arith.andi", "arith.shrui", "arith.cmpi"}, "only arith reads it"
    assert sum(isinstance(op, gpu.ThreadIdOp) for op in module.walk()) == 1
    assert not any(isinstance(op, ptx.SregOp) for op in module.walk()), "no %tid.x register"


def test_the_ping_pong_trip_count_is_a_select_into_the_quotient():
    module = hopper_level("pingpong_linear")
    selects = [op for op in module.walk() if isinstance(op, arith.SelectOp)]
    assert selects and all(isinstance(op.rhs.owner, arith.CeilDivUIOp) for op in selects)
    to_ptx(module)
    guarded = [
        op
        for op in module.walk()
        if isinstance(op, ptx.AssignOp) and isinstance(op.dst.owner, ptx.DivOp) and op.guard
    ]
    assert len(guarded) == len(selects), "each trip count is its quotient, zeroed by @p mov"


@pytest.mark.parametrize("name", ["none_linear", "split_k_linear", "smem_linear"])
def test_a_marked_addi_and_its_product_become_one_mad(name: str):
    module = hopper_level(name)
    marked = marked_mads(module)
    assert marked, "the load-ahead iteration, the offsets and the slot addresses are mads"
    before_arith(module)
    mads = sum(isinstance(op, ptx.MadOp) for op in module.walk())
    ConvertArithToPtx().apply(context(), module)
    assert sum(isinstance(op, ptx.MadOp) for op in module.walk()) == mads + len(marked)
    left = [op for op in module.walk() if isinstance(op, (*INDEX_OPS, UnrealizedConversionCastOp))]
    assert not left


def predicate_read(value: SSAValue) -> bool:
    """Every read of `value` is a ptx op's guard, a cast to a predicate or a conjunction
    (`arith.andi` on i1) read so."""
    return bool(value.uses) and all(
        (isinstance(use.operation, ptx.PtxInstruction) and use.operation.guard is value)
        or (
            isinstance(use.operation, UnrealizedConversionCastOp)
            and use.operation.results[0].type == ptx.PRED
        )
        or (
            isinstance(use.operation, arith.AndIOp)
            and use.operation.result.type == i1
            and predicate_read(use.operation.result)
        )
        for use in value.uses
    )


def pred_ands(module: ModuleOp) -> int:
    """The `and.pred` instructions of `module`."""
    return sum(isinstance(op, ptx.AndOp) and op.result.type == ptx.PRED for op in module.walk())


def test_the_next_tile_test_is_a_comparison_read_as_a_predicate():
    module = hopper_level("pingpong_linear")
    before_arith(module)
    read_as_pred = [
        op for op in module.walk() if isinstance(op, arith.CmpiOp) and predicate_read(op.result)
    ]
    assert any(isinstance(op.lhs.owner, arith.AddiOp) for op in read_as_pred)
    conjunctions = [
        op for op in module.walk() if isinstance(op, arith.AndIOp) and op.result.type == i1
    ]
    assert conjunctions and all(predicate_read(op.result) for op in conjunctions)
    setps = sum(isinstance(op, ptx.SetpOp) for op in module.walk())
    selps = sum(isinstance(op, ptx.SelpOp) for op in module.walk())
    compares = sum(isinstance(op, arith.CmpiOp) for op in module.walk())
    ands = pred_ands(module)
    ConvertArithToPtx().apply(context(), module)
    # One setp per comparison; a selp of 1 or 0 only for those read as u32 truths (the
    # trip count's select on a predicate is a guarded mov).
    assert sum(isinstance(op, ptx.SetpOp) for op in module.walk()) == setps + compares
    truths = compares - len(read_as_pred)
    assert sum(isinstance(op, ptx.SelpOp) for op in module.walk()) == selps + truths
    assert pred_ands(module) == ands + len(conjunctions), "each conjunction is an and.pred"


def widening_multiplies(module: ModuleOp) -> list[arith.MuliOp]:
    """The i64 arith.muli ops of a zero-extended index value (the 64-bit address sums)."""
    return [
        op
        for op in module.walk()
        if isinstance(op, arith.MuliOp)
        and op.result.type == i64
        and isinstance(op.lhs.owner, arith.ExtUIOp)
    ]


@pytest.mark.parametrize("name", ["default_1000", "split_k_linear", "none_split_k"])
def test_the_address_sums_are_arith_on_i64_until_mul_wide(name: str):
    module = hopper_level(name)
    products = widening_multiplies(module)
    assert products, "the epilogue's and split-K's byte offsets are i64 products"
    wide_ops = (ptx.MulWideOp, ptx.MadWideOp)
    assert not [op for op in module.walk() if isinstance(op, wide_ops)]
    to_ptx(module)
    assert sum(isinstance(op, wide_ops) for op in module.walk()) == len(products)
    left = [op for op in module.walk() if op.name.startswith("arith.")]
    assert not left
