"""A compiled fusion, `Kernel` (what `mmcomp.compile` returns), on either back end.

A Kernel keeps the fusion, its schedule parameters, the IR text after each stage of the
pipeline (`stage_ir`, `ir(stage)`: a `StageTexts`, whose hopper and ptx texts are printed
when first asked for) and a runner: the CPU executor of the materialized
kernel (backend "interp") or the cuda back end's kernel (backend "cuda"). Calling it binds
and checks the arrays and runs the runner (mmcomp.backend.call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from mmcomp.errors import FusionError, LaunchError, ScheduleError

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp

    from mmcomp.backend.kernel import CudaKernel
    from mmcomp.dialects.sched import ScheduleParams
    from mmcomp.frontend.builder import Fusion

Runner = Callable[[list[Any]], "tuple[np.ndarray, ...]"]
"""Runs a compiled kernel: inputs in fusion input order -> outputs in fusion output order."""

MATERIALIZED = "materialize-schedule"
"""The last stage of the interp back end (the CPU executor runs the materialized kernel)."""


def _interp_runner(module: ModuleOp) -> Runner:
    """Runs the materialized kernel on the CPU, simulating every CTA."""
    from mmcomp.interp.executor import execute

    def run(inputs: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        return execute(module, inputs).outputs

    return run


class CudaRunner:
    """Runs a materialized module as a Hopper kernel (built at compile time, or made from a
    disk cache entry when first used; launched lazily)."""

    def __init__(
        self, kernel: CudaKernel | None = None, load: Callable[[], CudaKernel] | None = None
    ):
        if kernel is None and load is None:
            raise ValueError("CudaRunner: expected a kernel or a function that makes it")
        self._kernel = kernel
        self._load = load

    @property
    def kernel(self) -> CudaKernel:
        """The PTX, its ptxas report and launch plan (mmcomp.backend.CudaKernel)."""
        if self._kernel is None:
            assert self._load is not None
            self._kernel = self._load()
        return self._kernel

    def __call__(self, inputs: list[Any]) -> tuple[np.ndarray, ...]:
        return self.kernel(*inputs)


def _cuda_runner(module: ModuleOp) -> Runner:
    """The ptx module's kernel: its PTX, checked by ptxas with 0 spills, and its launch plan."""
    from mmcomp.backend.kernel import build_cuda_kernel

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


class Recipe(NamedTuple):
    """How a kernel's pipeline ran, to run it again for the texts a compile did not print."""

    backend: str
    """The back end scheduled for."""
    params: dict[str, object]
    """The keywords the pipeline ran with (the caller's, refitted where ptxas spilled)."""
    schedule_m: int | None
    """For a dynamic M: the M the schedule was chosen for."""


PrintAgain = Callable[[str, Recipe, str], dict[str, str]]
"""Runs the pipeline again on a fusion's IR text under a Recipe, through the named last
stage: the text after every stage (mmcomp.pipeline.print_stages_again)."""


class StageTexts(Mapping[str, str]):
    """Stage name -> IR text after that stage, in pipeline order. The texts a compile did not
    print (mmcomp.pipeline.PRINTED_WHEN_ASKED) are made when one is first asked for, by
    running the pipeline again on the fusion stage's text under the same `Recipe` (the
    pipeline is deterministic: the texts it printed the first time are checked to come out
    the same)."""

    def __init__(
        self,
        texts: Mapping[str, str],
        names: Sequence[str],
        recipe: Recipe | None,
        print_again: PrintAgain | None = None,
    ):
        self._texts = dict(texts)
        self._names = tuple(names)
        self.recipe = recipe
        """How to run the pipeline again (None: every text is printed)."""
        self._print_again = print_again

    def __getitem__(self, name: str) -> str:
        found = self._texts.get(name)
        if found is not None:
            return found
        if name not in self._names or self.recipe is None or self._print_again is None:
            raise KeyError(name)
        self._texts = self._printed_again(self.recipe, self._print_again)
        return self._texts[name]

    def _printed_again(self, recipe: Recipe, print_again: PrintAgain) -> dict[str, str]:
        """Every stage's text, from the pipeline run again."""
        texts = print_again(self._texts["fusion"], recipe, self._names[-1])
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


def _device_view(array: Any, name: str) -> Any:
    """The runtime's zero-copy view of a device array (its shape and dtype); None for host."""
    from mmcomp.runtime import as_device_array

    return as_device_array(array, name)


