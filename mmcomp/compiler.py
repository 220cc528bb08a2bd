"""`mmcomp.compile(f, **params)`: a fusion through the pass pipeline to a callable Kernel.

The pipeline (mmcomp.pipeline) runs the registered passes of `compile-to-ptx` in order and
keeps the IR after each stage (`kernel.ir("tile-merge")`); its kernels are kept in the
compile caches (mmcomp.cache). `autotune=True` times candidate schedules instead of taking
the heuristic's (mmcomp.tuning). A fusion with a dynamic M gives a `BucketedKernel`: one
kernel per M bucket, each compiled (or tuned) when first used.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from mmcomp.backend.compiled import BACKENDS, Kernel, Recipe
from mmcomp.errors import ScheduleError

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.frontend.builder import Fusion
    from mmcomp.pipeline import BucketedKernel

__all__ = ["BucketedKernel", "Kernel", "compile"]


def __getattr__(name: str) -> Any:
    if name != "BucketedKernel":
        raise AttributeError(f"module 'mmcomp.compiler' has no attribute {name!r}")
    return importlib.import_module("mmcomp.pipeline").BucketedKernel


def compile(  # noqa: A001
    f: Fusion | str | ModuleOp,
    backend: str = "cuda",
    autotune: bool = False,
    autotune_budget_s: float | None = None,
    **params: Any,
) -> Kernel:
    """Compile a fusion; parameters left out are chosen by mmcomp.schedule.heuristics.

    Keywords (all optional): tile=(m, n, k), stages=int, cluster=(cm, cn),
    raster="m" | "n" | "auto", swizzle=int, strategy="one-tile-per-cta" | "persistent" |
    "stream-k" | "hybrid-stream-k", split_k=int,
    warp_specialization="none" | "cooperative" | "pingpong",
    registers=(producer, consumer), epilogue="registers" | "smem".

    A fusion with a dynamic M gives a `BucketedKernel`: at each call it runs
    the kernel of the actual M's bucket, compiled on first use. `schedule_m=M` instead
    compiles one kernel, its schedule chosen for that M, which runs at every M (a
    ScheduleError for a fusion whose M is static).

    `autotune=True` times candidate schedules on the GPU, on random inputs, within
    `autotune_budget_s` seconds (default 30; an error without autotune=True), and keeps
    the fastest correct one (the keywords given pin theirs); `mmcomp.autotune` says more.
    For a dynamic M each bucket is tuned when first used, at its bound.
    """
    if not autotune:
        if autotune_budget_s is not None:
            raise ScheduleError(
                f"compile: autotune_budget_s={autotune_budget_s!r} applies only with "
                "autotune=True (it bounds the autotune's time)"
            )
        if isinstance(f, str | os.PathLike) and backend in BACKENDS:
            return _compile_text(f, backend, params)  # pyright: ignore[reportUnknownArgumentType]  (PathLike[Any])
        from mmcomp.pipeline import compile_untuned

        return compile_untuned(f, backend, **params)
    from mmcomp import tuning
    from mmcomp.frontend.builder import as_fusion
    from mmcomp.pipeline import BucketedKernel, check_schedule_m_applies
    from mmcomp.schedule.buckets import has_dynamic_m
    from mmcomp.schedule.heuristics import check_schedule_m, normalize_overrides

    budget = tuning.DEFAULT_BUDGET_S if autotune_budget_s is None else autotune_budget_s
    fusion = as_fusion(f)
    dynamic_m = has_dynamic_m(fusion)
    check_schedule_m_applies(fusion, check_schedule_m(params.get("schedule_m")), dynamic_m)
    if "schedule_m" not in params and dynamic_m:
        keywords = dict(params)
        normalize_overrides(keywords)

        def tune_bucket(compiled: Fusion, bucket: int) -> Kernel:
            return tuning.autotune(
                compiled, backend=backend, budget_s=budget, schedule_m=bucket, **keywords
            )

        return BucketedKernel(fusion, backend, keywords, tune_bucket, autotune_budget_s=budget)
    return tuning.autotune(fusion, backend=backend, budget_s=budget, **params)


def _compile_text(text: str | os.PathLike[str], backend: str, params: dict[str, Any]) -> Kernel:
    """`compile` of IR text or a .mlir file's path, with no autotune: the compile caches are
    asked by the text as written before it is parsed (mmcomp.cache.compile_source_cached),
    so a fresh process whose disk cache holds the kernel imports neither xDSL nor numpy."""
    from mmcomp.cache import compile_source_cached
    from mmcomp.frontend.source import ir_source

    source, where = ir_source(text, "mmcomp.parse")

    def compile_fusion() -> Kernel:
        from mmcomp.frontend.builder import parse_source
        from mmcomp.pipeline import compile_untuned

        return compile_untuned(parse_source(source, where), backend, **params)

    return compile_source_cached(source, backend, params, compile_fusion, _print_stages_again)


def _print_stages_again(fusion_text: str, recipe: Recipe, last: str) -> dict[str, str]:
    """mmcomp.pipeline.print_stages_again, imported when a kernel loaded from disk first
    prints a stage's text."""
    from mmcomp.pipeline import print_stages_again

    return print_stages_again(fusion_text, recipe, last)
