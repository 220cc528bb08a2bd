"""transformers' LlamaMLP with mmcomp's GatedMLP swapped in: values, then timings.

    python examples/llama_mlp.py [--tokens 8192] [--hidden 4096] [--intermediate 14336]
                                 [--repeat 30] [--no-compile]

Builds transformers' LlamaMLP (random weights, nothing downloaded) in bf16 on the GPU,
builds `mmcomp.torch.GatedMLP` from it (sharing its weights: no copy), checks both outputs
against a float64 reference of the module's math (down(silu(x Wg^T) * (x Wu^T))), and times
eager, torch.compile and CUDA-graph replay of each. Needs an sm_90 GPU, torch and
transformers.
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


def median_ms(run: Callable[[], Any], repeat: int) -> float:
    """Median over batches of BATCH calls (queued between two CUDA events) of the mean
    milliseconds per call, after warm-up."""
    import torch  # pyright: ignore[reportMissingImports]

    for _ in range(3):
        run()
    torch.cuda.synchronize()
    times: list[float] = []
    for _ in range(max(repeat // BATCH, 3)):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(BATCH):
            run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / BATCH)
    return statistics.median(times)


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


def run(
    tokens: int = 8192,
    hidden: int = 4096,
    intermediate: int = 14336,
    repeat: int = 30,
    compiled: bool = True,
) -> dict[str, Any]:
    """Check and time LlamaMLP and GatedMLP; returns errors, milliseconds and ratios."""
    import torch  # pyright: ignore[reportMissingImports]

    import mmcomp.torch as mt

    mlp = llama_mlp(hidden, intermediate)
    gated = mt.GatedMLP(mlp)
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device="cuda")
    result: dict[str, Any] = {"tokens": tokens, "hidden": hidden, "intermediate": intermediate}
    with torch.inference_mode():
        want = reference(mlp, x)
        result["error"] = {
            "LlamaMLP": relative_error(mlp(x), want),
            "GatedMLP": relative_error(gated(x), want),
        }
        del want
        modules = {"LlamaMLP": mlp, "GatedMLP": gated}
        times: dict[str, dict[str, float]] = {name: {} for name in modules}
        for name, module in modules.items():
            times[name]["eager"] = median_ms(lambda module=module: module(x), repeat)
        if compiled:
            for name, module in modules.items():
                fast = torch.compile(module)
                times[name]["torch.compile"] = median_ms(lambda fast=fast: fast(x), repeat)
        for name, module in modules.items():
            times[name]["CUDA graph"] = median_ms(graphed(module, x.clone()), repeat)
    result["ms"] = times
    result["flops"] = 3 * 2.0 * tokens * hidden * intermediate
    result["speedup"] = {
        mode: times["LlamaMLP"][mode] / times["GatedMLP"][mode] for mode in times["GatedMLP"]
    }
    return result


def table(result: dict[str, Any]) -> str:
    """The result as a markdown table."""
    modes = list(result["ms"]["GatedMLP"])
    lines = [
        f"LlamaMLP, {result['tokens']} tokens, hidden {result['hidden']}, intermediate "
        f"{result['intermediate']}, bf16 (ms per forward; TFLOP/s of the three matmuls)",
        "",
        "| module | rel. error vs float64 | " + " | ".join(modes) + " |",
        "| --- | --- | " + " | ".join("---" for _ in modes) + " |",
    ]
    for name in ("LlamaMLP", "GatedMLP"):
        cells = [
            f"{ms:.3f} ({result['flops'] / ms / 1e9:.0f})"
            for ms in (result["ms"][name][mode] for mode in modes)
        ]
        label = "transformers LlamaMLP" if name == "LlamaMLP" else "mmcomp GatedMLP"
        lines.append(f"| {label} | {result['error'][name]:.2e} | " + " | ".join(cells) + " |")
    ratios = [f"{result['speedup'][mode]:.3f}x" for mode in modes]
    lines.append("| GatedMLP speed-up | | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args(argv)
    result = run(args.tokens, args.hidden, args.intermediate, args.repeat, not args.no_compile)
    print(table(result))
    return 0 if result["error"]["GatedMLP"] < TOLERANCE else 1


if __name__ == "__main__":
    raise SystemExit(main())
