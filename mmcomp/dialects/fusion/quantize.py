"""Quantization to fp8: the scale of each group of elements, and the fp8 values.

Two ops make an fp8 tensor that a scaled contraction takes (docs/fp8.md):

- `fusion.quantize_scale %y for f8E4M3FN group 128`: the scale of each group of `y`'s
  last axis, `amax(|y|) / largest`, where `largest` is the largest finite value of the fp8
  type (448 for e4m3, 57344 for e5m2). With `group 128` the groups are 1 x 128 runs of the
  last axis and the result is `[..., M, ceil(N / 128)]` (the layout a block-wise `scale_a`
  reads); without a group each row is one group and the result is `[..., M]` (a row-wise
  `scale_a`).
- `fusion.quantize %y, %scale`: `y / scale` cast to the fp8 type with saturation (values
  beyond the largest finite become it; 0 where the scale is 0), the scale broadcast per
  its shape: `[]` per tensor, `[..., M]` per row, `[..., M, ceil(N / 128)]` per group.

The casts to fp8 saturate everywhere (`saturated`): a cast to fp8 is `cvt.rn.satfinite`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import I64, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion.attrs import dtype_name, is_dynamic
from mmcomp.dialects.fusion.ops import (
    DefinedBeforeUse,
    checked_tensor,
    format_shape,
    is_fp8,
    static_shape,
)
from mmcomp.dialects.fusion.scales import SCALE_BLOCK
from mmcomp.ir.dtypes import by_name, of_numpy
from mmcomp.ir.narrowing import is_tensor

QUANTIZE_GROUP = SCALE_BLOCK
"""The one group size of group-wise quantization: 1 x 128 runs of the last axis."""

LARGEST_FINITE = {"f8e4m3": 448.0, "f8e5m2": 57344.0}
"""The largest finite value of each fp8 type: the top of the saturating cast."""

GROUPED_N = "n128"
"""The axis role of a group-wise scale's last axis: the n axis in groups of 128."""


def saturated(values: Any, dtype: np.dtype) -> np.ndarray:
    """`values` rounded to `dtype`; to an fp8 type with saturation (clipped to its largest
    finite value before rounding, NaN kept), as `cvt.rn.satfinite` does."""
    array = np.asarray(values)
    found = of_numpy(np.dtype(dtype))
    if found is None or found.name not in LARGEST_FINITE:
        return array.astype(dtype)
    largest = LARGEST_FINITE[found.name]
    return np.clip(array, -largest, largest).astype(dtype)


def group_count(extent: int) -> int:
    """The 1 x 128 groups covering `extent` (a dynamic extent stays dynamic)."""
    return extent if is_dynamic(extent) else -(-extent // QUANTIZE_GROUP)


def scale_shapes(shape: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """The shape of a quantization scale of each granularity for a tensor of `shape`."""
    return {
        "tensor": (),
        "row": tuple(shape[:-1]),
        "group": (*shape[:-1], group_count(shape[-1])),
    }


def granularity_of(scale: Sequence[int], shape: Sequence[int]) -> str | None:
    """The granularity ("tensor", "row", "group") a scale of shape `scale` has, or None.

    Where two coincide (a [M, 1] tensor's row and group scales, [M] against [M, 1]) the
    shapes still differ in rank, so the shape alone decides.
    """
    for granularity, expected in scale_shapes(shape).items():
        if tuple(scale) == expected:
            return granularity
    return None


def _expected(shape: Sequence[int]) -> str:
    shapes = scale_shapes(shape)
    return (
        f"{format_shape(shapes['tensor'])} (per tensor), {format_shape(shapes['row'])} (per "
        f"row) or {format_shape(shapes['group'])} (per 1 x {QUANTIZE_GROUP} group)"
    )


def _fp8_name(op: IRDLOperation, what: str, element_type: Attribute) -> str:
    """The short name of an fp8 element type, or a VerifyException naming `what`."""
    if not is_fp8(element_type):
        raise VerifyException(
            f"{op.name}: {what}: expected an fp8 type (f8E4M3FN or f8E5M2), found {element_type}"
        )
    name = dtype_name(element_type)
    assert name is not None
    return name


def _checked_input(op: IRDLOperation, value: SSAValue) -> TensorType:
    """The quantized tensor: rank >= 1, of a 16- or 32-bit float type."""
    source = checked_tensor(op, "operand 'input'", value.type)
    if not static_shape(source):
        raise VerifyException(f"{op.name}: operand 'input': expected rank >= 1, found a scalar")
    if is_fp8(source.element_type):
        raise VerifyException(
            f"{op.name}: operand 'input': expected bf16, f16 or f32 (the values to quantize), "
            f"found {source.element_type}"
        )
    return source


@irdl_op_definition
class QuantizeScaleOp(IRDLOperation):
    """The f32 scale of each group of the input's last axis: amax(|input|) / largest."""

    name = "fusion.quantize_scale"

    input = operand_def()
    """The values to quantize (bf16, f16 or f32)."""
    result = result_def()
    """The scales: [..., M, ceil(N / 128)] with a group, [..., M] without, f32."""
    target = prop_def(TypeAttribute)
    """The fp8 type the values are quantized to (its largest finite value divides amax)."""
    group = opt_prop_def(IntegerAttr[I64])
    """128: 1 x 128 groups along the last axis; absent: one group per row."""

    assembly_format = (
        "$input `for` $target (`group` $group^)? attr-dict `:` type($input) `to` type($result)"
    )
    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(self, input: SSAValue, target: Attribute, group: int | None):
        shape = _shape(input)
        granularity = "group" if group is not None else "row"
        result_type = TensorType(checked_f32(), scale_shapes(shape)[granularity])
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "target": target,
                **({} if group is None else {"group": IntegerAttr(group, i64)}),
            },
        )

    @property
    def granularity(self) -> str:
        """ "group" (1 x 128 groups) or "row"."""
        return "row" if self.group is None else "group"

    @property
    def largest(self) -> float:
        """The largest finite value of the target type."""
        name = dtype_name(self.target)
        assert name is not None
        return LARGEST_FINITE[name]

    def verify_(self) -> None:
        source = _checked_input(self, self.input)
        _fp8_name(self, "property 'target'", self.target)
        if self.group is not None and self.group.value.data != QUANTIZE_GROUP:
            raise VerifyException(
                f"{self.name}: property 'group': expected {QUANTIZE_GROUP} (or none: one "
                f"group per row), found {self.group.value.data}"
            )
        result = checked_tensor(self, "result", self.result.type)
        expected = scale_shapes(static_shape(source))[self.granularity]
        if result.element_type != checked_f32() or static_shape(result) != expected:
            raise VerifyException(
                f"{self.name}: result: expected f32 of shape {format_shape(expected)} (the "
                f"{'1 x 128 groups' if self.group is not None else 'rows'} of 'input' "
                f"{format_shape(static_shape(source))}), found {result}"
            )


