"""mmcomp.autotune: candidates, the choice, the disk entries, the fallback without a GPU.

The CPU tests inject a fake timer (checks and times chosen by the test); the `gpu` test
tunes a small linear on the device and reuses the choice from a second process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from cases import child_environment, linear

import mmcomp
from mmcomp import tuning
from mmcomp.backend.compiled import Kernel
from mmcomp.dialects.sched import problem_of
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.pipeline import run_pipeline

SHAPE = (256, 512, 256)
"""The linear most tests tune (small: its candidates compile quickly)."""
LIMIT = 6
"""Candidates per tune in the CPU tests."""


class FakeTimer:
    """A timer that runs nothing: each schedule's time and check result set by the test."""

    def __init__(
        self,
        times: Callable[[Kernel], float] | None = None,
        wrong: Callable[[Kernel, int], str | None] | None = None,
        device: str = "fake device; driver 1",
    ):
        self.times = times or (lambda kernel: 1.0)
        self.wrong = wrong or (lambda kernel, count: None)
        self.name = device
        self.rounds = 0
        self.checks: dict[str, int] = {}
        self.closed = False

    def device(self) -> str:
        return self.name

    def check(self, kernel: Kernel) -> str | None:
        schedule = kernel.params.format()
        self.checks[schedule] = self.checks.get(schedule, 0) + 1
        return self.wrong(kernel, self.checks[schedule])

    def round(self, kernels: Sequence[Kernel]) -> list[float]:
        self.rounds += 1
        return [self.times(kernel) for kernel in kernels]

    def close(self) -> None:
        self.closed = True


def by_tile_n(kernel: Kernel) -> float:
    """Narrower tiles faster, split-K slower: a ranking unlike the heuristic's."""
    params = kernel.params
    return 1.0 + params.tile[1] / 1000 + params.split_k / 100 + params.stages / 10000


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    """A fresh cache directory for the test (kernels and autotune entries)."""
    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path))
    return tmp_path


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"*{tuning.SUFFIX}"))


def heuristic_params(fusion, **keywords):
    return run_pipeline(fusion.module, keywords, until="choose-schedule")[1]


# ----------------------------------------------------------------------------------------
# The fallback
# ----------------------------------------------------------------------------------------


