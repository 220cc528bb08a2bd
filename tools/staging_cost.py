"""The cost of padded staging copies: a fusion whose rows are not 16-byte multiples against
the aligned one next to it, on the GPU.

    python3 tools/staging_cost.py [--m 4096 --n 4096 --k 4096] [--rounds 5] [--out FILE]

Times, interleaved over `rounds` rounds in one process (median of 20 launches per round,
each launch including its staging copies), linear(A[M, K], W[N, K]) at K and at K - 1
(A and W staged), and matmul(A[M, K], B[K, N]) at N and N - 1 (B staged), all with the
heuristic's schedule, and the staging copies of the linear alone: as launches make them
(cuMemcpy2DAsync), and by the staging kernel for comparison. Prints one JSON line per
round and a summary; `--out` writes the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))


def bound_launch(fusion: Any) -> tuple[Any, str]:
    """The fusion compiled with the heuristic's schedule and bound to fresh device arrays."""
    from cases import inputs_for

    from mmcomp.backend import build_cuda_kernel
    from mmcomp.pipeline import run_pipeline
    from mmcomp.runtime import DeviceBuffer

    module, params, _ = run_pipeline(fusion.module, {})
    kernel = build_cuda_kernel(module)
    arrays = [DeviceBuffer.from_host(x) for x in inputs_for(fusion)]
    for _, shape, dtype in kernel.argument_specs()[kernel.num_inputs :]:
        buffer = DeviceBuffer(shape, dtype)
        buffer.fill_bytes(0)
        arrays.append(buffer)
    return kernel.bind(arrays), params.format()


def by_kernel(copies: Any) -> None:
    """The same copies as `Staging.copy_in`, by the staging kernel (for comparison)."""
    for staged in copies.copies:
        staged.by_copy_engine = False
    try:
        copies.copy_in()
    finally:
        for staged in copies.copies:
            staged.by_copy_engine = True


def main() -> None:
    import cases

    from mmcomp.runtime import time_launches

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    m, n, k = args.m, args.n, args.k
    variants = {
        f"linear {m}x{n}x{k}": cases.linear(m, n, k),
        f"linear {m}x{n}x{k - 1}": cases.linear(m, n, k - 1),
        f"matmul {m}x{n}x{k}": cases.matmul(m, n, k),
        f"matmul {m}x{n - 1}x{k}": cases.matmul(m, n - 1, k),
    }
    bound = {name: bound_launch(fusion) for name, fusion in variants.items()}
    samples: dict[str, list[float]] = {
        name: [] for name in [*variants, "staging", "staging_kernel"]
    }
    staged_name = f"linear {m}x{n}x{k - 1}"
    for round_index in range(args.rounds):
        for name, (launch, _) in bound.items():
            samples[name].append(statistics.median(time_launches(launch.launch, repeat=20)))
        copies = bound[staged_name][0].staging
        samples["staging"].append(statistics.median(time_launches(copies.copy_in, repeat=20)))
        times = time_launches(lambda copies=copies: by_kernel(copies), repeat=20)
        samples["staging_kernel"].append(statistics.median(times))
        print(json.dumps({"round": round_index, **{n: s[-1] for n, s in samples.items()}}))
    summary: dict[str, Any] = {}
    for name, values in samples.items():
        entry: dict[str, Any] = {
            "median_ms": statistics.median(values),
            "spread_ms": [min(values), max(values)],
        }
        if name in bound:
            entry["params"] = bound[name][1]
            entry["staged"] = [op.arg for op in bound[name][0].kernel.plan.tensor_maps if op.pitch]
            shape = [int(v) for v in name.split()[1].split("x")]
            entry["tflops"] = 2 * float(np.prod(shape)) / entry["median_ms"] / 1e9
        summary[name] = entry
    print(json.dumps(summary, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
