"""The frameworks whose arrays the public call takes: how it reads, allocates and finds
the stream of each (numpy, mmcomp's device arrays, cupy, torch through mmcomp.torch, and
any `__cuda_array_interface__` or `__dlpack__` array).

Each array's key (pointer, shape, strides, dtype, device) is what the call's launch cache
and its fast path compare; the device field is HOST for a host array.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mmcomp.errors import LaunchError
from mmcomp.runtime.arrays import DeviceArray, DeviceBuffer, as_device_array
from mmcomp.runtime.device import DEVICE

HOST = -1
"""The device field of a host array's key."""


class UnreadableArray(TypeError):
    """`Frame.key` of an array of the framework that the call cannot read; the message
    says what it is and what is expected."""


# ----------------------------------------------------------------------------------------
# Frameworks
# ----------------------------------------------------------------------------------------


class Frame:
    """How the call reads, allocates and finds the stream of one framework's arrays.

    `key(value)` is what the launch cache is keyed by: (pointer, shape, strides, dtype,
    device), in the framework's own terms (device HOST for a host array).
    """

    name = "array"
    """The framework's name, for messages."""

    def key(self, value: Any) -> tuple[Any, ...]:
        """(pointer, shape, strides, dtype, device) of `value`."""
        raise NotImplementedError

    def pointer(self, value: Any) -> int:
        """The device address of `value` (the first field of its key)."""
        return self.key(value)[0]

    def view(self, value: Any, name: str) -> DeviceArray:
        """A DeviceArray over a device array's memory that keeps nothing alive."""
        raise NotImplementedError

    def to_numpy(self, value: Any) -> np.ndarray:
        """A numpy array sharing a host array's memory."""
        raise NotImplementedError

    def from_numpy(self, array: np.ndarray, like: Any) -> Any:
        """A host output of this framework holding `array`."""
        return array

    def empty(self, like: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """A new device array of this framework on the device of `like`."""
        return DeviceBuffer(shape, dtype)

    def stream(self, like: Any) -> int:
        """The handle of the framework's current stream for `like`'s device."""
        return 0

    def describe(self, value: Any) -> str:
        """What `value` is, in a few words."""
        return type(value).__name__

    def unwritable(self, value: Any) -> str | None:
        """Why `value` may not be written in place as an `out=` entry; None where it may."""
        return None

    def fast_call(
        self,
        count: int,
        outputs: Sequence[tuple[tuple[int, ...], np.dtype]],
        launches: Mapping[tuple[Any, ...], Callable[[], None]],
    ) -> Callable[[Sequence[Any]], tuple[Any, ...] | None]:
        """The call's fast path for `count` device arrays of this frame: new outputs of
        `outputs` (shape, dtype), and the launch of `launches` whose flat key (the stream,
        each input's key fields, each output's pointer) the call has; None where there is
        none, or where the arrays are not this frame's device arrays."""
        key_of, empty, stream_of, pointer = self.key, self.empty, self.stream, self.pointer

        def fast(inputs: Sequence[Any]) -> tuple[Any, ...] | None:
            if len(inputs) != count:
                return None
            like = inputs[0]
            try:
                key: list[Any] = []
                for value in inputs:
                    key += key_of(value)
                if key[4] == HOST:
                    return None
                made = [empty(like, shape, dtype) for shape, dtype in outputs]
                key += [pointer(value) for value in made]
                relaunch = launches.get((stream_of(like), *key))
            except Exception:  # not this frame's arrays: the full call says why
                return None
            if relaunch is None:
                return None
            relaunch()
            return tuple(made)

        return fast

    def fast_out_call(
        self, count: int, outputs: int, launches: Mapping[tuple[Any, ...], Callable[[], None]]
    ) -> Callable[[Sequence[Any], Sequence[Any]], tuple[Any, ...] | None]:
        """The fast path of a call with `out=` (a tuple or list of every output) for `count`
        device arrays of this frame: the launch of `launches` whose flat key (the stream,
        then each input's and each out entry's key fields) the call has, the out entries
        returned; None where there is none (the checks of a new key are the full call's)."""
        key_of, stream_of = self.key, self.stream

        def fast_out(inputs: Sequence[Any], out: Sequence[Any]) -> tuple[Any, ...] | None:
            if len(inputs) != count or len(out) != outputs:
                return None
            like = inputs[0]
            try:
                key: list[Any] = [stream_of(like)]
                for value in inputs:
                    key += key_of(value)
                if key[5] == HOST:
                    return None
                for value in out:
                    key += key_of(value)
                relaunch = launches.get(tuple(key))
            except Exception:  # not this frame's arrays: the full call says why
                return None
            if relaunch is None:
                return None
            relaunch()
            return tuple(out)

        return fast_out


class NumpyFrame(Frame):
    """numpy arrays: host arrays, copied in and out."""

    name = "numpy"

    def key(self, value: Any) -> tuple[Any, ...]:
        return (0, value.shape, value.strides, value.dtype, HOST)

    def to_numpy(self, value: Any) -> np.ndarray:
        return value

    def describe(self, value: Any) -> str:
        return "a host numpy array"


class MmcompFrame(Frame):
    """mmcomp's own DeviceArray / DeviceBuffer; outputs are DeviceBuffers."""

    name = "mmcomp"

    def key(self, value: Any) -> tuple[Any, ...]:
        return (value.ptr, value.shape, value.strides, value.dtype, DEVICE)

    def view(self, value: Any, name: str) -> DeviceArray:
        return DeviceArray(value.ptr, value.shape, value.dtype, value.strides)

    def describe(self, value: Any) -> str:
        return f"an mmcomp {type(value).__name__}"


class GenericFrame(Frame):
    """Anything with `__cuda_array_interface__` or `__dlpack__`; outputs are DeviceBuffers."""

    name = "device array"

    def key(self, value: Any) -> tuple[Any, ...]:
        view = as_device_array(value, "array")
        if view is not None:
            return (view.ptr, view.shape, view.strides, view.dtype, DEVICE)
        if hasattr(value, "__dlpack__"):
            host = np.from_dlpack(value)
            return (0, host.shape, host.strides, host.dtype, HOST)
        raise TypeError(type(value).__name__)

    def view(self, value: Any, name: str) -> DeviceArray:
        view = as_device_array(value, name)
        assert view is not None
        return DeviceArray(view.ptr, view.shape, view.dtype, view.strides)

    def to_numpy(self, value: Any) -> np.ndarray:
        return np.from_dlpack(value)

    def describe(self, value: Any) -> str:
        return f"a {type(value).__name__}"


class CupyFrame(Frame):
    """cupy arrays; outputs allocated by cupy on its current stream's device."""

    name = "cupy"

    def key(self, value: Any) -> tuple[Any, ...]:
        return (value.data.ptr, value.shape, value.strides, value.dtype, value.device.id)

    def view(self, value: Any, name: str) -> DeviceArray:
        return DeviceArray(value.data.ptr, value.shape, value.dtype, value.strides)

    def empty(self, like: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        cupy = importlib.import_module("cupy")
        try:
            return cupy.empty(shape, dtype)
        except (TypeError, ValueError):  # a dtype cupy lacks (bfloat16): an mmcomp buffer
            return DeviceBuffer(shape, dtype)

    def stream(self, like: Any) -> int:
        return int(importlib.import_module("cupy").cuda.get_current_stream().ptr)

    def describe(self, value: Any) -> str:
        return "a cupy array"


NUMPY = NumpyFrame()
MMCOMP = MmcompFrame()
GENERIC = GenericFrame()
CUPY = CupyFrame()

_FRAMES: dict[type, Frame] = {np.ndarray: NUMPY}
"""The frame of each array type seen so far."""


def frame_of(value: object) -> Frame:
    """The frame that handles `value`'s type."""
    cls = type(value)
    frame = _FRAMES.get(cls)
    if frame is not None:
        return frame
    top = cls.__module__.split(".", 1)[0]
    if issubclass(cls, np.ndarray):
        frame = NUMPY
    elif issubclass(cls, DeviceArray):
        frame = MMCOMP
    elif top == "torch" and hasattr(cls, "data_ptr"):
        frame = importlib.import_module("mmcomp.torch").ARRAYS
    elif top == "cupy" and hasattr(cls, "data") and hasattr(cls, "device"):
        frame = CUPY
    else:
        frame = GENERIC
    _FRAMES[cls] = frame
    return frame


def key_of(frame: Frame, value: Any, what: str) -> tuple[Any, ...]:
    """`frame.key(value)`, with a LaunchError naming `what` when it is not an array."""
    try:
        return frame.key(value)
    except UnreadableArray as error:
        raise LaunchError(f"{what}: {error}") from None
    except (TypeError, AttributeError):
        raise LaunchError(
            f"{what}: expected an array (numpy, torch, cupy, or an object with "
            f"__cuda_array_interface__ or __dlpack__), found {type(value).__name__}"
        ) from None
