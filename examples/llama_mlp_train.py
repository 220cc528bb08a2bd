"""A LlamaMLP train step with mmcomp's GatedMLP: gradients, then timings and memory.

    python examples/llama_mlp_train.py [--tokens 8192] [--hidden 4096] [--intermediate 14336]
                                       [--repeat 10] [--no-compile]
    python examples/llama_mlp_train.py --cpu   # tiny shapes on the interp back end

Builds transformers' LlamaMLP (random N(0, 0.02) weights, nothing downloaded; a stand-in of
the same math where transformers is absent) in bf16, and `mmcomp.torch.GatedMLP` from it in
both policies (the pre-activations saved, or recomputed). Checks the gradients of x and of
the three weights of each against float64 autograd of the module's math, beside the
module's own bf16 error; then times the train step (forward, MSE loss, backward) of the
module eager and under torch.compile and of GatedMLP eager and compiled, in turns (medians
over rounds, counted at 3 x 6 T x hidden x intermediate FLOPs), and the peak memory of one
step of each. Needs an sm_90 GPU unless --cpu.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402  # pyright: ignore[reportMissingImports]

import mmcomp.torch as mt  # noqa: E402


class StandIn(torch.nn.Module):
    """LlamaMLP's math (silu), where transformers is absent."""

    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = torch.nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = torch.nn.Linear(intermediate, hidden, bias=False)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x: Any) -> Any:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def llama_mlp(hidden: int, intermediate: int, device: str) -> Any:
    """transformers' LlamaMLP (or the stand-in) in bf16, weights from N(0, 0.02)."""
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
        mlp = StandIn(hidden, intermediate)
    mlp = mlp.to(device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        for parameter in mlp.parameters():
            parameter.normal_(0.0, 0.02)
    return mlp


def gradients(module: Any, parameters: list[Any], x: Any, dy: Any) -> list[Any]:
    """x's gradient and each parameter's, at x with output adjoint dy."""
    x = x.detach().clone().requires_grad_()
    for parameter in parameters:
        parameter.grad = None
    module(x).backward(dy)
    return [x.grad] + [parameter.grad for parameter in parameters]


def relative_error(got: Any, want: Any) -> float:
    """max |got - want| / max |want| (inf where got is not finite)."""
    got = got.double()
    if not bool(torch.isfinite(got).all()):
        return float("inf")
    return float((got - want).abs().max() / want.abs().max())


def check(mlp: Any, modules: dict[str, Any], tokens: int, device: str) -> None:
    """Each module's gradients against float64 autograd of the module's math."""
    parameters = [mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight]
    x = torch.randn(tokens, mlp.gate_proj.in_features, dtype=torch.bfloat16, device=device)
    dy = torch.randn(tokens, mlp.gate_proj.in_features, dtype=torch.bfloat16, device=device)
    exact = copy.deepcopy(mlp).double()
    exact_parameters = [exact.gate_proj.weight, exact.up_proj.weight, exact.down_proj.weight]
    want = [g.clone() for g in gradients(exact, exact_parameters, x.double(), dy.double())]
    print(f"gradient error against float64 at {tokens} tokens (x, gate, up, down):")
    for name, module in modules.items():
        got = gradients(module, parameters, x, dy)
        errors = ", ".join(f"{relative_error(g, w):.2e}" for g, w in zip(got, want, strict=True))
        print(f"  {name:28s} {errors}")


def time_steps(
    steps: dict[str, Callable[[], Any]], rounds: int, device: str
) -> dict[str, list[float]]:
    """Milliseconds of each step, timed in turns (the order rotating every round)."""
    names = list(steps)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:
        steps[name]()  # compile and warm up
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            steps[name]()
            if device == "cuda":
                torch.cuda.synchronize()
            times[name].append((time.perf_counter() - start) * 1e3)
    return times


def peak_memory(step: Callable[[], Any]) -> float:
    """GiB allocated at the peak of one step (beyond what was allocated before it)."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    step()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--repeat", type=int, default=10, help="rounds of timing")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--cpu", action="store_true", help="tiny shapes on the interp back end")
    args = parser.parse_args(argv)
    device = "cpu" if args.cpu else "cuda"
    if args.cpu:
        args.tokens, args.hidden, args.intermediate, args.repeat = 64, 32, 64, 2
    schedule = {"backend": "interp"} if args.cpu else {}
    mlp = llama_mlp(args.hidden, args.intermediate, device)
    modules: dict[str, Any] = {"module": mlp}
    for recompute in (False, True):
        name = f"GatedMLP(recompute={recompute})"
        modules[name] = mt.GatedMLP(
            mlp, gate_up_schedule=schedule, down_schedule=schedule, recompute=recompute
        )
    check(mlp, modules, min(args.tokens, 300), device)

    x = torch.randn(args.tokens, args.hidden, dtype=torch.bfloat16, device=device)
    target = torch.randn(args.tokens, args.hidden, dtype=torch.bfloat16, device=device)

    def step_of(module: Any) -> Callable[[], Any]:
        def loss_of(x: Any, target: Any) -> Any:
            return torch.nn.functional.mse_loss(module(x), target)

        def step() -> Any:
            loss = loss_of(x, target)
            loss.backward()
            return loss

        return step

    steps = {name: step_of(module) for name, module in modules.items()}
    if not args.no_compile:
        for name, module in list(modules.items()):
            compiled = torch.compile(module, fullgraph=True)
            steps[f"{name} compiled"] = step_of(compiled)
    times = time_steps(steps, args.repeat, device)
    flops = 3 * 6 * args.tokens * args.hidden * args.intermediate
    base = statistics.median(times["module"])
    print(f"train step at {args.tokens} tokens, {args.hidden} -> {args.intermediate}:")
    for name, found in times.items():
        median = statistics.median(found)
        memory = f", peak {peak_memory(steps[name]):.2f} GiB" if device == "cuda" else ""
        print(
            f"  {name:37s} {median:8.2f} ms  {flops / median / 1e9:7.1f} TFLOP/s  "
            f"{base / median:5.2f}x eager module{memory}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
