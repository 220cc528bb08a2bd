"""The attributes of the `fusion` dialect: axis roles and the iteration space.

Also the element types that fusions accept (bf16, f16, f32, f8e4m3, f8e5m2, by short name)
and the helpers that name, order and check axis roles (b0, b1, ..., m, n, k, _).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    IntAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.ir.dtypes import FUSION_DTYPES, GROUP_SIZE_DTYPES, by_name

ELEMENT_TYPES: dict[str, Attribute] = {dtype.name: dtype.element_type for dtype in FUSION_DTYPES}
"""The supported element types by their short names (from mmcomp.ir.dtypes)."""

GROUP_SIZE_ELEMENT_TYPES: dict[str, Attribute] = {
    dtype.name: dtype.element_type for dtype in GROUP_SIZE_DTYPES
}
"""The element types of a grouped contraction's group sizes (offsets, counts): i32."""

_ROLE = re.compile(r"b(0|[1-9][0-9]*)|g|m|n|n128|k|k128|_")

_ORDER = ("g", "m", "n", "n128", "k", "k128", "_")

BLOCK_ROLES = {"n128": "n", "k128": "k"}
"""The roles of an axis in groups of 128 of an iteration axis: n128 (N in groups of 128:
a group-wise quantization scale's last axis, a block-wise fp8 scale's N blocks) and k128
(K in blocks of 128: a block-wise fp8 scale's K blocks); no iteration axis has them."""

DYNAMIC = DYNAMIC_INDEX
"""The extent of a dynamic axis (`?` in IR): known only from the arrays at call time."""

DYNAMIC_ROLES = ("m", "k", "b")
"""The roles that may be dynamic: m, k (the contraction extent, e.g. the token count of a
weight gradient) and the batch roles (b0, b1, ...); n is static."""


def is_dynamic(extent: int) -> bool:
    """Whether `extent` is the dynamic extent `?`."""
    return extent == DYNAMIC


def may_be_dynamic(role: str) -> bool:
    """Whether an axis of `role` may have a dynamic extent (m, k or a batch role)."""
    return role in ("m", "k") or (role.startswith("b") and is_role(role))


def format_extent(extent: int) -> str:
    """An extent as IR and diagnostics write it: the number, or `?` when dynamic."""
    return "?" if is_dynamic(extent) else str(extent)


def dtype_name(element_type: Attribute) -> str | None:
    """The short name (bf16, f16, f32, f8e4m3, f8e5m2) of a supported element type, or None."""
    for name, candidate in ELEMENT_TYPES.items():
        if candidate == element_type:
            return name
    return None


def group_size_dtype_name(element_type: Attribute) -> str | None:
    """The short name (i32) of a group-size element type, or None."""
    for name, candidate in GROUP_SIZE_ELEMENT_TYPES.items():
        if candidate == element_type:
            return name
    return None


def tensor_type(shape: Sequence[int], dtype: str) -> TensorType:
    """The builtin tensor type of `shape` with element type `dtype` (a fusion dtype's name,
    or i32 for group sizes)."""
    return TensorType(ELEMENT_TYPES.get(dtype) or GROUP_SIZE_ELEMENT_TYPES[dtype], shape)


def _numpy_dtype(dtype: str) -> np.dtype:
    found = by_name(dtype)
    assert found is not None
    return found.numpy_dtype


def is_finite_in(value: float, dtype: str) -> bool:
    """Whether `value` is finite once rounded (to nearest even) to `dtype` (a fusion dtype)."""
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.asarray(value, dtype=np.float64).astype(_numpy_dtype(dtype))
    return bool(np.isfinite(rounded))


def largest_finite(dtype: str) -> str:
    """The largest finite value of `dtype` (a fusion dtype) as diagnostics write it."""
    numpy_dtype = _numpy_dtype(dtype)
    infinity = np.asarray(np.inf, dtype=numpy_dtype).view(f"u{numpy_dtype.itemsize}")
    largest = (infinity - 1).view(numpy_dtype)  # the bit pattern just below infinity's
    return f"{float(largest):.8g}"


def is_role(name: str) -> bool:
    """Whether `name` is an axis role: b0, b1, ... (batch), g (group), m, n, k or _
    (absent), or n128 / k128 (the n / k axis in groups of 128: the last axis of a
    group-wise quantization scale, the blocked axes of a block-wise fp8 scale)."""
    return _ROLE.fullmatch(name) is not None


def role_order(role: str) -> tuple[int, int]:
    """Sort key placing batch roles first (b0, b1, ...), then g, m, n, n128, k, k128, then
    _."""
    if role.startswith("b"):
        return (0, int(role[1:]))
    return (1, _ORDER.index(role))


def float_literal(value: float) -> str:
    """`value` as a float literal that round-trips: the shortest repr, always with a '.'."""
    text = repr(float(value))
    if "e" in text and "." not in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


