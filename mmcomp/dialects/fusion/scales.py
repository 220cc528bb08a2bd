"""Scales of fp8 contractions: the three modes and the shapes that select them.

A contraction of fp8 operands may carry two f32 scales, one per factor; it then computes the
product of the dequantized factors (`a * scale_a`, `b * scale_b`, broadcast per mode), in f32.
The mode follows from the scales' shapes, as in torch._scaled_mm:

- per-tensor (`tensor`): both scales are scalars, shape [];
- row-wise (`row`): each scale has its factor's shape without the summed (K) axes: a [M] and
  w [N] for a linear, a [..., M] and b [..., N] for a matmul;
- block-wise (`block`): each scale has its factor's shape with the blocked axes divided by
  128 (rounded up): K for the left factor (1 x 128 groups: a [M, ceil(K/128)]), K and N for
  the right one (128 x 128 blocks: w [ceil(N/128), ceil(K/128)], matmul's b
  [ceil(K/128), ceil(N/128)]).

`ScaleAxes` says, per factor, which axes are summed and which are blocked; each contraction
op gives its own (`scale_axes`), and these functions do the rest for all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mmcomp.dialects.fusion.attrs import format_extent, is_dynamic

SCALE_BLOCK = 128
"""The extent one block-wise scale covers along each blocked axis."""

SCALE_MODES = ("tensor", "row", "block")
"""The scaling modes: per-tensor, row-wise, block-wise."""

MODE_NAMES = {"tensor": "per-tensor", "row": "row-wise", "block": "block-wise"}
"""How diagnostics and docs name each mode."""


@dataclass(frozen=True)
class ScaleAxes:
    """The axes of one factor that its scale treats specially."""

    summed: tuple[int, ...]
    """The summed (K) axes: a row-wise scale lacks them."""
    blocked: tuple[int, ...] | None
    """The axes a block-wise scale divides into blocks of 128; None where the op takes no
    block-wise scales."""


def _blocks(extent: int) -> int:
    """The number of 128-blocks covering `extent` (a dynamic extent stays dynamic)."""
    return extent if is_dynamic(extent) else -(-extent // SCALE_BLOCK)


def expected_shape(shape: Sequence[int], axes: ScaleAxes, mode: str) -> tuple[int, ...] | None:
    """The shape a scale of `mode` has for a factor of `shape` (None: the op takes none)."""
    if mode == "tensor":
        return ()
    if mode == "row":
        return tuple(extent for axis, extent in enumerate(shape) if axis not in axes.summed)
    if axes.blocked is None:
        return None
    return tuple(
        _blocks(extent) if axis in axes.blocked else extent for axis, extent in enumerate(shape)
    )


def mode_of(scale: Sequence[int], shape: Sequence[int], axes: ScaleAxes) -> str | None:
    """The mode whose expected shape `scale` is, or None."""
    for mode in SCALE_MODES:
        if expected_shape(shape, axes, mode) == tuple(scale):
            return mode
    return None


def _format(shape: Sequence[int]) -> str:
    return "[" + ", ".join(format_extent(extent) for extent in shape) + "]"


def expected_shapes(shape: Sequence[int], axes: ScaleAxes) -> str:
    """The shapes a scale may have for a factor of `shape`, one per mode, for diagnostics."""
    found: list[str] = []
    for mode in SCALE_MODES:
        expected = expected_shape(shape, axes, mode)
        if expected is not None:
            found.append(f"{_format(expected)} ({MODE_NAMES[mode]})")
    return ", ".join(found[:-1]) + " or " + found[-1]


def scales_problem(
    factors: Sequence[tuple[str, Sequence[int], ScaleAxes]],
    scales: Sequence[tuple[str, Sequence[int]]],
) -> tuple[str | None, str | None]:
    """(mode, None) for scales whose shapes select one mode for both factors, else (None,
    the problem): `factors` are (name, shape, axes), `scales` (name, shape), in order."""
    modes: list[str] = []
    for (factor, shape, axes), (name, scale) in zip(factors, scales, strict=True):
        mode = mode_of(scale, shape, axes)
        if mode is None:
            return None, (
                f"'{name}': expected shape {expected_shapes(shape, axes)} for '{factor}' of "
                f"shape {_format(shape)}, found {_format(scale)}"
            )
        modes.append(mode)
    if modes[0] != modes[1]:
        (_, second_shape, second_axes), (second, _) = factors[1], scales[1]
        expected = expected_shape(second_shape, second_axes, modes[0])
        assert expected is not None
        return None, (
            f"'{second}': expected shape {_format(expected)} ({MODE_NAMES[modes[0]]}, as "
            f"'{scales[0][0]}'), found the {MODE_NAMES[modes[1]]} {_format(scales[1][1])}; both "
            "scales have one mode"
        )
    return modes[0], None


def dequantized(value: np.ndarray, scale: np.ndarray, axes: ScaleAxes, mode: str) -> np.ndarray:
    """`value * scale` with the scale broadcast per `mode` (in the dtype of the product)."""
    if mode == "tensor":
        return value * scale
    if mode == "row":
        return value * np.expand_dims(scale, axes.summed)
    assert axes.blocked is not None
    expanded = scale
    for axis in axes.blocked:
        expanded = np.repeat(expanded, SCALE_BLOCK, axis=axis)
        kept = [slice(None)] * expanded.ndim
        kept[axis] = slice(0, value.shape[axis])
        expanded = expanded[tuple(kept)]
    return value * expanded
