"""Swap-AB without a GPU: the parameter (text, verifier, keywords, CLI option), the
heuristic's rule, the CPU executor's transposed tile products on ragged shapes against the
float64 reference for every family, dynamic M, and ptxas on the swapped kernels."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import cases
import numpy as np
import pytest
from test_cli import mmcomp_opt
from test_dynamic import FAMILIES as DYNAMIC_FAMILIES
from test_dynamic import check_outputs, dynamic_inputs
from xdsl.utils.exceptions import ParseError

import mmcomp
from mmcomp.analysis.warp_roles import check_buildable
from mmcomp.dialects.sched import Problem, ScheduleParams
from mmcomp.errors import ScheduleError
from mmcomp.frontend.builder import Fusion
from mmcomp.interp.reference import reference
from mmcomp.schedule import heuristics
from mmcomp.schedule.heuristics import choose_params

N, K = 200, 300
"""Ragged against every tile."""

FAMILIES: dict[str, Callable[[int, int, int], Fusion]] = {
    "linear": cases.linear,
    "linear_bias": lambda m, n, k: cases.linear(m, n, k, bias=True),
    "matmul": cases.matmul,
    "gelu_bias": cases.gelu_bias,
    "silu_mul": cases.silu_mul,
    "horizontal": cases.horizontal,
    "row_ops": cases.row_ops,
    "broadcast_inputs": cases.broadcast_inputs,
    "broadcast_silu_mul": cases.broadcast_silu_mul,
}
"""Every family of tests/unit/cases.py, and the linear with a bias."""

SCHEDULES: dict[str, dict[str, Any]] = {
    "cooperative": {},
    "split_k": {"split_k": 2, "tile": (16, 128, 64)},
    "pingpong": {"warp_specialization": "pingpong", "tile": (40, 64, 64)},
}
"""Swapped schedules, as keywords besides swap_ab=True."""


def _parse(text: str) -> ScheduleParams:
    from xdsl.context import Context
    from xdsl.parser import Parser

    from mmcomp.dialects.sched import Sched

    ctx = Context()
    ctx.load_dialect(Sched)
    attr = Parser(ctx, text).parse_attribute()
    return attr.data  # pyright: ignore[reportAttributeAccessIssue]


def test_text_round_trips_and_omits_the_default():
    params = _parse("#sched.params<swap_ab = true, tile = 16x128x64>")
    assert params.swap_ab
    assert params.format() == "tile = 16x128x64, swap_ab = true"
    assert params.warpgroup == (16, 64)
    assert params.instr == (64, 16, 16)
    assert params.epilogue == "registers"
    full = params.complete()
    assert full.format().endswith("epilogue = registers, swap_ab = true")
    assert "swap_ab" not in ScheduleParams().format()
    again = _parse(f"#sched.params<{ScheduleParams().format()}>")
    assert again.written is None and not again.swap_ab


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("swap_ab = yes", "swap_ab: expected true or false, found yes"),
        ("swap_ab = true, tile = 12x128x64", r"the tile's m = 12 is wgmma's n, so it must be"),
        ("swap_ab = true, tile = 16x96x64", r"the n of both is wgmma's m, so it must be"),
        ("swap_ab = true, epilogue = smem", r"use epilogue = registers"),
    ],
)
def test_verifier_refuses_what_the_hardware_cannot_do(text: str, message: str):
    with pytest.raises(ParseError, match=message):
        _parse(f"#sched.params<{text}>")


def test_lowering_refuses_one_consumer_under_swap():
    params = choose_params(Problem({"m": 16, "n": 64, "k": 512}), swap_ab=True)
    single = params.replace(warp_specialization="cooperative", warpgroup=(16, 64))
    with pytest.raises(ScheduleError, match=r"use a tile n of 128 or more"):
        check_buildable(single, "partition-warp-roles: @f")


def test_compile_keyword_is_checked():
    with pytest.raises(ScheduleError, match=r"swap_ab='yes': expected True or False"):
        mmcomp.compile(cases.linear(16, N, K), backend="interp", swap_ab="yes")
    with pytest.raises(ScheduleError, match=r"swap_ab with epilogue = smem"):
        mmcomp.compile(cases.linear(16, N, K), backend="interp", swap_ab=True, epilogue="smem")


def test_cli_option_sets_it(tmp_path: Path):
    path = tmp_path / "linear.mlir"
    path.write_text(str(cases.linear(16, 4096, 512).module))
    done = mmcomp_opt(str(path), "-p", "propagate-axis-mapping,choose-schedule{swap_ab=true}")
    assert done.returncode == 0, done.stderr
    assert "instr = m64n16k16" in done.stdout
    assert "epilogue = registers, swap_ab = true>" in done.stdout


def test_forced_swap_keeps_the_tile_in_problem_terms():
    params = choose_params(Problem({"m": 16, "n": 14336, "k": 4096}), swap_ab=True)
    assert params.swap_ab and params.tile[0] == 16 and params.tile[1] % 64 == 0
    assert params.instr[:2] == (64, 16)
    assert params.epilogue == "registers"
    one = choose_params(Problem({"m": 1, "n": 4096, "k": 4096}), swap_ab=True)
    assert one.tile[0] == 8 and one.split_k > 1
    ragged = choose_params(Problem({"m": 33, "n": 500, "k": 200}), swap_ab=True)
    assert ragged.tile[0] == 40


def test_heuristic_swaps_where_it_was_measured_faster():
    """Up to SWAP_AB_MAX_M rows (32: measured at M = 1, 16 and 32, slower at 64)."""
    for m in (1, 7, 16, 17, 32):
        params = choose_params(Problem({"m": m, "n": 4096, "k": 4096}))
        assert params.swap_ab and params.tile[0] == -(-m // 8) * 8
    for m in (33, 64, 128, 512, 1024, 4096):
        assert not choose_params(Problem({"m": m, "n": 4096, "k": 4096})).swap_ab


def test_swap_rule(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(heuristics, "SWAP_AB_MAX_M", heuristics.SWAP_AB_CANDIDATE_M)
    for m in (1, 7, 16, 32):
        assert choose_params(Problem({"m": m, "n": 1024, "k": 4096})).swap_ab
    for m in (33, 64, 512, 1024, 8192):
        assert not choose_params(Problem({"m": m, "n": 1024, "k": 4096})).swap_ab
    # Where the unswapped ping-pong tile's width fills the SMs' pairs and streams less
    # (`swap_streams_less`): 64x112 (load 224) against 16x128 (112 tiles, load 256).
    for m in (1, 16, 32):
        assert not choose_params(Problem({"m": m, "n": 14336, "k": 4096})).swap_ab
    # On a tie of loads, up to 16 rows swap (16x128 split in two against 64x128).
    assert choose_params(Problem({"m": 16, "n": 8192, "k": 28672})).swap_ab
    assert not choose_params(Problem({"m": 32, "n": 8192, "k": 8192})).swap_ab
    # A tile, a warp specialization or an epilogue given for the unswapped mapping.
    problem = Problem({"m": 16, "n": 4096, "k": 4096})
    assert not choose_params(problem, tile=(64, 128, 64)).swap_ab
    assert not choose_params(problem, epilogue="smem").swap_ab
    assert not choose_params(problem, swap_ab=False).swap_ab


@pytest.mark.parametrize("schedule", list(SCHEDULES))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_executor_runs_the_transposed_products(family: str, schedule: str):
    for m in (1, 7, 33):
        fusion = FAMILIES[family](m, N, K)
        kernel = mmcomp.compile(fusion, backend="interp", swap_ab=True, **SCHEDULES[schedule])
        assert kernel.params.swap_ab
        inputs = cases.inputs_for(fusion)
        got = kernel(*inputs)
        want = reference(fusion, *inputs, accumulate=np.float64)
        for index, (g, w) in enumerate(zip(got, want, strict=True)):
            error = cases.relative_error(g, np.asarray(w))
            tolerance = cases.TOLERANCE[fusion.outputs[index].dtype]
            assert error < tolerance, f"M = {m}, output {index}: {error}"


def test_transposed_product_is_the_product():
    from mmcomp.interp.tile_functions import mma_tile, mma_tile_transposed

    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 64)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    acc = rng.standard_normal((8, 128)).astype(np.float32)
    roles = (["m", "k"], ["n", "k"], ["m", "n"])
    plain = mma_tile(a, b, acc, *roles)
    swapped = mma_tile_transposed(a, b, acc, *roles)
    np.testing.assert_allclose(swapped, plain, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("family", ["linear", "linear_bias_gelu", "epilogue_operand", "batch"])
def test_dynamic_m_runs_swapped(family: str):
    fusion = DYNAMIC_FAMILIES[family]()
    kernel = mmcomp.compile(fusion, backend="interp", swap_ab=True, schedule_m=16)
    assert kernel.params.swap_ab
    rng = np.random.default_rng(8)
    for m in (1, 7, 33, 100):
        check_outputs(kernel, fusion, dynamic_inputs(fusion, {"m": m, "b0": 2}, rng))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_ptxas_assembles_the_swapped_kernels_without_spills(family: str):
    from mmcomp.arch.ptxas import find_tool
    from mmcomp.backend import build_cuda_kernel
    from mmcomp.pipeline import run_pipeline

    if find_tool("ptxas") is None:
        pytest.skip("no ptxas on this machine (PATH, CUDA_HOME or the nvidia-cuda-nvcc wheel)")
    for schedule in SCHEDULES.values():
        fusion = FAMILIES[family](7, N, K)
        module, params, _ = run_pipeline(fusion.module, {"swap_ab": True, **schedule})
        report = build_cuda_kernel(module).report
        assert params.swap_ab
        assert report.spill_stores == 0 and report.spill_loads == 0, report
        assert "wgmma.mma_async.sync.aligned.m64n" in build_cuda_kernel(module).ptx


def test_dynamic_m_builds_for_the_device():
    from mmcomp.arch.ptxas import find_tool
    from mmcomp.backend import build_cuda_kernel
    from mmcomp.pipeline import run_pipeline

    if find_tool("ptxas") is None:
        pytest.skip("no ptxas on this machine (PATH, CUDA_HOME or the nvidia-cuda-nvcc wheel)")
    fusion = DYNAMIC_FAMILIES["epilogue_operand"]()
    module, params, _ = run_pipeline(fusion.module, {"swap_ab": True}, schedule_m=16)
    assert params.swap_ab and params.tile[0] == 16
    assert build_cuda_kernel(module).report.spill_stores == 0


VALUE_CASES: list[tuple[str, int, dict[str, Any]]] = [
    ("linear", 7, {}),
    ("linear_bias", 1, {}),
    ("matmul", 33, {}),
    ("gelu_bias", 7, {"split_k": 2}),
    ("silu_mul", 33, {"warp_specialization": "pingpong", "tile": (40, 64, 64)}),
    ("horizontal", 7, {}),
    ("row_ops", 7, {"warp_specialization": "none", "tile": (16, 128, 64)}),
    ("broadcast_inputs", 1, {}),
    ("broadcast_silu_mul", 33, {"tile": (16, 256, 64), "stages": 3}),
]
"""(family, M, keywords besides swap_ab=True) run through the PTX value model."""


def _model_errors(fusion: Fusion, params: dict[str, Any]) -> list[float]:
    """Each output's relative error against float64 when the PTX value model runs the
    emitted kernel (outputs poisoned with NaN)."""
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.pipeline import run_pipeline

    module, _, _ = run_pipeline(fusion.module, params)
    text, plan = lower_to_ptx(module)
    inputs = cases.inputs_for(fusion)
    want = [np.asarray(w) for w in reference(fusion, *inputs, accumulate=np.float64)]
    poisoned = [
        np.full(w.shape, np.nan, dtype=out.numpy_dtype)
        for w, out in zip(want, fusion.outputs, strict=True)
    ]
    got = run_values(text, plan, inputs, poisoned)
    return [cases.relative_error(g, w) for g, w in zip(got, want, strict=True)]


@pytest.mark.parametrize(("family", "m", "params"), VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_emitted_swapped_kernel_computes_the_product(family: str, m: int, params: dict[str, Any]):
    """The swapped PTX itself (wgmma operands, transposed fragment, addresses, clipping,
    split-K) run by the value model at a ragged shape (K = 320: rows of 16-byte multiples,
    which the model reads without staging)."""
    fusion = FAMILIES[family](m, N, 320)
    for index, error in enumerate(_model_errors(fusion, {"swap_ab": True, **params})):
        assert error < cases.TOLERANCE[fusion.outputs[index].dtype], f"output {index}: {error}"


@pytest.mark.parametrize(
    ("family", "params"),
    [("linear", {"epilogue": "registers"}), ("matmul", {"epilogue": "registers"})],
)
def test_value_model_matches_unswapped_kernels(family: str, params: dict[str, Any]):
    """The model's control: kernels that run on the H200 (K-major and MN-major operands)."""
    fusion = FAMILIES[family](33, N, 320)
    for index, error in enumerate(_model_errors(fusion, params)):
        assert error < cases.TOLERANCE[fusion.outputs[index].dtype], f"output {index}: {error}"


