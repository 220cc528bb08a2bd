"""Launch data of a `ptx.entry`: what the host passes for each parameter, and how.

A lowered kernel's entry says everything its launch needs, so that a ptx-level file that
`mmcomp-opt` wrote can be loaded and launched from Python (`mmcomp.backend.load_kernel`):

    ptx.entry @linear(arg0 : ptr<role = input, name = "a", shape = [4096, 5120],
                      dtype = bf16>, ...,
                      tmap0 : tmap<arg = 0, dtype = bf16, shape = [4096, 5120],
                      box = [128, 64], boxes = 1, major = k>)
        maxnreg 168 reqntid [384] grid 132 cluster 1 smem 148504 persistent {

- a pointer parameter's `#ptx.array`: the array's role in the call (input, output or a
  workspace the back end allocates), its name, shape and dtype;
- a tensor-map parameter's `#ptx.tensor_map`: the kernel argument it views, the view's
  global shape (and strides, where not compact), the TMA box, the boxes per tile, the
  swizzle, the multicast split and the padded staging pitch;
- a runtime extent's `#ptx.extent`: the extent (m, b0, ...) the host passes as a u32;
- on the entry: the grid, the CTAs per cluster, the dynamic shared memory, and whether the
  CTAs loop over work units (a persistent grid may be cut to the CTAs that fit at once).

A kernel that takes runtime extents (a dynamic M or batch extent) has `?` in the shapes
its extents fill: an array names the extent of each `?` axis (`extents = "m"`; a split-K
workspace's is `cta_tiles`), a tensor map takes its extents and strides from its array at
bind time, and the grid comes from the launch function the entry names
(`grid_function = "linear_launch"`, a `func.func` beside the ptx.module, from the extents
to the grid, the CTA tiles and the work units).

Each is written `key = value`: an integer, a word, a string or a list of integers. Keys at
their default value are left out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar, cast

from xdsl.dialects.builtin import DYNAMIC_INDEX
from xdsl.ir import Data
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.arch.limits import ELEMENT_BYTES

_T = TypeVar("_T")

ARRAY_ROLES = ("input", "output", "workspace")
"""What a pointer parameter's array is to the call."""

DYNAMIC = DYNAMIC_INDEX
"""An extent known only at launch (xDSL's dynamic index), printed `?`."""

TMA_STRIDE_BYTES = 16
"""TMA global strides are multiples of 16 bytes."""


@dataclass(frozen=True)
class KernelArray:
    """The array behind a pointer parameter."""

    role: str
    """input, output or workspace (allocated and zeroed by the back end)."""
    name: str
    """The fusion's name for it."""
    shape: tuple[int, ...]
    """Extents, outermost first."""
    dtype: str
    """Element type (a name of mmcomp.ir.dtypes)."""
    extents: str = ""
    """The runtime extent of each `?` axis, in order, space-separated ("m", "b0 m",
    "cta_tiles")."""

    @property
    def dynamic(self) -> bool:
        """Whether some extent is known only at launch."""
        return DYNAMIC in self.shape

    def specialized(self, values: dict[str, int]) -> KernelArray:
        """The array at these runtime extents (each `?` its extent's value)."""
        names = iter(self.extents.split())
        shape = tuple(values[next(names)] if e == DYNAMIC else e for e in self.shape)
        return dataclasses.replace(self, shape=shape, extents="")


@dataclass(frozen=True)
class KernelExtent:
    """A runtime extent passed as a u32 parameter."""

    name: str
    """The extent: m, or a batch axis b0, b1, ..."""


