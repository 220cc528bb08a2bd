"""The public call's contract on a machine without a GPU: argument order, out=, stream=,
and every misuse refused with an error naming the argument before any driver call.

Device arrays are stood in for by objects with `__cuda_array_interface__` (as cupy's);
checks run before the launch, so no GPU is needed. The launches themselves are in
test_call_gpu.py.
"""

from __future__ import annotations

import cases
import ml_dtypes
import numpy as np
import pytest

import mmcomp
from mmcomp.backend.arguments import RESERVED_KEYWORDS
from mmcomp.backend.frames import GenericFrame
from mmcomp.errors import FusionError, LaunchError
from mmcomp.runtime.stream import stream_value

BF16 = np.dtype(ml_dtypes.bfloat16)
INTERP = {"backend": "interp", "tile": (128, 128, 64)}


class FakeDeviceArray:
    """A device array by the CUDA array interface only (nothing is read or written)."""

    def __init__(self, shape, dtype, ptr=1 << 32, strides=None):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.__cuda_array_interface__ = {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (ptr, False),
            "strides": strides,
            "version": 3,
        }


def random(shape, dtype=BF16):
    return np.random.default_rng().standard_normal(shape).astype(np.float32).astype(dtype)


@pytest.fixture(scope="module")
def linear():
    """A cuda kernel of a linear (300x500x200, registers epilogue) and its interp twin."""
    fusion = cases.linear(300, 500, 200)
    return (
        mmcomp.compile(fusion, epilogue="registers", split_k=1),
        mmcomp.compile(fusion, **INTERP),
    )


def device_inputs(base=1 << 32):
    return [
        FakeDeviceArray((300, 200), BF16, base),
        FakeDeviceArray((500, 200), BF16, base + (1 << 24)),
    ]


def test_interp_out_is_written_in_place_and_returned(linear):
    _, kernel = linear
    a, w = random((300, 200)), random((500, 200))
    (want,) = kernel(a, w)
    for out in ([np.empty((300, 500), BF16)], (np.empty((300, 500), BF16),)):
        (got,) = kernel(a, w, out=out)
        assert got is out[0]
        np.testing.assert_array_equal(got, want)
    target = np.empty((300, 500), BF16)
    (got,) = kernel(a, w, out={"out0": target})
    assert got is target
    (got,) = kernel(w=w, a=a, out={0: target})
    np.testing.assert_array_equal(target, want)


def test_interp_out_misuse_names_the_argument(linear):
    _, kernel = linear
    a, w = random((300, 200)), random((500, 200))
    with pytest.raises(
        LaunchError, match=r"'out\[0\]': expected shape \[300, 500\], found \[300, 501\]"
    ):
        kernel(a, w, out=[np.empty((300, 501), BF16)])
    with pytest.raises(LaunchError, match=r"'out\[0\]': expected dtype bfloat16, found float32"):
        kernel(a, w, out=[np.empty((300, 500), np.float32)])
    with pytest.raises(LaunchError, match=r"out: expected 1 entries .* found 2"):
        kernel(a, w, out=[None, None])
    with pytest.raises(LaunchError, match=r"out: no output 'y'; the outputs are \['out0'\]"):
        kernel(a, w, out={"y": np.empty((300, 500), BF16)})
    with pytest.raises(LaunchError, match=r"out: expected a tuple or list .* found ndarray"):
        kernel(a, w, out=np.empty((300, 500), BF16))
    with pytest.raises(
        LaunchError, match=r"argument 'stream': the interp back end runs on the CPU"
    ):
        kernel(a, w, stream=0)
    with pytest.raises(LaunchError, match=r"input 'a': expected a host array .* interp back end"):
        kernel(device_inputs()[0], w)


def test_interp_out_aliasing_an_input_is_refused():
    f = mmcomp.Fusion("square")
    a = f.input("a", [128, 128], "bf16")
    w = f.input("w", [128, 128], "bf16")
    f.output(f.cast(f.linear(a, w), "bf16"))
    kernel = mmcomp.compile(f, **INTERP)
    x, y = random((128, 128)), random((128, 128))
    with pytest.raises(LaunchError, match=r"out\[0\] shares memory with input 'w'"):
        kernel(x, y, out=[y[:, :]])


