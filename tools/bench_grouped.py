"""Time mmcomp's grouped kernels against torch._grouped_mm on the same inputs, in turns.

    python tools/bench_grouped.py [--rounds 7] [--repeat 50] [--out FILE] [--json FILE]
                                  [--rows linear,swiglu,decode]
                                  [--schedule KEY=VALUE[,KEY=VALUE...]] ...
    python tools/bench.py --grouped [--rounds 7] [--out FILE]      # the same

bf16, x [T, K] sorted by group with the routing drawn from a Dirichlet(2) over the G
groups (seeded; a group may be empty), w [G, N, K], offsets int32 [G] on the device; the
output bf16 [T, N]. Rows (GROUPED_ROWS):

- the grouped linear at G, T, N, K = 8, 16432, 14336, 4096; 64, 8720, 2816, 2048;
  128, 5056, 768, 2048 against `torch._grouped_mm(x, w.transpose(-2, -1), offs=offsets)`;
- the fused gate/up pair `silu(x Wg[g]^T) * (x Wu[g]^T)` (one mmcomp kernel) at the first
  two shapes against torch._grouped_mm twice plus torch's `silu(g) * u`;
- decode: 64 experts of 1 to 16 tokens each, N = 2816, K = 2048, the masked layout
  (x [64, 16, K], counts) against torch._grouped_mm of the same tokens packed (offsets).

Each round times torch and mmcomp (the heuristic's kernel of one `mmcomp.compile` of the
fusion with a dynamic T: the kernel of T's bucket, bound to the inputs) with bench.py's
`median_ms`, the order rotating by round, inputs rotated over copies where one set fits
in L2; a ratio is torch's time over mmcomp's, the median over the rounds and the min-max.
TFLOP/s counts 2 T N K per grouped linear (the rows of the groups only). Each kernel's
output is checked against torch's first (relative error < 2e-2 on the rows of the
groups).

`--schedule KEY=VALUE,...` (bench.py's `parse_schedule`; repeatable) adds a contender to
every row: the same fusion compiled with those schedule parameters pinned
(`swap_ab=false`, `tile=128x128x64,stages=4`), timed in the same turns; its line gives its
speed over torch's and over the heuristic's. A schedule the compiler refuses for a row is
reported as such. `--rows` keeps the rows of the kinds named.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402

import mmcomp  # noqa: E402
from mmcomp.errors import FusionError, ScheduleError  # noqa: E402


@dataclass(frozen=True)
class GroupedRow:
    """One row: the kind ("linear", "swiglu", "decode") and its extents."""

    kind: str
    groups: int
    tokens: int
    n: int
    k: int

    @property
    def name(self) -> str:
        """G, T, N, K as the table writes them."""
        return f"{self.kind} {self.groups}, {self.tokens}, {self.n}, {self.k}"

    @property
    def flops(self) -> float:
        """2 T N K per grouped linear."""
        linears = 2 if self.kind == "swiglu" else 1
        return 2.0 * self.tokens * self.n * self.k * linears


GROUPED_ROWS = (
    GroupedRow("linear", 8, 16432, 14336, 4096),
    GroupedRow("linear", 64, 8720, 2816, 2048),
    GroupedRow("linear", 128, 5056, 768, 2048),
    GroupedRow("swiglu", 8, 16432, 14336, 4096),
    GroupedRow("swiglu", 64, 8720, 2816, 2048),
    GroupedRow("decode", 64, 16, 2816, 2048),
)
"""The rows of the table (decode: `tokens` is Mmax, the most tokens of one expert)."""


def fusion_of(row: GroupedRow) -> mmcomp.Fusion:
    """The row's fusion: bf16 output, T dynamic (masked: [G, Mmax, K] with counts)."""
    f = mmcomp.Fusion(f"grouped_{row.kind}")
    if row.kind == "decode":
        x = f.input("x", (row.groups, row.tokens, row.k), "bf16")
        w = f.input("w", (row.groups, row.n, row.k), "bf16")
        counts = f.input("counts", (row.groups,), "i32")
        f.output(f.cast(f.grouped_linear(x, w, counts=counts), "bf16"))
        return f
    x = f.input("x", ("t", row.k), "bf16")
    w = f.input("w", (row.groups, row.n, row.k), "bf16")
    if row.kind == "swiglu":
        up = f.input("up", (row.groups, row.n, row.k), "bf16")
        offsets = f.input("offsets", (row.groups,), "i32")
        hidden = f.silu(f.grouped_linear(x, w, offsets)) * f.grouped_linear(x, up, offsets)
        f.output(f.cast(hidden, "bf16"))
        return f
    offsets = f.input("offsets", (row.groups,), "i32")
    f.output(f.cast(f.grouped_linear(x, w, offsets), "bf16"))
    return f


