"""The schedule of a grouped fusion: its tile from N, K, G and the rows per group.

A grouped kernel (mmcomp.analysis.groups) walks one persistent list of (group, m tile,
n tile) tiles that it computes on the device from the group sizes, so its schedule is the
data-parallel one with fixed parts: one CTA per tile, all K blocks (split_k = 1, no
stream-K: the tile count is known only on the device), no cluster (the m tiles of a
cluster could lie in two groups), cooperative consumers (the skip of a tile without rows
is a branch around the K loop, which the ring positions take in place; the ping-pong
turn's tile counter does not). The epilogue is the dense heuristic's: "smem" stages the
tile in shared memory as for a TMA store, and the threads store its rows in 16-byte
vectors clipped at the group's end (which a TMA store cannot clip), coalesced where the
registers epilogue writes 4 bytes a thread.

The tile is chosen as the dense heuristic chooses it for the rows the groups hold in all
(contiguous: T, at the nominal or bucket M where T is dynamic; masked: G x Mmax), which
counts the tiles of the wave and the registers of the epilogue alike. Expected rows per
group below the tile's 128 rows leave most of each tile's rows empty; the heuristic keeps
128 (the cooperative kernels split a tile's rows between two warpgroups) and picks its
width from N and the wave.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from mmcomp.analysis.groups import CONTIGUOUS, GROUP_ROLE, Grouping
from mmcomp.dialects.fusion import is_dynamic
from mmcomp.dialects.sched import MAX_GROUPS, Problem, ScheduleParams
from mmcomp.errors import ScheduleError
from mmcomp.schedule.heuristics import NOMINAL_EXTENTS, choose_params, normalize_overrides

FIXED: Mapping[str, object] = {
    "split_k": 1,
    "cluster": (1, 1),
    "strategy": "persistent",
    "swap_ab": False,
    "warp_specialization": "cooperative",
}
"""The parameters every grouped schedule has (see the module docstring)."""


def grouped_rows(problem: Problem, grouping: Grouping, schedule_m: int | None) -> int:
    """The rows of all groups that the tile is chosen for: T (contiguous) or G x Mmax
    (masked), a dynamic extent taken at `schedule_m` (default the nominal M)."""
    rows = problem.extents.get("m", 1)
    if is_dynamic(rows):
        rows = schedule_m if schedule_m is not None else NOMINAL_EXTENTS["m"]
    if grouping.layout == CONTIGUOUS:
        return max(rows, 1)
    return max(rows * grouping.groups, 1)


def choose_grouped_params(
    problem: Problem, grouping: Grouping, schedule_m: int | None = None, **overrides: object
) -> ScheduleParams:
    """The params of a grouped fusion: FIXED, the given overrides, the rest chosen as for a
    dense problem of the groups' rows (`grouped_rows`); ScheduleError for an override
    that a grouped kernel cannot take, naming it."""
    given = normalize_overrides(overrides)
    if grouping.groups > MAX_GROUPS:
        raise ScheduleError(
            f"a grouped kernel takes at most {MAX_GROUPS} groups (its lookup is a binary "
            f"search unrolled over the group index); w has G = {grouping.groups}"
        )
    for name, value in FIXED.items():
        if name in given and given[name] != value:
            raise ScheduleError(
                f"{name}={given[name]!r}: a grouped kernel runs with {name}={value!r} (one "
                "CTA per tile of one group, all its K blocks, cooperative consumers, from a "
                "tile list computed on the device)"
            )
    extents = {axis: extent for axis, extent in problem.extents.items() if axis != GROUP_ROLE}
    extents["m"] = grouped_rows(problem, grouping, schedule_m)
    dense = dataclasses.replace(problem, extents=extents)
    chosen = {**FIXED, **given}
    return choose_params(dense, None, **chosen)
