"""Sweep schedules of linears (A[M,K] W[N,K]^T, bf16 or f16) against cuBLAS, timed in turns.

    python tools/sweep_schedules.py [--shapes 1x4096x4096 16x14336x4096 ...]
        [--grid decode | fill | stream-k | swap | pingpong | cluster | heuristic] [--refine 4]
        [--rounds 5] [--jobs 14] [--out DIR]

For each shape, every schedule of the grid (and the heuristic's own choice, `{}`) is built
with the pipeline as tools/bench.py's `time_mmcomp_chosen` does (`run_pipeline`, then
`build_cuda_kernel`: ptxas, 0 spills), in a pool of worker processes; schedules that the
pipeline refuses, or that come out equal to another (a split_k clamped to the K blocks),
are dropped. Each kept kernel is checked against torch, then timed with bench.py's
`median_ms` in pairs with cuBLAS (torch.nn.functional.linear), the pair's order and the
schedules' order rotating from round to round, so that the clock and power drift falls on
both alike: a schedule's figure is the median and the spread (min, max) over the rounds of
cuBLAS time / mmcomp time. With --refine T, the T fastest schedules of each shape are then
varied one parameter at a time (stages, cluster, strategy, raster, swizzle, epilogue) and
timed again beside them. Inputs rotate over copies past L2 (bench.py's `rotating_torch`);
the achieved bandwidth counts the bytes of A, W and C once per launch.

Results go to DIR/results.jsonl (one line per schedule and phase, written as measured) and
DIR/summary.md (the best schedules of each shape and the heuristic's). `--grid fill` sweeps
the tile widths (not only powers of two) and splits that fill one wave of the SMs at the
rows that hold M; `--grid stream-k` times data-parallel (persistent), stream-K and the
hybrid side by side at the heuristic's tile, 128x256 and 128x128; `--grid swap` times the
heuristic's choice beside swap-AB schedules (`swap_grid`); `--grid pingpong` ping-pong
128-row tiles beside clustered cooperative ones (`pingpong_grid`); `--grid cluster`
cooperative 128-row tiles alone and in 2x1 clusters at several ring depths
(`cluster_grid`); `--grid horizontal` schedules around the horizontal fusion's 128x128
tile (`horizontal_grid`, with `--family horizontal`: bench.py's silu(A W1^T) * (A W2^T),
timed against torch's eager silu(linear) * linear, whose matmuls are cuBLAS's);
`--grid heuristic`
times the heuristic's choice alone (the final figures); `--build-only` builds without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import multiprocessing
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import (  # noqa: E402
    COMMON,
    DECODE_SHAPES,
    ROOT,
    TESTS,
    Problem,
    check_against_torch,
    fusion_of,
    median_ms,
    rotating_launch,
    rotating_torch,
)

SM_COUNT = 132
"""SMs of the H200 (mmcomp.arch.limits.SM_COUNT; work units past a few waves are not swept)."""
MAX_WAVES = 4
"""Largest work-unit count swept, in waves of SM_COUNT (split_k 1 is always swept)."""
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)
"""split_k values of the decode grid."""
SHAPES_OF_WS = (("pingpong", 64), ("pingpong", 128), ("cooperative", 128), ("none", 128))
"""(warp specialization, tile m) pairs the Hopper lowering builds (two consumers)."""


@dataclass
class Candidate:
    """One schedule of one shape: its overrides, the built kernel and its timings."""

    shape: tuple[int, int, int]
    overrides: dict[str, Any]
    phase: str
    chosen: str = ""
    """The whole schedule (`ScheduleParams.format()`)."""
    pinned: dict[str, Any] = field(default_factory=dict)
    """The whole schedule as `mmcomp.compile` keywords."""
    kernel: Any = None
    error: str = ""
    ratios: list[float] = field(default_factory=list)
    """cuBLAS ms / mmcomp ms, one per round."""
    mine_ms: list[float] = field(default_factory=list)
    torch_ms: list[float] = field(default_factory=list)


def parse_shape(text: str) -> tuple[int, int, int]:
    """'MxNxK' -> (m, n, k)."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"shape {text!r}: expected MxNxK, three positive ints")
    m, n, k = (int(p) for p in parts)
    return (m, n, k)


