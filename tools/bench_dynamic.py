"""Time a dynamic-M kernel against a static kernel compiled for the same M and schedule.

    python tools/bench_dynamic.py [--ms 128,4096,8192] [--n 14336] [--k 4096] [--rounds 5]
    python tools/bench.py --dynamic [--rounds 5] [--out FILE]     # the same, the defaults

One `mmcomp.compile` of the bf16 linear A[M, K] W[N, K]^T with a dynamic M (a
BucketedKernel) gives, for each M, the kernel of M's bucket and its schedule; the static
fusion at that exact M is compiled with that schedule. Both are bound to the same rotating
inputs and timed interleaved (tools/bench.py's `median_ms`, alternating for `--rounds`
rounds in one process); the table gives the median speed ratio static time / dynamic time
and its spread. The outputs are checked against torch first.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402

import mmcomp  # noqa: E402
from mmcomp.pipeline import BucketedKernel  # noqa: E402
from mmcomp.schedule.heuristics import PARAMETERS  # noqa: E402


def linear(m: int | str, n: int, k: int) -> mmcomp.Fusion:
    """The bf16 linear of the suite, with M an integer or a dynamic extent's name."""
    f = mmcomp.Fusion("linear")
    a = f.input("a", (m, k), "bf16")
    w = f.input("w", (n, k), "bf16")
    f.output(f.cast(f.linear(a, w), "bf16"))
    return f


def row(dynamic: Any, m: int, n: int, k: int, rounds: int, repeat: int) -> dict[str, Any]:
    """The interleaved ratios of one M."""
    import torch  # pyright: ignore[reportMissingImports]

    problem = bench.Problem(f"{m}x{n}x{k}", m, n, k, "linear")
    sets, _ = bench.rotating_torch(problem)
    bucket = dynamic.kernel_for(m)
    chosen = {key: getattr(bucket.params, key) for key in PARAMETERS}
    static = mmcomp.compile(linear(m, n, k), **chosen)
    if static.params != bucket.params:
        raise ValueError(f"schedules differ: {static.params.format()} vs {bucket.params.format()}")
    names = ["a", "w"]
    dynamic_run, dynamic_out = bench.rotating_launch(
        bucket.device_kernel.specialized({"m": m}), names, sets
    )
    static_run, static_out = bench.rotating_launch(static.device_kernel, names, sets)
    for run in (dynamic_run, static_run):
        run()
    torch.cuda.synchronize()
    bench.check_against_torch(problem, sets[0], dynamic_out)
    bench.check_against_torch(problem, sets[0], static_out)
    times = bench.timed_in_turns({"static": static_run, "dynamic": dynamic_run}, rounds, repeat)
    ratios = [s / d for s, d in zip(times["static"], times["dynamic"], strict=True)]
    return {
        "ratios": ratios,
        "static_ms": statistics.median(times["static"]),
        "dynamic_ms": statistics.median(times["dynamic"]),
        "schedule": bucket.params.format(),
    }


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, time every M, print (and write) the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--ms", default="128,4096,8192")
    parser.add_argument("--n", type=int, default=14336)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    dynamic = mmcomp.compile(linear("m", args.n, args.k))
    assert isinstance(dynamic, BucketedKernel)
    lines = [
        f"bench_dynamic {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"N = {args.n}, K = {args.k}, {args.rounds} interleaved rounds; "
        "speed = static time / dynamic time",
        "",
        "| M | static ms | dynamic ms | dynamic speed / static (median) | spread (min-max) |",
        "| --- | --- | --- | --- | --- |",
    ]
    schedules: list[str] = []
    for m in (int(text) for text in args.ms.split(",")):
        result = row(dynamic, m, args.n, args.k, args.rounds, args.repeat)
        ratios = result["ratios"]
        line = (
            f"| {m} | {result['static_ms']:.4f} | {result['dynamic_ms']:.4f} | "
            f"{statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |"
        )
        print(line, flush=True)
        lines.append(line)
        schedules.append(f"- M = {m}: {result['schedule']}")
    built = len(dynamic.kernels)
    text = "\n".join([*lines, "", f"Kernels built for the dynamic fusion: {built}", *schedules])
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
