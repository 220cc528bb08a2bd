"""Timing candidates on the GPU: interleaved rounds over rotating copies of the inputs,
each candidate's output checked against the reference first (`DeviceTimer`), and the
random inputs and error measures it uses."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mmcomp.backend.compiled import Kernel
from mmcomp.errors import FusionError

if TYPE_CHECKING:
    from mmcomp.backend.call import PreparedLaunch
    from mmcomp.frontend.builder import Fusion

BATCH = 10
"""Launches queued back to back between two CUDA events."""

BATCHES = 5
"""Batches per candidate per round (the round's figure: their median)."""

L2_BYTES = 50 * 1024 * 1024
"""The H200's L2: input sets smaller than it are copied, and launches rotate over them."""

MAX_INPUT_SETS = 8
"""Copies of the inputs at most, for the rotation."""

TOLERANCE = {"bf16": 1e-2, "f16": 1e-2, "f32": 1e-3}
"""Largest relative error (max |got - want| / max |want|) per output dtype; others 1e-2."""


class Timer(Protocol):
    """What runs the candidates: checks each against the reference and times them."""

    def device(self) -> str:
        """The device and driver (part of the cache key)."""
        ...

    def check(self, kernel: Kernel) -> str | None:
        """None when the kernel's outputs match the reference; else what is wrong."""
        ...

    def round(self, kernels: Sequence[Kernel]) -> list[float]:
        """Milliseconds per launch of each kernel, timed one after the other in this order."""
        ...

    def close(self) -> None:
        """Release what the timer holds (device buffers)."""
        ...


def device_identity() -> str:
    """The device's name and driver version (cuDriverGetVersion): 'NVIDIA H200; driver 13000'."""
    from mmcomp.runtime import device_info

    info = device_info()
    return f"{info.name}; driver {info.driver_version}"


CHUNK = 1 << 18
"""Elements compared at a time (the float32 temporaries stay in the CPU's caches)."""


def relative_error(got: np.ndarray, want: np.ndarray, scale: float | None = None) -> float:
    """max |got - want| / max |want| (inf where got has NaN or inf); `scale` is
    max |want| where already known."""
    if scale is None:
        scale = abs_max(want)
    flat_got = np.ascontiguousarray(got).reshape(-1)
    flat_want = np.ascontiguousarray(want).reshape(-1)
    worst = 0.0
    for begin in range(0, flat_got.size, CHUNK):
        end = begin + CHUNK
        difference = np.abs(_float32(flat_got[begin:end]) - _float32(flat_want[begin:end]))
        largest = float(np.max(difference, initial=0.0))
        if not math.isfinite(largest):  # NaN propagates through max, inf stays inf
            return math.inf
        worst = max(worst, largest)
    return worst / max(scale, 1e-30)


def abs_max(array: np.ndarray) -> float:
    """max |array| (0 for an empty one)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    largest = 0.0
    for begin in range(0, flat.size, CHUNK):
        chunk = np.abs(_float32(flat[begin : begin + CHUNK]))
        largest = max(largest, float(np.max(chunk, initial=0.0)))
    return largest


def _float32(array: np.ndarray) -> np.ndarray:
    """The array as float32 (bfloat16 widened by its bits, which is exact and fast)."""
    if array.dtype.name == "bfloat16":
        bits = np.ascontiguousarray(array).view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return np.asarray(array, dtype=np.float32)


def _host_copy(view: Any, name: str) -> np.ndarray:
    """A host copy of a contiguous device array (mmcomp.runtime.DeviceArray)."""
    from mmcomp.runtime.driver import check, driver_api

    if not view.is_c_contiguous:
        raise FusionError(
            f"autotune: input {name!r}: expected a contiguous device array (or a host array), "
            f"found strides {view.strides}"
        )
    host = np.empty(view.shape, view.dtype)
    if host.nbytes:
        check(
            driver_api().cuMemcpyDtoH(host.ctypes.data, view.ptr, host.nbytes),
            f"copying input {name!r} to the host",
        )
    return host


def random_inputs(fusion: Fusion, m: int | None = None) -> list[np.ndarray]:
    """Standard normal inputs of the fusion's shapes and dtypes (a dynamic M: `m`, 1 where
    none is given; another dynamic axis: 1)."""
    from mmcomp.analysis.roles import dynamic_input_roles

    rng = np.random.default_rng()
    roles = dynamic_input_roles(fusion)
    arrays: list[np.ndarray] = []
    for index, value in enumerate(fusion.inputs):
        shape = [
            ((m or 1) if roles is not None and roles[index][axis] == "m" else 1)
            if axis in value.dynamic_axes
            else extent
            for axis, extent in enumerate(value.shape)
        ]
        data = rng.standard_normal(shape, dtype=np.float32)
        arrays.append(data.astype(value.numpy_dtype))
    return arrays


class DeviceTimer:
    """Runs kernels of one fusion on the GPU: the inputs (with copies to rotate past L2),
    the reference outputs, and CUDA-event timing on a stream of its own."""

    def __init__(self, fusion: Fusion, arrays: Sequence[Any]):
        """Inputs from `arrays` (in fusion input order; host or device); the reference is
        computed at the first check."""
        from mmcomp.runtime import DeviceBuffer, Stream, as_device_array, synchronize
        from mmcomp.runtime.stream import stream_handle

        synchronize()  # device inputs written on the caller's streams are complete
        self.fusion = fusion
        """The fusion whose kernels are timed."""
        self.host: list[np.ndarray] = []
        """The first input set on the host (the reference's inputs)."""
        first: list[Any] = []
        for value, array in zip(fusion.inputs, arrays, strict=True):
            name = value.name or "input"
            view = as_device_array(array, name)
            if view is None:
                host = np.ascontiguousarray(np.asarray(array))
                first.append(DeviceBuffer.from_host(host))
            else:
                host = _host_copy(view, name)
                first.append(view)
            self.host.append(host)
        per_set = sum(array.nbytes for array in self.host)
        copies = min(MAX_INPUT_SETS, -(-2 * L2_BYTES // max(per_set, 1)))
        copies = copies if per_set < L2_BYTES else 1
        self.sets: list[list[Any]] = [first]
        """The input sets the launches rotate over (device arrays, in input order)."""
        for _ in range(copies - 1):
            self.sets.append([DeviceBuffer.from_host(array) for array in self.host])
        self._stream = Stream()
        self._handle = stream_handle(self._stream)
        self._reference: tuple[np.ndarray, ...] | None = None
        self._scales: list[float] = []
        self._passed: list[tuple[np.ndarray, float] | None] = []
        self._launches: dict[int, tuple[list[PreparedLaunch], list[list[Any]]]] = {}

    def device(self) -> str:
        """The device and driver."""
        return device_identity()

    def reference(self) -> tuple[np.ndarray, ...]:
        """The reference interpreter's outputs on the first input set (float32 sums)."""
        if self._reference is None:
            from mmcomp.interp.reference import reference

            self._reference = reference(self.fusion, *self.host, accumulate=np.float32)
            self._scales = [abs_max(np.asarray(want)) for want in self._reference]
            self._passed = [None for _ in self._reference]
        return self._reference

    def _prepared(self, kernel: Kernel) -> tuple[list[PreparedLaunch], list[list[Any]]]:
        """The kernel's launches on each input set, and their output and workspace buffers."""
        from mmcomp.backend.call import PreparedLaunch
        from mmcomp.runtime import synchronize

        found = self._launches.get(id(kernel))
        if found is not None:
            return found
        device = kernel.device_kernel
        if device.plan.dynamic:  # the plan at the inputs' extents (the same PTX and module)
            shapes = [tuple(int(e) for e in array.shape) for array in self.sets[0]]
            device = device.specialized(device.runtime_extents(shapes))
        launches: list[PreparedLaunch] = []
        buffers: list[list[Any]] = []
        for inputs in self.sets:
            extra = device.allocate_outputs()
            counters = None
            if len(extra) > device.num_outputs:  # split-K: the tile counters, zeroed per launch
                counters = (extra[-1].ptr, extra[-1].size)
            bound = device.bind([*inputs, *extra])
            launches.append(PreparedLaunch(bound, self._handle, counters, []))
            buffers.append(extra)
        synchronize()  # the outputs' poison (written on the default stream) is in place
        self._launches[id(kernel)] = (launches, buffers)
        return launches, buffers

    def check(self, kernel: Kernel) -> str | None:
        """Launch on the first set into poisoned outputs; compare each with the reference."""
        from mmcomp.backend.kernel import POISON_BYTE
        from mmcomp.runtime import synchronize

        launches, buffers = self._prepared(kernel)
        outputs = buffers[0][: kernel.device_kernel.num_outputs]
        self._stream.synchronize()
        for buffer in outputs:
            buffer.fill_bytes(POISON_BYTE)
        synchronize()
        launches[0].launch()
        self._stream.synchronize()
        for index, (buffer, want) in enumerate(zip(outputs, self.reference(), strict=True)):
            got = buffer.to_host()
            passed = self._passed[index]
            if passed is not None and np.array_equal(got.view(np.uint8), passed[0]):
                continue  # the bits of an output that passed: the same error
            dtype = self.fusion.outputs[index].dtype
            error = relative_error(got, np.asarray(want), self._scales[index])
            tolerance = TOLERANCE.get(dtype, 1e-2)
            if not error < tolerance:
                return f"output {index}: relative error {error:.3g} (tolerance {tolerance:g})"
            if passed is None:
                self._passed[index] = (got.view(np.uint8), error)
        return None

    def round(self, kernels: Sequence[Kernel]) -> list[float]:
        """Each kernel: BATCHES batches of BATCH launches between two events (rotating over
        the input sets), after two warm-up launches; the median per launch, in order."""
        from mmcomp.runtime import Event

        times: list[float] = []
        for kernel in kernels:
            launches, _ = self._prepared(kernel)
            turn = 0
            for _ in range(2):
                launches[turn % len(launches)].launch()
                turn += 1
            batches: list[float] = []
            for _ in range(BATCHES):
                start, end = Event(), Event()
                start.record(self._stream)
                for _ in range(BATCH):
                    launches[turn % len(launches)].launch()
                    turn += 1
                end.record(self._stream)
                end.synchronize()
                batches.append(start.elapsed_ms(end) / BATCH)
            times.append(statistics.median(batches))
        return times

    def close(self) -> None:
        """Wait for the stream and drop the buffers."""
        self._stream.synchronize()
        self._launches.clear()
        self.sets = []
