"""How mmcomp's public call reads and allocates torch tensors (the torch frame)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mmcomp.backend.frames import HOST, Frame, UnreadableArray
from mmcomp.errors import LaunchError
from mmcomp.ir import dtypes
from mmcomp.runtime.arrays import BFLOAT16, DeviceArray

torch: Any = importlib.import_module("torch")
"""torch (imported by name: this module is itself called torch)."""
nn: Any = torch.nn

TORCH_DTYPES: dict[Any, np.dtype] = {
    **{getattr(torch, dtype.long_name): dtype.numpy_dtype for dtype in dtypes.DTYPES},
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.uint8: np.dtype(np.uint8),
    torch.bool: np.dtype(np.bool_),
}
"""The numpy dtype of each torch dtype mmcomp reads."""

NUMPY_DTYPES: dict[np.dtype, Any] = {value: key for key, value in TORCH_DTYPES.items()}
"""The torch dtype of each numpy dtype."""

BIT_VIEWS: dict[Any, Any] = {torch.float8_e4m3fn: torch.uint8, torch.float8_e5m2: torch.uint8}
"""The torch dtypes that torch.Tensor.numpy() refuses (fp8), each with the integer dtype whose
bits it is read and written as."""

FUSION_DTYPES: dict[Any, str] = {
    getattr(torch, dtype.long_name): dtype.name for dtype in dtypes.FUSION_DTYPES
}
"""The fusion dtype of each torch dtype a module may hold."""


STRIDED: Any = torch.strided
"""The layout of a dense tensor, the only one mmcomp reads."""


def _unreadable(tensor: Any) -> str:
    """What is expected of a tensor the call cannot read, and what `tensor` is."""
    layout = str(tensor.layout).removeprefix("torch.")
    found = f"a {layout} tensor" if tensor.layout is not STRIDED else "a tensor"
    return (
        "expected a dense (strided) torch tensor on the CPU or a CUDA device, found "
        f"{found} on device '{tensor.device}'"
    )


def _raw_stream() -> Callable[[int], int]:
    """The fastest reader of torch's current stream handle on a device."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda device: torch.cuda.current_stream(device).cuda_stream


def _no_launch() -> None:
    """The relaunch of no launch (the fast path's last hit before the first one)."""