@pytest.mark.parametrize("family", ["linear", "linear_bias_gelu", "epilogue_operand", "horizontal"])
def test_emitted_swapped_kernel_takes_a_runtime_m(family: str):
    """One swapped kernel of a dynamic fusion (its schedule chosen at M = 16) run by the
    value model at several M, clipped at the runtime extent."""
    from ptx_value_model import run_values

    from mmcomp.backend.kernel import lower_to_ptx
    from mmcomp.pipeline import run_pipeline

    fusion = DYNAMIC_FAMILIES[family]()
    module, params, _ = run_pipeline(fusion.module, {"swap_ab": True}, schedule_m=16)
    assert params.swap_ab
    text, plan = lower_to_ptx(module)
    assert plan.extents == ("m",)
    rng = np.random.default_rng(2)
    for m in (1, 7, 33):
        inputs = dynamic_inputs(fusion, {"m": m}, rng)
        want = [np.asarray(w) for w in reference(fusion, *inputs, accumulate=np.float64)]
        poisoned = [np.full(w.shape, np.nan, dtype=w.dtype) for w in want]
        got = run_values(text, plan, inputs, poisoned, extents=(m,), grid=2)
        for index, (g, w) in enumerate(zip(got, want, strict=True)):
            error = cases.relative_error(g, w)
            assert error < 1e-2, f"M = {m}, output {index}: {error}"


