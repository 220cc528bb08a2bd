"""The public call of a compiled kernel: arrays of a framework in, the same framework out.

`mmcomp.Kernel.__call__` and `CudaKernel.__call__` come here. The contract:

- Device inputs (torch CUDA tensors, cupy arrays, mmcomp DeviceArrays, anything with
  `__cuda_array_interface__` or a CUDA `__dlpack__`) are used in place. The outputs are
  allocated by the framework of the first input (torch outputs through torch's caching
  allocator; cupy through cupy; others as mmcomp DeviceBuffers) and the launch goes on that
  framework's current stream (torch: `torch.cuda.current_stream()`), or on `stream=`. There
  is no host synchronization and no poison fill.
- Host inputs (numpy arrays, CPU torch tensors) are copied to the GPU, the kernel runs, and
  the outputs come back as host arrays of the first input's kind (numpy, or CPU torch).
  Host calls are synchronous, so they always poison their outputs and check the launch.
- Host and device inputs mixed are an error, naming one of each.
- `out=`: a tuple or list in output order (None entries are allocated), or a dict by output
  name (`kernel.output_names`) or index. Each entry is checked (dtype, shape, device and a
  layout the kernel can write), written in place and returned; an entry that shares memory
  with an input or with another output, a read-only host array, or (in grad mode) a torch
  tensor that requires grad is an error. Host entries are all checked before the run.
- Debug mode (`check=True`, or `MMCOMP_CHECK=1` in the environment when this module is
  first imported): outputs are poisoned (0xFF bytes: NaN) on the stream before the launch,
  and the stream is synchronized after it, so a fault of this launch is raised here.
- Repeated calls are cheap: a launch keyed by the stream and every array's pointer, shape,
  strides and dtype is kept (tensor maps encoded, parameters packed, launch configured), so a
  call with the same key costs the reads, the output allocation and one cuLaunchKernelEx.
  The keys hold no reference to the arrays. Split-K workspaces are one cached buffer per
  kernel and stream, their tile counters zeroed on the stream before each launch.

The torch-specific pieces (reading a tensor without DLPack, allocating, the current stream,
host conversions) live in `mmcomp.torch`, which is imported only when a torch tensor is
passed in (torch is then already imported by the caller).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mmcomp.backend.arguments import (
    check_aliasing,
    out_entries,
)
from mmcomp.backend.frames import DEVICE, HOST, Frame, frame_of, key_of
from mmcomp.errors import LaunchError
from mmcomp.runtime.arrays import (
    ArraySpec,
    DeviceArray,
    DeviceBuffer,
    as_device_array,
    check_dtype_and_shape,
    check_layout,
)
from mmcomp.runtime.device import ensure_context
from mmcomp.runtime.driver import check as check_result
from mmcomp.runtime.driver import driver_api
from mmcomp.runtime.stream import is_capturing, relaxed_capture, stream_value

if TYPE_CHECKING:
    from mmcomp.backend.plan import LaunchPlan


class BoundLaunch(Protocol):
    """A kernel bound to device arrays (mmcomp.backend.kernel.BoundLaunch)."""

    def launch(self, stream: Any = None) -> None:
        """Launch once on `stream`."""
        ...

    def relauncher(
        self, stream: Any, counters: tuple[int, int] | None = None
    ) -> Callable[[], None]:
        """After the first launch: the launch again, with nothing checked."""
        ...


class CudaKernel(Protocol):
    """What the call takes of a cuda kernel (mmcomp.backend.kernel.CudaKernel)."""

    @property
    def plan(self) -> LaunchPlan:
        """Parameters, tensor maps, grid, threads and shared memory of the launch."""
        ...

    @property
    def num_inputs(self) -> int:
        """Kernel arguments that are fusion inputs (the first ones)."""
        ...

    @property
    def num_outputs(self) -> int:
        """Kernel arguments that are fusion outputs (after the inputs)."""
        ...

    def argument_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype]]:
        """(name, shape, numpy dtype) of each kernel argument."""
        ...

    def function(self) -> Any:
        """The loaded kernel."""
        ...

    def bind(self, arrays: Sequence[Any]) -> BoundLaunch:
        """Bind device arrays (inputs, outputs, workspaces in order)."""
        ...

    def specialized(self, extents: dict[str, int]) -> CudaKernel:
        """The kernel for these runtime extents."""
        ...

    def runtime_extents(self, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
        """The runtime extents of a call on inputs of these shapes."""
        ...

    def call_state(self) -> CallState:
        """What the call keeps between calls."""
        ...


CHECK_VARIABLE = "MMCOMP_CHECK"
"""The environment variable that turns debug mode on for every call ('1')."""

CHECK_DEFAULT = os.environ.get(CHECK_VARIABLE, "").strip() not in ("", "0")
"""Debug mode for calls without `check=` (MMCOMP_CHECK, read once, at import)."""

LAUNCH_CACHE_SIZE = 64
"""Prepared launches kept per kernel (the oldest is dropped first)."""

POISON_BYTE = 0xFF
"""Debug mode fills outputs with this byte before a launch (NaN in bf16, f16 and f32)."""

# ----------------------------------------------------------------------------------------
# The per-kernel call state
# ----------------------------------------------------------------------------------------


class PreparedLaunch:
    """One cached launch: the bound kernel, its stream, what to zero and what to poison."""

    def __init__(
        self,
        bound: BoundLaunch,
        stream: Any,
        counters: tuple[int, int] | None,
        outputs: list[tuple[int, int, int, int]],
    ):
        self.bound = bound
        """The kernel bound to views of the arrays (tensor maps encoded)."""
        self.stream = stream
        """The CUstream it launches on."""
        self.counters = counters
        """(address, count) of the split-K tile counters, zeroed before each launch."""
        self.outputs = outputs
        """(address, pitch, row bytes, rows) of each output, for the debug mode's poison."""
        self.relaunch: Callable[[], None] | None = None
        """After the first launch, `bound.relauncher(stream, counters)`: the counter reset
        and the launch with nothing checked or looked up."""

    def launch(self) -> None:
        """Queue the launch (and the counter reset) on the stream."""
        relaunch = self.relaunch
        if relaunch is not None:
            relaunch()
            return
        if self.counters is not None:
            address, count = self.counters
            check_result(
                driver_api().cuMemsetD32Async(address, 0, count, self.stream),
                "zeroing the split-K tile counters",
            )
        self.bound.launch(self.stream)
        self.relaunch = self.bound.relauncher(self.stream, self.counters)

    def poison(self) -> None:
        """Fill the outputs with POISON_BYTE on the stream."""
        driver = driver_api()
        for address, pitch, width, rows in self.outputs:
            check_result(
                driver.cuMemsetD2D8Async(address, pitch, POISON_BYTE, width, rows, self.stream),
                "poisoning an output",
            )


