"""Time the fp8 GatedMLP against the bf16 one (and torch.compile of the bf16 MLP), in turns.

    python tools/bench_fp8_mlp.py [--tokens 8192,2048] [--hidden 4096] [--intermediate 14336]
                                  [--rounds 5] [--repeat 50] [--no-compile] [--out FILE]

A Llama-style MLP, `down(silu(gate(x)) * up(x))` with bf16 nn.Linear weights and no bias,
runs as:

- `bf16`: mmcomp.torch.GatedMLP (the fused gate/up kernel, then the down linear);
- `fp8-block`: GatedMLP.fp8(scaling="block"): e4m3 weights per 128 x 128 block, x
  quantized per 1 x 128 group in torch at each call, h quantized in the gate/up kernel's
  epilogue and read as is by the down projection;
- `fp8-row`: GatedMLP.fp8(scaling="row"): weights and x per row, h quantized per row in
  torch between the kernels;
- `compile`: torch.compile of the bf16 module (cuBLAS GEMMs with Triton's fused silu*mul).

Each forward is timed with bench.py's `median_ms` in `rounds` rounds, the order rotating
by round (bench.timed_in_turns). The table gives the median time, TFLOP/s (6 T H I), the
speed against the bf16 GatedMLP (bf16 time / the row's time) with its spread over rounds,
and each module's relative error against float64 of the same bf16 weights and input:
max |y - ref| / max |ref|. The fp8 rows' error includes the quantization of x, the weights
and h; the bf16 row's that of bf16 h and y.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402

import mmcomp  # noqa: E402
import mmcomp.torch  # noqa: E402


def llama_mlp(hidden: int, intermediate: int) -> Any:
    """A bf16 module with gate_proj, up_proj, down_proj linears (no bias) and SiLU, on cuda."""
    import torch  # pyright: ignore[reportMissingImports]

    class Mlp(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()  # pyright: ignore[reportUnknownMemberType]
            self.gate_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            self.up_proj = torch.nn.Linear(hidden, intermediate, bias=False)
            self.down_proj = torch.nn.Linear(intermediate, hidden, bias=False)
            self.act_fn = torch.nn.SiLU()

        def forward(self, x: Any) -> Any:
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

    torch.manual_seed(0)
    mlp = Mlp()
    for linear in (mlp.gate_proj, mlp.up_proj, mlp.down_proj):
        torch.nn.init.normal_(linear.weight, std=linear.in_features**-0.5)
    return mlp.to(device="cuda", dtype=torch.bfloat16)


def reference(mlp: Any, x: Any) -> Any:
    """The MLP in float64 on the GPU."""
    import torch  # pyright: ignore[reportMissingImports]

    wide = x.double()
    gate = wide @ mlp.gate_proj.weight.double().T
    up = wide @ mlp.up_proj.weight.double().T
    return (torch.nn.functional.silu(gate) * up) @ mlp.down_proj.weight.double().T


def relative_error(got: Any, expected: Any) -> float:
    """max |got - expected| / max |expected|."""
    return float((got.double() - expected).abs().max() / expected.abs().max())


def rows(
    tokens: int, hidden: int, intermediate: int, rounds: int, repeat: int, compiled: bool
) -> list[str]:
    """The table's lines for one token count."""
    import torch  # pyright: ignore[reportMissingImports]

    mlp = llama_mlp(hidden, intermediate)
    modules: dict[str, Any] = {
        "bf16": mmcomp.torch.GatedMLP(mlp),
        "fp8-block": mmcomp.torch.GatedMLP.fp8(mlp, scaling="block"),
        "fp8-row": mmcomp.torch.GatedMLP.fp8(mlp, scaling="row"),
    }
    if compiled:
        modules["compile"] = torch.compile(mlp)
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    expected = reference(mlp, x)
    errors: dict[str, float] = {}
    with torch.no_grad():
        for name, module in modules.items():
            errors[name] = relative_error(module(x), expected)

        def runner(module: Any) -> Any:
            return lambda: module(x)

        times = bench.timed_in_turns(
            {name: runner(module) for name, module in modules.items()}, rounds, repeat
        )
    flops = 6.0 * tokens * hidden * intermediate
    lines: list[str] = []
    for name, series in times.items():
        median = statistics.median(series)
        ratios = [base / own for base, own in zip(times["bf16"], series, strict=True)]
        lines.append(
            f"| {tokens} | {name} | {median:.3f} | {flops / median / 1e9:.0f} | "
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | "
            f"{errors[name]:.2e} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Time the modules, print the table and write it to --out."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", default="8192,2048", help="token counts, comma-separated")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--intermediate", type=int, default=14336)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    counts = [int(part) for part in args.tokens.split(",") if part]
    if not counts or min(counts) < 1:
        parser.error(f"--tokens: expected positive token counts, found {args.tokens!r}")
    lines = bench.run_header("fp8 GatedMLP against the bf16 GatedMLP")
    lines[-1] = f"- command: `python tools/bench_fp8_mlp.py {' '.join(sys.argv[1:])}`"
    lines += [
        "",
        f"hidden {args.hidden}, intermediate {args.intermediate}, silu, no bias; "
        f"{args.rounds} rounds in turns",
        "",
        "| tokens | module | ms | TFLOP/s | vs bf16 GatedMLP (spread) | rel. error vs float64 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for tokens in counts:
        lines += rows(
            tokens, args.hidden, args.intermediate, args.rounds, args.repeat, not args.no_compile
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
