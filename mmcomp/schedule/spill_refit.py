"""Refitting a schedule that ptxas spilled: the one search that both tools run.

The consumer register model (`ScheduleParams.consumer_registers`) is an estimate; ptxas
has the last word. Where the kernel of the chosen schedule spills, `fit` builds it again
with lighter settings in place of what the caller left free, in a fixed order: one K slice
(where split_k was the heuristic's), the persistent strategy (where the heuristic's was
stream-K or hybrid stream-K: the fixup loops' running sums), then narrower tiles down to
MIN_TILE_N (each with one K slice too), then no warp specialization, then narrower epilogue
subtiles (halving the chosen one, or the whole fragment). The first that assembles with no
spills is the kernel. Every pinned setting is kept; where none fits, a
ScheduleError names the schedule, the spills and up to two settings that would fit.

`mmcomp.compile` runs it with its keywords as the pins; `compile-to-ptx` (mmcomp-opt) runs
it per fusion function with the keys written in the function's `#sched.params` as the
pins, so both tools give the same kernel. Without ptxas nothing is checked, and the
heuristic's schedule stands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from mmcomp.dialects.sched import ScheduleParams, tile_rows
from mmcomp.dialects.sched.params import EPILOGUE_SUBTILE_STEP
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.schedule.heuristics import MIN_TILE_N

Built = TypeVar("Built")
"""What a build returns beside the schedule it chose: a Kernel, a module."""


class SpilledError(Exception):
    """ptxas spilled the kernel built for a schedule."""

    def __init__(self, params: ScheduleParams, report: str):
        super().__init__(report)
        self.params = params
        """The schedule chosen for the build (the pins and the heuristic's choices)."""
        self.report = report
        """ptxas's report of the spill."""


Build = Callable[[Mapping[str, object]], tuple[Built, ScheduleParams]]
"""Builds the kernel for pinned settings: (result, schedule chosen); SpilledError where
ptxas spills it, FusionError or ScheduleError where the settings do not apply."""


def is_spill_report(error: Exception) -> bool:
    """Whether a ptxas error is its report of spills (not a failure to assemble)."""
    from mmcomp.arch.ptxas import PtxasError

    return isinstance(error, PtxasError) and " spills: " in str(error)


def fit(build: Build[Built], pinned: Mapping[str, object]) -> Built:
    """The build for `pinned`; where it spills, the first refit that does not (see the
    module docstring); a ScheduleError where none does."""
    try:
        return build(pinned)[0]
    except SpilledError as error:
        chosen, report = error.params, error.report
    for refit in refits(chosen, pinned):
        try:
            return build(refit)[0]
        except (FusionError, ScheduleError, SpilledError):
            continue
    unpinned = {key: value for key, value in pinned.items() if key not in ("tile", "split_k")}
    fitting: list[str] = []
    for refit in refits(chosen, unpinned):
        try:
            _, params = build(refit)
        except (FusionError, ScheduleError, SpilledError):
            continue
        fitting.append(f"tile = {_dims(params.tile)}, split_k = {params.split_k}")
        if len(fitting) == 2:
            break
    advice = "; would fit: " + " or ".join(fitting) if fitting else "; no lighter tile fits"
    raise ScheduleError(
        f"schedule {chosen.format()}: ptxas spills the consumer registers ({report}){advice}"
    )


def refits(chosen: ScheduleParams, pinned: Mapping[str, object]) -> list[dict[str, object]]:
    """Settings to try, in order, where `chosen` spilled: the pins kept, what they left to
    the heuristic made lighter (one K slice; the persistent strategy in place of stream-K,
    whose fixup sums take as many registers again as the accumulators; then narrower tiles
    down to MIN_TILE_N, one K slice with each, then no warp specialization)."""
    tries: list[dict[str, object]] = []
    free_split = "split_k" not in pinned and chosen.split_k > 1
    if free_split:
        tries.append({**pinned, "split_k": 1})
    if "strategy" not in pinned and chosen.stream_k:
        tries.append({**pinned, "strategy": "persistent"})
    if "tile" not in pinned:
        tries += _narrower(chosen, pinned, free_split)
    if not {"warp_specialization", "registers"} & set(pinned):
        # The specialized kernels' consumers spilled at the entry's register cap in
        # fuzzer cases with heavy epilogues (4 or 5 outputs) whatever their tile; a
        # non-specialized kernel's threads have 248.
        tries.append({**pinned, "warp_specialization": "none"})
    if "epilogue_subtile" not in pinned:
        # Last, so that a schedule another refit fits keeps the kernel it had: ping-pong
        # 128x128 with an [M, N] f32 operand of odd rows, a column divisor and a bias
        # spilled 4 bytes at the subtile of 32 columns that the register rule gives.
        tries += [{**pinned, "epilogue_subtile": width} for width in narrower_subtiles(chosen)]
    return tries


def narrower_subtiles(chosen: ScheduleParams) -> list[int]:
    """Epilogue subtiles narrower than `chosen`'s (its whole fragment where it has none),
    halving down to one 8-column block, those that divide the fragment's columns (the
    params' check refuses the others for the problem, e.g. under the smem epilogue)."""
    columns = chosen.wgmma_warpgroup[1]
    width = (chosen.epilogue_subtile or columns) // 2
    widths: list[int] = []
    while width >= EPILOGUE_SUBTILE_STEP:
        if width % EPILOGUE_SUBTILE_STEP == 0 and columns % width == 0:
            widths.append(width)
        width //= 2
    return widths


def _narrower(
    chosen: ScheduleParams, pinned: Mapping[str, object], free_split: bool
) -> list[dict[str, object]]:
    """Narrower tiles than `chosen`'s (one K slice with each where split_k is free)."""
    tries: list[dict[str, object]] = []
    tile_m, tile_n, tile_k = chosen.tile
    rows = sorted({tile_m, tile_rows(chosen.warp_specialization)}, reverse=True)
    for m in rows:
        n = tile_n if m != tile_m else tile_n // 2
        while n >= MIN_TILE_N:
            tries.append({**pinned, "tile": (m, n, tile_k)})
            if free_split:
                tries.append({**pinned, "tile": (m, n, tile_k), "split_k": 1})
            n //= 2
    return tries


def _dims(dims: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in dims)
