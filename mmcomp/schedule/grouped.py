"""The schedule of a grouped fusion: its tile from N, K, G and the rows per group.

A grouped kernel (mmcomp.analysis.groups) walks one persistent list of (group, m tile,
n tile) tiles that it computes on the device from the group sizes, so its schedule is the
data-parallel one with fixed parts: one CTA per tile, all K blocks (split_k = 1, no
stream-K: the tile count is known only on the device), no cluster (the m tiles of a
cluster could lie in two groups), cooperative consumers (the skip of a tile without rows
is a branch around the K loop, which the ring positions take in place; the ping-pong
turn's tile counter does not). The epilogue of an unswapped tile is "smem" unless one is
given: the tile is staged in shared memory as for a TMA store, and the threads store its
rows in 16-byte vectors clipped at the group's end (which a TMA store cannot clip),
coalesced where the registers epilogue writes 4 bytes a thread. On an H100 it ran the
prefill rows of tools/bench_grouped.py 1.01-1.12x faster than the registers epilogue
(docs/performance.md). A swapped tile keeps the registers epilogue, which stores the
transposed fragment from the accumulators (GROUPED_EPILOGUE).

Two cases, by the rows a group is expected to hold (`rows_per_group`: T / G for
contiguous groups, Mmax for masked ones):

- **Groups of more rows than one wgmma's 64** (prefill): the cheaper by `grouped_cost`
  of two tiles. One is the dense heuristic's tile for the rows the groups hold in all
  (contiguous: T, at the nominal or bucket M where T is dynamic; masked: G x Mmax),
  which counts the tiles of the wave and the registers of the epilogue alike: 128 rows
  (the cooperative kernels split a tile's rows between two warpgroups), its width from N
  and the wave. The other is 64 rows by 256 (`row64_candidate`), the two consumers
  splitting its N (`ScheduleParams.column_split`): a group's last m tile then leaves at
  most 63 rows empty. The cost counts the rows each multiplies (`expected_m_tiles`: a
  group's last tile half empty on average) in waves of SM_COUNT, a 64-row tile's
  multiply-accumulates weighed by ROW64_COST (its operands' bytes per
  multiply-accumulate).
- **Decode-sized groups, up to GROUPED_SWAP_MAX_ROWS rows** (`swaps_groups`): swap_ab,
  the tile's rows (tokens) as wgmma's n, rounded up to 8, and W's rows as wgmma's m,
  split between the two consumers. A 128-row tile would leave more than half its rows
  empty: it loads and multiplies them all, where the swapped tile multiplies the group's
  rows (rounded to 8) by the width of W it streams. The tile is the dense heuristic's
  swapped tile for one group's rows, with its registers epilogue (the transposed
  fragment is stored from the accumulators).

A tile given is kept (neither case weighs another).

A group's rows past its expected count take more m tiles (each streams its n tile of
W[g] again); every row is still written once, whatever the sizes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction

from mmcomp.analysis.groups import CONTIGUOUS, GROUP_ROLE, Grouping
from mmcomp.arch import limits as hw
from mmcomp.dialects.fusion import is_dynamic
from mmcomp.dialects.sched import MAX_GROUPS, Problem, ScheduleParams
from mmcomp.errors import ScheduleError
from mmcomp.schedule.heuristics import (
    NOMINAL_EXTENTS,
    SWAP_AB_KEYS,
    choose_params,
    normalize_overrides,
)

FIXED: Mapping[str, object] = {
    "split_k": 1,
    "cluster": (1, 1),
    "strategy": "persistent",
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


GROUPED_EPILOGUE = {False: "smem", True: "registers"}
"""The epilogue of a grouped kernel when none is given, by whether its tile is swapped
(see the module docstring)."""

GROUPED_SWAP_MAX_ROWS = hw.WGMMA_M
"""Expected rows per group up to which the heuristic swaps A and B (`swaps_groups`): a
128-row tile is then more than half empty."""


def rows_per_group(problem: Problem, grouping: Grouping, schedule_m: int | None) -> int:
    """The rows a group is expected to hold: ceil(T / G) for contiguous groups (T at
    `schedule_m`, default the nominal M, where it is dynamic), Mmax for masked ones."""
    rows = problem.extents.get("m", 1)
    if is_dynamic(rows):
        rows = schedule_m if schedule_m is not None else NOMINAL_EXTENTS["m"]
    if grouping.layout == CONTIGUOUS:
        return max(-(-rows // grouping.groups), 1)
    return max(rows, 1)


def swaps_groups(problem: Problem, per_group: int, given: Mapping[str, object]) -> bool:
    """Whether a grouped kernel runs swap_ab: as given, else (none of SWAP_AB_KEYS given)
    for decode-sized groups of up to GROUPED_SWAP_MAX_ROWS rows, 16-bit factors, an
    output of 2 or 4 bytes (an fp8 one is stored in pairs along n), A contiguous along K,
    and N of two m64 blocks at least (one per consumer warpgroup)."""
    if "swap_ab" in given:
        return bool(given["swap_ab"])
    if any(key in given for key in SWAP_AB_KEYS):
        return False
    if problem.a_m_contiguous or problem.block_scaled or problem.element_bytes != 2:
        return False
    if 1 in problem.output_bytes or problem.n < 2 * hw.WGMMA_M:
        return False
    return per_group <= GROUPED_SWAP_MAX_ROWS


ROW64_COST = Fraction(3, 2)
"""The cost of a multiply-accumulate on a 64-row tile relative to one on a 128-row tile
(`grouped_cost`), measured on the H100 (docs/results/2026-12-06-h100-second-run.md): on
the three linear rows of tools/bench_grouped.py, 64x256x64 ran 1.44x (8 experts), 1.23x
(64) and 1.03x (128) the time of 128x256x64 while the model counts 0.985x, 0.84x and
0.69x the rows, so a 64-row multiply-accumulate costs 1.46-1.49x. A 64x256 tile loads
40 bytes of operands per thousand multiply-accumulates against 128x256's 24 (docs/
schedule.md, rule 1), and its two consumers read the same A rows. At this cost no bench
row takes the 64-row tile."""


def expected_m_tiles(per_group: int, tile_m: int) -> Fraction:
    """The m tiles a group of `per_group` expected rows takes: its rows over the tile's,
    plus half a tile (a group's size is a multiple of nothing, so its last tile is half
    empty on average), at least one."""
    return max(Fraction(per_group, tile_m) + Fraction(1, 2), Fraction(1))


def grouped_cost(
    params: ScheduleParams, problem: Problem, grouping: Grouping, per_group: int
) -> Fraction:
    """The multiply-accumulates per K step that the busiest SM runs (ROW64_COST times
    more on a 64-row tile): the tiles (G times `expected_m_tiles` times the n tiles, so
    each group's partly empty last tile counts whole) in waves of SM_COUNT, each tile
    m x n."""
    tile_m, tile_n, _ = params.tile
    tiles = grouping.groups * expected_m_tiles(per_group, tile_m) * -(-problem.n // tile_n)
    waves = math.ceil(tiles / hw.SM_COUNT)
    cost = Fraction(waves * tile_m * tile_n)
    return cost * ROW64_COST if tile_m == hw.WGMMA_M else cost


def row64_candidate(problem: Problem, given: Mapping[str, object]) -> ScheduleParams | None:
    """The heuristic's 64-row tile for `problem`, its N split between the two consumers:
    256 wide (m64n128 wgmmas; 128 where N fits in 128), one 128-byte K block; None where
    the problem refuses it."""
    width = 256 if problem.n > 128 else 128
    tile = (hw.WGMMA_M, width, hw.TMA_SWIZZLE_BYTES // problem.element_bytes)
    try:
        return choose_params(problem, None, **{**given, "tile": tile})
    except ScheduleError:
        return None


def choose_grouped_params(
    problem: Problem, grouping: Grouping, schedule_m: int | None = None, **overrides: object
) -> ScheduleParams:
    """The params of a grouped fusion: FIXED, the given overrides, the rest chosen as for a
    dense problem of the groups' rows (`grouped_rows`), or a 64-row tile where it costs
    less (`grouped_cost`); ScheduleError for an override that a grouped kernel cannot
    take, naming it."""
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
    per_group = rows_per_group(problem, grouping, schedule_m)
    swap = swaps_groups(problem, per_group, given)
    # Swapped, the tile is one group's (its rows are wgmma's n); else all groups' rows.
    extents["m"] = per_group if swap else grouped_rows(problem, grouping, schedule_m)
    dense = dataclasses.replace(problem, extents=extents)
    chosen = {**FIXED, "swap_ab": swap, "epilogue": GROUPED_EPILOGUE[swap], **given}
    params = choose_params(dense, None, **chosen)
    if swap or "tile" in given or problem.block_scaled or problem.quantize:
        return params
    row64 = row64_candidate(dense, chosen)
    if row64 is None:
        return params
    cheaper = grouped_cost(row64, dense, grouping, per_group)
    return row64 if cheaper < grouped_cost(params, dense, grouping, per_group) else params
