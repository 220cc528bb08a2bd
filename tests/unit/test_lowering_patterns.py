"""The rewrite patterns (index arithmetic, pointwise math) and the barrier allocation of the
Hopper lowering."""

from __future__ import annotations

from cases import partitioned
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, FloatAttr, ModuleOp, UnrealizedConversionCastOp

from mmcomp.dialects import ptx
from mmcomp.ir.registry import context
from mmcomp.lowering.arith_to_ptx.registers import INDEX_OPS
from mmcomp.lowering.hopper.barriers import NamedBarriers
from mmcomp.lowering.hopper.pointwise import Pointwise
from mmcomp.passes.convert_arith_to_ptx import ConvertArithToPtx
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
from mmcomp.passes.convert_scf_to_ptx import ConvertScfToPtx
from mmcomp.passes.lower_schedule_to_hopper import lower_kernel
from mmcomp.passes.partition_warp_roles import partition


def test_index_arithmetic_stays_arith_until_convert_arith_to_ptx():
    module = ModuleOp([lower_kernel(partitioned("split_k_linear"))])
    kept = {op.name for op in module.walk() if isinstance(op, INDEX_OPS)}
    assert {"arith.constant", "arith.divui", "arith.cmpi", "gpu.block_id"} <= kept
    assert any(isinstance(op, UnrealizedConversionCastOp) for op in module.walk())
    ConvertHopperToPtx().apply(context(), module)
    ConvertScfToPtx().apply(context(), module)
    ConvertArithToPtx().apply(context(), module)
    left = [op for op in module.walk() if isinstance(op, (*INDEX_OPS, UnrealizedConversionCastOp))]
    assert not left
    names = {op.name for op in module.walk() if isinstance(op, ptx.PtxInstruction)}
    assert {"ptx.const", "ptx.sreg", "ptx.setp", "ptx.selp"} <= names


def test_a_pointwise_op_becomes_arith_and_math():
    func = partitioned("gelu_bias")
    gelu = next(op for op in func.walk() if op.name == "fusion.gelu")
    module = ptx.PtxModuleOp()
    k = ptx.KernelBuilder.create(module, "k")
    x = k.append(arith.ConstantOp(FloatAttr(1.0, Float32Type()))).result
    result = Pointwise(k, "test").pointwise(gelu, [x])
    names = [op.name for op in k.entry.body.block.ops]
    assert "fusion.gelu" not in names and "math.tanh" in names
    assert not any(name.startswith("ptx.") for name in names)
    assert result.owner is k.entry.body.block.last_op


def test_named_barriers_come_from_the_roles():
    func = partitioned("pingpong_linear")
    roles = partition(func)
    barriers = NamedBarriers.allocate(roles)
    assert [barriers.order.of(c) for c in range(2)] == [1, 2]
    assert [barriers.split_k_tile.of(c) for c in range(2)] == [3, 4]
    assert [barriers.epilogue.of(c) for c in range(2)] == [5, 6]
    assert (barriers.order.threads, barriers.split_k_tile.threads) == (256, 128)
    assert barriers.split_k_all.threads == roles.consumer_threads == 256
