"""`mmcomp.compile(f, **params)`: a fusion through the pass pipeline to a callable Kernel.

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
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.dialects.sched import PARAMS_ATTR, ScheduleParams, ScheduleParamsAttr
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.ir.diagnostics import is_located, verify
from mmcomp.ir.narrowing import is_ndarray
from mmcomp.ir.registry import DEFAULT_PIPELINE, DIALECTS, PASSES

if TYPE_CHECKING:
    from mmcomp.backend import CudaKernel
    from mmcomp.frontend.builder import Fusion

Runner = Callable[[list[Any]], tuple[np.ndarray, ...]]
"""Runs a compiled kernel: inputs in fusion input order -> outputs in fusion output order."""


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

MATERIALIZED = "materialize-schedule"
"""The last stage of the interp back end (the CPU executor runs the materialized kernel)."""

VERIFY_STAGES = "MMCOMP_VERIFY_STAGES"
"""Environment variable: `1` verifies the module after every stage. By default the stages
through materialize-schedule (where a fusion or a keyword can be at fault) and the last
stage are verified; the lowering stages in between, whose output only mmcomp's own passes
read (and whose lit tests verify it), are not, which saves a third of a cold compile."""

_CHECKED_STAGES = frozenset(
    name for name in DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index(MATERIALIZED) + 1]
)

PRINTED_WHEN_ASKED = frozenset(
    DEFAULT_PIPELINE[DEFAULT_PIPELINE.index("partition-warp-roles") + 1 :]
)
"""Stages whose IR text a compile prints only when it is asked for (`Kernel.stages`): the
hopper and ptx levels, a fifth of a cold compile to print and seldom read."""


@dataclass(frozen=True)
class Recipe:
    """How a kernel's pipeline ran, to run it again for the texts of PRINTED_WHEN_ASKED."""

    backend: str
    """The back end scheduled for."""
    params: dict[str, object]
    """The keywords the pipeline ran with (the caller's, refitted where ptxas spilled)."""
    schedule_m: int | None
    """For a dynamic M: the M the schedule was chosen for."""


class StageTexts(Mapping[str, str]):
    """Stage name -> IR text after that stage, in pipeline order. The texts of the stages in
    PRINTED_WHEN_ASKED are made when one is first asked for, by running the pipeline again
    on the fusion stage's text under the same `Recipe` (the pipeline is deterministic: the
    texts it printed the first time are checked to come out the same)."""

    def __init__(self, texts: Mapping[str, str], names: Sequence[str], recipe: Recipe | None):
        self._texts = dict(texts)
        self._names = tuple(names)
        self.recipe = recipe
        """How to run the pipeline again (None: every text is printed)."""

    def __getitem__(self, name: str) -> str:
        found = self._texts.get(name)
        if found is not None:
            return found
        if name not in self._names or self.recipe is None:
            raise KeyError(name)
        self._texts = self._printed_again(self.recipe)
        return self._texts[name]

    def _printed_again(self, recipe: Recipe) -> dict[str, str]:
        """Every stage's text, from the pipeline run again."""
        from xdsl.parser import Parser

        module = Parser(context(), self._texts["fusion"]).parse_module()
        _, _, texts = run_pipeline(
            module, recipe.params, recipe.backend, self._names[-1], recipe.schedule_m
        )
        changed = [name for name, text in self._texts.items() if texts.get(name) != text]
        if changed or list(texts) != list(self._names):
            raise RuntimeError(
                f"compile: the pipeline run again printed other IR after {changed or 'all'}"
            )
        return texts

    def printed(self) -> dict[str, str]:
        """The texts printed so far."""
        return dict(self._texts)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names


