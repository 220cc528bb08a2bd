"""A Llama MLP under tensor parallelism: mmcomp's TensorParallelGatedMLP against the float64
reference and timed against the same split done with torch's nn.Linear.

    torchrun --nproc-per-node N examples/tp_mlp.py [--tokens 16 8192] [--hidden 8192]
        [--intermediate 28672] [--repeat 50] [--micro-batches 2] [--no-compile] [--cpu]
        [--json PATH]

On GPUs (one per rank, NCCL) the defaults are Llama-70B's MLP (hidden 8192, intermediate
28672, bf16, weights N(0, 0.02)) at 16 and 8192 tokens. Without CUDA or with --cpu (gloo,
each rank's kernels on mmcomp's interp back end) they are small: hidden 64, intermediate
256, 16 and 300 tokens; the timings then say nothing about speed, only that the run works.

Every rank builds the whole MLP from the same seed and the same x, so each checks its
output (the all-reduced sum) against the float64 reference of the whole module on its own
device. The contenders, all split the Megatron way (gate/up by rows, down by columns, one
all-reduce per forward):

- "torch eager": each rank's nn.Linear blocks, `down(silu(gate(x)) * up(x))`, all-reduce;
- "torch compiled": the same with the rank's part under torch.compile (the all-reduce
  outside it);
- "mmcomp": TensorParallelGatedMLP (one gate/up kernel and one down kernel per rank);
- "mmcomp compiled": the same under torch.compile(fullgraph=True) (the collectives traced
  as functional collectives);
- "mmcomp micro-batched": the same with `micro_batches` parts, each part's all-reduce
  overlapping the next part's kernels (on GPUs only where the tokens are at least 256 per
  part).

They are timed in turns (each round times BATCH calls of each, the order rotating), every
rank in step (the collectives pair them); a round's time is the slowest rank's. Rank 0
prints the errors and the median, lowest and highest milliseconds per call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BATCH = 10
"""Calls timed between one pair of clock readings."""
TOLERANCE = 2e-2
"""Largest relative error of a bf16 output against float64 that passes."""
INTERP = {"backend": "interp", "tile": (128, 128, 64)}
"""The kernels' schedule on CPUs (every CTA simulated in numpy)."""


class Context:
    """The rank, the group's size and the device of this process."""

    def __init__(self, cpu: bool) -> None:
        import torch  # pyright: ignore[reportMissingImports]
        import torch.distributed as dist  # pyright: ignore[reportMissingImports]

        self.cuda = torch.cuda.is_available() and not cpu
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if self.cuda:
            self.device = torch.device("cuda", local_rank)
            torch.cuda.set_device(self.device)
            dist.init_process_group("nccl", device_id=self.device)
        else:
            self.device = torch.device("cpu")
            dist.init_process_group("gloo")
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()

    def synchronize(self) -> None:
        import torch  # pyright: ignore[reportMissingImports]

        if self.cuda:
            torch.cuda.synchronize(self.device)


def llama_mlp(hidden: int, intermediate: int, device: Any) -> Any:
    """The Llama MLP (transformers' LlamaMLP where installed) in bf16 on `device`, weights
    N(0, 0.02) from seed 0: the same on every rank."""
    import torch  # pyright: ignore[reportMissingImports]

    with torch.device("meta"):  # built without memory, then allocated on `device`
        try:
            import transformers  # pyright: ignore[reportMissingImports]
            from transformers.models.llama.modeling_llama import (  # pyright: ignore[reportMissingImports]
                LlamaMLP,
            )

            config = transformers.LlamaConfig(
                hidden_size=hidden, intermediate_size=intermediate, hidden_act="silu"
            )
            mlp = LlamaMLP(config)
        except ImportError:
            mlp = torch.nn.Module()
            mlp.gate_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            mlp.up_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            mlp.down_proj = torch.nn.Linear(intermediate, hidden, bias=False)
            mlp.act_fn = torch.nn.SiLU()
    mlp = mlp.to_empty(device=device).to(torch.bfloat16)
    generator = torch.Generator(device=device).manual_seed(0)
    with torch.no_grad():
        for parameter in mlp.parameters():
            parameter.normal_(0.0, 0.02, generator=generator)
    return mlp


