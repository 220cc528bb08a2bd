"""Building and calling a cuda kernel from a materialized schedule (see mmcomp.backend)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from mmcomp.backend.plan import LaunchPlan, launch_plan
from mmcomp.dialects import ptx
from mmcomp.errors import LaunchError
from mmcomp.ir import dtypes

if TYPE_CHECKING:
    from mmcomp.backend.call import CallState

SPECIALIZED_KEPT = 64
"""Specializations of a dynamic kernel kept (one per runtime extents; the oldest goes)."""

POISON_BYTE = 0xFF
"""Outputs are filled with this byte before a launch (NaN in bf16, f16 and f32)."""


def _numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a kernel argument's dtype (bf16, f16, f32, i32)."""
    dtype = dtypes.by_name(name)
    if dtype is None:
        raise KeyError(name)
    return dtype.numpy_dtype


LOWERING = (
    "partition-warp-roles",
    "lower-schedule-to-hopper",
    "convert-hopper-to-ptx",
    "convert-scf-to-ptx",
    "convert-arith-to-ptx",
)
"""The registered passes from a materialized kernel to its ptx module (the end of
`compile-to-ptx`)."""


def lower_to_ptx(module: ModuleOp) -> tuple[str, LaunchPlan]:
    """PTX text and launch plan of a module after materialize-schedule, or of one lowered
    further (the passes left to run are run on a copy)."""
    from mmcomp.dialects.ptx.target import emit_ptx
    from mmcomp.ir.registry import PASSES, context

    lowered = module.clone()
    ctx = context()
    for name in LOWERING:
        PASSES[name]()().apply(ctx, lowered)
    return emit_ptx(lowered), launch_plan(lowered)


def _check_arrays(kernel: CudaKernel, arrays: Sequence[Any]) -> None:
    """LaunchError naming the argument unless each array has the kernel's dtype and shape
    and a layout it can address: the tensor maps' arrays as TMA needs them, the others
    (read or written element by element) C-contiguous, their base aligned to two elements
    (neighbouring columns move in pairs)."""
    from mmcomp.runtime import ArraySpec, as_device_array, check_device_array
    from mmcomp.runtime.arrays import check_dtype_and_shape
    from mmcomp.runtime.staging import reads_in_place

    # An array every map of which reads it in place (the view's own strides suit TMA) needs
    # only its dtype and shape; a staged operand is copied row by row into its padded copy
    # (C-contiguous is enough); the other maps' arrays get the TMA checks and their message.
    maps = kernel.plan.tensor_maps
    through_tma = {operand.arg for operand in maps if not operand.pitch}
    in_place = {operand.arg for operand in maps} - {
        operand.arg for operand in maps if not reads_in_place(operand, arrays[operand.arg])
    }
    # A map whose contiguous axis is an outer axis of its array (a [T, 1] operand read as
    # one row of T elements, K-major): that axis must be contiguous (`_check_one_row`).
    specs = kernel.argument_specs()
    one_row = {
        operand.arg: operand.axes[-1]
        for operand in maps
        if not operand.pitch
        and operand.axes
        and 0 <= operand.axes[-1] < len(specs[operand.arg][1]) - 1
    }
    for index, (array, (name, shape, dtype)) in enumerate(zip(arrays, specs, strict=True)):
        view = as_device_array(array, name)
        if view is None:
            raise LaunchError(
                f"kernel @{kernel.plan.entry}: argument {name!r}: expected a device array, "
                f"found {type(array).__name__}"
            )
        if index in in_place or view.nbytes == 0:
            # An empty array is never addressed (its maps read a placeholder).
            check_dtype_and_shape(ArraySpec(name, dtype, shape), view.dtype, view.shape)
            continue
        row = one_row.get(index)
        if row is not None:
            _check_one_row(name, ArraySpec(name, dtype, shape), view, row)
            continue
        layout = "tma" if index in through_tma else "contiguous"
        check_device_array(ArraySpec(name, dtype, shape, layout=layout), view)
        pair = 2 * dtype.itemsize
        if layout == "contiguous" and shape and shape[-1] % 2 == 0 and view.ptr % pair:
            raise LaunchError(
                f"argument {name!r}: base address 0x{view.ptr:x} is not aligned to {pair} "
                "bytes (the kernel reads and writes neighbouring columns in pairs)"
            )


