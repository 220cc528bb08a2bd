"""Errors and guarantees at the edges of the Python API: role errors of dynamic fusions,
kernels independent of later edits to their Fusion, shape arguments, PTX identifiers,
schedule keywords that do not apply, M buckets, `mmcomp.reference`, `python -m mmcomp`
and `mmcomp-opt` option types."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mmcomp
from mmcomp.dialects.ptx import is_identifier
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.pipeline import BucketedKernel, run_pipeline

BF16 = np.dtype(ml_dtypes.bfloat16)


def dynamic_n() -> mmcomp.Fusion:
    f = mmcomp.Fusion("dyn_n")
    a = f.input("a", (8, 32), "bf16")
    w = f.input("w", ("n", 32), "bf16")
    f.output(f.linear(a, w))
    return f


def linear(m: int | str = 8, n: int = 8, k: int = 16) -> mmcomp.Fusion:
    f = mmcomp.Fusion("lin")
    a = f.input("a", (m, k), "bf16")
    w = f.input("w", (n, k), "bf16")
    f.output(f.linear(a, w))
    return f


def ones(*shape: int) -> np.ndarray:
    return np.ones(shape, BF16)


# ----------------------------------------------------------------------------------------
# Role errors of a fusion with dynamic extents


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (dynamic_n, r"operand 'b': axis 0 is dynamic \(\?\) but has role n \(N\)"),
    ],
)
def test_dynamic_role_errors_are_the_pipelines_fusion_error(
    build: Callable[[], mmcomp.Fusion], message: str
):
    with pytest.raises(FusionError) as static:
        run_pipeline(build().module, backend="interp")
    assert str(static.value).startswith("propagate-axis-mapping: ")
    calls = [
        lambda: mmcomp.compile(build(), backend="interp"),
        lambda: mmcomp.compile(build(), backend="interp", schedule_m=16),
        lambda: mmcomp.compile(build(), backend="interp", autotune=True),
        lambda: mmcomp.autotune(build(), backend="interp"),
    ]
    for call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(FusionError, match=message) as error:
                call()
        assert str(error.value) == str(static.value)


def test_dynamic_role_error_of_parsed_text_keeps_its_location():
    text = str(dynamic_n())
    with pytest.raises(FusionError, match=r"^<fusion>:\d+:\d+: error: fusion.linear") as error:
        mmcomp.compile(text, backend="interp")
    with pytest.raises(FusionError) as static:
        run_pipeline(mmcomp.parse(text).module, backend="interp")
    assert str(error.value) == str(static.value)


# ----------------------------------------------------------------------------------------
# A kernel keeps the fusion as compiled


def extend(f: mmcomp.Fusion) -> None:
    """Build one more input and output on `f`."""
    y = f.outputs[0]
    t = f.input("t", [y.shape[0] if y.shape[0] > 0 else "m", 8], "f32")
    f.output(y * t)


def test_building_on_the_fusion_after_compiling_leaves_the_kernel_as_compiled():
    f = linear()
    kernel = mmcomp.compile(f, backend="interp")
    again = mmcomp.compile(f, backend="interp")  # from the in-memory cache
    extend(f)
    assert len(f.inputs) == 3 and len(f.outputs) == 2
    for compiled in (kernel, again):
        assert compiled.fusion is not f
        assert [value.name for value in compiled.fusion.inputs] == ["a", "w"]
        assert len(compiled.fusion.outputs) == 1
        (y,) = compiled(ones(8, 16), ones(8, 16))
        np.testing.assert_array_equal(y, np.full((8, 8), 16.0, np.float32))
        with pytest.raises(FusionError, match=r"kernel @lin: expected at most 2 inputs"):
            compiled(ones(8, 16), ones(8, 16), np.ones((8, 8), np.float32))


def test_a_bucketed_kernel_compiles_new_buckets_from_the_fusion_as_compiled():
    f = linear("m")
    kernel = mmcomp.compile(f, backend="interp")
    assert isinstance(kernel, BucketedKernel)
    extend(f)
    assert [value.name for value in kernel.fusion.inputs] == ["a", "w"]
    (y,) = kernel(ones(3, 16), ones(8, 16))  # the 16 bucket, compiled now
    np.testing.assert_array_equal(y, np.full((3, 8), 16.0, np.float32))
    assert len(kernel.kernel_for(3).fusion.inputs) == 2


def test_clone_is_an_independent_fusion():
    f = linear()
    g = f.clone()
    assert str(g) == str(f) and g.module is not f.module
    extend(f)
    assert len(g.inputs) == 2 and len(g.outputs) == 1


# ----------------------------------------------------------------------------------------
# Fusion.input's shape and the extents in messages


@pytest.mark.parametrize("extent", [-(2**63), mmcomp.DYNAMIC, np.int64(-(2**63))])
def test_the_dynamic_sentinel_is_not_an_extent(extent: int):
    f = mmcomp.Fusion("x")
    with pytest.raises(
        FusionError,
        match=r"Fusion.input: argument 'shape': expected positive extents, found "
        r"mmcomp.DYNAMIC .*a name or None marks a dynamic extent",
    ):
        f.input("a", [extent, 8], "bf16")
    assert f.inputs == []


@pytest.mark.parametrize("shape", [b"\x04\x08", bytearray(b"\x04\x08"), np.array(4)])
def test_shapes_that_are_not_sequences_of_extents(shape: object):
    with pytest.raises(
        FusionError, match=r"Fusion.input: argument 'shape': expected a sequence of positive ints"
    ):
        mmcomp.Fusion("x").input("a", shape, "bf16")  # pyright: ignore[reportArgumentType]


def test_a_numpy_vector_is_a_shape():
    a = mmcomp.Fusion("x").input("a", np.array([4, 8]), "bf16")  # pyright: ignore[reportArgumentType]
    assert a.shape == (4, 8)


def test_messages_print_a_dynamic_extent_as_a_question_mark():
    f = mmcomp.Fusion("x")
    a = f.input("a", ("m", 32), "bf16")
    b = f.input("b", ("k", 16), "bf16")
    with pytest.raises(FusionError, match=r"expected K = 32 .* found \? \(shape \[\?, 16\]\)"):
        f.matmul(a, b)
    c = f.input("c", (8, "k"), "bf16")
    w = f.input("w", (16, 32), "bf16")
    with pytest.raises(FusionError, match=r"expected K = \? \(the last axis of 'a'\).* found 32"):
        f.linear(c, w)
    v = f.input("v", ("n", 32), "bf16")
    bias = f.input("bias", (16,), "bf16")
    with pytest.raises(FusionError, match=r"argument 'bias': expected shape \[\?\]") as raised:
        f.linear(a, v, bias)
    assert str(mmcomp.DYNAMIC) not in str(raised.value)


# ----------------------------------------------------------------------------------------
# PTX identifiers


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("_", False),
        ("$", False),
        ("%", False),
        ("1a", False),
        ("a.b", False),
        ("a", True),
        ("_a", True),
        ("__", True),
        ("$a", True),
        ("%r1", True),
        ("a$b_1", True),
    ],
)
def test_ptx_identifiers(name: str, valid: bool):
    assert is_identifier(name) is valid


def test_a_kernel_named_underscore_is_refused_before_ptxas():
    f = mmcomp.Fusion("_")
    f.output(f.linear(f.input("a", [64, 64], "bf16"), f.input("w", [64, 64], "bf16")))
    with pytest.raises(ScheduleError, match=r"@_: the name is not a valid PTX identifier"):
        mmcomp.compile(f)


# ----------------------------------------------------------------------------------------
# Schedule keywords that do not apply


def test_schedule_m_is_refused_for_a_static_m():
    with pytest.raises(
        ScheduleError,
        match=r"compile: schedule_m=16: schedule_m applies to a fusion with a dynamic M.*"
        r"@lin has a static M",
    ):
        mmcomp.compile(linear(), backend="interp", schedule_m=16)
    with pytest.raises(ScheduleError, match=r"schedule_m applies to a fusion with a dynamic M"):
        mmcomp.compile(linear(), backend="interp", autotune=True, schedule_m=16)
    f = mmcomp.Fusion("batch")
    a = f.input("a", ("b", 8, 16), "bf16")
    f.output(f.linear(a, f.input("w", (8, 16), "bf16")))
    with pytest.raises(ScheduleError, match=r"@batch has a static M"):
        mmcomp.compile(f, backend="interp", schedule_m=16)
    kernel = mmcomp.compile(linear("m"), backend="interp", schedule_m=16)
    assert not isinstance(kernel, BucketedKernel)


def test_autotune_budget_needs_autotune():
    with pytest.raises(
        ScheduleError, match=r"compile: autotune_budget_s=5 applies only with autotune=True"
    ):
        mmcomp.compile(linear(), backend="interp", autotune_budget_s=5)


# ----------------------------------------------------------------------------------------
# BucketedKernel.kernel_for


def test_kernel_for_takes_an_m():
    kernel = mmcomp.compile(linear("m"), backend="interp")
    assert isinstance(kernel, BucketedKernel)
    for bad in ("16", 0.5, 16.0, True, -1, None):
        with pytest.raises(
            FusionError,
            match=r"kernel @lin: kernel_for: argument 'm': expected an int >= 0 \(a runtime "
            r"extent M\), found ",
        ):
            kernel.kernel_for(bad)  # pyright: ignore[reportArgumentType]
    assert kernel.kernel_for(np.int64(20)) is kernel.kernel_for(20)  # pyright: ignore[reportArgumentType]
    assert kernel.kernel_for(0) is kernel.kernel_for(16)


# ----------------------------------------------------------------------------------------
# mmcomp.reference, python -m mmcomp, mmcomp-opt


def test_reference_accumulate_lists_the_accepted_values():
    f = linear()
    with pytest.raises(
        FusionError,
        match=r"reference: argument 'accumulate': expected float64 or float32 \(np.float64, "
        r"np.float32 or their names\), found 'zz'",
    ):
        mmcomp.reference(f, ones(8, 16), ones(8, 16), accumulate="zz")
    (y,) = mmcomp.reference(f, ones(8, 16), ones(8, 16), accumulate="float32")
    assert float(y[0, 0]) == 16.0


def test_main_reports_a_shape_it_cannot_compile_as_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from mmcomp.__main__ import main

    monkeypatch.setattr(sys, "argv", ["mmcomp", "--shape", "3000000000", "1", "1"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    stderr = capsys.readouterr().err
    assert "error: --shape 3000000000 1 1: choose-schedule: @epilogue_silu: M" in stderr
    assert "past what the kernel can index" in stderr
    assert "Traceback" not in stderr


LINEAR = """\
func.func @f(%a: tensor<64x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  %0 = fusion.linear %a, %w : (tensor<64x64xbf16>, tensor<64x64xbf16>) -> tensor<64x64xf32>
  func.return %0 : tensor<64x64xf32>
}
"""


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            'choose-schedule{stages="-1"}',
            'choose-schedule: option stages: expected int, found "-1"',
        ),
        (
            "choose-schedule{swap-ab=maybe}",
            'choose-schedule: option swap-ab: expected bool, found "maybe"',
        ),
        ("choose-schedule{stages=1,2}", "choose-schedule: option stages: expected int, found 1,2"),
        (
            "compile-to-ptx{refit-spills}",
            "compile-to-ptx: option refit-spills: expected bool, found no value",
        ),
    ],
)
def test_mmcomp_opt_names_the_option_of_the_wrong_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, message: str
):
    from mmcomp.cli import main

    source = tmp_path / "linear.mlir"
    source.write_text(LINEAR)
    with pytest.raises(SystemExit) as exit_:
        main([str(source), "-p", f"propagate-axis-mapping,{option}"])
    assert exit_.value.code == 1
    assert f"mmcomp-opt: error: {message}\n" in capsys.readouterr().err