@irdl_attr_definition
class AxisRolesAttr(ParametrizedAttribute):
    """The role of each axis of one tensor: b0, b1, ... (batch), m, n, k or _ (absent)."""

    name = "fusion.roles"

    entries: ArrayAttr[StringAttr]
    """One role per axis, outermost first."""

    def __init__(self, roles: Sequence[str]):
        super().__init__(ArrayAttr(StringAttr(role) for role in roles))

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles as strings, one per axis."""
        return tuple(entry.data for entry in self.entries.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            roles = parse_role_list(parser)
            problem = roles_problem(roles)
            if problem is not None:
                parser.raise_error(f"#fusion.roles: {problem}", pos, parser.pos)
        return (ArrayAttr(StringAttr(role) for role in roles),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        print_role_list(printer, self.roles)
        printer.print_string(">")

    def verify(self) -> None:
        problem = roles_problem(self.roles)
        if problem is not None:
            raise VerifyException(f"#fusion.roles: {problem}")


@irdl_attr_definition
class IterationSpaceAttr(ParametrizedAttribute):
    """The kernel's iteration space: the extent of each axis, batch axes first, then m, n, k."""

    name = "fusion.space"

    axes: ArrayAttr[StringAttr]
    """The axis names, in canonical order (b0, b1, ..., m, n, k)."""

    sizes: ArrayAttr[IntAttr]
    """The extent of each axis."""

    def __init__(self, extents: Mapping[str, int]):
        ordered = sorted(extents.items(), key=lambda item: role_order(item[0]))
        super().__init__(
            ArrayAttr(StringAttr(axis) for axis, _ in ordered),
            ArrayAttr(IntAttr(size) for _, size in ordered),
        )

    @property
    def extents(self) -> dict[str, int]:
        """Axis name -> extent, in canonical order."""
        return {
            axis.data: size.data for axis, size in zip(self.axes.data, self.sizes.data, strict=True)
        }

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_entry() -> tuple[str, int]:
            axis = parser.parse_identifier(context_msg=" as an iteration axis name")
            parser.parse_punctuation("=")
            if parser.parse_optional_punctuation("?") is not None:
                return axis, DYNAMIC
            return axis, parser.parse_integer(allow_boolean=False, allow_negative=False)

        pos = parser.pos
        entries = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parse_entry)
        problem = space_problem(entries)
        if problem is not None:
            parser.raise_error(f"#fusion.space: {problem}", pos, parser.pos)
        return (
            ArrayAttr(StringAttr(axis) for axis, _ in entries),
            ArrayAttr(IntAttr(size) for _, size in entries),
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_list(
            self.extents.items(),
            lambda item: printer.print_string(f"{item[0]} = {format_extent(item[1])}"),
        )
        printer.print_string(">")

    def verify(self) -> None:
        axes = [axis.data for axis in self.axes.data]
        if len(axes) != len(self.sizes.data):
            raise VerifyException(
                f"#fusion.space: expected one extent per axis, found {len(axes)} axes "
                f"and {len(self.sizes.data)} extents"
            )
        problem = space_problem(
            [(axis, size.data) for axis, size in zip(axes, self.sizes.data, strict=True)]
        )
        if problem is not None:
            raise VerifyException(f"#fusion.space: {problem}")


def roles_problem(roles: Sequence[str]) -> str | None:
    """What is wrong with a list of axis roles, or None when it is well formed."""
    seen: set[str] = set()
    for role in roles:
        if not is_role(role):
            return f"expected b<i>, g, m, n, n128, k, k128 or _ as an axis role, found {role!r}"
        if role != "_" and role in seen:
            return f"role {role!r} appears twice in {list(roles)}"
        seen.add(role)
    return None


def space_problem(entries: Sequence[tuple[str, int]]) -> str | None:
    """What is wrong with (axis, extent) pairs of an iteration space, or None."""
    axes = [axis for axis, _ in entries]
    for axis, size in entries:
        if not is_role(axis) or axis == "_" or axis in BLOCK_ROLES:
            return f"expected b<i>, g, m, n or k as an axis name, found {axis!r}"
        if is_dynamic(size) and not may_be_dynamic(axis):
            return f"axis {axis!r}: expected a static extent (only m, k and batch axes are dynamic)"
        if size < 1 and not is_dynamic(size):
            return f"axis {axis!r}: expected a positive extent, found {size}"
    if len(set(axes)) != len(axes):
        return f"an axis appears twice in {axes}"
    canonical = sorted(axes, key=role_order)
    if axes != canonical:
        return f"expected axes in the order {canonical}, found {axes}"
    return None


def parse_role_list(parser: AttrParser) -> list[str]:
    """Parse `[r0, r1, ...]`, each role an identifier (b0, g, m, n, k, _)."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE,
        lambda: parser.parse_identifier(context_msg=" as an axis role (b<i>, g, m, n, k or _)"),
    )


def print_role_list(printer: Printer, roles: Sequence[str]) -> None:
    """Print `[r0, r1, ...]`."""
    printer.print_string("[" + ", ".join(roles) + "]")


# Verification helpers
