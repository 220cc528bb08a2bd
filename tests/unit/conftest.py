"""Shared pytest set-up: the `gpu` marker skips with a reason where no sm_90 GPU is present."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def gpu_skip_reason() -> str | None:
    """None when an sm_90 GPU is usable here; otherwise why not."""
    try:
        from cuda.bindings import driver
    except ImportError as error:
        return f"cuda-python is not importable: {error}"
    (err,) = driver.cuInit(0)
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"no CUDA driver or GPU (cuInit returned {err.name})"
    err, count = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or count == 0:
        return "no CUDA device present"
    err, major = driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0
    )
    if err != driver.CUresult.CUDA_SUCCESS or major != 9:
        return f"device 0 is compute capability {major}.x, not 9.0 (Hopper)"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" not in item.keywords:
            continue
        reason = gpu_skip_reason()
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"needs an sm_90 GPU: {reason}"))
