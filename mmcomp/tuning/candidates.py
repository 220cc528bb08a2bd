"""The candidate schedules of an autotune: the heuristic's own, then it with one group of
settings changed, each checked by `choose_params`; the pinned keywords never change."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from mmcomp.arch import limits as hw
from mmcomp.errors import FusionError, ScheduleError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.dialects.sched import Problem, ScheduleParams
    from mmcomp.frontend.builder import Fusion


MAX_CANDIDATES = 12
"""Candidate schedules at most by default, the heuristic's included."""

SEARCHED = (
    "tile",
    "warp_specialization",
    "split_k",
    "cluster",
    "raster",
    "swizzle",
    "stages",
    "swap_ab",
)
"""The parameters the candidates vary."""


@dataclass(frozen=True)
class Plan:
    """A candidate to compile: what it changes, its compile keywords, its schedule."""

    label: str
    """What it changes in the heuristic's schedule ("heuristic" for the heuristic's own)."""
    keywords: dict[str, Any]
    """The `mmcomp.compile` keywords that build it (the pins, and for the others every
    parameter, so that the spill refit cannot move it onto another candidate)."""
    params: ScheduleParams
    """The schedule the heuristic resolves the keywords to."""


def full_keywords(params: ScheduleParams) -> dict[str, object]:
    """Every compile keyword of a schedule (mmcomp.schedule.heuristics.PARAMETERS)."""
    from mmcomp.schedule.heuristics import PARAMETERS

    return {key: getattr(params, key) for key in PARAMETERS}


def _swaps(
    problem: Problem, heuristic: ScheduleParams, schedule_m: int | None
) -> list[tuple[str, dict[str, object]]]:
    """At small M (the decode rows), the schedule with A and B swapped (swap_ab: the
    heuristic's swapped tile, and it one wave wide with K split) or, where the heuristic
    swapped, the unswapped one."""
    from mmcomp.schedule.heuristics import NOMINAL_EXTENTS, is_small_m

    if problem.dynamic_axes:
        problem = problem.with_extents(
            {**NOMINAL_EXTENTS, **({"m": schedule_m} if schedule_m else {})}
        )
    if not is_small_m(problem):
        return []
    if heuristic.swap_ab:
        return [_move(swap_ab=False)]
    return [_move(swap_ab=True), _move(swap_ab=True, split_k=1)]