def test_fallback_without_gpu_warns_once_per_process(monkeypatch, cache_dir):
    monkeypatch.setattr(tuning, "_warned", False)
    monkeypatch.setattr(tuning, "gpu_reason", lambda: "no GPU in this test")
    f = linear(*SHAPE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = mmcomp.compile(f, autotune=True)
        second = mmcomp.autotune(f)
        third = mmcomp.compile(f, autotune=True, tile=(128, 64, 64))
    said = [w for w in caught if "mmcomp autotune" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert "no GPU in this test" in str(said[0].message)
    assert "heuristic" in str(said[0].message)
    plain = mmcomp.compile(f)
    for kernel in (first, second):
        assert not isinstance(kernel, tuning.TunedKernel)
        assert kernel.params == plain.params
    assert third.params.tile == (128, 64, 64)
    assert entries(cache_dir) == []


def test_interp_backend_falls_back(monkeypatch):
    monkeypatch.setattr(tuning, "_warned", False)
    f = linear(64, 128, 64)
    with pytest.warns(UserWarning, match="backend 'interp' runs on the CPU"):
        kernel = mmcomp.autotune(f, backend="interp", timer=FakeTimer())
    assert kernel.backend == "interp"
    assert kernel.params == mmcomp.compile(f, backend="interp").params


def test_a_dynamic_m_tunes_each_bucket_when_first_used(monkeypatch, cache_dir):
    """compile(autotune=True) of a dynamic M gives M buckets, each tuned at first use (here
    without a GPU: the heuristic's kernel of the bucket, as compile gives)."""
    from mmcomp.pipeline import BucketedKernel

    monkeypatch.setattr(tuning, "_warned", False)
    monkeypatch.setattr(tuning, "gpu_reason", lambda: "no GPU in this test")
    calls: list[object] = []
    real = tuning.autotune

    def spy(*args, **keywords):
        calls.append(keywords.get("schedule_m"))
        return real(*args, **keywords)

    monkeypatch.setattr(tuning, "autotune", spy)
    f = mmcomp.Fusion("linear")
    a = f.input("a", ("m", SHAPE[2]), "bf16")
    w = f.input("w", (SHAPE[1], SHAPE[2]), "bf16")
    f.output(f.cast(f.linear(a, w), "bf16"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = mmcomp.compile(f, autotune=True, autotune_budget_s=5.0)
        small = kernel.kernel_for(10)
    assert isinstance(kernel, BucketedKernel) and kernel.autotune_budget_s == 5.0
    assert calls == [4096, 16]
    assert small.params == mmcomp.compile(f, schedule_m=16).params


# ----------------------------------------------------------------------------------------
# The candidates
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape", [(1, 4096, 4096), (16, 14336, 4096), (512, 4096, 4096), (8192, 14336, 4096)]
)
@pytest.mark.parametrize("limit", [1, 4, tuning.MAX_CANDIDATES])
def test_candidates_bounded_distinct_heuristic_first(shape, limit):
    f = linear(*shape)
    plans = tuning.plan_candidates(f, limit=limit)
    assert 1 <= len(plans) <= limit
    assert plans[0].label == "heuristic"
    assert plans[0].params == heuristic_params(f)
    schedules = [plan.params.format() for plan in plans]
    assert len(set(schedules)) == len(schedules)
    module = run_pipeline(f.module, {}, until="choose-schedule")[0]
    problem = problem_of(next(iter(module.ops)))
    for plan in plans:
        plan.params.check(problem)  # every candidate passes the schedule checks
    if limit == tuning.MAX_CANDIDATES:
        assert len(plans) > 4, "the search found hardly any candidate"


def test_candidates_vary_the_searched_parameters():
    plans = tuning.plan_candidates(linear(16, 14336, 4096))
    heuristic = plans[0].params
    changed = {
        key
        for plan in plans[1:]
        for key in tuning.SEARCHED
        if getattr(plan.params, key) != getattr(heuristic, key)
    }
    assert {"tile", "split_k", "swizzle"} <= changed


@pytest.mark.parametrize(
    "pins",
    [
        {"tile": (128, 128, 64)},
        {"split_k": 1, "warp_specialization": "cooperative"},
        {"cluster": (1, 1), "stages": 4, "swizzle": 2},
        {"raster": "m", "epilogue": "registers"},
    ],
)
def test_candidates_keep_the_pins(pins):
    f = linear(16, 14336, 4096)
    plans = tuning.plan_candidates(f, pins)
    assert plans[0].params == heuristic_params(f, **pins)
    assert len(plans) > 1
    for plan in plans:
        for key, value in pins.items():
            assert getattr(plan.params, key) == value, (plan.label, key)


def test_candidates_keep_the_fusions_own_params():
    text = str(linear(*SHAPE)).replace(
        "-> tensor<256x512xbf16> {",
        "-> tensor<256x512xbf16> attributes {sched.params = #sched.params<tile = 128x64x64>} {",
    )
    assert "sched.params" in text
    plans = tuning.plan_candidates(mmcomp.parse(text))
    assert len(plans) > 1
    assert all(plan.params.tile == (128, 64, 64) for plan in plans)


# ----------------------------------------------------------------------------------------
# The choice and its entry on disk
# ----------------------------------------------------------------------------------------


def test_tune_keeps_the_fastest_and_a_second_call_times_nothing(cache_dir):
    f = linear(*SHAPE)
    timer = FakeTimer(by_tile_n)
    kernel = mmcomp.autotune(f, timer=timer, max_candidates=LIMIT)
    assert isinstance(kernel, tuning.TunedKernel)
    report = kernel.autotune_report
    timed = [c for c in report.candidates if c.status == "timed"]
    assert len(timed) >= 3
    fastest = min(timed, key=lambda c: c.median_ms or 0.0)
    assert report.chosen == fastest.schedule == kernel.params.format()
    assert report.heuristic == heuristic_params(f).format()
    assert report.candidates[0].label == "heuristic"
    assert tuning.MIN_ROUNDS <= report.rounds <= tuning.MAX_ROUNDS
    assert timer.rounds == report.rounds + 1  # and the heuristic's first, untimed round
    assert all(len(c.round_ms) == report.rounds for c in timed)
    assert not report.cached and timer.closed
    assert len(entries(cache_dir)) == 1

    again = FakeTimer(by_tile_n)
    reused = mmcomp.autotune(linear(*SHAPE), timer=again, max_candidates=LIMIT)
    assert isinstance(reused, tuning.TunedKernel)
    assert again.rounds == 0 and again.checks == {}
    assert reused.params == kernel.params
    assert reused.autotune_report.cached
    assert reused.autotune_report.candidates == report.candidates


def test_a_clear_winner_is_confirmed_against_the_heuristic(cache_dir):
    f = linear(*SHAPE)
    heuristic = heuristic_params(f).format()

    def times(kernel: Kernel) -> float:
        """Every candidate twice as fast as the heuristic's, wider tiles slower."""
        schedule = kernel.params.format()
        return 1.0 if schedule == heuristic else 0.5 + kernel.params.tile[1] / 10000

    timer = FakeTimer(times)
    kernel = mmcomp.autotune(f, timer=timer, max_candidates=LIMIT)
    assert isinstance(kernel, tuning.TunedKernel)
    report = kernel.autotune_report
    assert report.chosen != heuristic
    assert report.confirmation_ms == (1.0, times(kernel))
    assert report.speedup == pytest.approx(1.0 / times(kernel))
    assert timer.rounds == 1 + report.rounds + tuning.CONFIRM_ROUNDS
    stored = tuning.load_entry(entries(cache_dir)[0].stem)
    assert stored is not None and stored.confirmation_ms == report.confirmation_ms


def test_a_lead_seen_only_among_many_keeps_the_heuristic(cache_dir):
    f = linear(*SHAPE)
    heuristic = heuristic_params(f).format()

    class Noisy(FakeTimer):
        """One candidate fast in the rounds of every candidate, level in the head-to-head."""

        def round(self, kernels: Sequence[Kernel]) -> list[float]:
            self.rounds += 1
            many = len(kernels) > 2
            return [
                0.9 if many and k.params.format() != heuristic and k.params.split_k > 1 else 1.0
                for k in kernels
            ]

    timer = Noisy()
    kernel = mmcomp.autotune(f, timer=timer, max_candidates=LIMIT, budget_s=600)
    assert isinstance(kernel, tuning.TunedKernel)
    report = kernel.autotune_report
    assert any(c.status == "timed" and c.median_ms == 0.9 for c in report.candidates)
    assert report.confirmation_ms == (1.0, 1.0)
    assert report.chosen == report.heuristic == heuristic == kernel.params.format()
    assert report.speedup == 1.0


def test_the_chosen_keywords_rebuild_the_schedule(cache_dir):
    f = linear(*SHAPE)
    kernel = mmcomp.autotune(f, timer=FakeTimer(by_tile_n), max_candidates=LIMIT)
    assert isinstance(kernel, tuning.TunedKernel)
    keywords = tuning.keywords_of(kernel.autotune_report)  # noqa: SLF001
    assert mmcomp.compile(f, **keywords).params == kernel.params


def test_key_parts():
    base = ("ir", "a: 1x2 bf16", "[]", "NVIDIA H200; driver 13000")
    key = tuning.tuning_key(*base)
    assert key == tuning.tuning_key(*base)
    assert len(key) == 64 and all(c in "0123456789abcdef" for c in key)
    for index in range(len(base)):
        changed = list(base)
        changed[index] += " "
        assert tuning.tuning_key(*changed) != key, index


def test_entries_are_keyed_by_pins_device_and_shape(cache_dir):
    tune = lambda f, device="A", **pins: mmcomp.autotune(  # noqa: E731
        f, timer=FakeTimer(by_tile_n, device=device), max_candidates=3, **pins
    )
    tune(linear(*SHAPE))
    tune(linear(*SHAPE), split_k=1)
    tune(linear(*SHAPE), device="B")
    tune(linear(256, 512, 128))
    assert len(entries(cache_dir)) == 4
    timer = FakeTimer(by_tile_n, device="B")
    mmcomp.autotune(linear(*SHAPE), timer=timer, max_candidates=3)
    assert timer.rounds == 0


def test_entry_round_trip():
    report = tuning.AutotuneReport(
        chosen="tile = 128x64x64",
        heuristic="tile = 128x128x64",
        candidates=(
            tuning.Candidate("heuristic", "tile = 128x128x64", "timed", "", 1.5, (1.4, 1.5, 1.6)),
            tuning.Candidate("split_k=2", "s", "wrong", "output 0: relative error 1"),
        ),
        keywords={"tile": [128, 64, 64]},
        device="d",
        rounds=3,
        budget_s=5.0,
        elapsed_s=1.25,
    )
    data = json.loads(json.dumps(report.to_json()))
    assert tuning.AutotuneReport.from_json(data) == report
    assert report.speedup == 1.0  # the chosen one was not timed in this made-up report


def test_pinned_keywords_win(cache_dir):
    f = linear(*SHAPE)
    kernel = mmcomp.autotune(
        f, timer=FakeTimer(by_tile_n), max_candidates=LIMIT, tile=(128, 128, 64)
    )
    assert isinstance(kernel, tuning.TunedKernel)
    for candidate in kernel.autotune_report.candidates:
        assert "tile = 128x128x64" in candidate.schedule
    assert kernel.params.tile == (128, 128, 64)


def test_a_fast_wrong_kernel_is_never_kept(cache_dir):
    f = linear(*SHAPE)
    fastest = mmcomp.autotune(f, timer=FakeTimer(by_tile_n), max_candidates=LIMIT)
    wrong_schedule = fastest.params.format()
    for directory in entries(cache_dir):
        directory.unlink()
    timer = FakeTimer(
        by_tile_n,
        wrong=lambda k, n: "output 0: bad" if k.params.format() == wrong_schedule else None,
    )
    kernel = mmcomp.autotune(f, timer=timer, max_candidates=LIMIT)
    assert isinstance(kernel, tuning.TunedKernel)
    assert kernel.params.format() != wrong_schedule
    statuses = {c.schedule: c.status for c in kernel.autotune_report.candidates}
    assert statuses[wrong_schedule] == "wrong"


def test_a_kernel_wrong_after_the_timing_is_not_kept(cache_dir):
    f = linear(*SHAPE)
    fastest = mmcomp.autotune(f, timer=FakeTimer(by_tile_n), max_candidates=LIMIT)
    wrong_schedule = fastest.params.format()
    for path in entries(cache_dir):
        path.unlink()
    timer = FakeTimer(
        by_tile_n,
        wrong=lambda k, n: "drifted" if k.params.format() == wrong_schedule and n > 1 else None,
    )
    kernel = mmcomp.autotune(f, timer=timer, max_candidates=LIMIT)
    assert kernel.params.format() != wrong_schedule
    assert isinstance(kernel, tuning.TunedKernel)
    statuses = {c.schedule: c.status for c in kernel.autotune_report.candidates}
    assert statuses[wrong_schedule] == "wrong"


def test_nothing_correct_gives_the_heuristic_and_stores_nothing(cache_dir):
    f = linear(*SHAPE)
    timer = FakeTimer(by_tile_n, wrong=lambda k, n: "all wrong")
    with pytest.warns(UserWarning, match="no candidate passed the check"):
        kernel = mmcomp.autotune(f, timer=timer, max_candidates=3)
    assert kernel.params == heuristic_params(f)
    assert timer.rounds == 0
    assert entries(cache_dir) == []


@pytest.mark.parametrize("damage", ["truncated", "garbage", "bad json", "bad keywords"])
def test_a_damaged_entry_is_discarded_and_rewritten(cache_dir, damage):
    f = linear(*SHAPE)
    first = mmcomp.autotune(f, timer=FakeTimer(by_tile_n), max_candidates=3)
    (path,) = entries(cache_dir)
    key = path.name.removesuffix(tuning.SUFFIX)
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "bad json":
        tuning.store().store(key, b"{not json")
    else:
        text = json.loads(tuning.store().load(key) or b"")
        text["report"]["keywords"] = {"tile": "wide"}
        tuning.store().store(key, json.dumps(text).encode())
    timer = FakeTimer(by_tile_n)
    with pytest.warns(UserWarning, match="discarded"):
        again = mmcomp.autotune(f, timer=timer, max_candidates=3)
    assert timer.rounds >= tuning.MIN_ROUNDS  # tuned again
    assert again.params == first.params
    stored = tuning.load_entry(key)
    assert stored is not None and stored.chosen == first.params.format()


def test_the_budget_stops_compiling_but_not_the_minimum_rounds(cache_dir):
    f = linear(*SHAPE)
    timer = FakeTimer(by_tile_n)
    kernel = mmcomp.autotune(f, timer=timer, budget_s=1e-6, max_candidates=LIMIT)
    assert isinstance(kernel, tuning.TunedKernel)
    report = kernel.autotune_report
    statuses = [c.status for c in report.candidates]
    assert statuses[0] == "timed"
    assert set(statuses[1:]) == {"skipped"}
    assert report.rounds == tuning.MIN_ROUNDS
    assert kernel.params == heuristic_params(f)


def dynamic_linear() -> mmcomp.Fusion:
    f = mmcomp.Fusion("linear")
    a = f.input("a", ("m", SHAPE[2]), "bf16")
    w = f.input("w", (SHAPE[1], SHAPE[2]), "bf16")
    f.output(f.cast(f.linear(a, w), "bf16"))
    return f


def test_a_dynamic_m_is_keyed_by_its_bucket(cache_dir):
    import ml_dtypes

    f = dynamic_linear()
    w = np.zeros((SHAPE[1], SHAPE[2]), ml_dtypes.bfloat16)

    def tune(m: int) -> tuple[Kernel, FakeTimer]:
        timer = FakeTimer(by_tile_n)
        a = np.zeros((m, SHAPE[2]), ml_dtypes.bfloat16)
        return mmcomp.autotune(f, a, w, timer=timer, max_candidates=3), timer

    first, timer = tune(100)
    assert timer.rounds > 0
    assert isinstance(first, tuning.TunedKernel)
    assert first.autotune_report.heuristic == mmcomp.compile(f, schedule_m=128).params.format()
    same_bucket, timer = tune(120)
    assert timer.rounds == 0 and same_bucket.params == first.params
    _, timer = tune(300)
    assert timer.rounds > 0
    assert len(entries(cache_dir)) == 2


def test_argument_errors():
    f = linear(*SHAPE)
    with pytest.raises(ValueError, match="budget_s"):
        mmcomp.autotune(f, budget_s=0, timer=FakeTimer())
    with pytest.raises(ValueError, match="max_candidates"):
        mmcomp.autotune(f, max_candidates=0, timer=FakeTimer())
    with pytest.raises(ValueError, match="unknown backend"):
        mmcomp.autotune(f, backend="metal")
    with pytest.raises(ScheduleError, match="unknown schedule parameter"):
        mmcomp.autotune(f, tiles=(128, 128, 64), timer=FakeTimer())
    a = np.zeros((SHAPE[0], SHAPE[2]), np.float32)
    with pytest.raises(FusionError, match="expected no arrays or 2"):
        mmcomp.autotune(f, a, timer=FakeTimer())
    with pytest.raises(FusionError, match="input 'a'"):
        mmcomp.autotune(f, a, a, timer=FakeTimer())


def test_relative_error_across_chunks():
    import ml_dtypes

    rng = np.random.default_rng(1)
    want = rng.standard_normal(3 * tuning.CHUNK + 5, dtype=np.float32)
    got = want.copy()
    got[-1] += 0.5
    scale = float(np.max(np.abs(want)))
    assert tuning.relative_error(got, want) == pytest.approx(0.5 / scale, rel=1e-6)
    assert tuning.relative_error(want, want) == 0.0
    bf16 = want.astype(ml_dtypes.bfloat16)
    assert tuning.relative_error(bf16, bf16) == 0.0
    assert tuning.abs_max(bf16) == float(np.max(np.abs(bf16.astype(np.float32))))
    for bad in (np.nan, np.inf):
        broken = bf16.copy()
        broken[tuning.CHUNK + 1] = bad
        assert tuning.relative_error(broken, bf16) == float("inf")


# ----------------------------------------------------------------------------------------
# On the GPU
# ----------------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import json, sys
    import cases, mmcomp
    from mmcomp import tuning
    kernel = mmcomp.compile(cases.linear(*json.loads(sys.argv[1])), autotune=True)
    print(json.dumps({
        "stats": tuning.stats(),
        "cached": kernel.autotune_report.cached,
        "params": kernel.params.format(),
    }))
    """
)


@pytest.mark.gpu
def test_autotune_on_the_gpu_and_reuse_in_another_process(cache_dir):
    shape = (512, 1024, 512)
    f = linear(*shape)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((shape[0], shape[2]), dtype=np.float32).astype(f.inputs[0].numpy_dtype)
    w = rng.standard_normal((shape[1], shape[2]), dtype=np.float32).astype(f.inputs[1].numpy_dtype)
    before = tuning.stats()
    kernel = mmcomp.autotune(f, a, w, budget_s=8.0)
    assert isinstance(kernel, tuning.TunedKernel)
    report = kernel.autotune_report
    print(report.table())
    assert tuning.stats()["tuned"] == before["tuned"] + 1
    assert report.rounds >= tuning.MIN_ROUNDS
    timed = [c for c in report.candidates if c.status == "timed"]
    assert len(timed) >= 2 and all(c.median_ms and c.median_ms > 0 for c in timed)
    assert report.chosen == kernel.params.format()
    fastest = min(timed, key=lambda c: c.median_ms or 0.0).schedule
    if report.confirmation_ms is None:  # the heuristic's kernel was the fastest
        assert report.chosen == fastest == report.heuristic
    else:  # the fastest kept only where the head-to-head confirms its lead
        heuristic_ms, winner_ms = report.confirmation_ms
        confirmed = heuristic_ms / winner_ms >= 1.0 + tuning.CONFIRM_MARGIN
        assert report.chosen == (fastest if confirmed else report.heuristic), report.table()
    (got,) = kernel(a, w, check=True)
    (want,) = mmcomp.reference(f, a, w)
    assert tuning.relative_error(np.asarray(got), np.asarray(want)) < 1e-2
    assert len(entries(cache_dir)) == 1

    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(shape)],
        capture_output=True,
        text=True,
        env=child_environment(),
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    child = json.loads(done.stdout.strip().splitlines()[-1])
    assert child["cached"] is True
    assert child["stats"]["reused"] == 1
    assert child["stats"]["tuned"] == 0 and child["stats"]["rounds"] == 0
    assert child["params"] == kernel.params.format()


@pytest.mark.gpu
def test_on_the_gpu_a_kernel_unlike_the_reference_is_never_kept(cache_dir, monkeypatch):
    import mmcomp.interp.reference as interp

    real = interp.reference

    def negated(fusion, *arrays, **keywords):
        outputs = real(fusion, *arrays, **keywords)
        return tuple((-np.asarray(o, np.float32)).astype(o.dtype) for o in outputs)

    monkeypatch.setattr(interp, "reference", negated)
    f = linear(256, 512, 256)
    with pytest.warns(UserWarning, match="no candidate passed the check"):
        kernel = mmcomp.autotune(f, budget_s=3.0, max_candidates=3)
    assert isinstance(kernel, tuning.TunedKernel)
    assert {c.status for c in kernel.autotune_report.candidates} <= {"wrong", "skipped"}
    assert "relative error" in kernel.autotune_report.candidates[0].detail
    assert entries(cache_dir) == []


@pytest.mark.gpu
def test_a_dynamic_m_tunes_on_the_gpu_and_runs_at_every_m(cache_dir):
    f = dynamic_linear()
    rng = np.random.default_rng(2)
    dtype = f.inputs[0].numpy_dtype

    def rand(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)

    w = rand(SHAPE[1], SHAPE[2])
    kernel = mmcomp.autotune(f, rand(100, SHAPE[2]), w, budget_s=4.0, max_candidates=4)
    assert isinstance(kernel, tuning.TunedKernel)
    report = kernel.autotune_report
    assert report.rounds >= tuning.MIN_ROUNDS
    assert report.heuristic == mmcomp.compile(f, schedule_m=128).params.format()
    for m in (100, 37, 300):
        a = rand(m, SHAPE[2])
        (got,) = kernel(a, w, check=True)
        (want,) = mmcomp.reference(f, a, w)
        assert tuning.relative_error(np.asarray(got), np.asarray(want)) < 1e-2, m
