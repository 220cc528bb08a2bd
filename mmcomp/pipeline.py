"""The pass pipeline run on a fusion, and the Kernel it builds (with no autotune).

The pipeline is one list of named stages, the registered passes of `compile-to-ptx`
(`mmcomp-opt -p compile-to-ptx` runs the same list), run in order on a copy of the
fusion's module; the IR after each stage is kept, so `kernel.ir("tile-merge")` shows what
that pass did:

    fusion                    the fusion as written (the input)
    propagate-axis-mapping    contractions -> fusion.mma, every axis gets its role
    choose-schedule           the heuristic's params, the keywords as the pass's options
    tile-split                sched.schedule: the iteration space split by the tiles
    tile-merge                m and n tile indices merged under raster order and swizzle
    split-k                   K slices as extra work units (no-op for split_k = 1)
    insert-persistent-loop    the tile loop of each CTA, the grid sized to the SMs
    materialize-schedule      scf / arith / gpu loops with explicit indices and tile ops
    ---- backend="interp" stops here: the CPU executor runs the materialized kernel
    partition-warp-roles      producer / consumer warpgroups, ring slots
    lower-schedule-to-hopper  a hopper.kernel of hopper and ptx ops and the index
                              arithmetic, its launch data on it
    convert-hopper-to-ptx     a ptx.module and ptx.entry; the hopper ops as ptx
                              instructions (on the index arithmetic)
    convert-scf-to-ptx        the scf.for / scf.if as labels and branches
    convert-arith-to-ptx      ptx instructions only: the kernel as the back end runs it

Back ends: "interp" runs the materialized kernel on the CPU (mmcomp.interp.executor,
simulating every CTA and checking that every output element is written exactly once).
"cuda", the default, takes the ptx module (mmcomp.backend): it prints the PTX, checks it
with ptxas, reads the launch plan from the entry, and launches on the GPU at the first
call; compiling needs no GPU.
"""

from __future__ import annotations

import contextlib
import io
import numbers
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.backend.compiled import BACKENDS, MATERIALIZED, RUNNERS, Kernel, Recipe, StageTexts
from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.frontend.builder import as_fusion
from mmcomp.ir.diagnostics import stage_message, verify
from mmcomp.ir.registry import DEFAULT_PIPELINE, PASSES, context
from mmcomp.schedule.buckets import NOMINAL_BUCKET, bucket_for

if TYPE_CHECKING:
    from mmcomp.frontend.builder import Fusion

SHAPES_KEPT = 64
"""Input-shape tuples whose kernel a BucketedKernel keeps."""


@dataclass
class Compilation:
    """What the stages share: the caller's parameters and, once chosen, the params."""

    overrides: Mapping[str, object]
    """The schedule parameters the caller gave."""
    params: ScheduleParams | None = None
    """The params, set by choose-schedule."""
    backend: str = "cuda"
    """The back end the schedule is chosen for (choose-schedule's option `backend`)."""
    schedule_m: int | None = None
    """For a dynamic M: the M the schedule is chosen for (choose-schedule's `schedule-m`)."""


@dataclass(frozen=True)
class Stage:
    """One step of the pipeline: a registered pass, or a step of compile's own."""

    name: str
    """The stage's name (the pass name for a pass)."""
    run: Callable[[Context, ModuleOp, Compilation], None]
    """Transforms the module in place."""
    errors: type[Exception] = ScheduleError
    """The exception raised when the stage rejects the IR."""


def _pass(name: str) -> Callable[[Context, ModuleOp, Compilation], None]:
    """A stage running the registered pass `name`."""

    def run(ctx: Context, module: ModuleOp, compilation: Compilation) -> None:
        del compilation
        PASSES[name]()().apply(ctx, module)

    return run


def _choose_schedule(ctx: Context, module: ModuleOp, compilation: Compilation) -> None:
    """Run choose-schedule with the caller's keywords as its options; keep the params.

    The keywords win over the keys a `#sched.params` already on the function sets; the
    heuristic chooses the rest.
    """
    from mmcomp.passes.choose_schedule import ChooseSchedule

    functions = _functions(module)
    if len(functions) != 1:
        raise FusionError(f"compile: expected one func.func, found {len(functions)}")
    ChooseSchedule.with_keywords(
        compilation.backend, compilation.overrides, compilation.schedule_m
    ).apply(ctx, module)
    attr = functions[0].attributes.get(PARAMS_ATTR)
    if not isinstance(attr, ScheduleParamsAttr):
        raise FusionError(
            f"compile: func.func @{functions[0].sym_name.data}: expected a fusion (inputs, a "
            "contraction and at least one output), found an empty function"
        )
    compilation.params = attr.data


