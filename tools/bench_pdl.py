"""The programmatic dependent launch's share of a kernel's time: one build, two launches.

    python tools/bench_pdl.py [--rows decode,large] [--rounds 7] [--repeat 50]

For each linear row of tools/bench.py (ROWS), the heuristic's kernel is built once and
launched two ways over the same rotating inputs: as the plan says (with a programmatic
dependency on the previous grid: its prologue overlaps that grid's tail) and in plain
stream order (the same cubin, `LaunchPlan.programmatic` off, so its `griddepcontrol.wait`
returns at once). The two are timed in turns, round after round, the order alternating,
with bench.py's `median_ms` (batches of back-to-back launches between CUDA events). A row
reports the median of the per-round ratios plain time / programmatic time (above 1: the
dependency saves time) and their spread, and both outputs are checked against torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import (  # noqa: E402
    ROWS,
    check_against_torch,
    fusion_of,
    median_ms,
    rotating_launch,
    rotating_torch,
)


def main(argv: list[str] | None = None) -> int:
    """Print one row per problem."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", default="decode,large")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args(argv)
    from mmcomp.backend import build_cuda_kernel
    from mmcomp.pipeline import run_pipeline

    print("| problem | programmatic us | plain us | plain / programmatic (spread) |")
    print("| --- | --- | --- | --- |")
    for group in args.rows.split(","):
        for problem in ROWS[group]:
            fusion = fusion_of(problem)
            module, _, _ = run_pipeline(fusion.module, {})
            kernel = build_cuda_kernel(module)
            plain = dataclasses.replace(
                kernel, plan=dataclasses.replace(kernel.plan, programmatic=False), _calls=None
            )
            sets, _ = rotating_torch(problem)
            names = [value.name for value in fusion.inputs]
            runs = []
            for built in (kernel, plain):
                run, first_output = rotating_launch(built, names, sets)
                run()
                check_against_torch(problem, sets[0], first_output)
                runs.append(run)
            ratios: list[float] = []
            times: tuple[list[float], list[float]] = ([], [])
            for turn in range(args.rounds):
                order = (0, 1) if turn % 2 == 0 else (1, 0)
                measured = {index: median_ms(runs[index], args.repeat) for index in order}
                times[0].append(measured[0])
                times[1].append(measured[1])
                ratios.append(measured[1] / measured[0])
            print(
                f"| {problem.name} | {1e3 * statistics.median(times[0]):.1f} | "
                f"{1e3 * statistics.median(times[1]):.1f} | {statistics.median(ratios):.3f} "
                f"({min(ratios):.3f}-{max(ratios):.3f}) |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
