"""The compile caches: in memory (same process), on disk (a new process runs no pass and
no ptxas), damaged entries rebuilt, concurrent fills, and `python -m mmcomp.cache`.

Each disk test uses its own MMCOMP_CACHE_DIR. No GPU is needed: compiling never touches one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import cases
import pytest

import mmcomp
from mmcomp import cache as compile_cache
from mmcomp.runtime.cache import KernelCache

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys, time
    import mmcomp, mmcomp.backend, mmcomp.pipeline, mmcomp.arch.ptxas
    from mmcomp import cache
    import cases
    fusion = cases.gelu_bias(300, 504, 200)
    if sys.argv[1] == "hit-only":
        def refuse(*args, **kwargs):
            raise AssertionError("a pass or ptxas ran on a cache hit")
        mmcomp.pipeline.run_pipeline = refuse
        mmcomp.arch.ptxas.assemble = refuse
    start = time.perf_counter()
    kernel = mmcomp.compile(fusion, tile=(128, 128, 64), epilogue="smem")
    seconds = time.perf_counter() - start
    print(json.dumps({
        "seconds": seconds,
        "stats": cache.stats(),
        "ptx": kernel.ptx,
        "params": kernel.params.format(),
        "stage_ir": list(kernel.stage_ir),
        "tile_merge": kernel.ir("tile-merge"),
        "module_ops": len(list(kernel.module.walk())),
        "spills": kernel.report.spills if kernel.report else None,
    }))
    """
)


def environment(cache_dir: Path) -> dict[str, str]:
    """This process's environment with the cache in `cache_dir` and the checkout (and its
    tests/unit, for `cases`) first."""
    path = os.pathsep.join(
        filter(None, [str(ROOT), str(ROOT / "tests" / "unit"), os.environ.get("PYTHONPATH", "")])
    )
    return dict(os.environ, MMCOMP_CACHE_DIR=str(cache_dir), PYTHONPATH=path)


def child(cache_dir: Path, mode: str = "any") -> subprocess.Popen[str]:
    env = environment(cache_dir)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )


def result(process: subprocess.Popen[str]) -> dict[str, object]:
    stdout, stderr = process.communicate(timeout=240)
    assert process.returncode == 0, stderr[-4000:]
    return json.loads(stdout.strip().splitlines()[-1])


def entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob(f"*{compile_cache.ARTIFACT_SUFFIX}"))


def test_memory_hit_shares_the_artifact_in_under_a_millisecond():
    first = mmcomp.compile(cases.linear(300, 500, 200), split_k=1, epilogue="registers")
    fusion = cases.linear(300, 500, 200)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        again = mmcomp.compile(fusion, epilogue="registers", split_k=1)
        times.append(time.perf_counter() - start)
    assert min(times) < 1e-3, times
    assert again.device_kernel is first.device_kernel
    assert again.fusion is not fusion and str(again.fusion) == str(fusion)  # a copy
    assert again.stage_ir is first.stage_ir
    assert again.ptx == first.ptx


def test_every_keyword_and_the_backend_are_in_the_key():
    fusion = cases.linear(300, 500, 200)
    base = mmcomp.compile(fusion, tile=(128, 128, 64), epilogue="registers")
    listed = mmcomp.compile(fusion, tile=[128, 128, 64], epilogue="registers")
    assert listed.device_kernel is base.device_kernel  # one normalized key
    other = mmcomp.compile(fusion, tile=(128, 128, 64), epilogue="smem")
    assert other.device_kernel is not base.device_kernel
    assert other.params.epilogue == "smem" and base.params.epilogue == "registers"
    swizzled = mmcomp.compile(fusion, tile=(128, 128, 64), epilogue="registers", swizzle=2)
    assert swizzled.params.swizzle == 2 and swizzled.ptx != base.ptx
    interp = mmcomp.compile(fusion, backend="interp", tile=(128, 128, 64), epilogue="registers")
    assert interp.backend == "interp"
    with pytest.raises(AttributeError):
        _ = interp.ptx
    keys = {
        compile_cache.disk_key("ir", "cuda", compile_cache.parameters_key({})),
        compile_cache.disk_key("ir", "interp", compile_cache.parameters_key({})),
        compile_cache.disk_key("ir ", "cuda", compile_cache.parameters_key({})),
        compile_cache.disk_key("ir", "cuda", compile_cache.parameters_key({"split_k": 2})),
    }
    assert len(keys) == 4


def test_disk_hit_in_a_new_process_runs_no_pass_and_no_ptxas(tmp_path: Path):
    built = result(child(tmp_path))
    assert built["stats"] == {"memory_hits": 0, "disk_hits": 0, "builds": 1}
    assert len(entries(tmp_path)) == 1
    hit = result(child(tmp_path, "hit-only"))
    assert hit["stats"] == {"memory_hits": 0, "disk_hits": 1, "builds": 0}
    assert hit["seconds"] < 0.05, hit["seconds"]
    for key in ("ptx", "params", "stage_ir", "tile_merge", "module_ops", "spills"):
        assert hit[key] == built[key], key


def test_a_damaged_entry_is_rebuilt_never_loaded(tmp_path: Path):
    result(child(tmp_path))
    (entry,) = entries(tmp_path)
    whole = entry.read_bytes()
    entry.write_bytes(whole[: len(whole) // 2])  # truncated
    rebuilt = result(child(tmp_path))
    assert rebuilt["stats"]["builds"] == 1 and rebuilt["stats"]["disk_hits"] == 0
    (entry,) = entries(tmp_path)  # rewritten whole (the damaged file was removed)
    assert compile_cache.read_artifact(entry) is not None
    # A payload that passes the checksum but does not decode is a miss too.
    store = KernelCache(tmp_path, suffix=compile_cache.ARTIFACT_SUFFIX)
    assert store.store(entry.stem, b"not a compressed pickle")
    assert compile_cache.read_artifact(entry) is None
    rebuilt = result(child(tmp_path))
    assert rebuilt["stats"]["builds"] == 1
    assert compile_cache.read_artifact(entry) is not None
    hit = result(child(tmp_path, "hit-only"))
    assert hit["stats"]["disk_hits"] == 1


def test_concurrent_compiles_of_one_fusion_leave_one_whole_entry(tmp_path: Path):
    processes = [child(tmp_path) for _ in range(2)]
    outcomes = [result(process) for process in processes]
    assert all(outcome["ptx"] == outcomes[0]["ptx"] for outcome in outcomes)
    (entry,) = entries(tmp_path)
    assert compile_cache.read_artifact(entry) is not None
    assert not list(tmp_path.glob(".*.tmp"))
    assert result(child(tmp_path, "hit-only"))["stats"]["disk_hits"] == 1


def test_cache_command_shows_and_clears(tmp_path: Path):
    result(child(tmp_path))
    env = environment(tmp_path)

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mmcomp.cache", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    (tmp_path / "choice.autotune").write_text("{}")  # an autotune choice (mmcomp.tuning)
    shown = run("info", "-v")
    assert f"mmcomp cache: {tmp_path}" in shown
    assert "compiled kernels: 1" in shown and "@gelu_bias tile = 128x128x64" in shown
    assert "autotune choices: 1" in shown
    assert "removed 2 files" in run("clear")
    assert not entries(tmp_path)
    assert "compiled kernels: 0" in run("info")
