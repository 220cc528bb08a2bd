"""ptxas checks: finding the tools, assembling, the resource report, spills, SASS."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mmcomp.arch import ptxas, tools
from mmcomp.arch.ptxas import (
    Assembled,
    PtxasError,
    ResourceReport,
    assemble,
    assemble_checked,
    check_no_spills,
    check_sass,
    find_nvdisasm,
    find_ptxas,
    find_tool,
    parse_resource_report,
    sass_count,
    sass_has,
)
from mmcomp.dialects.ptx import F32, KernelBuilder, PtxModuleOp
from mmcomp.dialects.ptx.target import emit_ptx

VADD = """
.version 8.0
.target sm_90a
.address_size 64

.visible .entry vadd(.param .u64 a, .param .u64 b)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<5>;
	.reg .f32 %f<3>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	ld.global.f32 %f1, [%rd3];
	add.f32 %f2, %f1, %f1;
	st.global.f32 [%rd4], %f2;
	ret;
}
"""

LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'first' for 'sm_90a'
ptxas info    : Function properties for first
    8 bytes stack frame, 16 bytes spill stores, 24 bytes spill loads
ptxas info    : Used 40 registers, used 2 barriers, 4096 bytes smem, 384 bytes cmem[0]
ptxas info    : Compiling entry function 'second' for 'sm_90a'
ptxas info    : Function properties for second
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 368 bytes cmem[0]
"""


def _has_nvdisasm() -> bool:
    try:
        find_nvdisasm()
    except PtxasError:
        return False
    return True


needs_nvdisasm = pytest.mark.skipif(
    not _has_nvdisasm(), reason="nvdisasm not found (pip install nvidia-cuda-nvdisasm)"
)


def spilling_kernel() -> str:
    """64 live floats under `.maxnreg 24`: ptxas must spill."""
    module = PtxModuleOp()
    k = KernelBuilder.create(module, "spill", [("src", "ptr"), ("dst", "ptr")], maxnreg=24)
    src, dst = k.ld_param("src"), k.ld_param("dst")
    values = []
    for i in range(16):
        values += k.ld("global", src, F32, 4, offset=16 * i, qualifier="volatile")
    acc = values[-1]
    for value in reversed(values[:-1]):
        acc = k.fma(value, acc, value)
    k.st("global", dst, [acc])
    for i in range(16):
        k.st("global", dst, values[4 * i : 4 * i + 4], offset=16 * i)
    k.ret()
    return emit_ptx(module)


def test_parse_resource_report_per_entry():
    reports = parse_resource_report(LOG)
    assert reports["first"] == ResourceReport(
        entry="first",
        registers=40,
        spill_stores=16,
        spill_loads=24,
        stack_frame=8,
        shared_memory=4096,
        barriers=2,
    )
    assert reports["first"].spills == 40
    assert reports["second"].registers == 168 and reports["second"].spills == 0
    assert reports["second"].shared_memory == 0


def test_assemble_returns_cubin_and_report():
    assembled = assemble(VADD)
    assert assembled.cubin[:4] == b"\x7fELF"
    assert assembled.arch == "sm_90a"
    report = assembled.resources["vadd"]
    assert report.spills == 0 and report.stack_frame == 0 and report.registers > 0
    assert "Compiling entry function 'vadd'" in assembled.log
    check_no_spills(assembled)


def test_assembly_error_names_message_and_line():
    bad = VADD.replace("add.f32 %f2, %f1, %f1;", "add.u32 %f2, %f1, %f1;")
    with pytest.raises(PtxasError) as info:
        assemble(bad)
    message = str(info.value)
    assert "ptxas -arch=sm_90a failed" in message
    assert "Arguments mismatch for instruction 'add'" in message
    assert "add.u32 %f2, %f1, %f1;" in message


