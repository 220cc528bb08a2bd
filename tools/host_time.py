"""Where the host time of one public call goes: each piece of `kernel(a, w)` timed alone.

    python tools/host_time.py [--calls 10000] [--rounds 3] [--shape 512x768x256] [--cpu]

On a torch linear, each row is the median (and 90th percentile) host microseconds of one
step of the public call's cached path, each call timed alone with perf_counter_ns, over
--calls calls on the same tensors per round: torch's output allocation (`a.new_empty`, and
`torch.empty` with the device given), its current-stream lookup, the key of one tensor,
the bare driver launch with packed parameters through cuda-python (cuLaunchKernel, as the
call makes it for a kernel without clusters, and cuLaunchKernelEx with a cached config),
the whole call with and without `out=`, and torch.nn.functional.linear. The rows are timed
in turns, round after round (the order rotating), so a host that speeds up or slows down
moves them alike; the table gives each row's median over all rounds' calls and the
spread of its round medians. The GPU keeps up (the kernel is shorter than the host time),
so no call waits for the queue.

`--cpu` profiles mmcomp's own share on a machine without a GPU (CPU torch needed): CPU
tensors pose as CUDA tensors (`Tensor.get_device` answers `dim()`, another C method), the
current stream is a constant, the kept launch does nothing, and `Tensor.new_empty` hands
back one tensor (CPU allocation costs nothing like CUDA's caching allocator, and a new
address would miss the kept launch); its real cost is the allocation row. The call's row
less the stand-in allocation and two key rows is the Python of the cached path.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "unit"))


def samples_of(call: Callable[[], Any], calls: int, synchronize: Callable[[], Any]) -> list[int]:
    """Nanoseconds of each of `calls` calls of `call`, each timed alone (after a warm-up and
    `synchronize`, so that no queue is left from it)."""
    for _ in range(min(1000, calls)):
        call()
    synchronize()
    samples: list[int] = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return samples


def timed(call: Callable[[], Any], calls: int) -> tuple[float, float]:
    """(median, 90th percentile) microseconds of `call`, each call timed alone (the GPU
    synchronized before and after; tools/bench.py's host-time rows)."""
    import torch  # pyright: ignore[reportMissingImports]

    torch.cuda.synchronize()
    samples = sorted(samples_of(call, calls, torch.cuda.synchronize))
    torch.cuda.synchronize()
    return samples[len(samples) // 2] / 1e3, samples[int(len(samples) * 0.9)] / 1e3


def timed_in_turns(
    pieces: dict[str, Callable[[], Any]], calls: int, rounds: int, synchronize: Callable[[], Any]
) -> dict[str, tuple[float, float, float, float]]:
    """(median, 90th percentile, lowest and highest round median) microseconds of each
    piece, the pieces timed in turns for `rounds` rounds of `calls` calls."""
    names = list(pieces)
    samples: dict[str, list[int]] = {name: [] for name in names}
    medians: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(rounds):
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:
            found = samples_of(pieces[name], calls, synchronize)
            synchronize()
            samples[name] += found
            medians[name].append(statistics.median(found) / 1e3)
    result: dict[str, tuple[float, float, float, float]] = {}
    for name in names:
        ordered = sorted(samples[name])
        result[name] = (
            ordered[len(ordered) // 2] / 1e3,
            ordered[int(len(ordered) * 0.9)] / 1e3,
            min(medians[name]),
            max(medians[name]),
        )
    return result


def direct_launch(handle: Any, grid: int, plan: Any, stream: Any, params: int) -> Callable[[], Any]:
    """The driver's own launch cost: cuLaunchKernel of libcuda called through ctypes, its
    arguments converted once (a kernel without clusters)."""
    import ctypes

    libcuda = ctypes.CDLL("libcuda.so.1")
    launch = libcuda.cuLaunchKernel
    uint, pointer = ctypes.c_uint, ctypes.c_void_p
    launch.argtypes = [pointer, *[uint] * 7, pointer, pointer, pointer]
    launch.restype = ctypes.c_int
    args = (
        pointer(int(handle)),
        uint(grid),
        uint(1),
        uint(1),
        uint(plan.threads),
        uint(1),
        uint(1),
        uint(plan.smem_bytes),
        pointer(int(stream)),
        pointer(params),
        pointer(0),
    )
    return lambda: launch(*args)


def gpu_pieces(m: int, n: int, k: int) -> tuple[dict[str, Callable[[], Any]], Callable[[], Any]]:
    """The rows on the GPU, and torch.cuda.synchronize."""
    import cases
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp
    from mmcomp.backend.kernel import BoundLaunch
    from mmcomp.runtime.driver import driver_api
    from mmcomp.runtime.launch import cluster_launch_config
    from mmcomp.torch import ARRAYS

    kernel = mmcomp.compile(cases.linear(m, n, k))
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    (y,) = kernel(a, w, check=True)
    kernel(a, w)
    device = kernel.device_kernel
    state = device.call_state()
    prepared = list(state.launches.values())[-1]
    relaunch = prepared.relaunch
    assert relaunch is not None
    bound = cast(BoundLaunch, prepared.bound)
    plan = device.plan
    function = device.function()
    config = cluster_launch_config(
        function, bound.grid, plan.threads, plan.cluster, plan.smem_bytes, plan.programmatic
    )
    config.hStream = prepared.stream
    launch_ex = driver_api().cuLaunchKernelEx
    params = bound._packed.pointers.ctypes.data  # pyright: ignore[reportPrivateUsage]
    handle = function.handle
    dtype = torch.bfloat16
    where = a.device
    direct = direct_launch(function.handle, bound.grid, plan, prepared.stream, params)
    ex = plan.cluster > 1 or plan.programmatic
    relaunch_call = "cuLaunchKernelEx" if ex else "cuLaunchKernel"
    pieces: dict[str, Callable[[], Any]] = {
        "nothing (the timer alone)": lambda: None,
        "cuLaunchKernel through ctypes (libcuda itself, no cuda-python)": direct,
        "allocation and the ctypes launch together": lambda: (a.new_empty((m, n)), direct()),
        "torch output allocation (a.new_empty)": lambda: a.new_empty((m, n)),
        "torch output allocation (torch.empty, device given)": lambda: torch.empty(
            (m, n), dtype=dtype, device=where
        ),
        "torch current-stream handle": lambda: ARRAYS.stream(a),
        "key of one tensor (pointer, shape, strides, dtype, device)": lambda: ARRAYS.key(a),
        f"kept relaunch ({relaunch_call})": relaunch,
        "cuLaunchKernelEx, packed, cached config (cuda-python)": lambda: launch_ex(
            config, handle, params, 0
        ),
        "allocation and kept relaunch together": lambda: (a.new_empty((m, n)), relaunch()),
        "CallState.fast((a, w)): the call less Kernel.__call__": lambda: state.fast((a, w)),
        "mmcomp kernel(a, w, out=(y,))": lambda: kernel(a, w, out=(y,)),
        "mmcomp kernel(a, w)": lambda: kernel(a, w),
        "torch.nn.functional.linear(a, w)": lambda: torch.nn.functional.linear(a, w),
    }
    return pieces, torch.cuda.synchronize


def cpu_pieces(m: int, n: int, k: int) -> tuple[dict[str, Callable[[], Any]], Callable[[], Any]]:
    """The rows of mmcomp's own share on the CPU (see the module docstring)."""
    import cases
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp
    import mmcomp.torch as mt
    from mmcomp.backend.call import PreparedLaunch

    torch.Tensor.get_device = torch._C.TensorBase.dim  # pyright: ignore
    mt.ARRAYS._stream = lambda device: 7  # pyright: ignore[reportPrivateUsage]
    kernel = mmcomp.compile(cases.linear(m, n, k))
    state = kernel.device_kernel.call_state()
    a = torch.randn(m, k).bfloat16()
    w = torch.randn(n, k).bfloat16()
    y = a.new_empty((m, n))
    allocate = torch._C.TensorBase.new_empty

    def stand_in(self: Any, shape: Any, dtype: Any = None) -> Any:
        return y

    torch.Tensor.new_empty = stand_in  # pyright: ignore
    prepared = PreparedLaunch(None, None, None, [])  # pyright: ignore[reportArgumentType]
    prepared.relaunch = lambda: None
    frame = mt.ARRAYS
    state.remember(frame, (7, frame.key(a), frame.key(w), frame.key(y)), prepared)
    state.remember_out(frame, (7, frame.key(a), frame.key(w), frame.key(y)), prepared, [frame] * 3)
    kernel._fast = state.fast_path()  # pyright: ignore[reportPrivateUsage]
    kernel._fast_out = state.fast_out_path()  # pyright: ignore[reportPrivateUsage]
    assert kernel(a, w)[0] is y
    assert kernel(a, w, out=(y,))[0] is y
    dtype = torch.bfloat16
    pieces: dict[str, Callable[[], Any]] = {
        "nothing (the timer alone)": lambda: None,
        "torch output allocation (a.new_empty, CPU)": lambda: allocate(a, (m, n), dtype=dtype),
        "the stand-in allocation": lambda: a.new_empty((m, n), dtype=dtype),
        "key of one tensor (pointer, shape, strides, dtype, device)": lambda: frame.key(a),
        "CallState.fast((a, w)): the call less Kernel.__call__": lambda: state.fast((a, w)),
        "mmcomp kernel(a, w), stand-in allocation, no-op launch": lambda: kernel(a, w),
        "mmcomp kernel(a, w, out=(y,)), no-op launch": lambda: kernel(a, w, out=(y,)),
    }
    return pieces, lambda: None


def main() -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shape", default="512x768x256")
    parser.add_argument("--cpu", action="store_true", help="mmcomp's share, no GPU needed")
    args = parser.parse_args()
    m, n, k = (int(part) for part in args.shape.split("x"))
    pieces, synchronize = (cpu_pieces if args.cpu else gpu_pieces)(m, n, k)
    result = timed_in_turns(pieces, args.calls, args.rounds, synchronize)
    print(
        f"linear {m}x{n}x{k} bf16, {args.rounds} rounds of {args.calls} calls per row, "
        "rows in turns"
    )
    print("| step | median us | 90th percentile us | round medians us |")
    print("| --- | --- | --- | --- |")
    for name, (median, p90, low, high) in result.items():
        print(f"| {name} | {median:.2f} | {p90:.2f} | {low:.2f}-{high:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