class Kernel:
    """A compiled fusion: call it on arrays; it returns the outputs in fusion output order."""

    _fusion: Fusion | None
    _load_fusion: Callable[[], Fusion] | None
    _params: ScheduleParams | None
    _load_params: Callable[[], ScheduleParams] | None

    def __init__(
        self,
        fusion: Fusion,
        backend: str,
        params: ScheduleParams,
        stage_ir: Mapping[str, str],
        module: ModuleOp | None,
        runner: Runner,
    ):
        self.fusion = fusion
        self.params = params
        self._start(backend, stage_ir, module, runner)

    def _start(
        self, backend: str, stage_ir: Mapping[str, str], module: ModuleOp | None, runner: Runner
    ) -> None:
        """Set what every kernel holds besides its fusion and params."""
        self.backend = backend
        """The back end that runs the kernel ("interp" or "cuda")."""
        self.stage_ir = stage_ir
        """Stage name -> IR text after that stage, in pipeline order (`ir(stage)`; a
        StageTexts: the hopper and ptx levels' texts printed when first asked for)."""
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

    @classmethod
    def loaded(
        cls,
        fusion: Callable[[], Fusion],
        backend: str,
        params: Callable[[], ScheduleParams],
        stage_ir: Mapping[str, str],
        runner: Runner,
    ) -> Kernel:
        """A kernel from a disk cache entry whose fusion and params are made when first asked
        for (by `fusion()`, `params()`), so that returning it imports neither xDSL nor numpy."""
        kernel = cls.__new__(cls)
        kernel._fusion = None
        kernel._load_fusion = fusion
        kernel._params = None
        kernel._load_params = params
        kernel._start(backend, stage_ir, None, runner)
        return kernel

    @property
    def fusion(self) -> Fusion:
        """The fusion compiled: a copy taken when the kernel was made, so that building more
        on the caller's Fusion afterwards does not change the kernel."""
        if self._fusion is None:
            assert self._load_fusion is not None
            self._fusion = self._load_fusion()
        return self._fusion

    @fusion.setter
    def fusion(self, fusion: Fusion) -> None:
        self._fusion = fusion.clone()
        self._load_fusion = None

    @property
    def params(self) -> ScheduleParams:
        """The schedule parameters (the heuristic's choice with the caller's overrides)."""
        if self._params is None:
            assert self._load_params is not None
            self._params = self._load_params()
        return self._params

    @params.setter
    def params(self, params: ScheduleParams) -> None:
        self._params = params
        self._load_params = None

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

            from mmcomp.ir.registry import context

            self._module = Parser(context(), self.stage_ir[MATERIALIZED]).parse_module()
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
        """The IR text after `stage` (see `stage_ir` for the names)."""
        if stage not in self.stage_ir:
            raise KeyError(f"no stage {stage!r}; the stages are {', '.join(self.stage_ir)}")
        return self.stage_ir[stage]

    def bind(self, arrays: Sequence[Any], named: Mapping[str, Any]) -> list[Any]:
        """The inputs in fusion input order, from positional and named arrays; checked."""
        from mmcomp.backend.arguments import order_inputs
        from mmcomp.frontend.argcheck import check_shape_and_dtype
        from mmcomp.ir.narrowing import is_ndarray

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
            from mmcomp.analysis.roles import dynamic_input_roles

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
        outputs = call_kernel(self, arrays, named, out, stream, check)
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


def output_types(
    kernel: Kernel, arrays: Sequence[np.ndarray]
) -> list[tuple[tuple[int, ...], np.dtype]]:
    """(shape, dtype) of each output of `kernel` on its (bound) input arrays, its dynamic
    extents read from them."""
    from mmcomp.analysis.roles import roles_of

    extents = kernel.runtime_extents([array.shape for array in arrays])
    types: list[tuple[tuple[int, ...], np.dtype]] = []
    for value in kernel.fusion.outputs:
        dynamic = value.dynamic_axes
        roles: tuple[str, ...] = roles_of(value) if dynamic else ()
        shape = tuple(
            extents[roles[axis]] if axis in dynamic else extent
            for axis, extent in enumerate(value.shape)
        )
        types.append((shape, value.numpy_dtype))
    return types


def call_kernel(
    kernel: Kernel,
    arrays: Sequence[Any],
    named: Mapping[str, Any],
    out: Any = None,
    stream: Any = None,
    check: bool | None = None,
) -> tuple[Any, ...]:
    """`Kernel.__call__`: order the inputs, then run the back end (mmcomp.backend.call)."""
    from mmcomp.backend.arguments import order_inputs
    from mmcomp.backend.call import (
        call,
        check_flag,
        host_inputs,
        host_outputs,
        host_targets,
        shape_of,
    )

    device = kernel.device_kernel if kernel.backend == "cuda" else None
    if device is not None:
        if named or len(arrays) != device.num_inputs:
            names = [
                value.name or f"input{index}" for index, value in enumerate(kernel.fusion.inputs)
            ]
            arrays = order_inputs(f"kernel @{device.plan.entry}", names, arrays, named)
        if device.plan.dynamic:
            try:
                shapes = tuple(tuple(array.shape) for array in arrays)
            except AttributeError:
                where = f"kernel @{kernel.fusion.name}"
                inputs = kernel.fusion.inputs
                names = [value.name or f"input {i}" for i, value in enumerate(inputs)]
                shapes = tuple(shape_of(where, n, a) for n, a in zip(names, arrays, strict=True))
            device = kernel.device_kernel_at(shapes)
        return call(device, arrays, out, stream, check)
    where = f"kernel @{kernel.fusion.name}"
    if stream is not None:
        raise LaunchError(
            f"{where}: argument 'stream': the {kernel.backend} back end runs on the CPU and "
            "takes no stream"
        )
    check_flag(where, check)
    names = [value.name or f"input{index}" for index, value in enumerate(kernel.fusion.inputs)]
    ordered = order_inputs(where, names, arrays, named)
    frames, host = host_inputs(where, names, ordered)
    bound = kernel.bind(host, {})
    output_names = [f"out{index}" for index in range(len(kernel.fusion.outputs))]
    types = output_types(kernel, host) if out is not None else []
    pairs = list(zip(names, host, strict=True))
    entries, targets = host_targets(where, out, output_names, types, pairs)
    results = kernel.run(bound)
    return host_outputs(frames[0], ordered[0], results, entries, targets)