def poison_region(view: DeviceArray) -> tuple[int, int, int, int] | None:
    """(address, pitch, row bytes, rows) covering exactly the elements of an array made of
    contiguous rows at one pitch; None for other layouts (the gaps of a strided view may
    belong to other arrays, so nothing is poisoned)."""
    if view.nbytes == 0:
        return None
    if view.is_c_contiguous:
        return (view.ptr, view.nbytes, view.nbytes, 1)
    shape, strides, itemsize = view.shape, view.strides, view.dtype.itemsize
    if len(shape) < 2 or strides[-1] != itemsize or strides[-2] < shape[-1] * itemsize:
        return None
    for axis in range(len(shape) - 2):
        if shape[axis] != 1 and strides[axis] != strides[axis + 1] * shape[axis + 1]:
            return None
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    return (view.ptr, strides[-2], shape[-1] * itemsize, rows)


class CallState:
    """What the public call of one CudaKernel keeps between calls."""

    def __init__(self, kernel: CudaKernel):
        self.kernel = kernel
        """The kernel."""
        self.where = f"kernel @{kernel.plan.entry}"
        """The prefix of every message."""
        specs = kernel.argument_specs()
        first_output = kernel.num_inputs
        first_workspace = kernel.num_inputs + kernel.num_outputs
        self.inputs = specs[:first_output]
        """(name, shape, dtype) of each input."""
        self.outputs = specs[first_output:first_workspace]
        """(name, shape, dtype) of each output."""
        self.workspace_specs = specs[first_workspace:]
        """(name, shape, dtype) of each split-K workspace (partials..., arrivals)."""
        self.output_names = tuple(name for name, _, _ in self.outputs)
        """The outputs' names, as `out=` dicts take them."""
        self.output_types = [(shape, dtype) for _, shape, dtype in self.outputs]
        """(shape, dtype) of each output."""
        self.through_tma = {operand.arg for operand in kernel.plan.tensor_maps}
        """Argument indices read or written through a tensor map."""
        self.launches: dict[tuple[Any, ...], PreparedLaunch] = {}
        """Prepared launches by key (stream, then each input's and output's key)."""
        self.fast_launches: dict[tuple[Any, ...], Callable[[], None]] = {}
        """The relaunch of each prepared launch with new outputs, by its flat key: the
        stream, each input's key fields in turn, then each output's pointer (the rest of a
        new output's key follows from the first input's)."""
        self.hot_frame: Frame | None = None
        """The frame of the first input of the last plain call that went the whole way."""
        self.hot: Callable[[Sequence[Any]], tuple[Any, ...] | None] | None = None
        """`hot_frame.fast_call` over `fast_launches`: the fast path for arrays of it."""
        self.out_launches: dict[tuple[Any, ...], Callable[[], None]] = {}
        """The relaunch of each prepared launch of a call with every output given in `out=`,
        by its flat key: the stream, then each input's and each out entry's key fields."""
        self.hot_out_frame: Frame | None = None
        """The frame of the last such call that went the whole way."""
        self.hot_out: Callable[[Sequence[Any], Sequence[Any]], tuple[Any, ...] | None] | None = None
        """`hot_out_frame.fast_out_call` over `out_launches`."""
        self.workspaces: dict[int, list[DeviceBuffer]] = {}
        """Split-K workspaces by stream handle."""
        self.streams: dict[int, Any] = {}
        """CUstream objects by handle."""
        self.lock = threading.Lock()

    def fast_path(self) -> Callable[[Sequence[Any]], tuple[Any, ...] | None] | None:
        """`fast`, or None in debug mode (MMCOMP_CHECK), where every call checks."""
        return None if CHECK_DEFAULT else self.fast

    def fast_out_path(
        self,
    ) -> Callable[[Sequence[Any], Sequence[Any]], tuple[Any, ...] | None] | None:
        """`fast_out`, or None in debug mode (MMCOMP_CHECK), where every call checks."""
        return None if CHECK_DEFAULT else self.fast_out

    def fast(self, inputs: Sequence[Any]) -> tuple[Any, ...] | None:
        """The common call (device inputs of the last full plain call's frame, new outputs,
        the current stream, no debug mode) where its launch is prepared: the outputs; None
        where it is not (the full call runs then)."""
        hot = self.hot
        return None if hot is None else hot(inputs)

    def fast_out(self, inputs: Sequence[Any], out: Sequence[Any]) -> tuple[Any, ...] | None:
        """The call with `out=` a tuple or list of every output (device arrays of the last
        such full call's frame, the current stream, no debug mode) where its launch is
        prepared (the entries were checked when it was): the entries; None where it is not."""
        hot = self.hot_out
        return None if hot is None else hot(inputs, out)

    def remember(self, frame: Frame, key: tuple[Any, ...], prepared: PreparedLaunch) -> None:
        """Keep `prepared` (launched, with new outputs) for the fast path of `frame`."""
        relaunch = prepared.relaunch
        if relaunch is None:
            return
        count = len(self.inputs)
        flat: list[Any] = [key[0]]
        for entry in key[1 : 1 + count]:
            flat += entry
        flat += [entry[0] for entry in key[1 + count :]]
        with self.lock:
            if len(self.fast_launches) >= LAUNCH_CACHE_SIZE:
                self.fast_launches.pop(next(iter(self.fast_launches)))
            self.fast_launches[tuple(flat)] = relaunch
            if self.hot_frame is not frame:
                self.hot = frame.fast_call(count, self.output_types, self.fast_launches)
                self.hot_frame = frame

    def remember_out(
        self, frame: Frame, key: tuple[Any, ...], prepared: PreparedLaunch, frames: Sequence[Frame]
    ) -> None:
        """Keep `prepared` (launched, every output given in `out=`) for `fast_out`, where
        the inputs and the entries are all arrays of `frame`."""
        relaunch = prepared.relaunch
        if relaunch is None or any(other is not frame for other in frames):
            return
        flat: list[Any] = [key[0]]
        for entry in key[1:]:
            flat += entry
        with self.lock:
            if len(self.out_launches) >= LAUNCH_CACHE_SIZE:
                self.out_launches.pop(next(iter(self.out_launches)))
            self.out_launches[tuple(flat)] = relaunch
            if self.hot_out_frame is not frame:
                self.hot_out = frame.fast_out_call(
                    len(self.inputs), len(self.outputs), self.out_launches
                )
                self.hot_out_frame = frame

    def cu_stream(self, handle: int) -> Any:
        """The CUstream of a raw handle (kept)."""
        stream = self.streams.get(handle)
        if stream is None:
            stream = self.streams[handle] = driver_api().CUstream(handle)
        return stream

    def workspace(self, handle: int) -> list[DeviceBuffer]:
        """The split-K workspaces of the stream `handle`, allocated on first use (every
        partial is written before it is read; the tile counters are zeroed on the stream
        before each launch)."""
        buffers = self.workspaces.get(handle)
        if buffers is not None:
            return buffers
        with relaxed_capture():
            buffers = [DeviceBuffer(shape, dtype) for _, shape, dtype in self.workspace_specs]
        self.workspaces[handle] = buffers
        return buffers

    def output_spec(self, index: int, label: str) -> ArraySpec:
        """The spec of output `index` as `label`, with the layout the kernel writes."""
        _, shape, dtype = self.outputs[index]
        tma = self.kernel.num_inputs + index in self.through_tma
        return ArraySpec(label, dtype, shape, role="output", layout="tma" if tma else "contiguous")

    def prepare(
        self,
        key: tuple[Any, ...],
        handle: int,
        inputs: Sequence[Any],
        frames: Sequence[Frame],
        outputs: Sequence[Any],
        out_frames: Sequence[Frame],
        given: Sequence[bool],
    ) -> PreparedLaunch:
        """Check the arrays of a new key, bind them, and keep the launch."""
        where = self.where
        ordinal = DEVICE
        views: list[tuple[str, DeviceArray]] = []
        for (name, _, _), value, frame, entry in zip(
            self.inputs, inputs, frames, key[1:], strict=False
        ):
            device = entry[4]
            if device != ordinal:
                raise LaunchError(
                    f"{where}: input {name!r} is on CUDA device {device}; mmcomp runs on "
                    f"device {ordinal}"
                )
            views.append((f"input {name!r}", frame.view(value, name)))
        out_views: list[tuple[str, DeviceArray]] = []
        offset = 1 + len(self.inputs)
        for index, (value, frame, passed) in enumerate(
            zip(outputs, out_frames, given, strict=True)
        ):
            label = f"out[{index}]" if passed else f"output {index}"
            device = key[offset + index][4]
            if device != ordinal:
                raise LaunchError(
                    f"{where}: {label}: expected an array on CUDA device {ordinal} (where the "
                    f"inputs are), found {frame.describe(value)} on "
                    + ("the host" if device == HOST else f"device {device}")
                )
            view = frame.view(value, label)
            spec = self.output_spec(index, label)
            try:
                check_dtype_and_shape(spec, view.dtype, view.shape)
                check_layout(spec, view.ptr, view.strides, "the array's")
            except LaunchError as error:
                raise LaunchError(f"{where}: {error}") from None
            out_views.append((label, view))
        check_aliasing(where, views, out_views)
        ensure_context()
        workspaces = self.workspace(handle) if self.workspace_specs else []
        arrays = [view for _, view in views] + [view for _, view in out_views] + workspaces
        try:
            with relaxed_capture():  # loading the module, staging buffers: not captured
                self.kernel.function()
                bound = self.kernel.bind(arrays)
        except LaunchError as error:
            message = str(error)
            raise LaunchError(
                message if message.startswith(where) else f"{where}: {message}"
            ) from None
        counters = None
        if workspaces:
            arrivals = workspaces[-1]
            counters = (arrivals.ptr, arrivals.size)
        poison = [region for _, view in out_views if (region := poison_region(view))]
        prepared = PreparedLaunch(bound, self.cu_stream(handle), counters, poison)
        with self.lock:
            if len(self.launches) >= LAUNCH_CACHE_SIZE:
                self.launches.pop(next(iter(self.launches)))
            self.launches[key] = prepared
        return prepared


