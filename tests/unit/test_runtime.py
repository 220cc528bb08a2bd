"""CPU tests of the runtime: argument checks, tensor-map rules, parameter packing, no-GPU errors.

None of these needs a GPU: device arrays are faked with `__cuda_array_interface__` objects,
and the driver is replaced by a fake module where a test needs a particular GPU (or none).
"""

from __future__ import annotations

import ctypes
import importlib
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from runtime_kernels import CLUSTER_PTX, SCALE_PTX, tma_copy_ptx

from mmcomp.arch import ptxas
from mmcomp.errors import CudaError, LaunchError
from mmcomp.runtime import arrays, device, driver
from mmcomp.runtime.arrays import ArraySpec, as_device_array, bind_arrays, check_device_array
from mmcomp.runtime.launch import KernelArguments, _dim3
from mmcomp.runtime.tensormap import swizzle_span, tensor_map_layout

BF16 = arrays.BFLOAT16
REAL_DRIVER = importlib.import_module("cuda.bindings.driver")
"""The real bindings: their enums work without a driver library."""


class FakeCudaArray:
    """A device array as torch or cupy expose it, at a made-up address."""

    def __init__(self, shape, typestr, strides=None, ptr=0x7F0000000000):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "strides": strides,
            "data": (ptr, False),
            "version": 3,
        }


A_SPEC = ArraySpec("a", BF16, (128, 64))


# --- import and compile need no GPU --------------------------------------------------------


