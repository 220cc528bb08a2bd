"""The element types mmcomp knows, in one table: short name, numpy dtype, bytes, xDSL type.

The short name of a dtype ("bf16", "f16", "f32", "f64", "i32", "i64") is MLIR's spelling of
its builtin type, except the fp8 types ("f8e4m3", "f8e5m2", whose builtin types MLIR spells
f8E4M3FN and f8E5M2); the long name ("bfloat16", "float16", "float8_e4m3fn", ...) is numpy's
and torch's, and is accepted wherever a short name is. Fusions take bf16, f16, f32 and the two
fp8 types (`FUSION_DTYPES`; fp8 only as contraction operands on the cuda back end); the
kernels and interpreters also use the others for indices, workspaces and accumulators.

Importing this module imports neither numpy nor xDSL: a dtype's numpy dtype (ml_dtypes's
bfloat16 for bf16) and its xDSL builtin type are made on first use.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type under each of its names."""

    name: str
    """The short name, MLIR's spelling of the builtin type: bf16, f16, f32, ..."""
    long_name: str
    """numpy's and torch's name (bfloat16, float16, ...), accepted as an alias."""
    bytes: int
    """The size of one element in bytes."""
    fusion: bool = False
    """Whether fusions take it as an element type."""
    builtin: str | None = None
    """MLIR's spelling of the builtin type where it differs from `name` (f8E4M3FN)."""

    @property
    def names(self) -> tuple[str, str]:
        """The short name and the long name."""
        return (self.name, self.long_name)

    @functools.cached_property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype (ml_dtypes.bfloat16 for bf16)."""
        numpy = importlib.import_module("numpy")
        importlib.import_module("ml_dtypes")  # registers bfloat16 and the fp8 types with numpy
        return numpy.dtype(self.long_name)

    @functools.cached_property
    def element_type(self) -> Attribute:
        """The xDSL builtin element type (BFloat16Type() for bf16)."""
        return getattr(importlib.import_module("xdsl.dialects.builtin"), self.builtin or self.name)

    @property
    def is_fp8(self) -> bool:
        """Whether it is one of the 8-bit float types (f8e4m3, f8e5m2)."""
        return self.bytes == 1 and self.name.startswith("f8")


BF16 = DType("bf16", "bfloat16", 2, fusion=True)
"""bfloat16 (ml_dtypes.bfloat16 on the host)."""
F16 = DType("f16", "float16", 2, fusion=True)
"""IEEE half precision."""
F32 = DType("f32", "float32", 4, fusion=True)
"""IEEE single precision."""
F8E4M3 = DType("f8e4m3", "float8_e4m3fn", 1, fusion=True, builtin="f8E4M3FN")
"""fp8 with 4 exponent and 3 mantissa bits, finite only (largest 448; ml_dtypes.float8_e4m3fn)."""
F8E5M2 = DType("f8e5m2", "float8_e5m2", 1, fusion=True, builtin="f8E5M2")
"""fp8 with 5 exponent and 2 mantissa bits, IEEE-like (largest 57344; ml_dtypes.float8_e5m2)."""
F64 = DType("f64", "float64", 8)
"""IEEE double precision (the reference interpreter's accumulator)."""
I32 = DType("i32", "int32", 4)
"""32-bit signed integer (kernel workspaces such as split-K counters)."""
I64 = DType("i64", "int64", 8)
"""64-bit signed integer."""

DTYPES: tuple[DType, ...] = (BF16, F16, F32, F8E4M3, F8E5M2, F64, I32, I64)
"""Every dtype, in this order."""

FUSION_DTYPES: tuple[DType, ...] = tuple(dtype for dtype in DTYPES if dtype.fusion)
"""The dtypes fusions take: bf16, f16, f32, f8e4m3 and f8e5m2."""

FUSION_DTYPE_NAMES = "bf16, f16, f32, f8e4m3 or f8e5m2"
"""The fusion dtypes as diagnostics list them."""

GROUP_SIZE_DTYPES: tuple[DType, ...] = (I32,)
"""The dtypes of a grouped contraction's group sizes (offsets or counts): i32 inputs, read
on the device, never contraction operands."""

FP8_DTYPES: tuple[DType, ...] = (F8E4M3, F8E5M2)
"""The 8-bit float types: contraction operands dequantized by their scales."""

_BY_NAME: dict[str, DType] = {name: dtype for dtype in DTYPES for name in dtype.names}


def by_name(name: str) -> DType | None:
    """The dtype of a short or long name ("bf16" or "bfloat16"), or None."""
    return _BY_NAME.get(name)


def of_numpy(dtype: np.dtype) -> DType | None:
    """The dtype of a numpy dtype, or None."""
    for candidate in DTYPES:
        if candidate.numpy_dtype == dtype:
            return candidate
    return None


def of_element_type(element_type: Attribute) -> DType | None:
    """The dtype of an xDSL builtin element type, or None."""
    for candidate in DTYPES:
        if candidate.element_type == element_type:
            return candidate
    return None
