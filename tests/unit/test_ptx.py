"""The ptx dialect: building kernels, verification, register naming, PTX text, round trips.

Every kernel built here is assembled by ptxas for sm_90a and must have 0 spill bytes.
"""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import Builtin, ModuleOp, UnrealizedConversionCastOp, i1
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.arch.ptxas import assemble_checked, find_nvdisasm, sass_has
from mmcomp.dialects import ptx
from mmcomp.dialects.ptx import (
    B64,
    BF16X2,
    F32,
    PRED,
    S32,
    U32,
    U64,
    AddOp,
    EntryOp,
    InstOp,
    KernelBuilder,
    MbarrierInitOp,
    MbarrierTryWaitOp,
    PtxModuleOp,
    SharedOp,
    TanhOp,
    WgmmaOp,
)
from mmcomp.dialects.ptx.target import PtxTarget, emit_ptx

LIT_DIR = Path(__file__).resolve().parents[1] / "lit" / "ptx"
FORM_FILES = ["arith.mlir", "memory.mlir", "hopper.mlir"]


def _context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(ptx.PTX)
    return ctx


def _print(op: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue()


def _has_nvdisasm() -> bool:
    try:
        find_nvdisasm()
    except RuntimeError:
        return False
    return True


def vector_add() -> PtxModuleOp:
    """c[i] = a[i] + b[i] for i < n, one thread per element."""
    module = PtxModuleOp()
    k = KernelBuilder.create(
        module, "vadd", [("a", "ptr"), ("b", "ptr"), ("c", "ptr"), ("n", "u32")], reqntid=[128]
    )
    a, b, c, n = (k.ld_param(p) for p in "abcn")
    i = k.mad(k.sreg("ctaid.x"), k.sreg("ntid.x"), k.sreg("tid.x"))
    k.bra("done", k.setp("ge", i, n))
    offset = k.mul_wide(i, k.const(4))
    ga, gb, gc = (k.add(k.cvta("global", p, to=True), offset) for p in (a, b, c))
    (x,) = k.ld("global", ga, F32)
    (y,) = k.ld("global", gb, F32)
    k.st("global", gc, [k.add(x, y)])
    k.label("done")
    k.ret()
    return module


def test_vector_add_assembles_without_spills():
    module = vector_add()
    module.verify()
    text = emit_ptx(module)
    assert ".version 8.0\n.target sm_90a\n.address_size 64\n" in text
    assert ".param .u64 a," in text and ".param .u32 n\n" in text
    assert "\t.reg .pred %p<2>;\n\t.reg .b32 %r<7>;\n\t.reg .b64 %rd<11>;\n" in text
    assert "\t@%p1 bra done;\n" in text
    assert "\tld.global.f32 %f1, [%rd6];\n" in text
    assembled = assemble_checked(text)
    report = assembled.resources["vadd"]
    assert report.spills == 0 and report.stack_frame == 0
    assert 0 < report.registers < 32


def test_predicated_block_and_loop_with_loop_carried_registers():
    """A strided sum: a counted loop whose counter and accumulator are reassigned."""
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "strided_sum", [("x", "ptr"), ("out", "ptr"), ("n", "u32")])
    x, out, n = k.ld_param("x"), k.ld_param("out"), k.ld_param("n")
    x = k.cvta("global", x, to=True)
    i = k.mov(k.sreg("tid.x"))
    step = k.sreg("ntid.x")
    acc = k.const(0.0, F32)
    k.label("loop")
    (value,) = k.ld("global", k.add(x, k.mul_wide(i, k.const(4))), F32)
    k.assign(acc, k.add(acc, value))
    k.assign(i, k.add(i, step))
    k.bra("loop", k.setp("lt", i, n))
    first = k.setp("eq", k.sreg("tid.x"), k.const(0))
    with k.predicated(first):
        k.st("global", k.cvta("global", out, to=True), [acc])
    with k.predicated(first, negated=True):
        k.exit()
    k.ret()
    text = emit_ptx(module)
    assert re.search(r"\tmov\.b32 (%f\d+), %f\d+;\n", text)
    assert re.search(r"\t@%p\d+ st\.global\.f32 \[%rd\d+\], %f\d+;\n", text)
    assert re.search(r"\t@!%p\d+ exit;\n", text)
    assert re.search(r"\t@%p\d+ bra loop;\n", text)
    assemble_checked(text)


def test_register_counters_per_class():
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "names")
    values = [
        k.const(1, U32),
        k.const(2, S32),
        k.const(3, U64),
        k.const(1.5, F32),
        k.const(1, PRED),
        k.const(4, ptx.B16),
        k.const(0.25, ptx.F64),
    ]
    k.ret()
    text = emit_ptx(module)
    names = [line.split()[1].rstrip(",") for line in text.splitlines() if "mov." in line]
    assert names == ["%r1", "%r2", "%rd1", "%f1", "%rs1", "%fd1"]
    assert "setp.ne.u32 %p1, 1, 0;" in text
    assert "mov.f32 %f1, 0f3FC00000;" in text
    assert "mov.f64 %fd1, 0d3FD0000000000000;" in text
    assert len(values) == 7
    assemble_checked(text)


