"""The main job: `python -m mmcomp` compiles an example fusion, and runs it on a GPU if any.

The example is nvFuser's silu epilogue, silu(A W^T) * T cast to bf16, with the linear
result also an output. It is compiled through the whole pipeline; the CPU executor runs the
materialized schedule (every CTA simulated, every output element checked to be written
once) and compares it with the reference interpreter. Where an sm_90 GPU is present, the
same fusion is compiled for the `cuda` back end, run, and checked the same way.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import numpy as np

import mmcomp


def silu_mul_fusion(m: int, n: int, k: int) -> mmcomp.Fusion:
    """silu(float(linear(A, W))) * T, cast to bf16; the linear result is also an output."""
    f = mmcomp.Fusion("epilogue_silu")
    a = f.input("a", [m, k], "bf16")
    w = f.input("w", [n, k], "bf16")
    t = f.input("t", [m, n], "bf16")
    y = f.linear(a, w)
    f.output(y)
    f.output(f.cast(f.silu(y) * t, "bf16"))
    return f


def random_inputs(fusion: mmcomp.Fusion, rng: np.random.Generator) -> list[np.ndarray]:
    """Fresh random inputs (never zeros), in the fusion's input order."""
    return [rng.standard_normal(v.shape).astype(v.numpy_dtype) for v in fusion.inputs]


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """||out - ref|| / ||ref||, in float64."""
    out64 = np.asarray(out, dtype=np.float64)
    ref64 = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm(out64 - ref64) / np.linalg.norm(ref64))


def check(name: str, outputs: tuple[np.ndarray, ...], refs: tuple[np.ndarray, ...]) -> bool:
    """Print each output's relative error; True when all are under 1e-2."""
    ok = True
    for index, (out, ref) in enumerate(zip(outputs, refs, strict=True)):
        error = relative_error(out, ref)
        ok = ok and bool(np.isfinite(error)) and error < 1e-2
        print(f"  {name} output {index} {out.dtype}{list(out.shape)}: rel. error {error:.2e}")
    return ok


def compile_shape(
    parser: argparse.ArgumentParser,
    flag: str,
    shape: Sequence[int],
    fusion: mmcomp.Fusion,
    backend: str,
) -> mmcomp.Kernel:
    """`fusion` (of the shape given by `flag`) compiled for `backend`; a usage error where
    the shape cannot be compiled."""
    try:
        return mmcomp.compile(fusion, backend=backend)
    except (mmcomp.FusionError, mmcomp.ScheduleError) as error:
        parser.error(f"{flag} {' '.join(map(str, shape))}: {error}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Compile an example fusion; run it on a GPU if one is present."
    )
    parser.add_argument("--shape", type=int, nargs=3, default=(300, 500, 200), metavar="MNK")
    parser.add_argument("--gpu-shape", type=int, nargs=3, default=(4096, 4096, 4096))
    parser.add_argument("--print-ir", action="store_true", help="print the IR of every stage")
    args = parser.parse_args()
    rng = np.random.default_rng()
    for name, shape in (("--shape", args.shape), ("--gpu-shape", args.gpu_shape)):
        if min(shape) < 1:
            parser.error(f"{name} {' '.join(map(str, shape))}: M, N and K must be positive")

    fusion = silu_mul_fusion(*args.shape)
    print("fusion:")
    print(fusion)
    start = time.perf_counter()
    kernel = compile_shape(parser, "--shape", args.shape, fusion, "interp")
    print(f"compiled in {time.perf_counter() - start:.2f} s with {kernel.params.format()}")
    if args.print_ir:
        for stage, text in kernel.stage_ir.items():
            print(f"// ----- IR after {stage}\n{text}")
    inputs = random_inputs(fusion, rng)
    refs = mmcomp.reference(fusion, *inputs)
    start = time.perf_counter()
    outputs = kernel(*inputs)
    print(f"CPU executor ran every CTA in {time.perf_counter() - start:.2f} s")
    ok = check("interp", outputs, refs)

    from mmcomp.runtime import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        print(f"no GPU run: {reason}")
        return 0 if ok else 1
    fusion = silu_mul_fusion(*args.gpu_shape)
    kernel = compile_shape(parser, "--gpu-shape", args.gpu_shape, fusion, "cuda")
    print(f"cuda kernel: {kernel.params.format()}")
    inputs = random_inputs(fusion, rng)
    outputs = kernel(*inputs)
    refs = mmcomp.reference(fusion, *inputs)
    ok = check("cuda", outputs, refs) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
