"""GPU tests of the runtime: hand-written PTX kernels launched through mmcomp.runtime.

Run on an sm_90 machine with `python -m pytest tests/unit/test_runtime_gpu.py`. Elsewhere
the whole module is skipped with the reason (no driver, no GPU, or not compute 9.0).
"""

from __future__ import annotations

import numpy as np
import pytest
from runtime_kernels import CLUSTER_PTX, SCALE_PTX, tma_copy_ptx

from mmcomp.errors import CudaError, LaunchError
from mmcomp.ir.dtypes import FUSION_DTYPES
from mmcomp.runtime import (
    BFLOAT16,
    ArraySpec,
    DeviceBuffer,
    KernelCache,
    LoadOptions,
    Stream,
    bind_arrays,
    device_info,
    encode_tensor_map,
    gpu_unavailable_reason,
    launch,
    load_module,
    time_launches,
)
from mmcomp.runtime.module import find_compatible_ptxas

_REASON = gpu_unavailable_reason()
if _REASON is not None:
    pytest.skip(f"needs an sm_90 GPU: {_REASON}", allow_module_level=True)

pytestmark = pytest.mark.gpu

BF16 = BFLOAT16


@pytest.fixture
def cache(tmp_path) -> KernelCache:
    """A fresh kernel cache per test."""
    return KernelCache(tmp_path / "kernels")


def _scale_specs(n: int) -> list[ArraySpec]:
    return [
        ArraySpec("out", BF16, (n,), role="output", layout="contiguous"),
        ArraySpec("x", BF16, (n,), layout="contiguous"),
    ]


def _expected_scale(x: np.ndarray, factor: float) -> np.ndarray:
    return (x.astype(np.float32) * np.float32(factor)).astype(BF16)


@pytest.mark.timeout(120)
def test_device_is_hopper():
    info = device_info()
    assert info.compute_capability == (9, 0)
    assert info.arch == "sm_90a"
    assert info.sm_count > 0
    assert info.max_dynamic_shared_bytes >= 227 * 1024