def test_verifier_names_op_operand_and_kinds():
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "bad", [("x", "u32"), ("y", "u64")])
    x, y = k.ld_param("x"), k.ld_param("y")
    k.append(AddOp(x, y))
    with pytest.raises(VerifyException, match=r"ptx\.add: rhs must have the same register kind "):
        module.verify()


def test_a_guard_is_an_i1_or_a_predicate_register():
    """An i1 guard (the hopper level's) verifies and round-trips, but has no PTX text
    until convert-arith-to-ptx puts it in a register; a guard of another type is an error
    naming the op and the type."""
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "guards")
    test = k.append(UnrealizedConversionCastOp.get([k.const(1, PRED)], [i1])).results[0]
    fence = k.append(ptx.FenceOp("mbarrier_init").set_guard(test, negated=True))
    k.ret()
    module.verify()
    printed = _print(ModuleOp([module.clone()]))
    assert "ptx.fence mbarrier_init if not %" in printed
    reparsed = Parser(_context(), printed).parse_module()
    (guarded,) = [op for op in reparsed.walk() if isinstance(op, ptx.FenceOp)]
    assert guarded.guard is not None and guarded.guard.type == i1
    assert guarded.negated is not None
    with pytest.raises(DiagnosticException, match=r"ptx\.fence: the guard is an i1 value, not"):
        fence.ptx_line(lambda value: "%p1")
    with pytest.raises(DiagnosticException, match="run convert-arith-to-ptx before emitting"):
        emit_ptx(module)

    module = PtxModuleOp()
    k = KernelBuilder.create(module, "bad")
    k.append(ptx.BarOp("sync", 1).set_guard(k.const(1, U32)))
    message = r"ptx\.bar: the guard must be an i1 or a !ptx\.reg<pred>, found !ptx\.reg<u32>"
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_verifier_rejects_wide_tanh_and_bad_wgmma():
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "bad")
    k.unary(TanhOp, k.const(1.0, ptx.F64))
    with pytest.raises(VerifyException, match=r"ptx\.tanh: only f32 is supported, found"):
        module.verify()

    module = PtxModuleOp()
    k = KernelBuilder.create(module, "bad")
    desc = k.const(0, B64)
    acc = [k.const(0.0, F32) for _ in range(4)]
    k.append(WgmmaOp(acc, desc, desc, k.const(0, PRED), n=16))
    with pytest.raises(VerifyException, match="m64n16k16 needs 8 f32 accumulators, found 4"):
        module.verify()


def test_entry_checks_labels_and_params():
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "bad", [("a", "ptr"), ("a", "u32")])
    k.ret()
    with pytest.raises(VerifyException, match="parameter 'a' is declared twice"):
        module.verify()
    with pytest.raises(ValueError, match="has no parameter 'zz'"):
        k.ld_param("zz")


def test_module_rejects_duplicate_symbols_and_old_versions():
    module = PtxModuleOp([SharedOp("buf", 16, 64), SharedOp("buf", 16, 64)])
    with pytest.raises(VerifyException, match="symbol 'buf' is defined twice"):
        module.verify()
    with pytest.raises(VerifyException, match="version '7.8' must be 8.0 or later"):
        PtxModuleOp(version="7.8").verify()


def test_inst_placeholders_and_ranges():
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "inst")
    base = k.const(0, U32)
    vals = [k.const(float(i), F32) for i in range(4)]
    k.inst("st.shared.v4.f32 [{0}], {1:5}", [base, *vals])
    k.inst("st.shared.v2.f32 [{0}+16], {{1}, {2}}", [base, vals[0], vals[1]])
    (pred,) = k.inst("setp.ne.u32 {0}, {1}, 0", [base], [PRED]).outs
    k.bra("end", pred)
    k.label("end")
    k.ret()
    text = emit_ptx(module)
    assert "st.shared.v4.f32 [%r1], {%f1, %f2, %f3, %f4};" in text
    assert "st.shared.v2.f32 [%r1+16], {%f1, %f2};" in text
    assert "setp.ne.u32 %p1, %r1, 0;" in text
    with pytest.raises(VerifyException, match="leave the trailing ';' out"):
        InstOp("ret;").verify()