@dataclass(frozen=True)
class TensorMap:
    """The tensor map behind a tensor-map parameter: a TMA view of one kernel argument."""

    arg: int
    """Index of the pointer parameter whose array the map views."""
    dtype: str
    """Element type."""
    shape: tuple[int, ...]
    """The view's global extents, outermost first."""
    box: tuple[int, ...]
    """The TMA box, outermost first."""
    boxes: int
    """Boxes per tile along the contiguous axis."""
    major: str
    """k when the contiguous axis is k, mn when it is m or n."""
    swizzle: int = 128
    """Swizzle span of the box in shared memory, bytes (0: none)."""
    multicast: int = 1
    """CTAs of the cluster that share the tile, each loading its part for all."""
    row_pieces: int = 1
    """K-major multicast: boxes the tile's rows are loaded as (one per CTA)."""
    strides: tuple[int, ...] = ()
    """Element strides of the view, outermost first (): compact."""
    axes: tuple[int, ...] = ()
    """The argument's axis behind each view axis (-1: an axis it lacks) (): in order."""
    pitch: int = 0
    """Row pitch (elements) of the padded staging copy the map reads (0: none)."""

    @property
    def element_bytes(self) -> int:
        """Bytes per element."""
        return ELEMENT_BYTES[self.dtype]

    @property
    def dynamic(self) -> bool:
        """Whether some extent of the view is known only at bind time."""
        return DYNAMIC in self.shape

    def specialized(self, arg_shape: tuple[int, ...]) -> TensorMap:
        """The map over an argument of this runtime shape: the view's extents and strides
        from it (`?` filled in; the box, swizzle and staging pitch are the compiled ones).
        An extent of 0 (a runtime K of 0: the kernel loads no K block) is mapped as 1, since
        TMA takes no empty dimension; no box is read through it."""
        if not self.axes:
            return dataclasses.replace(self, shape=tuple(max(extent, 1) for extent in arg_shape))
        extents = tuple(max(arg_shape[axis], 1) if axis >= 0 else 1 for axis in self.axes)
        strides = view_strides(arg_shape, self.axes, extents, self.pitch, self.element_bytes)
        return dataclasses.replace(self, shape=extents, strides=strides)

    @property
    def byte_strides(self) -> tuple[int, ...]:
        """Byte strides of the view, outermost first (the innermost is one element)."""
        strides = self.strides or tuple(
            math.prod(self.shape[axis + 1 :]) for axis in range(len(self.shape))
        )
        return tuple(stride * self.element_bytes for stride in strides)

    @property
    def rows(self) -> int:
        """Rows of the view (all elements over the innermost extent)."""
        return math.prod(self.shape[:-1])

    @property
    def box_bytes(self) -> int:
        """Bytes of one box in shared memory."""
        return math.prod(self.box) * self.element_bytes

    @property
    def tile_bytes(self) -> int:
        """Bytes of the whole tile (one ring slot)."""
        return self.box_bytes * self.boxes * self.row_pieces


