"""The attributes of the `hopper` dialect: wgmma operand tiles and the warp-role plan."""

from __future__ import annotations

from xdsl.dialects.builtin import IntAttr, StringAttr
from xdsl.ir import ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.arch.smem_layout import Major, OperandTile, SwizzleMode


@irdl_attr_definition
class TileAttr(ParametrizedAttribute):
    """A wgmma operand tile in shared memory: `#hopper.tile<k_major, swizzle 128, mn 128, k 64>`
    (16-bit elements), `#hopper.tile<k_major, swizzle 128, mn 128, k 128, bytes 1>` (fp8).

    The tile is laid out as TMA loads write it (see `mmcomp.arch.smem_layout.OperandTile`):
    boxes as wide as the swizzle span along the contiguous (`major`) dimension.
    """

    name = "hopper.tile"

    major: StringAttr
    """`k` or `mn`: the contiguous dimension."""
    swizzle: IntAttr
    """Swizzle span in bytes: 0 (none), 32, 64 or 128."""
    mn: IntAttr
    """Rows of the tile (M for A, N for B)."""
    k: IntAttr
    """K extent of the tile, in elements."""
    element_bytes: IntAttr
    """Bytes of one element: 2 (bf16, f16; not printed) or 1 (fp8)."""

    def __init__(self, major: str, swizzle: int, mn: int, k: int, element_bytes: int = 2):
        super().__init__(
            StringAttr(major), IntAttr(swizzle), IntAttr(mn), IntAttr(k), IntAttr(element_bytes)
        )

    @property
    def layout(self) -> OperandTile:
        """The layout this attribute describes."""
        return OperandTile(
            Major(self.major.data),
            SwizzleMode.from_bytes(self.swizzle.data),
            self.mn.data,
            self.k.data,
            self.element_bytes.data,
        )

    def verify(self) -> None:
        if self.major.data not in ("k", "mn"):
            raise VerifyException(
                f"#hopper.tile: major must be k_major or mn_major, found '{self.major.data}'"
            )
        try:
            _ = self.layout
        except ValueError as error:
            raise VerifyException(f"#hopper.tile: {error}") from error

    def print_parameters(self, printer: Printer) -> None:
        element = f", bytes {self.element_bytes.data}" if self.element_bytes.data != 2 else ""
        printer.print_string(
            f"<{self.major.data}_major, swizzle {self.swizzle.data}, mn {self.mn.data}, "
            f"k {self.k.data}{element}>"
        )

    @classmethod
    def parse_parameters(
        cls, parser: AttrParser
    ) -> tuple[StringAttr, IntAttr, IntAttr, IntAttr, IntAttr]:
        with parser.in_angle_brackets():
            pos = parser.pos
            major = parser.parse_identifier(context_msg=" (k_major or mn_major)")
            if major not in ("k_major", "mn_major"):
                parser.raise_error(f"expected k_major or mn_major, found '{major}'", pos)
            parser.parse_punctuation(",")
            parser.parse_keyword("swizzle")
            swizzle = 0 if parser.parse_optional_keyword("none") else parser.parse_integer()
            parser.parse_punctuation(",")
            parser.parse_keyword("mn")
            mn = parser.parse_integer()
            parser.parse_punctuation(",")
            parser.parse_keyword("k")
            k = parser.parse_integer()
            element_bytes = 2
            if parser.parse_optional_punctuation(","):
                parser.parse_keyword("bytes")
                element_bytes = parser.parse_integer()
        return (
            StringAttr(major.removesuffix("_major")),
            IntAttr(swizzle),
            IntAttr(mn),
            IntAttr(k),
            IntAttr(element_bytes),
        )


@irdl_attr_definition
class WarpRolesAttr(ParametrizedAttribute):
    """The warp-role plan of a partitioned kernel: `#hopper.warp_roles<slots = 2>`.

    It holds only what the kernel's `sched.params` does not: the slots of one ring stage
    (the mainloop loads, each marked with its `hopper.slot`). The stages, the register
    split and the warp specialization (hence producer and consumer warpgroups and threads)
    are read from `sched.params` alone (`mmcomp.analysis.warp_roles.warp_roles`).
    """

    name = "hopper.warp_roles"

    slots: IntAttr
    """Tiles loaded per K block (slots of one ring stage)."""

    def __init__(self, slots: int):
        super().__init__(IntAttr(slots))

    def verify(self) -> None:
        if self.slots.data < 1:
            raise VerifyException(
                f"#hopper.warp_roles: slots must be at least 1, found {self.slots.data}"
            )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<slots = {self.slots.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr]:
        with parser.in_angle_brackets():
            pos = parser.pos
            key = parser.parse_identifier(context_msg=" (slots)")
            if key != "slots":
                parser.raise_error(
                    f"#hopper.warp_roles holds only 'slots', found '{key}' (stages, registers "
                    "and warp_specialization are read from sched.params)",
                    pos,
                )
            parser.parse_punctuation("=")
            slots = parser.parse_integer()
        return (IntAttr(slots),)


def tile(major: str, swizzle: int, mn: int, k: int) -> TileAttr:
    """The `#hopper.tile` attribute of a layout (a convenience for builders)."""
    return TileAttr(major, swizzle, mn, k)
