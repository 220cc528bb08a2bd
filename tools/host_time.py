"""Where the host time of one public call goes: each piece of `kernel(a, w)` timed alone.

    python tools/host_time.py [--calls 10000] [--shape 512x768x256]

On a torch linear, each row is the median (and 90th percentile) host microseconds of one
step of the public call's cached path, timed alone over --calls calls on the same tensors
with perf_counter_ns: torch's output allocation, its current-stream lookup, the key of one
tensor, the bare driver launch with packed parameters (cuLaunchKernelEx through
cuda-python), the whole call with and without `out=`, and torch.nn.functional.linear. The
GPU keeps up (the kernel is shorter than the host time), so no call waits for the queue.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "unit"))


def timed(call: Callable[[], Any], calls: int) -> tuple[float, float]:
    """(median, 90th percentile) microseconds of `call`, each call timed alone."""
    import torch  # pyright: ignore[reportMissingImports]

    for _ in range(min(1000, calls)):
        call()
    torch.cuda.synchronize()
    samples: list[int] = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    torch.cuda.synchronize()
    samples.sort()
    return samples[len(samples) // 2] / 1e3, samples[int(len(samples) * 0.9)] / 1e3


def rows(m: int, n: int, k: int, calls: int) -> list[str]:
    """The table's rows for a linear m x n x k."""
    import cases
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp
    from mmcomp.torch import ARRAYS

    kernel = mmcomp.compile(cases.linear(m, n, k))
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    (y,) = kernel(a, w, check=True)
    kernel(a, w)
    state = kernel.device_kernel.call_state()
    prepared = list(state.launches.values())[-1]
    pieces: dict[str, Callable[[], Any]] = {
        "nothing (the timer alone)": lambda: None,
        "torch output allocation (a.new_empty)": lambda: a.new_empty((m, n)),
        "torch current-stream handle": lambda: ARRAYS.stream(a),
        "key of one tensor (pointer, shape, strides, dtype, device)": lambda: ARRAYS.key(a),
        "cuLaunchKernelEx, packed (cuda-python)": prepared.relaunch,
        "mmcomp kernel(a, w, out=(y,))": lambda: kernel(a, w, out=(y,)),
        "mmcomp kernel(a, w)": lambda: kernel(a, w),
        "torch.nn.functional.linear(a, w)": lambda: torch.nn.functional.linear(a, w),
    }
    lines = ["| step | median us | 90th percentile us |", "| --- | --- | --- |"]
    for name, call in pieces.items():
        median, p90 = timed(call, calls)
        lines.append(f"| {name} | {median:.2f} | {p90:.2f} |")
        print(lines[-1], flush=True)
    return lines


def main() -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--shape", default="512x768x256")
    args = parser.parse_args()
    m, n, k = (int(part) for part in args.shape.split("x"))
    print("\n".join(rows(m, n, k, args.calls)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
