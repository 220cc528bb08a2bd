"""The hopper level's container: `hopper.kernel` and its typed parameter reads, as
lower-schedule-to-hopper makes them and convert-hopper-to-ptx lowers them."""

from __future__ import annotations

from cases import partitioned
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp

from mmcomp.dialects import hopper, ptx
from mmcomp.ir.registry import context
from mmcomp.passes.convert_hopper_to_ptx import ConvertHopperToPtx
from mmcomp.passes.lower_schedule_to_hopper import lower_kernel


def test_the_kernel_reads_each_argument_as_a_typed_value():
    func = partitioned("split_k_batch")
    kernel = lower_kernel(func)
    assert isinstance(kernel, hopper.KernelOp)
    kernel.verify()
    reads = [
        op
        for op in kernel.body.block.ops
        if isinstance(op, hopper.ArrayParamOp | hopper.ExtentParamOp)
    ]
    assert [op.param.data for op in reads] == [f"arg{arg.index}" for arg in func.args]
    for op, arg in zip(reads, func.args, strict=True):
        expected = arg.type if isinstance(arg.type, MemRefType) else IndexType()
        assert op.results[0].type == expected
    assert not any(isinstance(op, ptx.LdParamOp) for op in kernel.walk())
    assert kernel.shared is not None and kernel.shared.data == "mmcomp_shared"


def test_the_entry_carries_the_kernel_signature_and_launch_data():
    kernel = lower_kernel(partitioned("split_k_batch"))
    signature = (kernel.sym_name, kernel.params, kernel.maxnreg, kernel.reqntid, kernel.launch)
    shared = (kernel.shared, kernel.shared_align)
    module = ModuleOp([kernel])
    ConvertHopperToPtx().apply(context(), module)
    (ptx_module,) = module.ops
    assert isinstance(ptx_module, ptx.PtxModuleOp)
    declared, entry = ptx_module.body.block.ops
    assert isinstance(declared, ptx.SharedOp) and isinstance(entry, ptx.EntryOp)
    assert (entry.sym_name, entry.params, entry.maxnreg, entry.reqntid, entry.launch) == signature
    assert (declared.sym_name, declared.alignment, declared.size) == (*shared, None)
    loads = [op.param.data for op in entry.walk() if isinstance(op, ptx.LdParamOp)]
    assert loads == [
        param.param_name.data for param in entry.params.data if param.kind.data != "tmap"
    ]
    assert not any(op.name.startswith("hopper.") for op in entry.walk())


def test_a_kernel_builder_appends_to_a_hopper_kernel():
    kernel = hopper.KernelOp("k", [("n", "u32")], reqntid=(128,))
    k = ptx.KernelBuilder(kernel)
    n = k.ld_param("n")
    k.ret()
    assert n.type == ptx.U32
    assert [op.name for op in kernel.body.block.ops] == ["ptx.ld_param", "ptx.ret"]