# ----------------------------------------------------------------------------------------
# The call
# ----------------------------------------------------------------------------------------


def call(
    kernel: CudaKernel,
    inputs: Sequence[Any],
    out: Any = None,
    stream: Any = None,
    check: bool | None = None,
) -> tuple[Any, ...]:
    """Run `kernel` on its inputs (in kernel input order); see the module docstring. A
    kernel with runtime extents runs specialized for those of the inputs."""
    if check is not None:
        check_flag(f"kernel @{kernel.plan.entry}", check)
    if kernel.plan.dynamic:
        where = f"kernel @{kernel.plan.entry}"
        names = [array.name for array in kernel.plan.arrays if array.role == "input"]
        if len(inputs) != len(names):
            raise LaunchError(f"{where}: expected {len(names)} inputs {names}, found {len(inputs)}")
        shapes = [shape_of(where, name, array) for name, array in zip(names, inputs, strict=True)]
        kernel = kernel.specialized(kernel.runtime_extents(shapes))
    state = kernel.call_state()
    if kernel.plan.grid == 0:
        return _empty_call(state, inputs, out)
    if out is None and stream is None and not check and not CHECK_DEFAULT:
        outputs = state.fast(inputs)
        if outputs is not None:
            return outputs
    return _call(state, inputs, out, stream, check)


