"""Arithmetic model of the hybrid stream-K's tail: the contiguous split against the
segment-major one, at the heuristic's 128x256 tile order on 132 SMs.

    python tools/stream_k_model.py [--shapes 8192x4096x14336 ...] [--sms 132]

For each M x N x K it prints the tiles and waves, then for the contiguous split of the
last full wave and the partial one (each CTA 1 + R / P tiles of K blocks) and for the
segment-major split of the partial wave alone
(mmcomp.lowering.materialize_schedule.stream_k): the split tiles and segments per tile,
the tail's length in tile times, and how many distinct A and W blocks (panel, K block) the
concurrent CTAs read at one K step in the middle of the tail, beside a data-parallel
wave's: the fewer, the more of them L2 serves to several CTAs at once. The tile order is
the heuristic's (raster and swizzle, `choose_params`), one K block a step.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmcomp.analysis.schedule_plan import tail_segments  # noqa: E402
from mmcomp.dialects.sched import Problem  # noqa: E402
from mmcomp.schedule.heuristics import choose_params  # noqa: E402

SHAPES = ("8192x14336x4096", "8192x4096x14336", "4096x4096x4096", "8192x8192x8192")
"""The shapes modelled by default."""


class Order:
    """The tile order of a raster and swizzle: tile index to (M tile, N tile)."""

    def __init__(self, tiles_m: int, tiles_n: int, raster: str, swizzle: int):
        self.tiles_m = tiles_m
        self.tiles_n = tiles_n
        self.raster = raster
        """The major axis: m or n."""
        self.swizzle = swizzle
        """Tiles per group along the minor axis."""

    def coordinates(self, tile: int) -> tuple[int, int]:
        """(M tile, N tile) of `tile`."""
        if self.raster == "n":
            group, offset = divmod(tile, self.swizzle * self.tiles_n)
            return group * self.swizzle + offset % self.swizzle, offset // self.swizzle
        group, offset = divmod(tile, self.swizzle * self.tiles_m)
        return offset // self.swizzle, group * self.swizzle + offset % self.swizzle

    def distinct_blocks(self, work: Iterable[tuple[int, int]]) -> int:
        """Distinct A (M panel, K block) and W (N panel, K block) among (tile, K block)s."""
        a: set[tuple[int, int]] = set()
        w: set[tuple[int, int]] = set()
        for tile, k_block in work:
            tile_m, tile_n = self.coordinates(tile)
            a.add((tile_m, k_block))
            w.add((tile_n, k_block))
        return len(a) + len(w)


def contiguous(tiles: int, grid: int, k_blocks: int, order: Order) -> str:
    """The contiguous split of the last full wave and the partial one."""
    first = (max(tiles // grid, 1) - 1) * grid
    iterations = (tiles - first) * k_blocks
    ranges = [(c * iterations // grid, (c + 1) * iterations // grid) for c in range(grid)]
    segments: dict[int, int] = {}
    for start, end in ranges:
        for tile in range(start // k_blocks, -(-end // k_blocks)):
            segments[tile] = segments.get(tile, 0) + 1
    split = sum(1 for count in segments.values() if count > 1)
    step = iterations // grid // 2
    work = [
        (first + (start + step) // k_blocks, (start + step) % k_blocks)
        for start, end in ranges
        if start + step < end
    ]
    return (
        f"  contiguous: {tiles - first} tiles over {grid} CTAs ({(tiles - first) / grid:.3f} "
        f"tile times), {split} split, at most {max(segments.values())} segments a tile; "
        f"{order.distinct_blocks(work)} distinct blocks of {2 * len(work)} reads a step"
    )


def segment_major(tiles: int, grid: int, k_blocks: int, order: Order) -> str:
    """The segment-major split of the partial wave (the hybrid's)."""
    waves, tail = divmod(tiles, grid)
    segments = tail_segments(tail, grid, k_blocks)
    units = tail * segments
    rounds = -(-units // grid)
    work: list[tuple[int, int]] = []
    for unit in range(min(units, grid)):
        tile, segment = unit % tail, unit // tail
        lo, hi = segment * k_blocks // segments, (segment + 1) * k_blocks // segments
        step = (hi - lo) // 2
        work.append((waves * grid + tile, lo + step))
    distinct = order.distinct_blocks(work) if work else 0
    return (
        f"  segment-major: {tail} tiles x {segments} segments, {rounds} round(s) "
        f"({rounds / segments if tail else 0:.3f} tile times); "
        f"{distinct} distinct blocks of {2 * len(work)} reads a step"
    )


def model(shape: str, grid: int) -> list[str]:
    """The report lines of one M x N x K."""
    m, n, k = (int(part) for part in shape.split("x"))
    params = choose_params(Problem({"m": m, "n": n, "k": k}))
    tile_m, tile_n, tile_k = params.tile
    order = Order(-(-m // tile_m), -(-n // tile_n), params.raster, params.swizzle)
    tiles, k_blocks = order.tiles_m * order.tiles_n, -(-k // tile_k)
    wave = [(c, 0) for c in range(min(grid, tiles))]
    return [
        f"{shape}: {tile_m}x{tile_n}x{tile_k}, raster {params.raster} swizzle "
        f"{params.swizzle}: {tiles} tiles, {tiles / grid:.2f} waves, {k_blocks} K blocks a "
        f"tile; a data-parallel wave reads {order.distinct_blocks(wave)} distinct blocks of "
        f"{2 * len(wave)} a step, takes {-(-tiles // grid)} tile times in all",
        contiguous(tiles, grid, k_blocks, order),
        segment_major(tiles, grid, k_blocks, order),
    ]


def main() -> None:
    """Print the model of each shape."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES))
    parser.add_argument("--sms", type=int, default=132)
    args = parser.parse_args()
    for shape in args.shapes:
        print("\n".join(model(shape, args.sms)))


if __name__ == "__main__":
    main()
