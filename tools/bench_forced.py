"""Time kernels under forced schedules beside the heuristic's and the anchor, in turns.

    python tools/bench_forced.py --fp8 [--rounds 5]        # fp8 tiles against torch._scaled_mm
    python tools/bench_forced.py --grouped [--rounds 5]    # grouped kernels against dense ones

The questions behind a heuristic rule, asked on the GPU:

- `--fp8`: e4m3 linears (bf16 output) at 8192^3 and 4096x14336x5120 in the per-tensor,
  row-wise and block-wise modes, each at the heuristic's schedule and at the tiles of
  FP8_VARIANTS, against `torch._scaled_mm` in the same mode;
- `--grouped`: the grouped linear at T, N, K = 16384, 14336, 4096 with one group and with
  8 equal groups (offsets on the device), at the heuristic's schedule and at the variants
  of GROUPED_VARIANTS, against torch._grouped_mm and mmcomp's dense kernel of the same
  T x N x K (smem and registers epilogues) and cuBLAS's; then bench_grouped's linear rows
  (8, 64 and 128 experts, Dirichlet routings) at the heuristic's schedule and the
  variants, against torch._grouped_mm (bench_grouped's table and its variant table).

Each contender is timed with bench.py's `median_ms` in `rounds` rounds, the order rotating
by round (bench.timed_in_turns); a line gives the median TFLOP/s and, for `--fp8`, the
ratio of cuBLAS's median time to the contender's. A schedule the compiler refuses prints
its error and is left out.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402
import bench_grouped  # noqa: E402

import mmcomp  # noqa: E402

FP8_SHAPES = ((8192, 8192, 8192), (4096, 14336, 5120))
"""The fp8 rows (M, N, K) probed: the two large shapes of the fp8 targets."""

FP8_VARIANTS: dict[str, list[dict[str, Any]]] = {
    "tensor": [{"tile": (128, 128, 128)}, {"tile": (256, 128, 128)}],
    "row": [
        {"tile": (128, 128, 128)},
        {"tile": (256, 128, 128)},
        {"tile": (128, 192, 128)},
        {"tile": (256, 128, 128), "raster": "n"},
    ],
    "block": [
        {"tile": (128, 128, 128), "stages": 4},
        {"tile": (256, 64, 128)},
        {"tile": (128, 128, 128), "cluster": (2, 1)},
        {"tile": (128, 128, 128), "cluster": (1, 2)},
    ],
}
"""Per scaling mode, the schedule keywords timed beside the heuristic's."""

GROUPED_VARIANTS: list[dict[str, Any]] = [
    {"raster": "m"},
    {"epilogue": "smem"},
    {"tile": (128, 256, 64), "swap_ab": False},
    {"tile": (64, 256, 64), "swap_ab": False},
    {"tile": (64, 128, 64), "swap_ab": False},
    {"tile": (64, 256, 64), "swap_ab": False, "epilogue": "smem"},
]
"""The schedule keywords timed beside the heuristic's grouped kernel: the raster, the
staged epilogue, and the tiles the heuristic weighs (128 rows; 64 rows, the consumers
splitting N, 256 and 128 wide; unswapped, so that decode-sized groups run them too)."""


def _report(title: str, flops: float, times: dict[str, list[float]], anchor: str) -> None:
    """One line per contender: median TFLOP/s and the anchor's median time over its own."""
    base = statistics.median(times[anchor])
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{title} | {name} | {flops / median / 1e9:.0f} TFLOP/s | x{base / median:.3f}")


def _named(kernel: Any) -> str:
    """The kernel's schedule in a few words, with its cluster where it has one."""
    params = kernel.params
    cluster = (
        f" cluster {params.cluster[0]}x{params.cluster[1]}" if params.cluster != (1, 1) else ""
    )
    return bench.brief(params) + cluster


