"""The schedule passes: tile-split, tile-merge, insert-persistent-loop, split-k, materialize.

The lit tests (tests/lit/passes/) show each pass's IR; these tests check what the passes
compute from Python: the plan that materialization reads back from the transforms, the
grid, the order independence of split-k and insert-persistent-loop, the registry, and the
errors for schedules the passes cannot build.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.utils.exceptions import DiagnosticException

import mmcomp
import mmcomp.pipeline as pipeline_module
from mmcomp.analysis.schedule_plan import SchedulePlan, plan_of
from mmcomp.analysis.schedule_view import ScheduleView, schedule_of
from mmcomp.arch import limits as hw
from mmcomp.dialects import sched
from mmcomp.errors import ScheduleError
from mmcomp.ir.registry import PASSES, context
from mmcomp.lowering.materialize_schedule.data_parallel import DataParallelKernel
from mmcomp.lowering.materialize_schedule.stream_k import HybridStreamKKernel, StreamKKernel
from mmcomp.lowering.materialize_schedule.tiles import ContractTileToKLoop, WriteTileToEpilogue
from mmcomp.passes.insert_persistent_loop import InsertPersistentLoop
from mmcomp.passes.materialize_schedule import MaterializeSchedule
from mmcomp.passes.propagate_axis_mapping import PropagateAxisMapping
from mmcomp.passes.split_k import SplitK
from mmcomp.passes.tile_merge import TileMerge
from mmcomp.passes.tile_split import TileSplit
from mmcomp.pipeline import Stage, run_pipeline

SCHEDULE_PASSES = {
    "tile-split": TileSplit,
    "tile-merge": TileMerge,
    "insert-persistent-loop": InsertPersistentLoop,
    "split-k": SplitK,
    "materialize-schedule": MaterializeSchedule,
}


def linear_module(m: int, n: int, k: int, batch: int = 0, **params: Any) -> ModuleOp:
    """A linear (or batched matmul) fusion after propagate-axis-mapping, params attached."""
    f = mmcomp.Fusion("f")
    if batch:
        a = f.input("a", (batch, m, k), "bf16")
        b = f.input("b", (batch, k, n), "bf16")
        f.output(f.matmul(a, b))
    else:
        a = f.input("a", (m, k), "bf16")
        w = f.input("w", (n, k), "bf16")
        f.output(f.linear(a, w))
    module = f.module.clone()
    PropagateAxisMapping().apply(context(), module)
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    function.attributes[sched.PARAMS_ATTR] = sched.ScheduleParamsAttr(
        sched.ScheduleParams.build(params)
    )
    return module


def scheduled(module: ModuleOp, *passes: str) -> ModuleOp:
    for name in passes:
        SCHEDULE_PASSES[name]().apply(context(), module)
    module.verify()
    return module


def plan(module: ModuleOp) -> SchedulePlan:
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    schedule = schedule_of(function)
    assert schedule is not None
    return plan_of(ScheduleView(schedule, "test"))


BEFORE_MATERIALIZE = ("tile-split", "tile-merge", "split-k", "insert-persistent-loop")


@pytest.mark.parametrize("name", SCHEDULE_PASSES)
def test_registered_under_their_file_name(name: str):
    pass_class = PASSES[name]()
    assert pass_class is SCHEDULE_PASSES[name]
    assert pass_class.name == name
    module_file = Path(sys.modules[pass_class.__module__].__file__ or "")
    assert module_file.stem == name.replace("-", "_")


def test_plan_read_back_from_the_transforms():
    module = linear_module(
        300, 500, 200, tile=(128, 128, 64), raster="n", swizzle=4, split_k=3, cluster=(2, 1)
    )
    found = plan(scheduled(module, *BEFORE_MATERIALIZE))
    assert found.tile == (128, 128, 64)
    assert (found.raster, found.swizzle, found.split_k, found.cluster) == ("n", 4, 3, (2, 1))
    assert (found.tiles_m, found.tiles_n, found.k_blocks) == (3, 4, 4)
    assert found.cluster_units == 2 * 4
    assert found.work_units == 2 * 4 * 3
    assert found.persistent
    assert found.grid_ctas == 2 * 4 * 3 * 2


@pytest.mark.parametrize(
    ("shape", "cluster", "grid"),
    [
        ((64 * 30, 64 * 30, 64), (1, 1), hw.SM_COUNT),
        ((64 * 30, 64 * 30, 64), (2, 2), (hw.SM_COUNT // 4) * 4),
        ((64 * 3, 64 * 2, 64), (1, 1), 6),
    ],
)
def test_persistent_grid_is_min_of_work_and_sms(shape, cluster, grid):
    module = linear_module(*shape, tile=(64, 64, 64), cluster=cluster)
    assert plan(scheduled(module, *BEFORE_MATERIALIZE)).grid_ctas == grid


def test_one_tile_per_cta_grid_is_the_tile_count():
    module = linear_module(64 * 30, 64 * 30, 64, tile=(64, 64, 64), strategy="one-tile-per-cta")
    found = plan(scheduled(module, *BEFORE_MATERIALIZE))
    assert not found.persistent
    assert found.grid_ctas == 900


def test_batch_tiles_are_outermost():
    module = linear_module(100, 90, 70, batch=3, tile=(64, 64, 32))
    found = plan(scheduled(module, *BEFORE_MATERIALIZE))
    assert found.batch_axes == ("b0",)
    assert found.work_units == 3 * 2 * 2


def test_split_k_before_or_after_the_persistent_loop_gives_one_kernel():
    params: dict[str, Any] = dict(tile=(128, 128, 64), split_k=2, swizzle=2, cluster=(2, 1))
    first = scheduled(linear_module(300, 500, 200, **params), *BEFORE_MATERIALIZE)
    second = scheduled(
        linear_module(300, 500, 200, **params),
        "tile-split",
        "tile-merge",
        "insert-persistent-loop",
        "split-k",
    )
    assert plan(first) == plan(second)
    for module in (first, second):
        scheduled(module, "materialize-schedule")
    assert str(first) == str(second)


def test_split_k_one_changes_nothing():
    module = scheduled(
        linear_module(300, 500, 200, tile=(128, 128, 64)), "tile-split", "tile-merge"
    )
    before = str(module)
    assert str(scheduled(module, "split-k")) == before


def test_materialized_kernel_has_no_schedule_left():
    module = scheduled(
        linear_module(300, 500, 200, tile=(128, 128, 64)),
        *BEFORE_MATERIALIZE,
        "materialize-schedule",
    )
    ops = [op.name for op in module.walk()]
    assert "sched.schedule" not in ops
    assert "fusion.mma" not in ops
    for name in ("gpu.block_id", "scf.for", "sched.load_tile", "sched.mma", "sched.store_tile"):
        assert name in ops


@pytest.mark.parametrize(
    ("params", "strategy"),
    [
        ({"split_k": 2}, DataParallelKernel),
        ({"strategy": "stream-k", "split_k": 1}, StreamKKernel),
        ({"strategy": "hybrid-stream-k", "split_k": 1}, HybridStreamKKernel),
    ],
)
def test_materialize_patterns_meet_in_the_tile_ops(
    params: dict[str, Any], strategy: type[RewritePattern]
):
    """The strategy pattern alone leaves each tile as sched.contract_tile and
    sched.write_tile (no K loop, no epilogue yet); the tile patterns then give the pass's
    kernel, text for text."""
    module = scheduled(
        linear_module(300, 500, 2000, tile=(128, 128, 64), **params), *BEFORE_MATERIALIZE
    )
    whole = scheduled(module.clone(), "materialize-schedule")
    walk_patterns(module, strategy())
    module.verify()
    ops = [op.name for op in module.walk()]
    assert "sched.contract_tile" in ops and "sched.write_tile" in ops
    for name in ("sched.mma", "sched.load_tile", "sched.epilogue", "sched.schedule"):
        assert name not in ops
    walk_patterns(module, ContractTileToKLoop(), WriteTileToEpilogue())
    assert str(module) == str(whole)


def walk_patterns(module: ModuleOp, *patterns: RewritePattern) -> None:
    """Apply `patterns` to `module` as materialize-schedule applies its own."""
    applier = GreedyRewritePatternApplier(list(patterns), dce_enabled=False)
    PatternRewriteWalker(applier).rewrite_module(module)


def test_compile_keeps_the_ir_of_every_pass():
    f = mmcomp.Fusion("lin")
    a = f.input("a", (300, 200), "bf16")
    w = f.input("w", (500, 200), "bf16")
    f.output(f.linear(a, w))
    kernel = mmcomp.compile(f, backend="interp", tile=(128, 128, 64), swizzle=2, split_k=2)
    assert "sched.split %m by 128" in kernel.ir("tile-split")
    assert "sched.swizzle %n_tile, %m_tile group 2" in kernel.ir("tile-merge")
    assert "%work = sched.merge %tile_mn, %slice" in kernel.ir("split-k")
    assert "sched.parallelize %slot to block_x" in kernel.ir("insert-persistent-loop")
    assert "sched.reduce_partials" in kernel.ir("materialize-schedule")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (dict(tile=(128, 128, 64), split_k=5), r"split_k = 5 is larger than the 4 K blocks"),
        (dict(tile=(128, 128, 64), cluster=(4, 1)), r"cluster 4x1: 4 CTAs along m"),
        (
            dict(tile=(128, 256, 64), stages=8),
            r"tile 128x256x64 with 8 stages needs \d+ bytes of shared memory",
        ),
    ],
)
def test_tile_split_rejects_params_that_do_not_fit(params: dict[str, Any], message: str):
    module = linear_module(300, 500, 200, **params)
    with pytest.raises(DiagnosticException, match=f"tile-split: @f: {message}"):
        scheduled(module, "tile-split")


def test_tile_split_twice_is_an_error():
    module = scheduled(linear_module(300, 500, 200, tile=(128, 128, 64)), "tile-split")
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    function.attributes[sched.PARAMS_ATTR] = sched.ScheduleParamsAttr(
        sched.ScheduleParams.build({"tile": (128, 128, 64)})
    )
    with pytest.raises(DiagnosticException, match="already has a sched.schedule"):
        scheduled(module, "tile-split")


def test_split_k_twice_is_an_error():
    module = scheduled(
        linear_module(300, 500, 200, tile=(128, 128, 64), split_k=2),
        "tile-split",
        "tile-merge",
        "split-k",
    )
    with pytest.raises(DiagnosticException, match="already split into slices"):
        scheduled(module, "split-k")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("tile-split", r"no 'sched.params' attribute: choose the schedule first"),
        ("tile-merge", r"no sched.schedule \(run propagate-axis-mapping, .* tile-split first\)"),
        ("split-k", r"no sched.schedule \(run propagate-axis-mapping, .* tile-split first\)"),
        ("insert-persistent-loop", r"no sched.schedule \(run propagate-axis-mapping"),
        ("materialize-schedule", r"no sched.schedule \(run propagate-axis-mapping"),
    ],
)
def test_passes_without_their_prerequisite_say_which(name: str, message: str):
    """A fusion function missing what the previous pass makes is an error, not a no-op."""
    module = linear_module(300, 500, 200)
    function = next(op for op in module.ops if isinstance(op, FuncOp))
    del function.attributes[sched.PARAMS_ATTR]
    with pytest.raises(DiagnosticException, match=f"^{name}: @f: {message}"):
        scheduled(module, name)


@pytest.mark.parametrize(
    ("passes", "message"),
    [
        (("tile-merge",), r"tile-merge: @f: no sched.schedule yet \(it has 'sched.params': run"),
        (("tile-split", "split-k"), r"split-k: @f: the m and n tile indices are not merged"),
        (("tile-split", "tile-merge", "materialize-schedule"), r"not bound to block_x"),
        (("tile-split", "tile-split"), r"tile-split: @f: already has a sched.schedule"),
    ],
)
def test_passes_out_of_order_are_errors(passes: tuple[str, ...], message: str):
    module = linear_module(300, 500, 200, tile=(128, 128, 64))
    with pytest.raises(DiagnosticException, match=message):
        scheduled(module, *passes)


@pytest.mark.parametrize("name", SCHEDULE_PASSES)
def test_passes_leave_plain_functions_alone(name: str):
    """A function with no fusion ops is not a fusion: every schedule pass skips it."""
    text = """
    func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
      func.return %x : tensor<4xf32>
    }
    """
    module = Parser(context(), text).parse_module()
    before = str(module)
    assert str(scheduled(module, name)) == before


def test_stage_errors_name_the_stage_once(monkeypatch: pytest.MonkeyPatch):
    """A pass's own "name:" prefix is kept; compile adds one only where it is missing."""
    f = mmcomp.Fusion("prologue")
    a = f.input("a", (128, 64), "bf16")
    w = f.input("w", (128, 64), "bf16")
    f.output(f.linear(f.relu(a), w))
    with pytest.raises(ScheduleError) as caught:
        mmcomp.compile(f, backend="interp")
    assert str(caught.value).startswith("materialize-schedule: fusion.relu: roles ['m', 'k']")
    assert "materialize-schedule: materialize-schedule" not in str(caught.value)

    def refuse(ctx: Any, module: ModuleOp, compilation: Any) -> None:
        raise DiagnosticException("no prefix here")

    monkeypatch.setattr(pipeline_module, "PIPELINE", [Stage("my-stage", refuse)])
    with pytest.raises(ScheduleError, match=r"^my-stage: no prefix here$"):
        run_pipeline(f.module)


def test_print_between_passes_shows_each_pass(tmp_path: Path):
    module = linear_module(300, 500, 200, tile=(128, 128, 64), swizzle=2, split_k=2)
    source = tmp_path / "linear.mlir"
    source.write_text(str(module))
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    result = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "mmcomp-opt"),
            str(source),
            "-p",
            ",".join([*BEFORE_MATERIALIZE, "materialize-schedule"]),
            "--print-between-passes",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    for marker in (
        "%m_tile, %m_cta = sched.split %m by 128",
        "sched.swizzle %n_tile, %m_tile group 2",
        "%k_iter, %slice = sched.split %k_blk by 2",
        "%iter, %slot = sched.split %work by 24",
        "sched.store_partial",
    ):
        assert marker in output