def _call(
    state: CallState, inputs: Sequence[Any], out: Any, stream: Any, check: bool | None
) -> tuple[Any, ...]:
    """The call with every check (see `call`)."""
    if len(inputs) != len(state.inputs):
        raise LaunchError(
            f"{state.where}: expected {len(state.inputs)} inputs "
            f"{[name for name, _, _ in state.inputs]}, found {len(inputs)}"
        )
    frames: list[Frame] = []
    keys: list[tuple[Any, ...]] = []
    value: object
    for (name, _, _), value in zip(state.inputs, inputs, strict=True):
        frame = frame_of(value)
        frames.append(frame)
        keys.append(key_of(frame, value, f"{state.where}: input {name!r}"))
    host = [entry[4] == HOST for entry in keys]
    if all(host):
        return _host_call(state, inputs, frames, out, stream)
    if any(host):
        first_host = host.index(True)
        first_device = host.index(False)
        raise LaunchError(
            f"{state.where}: inputs mix host and device arrays: input "
            f"{state.inputs[first_host][0]!r} is {frames[first_host].describe(inputs[first_host])}"
            f", input {state.inputs[first_device][0]!r} "
            f"{frames[first_device].describe(inputs[first_device])}; put them all on the GPU "
            "(or all on the host)"
        )
    frame, like = frames[0], inputs[0]
    handle = frame.stream(like) if stream is None else stream_value(stream, state.where)
    shapes = state.outputs
    if out is None:
        outputs = [frame.empty(like, shape, dtype) for _, shape, dtype in shapes]
        out_frames = [frame_of(value) for value in outputs]
        given = [False] * len(outputs)
    else:
        entries = out_entries(state.where, out, state.output_names)
        given = [entry is not None for entry in entries]
        outputs = [
            frame.empty(like, shape, dtype) if entry is None else entry
            for entry, (_, shape, dtype) in zip(entries, shapes, strict=True)
        ]
        out_frames = [frame_of(value) for value in outputs]
        for index, (entry, found) in enumerate(zip(entries, out_frames, strict=True)):
            refused = None if entry is None else found.unwritable(entry)
            if refused is not None:
                raise LaunchError(f"{state.where}: out[{index}]: {refused}")
    out_keys = [
        key_of(f, value, f"{state.where}: out[{index}]")
        for index, (f, value) in enumerate(zip(out_frames, outputs, strict=True))
    ]
    key = (handle, *keys, *out_keys)
    prepared = state.launches.get(key)
    debug = CHECK_DEFAULT if check is None else bool(check)
    if prepared is None:
        prepared = state.prepare(key, handle, inputs, frames, outputs, out_frames, given)
        if debug:
            prepared.poison()
        with relaxed_capture():  # the first launch queries the kernel and the occupancy
            prepared.launch()
    else:
        ensure_context()
        if debug:
            prepared.poison()
        prepared.launch()
    if out is None:
        state.remember(frame, key, prepared)
    elif isinstance(out, tuple | list) and all(given):
        state.remember_out(frame, key, prepared, [*frames, *out_frames])
    if debug and not is_capturing(prepared.stream):
        _synchronize(state, prepared.stream)
    return tuple(outputs)


