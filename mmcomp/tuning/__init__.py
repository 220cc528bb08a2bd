"""Autotuning: time a few candidate schedules of a fusion on the GPU and keep the fastest.

`mmcomp.autotune(f, *arrays, budget_s=30, **params)` (or `mmcomp.compile(f,
autotune=True)`) compiles a bounded set of candidate schedules (`plan_candidates`: the
heuristic's own first, then the heuristic with one group of settings changed: tile and
warp specialization, split_k, cluster, raster and swizzle, stages), checks each one's
output against the reference interpreter, times the correct ones in interleaved rounds
on rotating copies of the inputs, and returns the kernel of the lowest median (a
`TunedKernel`: its `params` the schedule, `autotune_report` the candidates and their
times). The keywords given pin their parameters: no candidate changes them.

The choice is stored next to the compile cache (`$MMCOMP_CACHE_DIR`, mmcomp.cache), one
checksummed entry per fusion IR text, shape (for a dynamic M, the M bucket), pinned
keywords, device name and driver version; a later process compiles the stored schedule
and times nothing. A damaged entry is discarded (with a warning) and tuned again.

Where there is no GPU (or backend="interp") it says so once per process and returns the
heuristic's kernel, as `mmcomp.compile` would. docs/autotune.md describes the method.
"""

from __future__ import annotations

import math
import numbers
import statistics
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mmcomp.backend.compiled import Kernel
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.frontend.builder import as_fusion
from mmcomp.tuning.candidates import MAX_CANDIDATES, SEARCHED, Plan, plan_candidates
from mmcomp.tuning.report import AutotuneReport, Candidate, TunedKernel
from mmcomp.tuning.store import (
    SUFFIX,
    json_value,
    keywords_of,
    load_entry,
    store,
    store_entry,
    tuning_key,
)
from mmcomp.tuning.timing import (
    CHUNK,
    DeviceTimer,
    Timer,
    abs_max,
    device_identity,
    random_inputs,
    relative_error,
)

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.frontend.builder import Fusion

DEFAULT_BUDGET_S = 30.0
"""Seconds an autotune may take by default (compiles, the reference, checks and timing)."""
COMPILE_SHARE = 0.75
"""Share of the budget after which no further candidate is compiled (the rest times)."""
MIN_ROUNDS = 3
"""Timing rounds run whatever the budget (each candidate once per round)."""
MAX_ROUNDS = 9
"""Timing rounds at most."""
CONFIRM_ROUNDS = 5
"""Head-to-head rounds of the winner against the heuristic's kernel (after the timing)."""
CONFIRM_MARGIN = 0.01
"""How much faster than the heuristic's kernel the winner must be in the head-to-head."""

_stats = {"tuned": 0, "reused": 0, "fallbacks": 0, "rounds": 0}
_warned = False


def stats() -> dict[str, int]:
    """What this process's autotunes did: tuned (timed), reused (from disk), fallbacks
    (no GPU: the heuristic), rounds (timing rounds run)."""
    return dict(_stats)


def gpu_reason() -> str | None:
    """None where kernels can run here; else why not."""
    from mmcomp.runtime import gpu_unavailable_reason

    return gpu_unavailable_reason()


def _fall_back(reason: str) -> None:
    """Say once per process that autotuning falls back to the heuristic."""
    global _warned
    _stats["fallbacks"] += 1
    if _warned:
        return
    _warned = True
    warnings.warn(
        f"mmcomp autotune: {reason}; the heuristic's schedule is used untimed "
        "(said once per process)",
        stacklevel=3,
    )


def check_budget(what: str, budget_s: object) -> float:
    """`budget_s` as seconds; ValueError unless it is a finite positive number."""
    if (
        isinstance(budget_s, bool)
        or not isinstance(budget_s, numbers.Real)
        or not math.isfinite(budget_s)
        or budget_s <= 0
    ):
        raise ValueError(f"{what}={budget_s!r}: expected a positive, finite number of seconds")
    return float(budget_s)


def _shape_key(fusion: Fusion, schedule_m: int | None) -> str:
    """The shape part of the key: the inputs' shapes, or for a dynamic M its bucket."""
    from mmcomp.schedule.buckets import bucket_for, has_dynamic_m

    if has_dynamic_m(fusion) and schedule_m is not None:
        return f"m bucket {bucket_for(schedule_m)}"
    return "; ".join(
        f"{value.name}: {'x'.join(str(e) for e in value.shape)} {value.dtype}"
        for value in fusion.inputs
    )


