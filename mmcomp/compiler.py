"""`mmcomp.compile(f, **params)`: a fusion through the pass pipeline to a callable Kernel.

The pipeline (mmcomp.pipeline) runs the registered passes of `compile-to-ptx` in order and
keeps the IR after each stage (`kernel.ir("tile-merge")`); its kernels are kept in the
compile caches (mmcomp.cache). `autotune=True` times candidate schedules instead of taking
the heuristic's (mmcomp.tuning). A fusion with a dynamic M gives a `BucketedKernel`: one
kernel per M bucket, each compiled (or tuned) when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mmcomp.backend.compiled import Kernel
from mmcomp.errors import ScheduleError
from mmcomp.frontend.builder import as_fusion
from mmcomp.pipeline import BucketedKernel, check_schedule_m_applies, compile_untuned
from mmcomp.schedule.buckets import has_dynamic_m
from mmcomp.schedule.heuristics import check_schedule_m, normalize_overrides

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.frontend.builder import Fusion

__all__ = ["BucketedKernel", "Kernel", "compile"]


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
        return compile_untuned(f, backend, **params)
    from mmcomp import tuning

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