class TorchArrays(Frame):
    """How the public call treats torch tensors (CPU ones as host arrays)."""

    name = "torch"

    def __init__(self):
        self._stream = _raw_stream()

    def key(self, value: Any) -> tuple[Any, ...]:
        device = value.get_device()
        try:
            key = (value.data_ptr(), value.shape, value.stride(), value.dtype, device)
        except RuntimeError:  # sparse, mkldnn, nested: no strided storage to read
            raise UnreadableArray(_unreadable(value)) from None
        if device == HOST and (not value.is_cpu or value.layout is not STRIDED):
            raise UnreadableArray(_unreadable(value))
        return key

    def pointer(self, value: Any) -> int:
        return value.data_ptr()

    def numpy_dtype(self, value: Any, name: str) -> np.dtype:
        """The numpy dtype of a tensor; LaunchError for one mmcomp does not read."""
        dtype = TORCH_DTYPES.get(value.dtype)
        if dtype is None:
            raise LaunchError(f"{name}: unsupported torch dtype {value.dtype}")
        return dtype

    def view(self, value: Any, name: str) -> DeviceArray:
        if not value.is_cuda or value.layout is not STRIDED:
            raise LaunchError(f"{name}: {_unreadable(value)}")
        dtype = self.numpy_dtype(value, name)
        strides = tuple(stride * dtype.itemsize for stride in value.stride())
        return DeviceArray(value.data_ptr(), tuple(value.shape), dtype, strides)

    def device_view(self, value: Any, name: str) -> DeviceArray | None:
        """A DeviceArray over a CUDA tensor that keeps it alive; None for a CPU tensor."""
        device = value.get_device()
        if device == HOST:
            return None
        from mmcomp.runtime.device import ensure_context

        ordinal = ensure_context().info.ordinal
        if device != ordinal:
            raise LaunchError(
                f"argument {name!r}: expected a tensor on cuda:{ordinal}, found cuda:{device}"
            )
        view = self.view(value, name)
        view.owner = value
        return view

    def to_numpy(self, value: Any) -> np.ndarray:
        tensor = value.detach()
        if tensor.dtype == torch.bfloat16:
            return tensor.view(torch.int16).numpy().view(BFLOAT16)
        dtype = self.numpy_dtype(tensor, "tensor")
        if tensor.dtype in BIT_VIEWS:  # numpy has no torch fp8: the bytes, as ml_dtypes'
            return tensor.view(BIT_VIEWS[tensor.dtype]).numpy().view(dtype)
        return tensor.numpy()

    def from_numpy(self, array: np.ndarray, like: Any) -> Any:
        if array.dtype == BFLOAT16:
            return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
        torch_dtype = NUMPY_DTYPES.get(array.dtype)
        if torch_dtype in BIT_VIEWS:
            return torch.from_numpy(array.view(np.uint8)).view(torch_dtype)
        return torch.from_numpy(array)

    def empty(self, like: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return like.new_empty(shape, dtype=NUMPY_DTYPES[dtype])

    def stream(self, like: Any) -> int:
        return self._stream(like.get_device())

    def describe(self, value: Any) -> str:
        device = value.get_device()
        return "a CPU torch tensor" if device == HOST else f"a CUDA torch tensor (cuda:{device})"

    def unwritable(self, value: Any) -> str | None:
        if not value.requires_grad or not torch.is_grad_enabled():
            return None
        return (
            "the tensor requires grad, and an out= entry is written in place outside autograd "
            "(torch's own out= functions refuse it too); pass one that does not require grad, "
            "or call under torch.no_grad()"
        )

    def fast_call(
        self,
        count: int,
        outputs: Sequence[tuple[tuple[int, ...], np.dtype]],
        launches: Mapping[tuple[Any, ...], Callable[[], None]],
    ) -> Callable[[Sequence[Any]], tuple[Any, ...] | None]:
        """Frame.fast_call for CUDA tensors, each tensor's key read in place (no call per
        tensor), the output allocated with its torch dtype resolved once, and the last hit
        compared first."""
        raw_stream = self._stream
        made_types = [(shape, NUMPY_DTYPES[dtype]) for shape, dtype in outputs]
        get = launches.get
        # The last hit, (its key as a list, its relaunch), replaced as one tuple: comparing
        # two lists costs less than building, hashing and looking up the key's tuple.
        last: list[tuple[list[Any] | None, Callable[[], None]]] = [(None, _no_launch)]

        if len(made_types) != 1:

            def fast(inputs: Sequence[Any]) -> tuple[Any, ...] | None:
                if len(inputs) != count:
                    return None
                like = inputs[0]
                try:
                    device = like.get_device()
                    if device < 0:
                        return None
                    key: list[Any] = [raw_stream(device)]
                    for tensor in inputs:
                        key += (
                            tensor.data_ptr(),
                            tensor.shape,
                            tensor.stride(),
                            tensor.dtype,
                            tensor.get_device(),
                        )
                    made = [like.new_empty(shape, dtype=dtype) for shape, dtype in made_types]
                except (AttributeError, TypeError, RuntimeError):  # the full call says why
                    return None
                for tensor in made:
                    key.append(tensor.data_ptr())
                last_key, relaunch = last[0]
                if key != last_key:
                    relaunch = get(tuple(key))
                    if relaunch is None:
                        return None
                    last[0] = (key, relaunch)
                relaunch()
                return tuple(made)

            return fast
        ((shape, dtype),) = made_types

        def fast_one(inputs: Sequence[Any]) -> tuple[Any, ...] | None:
            if len(inputs) != count:
                return None
            like = inputs[0]
            try:
                device = like.get_device()
                if device < 0:
                    return None
                key: list[Any] = [raw_stream(device)]
                for tensor in inputs:
                    key += (
                        tensor.data_ptr(),
                        tensor.shape,
                        tensor.stride(),
                        tensor.dtype,
                        tensor.get_device(),
                    )
                made = like.new_empty(shape, dtype=dtype)
            except (AttributeError, TypeError, RuntimeError):  # the full call says why
                return None
            key.append(made.data_ptr())
            last_key, relaunch = last[0]
            if key != last_key:
                relaunch = get(tuple(key))
                if relaunch is None:
                    return None
                last[0] = (key, relaunch)
            relaunch()
            return (made,)

        return fast_one


ARRAYS = TorchArrays()
"""The torch frame of mmcomp.backend.call."""