def test_inputs_named_like_call_keywords_are_passed_by_position():
    f = mmcomp.Fusion("reserved")
    out = f.input("out", [128, 64], "bf16")
    w = f.input("stream", [64, 64], "bf16")
    f.output(f.cast(f.linear(out, w), "bf16"))
    kernel = mmcomp.compile(f, **INTERP)
    x, y = random((128, 64)), random((64, 64))
    (got,) = kernel(x, y)
    (want,) = mmcomp.reference(f, x, y)
    np.testing.assert_allclose(
        got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2
    )
    with pytest.raises(
        FusionError,
        match=r"missing inputs \['out', 'stream'\] \(an input named 'out' is passed by position",
    ):
        kernel(check=True)
    assert RESERVED_KEYWORDS == ("out", "stream", "check")


def test_host_and_device_inputs_mixed_are_refused(linear):
    kernel, _ = linear
    a, _ = device_inputs()
    with pytest.raises(
        LaunchError,
        match=r"inputs mix host and device arrays: input 'w' is a host numpy array, input "
        r"'a' a FakeDeviceArray",
    ):
        kernel(a, random((500, 200)))


def test_device_out_misuse_is_refused_before_the_launch(linear):
    kernel, _ = linear
    a, w = device_inputs()
    base = 1 << 36
    cases_ = [
        (
            FakeDeviceArray((300, 501), BF16, base),
            r"'out\[0\]': expected shape \[300, 500\], found \[300, 501\]",
        ),
        (
            FakeDeviceArray((300, 500), np.float32, base),
            r"'out\[0\]': expected dtype bfloat16, found float32",
        ),
        (
            FakeDeviceArray((300, 500), BF16, base, strides=(2048, 2)),
            r"'out\[0\]': expected a C-contiguous array, found the array's byte stride 2048 "
            r"on axis 0",
        ),
        (
            np.empty((300, 500), BF16),
            r"out\[0\]: expected an array on CUDA device 0 \(where the inputs are\), found a "
            r"host numpy array on the host",
        ),
        (
            FakeDeviceArray((300, 500), BF16, a.__cuda_array_interface__["data"][0] + 64),
            r"out\[0\] shares memory with input 'a'",
        ),
        ("buffer", r"out\[0\]: expected an array .* found str"),
    ]
    for out, message in cases_:
        with pytest.raises(LaunchError, match=message):
            kernel(a, w, out=(out,), stream=0)


def test_wrong_input_kinds_name_the_input(linear):
    kernel, _ = linear
    _, w = device_inputs()
    with pytest.raises(LaunchError, match=r"input 'a': expected an array .* found list"):
        kernel([[1.0]], w)
    with pytest.raises(FusionError, match=r"no input named 'b'; the inputs are \['a', 'w'\]"):
        kernel(a=w, b=w)


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        ("default", r"argument 'stream': expected a torch.cuda.Stream, .* found str"),
        (True, r"argument 'stream': expected a stream .* found bool"),
        (1.5, r"argument 'stream': expected a torch.cuda.Stream, .* found float"),
        (-1, r"argument 'stream': a negative handle -1"),
    ],
)
def test_a_stream_of_the_wrong_kind_is_refused(linear, stream, message):
    kernel, _ = linear
    with pytest.raises(LaunchError, match=message):
        stream_value(stream, "kernel @linear")
    with pytest.raises(LaunchError, match=message):
        kernel(*device_inputs(), stream=stream)


def test_stream_handles_are_taken_as_given():
    from cuda.bindings import driver

    class TorchLikeStream:
        cuda_stream = 0x1234
        device = None

    class CupyLikeStream:
        ptr = 0x5678

    CupyLikeStream.__module__ = "cupy.cuda.stream"
    assert stream_value(0, "k") == 0
    assert stream_value(np.uint64(7), "k") == 7
    assert stream_value(driver.CUstream(0x99), "k") == 0x99
    assert stream_value(TorchLikeStream(), "k") == 0x1234
    assert stream_value(CupyLikeStream(), "k") == 0x5678


