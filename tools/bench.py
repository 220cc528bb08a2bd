"""Benchmark mmcomp's kernels side by side with torch (cuBLAS) in one process.

    python tools/bench.py [--quick] [--out docs/performance.md] [--repeat 50]

The suite (bf16, random normal inputs, the same arrays for every contender):
linear (A W^T) and matmul (A B) at 4096^3, 8192^3, 8192x14336x4096, 8192x4096x14336,
2048^3 and 1024x16384x1024; linear+bias+gelu(tanh) and silu(A W1^T) * (A W2^T) at
8192x14336x4096. Each contender is timed as the median of `repeat` launches after warm-up,
with CUDA events; where the inputs fit in L2 (50 MiB), launches rotate over several input
copies so that no launch reads inputs a previous one left in L2. TFLOP/s counts only the
matmuls (2 M N K per matmul). The table, with device, versions, date and command, is
printed and written to the output file.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

L2_BYTES = 50 * 1024 * 1024
"""The H200's L2 cache."""


@dataclass
class Problem:
    """One row of the suite."""

    name: str
    m: int
    n: int
    k: int
    family: str
    """"linear", "matmul", "gelu_bias" or "horizontal"."""

    @property
    def flops(self) -> float:
        """Matmul FLOPs (two matmuls for the horizontal fusion)."""
        count = 2 if self.family == "horizontal" else 1
        return 2.0 * self.m * self.n * self.k * count


def suite(quick: bool) -> list[Problem]:
    """The benchmark problems."""
    shapes = [
        (4096, 4096, 4096),
        (8192, 8192, 8192),
        (8192, 14336, 4096),
        (8192, 4096, 14336),
        (2048, 2048, 2048),
        (1024, 16384, 1024),
    ]
    if quick:
        shapes = [(4096, 4096, 4096), (8192, 14336, 4096)]
    problems: list[Problem] = []
    for family in ("linear", "matmul"):
        for m, n, k in shapes:
            problems.append(Problem(f"{family} {m}x{n}x{k}", m, n, k, family))
    problems.append(Problem("linear+bias+gelu 8192x14336x4096", 8192, 14336, 4096, "gelu_bias"))
    problems.append(Problem("silu(AW1)*(AW2) 8192x14336x4096", 8192, 14336, 4096, "horizontal"))
    return problems


def fusion_of(problem: Problem) -> Any:
    """The mmcomp fusion of a problem."""
    from mmcomp.backend import cases

    m, n, k = problem.m, problem.n, problem.k
    if problem.family == "linear":
        return cases.linear(m, n, k)
    if problem.family == "matmul":
        return cases.matmul(m, n, k)
    if problem.family == "gelu_bias":
        return cases.gelu_bias(m, n, k)
    return cases.horizontal(m, n, k)


def median_ms(run: Callable[[], None], repeat: int) -> float:
    """Median milliseconds of `repeat` launches after warm-up (CUDA events)."""
    import torch

    for _ in range(5):
        run()
    torch.cuda.synchronize()
    times: list[float] = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def torch_inputs(problem: Problem, copies: int) -> list[dict[str, Any]]:
    """`copies` sets of random bf16 device inputs (torch tensors) for the problem."""
    import torch

    m, n, k = problem.m, problem.n, problem.k
    sets: list[dict[str, Any]] = []
    for copy in range(copies):
        generator = torch.Generator(device="cuda").manual_seed(copy)

        def rand(*shape: int, generator: Any = generator) -> Any:
            return torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=generator)

        inputs: dict[str, Any] = {"a": rand(m, k)}
        if problem.family == "matmul":
            inputs["b"] = rand(k, n)
        elif problem.family == "horizontal":
            inputs["w1"] = rand(n, k)
            inputs["w2"] = rand(n, k)
        else:
            inputs["w"] = rand(n, k)
        if problem.family == "gelu_bias":
            inputs["bias"] = rand(n)
        sets.append(inputs)
    return sets


