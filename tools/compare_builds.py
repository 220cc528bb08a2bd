"""Time this checkout's kernels against an earlier build's, interleaved in one process.

    python tools/compare_builds.py --base DIR [--rounds 5] [--quick] [--rows decode] [--out FILE]

DIR holds an earlier mmcomp as the package `mmcomp_base` (its imports renamed), made with

    git archive COMMIT mmcomp | tar -x -C DIR && mv DIR/mmcomp DIR/mmcomp_base
    grep -rl mmcomp DIR/mmcomp_base | xargs sed -i -E \\
        's/\\bfrom mmcomp(\\.| )/from mmcomp_base\\1/g; s/\\bimport mmcomp\\b/import mmcomp_base/g;
         s/"mmcomp\\./"mmcomp_base./g'

For each problem of tools/bench.py's suite, both builds compile the same fusion with the
heuristic's schedule (through `compile`, no keywords), bind the same torch inputs, and are
timed in turn for several rounds (base, new, base, new, ...), each timing the median of
batched launches between CUDA events. The row reports the median of the per-round ratios
new / base and their spread (min-max): one timing on a power-capped card moves by up to
10%, so only a ratio taken round by round, under the same clocks, says whether a change
moved the speed.
Each build's output is checked against torch before it is timed.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402  (tools/bench.py: the suite, the timer and the torch reference)


def build_fusion(package: str, problem: bench.Problem) -> Any:
    """The problem's fusion written with `package`'s front end (its public `Fusion`)."""
    frontend = importlib.import_module(package)
    m, n, k = problem.m, problem.n, problem.k
    f = frontend.Fusion(problem.family)
    a = f.input("a", [m, k], "bf16")
    if problem.family == "matmul":
        b = f.input("b", [k, n], "bf16")
        f.output(f.cast(f.matmul(a, b), "bf16"))
    elif problem.family == "horizontal":
        w1 = f.input("w1", [n, k], "bf16")
        w2 = f.input("w2", [n, k], "bf16")
        f.output(f.cast(f.silu(f.linear(a, w1)) * f.linear(a, w2), "bf16"))
    elif problem.family == "gelu_bias":
        w = f.input("w", [n, k], "bf16")
        bias = f.input("bias", [n], "bf16")
        f.output(f.cast(f.gelu(f.linear(a, w, bias), "tanh"), "bf16"))
    else:
        w = f.input("w", [n, k], "bf16")
        f.output(f.cast(f.linear(a, w), "bf16"))
    return f


def bound_runner(package: str, problem: bench.Problem, sets: list[dict[str, Any]]) -> Any:
    """A launch of `package`'s kernel for the heuristic's schedule (through `compile`, so
    refitted where ptxas spills it, as a user gets it) rotating over the input sets, its
    schedule, and its first output on the first set."""
    import torch  # pyright: ignore[reportMissingImports]

    compiled = importlib.import_module(package).compile(fusion := build_fusion(package, problem))
    names = [value.name for value in fusion.inputs]
    run, first_output = bench.rotating_launch(compiled.device_kernel, names, sets)
    run()
    torch.cuda.synchronize()
    return run, compiled.params.format(), first_output


def compare(problem: bench.Problem, rounds: int, repeat: int) -> dict[str, Any]:
    """The per-round ratios new / base of one problem, with both schedules."""
    sets, _ = bench.rotating_torch(problem)
    base_run, base_schedule, base_out = bound_runner("mmcomp_base", problem, sets)
    new_run, new_schedule, new_out = bound_runner("mmcomp", problem, sets)
    bench.check_against_torch(problem, sets[0], base_out)
    bench.check_against_torch(problem, sets[0], new_out)
    times = bench.timed_in_turns({"base": base_run, "new": new_run}, rounds, repeat)
    ratios = [b / n for b, n in zip(times["base"], times["new"], strict=True)]
    return {
        "ratios": ratios,
        "base_ms": statistics.median(times["base"]),
        "new_ms": statistics.median(times["new"]),
        "base_schedule": base_schedule,
        "new_schedule": new_schedule,
    }


def main() -> None:
    """Parse the arguments, compare every problem, print (and write) the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--base", required=True, help="directory holding mmcomp_base")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rows", default="", help="bench.py rows too: decode,large")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.base).resolve()))
    lines = [
        f"compare_builds {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{args.rounds} interleaved rounds; speed = base time / new time",
        "",
        "| problem | base ms | new ms | new speed / base (median) | spread (min-max) |",
        "| --- | --- | --- | --- | --- |",
    ]
    schedules: list[str] = []
    problems = bench.suite(args.quick)
    for name in filter(None, args.rows.split(",")):
        if name not in bench.ROWS:
            parser.error(f"--rows: unknown row set {name!r}; expected one of {sorted(bench.ROWS)}")
        problems += bench.ROWS[name]
    for problem in problems:
        row = compare(problem, args.rounds, args.repeat)
        ratios = row["ratios"]
        line = (
            f"| {problem.name} | {row['base_ms']:.3f} | {row['new_ms']:.3f} | "
            f"{statistics.median(ratios):.3f} | {min(ratios):.3f}-{max(ratios):.3f} |"
        )
        print(line, flush=True)
        lines.append(line)
        schedules.append(f"- {problem.name}: base {row['base_schedule']}")
        schedules.append(f"  new {row['new_schedule']}")
    text = "\n".join([*lines, "", "Schedules:", *schedules]) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