def group_sizes(row: GroupedRow, seed: int) -> list[int]:
    """Tokens per group: a Dirichlet(2) routing of T tokens (decode: 1 to Mmax each)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if row.kind == "decode":
        return [int(v) for v in rng.integers(1, row.tokens + 1, size=row.groups)]
    shares = rng.dirichlet(np.full(row.groups, 2.0))
    sizes = np.floor(shares * row.tokens).astype(np.int64)
    sizes[int(np.argmax(shares))] += row.tokens - int(sizes.sum())
    return [int(v) for v in sizes]


def input_sets(row: GroupedRow, copies: int) -> list[dict[str, Any]]:
    """`copies` sets of device inputs by name (the same routing in each)."""
    import torch  # pyright: ignore[reportMissingImports]

    sizes = group_sizes(row, row.groups)
    generator = torch.Generator(device="cuda").manual_seed(row.groups)
    sets: list[dict[str, Any]] = []
    for _ in range(copies):

        def rand(*shape: int) -> Any:
            data = torch.randn(*shape, device="cuda", generator=generator)
            return (data / shape[-1] ** 0.25).to(torch.bfloat16)

        inputs: dict[str, Any] = {}
        if row.kind == "decode":
            inputs["x"] = rand(row.groups, row.tokens, row.k)
            inputs["w"] = rand(row.groups, row.n, row.k)
            inputs["counts"] = torch.tensor(sizes, dtype=torch.int32, device="cuda")
        else:
            inputs["x"] = rand(row.tokens, row.k)
            inputs["w"] = rand(row.groups, row.n, row.k)
            if row.kind == "swiglu":
                inputs["up"] = rand(row.groups, row.n, row.k)
            ends = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32)
            inputs["offsets"] = ends.cuda()
        sets.append(inputs)
    return sets


def torch_run(row: GroupedRow, sizes: list[int]) -> Callable[[dict[str, Any]], Any]:
    """torch's computation of the row on one input set (the packed rows for decode)."""
    import torch  # pyright: ignore[reportMissingImports]

    grouped_mm = torch._grouped_mm  # pyright: ignore[reportPrivateImportUsage]
    if row.kind == "decode":
        packed = torch.tensor(sizes, dtype=torch.int64).cumsum(0).to(torch.int32).cuda()
        index = torch.cat(
            [torch.arange(size, device="cuda") + g * row.tokens for g, size in enumerate(sizes)]
        )

        def decode(inputs: dict[str, Any]) -> Any:
            x = inputs["x"].reshape(-1, row.k).index_select(0, index)
            return grouped_mm(x, inputs["w"].transpose(-2, -1), offs=packed)

        return decode

    def linear(inputs: dict[str, Any]) -> Any:
        return grouped_mm(inputs["x"], inputs["w"].transpose(-2, -1), offs=inputs["offsets"])

    if row.kind == "linear":
        return linear

    def swiglu(inputs: dict[str, Any]) -> Any:
        gate = linear(inputs)
        up = grouped_mm(inputs["x"], inputs["up"].transpose(-2, -1), offs=inputs["offsets"])
        return torch.nn.functional.silu(gate) * up

    return swiglu


def check(row: GroupedRow, sizes: list[int], got: Any, want: Any) -> float:
    """The relative error of mmcomp's output against torch's on the rows of the groups."""
    import numpy as np

    result = got.to_host().astype(np.float32)
    expected = want.float().cpu().numpy()
    if row.kind == "decode":
        result = np.concatenate([result[g, :size] for g, size in enumerate(sizes)])
    rows = sum(sizes)
    error = float(
        np.max(np.abs(result[:rows] - expected[:rows])) / max(np.max(np.abs(expected)), 1e-6)
    )
    if not error < 2e-2:
        raise ValueError(f"{row.name}: relative error {error:.3g} against torch")
    return error


def device_kernel(row: GroupedRow, **params: Any) -> tuple[Any, Any]:
    """(the kernel that serves the row's T, its device kernel bound to T)."""
    compiled = mmcomp.compile(fusion_of(row), **params)
    if row.kind == "decode":
        return compiled, compiled.device_kernel  # pyright: ignore[reportAttributeAccessIssue]
    kernel = compiled.kernel_for(row.tokens)  # pyright: ignore[reportAttributeAccessIssue]
    return kernel, kernel.device_kernel.specialized({"m": row.tokens})  # pyright: ignore[reportAttributeAccessIssue]