def _empty_call(state: CallState, inputs: Sequence[Any], out: Any) -> tuple[Any, ...]:
    """A call at a runtime extent of 0: empty outputs (or the `out=` entries, checked),
    no launch."""
    frame = frame_of(inputs[0])
    like = inputs[0]
    host = key_of(frame, like, f"{state.where}: input {state.inputs[0][0]!r}")[4] == HOST
    entries = (
        [None] * len(state.outputs)
        if out is None
        else out_entries(state.where, out, state.output_names)
    )
    results: list[Any] = []
    for index, (entry, (_, shape, dtype)) in enumerate(zip(entries, state.outputs, strict=True)):
        if entry is not None:
            found = frame_of(entry)
            key_of(found, entry, f"{state.where}: out[{index}]")
            view = found.to_numpy(entry) if host else as_device_array(entry, f"out[{index}]")
            assert view is not None
            spec = ArraySpec(f"out[{index}]", dtype, shape, role="output")
            check_dtype_and_shape(spec, view.dtype, view.shape, state.where)
            results.append(entry)
            continue
        empty = np.empty(shape, dtype)
        results.append(frame.from_numpy(empty, like) if host else frame.empty(like, shape, dtype))
    return tuple(results)


def _synchronize(state: CallState, stream: Any) -> None:
    """Wait for the stream; a fault of the launch becomes a CudaError naming the kernel."""
    check_result(
        driver_api().cuStreamSynchronize(stream),
        f"{state.where}: waiting for the launch (debug mode)",
    )