def _moves(
    problem: Problem, heuristic: ScheduleParams, schedule_m: int | None = None
) -> list[list[tuple[str, dict[str, object]]]]:
    """Changes of the heuristic's schedule, by group, the likeliest first in each."""
    from mmcomp.schedule.heuristics import MAX_SWIZZLE, tile_count

    tile_k = heuristic.tile[2]
    ws = heuristic.warp_specialization
    shapes = {
        "cooperative": [(128, 256), (128, 128), (128, 64)],
        "none": [(128, 256), (128, 128), (128, 64)],
        "pingpong": [(128, 128), (64, 256), (64, 128), (64, 64)],
    }
    tiles: list[tuple[str, dict[str, object]]] = []
    for kind in [ws, *(w for w in ("cooperative", "pingpong") if w != ws)]:
        for m, n in shapes[kind]:
            tile = (m, n, tile_k)
            if tile == heuristic.tile and kind == ws:
                continue
            tiles.append(_move(tile=tile, warp_specialization=kind))
    tiles_now = tile_count(problem, heuristic.tile)
    k_blocks = -(-problem.k // tile_k)
    splits = [
        s
        for s in (1, 2, 3, 4, 6, 8)
        if s != heuristic.split_k and tiles_now * s <= 2 * hw.SM_COUNT and k_blocks // s >= 2
    ]
    splits.sort(key=lambda s: abs(math.log(s / heuristic.split_k)))
    split = [_move(split_k=s) for s in splits]
    pingpong_cluster: dict[str, object] = {
        "tile": (128, 128, tile_k),
        "warp_specialization": "pingpong",
        "cluster": (2, 1),
    }
    clusters = [
        _move(**pingpong_cluster) if index == 1 else _move(cluster=cluster)
        for index, cluster in enumerate(((2, 1), (2, 1), (1, 2)))
        if index == 1 or cluster != heuristic.cluster
    ]
    other = "m" if heuristic.raster == "n" else "n"
    rasters = [
        _move(raster=other, swizzle=8),
        _move(swizzle=min(2 * heuristic.swizzle, MAX_SWIZZLE)),
        _move(swizzle=max(heuristic.swizzle // 2, 1)),
        _move(raster=other),
    ]
    stages = [_move(stages=s) for s in (heuristic.stages + 1, heuristic.stages - 1) if s >= 2]
    return [tiles, _swaps(problem, heuristic, schedule_m), split, clusters, rasters, stages]


def _move(**changes: object) -> tuple[str, dict[str, object]]:
    """A change of the heuristic's schedule, labelled."""
    return _label(changes), changes


def _label(move: Mapping[str, object]) -> str:
    """A change in words: `tile=128x128x64 warp_specialization=pingpong`."""
    words: list[str] = []
    for key, value in move.items():
        shown = (
            "x".join(str(v) for v in cast("tuple[int, ...]", value))
            if isinstance(value, tuple)
            else str(value)
        )
        words.append(f"{key}={shown}")
    return " ".join(words)


def _interleave(groups: Sequence[Sequence[tuple[str, dict[str, object]]]]):
    """The groups' moves taken in turns: the first of each group, then the second, ..."""
    longest = max((len(group) for group in groups), default=0)
    for index in range(longest):
        for group in groups:
            if index < len(group):
                yield group[index]


def _function(module: ModuleOp) -> Any:
    """The one func.func of a module."""
    from xdsl.dialects.func import FuncOp

    functions = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(functions) != 1:
        raise FusionError(f"autotune: expected one func.func, found {len(functions)}")
    return functions[0]


def pins_of(fusion: Fusion, keywords: Mapping[str, object]) -> dict[str, object]:
    """The parameters no candidate may change: those written in the fusion's own
    `#sched.params`, and the keywords (normalized), which win."""
    from mmcomp.passes.choose_schedule import written_params
    from mmcomp.schedule.heuristics import normalize_overrides

    written: dict[str, object] = {}
    try:
        written = written_params(_function(fusion.peek_module()))
    except ScheduleError:
        written = {}  # choose-schedule reports a bad one when the heuristic compiles
    return {**normalize_overrides(written), **normalize_overrides(keywords)}


def plan_candidates(
    fusion: Fusion,
    keywords: Mapping[str, object] | None = None,
    schedule_m: int | None = None,
    limit: int = MAX_CANDIDATES,
    backend: str = "cuda",
) -> list[Plan]:
    """At most `limit` candidates for `fusion` under the pins `keywords` (and the keys its
    own `#sched.params` writes): the heuristic's first, then the heuristic with one group of
    SEARCHED settings changed, the groups in turns; each accepted by the schedule checks
    (`choose_params`) and unlike every earlier one."""
    from mmcomp.dialects.sched import problem_of
    from mmcomp.pipeline import run_pipeline
    from mmcomp.schedule.heuristics import choose_params

    given: dict[str, Any] = dict(keywords or {})
    if limit < 1:
        raise ValueError(f"autotune: max_candidates={limit!r}: expected a positive int")
    module, heuristic, _ = run_pipeline(
        fusion.peek_module(), given, backend, until="choose-schedule", schedule_m=schedule_m
    )
    problem = problem_of(_function(module))
    pins = pins_of(fusion, given)
    extra: dict[str, Any] = {} if schedule_m is None else {"schedule_m": schedule_m}
    plans = [Plan("heuristic", {**given, **extra}, heuristic)]
    seen = {heuristic.format()}
    for label, move in _interleave(_moves(problem, heuristic, schedule_m)):
        if len(plans) >= limit:
            break
        if any(key in pins and pins[key] != value for key, value in move.items()):
            continue
        try:
            params = choose_params(problem, schedule_m, **{**pins, **move})
        except ScheduleError:
            continue
        if params.format() in seen or any(getattr(params, k) != v for k, v in pins.items()):
            continue
        seen.add(params.format())
        plans.append(Plan(label, {**given, **full_keywords(params), **extra}, params))
    return plans
