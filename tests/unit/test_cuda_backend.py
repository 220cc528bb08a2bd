"""The cuda back end on the CPU: every case lowers to PTX that ptxas assembles without spills.

Where nvdisasm exists, the SASS is checked for HGMMA (wgmma) and for setmaxnreg taking
effect. The launch plans are checked against the operands' roles and layouts. Nothing here
needs a GPU; the GPU tests (test_cuda_gpu.py) run the same cases on the H200.
"""

from __future__ import annotations

import functools

import pytest
from cases import CASES, case, horizontal, linear, matmul

from mmcomp.arch import ptxas
from mmcomp.backend import CudaKernel, build_cuda_kernel, lower_to_ptx
from mmcomp.errors import LaunchError, ScheduleError
from mmcomp.pipeline import run_pipeline
from mmcomp.runtime import gpu_unavailable_reason

HAS_PTXAS = ptxas.find_tool("ptxas") is not None
HAS_NVDISASM = ptxas.find_tool("nvdisasm") is not None


@functools.cache
def built(name: str) -> CudaKernel:
    """The kernel of a case, built once per test session."""
    selected = case(name)
    module, _, _ = run_pipeline(selected.fusion().module, selected.params)
    return build_cuda_kernel(module)


@pytest.mark.skipif(not HAS_PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case_assembles_without_spills(name: str):
    """ptxas -arch=sm_90a assembles the kernel; no spill bytes, no stack frame."""
    kernel = built(name)
    assert kernel.report is not None
    assert kernel.report.spills == 0
    assert kernel.report.stack_frame == 0
    specialized = "setmaxnreg" in kernel.ptx
    assert f".maxnreg {168 if specialized else 255}" in kernel.ptx
    assert kernel.plan.threads == (384 if specialized else 256)


@pytest.mark.skipif(not (HAS_PTXAS and HAS_NVDISASM), reason="ptxas or nvdisasm not found")
@pytest.mark.parametrize(
    "name", ["linear_128x256", "matmul_mn_major", "horizontal", "pingpong_linear"]
)
def test_sass_has_hgmma_and_setmaxnreg(name: str):
    """The wgmmas survive as HGMMA and the register split as USETMAXREG."""
    kernel = built(name)
    assert kernel.cubin is not None
    ptxas.check_sass(
        kernel.cubin, present=[r"HGMMA\.64x\d+x16", "USETMAXREG"], absent=[ptxas.LOCAL_MEMORY]
    )


def test_tensor_maps_follow_roles_and_layout():
    """K-major A/W boxes are [rows, 64]; an MN-major B[K, N] is boxes of 64 along N."""
    module, _, _ = run_pipeline(
        linear(300, 500, 200).module,
        {"tile": (128, 256, 64), "epilogue": "registers", "split_k": 1},
    )
    _, plan = lower_to_ptx(module)
    a, w = plan.tensor_maps
    assert (a.box, a.boxes, a.major) == ((128, 64), 1, "k")
    assert (w.box, w.boxes, w.major) == ((256, 64), 1, "k")
    module, _, _ = run_pipeline(
        matmul(300, 512, 200, batch=2).module,
        {"tile": (128, 128, 64), "epilogue": "registers", "split_k": 1},
    )
    _, plan = lower_to_ptx(module)
    a, b = plan.tensor_maps
    assert (a.shape, a.box, a.major) == ((2, 300, 200), (1, 128, 64), "k")
    assert (b.shape, b.box, b.boxes, b.major) == ((2, 200, 512), (1, 64, 64), 2, "mn")
    assert "cp.async.bulk.tensor.3d" in lower_to_ptx(module)[0]


def test_shared_memory_fits_the_device():
    """The ring, its barriers and the alignment slack fit in 227 KiB."""
    for name in ("linear_1000", "linear_128x256", "horizontal", "pingpong_64x256"):
        assert built(name).plan.smem_bytes <= 232448


def test_unbuildable_parameters_are_refused():
    """Two-dimensional clusters are not built: a ScheduleError names the parameter."""
    params = {"cluster": (2, 2), "epilogue": "registers", "split_k": 1}
    with pytest.raises(ScheduleError, match="cluster 2x2 is not built"):
        run_pipeline(linear(256, 256, 128).module, params)


def test_clusters_multicast_the_shared_operand():
    """Cluster 2x1: B (no m axis) is split in two boxes, each multicast to both CTAs;
    the stage still expects all its bytes; the launch has 2-CTA clusters."""
    params = {"cluster": (2, 1), "tile": (128, 256, 64), "epilogue": "registers", "split_k": 1}
    module, _, _ = run_pipeline(linear(1000, 1000, 512).module, params)
    text, plan = lower_to_ptx(module)
    a, w = plan.tensor_maps
    assert (a.box, a.multicast) == ((128, 64), 1)
    assert (w.box, w.multicast, w.tile_bytes) == ((128, 64), 2, 256 * 128)
    assert plan.cluster == 2 and plan.grid % 2 == 0
    assert text.count(".multicast::cluster") == 2
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r" in text and ", 49152;" in text
    assert "mbarrier.arrive.shared::cluster.b64" in text and "MEMBAR" not in text
    assert text.count("barrier.cluster.wait.acquire.aligned") == 2


def test_smem_epilogue_stores_eligible_outputs_with_tma():
    """Epilogue "smem": outputs with 16-byte rows get a store tensor map of 64-row boxes of
    128 swizzled bytes, written with stmatrix (bf16) or st.shared.v2 (f32); an output whose
    rows are not (N = 501 bf16), or a warpgroup tile not a whole number of boxes wide, is
    stored from registers."""
    params = {"epilogue": "smem", "split_k": 1, "tile": (128, 128, 64)}
    module, _, _ = run_pipeline(linear(300, 504, 200).module, params)
    text, plan = lower_to_ptx(module)
    out = plan.tensor_maps[-1]
    assert (out.box, out.swizzle, out.dtype) == ((64, 64), 128, "bf16")
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in text
    # Two boxes of 64 columns per m64 block; four stmatrix x4 per box.
    assert text.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 8
    assert "st.global" not in text
    module, _, _ = run_pipeline(horizontal(300, 512, 200).module, params)
    text, plan = lower_to_ptx(module)
    boxes = sorted((m.box, m.dtype) for m in plan.tensor_maps[-3:])
    assert boxes == [((64, 32), "f32"), ((64, 32), "f32"), ((64, 64), "bf16")]
    assert "st.shared.v2.f32" in text
    module, _, _ = run_pipeline(linear(300, 504, 200).module, {**params, "tile": (128, 96, 64)})
    text, plan = lower_to_ptx(module)
    assert len(plan.tensor_maps) == 2 and "bulk_group" not in text
    module, _, _ = run_pipeline(linear(300, 501, 200).module, params)
    text, plan = lower_to_ptx(module)
    assert len(plan.tensor_maps) == 2
    assert "st.global" in text and "bulk_group" not in text


@pytest.mark.skipif(gpu_unavailable_reason() is None, reason="a GPU is present")
def test_calling_without_a_gpu_is_a_clear_error():
    """Compiling needs no GPU; calling says why it cannot run."""
    import numpy as np

    kernel = built("linear_256")
    inputs = [np.zeros(v.shape, v.numpy_dtype) for v in case("linear_256").fusion().inputs]
    with pytest.raises(LaunchError, match="compiled to PTX, but cannot run here"):
        kernel(*inputs)


def test_bind_checks_each_array_before_encoding_tensor_maps():
    """Binding names the argument whose dtype, shape or layout the kernel cannot address;
    the bias (read element by element) must be contiguous and pair-aligned. No GPU is
    needed: the checks run before any driver call."""
    import ml_dtypes
    import numpy as np

    from mmcomp.runtime import DeviceArray

    kernel = built("linear_bias")
    specs = kernel.argument_specs()
    base = 1 << 20

    def arrays(**changed: DeviceArray) -> list[DeviceArray]:
        made = []
        for index, (name, shape, dtype) in enumerate(specs):
            made.append(changed.get(name, DeviceArray(base * (index + 1), shape, dtype)))
        return made

    bias = next(spec for spec in specs if spec[0] == "bias")
    _, (n,), dtype = bias
    with pytest.raises(LaunchError, match=r"argument 'bias': base address 0x100002 is not "):
        kernel.bind(arrays(bias=DeviceArray(base + 2, (n,), dtype)))
    with pytest.raises(LaunchError, match=r"argument 'bias': expected a C-contiguous array"):
        kernel.bind(arrays(bias=DeviceArray(base, (n,), dtype, strides=(4,))))
    with pytest.raises(LaunchError, match=r"'bias': expected dtype bfloat16, found float32"):
        kernel.bind(arrays(bias=DeviceArray(base, (n,), np.float32)))
    with pytest.raises(LaunchError, match=r"argument 'bias': expected shape"):
        kernel.bind(arrays(bias=DeviceArray(base, (n + 1,), ml_dtypes.bfloat16)))