def _interp_runner(module: ModuleOp) -> Runner:
    """Runs the materialized kernel on the CPU, simulating every CTA."""
    from mmcomp.interp.executor import execute

    def run(inputs: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        return execute(module, inputs).outputs

    return run


@dataclass(frozen=True)
class CudaRunner:
    """Runs a materialized module as a Hopper kernel (built at compile time, launched lazily)."""

    kernel: CudaKernel
    """The PTX, its ptxas report and launch plan (mmcomp.backend.CudaKernel)."""

    def __call__(self, inputs: list[Any]) -> tuple[np.ndarray, ...]:
        return self.kernel(*inputs)


def _cuda_runner(module: ModuleOp) -> Runner:
    """The ptx module's kernel: its PTX, checked by ptxas with 0 spills, and its launch plan."""
    from mmcomp.backend import build_cuda_kernel

    return CudaRunner(build_cuda_kernel(module, verified=True))  # run_pipeline verified it


RUNNERS: dict[str, Callable[[ModuleOp], Runner]] = {
    "cuda": _cuda_runner,
    "interp": _interp_runner,
}
"""Back end name -> factory of the runner of a materialized module."""

BACKENDS = tuple(RUNNERS)
"""The back ends `compile` accepts."""

DEVICE_ARRAY_BACKENDS = ("cuda",)
"""Back ends that also take device arrays (torch, cupy: DLPack / __cuda_array_interface__)."""


def context() -> Context:
    """An xDSL context with xDSL's dialects and mmcomp's, loaded lazily."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    for name, factory in DIALECTS.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    return ctx


def _functions(module: ModuleOp) -> list[FuncOp]:
    return [op for op in module.ops if isinstance(op, FuncOp)]


def _text(module: ModuleOp) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    stream.write("\n")
    return stream.getvalue()


def _device_view(array: Any, name: str) -> Any:
    """The runtime's zero-copy view of a device array (its shape and dtype); None for host."""
    from mmcomp.runtime import as_device_array

    return as_device_array(array, name)


_call_kernel: Callable[..., tuple[Any, ...]] | None = None
"""mmcomp.backend.call.call_kernel, imported at the first call."""


def stage_message(stage: str, error: Exception) -> str:
    """The message of an error raised in `stage`, prefixed with the stage's name unless it
    already starts with it or with a source location."""
    message = str(error)
    if message.startswith(f"{stage}:") or is_located(message):
        return message
    return f"{stage}: {message}"


def dynamic_input_roles(fusion: Fusion) -> list[tuple[str, ...]] | None:
    """The axis roles of each input of a fusion with dynamic extents, else None;
    FusionError where the roles do not fit, as propagate-axis-mapping reports it."""
    inputs = fusion.inputs
    if not any(value.dynamic_axes for value in inputs):
        return None
    from mmcomp.analysis.roles import infer_axis_mapping

    try:
        mapping = infer_axis_mapping(fusion.func)
    except VerifyException as error:
        raise FusionError(stage_message("propagate-axis-mapping", error)) from None
    return [mapping.roles[value.ssa] for value in inputs]


class Kernel:
    """A compiled fusion: call it on arrays; it returns the outputs in fusion output order."""

    def __init__(
        self,
        fusion: Fusion,
        backend: str,
        params: ScheduleParams,
        stages: Mapping[str, str],
        module: ModuleOp | None,
        runner: Runner,
    ):
        self.fusion = fusion
        self.backend = backend
        """The back end that runs the kernel ("interp" or "cuda")."""
        self.params = params
        """The schedule parameters (the heuristic's choice with the caller's overrides)."""
        self.stages = stages
        """Stage name -> IR text after that stage, in pipeline order (a StageTexts: the
        hopper and ptx levels' texts printed when first asked for)."""
        self._module = module
        self._runner = runner
        self._dynamic_roles: list[tuple[str, ...]] | None = None
        self._roles_known = False
        self._by_shapes: dict[tuple[tuple[int, ...], ...], CudaKernel] = {}
        """With runtime extents on the cuda back end: the specialized kernel of each tuple
        of input shapes seen (the most recent SPECIALIZED_KEPT)."""
        self._fast: Callable[[Sequence[Any]], tuple[Any, ...] | None] | None = None
        """After the first device call: the call's fast path (CallState.fast), which takes
        positional device arrays with no keyword and answers None where it cannot."""
        self._fast_out: Callable[[Sequence[Any], Sequence[Any]], tuple[Any, ...] | None] | None = (
            None
        )
        """After the first device call: the fast path of a call with `out=` a tuple or list
        of every output (CallState.fast_out)."""

    @property
    def fusion(self) -> Fusion:
        """The fusion compiled: a copy taken when the kernel was made, so that building more
        on the caller's Fusion afterwards does not change the kernel."""
        return self._fusion

    @fusion.setter
    def fusion(self, fusion: Fusion) -> None:
        self._fusion = fusion.clone()

    @property
    def runner(self) -> Runner:
        """What runs the kernel on its back end (the CPU executor, or the cuda kernel)."""
        return self._runner

    @property
    def module(self) -> ModuleOp:
        """The materialized kernel, the module after materialize-schedule (parsed from that
        stage's text when first asked)."""
        if self._module is None:
            from xdsl.parser import Parser

            self._module = Parser(context(), self.stages[MATERIALIZED]).parse_module()
        return self._module

    @property
    def device_kernel(self) -> CudaKernel:
        """The cuda back end's kernel; an error for other back ends."""
        if not isinstance(self._runner, CudaRunner):
            raise AttributeError(
                f"kernel @{self.fusion.name}: the {self.backend!r} back end has no PTX; "
                "compile with backend='cuda'"
            )
        return self._runner.kernel

    @property
    def ptx(self) -> str:
        """The PTX text (cuda back end)."""
        return self.device_kernel.ptx

    @property
    def report(self) -> Any:
        """The ptxas resource report: registers, spills, stack, shared memory (cuda)."""
        return self.device_kernel.report

    def ir(self, stage: str = "materialize-schedule") -> str:
        """The IR text after `stage` (see `stages` for the names)."""
        if stage not in self.stages:
            raise KeyError(f"no stage {stage!r}; the stages are {', '.join(self.stages)}")
        return self.stages[stage]

    def bind(self, arrays: Sequence[Any], named: Mapping[str, Any]) -> list[Any]:
        """The inputs in fusion input order, from positional and named arrays; checked."""
        from mmcomp.backend.arguments import order_inputs
        from mmcomp.frontend.argcheck import check_shape_and_dtype

        inputs = self.fusion.inputs
        names = [value.name or f"input {index}" for index, value in enumerate(inputs)]
        where = f"kernel @{self.fusion.name}"
        bound = order_inputs(where, names, arrays, named)
        checked: list[Any] = []
        shapes: list[tuple[int, ...]] = []
        takes_device = self.backend in DEVICE_ARRAY_BACKENDS
        for value, array in zip(inputs, bound, strict=True):
            found = _device_view(array, value.name or "input") if takes_device else None
            if found is None:
                if not is_ndarray(array):
                    raise FusionError(
                        f"{where}: input {value.name!r}: expected a numpy array"
                        + (" or a device array" if takes_device else "")
                        + f", found {type(array).__name__}"
                    )
                found = array
            if self.dynamic_roles is not None:
                if found.dtype != value.numpy_dtype:
                    raise FusionError(
                        f"{where}: input {value.name!r}: expected dtype {value.numpy_dtype}, "
                        f"found {found.dtype}"
                    )
                shapes.append(tuple(found.shape))
                checked.append(array)
                continue
            check_shape_and_dtype(
                f"{where}: input {value.name!r}",
                found.shape,
                found.dtype,
                value.shape,
                value.numpy_dtype,
                FusionError,
            )
            checked.append(array)
        if self.dynamic_roles is not None:
            self.runtime_extents(shapes)
        return checked

    @property
    def dynamic_roles(self) -> list[tuple[str, ...]] | None:
        """The axis roles of each input where the fusion has dynamic extents, else None."""
        if not self._roles_known:
            self._roles_known = True
            self._dynamic_roles = dynamic_input_roles(self.fusion)
        return self._dynamic_roles

    def device_kernel_at(self, shapes: tuple[tuple[int, ...], ...]) -> CudaKernel:
        """The cuda kernel specialized for inputs of these shapes (checked as
        `runtime_extents` does), cached by the shapes."""
        from mmcomp.backend.kernel import SPECIALIZED_KEPT

        found = self._by_shapes.get(shapes)
        if found is not None:
            return found
        found = self.device_kernel.specialized(self.runtime_extents(shapes))
        if len(self._by_shapes) >= SPECIALIZED_KEPT:
            self._by_shapes.pop(next(iter(self._by_shapes)))
        self._by_shapes[shapes] = found
        return found

    def runtime_extents(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """The runtime extent of each dynamic axis for inputs of these shapes (fusion input
        order); FusionError for a static extent that differs from the compiled one, inputs
        that disagree on a dynamic extent, or one past what the kernel can index."""
        from mmcomp.frontend.argcheck import bind_extents
        from mmcomp.interp.executor import check_runtime_extents

        roles = self.dynamic_roles
        if roles is None:
            return {}
        inputs = self.fusion.inputs
        where = f"kernel @{self.fusion.name}"
        extents = bind_extents(
            where,
            [value.name or f"input {index}" for index, value in enumerate(inputs)],
            shapes,
            [value.shape for value in inputs],
            roles,
            FusionError,
        )
        try:
            check_runtime_extents(where, extents)
        except ScheduleError as error:
            raise FusionError(str(error)) from None
        return extents

    def __call__(
        self,
        *arrays: Any,
        out: Any = None,
        stream: Any = None,
        check: bool | None = None,
        **named: Any,
    ) -> tuple[Any, ...]:
        """Run the kernel on the inputs (by position in input order, or by name).

        Device arrays (torch, cupy, ...) give outputs of their framework, launched on its
        current stream (or `stream=`) without synchronizing; host arrays (numpy, CPU torch)
        give host outputs. `out=` (tuple, list or dict by output name) is written in place;
        `check=True` (or MMCOMP_CHECK=1) poisons the outputs and synchronizes. An input
        named out, stream or check is passed by position. See mmcomp.backend.call.
        """
        fast = self._fast
        if fast is not None and stream is None and check is None and not named:
            if out is None:
                outputs = fast(arrays)
                if outputs is not None:
                    return outputs
            elif isinstance(out, tuple | list) and self._fast_out is not None:
                outputs = self._fast_out(arrays, cast("Sequence[Any]", out))
                if outputs is not None:
                    return outputs
        global _call_kernel
        if _call_kernel is None:
            from mmcomp.backend.call import call_kernel

            _call_kernel = call_kernel
        outputs = _call_kernel(self, arrays, named, out, stream, check)
        runner = self._runner
        if fast is None and isinstance(runner, CudaRunner) and not runner.kernel.plan.dynamic:
            state = runner.kernel.call_state()
            self._fast = state.fast_path()
            self._fast_out = state.fast_out_path()
        return outputs

    def run(self, inputs: list[Any]) -> tuple[np.ndarray, ...]:
        """Run the back end on inputs already bound (`bind`), in fusion input order."""
        return self._runner(inputs)

    def __repr__(self) -> str:
        return f"<mmcomp.Kernel @{self.fusion.name} backend={self.backend} {self.params.format()}>"


def as_fusion(f: object, where: str = "compile") -> Fusion:
    """The fusion of an mmcomp.Fusion, IR text, the path of a .mlir file (mmcomp.parse) or a
    builtin.module (argument 'f' of `where`)."""
    from mmcomp.frontend.builder import Fusion, parse

    if isinstance(f, Fusion):
        return f
    if isinstance(f, str | os.PathLike):
        return parse(f)  # pyright: ignore[reportUnknownArgumentType]  (PathLike[Any])
    if isinstance(f, ModuleOp):
        return Fusion.from_module(f.clone())
    raise FusionError(
        f"{where}: argument 'f': expected an mmcomp.Fusion, IR text, the path of a .mlir "
        f"file or a builtin.module, found {type(f).__name__}"
    )


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
    stages = {"fusion": _text(module)}
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
            stages[stage.name] = _text(module)
        if stage.name == last:
            break
    assert compilation.params is not None
    return module, compilation.params, stages


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

    A fusion with a dynamic M gives a `mmcomp.schedule.buckets.BucketedKernel`: at each call it runs
    the kernel of the actual M's bucket, compiled on first use. `schedule_m=M` instead
    compiles one kernel, its schedule chosen for that M, which runs at every M (a
    ScheduleError for a fusion whose M is static).

    `autotune=True` times candidate schedules on the GPU, on random inputs, within
    `autotune_budget_s` seconds (default 30; an error without autotune=True), and keeps
    the fastest correct one (the keywords given pin theirs); `mmcomp.autotune` says more.
    For a dynamic M each bucket is tuned when first used, at its bound.
    """
    from mmcomp.schedule.buckets import BucketedKernel, has_dynamic_m
    from mmcomp.schedule.heuristics import check_schedule_m, normalize_overrides

    if autotune:
        from mmcomp.tuning import DEFAULT_BUDGET_S
        from mmcomp.tuning import autotune as tune

        budget = DEFAULT_BUDGET_S if autotune_budget_s is None else autotune_budget_s
        fusion = as_fusion(f)
        dynamic_m = has_dynamic_m(fusion)
        _check_schedule_m_applies(fusion, check_schedule_m(params.get("schedule_m")), dynamic_m)
        if "schedule_m" not in params and dynamic_m:
            keywords = dict(params)
            normalize_overrides(keywords)
            return BucketedKernel(fusion, backend, keywords, autotune_budget_s=budget)
        return tune(fusion, backend=backend, budget_s=budget, **params)
    if autotune_budget_s is not None:
        raise ScheduleError(
            f"compile: autotune_budget_s={autotune_budget_s!r} applies only with "
            "autotune=True (it bounds the autotune's time)"
        )
    if backend not in BACKENDS:
        raise ValueError(
            f"compile: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}"
        )
    schedule_m = check_schedule_m(params.pop("schedule_m", None))
    normalize_overrides(params)
    fusion = as_fusion(f)
    dynamic_m = has_dynamic_m(fusion)
    _check_schedule_m_applies(fusion, schedule_m, dynamic_m)
    if schedule_m is None and dynamic_m:
        return BucketedKernel(fusion, backend, params)
    from mmcomp.cache import compile_cached

    def build() -> Kernel:
        return _build_without_spills(fusion, backend, params, schedule_m)

    keyed = params if schedule_m is None else {**params, "schedule_m": schedule_m}
    return compile_cached(fusion, backend, keyed, build)


def _check_schedule_m_applies(fusion: Fusion, schedule_m: int | None, dynamic_m: bool) -> None:
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
        fusion.module, params, backend, schedule_m=schedule_m, print_all=False
    )
    names = ["fusion", *(stage.name for stage in PIPELINE)]
    names = names[: names.index(MATERIALIZED if backend != "cuda" else names[-1]) + 1]
    stages = StageTexts(texts, names, Recipe(backend, dict(params), schedule_m))
    try:
        return _kernel(fusion, backend, chosen, stages, module), chosen
    except Exception as error:
        if not is_spill_report(error):
            raise
        raise SpilledError(chosen, str(error)) from None


def _kernel(
    fusion: Fusion,
    backend: str,
    chosen: ScheduleParams,
    stages: Mapping[str, str],
    module: ModuleOp,
) -> Kernel:
    """The Kernel of a pipeline's result (`module`: the last stage's module)."""
    materialized = module if backend != "cuda" else None
    return Kernel(fusion, backend, chosen, stages, materialized, RUNNERS[backend](module))


def _build_without_spills(
    fusion: Fusion, backend: str, params: Mapping[str, object], schedule_m: int | None = None
) -> Kernel:
    """The kernel for `params`, refitted where ptxas spills it (mmcomp.schedule.spill_refit): the
    keywords and the keys written in the fusion's own `#sched.params` are the pins."""
    from mmcomp.passes.choose_schedule import written_params
    from mmcomp.schedule.spill_refit import fit

    written: dict[str, object] = {}
    for op in fusion.module.ops:
        if isinstance(op, FuncOp):
            with contextlib.suppress(ScheduleError):  # choose-schedule reports a bad one
                written.update(written_params(op))
    return fit(lambda pinned: _build(fusion, backend, pinned, schedule_m), {**written, **params})