def _dynamic_m(fusion: Fusion, arrays: Sequence[Any]) -> int | None:
    """For a fusion with a dynamic M: the bucket of the arrays' M (the nominal one without
    arrays); else None."""
    from mmcomp.analysis.roles import dynamic_input_roles
    from mmcomp.frontend.argcheck import bind_extents
    from mmcomp.schedule.buckets import NOMINAL_BUCKET, bucket_for, has_dynamic_m

    if not has_dynamic_m(fusion):
        return None
    roles = dynamic_input_roles(fusion)
    if not arrays or roles is None:
        return NOMINAL_BUCKET
    inputs = fusion.inputs
    extents = bind_extents(
        "autotune",
        [value.name or f"input {index}" for index, value in enumerate(inputs)],
        [tuple(int(e) for e in getattr(array, "shape", ())) for array in arrays],
        [value.shape for value in inputs],
        roles,
        FusionError,
    )
    return bucket_for(extents.get("m", NOMINAL_BUCKET))


def _check_arrays(fusion: Fusion, arrays: Sequence[Any]) -> None:
    """FusionError unless `arrays` are one per input, of its shape and dtype."""
    from mmcomp.frontend.argcheck import check_shape_and_dtype
    from mmcomp.runtime import as_device_array

    inputs = fusion.inputs
    if len(arrays) != len(inputs):
        names = ", ".join(value.name or "?" for value in inputs)
        raise FusionError(
            f"autotune: expected no arrays or {len(inputs)} ({names}), found {len(arrays)}"
        )
    for value, array in zip(inputs, arrays, strict=True):
        shape, dtype = getattr(array, "shape", None), getattr(array, "dtype", None)
        if shape is None or dtype is None:
            raise FusionError(
                f"autotune: input {value.name!r}: expected an array, found {type(array).__name__}"
            )
        if value.dynamic_axes:
            continue
        view = as_device_array(array, value.name or "input")
        found = view if view is not None else np.asarray(array)
        check_shape_and_dtype(
            f"autotune: input {value.name!r}",
            found.shape,
            found.dtype,
            value.shape,
            value.numpy_dtype,
            FusionError,
        )


def autotune(
    f: Fusion | str | ModuleOp,
    *arrays: Any,
    backend: str = "cuda",
    budget_s: float = DEFAULT_BUDGET_S,
    max_candidates: int = MAX_CANDIDATES,
    timer: Timer | None = None,
    **params: Any,
) -> Kernel:
    """The kernel of the fastest correct candidate schedule of `f` on this GPU.

    `arrays` are the inputs it will run on, in input order (host or device arrays); without
    them, random normal inputs of the fusion's shapes. `params` are `mmcomp.compile`'s
    schedule keywords: they pin their parameters. `budget_s` bounds the whole tune (the
    heuristic's own candidate is compiled, checked and timed for MIN_ROUNDS whatever it
    is); `max_candidates` bounds the candidates, the heuristic's included. `timer`
    replaces the GPU runs (checks and timing; tests inject one). A schedule stored by an
    earlier tune of the same fusion, shape, pins and device is compiled and returned with
    no timing. Without a GPU, or for backend="interp", the heuristic's kernel (warned once
    per process).
    """
    from mmcomp.backend.compiled import BACKENDS
    from mmcomp.cache import parameters_key
    from mmcomp.pipeline import compile_untuned as compile
    from mmcomp.schedule.heuristics import check_schedule_m, normalize_overrides

    if backend not in BACKENDS:
        raise ValueError(
            f"autotune: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}"
        )
    budget = check_budget("autotune: budget_s", budget_s)
    if (
        isinstance(max_candidates, bool)
        or not isinstance(max_candidates, int)
        or max_candidates < 1
    ):
        raise ValueError(f"autotune: max_candidates={max_candidates!r}: expected a positive int")
    start = time.monotonic()
    given_m = check_schedule_m(params.pop("schedule_m", None))
    keywords: dict[str, Any] = normalize_overrides(params)
    fusion = as_fusion(f, "autotune")
    if arrays:
        _check_arrays(fusion, arrays)
    reason = "backend 'interp' runs on the CPU" if backend != "cuda" else None
    if reason is None and timer is None:
        reason = gpu_reason()
    if reason is not None:
        _fall_back(reason)
        extra: dict[str, Any] = {} if given_m is None else {"schedule_m": given_m}
        return compile(fusion, backend, **keywords, **extra)
    schedule_m = given_m if given_m is not None else _dynamic_m(fusion, arrays)
    pinned = keywords if given_m is None else {**keywords, "schedule_m": given_m}
    device = timer.device() if timer is not None else device_identity()
    key = tuning_key(str(fusion), _shape_key(fusion, schedule_m), parameters_key(pinned), device)
    report = load_entry(key)
    if report is not None:
        try:
            kernel = compile(fusion, backend, **keywords_of(report))
        except (FusionError, ScheduleError) as error:
            warnings.warn(
                f"mmcomp autotune: the stored schedule {report.chosen} does not build "
                f"({error}); tuning again",
                stacklevel=2,
            )
        else:
            _stats["reused"] += 1
            return TunedKernel.of(kernel, _replace(report, cached=True))
    plans = plan_candidates(fusion, keywords, schedule_m, max_candidates, backend)
    tuner = _Tuner(fusion, backend, plans, budget, device, start)
    heuristic = compile(fusion, backend, **plans[0].keywords)
    if timer is None:
        timer = DeviceTimer(fusion, list(arrays) or random_inputs(fusion, schedule_m))
    try:
        kernel, report, verified = tuner.run(timer, heuristic)
    finally:
        timer.close()
    if verified:
        store_entry(key, report)
    return TunedKernel.of(kernel, report)


