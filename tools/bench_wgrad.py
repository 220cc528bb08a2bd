"""Time the weight-gradient kernel (dW = dZ^T X over a dynamic token count) against cuBLAS.

    python tools/bench_wgrad.py [--tokens 2048,8192] [--shapes 14336x4096,4096x14336]
                                [--rounds 5] [--repeat 50] [--out FILE]

One `mmcomp.compile` per dW shape of the fusion mmcomp.grad builds (both operands
MN-major, K the token count, dynamic) serves every token count. For each shape M x N
(dW's rows and columns: 14336 x 4096 is a Llama-3-8B gate or up projection's, 4096 x 14336
its down projection's) and token count T, the dynamic kernel (specialized for T), the
static kernel compiled for that T with the same schedule, and torch's `dz.T @ x`
(cuBLAS) run on the same inputs, timed in turns (tools/bench.py's `median_ms`, the order
rotating for `--rounds` rounds); the table gives TFLOP/s (2 T M N) and the speed against
cuBLAS. The outputs are checked against torch first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402

import mmcomp  # noqa: E402
from mmcomp.schedule.heuristics import PARAMETERS  # noqa: E402


def weight_gradient(tokens: int | str, rows: int, columns: int) -> mmcomp.Fusion:
    """dW [rows, columns] = dZ[T, rows]^T X[T, columns], as mmcomp.grad writes it."""
    f = mmcomp.Fusion("wgrad")
    dz = f.input("dz", (tokens, rows), "bf16")
    x = f.input("x", (tokens, columns), "bf16")
    product = f.fused_multiply_sum(
        f.broadcast(dz, [False, False, True]), f.broadcast(x, [False, True, False]), [0]
    )
    f.output(f.cast(product, "bf16"))
    return f


def row(dynamic: Any, tokens: int, rows: int, columns: int, args: Any) -> dict[str, Any]:
    """The interleaved times of one shape and token count."""
    import torch  # pyright: ignore[reportMissingImports]

    torch.manual_seed(0)
    sets = [
        {
            "dz": torch.randn(tokens, rows, dtype=torch.bfloat16, device="cuda"),
            "x": torch.randn(tokens, columns, dtype=torch.bfloat16, device="cuda"),
        }
        for _ in range(2)
    ]
    chosen = {key: getattr(dynamic.params, key) for key in PARAMETERS}
    static = mmcomp.compile(weight_gradient(tokens, rows, columns), **chosen)
    names = ["dz", "x"]
    dynamic_run, dynamic_out = bench.rotating_launch(
        dynamic.device_kernel.specialized({"k": tokens}), names, sets
    )
    static_run, static_out = bench.rotating_launch(static.device_kernel, names, sets)
    counter = [0]

    def cublas() -> None:
        inputs = sets[counter[0] % len(sets)]
        counter[0] += 1
        torch.matmul(inputs["dz"].t(), inputs["x"])

    for run in (dynamic_run, static_run, cublas):
        run()
    torch.cuda.synchronize()
    want = (sets[0]["dz"].t().float() @ sets[0]["x"].float()).cpu()
    for output in (dynamic_out, static_out):
        got = torch.from_numpy(output.to_host().astype("float32"))
        error = float((got - want).abs().max() / want.abs().max())
        if not error < 2e-2:
            raise ValueError(f"wrong result at T = {tokens}: relative error {error:.3g}")
    runs = {"cublas": cublas, "dynamic": dynamic_run, "static": static_run}
    times = bench.timed_in_turns(runs, args.rounds, args.repeat)
    return {name: statistics.median(found) for name, found in times.items()} | {
        "ratios": [c / d for c, d in zip(times["cublas"], times["dynamic"], strict=True)]
    }


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, time every shape and token count, print (and write) the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tokens", default="2048,8192")
    parser.add_argument("--shapes", default="14336x4096,4096x14336")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    lines = [
        f"bench_wgrad: {args.rounds} interleaved rounds; TFLOP/s at 2 T M N; "
        "speed = cuBLAS time / the dynamic kernel's",
        "",
        "| dW M x N | T | cuBLAS | dynamic K | static K | speed vs cuBLAS (median, min-max) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    schedules: list[str] = []
    for shape in args.shapes.split(","):
        rows, columns = (int(text) for text in shape.split("x"))
        dynamic = mmcomp.compile(weight_gradient("tokens", rows, columns))
        schedules.append(f"- {shape}: {dynamic.params.format()}")
        for tokens in (int(text) for text in args.tokens.split(",")):
            found = row(dynamic, tokens, rows, columns, args)
            flops = 2 * tokens * rows * columns

            def tflops(ms: float, flops: int = flops) -> str:
                return f"{flops / ms / 1e9:.0f}"

            ratios = found["ratios"]
            line = (
                f"| {shape} | {tokens} | {tflops(found['cublas'])} | "
                f"{tflops(found['dynamic'])} | {tflops(found['static'])} | "
                f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |"
            )
            print(line, flush=True)
            lines.append(line)
    text = "\n".join([*lines, "", "Schedules (one compile per shape):", *schedules])
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