def bench_row(
    row: GroupedRow, rounds: int, repeat: int, variants: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """torch, the heuristic's kernel and each variant's on the same inputs, timed in
    turns."""
    import torch  # pyright: ignore[reportMissingImports]

    sizes = group_sizes(row, row.groups)
    per_set = sum(v.numel() * v.element_size() for v in input_sets(row, 1)[0].values())
    copies = min(8, -(-2 * bench.L2_BYTES // per_set)) if per_set < bench.L2_BYTES else 1
    sets = input_sets(row, copies)
    fusion = fusion_of(row)
    names = [str(value.name) for value in fusion.inputs]
    kernel, device = device_kernel(row)
    run_mmcomp, output = bench.rotating_launch(device, names, sets)
    compute = torch_run(row, sizes)
    counter = [0]

    def run_torch() -> None:
        compute(sets[counter[0] % len(sets)])
        counter[0] += 1

    runs: dict[str, Any] = {"torch": run_torch, "mmcomp": run_mmcomp}
    outputs = {"mmcomp": output}
    schedules = {"mmcomp": bench.brief(kernel.params)}
    refused: dict[str, str] = {}
    for name, params in (variants or {}).items():
        try:
            variant, variant_device = device_kernel(row, **params)
        except (FusionError, ScheduleError) as error:
            refused[name] = str(error).splitlines()[0]
            continue
        runs[name], outputs[name] = bench.rotating_launch(variant_device, names, sets)
        schedules[name] = bench.brief(variant.params)
    times = bench.timed_in_turns(runs, rounds, repeat)
    torch.cuda.synchronize()
    want = compute(sets[0])
    errors = {name: check(row, sizes, got, want) for name, got in outputs.items()}
    error = errors["mmcomp"]
    return {
        "row": row.name,
        "flops": row.flops,
        "ms": times,
        "schedule": schedules["mmcomp"],
        "error": error,
        "variants": {
            name: {"schedule": schedules[name], "error": errors[name]}
            for name in schedules
            if name != "mmcomp"
        },
        "refused": refused,
    }


def report(
    rounds: int,
    repeat: int,
    variants: dict[str, dict[str, Any]] | None = None,
    kinds: tuple[str, ...] = ("linear", "swiglu", "decode"),
) -> tuple[str, list[dict[str, Any]]]:
    """The table of GROUPED_ROWS (those of `kinds`) and the raw figures, then each
    variant's."""
    lines = [
        "| row: G, T, N, K | torch TFLOP/s | mmcomp TFLOP/s | mmcomp / torch (spread) | "
        "rel. error | schedule |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    raw: list[dict[str, Any]] = []
    variant_lines: list[str] = []
    for row in GROUPED_ROWS:
        if row.kind not in kinds:
            continue
        figures = bench_row(row, rounds, repeat, variants)
        raw.append(figures)
        for name in variants or {}:
            if name in figures["refused"]:
                variant_lines.append(
                    f"| {row.name} | {name} | refused: {figures['refused'][name]} | | |"
                )
                continue
            found = figures["variants"][name]
            variant_lines.append(
                f"| {row.name} | {name} | {bench._spread(bench._ratios(figures, name, 'torch'))} | "
                f"{bench._spread(bench._ratios(figures, name, 'mmcomp'))} | {found['schedule']} |"
            )
        tflops = {
            name: row.flops / statistics.median(ms) / 1e9 for name, ms in figures["ms"].items()
        }
        ratios = bench._ratios(figures, "mmcomp", "torch")
        lines.append(
            f"| {row.name} | {bench._figure(tflops['torch'])} | "
            f"{bench._figure(tflops['mmcomp'])} | {bench._spread(ratios)} | "
            f"{figures['error']:.2g} | {figures['schedule']} |"
        )
        print(lines[-1], flush=True)
    header = [
        *bench.run_header("# Grouped GEMMs: torch._grouped_mm against mmcomp's grouped kernels"),
        f"- method: bf16, Dirichlet(2) routing (decode: 1-16 tokens per expert, masked "
        f"layout against the packed rows); {rounds} rounds in one process, each timing both "
        f"with `median_ms` ({max(repeat // bench.BATCH, 5)} batches of {bench.BATCH} "
        "launches), the order rotating by round; a ratio is torch's time over mmcomp's, the "
        "median over the rounds and, in brackets, the min-max",
        "",
    ]
    if variant_lines:
        lines += [
            "",
            "| row | variant | variant / torch (spread) | variant / heuristic (spread) "
            "| schedule |",
            "| --- | --- | --- | --- | --- |",
            *variant_lines,
        ]
    return "\n".join([*header, *lines, ""]), raw


def main(argv: list[str] | None = None) -> int:
    """Time the rows, print the table and write it to --out."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--out", default="")
    parser.add_argument("--json", default="")
    parser.add_argument("--rows", default="linear,swiglu,decode", help="the kinds of rows")
    parser.add_argument(
        "--schedule",
        type=bench.parse_schedule,
        action="append",
        default=[],
        help="a contender of these schedule overrides on every row (repeatable)",
    )
    args = parser.parse_args(argv)
    kinds = tuple(kind for kind in args.rows.split(",") if kind)
    unknown = [kind for kind in kinds if kind not in ("linear", "swiglu", "decode")]
    if unknown:
        parser.error(f"--rows: unknown kind {unknown[0]!r}; expected linear, swiglu, decode")
    variants = {bench.schedule_label(overrides): overrides for overrides in args.schedule}
    text, raw = report(args.rounds, args.repeat, variants, kinds)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