def reference(mlp: Any, x: Any) -> Any:
    """The whole module's math in float64: down(silu(x Wg^T) * (x Wu^T))."""
    import torch  # pyright: ignore[reportMissingImports]

    x64 = x.double()
    gate = x64 @ mlp.gate_proj.weight.double().t()
    up = x64 @ mlp.up_proj.weight.double().t()
    return (torch.nn.functional.silu(gate) * up) @ mlp.down_proj.weight.double().t()


def relative_error(got: Any, want: Any) -> float:
    """max |got - want| / max |want| (inf when got is not finite)."""
    import torch  # pyright: ignore[reportMissingImports]

    got = got.double()
    if not bool(torch.isfinite(got).all()):
        return float("inf")
    return float((got - want).abs().max() / want.abs().max())


def torch_split(mlp: Any, rank: int, world: int, compiled: bool) -> Callable[[Any], Any]:
    """The same tensor-parallel split with nn.Linear: this rank's blocks, one all-reduce."""
    import torch  # pyright: ignore[reportMissingImports]
    import torch.distributed as dist  # pyright: ignore[reportMissingImports]

    def block(linear: Any, dim: int) -> Any:
        size = linear.weight.shape[dim] // world
        weight = linear.weight.detach().narrow(dim, rank * size, size).contiguous()
        local = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, device="meta")
        local.weight = torch.nn.Parameter(weight, requires_grad=False)
        return local

    gate, up = block(mlp.gate_proj, 0), block(mlp.up_proj, 0)
    down = block(mlp.down_proj, 1)

    def part(x: Any) -> Any:
        return down(torch.nn.functional.silu(gate(x)) * up(x))

    local = torch.compile(part) if compiled else part

    def forward(x: Any) -> Any:
        y = local(x)
        dist.all_reduce(y)
        return y

    return forward


