"""Benchmark mmcomp's kernels side by side with torch (cuBLAS) in one process.

    python tools/bench.py [--quick] [--out FILE] [--repeat 50]
    python tools/bench.py --call [--quick] [--tokens 8192] [--out FILE]
    python tools/bench.py --rows decode|decode-large|fp16|large|all [--rounds 5] [--budget 15]
        [--shapes 8x10240x8192,1x4096x4096] [--schedule swap_ab=true] [--out FILE]
    python tools/bench.py --fp8 tensor,row,block [--rounds 7] [--shapes 8192x8192x8192]
        [--schedule tile=256x128x128] [--out FILE]
    python tools/bench.py --grouped [--rounds 7] [--out FILE]

The suite (bf16, random normal inputs, the same arrays for every contender):
linear (A W^T) and matmul (A B) at 4096^3, 8192^3, 8192x14336x4096, 8192x4096x14336,
2048^3 and 1024x16384x1024; linear+bias+gelu(tanh) and silu(A W1^T) * (A W2^T) at
8192x14336x4096. Contenders: mmcomp (each schedule of CONFIGS, the best reported), torch
eager (cuBLAS for the matmuls) and, for the fused cases, torch.compile where it works.
Each is timed after warm-up with CUDA events around batches of back-to-back launches (the
median of the per-launch means); where one input set fits in L2 (50 MiB), launches rotate
over several copies so that no launch reads inputs a previous one left in L2. TFLOP/s
counts only the matmuls (2 M N K each). The table, with device, versions, date and
command, is printed and written to --out.

`--fp8` times fp8 linears (e4m3 A[M, K] and W[N, K], bf16 output) in the scaling modes
named, on FP8_SHAPES: `torch._scaled_mm` (cuBLAS) and the heuristic's kernel of the same
fusion (`f.linear(a, w, scale_a=..., scale_b=...)` cast to bf16), in turns over the rounds
as `--rows` does; the kernel's output is checked against torch's first. `block` takes
1 x 128 scales of A and 128 x 128 ones of W: torch._scaled_mm's block-wise form where this
torch has it, else its per-tensor cuBLAS kernel as the anchor (the row says so), the
output checked against float32 of the dequantized factors. `--shapes` replaces
FP8_SHAPES; each `--schedule` adds a contender compiled with those overrides, timed in the
same turns (a second table).

`--grouped` times the grouped GEMMs of mixture-of-experts layers against
torch._grouped_mm (tools/bench_grouped.py).

`--rows` times linear rows (decode shapes, an fp16 row, the large bf16 suite: ROWS) in
turns, in one process: each round times cuBLAS (`torch.nn.functional.linear`), the
heuristic's kernel and the autotuned one (`mmcomp.autotune` on the row's inputs, within
`--budget` seconds), rotating the order; a row reports the median over the rounds of each
kernel's speed relative to cuBLAS and its spread (min-max of the per-round ratios).
`--shapes` adds bf16 linear rows of the shapes given (alone: `--rows` may be left out);
each `--schedule KEY=VALUE[,KEY=VALUE]` adds a contender to every row, the kernel compiled
with those overrides (the heuristic choosing the rest; a schedule refused for a row is
left out there), timed in the same turns: e.g. `--schedule swap_ab=true` times the swapped
kernel beside the heuristic's, `--schedule tile=64x128x64,warp_specialization=pingpong` a
given tile.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "unit"
"""tests/unit, home of the fusion families (`cases`)."""
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(TESTS))

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
    dtype: str = "bf16"
    """The inputs' dtype ("bf16" or "f16"; the fused families are bf16 only)."""

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
    import cases

    m, n, k = problem.m, problem.n, problem.k
    if problem.family == "linear":
        return cases.linear(m, n, k, problem.dtype)
    if problem.family == "matmul":
        return cases.matmul(m, n, k, problem.dtype)
    if problem.family == "gelu_bias":
        return cases.gelu_bias(m, n, k)
    return swiglu(m, n, k)


def swiglu(m: int, n: int, k: int) -> Any:
    """silu(A W1^T) * (A W2^T) in bf16: the horizontal fusion with the one output torch makes.

    (The test family `cases.horizontal` also writes both f32 products; timing that against
    an eager torch that writes neither would compare different work.)
    """
    from mmcomp.frontend.builder import Fusion

    f = Fusion("swiglu")
    a = f.input("a", [m, k], "bf16")
    w1 = f.input("w1", [n, k], "bf16")
    w2 = f.input("w2", [n, k], "bf16")
    f.output(f.cast(f.silu(f.linear(a, w1)) * f.linear(a, w2), "bf16"))
    return f


BATCH = 10
"""Launches timed between one pair of CUDA events (the host queues them back to back)."""