@pytest.mark.timeout(120)
@pytest.mark.parametrize("compiler", ["auto", "driver"])
def test_scale_bf16_numpy(cache, compiler):
    module = load_module(SCALE_PTX, LoadOptions(compiler=compiler), cache=cache)
    kernel = module.function("scale_bf16")
    n = 1000
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(BF16)
    out = np.full(n, np.nan, dtype=BF16)
    bound = bind_arrays(_scale_specs(n), {"out": out, "x": x})
    launch(kernel, (n + 127) // 128, 128, [*bound.arrays, np.float32(1.5), np.uint32(n)])
    bound.finish()
    np.testing.assert_array_equal(out.view(np.uint16), _expected_scale(x, 1.5).view(np.uint16))


@pytest.mark.timeout(120)
def test_cache_hit_loads_the_same_kernel(cache):
    first = load_module(SCALE_PTX, cache=cache)
    second = load_module(SCALE_PTX, cache=cache)
    assert not first.compiled.cache_hit
    assert second.compiled.cache_hit
    assert second.compiled.cubin == first.compiled.cubin
    n = 256
    x = np.arange(n, dtype=np.float32).astype(BF16)
    out = np.zeros(n, dtype=BF16)
    bound = bind_arrays(_scale_specs(n), [out, x])
    launch(second.function("scale_bf16"), 2, 128, [*bound.arrays, np.float32(2), np.uint32(n)])
    bound.finish()
    np.testing.assert_array_equal(out.astype(np.float32), _expected_scale(x, 2).astype(np.float32))


@pytest.mark.timeout(120)
def test_scale_bf16_device_buffers_on_stream(cache):
    kernel = load_module(SCALE_PTX, cache=cache).function("scale_bf16")
    n = 4096
    x = np.random.default_rng().standard_normal(n).astype(BF16)
    stream = Stream()
    x_device = DeviceBuffer.from_host(x, stream)
    out_device = DeviceBuffer.empty((n,), BF16)
    out_device.fill_bytes(0xFF)
    bound = bind_arrays(_scale_specs(n), [out_device, x_device], require_device=True)
    args = [*bound.arrays, np.float32(-0.25), np.uint32(n)]
    launch(kernel, n // 256, 256, args, stream=stream)
    stream.synchronize()
    result = out_device.copy_to_host()
    np.testing.assert_array_equal(result.view(np.uint16), _expected_scale(x, -0.25).view(np.uint16))
    times = time_launches(lambda: launch(kernel, n // 256, 256, args, stream=stream), 5, 1, stream)
    assert len(times) == 5 and all(t > 0 for t in times)


@pytest.mark.timeout(120)
def test_scale_bf16_torch_no_copy(cache):
    torch = pytest.importorskip("torch")
    kernel = load_module(SCALE_PTX, cache=cache).function("scale_bf16")
    n = 3000
    x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out = torch.full((n,), float("nan"), device="cuda", dtype=torch.bfloat16)
    bound = bind_arrays(_scale_specs(n), [out, x], require_device=True)
    assert bound.arrays[0].ptr == out.data_ptr()  # no copy
    stream = torch.cuda.current_stream()
    launch(
        kernel, (n + 255) // 256, 256, [*bound.arrays, np.float32(3.0), np.uint32(n)], stream=stream
    )
    torch.cuda.synchronize()
    expected = (x.float() * 3.0).to(torch.bfloat16)
    assert torch.equal(out, expected)


@pytest.mark.timeout(120)
def test_torch_argument_errors(cache):
    torch = pytest.importorskip("torch")
    specs = _scale_specs(64)
    good = torch.zeros(64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(LaunchError, match="argument 'x': expected dtype bfloat16, found float32"):
        bind_arrays(specs, [good, torch.zeros(64, device="cuda")])
    with pytest.raises(LaunchError, match=r"argument 'x': expected shape \[64\], found \[32\]"):
        bind_arrays(specs, [good, good[:32]])
    with pytest.raises(LaunchError, match="argument 'x': expected a C-contiguous array"):
        bind_arrays(specs, [good, torch.zeros(128, device="cuda", dtype=torch.bfloat16)[::2]])
    matrix = ArraySpec("a", BF16, (8, 7))
    with pytest.raises(LaunchError, match="argument 'a': device array byte stride 14"):
        bind_arrays([matrix], [torch.zeros(8, 7, device="cuda", dtype=torch.bfloat16)])


@pytest.mark.timeout(120)
def test_wrong_argument_count_is_a_launch_error(cache):
    kernel = load_module(SCALE_PTX, cache=cache).function("scale_bf16")
    buffer = DeviceBuffer.empty((16,), BF16)
    with pytest.raises(LaunchError, match="takes 4 parameters, found 3 arguments"):
        launch(kernel, 1, 16, [buffer, buffer, np.float32(1)])
    with pytest.raises(LaunchError, match="parameter 3 is 4 bytes, found an argument of 8"):
        launch(kernel, 1, 16, [buffer, buffer, np.float32(1), np.uint64(16)])


@pytest.mark.timeout(120)
def test_bad_ptx_is_a_cuda_error(cache):
    with pytest.raises((CudaError, LaunchError)):
        load_module(SCALE_PTX.replace("mul.f32", "mul.bogus"), cache=cache)


_TYPES = {dtype.name: dtype.numpy_dtype for dtype in FUSION_DTYPES}


def _random(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    return np.random.default_rng().standard_normal(shape).astype(np.float32).astype(dtype)


def _run_tma_copy(
    src: np.ndarray, dst_shape: tuple[int, ...], box: tuple[int, ...], swizzle, cache
):
    """TMA-copy `src` into a poisoned `dst_shape` array box by box; returns dst on the host."""
    rank = src.ndim
    box_bytes = int(np.prod(box)) * src.dtype.itemsize
    kernel = load_module(tma_copy_ptx(rank, box_bytes), cache=cache).function("tma_copy")
    src_device = DeviceBuffer.from_host(src)
    dst_device = DeviceBuffer.empty(dst_shape, src.dtype)
    dst_device.fill_bytes(0xFF)
    src_map = encode_tensor_map(src_device, box=box, swizzle=swizzle)
    dst_map = encode_tensor_map(dst_device, box=box, swizzle=swizzle)
    inner_first_box = list(reversed(box)) + [1] * (3 - rank)
    grid = [
        -(-extent // step) for extent, step in zip(reversed(dst_shape), reversed(box), strict=True)
    ]
    args = [src_map, dst_map, *(np.uint32(step) for step in inner_first_box)]
    launch(kernel, grid, 32, args, smem_bytes=box_bytes + 1024 + 16)
    return dst_device.copy_to_host()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("type_name", ["bf16", "f16", "f32"])
@pytest.mark.parametrize("swizzle", [0, 32, 64, 128])
def test_tma_round_trip_2d_zero_fill(cache, type_name, swizzle):
    dtype = _TYPES[type_name]
    inner = (swizzle or 64) // dtype.itemsize
    src = _random((100, 72), dtype)
    rows, cols = 128, ((72 + inner - 1) // inner + 1) * inner
    dst = _run_tma_copy(src, (rows, cols), (64, inner), swizzle, cache)
    expected = np.zeros((rows, cols), dtype)
    expected[:100, :72] = src
    np.testing.assert_array_equal(
        dst.view(f"u{dtype.itemsize}"), expected.view(f"u{dtype.itemsize}")
    )


@pytest.mark.timeout(120)
def test_tma_round_trip_3d(cache):
    src = _random((3, 40, 64), BF16)
    dst = _run_tma_copy(src, (3, 40, 64), (1, 32, 64), 128, cache)
    np.testing.assert_array_equal(dst.view(np.uint16), src.view(np.uint16))


@pytest.mark.timeout(120)
def test_cluster_launch(cache):
    kernel = load_module(SCALE_PTX, cache=cache).function("scale_bf16")
    n = 1024
    x = _random((n,), BF16)
    out = np.zeros(n, BF16)
    bound = bind_arrays(_scale_specs(n), [out, x])
    launch(kernel, 8, 128, [*bound.arrays, np.float32(1), np.uint32(n)], cluster=2)
    bound.finish()
    np.testing.assert_array_equal(out.view(np.uint16), x.view(np.uint16))
    with pytest.raises(LaunchError, match="not a multiple of cluster"):
        launch(kernel, 7, 128, [*bound.arrays, np.float32(1), np.uint32(n)], cluster=2)


@pytest.mark.timeout(120)
def test_cluster_dimension_reaches_the_kernel(cache):
    kernel = load_module(CLUSTER_PTX, cache=cache).function("cluster_ids")
    out = np.full((8, 2), -1, np.int32)
    spec = ArraySpec("out", np.int32, (8, 2), role="output", layout="contiguous")
    bound = bind_arrays([spec], [out])
    launch(kernel, 8, 32, bound.arrays, cluster=(2, 1, 1))
    bound.finish()
    np.testing.assert_array_equal(out, [[2, cta % 2] for cta in range(8)])


@pytest.mark.timeout(120)
def test_large_dynamic_shared_memory_raises_the_limit(cache):
    kernel = load_module(SCALE_PTX, cache=cache).function("scale_bf16")
    n = 128
    x = _random((n,), BF16)
    out = np.zeros(n, BF16)
    bound = bind_arrays(_scale_specs(n), [out, x])
    smem = device_info().max_dynamic_shared_bytes
    launch(kernel, 1, 128, [*bound.arrays, np.float32(1), np.uint32(n)], smem_bytes=smem)
    bound.finish()
    assert kernel.max_dynamic_shared_bytes == smem
    np.testing.assert_array_equal(out.view(np.uint16), x.view(np.uint16))
    with pytest.raises(LaunchError, match="the device allows at most"):
        kernel.set_max_dynamic_shared_bytes(smem + 1)


@pytest.mark.timeout(120)
def test_ptxas_compiled_cubin(cache):
    tool = find_compatible_ptxas(device_info().driver_release)
    if tool is None:
        pytest.skip("no ptxas here that is not newer than the driver")
    module = load_module(SCALE_PTX, LoadOptions(compiler="ptxas"), cache=cache)
    assert module.compiled.compiler.startswith("ptxas")
    n = 512
    x = _random((n,), BF16)
    out = np.zeros(n, BF16)
    bound = bind_arrays(_scale_specs(n), [out, x])
    launch(module.function("scale_bf16"), 4, 128, [*bound.arrays, np.float32(0.5), np.uint32(n)])
    bound.finish()
    np.testing.assert_array_equal(out.view(np.uint16), _expected_scale(x, 0.5).view(np.uint16))


@pytest.mark.timeout(120)
def test_missing_kernel_name(cache):
    module = load_module(SCALE_PTX, cache=cache)
    with pytest.raises(LaunchError, match="the module has no kernel named 'nope'"):
        module.function("nope")


class DLPackOnly:
    """A device array that offers DLPack alone (no __cuda_array_interface__)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


@pytest.mark.timeout(120)
def test_scale_bf16_through_dlpack(cache):
    torch = pytest.importorskip("torch")
    kernel = load_module(SCALE_PTX, cache=cache).function("scale_bf16")
    n = 2048
    x = torch.randn(2 * n, device="cuda", dtype=torch.bfloat16)[n:]  # an offset view
    out = torch.full((n,), float("nan"), device="cuda", dtype=torch.bfloat16)
    bound = bind_arrays(_scale_specs(n), [DLPackOnly(out), DLPackOnly(x)], require_device=True)
    assert [array.ptr for array in bound.arrays] == [out.data_ptr(), x.data_ptr()]
    launch(kernel, n // 128, 128, [*bound.arrays, np.float32(-2.0), np.uint32(n)])
    torch.cuda.synchronize()
    assert torch.equal(out, (x.float() * -2.0).to(torch.bfloat16))
    with pytest.raises(LaunchError, match="argument 'x': expected dtype bfloat16, found float16"):
        bind_arrays(_scale_specs(n), [out, DLPackOnly(x.half())])


_FAULT_SCRIPT = """
import sys
import numpy as np
from mmcomp.errors import CudaError
from mmcomp.runtime import BFLOAT16, DeviceArray, launch, load_module, synchronize
kernel = load_module(sys.argv[1], cache=None).function("scale_bf16")
bad = DeviceArray(0x10, (256,), BFLOAT16)
launch(kernel, 2, 128, [bad, bad, np.float32(1), np.uint32(256)])
try:
    synchronize()
except CudaError as error:
    print("CudaError", error.error_name, "|", error)
"""


@pytest.mark.timeout(120)
def test_kernel_fault_is_a_cuda_error_naming_the_driver_error():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    environment = dict(os.environ, PYTHONPATH=path)
    result = subprocess.run(
        [sys.executable, "-c", _FAULT_SCRIPT, SCALE_PTX],
        capture_output=True,
        text=True,
        timeout=100,
        cwd=root,
        env=environment,
    )
    assert "CudaError CUDA_ERROR_ILLEGAL_ADDRESS" in result.stdout, result.stdout + result.stderr
    assert "earlier asynchronous kernel launch" in result.stdout
