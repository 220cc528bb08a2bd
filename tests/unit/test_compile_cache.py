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
from typing import Any

import cases
import pytest

import mmcomp
from mmcomp import cache as compile_cache
from mmcomp.runtime.cache import KernelCache

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys, time
    import mmcomp, mmcomp.backend, mmcomp.pipeline, mmcomp.arch.ptxas, mmcomp.schedule.heuristics
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


TEXT_CHILD = textwrap.dedent(
    """
    import json, sys, time
    start = time.perf_counter()
    import mmcomp
    kernel = mmcomp.compile(sys.argv[1], **json.loads(sys.argv[2]))
    seconds = time.perf_counter() - start
    heavy = sorted(
        name for name in sys.modules
        if name.startswith(("xdsl.", "numpy", "torch", "cuda", "mmcomp.pipeline",
                            "mmcomp.passes", "mmcomp.lowering", "mmcomp.dialects"))
    )
    print(json.dumps({
        "seconds": seconds,
        "heavy": heavy,
        "stats": mmcomp.cache.stats(),
        "kind": type(kernel).__name__,
        "ptx": kernel.ptx,
        "params": kernel.params.format(),
        "fusion": str(kernel.fusion),
        "inputs": [value.name for value in kernel.fusion.inputs],
        "stage_ir": list(kernel.stage_ir),
        "tile_merge": kernel.ir("tile-merge"),
        "hopper": kernel.ir("lower-schedule-to-hopper"),
        "spills": kernel.report.spills if kernel.report else None,
    }))
    """
)