def median_ms(run: Callable[[], None], repeat: int) -> float:
    """Median over batches of the mean milliseconds per launch, after warm-up.

    Each batch of BATCH launches is queued between two CUDA events without synchronizing
    in between, so the host's launch overhead overlaps the kernels (one event pair per
    launch, synchronized, would add the host overhead to every kernel).
    """
    import torch  # pyright: ignore[reportMissingImports]

    for _ in range(5):
        run()
    torch.cuda.synchronize()
    times: list[float] = []
    for _ in range(max(repeat // BATCH, 5)):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(BATCH):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / BATCH)
    return statistics.median(times)


def torch_inputs(problem: Problem, copies: int) -> list[dict[str, Any]]:
    """`copies` sets of random bf16 device inputs (torch tensors) for the problem."""
    import torch  # pyright: ignore[reportMissingImports]

    m, n, k = problem.m, problem.n, problem.k
    dtype = torch.float16 if problem.dtype == "f16" else torch.bfloat16
    sets: list[dict[str, Any]] = []
    for _ in range(copies):
        generator = torch.Generator(device="cuda")
        generator.seed()  # fresh inputs on every run

        def rand(*shape: int, generator: Any = generator) -> Any:
            return torch.randn(*shape, device="cuda", dtype=dtype, generator=generator)

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
    import torch  # pyright: ignore[reportMissingImports]
    import torch.nn.functional as F  # pyright: ignore[reportMissingImports]

    if problem.family == "linear":
        return lambda x: F.linear(x["a"], x["w"])
    if problem.family == "matmul":
        return lambda x: torch.matmul(x["a"], x["b"])
    if problem.family == "gelu_bias":
        return lambda x: F.gelu(F.linear(x["a"], x["w"], x["bias"]), approximate="tanh")
    return lambda x: F.silu(F.linear(x["a"], x["w1"])) * F.linear(x["a"], x["w2"])


COOP_256 = {"tile": (128, 256, 64), "warp_specialization": "cooperative", "epilogue": "smem"}
COOP_128 = {"tile": (128, 128, 64), "warp_specialization": "cooperative", "epilogue": "smem"}
PING_128 = {"tile": (128, 128, 64), "warp_specialization": "pingpong", "epilogue": "smem"}
PING_64 = {"tile": (64, 128, 64), "warp_specialization": "pingpong", "epilogue": "smem"}
CONFIGS: dict[str, list[dict[str, Any]]] = {
    "linear": [
        {},
        {**COOP_256, "raster": "m", "swizzle": 8},
        {**COOP_256, "cluster": (2, 1)},
        {**PING_128, "cluster": (2, 1)},
    ],
    "gelu_bias": [
        {},
        {**COOP_256, "cluster": (2, 1)},
        {**PING_128, "cluster": (2, 1)},
        {**PING_128, "cluster": (1, 2)},
    ],
    "horizontal": [
        {},
        {**COOP_128, "raster": "m", "swizzle": 8},
        {**COOP_128, "cluster": (2, 1)},
        {**PING_64, "cluster": (2, 1)},
    ],
}
"""The mmcomp schedules tried per family (the best is reported); matmul as linear. `{}` is
the heuristic's choice (`mmcomp.compile` with no schedule keywords)."""
COMMON = {"split_k": 1}
"""Parameters shared by every configuration."""


def short(params: dict[str, Any]) -> str:
    """A configuration in a few words: 128x256x64 cooperative smem raster m swizzle 8."""
    if not params:
        return "heuristic's choice"
    words = ["x".join(str(t) for t in params["tile"]), params["warp_specialization"]]
    words.append(params.get("epilogue", ""))
    for key in ("raster", "swizzle", "stages"):
        if key in params:
            words.append(f"{key} {params[key]}")
    if "cluster" in params:
        words.append("cluster " + "x".join(str(c) for c in params["cluster"]))
    return " ".join(word for word in words if word)


def time_mmcomp(
    problem: Problem, sets: list[dict[str, Any]], params: dict[str, Any], repeat: int
) -> float:
    """Median milliseconds of mmcomp's kernel for one configuration."""
    return time_mmcomp_chosen(problem, sets, params, repeat)[0]


def time_mmcomp_chosen(
    problem: Problem, sets: list[dict[str, Any]], params: dict[str, Any], repeat: int
) -> tuple[float, str]:
    """Median milliseconds of mmcomp's kernel for one configuration, and the whole
    schedule it ran (the heuristic fills in what `params` leaves out)."""

    from mmcomp.backend import build_cuda_kernel
    from mmcomp.pipeline import run_pipeline

    fusion = fusion_of(problem)
    module, chosen, _ = run_pipeline(fusion.module, {**COMMON, **params})
    print(f"  {problem.name}, {short(params)}: {chosen.format()}", flush=True)
    kernel = build_cuda_kernel(module)
    run, first_output = rotating_launch(kernel, [value.name for value in fusion.inputs], sets)
    milliseconds = median_ms(run, repeat)
    check_against_torch(problem, sets[0], first_output)
    return milliseconds, chosen.format()


def rotating_launch(
    kernel: Any, names: list[str], sets: list[dict[str, Any]]
) -> tuple[Callable[[], None], Any]:
    """A launch of a built kernel (a CudaKernel) on torch's current stream, rotating over
    the input sets (inputs by name, outputs and split-K workspaces allocated per set, the
    tile counters zeroed before each launch), and the first set's first output."""
    import torch  # pyright: ignore[reportMissingImports]

    from mmcomp.backend.call import PreparedLaunch
    from mmcomp.runtime.stream import stream_handle

    stream = stream_handle(torch.cuda.current_stream())
    launches = []
    for inputs in sets:
        extra = kernel.allocate_outputs()
        counters = (extra[-1].ptr, extra[-1].size) if len(extra) > kernel.num_outputs else None
        bound = kernel.bind([*(inputs[name] for name in names), *extra])
        launches.append(PreparedLaunch(bound, stream, counters, []))
    counter = [0]

    def run() -> None:
        launches[counter[0] % len(launches)].launch()
        counter[0] += 1

    return run, launches[0].bound.arrays[len(names)]


def check_against_torch(problem: Problem, inputs: dict[str, Any], first_output: Any) -> None:
    """Raise unless mmcomp's first output matches torch's (relative error < 2e-2).

    A fast wrong kernel must not make it into the table.
    """
    import numpy as np
    import torch  # pyright: ignore[reportMissingImports]

    torch.cuda.synchronize()
    got = first_output.to_host().astype(np.float32)
    want = torch_eager(problem)(inputs).float().cpu().numpy()
    error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    if not error < 2e-2:
        raise ValueError(f"wrong result: relative error {error:.3g} against torch")


def rotating_torch(problem: Problem) -> tuple[list[dict[str, Any]], Callable[[], None]]:
    """The input sets (enough copies to rotate past L2) and a torch-eager launch over them."""
    per_set = sum(v.numel() * v.element_size() for v in torch_inputs(problem, 1)[0].values())
    copies = min(8, -(-2 * L2_BYTES // per_set)) if per_set < L2_BYTES else 1
    sets = torch_inputs(problem, copies)
    eager = torch_eager(problem)
    counter = [0]

    def run_torch() -> None:
        eager(sets[counter[0] % len(sets)])
        counter[0] += 1

    return sets, run_torch


def bench_problem(problem: Problem, repeat: int, compiled: bool) -> dict[str, Any]:
    """Milliseconds of torch and of each mmcomp configuration on one problem.

    torch is timed before and after mmcomp's schedules and its faster figure kept, so a
    clock or power dip during one measurement does not count against it; torch.compile
    (fused rows) runs after mmcomp's schedules, so its compilation and warm-up do not
    precede the first schedule's timing.
    """
    sets, run_torch = rotating_torch(problem)
    eager = torch_eager(problem)
    counter = [0]
    result: dict[str, Any] = {"torch": median_ms(run_torch, repeat), "mmcomp": {}, "chosen": {}}
    family = "linear" if problem.family == "matmul" else problem.family
    for params in CONFIGS[family]:
        failure = probe(problem.family, params)
        if failure is not None:
            result["mmcomp"][short(params)] = failure
            continue
        try:
            milliseconds, chosen = time_mmcomp_chosen(problem, sets, params, repeat)
            result["mmcomp"][short(params)] = milliseconds
            result["chosen"][short(params)] = chosen
        except Exception as error:  # noqa: BLE001 - report the failure in the table
            result["mmcomp"][short(params)] = f"{type(error).__name__}: {error}"[:160]
    if compiled and problem.family in ("gelu_bias", "horizontal"):
        import torch  # pyright: ignore[reportMissingImports]

        try:
            fused = torch.compile(eager)

            def run_compiled() -> None:
                fused(sets[counter[0] % len(sets)])
                counter[0] += 1

            result["torch.compile"] = median_ms(run_compiled, repeat)
        except Exception as error:  # noqa: BLE001 - torch.compile may be unavailable
            result["torch.compile"] = f"{type(error).__name__}"
    result["torch"] = min(result["torch"], median_ms(run_torch, repeat))
    return result


PROBE_TIMEOUT_S = 90
"""Seconds a schedule's correctness probe may take (a hang must not stop the bench)."""


def probe(family: str, params: dict[str, Any]) -> str | None:
    """Run the family under `params` at 1000^3 in a child process; why not to time it."""
    key = (family, json.dumps({**COMMON, **params}, sort_keys=True))
    if key in _PROBED:
        return _PROBED[key]
    command = [
        sys.executable,
        "-c",
        f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(TESTS)!r}]; "
        "from cases import probe; probe(sys.argv[1], sys.argv[2])",
        family,
        key[1],
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _PROBED[key] = f"probe timed out after {PROBE_TIMEOUT_S} s"
        return _PROBED[key]
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).strip().splitlines() or ["no output"]
        _PROBED[key] = f"probe failed: {lines[-1][:120]}"
    else:
        _PROBED[key] = None
    return _PROBED[key]


_PROBED: dict[tuple[str, str], str | None] = {}


CALL_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096), (8192, 4096, 14336)]
"""The suite's large linear shapes, where the public call is timed beside the bound launch."""
HOST_SHAPE = (512, 768, 256)
"""The linear whose host time per public call is measured."""
HOST_CALLS = 10_000
"""Calls timed one by one for the host time (the median is reported)."""


