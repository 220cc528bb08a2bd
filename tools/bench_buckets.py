"""Time a dynamic-M linear in its M bucket beside the static kernel and cuBLAS, in turns.

    python tools/bench_buckets.py [--n 14336] [--k 4096] [--ms 8 24 32 48] [--rounds 9]

C = bf16(A W^T): one `mmcomp.compile` of the dynamic fusion (a BucketedKernel, each M run
with its bucket's schedule) and, per M, the static fusion compiled for that M (the
heuristic's schedule), each checked against torch, then timed with tools/bench.py's
`median_ms` beside torch.nn.functional.linear (cuBLAS), the three in an order rotating by
round, over 4 input copies. A ratio is cuBLAS's time over the kernel's, per round: the
median and the spread.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import median_ms  # noqa: E402

COPIES = 4
"""Input sets rotated over."""


def linear_fusion(m: int | str, n: int, k: int) -> Any:
    """bf16(A W^T), M static or the dynamic axis "m"."""
    import mmcomp

    f = mmcomp.Fusion("linear")
    a = f.input("a", (m, k), "bf16")
    w = f.input("w", (n, k), "bf16")
    f.output(f.cast(f.linear(a, w), "bf16"))
    return f


def time_m(m: int, dynamic: Any, weights: list[Any], rounds: int) -> None:
    """Check and time the dynamic kernel at M beside the static one and cuBLAS; print."""
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp

    n, k = weights[0].shape
    static = mmcomp.compile(linear_fusion(m, n, k))
    rows = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(COPIES)]
    outs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(COPIES)]
    want = torch.nn.functional.linear(rows[0], weights[0]).float()
    schedules = {"dynamic": dynamic.kernel_for(m).params, "static": static.params}
    for name, kernel in (("dynamic", dynamic), ("static", static)):
        (got,) = kernel(rows[0], weights[0], check=True)
        error = ((got.float() - want).abs().max() / want.abs().max()).item()
        print(f"M = {m} {name}: relative error {error:.2e}; {schedules[name].format()}")
    turn = [0]

    def launch(kernel: Any) -> Callable[[], None]:
        def run() -> None:
            i = turn[0] % COPIES
            turn[0] += 1
            kernel(rows[i], weights[i], out=(outs[i],))

        return run

    def cublas() -> None:
        i = turn[0] % COPIES
        turn[0] += 1
        torch.nn.functional.linear(rows[i], weights[i], out=outs[i])  # pyright: ignore[reportCallIssue]  (the out= overload is untyped)

    runs = {"dynamic": launch(dynamic), "static": launch(static), "cuBLAS": cublas}
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % 3 :] + names[: r % 3]:
            times[name].append(median_ms(runs[name], 100))
    for name in names:
        ratios = [c / t for c, t in zip(times["cuBLAS"], times[name], strict=True)]
        print(
            f"M = {m} {name}: {statistics.median(times[name]) * 1e3:.1f} us, cuBLAS / it "
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})",
            flush=True,
        )


def main() -> int:
    """Print one block of rows per M."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=14336)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--ms", type=int, nargs="+", default=[8, 24, 32, 48])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp

    dynamic = mmcomp.compile(linear_fusion("m", args.n, args.k))
    weights = [
        torch.randn(args.n, args.k, device="cuda", dtype=torch.bfloat16) for _ in range(COPIES)
    ]
    for m in args.ms:
        time_m(m, dynamic, weights, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
