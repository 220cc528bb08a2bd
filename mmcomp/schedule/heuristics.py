"""Choosing schedule parameters from the problem and the device.

`choose_params(problem, **overrides)` fills every parameter the caller left out and
checks the result against the problem and the hardware limits of mmcomp.arch.limits. The
choices follow CUTLASS's Hopper GEMMs: a 128x256x64 tile with two cooperative consumer
warpgroups of 64x256, stages enough to keep about 2 us of tensor-core work in flight
(3 at that tile, measured faster than the 4 that fit on the H200), a persistent
grid, grouped rasterization and a 40/232 register split. Smaller tiles are taken where the
big one would leave SMs idle, and where a horizontal fusion loads two B tiles per stage.
docs/schedule.md explains each rule.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import cast

from mmcomp.analysis.schedule_plan import tail_segments
from mmcomp.arch import limits as hw
from mmcomp.dialects.fusion import QUANTIZE_GROUP
from mmcomp.dialects.sched import (
    EPILOGUES,
    RASTERS,
    STRATEGIES,
    WARP_SPECIALIZATIONS,
    Problem,
    ScheduleParams,
    derive_instr,
    derive_warpgroup,
    tile_rows,
)
from mmcomp.errors import ScheduleError

DERIVED = ("warpgroup", "instr")
"""Parameters derived from the tile, not given by the caller."""
PARAMETERS = tuple(key for key in ScheduleParams.KEYS if key not in DERIVED)
"""The parameter names `mmcomp.compile` accepts as keywords (the public API)."""

MAX_STAGES = 8
"""Most pipeline stages the heuristic picks (more only add latency to fill)."""
IN_FLIGHT_MACS = 3 * 128 * 256 * 64
"""Multiply-accumulates the ring holds ahead of the tensor cores: three K blocks of a
128x256 tile, about 2 us of an SM's tensor-core work. On the H200 3 stages of 128x256x64
beat the 4 that fit (linear 766 vs 746, gelu 736 vs 726 TFLOP/s;
docs/results/2026-11-30-h200-bench-suite.md); smaller tiles get proportionally more stages
(6 at 128x128x64)."""
MAX_SWIZZLE = 16
"""Largest swizzle group the heuristic picks."""
MAX_SPLIT_K = 4
"""Largest split-K factor the heuristic picks."""
MIN_K_BLOCKS_PER_SLICE = 4
"""K blocks each split-K slice keeps at least, so the pipeline still fills."""
SMALL_M = 512
"""Rows up to which the heuristic schedules a problem as a decode step (docs/schedule.md,
"Small M"): each tile's K loop streams W for a few microseconds, so a second, partial wave
of tiles is not hidden behind the first; its tiles are chosen to fit in one wave."""
MIN_DEEP_STAGES = 4
"""Stages a doubled K block must keep to be taken (a 2-stage ring does not hide the load
latency: 128x256x128 at 2 stages ran 0.62x cuBLAS where 128x256x64 at 3 ran 0.89x)."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _integer(value: object) -> int | None:
    """`value` as an int where it is an integer (numpy's included, bool not), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def _tuple(name: str, value: object, length: int, meaning: str) -> tuple[int, ...]:
    items = cast("Sequence[object]", value) if isinstance(value, tuple | list) else None
    integers = [_integer(v) for v in items] if items is not None else []
    if items is None or len(items) != length or None in integers:
        raise ScheduleError(f"{name}={value!r}: expected {meaning}, {length} integers")
    result = tuple(v for v in integers if v is not None)
    if any(v <= 0 for v in result):
        raise ScheduleError(f"{name}={value!r}: every extent must be positive")
    return result


def _int(name: str, value: object) -> int:
    integer = _integer(value)
    if integer is None:
        raise ScheduleError(f"{name}={value!r}: expected an integer")
    return integer


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        expected = ", ".join(f'"{a}"' for a in allowed)
        raise ScheduleError(f"{name}={value!r}: expected one of {expected}")
    return str(value)


def check_schedule_m(value: object) -> int | None:
    """`schedule_m` as given (None or a positive int); ScheduleError otherwise."""
    if value is None:
        return None
    if (m := _integer(value)) is None or m < 1:
        raise ScheduleError(f"schedule_m: expected a positive int (an M), found {value!r}")
    return m


def normalize_overrides(overrides: Mapping[str, object]) -> dict[str, object]:
    """Check the names and Python types of user parameters; tuples for the shapes."""
    result: dict[str, object] = {}
    for name, value in overrides.items():
        if name not in PARAMETERS:
            raise ScheduleError(
                f"unknown schedule parameter {name!r}; expected one of {', '.join(PARAMETERS)}"
            )
        if value is None:
            continue
        if name == "tile":
            result[name] = _tuple(name, value, 3, "(m, n, k)")
        elif name == "cluster":
            result[name] = _tuple(name, value, 2, "(cm, cn)")
        elif name == "registers":
            result[name] = _tuple(name, value, 2, "(producer, consumer)")
        elif name in ("stages", "swizzle", "split_k", "epilogue_subtile"):
            result[name] = _int(name, value)
        elif name == "raster":
            result[name] = _choice(name, value, RASTERS)
        elif name == "strategy":
            result[name] = _choice(name, value, STRATEGIES)
        elif name == "warp_specialization":
            result[name] = _choice(name, value, WARP_SPECIALIZATIONS)
        elif name == "swap_ab":
            if not isinstance(value, bool):
                raise ScheduleError(f"swap_ab={value!r}: expected True or False")
            result[name] = value
        else:
            result[name] = _choice(name, value, EPILOGUES)
    return result


def tile_count(problem: Problem, tile: tuple[int, int, int]) -> int:
    """Output tiles of the problem (batch included) for a CTA tile."""
    return problem.batch * _ceil_div(problem.m, tile[0]) * _ceil_div(problem.n, tile[1])


MIN_TILE_N = hw.TMA_SWIZZLE_BYTES // 2
"""The narrowest tile the heuristic picks: one 128-byte swizzle row of 16-bit elements."""
FULL_WAVE_TILES = hw.SM_COUNT * 9 // 10
"""A count of the widest tile that fills the SMs: 9 in 10 of them in one wave (119 of
132). A tile twice as narrow then makes two waves at the same share of busy SMs, so the
wider tile loses nothing to quantization and reads fewer bytes per multiply-accumulate:
on the H200, 128x256 against 128x128 at 128 tiles gained 2-5% (docs/schedule.md, rule
2)."""


def _fits(
    problem: Problem,
    tile: tuple[int, int, int],
    warp_specialization: str,
    consumer: int,
    swap_ab: bool = False,
) -> bool:
    """Whether a consumer thread's registers hold the tile's accumulators and epilogue
    (`ScheduleParams.consumer_registers`, the rule measured with ptxas)."""
    params = ScheduleParams(
        tile=tile,
        warpgroup=derive_warpgroup(tile, warp_specialization, swap_ab),
        warp_specialization=warp_specialization,
        registers=(hw.SETMAXNREG_MIN, consumer),
        swap_ab=swap_ab,
    )
    if params.accumulator_registers > consumer - hw.ACCUMULATOR_HEADROOM:
        return False
    return params.fits_registers(problem)


def is_small_m(problem: Problem) -> bool:
    """Whether the small-M rules apply: M up to SMALL_M, with 2-byte or fp8 inputs (the
    bf16 and f16 kernels they were measured on, and fp8 ones, whose K blocks are as many
    bytes; 4-byte inputs run on the CPU executor only) and a K loop of
    MIN_K_BLOCKS_PER_SLICE blocks or more (a ring of W to stream; a shorter one is all
    prologue and epilogue, which the rules were not measured on)."""
    k_blocks = _ceil_div(problem.k, hw.TMA_SWIZZLE_BYTES // problem.element_bytes)
    return (
        problem.m <= SMALL_M and problem.element_bytes <= 2 and k_blocks >= MIN_K_BLOCKS_PER_SLICE
    )


def choose_warp_specialization(problem: Problem, tile: tuple[int, ...] | None) -> str:
    """Ping-pong where M fits one wgmma's 64 rows and the tile is left to the heuristic (or
    given 64 rows): its 64-row tiles load no more than 64 rows of A, where a cooperative
    tile loads 128 whatever M is; cooperative otherwise.

    The rows of an A box past M are TMA's zero fill, and not free: at 16x14336x4096 on the
    H200 the same 128x128x64 schedule took 51.6 us where at M = 128 it took 35.9 us, and
    ping-pong's 64x128x64 took 34.7 us (docs/schedule.md, "Small M").
    """
    if tile is None and beyond_one_wave(problem):
        return "pingpong"
    if not is_small_m(problem) or problem.m > hw.WGMMA_M:
        return "cooperative"
    if tile is not None and tile[0] != hw.WGMMA_M:
        return "cooperative"
    return "pingpong"


def beyond_one_wave(problem: Problem) -> bool:
    """Whether a lone GEMM of more than 64 rows, under the small-M rules, has no
    cooperative tile whose count fits in one wave (128x256 gives more than the SMs): it
    then runs ping-pong 128x128 tiles, each consumer warpgroup a whole tile so that one's
    epilogue runs under the other's mainloop (`choose_tile`), in a 2x1 cluster where the M
    tiles pair up (`choose_cluster`). On the H100, against cooperative 128x256 (with the
    hybrid stream-K where it was picked): 512x28672x8192 1.00x cuBLAS against 0.89x,
    256x28672x8192 1.01x against 0.96x, 512x14336x4096 1.06x against 1.05x, and
    384x14336x4096 (three M tiles, no cluster) 0.82x against 0.68x."""
    if not is_small_m(problem) or problem.m <= hw.WGMMA_M:
        return False
    if problem.b_operands != 1 or problem.epilogue_tiles != 0:
        return False
    tile_k = hw.TMA_SWIZZLE_BYTES // problem.element_bytes
    return tile_count(problem, (2 * hw.WGMMA_M, 256, tile_k)) > hw.SM_COUNT


def choose_tile(
    problem: Problem, warp_specialization: str = "cooperative", consumer: int | None = None
) -> tuple[int, int, int]:
    """The CTA tile: 128x256 (CUTLASS) unless that leaves SMs idle (fewer tiles than
    FULL_WAVE_TILES; a narrower tile must reach every SM), or its accumulators
    and epilogue would not fit the `consumer` registers (default_registers) of a thread;
    at small M (`is_small_m`) the narrowest tile whose tiles fit in one wave
    (`choose_small_m_tile`)."""
    if consumer is None:
        consumer = default_registers(warp_specialization, 2)[1]
    tile_k = hw.TMA_SWIZZLE_BYTES // problem.element_bytes
    # Ping-pong gives each consumer warpgroup a whole tile of one wgmma's 64 rows; the
    # cooperative (and non-specialized) kernels split the tile's rows between two
    # warpgroups, so they need 128 rows even when M is smaller (the rows past M are TMA's
    # zero fill, and the stores are clipped). A `#sched.params` fills an unwritten tile
    # with the same rule.
    tile_m = tile_rows(warp_specialization)
    # 128x256 leaves a consumer thread 128 accumulators: only a lone GEMM's epilogue fits
    # beside them without spilling (measured with ptxas: docs/hopper-lowering.md).
    widest = 256 if problem.b_operands == 1 and problem.epilogue_tiles == 0 else 128
    if is_small_m(problem):
        small = choose_small_m_tile(problem, warp_specialization, consumer, tile_k, widest)
        if small is not None:
            return small
    wide_pingpong = (2 * hw.WGMMA_M, 128, tile_k)
    if (
        warp_specialization == "pingpong"
        and tile_count(problem, wide_pingpong) >= hw.SM_COUNT
        and _fits(problem, wide_pingpong, warp_specialization, consumer)
    ):
        # A ping-pong warpgroup's tile of two m64 blocks by 128 (128 accumulators) loads a
        # fifth fewer bytes per multiply-accumulate than 64x256: on the H200 (linear
        # 8192x14336x4096, 2x1 cluster) 748 against 709 TFLOP/s; alone 611 against 524.
        # Where it would leave SMs idle, or its epilogue would spill, one m64 block per
        # tile as below.
        return wide_pingpong
    if problem.n < MIN_TILE_N:
        # A [K, N] operand's tile is loaded in boxes of one 128-byte swizzle row along N.
        return (tile_m, MIN_TILE_N, tile_k)
    fitting = [
        n
        for n in (256, 128, 64)
        if n <= widest and _fits(problem, (tile_m, n, tile_k), warp_specialization, consumer)
    ]
    tall = (2 * tile_m, 128, tile_k)
    if (
        problem.element_bytes == 1
        and widest == 256
        and fitting[:1] != [256]
        and warp_specialization == "cooperative"
        and tile_count(problem, tall) >= hw.SM_COUNT
        and _fits(problem, tall, warp_specialization, consumer)
    ):
        # An fp8 tile of 128x256 whose epilogue does not fit (a row-wise scale of w holds
        # 64 columns per thread) fits as 256x128, each consumer 128 rows of 128 columns
        # (32 columns): the same bytes per multiply-accumulate. On the H100, row-wise
        # 8192^3 1.04x cuBLAS against 0.86x at 128x128x128, 4096x14336x5120 1.02-1.03x
        # against 0.84x (docs/results/2026-12-06-h100-grouped-fp8.md).
        return tall
    if not fitting:
        return (tile_m, MIN_TILE_N, tile_k)
    for tile_n in fitting:
        count = tile_count(problem, (tile_m, tile_n, tile_k))
        if count >= hw.SM_COUNT or (tile_n == fitting[0] and count >= FULL_WAVE_TILES):
            return (tile_m, tile_n, tile_k)
    return (tile_m, min(128, fitting[0]), tile_k)


def quantizing_tile(problem: Problem, tile: tuple[int, int, int]) -> tuple[int, int, int]:
    """`tile` widened along n where the epilogue computes quantization scales: to whole
    1 x 128 groups, or to the whole row (at most 256 wide; wider rows are refused by the
    params' check)."""
    tile_m, tile_n, tile_k = tile
    if "row" in problem.quantize:
        covering = [n for n in (64, 128, 256) if n >= problem.n]
        if covering:
            return (tile_m, max(tile_n, covering[0]), tile_k)
    if "group" in problem.quantize and tile_n % QUANTIZE_GROUP:
        return (tile_m, -(-tile_n // QUANTIZE_GROUP) * QUANTIZE_GROUP, tile_k)
    return tile


def choose_small_m_tile(
    problem: Problem, warp_specialization: str, consumer: int, tile_k: int, widest: int
) -> tuple[int, int, int] | None:
    """The tile of a small-M problem: under ping-pong the `choose_pair_fill_tile` where
    that rule applies; else the narrowest of 64, 128 and 256 (up to `widest`)
    whose tiles fit in one wave of the SMs, with its K block doubled where that keeps more
    of B in flight (`choose_tile_k`); None where none fits in one wave.

    Rows: `tile_rows` (64 under ping-pong, which the heuristic takes up to M = 64, else
    128). Where M leaves part of the tile's rows empty, at least 128 wide: the A box is
    loaded whole whatever M is, and a wider tile loads less of it per byte of W (at
    32x4096x14336, 64x128x128 with split_k 4 ran 0.95x cuBLAS, 64x64x128 with split_k 2
    0.89x; at M = 64, 1.01x and 1.08x). Narrower tiles mean more tiles and so fewer K
    slices (`choose_split_k` fills the wave with them): at 256x4096x4096, 128x64x64 ran
    0.94x, 128x128x64 with split_k 2 0.79x.
    """
    rows = tile_rows(warp_specialization)
    if rows == hw.WGMMA_M and (fill := choose_pair_fill_tile(problem, consumer)) is not None:
        return fill
    narrowest = MIN_TILE_N
    if problem.m < rows and problem.n > MIN_TILE_N:
        narrowest = 2 * MIN_TILE_N
    for tile_n in (64, 128, 256):
        tile = (rows, tile_n, tile_k)
        if not narrowest <= tile_n <= widest or tile_count(problem, tile) > hw.SM_COUNT:
            continue
        if not _fits(problem, tile, warp_specialization, consumer):
            continue
        tile = _fuller_wave(problem, tile, warp_specialization, consumer)
        return (rows, tile[1], choose_tile_k(problem, tile, warp_specialization, consumer))
    return None


PAIR_FILL_WIDTHS = (64, *range(96, 257, 16))
"""The tile widths `choose_pair_fill_tile` weighs: wgmma n in steps of 16 from 96 to 256,
and 64 (with its K block doubled, `choose_tile_k`). 80 is left out as not measured: at
N = 10240 it would tie with 160 (128 tiles against 64), which ran fastest there on the
H100 (8x10240x8192: 1.11x cuBLAS; docs/results/2026-12-06-h100-small-m-fill.md)."""
PARTIAL_ROWS_MIN_TILE_N = 96
"""The narrowest pair-fill tile where M leaves rows of the 64-row tile empty: the A box is
loaded whole, and at 64 wide it is as many bytes as the B box (rule 8's "Width")."""


def lone_gemm(problem: Problem) -> bool:
    """Whether the problem has one B operand and no [M, N] epilogue tiles (the fusions the
    small-M measurements ran)."""
    return problem.b_operands == 1 and problem.epilogue_tiles == 0


def pair_load(problem: Problem, tile: tuple[int, int, int], split_k: int = 1) -> Fraction:
    """The rows of B the busiest pair of SMs (`hw.TPC_COUNT`) streams over the whole K, in
    a grid of one wave: tile n x the work units the pair holds / split_k, with the units
    (tiles x K slices) placed one per pair before any pair gets a second.

    The model of the small-M ping-pong rule (`choose_pair_fill_tile`): on the H100 a memory-
    bound wave ran at the pace of its busiest pair. At 8x10240x8192, widths 160, 192, 224
    and 256 (one tile a pair) against 96, 112 and 128 (two on some pairs; loads 192, 224,
    256): 1.112, 1.097, 1.062, 1.030 against 1.054, 1.022, 0.980x cuBLAS; at
    16x14336x4096, 112 (load 224) 1.065, 128 (256) 1.032, 160 (320) 0.978, 192 (384)
    0.896 (docs/results/2026-12-06-h100-small-m-fill.md)."""
    units = tile_count(problem, tile) * split_k
    return Fraction(tile[1] * _ceil_div(units, hw.TPC_COUNT), split_k)


def choose_pair_fill_tile(
    problem: Problem, consumer: int | None = None
) -> tuple[int, int, int] | None:
    """The ping-pong tile of a lone GEMM of up to 64 rows whose tiles, at the narrowest
    width, outnumber the SMs' pairs: of PAIR_FILL_WIDTHS (from PARTIAL_ROWS_MIN_TILE_N where
    M < 64; multiples of 64 where a B operand is contiguous along N, whose TMA boxes are
    64 wide) whose tiles fit in one wave and in the `consumer` registers, the one of least
    `pair_load`, the more tiles on a tie; K as `choose_tile_k` doubles it. It runs unsplit
    (`unswapped_split_k`): a split adds work units without lowering the load. None where
    the rule does not apply (then `choose_small_m_tile`'s widths and split-K fill the
    wave).

    The rule picked the fastest width of every H100 row swept but one (8x8192x8192, where
    the heuristic swaps): 64x160 at N = 10240 (M = 8: 1.112x cuBLAS; 64: 1.023, and 192
    1.027), 64x112 at N = 14336 (M = 4, 16), 64x224 at N = 28672 (M = 16: 1.053), 64x128
    unsplit at 32x8192x8192 (1.034; split in two 0.900)."""
    if problem.m > hw.WGMMA_M or not lone_gemm(problem):
        return None
    if consumer is None:
        consumer = default_registers("pingpong", 2)[1]
    tile_k = hw.TMA_SWIZZLE_BYTES // problem.element_bytes
    narrowest = MIN_TILE_N if problem.m >= hw.WGMMA_M else PARTIAL_ROWS_MIN_TILE_N
    step = MIN_TILE_N if problem.b_n_contiguous else 1
    tiles = [
        (hw.WGMMA_M, width, tile_k)
        for width in PAIR_FILL_WIDTHS
        if width >= narrowest
        and width % step == 0
        and block_scale_width(problem, width)
        and tile_count(problem, (hw.WGMMA_M, width, tile_k)) <= hw.SM_COUNT
        and _fits(problem, (hw.WGMMA_M, width, tile_k), "pingpong", consumer)
    ]
    if not tiles or tile_count(problem, tiles[0]) <= hw.TPC_COUNT:
        return None
    tile = min(tiles, key=lambda t: (pair_load(problem, t), -tile_count(problem, t)))
    return (tile[0], tile[1], choose_tile_k(problem, tile, "pingpong", consumer))


def block_scale_width(problem: Problem, tile_n: int) -> bool:
    """Whether a tile n suits the problem's block-wise scales (any where it has none): it
    divides their N block of 128 or is a multiple of it (`ScheduleParams.check`)."""
    block = 2 * MIN_TILE_N
    return not problem.block_scaled or tile_n % block == 0 or block % tile_n == 0


FILL_TILE_N = 192
"""The one width between 128 and 256 the small-M rule also takes: three 64-column blocks,
so its B boxes and epilogue rows stay whole 128-byte swizzle rows (224 and 160 ran slower
per tile than 256 and 128 on the H100: docs/schedule.md, "Small M")."""


def _fuller_wave(
    problem: Problem, tile: tuple[int, int, int], warp_specialization: str, consumer: int
) -> tuple[int, int, int]:
    """`tile` (the narrowest power-of-two width whose tiles fit in one wave), or a
    FILL_TILE_N-wide tile where that one leaves SMs idle (fewer than FULL_WAVE_TILES tiles)
    and the narrower width still fits in one wave with more tiles: at 384x8192x8192 on the
    H100, 128x256 (96 tiles) ran 0.80x cuBLAS, 128x192 (129 tiles) 1.02x."""
    count = tile_count(problem, tile)
    if tile[1] <= FILL_TILE_N or count >= FULL_WAVE_TILES or problem.block_scaled:
        return tile
    fill = (tile[0], FILL_TILE_N, tile[2])
    if not count < tile_count(problem, fill) <= hw.SM_COUNT:
        return tile
    if not _fits(problem, fill, warp_specialization, consumer):
        return tile
    return fill


SWAP_AB_CANDIDATE_M = hw.WGMMA_M // 2
"""The rows the swap rule is meant for (docs/schedule.md, "Swap-AB"): where M fills at most
half of a 64-row wgmma, the swapped kernel's wgmma n covers M (rounded up to 8) and its A
box holds M rows instead of 64."""
SWAP_AB_MAX_M = SWAP_AB_CANDIDATE_M
"""Rows up to which the heuristic swaps A and B on its own: measured on the H200
(docs/results/2026-12-01-h200-swap-ab.md), the swapped picks ran 1.20x cuBLAS at 1x4096x4096 (the
unswapped pick 1.02x), 1.01x at 16x14336x4096 (0.95x) and 1.05x at 32x14336x4096 (1.00x),
and lost at M = 64 and above."""
SWAP_AB_KEYS = ("tile", "warp_specialization", "epilogue")
"""Overrides that leave the heuristic's swap_ab off: they were given for the unswapped
mapping (a tile's rows, the smem epilogue)."""


SWAP_AB_TIE_MAX_M = 16
"""Rows up to which the swapped tile is taken where its `pair_load` ties with the unswapped
unsplit one's: a 64-row A box is then three quarters zero fill or more. On the H100,
16x8192x28672 swapped 1.029x cuBLAS against 0.996x (64x128x64), 8x8192x8192 0.958x against
0.947x; at 32 rows the unswapped tile won, 32x8192x8192 1.034x against 0.949x."""


def choose_swap_ab(problem: Problem, given: Mapping[str, object]) -> bool:
    """Swap A and B where it was given, or (none of SWAP_AB_KEYS given) at small M up to
    SWAP_AB_MAX_M rows, with a static M (a dynamic one is chosen for at its bucket's bound
    or NOMINAL_EXTENTS' M), where the swapped tile streams no more than the unswapped
    (`swap_streams_less`)."""
    if "swap_ab" in given:
        return bool(given["swap_ab"])
    if any(key in given for key in SWAP_AB_KEYS) or problem.a_m_contiguous:
        return False
    if problem.block_scaled:
        return False  # the cuda mainloop promotes unswapped fragments only
    if 1 in problem.output_bytes:
        return False  # an fp8 output is stored in pairs along n, which swap_ab's threads lack
    if not is_small_m(problem) or problem.m > SWAP_AB_MAX_M:
        return False
    return swap_streams_less(problem)


def swap_streams_less(problem: Problem) -> bool:
    """Whether the swapped tile (`choose_swap_tile`, split as `choose_split_k`) streams
    less than the unswapped ping-pong tile `choose_pair_fill_tile` would take: a lower
    `pair_load`, or an equal one at M up to SWAP_AB_TIE_MAX_M; True where that rule does
    not apply (too few tiles: the swapped and unswapped tiles both split K to fill the
    wave, and the swapped one ran faster at 1x4096x4096 on the H200, 1.20x cuBLAS against
    1.02x, and 32x4096x4096, 1.65x against 1.52x).

    The swapped tile's width is a multiple of 64 (wgmma's m) and its A box holds M rows;
    the unswapped one's width is finer and its A box 64 rows. On the H100 the unswapped
    tiles of lower load won at every row swept (8x10240x8192 64x160 1.112x cuBLAS against
    swapped 8x128 1.016x, 16x14336x4096 64x112 1.065x against 16x128 1.040x, 16x28672x8192
    64x224 1.053x against 16x256 1.026x)."""
    tile = choose_pair_fill_tile(problem)
    if tile is None:
        return True
    swapped = choose_swap_tile(problem, choose_swap_warp_specialization(problem))
    swapped_split = swapped_split_k(problem, swapped)
    swapped_load = pair_load(problem, swapped, swapped_split)
    load = pair_load(problem, tile)
    if swapped_load != load:
        return swapped_load < load
    return problem.m <= SWAP_AB_TIE_MAX_M


TIE_SPLIT_MIN_K_BLOCKS = 64
"""K blocks a slice keeps at least for a swapped tile to split at an equal `pair_load`
(`swapped_split_k`)."""


def swapped_split_k(problem: Problem, tile: tuple[int, int, int]) -> int:
    """`choose_split_k` for a swapped tile, clamped to the K blocks; 1 where the split would
    not lower the `pair_load` (its slices would only put a second unit on pairs of SMs
    that stream as much B either way) and would leave a slice fewer than
    TIE_SPLIT_MIN_K_BLOCKS K blocks.

    On the H100 (docs/results/2026-12-06-h100-second-run.md), at an equal load: 8x8192x8192
    (64 swapped tiles, 64 K blocks) unsplit ran 1.005x and 1.016x cuBLAS in two runs,
    split in two 0.956x and 0.958x; at K = 28672 (224 K blocks) the split won,
    16x8192x28672 1.029x against 0.994x unsplit and 1x8192x28672 1.034x against 1.008x.
    A lower load splits: 1x4096x4096 (32 tiles) split in four ran 1.472x, unsplit
    streams twice the rows a pair."""
    split = clamp_split_k(choose_split_k(problem, tile), problem, tile)
    if pair_load(problem, tile, split) < pair_load(problem, tile):
        return split
    k_blocks = _ceil_div(problem.k, tile[2])
    return split if k_blocks // max(split, 1) >= TIE_SPLIT_MIN_K_BLOCKS else 1


def unswapped_split_k(
    problem: Problem, tile: tuple[int, int, int], warp_specialization: str, given_tile: bool
) -> int:
    """`choose_split_k`, clamped to the K blocks; for a small-M ping-pong tile of a lone
    GEMM left to the heuristic, 1 where the split would not lower the `pair_load` (the
    tiles already take more than half the SMs' pairs: a split only puts a second unit on
    a pair).

    On the H100: 64x4096x14336, 64x64x128 (64 tiles) unsplit ran 1.087x cuBLAS, split in
    two 1.009x (docs/results/2026-12-06-h100-decode-large.md, the autotuned schedule);
    32x8192x8192, 64x128x64 (64 tiles) 1.034x against 0.900x; 8x10240x8192, 64x160x64 (64
    tiles) 1.112x against 0.994x."""
    split = clamp_split_k(choose_split_k(problem, tile), problem, tile)
    if given_tile or warp_specialization != "pingpong" or tile[0] != hw.WGMMA_M:
        return split
    if not is_small_m(problem) or problem.m > hw.WGMMA_M or not lone_gemm(problem):
        return split
    return split if pair_load(problem, tile, split) < pair_load(problem, tile) else 1


def choose_swap_warp_specialization(problem: Problem) -> str:
    """Cooperative: two consumers split the tile's N (wgmma's rows) in m64 blocks, so a
    tile of 128 wide keeps both busy; ping-pong only where N is narrower than that."""
    return "pingpong" if problem.n <= hw.WGMMA_M else "cooperative"


def swap_tile_m(m: int) -> int:
    """The tile's M under swap_ab: M rounded up to wgmma's n step (8), at most 256."""
    return min(hw.WGMMA_N_MAX, _ceil_div(m, hw.WGMMA_N_STEP) * hw.WGMMA_N_STEP)


def choose_swap_tile(
    problem: Problem, warp_specialization: str, consumer: int | None = None
) -> tuple[int, int, int]:
    """The swapped tile: M rows rounded up to 8 (wgmma's n; to 64 for an A contiguous along
    M; halved while no width fits the registers), and the narrowest N of 128 and 256 (64
    too under ping-pong) whose tiles fit in one wave (the small-M rule), else the widest
    that fits; K doubled as `choose_tile_k` does."""
    if consumer is None:
        consumer = default_registers(warp_specialization, 2)[1]
    tile_k = hw.TMA_SWIZZLE_BYTES // problem.element_bytes
    widest = 256 if problem.b_operands == 1 and problem.epilogue_tiles == 0 else 128
    widths = (64, 128, 256) if warp_specialization == "pingpong" else (128, 256)
    tile_m = swap_tile_m(problem.m)
    step = hw.WGMMA_M if problem.a_m_contiguous else hw.WGMMA_N_STEP
    tile_m = min(hw.WGMMA_N_MAX, _ceil_div(tile_m, step) * step)
    fitting: list[int] = []
    while True:
        fitting = [
            n
            for n in widths
            if n <= max(widest, widths[0])
            and _fits(problem, (tile_m, n, tile_k), warp_specialization, consumer, True)
        ]
        if fitting or tile_m <= step:
            break
        tile_m = max(step, _ceil_div(tile_m // 2, step) * step)
    if not fitting:
        return (tile_m, widths[0], tile_k)
    tile_n = fitting[-1]
    for width in fitting:
        if tile_count(problem, (tile_m, width, tile_k)) <= hw.SM_COUNT:
            tile_n = width
            break
    tile = (tile_m, tile_n, tile_k)
    return (tile_m, tile_n, choose_tile_k(problem, tile, warp_specialization, consumer, True))


def ring_stages(
    problem: Problem, tile: tuple[int, int, int], warp_specialization: str, swap_ab: bool = False
) -> int:
    """The stages the heuristic gives a tile (wanted_stages, at most what fits)."""
    warpgroup = derive_warpgroup(tile, warp_specialization, swap_ab)
    params = ScheduleParams(
        tile=tile,
        warpgroup=warpgroup,
        instr=derive_instr(warpgroup, problem.element_bytes, swap_ab, problem.block_scaled),
        warp_specialization=warp_specialization,
        registers=default_registers(warp_specialization, 2),
        epilogue="registers" if swap_ab else choose_epilogue(problem),
        swap_ab=swap_ab,
    )
    return min(fit_stages(params, problem), wanted_stages(tile, problem))


def choose_tile_k(
    problem: Problem,
    tile: tuple[int, int, int],
    warp_specialization: str,
    consumer: int,
    swap_ab: bool = False,
) -> int:
    """The tile's K block, doubled where the ring then holds more bytes of B (stages x
    tile n x tile k), keeps MIN_DEEP_STAGES stages and K holds MIN_K_BLOCKS_PER_SLICE
    such blocks.

    Of the small-M tiles only 64x64 gains: 8 stages (MAX_STAGES) of 64x64x64 hold 64 KiB
    of W, 6 of 64x64x128 96 KiB (64x4096x14336 with split_k 2: 1.08x cuBLAS against
    1.05x; at 1x4096x4096 with split_k 2 19.5 us against 20.5 us). 64x128, 128x64 and
    128x128 hold as much either way and keep k = 64; 128x256x128 fits 2 stages.
    """
    tile_m, tile_n, tile_k = tile
    if problem.block_scaled:
        return tile_k  # one K block of 128 per stage: one block-wise scale
    deeper = (tile_m, tile_n, 2 * tile_k)
    if _ceil_div(problem.k, deeper[2]) < MIN_K_BLOCKS_PER_SLICE:
        return tile_k
    if not _fits(problem, deeper, warp_specialization, consumer, swap_ab):
        return tile_k
    stages = ring_stages(problem, tile, warp_specialization, swap_ab)
    deep_stages = ring_stages(problem, deeper, warp_specialization, swap_ab)
    if deep_stages < MIN_DEEP_STAGES or deep_stages * 2 <= stages:
        return tile_k
    return deeper[2]


def default_registers(warp_specialization: str, consumers: int) -> tuple[int, int]:
    """setmaxnreg counts: 40 for the producer, the rest of the SM's registers shared out."""
    if warp_specialization == "none":
        per_thread = hw.REGISTERS_PER_SM // (consumers * hw.WARPGROUP_SIZE)
        count = min(per_thread, hw.MAX_REGISTERS_PER_THREAD)
        count -= count % hw.SETMAXNREG_STEP
        return (count, count)
    producer = 40
    left = hw.REGISTERS_PER_SM // hw.WARPGROUP_SIZE - producer
    consumer = min(left // max(consumers, 2), hw.SETMAXNREG_MAX)
    consumer -= consumer % hw.SETMAXNREG_STEP
    return (producer, consumer)


def fit_stages(params: ScheduleParams, problem: Problem) -> int:
    """The most stages (up to MAX_STAGES) whose shared memory fits the device; 0 if none."""
    for stages in range(MAX_STAGES, 1, -1):
        if sum(params.replace(stages=stages).smem_bytes(problem).values()) <= (
            hw.MAX_DYNAMIC_SMEM_PER_BLOCK
        ):
            return stages
    return 0


def choose_cluster(problem: Problem, params: ScheduleParams) -> tuple[int, int]:
    """Ping-pong with 128-row tiles (a problem big enough to fill the SMs with them) gets a
    2x1 cluster (B multicast to two CTAs) where it is persistent, unbatched, unsplit and
    has two M tiles or more; everything else runs alone.

    Ping-pong's tiles read more operand bytes per multiply-accumulate than cooperative
    128x256 and were L2-bound alone on the H200 (linear 8192x14336x4096, 128x128x64: 611
    TFLOP/s, with the cluster 748; 64x256x64: 524 and 709). Cooperative 128x256x64 ran level
    with and without one (docs/results/2026-11-30-h200-bench-suite.md), so it stays alone.
    """
    if params.warp_specialization != "pingpong" or params.strategy != "persistent":
        return (1, 1)
    if params.split_k != 1 or set(problem.extents) != {"m", "n", "k"}:
        return (1, 1)
    tiles_m = _ceil_div(problem.m, params.tile[0])
    if params.tile[0] < 2 * hw.WGMMA_M or tiles_m < 2:
        return (1, 1)
    if tiles_m % 2 and tiles_m < MIN_ODD_CLUSTER_TILES:
        return (1, 1)
    return (2, 1)


MIN_ODD_CLUSTER_TILES = 8
"""An odd count of M tiles from which a 2x1 cluster still pays: the pairs' last CTA idles,
a sixth or more of the work below 8 (384x14336x4096 on the H100, ping-pong 128x128: 0.82x
cuBLAS alone, slower in a 2x1 cluster)."""


def wanted_stages(tile: tuple[int, int, int], problem: Problem) -> int:
    """Stages holding IN_FLIGHT_MACS of the tile's mmas (every B operand counts), >= 2,
    counted in 16-bit multiply-accumulates: an fp8 one takes the tensor cores half the time
    (twice wgmma's k per instruction), so an fp8 K block of 128 counts as a 16-bit one of
    64 and 128x256x128 gets the 3 stages of 128x256x64 (at 2 its ring did not hide the
    loads: 0.78-0.81x cuBLAS fp8 at 8192^3 and 4096x14336x5120)."""
    macs = tile[0] * tile[1] * tile[2] * max(problem.b_operands, 1)
    macs = macs * min(problem.element_bytes, 2) // 2
    return max(2, _ceil_div(IN_FLIGHT_MACS, macs))


def one_unit_per_cta(problem: Problem, params: ScheduleParams) -> bool:
    """Whether every CTA runs one work unit (a tile, or a K slice of one) at most: the
    units fit in one wave of the SMs, so the kernel is one K loop per CTA, and its ring
    takes every stage that fits rather than `wanted_stages`.

    With no next tile whose loads the ring's fill could overlap, a deeper ring only keeps
    more of the operands in flight: on the H200, 256x14336x4096 at 128x256x64 (112 tiles)
    ran 0.913-0.923x cuBLAS with 4 stages against 0.901-0.905x with 3
    (docs/results/2026-12-02-h200-deeper-ring.md)."""
    units = tile_count(problem, params.tile) * params.split_k
    return not problem.dynamic_axes and units <= hw.SM_COUNT


def choose_epilogue(problem: Problem) -> str:
    """Stage a lone GEMM's output through shared memory and TMA-store it (measured faster on
    the H200: docs/results/2026-11-30-h200-bench-suite.md); an epilogue that reads or writes
    more [M, N] tiles keeps its registers for them and stores from the accumulators."""
    return "smem" if problem.epilogue_tiles == 0 else "registers"


def choose_swizzle(minor_tiles: int, band_rows: int, other_rows: int) -> int:
    """The swizzle group G: the power of two nearest (in ratio) to sqrt(W other / band),
    at most MAX_SWIZZLE and the tiles along the band axis.

    A wave of W = SM_COUNT CTAs in groups of G tiles along the band axis reads G tiles of
    the operand(s) along that axis (`band_rows` rows of K each: tile_m for A, tile_n times
    the B operands for B) and W / G of the other's (`other_rows`); the sum G band +
    (W / G) other is least at G = sqrt(W other / band). 128x256 tiles banded along M give
    16 (the best of the swizzles swept at raster n on the H200), banded along N 8; the
    horizontal fusion's 128x128 tiles with two B operands, banded along N, 8 (measured
    level with 16 there: 677 and 684 against 687 and 674 TFLOP/s, alternated in one
    process).
    """
    best = math.sqrt(hw.SM_COUNT * other_rows / band_rows)
    limit = min(MAX_SWIZZLE, max(minor_tiles, 1))
    swizzle = 1
    while swizzle * 2 <= limit and swizzle * 2 / best <= best / swizzle:
        swizzle *= 2
    return swizzle


def choose_split_k(problem: Problem, tile: tuple[int, int, int]) -> int:
    """Split K only when the tiles fill under half the SMs and K is long."""
    tiles = tile_count(problem, tile)
    k_blocks = _ceil_div(problem.k, tile[2])
    if 2 * tiles > hw.SM_COUNT:
        return 1
    return max(1, min(MAX_SPLIT_K, hw.SM_COUNT // tiles, k_blocks // MIN_K_BLOCKS_PER_SLICE))


def clamp_split_k(split_k: int, problem: Problem, tile: tuple[int, int, int]) -> int:
    """`split_k`, at most the K blocks (a slice past the last K block would be empty)."""
    if split_k < 1:
        return split_k
    return min(split_k, _ceil_div(problem.k, tile[2]))


def choose_params(
    problem: Problem, schedule_m: int | None = None, **overrides: object
) -> ScheduleParams:
    """Params for `problem`: the overrides as given, the rest chosen; ScheduleError if invalid.

    For a problem with dynamic extents the choice is made at NOMINAL_EXTENTS (M =
    `schedule_m` where given: a bucket's M, mmcomp.schedule.buckets) and checked
    against what is static (the extents themselves are checked at call time); with a
    dynamic K, split_k is 1 unless given (and a split or stream-K given is refused).

    Where split-K would not leave SPLIT_K_MARGIN of the consumer registers spare beside
    the tile (`ScheduleParams.consumer_registers`), a narrower tile is taken if the tile
    is not given, else no split if split_k is not given. Where the epilogue of the tile
    chosen or given still does not fit the registers whole, it walks the widest subtile
    that fits (`ScheduleParams.fitting_subtile`) unless `epilogue_subtile` is given. A
    static problem whose last wave is nearly empty runs the hybrid stream-K where no
    strategy is given (`picks_hybrid`).
    """
    given = normalize_overrides(overrides)
    if "k" in problem.dynamic_axes:
        given = {"split_k": 1, **given}
    nominal = NOMINAL_EXTENTS if schedule_m is None else {**NOMINAL_EXTENTS, "m": schedule_m}
    chosen_for = problem.with_extents(nominal) if problem.dynamic_axes else problem
    params = _choose(chosen_for, given)
    if params.split_k > 1 and not params.fits_registers(chosen_for, SPLIT_K_MARGIN):
        params = _refit_split(chosen_for, given, params)
    if params.stream_k and "tile" not in given and not params.fits_registers(chosen_for):
        params = _narrow_stream_k(chosen_for, given, params)
    if "strategy" not in given and picks_hybrid(problem, params):
        params = _hybrid_or_not(problem, params)
    if "epilogue_subtile" not in given and not params.fits_registers(chosen_for):
        params = params.replace(epilogue_subtile=choose_subtile(chosen_for, params))
    params.check(problem)
    return params


NOMINAL_EXTENTS = {"m": 4096, "k": 4096}
"""The extents a dynamic axis is taken to have where the heuristic chooses a schedule (a
dynamic batch axis: 1): one schedule serves every M, so it is chosen for a large one,
where the schedule matters most. A dynamic K (a weight gradient's token count) is taken
as long; its schedule does not split K (split_k = 1, no stream-K: the K-block count is a
runtime value), so the tiles and stages are all K decides, and one kernel serves every K
(no K buckets)."""


SPLIT_K_MARGIN = 48
"""Consumer registers the heuristic leaves spare beside a split-K schedule it chooses (a
tile or split_k left to it): the reduction of the partials raised ptxas's need past the
model's estimate by up to 48 in fuzzer cases (gelu, several outputs, split_k 3 to 5;
docs/schedule.md). A schedule given in full is checked without it."""


def choose_subtile(problem: Problem, params: ScheduleParams) -> int:
    """The epilogue subtile of params whose whole-tile epilogue does not fit the registers:
    the widest that fits (`ScheduleParams.fitting_subtile`), under split-K or stream-K with
    SPLIT_K_MARGIN to spare where one does (gelu + bias + residual at 128x256 with split_k
    2 spilled 152 bytes at the 64 columns that fit the rule, none at 32); 0 where none
    fits (the params' check then refuses them)."""
    if params.split_k > 1 or params.stream_k:
        spared = params.fitting_subtile(problem, SPLIT_K_MARGIN)
        if spared is not None:
            return spared
    return params.fitting_subtile(problem) or 0


def _narrower_tiles(
    problem: Problem, given: dict[str, object], params: ScheduleParams
) -> Iterator[ScheduleParams]:
    """`params` chosen again at ever narrower tiles, halving n down to MIN_TILE_N."""
    given = {**given, "swap_ab": params.swap_ab}
    tile_m, tile_n, tile_k = params.tile
    while tile_n > MIN_TILE_N:
        tile_n //= 2
        yield _choose(problem, {**given, "tile": (tile_m, tile_n, tile_k)})


def _refit_split(
    problem: Problem, given: dict[str, object], params: ScheduleParams
) -> ScheduleParams:
    """Params whose split-K fits the registers with SPLIT_K_MARGIN to spare: a narrower
    tile, or else one K slice; `params` when both are given."""
    if "tile" not in given:
        for narrower in _narrower_tiles(problem, given, params):
            if narrower.split_k == 1 or narrower.fits_registers(problem, SPLIT_K_MARGIN):
                return narrower
    if "split_k" not in given:
        return _choose(
            problem, {**given, "swap_ab": params.swap_ab, "tile": params.tile, "split_k": 1}
        )
    return params


def _narrow_stream_k(
    problem: Problem, given: dict[str, object], params: ScheduleParams
) -> ScheduleParams:
    """Params of a stream-K strategy given without a tile whose fixup sums do not fit the
    registers: the widest narrower tile that fits them, with SPLIT_K_MARGIN to spare
    where one does; `params` where none fits."""
    fitting: ScheduleParams | None = None
    for narrower in _narrower_tiles(problem, given, params):
        if narrower.fits_registers(problem, SPLIT_K_MARGIN):
            return narrower
        if fitting is None and narrower.fits_registers(problem):
            fitting = narrower
    return fitting or params


def _choose(problem: Problem, given: dict[str, object]) -> ScheduleParams:
    """The params for `given` (normalized overrides), not yet checked."""
    given_tile = cast("tuple[int, int, int] | None", given.get("tile"))
    swap = choose_swap_ab(problem, given)
    if swap:
        ws = str(given.get("warp_specialization", choose_swap_warp_specialization(problem)))
    else:
        ws = str(given.get("warp_specialization", choose_warp_specialization(problem, given_tile)))
    pinned_registers = given.get("registers")
    consumer = (
        cast("tuple[int, int]", pinned_registers)[1]
        if isinstance(pinned_registers, tuple)
        else None
    )
    if swap:
        tile = given.get("tile") or choose_swap_tile(problem, ws, consumer)
    else:
        tile = given.get("tile") or choose_tile(problem, ws, consumer)
    assert isinstance(tile, tuple)
    tile = cast("tuple[int, int, int]", tile)
    if "tile" not in given:
        tile = quantizing_tile(problem, tile)
    warpgroup = derive_warpgroup(tile, ws, swap)
    epilogue = "registers" if swap else choose_epilogue(problem)
    params = ScheduleParams(
        tile=tile,
        warpgroup=warpgroup,
        instr=derive_instr(warpgroup, problem.element_bytes, swap, problem.block_scaled),
        warp_specialization=ws,
        strategy=str(given.get("strategy", "persistent")),
        cluster=given.get("cluster", (1, 1)),  # pyright: ignore[reportArgumentType]
        epilogue=str(given.get("epilogue", epilogue)),
        epilogue_subtile=given.get("epilogue_subtile", 0),  # pyright: ignore[reportArgumentType]
        swap_ab=swap,
    )
    registers = given.get("registers") or default_registers(ws, params.consumer_warpgroups)
    params = params.replace(registers=registers)
    if "stages" in given:
        params = params.replace(stages=given["stages"])
    else:
        stages = fit_stages(params, problem)
        if stages < 3 and "epilogue" not in given and params.epilogue == "smem":
            params = params.replace(epilogue="registers")
            stages = fit_stages(params, problem)
        stages = min(stages, wanted_stages(tile, problem))
        params = params.replace(stages=max(stages, 2))
    tiles_m = _ceil_div(problem.m, tile[0])
    tiles_n = _ceil_div(problem.n, tile[1])
    raster = params.replace(raster=given.get("raster", "auto")).raster_for(tiles_m, tiles_n)
    a_rows = tile[0] * problem.a_operands
    b_rows = tile[1] * max(problem.b_operands, 1)
    if raster == "m":
        swizzle = choose_swizzle(tiles_n, band_rows=b_rows, other_rows=a_rows)
    else:
        swizzle = choose_swizzle(tiles_m, band_rows=a_rows, other_rows=b_rows)
    if "split_k" in given:
        split_k = given["split_k"]
    elif swap:
        split_k = swapped_split_k(problem, tile)
    else:
        split_k = unswapped_split_k(problem, tile, ws, given_tile is not None)
    if params.stream_k and "split_k" not in given:
        split_k = 1  # stream-K splits the K blocks itself
    assert isinstance(split_k, int)
    params = params.replace(
        raster=raster,
        swizzle=given.get("swizzle", swizzle),
        split_k=clamp_split_k(split_k, problem, tile),
    )
    if "stages" not in given and one_unit_per_cta(problem, params):
        params = params.replace(stages=max(fit_stages(params, problem), params.stages))
    if "cluster" not in given:
        params = params.replace(cluster=choose_cluster(problem, params))
    return params


HYBRID_MIN_GAIN = 0.03
"""The modelled gain over the data-parallel waves (`hybrid_gain`) from which the heuristic
runs the hybrid stream-K: measured on the H200 (docs/results/2026-12-01-h200-stream-k.md), the
hybrid was 18% faster at 4352x4096x14336 (model: 21%) and 1.5-3% at 8192x14336x4096
(model: 3.1%), and level where the model gives 2.1-2.4% (8192^3, 4096x14336x5120): the
fixup of the split tail tiles costs about that."""


def hybrid_gain(problem: Problem, tile: tuple[int, int, int]) -> float:
    """The data-parallel kernel's modelled time over the hybrid's, less 1: ceil(T / P)
    waves of whole tiles against the W full waves plus the tail's rounds of 1 / S of a tile
    (T tiles on P CTAs, the tail's R tiles split into S segments, `tail_segments`); 0 where
    there is no full wave, no tail, or S = 1 (then the hybrid is the data-parallel kernel)."""
    grid = hw.SM_COUNT
    waves, tail = divmod(tile_count(problem, tile), grid)
    if waves == 0 or tail == 0:
        return 0.0
    segments = tail_segments(tail, grid, _ceil_div(problem.k, tile[2]))
    if segments == 1:
        return 0.0
    rounds = _ceil_div(tail * segments, grid)
    return (waves + 1) / (waves + rounds / segments) - 1


def _hybrid_or_not(problem: Problem, params: ScheduleParams) -> ScheduleParams:
    """`params` as the hybrid stream-K, or as they are where the hybrid is not valid for
    the problem (its K-block iterations past the kernel's 32-bit arithmetic)."""
    hybrid = params.replace(strategy="hybrid-stream-k")
    try:
        hybrid.check(problem)
    except ScheduleError:
        return params
    return hybrid


def picks_hybrid(problem: Problem, params: ScheduleParams) -> bool:
    """Whether the heuristic runs `params` (chosen persistent) as the hybrid stream-K:
    static extents, a cooperative kernel of one CTA per cluster, unswapped and unsplit,
    where `hybrid_gain` is at least HYBRID_MIN_GAIN."""
    if problem.dynamic_axes or params.strategy != "persistent" or params.swap_ab:
        return False
    if problem.block_scaled:
        return False
    if params.warp_specialization != "cooperative" or params.cluster != (1, 1):
        return False
    if params.split_k != 1:
        return False
    return hybrid_gain(problem, params.tile) >= HYBRID_MIN_GAIN
