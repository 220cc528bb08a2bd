"""transformers' LlamaMLP with mmcomp's GatedMLP swapped in: values, then timings.

    python examples/llama_mlp.py [--tokens 8192] [--hidden 4096] [--intermediate 14336]
                                 [--repeat 30] [--no-compile] [--tuned]

Builds transformers' LlamaMLP (random weights, nothing downloaded) in bf16 on the GPU,
builds `mmcomp.torch.GatedMLP` from it (sharing its weights: no copy), checks both outputs
against a float64 reference of the module's math (down(silu(x Wg^T) * (x Wu^T))), and times
eager, torch.compile and CUDA-graph replay of each, all of them in turns in one block (so
that modes compare as well as modules). Needs an sm_90 GPU, torch and transformers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BATCH = 10
"""Calls queued between one pair of CUDA events."""
TOLERANCE = 2e-2
"""Largest relative error of GatedMLP's bf16 output against float64 that passes."""


def llama_mlp(hidden: int, intermediate: int) -> Any:
    """transformers' LlamaMLP in bf16 on the GPU, weights drawn from N(0, 0.02)."""
    import torch  # pyright: ignore[reportMissingImports]
    import transformers  # pyright: ignore[reportMissingImports]
    from transformers.models.llama.modeling_llama import (  # pyright: ignore[reportMissingImports]
        LlamaMLP,
    )

    config = transformers.LlamaConfig(
        hidden_size=hidden, intermediate_size=intermediate, hidden_act="silu"
    )
    mlp = LlamaMLP(config).to(device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for parameter in mlp.parameters():
            parameter.normal_(0.0, 0.02)
    return mlp


def reference(mlp: Any, x: Any) -> Any:
    """The module's math in float64: down(silu(x Wg^T) * (x Wu^T))."""
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


def interleaved_ms(runs: dict[Any, Callable[[], Any]], repeat: int) -> dict[Any, float]:
    """Median milliseconds per call of each run, timed in turns (see `interleaved_spread`)."""
    return {name: median for name, (median, _, _) in interleaved_spread(runs, repeat).items()}


def interleaved_spread(
    runs: dict[Any, Callable[[], Any]], repeat: int
) -> dict[Any, tuple[float, float, float]]:
    """(median, lowest, highest) milliseconds per call of each run over the rounds, timed
    in turns: every round times BATCH calls of each (queued between two CUDA events, the
    order rotating from round to round), so that the clock and power drift of a long
    measurement falls on all of them alike."""
    import torch  # pyright: ignore[reportMissingImports]

    names = list(runs)
    for name in names:
        for _ in range(3):
            runs[name]()
    torch.cuda.synchronize()
    times: dict[Any, list[float]] = {name: [] for name in names}
    for turn in range(max(repeat // BATCH, 5)):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(BATCH):
                runs[name]()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / BATCH)
    return {
        name: (statistics.median(values), min(values), max(values))
        for name, values in times.items()
    }


def graphed(module: Any, x: Any) -> Callable[[], Any]:
    """A replay of `module(x)` captured in a CUDA graph (x is its static input)."""
    import torch  # pyright: ignore[reportMissingImports]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        module(x)  # warm-up outside the capture (kernels compiled and loaded)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        module(x)
    return graph.replay


TUNED = (
    {"tile": (128, 128, 64), "warp_specialization": "cooperative", "raster": "m", "swizzle": 8},
    {"tile": (128, 256, 64), "warp_specialization": "cooperative", "cluster": (2, 1)},
)
"""The gate/up and down schedules tools/bench.py found fastest at 8192 tokens (its
silu(AW1)*(AW2) and linear 8192x4096x14336 rows), for the "GatedMLP tuned" row."""


def run(
    tokens: int = 8192,
    hidden: int = 4096,
    intermediate: int = 14336,
    repeat: int = 30,
    compiled: bool = True,
    tuned: bool = False,
) -> dict[str, Any]:
    """Check and time LlamaMLP and GatedMLP (and GatedMLP with the TUNED schedules);
    returns errors, milliseconds and speed-ups over LlamaMLP."""
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp.torch as mt

    mlp = llama_mlp(hidden, intermediate)
    modules: dict[str, Any] = {"LlamaMLP": mlp, "GatedMLP": mt.GatedMLP(mlp)}
    if tuned:
        modules["GatedMLP tuned"] = mt.GatedMLP(mlp, None, *TUNED)
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device="cuda")
    result: dict[str, Any] = {"tokens": tokens, "hidden": hidden, "intermediate": intermediate}
    with torch.inference_mode():
        want = reference(mlp, x)
        result["error"] = {
            name: relative_error(module(x), want) for name, module in modules.items()
        }
        del want
        modes: dict[str, dict[str, Callable[[], Any]]] = {
            "eager": {name: (lambda m=module: m(x)) for name, module in modules.items()}
        }
        if compiled:
            fast = {name: torch.compile(module) for name, module in modules.items()}
            modes["torch.compile"] = {name: (lambda f=f: f(x)) for name, f in fast.items()}
        modes["CUDA graph"] = {name: graphed(module, x.clone()) for name, module in modules.items()}
        # Every module in every mode in one block of turns: the GPU's clock drifts over a
        # run, so modes timed one block after another do not compare.
        runs = {(name, mode): run for mode, named in modes.items() for name, run in named.items()}
        timed = interleaved_spread(runs, repeat)
        times: dict[str, dict[str, float]] = {
            name: {mode: timed[name, mode][0] for mode in modes} for name in modules
        }
        result["spread"] = {
            name: {mode: timed[name, mode][1:] for mode in modes} for name in modules
        }
    result["ms"] = times
    result["flops"] = 3 * 2.0 * tokens * hidden * intermediate
    result["speedup"] = {
        name: {mode: times["LlamaMLP"][mode] / ms for mode, ms in times[name].items()}
        for name in modules
        if name != "LlamaMLP"
    }
    return result


def table(result: dict[str, Any]) -> str:
    """The result as a markdown table."""
    modes = list(result["ms"]["LlamaMLP"])
    lines = [
        f"LlamaMLP, {result['tokens']} tokens, hidden {result['hidden']}, intermediate "
        f"{result['intermediate']}, bf16: median ms per forward (TFLOP/s of the three "
        "matmuls) [lowest-highest round], every module in every mode timed in turns",
        "",
        "| module | rel. error vs float64 | " + " | ".join(modes) + " |",
        "| --- | --- | " + " | ".join("---" for _ in modes) + " |",
    ]
    for name, times in result["ms"].items():
        spread = result["spread"][name]
        cells = [
            f"{times[mode]:.3f} ({result['flops'] / times[mode] / 1e9:.0f}) "
            f"[{spread[mode][0]:.3f}-{spread[mode][1]:.3f}]"
            for mode in modes
        ]
        label = "transformers LlamaMLP" if name == "LlamaMLP" else f"mmcomp {name}"
        lines.append(f"| {label} | {result['error'][name]:.2e} | " + " | ".join(cells) + " |")
    for name, speedup in result["speedup"].items():
        ratios = [f"{speedup[mode]:.3f}x" for mode in modes]
        lines.append(f"| {name} / LlamaMLP speed-up | | " + " | ".join(ratios) + " |")
    if "torch.compile" in modes:
        # The swap a user makes: GatedMLP as it is, in place of the compiled module.
        compiled = result["ms"]["LlamaMLP"]["torch.compile"]
        lines.append("")
        for name in result["speedup"]:
            eager = result["ms"][name]["eager"]
            lines.append(
                f"{name} eager against LlamaMLP under torch.compile: {compiled / eager:.3f}x"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--tuned", action="store_true", help="also GatedMLP with TUNED")
    args = parser.parse_args(argv)
    result = run(
        args.tokens, args.hidden, args.intermediate, args.repeat, not args.no_compile, args.tuned
    )
    print(table(result))
    errors = [error for name, error in result["error"].items() if name != "LlamaMLP"]
    return 0 if max(errors) < TOLERANCE else 1


if __name__ == "__main__":
    raise SystemExit(main())