@irdl_op_definition
class QuantizeOp(IRDLOperation):
    """`input / scale` cast to fp8 with saturation (0 where the scale is 0), the scale
    broadcast per tensor, per row or per 1 x 128 group of the last axis."""

    name = "fusion.quantize"

    input = operand_def()
    """The values to quantize (bf16, f16 or f32)."""
    scale = operand_def()
    """The f32 scale: [] per tensor, [..., M] per row, [..., M, ceil(N / 128)] per group."""
    result = result_def()
    """The fp8 values, of the input's shape."""

    assembly_format = (
        "$input `,` $scale attr-dict `:` `(` type($input) `,` type($scale) `)` `->` type($result)"
    )
    traits = traits_def(Pure(), DefinedBeforeUse())

    def __init__(self, input: SSAValue, scale: SSAValue, result_type: Attribute):
        super().__init__(operands=[input, scale], result_types=[result_type])

    @property
    def granularity(self) -> str:
        """ "tensor", "row" or "group": what the scale's shape selects."""
        found = granularity_of(_shape(self.scale), _shape(self.input))
        assert found is not None
        return found

    def verify_(self) -> None:
        source = _checked_input(self, self.input)
        shape = static_shape(source)
        scale = checked_tensor(self, "operand 'scale'", self.scale.type)
        if scale.element_type != checked_f32():
            raise VerifyException(
                f"{self.name}: operand 'scale': expected f32, found {scale.element_type}"
            )
        if granularity_of(static_shape(scale), shape) is None:
            raise VerifyException(
                f"{self.name}: operand 'scale': expected shape {_expected(shape)} for 'input' "
                f"of shape {format_shape(shape)}, found {format_shape(static_shape(scale))}"
            )
        result = checked_tensor(self, "result", self.result.type)
        _fp8_name(self, "result", result.element_type)
        if static_shape(result) != shape:
            raise VerifyException(
                f"{self.name}: result: expected shape {format_shape(shape)} (that of 'input'), "
                f"found {format_shape(static_shape(result))}"
            )


def checked_f32() -> Attribute:
    """The f32 element type."""
    found = by_name("f32")
    assert found is not None
    return found.element_type


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert is_tensor(value_type)
    return static_shape(value_type)


def quantize_scales(values: np.ndarray, largest: float, granularity: str) -> np.ndarray:
    """amax(|values|) / largest per row or per 1 x 128 group of the last axis (f64 math)."""
    magnitude = np.abs(values.astype(np.float64))
    if granularity == "row":
        return magnitude.max(axis=-1) / largest
    columns = magnitude.shape[-1]
    groups = group_count(columns)
    padded = np.zeros((*magnitude.shape[:-1], groups * QUANTIZE_GROUP))
    padded[..., :columns] = magnitude
    grouped = padded.reshape(*magnitude.shape[:-1], groups, QUANTIZE_GROUP)
    return grouped.max(axis=-1) / largest


def expanded_scale(scale: np.ndarray, shape: Sequence[int], granularity: str) -> np.ndarray:
    """A quantization scale broadcast to the values' `shape`, per its granularity."""
    if granularity == "tensor":
        return np.broadcast_to(scale, tuple(shape))
    if granularity == "row":
        return np.broadcast_to(scale[..., None], tuple(shape))
    repeated = np.repeat(scale, QUANTIZE_GROUP, axis=-1)
    return repeated[..., : shape[-1]]


def quantized(values: np.ndarray, scale: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`values / scale` cast to the fp8 `dtype` with saturation, 0 where the scale is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(scale == 0, 0.0, values / np.where(scale == 0, 1.0, scale))
    return saturated(ratio, dtype)