def _check_one_row(name: str, spec: Any, view: Any, axis: int) -> None:
    """LaunchError unless an array whose tensor map's contiguous axis is its `axis` (the
    axes after it of extent 1) has that axis contiguous, the axes before it 16-byte
    strides and a 16-byte aligned base, as TMA needs."""
    from mmcomp.runtime.arrays import TMA_ALIGNMENT, check_dtype_and_shape

    check_dtype_and_shape(spec, view.dtype, view.shape)
    itemsize = view.dtype.itemsize
    if view.shape[axis] > 1 and view.strides[axis] != itemsize:
        raise LaunchError(
            f"argument {name!r}: its axis {axis} is the contiguous axis of the kernel's "
            f"tensor map (rows of {view.shape[axis]} elements): expected byte stride "
            f"{itemsize}, found {view.strides[axis]} (pass a C-contiguous array)"
        )
    for outer in range(axis):
        if view.shape[outer] > 1 and view.strides[outer] % TMA_ALIGNMENT:
            raise LaunchError(
                f"argument {name!r}: byte stride {view.strides[outer]} on axis {outer} is not "
                f"a multiple of {TMA_ALIGNMENT} (TMA needs 16-byte aligned strides)"
            )
    if view.ptr % TMA_ALIGNMENT:
        raise LaunchError(
            f"argument {name!r}: base address 0x{view.ptr:x} is not 16-byte aligned (TMA "
            "needs a 16-byte aligned global address; pass an aligned copy)"
        )


