"""Failures the differential fuzzer (tools/fuzz.py) found, each kept as a test once fixed.

Each test names the run that found it (`--seed S --case I`) and runs the minimized case
through the fuzzer's own checks (`fuzz.run_case`: compile, run, compare with the float64
reference). docs/fuzzing.md lists them with what was wrong.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import fuzz  # noqa: E402
from fuzz import Case, Spec  # noqa: E402

from mmcomp.interp.tile_functions import mma_tile  # noqa: E402

DOT = Spec(family="fms", m=1, n=1, k=8, dtype="bf16", layout="mnk", final="bf16")
"""fused_multiply_sum of a[1, 1, K] and b[1, 1, K]: a dot product, no m or n axis (found
as `--backend interp --seed 30 --case 2 --feature broadcast-form`, the same fusion written
with Fusion.broadcast; the CPU executor returned 0)."""


def _run(spec: Spec, backend: str, params: dict | None = None) -> fuzz.Outcome:
    case = Case(0, 0, backend, fuzz.default_features(backend), spec, params or {})
    return fuzz.run_case(case)


def test_mma_tile_of_a_dot_product_accumulates():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, 1, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((1, 1, 64)).astype(ml_dtypes.bfloat16)
    acc = np.full((1, 1), 0.5, np.float32)
    result = mma_tile(a, b, acc, ("_", "_", "k"), ("_", "_", "k"), ("_", "_"))
    want = 0.5 + np.dot(a.astype(np.float64).ravel(), b.astype(np.float64).ravel())
    assert result.shape == (1, 1)
    assert abs(float(result[0, 0]) - want) <= 1e-5 * max(1.0, abs(want))


@pytest.mark.parametrize("k", [8, 320, 1001])
@pytest.mark.parametrize("split_k", [1, 2])
def test_a_dot_product_on_the_cpu_executor(k: int, split_k: int):
    outcome = _run(dataclasses.replace(DOT, k=k), "interp", {"split_k": split_k})
    assert outcome.status == "pass", outcome.message


@pytest.mark.gpu
def test_a_dot_product_on_the_gpu():
    outcome = _run(DOT, "cuda")
    assert outcome.status == "pass", outcome.message


QUANTIZED_QUOTIENT = Spec(
    family="linear",
    m=1,
    n=1,
    k=1,
    dtype="bf16",
    operands=(fuzz.Operand("t0", "row", "f32", positive=True),),
    steps=(fuzz.Step("div", "t0"),),
    final="f16",
    fp8="f8e4m3,f8e5m2",
    quantize="f8e4m3/128",
)
"""A quantization of a quotient by a [1, N] operand (found as `--backend interp --seed 2
--case 29 --feature fp8-only`, minimized): the CPU executor's amax read the tile's columns
past N, 0 / 0 there, and gave NaN scales and values."""


@pytest.mark.parametrize("n", [1, 130])
def test_a_quantization_after_a_division_by_an_operand(n: int):
    spec = dataclasses.replace(QUANTIZED_QUOTIENT, n=n)
    case = Case(0, 0, "interp", fuzz.default_features("interp") | {"fp8-only"}, spec, {})
    outcome = fuzz.run_case(case)
    assert outcome.status == "pass", outcome.message


ONE_FEATURE_WEIGHT_GRADIENTS = (31, 120, 184, 436, 458, 632, 694, 782)
"""Backward cases (`--backend cuda --seed 12 --case I --feature grad-only`) whose kernel is
the dW of a linear or matmul of one input or output feature: its [T, 1] operand's runtime
token count was the contiguous axis of its tensor map, and lower-schedule-to-hopper
refused the heuristic's schedule. The operand is now read K-major as one row of T."""


def _grad_case(index: int) -> Case:
    return fuzz.draw_case(12, index, "cuda", fuzz.parse_features(["grad-only"], "cuda", False))


@pytest.mark.parametrize("index", [120, 782])  # dZ [T, 1]; x [T, 1]
def test_a_weight_gradient_of_one_feature_compiles(index: int):
    outcome = fuzz.run_case(_grad_case(index), compile_only=True)
    assert outcome.status == "pass", outcome.message


@pytest.mark.gpu
@pytest.mark.parametrize("index", ONE_FEATURE_WEIGHT_GRADIENTS)
def test_a_weight_gradient_of_one_feature_on_the_gpu(index: int):
    outcome = fuzz.run_case(_grad_case(index))
    assert outcome.status == "pass", outcome.message
