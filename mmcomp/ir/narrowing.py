"""isinstance checks that narrow to fully known types, for pyright's strict mode.

pyright narrows `isinstance(value, C)` of an `Attribute`, `object` or `Any` value to a
generic class `C` as `C[Unknown]`: it does not apply the type parameter's default. So
after `isinstance(attr, TensorType)`, `attr.element_type` is Unknown, and after
`isinstance(array, np.ndarray)` so are `array.shape` and `array.dtype`. Each check here
narrows to the default parameters instead (`TensorType[Attribute]`, `IntAttr[int]`,
`np.ndarray[Any, Any]`); at run time it is the same isinstance call.
"""

from __future__ import annotations

import ctypes
from typing import Any, TypeGuard

import numpy as np
from xdsl.dialects.builtin import IntAttr, MemRefType, TensorType, VectorType
from xdsl.ir import Attribute


def is_tensor(value: object) -> TypeGuard[TensorType[Attribute]]:
    """isinstance(value, TensorType)."""
    return isinstance(value, TensorType)


def is_memref(value: object) -> TypeGuard[MemRefType[Attribute]]:
    """isinstance(value, MemRefType)."""
    return isinstance(value, MemRefType)


def is_vector(value: object) -> TypeGuard[VectorType[Attribute]]:
    """isinstance(value, VectorType)."""
    return isinstance(value, VectorType)


def is_int_attr(value: object) -> TypeGuard[IntAttr[int]]:
    """isinstance(value, IntAttr)."""
    return isinstance(value, IntAttr)


def is_ndarray(value: object) -> TypeGuard[np.ndarray[Any, Any]]:
    """isinstance(value, np.ndarray)."""
    return isinstance(value, np.ndarray)


def is_ctypes_scalar(value: object) -> TypeGuard[ctypes._SimpleCData[Any]]:  # pyright: ignore[reportPrivateUsage]
    """isinstance(value, ctypes._SimpleCData): a ctypes scalar (c_int, c_uint64, ...).

    `_SimpleCData` is private to ctypes, but it is the one base class of its scalar types.
    """
    return isinstance(value, ctypes._SimpleCData)  # pyright: ignore[reportPrivateUsage]
