"""The heuristic's choices, overrides, and the `mmcomp.compile` entry point around them."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser

import mmcomp
from mmcomp.arch import limits as hw
from mmcomp.backend.compiled import Kernel
from mmcomp.dialects.sched import (
    PARAMS_ATTR,
    Problem,
    ScheduleParams,
    ScheduleParamsAttr,
    problem_of,
)
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.ir.registry import context
from mmcomp.passes.choose_schedule import choose_schedule
from mmcomp.passes.propagate_axis_mapping import propagate
from mmcomp.pipeline import PIPELINE
from mmcomp.schedule import heuristics
from mmcomp.schedule.heuristics import (
    PARAMETERS,
    SMALL_M,
    choose_params,
    choose_split_k,
    choose_swizzle,
    fit_stages,
)


def test_large_bf16_gemm_gets_cutlass_defaults():
    params = choose_params(Problem({"m": 4096, "n": 14336, "k": 5120}))
    assert params.tile == (128, 256, 64)
    assert params.warpgroup == (64, 256)
    assert params.instr == (64, 256, 16)
    # 4 stages fit, 3 keep enough in flight (and measured faster on the H200).
    assert fit_stages(params, Problem({"m": 4096, "n": 14336, "k": 5120})) == 4
    assert params.stages == 3
    assert params.warp_specialization == "cooperative"
    assert params.registers == (40, 232)
    assert params.strategy == "persistent"
    assert params.epilogue == "smem"
    assert params.split_k == 1
    assert params.swizzle == 8  # banded along N: sqrt(132 * 128 / 256) -> 8


def test_epilogue_with_full_tiles_gets_128x128():
    # An [M, N] epilogue operand or a second output beside 128 accumulators spills.
    for problem in (
        Problem({"m": 8192, "n": 14336, "k": 4096}, epilogue_tiles=1),
        Problem({"m": 8192, "n": 14336, "k": 4096}, output_bytes=(4, 2), epilogue_tiles=1),
    ):
        chosen = choose_params(problem)
        assert (chosen.tile, chosen.epilogue) == ((128, 128, 64), "registers")


def test_fp8_row_scales_get_a_tall_tile_where_128x256_spills():
    """w's row-wise scale holds 64 columns per thread at 128x256; 256x128 holds 32 and reads
    the same bytes per multiply-accumulate (measured: docs/fp8.md)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import bench

    picks = {
        mode: mmcomp.compile(bench.fp8_fusion(8192, 8192, 8192, mode)).params.tile
        for mode in ("tensor", "row")
    }
    assert picks == {"tensor": (128, 256, 128), "row": (256, 128, 128)}
    # A decode row keeps its one-wave tile; bf16 keeps 128-row tiles.
    assert mmcomp.compile(bench.fp8_fusion(128, 14336, 4096, "row")).params.tile[0] == 128
    assert choose_params(Problem({"m": 8192, "n": 14336, "k": 4096}, epilogue_tiles=1)).tile == (
        128,
        128,
        64,
    )


def test_horizontal_fusion_fits_two_b_tiles():
    params = choose_params(Problem({"m": 4096, "n": 14336, "k": 5120}, b_operands=2))
    assert params.tile == (128, 128, 64)
    # Two B tiles per stage: as many multiply-accumulates per stage as 128x256x64.
    assert params.stages == 3
    # Three outputs, two of them f32: the epilogue boxes are 128-byte rows whatever the type.
    wide = choose_params(
        Problem({"m": 4096, "n": 14336, "k": 5120}, b_operands=2, output_bytes=(4, 4, 2))
    )
    assert (wide.tile, wide.stages) == ((128, 128, 64), 3)


def test_small_problems_get_smaller_tiles():
    assert choose_params(Problem({"m": 1024, "n": 1024, "k": 1024})).tile == (128, 128, 64)
    # Cooperative kernels split 128 rows between two consumer warpgroups, whatever M is;
    # ping-pong gives one warpgroup a 64-row tile, and is the heuristic's choice up to M = 64.
    tiny = Problem({"m": 1, "n": 500, "k": 40})
    assert choose_params(tiny).tile[0] == 128
    assert choose_params(tiny, warp_specialization="pingpong").tile[0] == 64
    # With a K loop of 4 blocks or more, small M: ping-pong up to M = 64 (rule 8), and
    # up to M = 16 swap-AB unless a mapping was given (docs/schedule.md, "Swap-AB").
    decode = Problem({"m": 1, "n": 500, "k": 256})
    assert choose_params(decode, warp_specialization="cooperative").tile[0] == 128
    assert choose_params(decode).swap_ab and choose_params(decode).tile[0] == 8
    unswapped = choose_params(decode, swap_ab=False)
    assert unswapped.tile[0] == 64 and unswapped.warp_specialization == "pingpong"
    # A narrow N still gets a 64-wide tile: one 128-byte swizzle row of a [K, N] operand.
    assert choose_params(Problem({"m": 64, "n": 24, "k": 64})).tile == (128, 64, 64)
    assert choose_params(Problem({"m": 64, "n": 24, "k": 256})).tile == (64, 64, 64)


def test_small_problems_compile_for_cuda():
    for m, n, k in ((1, 500, 40), (64, 4096, 4096), (17, 17, 17), (256, 7, 64)):
        f = mmcomp.Fusion("small")
        a = f.input("a", [m, k], "bf16")
        b = f.input("b", [k, n], "bf16")
        f.output(f.cast(f.matmul(a, b), "bf16"))
        # Rows that are not a multiple of 16 bytes are read through a padded staging copy.
        assert mmcomp.compile(f).report.spills == 0