def public_call_row(m: int, n: int, k: int, repeat: int, interleaved: Callable[..., Any]) -> str:
    """TFLOP/s of `kernel(a, w)` on torch tensors (a new output per call, on torch's
    current stream) beside the same kernel bound by hand and relaunched, timed in turns
    by `interleaved` (examples/llama_mlp.py's interleaved_ms)."""
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp

    problem = Problem(f"linear {m}x{n}x{k}", m, n, k, "linear")
    sets, _ = rotating_torch(problem)
    kernel = mmcomp.compile(fusion_of(problem))
    device = kernel.device_kernel
    bound = [device.bind([inputs["a"], inputs["w"], *device.allocate_outputs()]) for inputs in sets]
    stream = torch.cuda.current_stream().cuda_stream
    counter = [0]

    def launch_bound() -> None:
        bound[counter[0] % len(bound)].launch(stream)
        counter[0] += 1

    def call_public() -> None:
        inputs = sets[counter[0] % len(sets)]
        kernel(inputs["a"], inputs["w"])
        counter[0] += 1

    (first,) = kernel(sets[0]["a"], sets[0]["w"], check=True)
    want = torch.nn.functional.linear(sets[0]["a"], sets[0]["w"]).float()
    error = float((first.float() - want).abs().max() / want.abs().max())
    if not error < 2e-2:
        raise ValueError(f"wrong result: relative error {error:.3g} against torch")
    timings = interleaved({"bound": launch_bound, "public": call_public}, 2 * repeat)
    flops = problem.flops / 1e9
    mine, theirs = flops / timings["public"], flops / timings["bound"]
    return f"| {problem.name} | {mine:.0f} | {theirs:.0f} | {mine / theirs:.3f} |"


