"""A mixture-of-experts block (Mixtral / Qwen3-MoE style) on two mmcomp grouped kernels.

    python examples/moe_block.py [--backend cuda|interp] [--tokens T] [--hidden H]
                                 [--inner I] [--experts G] [--top-k k] [--repeat 30]
                                 [--no-compile] [--no-graph]

The block, `MoEBlock` (its weights laid out as transformers 5's Qwen3-MoE and Mixtral
blocks: a router [G, H], `gate_up_proj` [G, 2I, H] with the gate rows first, `down_proj`
[G, H, I]):

1. the router, in torch: logits x R^T, a softmax over the G experts in float32, each
   token's top k experts, their weights renormalized to sum to 1;
2. the T k (token, expert) rows sorted by expert (a stable argsort) and gathered; the
   group offsets (cumulative rows per expert) counted on the device with scatter_add_ and
   cumsum, never read on the host;
3. one grouped kernel for the gate and up projections with SwiGLU: two grouped linears of
   one fusion sharing x and the offsets (horizontal fusion), silu(x Wg[g]^T) * (x Wu[g]^T),
   cast to x's dtype;
4. one grouped kernel for the down projection, each row multiplied by its routing weight
   (the per-row `scale` of `Fusion.grouped_linear`), f32 out;
5. the rows summed back per token (index_add_ in f32), cast to x's dtype.

It checks the block against a plain float64 loop over the experts (the same routing), and
beside it the same block with torch._grouped_mm and torch's silu * mul in place of the two
kernels, and transformers' Qwen3MoeSparseMoeBlock sharing the weights where transformers
(5 or later) is installed. On cuda (the default where a GPU is present: Qwen3-30B-A3B's
sizes) it times them eager, under torch.compile(fullgraph=True) and as CUDA-graph replays,
every block in every mode in turns, and replays a captured graph of the block with new
tokens (so new routing) each time, each replay checked against float64. On the interp back
end (the default on a CPU: a small block) it checks the values only, torch.compile included.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402  # pyright: ignore[reportMissingImports]
from llama_mlp import graphed, interleaved_spread, relative_error  # noqa: E402

TOLERANCE = 2e-2
"""Largest relative error of a block's bf16 output against float64 that passes."""
SIZES = {
    "cuda": {"tokens": 4096, "hidden": 2048, "inner": 768, "experts": 128, "top_k": 8},
    "interp": {"tokens": 24, "hidden": 64, "inner": 32, "experts": 8, "top_k": 2},
}
"""The default sizes by back end: Qwen3-30B-A3B's block at 4096 tokens on cuda (Mixtral
8x7B's: --hidden 4096 --inner 14336 --experts 8 --top-k 2), a small one on interp."""
GRAPH_REPLAYS = 3
"""Replays of the captured block, each with new tokens, checked against float64."""


def expert_kernels(groups: int, hidden: int, inner: int, dtype: str, backend: str) -> Any:
    """The two grouped kernels as torch custom ops: gate/up with SwiGLU, [t, H] -> [t, I]
    in `dtype`, and the down projection times each row's routing weight, [t, I] -> f32
    [t, H]."""
    import mmcomp
    import mmcomp.torch as mt

    f = mmcomp.Fusion("moe_block_gate_up")
    x = f.input("x", ["t", hidden], dtype)
    gate_w = f.input("gate", [groups, inner, hidden], dtype)
    up_w = f.input("up", [groups, inner, hidden], dtype)
    offsets = f.input("offsets", [groups], "i32")
    gate = f.grouped_linear(x, gate_w, offsets)
    up = f.grouped_linear(x, up_w, offsets)
    f.output(f.cast(f.silu(gate) * up, dtype))
    gate_up = mt.op(f, backend=backend)

    f = mmcomp.Fusion("moe_block_down")
    h = f.input("h", ["t", inner], dtype)
    down_w = f.input("down", [groups, hidden, inner], dtype)
    offsets = f.input("offsets", [groups], "i32")
    weights = f.input("weights", ["t", 1], "f32")
    f.output(f.grouped_linear(h, down_w, offsets, scale=weights))
    return gate_up, mt.op(f, backend=backend)