def test_debug_poison_covers_exactly_the_elements():
    from mmcomp.backend.call import poison_region
    from mmcomp.runtime import DeviceArray

    base = 1 << 32
    assert poison_region(DeviceArray(base, (300, 500), BF16)) == (base, 300_000, 300_000, 1)
    strided = DeviceArray(base, (3, 300, 500), BF16, strides=(300 * 1024, 1024, 2))
    assert poison_region(strided) == (base, 1024, 1000, 900)  # rows at their pitch only
    gapped = DeviceArray(base, (3, 300, 500), BF16, strides=(400 * 1024, 1024, 2))
    assert poison_region(gapped) is None  # the gaps between slabs may be another array's
    assert poison_region(DeviceArray(base, (500, 300), BF16, strides=(2, 1000))) is None


def test_tensor_maps_over_strided_views_use_the_views_strides():
    """An out= or input that is a strided view (wide[:, :n]) is read and written at its own
    strides, not the compact ones of its shape."""
    from types import SimpleNamespace

    from mmcomp.runtime import DeviceArray
    from mmcomp.runtime.staging import array_strides

    operand = SimpleNamespace(arg=0, shape=(300, 200), byte_strides=(400, 2), axes=())
    assert array_strides(operand, DeviceArray(1 << 32, (300, 200), BF16)) == (400, 2)
    view = DeviceArray(1 << 32, (300, 200), BF16, strides=(1024, 2))
    assert array_strides(operand, view) == (1024, 2)
    lacking = SimpleNamespace(arg=0, shape=(1, 300, 200), byte_strides=(0, 400, 2), axes=(-1, 0, 1))
    assert array_strides(lacking, view) == (0, 1024, 2)


def test_host_inputs_are_checked_before_the_gpu_is_needed(linear):
    kernel, _ = linear
    a, w = random((300, 200)), random((500, 200))
    with pytest.raises(
        LaunchError, match=r"kernel @linear: argument 'w': expected shape \[500, 200\]"
    ):
        kernel(a, w.T.copy())
    with pytest.raises(LaunchError, match=r"argument 'out\[0\]': expected dtype bfloat16"):
        kernel(a, w, out=[np.empty((300, 500), np.float32)])
    with pytest.raises(
        LaunchError, match=r"out\[0\]: expected a host array .* found a FakeDeviceArray"
    ):
        kernel(a, w, out=[FakeDeviceArray((300, 500), BF16)])


class StubFrame(GenericFrame):
    """Device arrays by the CUDA array interface, on a chosen stream, whose new outputs are
    FakeDeviceArrays at chosen addresses (nothing is allocated)."""

    def __init__(self, stream: int, addresses: list[int]):
        self.handle = stream
        self.addresses = addresses

    def empty(self, like, shape, dtype):
        return FakeDeviceArray(shape, dtype, self.addresses.pop(0))

    def stream(self, like):
        return self.handle


def test_the_fast_path_finds_the_launch_the_full_call_kept(linear):
    """A launch kept by the full call (its key: the stream, each input's key, each new
    output's) is found by the fast path from the same arrays, stream and output address,
    and by nothing else."""
    from mmcomp.backend.call import PreparedLaunch

    kernel, _ = linear
    state = kernel.device_kernel.call_state()
    a, w = device_inputs()
    out = 1 << 40
    frame = StubFrame(7, [])
    launched: list[int] = []
    prepared = PreparedLaunch(None, None, None, [])  # pyright: ignore[reportArgumentType]
    prepared.relaunch = lambda: launched.append(1)
    output = FakeDeviceArray((300, 500), BF16, out)
    key = (7, frame.key(a), frame.key(w), frame.key(output))
    state.remember(frame, key, prepared)
    assert state.hot_frame is frame

    frame.addresses[:] = [out]
    (y,) = state.fast([a, w])
    assert launched == [1]
    assert y.__cuda_array_interface__["data"][0] == out
    frame.addresses[:] = [out + 4096]  # a new output elsewhere: not kept
    assert state.fast([a, w]) is None
    frame.addresses[:] = [out]
    frame.handle = 8  # another stream
    assert state.fast([a, w]) is None
    frame.handle = 7
    frame.addresses[:] = [out]
    assert state.fast([a, FakeDeviceArray((500, 200), BF16, 1 << 33)]) is None
    frame.addresses[:] = [out]
    assert state.fast([a]) is None  # the full call names what is missing
    assert state.fast([random((300, 200)), random((500, 200))]) is None  # host arrays
    assert launched == [1]
    state.fast_launches.clear()
    state.hot = state.hot_frame = None