def _scales(mode: str, m: int, n: int, k: int) -> tuple[Any, Any, Any, Any]:
    """mmcomp's scales of `mode` and torch._scaled_mm's forms of them."""
    import torch  # pyright: ignore[reportMissingImports]

    if mode == "tensor":
        scale_a = torch.rand((), device="cuda") + 0.5
        scale_b = torch.rand((), device="cuda") + 0.5
        return scale_a, scale_b, scale_a, scale_b
    if mode == "row":
        scale_a = torch.rand(m, device="cuda") + 0.5
        scale_b = torch.rand(n, device="cuda") + 0.5
        return scale_a, scale_b, scale_a[:, None].contiguous(), scale_b[None, :].contiguous()
    scale_a = torch.rand(m, -(-k // 128), device="cuda") + 0.5
    scale_b = torch.rand(-(-n // 128), -(-k // 128), device="cuda") + 0.5
    return scale_a, scale_b, scale_a.t().contiguous().t(), scale_b.t()


def fp8_row_probe(a: Any, w: Any, mode: str, rounds: int, repeat: int) -> None:
    """One fp8 row in one mode: the heuristic's kernel and FP8_VARIANTS against cuBLAS."""
    import torch  # pyright: ignore[reportMissingImports]

    (m, k), n = a.shape, w.shape[0]
    scale_a, scale_b, torch_a, torch_b = _scales(mode, m, n, k)
    scaled_mm = torch._scaled_mm  # pyright: ignore[reportPrivateImportUsage]

    def cublas() -> None:
        scaled_mm(a, w.t(), torch_a, torch_b, out_dtype=torch.bfloat16)

    runs: dict[str, Callable[[], None]] = {"cublas": cublas}
    fusion = bench.fp8_fusion(m, n, k, mode)
    inputs = {"a": a, "w": w, "scale_a": scale_a, "scale_b": scale_b}
    for keywords in [{}, *FP8_VARIANTS[mode]]:
        try:
            kernel = mmcomp.compile(fusion, **keywords)
        except (mmcomp.FusionError, mmcomp.ScheduleError) as error:
            print(f"{mode} {keywords}: {error}")
            continue
        run, _ = bench.rotating_launch(kernel.device_kernel, list(inputs), [inputs])
        runs[("heuristic " if not keywords else "") + _named(kernel)] = run
    times = bench.timed_in_turns(runs, rounds, repeat)
    _report(f"{mode} {m}x{n}x{k}", 2.0 * m * n * k, times, "cublas")


def fp8_probe(rounds: int, repeat: int) -> None:
    """The fp8 rows at the heuristic's schedule and FP8_VARIANTS against cuBLAS."""
    import torch  # pyright: ignore[reportMissingImports]

    for m, n, k in FP8_SHAPES:
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
        for mode in FP8_VARIANTS:
            fp8_row_probe(a, w, mode, rounds, repeat)


def grouped_row_probe(groups: int, rounds: int, repeat: int) -> None:
    """The grouped linear of `groups` equal groups against dense kernels of its size."""
    import torch  # pyright: ignore[reportMissingImports]

    tokens, n, k = 16384, 14336, 4096
    row = bench_grouped.GroupedRow("linear", groups, tokens, n, k)
    fusion = bench_grouped.fusion_of(row)
    x = (torch.randn(tokens, k, device="cuda") / 8).to(torch.bfloat16)
    w = (torch.randn(groups, n, k, device="cuda") / 8).to(torch.bfloat16)
    ends = torch.arange(1, groups + 1, dtype=torch.int32, device="cuda") * (tokens // groups)
    weight = w[0].contiguous()
    grouped_mm = torch._grouped_mm  # pyright: ignore[reportPrivateImportUsage]

    def torch_grouped() -> None:
        grouped_mm(x, w.transpose(-2, -1), offs=ends)

    def cublas() -> None:
        torch.nn.functional.linear(x, weight)

    runs: dict[str, Callable[[], None]] = {"torch._grouped_mm": torch_grouped}
    for keywords in [{}, *GROUPED_VARIANTS]:
        try:
            compiled: Any = mmcomp.compile(fusion, **keywords)
        except (mmcomp.FusionError, mmcomp.ScheduleError) as error:
            print(f"grouped {keywords}: {error}")
            continue
        kernel = compiled.kernel_for(tokens)
        device = kernel.device_kernel.specialized({"m": tokens})
        run, _ = bench.rotating_launch(
            device, ["x", "w", "offsets"], [{"x": x, "w": w, "offsets": ends}]
        )
        runs[("heuristic " if not keywords else "") + "grouped " + _named(kernel)] = run
    dense = mmcomp.Fusion("dense")
    a = dense.input("x", (tokens, k), "bf16")
    b = dense.input("w", (n, k), "bf16")
    dense.output(dense.cast(dense.linear(a, b), "bf16"))
    for keywords in [{}, {"epilogue": "registers"}]:
        kernel = mmcomp.compile(dense, **keywords)
        run, _ = bench.rotating_launch(kernel.device_kernel, ["x", "w"], [{"x": x, "w": weight}])
        runs["dense " + _named(kernel)] = run
    runs["dense cuBLAS"] = cublas
    times = bench.timed_in_turns(runs, rounds, repeat)
    _report(f"{groups} group(s) of {tokens // groups}", 2.0 * tokens * n * k, times, "dense cuBLAS")


def grouped_probe(rounds: int, repeat: int) -> None:
    """The grouped linear with one group and with 8 equal ones; then the linear rows of
    bench_grouped (Dirichlet routings) at the heuristic's schedule and GROUPED_VARIANTS
    against torch._grouped_mm."""
    for groups in (1, 8):
        grouped_row_probe(groups, rounds, repeat)
    variants = {bench.schedule_label(keywords): keywords for keywords in GROUPED_VARIANTS}
    text, _ = bench_grouped.report(rounds, repeat, variants, ("linear",))
    print(text, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the probes asked for."""
    parser = argparse.ArgumentParser(description="Time kernels under forced schedules.")
    parser.add_argument("--fp8", action="store_true", help="the fp8 tiles")
    parser.add_argument("--grouped", action="store_true", help="the grouped kernel's variants")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args(argv)
    if not (args.fp8 or args.grouped):
        parser.error("expected --fp8 and/or --grouped")
    header = bench.run_header("# Forced schedules beside the heuristic's")
    header[-1] = f"- command: `python tools/bench_forced.py {' '.join(sys.argv[1:])}`"
    print("\n".join(header), flush=True)
    if args.grouped:
        grouped_probe(args.rounds, args.repeat)
    if args.fp8:
        fp8_probe(args.rounds, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