def _host_call(
    state: CallState, inputs: Sequence[Any], frames: Sequence[Frame], out: Any, stream: Any
) -> tuple[Any, ...]:
    """Copy host inputs in, launch, synchronize, copy the outputs back (poisoned first)."""
    where = state.where
    handle = 0 if stream is None else stream_value(stream, where)
    kernel = state.kernel
    host: list[np.ndarray] = []
    for (name, shape, dtype), value, frame in zip(state.inputs, inputs, frames, strict=True):
        array = frame.to_numpy(value)
        spec = ArraySpec(name, dtype, shape)
        check_dtype_and_shape(spec, array.dtype, array.shape, where)
        host.append(array)
    types = [(shape, dtype) for _, shape, dtype in state.outputs]
    pairs = [(name, array) for (name, _, _), array in zip(state.inputs, host, strict=True)]
    entries, targets = host_targets(where, out, state.output_names, types, pairs)
    kernel.function()  # after the checks: a machine without a GPU says so here
    device_inputs = [DeviceBuffer.from_host(array) for array in host]
    device_outputs = [DeviceBuffer(shape, dtype) for _, shape, dtype in state.outputs]
    for buffer in device_outputs:
        buffer.fill_bytes(POISON_BYTE)
    workspaces = state.workspace(handle) if state.workspace_specs else []
    bound = kernel.bind([*device_inputs, *device_outputs, *workspaces])
    cu_stream = state.cu_stream(handle)
    counters = None
    if workspaces:
        counters = (workspaces[-1].ptr, workspaces[-1].size)
    PreparedLaunch(bound, cu_stream, counters, []).launch()
    _synchronize(state, cu_stream)
    results: list[Any] = []
    like = inputs[0]
    first = frames[0]
    for index, (buffer, target) in enumerate(zip(device_outputs, targets, strict=True)):
        if target is not None:
            buffer.copy_to_host(target)
            results.append(entries[index])
            continue
        results.append(first.from_numpy(buffer.to_host(), like))
    for buffer in (*device_inputs, *device_outputs):
        buffer.free()
    return tuple(results)