@pytest.mark.parametrize(
    ("extents", "warp_specialization", "tile", "split_k", "stages"),
    [
        # M = 1..64: ping-pong's 64-row tiles; M below 64 at least 128 wide.
        ((1, 4096, 4096), "pingpong", (64, 128, 64), 4, 8),  # 32 tiles x 4 slices
        ((16, 14336, 4096), "pingpong", (64, 112, 64), 1, 8),  # 128 tiles (two a pair)
        # M = 128..512: cooperative 128-row tiles, the narrowest within one wave.
        ((128, 14336, 4096), "cooperative", (128, 128, 64), 1, 6),  # 112 tiles
        ((256, 14336, 4096), "cooperative", (128, 256, 64), 1, 4),  # 112 tiles, deepest ring
        ((512, 4096, 4096), "cooperative", (128, 128, 64), 1, 6),  # 128 tiles
        ((128, 4096, 14336), "cooperative", (128, 64, 64), 2, 8),  # 64 tiles x 2
        ((256, 4096, 4096), "cooperative", (128, 64, 64), 1, 8),  # 128 tiles
        # 128x256 would leave a quarter of the SMs idle (96 tiles): 192 wide fills them.
        ((384, 8192, 8192), "cooperative", (128, 192, 64), 1, 4),  # 129 tiles
        ((320, 8192, 8192), "cooperative", (128, 192, 64), 1, 4),  # 129 tiles
        ((448, 8192, 4096), "cooperative", (128, 256, 64), 1, 4),  # 128 tiles: no need
    ],
)
def test_decode_rows_get_one_wave_of_tiles(extents, warp_specialization, tile, split_k, stages):
    """The sweep's fastest unswapped schedules of LLM decode linears (docs/schedule.md,
    "Small M"; up to M = 16 the heuristic swaps A and B unless told not to)."""
    m, n, k = extents
    problem = Problem({"m": m, "n": n, "k": k})
    params = choose_params(problem, swap_ab=False)
    assert params.warp_specialization == warp_specialization
    assert (params.tile, params.split_k, params.stages) == (tile, split_k, stages)
    assert (params.strategy, params.cluster, params.epilogue) == ("persistent", (1, 1), "smem")
    units = -(-m // tile[0]) * -(-n // tile[1]) * split_k
    assert hw.SM_COUNT // 2 < units <= hw.SM_COUNT


@pytest.mark.parametrize(
    ("extents", "picked"),
    [
        # The fastest tiles of an H100 sweep (docs/results/2026-12-06-h100-small-m-fill.md):
        # the width of least pair load, unsplit, the more tiles on a tie.
        ((8, 10240, 8192), ((64, 160, 64), 1, 6, False)),  # 64 tiles: one a pair
        ((64, 10240, 8192), ((64, 160, 64), 1, 6, False)),
        ((16, 14336, 4096), ((64, 112, 64), 1, 8, False)),  # 128 tiles: two a pair
        ((4, 14336, 4096), ((64, 112, 64), 1, 8, False)),
        ((32, 14336, 4096), ((64, 112, 64), 1, 8, False)),
        ((16, 28672, 8192), ((64, 224, 64), 1, 5, False)),
        ((32, 8192, 8192), ((64, 128, 64), 1, 8, False)),  # 64 tiles: no split
        ((64, 8192, 8192), ((64, 64, 128), 1, 6, False)),  # 64 rows: 64 wide, K 128
        # A tie with the swapped tile at M <= 16 swaps; at an equal load it splits only
        # where each slice keeps 64 K blocks (K = 28672, not 8192); too few tiles for the
        # rule swap as before, split.
        ((8, 8192, 8192), ((8, 128, 128), 1, 6, True)),
        ((16, 8192, 28672), ((16, 128, 128), 2, 6, True)),
        ((1, 4096, 4096), ((8, 128, 128), 4, 6, True)),
        ((32, 4096, 4096), ((32, 128, 128), 4, 5, True)),
        # 64 tiles take more than half the pairs: a split would not lower the load.
        ((64, 4096, 14336), ((64, 64, 128), 1, 6, False)),
        ((48, 4096, 4096), ((64, 128, 64), 4, 8, False)),  # 32 tiles: split in four
    ],
)
def test_small_m_pingpong_tiles_fill_the_sm_pairs(extents, picked):
    m, n, k = extents
    problem = Problem({"m": m, "n": n, "k": k})
    params = choose_params(problem)
    assert (params.tile, params.split_k, params.stages, params.swap_ab) == picked
    if not params.swap_ab:
        assert params.warp_specialization == "pingpong" and params.epilogue == "smem"


def test_pair_load_counts_the_busiest_pair_of_sms():
    problem = Problem({"m": 8, "n": 10240, "k": 8192})
    assert hw.TPC_COUNT == 66
    assert heuristics.pair_load(problem, (64, 160, 64)) == 160  # 64 tiles
    assert heuristics.pair_load(problem, (64, 128, 64)) == 256  # 80 tiles: 14 pairs hold two
    assert heuristics.pair_load(problem, (64, 160, 64), 2) == 160  # a split adds units only
    # The rule applies where the narrowest width outnumbers the pairs, to lone GEMMs of up
    # to 64 rows; 80 is not among the widths.
    assert heuristics.choose_pair_fill_tile(Problem({"m": 16, "n": 4096, "k": 4096})) is None
    assert heuristics.choose_pair_fill_tile(Problem({"m": 65, "n": 14336, "k": 4096})) is None
    fused = Problem({"m": 16, "n": 14336, "k": 4096}, epilogue_tiles=1)
    assert heuristics.choose_pair_fill_tile(fused) is None
    assert 80 not in heuristics.PAIR_FILL_WIDTHS
    # A [K, N] operand is loaded in 64-wide boxes along N: multiples of 64 only.
    matmul = Problem({"m": 64, "n": 15800, "k": 1000}, b_n_contiguous=True)
    assert heuristics.choose_pair_fill_tile(matmul) == (64, 128, 64)
    assert heuristics.choose_pair_fill_tile(Problem({"m": 64, "n": 15800, "k": 1000})) == (
        64,
        240,
        64,
    )
    # A given tile or split is taken as given.
    given = choose_params(problem, tile=(64, 160, 64), split_k=2)
    assert given.split_k == 2
    assert choose_params(problem, tile=(64, 128, 64)).split_k == 1  # 80 tiles: no split


def test_small_m_warp_specialization_and_tile_rules():
    decode = Problem({"m": 16, "n": 4096, "k": 4096})
    # Ping-pong up to M = 64, unless the caller chose the specialization or a 128-row tile;
    # a given 64-row tile runs under ping-pong (the cuda back end's cooperative kernels
    # need 128 rows).
    assert choose_params(Problem({"m": 65, "n": 4096, "k": 4096})).warp_specialization == (
        "cooperative"
    )
    cooperative = choose_params(decode, warp_specialization="cooperative")
    assert cooperative.tile == (128, 128, 64)  # M < 128 rows: at least 128 wide
    assert choose_params(decode, tile=(128, 64, 64)).warp_specialization == "cooperative"
    given = choose_params(decode, tile=(64, 256, 64))
    assert (given.warp_specialization, given.split_k) == ("pingpong", 4)
    # M that fills the rows takes the narrowest tile (64 wide: 64 tiles, unsplit: a split
    # would not lower the pair load), and the 64x64 tile a K block of 128 (6 stages hold
    # 96 KiB of W, 8 of 64x64x64 64 KiB); not where K holds fewer than 4 such blocks.
    full = choose_params(Problem({"m": 64, "n": 4096, "k": 4096}))
    assert (full.tile, full.stages, full.split_k) == ((64, 64, 128), 6, 1)
    short_k = choose_params(Problem({"m": 64, "n": 4096, "k": 256}))
    assert short_k.tile == (64, 64, 64)
    # Where no cooperative tile fits in one wave: ping-pong 128x128, in a 2x1 cluster
    # where the M tiles pair up.
    wide = choose_params(Problem({"m": 512, "n": 14336, "k": 4096}))
    assert (wide.tile, wide.split_k, wide.warp_specialization) == ((128, 128, 64), 1, "pingpong")
    assert (wide.cluster, wide.strategy) == ((2, 1), "persistent")
    odd = choose_params(Problem({"m": 384, "n": 14336, "k": 4096}))
    assert (odd.tile, odd.warp_specialization, odd.cluster) == ((128, 128, 64), "pingpong", (1, 1))
    # An epilogue operand keeps the cooperative rules (measured on lone GEMMs only).
    fused = choose_params(Problem({"m": 512, "n": 14336, "k": 4096}, epilogue_tiles=1))
    assert fused.warp_specialization == "cooperative"
    # 4-byte inputs (the CPU executor's tf32), and a K loop of fewer than 4 blocks, keep
    # the rules for large M.
    f32 = choose_params(Problem({"m": 16, "n": 4096, "k": 4096}, element_bytes=4))
    assert (f32.warp_specialization, f32.tile[0]) == ("cooperative", 128)
    short = choose_params(Problem({"m": 16, "n": 4096, "k": 192}))
    assert (short.warp_specialization, short.tile) == ("cooperative", (128, 128, 64))
    # An epilogue holding [M, N] tiles, and the horizontal fusion, stay at most 128 wide.
    for problem in (
        Problem({"m": 1, "n": 1024, "k": 4096}, epilogue_tiles=1),
        Problem({"m": 1, "n": 1024, "k": 4096}, b_operands=2),
    ):
        assert choose_params(problem, swap_ab=False).tile[:2] == (64, 128)
        assert choose_params(problem).tile[:2] == (8, 128)  # swapped: M rows, 128 of N


@pytest.mark.parametrize(
    ("extents", "operands", "picked"),
    [
        # 128 tiles of 128x256 fill 9 in 10 SMs in one wave: the wide tile, and the deep
        # ring of a single wave (rules 2 and 4).
        ((1024, 4096, 4096), {}, ((128, 256, 64), 4, 1, "cooperative", "m", 8, "smem")),
        ((1024, 1024, 1024), {}, ((128, 128, 64), 6, 2, "cooperative", "n", 8, "smem")),
        ((2048, 2048, 2048), {}, ((128, 256, 64), 4, 1, "cooperative", "n", 16, "smem")),
        ((8192, 14336, 4096), {}, ((128, 256, 64), 3, 1, "cooperative", "n", 16, "smem")),
        ((1024, 16384, 1024), {}, ((128, 256, 64), 3, 1, "cooperative", "m", 8, "smem")),
        (
            (1024, 14336, 4096),
            {"b_operands": 2},
            ((128, 128, 64), 3, 1, "cooperative", "m", 8, "smem"),
        ),
        (
            (1024, 4096, 14336),
            {"epilogue_tiles": 1},
            ((128, 128, 64), 6, 1, "cooperative", "m", 16, "registers"),
        ),
    ],
)
def test_large_m_picks_are_unchanged(extents, operands, picked):
    """At M >= 1024 the heuristic picks what it picked before the small-M rules."""
    m, n, k = extents
    params = choose_params(Problem({"m": m, "n": n, "k": k}, **operands))
    assert (
        params.tile,
        params.stages,
        params.split_k,
        params.warp_specialization,
        params.raster,
        params.swizzle,
        params.epilogue,
    ) == picked


def test_small_m_rules_leave_every_large_m_choice_alone(monkeypatch: pytest.MonkeyPatch):
    """With the small-M rules switched off, every choice at M >= 1024 is the same."""
    problems = [
        Problem({"m": m, "n": n, "k": k}, **operands)
        for m in (1024, 1500, 4096, 16384)
        for n in (7, 500, 4096, 14336)
        for k in (16, 1000, 4096)
        for operands in ({}, {"b_operands": 2}, {"epilogue_tiles": 1})
    ]
    keywords = ({}, {"warp_specialization": "pingpong"}, {"split_k": 2}, {"tile": (64, 64, 64)})

    def choices() -> list[str]:
        out = []
        for problem in problems:
            for given in keywords:
                try:
                    out.append(choose_params(problem, **given).format())
                except ScheduleError as error:
                    out.append(str(error))
        return out

    assert SMALL_M < 1024
    with_rules = choices()
    monkeypatch.setattr(heuristics, "SMALL_M", 0)
    assert choices() == with_rules


def test_stages_fill_shared_memory():
    params = ScheduleParams.build({"tile": (128, 128, 64)})
    problem = Problem({"m": 4096, "n": 4096, "k": 4096})
    stages = fit_stages(params, problem)
    assert stages == 6
    assert sum(params.replace(stages=stages).smem_bytes(problem).values()) <= (
        hw.MAX_DYNAMIC_SMEM_PER_BLOCK
    )
    assert sum(params.replace(stages=stages + 1).smem_bytes(problem).values()) > (
        hw.MAX_DYNAMIC_SMEM_PER_BLOCK
    )


def test_swizzle_and_split_k_rules():
    # Banded along M with 128x256 tiles: sqrt(132 * 256 / 128) = 16.2 -> 16, capped by the
    # tiles along the band; banded along N: sqrt(132 * 128 / 256) = 8.1 -> 8; the
    # horizontal fusion's two 128-row B tiles banded along N: 8 as well.
    assert choose_swizzle(1, band_rows=128, other_rows=256) == 1
    assert choose_swizzle(3, band_rows=128, other_rows=256) == 2
    assert choose_swizzle(100, band_rows=128, other_rows=256) == 16
    assert choose_swizzle(100, band_rows=256, other_rows=128) == 8
    assert choose_swizzle(100, band_rows=2 * 128, other_rows=128) == 8
    horizontal = choose_params(Problem({"m": 8192, "n": 14336, "k": 4096}, b_operands=2))
    assert (horizontal.raster, horizontal.swizzle) == ("m", 8)
    linear = choose_params(Problem({"m": 8192, "n": 14336, "k": 4096}))
    assert (linear.raster, linear.swizzle) == ("n", 16)
    assert choose_split_k(Problem({"m": 4096, "n": 4096, "k": 4096}), (128, 256, 64)) == 1
    assert choose_split_k(Problem({"m": 256, "n": 256, "k": 8192}), (128, 128, 64)) == 4
    assert choose_split_k(Problem({"m": 256, "n": 256, "k": 128}), (128, 128, 64)) == 1


def test_raster_auto_is_resolved():
    tall = choose_params(Problem({"m": 8192, "n": 1024, "k": 1024}), raster="auto")
    wide = choose_params(Problem({"m": 1024, "n": 8192, "k": 1024}), raster="auto")
    assert (tall.raster, wide.raster) == ("n", "m")


@pytest.mark.parametrize(
    "extents",
    [
        {"m": 1, "n": 1, "k": 1},
        {"m": 300, "n": 500, "k": 200},
        {"m": 1, "n": 4096, "k": 4096},
        {"b0": 8, "m": 512, "n": 512, "k": 64},
        {"m": 8192, "n": 8192, "k": 16},
        {"m": 65, "n": 7, "k": 3},
    ],
)
@pytest.mark.parametrize("b_operands", [1, 2])
def test_every_choice_passes_its_own_checks(extents, b_operands):
    problem = Problem(extents, b_operands=b_operands, output_bytes=(4, 2))
    params = choose_params(problem)
    params.check(problem)


def test_overrides_are_kept_and_the_rest_adapts():
    problem = Problem({"m": 4096, "n": 4096, "k": 4096})
    params = choose_params(problem, tile=(128, 128, 64), raster="n", swizzle=1, split_k=2)
    assert params.tile == (128, 128, 64)
    assert params.warpgroup == (64, 128)
    assert (params.raster, params.swizzle, params.split_k) == ("n", 1, 2)
    assert params.stages == 6
    pingpong = choose_params(problem, warp_specialization="pingpong")
    assert pingpong.tile[0] == 128 and pingpong.warpgroup == pingpong.tile[:2]


def test_pingpong_gets_two_m64_blocks_and_a_cluster():
    """Ping-pong: 128x128 warpgroup tiles and a 2x1 cluster where the problem allows (L2
    traffic, measured on the H200); a single M tile, a batch, split-K or a given cluster
    keep it alone, and M <= 64 keeps one m64 block."""
    big = Problem({"m": 8192, "n": 14336, "k": 4096})
    chosen = choose_params(big, warp_specialization="pingpong")
    assert (chosen.tile, chosen.warpgroup, chosen.cluster) == ((128, 128, 64), (128, 128), (2, 1))
    assert choose_params(big).cluster == (1, 1)
    assert choose_params(big, warp_specialization="pingpong", cluster=(1, 2)).cluster == (1, 2)
    one_row = choose_params(Problem({"m": 64, "n": 4096, "k": 512}), warp_specialization="pingpong")
    assert (one_row.tile[0], one_row.cluster) == (64, (1, 1))
    batched = Problem({"b0": 4, "m": 1024, "n": 1024, "k": 512})
    assert choose_params(batched, warp_specialization="pingpong").cluster == (1, 1)
    small = choose_params(Problem({"m": 256, "n": 256, "k": 8192}), warp_specialization="pingpong")
    assert small.split_k > 1 and small.cluster == (1, 1)


INVALID_OVERRIDES = [
    (
        {"tile": (256, 256, 64), "stages": 4},
        r"tile 256x256x64 with 4 stages needs \d+ bytes of shared memory",
    ),
    ({"tile": (128, 128, 40)}, r"not divisible by the instruction shape m64n128k16"),
    ({"split_k": 0}, r"split_k = 0: must be at least 1"),
    ({"registers": (40, 300)}, r"consumer count 300 must be a multiple of 8 from 24 to 256"),
    ({"cluster": (16, 1)}, r"cluster 16x1 has 16 CTAs; the portable limit is 8"),
    ({"swizzle": -1}, r"swizzle = -1: the group size must be at least 1"),
    ({"swizzle": 200}, r"swizzle = 200: the group size must be at most 132"),
    ({"stages": 1}, r"stages = 1: the TMA/wgmma pipeline needs at least 2 stages"),
    ({"raster": "zigzag"}, r"raster='zigzag': expected one of \"m\", \"n\", \"auto\""),
    ({"strategy": "stream-j"}, r"strategy='stream-j': expected one of"),
    ({"epilogue": "global"}, r"epilogue='global': expected one of \"registers\", \"smem\""),
    ({"tile": (128, 128)}, r"tile=\(128, 128\): expected \(m, n, k\), 3 integers"),
    ({"registers": 232}, r"registers=232: expected \(producer, consumer\)"),
    ({"stages": 2.5}, r"stages=2.5: expected an integer"),
    ({"stages": True}, r"stages=True: expected an integer"),
    ({"tiles": (128, 128, 64)}, r"unknown schedule parameter 'tiles'"),
    ({"tile": (0, 0, 0)}, r"tile=\(0, 0, 0\): every extent must be positive"),
    ({"tile": (128, 128, 0)}, r"tile=\(128, 128, 0\): every extent must be positive"),
    ({"cluster": (1, -2)}, r"cluster=\(1, -2\): every extent must be positive"),
]


@pytest.mark.parametrize(("overrides", "message"), INVALID_OVERRIDES)
def test_invalid_overrides_are_rejected(overrides, message):
    with pytest.raises(ScheduleError, match=message):
        choose_params(Problem({"m": 4096, "n": 4096, "k": 4096}), **overrides)


def test_numpy_integers_are_integers():
    """Keywords take numpy's integers as Fusion.input's shapes do."""
    given = choose_params(
        Problem({"m": 4096, "n": 4096, "k": 4096}),
        tile=(np.int64(128), 128, np.int32(64)),
        stages=np.int32(4),
    )
    assert (given.tile, given.stages) == ((128, 128, 64), 4)
    assert all(type(extent) is int for extent in given.tile)


@pytest.mark.parametrize("strategy", ["stream-k", "hybrid-stream-k"])
def test_a_stream_k_strategy_alone_gets_a_tile_whose_fixup_fits(strategy: str):
    """silu(A W1^T) * (A W2^T) at 128x128 leaves no registers for stream-K's fixup sums:
    with only the strategy given, the tile narrows (as split-K's does), not refused."""
    f = mmcomp.Fusion("gated")
    a = f.input("a", [4096, 4096], "bf16")
    w1 = f.input("w1", [4096, 4096], "bf16")
    w2 = f.input("w2", [4096, 4096], "bf16")
    f.output(f.cast(f.silu(f.linear(a, w1)) * f.linear(a, w2), "bf16"))
    kernel = mmcomp.compile(f, strategy=strategy)
    assert kernel.params.strategy == strategy
    assert kernel.params.tile == (128, 64, 64)
    if kernel.report is not None:
        assert kernel.report.spills == 0
    with pytest.raises(ScheduleError, match="a consumer thread needs about"):
        mmcomp.compile(f, strategy=strategy, tile=(128, 128, 64))


WRITTEN = [
    {"warp_specialization": "pingpong"},
    {"warp_specialization": "pingpong", "epilogue": "registers"},
    {"tile": (128, 256, 64)},
    {"raster": "n", "swizzle": 3, "stages": 4},
]


@pytest.mark.parametrize("written", WRITTEN)
@pytest.mark.parametrize("shape", [(300, 500, 200), (1000, 1000, 512), (4096, 14336, 5120)])
def test_written_params_are_chosen_around_like_compile_keywords(written, shape):
    """A #sched.params that writes some keys gets the params `mmcomp.compile` would give for
    the same keywords: the written keys kept, the others chosen for the problem."""
    module = propagate(linear_fusion(*shape))
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    text = f"#sched.params<{ScheduleParams.partial(written).format()}>"
    attr = Parser(context(), text).parse_attribute()
    assert isinstance(attr, ScheduleParamsAttr)
    function.attributes[PARAMS_ATTR] = attr
    chosen = choose_schedule(function, {})
    assert chosen == choose_params(problem_of(function), **written)
    assert chosen.written is None
    assert function.attributes[PARAMS_ATTR] == ScheduleParamsAttr(chosen)
    for key, value in written.items():
        assert getattr(chosen, key) == value


# mmcomp.compile


def linear_fusion(m: int = 300, n: int = 500, k: int = 200) -> mmcomp.Fusion:
    f = mmcomp.Fusion("linear")
    a = f.input("a", (m, k), "bf16")
    w = f.input("w", (n, k), "bf16")
    f.output(f.linear(a, w))
    return f


def random_bf16(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)


def test_compile_keywords_are_the_public_parameter_names():
    assert PARAMETERS == (
        "tile",
        "stages",
        "cluster",
        "raster",
        "swizzle",
        "strategy",
        "split_k",
        "warp_specialization",
        "registers",
        "epilogue",
        "epilogue_subtile",
        "swap_ab",
    )


def test_compile_rejects_an_unknown_keyword_by_name():
    with pytest.raises(ScheduleError, match=r"unknown schedule parameter 'tile_m'"):
        mmcomp.compile(linear_fusion(), backend="interp", tile_m=128)


def test_compile_rejects_invalid_parameters():
    with pytest.raises(ScheduleError, match=r"swizzle = 0: the group size must be at least 1"):
        mmcomp.compile(linear_fusion(), backend="interp", tile=(128, 128, 64), swizzle=0)


@pytest.mark.parametrize("backend", ["interp", "cuda"])
def test_split_k_past_the_k_blocks_is_clamped_and_reported(backend: str):
    """split_k = 9 with 4 K blocks of 64 (k = 200) runs 4 slices; kernel.params says so."""
    kernel = mmcomp.compile(linear_fusion(), backend=backend, tile=(128, 128, 64), split_k=9)
    assert kernel.params.split_k == 4
    assert "split_k = 4" in kernel.ir("choose-schedule")


def test_split_k_written_past_the_k_blocks_is_clamped():
    assert choose_params(Problem({"m": 64, "n": 64, "k": 128}), split_k=3).split_k == 2
    assert choose_params(Problem({"m": 64, "n": 64, "k": 128}), split_k=2).split_k == 2


def test_compile_defaults_to_cuda_and_compiles_without_a_gpu():
    from mmcomp.runtime import gpu_unavailable_reason

    kernel = mmcomp.compile(linear_fusion())
    assert kernel.backend == "cuda"
    assert ".target sm_90a" in kernel.ptx and "wgmma.mma_async" in kernel.ptx
    assert kernel.report.spills == 0
    if gpu_unavailable_reason() is not None:
        with pytest.raises(mmcomp.LaunchError, match=r"cannot run here"):
            kernel(*(np.ones(v.shape, v.numpy_dtype) for v in kernel.fusion.inputs))
    with pytest.raises(AttributeError, match=r"the 'interp' back end has no PTX"):
        _ = mmcomp.compile(linear_fusion(), backend="interp").ptx
    with pytest.raises(ValueError, match=r"unknown backend 'tpu'"):
        mmcomp.compile(linear_fusion(), backend="tpu")


def test_interp_kernel_matches_the_reference_and_exposes_params_and_stage_ir():
    f = linear_fusion()
    kernel = mmcomp.compile(f, backend="interp", tile=(128, 128, 64), swizzle=4, split_k=2)
    assert isinstance(kernel, Kernel)
    assert kernel.params.tile == (128, 128, 64)
    assert (kernel.params.swizzle, kernel.params.split_k) == (4, 2)
    names = [stage.name for stage in PIPELINE]
    assert list(kernel.stage_ir) == ["fusion", *names[: names.index("materialize-schedule") + 1]]
    assert "sched.swizzle" in kernel.ir("tile-merge")
    assert "sched.params = #sched.params<tile = 128x128x64" in kernel.ir("choose-schedule")
    assert "gpu.block_id" in kernel.ir()
    with pytest.raises(KeyError, match=r"no stage 'lower'; the stages are fusion, "):
        kernel.ir("lower")
    rng = np.random.default_rng()
    a, w = random_bf16(rng, (300, 200)), random_bf16(rng, (500, 200))
    (out,) = kernel(a, w)
    (expected,) = mmcomp.reference(f, a, w)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    (by_name,) = kernel(w=w, a=a)
    np.testing.assert_array_equal(by_name, out)


def test_kernel_input_errors_name_the_input():
    kernel = mmcomp.compile(linear_fusion(), backend="interp")
    rng = np.random.default_rng()
    a, w = random_bf16(rng, (300, 200)), random_bf16(rng, (500, 200))
    with pytest.raises(
        FusionError, match=r"input 'w': expected shape \[500, 200\], found \[200, 500\]"
    ):
        kernel(a, w.T.copy())
    with pytest.raises(FusionError, match=r"input 'a': expected dtype bfloat16, found float32"):
        kernel(a.astype(np.float32), w)
    with pytest.raises(FusionError, match=r"missing inputs \['w'\]"):
        kernel(a)
    with pytest.raises(FusionError, match=r"no input named 'b'"):
        kernel(a, w, b=w)
    with pytest.raises(FusionError, match=r"input 'a' given both by position and by name"):
        kernel(a, a=a, w=w)


class FakeDeviceArray:
    """Stands in for a cupy array: shape, a numpy dtype and `__cuda_array_interface__`."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype):
        self.shape = shape
        self.dtype = dtype
        self.__cuda_array_interface__ = {"shape": shape, "typestr": dtype.str, "data": (0, False)}


def test_cuda_kernel_checks_device_arrays_before_launch():
    kernel = mmcomp.compile(linear_fusion())
    bf16 = np.dtype(ml_dtypes.bfloat16)
    good_a, good_w = FakeDeviceArray((300, 200), bf16), FakeDeviceArray((500, 200), bf16)
    assert kernel.bind([good_a, good_w], {}) == [good_a, good_w]
    with pytest.raises(FusionError, match=r"input 'w': expected shape \[500, 200\], found"):
        kernel.bind([good_a, FakeDeviceArray((200, 500), bf16)], {})
    with pytest.raises(FusionError, match=r"input 'a': expected dtype bfloat16, found float16"):
        kernel.bind([FakeDeviceArray((300, 200), np.dtype(np.float16)), good_w], {})
    interp = mmcomp.compile(linear_fusion(), backend="interp")
    with pytest.raises(FusionError, match=r"input 'a': expected a numpy array, found"):
        interp.bind([good_a, good_w], {})


def test_cuda_refuses_f32_operands_at_compile_time():
    f = mmcomp.Fusion("f32")
    a = f.input("a", [256, 128], "f32")
    w = f.input("w", [256, 128], "f32")
    f.output(f.linear(a, w))
    message = (
        r"choose-schedule: @f32: fusion.mma operand 'a' \(%a: tensor<256x128xf32>\): the cuda "
        r"back end's wgmma takes bf16, f16, f8e4m3 or f8e5m2 \(tf32 is not built\), found f32"
    )
    with pytest.raises(FusionError, match=message):
        mmcomp.compile(f)
    assert mmcomp.compile(f, backend="interp").backend == "interp"


def test_cuda_epilogue_takes_scalar_constants():
    f = mmcomp.Fusion("scaled")
    a = f.input("a", [256, 128], "bf16")
    w = f.input("w", [256, 128], "bf16")
    f.output(f.cast(1.0 - f.relu(f.linear(a, w)) * 0.125, "bf16"))
    kernel = mmcomp.compile(f)
    assert kernel.report.spills == 0
    assert "0f3E000000" in kernel.ptx  # 0.125 as an f32 immediate


HEAVY_EPILOGUES = ["silu_mul", "horizontal", "row_ops", "gelu_bias"]


@pytest.mark.parametrize("family", HEAVY_EPILOGUES)
@pytest.mark.parametrize("warp_specialization", ["pingpong", "cooperative"])
def test_heavy_epilogues_get_a_tile_that_assembles_without_spills(
    family: str, warp_specialization: str
):
    """With the tile left to the heuristic, ptxas assembles every epilogue with 0 spills."""
    import cases

    fusion = getattr(cases, family)(4096, 14336, 5120)
    kernel = mmcomp.compile(fusion, strategy="persistent", warp_specialization=warp_specialization)
    assert kernel.report.spills == 0
    assert kernel.params.fits_registers(problem_of(fusion_function(kernel)))


def fusion_function(kernel: Kernel) -> FuncOp:
    """The fusion function after choose-schedule, parsed from the kernel's stage IR."""
    module = Parser(context(), kernel.ir("choose-schedule")).parse_module()
    return next(op for op in module.ops if isinstance(op, FuncOp))


def test_a_pinned_tile_whose_epilogue_would_spill_is_refused_with_tiles_that_fit():
    """With the whole-tile epilogue pinned (epilogue_subtile = 0), the refusal names the
    tiles that fit and the subtile that would (which the heuristic takes when the subtile
    is left to it: tests/unit/test_epilogue_subtile.py)."""
    import cases

    fusion = cases.silu_mul(4096, 14336, 5120)
    message = (
        r"tile 128x128x64 under pingpong: a consumer thread needs about 296 registers "
        r"\(accumulators 128, \[M, N\] operands 128, addresses and indices 40\), more than "
        r"its 232 \(registers 40/232\), so ptxas would spill; tiles that fit: "
        r"tile=\(64, 192, 64\) or \(64, 128, 64\) or \(128, 64, 64\), or "
        r"epilogue_subtile = 64 with this tile"
    )
    with pytest.raises(ScheduleError, match=message):
        mmcomp.compile(
            fusion, warp_specialization="pingpong", tile=(128, 128, 64), epilogue_subtile=0
        )


@pytest.mark.parametrize(
    ("family", "tile", "warp_specialization"),
    [
        ("silu_mul", (64, 192, 64), "pingpong"),
        ("horizontal", (64, 192, 64), "pingpong"),
        ("row_ops", (64, 128, 64), "pingpong"),
        ("gelu_bias", (128, 256, 64), "cooperative"),
    ],
)
def test_the_register_rule_admits_the_widest_tiles_that_ptxas_assembles(
    family: str, tile: tuple[int, int, int], warp_specialization: str
):
    """At the rule's edge (one N step narrower than what it refuses), 0 spills."""
    import cases

    fusion = getattr(cases, family)(4096, 14336, 5120)
    kernel = mmcomp.compile(fusion, warp_specialization=warp_specialization, tile=tile)
    assert kernel.report.spills == 0


@pytest.mark.parametrize("epilogue", ["smem", "registers"])
@pytest.mark.parametrize("warp_specialization", ["cooperative", "pingpong", "none"])
def test_split_k_of_a_horizontal_fusion_gets_a_tile_that_assembles(
    epilogue: str, warp_specialization: str
):
    """Small horizontal fusions split K; beside the shared-memory epilogue (or without
    specialization) the partials of two accumulators need a narrower tile: 0 spills."""
    import cases

    for shape in ((64, 4096, 512), (256, 256, 8192)):
        kernel = mmcomp.compile(
            cases.horizontal(*shape),
            warp_specialization=warp_specialization,
            strategy="one-tile-per-cta",
            epilogue=epilogue,
        )
        assert kernel.params.split_k > 1
        assert kernel.report.spills == 0


def test_a_division_by_a_row_gets_a_tile_that_assembles():
    """`A B / bias` (fuzzer case seed 1 #243): at 128x256 the reciprocals of the row spill
    beside 128 accumulators; the model counts them and takes 128x128."""
    f = mmcomp.Fusion("row_division")
    a = f.input("a", [8191, 264], "bf16")
    b = f.input("b", [264, 1024], "bf16")
    bias = f.input("bias", [1024], "bf16")
    f.output(f.cast(f.matmul(a, b) / f.cast(bias, "f32"), "bf16"))
    kernel = mmcomp.compile(f)
    assert kernel.params.tile == (128, 128, 64)
    assert kernel.report.spills == 0
    assert problem_of(fusion_function(kernel)).row_divisions == 1


SMALL_M_GPU_CASES = [
    ("linear", (1, 4096, 4096)),
    ("linear", (16, 14336, 4096)),
    ("linear", (64, 4096, 14336)),
    ("linear", (128, 14336, 4096)),
    ("linear", (256, 14336, 4096)),
    ("linear", (512, 4096, 4096)),
    ("linear", (1, 1000, 1000)),
    ("linear", (7, 3000, 5000)),
    ("linear", (32, 14336, 4096)),
    ("linear_bias", (25, 1000, 3000)),
    ("linear", (33, 1000, 1001)),
    ("linear", (65, 1500, 2500)),
    ("linear_bias", (7, 1000, 3000)),
    ("matmul", (33, 1000, 2000)),
    # The pair-fill widths: 160, 176, 144 (ragged N), 208 with a bias, 224 (ragged K), and
    # a [K, N] operand's multiple of 64 (128).
    ("linear", (8, 10240, 8192)),
    ("linear", (16, 11008, 4096)),
    ("linear", (3, 9500, 1000)),
    ("linear_bias", (40, 13700, 1000)),
    ("linear", (5, 28672, 1000)),
    ("matmul", (64, 15800, 1000)),
]
"""Decode rows and ragged small M (N and K not multiples of the tile; K = 1001 through the
staging copy) with the heuristic's own schedule."""


@pytest.mark.gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("family", "shape"),
    SMALL_M_GPU_CASES,
    ids=lambda value: "x".join(map(str, value)) if isinstance(value, tuple) else value,
)
def test_small_m_picks_run_right_on_the_gpu(family: str, shape: tuple[int, int, int]):
    """The heuristic's small-M schedules through `mmcomp.compile(f)(...)` against a float64
    numpy reference."""
    m = shape[0]
    kernel = run_the_pick(family, shape)
    if kernel.params.swap_ab:  # up to SWAP_AB_MAX_M rows, cooperative
        assert m <= heuristics.SWAP_AB_MAX_M and kernel.params.warp_specialization == "cooperative"
    else:
        assert kernel.params.warp_specialization == ("pingpong" if m <= 64 else "cooperative")


