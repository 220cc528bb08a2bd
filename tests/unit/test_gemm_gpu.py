"""The GEMM built in the hopper dialect (gemm_builder.py): it assembles cleanly everywhere,
and on an H200 it computes C = A W^T and C = A B to bf16 accuracy.

Run on the GPU machine with `python -m pytest tests/unit/test_gemm_gpu.py`. A wrong barrier
parity hangs rather than fails, hence the timeouts.
"""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest
from gemm_builder import EPILOGUES, STAGES, GemmKernel, build_gemm, run_gemm

from mmcomp.arch.ptxas import PtxasError, assemble, check_no_spills, check_sass, find_nvdisasm

LAYOUTS = ("linear", "matmul")
SHAPES = [(1024, 1024, 1024), (1000, 1000, 1000)]
VARIANTS = [(layout, epilogue) for layout in LAYOUTS for epilogue in EPILOGUES]


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda v: "-".join(v))
def kernel(request: pytest.FixtureRequest) -> GemmKernel:
    return build_gemm(*request.param)


def test_kernel_structure(kernel: GemmKernel):
    """The PTX has the ring's barriers, the TMA loads, the wgmmas and the register split."""
    ptx = kernel.ptx
    assert f".visible .entry {kernel.name}(" in ptx
    assert ".maxnreg 168" in ptx
    assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * STAGES
    loads = 2 if kernel.layout == "linear" else 3
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == loads
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 4
    trans_b = "1" if kernel.layout == "matmul" else "0"
    assert f"1, 1, 0, {trans_b};" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assert "hopper." not in ptx
    if kernel.epilogue == "store":
        assert ptx.count("st.global.b16") == 64
    else:
        assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 8
        assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 1
        assert "fence.proxy.async.shared::cta;" in ptx


def test_kernel_assembles_without_spills(kernel: GemmKernel):
    result = assemble(kernel.ptx)
    check_no_spills(result)
    report = result.resources[kernel.name]
    assert report.spills == 0 and report.stack_frame == 0
    assert report.registers <= 168


def test_sass_has_hgmma(kernel: GemmKernel):
    try:
        find_nvdisasm()
    except PtxasError as error:
        pytest.skip(f"nvdisasm is not available: {error}")
    sass = check_sass(
        assemble(kernel.ptx).cubin,
        present=["HGMMA", "UTMALDG", "USETMAXREG"],
        absent=["LDL", "STL"],
    )
    assert sass.count("HGMMA.64x128x16.F32.BF16") == 4
    assert ("tnspB" in sass) == (kernel.layout == "matmul")


def _inputs(layout: str, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Fresh random bf16 operands: A[M, K] and W[N, K] (linear) or B[K, N] (matmul)."""
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b_shape = (n, k) if layout == "linear" else (k, n)
    b = rng.standard_normal(b_shape, dtype=np.float32).astype(ml_dtypes.bfloat16)
    return a, b


def _reference(layout: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a64 @ (b64.T if layout == "linear" else b64)


@pytest.mark.gpu
@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_on_gpu(kernel: GemmKernel, shape: tuple[int, int, int]):
    m, n, k = shape
    a, b = _inputs(kernel.layout, m, n, k)
    start = time.perf_counter()
    c = run_gemm(kernel, a, b)
    seconds = time.perf_counter() - start
    assert c.shape == (m, n) and c.dtype == ml_dtypes.bfloat16
    result = c.astype(np.float64)
    unwritten = np.argwhere(~np.isfinite(result))
    assert unwritten.size == 0, f"{len(unwritten)} outputs not written, first {unwritten[:4]}"
    expected = _reference(kernel.layout, a, b)
    error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    print(f"{kernel.name} {m}x{n}x{k}: relative error {error:.2e} ({seconds:.2f} s with load)")
    assert error < 1e-2