def sort_by_expert(selected: Any, groups: int) -> tuple[Any, Any, Any]:
    """(order, token, offsets) of the router's choices [T, k]: the (token, slot) rows in
    expert order (stable), the token of each sorted row, and the int32 cumulative rows per
    expert, all computed on the device (no host read: a CUDA graph replays them)."""
    flat = selected.reshape(-1)
    order = torch.argsort(flat, stable=True)
    token = torch.div(order, selected.shape[1], rounding_mode="floor")
    counts = torch.zeros(groups, dtype=flat.dtype, device=flat.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    return order, token, counts.cumsum(0).to(torch.int32)


class MoEBlock(torch.nn.Module):
    """A Mixtral / Qwen3-MoE block whose experts run on mmcomp's grouped kernels (or, with
    `experts="torch"`, on torch._grouped_mm and torch's silu * mul)."""

    def __init__(
        self,
        router: Any,
        gate_up_proj: Any,
        down_proj: Any,
        top_k: int,
        *,
        experts: str,
        backend: str,
    ) -> None:
        super().__init__()
        self.router, self.gate_up_proj, self.down_proj = router, gate_up_proj, down_proj
        self.groups, twice, self.hidden = (int(extent) for extent in gate_up_proj.shape)
        self.inner, self.top_k, self.experts = twice // 2, top_k, experts
        if experts == "mmcomp":
            dtype = {"torch.bfloat16": "bf16", "torch.float16": "f16"}[str(router.dtype)]
            self.gate_up, self.down = expert_kernels(
                self.groups, self.hidden, self.inner, dtype, backend
            )

    def route(self, x: Any) -> tuple[Any, Any]:
        """(weights f32 [T, k], selected [T, k]): softmax over the experts, the top k,
        renormalized (transformers' router with norm_topk_prob)."""
        logits = torch.nn.functional.linear(x, self.router)
        probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
        weights, selected = torch.topk(probs, self.top_k, dim=-1)
        return weights / weights.sum(-1, keepdim=True), selected

    def forward(self, x: Any) -> Any:
        """x [T, H] -> [T, H] in x's dtype."""
        weights, selected = self.route(x)
        order, token, offsets = sort_by_expert(selected, self.groups)
        rows = x.index_select(0, token)
        row_weights = weights.reshape(-1).index_select(0, order).unsqueeze(1)
        gate, up = self.gate_up_proj[:, : self.inner], self.gate_up_proj[:, self.inner :]
        if self.experts == "mmcomp":
            h = self.gate_up(rows, gate, up, offsets)
            down = self.down(h, self.down_proj, offsets, row_weights)
        else:
            grouped_mm = torch._grouped_mm  # pyright: ignore[reportPrivateImportUsage]
            g = grouped_mm(rows, gate.transpose(-2, -1), offs=offsets)
            u = grouped_mm(rows, up.transpose(-2, -1), offs=offsets)
            h = torch.nn.functional.silu(g) * u
            down_w = self.down_proj.transpose(-2, -1)
            down = grouped_mm(h, down_w, offs=offsets).float() * row_weights
        out = torch.zeros(x.shape[0], self.hidden, dtype=torch.float32, device=x.device)
        return out.index_add_(0, token, down).to(x.dtype)


def reference(block: MoEBlock, x: Any) -> Any:
    """The block in float64 (its routing as the block computes it): a loop over the
    experts, each one's tokens through down(silu(x Wg^T) * (x Wu^T)) times their weights."""
    weights, selected = block.route(x)
    gate_up, down = block.gate_up_proj.double(), block.down_proj.double()
    x64 = x.double()
    out = torch.zeros(x.shape[0], block.hidden, dtype=torch.float64, device=x.device)
    for expert in range(block.groups):
        token, slot = torch.nonzero(selected == expert, as_tuple=True)
        if token.numel() == 0:
            continue
        rows = x64[token]
        gate = rows @ gate_up[expert, : block.inner].t()
        up = rows @ gate_up[expert, block.inner :].t()
        y = (torch.nn.functional.silu(gate) * up) @ down[expert].t()
        out.index_add_(0, token, y * weights[token, slot].double().unsqueeze(1))
    return out


def transformers_block(block: MoEBlock) -> Any:
    """transformers' Qwen3MoeSparseMoeBlock (its eager experts: a loop over the experts
    hit) with `block`'s weights, shared; None where transformers 5 is not installed."""
    try:
        from transformers import Qwen3MoeConfig  # pyright: ignore[reportMissingImports]
        from transformers.models.qwen3_moe import (  # pyright: ignore[reportMissingImports]
            modeling_qwen3_moe,
        )
    except ImportError:
        return None
    if not hasattr(modeling_qwen3_moe, "Qwen3MoeExperts"):
        return None  # transformers 4: a list of expert modules, not stacked weights
    config = Qwen3MoeConfig(
        hidden_size=block.hidden,
        moe_intermediate_size=block.inner,
        num_experts=block.groups,
        num_experts_per_tok=block.top_k,
        norm_topk_prob=True,
        hidden_act="silu",
    )
    config._experts_implementation = "eager"  # pyright: ignore[reportAttributeAccessIssue]
    with torch.device("meta"):
        module = modeling_qwen3_moe.Qwen3MoeSparseMoeBlock(config)
    module.gate.weight = torch.nn.Parameter(block.router, requires_grad=False)
    module.experts.gate_up_proj = torch.nn.Parameter(block.gate_up_proj, requires_grad=False)
    module.experts.down_proj = torch.nn.Parameter(block.down_proj, requires_grad=False)
    return lambda x: module(x.unsqueeze(0)).squeeze(0)


def blocks(
    tokens: int, hidden: int, inner: int, experts: int, top_k: int, backend: str
) -> dict[str, Callable[[Any], Any]]:
    """The blocks compared, by name, on one set of random bf16 weights: "mmcomp",
    "torch._grouped_mm" and, where installed, "transformers"."""
    device = "cuda" if backend == "cuda" else "cpu"
    generator = torch.Generator(device=device).manual_seed(0)

    def weight(*shape: int) -> Any:
        data = torch.randn(*shape, device=device, generator=generator) / shape[-1] ** 0.5
        return data.to(torch.bfloat16)

    router = weight(experts, hidden)
    gate_up, down = weight(experts, 2 * inner, hidden), weight(experts, hidden, inner)
    mmcomp_block = MoEBlock(router, gate_up, down, top_k, experts="mmcomp", backend=backend)
    found: dict[str, Callable[[Any], Any]] = {
        "mmcomp": mmcomp_block,
        "torch._grouped_mm": MoEBlock(
            router, gate_up, down, top_k, experts="torch", backend=backend
        ),
    }
    original = transformers_block(mmcomp_block)
    if original is not None:
        found["transformers"] = original
    return found


def tokens_of(tokens: int, hidden: int, device: str, seed: int) -> Any:
    """Random bf16 hidden states [T, H]."""
    generator = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(tokens, hidden, device=device, generator=generator).to(torch.bfloat16)


def graph_replays(block: Any, tokens: int, device: str) -> list[float]:
    """The errors of GRAPH_REPLAYS replays of the block captured in one CUDA graph, new
    tokens (so new routing and new group sizes) copied into its input before each."""
    x = tokens_of(tokens, block.hidden, device, 100)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        block(x)  # warm-up outside the capture (kernels compiled and loaded)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = block(x)
    errors: list[float] = []
    for replay in range(GRAPH_REPLAYS):
        x.copy_(tokens_of(tokens, block.hidden, device, 101 + replay))
        graph.replay()
        torch.cuda.synchronize()
        errors.append(relative_error(out, reference(block, x)))
    return errors


def run(
    backend: str,
    tokens: int,
    hidden: int,
    inner: int,
    experts: int,
    top_k: int,
    repeat: int = 30,
    compiled: bool = True,
    graph: bool = True,
) -> dict[str, Any]:
    """Check every block against float64 (and, on cuda, time them); returns the errors
    (and milliseconds and speed-ups over transformers', or torch._grouped_mm's, block)."""
    device = "cuda" if backend == "cuda" else "cpu"
    result: dict[str, Any] = {
        "backend": backend,
        "tokens": tokens,
        "hidden": hidden,
        "inner": inner,
        "experts": experts,
        "top_k": top_k,
    }
    with torch.inference_mode():
        found = blocks(tokens, hidden, inner, experts, top_k, backend)
        mmcomp_block = found["mmcomp"]
        assert isinstance(mmcomp_block, MoEBlock)
        x = tokens_of(tokens, hidden, device, 1)
        want = reference(mmcomp_block, x)
        result["error"] = {name: relative_error(block(x), want) for name, block in found.items()}
        fast = {}
        if compiled:
            fast = {
                name: torch.compile(block, fullgraph=name != "transformers")
                for name, block in found.items()
            }
            # New tokens: new routing and group sizes through the compiled block.
            x2 = tokens_of(tokens, hidden, device, 2)
            result["compiled error"] = relative_error(
                fast["mmcomp"](x2), reference(mmcomp_block, x2)
            )
        if backend == "cuda" and graph:
            result["graph errors"] = graph_replays(mmcomp_block, tokens, device)
        if backend != "cuda":
            return result
        modes: dict[str, dict[str, Callable[[], Any]]] = {
            "eager": {name: (lambda b=block: b(x)) for name, block in found.items()}
        }
        if compiled:
            modes["torch.compile"] = {name: (lambda f=f: f(x)) for name, f in fast.items()}
        if graph:
            # transformers' eager experts read which experts are hit on the host: no graph.
            modes["CUDA graph"] = {
                name: graphed(block, x.clone())
                for name, block in found.items()
                if name != "transformers"
            }
        runs = {(name, mode): run for mode, named in modes.items() for name, run in named.items()}
        timed = interleaved_spread(runs, repeat)
    result["ms"] = {
        name: {mode: timed[name, mode][0] for mode in modes if (name, mode) in timed}
        for name in found
    }
    result["spread"] = {
        name: {mode: timed[name, mode][1:] for mode in modes if (name, mode) in timed}
        for name in found
    }
    result["flops"] = 3 * 2.0 * tokens * top_k * hidden * inner
    return result


def table(result: dict[str, Any]) -> str:
    """The result as markdown: errors, and on cuda the times."""
    size = (
        f"{result['tokens']} tokens, hidden {result['hidden']}, inner {result['inner']}, "
        f"{result['experts']} experts, top {result['top_k']}, bf16, {result['backend']}"
    )
    lines = [f"MoE block, {size}", ""]
    for name, error in result["error"].items():
        lines.append(f"- {name}: relative error against float64 {error:.2e}")
    if "compiled error" in result:
        lines.append(
            f"- mmcomp under torch.compile(fullgraph=True), new tokens: "
            f"{result['compiled error']:.2e}"
        )
    if "graph errors" in result:
        errors = ", ".join(f"{error:.2e}" for error in result["graph errors"])
        lines.append(f"- mmcomp CUDA-graph replays, new tokens each: {errors}")
    if "ms" not in result:
        return "\n".join(lines)
    modes = list(result["ms"]["mmcomp"])
    lines += [
        "",
        "Median ms per forward (TFLOP/s of the experts' three matmuls) [lowest-highest "
        "round], every block in every mode timed in turns",
        "",
        "| block | " + " | ".join(modes) + " |",
        "| --- | " + " | ".join("---" for _ in modes) + " |",
    ]
    for name, times in result["ms"].items():
        spread = result["spread"][name]
        cells = [
            f"{times[mode]:.3f} ({result['flops'] / times[mode] / 1e9:.0f}) "
            f"[{spread[mode][0]:.3f}-{spread[mode][1]:.3f}]"
            if mode in times
            else "-"
            for mode in modes
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ms = result["ms"]
    for other in ("transformers", "torch._grouped_mm"):
        for mode in ("torch.compile", "eager"):
            if other in ms and mode in ms[other]:
                best = min(ms["mmcomp"].values())
                lines.append(
                    f"\nmmcomp's fastest mode against {other} under {mode}: "
                    f"{ms[other][mode] / best:.3f}x"
                )
                break
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", choices=("cuda", "interp"), default=None)
    for name in SIZES["cuda"]:
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--no-graph", action="store_true", help="skip the CUDA graphs")
    args = parser.parse_args(argv)
    backend = args.backend or ("cuda" if torch.cuda.is_available() else "interp")
    sizes = {
        name: getattr(args, name) if getattr(args, name) is not None else default
        for name, default in SIZES[backend].items()
    }
    result = run(
        backend, **sizes, repeat=args.repeat, compiled=not args.no_compile, graph=not args.no_graph
    )
    print(table(result))
    errors = [*result["error"].values(), *result.get("graph errors", [])]
    if "compiled error" in result:
        errors.append(result["compiled error"])
    return 0 if max(errors) < TOLERANCE else 1


if __name__ == "__main__":
    raise SystemExit(main())