def run_the_pick(family: str, shape: tuple[int, int, int]) -> Kernel:
    """Compile `family` at `shape` with the heuristic's schedule, run it on fresh inputs and
    check it against a float64 numpy reference; the kernel."""
    import cases

    m, n, k = shape
    rng = np.random.default_rng(m * 7 + n + k)

    def rand(*dims: int) -> np.ndarray:
        return rng.standard_normal(dims, dtype=np.float32).astype(ml_dtypes.bfloat16)

    a = rand(m, k)
    if family == "matmul":
        fusion, operand = cases.matmul(m, n, k), rand(k, n)
        want = a.astype(np.float64) @ operand.astype(np.float64)
        inputs = [a, operand]
    else:
        operand = rand(n, k)
        want = a.astype(np.float64) @ operand.astype(np.float64).T
        inputs = [a, operand]
        fusion = cases.linear(m, n, k, bias=family == "linear_bias")
        if family == "linear_bias":
            bias = rand(n)
            want += bias.astype(np.float64)
            inputs.append(bias)
    kernel = mmcomp.compile(fusion)
    (got,) = kernel(*inputs)
    assert got.shape == (m, n)
    result = got.astype(np.float64)
    assert np.isfinite(result).all(), "outputs left unwritten"
    error = float(np.abs(result - want).max() / np.abs(want).max())
    assert error < 1e-2, f"{kernel.params.format()}: relative error {error:.3g}"
    return kernel