def view_strides(
    arg_shape: tuple[int, ...],
    axes: tuple[int, ...],
    extents: tuple[int, ...],
    pitch: int,
    element_bytes: int,
) -> tuple[int, ...]:
    """Element strides of a TMA view of a C-contiguous argument (its `axes`, -1 for an axis
    it lacks), outermost first. With a staging `pitch`, rows are `pitch` elements apart;
    an axis of extent 1 gets a stride TMA accepts (it is never stepped along)."""
    inner = extents[-1]
    compact = [math.prod(arg_shape[axis + 1 :]) if axis >= 0 else 0 for axis in axes]
    row = pitch or inner
    strides = [stride // inner * row if pitch else stride for stride in compact[:-1]] + [1]
    per_chunk = TMA_STRIDE_BYTES // element_bytes
    filler = -(-row // per_chunk) * per_chunk
    return tuple(
        stride if extent > 1 or position == len(axes) - 1 else filler
        for position, (extent, stride) in enumerate(zip(extents, strides, strict=True))
    )


@dataclass(frozen=True)
class Launch:
    """How the entry is launched."""

    grid: int
    """CTAs in the grid (0 where the grid function gives it at launch)."""
    smem: int
    """Dynamic shared memory per CTA, bytes (the alignment slack included)."""
    cluster: int = 1
    """CTAs per cluster (the grid is a multiple)."""
    persistent: bool = False
    """The CTAs loop over work units: the grid may be cut to the CTAs that fit at once."""
    grid_function: str = ""
    """For runtime extents: the launch function (a func.func beside the ptx.module) from
    the extents to (grid, CTA tiles, work units)."""


def _dims(values: tuple[int, ...]) -> str:
    """`[4096, ?]`: a list of extents, DYNAMIC as `?`."""
    return "[" + ", ".join("?" if v == DYNAMIC else str(v) for v in values) + "]"


def print_fields(printer: Printer, value: Any) -> None:
    """`<key = value, ...>` of a launch-data dataclass, defaults left out."""
    items: list[str] = []
    for field in dataclasses.fields(value):
        item = getattr(value, field.name)
        if field.default is not dataclasses.MISSING and item == field.default:
            continue
        if isinstance(item, bool):
            text = "true" if item else "false"
        elif isinstance(item, tuple):
            text = _dims(cast(tuple[int, ...], item))
        elif isinstance(item, str) and field.name in ("name", "extents", "grid_function"):
            text = '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'
        else:
            text = str(item)
        items.append(f"{field.name} = {text}")
    printer.print_string("<" + ", ".join(items) + ">")


def parse_fields(parser: AttrParser, kind: type[_T], what: str) -> _T:
    """A launch-data dataclass from `<key = value, ...>`."""
    with parser.in_angle_brackets():
        return parse_field_list(parser, kind, what)


def parse_field_list(parser: AttrParser, kind: type[_T], what: str) -> _T:
    """A launch-data dataclass from `key = value, ...` (the `<` already taken)."""
    fields = {field.name: field for field in dataclasses.fields(cast(Any, kind))}
    values: dict[str, object] = {}
    start = parser.pos
    while True:
        pos = parser.pos
        key = parser.parse_identifier(context_msg=f" (a key of {what})")
        if key not in fields:
            parser.raise_error(
                f"{what}: unknown key '{key}'; expected one of {', '.join(fields)}", pos
            )
        if key in values:
            parser.raise_error(f"{what}: key '{key}' given twice", pos)
        parser.parse_punctuation("=")
        values[key] = _parse_value(parser, fields[key].type)
        if parser.parse_optional_punctuation(",") is None:
            break
    missing = [
        name
        for name, field in fields.items()
        if name not in values and field.default is dataclasses.MISSING
    ]
    if missing:
        parser.raise_error(f"{what}: missing {', '.join(missing)}", start, parser.pos)
    return kind(**values)


def _parse_value(parser: AttrParser, annotation: object) -> object:
    if "tuple" in str(annotation):
        return tuple(
            parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: (
                    DYNAMIC
                    if parser.parse_optional_punctuation("?")
                    else parser.parse_integer(allow_boolean=False)
                ),
            )
        )
    if str(annotation) == "int":
        return parser.parse_integer(allow_boolean=False)
    if str(annotation) == "bool":
        return parser.parse_boolean()
    text = parser.parse_optional_str_literal()
    if text is not None:
        return text
    return parser.parse_identifier()


class _LaunchData(Data[_T], Generic[_T]):
    """An attribute holding one launch-data dataclass, printed as its keys."""

    payload: ClassVar[type[Any]]
    """The dataclass held."""

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> _T:
        return parse_fields(parser, cls.payload, f"#{cls.name}")

    def print_parameter(self, printer: Printer) -> None:
        print_fields(printer, self.data)


@irdl_attr_definition
class KernelArrayAttr(_LaunchData[KernelArray]):
    """A pointer parameter's array: `#ptx.array<role = input, name = "a", ...>`."""

    name = "ptx.array"
    payload = KernelArray

    def verify(self) -> None:
        if self.data.role not in ARRAY_ROLES:
            raise VerifyException(
                f"#ptx.array '{self.data.name}': role must be one of "
                f"{', '.join(ARRAY_ROLES)}, found '{self.data.role}'"
            )
        if any(extent < 0 and extent != DYNAMIC for extent in self.data.shape):
            raise VerifyException(
                f"#ptx.array '{self.data.name}': negative extent in {list(self.data.shape)}"
            )
        if len(self.data.extents.split()) != self.data.shape.count(DYNAMIC):
            raise VerifyException(
                f"#ptx.array '{self.data.name}': shape {_dims(self.data.shape)} has "
                f"{self.data.shape.count(DYNAMIC)} dynamic extents but extents = "
                f'"{self.data.extents}" names {len(self.data.extents.split())}'
            )


@irdl_attr_definition
class KernelExtentAttr(_LaunchData[KernelExtent]):
    """A runtime extent parameter: `#ptx.extent<name = m>`."""

    name = "ptx.extent"
    payload = KernelExtent


@irdl_attr_definition
class LaunchAttr(_LaunchData[Launch]):
    """An entry's launch: `#ptx.launch<grid = 132, smem = 148504, persistent = true>`."""

    name = "ptx.launch"
    payload = Launch

    def verify(self) -> None:
        launch = self.data
        from_function = bool(launch.grid_function) and launch.grid == 0
        if launch.cluster < 1 or (
            not from_function and (launch.grid < 1 or launch.grid % launch.cluster)
        ):
            raise VerifyException(
                f"#ptx.launch: the grid ({launch.grid}) must be a positive multiple of the "
                f"cluster ({launch.cluster})"
            )
        if launch.smem < 0:
            raise VerifyException(f"#ptx.launch: negative shared memory {launch.smem}")


@irdl_attr_definition
class TensorMapAttr(_LaunchData[TensorMap]):
    """A tensor-map parameter's map: `#ptx.tensor_map<arg = 0, box = [128, 64], ...>`."""

    name = "ptx.tensor_map"
    payload = TensorMap

    def verify(self) -> None:
        spec = self.data
        if len(spec.box) != len(spec.shape) or not 1 <= len(spec.shape) <= 5:
            raise VerifyException(
                f"#ptx.tensor_map of argument {spec.arg}: box {list(spec.box)} and shape "
                f"{list(spec.shape)} must have the same rank, 1 to 5"
            )
        if spec.swizzle not in (0, 32, 64, 128):
            raise VerifyException(
                f"#ptx.tensor_map of argument {spec.arg}: swizzle must be 0, 32, 64 or 128 "
                f"bytes, found {spec.swizzle}"
            )
