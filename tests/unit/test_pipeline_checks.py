"""mmcomp-opt and mmcomp.compile check the same things, in the pipeline's passes, and
report them with the same message."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mmcomp
from mmcomp.arch.ptxas import find_tool
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.ir.attributes import KNOWN, check_attributes, unknown_attribute

F32 = """\
func.func @f32_operands(%a: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}
"""

MISSPELT = """\
func.func @misspelt(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32>
    attributes {sched.param = #sched.params<tile = 128x64x64>} {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}
"""

NO_OUTPUTS = """\
func.func @no_outputs(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return
}
"""

HUGE = """\
func.func @huge(%a: tensor<1099511627776x64xbf16>, %w: tensor<64x64xbf16>)
    -> tensor<1099511627776x64xf32> {
  %0 = fusion.linear %a, %w
      : (tensor<1099511627776x64xbf16>, tensor<64x64xbf16>) -> tensor<1099511627776x64xf32>
  func.return %0 : tensor<1099511627776x64xf32>
}
"""

INTEGER_ARGUMENT = """\
func.func @integer_argument(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>, %s: tensor<4xi32>)
    -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}
"""

RETURNS_INPUT = """\
func.func @returns_input(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>)
    -> (tensor<64x64xf32>, tensor<64x64xbf16>) {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0, %a : tensor<64x64xf32>, tensor<64x64xbf16>
}
"""

CASES = [
    (
        F32,
        FusionError,
        "<fusion>:2:8: error: fusion.mma operand 'a' (%a: tensor<64x64xf32>): the cuda back "
        "end's wgmma takes bf16, f16, f8e4m3 or f8e5m2 (tf32 is not built), found f32",
    ),
    (
        MISSPELT,
        FusionError,
        "<fusion>:1:1: error: propagate-axis-mapping: func.func @misspelt: attribute "
        "'sched.param' is read by no mmcomp pass; did you mean 'sched.params'?",
    ),
    (
        NO_OUTPUTS,
        FusionError,
        "<fusion>:1:1: error: func.func @no_outputs: expected at least one output",
    ),
    (HUGE, ScheduleError, "choose-schedule: @huge: M (iteration axis m) = 1099511627776: past"),
    (
        INTEGER_ARGUMENT,
        FusionError,
        "mmcomp.parse: <fusion>:1:1: error: @integer_argument: argument 2 (tensor<4xi32>): an "
        "i32 input is the group sizes of a fusion.grouped_linear (its offsets or counts), found "
        "one no op uses",
    ),
    (
        RETURNS_INPUT,
        FusionError,
        "mmcomp.parse: <fusion>:4:3: error: @returns_input: output 1: expected a value "
        "computed in the body, found argument 'a' returned directly",
    ),
]


@pytest.mark.parametrize(
    ("text", "kind", "message"),
    CASES,
    ids=["f32", "misspelt", "none", "huge", "integer_argument", "returns_input"],
)
def test_compile_and_mmcomp_opt_report_the_same(tmp_path, text: str, kind: type, message: str):
    with pytest.raises(kind) as raised:
        mmcomp.compile(text)
    assert str(raised.value).startswith(message)
    path = tmp_path / "fusion.mlir"
    path.write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "mmcomp.cli", str(path), "-p", "compile-to-ptx", "-t", "ptx"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    reported = str(raised.value).removeprefix("mmcomp.parse: ")
    assert result.stderr.strip() == reported.replace("<fusion>", str(path))


def test_f32_operands_are_scheduled_for_the_cpu_executor():
    kernel = mmcomp.compile(F32, backend="interp")
    assert kernel.params.tile[2] == 32 and kernel.params.instr[2] == 8
    built = mmcomp.Fusion("f32")
    a = built.input("a", [64, 64], "f32")
    w = built.input("w", [64, 64], "f32")
    built.output(built.linear(a, w))
    with pytest.raises(FusionError, match=r"^choose-schedule: @f32: fusion.mma operand 'a'"):
        mmcomp.compile(built)


def test_every_attribute_the_passes_use_is_known():
    from mmcomp.analysis import schedule_view, warp_roles
    from mmcomp.analysis.roles import ROLES_KEY, SPACE_KEY
    from mmcomp.dialects.hopper import SLOT_ATTR
    from mmcomp.dialects.sched import PARAMS_ATTR

    used = {
        PARAMS_ATTR,
        ROLES_KEY,
        SPACE_KEY,
        schedule_view.GRID_ATTR,
        warp_roles.ROLES_ATTR,
        warp_roles.ROLE_ATTR,
        SLOT_ATTR,
    }
    assert used <= set(KNOWN)
    kernel = mmcomp.compile(MISSPELT.replace("sched.param ", "sched.params "), backend="interp")
    check_attributes(kernel.module, "test")  # a materialized kernel uses only known ones


def test_names_outside_mmcomps_namespaces_are_left_alone():
    assert unknown_attribute("llvm.linkage") is None
    assert unknown_attribute("sched.params") is None
    problem = unknown_attribute("hopper.slots")
    assert problem is not None and "did you mean 'hopper.slot'?" in problem


WRITTEN = "#sched.params<warp_specialization = none, registers = 168/168>"

PARTIAL = f"""\
func.func @lin(%a: tensor<65x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<65x64xbf16>
    attributes {{sched.params = {WRITTEN}}} {{
  %0 = fusion.linear %a, %w : (tensor<65x64xbf16>, tensor<64x64xbf16>) -> tensor<65x64xf32>
  %1 = fusion.cast %0 : tensor<65x64xf32> to tensor<65x64xbf16>
  func.return %1 : tensor<65x64xbf16>
}}
"""
"""Registers that the fill's 128x256 tile would not leave room for, but a tile does."""


def test_a_partial_params_is_valid_when_some_tile_completes_it(tmp_path):
    """mmcomp-opt, mmcomp.parse and the keywords all take it; choose-schedule picks the tile."""
    from_text = mmcomp.compile(PARTIAL)
    fusion = mmcomp.parse(PARTIAL.replace(f"\n    attributes {{sched.params = {WRITTEN}}}", ""))
    by_keywords = mmcomp.compile(fusion, warp_specialization="none", registers=(168, 168))
    assert from_text.params.format() == by_keywords.params.format()
    assert from_text.params.tile == (128, 128, 64)
    path = tmp_path / "partial.mlir"
    path.write_text(PARTIAL)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mmcomp.cli",
            str(path),
            "-p",
            "propagate-axis-mapping,choose-schedule",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "tile = 128x128x64" in result.stdout


HEAVY = """\
func.func @heavy(%a: tensor<137x31xbf16>, %b0: tensor<150x31xbf16>, %b1: tensor<150x31xbf16>,
    %t0: tensor<137x150xf32>)
    -> (tensor<137x150xf32>, tensor<137x150xbf16>, tensor<137x150xf32>, tensor<137x150xbf16>) {
  %0 = fusion.linear %a, %b0 : (tensor<137x31xbf16>, tensor<150x31xbf16>) -> tensor<137x150xf32>
  %1 = fusion.linear %a, %b1 : (tensor<137x31xbf16>, tensor<150x31xbf16>) -> tensor<137x150xf32>
  %2 = fusion.cast %1 : tensor<137x150xf32> to tensor<137x150xbf16>
  %3 = fusion.div %0, %t0 : tensor<137x150xf32>
  %4 = fusion.sub %3, %1 : tensor<137x150xf32>
  %5 = fusion.splat 0.5 : tensor<137x150xf32>
  %6 = fusion.mul %4, %5 : tensor<137x150xf32>
  %7 = fusion.cast %6 : tensor<137x150xf32> to tensor<137x150xbf16>
  func.return %0, %2, %3, %7
      : tensor<137x150xf32>, tensor<137x150xbf16>, tensor<137x150xf32>, tensor<137x150xbf16>
}
"""
"""A horizontal fusion with four outputs (fuzzer seed 1, case 420): the register model fits
the heuristic's 128x128 cooperative tile, and ptxas spills it (4 bytes)."""


def _compile_to_ptx(tmp_path, text: str, pipeline: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "fusion.mlir"
    path.write_text(text)
    command = [sys.executable, "-m", "mmcomp.cli", str(path), "-p", pipeline, "-t", "ptx"]
    return subprocess.run(command, capture_output=True, text=True)


@pytest.mark.skipif(not find_tool("ptxas"), reason="needs ptxas (the dev extra installs one)")
def test_mmcomp_opt_refits_a_schedule_that_ptxas_spills_as_compile_does(tmp_path):
    from mmcomp.arch.ptxas import assemble

    kernel = mmcomp.compile(HEAVY)
    assert kernel.report.spills == 0
    assert kernel.params.tile[1] < 128 or kernel.params.warp_specialization == "none"
    fitted = _compile_to_ptx(tmp_path, HEAVY, "compile-to-ptx")
    assert fitted.returncode == 0, fitted.stderr
    assert fitted.stdout.strip() == kernel.ptx.strip()
    unfitted = _compile_to_ptx(tmp_path, HEAVY, "compile-to-ptx{refit-spills=false}")
    assert unfitted.returncode == 0, unfitted.stderr
    (report,) = assemble(unfitted.stdout).resources.values()
    assert report.spills > 0  # the heuristic's own schedule, which the refit replaced


@pytest.mark.skipif(not find_tool("ptxas"), reason="needs ptxas (the dev extra installs one)")
def test_a_pinned_schedule_that_spills_is_refused_by_both_tools_alike(tmp_path):
    pinned = (
        "tile = 128x128x64, split_k = 1, warp_specialization = cooperative, epilogue_subtile = 0"
    )
    attributes = f"attributes {{sched.params = #sched.params<{pinned}>}}"
    text = HEAVY.replace("xbf16>) {\n  %0", f"xbf16>)\n    {attributes} {{\n  %0")
    with pytest.raises(ScheduleError) as raised:
        mmcomp.compile(text)
    message = str(raised.value)
    assert "ptxas spills the consumer registers (entry 'heavy' spills:" in message
    result = _compile_to_ptx(tmp_path, text, "compile-to-ptx")
    assert result.returncode == 1
    assert result.stderr.strip() == f"compile-to-ptx: @heavy: {message}"


def test_a_stream_k_schedule_that_spills_is_refitted_persistent_before_narrower_tiles():
    from mmcomp.dialects.sched import ScheduleParams
    from mmcomp.schedule.spill_refit import refits

    chosen = ScheduleParams(tile=(128, 256, 64), strategy="hybrid-stream-k")
    tries = refits(chosen, {})
    assert tries[0] == {"strategy": "persistent"}
    assert all("strategy" not in settings for settings in tries[1:])
    pinned = refits(chosen, {"strategy": "hybrid-stream-k"})
    assert all(settings["strategy"] == "hybrid-stream-k" for settings in pinned)
    assert not any("strategy" in settings for settings in refits(ScheduleParams(), {}))


@pytest.mark.skipif(not find_tool("ptxas"), reason="needs ptxas (the dev extra installs one)")
def test_a_spilling_stream_k_tile_keeps_its_width_under_the_persistent_strategy():
    from cases import gelu_bias

    # The heuristic's 128x256 hybrid stream-K schedule of this fused epilogue spills (the
    # fixup loop's running sums beside the tanh GELU); the persistent one fits.
    kernel = mmcomp.compile(gelu_bias(8192, 14336, 4096))
    assert kernel.report.spills == 0
    assert kernel.params.strategy == "persistent"
    assert kernel.params.tile == (128, 256, 64)


@pytest.mark.skipif(not find_tool("ptxas"), reason="needs ptxas (the dev extra installs one)")
def test_compile_to_ptx_options_are_compile_keywords_kept_by_the_refit(tmp_path):
    kernel = mmcomp.compile(HEAVY, stages=3)
    assert kernel.params.stages == 3 and kernel.report.spills == 0
    result = _compile_to_ptx(tmp_path, HEAVY, "compile-to-ptx{stages=3}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == kernel.ptx.strip()
    pinned = "tile=128x128x64 split-k=1 warp-specialization=cooperative epilogue-subtile=0"
    refused = _compile_to_ptx(tmp_path, HEAVY, f"compile-to-ptx{{{pinned}}}")
    with pytest.raises(ScheduleError) as raised:
        mmcomp.compile(
            HEAVY,
            tile=(128, 128, 64),
            split_k=1,
            warp_specialization="cooperative",
            epilogue_subtile=0,
        )
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"compile-to-ptx: @heavy: {raised.value}"


@pytest.mark.skipif(not find_tool("ptxas"), reason="needs ptxas (the dev extra installs one)")
def test_a_pinned_tile_that_spills_is_refitted_with_a_narrower_subtile(tmp_path):
    """The same pins with the epilogue subtile left free: the refit walks the epilogue in
    narrower subtiles until ptxas assembles it without spills, in both tools alike."""
    keywords = {"tile": (128, 128, 64), "split_k": 1, "warp_specialization": "cooperative"}
    kernel = mmcomp.compile(HEAVY, **keywords)
    assert kernel.params.tile == (128, 128, 64) and kernel.params.epilogue_subtile > 0
    assert kernel.report.spills == 0
    pinned = "tile=128x128x64 split-k=1 warp-specialization=cooperative"
    fitted = _compile_to_ptx(tmp_path, HEAVY, f"compile-to-ptx{{{pinned}}}")
    assert fitted.returncode == 0, fitted.stderr
    assert fitted.stdout.strip() == kernel.ptx.strip()