def text_child(cache_dir: Path, path: Path, keywords: dict[str, Any] | None = None) -> Any:
    """What TEXT_CHILD prints: `mmcomp.compile(path, **keywords)` in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", TEXT_CHILD, str(path), json.dumps(keywords or {})],
        capture_output=True,
        text=True,
        env=environment(cache_dir),
        cwd=ROOT,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


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


def epilogue_variant(
    name: str = "epilogue",
    shape: tuple[int, int, int] = (64, 128, 64),
    dtype: str = "bf16",
    inputs: tuple[str, str] = ("a", "w"),
    approximate: str = "tanh",
    scale: float = 0.5,
    swapped: bool = False,
    dynamic_m: bool = False,
) -> mmcomp.Fusion:
    """gelu(A W^T) * scale - A W^T, cast to `dtype`, each aspect a parameter (`swapped`
    reverses the subtraction's operands; `dynamic_m` makes M dynamic)."""
    m, n, k = shape
    f = mmcomp.Fusion(name)
    a = f.input(inputs[0], ["m" if dynamic_m else m, k], dtype)
    w = f.input(inputs[1], [n, k], dtype)
    y = f.linear(a, w)
    scaled = f.gelu(y, approximate) * scale
    f.output(f.cast(y - scaled if swapped else scaled - y, dtype))
    return f


VARIANTS: dict[str, dict[str, object]] = {
    "base": {},
    "function name": {"name": "other"},
    "shape n": {"shape": (64, 256, 64)},
    "shape k": {"shape": (64, 128, 128)},
    "dtype": {"dtype": "f16"},
    "input names": {"inputs": ("x", "w")},
    "input names swapped": {"inputs": ("w", "a")},
    "op attribute": {"approximate": "none"},
    "scalar": {"scale": 0.25},
    "negative zero": {"scale": -0.0},
    "positive zero": {"scale": 0.0},
    "operand order": {"swapped": True},
    "dynamic extent": {"dynamic_m": True},
}
"""Fusions that differ from "base" in one aspect each (every one compiles differently)."""


def test_different_fusions_never_share_a_kernel():
    compile_cache.clear_memory()
    keys = {
        name: compile_cache.structure_key(epilogue_variant(**v)) for name, v in VARIANTS.items()
    }
    assert len(set(keys.values())) == len(VARIANTS), keys
    for name, variant in VARIANTS.items():
        again = compile_cache.structure_key(epilogue_variant(**variant))
        assert again == keys[name] and hash(again) == hash(keys[name]), name
    for order in (list(VARIANTS), list(reversed(VARIANTS))):
        compile_cache.clear_memory()
        for name in order:
            for _ in range(2):  # a build, then a memory hit for an equal fusion built anew
                fusion = epilogue_variant(**VARIANTS[name])
                dynamic = {"schedule_m": 64} if VARIANTS[name].get("dynamic_m") else {}
                kernel = mmcomp.compile(fusion, backend="interp", **dynamic)
                assert kernel.stage_ir["fusion"] == str(fusion), name
                assert str(kernel.fusion) == str(fusion), name
    schedules = [{}, {"tile": (64, 128, 64)}, {"stages": 3}, {"swizzle": 2}]
    kernels = [
        mmcomp.compile(epilogue_variant(), backend="interp", **keywords) for keywords in schedules
    ]
    assert len({kernel.params.format() for kernel in kernels}) == len(schedules)
    dynamic = [
        mmcomp.compile(epilogue_variant(dynamic_m=True), backend="interp", schedule_m=m)
        for m in (64, 4096, 64)
    ]
    assert dynamic[0].params != dynamic[1].params and dynamic[2].params == dynamic[0].params


def test_a_memory_hit_returns_a_correct_kernel():
    compile_cache.clear_memory()
    for name in ("base", "negative zero", "operand order", "input names swapped"):
        built = mmcomp.compile(epilogue_variant(**VARIANTS[name]), backend="interp")
        fusion = epilogue_variant(**VARIANTS[name])
        hits = compile_cache.stats()["memory_hits"]
        kernel = mmcomp.compile(fusion, backend="interp")
        assert compile_cache.stats()["memory_hits"] == hits + 1 and kernel.module is built.module
        arrays = cases.inputs_for(fusion)
        (got,) = kernel(*arrays)
        (want,) = mmcomp.reference(fusion, *arrays)
        assert cases.relative_error(got, want) < 2e-2, name


def test_a_memory_hit_takes_under_a_tenth_of_a_millisecond():
    fusion = cases.linear(300, 500, 200)
    mmcomp.compile(fusion, backend="interp")
    times = []
    for _ in range(200):
        start = time.perf_counter()
        mmcomp.compile(fusion, backend="interp")
        times.append(time.perf_counter() - start)
    assert min(times) < 1e-4, min(times)  # the minimum: the machine may be loaded


def test_the_structure_is_walked_once_per_fusion(monkeypatch: pytest.MonkeyPatch):
    from mmcomp.frontend import builder

    walks: list[object] = []
    walk = builder.structure_of

    def counted(op: Any) -> Any:
        walks.append(op)
        return walk(op)

    monkeypatch.setattr(builder, "structure_of", counted)
    fusion = epilogue_variant()
    kernel = mmcomp.compile(fusion, backend="interp")
    for _ in range(3):
        assert mmcomp.compile(fusion, backend="interp").module is kernel.module
    assert len(walks) == 1
    again = epilogue_variant()  # an equal fusion, built anew: walked once, then a hit
    assert mmcomp.compile(again, backend="interp").module is kernel.module
    assert len(walks) == 2


def test_a_fusion_changed_after_a_compile_is_compiled_again():
    """The structure kept on a Fusion ends with any change: by its own methods, or by xDSL
    through `module`, `func` or a Value's `ssa` (handed out before the compile or after)."""
    compile_cache.clear_memory()
    fusion = mmcomp.Fusion("grown")
    a = fusion.input("a", [64, 64], "bf16")
    w = fusion.input("w", [128, 64], "bf16")
    y = fusion.linear(a, w)
    fusion.output(fusion.cast(y, "bf16"))
    first = mmcomp.compile(fusion, backend="interp")
    fusion.output(fusion.cast(fusion.relu(y), "bf16"))  # a second output, by a method
    second = mmcomp.compile(fusion, backend="interp")
    assert second.module is not first.module and len(second.fusion.outputs) == 2
    assert mmcomp.compile(fusion, backend="interp").module is second.module

    from xdsl.dialects.builtin import StringAttr

    from mmcomp.dialects import fusion as fd

    relu = next(op for op in fusion.func.body.block.ops if isinstance(op, fd.ReluOp))
    third = mmcomp.compile(fusion, backend="interp")
    assert third.module is second.module  # handed out, but unchanged: the same key
    sigmoid = fd.SigmoidOp(relu.operands[0])  # an edit through a handle taken earlier
    fusion.peek_func().body.block.insert_op_before(sigmoid, relu)
    relu.operands[0] = sigmoid.results[0]
    fourth = mmcomp.compile(fusion, backend="interp")
    assert fourth.module is not third.module and "fusion.sigmoid" in str(fourth.fusion)
    y.ssa.name_hint = "renamed"  # a name the printed IR shows
    fifth = mmcomp.compile(fusion, backend="interp")
    assert fifth.module is not fourth.module and "%renamed" in str(fifth.fusion)

    arrays = cases.inputs_for(fusion)
    for got, want in zip(fifth(*arrays), mmcomp.reference(fusion, *arrays), strict=True):
        assert cases.relative_error(got, want) < 2e-2

    module = epilogue_variant().peek_module().clone()  # a module its caller keeps
    over = mmcomp.Fusion.from_module(module)
    before = mmcomp.compile(over, backend="interp")
    next(iter(module.ops)).properties["sym_name"] = StringAttr("renamed_function")
    after = mmcomp.compile(over, backend="interp")
    assert after.module is not before.module and "@renamed_function" in str(after.fusion)


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


def test_lowering_texts_are_printed_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from mmcomp.pipeline import PRINTED_WHEN_ASKED, run_pipeline

    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path))
    compile_cache.clear_memory()
    fusion = cases.gelu_bias(300, 504, 200)
    built = mmcomp.compile(fusion, tile=(128, 128, 64))
    assert compile_cache.stats()["builds"] >= 1 and len(entries(tmp_path)) == 1
    _, _, every = run_pipeline(fusion.module, {"tile": (128, 128, 64)})
    compile_cache.clear_memory()
    loaded = mmcomp.compile(fusion, tile=(128, 128, 64))  # from disk, in this process
    assert loaded.device_kernel is not built.device_kernel
    for kernel in (built, loaded):
        assert list(kernel.stage_ir) == list(every)
        assert all(name in kernel.stage_ir for name in PRINTED_WHEN_ASKED)
        for name in PRINTED_WHEN_ASKED:
            assert kernel.ir(name) == every[name], name
    assert "ptx.entry" in loaded.ir("convert-arith-to-ptx")