FULL_WAVE_CASES = [
    ("linear", (2048, 2048, 2048)),
    ("linear", (1000, 4000, 1000)),
    ("matmul", (1024, 4000, 3000)),
    ("linear_bias", (2000, 2000, 1000)),
]
"""Shapes of 119 to 131 tiles of 128x256 (ragged M and N among them): the full-wave rule."""


@pytest.mark.parametrize(("family", "shape"), FULL_WAVE_CASES)
def test_the_widest_tile_takes_a_nearly_full_wave(family: str, shape: tuple[int, int, int]):
    """128x256 where its tiles fill 9 in 10 SMs in one wave, with the one-wave ring."""
    m, n, k = shape
    problem = Problem({"m": m, "n": n, "k": k})
    assert heuristics.FULL_WAVE_TILES <= heuristics.tile_count(problem, (128, 256, 64)) <= 132
    params = choose_params(problem)
    assert (params.tile, params.stages, params.split_k) == ((128, 256, 64), 4, 1)


@pytest.mark.gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("family", "shape"),
    FULL_WAVE_CASES,
    ids=lambda value: "x".join(map(str, value)) if isinstance(value, tuple) else value,
)
def test_full_wave_picks_run_right_on_the_gpu(family: str, shape: tuple[int, int, int]):
    """The full-wave rule's 128x256 kernels against a float64 numpy reference."""
    kernel = run_the_pick(family, shape)
    assert kernel.params.tile == (128, 256, 64)


