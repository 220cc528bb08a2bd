"""Time one problem under a grid of schedules, side by side with torch (tuning aid).

    python tools/sweep.py linear 8192 14336 4096 --tile 128 256 64 --epilogue smem \
        --raster m n --swizzle 1 2 4 8 16 --stages 3 4

Every combination of the listed values is compiled, checked against torch and timed with
tools/bench.py's method; torch is timed before and after, so its spread is visible.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import Problem, median_ms, rotating_torch, time_mmcomp  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Sweep the schedules given on the command line; print TFLOP/s for each."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("family", choices=("linear", "matmul", "gelu_bias", "horizontal"))
    parser.add_argument("m", type=int)
    parser.add_argument("n", type=int)
    parser.add_argument("k", type=int)
    parser.add_argument("--tile", type=int, nargs=3, default=(128, 256, 64))
    parser.add_argument("--warp-specialization", default="cooperative")
    parser.add_argument("--cluster", type=int, nargs=2, default=(1, 1))
    parser.add_argument("--epilogue", nargs="+", default=["smem"])
    parser.add_argument("--raster", nargs="+", default=["n"])
    parser.add_argument("--swizzle", type=int, nargs="+", default=[8])
    parser.add_argument("--stages", type=int, nargs="+", default=[0], help="0: heuristic")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)

    problem = Problem(
        f"{args.family} {args.m}x{args.n}x{args.k}", args.m, args.n, args.k, args.family
    )
    sets, run_torch = rotating_torch(problem)

    def tflops(ms: float) -> float:
        return problem.flops / ms / 1e9

    print(f"{problem.name}: torch {tflops(median_ms(run_torch, args.repeat)):.0f} TFLOP/s")
    grid = itertools.product(args.epilogue, args.raster, args.swizzle, args.stages)
    for epilogue, raster, swizzle, stages in grid:
        params: dict[str, Any] = {
            "tile": tuple(args.tile),
            "warp_specialization": args.warp_specialization,
            "epilogue": epilogue,
            "raster": raster,
            "swizzle": swizzle,
            "cluster": tuple(args.cluster),
        }
        if stages:
            params["stages"] = stages
        try:
            figure = f"{tflops(time_mmcomp(problem, sets, params, args.repeat)):.0f} TFLOP/s"
        except Exception as error:  # noqa: BLE001 - report and go on to the next schedule
            figure = f"{type(error).__name__}: {error}"[:120]
        print(f"  {epilogue} raster {raster} swizzle {swizzle} stages {stages or 'auto'}: {figure}")
    print(f"{problem.name}: torch {tflops(median_ms(run_torch, args.repeat)):.0f} TFLOP/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
