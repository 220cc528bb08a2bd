"""Where the LlamaMLP's time goes: each kernel of GatedMLP and of torch.compile, in turns.

    python tools/mlp_parts.py [--tokens 8192] [--repeat 60] [--gate-up KEY=VALUE ...]

Builds examples/llama_mlp.py's LlamaMLP and mmcomp.torch.GatedMLP (the heuristic's
schedules, or `--gate-up` keywords for the gate/up kernel), then times, in turns
(examples/llama_mlp.py's `interleaved_spread`: batches of calls between CUDA events, the
order rotating from round to round):

- the whole modules: LlamaMLP under torch.compile, GatedMLP eager;
- torch's parts: the gate and up matmuls (cuBLAS), the compiled silu(g) * u, the down
  matmul (cuBLAS);
- GatedMLP's parts: its gate/up kernel and its down kernel.

It prints milliseconds (median, min-max) per part and the sums, so that the difference of
the modules is laid out kernel by kernel.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]

from llama_mlp import (  # noqa: E402  # pyright: ignore[reportMissingImports]
    interleaved_spread,  # pyright: ignore[reportUnknownVariableType]
    llama_mlp,  # pyright: ignore[reportUnknownVariableType]
)


def keywords(pairs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs as mmcomp.compile keywords (values read as Python literals)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    """Print one row per part."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--repeat", type=int, default=60)
    parser.add_argument("--gate-up", nargs="*", default=[], help="KEY=VALUE schedule keywords")
    args = parser.parse_args(argv)
    import torch  # pyright: ignore[reportMissingImports]
    import torch.nn.functional as F  # pyright: ignore[reportMissingImports]

    import mmcomp.torch as mt

    mlp = llama_mlp(args.hidden, args.intermediate)
    gated = mt.GatedMLP(mlp, None, keywords(args.gate_up))
    x = torch.randn(args.tokens, args.hidden, device="cuda", dtype=torch.bfloat16)
    wg, wu, wd = mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight
    compiled = torch.compile(mlp)
    pointwise = torch.compile(lambda g, u: F.silu(g) * u)
    with torch.no_grad():
        g, u = F.linear(x, wg), F.linear(x, wu)
        h = pointwise(g, u)
        mine_h = gated._op(x, wg, wu, None, None)  # pyright: ignore[reportPrivateUsage]
        runs = {
            "LlamaMLP torch.compile": lambda: compiled(x),
            "GatedMLP": lambda: gated(x),
            "torch gate matmul": lambda: F.linear(x, wg),
            "torch up matmul": lambda: F.linear(x, wu),
            "torch silu(g) * u (compiled)": lambda: pointwise(g, u),
            "torch down matmul": lambda: F.linear(h, wd),
            "mmcomp gate/up kernel": lambda: gated._op(x, wg, wu, None, None),  # pyright: ignore[reportPrivateUsage]
            "mmcomp down kernel": lambda: gated.down(mine_h),
        }
        spread = interleaved_spread(runs, args.repeat)
    print("| part | ms | min-max |")
    print("| --- | --- | --- |")
    for name, (median, low, high) in spread.items():
        print(f"| {name} | {median:.3f} | {low:.3f}-{high:.3f} |")
    torch_parts = sum(
        spread[name][0]
        for name in ("torch gate matmul", "torch up matmul", "torch silu(g) * u (compiled)")
    )
    print(f"| torch gate + up + pointwise | {torch_parts:.3f} | |")
    print(
        f"| speed-up, gate/up: torch's three / mmcomp | "
        f"{torch_parts / spread['mmcomp gate/up kernel'][0]:.3f} | |"
    )
    print(
        f"| speed-up, down: torch / mmcomp | "
        f"{spread['torch down matmul'][0] / spread['mmcomp down kernel'][0]:.3f} | |"
    )
    print(
        f"| speed-up, module: LlamaMLP compiled / GatedMLP | "
        f"{spread['LlamaMLP torch.compile'][0] / spread['GatedMLP'][0]:.3f} | |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