def host_time_rows() -> list[str]:
    """Median host microseconds per call (HOST_CALLS calls on the same arrays) of the public
    call, with and without out=, beside torch.nn.functional.linear."""
    import cases
    import torch  # pyright: ignore[reportMissingImports]
    from host_time import timed

    import mmcomp

    m, n, k = HOST_SHAPE
    kernel = mmcomp.compile(cases.linear(m, n, k))
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    (y,) = kernel(a, w, check=True)
    calls: dict[str, Callable[[], Any]] = {
        "mmcomp kernel(a, w)": lambda: kernel(a, w),
        "mmcomp kernel(a, w, out=(y,))": lambda: kernel(a, w, out=(y,)),
        "torch.nn.functional.linear(a, w)": lambda: torch.nn.functional.linear(a, w),
    }
    rows = []
    for name, call in calls.items():
        median, p90 = timed(call, HOST_CALLS)
        rows.append(f"| {name} | {median:.1f} | {p90:.1f} |")
    return rows


def run_header(title: str) -> list[str]:
    """A report's title and its date, device, versions and command lines."""
    import torch  # pyright: ignore[reportMissingImports]

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        title,
        "",
        f"- date: {stamp}",
        f"- device: {torch.cuda.get_device_name()}; torch {torch.__version__} "
        f"(CUDA {torch.version.cuda}); python {platform.python_version()}",
        f"- command: `python tools/bench.py {' '.join(sys.argv[1:])}`",
    ]


MLP_REPEAT = 200
"""Calls per module and mode of the LlamaMLP example (20 rounds of BATCH in turns): the
modules differ by 2-3%, inside one round's spread, so the median needs many rounds."""


def call_report(args: argparse.Namespace) -> str:
    """The public-call rows: TFLOP/s beside the bound launch, host time, the LlamaMLP example."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "examples" / "llama_mlp.py"
    spec = importlib.util.spec_from_file_location("llama_mlp", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    shapes = CALL_SHAPES[1:3] if args.quick else CALL_SHAPES
    lines = [
        "Public call (`kernel(a, w)` on torch tensors: a new output per call, launched on "
        "torch's current stream) beside the same kernel bound by hand (`bind(...).launch()`), "
        "the heuristic's schedule, the two timed in turns (batches of 10 launches, medians):",
        "",
        "| problem | public call TFLOP/s | bound launch TFLOP/s | ratio |",
        "| --- | --- | --- | --- |",
    ]
    for m, n, k in shapes:
        lines.append(public_call_row(m, n, k, args.repeat, example.interleaved_ms))
        print(lines[-1], flush=True)
    m, n, k = HOST_SHAPE
    lines += [
        "",
        f"Host time per call, linear {m}x{n}x{k} bf16 ({HOST_CALLS} calls on the same arrays, "
        "each timed alone on the host; the GPU keeps up, so no call waits for the queue):",
        "",
        "| call | median us | 90th percentile us |",
        "| --- | --- | --- |",
        *host_time_rows(),
    ]
    print("\n".join(lines[-5:]), flush=True)
    result = example.run(
        tokens=args.tokens,
        repeat=max(args.repeat, MLP_REPEAT),
        compiled=not args.no_compile,
        tuned=True,
    )
    lines += ["", example.table(result)]
    print(lines[-1], flush=True)
    header = [*run_header("# The public call"), ""]
    return "\n".join(header + lines) + "\n"


DECODE_SHAPES = (
    (1, 4096, 4096),
    (16, 14336, 4096),
    (64, 4096, 14336),
    (128, 14336, 4096),
    (256, 14336, 4096),
    (512, 4096, 4096),
)
"""LLM decode linears, M x N x K (M tokens; Llama-3-8B's attention and MLP widths)."""

DECODE_LARGE_SHAPES = (
    (8, 10240, 8192),
    (16, 8192, 28672),
    (32, 28672, 8192),
    (64, 8192, 8192),
    (128, 8192, 28672),
    (256, 28672, 8192),
    (384, 8192, 8192),
    (512, 28672, 8192),
)
"""Decode linears of the larger models, M x N x K: Llama-2/3-70B's widths (hidden 8192,
MLP 28672, fused QKV 10240), which Mixtral-8x22B's experts approach."""

ROWS: dict[str, list[Problem]] = {
    "decode": [Problem(f"linear {m}x{n}x{k}", m, n, k, "linear") for m, n, k in DECODE_SHAPES],
    "decode-large": [
        Problem(f"linear {m}x{n}x{k}", m, n, k, "linear") for m, n, k in DECODE_LARGE_SHAPES
    ],
    "fp16": [Problem("linear fp16 2048x2048x8192", 2048, 2048, 8192, "linear", "f16")],
    "large": [
        Problem(f"linear {m}x{n}x{k}", m, n, k, "linear")
        for m, n, k in (
            (4096, 4096, 4096),
            (8192, 8192, 8192),
            (8192, 14336, 4096),
            (8192, 4096, 14336),
            (4096, 14336, 5120),
            (2048, 2048, 2048),
        )
    ],
}
"""The row groups of `--rows` (linear A W^T; bf16 but for the fp16 group)."""


def brief(params: Any) -> str:
    """A whole schedule in a few words: 128x256x64 cooperative smem raster n/16 3 stages."""
    words = [
        "x".join(str(t) for t in params.tile),
        params.warp_specialization,
        params.epilogue,
        f"raster {params.raster}/{params.swizzle}",
        f"{params.stages} stages",
    ]
    if params.split_k > 1:
        words.append(f"split_k {params.split_k}")
    if params.cluster != (1, 1):
        words.append("cluster " + "x".join(str(c) for c in params.cluster))
    if params.strategy != "persistent":
        words.append(params.strategy)
    if params.swap_ab:
        words.append("swapped")
    return " ".join(words)


def timed_in_turns(
    runs: dict[str, Callable[[], None]], rounds: int, repeat: int
) -> dict[str, list[float]]:
    """Each contender's `median_ms` per round, the contenders timed in turns for `rounds`
    rounds, the order rotating from round to round (a clock or power dip hits each alike)."""
    order = list(runs)
    times: dict[str, list[float]] = {name: [] for name in order}
    for turn in range(rounds):
        for name in order[turn % len(order) :] + order[: turn % len(order)]:
            times[name].append(median_ms(runs[name], repeat))
    return times


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """'MxNxK,MxNxK' -> [(m, n, k), ...]; an argparse error names a malformed shape."""
    shapes: list[tuple[int, int, int]] = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"shape {item!r}: expected MxNxK, three positive ints")
        m, n, k = (int(p) for p in parts)
        shapes.append((m, n, k))
    return shapes