@pytest.mark.parametrize(
    ("shape", "hybrid"),
    [
        ((4352, 4096, 14336), True),  # 544 tiles: 4 waves and 16 tail tiles in 8 segments
        ((8192, 14336, 4096), True),  # 3584 tiles: 27 waves and 20 tail tiles in 6
        ((8192, 8192, 8192), False),  # modelled 2.1%, measured level
        ((4096, 4096, 4096), False),  # a tail of 116 tiles: S = 1
        ((256, 14336, 4096), False),  # no full wave
        ((2048, 2048, 2048), False),
    ],
)
def test_the_hybrid_stream_k_runs_where_the_tail_wave_costs(
    shape: tuple[int, int, int], hybrid: bool
) -> None:
    m, n, k = shape
    problem = Problem({"m": m, "n": n, "k": k})
    params = choose_params(problem)
    assert (params.strategy == "hybrid-stream-k") is hybrid, params.format()
    assert params.split_k == 1
    assert (heuristics.hybrid_gain(problem, params.tile) >= heuristics.HYBRID_MIN_GAIN) is hybrid


def test_the_hybrid_rule_leaves_given_and_dynamic_schedules_alone() -> None:
    problem = Problem({"m": 4352, "n": 4096, "k": 14336})
    assert choose_params(problem, strategy="persistent").strategy == "persistent"
    assert choose_params(problem, split_k=2).strategy == "persistent"
    assert choose_params(problem, warp_specialization="pingpong").strategy == "persistent"
    dynamic = Problem({"m": DYNAMIC_INDEX, "n": 4096, "k": 14336})
    assert choose_params(dynamic, schedule_m=4352).strategy == "persistent"
    # 40000 K blocks a tile: the hybrid's iterations x 132 CTAs pass 32 bits, so it is not
    # picked (a pinned hybrid is refused with the reason)
    deep = Problem({"m": 4352, "n": 4096, "k": 64 * 40000})
    assert choose_params(deep).strategy == "persistent"
    with pytest.raises(ScheduleError, match="32-bit iteration arithmetic"):
        choose_params(deep, strategy="hybrid-stream-k")


def test_a_k_by_n_operand_keeps_the_pair_fill_to_multiples_of_64():
    """A [K, N] B operand (N contiguous) is seen by the problem, and its pair-fill tile is
    a multiple of 64 wide (a [N, K] one takes 240 at this shape)."""
    import cases

    kernel = mmcomp.compile(cases.matmul(64, 15800, 1000))
    assert problem_of(fusion_function(kernel)).b_n_contiguous
    assert kernel.params.tile == (64, 128, 64) and kernel.report.spills == 0
    linear = mmcomp.compile(cases.linear(64, 15800, 1000))
    assert not problem_of(fusion_function(linear)).b_n_contiguous
    assert linear.params.tile == (64, 240, 64) and linear.report.spills == 0
