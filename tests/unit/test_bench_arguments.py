"""tools/bench.py's `--shapes` and `--schedule` arguments."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import bench  # noqa: E402


def test_shapes_parse_into_rows():
    assert bench.parse_shapes("8x10240x8192, 1x4096x4096") == [(8, 10240, 8192), (1, 4096, 4096)]
    with pytest.raises(argparse.ArgumentTypeError, match="'8x10240': expected MxNxK"):
        bench.parse_shapes("8x10240")


def test_schedules_parse_into_overrides():
    overrides = bench.parse_schedule("tile=64x128x64,warp_specialization=pingpong,split_k=1")
    assert overrides == {"tile": (64, 128, 64), "warp_specialization": "pingpong", "split_k": 1}
    assert bench.parse_schedule("swap_ab=true") == {"swap_ab": True}
    label = "tile=64x128x64,warp_specialization=pingpong,split_k=1"
    assert bench.schedule_label(overrides) == label
    with pytest.raises(argparse.ArgumentTypeError, match="expected KEY=VALUE"):
        bench.parse_schedule("swap_ab")