def test_importing_the_runtime_does_not_touch_the_driver():
    code = (
        "import sys, mmcomp.runtime\n"
        "assert 'cuda.bindings.driver' not in sys.modules, 'driver imported'\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# --- device arrays: dtype, shape, layout, alignment ----------------------------------------


def test_cuda_array_interface_view():
    view = as_device_array(FakeCudaArray((128, 64), "<V2"), "a")
    assert view is not None
    assert view.dtype == BF16
    assert view.strides == (128, 2)
    assert view.ptr == 0x7F0000000000
    check_device_array(A_SPEC, view)


def test_numpy_array_is_a_host_array():
    assert as_device_array(np.zeros(4, np.float32)) is None


def test_wrong_dtype_names_the_argument():
    fake = FakeCudaArray((128, 64), "<f4")
    with pytest.raises(LaunchError, match="argument 'a': expected dtype bfloat16, found float32"):
        bind_arrays([A_SPEC], [fake])


def test_wrong_shape_names_the_argument():
    fake = FakeCudaArray((64, 128), "<V2")
    with pytest.raises(
        LaunchError, match=r"argument 'a': expected shape \[128, 64\], found \[64, 128\]"
    ):
        bind_arrays([A_SPEC], [fake])


def test_misaligned_stride_names_the_argument():
    spec = ArraySpec("w", BF16, (16, 7))
    fake = FakeCudaArray((16, 7), "<V2")  # compact rows of 14 bytes
    with pytest.raises(
        LaunchError,
        match="argument 'w': device array byte stride 14 on axis 0 is not a multiple of 16",
    ):
        bind_arrays([spec], [fake])


def test_padded_rows_are_accepted_for_tma():
    spec = ArraySpec("w", BF16, (16, 7))
    view = as_device_array(FakeCudaArray((16, 7), "<V2", (16, 2)), "w")
    assert view is not None
    check_device_array(spec, view)


def test_misaligned_base_address():
    fake = FakeCudaArray((128, 64), "<V2", ptr=0x7F0000000008)
    with pytest.raises(LaunchError, match="argument 'a': base address 0x7f0000000008 is not 16"):
        bind_arrays([A_SPEC], [fake])


def test_non_contiguous_innermost_axis():
    fake = FakeCudaArray((128, 64), "<V2", strides=(256, 4))
    with pytest.raises(
        LaunchError, match="argument 'a': expected the innermost axis to be contiguous"
    ):
        bind_arrays([A_SPEC], [fake])


def test_contiguous_layout_rejects_padded_rows():
    spec = ArraySpec("bias", np.float32, (4, 8), layout="contiguous")
    fake = FakeCudaArray((4, 8), "<f4", strides=(64, 4))
    with pytest.raises(LaunchError, match="argument 'bias': expected a C-contiguous array"):
        bind_arrays([spec], [fake])


def test_host_array_where_a_device_array_is_required():
    host = np.zeros((128, 64), BF16)
    with pytest.raises(
        LaunchError,
        match=r"argument 'a': expected a device array .* found host ndarray bfloat16\[128, 64\]",
    ):
        bind_arrays([A_SPEC], [host], require_device=True)


def test_host_array_wrong_dtype_is_caught_before_any_copy():
    host = np.zeros((128, 64), np.float16)
    with pytest.raises(LaunchError, match="argument 'a': expected dtype bfloat16, found float16"):
        bind_arrays([A_SPEC], [host])


def test_host_array_whose_rows_cannot_be_tma_strided():
    spec = ArraySpec("x", BF16, (10, 1001))
    with pytest.raises(
        LaunchError,
        match=r"argument 'x': the device copy's byte stride 2002 .* pad the inner extent",
    ):
        bind_arrays([spec], [np.zeros((10, 1001), BF16)])


def test_read_only_host_output():
    spec = ArraySpec("out", np.float32, (4,), role="output", layout="contiguous")
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(LaunchError, match="argument 'out': is an output, found a read-only"):
        bind_arrays([spec], [out])


def test_argument_count_and_names():
    fake = FakeCudaArray((128, 64), "<V2")
    with pytest.raises(LaunchError, match=r"expected 1 array arguments \(a\), found 2"):
        bind_arrays([A_SPEC], [fake, fake])
    with pytest.raises(LaunchError, match=r"missing \['a'\], unexpected \['b'\]"):
        bind_arrays([A_SPEC], {"b": fake})


def test_device_arrays_bind_without_copies():
    fake = FakeCudaArray((128, 64), "<V2")
    bound = bind_arrays([A_SPEC], {"a": fake}, require_device=True)
    assert bound.arrays[0].ptr == 0x7F0000000000
    assert bound.arrays[0].owner is fake
    bound.finish()


def test_not_an_array():
    with pytest.raises(LaunchError, match="argument 'a': expected a numpy array or a CUDA"):
        bind_arrays([A_SPEC], ["text"])


# --- kernel parameters -----------------------------------------------------------------------


def test_scalar_and_pointer_packing():
    fake = FakeCudaArray((128, 64), "<V2")
    packed = KernelArguments([np.float32(1.5), np.uint64(7), ctypes.c_uint16(3), fake])
    assert packed.sizes == [4, 8, 2, 8]
    addresses = [int(address) for address in packed.pointers]
    assert ctypes.c_float.from_address(addresses[0]).value == 1.5
    assert ctypes.c_uint64.from_address(addresses[1]).value == 7
    assert ctypes.c_uint16.from_address(addresses[2]).value == 3
    assert ctypes.c_uint64.from_address(addresses[3]).value == 0x7F0000000000


def test_python_int_is_refused():
    with pytest.raises(LaunchError, match="argument 1 is a Python int; pass a sized scalar"):
        KernelArguments([np.int32(1), 5])


def test_host_array_as_kernel_argument_is_refused():
    with pytest.raises(LaunchError, match="argument 0 is a host numpy array"):
        KernelArguments([np.zeros(4, np.float32)])


def test_dim3():
    assert _dim3(5, "grid") == (5, 1, 1)
    assert _dim3((2, 3), "grid") == (2, 3, 1)
    with pytest.raises(LaunchError, match="grid must be positive integers"):
        _dim3((0, 1), "grid")
    with pytest.raises(LaunchError, match="block must have 1 to 3 dimensions"):
        _dim3((1, 1, 1, 1), "block")


# --- tensor-map rules ------------------------------------------------------------------------


def test_tensor_map_layout_2d_and_3d():
    layout = tensor_map_layout(BF16, (1000, 1000), None, (128, 64), 128)
    assert layout.strides == (2000, 2)
    assert layout.box_bytes == 128 * 64 * 2
    layout3 = tensor_map_layout(np.float32, (4, 64, 32), None, (1, 64, 32), "128B")
    assert layout3.rank == 3 and layout3.swizzle == 128


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(box=(128, 128)), "wider than the 128-byte swizzle span; use a box of at most 64"),
        (dict(box=(300, 64)), r"box\[0\] = 300 is not in \[1, 256\]"),
        (dict(shape=(10, 1001)), "byte stride 2002 of dimension 0 must be a positive multiple"),
        (dict(base_address=8), "global address 0x8 is not 16-byte aligned"),
        (dict(strides=(256, 4)), "innermost dimension must be contiguous"),
        (dict(box=(64, 4), swizzle=0), r"inner box \(4 x 2 bytes = 8 bytes\) must be a multiple"),
        (dict(box=(64,)), "box has 1 entries, expected 2"),
        (dict(swizzle=96), "swizzle must be one of none, 32B, 64B, 128B"),
        (dict(dtype=np.complex64), "unsupported dtype complex64"),
        (dict(shape=(1, 2, 3, 4, 5, 6), box=(1,) * 6), "rank must be 1 to 5"),
    ],
)
def test_tensor_map_rules(kwargs, message):
    request: dict[str, Any] = dict(
        dtype=BF16, shape=(256, 256), strides=None, box=(64, 64), swizzle=128
    )
    request.update(kwargs)
    with pytest.raises(LaunchError, match=message):
        tensor_map_layout(**request)