def test_real_spills_are_reported_and_rejected():
    assembled = assemble(spilling_kernel())
    report = assembled.resources["spill"]
    assert report.registers <= 24
    assert report.spill_stores > 0 and report.spill_loads > 0
    with pytest.raises(PtxasError, match=r"entry 'spill' spills: \d+ bytes spill stores"):
        check_no_spills(assembled)
    with pytest.raises(PtxasError, match="entry 'spill' spills"):
        assemble_checked(spilling_kernel())


def test_register_budget():
    assembled = Assembled(b"", {"k": ResourceReport("k", registers=200)})
    with pytest.raises(PtxasError, match="uses 200 registers, more than the budget of 168"):
        check_no_spills(assembled, max_registers=168)
    check_no_spills(assembled, max_registers=232)
    with pytest.raises(PtxasError, match="reported no entries"):
        check_no_spills(Assembled(b"", {}))


def test_find_ptxas_from_path_cuda_home_or_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    found = find_ptxas()
    assert found.name == "ptxas"
    real = Path(shutil.which("ptxas") or found).resolve()
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "ptxas").symlink_to(real)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(home))
    monkeypatch.setattr(tools, "_wheel_tool", lambda name: None)
    assert find_ptxas() == home / "bin" / "ptxas"
    monkeypatch.delenv("CUDA_HOME")
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert find_tool("ptxas") is None
    with pytest.raises(PtxasError, match=r"ptxas not found: .*pip install nvidia-cuda-nvcc"):
        find_ptxas()


def test_find_tool_in_wheel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    site = tmp_path / "site-packages"
    tool = site / "nvidia" / "cu13" / "bin" / "nvdisasm"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sys, "path", [str(site)])
    monkeypatch.setattr(tools.sysconfig, "get_paths", lambda: {"purelib": "", "platlib": ""})
    assert find_tool("nvdisasm") == tool


def test_ptxas_version():
    major, minor = ptxas.ptxas_version()
    assert major >= 12 and minor >= 0


@needs_nvdisasm
def test_disassemble_and_sass_checks():
    cubin = assemble(VADD).cubin
    sass = ptxas.disassemble(cubin)
    assert "FADD" in sass
    assert sass_has(cubin, r"\bLDG\.E\b")
    assert sass_count(cubin, r"\bSTG\.E\b") == 1
    assert not sass_has(cubin, ptxas.LOCAL_MEMORY)
    check_sass(cubin, present=["FADD"], absent=[ptxas.LOCAL_MEMORY])
    with pytest.raises(PtxasError, match="expected /HGMMA/ in the SASS, not found"):
        check_sass(cubin, present=["HGMMA"])
    with pytest.raises(PtxasError, match=r"/FADD/ must not be in the SASS, found at line \d+"):
        check_sass(cubin, absent=["FADD"])


@needs_nvdisasm
def test_spills_show_as_local_memory_in_sass():
    assert sass_has(assemble(spilling_kernel()).cubin, ptxas.LOCAL_MEMORY)


def test_command_line(tmp_path: Path):
    source = tmp_path / "vadd.ptx"
    source.write_text(VADD)
    env = dict(os.environ)
    command = [sys.executable, "-m", "mmcomp.arch.ptxas"]
    ok = subprocess.run([*command, str(source)], capture_output=True, text=True, env=env)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("vadd: ") and "0 bytes spill stores" in ok.stdout
    spill = tmp_path / "spill.ptx"
    spill.write_text(spilling_kernel())
    bad = subprocess.run([*command, str(spill)], capture_output=True, text=True, env=env)
    assert bad.returncode == 1
    assert "error: entry 'spill' spills" in bad.stderr
    piped = subprocess.run([*command, "-"], input=VADD, capture_output=True, text=True, env=env)
    assert piped.returncode == 0 and "vadd:" in piped.stdout


def test_the_command_line_names_a_file_it_cannot_read(tmp_path, capsys):
    from mmcomp.arch.ptxas import main

    with pytest.raises(SystemExit) as info:
        main([str(tmp_path / "absent.ptx")])
    assert info.value.code == 2
    assert "cannot read" in capsys.readouterr().err
