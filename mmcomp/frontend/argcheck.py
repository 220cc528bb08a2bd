"""The one check of an array argument's shape and dtype against what its callee expects.

Every entry point that takes arrays checks them with `check_shape_and_dtype`: the compiled
kernel's call (`Kernel.bind`), the cuda back end and the runtime (through
`mmcomp.runtime.arrays.check_dtype_and_shape`, by `ArraySpec`), the reference interpreter
and the schedule executor. Each names the argument its own way (`label`) and raises its own
error class; the messages read

    {label}: expected shape [128, 64], found [64, 128]
    {label}: expected dtype bfloat16, found float32
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mmcomp.errors import LaunchError


def check_shape_and_dtype(
    label: str,
    shape: Sequence[int],
    dtype: Any,
    expected_shape: Sequence[int],
    expected_dtype: Any,
    error: type[Exception] = LaunchError,
    *,
    dtype_first: bool = False,
    show_shape: Callable[[Sequence[int]], object] = list,
    show_dtype: Callable[[Any], object] = str,
) -> None:
    """Raise `error` naming `label` when `shape` or `dtype` differ from the expected ones.

    The shape is checked first unless `dtype_first`; `show_shape` and `show_dtype` spell
    shapes and dtypes in the message (a list, or `tuple` for the schedule executor's
    "(64, 32)"; str, or the runtime's `dtype_name`).
    """
    shape_problem = (
        None
        if tuple(shape) == tuple(expected_shape)
        else f"expected shape {show_shape(expected_shape)}, found {show_shape(shape)}"
    )
    dtype_problem = (
        None
        if dtype == expected_dtype
        else f"expected dtype {show_dtype(expected_dtype)}, found {show_dtype(dtype)}"
    )
    problems = (dtype_problem, shape_problem) if dtype_first else (shape_problem, dtype_problem)
    for problem in problems:
        if problem is not None:
            raise error(f"{label}: {problem}")


def _role_name(role: str) -> str:
    return {"m": "M", "n": "N", "k": "K"}.get(role, f"batch axis {role}")


def bind_extents(
    where: str,
    names: Sequence[str],
    shapes: Sequence[Sequence[int]],
    expected: Sequence[Sequence[int]],
    roles: Sequence[Sequence[str]],
    error: type[Exception] = LaunchError,
) -> dict[str, int]:
    """The runtime extent of each dynamic role, read from the arrays' `shapes`.

    `expected` are the declared shapes (a dynamic axis is `mmcomp.DYNAMIC`) and `roles`
    the axis roles of each input ("" where unknown: a static axis of a loaded kernel). A
    static extent that differs is an error naming the input and the axis; two inputs that
    disagree on one dynamic extent, an error naming both.
    """
    from mmcomp.dialects.fusion import format_extent, is_dynamic

    found: dict[str, tuple[int, str, int]] = {}
    for name, shape, declared, axis_roles in zip(names, shapes, expected, roles, strict=True):
        label = f"{where}: input {name!r}"
        if len(shape) != len(declared):
            shown = "[" + ", ".join(format_extent(e) for e in declared) + "]"
            raise error(
                f"{label}: expected rank {len(declared)} (shape {shown}), found shape {list(shape)}"
            )
        for axis, (extent, want, role) in enumerate(zip(shape, declared, axis_roles, strict=True)):
            if not is_dynamic(want):
                if extent != want:
                    what = f" ({_role_name(role) if role != '_' else 'absent'})" if role else ""
                    raise error(
                        f"{label}: axis {axis}{what}: expected extent {want} (a static axis), "
                        f"found {extent} (shape {list(shape)})"
                    )
                continue
            if role not in found:
                found[role] = (extent, name, axis)
                continue
            first, first_name, first_axis = found[role]
            if extent != first:
                raise error(
                    f"{where}: inputs {first_name!r} and {name!r} disagree on the dynamic "
                    f"extent {_role_name(role)}: {first_name!r} axis {first_axis} is {first}, "
                    f"{name!r} axis {axis} is {extent}"
                )
    return {role: extent for role, (extent, _, _) in found.items()}