class BoundLaunch:
    """A kernel bound to device arrays: tensor maps encoded, ready to launch repeatedly."""

    def __init__(self, kernel: CudaKernel, arrays: Sequence[Any]):
        """Encode the tensor maps over `arrays` (inputs, outputs, workspaces in order)."""
        from mmcomp.runtime.staging import encode_operand_maps

        plan = kernel.plan
        self.kernel = kernel
        """The kernel."""
        self.arrays = list(arrays)
        """The device arrays, in kernel argument order."""
        _check_arrays(kernel, self.arrays)
        self.maps, self.staging = encode_operand_maps(plan.tensor_maps, self.arrays)
        """One tensor map per mainloop operand and TMA-stored output; the padded staging
        copies of operands whose rows TMA cannot address (mmcomp.runtime.staging), refilled
        on the launch stream before every launch."""
        extents = [np.uint32(value) for value in plan.extent_values]
        self.args: list[Any] = [*self.arrays, *extents, *self.maps]
        self.grid = plan.grid
        """CTAs launched: the plan's grid, or for a persistent kernel with clusters, as many
        as run at once (set at the first launch)."""
        self._config: Any = None
        self._packed: Any = None

    def launch(self, stream: Any = None) -> None:
        """Launch once on `stream` (asynchronous).

        The first launch goes through mmcomp.runtime.launch, which checks the arguments
        against the kernel and raises its shared-memory limit; later launches reuse the
        packed parameters and launch configuration (a few microseconds of host time).
        """
        from mmcomp.runtime import launch
        from mmcomp.runtime.driver import check, driver_api
        from mmcomp.runtime.launch import (
            KernelArguments,
            cluster_launch_config,
            max_active_clusters,
        )
        from mmcomp.runtime.stream import stream_handle

        plan = self.kernel.plan
        function = self.kernel.function()
        self.staging.copy_in(stream)
        if self._config is None:
            grid = plan.grid
            if plan.cluster > 1 and plan.persistent:
                # Clusters must fit in a GPC: a persistent grid of more CTAs than run at
                # once would leave the rest waiting for a second wave.
                fits = max_active_clusters(function, plan.threads, plan.cluster, plan.smem_bytes)
                grid = min(grid, max(fits, 1) * plan.cluster)
            self.grid = grid
            launch(
                function,
                grid,
                plan.threads,
                self.args,
                cluster=plan.cluster,
                smem_bytes=plan.smem_bytes,
                stream=stream,
                programmatic=plan.programmatic,
            )
            self._packed = KernelArguments(self.args)
            self._config = cluster_launch_config(
                function, grid, plan.threads, plan.cluster, plan.smem_bytes, plan.programmatic
            )
            return
        config = self._config
        config.hStream = stream_handle(stream)
        check(
            driver_api().cuLaunchKernelEx(
                config, function.handle, self._packed.pointers.ctypes.data, 0
            ),
            f"launching kernel {plan.entry}",
        )

    def relauncher(
        self, stream: Any, counters: tuple[int, int] | None = None
    ) -> Callable[[], None]:
        """After the first launch: a function relaunching on `stream` (a CUstream) alone,
        with the packed parameters (the split-K tile `counters`, (address, count), zeroed
        and the staging copies refilled first), and none of `launch`'s checks; the public
        call's cached launches use it. It makes mmcomp's context current only where the
        launch is refused (a thread that has not used it yet), then launches again.

        A kernel without clusters or a programmatic dependency goes through
        cuLaunchKernel, its grid, block and shared memory passed as ints; the others need
        cuLaunchKernelEx and the launch config's attributes.
        """
        from mmcomp.runtime.device import ensure_context
        from mmcomp.runtime.driver import check, driver_api
        from mmcomp.runtime.launch import cluster_launch_config

        if self._config is None:
            raise LaunchError(f"kernel @{self.kernel.plan.entry}: relauncher before a launch")
        driver = driver_api()
        success = driver.CUresult.CUDA_SUCCESS
        plan = self.kernel.plan
        function = self.kernel.function()
        params = self._packed.pointers.ctypes.data
        copies = self.staging.copies
        copy_in = self.staging.copy_in
        entry = plan.entry
        launch: Callable[..., Any]
        args: tuple[Any, ...]
        if plan.cluster == 1 and not plan.programmatic:
            launch = driver.cuLaunchKernel
            grid, threads, smem = self.grid, plan.threads, plan.smem_bytes
            args = (function.handle, grid, 1, 1, threads, 1, 1, smem, stream, params, 0)
        else:
            launch = driver.cuLaunchKernelEx
            config = cluster_launch_config(
                function, self.grid, plan.threads, plan.cluster, plan.smem_bytes, plan.programmatic
            )
            config.hStream = stream
            args = (config, function.handle, params, 0)

        def retry() -> None:
            # A thread where mmcomp's context is not current yet: make it so, launch again.
            # (A refused launch queued nothing; a second refusal is raised.)
            ensure_context()
            check(launch(*args), f"launching kernel {entry}")

        if counters is None and not copies:

            def relaunch() -> None:
                result = launch(*args)
                if result[0] is not success:
                    retry()

            return relaunch
        memset = driver.cuMemsetD32Async
        address, count = counters if counters is not None else (0, 0)

        def relaunch_with_setup() -> None:
            ensure_context()
            if count:
                check(memset(address, 0, count, stream), "zeroing the split-K tile counters")
            if copies:
                copy_in(stream)
            result = launch(*args)
            if result[0] is not success:
                retry()

        return relaunch_with_setup