def _stage(name: str) -> Stage:
    """The stage running the registered pass `name` (choose-schedule with the keywords)."""
    if name == "choose-schedule":
        return Stage(name, _choose_schedule)
    return Stage(
        name, _pass(name), FusionError if name == "propagate-axis-mapping" else ScheduleError
    )


PIPELINE: list[Stage] = [_stage(name) for name in DEFAULT_PIPELINE]
"""The stages from a fusion to a ptx module, in order: the passes of `compile-to-ptx`
(mmcomp.ir.registry.DEFAULT_PIPELINE), which `mmcomp-opt -p compile-to-ptx` runs too."""

VERIFY_STAGES = "MMCOMP_VERIFY_STAGES"
"""Environment variable: `1` verifies the module after every stage. By default the stages
through materialize-schedule (where a fusion or a keyword can be at fault) and the last
stage are verified; the lowering stages in between, whose output only mmcomp's own passes
read (and whose lit tests verify it), are not, which saves a third of a cold compile."""

_CHECKED_STAGES = frozenset(DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index(MATERIALIZED) + 1])

PRINTED_WHEN_ASKED = frozenset(
    DEFAULT_PIPELINE[DEFAULT_PIPELINE.index("partition-warp-roles") + 1 :]
)
"""Stages whose IR text a compile prints only when it is asked for (`Kernel.stage_ir`, a
StageTexts): the hopper and ptx levels, a fifth of a cold compile to print and seldom
read."""


def _functions(module: ModuleOp) -> list[FuncOp]:
    return [op for op in module.ops if isinstance(op, FuncOp)]