FAMILIES = ("linear", "horizontal")
"""The fusions swept: a linear, or bench.py's horizontal silu(A W1^T) * (A W2^T)."""
family = "linear"
"""The family of this run (`--family`; the build workers get it with each job)."""
dtype = "bf16"
"""The inputs' dtype of this run (`--dtype`: bf16, or f16 for linears)."""


def problem_of(shape: tuple[int, int, int], of: tuple[str, str] | None = None) -> Problem:
    """bench.py's Problem of a shape of the run's (family, dtype), or of `of`."""
    m, n, k = shape
    name, kind = of or (family, dtype)
    label = "silu(AW1)*(AW2)" if name == "horizontal" else name
    prefix = "" if kind == "bf16" else f"{kind} "
    return Problem(f"{prefix}{label} {m}x{n}x{k}", m, n, k, name, kind)


def ceil_div(a: int, b: int) -> int:
    """Ceiling of a / b."""
    return -(-a // b)


def decode_grid(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    """The grid: (warp specialization, tile m) x tile n x tile k x split_k, stages and the
    rest left to the heuristic; work units past MAX_WAVES waves and K slices of fewer than
    two K blocks are left out."""
    m, n, k = shape
    grid: list[dict[str, Any]] = []
    for (ws, tile_m), tile_n, tile_k in itertools.product(SHAPES_OF_WS, (64, 128, 256), (64, 128)):
        tiles = ceil_div(m, tile_m) * ceil_div(n, tile_n)
        for split in SPLITS:
            if split > 1 and (
                tiles * split > MAX_WAVES * SM_COUNT or ceil_div(k, tile_k) < 2 * split
            ):
                continue
            grid.append(
                {
                    "tile": (tile_m, tile_n, tile_k),
                    "warp_specialization": ws,
                    "split_k": split,
                }
            )
    return grid


FILL_WIDTHS = (64, 96, 112, 128, 160, 192, 224, 256)
"""Tile widths of the fill grid (wgmma n multiples of 8 up to 256)."""


def fill_grid(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    """The one-wave grid: the rows that hold M (ping-pong's 64 up to M = 64, else
    cooperative 128), each width of FILL_WIDTHS (tile k 64, and 128 at widths 64 and 128)
    whose tiles fit in one wave, with every split_k up to 4 that keeps the work units
    between half a wave and one."""
    m, n, k = shape
    ws, tile_m = ("pingpong", 64) if m <= 64 else ("cooperative", 128)
    grid: list[dict[str, Any]] = []
    for tile_n in FILL_WIDTHS:
        tiles = ceil_div(m, tile_m) * ceil_div(n, tile_n)
        for tile_k in (64, 128) if tile_n in (64, 128) else (64,):
            for split in range(1, 5):
                units = tiles * split
                if units > SM_COUNT or (split > 1 and 2 * units < SM_COUNT):
                    continue
                if split > 1 and ceil_div(k, tile_k) < 4 * split:
                    continue
                tile = (tile_m, tile_n, tile_k)
                grid.append({"tile": tile, "warp_specialization": ws, "split_k": split})
    return grid


PINGPONG_WIDTHS = (64, 96, 112, 128)
"""Widths of the ping-pong grid's 128-row warpgroup tiles (up to 128 accumulators a thread)."""


def pingpong_grid(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    """The ping-pong grid: 128-row tiles of PINGPONG_WIDTHS under ping-pong (each consumer
    a whole tile, so that one's epilogue overlaps the other's mainloop), without and with a
    2x1 cluster, beside cooperative tiles of the same widths in a 2x1 cluster."""
    del shape
    grid: list[dict[str, Any]] = []
    for tile_n, cluster in itertools.product(PINGPONG_WIDTHS, ((1, 1), (2, 1))):
        tile = (128, tile_n, 64)
        grid.append({"tile": tile, "warp_specialization": "pingpong", "cluster": cluster})
        if cluster == (2, 1):
            grid.append({"tile": tile, "warp_specialization": "cooperative", "cluster": cluster})
    return grid


CLUSTER_WIDTHS = (112, 128, 192, 224, 256)
"""Widths of the cluster grid's cooperative 128-row tiles."""
CLUSTER_STAGES = (0, 4, 6)
"""Ring depths of the cluster grid (0: the heuristic's)."""


def cluster_grid(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    """The cluster grid: cooperative 128-row tiles of CLUSTER_WIDTHS alone and in a 2x1
    cluster (the two CTAs of a pair share B's tile through TMA multicast), each at the
    heuristic's ring depth and at the deeper CLUSTER_STAGES where they fit."""
    del shape
    grid: list[dict[str, Any]] = []
    for tile_n, cluster, stages in itertools.product(
        CLUSTER_WIDTHS, ((1, 1), (2, 1)), CLUSTER_STAGES
    ):
        params: dict[str, Any] = {"tile": (128, tile_n, 64), "cluster": cluster}
        if stages:
            params["stages"] = stages
        grid.append(params)
    return grid


HORIZONTAL_GRID: tuple[dict[str, Any], ...] = (
    {"tile": (128, 128, 64), "stages": 4},
    {"tile": (128, 128, 64), "strategy": "hybrid-stream-k"},
    {"tile": (128, 128, 64), "cluster": (2, 1)},
    {"tile": (128, 128, 64), "cluster": (1, 2)},
    {"tile": (128, 128, 64), "raster": "n", "swizzle": 16},
    {"tile": (128, 128, 64), "epilogue": "registers"},
    {"tile": (128, 96, 64)},
    {"tile": (128, 112, 64), "stages": 4},
    {"tile": (128, 64, 64), "warp_specialization": "pingpong"},
    {"tile": (128, 128, 64), "warp_specialization": "pingpong"},
    {"tile": (64, 128, 64), "warp_specialization": "pingpong", "cluster": (2, 1)},
)
"""Schedules of the horizontal grid (each B's tile; the rest left to the heuristic)."""


def horizontal_grid(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    """The horizontal grid: HORIZONTAL_GRID (ring depth, stream-K tail, clusters, raster,
    epilogue mode, narrower and ping-pong tiles around the heuristic's 128x128)."""
    del shape
    return [dict(params) for params in HORIZONTAL_GRID]


STREAM_K_TILES = ((128, 256, 64), (128, 128, 64))
"""The tiles the stream-K grid times each strategy at (besides the heuristic's own)."""


def stream_k_grid(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    """The stream-K grid: data-parallel (persistent), stream-K and the hybrid, each at the
    heuristic's tile and at STREAM_K_TILES, the rest left to the heuristic."""
    del shape
    strategies = ("persistent", "stream-k", "hybrid-stream-k")
    grid: list[dict[str, Any]] = [{"strategy": strategy} for strategy in strategies]
    grid += [
        {"strategy": strategy, "tile": tile} for tile in STREAM_K_TILES for strategy in strategies
    ]
    return grid


def swap_grid(shape: tuple[int, int, int]) -> list[dict[str, Any]]:
    """The swap-AB grid: what the heuristic picks with swap_ab forced (in full), then the
    swapped tiles of M rows (rounded up to 8, at most 256) by 128 or 256 with K block 64
    or 128, each with the largest split_k up to 4 that keeps the work units in one wave
    and 4 K blocks per slice."""
    from mmcomp.dialects.sched import Problem as SchedProblem
    from mmcomp.schedule.heuristics import choose_params, swap_tile_m

    m, n, k = shape
    forced = keywords_of(choose_params(SchedProblem({"m": m, "n": n, "k": k}), swap_ab=True))
    grid: list[dict[str, Any]] = [forced]
    tile_m = swap_tile_m(m)
    for tile_n, tile_k in itertools.product((128, 256), (64, 128)):
        if tile_m * tile_n > 128 * 256:
            continue  # over 128 accumulators per consumer thread
        tiles = ceil_div(m, tile_m) * ceil_div(n, tile_n)
        split = max(
            s
            for s in range(1, 5)
            if s == 1 or (tiles * s <= SM_COUNT and ceil_div(k, tile_k) >= 4 * s)
        )
        tile = (tile_m, tile_n, tile_k)
        if (tile, split) != (forced["tile"], forced["split_k"]):
            grid.append({"swap_ab": True, "tile": tile, "split_k": split})
    return grid


def variants(params: dict[str, Any]) -> list[dict[str, Any]]:
    """`params` (a whole schedule's keywords) with one parameter changed at a time."""
    out: list[dict[str, Any]] = []
    for stages in (2, 3, 4, 5, 6, 8):
        if stages != params["stages"]:
            out.append({**params, "stages": stages})
    for cluster in ((1, 2), (2, 1), (1, 4)):
        out.append({**params, "cluster": cluster})
    out.append({**params, "strategy": "one-tile-per-cta"})
    out.append({**params, "raster": "n" if params["raster"] == "m" else "m"})
    for swizzle in (1, 4):
        if swizzle != params["swizzle"]:
            out.append({**params, "swizzle": swizzle})
    out.append({**params, "epilogue": "registers" if params["epilogue"] == "smem" else "smem"})
    return out


def keywords_of(params: Any) -> dict[str, Any]:
    """The `mmcomp.compile` keywords that pin a ScheduleParams in full."""
    from mmcomp.schedule.heuristics import PARAMETERS

    return {name: getattr(params, name) for name in PARAMETERS}


def _init_worker() -> None:
    """Make the worker import mmcomp and the test families as the parent does."""
    sys.path[:0] = [str(ROOT), str(TESTS), str(Path(__file__).resolve().parent)]


def build(
    job: tuple[tuple[int, int, int], dict[str, Any], bool, tuple[str, str]],
) -> tuple[str, dict[str, Any], str, bytes]:
    """(chosen schedule, its keywords, error, pickled kernel) of one shape and overrides:
    the pipeline as bench.time_mmcomp_chosen runs it; with `load`, the cubin is also made
    (filling the kernel cache for the parent)."""
    from mmcomp.backend import build_cuda_kernel
    from mmcomp.pipeline import run_pipeline

    shape, overrides, load, of = job
    try:
        module, chosen, _ = run_pipeline(fusion_of(problem_of(shape, of)).module, overrides)
        kernel = build_cuda_kernel(module)
    except Exception as error:  # noqa: BLE001 - a refused schedule is reported, not fatal
        return "", {}, f"{type(error).__name__}: {error}"[:300], b""
    if load:
        # A worker that cannot load it leaves the parent to load it (and report why).
        with contextlib.suppress(Exception):
            kernel.function()
    blob = pickle.dumps(replace(kernel, _function=None, _calls=None))
    return chosen.format(), keywords_of(chosen), "", blob


def build_all(candidates: list[Candidate], jobs: int, load: bool) -> None:
    """Build every candidate's kernel (in `jobs` spawned workers when jobs > 1)."""
    work = [
        (
            c.shape,
            c.overrides if not c.overrides else {**COMMON, **c.overrides},
            load,
            (family, dtype),
        )
        for c in candidates
    ]
    start = time.perf_counter()
    if jobs > 1:
        context = multiprocessing.get_context("spawn")
        with context.Pool(jobs, initializer=_init_worker) as pool:
            results = pool.map(build, work, chunksize=1)
    else:
        results = [build(job) for job in work]
    for candidate, (chosen, pinned, error, blob) in zip(candidates, results, strict=True):
        candidate.chosen, candidate.pinned, candidate.error = chosen, pinned, error
        candidate.kernel = pickle.loads(blob) if blob else None
    built = sum(1 for c in candidates if c.kernel is not None)
    print(
        f"built {built} of {len(candidates)} schedules in {time.perf_counter() - start:.1f} s",
        flush=True,
    )


def distinct(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The built candidates, one per shape and whole schedule (the first kept)."""
    seen: set[tuple[tuple[int, int, int], str]] = set()
    kept: list[Candidate] = []
    for candidate in candidates:
        key = (candidate.shape, candidate.chosen)
        if candidate.kernel is None or key in seen:
            continue
        seen.add(key)
        kept.append(candidate)
    return kept


def traffic_bytes(shape: tuple[int, int, int]) -> int:
    """Bytes of A, W and C (bf16) read or written once."""
    m, n, k = shape
    return 2 * (m * k + n * k + m * n)


def time_shape(
    shape: tuple[int, int, int], candidates: list[Candidate], rounds: int, repeat: int
) -> None:
    """Check each candidate against torch, then time it in pairs with cuBLAS over rounds."""
    problem = problem_of(shape)
    sets, run_torch = rotating_torch(problem)
    names = [value.name for value in fusion_of(problem).inputs]
    runs: list[tuple[Candidate, Callable[[], None]]] = []
    for candidate in candidates:
        try:
            run, first_output = rotating_launch(candidate.kernel, names, sets)
            run()
            check_against_torch(problem, sets[0], first_output)
        except Exception as error:  # noqa: BLE001 - a failing schedule is reported
            candidate.error = f"{type(error).__name__}: {error}"[:300]
            continue
        runs.append((candidate, run))
    for turn in range(rounds):
        shift = turn % max(len(runs), 1)
        for candidate, run in runs[shift:] + runs[:shift]:
            if turn % 2:
                mine = median_ms(run, repeat)
                theirs = median_ms(run_torch, repeat)
            else:
                theirs = median_ms(run_torch, repeat)
                mine = median_ms(run, repeat)
            candidate.mine_ms.append(mine)
            candidate.torch_ms.append(theirs)
            candidate.ratios.append(theirs / mine)


def record(candidate: Candidate) -> dict[str, Any]:
    """A candidate's JSON line: schedule, median ratio and spread, ms, GB/s."""
    entry: dict[str, Any] = {
        "shape": "x".join(str(d) for d in candidate.shape),
        "phase": candidate.phase,
        "overrides": {
            k: list(v) if isinstance(v, tuple) else v for k, v in candidate.overrides.items()
        },
        "chosen": candidate.chosen,
    }
    if candidate.error:
        entry["error"] = candidate.error
    if candidate.ratios:
        volume = traffic_bytes(candidate.shape)
        mine = statistics.median(candidate.mine_ms)
        theirs = statistics.median(candidate.torch_ms)
        entry.update(
            ratio=statistics.median(candidate.ratios),
            ratio_min=min(candidate.ratios),
            ratio_max=max(candidate.ratios),
            rounds=len(candidate.ratios),
            mmcomp_us=1e3 * mine,
            cublas_us=1e3 * theirs,
            mmcomp_gbs=volume / mine / 1e6,
            cublas_gbs=volume / theirs / 1e6,
        )
    return entry


def summary_rows(entries: list[dict[str, Any]], top: int) -> list[str]:
    """Markdown rows: per shape and phase, the heuristic's and the `top` best schedules."""
    rows = [
        "| shape | phase | schedule | ratio (min-max) | mmcomp us | GB/s | cuBLAS GB/s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    keyed: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for entry in entries:
        if "ratio" in entry:
            keyed.setdefault((entry["shape"], entry["phase"]), []).append(entry)
    for (shape, phase), group in keyed.items():
        group.sort(key=lambda e: -e["ratio"])
        shown = group[:top] + [e for e in group[top:] if not e["overrides"]]
        for entry in shown:
            label = "heuristic: " if not entry["overrides"] else ""
            rows.append(
                f"| {shape} | {phase} | {label}{entry['chosen']} | {entry['ratio']:.3f} "
                f"({entry['ratio_min']:.3f}-{entry['ratio_max']:.3f}) | "
                f"{entry['mmcomp_us']:.1f} | {entry['mmcomp_gbs']:.0f} | "
                f"{entry['cublas_gbs']:.0f} |"
            )
    return rows


def refine(
    args: argparse.Namespace, kept: list[Candidate], emit: Callable[[list[Candidate]], None]
) -> None:
    """Time the `args.refine` best of each shape (and the heuristic's) again beside their
    one-parameter variants."""
    again: list[Candidate] = []
    fresh: list[Candidate] = []
    for shape in args.shapes:
        timed = sorted(
            (c for c in kept if c.shape == shape and c.ratios),
            key=lambda c: -statistics.median(c.ratios),
        )
        best = timed[: args.refine] + [c for c in timed[args.refine :] if not c.overrides]
        for candidate in best:
            again.append(replace(candidate, phase="refine", ratios=[], mine_ms=[], torch_ms=[]))
            fresh += [Candidate(shape, params, "refine") for params in variants(candidate.pinned)]
    build_all(fresh, args.jobs, load=True)
    emit([c for c in fresh if c.kernel is None])
    known = {(c.shape, c.chosen) for c in kept}
    fresh = [c for c in distinct(fresh) if (c.shape, c.chosen) not in known]
    for shape in args.shapes:
        group = [c for c in again + fresh if c.shape == shape]
        time_shape(shape, group, args.refine_rounds, args.repeat)
        emit(group)
        print_best(shape, group)


def print_best(shape: tuple[int, int, int], group: list[Candidate]) -> None:
    """Print the three best of a shape's timed candidates and the heuristic's."""
    rows = summary_rows([record(c) for c in group], 3)[2:]
    print("\n".join(rows), flush=True)


def main(argv: list[str] | None = None) -> int:
    """Build, check and time the grid (and its refinement) on every shape."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shapes", type=parse_shape, nargs="+", default=DECODE_SHAPES)
    parser.add_argument(
        "--grid",
        choices=(
            "decode",
            "fill",
            "stream-k",
            "swap",
            "pingpong",
            "cluster",
            "horizontal",
            "heuristic",
        ),
        default="decode",
    )
    parser.add_argument("--family", choices=FAMILIES, default="linear")
    parser.add_argument("--dtype", choices=("bf16", "f16"), default="bf16", help="f16: linears")
    parser.add_argument("--refine", type=int, default=0, help="vary the T best per shape")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--refine-rounds", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=1, help="build processes")
    parser.add_argument("--top", type=int, default=8, help="schedules per shape in summary")
    parser.add_argument("--out", default="", help="directory for results.jsonl, summary.md")
    parser.add_argument("--build-only", action="store_true", help="build, do not time")
    args = parser.parse_args(argv)
    global family, dtype
    family, dtype = args.family, args.dtype
    if dtype != "bf16" and family != "linear":
        parser.error(f"--dtype {dtype}: only the linear family takes it (bench.py's rows)")
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    entries: list[dict[str, Any]] = []

    def emit(candidates: list[Candidate]) -> None:
        for candidate in candidates:
            entries.append(record(candidate))
            if out is not None:
                with (out / "results.jsonl").open("a") as stream:
                    stream.write(json.dumps(entries[-1]) + "\n")

    candidates = [Candidate(shape, {}, "grid") for shape in args.shapes]
    if args.grid != "heuristic":
        grids = {"decode": decode_grid, "fill": fill_grid, "stream-k": stream_k_grid}
        grids["pingpong"] = pingpong_grid
        grids["cluster"] = cluster_grid
        grids["horizontal"] = horizontal_grid
        grid = {**grids, "swap": swap_grid}[args.grid]
        candidates += [
            Candidate(shape, params, "grid") for shape in args.shapes for params in grid(shape)
        ]
    build_all(candidates, args.jobs, load=not args.build_only)
    refused = [c for c in candidates if c.kernel is None]
    emit(refused)
    kept = distinct(candidates)
    print(f"{len(kept)} distinct schedules, {len(refused)} refused", flush=True)
    if args.build_only:
        return 0
    import torch  # pyright: ignore[reportMissingImports]

    for shape in args.shapes:
        mine = [c for c in kept if c.shape == shape]
        time_shape(shape, mine, args.rounds, args.repeat)
        emit(mine)
        print_best(shape, mine)
    if args.refine:
        refine(args, kept, emit)
    device = torch.cuda.get_device_name()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = "\n".join(
        [
            f"# Schedule sweep, {stamp}",
            "",
            f"- device: {device}; torch {torch.__version__} (CUDA {torch.version.cuda})",
            f"- command: `python tools/sweep_schedules.py {' '.join(sys.argv[1:])}`",
            "",
            *summary_rows(entries, args.top),
            "",
        ]
    )
    print(text, flush=True)
    if out is not None:
        (out / "summary.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
