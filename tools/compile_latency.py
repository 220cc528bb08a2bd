"""The three compile latencies of one fusion, each in fresh processes, as a table.

    python tools/compile_latency.py [--fusion examples/linear_bf16.mlir] [--runs 7]
                                    [--calls 2000] [--imports N]

- **in-process hit**: a process compiles the fusion once, then compiles it again `--calls`
  times, half with the same `Fusion`, half with an equal one parsed anew from the same text
  (the parse not timed); the row gives the median microseconds of one `mmcomp.compile`.
  A third row compiles the file's path again (`mmcomp.compile(path)`: the file read, its
  text looked up).
- **fresh process, warm disk**: with the kernel already in the disk cache, a fresh process
  runs `import mmcomp; mmcomp.compile(path)` (the cache asked by the file's text before
  parsing it), and another `import mmcomp; mmcomp.compile(mmcomp.parse(path))` (the fusion
  parsed first: xDSL and numpy imported); each row gives the milliseconds from before
  `import mmcomp` to the kernel, and the first the whole process's wall time (interpreter
  start-up and exit included) beside it.
- **cold compile**: a fresh process, with an empty cache directory, imports mmcomp and
  parses the fusion (not timed), then compiles it: the milliseconds of that first
  `mmcomp.compile` (the passes' imports, the pipeline, ptxas) on the cuda back end.

Each row is the median over `--runs` processes, with the spread (min-max) and the CPU time
(user + system, of the process and its children: ptxas) beside the wall time: on a shared
machine the wall time moves with the load, the CPU time much less. Every process runs with
its own `MMCOMP_CACHE_DIR` under a temporary directory, so the user's cache is untouched,
and with Python's bytecode cache on (`PYTHONDONTWRITEBYTECODE` dropped; a first process
writes it), as for an installed package. The load average (`os.getloadavg`, as `uptime`
prints it) is printed before and after.

`--imports N` prints, instead of the table, the N slowest imports (`python -X importtime`)
of `import mmcomp; mmcomp.compile(path)` in a fresh process with a warm disk cache.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

HIT = r"""
import json, sys, time
import mmcomp
path, calls = sys.argv[1], int(sys.argv[2])
text = open(path).read()
fusion = mmcomp.parse(text)
mmcomp.compile(fusion)
mmcomp.compile(path)
same, equal, by_path = [], [], []
for index in range(calls):
    if index % 2:
        other = mmcomp.parse(text)
        start = time.perf_counter_ns()
        mmcomp.compile(other)
        equal.append(time.perf_counter_ns() - start)
    else:
        start = time.perf_counter_ns()
        mmcomp.compile(fusion)
        same.append(time.perf_counter_ns() - start)
    start = time.perf_counter_ns()
    mmcomp.compile(path)
    by_path.append(time.perf_counter_ns() - start)
print(json.dumps({"same": same, "equal": equal, "path": by_path}))
"""

WARM = r"""
import time
start, cpu = time.perf_counter(), time.process_time()
import json, sys
import mmcomp
path = sys.argv[1]
kernel = mmcomp.compile(path if sys.argv[2] == "path" else mmcomp.parse(path))
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
assert mmcomp.cache.stats()["disk_hits"] == 1, mmcomp.cache.stats()
print(json.dumps({"wall": wall, "cpu": cpu}))
"""

COLD = r"""
import json, os, sys, time
import mmcomp
fusion = mmcomp.parse(sys.argv[1])
before = os.times()
start = time.perf_counter()
kernel = mmcomp.compile(fusion)
wall = time.perf_counter() - start
after = os.times()
cpu = sum(after[:4]) - sum(before[:4])
assert mmcomp.cache.stats()["builds"] == 1, mmcomp.cache.stats()
print(json.dumps({"wall": wall, "cpu": cpu}))
"""


def _run(script: str, args: list[str], cache: Path) -> tuple[dict[str, Any], float]:
    """The JSON a script prints in a fresh interpreter, and the process's wall seconds."""
    env = {**os.environ, "MMCOMP_CACHE_DIR": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: the bytecode cached
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.splitlines()[-1]), time.perf_counter() - start


IMPORTS = r"""
import sys
print("imports-start", file=sys.stderr, flush=True)
import mmcomp
mmcomp.compile(sys.argv[1])
print("{}")
"""


def imports(fusion: Path, count: int) -> list[tuple[str, float, float]]:
    """(module, self ms, cumulative ms) of the `count` slowest imports (by self time) of
    `import mmcomp; mmcomp.compile(path)` with a warm disk cache, from `python -X
    importtime` in a fresh process; and a first row ("all", total self ms, modules)."""
    with tempfile.TemporaryDirectory(prefix="mmcomp-imports-") as scratch:
        cache = Path(scratch)
        _run(COLD, [str(fusion)], cache)  # fills the cache by the parsed fusion
        env = {**os.environ, "MMCOMP_CACHE_DIR": str(cache)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        for _ in range(2):  # the first writes the source entry; the second is the hit
            done = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", IMPORTS, str(fusion)],
                env=env,
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            )
    found: list[tuple[str, float, float]] = []
    for line in done.stderr.split("imports-start\n", 1)[-1].splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        found.append((parts[2].strip(), int(parts[0]) / 1e3, int(parts[1]) / 1e3))
    total = ("all", sum(row[1] for row in found), float(len(found)))
    return [total, *sorted(found, key=lambda row: -row[1])[:count]]


