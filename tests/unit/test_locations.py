"""Verifier errors name the op's place in the text, `file:line:col: error: ...`, as MLIR
does: from `mmcomp.parse`, `mmcomp.compile` on text, and mmcomp-opt alike."""

from __future__ import annotations

import subprocess
import sys

import pytest
from xdsl.dialects.builtin import FileLineColLoc

import mmcomp
from mmcomp.errors import FusionError
from mmcomp.ir.diagnostics import LocatingParser, at, is_located, location, verify
from mmcomp.ir.registry import context

TWO_LINEARS = """\
func.func @two(%a: tensor<64x32xbf16>, %w: tensor<128x32xbf16>, %v: tensor<96x32xbf16>)
    -> (tensor<64x128xf32>, tensor<64x64xf32>) {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  %z = fusion.linear %a, %v : (tensor<64x32xbf16>, tensor<96x32xbf16>) -> tensor<64x64xf32>
  func.return %y, %z : tensor<64x128xf32>, tensor<64x64xf32>
}
"""
"""The second linear's result type is wrong (N = 96, not 64): line 4, column 8."""

WRONG = (
    "4:8: error: fusion.linear: result: expected type tensor<64x96xf32>, found tensor<64x64xf32>"
)

TWO_M = """\
func.func @two_m(%a: tensor<64x32xbf16>, %c: tensor<16x32xbf16>, %w: tensor<128x32xbf16>)
    -> (tensor<64x128xf32>, tensor<16x128xf32>) {
  %y = fusion.linear %a, %w : (tensor<64x32xbf16>, tensor<128x32xbf16>) -> tensor<64x128xf32>
  %z = fusion.linear %c, %w : (tensor<16x32xbf16>, tensor<128x32xbf16>) -> tensor<16x128xf32>
  func.return %y, %z : tensor<64x128xf32>, tensor<16x128xf32>
}
"""
"""Verifies, but propagate-axis-mapping finds the second linear's M wrong."""


def test_parsed_ops_carry_the_position_of_their_name():
    module = LocatingParser(context(), TWO_LINEARS, "two.mlir").parse_module()
    linears = [op for op in module.walk() if op.name == "fusion.linear"]
    assert [location(op) for op in linears] == ["two.mlir:3:8", "two.mlir:4:8"]
    assert isinstance(linears[0].location, FileLineColLoc)


def test_a_written_location_is_kept():
    text = TWO_LINEARS.replace(
        "-> tensor<64x64xf32>\n", '-> tensor<64x64xf32> loc("model.py":42:7)\n'
    )
    module = LocatingParser(context(), text, "two.mlir").parse_module()
    with pytest.raises(Exception, match=r"^model\.py:42:7: error: fusion\.linear: result"):
        verify(module)


def test_parse_reports_the_failing_op_by_line_and_column():
    with pytest.raises(FusionError, match=rf"^mmcomp\.parse: <fusion>:{WRONG}$"):
        mmcomp.parse(TWO_LINEARS)


def test_compile_reports_a_pass_error_at_the_op():
    message = r"^<fusion>:4:8: error: fusion\.linear: M is 16 here, but the iteration space"
    for backend in ("interp", "cuda"):
        with pytest.raises(FusionError, match=message):
            mmcomp.compile(TWO_M, backend=backend)


def _opt(path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mmcomp.cli", str(path), *args], capture_output=True, text=True
    )


def test_mmcomp_opt_reports_the_same_errors(tmp_path):
    two = tmp_path / "two.mlir"
    two.write_text(TWO_LINEARS)
    result = _opt(two)
    assert result.returncode == 1
    assert result.stderr.strip() == f"{two}:{WRONG}"
    two_m = tmp_path / "two_m.mlir"
    two_m.write_text(TWO_M)
    result = _opt(two_m, "-p", "propagate-axis-mapping")
    assert result.returncode == 1
    with pytest.raises(FusionError) as raised:
        mmcomp.compile(TWO_M)
    assert result.stderr.strip() == str(raised.value).replace("<fusion>", str(two_m))


def test_ops_built_in_python_have_no_location():
    f = mmcomp.Fusion("built")
    a = f.input("a", [64, 32], "bf16")
    y = f.neg(a)
    assert location(y.ssa.owner) is None  # pyright: ignore[reportArgumentType]
    assert at(y.ssa.owner, "fusion.neg: message") == "fusion.neg: message"  # pyright: ignore[reportArgumentType]
    assert is_located("f.mlir:1:2: error: x") and not is_located("fusion.neg: x")
