"""M buckets: one compile of a fusion with a dynamic M runs every M, with the schedule of the
M's bucket, each bucket's kernel compiled once (mmcomp.schedule.buckets)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from test_dynamic import K, N, linear

import mmcomp
import mmcomp.cache
from mmcomp.errors import FusionError, ScheduleError
from mmcomp.pipeline import BucketedKernel
from mmcomp.schedule.buckets import M_BUCKETS, NOMINAL_BUCKET, bucket_for


def random(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return (rng.standard_normal(shape) + 0.5).astype(ml_dtypes.bfloat16)


def relative_error(got: np.ndarray, a: np.ndarray, w: np.ndarray) -> float:
    want = a.astype(np.float64) @ w.astype(np.float64).T
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


def test_eight_buckets_cover_every_m():
    assert len(M_BUCKETS) <= 8 and M_BUCKETS[-1] == 16384
    assert [bucket_for(m) for m in (0, 1, 16, 17, 32, 33, 64, 65, 128, 129, 4096, 4097)] == [
        16,
        16,
        16,
        32,
        32,
        64,
        64,
        128,
        128,
        256,
        4096,
        16384,
    ]
    assert bucket_for(16385) == bucket_for(65536) == bucket_for(10**6) == 16384


def test_a_serving_loop_compiles_at_most_one_kernel_per_bucket():
    """Calls at M drawn from 1..8192 are right, and build no more kernels than buckets."""
    kernel = mmcomp.compile(linear(), backend="interp")
    assert isinstance(kernel, BucketedKernel)
    assert set(kernel.kernels) == {NOMINAL_BUCKET}  # compiled at once
    rng = np.random.default_rng(7)
    w = random((N, K), rng)
    ms = [1, 2, 7, 64, 65, 129, 1000, 8192, *rng.integers(1, 8193, size=12).tolist()]
    for m in ms:
        a = random((m, K), rng)
        (y,) = kernel(a, w)
        assert y.shape == (m, N)
        assert relative_error(y, a, w) < 1e-2, m
    assert set(kernel.kernels) == {bucket_for(m) for m in ms} | {NOMINAL_BUCKET}
    assert len(kernel.kernels) <= len(M_BUCKETS)
    builds = mmcomp.cache.stats()["builds"]
    again = mmcomp.compile(linear(), backend="interp")  # the buckets' kernels are cached
    assert again.kernel_for(8192).stage_ir == kernel.kernel_for(8192).stage_ir
    assert mmcomp.cache.stats()["builds"] == builds


def test_each_bucket_has_the_schedule_chosen_for_its_m():
    """A decode-sized M splits K across the SMs; a prefill-sized one does not."""
    kernel = mmcomp.compile(linear(4096, 4096), backend="interp")
    small, large = kernel.kernel_for(16).params, kernel.kernel_for(8192).params
    assert small.split_k > 1 and large.split_k == 1
    pinned = mmcomp.compile(linear(4096, 4096), backend="interp", schedule_m=16)
    assert not isinstance(pinned, BucketedKernel)
    assert pinned.params.format() == small.format()
    assert kernel.params.format() == kernel.kernel_for(NOMINAL_BUCKET).params.format()


def test_a_pinned_schedule_runs_at_every_m():
    kernel = mmcomp.compile(linear(), backend="interp", schedule_m=4096, tile=(64, 64, 32))
    rng = np.random.default_rng(3)
    w = random((N, K), rng)
    for m in (1, 63, 300):
        a = random((m, K), rng)
        (y,) = kernel(a, w)
        assert relative_error(y, a, w) < 1e-2


def test_bad_calls_and_keywords_are_errors():
    kernel = mmcomp.compile(linear(), backend="interp")
    rng = np.random.default_rng(5)
    with pytest.raises(FusionError, match=r"input 'w': axis 1 \(K\): expected extent 40"):
        kernel(random((10, K), rng), random((N, K - 1), rng))
    (y,) = kernel(np.zeros((0, K), ml_dtypes.bfloat16), random((N, K), rng))
    assert y.shape == (0, N)
    with pytest.raises(ScheduleError, match=r"schedule_m: expected a positive int"):
        mmcomp.compile(linear(), backend="interp", schedule_m=0)
    with pytest.raises(ScheduleError, match=r"schedule_m: expected a positive int"):
        mmcomp.compile(linear(), schedule_m=-3)  # the cuda back end checks it too