def test_hopper_pipeline_built_in_python_has_hgmma():
    """An mbarrier-guarded TMA load feeding one wgmma m64n64k16, as C's lowering will emit."""
    module = PtxModuleOp([SharedOp("smem", 1024)])
    k = KernelBuilder.create(module, "gemm_step", [("ta", "tmap"), ("tb", "tmap"), ("d", "ptr")])
    k.entry.maxnreg = ptx.IntAttr(168)
    tmap_a = k.cvta("param", k.addr_of("ta", U64))
    tmap_b = k.cvta("param", k.addr_of("tb", U64))
    smem = k.addr_of("smem")
    bar = k.add(smem, k.const(32768))
    tile_b = k.add(smem, k.const(16384))
    thread = k.sreg("tid.x")
    elected = k.setp("eq", thread, k.const(0))
    zero = k.const(0, S32)
    with k.predicated(elected):
        k.append(MbarrierInitOp(bar, 1))
        k.append(ptx.FenceOp("mbarrier_init"))
    k.bar()
    with k.predicated(elected):
        k.append(ptx.MbarrierArriveOp(bar, tx_bytes=2 * 8192))
        k.append(ptx.TmaLoadOp(smem, tmap_a, bar, [zero, zero]))
        k.append(ptx.TmaLoadOp(tile_b, tmap_b, bar, [zero, zero]))
    phase = k.const(0)
    k.label("wait")
    done = k.append(MbarrierTryWaitOp(bar, phase)).result
    k.bra("wait", done, negated=True)
    # Descriptors: start >> 4 in bits 0-13, stride byte offset 1024 >> 4 at bit 32,
    # 128-byte swizzle (1) in bits 62-63.
    swizzle = k.const((1 << 62) | ((1024 >> 4) << 32), U64)
    desc_a = k.add(swizzle, k.cvt(k.shr(smem, k.const(4)), U64))
    desc_b = k.add(swizzle, k.cvt(k.shr(tile_b, k.const(4)), U64))
    acc = [k.const(0.0, F32) for _ in range(32)]
    k.append(ptx.WgmmaFenceOp())
    k.append(WgmmaOp(acc, desc_a, desc_b, k.const(0, PRED), n=64))
    k.append(ptx.WgmmaCommitOp())
    k.append(ptx.WgmmaWaitOp(0))
    out = k.cvta("global", k.ld_param("d"), to=True)
    addr = k.add(out, k.mul_wide(thread, k.const(64)))
    packed = [k.cvt_pack(acc[2 * j + 1], acc[2 * j], BF16X2) for j in range(16)]
    for j in range(4):
        k.st("global", addr, packed[4 * j : 4 * j + 4], offset=16 * j)
    k.ret()
    module.verify()
    text = emit_ptx(module)
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f1, %f2," in text
    assert "@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::" in text
    assembled = assemble_checked(text, max_registers=168)
    if _has_nvdisasm():
        assert sass_has(assembled.cubin, r"HGMMA\.64x64x16\.F32\.BF16")
        assert sass_has(assembled.cubin, r"\bUTMALDG\b")
        assert not sass_has(assembled.cubin, r"\b(LDL|STL)\b")


@pytest.mark.parametrize("name", FORM_FILES)
def test_lit_forms_round_trip_and_assemble(name: str):
    """The lit files that pin every form parse, print, re-parse identically, and assemble."""
    source = (LIT_DIR / name).read_text()
    module = Parser(_context(), source).parse_module()
    module.verify()
    printed = _print(module)
    again = _print(Parser(_context(), printed).parse_module())
    assert printed == again
    assemble_checked(emit_ptx(module))


def test_target_writes_ptx_and_requires_one_module():
    module = ModuleOp([vector_add()])
    out = StringIO()
    PtxTarget().emit(_context(), module, out)
    assert out.getvalue() == emit_ptx(module)
    assert PtxTarget.name == "ptx"
    with pytest.raises(DiagnosticException, match="expected exactly one ptx.module, found 0"):
        emit_ptx(ModuleOp([]))


def test_entry_builder_appends_inside_a_region_before_its_terminator():
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "inside")
    outer = k.const(1)
    cond = k.append(UnrealizedConversionCastOp.get([k.const(1, PRED)], [i1])).results[0]
    branch = k.append(scf.IfOp(cond, [], [scf.YieldOp()]))
    with k.inside(branch.true_region.block) as block:
        assert k.block is block
        inner = k.add(outer, outer)
        assert k.sees(outer) and k.sees(inner)
    assert k.block is k.entry.body.block
    assert not k.sees(inner)
    k.ret()
    names = [op.name for op in branch.true_region.block.ops]
    assert names == ["ptx.add", "scf.yield"]
    assert k.entry.body.block.last_op is not None
    assert k.entry.body.block.last_op.name == "ptx.ret"
    with pytest.raises(ValueError, match="no block was entered"):
        k.leave()
    with pytest.raises(ValueError, match="expected a block inside an op's region"):
        k.enter(Block())


def test_entry_builder_fresh_labels_and_reqntid():
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "labels", reqntid=[128, 2], maxnreg=64)
    first, second = k.fresh_label("loop"), k.fresh_label("loop")
    assert first != second
    k.label(first)
    k.bra(first, k.const(0, PRED))
    k.ret()
    text = emit_ptx(module)
    assert ".maxnreg 64\n.reqntid 128, 2\n{" in text
    assert isinstance(module.body.block.first_op, EntryOp)
    assemble_checked(text)