@dataclass
class CudaKernel:
    """A compiled kernel: its PTX, ptxas report and launch plan; call it on the inputs."""

    ptx: str
    """The PTX text."""
    plan: LaunchPlan
    """Parameters, tensor maps, grid, threads and shared memory of the launch."""
    report: Any
    """The ptxas resource report (mmcomp.arch.ptxas.ResourceReport), None without ptxas."""
    num_inputs: int
    """Kernel arguments that are fusion inputs (the first ones)."""
    num_outputs: int
    """Kernel arguments that are fusion outputs (after the inputs)."""
    cubin: bytes | None = None
    """The cubin ptxas assembled (for SASS checks), None without ptxas."""
    launch_module: ModuleOp | None = None
    """With runtime extents: a module holding the launch function (`plan.grid_function`)."""
    parent: CudaKernel | None = None
    """A kernel specialized for runtime extents: the dynamic kernel it shares its loaded
    module with."""
    _function: Any = None
    _calls: Any = None
    _specialized: dict[tuple[int, ...], CudaKernel] | None = None

    def specialized(self, extents: dict[str, int]) -> CudaKernel:
        """This kernel at runtime extents (m, b0, ...): the launch plan with concrete
        shapes, tensor maps and grid from the launch function; the same PTX and loaded
        module. Cached per extents (the most recent SPECIALIZED_KEPT)."""
        from mmcomp.errors import ScheduleError
        from mmcomp.interp.executor import check_runtime_extents, launch_counts

        where = f"kernel @{self.plan.entry}"
        if not self.plan.dynamic or self.launch_module is None:
            raise LaunchError(f"{where}: the kernel takes no runtime extents")
        key = tuple(extents[name] for name in self.plan.extents)
        cache = self._specialized
        if cache is None:
            cache = self._specialized = {}
        found = cache.get(key)
        if found is not None:
            return found
        launch = next(
            op
            for op in self.launch_module.ops
            if isinstance(op, FuncOp) and op.sym_name.data == self.plan.grid_function
        )
        try:
            check_runtime_extents(where, extents)
            grid, cta_tiles, _ = launch_counts(self.launch_module, launch, extents, where)
        except ScheduleError as error:
            raise LaunchError(str(error)) from None
        from mmcomp.lowering.hopper.plan import CTA_TILES

        plan = self.plan.specialized({**extents, CTA_TILES: cta_tiles}, grid)
        found = CudaKernel(
            self.ptx,
            plan,
            self.report,
            self.num_inputs,
            self.num_outputs,
            self.cubin,
            parent=self,
        )
        if len(cache) >= SPECIALIZED_KEPT:
            cache.pop(next(iter(cache)))
        cache[key] = found
        return found

    def __getstate__(self) -> dict[str, Any]:
        """What pickles: the loaded module, the call state and the specializations stay
        behind, the launch function goes as its text."""
        state = dict(self.__dict__)
        state.update(_function=None, _calls=None, _specialized=None)
        if self.launch_module is not None:
            state["launch_module"] = str(self.launch_module)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild from `__getstate__`'s state."""
        launch = state.get("launch_module")
        if isinstance(launch, str):
            from xdsl.parser import Parser

            from mmcomp.ir.registry import context

            state["launch_module"] = Parser(context(), launch).parse_module()
        self.__dict__.update(state)

    def runtime_extents(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """The runtime extents of a call on inputs of these shapes (each `?` axis of an
        input names its extent); LaunchError for a static extent that differs or inputs
        that disagree, naming them."""
        from mmcomp.frontend.argcheck import bind_extents

        inputs = [array for array in self.plan.arrays if array.role == "input"]
        roles: list[list[str]] = []
        for array in inputs:
            names = iter(array.extents.split())
            roles.append([next(names) if e == ptx.DYNAMIC else "" for e in array.shape])
        return bind_extents(
            f"kernel @{self.plan.entry}",
            [array.name for array in inputs],
            shapes,
            [array.shape for array in inputs],
            roles,
        )

    def function(self) -> Any:
        """The loaded kernel (mmcomp.runtime.Function); loads the module on first use."""
        if self._function is None and self.parent is not None:
            return self.parent.function()
        if self._function is None:
            from mmcomp.runtime import gpu_unavailable_reason, load_module

            reason = gpu_unavailable_reason()
            if reason is not None:
                raise LaunchError(
                    f"kernel @{self.plan.entry} compiled to PTX, but cannot run here: {reason}"
                )
            self._function = load_module(self.ptx).function(self.plan.entry)
        return self._function

    def argument_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        """(name, shape, numpy dtype) of each kernel argument."""
        return [
            (name, shape, _numpy_dtype(dtype))
            for name, (shape, dtype) in zip(
                self.plan.arguments, self.plan.argument_types, strict=True
            )
        ]

    def allocate_outputs(self) -> list[Any]:
        """Fresh device buffers for the outputs (poisoned) and workspaces (zeroed)."""
        from mmcomp.runtime import DeviceBuffer

        buffers: list[Any] = []
        for index, (_, shape, dtype) in enumerate(self.argument_specs()):
            if index < self.num_inputs:
                continue
            buffer = DeviceBuffer(shape, dtype)
            output = index < self.num_inputs + self.num_outputs
            buffer.fill_bytes(POISON_BYTE if output else 0)
            buffers.append(buffer)
        return buffers

    def bind(self, arrays: Sequence[Any]) -> BoundLaunch:
        """Bind device arrays (inputs, outputs, workspaces in order) for repeated launches."""
        if self.plan.dynamic:
            raise LaunchError(
                f"kernel @{self.plan.entry} takes the runtime extents "
                f"{', '.join(self.plan.extents)}; bind its `specialized(extents)` kernel"
            )
        specs = self.argument_specs()
        if len(arrays) != len(specs):
            raise LaunchError(
                f"kernel @{self.plan.entry}: expected {len(specs)} device arrays "
                f"({', '.join(name for name, _, _ in specs)}), found {len(arrays)}"
            )
        return BoundLaunch(self, arrays)

    def call_state(self) -> CallState:
        """What the public call keeps between calls (mmcomp.backend.call.CallState)."""
        if self._calls is None:
            from mmcomp.backend.call import CallState

            self._calls = CallState(self)
        return self._calls

    def __call__(
        self, *inputs: Any, out: Any = None, stream: Any = None, check: bool | None = None
    ) -> tuple[Any, ...]:
        """Run on the inputs (in order): host arrays give host outputs, device arrays their
        framework's, on its current stream (see mmcomp.backend.call)."""
        from mmcomp.backend.call import call

        return call(self, inputs, out, stream, check)


def build_cuda_kernel(
    module: ModuleOp | ptx.PtxModuleOp, check_spills: bool = True, verified: bool = False
) -> CudaKernel:
    """The kernel of a ptx-level module (the end of `compile-to-ptx`, or a file mmcomp-opt
    wrote): its PTX text, assembled with ptxas when one is found (0 spill bytes required),
    and the launch plan its entry carries. `verified`: the caller has just verified the
    module (the pipeline does), so the PTX printer does not verify it again."""
    from mmcomp.arch import ptxas
    from mmcomp.dialects.ptx.target import emit_ptx

    plan = launch_plan(module)
    launch_module = None
    if plan.grid_function:
        found = [
            op
            for op in module.walk()
            if isinstance(op, FuncOp) and op.sym_name.data == plan.grid_function
        ]
        if not found:
            raise LaunchError(
                f"ptx.entry @{plan.entry}: its launch names the grid function "
                f"@{plan.grid_function}, which the module lacks"
            )
        launch_module = ModuleOp([found[0].clone()])
    text = emit_ptx(module, verified)
    report = None
    cubin = None
    if ptxas.find_tool("ptxas") is not None:
        assembled = ptxas.assemble(text)
        if check_spills:
            ptxas.check_no_spills(assembled)
        report = assembled.resources.get(plan.entry)
        cubin = assembled.cubin
    return CudaKernel(
        text,
        plan,
        report,
        plan.count("input"),
        plan.count("output"),
        cubin,
        launch_module=launch_module,
    )


def load_kernel(source: str | os.PathLike[str]) -> CudaKernel:
    """The kernel of a ptx-level IR file (or text) that `mmcomp-opt` wrote, e.g. with
    `-p compile-to-ptx`; call it on the inputs like a compiled kernel's device kernel."""
    from xdsl.parser import Parser

    from mmcomp.ir.diagnostics import verify
    from mmcomp.ir.registry import context

    if not isinstance(source, str | os.PathLike):
        raise LaunchError(
            "load_kernel: argument 'source': expected IR text or a path (str or "
            f"os.PathLike), found {type(source).__name__}"
        )
    is_path = isinstance(source, os.PathLike)
    text = os.fspath(source)
    if not isinstance(text, str):
        raise LaunchError("load_kernel: argument 'source': expected a str path, found bytes")
    name = "<text>"
    # IR text holds a region's braces; one line without them is a path.
    if is_path or ("\n" not in text and "{" not in text):
        name = text
        try:
            text = Path(text).read_text()
        except OSError as error:
            raise LaunchError(f"load_kernel: cannot read {name}: {error.strerror}") from None
    try:
        module = Parser(context(), text, name).parse_module()
        verify(module)
    except (ParseError, DiagnosticException, VerifyException) as error:
        raise LaunchError(f"load_kernel: {name}: {error}") from None
    return build_cuda_kernel(module)