def _row(values: list[float], scale: float, unit: str) -> str:
    """`median (min-max) unit` of values, scaled."""
    scaled = sorted(value * scale for value in values)
    digits = 1 if unit in ("ms", "us") else 3
    median = statistics.median(scaled)
    return f"{median:.{digits}f} ({scaled[0]:.{digits}f}-{scaled[-1]:.{digits}f}) {unit}"


def measure(fusion: Path, runs: int, calls: int) -> list[tuple[str, str, str]]:
    """(latency, wall, cpu or note) rows of the table."""
    with tempfile.TemporaryDirectory(prefix="mmcomp-latency-") as scratch:
        root = Path(scratch)
        warm_cache = root / "warm"
        _run(COLD, [str(fusion)], root / "bytecode")  # writes the bytecode of every import
        hit_same: list[float] = []
        hit_equal: list[float] = []
        hit_path: list[float] = []
        for _ in range(runs):
            found, _ = _run(HIT, [str(fusion), str(calls)], warm_cache)
            hit_same.append(statistics.median(found["same"]) / 1e9)
            hit_equal.append(statistics.median(found["equal"]) / 1e9)
            hit_path.append(statistics.median(found["path"]) / 1e9)
        warm: dict[str, list[float]] = {"path": [], "parse": []}
        warm_cpu: dict[str, list[float]] = {"path": [], "parse": []}
        warm_process: list[float] = []
        for _ in range(runs):
            for mode in warm:
                found, process = _run(WARM, [str(fusion), mode], warm_cache)
                warm[mode].append(float(found["wall"]))
                warm_cpu[mode].append(float(found["cpu"]))
                if mode == "path":
                    warm_process.append(process)
        cold: list[float] = []
        cold_cpu: list[float] = []
        for index in range(runs):
            found, _ = _run(COLD, [str(fusion)], root / f"cold{index}")
            cold.append(float(found["wall"]))
            cold_cpu.append(float(found["cpu"]))
    return [
        ("in-process hit, same Fusion", _row(hit_same, 1e6, "us"), "-"),
        ("in-process hit, equal Fusion parsed anew", _row(hit_equal, 1e6, "us"), "-"),
        ("in-process hit, compile(path)", _row(hit_path, 1e6, "us"), "-"),
        (
            "fresh process, warm disk: import + compile(path)",
            _row(warm["path"], 1e3, "ms"),
            _row(warm_cpu["path"], 1e3, "ms"),
        ),
        ("fresh process, warm disk: its whole process", _row(warm_process, 1e3, "ms"), "-"),
        (
            "fresh process, warm disk: import + compile(parse(path))",
            _row(warm["parse"], 1e3, "ms"),
            _row(warm_cpu["parse"], 1e3, "ms"),
        ),
        (
            "cold compile (cuda back end, ptxas included)",
            _row(cold, 1e3, "ms"),
            _row(cold_cpu, 1e3, "ms"),
        ),
    ]


def main() -> None:
    """Measure and print the table, with the machine and its load."""
    parser = argparse.ArgumentParser(description="The three compile latencies, as a table.")
    parser.add_argument("--fusion", type=Path, default=ROOT / "examples" / "linear_bf16.mlir")
    parser.add_argument("--runs", type=int, default=7, help="processes per row")
    parser.add_argument("--calls", type=int, default=2000, help="in-process hits per process")
    parser.add_argument(
        "--imports",
        type=int,
        default=0,
        metavar="N",
        help="instead of the table: the N slowest imports of a warm disk hit by path",
    )
    args = parser.parse_args()
    if args.imports:
        rows_of_imports = imports(args.fusion.resolve(), args.imports)
        (_, total, modules), *slowest = rows_of_imports
        print(
            f"import mmcomp; mmcomp.compile(path), warm disk: {int(modules)} modules, "
            f"{total:.1f} ms of import time in all (python -X importtime); load average "
            f"{os.getloadavg()[0]:.1f}"
        )
        print()
        print("| module | self ms | cumulative ms |")
        print("| --- | --- | --- |")
        for module, own, cumulative in slowest:
            print(f"| {module} | {own:.1f} | {cumulative:.1f} |")
        return
    load_before = os.getloadavg()
    rows = measure(args.fusion.resolve(), args.runs, args.calls)
    load_after = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    print(f"fusion: {args.fusion}; {args.runs} processes per row; median (min-max)")
    print(
        f"machine: {platform.node()}, {os.cpu_count()} CPUs ({cpu}), Python "
        f"{platform.python_version()}; load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after"
    )
    print()
    print("| latency | wall | CPU (user + system) |")
    print("| --- | --- | --- |")
    for name, wall, cpu_time in rows:
        print(f"| {name} | {wall} | {cpu_time} |")


if __name__ == "__main__":
    main()
