"""The differential fuzzer (tools/fuzz.py): its generator, its checks, and short CPU runs.

The runs are how the fuzzer takes part in CI: fixed seeds of the CPU schedule executor
against the float64 reference, and the cuda mode's processes with the CPU executor standing
in for the GPU. docs/fuzzing.md describes the grammar and the tolerances.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import fuzz  # noqa: E402

INTERP = fuzz.default_features("interp")
CUDA = fuzz.default_features("cuda")


def _cases(backend: str, features: frozenset[str], count: int, seed: int = 7):
    return [fuzz.draw_case(seed, index, backend, features) for index in range(count)]


def test_a_case_is_a_function_of_seed_and_index():
    first = fuzz.draw_case(11, 5, "cuda", CUDA)
    again = fuzz.draw_case(11, 5, "cuda", CUDA)
    assert first == again
    assert str(fuzz.build(first.spec, first.name).fusion) == str(
        fuzz.build(again.spec, again.name).fusion
    )
    built = fuzz.build(first.spec, first.name)
    for x, y in zip(fuzz.make_inputs(first, built), fuzz.make_inputs(again, built), strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    others = {fuzz.draw_case(11, index, "cuda", CUDA).spec for index in range(6, 26)}
    assert len(others) == 20
    assert fuzz.draw_case(12, 5, "cuda", CUDA).spec != first.spec


def test_the_grammar_reaches_every_family_and_form():
    only = {feature for feature in fuzz.FEATURES if feature.endswith("-only")}
    cases = _cases("cuda", frozenset(fuzz.FEATURES) - only - {"grad", "fp8"}, 1500)
    families = Counter(case.spec.family for case in cases)
    assert set(families) == set(fuzz.FAMILIES)
    steps = [step for case in cases for step in case.spec.steps]
    assert {step.op for step in steps} == {*fuzz.UNARY, *fuzz.BINARY, "cast"}
    operands = [operand for case in cases for operand in case.spec.operands]
    assert {operand.kind for operand in operands} == set(fuzz.OPERAND_KINDS)
    assert {operand.dtype for operand in operands} == {"bf16", "f16", "f32"}
    assert any(isinstance(step.arg, float) for step in steps)
    assert any(step.swap for step in steps)
    assert {step.output for step in steps} >= {"f32", "bf16", "f16"}
    assert {case.spec.final for case in cases} == {"f32", "bf16", "f16"}
    assert {case.spec.dtype for case in cases} == {"bf16", "f16"}
    assert {case.spec.layout for case in cases if case.spec.family == "fms"} == {"mnk", "mkn"}
    assert {case.spec.contractions for case in cases if case.spec.family == "horizontal"} == {
        2,
        3,
    }
    assert {len(case.spec.steps) for case in cases} == set(range(7))
    keys = Counter(key for case in cases for key in case.params)
    # epilogue_subtile is the heuristic's where a drawn tile's whole epilogue does not fit
    assert set(keys) == set(fuzz.SCHEDULE_KEYS) - {"epilogue_subtile"}
    heuristic = sum(1 for case in cases if not case.params)
    assert 0.2 * len(cases) < heuristic < 0.4 * len(cases)
    extents = Counter(extent for case in cases for extent in (case.spec.m, case.spec.n))
    for edge in (1, 2, 7, 63, 64, 65, 127, 128, 129):
        assert extents[edge] > 0, edge
    assert any(case.spec.k % 8 for case in cases)
    assert any(case.spec.m * case.spec.n > fuzz.SAMPLE_ELEMENTS for case in cases)


def test_the_grouped_family_reaches_both_layouts_and_every_group_count():
    cases = _cases("cuda", CUDA | {"grouped-only"}, 300)
    assert all(case.spec.groups for case in cases)
    assert {case.spec.group_layout for case in cases} == {"offsets", "counts"}
    assert {case.spec.groups for case in cases} == {1, 2, 3, 5, 8, 16, 64, 128}
    assert {case.spec.family for case in cases} == {"linear", "horizontal"}
    assert not any(key in case.params for case in cases for key in fuzz.GROUPED_FIXED)
    grouped = [case for case in _cases("cuda", CUDA, 600) if case.spec.groups]
    assert 0.05 * 600 < len(grouped) < 0.3 * 600
    for case in cases[:40]:
        built = fuzz.build(case.spec, case.name)
        sizes = fuzz.make_inputs(case, built)[[v.dtype for v in built.fusion.inputs].index("i32")]
        assert sizes.dtype == np.int32 and (sizes >= 0).all() and (sizes <= case.spec.m).all()
        if case.spec.group_layout == "offsets":
            assert (np.diff(sizes) >= 0).all()


def test_the_default_grammar_holds_what_the_cuda_back_end_takes():
    cases = _cases("cuda", CUDA, 600)
    assert {case.spec.family for case in cases} == set(fuzz.FAMILIES)
    one_row = 0
    for case in cases:
        tile = case.params.get("tile")
        pingpong = case.params.get("warp_specialization") == "pingpong"
        swapped = case.params.get("swap_ab", False)  # the tile's rows are wgmma's n
        assert tile is None or pingpong or swapped or tile[0] in (64, 128, 256), case.index
        one_row += tile is not None and not pingpong and not swapped and tile[0] == 64
    # 64-row cooperative tiles: the consumers split their N (or the tile is refused).
    assert one_row > 0
    assert any(case.spec.k % 8 for case in cases)
    assert any(case.spec.family == "fms" and min(case.spec.m, case.spec.n) == 1 for case in cases)


def test_aligned_rows_without_the_unaligned_feature():
    features = CUDA - {"unaligned-k"}
    for case in _cases("cuda", features, 600):
        assert case.spec.k % 8 == 0, case.index
        b_kn = case.spec.family == "matmul" or "matmul" in case.spec.layout
        assert not b_kn or case.spec.n % 8 == 0, case.index


def test_inputs_are_never_zero_and_outputs_are_bounded():
    for case in _cases("interp", INTERP, 60, seed=3):
        built = fuzz.build(case.spec, case.name)
        inputs = fuzz.make_inputs(case, built)
        factors = [array for array in inputs if array.dtype != np.int32]  # not group sizes
        assert all(np.all(array.astype(np.float64) != 0) for array in factors)
        for output in fuzz.reference_outputs(case, built, inputs, None):
            values = output.astype(np.float64)
            if case.spec.groups:
                values = values[~np.isnan(values)]  # the rows of no group are NaN
            assert np.all(np.isfinite(values)), case.index
            assert np.max(np.abs(values)) < 1e5, case.index


def _passing_case(backend: str = "interp") -> tuple[fuzz.Case, fuzz.Built, list[np.ndarray]]:
    for case in _cases(backend, fuzz.default_features(backend), 50, seed=5):
        if case.spec.m > 4 and case.spec.n > 4 and not case.params:
            built = fuzz.build(case.spec, case.name)
            inputs = fuzz.make_inputs(case, built)
            return case, built, fuzz.reference_outputs(case, built, inputs, None)
    raise AssertionError("no case with the heuristic's schedule among the first 50")


def test_the_check_finds_a_wrong_element_and_a_nan():
    case, built, want = _passing_case()
    assert fuzz.judge(case, built, want, want).status == "pass"
    wrong = [array.copy() for array in want]
    scale = np.max(np.abs(wrong[-1].astype(np.float64)))
    wrong[-1].flat[3] = wrong[-1].flat[3] + wrong[-1].dtype.type(0.2 * scale)
    outcome = fuzz.judge(case, built, wrong, want)
    assert (outcome.status, outcome.kind) == ("fail", "wrong")
    assert f"output {len(want) - 1}" in outcome.message
    poisoned = [array.copy() for array in want]
    poisoned[0].flat[0] = np.nan
    outcome = fuzz.judge(case, built, poisoned, want)
    assert (outcome.status, outcome.kind) == ("fail", "nan")


def test_the_tolerance_grows_with_k_and_the_roundings():
    assert fuzz.tolerance("bf16", [], set(), 64) < 0.02
    assert fuzz.tolerance("f32", [], set(), 64) < 1e-4
    assert fuzz.tolerance("f32", [], set(), 4096) > fuzz.tolerance("f32", [], set(), 64)
    assert fuzz.tolerance("f32", ["bf16"], set(), 64) > fuzz.tolerance("f32", [], set(), 64)
    assert fuzz.tolerance("f32", [], {"tanh"}, 64) > fuzz.tolerance("f32", [], {"exp"}, 64)


def test_sampled_rows_and_columns_give_the_reference_of_the_whole():
    spec = fuzz.Spec(
        "linear",
        300,
        200,
        64,
        "bf16",
        bias="f32",
        operands=(fuzz.Operand("t0", "col", "bf16"), fuzz.Operand("t1", "full", "f16")),
        steps=(fuzz.Step("mul", "t0"), fuzz.Step("silu"), fuzz.Step("add", "t1", swap=True)),
        raw_output="f32",
    )
    case = fuzz.Case(1, 0, "interp", INTERP, spec, {})
    built = fuzz.build(spec, case.name)
    inputs = fuzz.make_inputs(case, built)
    whole = fuzz.reference_outputs(case, built, inputs, None)
    rows, cols = np.array([0, 5, 64, 299]), np.array([1, 2, 128, 199])
    part = fuzz.reference_outputs(case, built, inputs, (rows, cols))
    for full, sampled, value in zip(whole, part, built.fusion.outputs, strict=True):
        roles = fuzz.output_roles(value.ndim)
        assert np.array_equal(fuzz.take(full, roles, rows, cols), sampled)


def test_a_failure_prints_a_reproducer():
    case, built, want = _passing_case()
    wrong = [np.full_like(array, 3) for array in want]
    outcome = fuzz.judge(case, built, wrong, want)
    text = fuzz.reproducer(case, outcome)
    assert f"--seed {case.seed} --case {case.index}" in text
    assert "func.func @" + case.name in text
    assert "relative error" in text


def test_refusals_are_counted_and_heuristic_refusals_fail():
    case = dataclasses.replace(_passing_case()[0], params={"tile": (128, 128, 64)})
    refused = fuzz.classify_error(case, fuzz.ScheduleError("tile 128x128x64: too big (a 5)"))
    assert (refused.status, refused.kind) == ("refused", "ScheduleError")
    assert fuzz.normalize(refused.message) == "ScheduleError: tile #x#x#: too big"
    heuristic = fuzz.classify_error(dataclasses.replace(case, params={}), fuzz.FusionError("x"))
    assert (heuristic.status, heuristic.kind) == ("fail", "refused-heuristic")
    crash = fuzz.classify_error(case, KeyError("index"))
    assert (crash.status, crash.kind) == ("fail", "crash")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interp_run(seed: int):
    lines: list[str] = []
    options = fuzz.Options("interp", seed, INTERP, cases=300, jobs=0, out=lines.append)
    summary = fuzz.run(options)
    assert not summary.failures, "\n".join(lines)
    statuses = Counter(outcome.status for outcome in summary.outcomes)
    assert statuses["pass"] > 0.75 * len(summary.outcomes)
    families = {outcome.family for outcome in summary.outcomes}
    assert {family.removeprefix("grouped-") for family in families} == set(fuzz.FAMILIES)
    assert "grouped-linear" in families


def test_the_grad_family_reaches_every_kernel_and_token_count():
    cases = _cases("interp", INTERP | {"grad-only"}, 60, seed=3)
    assert all(case.backward is not None for case in cases)
    assert {case.spec.family for case in cases} <= set(fuzz.BACKWARD_FAMILIES)
    names = {fuzz.build_case(case).fusion.name.split("_")[-2] for case in cases}
    assert {"epilogue", "dgrad", "wgrad"} <= names
    tokens = Counter(case.backward[2] for case in _cases("cuda", CUDA | {"grad-only"}, 300))
    assert tokens[0] > 0 and tokens[1] > 0 and len(tokens) > 20
    shared = [case for case in _cases("interp", INTERP | {"grad"}, 400) if case.backward]
    assert 0.15 * 400 < len(shared) < 0.35 * 400
    assert fuzz.parse_features(["backward"], "interp", False) == INTERP | {"grad-only"}


def _wgrad_case(tokens: int) -> fuzz.Case:
    """A dW kernel of linear + bias + silu, run at `tokens` tokens."""
    spec = fuzz.Spec("linear", 96, 48, 64, "bf16", bias="bf16", steps=(fuzz.Step("silu"),))
    for which in range(4):
        case = fuzz.Case(
            1, 0, "interp", INTERP | {"grad-only"}, spec, {}, False, (False, which, tokens)
        )
        if "wgrad" in fuzz.build_case(case).fusion.name:
            return case
    raise AssertionError("no wgrad step")


@pytest.mark.parametrize("tokens", [0, 1, 7, 129])
def test_a_dw_kernel_runs_at_any_token_count(tokens: int):
    case = _wgrad_case(tokens)
    built = fuzz.build_case(case)
    assert built.tokens == tokens and built.compiled is not None
    inputs = fuzz.make_inputs(case, built)
    assert {array.shape[0] for array in inputs} == {tokens}
    outcome = fuzz.run_case(case)
    assert outcome.status == "pass", outcome.message
    if tokens == 0:
        (want,) = fuzz.reference_outputs(case, built, inputs, None)
        assert not np.any(want.astype(np.float64))


def test_the_gradient_check_finds_a_wrong_derivative_rule(monkeypatch: pytest.MonkeyPatch):
    from mmcomp.autodiff import rules
    from mmcomp.dialects import fusion as fd

    case = _wgrad_case(96)
    failed, ratio = fuzz.check_gradients(case)
    assert failed is None and 0 < ratio < 0.5
    # silu's derivative without its second term, x s (1 - s): sigmoid's rule on silu
    monkeypatch.setitem(rules.RULES, fd.SiluOp, rules.RULES[fd.SigmoidOp])
    failed, _ = fuzz.check_gradients(case)
    assert failed is not None and failed.kind == "gradient"
    assert "gradient of 'a'" in failed.message and "gradient of 'w'" in failed.message


def test_the_grad_family_runs_on_interp():
    lines: list[str] = []
    features = INTERP | {"grad-only"}
    options = fuzz.Options("interp", 3, features, cases=40, jobs=0, out=lines.append)
    summary = fuzz.run(options)
    assert not summary.failures, "\n".join(lines)
    statuses = Counter(outcome.status for outcome in summary.outcomes)
    assert statuses["pass"] > 0.7 * len(summary.outcomes)
    assert all(outcome.family.startswith("grad-") for outcome in summary.outcomes)


@pytest.mark.gpu
def test_the_grad_family_on_the_gpu():
    lines: list[str] = []
    features = CUDA | {"grad-only"}
    options = fuzz.Options("cuda", 1, features, cases=60, jobs=4, out=lines.append)
    summary = fuzz.run(options)
    assert len(summary.outcomes) == 60
    assert not summary.failures, "\n".join(lines)


def test_the_fp8_family_reaches_every_type_mode_and_output():
    for backend, features in (("interp", INTERP), ("cuda", CUDA)):
        cases = _cases(backend, features | {"fp8-only"}, 300)
        specs = [case.spec for case in cases]
        assert all(fuzz.has_fp8(spec) for spec in specs)
        assert {spec.fp8 for spec in specs} == {
            "",
            *(f"{a},{b}" for a in fuzz.FP8_TYPES for b in fuzz.FP8_TYPES),
        }
        assert {spec.scales for spec in specs if spec.fp8} == set(fuzz.SCALE_MODES)
        assert {spec.family for spec in specs if spec.scales == "block"} >= {"linear", "horizontal"}
        granularities = {spec.quantize.split("/")[-1] for spec in specs if spec.quantize}
        assert granularities == set(fuzz.QUANTIZE_GRANULARITIES)
        outputs = {spec.final for spec in specs} | {s.output for p in specs for s in p.steps}
        assert set(fuzz.FP8_TYPES) <= outputs
        assert any(spec.k % 128 for spec in specs if spec.fp8)
        assert any(spec.m == 1 for spec in specs if spec.fp8)
        assert any(spec.n % 2 for spec in specs if spec.fp8)
        assert any(case.params.get("tile", (0, 0, 0))[2] == 128 for case in cases)
    shared = [case for case in _cases("cuda", CUDA | {"fp8"}, 400) if fuzz.has_fp8(case.spec)]
    assert 0.2 * 400 < len(shared) < 0.45 * 400
    assert not any(case.spec.groups for case in shared)


def _fp8_case(scales: str, final: str = "f32", k: int = 1024) -> fuzz.Case:
    spec = fuzz.Spec("linear", 64, 96, k, "bf16", final=final, fp8="f8e4m3,f8e5m2", scales=scales)
    return fuzz.Case(1, 0, "cuda", CUDA | {"fp8-only"}, spec, {})


def test_the_fp8_accumulator_bound_follows_the_mode():
    bounds = {}
    for scales in ("tensor", "row", "block"):
        case = _fp8_case(scales)
        built = fuzz.build_case(case)
        inputs = fuzz.make_inputs(case, built)
        bounds[scales] = fuzz.fp8_accumulation(case, built, inputs, None)
        interp = dataclasses.replace(case, backend="interp")
        assert fuzz.fp8_accumulation(interp, built, inputs, None) == 0.0
    # the whole K in the fp8 accumulator against one 128-wide block at a time
    assert bounds["block"] < 0.5 * bounds["tensor"]
    assert bounds["block"] > 1e-4 and bounds["tensor"] < 1e-2


def test_the_fp8_checks_allow_an_ulp_and_find_a_wrong_element():
    case = _fp8_case("row", final="f8e4m3", k=256)
    built = fuzz.build_case(case)
    inputs = fuzz.make_inputs(case, built)
    (want,) = fuzz.reference_outputs(case, built, inputs, None)
    values = want.astype(np.float64)
    up = np.clip(values + fuzz.fp8_spacing(values, "f8e4m3"), -448, 448)  # one ulp away
    up = up.astype(want.dtype)
    assert np.count_nonzero(up != want) > 0.9 * want.size
    assert fuzz.judge(case, built, [up], [want]).status == "pass"
    two = np.clip(values + 3 * fuzz.fp8_spacing(values, "f8e4m3"), -448, 448)
    assert fuzz.judge(case, built, [two.astype(want.dtype)], [want]).status == "fail"
    wrong = values.copy()
    wrong.flat[5] += 0.2 * np.max(np.abs(values))
    outcome = fuzz.judge(case, built, [wrong.astype(want.dtype)], [want])
    assert (outcome.status, outcome.kind) == ("fail", "wrong")


def test_a_quantization_is_compared_dequantized():
    spec = fuzz.Spec(
        "linear", 40, 300, 64, "bf16", steps=(fuzz.Step("silu"),), quantize="f8e4m3/128"
    )
    case = fuzz.Case(1, 0, "interp", INTERP | {"fp8-only"}, spec, {})
    built = fuzz.build_case(case)
    assert built.quantized == {1: 2}
    inputs = fuzz.make_inputs(case, built)
    want = fuzz.reference_outputs(case, built, inputs, None)
    assert fuzz.judge(case, built, want, want).status == "pass"
    halved = [want[0], want[1], want[2] * np.float32(0.5)]  # every scale wrong
    outcome = fuzz.judge(case, built, halved, want)
    assert outcome.status == "fail" and "output 1" in outcome.message


def test_the_fp8_family_runs_on_interp():
    lines: list[str] = []
    features = INTERP | {"fp8-only"}
    options = fuzz.Options("interp", 4, features, cases=40, jobs=0, out=lines.append)
    summary = fuzz.run(options)
    assert not summary.failures, "\n".join(lines)
    statuses = Counter(outcome.status for outcome in summary.outcomes)
    assert statuses["pass"] > 0.7 * len(summary.outcomes)
    assert all(outcome.family.startswith("fp8-") for outcome in summary.outcomes)


def test_the_fp8_family_compiles_for_cuda():
    lines: list[str] = []
    features = CUDA | {"fp8-only"}
    options = fuzz.Options(
        "cuda", 4, features, cases=10, jobs=0, compile_only=True, out=lines.append
    )
    summary = fuzz.run(options)
    assert not summary.failures, "\n".join(lines)
    assert sum(1 for outcome in summary.outcomes if outcome.status == "pass") >= 3


@pytest.mark.gpu
def test_the_fp8_family_on_the_gpu():
    lines: list[str] = []
    features = CUDA | {"fp8-only"}
    options = fuzz.Options("cuda", 1, features, cases=60, jobs=4, out=lines.append)
    summary = fuzz.run(options)
    assert len(summary.outcomes) == 60
    assert not summary.failures, "\n".join(lines)


def test_cuda_compile_run():
    """The lowering and ptxas (0 spills) on the first cases of seed 1, without a GPU."""
    lines: list[str] = []
    options = fuzz.Options("cuda", 1, CUDA, cases=40, jobs=0, compile_only=True, out=lines.append)
    summary = fuzz.run(options)
    assert not summary.failures, "\n".join(lines)
    assert sum(1 for outcome in summary.outcomes if outcome.status == "pass") >= 30


@pytest.mark.gpu
def test_cuda_run_on_the_gpu():
    lines: list[str] = []
    options = fuzz.Options("cuda", 1, CUDA, cases=40, jobs=4, out=lines.append)
    summary = fuzz.run(options)
    assert len(summary.outcomes) == 40
    assert not summary.failures, "\n".join(lines)


def test_the_cuda_mode_processes_with_the_executor_standing_in():
    lines: list[str] = []
    options = fuzz.Options("cuda", 4, CUDA, cases=8, jobs=2, stand_in=True, out=lines.append)
    summary = fuzz.run(options)
    assert len(summary.outcomes) == 8
    assert not summary.failures, "\n".join(lines)
    assert sum(1 for outcome in summary.outcomes if outcome.status == "pass") >= 4


def test_a_hung_run_is_reported_and_the_run_goes_on():
    """Case 196 of seed 4 is large (3000 x 5000 x 2048): the CPU executor standing in for
    the GPU takes longer than the timeout, and the next case runs in a fresh process."""
    large = fuzz.draw_case(4, 196, "cuda", CUDA)
    assert large.spec.m * large.spec.n > fuzz.SAMPLE_ELEMENTS and not large.params
    lines: list[str] = []
    options = fuzz.Options(
        "cuda",
        4,
        CUDA,
        first=196,
        cases=2,
        jobs=1,
        stand_in=True,
        gpu_timeout=2.0,
        out=lines.append,
    )
    summary = fuzz.run(options)
    outcomes = {outcome.index: outcome for outcome in summary.outcomes}
    assert sorted(outcomes) == [196, 197]
    assert (outcomes[196].status, outcomes[196].kind) == ("fail", "hang")
    assert "GPU run exceeded 2 s" in outcomes[196].message
    assert "--seed 4 --case 196" in "\n".join(lines)
    assert outcomes[197].status in ("pass", "refused")


def test_schedule_keywords_as_sched_params_mean_the_same():
    params = {
        "tile": (128, 64, 64),
        "stages": 3,
        "cluster": (2, 1),
        "raster": "m",
        "swizzle": 3,
        "strategy": "one-tile-per-cta",
        "split_k": 2,
        "warp_specialization": "cooperative",
        "registers": (40, 232),
        "epilogue": "registers",
    }
    spec = fuzz.Spec("linear", 300, 200, 256, "bf16")
    built = fuzz.build(spec, "keywords")
    text = fuzz.with_params(str(built.fusion), params)
    assert "sched.params = #sched.params<tile = 128x64x64, stages = 3, cluster = 2x1" in text
    from_text = fuzz.mmcomp.compile(fuzz.mmcomp.parse(text), backend="interp").params
    from_keywords = fuzz.mmcomp.compile(built.fusion, backend="interp", **params).params
    assert from_text.format() == from_keywords.format()


def test_the_cli_comparison_agrees_and_finds_a_difference():
    case = fuzz.Case(0, 0, "cuda", CUDA, fuzz.Spec("linear", 65, 72, 64, "bf16"), {"swizzle": 2})
    assert fuzz.run_case(case, compile_only=True, cli=True).status == "pass"
    built = fuzz.build(case.spec, case.name)
    other = fuzz.compare_cli(case, built, "// not the kernel", None)
    assert other is not None and other.kind == "cli" and "other PTX" in other.message
    refused = fuzz.Outcome(0, 0, "refused", "ScheduleError", "ScheduleError: no")
    taken = fuzz.compare_cli(case, built, None, refused)
    assert taken is not None and "compiles what mmcomp.compile refuses" in taken.message