def test_swizzle_spellings():
    assert [swizzle_span(s) for s in (None, "none", "32B", "64b", 128)] == [0, 0, 32, 64, 128]


# --- no GPU: one clear error -----------------------------------------------------------------


class _Attribute:
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = "major"
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = "minor"
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = "sms"
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = "smem"


def fake_driver(*, init=None, count=1, capability=(9, 0), init_raises=False):
    """A stand-in for cuda.bindings.driver with one configurable device."""
    success = REAL_DRIVER.CUresult.CUDA_SUCCESS
    values = {"major": capability[0], "minor": capability[1], "sms": 132, "smem": 232448}

    def cu_init(flags):
        if init_raises:
            raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found ...')
        return (init or success,)

    return SimpleNamespace(
        CUresult=REAL_DRIVER.CUresult,
        CUdevice_attribute=_Attribute,
        cuInit=cu_init,
        cuGetErrorName=lambda result: (success, result.name.encode()),
        cuGetErrorString=lambda result: (success, b"fake description"),
        cuDeviceGetCount=lambda: (success, count),
        cuDeviceGet=lambda ordinal: (success, ordinal),
        cuDeviceGetName=lambda size, dev: (success, b"Fake GPU\0\0"),
        cuDeviceGetAttribute=lambda attr, dev: (success, values[attr]),
        cuDriverGetVersion=lambda: (success, 13000),
        cuDevicePrimaryCtxRetain=lambda dev: (success, "context"),
        cuCtxSetCurrent=lambda ctx: (success,),
    )


@pytest.fixture
def use_driver(monkeypatch):
    """Install a fake driver (and a fresh runtime state) for one test."""

    def install(fake):
        monkeypatch.setattr(driver, "driver_api", lambda: fake)
        monkeypatch.setattr(device, "driver_api", lambda: fake)
        monkeypatch.setattr(device, "_context", None)
        monkeypatch.setattr(device, "_current", SimpleNamespace())

    return install


def test_no_driver_library_is_one_launch_error(use_driver):
    use_driver(fake_driver(init_raises=True))
    with pytest.raises(LaunchError, match="cannot launch: no NVIDIA driver found"):
        device.ensure_context()
    reason = device.gpu_unavailable_reason()
    assert reason is not None and reason.startswith("cannot launch: no NVIDIA driver found")