def _text(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    stream.write("\n")
    return stream.getvalue()


def run_pipeline(
    module: ModuleOp,
    params: Mapping[str, object] | None = None,
    backend: str = "cuda",
    until: str | None = None,
    schedule_m: int | None = None,
    print_all: bool = True,
) -> tuple[ModuleOp, ScheduleParams, dict[str, str]]:
    """Run PIPELINE on a copy of `module`, scheduling for `backend`: (final module, params,
    IR text after each stage). The interp back end stops at the materialized kernel; the
    cuda back end runs every stage, to the ptx module; `until` names an earlier last stage.
    Without `print_all`, the stages of PRINTED_WHEN_ASKED have no text."""
    last = until or (PIPELINE[-1].name if backend == "cuda" else MATERIALIZED)
    ctx = context()
    module = module.clone()
    stage_ir = {"fusion": _text(module)}
    compilation = Compilation(params or {}, backend=backend, schedule_m=schedule_m)
    every_stage = os.environ.get(VERIFY_STAGES) == "1"
    for stage in PIPELINE:
        if last == "fusion":
            break
        try:
            stage.run(ctx, module, compilation)
            if every_stage or stage.name in _CHECKED_STAGES or stage.name == last:
                verify(module)
        except (DiagnosticException, VerifyException) as error:
            cause = error.__cause__
            kind = type(cause) if isinstance(cause, FusionError | ScheduleError) else stage.errors
            raise kind(stage_message(stage.name, error)) from None
        if print_all or stage.name not in PRINTED_WHEN_ASKED:
            stage_ir[stage.name] = _text(module)
        if stage.name == last:
            break
    assert compilation.params is not None
    return module, compilation.params, stage_ir


def print_stages_again(fusion_text: str, recipe: Recipe, last: str) -> dict[str, str]:
    """The text after every stage through `last`, from the pipeline run again on the fusion's
    IR text under `recipe` (a StageTexts's texts printed when asked for)."""
    from xdsl.parser import Parser

    module = Parser(context(), fusion_text).parse_module()
    _, _, texts = run_pipeline(module, recipe.params, recipe.backend, last, recipe.schedule_m)
    return texts


def compile_untuned(f: Fusion | str | ModuleOp, backend: str = "cuda", **params: Any) -> Kernel:
    """`mmcomp.compile` with no autotune: the heuristic's schedule under the keywords `params`,
    from the compile caches where they hold it (mmcomp.cache). A fusion with a dynamic M
    and no `schedule_m` gives a `BucketedKernel`, whose buckets are compiled the same way."""
    from mmcomp.schedule.buckets import has_dynamic_m
    from mmcomp.schedule.heuristics import check_schedule_m, normalize_overrides

    if backend not in BACKENDS:
        raise ValueError(
            f"compile: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}"
        )
    schedule_m = check_schedule_m(params.pop("schedule_m", None))
    normalize_overrides(params)
    fusion = as_fusion(f)
    from mmcomp.cache import compile_cached, memory_hit

    keyed = params if schedule_m is None else {**params, "schedule_m": schedule_m}
    cached = memory_hit(fusion, backend, keyed)  # a fusion in memory was checked when built
    if cached is not None:
        return cached
    dynamic_m = has_dynamic_m(fusion)
    check_schedule_m_applies(fusion, schedule_m, dynamic_m)
    if schedule_m is None and dynamic_m:

        def compile_bucket(compiled: Fusion, bucket: int) -> Kernel:
            return compile_untuned(compiled, backend, schedule_m=bucket, **params)

        return BucketedKernel(fusion, backend, params, compile_bucket)

    def build() -> Kernel:
        return _build_without_spills(fusion, backend, params, schedule_m)

    return compile_cached(fusion, backend, keyed, build, print_stages_again)


def check_schedule_m_applies(fusion: Fusion, schedule_m: int | None, dynamic_m: bool) -> None:
    """ScheduleError where `schedule_m` is given for a fusion whose M is static."""
    if schedule_m is None or dynamic_m:
        return
    raise ScheduleError(
        f"compile: schedule_m={schedule_m}: schedule_m applies to a fusion with a dynamic M "
        f"(the M its schedule is chosen for); @{fusion.name} has a static M"
    )


def _build(
    fusion: Fusion, backend: str, params: Mapping[str, object], schedule_m: int | None = None
) -> tuple[Kernel, ScheduleParams]:
    """The Kernel for `params` and the schedule chosen; SpilledError where ptxas spills it."""
    from mmcomp.schedule.spill_refit import SpilledError, is_spill_report

    module, chosen, texts = run_pipeline(
        fusion.peek_module(), params, backend, schedule_m=schedule_m, print_all=False
    )
    names = ["fusion", *(stage.name for stage in PIPELINE)]
    names = names[: names.index(MATERIALIZED if backend != "cuda" else names[-1]) + 1]
    recipe = Recipe(backend, dict(params), schedule_m)
    stage_ir = StageTexts(texts, names, recipe, print_stages_again)
    try:
        return _kernel(fusion, backend, chosen, stage_ir, module), chosen
    except Exception as error:
        if not is_spill_report(error):
            raise
        raise SpilledError(chosen, str(error)) from None


def _kernel(
    fusion: Fusion,
    backend: str,
    chosen: ScheduleParams,
    stage_ir: Mapping[str, str],
    module: ModuleOp,
) -> Kernel:
    """The Kernel of a pipeline's result (`module`: the last stage's module)."""
    materialized = module if backend != "cuda" else None
    return Kernel(fusion, backend, chosen, stage_ir, materialized, RUNNERS[backend](module))


def _build_without_spills(
    fusion: Fusion, backend: str, params: Mapping[str, object], schedule_m: int | None = None
) -> Kernel:
    """The kernel for `params`, refitted where ptxas spills it (mmcomp.schedule.spill_refit): the
    keywords and the keys written in the fusion's own `#sched.params` are the pins."""
    from mmcomp.passes.choose_schedule import written_params
    from mmcomp.schedule.spill_refit import fit

    written: dict[str, object] = {}
    for op in fusion.peek_module().ops:
        if isinstance(op, FuncOp):
            with contextlib.suppress(ScheduleError):  # choose-schedule reports a bad one
                written.update(written_params(op))
    return fit(lambda pinned: _build(fusion, backend, pinned, schedule_m), {**written, **params})


class BucketedKernel(Kernel):
    """A fusion with a dynamic M, compiled once: call it on arrays of any M.

    As a Kernel it is the 4096 bucket's (`params`, `stage_ir`, `ir()`, `module`, `ptx`, ...);
    `kernel_for(m)` gives the kernel that runs at M, and `kernels` the ones built so far.
    """

    def __init__(
        self,
        fusion: Fusion,
        backend: str,
        params: dict[str, Any],
        compile_bucket: Callable[[Fusion, int], Kernel],
        autotune_budget_s: float | None = None,
    ):
        self.keywords = dict(params)
        """The schedule keywords every bucket's kernel is compiled with."""
        self.compile_bucket = compile_bucket
        """Compiles the kernel of a bucket from the fusion as compiled (its schedule chosen for M
        = the bucket's bound)."""
        self.autotune_budget_s = autotune_budget_s
        """With `mmcomp.compile(f, autotune=True)`: each bucket's kernel is autotuned (for
        M = its bound, on random inputs, within this many seconds) when first used."""
        self.kernels: dict[int, Kernel] = {}
        """The kernels built so far, by bucket."""
        self._bucket_by_shapes: dict[tuple[tuple[int, ...], ...], Kernel] = {}
        """The kernel of each tuple of input shapes called with (the most recent
        SHAPES_KEPT), so a repeated shape reads no extent again."""
        self._lock = threading.Lock()
        self.fusion = fusion  # kernel_for reads them before Kernel.__init__ sets them
        self.backend = backend
        nominal = self.kernel_for(NOMINAL_BUCKET)
        super().__init__(
            self.fusion, backend, nominal.params, nominal.stage_ir, None, nominal.runner
        )

    def kernel_for(self, m: int) -> Kernel:
        """The kernel that runs at M (its bucket's; compiled on first use)."""
        if isinstance(m, bool) or not isinstance(m, numbers.Integral) or m < 0:
            raise FusionError(
                f"kernel @{self.fusion.name}: kernel_for: argument 'm': expected an int >= 0 "
                f"(a runtime extent M), found {m!r}"
            )
        bucket = bucket_for(int(m))
        kernel = self.kernels.get(bucket)
        if kernel is not None:
            return kernel
        with self._lock:
            kernel = self.kernels.get(bucket)
            if kernel is None:
                kernel = self.compile_bucket(self.fusion, bucket)
                self.kernels[bucket] = kernel
        return kernel

    def __call__(
        self,
        *arrays: Any,
        out: Any = None,
        stream: Any = None,
        check: bool | None = None,
        **named: Any,
    ) -> tuple[Any, ...]:
        """Run the kernel of the arrays' M (see `mmcomp.Kernel.__call__`)."""
        from mmcomp.backend.arguments import order_inputs

        names = [value.name or f"input{index}" for index, value in enumerate(self.fusion.inputs)]
        ordered = order_inputs(f"kernel @{self.fusion.name}", names, arrays, named)
        shapes = _shapes(ordered)
        kernel = (
            self.kernels[NOMINAL_BUCKET] if shapes is None else self._bucket_by_shapes.get(shapes)
        )
        if kernel is None:
            assert shapes is not None
            kernel = self.kernels[NOMINAL_BUCKET]
            m = kernel.runtime_extents(shapes).get("m")
            if m is not None:
                kernel = self.kernel_for(m)
            if len(self._bucket_by_shapes) >= SHAPES_KEPT:
                self._bucket_by_shapes.pop(next(iter(self._bucket_by_shapes)))
            self._bucket_by_shapes[shapes] = kernel
        return kernel(*ordered, out=out, stream=stream, check=check)

    def __repr__(self) -> str:
        built = ", ".join(str(bucket) for bucket in sorted(self.kernels))
        return (
            f"<mmcomp.BucketedKernel @{self.fusion.name} backend={self.backend} "
            f"buckets built: {built}>"
        )


def _shapes(arrays: Sequence[Any]) -> tuple[tuple[int, ...], ...] | None:
    """The arrays' shapes; None where one has none (the kernel's call says what is wrong)."""
    shapes: list[tuple[int, ...]] = []
    for array in arrays:
        shape = getattr(array, "shape", None)
        if shape is None:
            return None
        shapes.append(tuple(int(extent) for extent in shape))
    return tuple(shapes)
