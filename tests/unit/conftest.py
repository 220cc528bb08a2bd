"""Shared pytest set-up: the `gpu` marker skips with a reason where no sm_90 GPU is present."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def gpu_skip_reason() -> str | None:
    """None when an sm_90 GPU is usable here; otherwise why not (from the runtime's checks)."""
    from mmcomp.runtime import gpu_unavailable_reason

    return gpu_unavailable_reason()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" not in item.keywords:
            continue
        reason = gpu_skip_reason()
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"needs an sm_90 GPU: {reason}"))