def _replace(report: Any, **changes: Any) -> Any:
    """A copy of a report or candidate with some fields changed."""
    import dataclasses

    return dataclasses.replace(report, **changes)


@dataclass
class _Tuner:
    """One autotune: compile, check and time the plans, keep the fastest correct one."""

    fusion: Fusion
    """The fusion tuned."""
    backend: str
    """The back end its kernels are compiled for."""
    plans: list[Plan]
    """The candidates, the heuristic's first."""
    budget_s: float
    """Seconds the tune may take."""
    device: str
    """The device and driver (for the report)."""
    start: float
    """When the tune began (time.monotonic)."""

    def elapsed(self) -> float:
        """Seconds since the tune began."""
        return time.monotonic() - self.start

    def run(self, timer: Timer, heuristic: Kernel) -> tuple[Kernel, AutotuneReport, bool]:
        """The chosen kernel, the report, and whether the choice passed its checks (before
        and after the timing): compile and check every plan the budget allows, time the
        correct ones in rounds, take the fastest that is still correct."""
        outcomes: list[Candidate] = []
        timed: list[tuple[Plan, Kernel]] = []
        seen: set[str] = set()
        round_s = 0.0  # seconds one kernel takes in a round (the heuristic's, measured)
        for index, plan in enumerate(self.plans):
            reserve = MIN_ROUNDS * round_s * (len(timed) + 1)
            if index and (
                self.elapsed() > COMPILE_SHARE * self.budget_s
                or self.elapsed() + reserve > self.budget_s
            ):
                outcomes.append(Candidate(plan.label, plan.params.format(), "skipped", "budget"))
                continue
            kernel = heuristic if index == 0 else self._compile(plan, outcomes)
            if kernel is None:
                continue
            schedule = kernel.params.format()
            if schedule in seen:
                outcomes.append(Candidate(plan.label, schedule, "duplicate"))
                continue
            seen.add(schedule)
            wrong = timer.check(kernel)
            if wrong is not None:
                outcomes.append(Candidate(plan.label, schedule, "wrong", wrong))
                continue
            outcomes.append(Candidate(plan.label, schedule, "timed"))
            timed.append((plan, kernel))
            if index == 0:  # a first round of the heuristic, untimed: what a round costs
                began = time.monotonic()
                timer.round([kernel])
                round_s = time.monotonic() - began
        times = self._rounds(timer, [kernel for _, kernel in timed])
        results = {kernel.params.format(): ms for (_, kernel), ms in zip(timed, times, strict=True)}
        chosen: tuple[Plan, Kernel] | None = None
        for plan, kernel in sorted(timed, key=lambda item: _median(results, item[1])):
            if timer.check(kernel) is None:  # again after the timing: still correct
                chosen = (plan, kernel)
                break
            schedule = kernel.params.format()
            outcomes = [
                _replace(c, status="wrong", detail="wrong after the timing")
                if c.schedule == schedule
                else c
                for c in outcomes
            ]
        outcomes = [
            _replace(c, median_ms=_median(results, c.schedule), round_ms=tuple(results[c.schedule]))
            if c.status == "timed"
            else c
            for c in outcomes
        ]
        confirmation: tuple[float, float] | None = None
        if (
            chosen is not None
            and timed
            and timed[0][1] is heuristic
            and chosen[0] is not timed[0][0]
        ):
            confirmation = self._confirm(timer, heuristic, chosen[1])
            lead = confirmation[0] / confirmation[1]
            if lead < 1.0 + CONFIRM_MARGIN and timer.check(heuristic) is None:
                chosen = timed[0]  # the winner's lead was the timing's noise
        if chosen is None:
            warnings.warn(
                f"mmcomp autotune: @{self.fusion.name}: no candidate passed the check against "
                "the reference (the heuristic's included); the heuristic's kernel is returned",
                stacklevel=3,
            )
        _stats["tuned"] += 1
        plan, kernel = chosen if chosen is not None else (self.plans[0], heuristic)
        report = AutotuneReport(
            chosen=kernel.params.format(),
            heuristic=heuristic.params.format(),
            candidates=tuple(outcomes),
            keywords={key: json_value(value) for key, value in plan.keywords.items()},
            device=self.device,
            rounds=len(times[0]) if times else 0,
            budget_s=self.budget_s,
            elapsed_s=self.elapsed(),
            confirmation_ms=confirmation,
        )
        return kernel, report, chosen is not None

    def _compile(self, plan: Plan, outcomes: list[Candidate]) -> Kernel | None:
        """The plan's kernel; None (and a "failed" outcome) where it does not build."""
        from mmcomp.pipeline import compile_untuned as compile

        try:
            return compile(self.fusion, self.backend, **plan.keywords)
        except Exception as error:  # noqa: BLE001 - a candidate that fails is dropped
            message = f"{type(error).__name__}: {error}"[:300]
            outcomes.append(Candidate(plan.label, plan.params.format(), "failed", message))
            return None

    def _confirm(self, timer: Timer, heuristic: Kernel, winner: Kernel) -> tuple[float, float]:
        """The medians (heuristic's, winner's) of CONFIRM_ROUNDS rounds of the two alone,
        their order swapped each round: the winner was picked as the least of several noisy
        medians, so its own rounds overstate its lead."""
        pair: list[list[float]] = [[], []]
        for turn in range(CONFIRM_ROUNDS):
            order = (0, 1) if turn % 2 == 0 else (1, 0)
            measured = timer.round([(heuristic, winner)[i] for i in order])
            for i, ms in zip(order, measured, strict=True):
                pair[i].append(ms)
            _stats["rounds"] += 1
        return statistics.median(pair[0]), statistics.median(pair[1])

    def _rounds(self, timer: Timer, kernels: list[Kernel]) -> list[list[float]]:
        """Per kernel, its milliseconds in each round: MIN_ROUNDS at least, then while the
        budget allows another round, MAX_ROUNDS at most; the order rotates by round."""
        times: list[list[float]] = [[] for _ in kernels]
        if not kernels:
            return times
        count = len(kernels)
        for turn in range(MAX_ROUNDS):
            began = time.monotonic()
            order = [(turn + i) % count for i in range(count)]
            measured = timer.round([kernels[i] for i in order])
            for i, ms in zip(order, measured, strict=True):
                times[i].append(ms)
            _stats["rounds"] += 1
            cost = time.monotonic() - began
            if turn + 1 >= MIN_ROUNDS and self.elapsed() + cost > self.budget_s:
                break
        return times


def _median(results: Mapping[str, list[float]], kernel: Kernel | str) -> float:
    """The median of a schedule's (or a kernel's) round times."""
    schedule = kernel if isinstance(kernel, str) else kernel.params.format()
    return statistics.median(results[schedule])


__all__ = [
    "CHUNK",
    "CONFIRM_MARGIN",
    "CONFIRM_ROUNDS",
    "DEFAULT_BUDGET_S",
    "MAX_CANDIDATES",
    "MAX_ROUNDS",
    "MIN_ROUNDS",
    "SEARCHED",
    "SUFFIX",
    "AutotuneReport",
    "Candidate",
    "DeviceTimer",
    "Timer",
    "TunedKernel",
    "abs_max",
    "autotune",
    "check_budget",
    "keywords_of",
    "load_entry",
    "plan_candidates",
    "relative_error",
    "stats",
    "store",
    "tuning_key",
]
