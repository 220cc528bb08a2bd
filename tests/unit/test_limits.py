"""Extents past what a kernel can index are refused at compile time, by both tools alike."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mmcomp
from mmcomp.arch import limits as hw
from mmcomp.dialects.sched import Problem, check_extents
from mmcomp.errors import ScheduleError


def linear(m: int, n: int, k: int) -> mmcomp.Fusion:
    f = mmcomp.Fusion("linear")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    f.output(f.cast(f.linear(a, w), "bf16"))
    return f


@pytest.mark.parametrize("backend", ["cuda", "interp"])
@pytest.mark.parametrize(
    ("shape", "axis"),
    [((1 << 40, 512, 512), "M"), ((64, 1 << 31, 64), "N"), ((64, 64, 1 << 32), "K")],
)
def test_an_extent_past_32_bit_indexing_is_refused_naming_the_axis(
    backend: str, shape: tuple[int, int, int], axis: str
):
    extent = shape["MNK".index(axis)]
    message = (
        rf"choose-schedule: @linear: {axis} \(iteration axis {axis.lower()}\) = {extent}: past "
        rf"what the kernel can index; each extent must be at most {hw.MAX_EXTENT}"
    )
    with pytest.raises(ScheduleError, match=message):
        mmcomp.compile(linear(*shape), backend=backend)


def test_the_largest_extent_compiles():
    kernel = mmcomp.compile(linear(hw.MAX_EXTENT, 256, 64))
    assert kernel.params.tile[0] == 128


def test_too_many_work_units_are_refused():
    with pytest.raises(ScheduleError, match=r"gives \d+ work units .* counts at most 2147483647"):
        mmcomp.compile(linear(1 << 30, 1 << 20, 64), backend="interp")


def test_a_tma_stride_past_2_to_the_40_is_refused():
    problem = Problem(
        {"b0": 2, "m": 1 << 20, "n": 64, "k": 1 << 20},
        operand_shapes=((2, 1 << 20, 1 << 20), (2, 1 << 20, 64)),
    )
    with pytest.raises(ScheduleError, match=r"axis 0 has a stride of 2199023255552 bytes"):
        check_extents(problem)
    check_extents(Problem({"m": hw.MAX_EXTENT, "n": 64, "k": 64}))


def test_mmcomp_opt_reports_what_compile_reports(tmp_path):
    path = tmp_path / "huge.mlir"
    path.write_text(str(linear(1 << 40, 512, 512)))
    result = subprocess.run(
        [sys.executable, "-m", "mmcomp.cli", str(path), "-p", "compile-to-ptx", "-t", "ptx"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    with pytest.raises(ScheduleError) as raised:
        mmcomp.compile(linear(1 << 40, 512, 512))
    assert str(raised.value) in result.stderr