def torch_eager(problem: Problem) -> Callable[[dict[str, Any]], Any]:
    """The torch computation of a problem (cuBLAS for the matmuls)."""
    import torch
    import torch.nn.functional as F

    if problem.family == "linear":
        return lambda x: F.linear(x["a"], x["w"])
    if problem.family == "matmul":
        return lambda x: torch.matmul(x["a"], x["b"])
    if problem.family == "gelu_bias":
        return lambda x: F.gelu(F.linear(x["a"], x["w"], x["bias"]), approximate="tanh")
    return lambda x: F.silu(F.linear(x["a"], x["w1"])) * F.linear(x["a"], x["w2"])


def bench_problem(problem: Problem, repeat: int, params: dict[str, Any]) -> dict[str, float]:
    """Median milliseconds of each contender on one problem."""
    import torch

    from mmcomp.backend import build_cuda_kernel
    from mmcomp.compile import run_pipeline

    fusion = fusion_of(problem)
    per_set = sum(v.numel() * v.element_size() for v in torch_inputs(problem, 1)[0].values())
    copies = max(1, min(8, -(-2 * L2_BYTES // per_set))) if per_set < L2_BYTES else 1
    sets = torch_inputs(problem, copies)
    results: dict[str, float] = {}
    module, chosen, _ = run_pipeline(fusion.module, params)
    kernel = build_cuda_kernel(module)
    names = [value.name for value in fusion.inputs]
    bound = []
    for inputs in sets:
        outputs = kernel.allocate_outputs()
        bound.append(kernel.bind([*(inputs[name] for name in names), *outputs]))
    counter = [0]

    def run_mmcomp() -> None:
        bound[counter[0] % len(bound)].launch(torch.cuda.current_stream().cuda_stream)
        counter[0] += 1

    results["mmcomp"] = median_ms(run_mmcomp, repeat)
    eager = torch_eager(problem)

    def run_torch() -> None:
        eager(sets[counter[0] % len(sets)])
        counter[0] += 1

    results["torch"] = median_ms(run_torch, repeat)
    results["params"] = chosen.format()  # pyright: ignore[reportArgumentType]
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the suite, print the table and write it to --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two shapes only")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--out", default="")
    parser.add_argument("--tile", default="128x256x64")
    args = parser.parse_args(argv)
    import torch

    tile = tuple(int(x) for x in args.tile.split("x"))
    params = {"tile": tile, "epilogue": "registers", "split_k": 1}
    rows: list[str] = []
    header = "| problem | mmcomp TFLOP/s | torch TFLOP/s | ratio | params |"
    rows += [header, "| --- | --- | --- | --- | --- |"]
    for problem in suite(args.quick):
        try:
            timing = bench_problem(problem, args.repeat, params)
        except Exception as error:  # noqa: BLE001 - one failing row must not hide the rest
            rows.append(f"| {problem.name} | failed: {type(error).__name__}: {error} | | | |")
            print(rows[-1], flush=True)
            continue
        mine = problem.flops / timing["mmcomp"] / 1e9
        theirs = problem.flops / timing["torch"] / 1e9
        rows.append(
            f"| {problem.name} | {mine:.0f} | {theirs:.0f} | {mine / theirs:.2f} | "
            f"{timing['params']} |"
        )
        print(rows[-1], flush=True)
    device = torch.cuda.get_device_name()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = "\n".join(
        [
            "# Performance",
            "",
            f"- date: {stamp}",
            f"- device: {device}; torch {torch.__version__}; CUDA {torch.version.cuda}; "
            f"python {platform.python_version()}",
            f"- command: `python tools/bench.py {' '.join(argv or sys.argv[1:])}`",
            "- method: median of CUDA-event-timed launches after 5 warm-up launches; inputs "
            "rotated over copies when one set fits in L2; TFLOP/s counts matmul FLOPs only",
            "",
            *rows,
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