def interleaved(
    context: Context, runs: dict[str, Callable[[], Any]], repeat: int
) -> dict[str, tuple[float, float, float]]:
    """(median, lowest, highest) milliseconds per call of each run, timed in turns; each
    round's time is the slowest rank's."""
    import torch  # pyright: ignore[reportMissingImports]
    import torch.distributed as dist  # pyright: ignore[reportMissingImports]

    names = list(runs)
    for name in names:
        for _ in range(3):
            runs[name]()
    context.synchronize()
    rounds = max(repeat // BATCH, 1)
    times = torch.zeros(len(names), rounds, dtype=torch.float64, device=context.device)
    for turn in range(rounds):
        for index in range(len(names)):
            position = (index + turn) % len(names)
            context.synchronize()
            dist.barrier()
            context.synchronize()
            if context.cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(BATCH):
                    runs[names[position]]()
                end.record()
                end.synchronize()
                elapsed = start.elapsed_time(end)
            else:
                begin = time.perf_counter()
                for _ in range(BATCH):
                    runs[names[position]]()
                elapsed = (time.perf_counter() - begin) * 1e3
            times[position, turn] = elapsed / BATCH
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    found: dict[str, tuple[float, float, float]] = {}
    for index, name in enumerate(names):
        values = times[index].tolist()
        found[name] = (statistics.median(values), min(values), max(values))
    return found


def run(
    context: Context,
    tokens_list: list[int],
    hidden: int,
    intermediate: int,
    repeat: int,
    micro_batches: int,
    compiled: bool,
) -> dict[str, Any]:
    """Check and time every contender at each token count; returns errors and timings."""
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp.torch as mt

    mlp = llama_mlp(hidden, intermediate, context.device)
    schedules: dict[str, Any] = {} if context.cuda else dict(INTERP)
    mmcomp_tp = mt.TensorParallelGatedMLP(mlp, gate_up_schedule=schedules, down_schedule=schedules)
    overlapped = mt.TensorParallelGatedMLP(
        mlp, micro_batches=micro_batches, gate_up_schedule=schedules, down_schedule=schedules
    )
    contenders: dict[str, Callable[[Any], Any]] = {
        "torch eager": torch_split(mlp, context.rank, context.world, False),
    }
    if compiled:
        contenders["torch compiled"] = torch_split(mlp, context.rank, context.world, True)
    contenders["mmcomp"] = mmcomp_tp
    if compiled:
        contenders["mmcomp compiled"] = torch.compile(mmcomp_tp, fullgraph=True, dynamic=True)
    result: dict[str, Any] = {
        "ranks": context.world,
        "device": torch.cuda.get_device_name(context.device) if context.cuda else "cpu",
        "hidden": hidden,
        "intermediate": intermediate,
        "rows": [],
    }
    for tokens in tokens_list:
        runs = dict(contenders)
        if micro_batches > 1 and tokens >= (256 if context.cuda else 1) * micro_batches:
            runs[f"mmcomp micro-batched ({micro_batches})"] = overlapped
        generator = torch.Generator(device=context.device).manual_seed(tokens)
        x = torch.randn(
            tokens, hidden, generator=generator, device=context.device, dtype=torch.bfloat16
        )
        with torch.inference_mode():
            want = reference(mlp, x)
            errors = {name: relative_error(module(x), want) for name, module in runs.items()}
            del want
            timings = interleaved(
                context, {name: lambda m=module, x=x: m(x) for name, module in runs.items()}, repeat
            )
        result["rows"].append({"tokens": tokens, "errors": errors, "ms": timings})
    return result


def report(result: dict[str, Any]) -> str:
    """The rows as a table: error and milliseconds of each contender, speed-up over torch
    eager and compiled."""
    lines = [
        f"{result['ranks']} ranks on {result['device']}: hidden {result['hidden']}, "
        f"intermediate {result['intermediate']} (each rank "
        f"{result['intermediate'] // result['ranks']}), bf16"
    ]
    for row in result["rows"]:
        lines.append(f"  {row['tokens']} tokens:")
        eager = row["ms"]["torch eager"][0]
        compiled = row["ms"].get("torch compiled", (None,))[0]
        for name, (median, low, high) in row["ms"].items():
            speedups = f"x{eager / median:.2f} vs eager"
            if compiled is not None:
                speedups += f", x{compiled / median:.2f} vs compiled"
            lines.append(
                f"    {name:28s} error {row['errors'][name]:.2e}  {median:9.3f} ms "
                f"[{low:.3f}, {high:.3f}]  {speedups}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import torch  # pyright: ignore[reportMissingImports]
    import torch.distributed as dist  # pyright: ignore[reportMissingImports]

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=None)
    parser.add_argument("--hidden", type=int, default=None)
    parser.add_argument("--intermediate", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=50, help="calls per contender")
    parser.add_argument("--micro-batches", type=int, default=2)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="gloo and interp kernels, GPUs or not")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    arguments = parser.parse_args(argv)
    context = Context(arguments.cpu)
    cuda = context.cuda
    tokens = arguments.tokens or ([16, 8192] if cuda else [16, 300])
    hidden = arguments.hidden or (8192 if cuda else 64)
    intermediate = arguments.intermediate or (28672 if cuda else 256)
    try:
        result = run(
            context,
            tokens,
            hidden,
            intermediate,
            arguments.repeat,
            arguments.micro_batches,
            not arguments.no_compile,
        )
        worst = max(error for row in result["rows"] for error in row["errors"].values())
        worst_tensor = torch.tensor([worst], dtype=torch.float64, device=context.device)
        dist.all_reduce(worst_tensor, op=dist.ReduceOp.MAX)
        if context.rank == 0:
            print(report(result))
            if arguments.json is not None:
                arguments.json.write_text(json.dumps(result, indent=2))
        passed = float(worst_tensor.item()) < TOLERANCE
        if context.rank == 0:
            verdict = "passed" if passed else "FAILED"
            print(f"largest error over the ranks {float(worst_tensor.item()):.2e}: {verdict}")
        return 0 if passed else 1
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