def test_no_device_is_one_launch_error(use_driver):
    use_driver(fake_driver(init=REAL_DRIVER.CUresult.CUDA_ERROR_NO_DEVICE))
    with pytest.raises(LaunchError, match="the NVIDIA driver reports no CUDA device"):
        device.ensure_context()


def test_zero_devices_is_one_launch_error(use_driver):
    use_driver(fake_driver(count=0))
    with pytest.raises(LaunchError, match="reports no CUDA device"):
        device.ensure_context()


def test_wrong_architecture_is_one_launch_error(use_driver):
    use_driver(fake_driver(capability=(8, 0)))
    with pytest.raises(
        LaunchError, match=r"device 0 \(Fake GPU\) is compute capability 8.0; .* need 9.0"
    ):
        device.ensure_context()


def test_hopper_context_and_facts(use_driver):
    use_driver(fake_driver())
    info = device.ensure_context().info
    assert info.arch == "sm_90a"
    assert info.name == "Fake GPU"
    assert info.driver_release == (13, 0)
    assert device.gpu_unavailable_reason() is None


def test_binding_a_host_array_without_a_gpu_is_a_launch_error(use_driver):
    use_driver(fake_driver(init_raises=True))
    with pytest.raises(LaunchError, match="no NVIDIA driver found"):
        bind_arrays([A_SPEC], [np.zeros((128, 64), BF16)])


def test_cuda_python_missing_is_a_launch_error(monkeypatch):
    driver.driver_api.cache_clear()
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", None)
    try:
        with pytest.raises(LaunchError, match="cuda-python .* is not importable"):
            driver.driver_api()
    finally:
        driver.driver_api.cache_clear()


def test_failed_call_is_a_cuda_error_with_the_driver_name(use_driver):
    use_driver(fake_driver())
    with pytest.raises(CudaError) as caught:
        driver.check((REAL_DRIVER.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None), "allocating 8 bytes")
    assert caught.value.error_name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert caught.value.what == "allocating 8 bytes"
    assert str(caught.value).startswith("CUDA error CUDA_ERROR_OUT_OF_MEMORY while allocating")


def test_kernel_faults_say_they_come_from_an_earlier_launch(use_driver):
    use_driver(fake_driver())
    with pytest.raises(CudaError, match="earlier asynchronous kernel launch") as caught:
        driver.check((REAL_DRIVER.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS,), "waiting for a stream")
    assert caught.value.error_name == "CUDA_ERROR_ILLEGAL_ADDRESS"


def test_check_returns_values(use_driver):
    use_driver(fake_driver())
    success = REAL_DRIVER.CUresult.CUDA_SUCCESS
    assert driver.check((success,), "x") is None
    assert driver.check((success, 5), "x") == 5
    assert driver.check((success, 5, 6), "x") == (5, 6)


def test_bfloat16_constant():
    assert arrays.BFLOAT16 == BF16


@pytest.mark.parametrize(
    ("entry", "ptx"),
    [
        ("scale_bf16", SCALE_PTX),
        ("cluster_ids", CLUSTER_PTX),
        ("tma_copy", tma_copy_ptx(2, 64 * 64 * 2)),
        ("tma_copy", tma_copy_ptx(3, 32 * 64 * 2)),
    ],
    ids=["scale", "cluster", "tma-2d", "tma-3d"],
)
def test_gpu_test_kernels_assemble(entry: str, ptx: str):
    """The PTX kernels of test_runtime_gpu.py assemble for sm_90a without spills, GPU or not."""
    try:
        ptxas.find_ptxas()
    except ptxas.PtxasError as error:
        pytest.skip(f"needs ptxas: {error}")
    assembled = ptxas.assemble_checked(ptx)
    assert list(assembled.resources) == [entry]
    assert assembled.resources[entry].spills == 0
    assert assembled.cubin.startswith(b"\x7fELF")