@pytest.mark.parametrize("every_stage", [False, True])
def test_lowering_stages_are_verified_at_the_end_or_each_with_the_variable(
    every_stage: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A lowering stage's invalid output is caught by the last stage's verification, or by
    its own with MMCOMP_VERIFY_STAGES=1."""
    from xdsl.dialects.builtin import StringAttr

    from mmcomp import pipeline as compiler
    from mmcomp.dialects import ptx

    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path))
    if every_stage:
        monkeypatch.setenv(compiler.VERIFY_STAGES, "1")
    else:
        monkeypatch.delenv(compiler.VERIFY_STAGES, raising=False)
    names = [stage.name for stage in compiler.PIPELINE]
    index = names.index("convert-hopper-to-ptx")
    lowering = compiler.PIPELINE[index]

    def invalid(ctx: Any, module: Any, compilation: compiler.Compilation) -> None:
        lowering.run(ctx, module, compilation)
        for op in module.walk():
            if isinstance(op, ptx.PtxModuleOp):
                op.properties["version"] = StringAttr("7.0")  # below sm_90a's 8.0

    pipeline = list(compiler.PIPELINE)
    pipeline[index] = compiler.Stage(lowering.name, invalid)
    monkeypatch.setattr(compiler, "PIPELINE", pipeline)
    compile_cache.clear_memory()
    with pytest.raises(mmcomp.ScheduleError) as error:
        mmcomp.compile(cases.linear(300, 500, 200), tile=(128, 128, 64))
    caught_by = "convert-hopper-to-ptx" if every_stage else names[-1]
    assert str(error.value).startswith(f"{caught_by}:"), str(error.value)
    assert "7.0" in str(error.value) or "version" in str(error.value), str(error.value)


def test_ir_text_hit_in_a_new_process_imports_neither_xdsl_nor_numpy(tmp_path: Path):
    """`mmcomp.compile(path)` asks the disk cache by the file's text before parsing it: a
    hit imports neither xDSL's dialects, numpy nor the passes; the kernel's fusion, params,
    PTX and stage texts are made when first asked for and equal the built kernel's."""
    path = tmp_path / "gelu_bias.mlir"
    path.write_text(str(cases.gelu_bias(300, 504, 200)))
    cache_dir = tmp_path / "cache"
    built = text_child(cache_dir, path)
    assert built["stats"] == {"memory_hits": 0, "disk_hits": 0, "builds": 1}
    assert len(list(cache_dir.glob(f"*{compile_cache.SOURCE_SUFFIX}"))) == 1
    hit = text_child(cache_dir, path)
    assert hit["stats"] == {"memory_hits": 0, "disk_hits": 1, "builds": 0}
    assert hit["heavy"] == [], hit["heavy"]  # read before the kernel's contents were asked
    for key in ("kind", "ptx", "params", "fusion", "inputs", "stage_ir", "tile_merge"):
        assert hit[key] == built[key], key
    assert hit["hopper"] == built["hopper"] and hit["spills"] == built["spills"]
    assert hit["fusion"] == str(mmcomp.parse(path))
    keywords = {"tile": [128, 128, 64], "epilogue": "smem"}
    tiled = text_child(cache_dir, path, keywords)
    assert tiled["stats"]["builds"] == 1 and tiled["params"] != built["params"]
    tiled_hit = text_child(cache_dir, path, keywords)  # keywords of builtin types: as given
    assert tiled_hit["stats"]["disk_hits"] == 1 and tiled_hit["heavy"] == []
    assert tiled_hit["ptx"] == tiled["ptx"] and tiled_hit["params"] == tiled["params"]
    path.write_text(str(cases.gelu_bias(300, 504, 200, approximate="none")))
    changed = text_child(cache_dir, path)
    assert changed["stats"]["builds"] == 1 and changed["ptx"] != built["ptx"]


def test_ir_text_compiles_share_nothing_across_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """IR texts that differ in anything the kernel depends on never share a kernel, in
    memory or on disk; an equal text does, and a text's errors are those of mmcomp.parse."""
    monkeypatch.setenv("MMCOMP_CACHE_DIR", str(tmp_path))
    compile_cache.clear_memory()
    texts = {name: str(epilogue_variant(**variant)) for name, variant in VARIANTS.items()}
    assert len(set(texts.values())) == len(texts)
    kernels: dict[str, mmcomp.Kernel] = {}
    for name, text in texts.items():
        dynamic = {"schedule_m": 64} if VARIANTS[name].get("dynamic_m") else {}
        kernels[name] = mmcomp.compile(text, **dynamic)
        assert str(kernels[name].fusion) == text, name
    assert len(entries(tmp_path)) == len(texts)  # one kernel entry per text
    assert len(list(tmp_path.glob(f"*{compile_cache.SOURCE_SUFFIX}"))) == len(texts)
    compile_cache.clear_memory()
    for name, text in texts.items():  # from disk by the text, then from memory by it
        dynamic = {"schedule_m": 64} if VARIANTS[name].get("dynamic_m") else {}
        loaded = mmcomp.compile(text, **dynamic)
        again = mmcomp.compile(text, **dynamic)
        assert loaded.ptx == kernels[name].ptx and again.device_kernel is loaded.device_kernel
        assert str(loaded.fusion) == text, name
    builds = compile_cache.stats()["builds"]
    listed = mmcomp.compile(texts["base"], tile=[128, 128, 64])
    tupled = mmcomp.compile(texts["base"], tile=(128, 128, 64))  # another spelling: one kernel
    assert compile_cache.stats()["builds"] == builds + 1 and tupled.ptx == listed.ptx
    bucketed = mmcomp.compile(texts["dynamic extent"])  # dynamic M: a kernel per bucket
    assert type(bucketed).__name__ == "BucketedKernel"
    assert mmcomp.compile(texts["dynamic extent"]) is not bucketed
    broken = tmp_path / "broken.mlir"
    broken.write_text(texts["base"].replace("fusion.gelu", "fusion.gelux"))
    with pytest.raises(mmcomp.FusionError, match=str(broken)):
        mmcomp.compile(broken)
    with pytest.raises(ValueError, match="unknown backend"):
        mmcomp.compile(texts["base"], backend="metal")
    for text in (texts["base"], broken):  # the keywords are checked before the text
        with pytest.raises(mmcomp.ScheduleError, match="unknown schedule parameter"):
            mmcomp.compile(text, tiles=(128, 128, 64))


RUN_CHILD = textwrap.dedent(
    """
    import json, sys
    import mmcomp
    import cases
    kernel = mmcomp.compile(sys.argv[1])
    fusion = mmcomp.parse(sys.argv[1])
    arrays = cases.inputs_for(fusion)
    errors = [
        cases.relative_error(got, want)
        for got, want in zip(kernel(*arrays), mmcomp.reference(fusion, *arrays), strict=True)
    ]
    print(json.dumps({"stats": mmcomp.cache.stats(), "errors": errors}))
    """
)


@pytest.mark.gpu
def test_a_kernel_loaded_by_its_ir_text_runs_on_the_gpu(tmp_path: Path):
    """A disk hit by IR text makes its cuda kernel when first called: it runs and is correct
    (fresh processes, so that the hit's kernel is the one loaded from disk)."""
    path = tmp_path / "gelu_bias.mlir"
    path.write_text(str(cases.gelu_bias(300, 504, 200)))
    for expected in ({"builds": 1, "disk_hits": 0}, {"builds": 0, "disk_hits": 1}):
        done = subprocess.run(
            [sys.executable, "-c", RUN_CHILD, str(path)],
            capture_output=True,
            text=True,
            env=environment(tmp_path / "cache"),
            cwd=ROOT,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
        assert {key: found["stats"][key] for key in expected} == expected
        assert all(error < 2e-2 for error in found["errors"]), found["errors"]