def test_autotune_tries_the_swapped_schedule_at_small_m():
    from mmcomp import tuning

    small = tuning.plan_candidates(cases.linear(48, 14336, 4096))
    assert any(plan.params.swap_ab for plan in small[1:])
    assert not small[0].params.swap_ab
    swapped = tuning.plan_candidates(cases.linear(16, 4096, 4096))  # the heuristic swaps
    assert swapped[0].params.swap_ab
    assert any(not plan.params.swap_ab for plan in swapped[1:])
    large = tuning.plan_candidates(cases.linear(8192, 14336, 4096))
    assert not any(plan.params.swap_ab for plan in large)


@pytest.mark.parametrize("schedule", ["heuristic", "split_k", "pingpong", "wide"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_gpu_test_kernels_in_the_value_model(family: str, schedule: str):
    """The kernels test_swap_ab_gpu.py runs on the GPU (K = 300: staged operands), run by
    the value model, at one of its M each."""
    from test_swap_ab_gpu import MS, SCHEDULES

    m = MS[(list(FAMILIES).index(family) + list(SCHEDULES).index(schedule)) % len(MS)]
    fusion = FAMILIES[family](m, N, K)
    for index, error in enumerate(_model_errors(fusion, {"swap_ab": True, **SCHEDULES[schedule]})):
        assert error < cases.TOLERANCE[fusion.outputs[index].dtype], f"output {index}: {error}"
