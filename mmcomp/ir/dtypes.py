"""The element types mmcomp knows, in one table: short name, numpy dtype, bytes, xDSL type.

The short name of a dtype ("bf16", "f16", "f32", "f64", "i32", "i64") is MLIR's spelling of
its builtin type; the long name ("bfloat16", "float16", ...) is numpy's and torch's, and is
accepted wherever a short name is. Fusions take bf16, f16 and f32 (`FUSION_DTYPES`); the
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

    @property
    def names(self) -> tuple[str, str]:
        """The short name and the long name."""
        return (self.name, self.long_name)

    @functools.cached_property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype (ml_dtypes.bfloat16 for bf16)."""
        numpy = importlib.import_module("numpy")
        importlib.import_module("ml_dtypes")  # registers bfloat16 with numpy
        return numpy.dtype(self.long_name)

    @functools.cached_property
    def element_type(self) -> Attribute:
        """The xDSL builtin element type (BFloat16Type() for bf16)."""
        return getattr(importlib.import_module("xdsl.dialects.builtin"), self.name)


BF16 = DType("bf16", "bfloat16", 2, fusion=True)
"""bfloat16 (ml_dtypes.bfloat16 on the host)."""
F16 = DType("f16", "float16", 2, fusion=True)
"""IEEE half precision."""
F32 = DType("f32", "float32", 4, fusion=True)
"""IEEE single precision."""
F64 = DType("f64", "float64", 8)
"""IEEE double precision (the reference interpreter's accumulator)."""
I32 = DType("i32", "int32", 4)
"""32-bit signed integer (kernel workspaces such as split-K counters)."""
I64 = DType("i64", "int64", 8)
"""64-bit signed integer."""

DTYPES: tuple[DType, ...] = (BF16, F16, F32, F64, I32, I64)
"""Every dtype, in this order."""

FUSION_DTYPES: tuple[DType, ...] = tuple(dtype for dtype in DTYPES if dtype.fusion)
"""The dtypes fusions take: bf16, f16 and f32."""

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