def parse_schedule(text: str) -> dict[str, Any]:
    """'tile=64x128x64,swap_ab=true,split_k=2' -> schedule overrides: AxBxC as a tuple,
    integers as ints, true / false as bools, anything else as given."""
    overrides: dict[str, Any] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"schedule {text!r}: expected KEY=VALUE[,KEY=VALUE]")
        value = value.strip()
        parts = value.lower().split("x")
        parsed: Any = value
        if value.lower() in ("true", "false"):
            parsed = value.lower() == "true"
        elif value.isdigit():
            parsed = int(value)
        elif len(parts) > 1 and all(part.isdigit() for part in parts):
            parsed = tuple(int(part) for part in parts)
        overrides[key.strip()] = parsed
    return overrides


def schedule_label(overrides: dict[str, Any]) -> str:
    """A `--schedule` contender's name: its overrides as given on the command line."""
    return ",".join(
        f"{key}={'x'.join(map(str, v)) if isinstance(v, tuple) else str(v).lower()}"
        for key, v in overrides.items()
    )


def interleaved_row(
    problem: Problem,
    rounds: int,
    repeat: int,
    budget: float,
    schedules: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """cuBLAS, the heuristic's kernel, the autotuned one (none at `budget` 0: the
    heuristic's figures stand in) and one kernel per `schedules`
    entry (overrides; one the compiler refuses is left out) on the same inputs, timed in
    turns for `rounds` rounds (each round `median_ms` of each, the order rotating)."""
    import mmcomp
    from mmcomp.errors import FusionError, ScheduleError

    sets, run_torch = rotating_torch(problem)
    fusion = fusion_of(problem)
    names = [value.name for value in fusion.inputs]
    heuristic = mmcomp.compile(fusion)
    run_heuristic, heuristic_out = rotating_launch(heuristic.device_kernel, names, sets)
    runs = {"cublas": run_torch, "heuristic": run_heuristic}
    outputs = [heuristic_out]
    tuned, report = heuristic, None
    if budget > 0:
        tuned = mmcomp.autotune(fusion, *(sets[0][name] for name in names), budget_s=budget)
        report = getattr(tuned, "autotune_report", None)
        runs["autotuned"], tuned_out = rotating_launch(tuned.device_kernel, names, sets)
        outputs.append(tuned_out)
    given: dict[str, str] = {}
    for overrides in schedules or []:
        label = schedule_label(overrides)
        try:
            kernel = mmcomp.compile(fusion, **overrides)
        except (FusionError, ScheduleError) as error:
            print(f"  {problem.name}, {label}: refused ({error})", flush=True)
            continue
        runs[label], output = rotating_launch(kernel.device_kernel, names, sets)
        outputs.append(output)
        given[label] = brief(kernel.params)
    times = timed_in_turns(runs, rounds, repeat)
    if budget <= 0:  # no autotuning: the heuristic's kernel stands in for the tuned one
        times["autotuned"] = times["heuristic"]
    for output in outputs:
        check_against_torch(problem, sets[0], output)
    return {
        "problem": problem.name,
        "flops": problem.flops,
        "ms": times,
        "heuristic": brief(heuristic.params),
        "autotuned": brief(tuned.params),
        "given": given,
        "report": report.to_json() if report is not None else None,
    }


def _ratios(row: dict[str, Any], name: str, base: str = "cublas") -> list[float]:
    """Per round: `name`'s speed over `base`'s (base ms / name ms)."""
    return [b / t for b, t in zip(row["ms"][base], row["ms"][name], strict=True)]


def _figure(tflops: float) -> str:
    """TFLOP/s to three digits or so (a decimal below 10)."""
    return f"{tflops:.1f}" if tflops < 10 else f"{tflops:.0f}"


def _spread(ratios: list[float]) -> str:
    """The median and, in brackets, the min-max of per-round ratios."""
    return f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"


def rows_report(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """The `--rows` table (and the raw figures): each row timed in turns, in one process."""

    rows = dict(ROWS)
    groups = list(ROWS) if args.rows == "all" else [g for g in args.rows.split(",") if g]
    unknown = [group for group in groups if group not in ROWS]
    if unknown:
        raise SystemExit(f"--rows: unknown group {unknown[0]!r}; expected {', '.join(ROWS)} or all")
    if args.shapes:
        rows["shapes"] = [
            Problem(f"linear {m}x{n}x{k}", m, n, k, "linear") for m, n, k in args.shapes
        ]
        groups.append("shapes")
    given_lines = [
        "| problem | given schedule | its schedule | given / cuBLAS (spread) | "
        "heuristic / given (spread) |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines = [
        "| problem | cuBLAS TFLOP/s | heuristic TFLOP/s | heuristic / cuBLAS (spread) | "
        "autotuned TFLOP/s | autotuned / cuBLAS (spread) | autotuned / heuristic (spread) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    schedules = [
        "| problem | heuristic's schedule | autotuned schedule | candidates timed |",
        "| --- | --- | --- | --- |",
    ]
    raw: list[dict[str, Any]] = []
    for group in groups:
        medians: dict[str, list[float]] = {"heuristic": [], "autotuned": []}
        for problem in rows[group]:
            row = interleaved_row(problem, args.rounds, args.repeat, args.budget, args.schedule)
            raw.append(row)
            tflops = {
                name: problem.flops / statistics.median(ms) / 1e9 for name, ms in row["ms"].items()
            }
            cells = [row["problem"], _figure(tflops["cublas"])]
            for name in ("heuristic", "autotuned"):
                ratios = _ratios(row, name)
                medians[name].append(statistics.median(ratios))
                cells += [_figure(tflops[name]), _spread(ratios)]
            cells.append(_spread(_ratios(row, "autotuned", "heuristic")))
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
            report = row["report"]
            timed = sum(c["status"] == "timed" for c in report["candidates"]) if report else 0
            tuned_in = f" in {report['elapsed_s']:.1f} s" if report else ""
            schedules.append(
                f"| {row['problem']} | {row['heuristic']} | {row['autotuned']} | "
                f"{timed}{tuned_in} |"
            )
            for label, chosen in row["given"].items():
                given_lines.append(
                    f"| {row['problem']} | {label} | {chosen} | {_spread(_ratios(row, label))} "
                    f"| {_spread(_ratios(row, 'heuristic', label))} |"
                )
                print(given_lines[-1], flush=True)
        heuristic = statistics.geometric_mean(medians["heuristic"])
        autotuned = statistics.geometric_mean(medians["autotuned"])
        lines.append(f"| geomean, {group} | | | {heuristic:.3f} | | {autotuned:.3f} | |")
        print(lines[-1], flush=True)
    header = [
        *run_header("# Interleaved rows: cuBLAS, the heuristic's kernel, the autotuned kernel"),
        f"- method: {args.rounds} rounds in one process; each round times cuBLAS "
        "(`torch.nn.functional.linear`), the heuristic's kernel and the autotuned one "
        f"(`mmcomp.autotune`, budget {args.budget:g} s, on the row's inputs) with `median_ms` "
        f"({max(args.repeat // BATCH, 5)} batches of {BATCH} launches), the order rotating by "
        "round, inputs rotated over copies where one set fits in L2; a ratio is cuBLAS's "
        "time over the kernel's (above 1: faster than cuBLAS), the median over the rounds "
        "and, in brackets, the min-max of the per-round ratios; both kernels' outputs are "
        "checked against torch",
        "",
    ]
    given = [*given_lines, ""] if len(given_lines) > 2 else []
    text = "\n".join([*header, *lines, "", *schedules, "", *given])
    return text, raw


FP8_SHAPES = ((8192, 8192, 8192), (4096, 14336, 5120), (128, 14336, 4096), (16, 14336, 4096))
"""The fp8 rows (M, N, K): the two large shapes and the two decode ones of the fp8 targets."""


def fp8_fusion(m: int, n: int, k: int, mode: str) -> Any:
    """bf16(dequant(a) dequant(w)^T) of e4m3 factors with scales of `mode` (tensor, row,
    block)."""
    import mmcomp

    f = mmcomp.Fusion("fp8_linear")
    a = f.input("a", [m, k], "f8e4m3")
    w = f.input("w", [n, k], "f8e4m3")
    blocks_k, blocks_n = -(-k // 128), -(-n // 128)
    shapes = {
        "tensor": ([], []),
        "row": ([m], [n]),
        "block": ([m, blocks_k], [blocks_n, blocks_k]),
    }[mode]
    scale_a = f.input("scale_a", shapes[0], "f32")
    scale_b = f.input("scale_b", shapes[1], "f32")
    f.output(f.cast(f.linear(a, w, scale_a=scale_a, scale_b=scale_b), "bf16"))
    return f


def fp8_row(
    m: int,
    n: int,
    k: int,
    mode: str,
    rounds: int,
    repeat: int,
    schedules: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """torch._scaled_mm, the heuristic's kernel and one kernel per `schedules` entry
    (overrides; one the compiler refuses is left out) on the same fp8 inputs, timed in
    turns; each kernel's output checked first."""
    import numpy as np
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp
    from mmcomp.errors import FusionError, ScheduleError

    a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
    scaled_mm = torch._scaled_mm  # pyright: ignore[reportPrivateImportUsage]
    anchor = mode
    if mode == "tensor":
        scale_a = torch.rand((), device="cuda") + 0.5
        scale_b = torch.rand((), device="cuda") + 0.5
        torch_a, torch_b = scale_a, scale_b
    elif mode == "row":
        scale_a = torch.rand(m, device="cuda") + 0.5
        scale_b = torch.rand(n, device="cuda") + 0.5
        torch_a, torch_b = scale_a[:, None].contiguous(), scale_b[None, :].contiguous()
    else:
        blocks_k, blocks_n = -(-k // 128), -(-n // 128)
        scale_a = torch.rand(m, blocks_k, device="cuda") + 0.5
        scale_b = torch.rand(blocks_n, blocks_k, device="cuda") + 0.5
        # torch's block-wise form: a's 1 x 128 scales outer-dim-major ([M, K/128] with M
        # contiguous), b's 128 x 128 ones [K/128, N/128] (b = w^T).
        torch_a, torch_b = scale_a.t().contiguous().t(), scale_b.t()
        try:
            scaled_mm(a, w.t(), torch_a, torch_b, out_dtype=torch.bfloat16)
            torch.cuda.synchronize()
        except (RuntimeError, ValueError) as error:
            print(
                f"torch._scaled_mm has no block-wise scaling here ({error}); the block "
                "rows are timed against its per-tensor cuBLAS kernel",
                flush=True,
            )
            anchor = "tensor"
            torch_a = torch.ones((), device="cuda")
            torch_b = torch.ones((), device="cuda")

    def run_torch() -> Any:
        return scaled_mm(a, w.t(), torch_a, torch_b, out_dtype=torch.bfloat16)

    def dequantized() -> Any:
        """bf16 of float32 A W^T of the dequantized factors (the block rows' reference)."""
        rows = torch.arange(n, device="cuda") // 128
        a_scales = scale_a.repeat_interleave(128, dim=1)[:, :k]
        w_scales = scale_b[rows].repeat_interleave(128, dim=1)[:, :k]
        return ((a.float() * a_scales) @ (w.float() * w_scales).t()).to(torch.bfloat16)

    fusion = fp8_fusion(m, n, k, mode)
    kernel = mmcomp.compile(fusion)
    inputs = {"a": a, "w": w, "scale_a": scale_a, "scale_b": scale_b}
    run_kernel, output = rotating_launch(kernel.device_kernel, list(inputs), [inputs])
    runs = {"cublas": run_torch, "heuristic": run_kernel}
    outputs = {"heuristic": output}
    given: dict[str, str] = {}
    for overrides in schedules or []:
        label = schedule_label(overrides)
        try:
            contender = mmcomp.compile(fusion, **overrides)
        except (FusionError, ScheduleError) as error:
            print(f"  fp8 {mode} {m}x{n}x{k}, {label}: refused ({error})", flush=True)
            continue
        runs[label], outputs[label] = rotating_launch(
            contender.device_kernel, list(inputs), [inputs]
        )
        given[label] = brief(contender.params)
    times = timed_in_turns(runs, rounds, repeat)
    torch.cuda.synchronize()
    want = (dequantized() if mode == "block" else run_torch()).float().cpu().numpy()
    errors: dict[str, float] = {}
    for name, out in outputs.items():
        got = out.to_host().astype(np.float32)
        errors[name] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        if not errors[name] < 2e-2:
            raise ValueError(
                f"fp8 {mode} {m}x{n}x{k} ({name}): relative error {errors[name]:.3g} against torch"
            )
    return {
        "ms": times,
        "heuristic": brief(kernel.params),
        "error": errors["heuristic"],
        "errors": errors,
        "given": given,
        "anchor": anchor,
    }


def fp8_report(args: argparse.Namespace) -> str:
    """The `--fp8` table: each mode's rows against torch._scaled_mm, timed in turns."""
    modes = args.fp8.split(",")
    if any(mode not in ("tensor", "row", "block") for mode in modes):
        raise SystemExit(f"--fp8: expected tensor, row and/or block, found {args.fp8!r}")
    lines = [
        "| mode | problem | cuBLAS fp8 TFLOP/s | mmcomp TFLOP/s | mmcomp / cuBLAS (spread) | "
        "rel. error vs torch | schedule |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    given_lines = [
        "| mode | problem | given schedule | its schedule | TFLOP/s | given / cuBLAS (spread) "
        "| heuristic / given (spread) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    shapes = args.shapes or FP8_SHAPES
    for mode in modes:
        for m, n, k in shapes:
            row = fp8_row(m, n, k, mode, args.rounds, args.repeat, args.schedule)
            flops = 2 * m * n * k
            tflops = {name: flops / statistics.median(ms) / 1e9 for name, ms in row["ms"].items()}
            ratios = _ratios(row, "heuristic")
            label = mode if row["anchor"] == mode else f"{mode} (vs cuBLAS {row['anchor']})"
            lines.append(
                f"| {label} | {m}x{n}x{k} | {_figure(tflops['cublas'])} | "
                f"{_figure(tflops['heuristic'])} | {_spread(ratios)} | {row['error']:.2g} | "
                f"{row['heuristic']} |"
            )
            print(lines[-1], flush=True)
            for name, schedule in row["given"].items():
                given_lines.append(
                    f"| {label} | {m}x{n}x{k} | {name} | {schedule} | "
                    f"{_figure(tflops[name])} | {_spread(_ratios(row, name))} | "
                    f"{_spread(_ratios(row, 'heuristic', name))} |"
                )
                print(given_lines[-1], flush=True)
    header = [
        *run_header("# fp8 linears: torch._scaled_mm against the heuristic's kernel"),
        f"- method: e4m3 inputs, bf16 output; {args.rounds} rounds in one process, each "
        f"timing both with `median_ms` ({max(args.repeat // BATCH, 5)} batches of {BATCH} "
        "launches), the order rotating by round; a ratio is cuBLAS's time over the kernel's, "
        "the median over the rounds and, in brackets, the min-max",
        "",
    ]
    given = ["", *given_lines] if len(given_lines) > 2 else []
    return "\n".join([*header, *lines, *given, ""])


def main(argv: list[str] | None = None) -> int:
    """Run the suite, print the table and write it to --out."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two shapes only")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--out", default="")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument(
        "--call",
        action="store_true",
        help="the public call's rows instead: beside the bound launch, host time, LlamaMLP",
    )
    parser.add_argument("--tokens", type=int, default=8192, help="LlamaMLP tokens (--call)")
    parser.add_argument(
        "--rows",
        default="",
        help="interleaved rows instead: decode, decode-large, fp16, large (comma-separated) or all",
    )
    parser.add_argument(
        "--fp8", default="", help="fp8 rows instead: scaling modes tensor, row and/or block"
    )
    parser.add_argument(
        "--shapes",
        type=parse_shapes,
        default=[],
        help="bf16 linear rows MxNxK (comma-separated) beside or instead of --rows' groups; "
        "with --fp8, its shapes instead of FP8_SHAPES",
    )
    parser.add_argument(
        "--schedule",
        type=parse_schedule,
        action="append",
        default=[],
        help="a contender with these overrides, KEY=VALUE[,KEY=VALUE] (--rows, --shapes, "
        "--fp8; repeatable)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds per row (--rows, --fp8)")
    parser.add_argument(
        "--budget",
        type=float,
        default=15.0,
        help="autotune seconds (--rows; 0: no autotuning, the heuristic's kernel in its place)",
    )
    parser.add_argument("--json", default="", help="also write the raw figures here (--rows)")
    parser.add_argument(
        "--dynamic",
        action="store_true",
        help="a dynamic-M kernel against static ones of the same M and schedule instead "
        "(tools/bench_dynamic.py, M = 128, 4096, 8192 at N = 14336, K = 4096)",
    )
    parser.add_argument(
        "--grouped",
        action="store_true",
        help="grouped GEMMs against torch._grouped_mm instead (tools/bench_grouped.py: the "
        "MoE rows, the fused gate/up SwiGLU, 64 experts of 1-16 tokens masked)",
    )
    args = parser.parse_args(argv)
    import torch  # pyright: ignore[reportMissingImports]

    if args.grouped:
        import bench_grouped

        out = ["--out", args.out] if args.out else []
        rounds = ["--rounds", str(args.rounds), "--repeat", str(args.repeat)]
        bench_grouped.main([*rounds, *out])
        return 0

    if args.dynamic:
        import bench_dynamic

        out = ["--out", args.out] if args.out else []
        bench_dynamic.main(["--rounds", str(args.rounds), "--repeat", str(args.repeat), *out])
        return 0

    if args.fp8:
        text = fp8_report(args)
        print(text)
        if args.out:
            Path(args.out).write_text(text)
        return 0

    if args.rows or args.shapes:
        text, raw = rows_report(args)
        print(text)
        if args.out:
            Path(args.out).write_text(text)
        if args.json:
            Path(args.json).write_text(json.dumps(raw, indent=1))
        return 0

    if args.call:
        text = call_report(args)
        print(text)
        if args.out:
            Path(args.out).write_text(text)
        return 0

    rows = [
        "| problem | mmcomp TFLOP/s | mmcomp schedule | torch TFLOP/s | ratio | others (TFLOP/s) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    choices = ["| problem | the heuristic's schedule |", "| --- | --- |"]
    for problem in suite(args.quick):
        timing = bench_problem(problem, args.repeat, not args.no_compile)
        heuristic = timing["chosen"].get(short({}))
        if heuristic is not None:
            choices.append(f"| {problem.name} | {heuristic} |")
        theirs = problem.flops / timing["torch"] / 1e9
        measured = {k: v for k, v in timing["mmcomp"].items() if isinstance(v, float)}
        failed = {k: v for k, v in timing["mmcomp"].items() if not isinstance(v, float)}
        others = [f"{k}: failed ({v})" for k, v in failed.items()]
        inductor = timing.get("torch.compile")
        if isinstance(inductor, float):
            others.append(f"torch.compile: {problem.flops / inductor / 1e9:.0f}")
        elif inductor is not None:
            others.append(f"torch.compile: failed ({inductor})")
        if not measured:
            rows.append(f"| {problem.name} | - | - | {theirs:.0f} | - | {'; '.join(others)} |")
            print(rows[-1], flush=True)
            continue
        best = min(measured, key=lambda k: measured[k])
        mine = problem.flops / measured[best] / 1e9
        others += [f"{k}: {problem.flops / v / 1e9:.0f}" for k, v in measured.items() if k != best]
        rows.append(
            f"| {problem.name} | {mine:.0f} | {best} | {theirs:.0f} | {mine / theirs:.2f} | "
            f"{'; '.join(others)} |"
        )
        print(rows[-1], flush=True)
    device = torch.cuda.get_device_name()
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join(sys.argv[1:] if argv is None else argv)
    text = "\n".join(
        [
            "# Performance",
            "",
            f"- date: {stamp}",
            f"- device: {device}; torch {torch.__version__} (CUDA {torch.version.cuda}); "
            f"python {platform.python_version()}",
            f"- command: `python tools/bench.py {command}`",
            "- method: bf16, random normal inputs shared by all contenders; 5 warm-up "
            f"launches, then {max(args.repeat // BATCH, 5)} batches of {BATCH} launches queued "
            "between two CUDA events, the median of the per-launch means (torch: the faster "
            "of its timings before and after mmcomp's); inputs rotated "
            "over copies when one set fits in L2; TFLOP/s counts matmul FLOPs only; torch is "
            "eager (cuBLAS for the matmuls); mmcomp's schedules use split_k = 1 and the "
            "epilogue named in the schedule; each schedule's first output is checked against "
            "torch",
            "",
            *rows,
            "",
            "What the heuristic chose (`mmcomp.compile` with no schedule keywords):",
            "",
            *choices,
            "",
        ]
    )
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