def host_targets(
    where: str,
    out: Any,
    names: Sequence[str],
    types: Sequence[tuple[tuple[int, ...], np.dtype]],
    inputs: Sequence[tuple[str, np.ndarray]],
) -> tuple[list[Any], list[np.ndarray | None]]:
    """The `out=` entries of a host call and numpy views of them (None where an output is
    allocated), each checked before anything runs: a host array of its output's (shape,
    dtype) in `types`, writable, sharing memory with no input (`inputs`, (name, array)
    pairs) and no other entry."""
    if out is None:
        return [None] * len(names), [None] * len(names)
    entries = out_entries(where, out, names)
    taken = [(f"input {name!r}", array) for name, array in inputs]
    targets: list[np.ndarray | None] = []
    for index, entry in enumerate(entries):
        if entry is None:
            targets.append(None)
            continue
        label = f"out[{index}]"
        frame = frame_of(entry)
        key = key_of(frame, entry, f"{where}: {label}")
        if key[4] != HOST:
            raise LaunchError(
                f"{where}: {label}: expected a host array (the inputs are on the host), "
                f"found {frame.describe(entry)} on CUDA device {key[4]}"
            )
        refused = frame.unwritable(entry)
        if refused is not None:
            raise LaunchError(f"{where}: {label}: {refused}")
        target = frame.to_numpy(entry)
        shape, dtype = types[index]
        spec = ArraySpec(label, dtype, shape, role="output")
        check_dtype_and_shape(spec, target.dtype, target.shape, where)
        if not target.flags.writeable:
            raise LaunchError(f"{where}: {label}: the array is read-only")
        for other, array in taken:
            if np.shares_memory(target, array):
                raise LaunchError(
                    f"{where}: {label} shares memory with {other}; an output must not alias "
                    "an input or another output (pass a separate array)"
                )
        taken.append((label, target))
        targets.append(target)
    return entries, targets


def host_outputs(
    first: Frame,
    like: Any,
    results: Sequence[np.ndarray],
    entries: Sequence[Any],
    targets: Sequence[np.ndarray | None],
) -> tuple[Any, ...]:
    """The outputs of a host-only back end (interp): each result written to its `out=`
    entry (checked by `host_targets`), else returned as the first input's kind (`first`,
    `like`)."""
    returned: list[Any] = []
    for entry, target, result in zip(entries, targets, results, strict=True):
        if target is None:
            returned.append(first.from_numpy(np.asarray(result), like))
            continue
        np.copyto(target, result)
        returned.append(entry)
    return tuple(returned)


def check_flag(where: str, check: object) -> None:
    """LaunchError unless the call's `check=` is None or a bool."""
    if check is None or isinstance(check, bool | np.bool_):
        return
    raise LaunchError(
        f"{where}: argument 'check': expected True, False or None, found {type(check).__name__}"
    )


def host_inputs(
    where: str, names: Sequence[str], inputs: Sequence[Any]
) -> tuple[list[Frame], list[np.ndarray]]:
    """The frames of host inputs and numpy views of them; LaunchError for device arrays."""
    frames: list[Frame] = []
    arrays: list[np.ndarray] = []
    for name, value in zip(names, inputs, strict=True):
        frame = frame_of(value)
        key = key_of(frame, value, f"{where}: input {name!r}")
        if key[4] != HOST:
            raise LaunchError(
                f"{where}: input {name!r}: expected a host array (numpy or CPU torch), found "
                f"{frame.describe(value)}; the interp back end runs on the CPU"
            )
        frames.append(frame)
        arrays.append(frame.to_numpy(value))
    return frames, arrays


def shape_of(where: str, name: str, array: Any) -> tuple[int, ...]:
    """The shape of input `name` (an array of any kind), to read the runtime extents."""
    shape = getattr(array, "shape", None)
    if shape is None:
        raise LaunchError(
            f"{where}: input {name!r}: expected an array (numpy, torch, cupy or a DLPack / "
            f"__cuda_array_interface__ array), found {type(array).__name__}"
        )
    return tuple(int(extent) for extent in shape)