def test_the_out_fast_path_finds_the_launch_of_the_same_entries(linear):
    """A launch kept by a full call with every output in `out=` is found by the fast path
    from the same inputs, stream and out entries (their whole keys), and by nothing else."""
    from mmcomp.backend.call import PreparedLaunch

    kernel, _ = linear
    state = kernel.device_kernel.call_state()
    a, w = device_inputs()
    frame = StubFrame(7, [])
    launched: list[int] = []
    prepared = PreparedLaunch(None, None, None, [])  # pyright: ignore[reportArgumentType]
    prepared.relaunch = lambda: launched.append(1)
    y = FakeDeviceArray((300, 500), BF16, 1 << 40)
    key = (7, frame.key(a), frame.key(w), frame.key(y))
    state.remember_out(frame, key, prepared, [frame, frame, frame])
    assert state.hot_out_frame is frame
    assert state.fast_out([a, w], [y]) == (y,)
    assert state.fast_out([a, w], (y,)) == (y,)
    assert launched == [1, 1]
    assert state.fast_out([a, w], [FakeDeviceArray((300, 500), BF16, 1 << 41)]) is None
    assert state.fast_out([a, w], [FakeDeviceArray((300, 500), np.float32, 1 << 40)]) is None
    assert state.fast_out([a, w], [y, y]) is None  # the full call names the extra entry
    assert state.fast_out([a, w], [np.empty((300, 500), BF16)]) is None
    frame.handle = 8  # another stream
    assert state.fast_out([a, w], [y]) is None
    frame.handle = 7
    assert state.fast_out([random((300, 200)), random((500, 200))], [y]) is None
    assert launched == [1, 1]
    other = StubFrame(7, [])  # an entry of another framework: not kept
    state.remember_out(frame, key, prepared, [frame, frame, other])
    assert len(state.out_launches) == 1
    state.out_launches.clear()
    state.hot_out = state.hot_out_frame = None


@pytest.mark.parametrize("second", ["CUDA_SUCCESS", "CUDA_ERROR_INVALID_CONTEXT"])
def test_a_refused_relaunch_makes_the_context_current_and_launches_again(
    linear, monkeypatch, second
):
    """The kept relaunch of a kernel without clusters or a programmatic dependency (an
    older saved kernel) is one cuLaunchKernel with ints; where the driver refuses it, the
    context is made current and the launch made again, and a second refusal is raised
    naming the kernel."""
    import dataclasses
    from types import SimpleNamespace

    import mmcomp.runtime.device as device
    from mmcomp.backend.kernel import BoundLaunch
    from mmcomp.errors import CudaError
    from mmcomp.runtime.driver import driver_api
    from mmcomp.runtime.launch import KernelArguments
    from mmcomp.runtime.staging import Staging

    driver = driver_api()
    kernel = linear[0].device_kernel
    assert kernel.plan.cluster == 1
    monkeypatch.setattr(kernel, "plan", dataclasses.replace(kernel.plan, programmatic=False))
    handle = object()
    monkeypatch.setattr(kernel, "_function", SimpleNamespace(handle=handle))
    bound = object.__new__(BoundLaunch)
    bound.kernel, bound.grid, bound.staging = kernel, 12, Staging()
    bound._config, bound._packed = object(), KernelArguments([])
    results = [driver.CUresult.CUDA_ERROR_INVALID_CONTEXT, getattr(driver.CUresult, second)]
    launches: list[tuple] = []
    made_current: list[int] = []

    def launch(*args):
        launches.append(args)
        return (results[len(launches) - 1],)

    monkeypatch.setattr(driver, "cuLaunchKernel", launch)
    monkeypatch.setattr(device, "ensure_context", lambda: made_current.append(1))
    stream = object()
    relaunch = bound.relauncher(stream)
    plan = kernel.plan
    if second == "CUDA_SUCCESS":
        relaunch()
    else:
        with pytest.raises(CudaError, match=r"INVALID_CONTEXT while launching kernel linear"):
            relaunch()
    params = bound._packed.pointers.ctypes.data
    want = (handle, 12, 1, 1, plan.threads, 1, 1, plan.smem_bytes, stream, params, 0)
    assert launches == [want, want] and made_current == [1]
