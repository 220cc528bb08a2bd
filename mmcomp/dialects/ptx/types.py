"""Register types (`!ptx.reg<KIND>`), register kinds and kernel parameters (`#ptx.param`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects.builtin import NoneAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.ptx.launch import (
    KernelArrayAttr,
    KernelExtentAttr,
    TensorMapAttr,
    parse_field_list,
    print_fields,
)

# ----------------------------------------------------------------------------------------
# Register kinds
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegKind:
    """What a register kind means: its width, its type class and how it is declared."""

    name: str
    """The PTX type name used as an instruction suffix (`u32`, `f32`, `bf16x2`, ...)."""
    width: int
    """Width in bits (1 for predicates)."""
    category: str
    """`pred`, `b` (untyped bits), `u`, `s` (integers), `f` (floats), `h` (16-bit floats),
    `x` (packed pairs of 16-bit floats, or of fp8 in 16 bits: e4m3x2, e5m2x2)."""
    decl: str
    """The type the register is declared with (`.reg .b32 %r<N>;`)."""
    prefix: str
    """Register name prefix: registers are `%<prefix><counter>`."""

    @property
    def is_int(self) -> bool:
        """True for b/u/s kinds."""
        return self.category in ("b", "u", "s")

    @property
    def is_float(self) -> bool:
        """True for f32/f64."""
        return self.category == "f"


def _kinds() -> dict[str, RegKind]:
    kinds = [RegKind("pred", 1, "pred", "pred", "p")]
    for width, prefix in ((16, "rs"), (32, "r"), (64, "rd")):
        for cat in "bus":
            kinds.append(RegKind(f"{cat}{width}", width, cat, f"b{width}", prefix))
    kinds += [
        RegKind("f16", 16, "h", "b16", "rs"),
        RegKind("bf16", 16, "h", "b16", "rs"),
        RegKind("f16x2", 32, "x", "b32", "r"),
        RegKind("bf16x2", 32, "x", "b32", "r"),
        RegKind("e4m3x2", 16, "x", "b16", "rs"),
        RegKind("e5m2x2", 16, "x", "b16", "rs"),
        RegKind("f32", 32, "f", "f32", "f"),
        RegKind("f64", 64, "f", "f64", "fd"),
    ]
    return {kind.name: kind for kind in kinds}


KINDS: dict[str, RegKind] = _kinds()
"""Every register kind by name."""

DECL_ORDER: tuple[tuple[str, str], ...] = (
    ("pred", "p"),
    ("b16", "rs"),
    ("b32", "r"),
    ("b64", "rd"),
    ("f32", "f"),
    ("f64", "fd"),
)
"""Register classes (declared type, prefix) in the order they are declared."""


@irdl_attr_definition
class RegType(ParametrizedAttribute, TypeAttribute):
    """A virtual PTX register of one kind: `!ptx.reg<u32>`."""

    name = "ptx.reg"

    kind_name: StringAttr
    """The kind's name, a key of `KINDS`."""

    def __init__(self, kind: str | StringAttr):
        super().__init__(StringAttr(kind) if isinstance(kind, str) else kind)

    @property
    def kind(self) -> RegKind:
        """The kind's description."""
        return KINDS[self.kind_name.data]

    def verify(self) -> None:
        if self.kind_name.data not in KINDS:
            raise VerifyException(
                f"!ptx.reg: unknown register kind '{self.kind_name.data}', "
                f"expected one of {', '.join(KINDS)}"
            )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.kind_name.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr]:
        with parser.in_angle_brackets():
            kind = parser.parse_identifier(context_msg=" (a ptx register kind)")
        return (StringAttr(kind),)


def reg(kind: str) -> RegType:
    """The register type of a kind, by name: `reg("u32")`."""
    if kind not in KINDS:
        raise ValueError(f"unknown ptx register kind '{kind}', expected one of {', '.join(KINDS)}")
    return RegType(kind)


PRED = RegType("pred")
B16 = RegType("b16")
B32 = RegType("b32")
B64 = RegType("b64")
U16 = RegType("u16")
U32 = RegType("u32")
U64 = RegType("u64")
S32 = RegType("s32")
S64 = RegType("s64")
F16 = RegType("f16")
BF16 = RegType("bf16")
F16X2 = RegType("f16x2")
BF16X2 = RegType("bf16x2")
E4M3X2 = RegType("e4m3x2")
E5M2X2 = RegType("e5m2x2")
F32 = RegType("f32")
F64 = RegType("f64")


def kind_of(value: SSAValue) -> RegKind:
    """The register kind of a value (which must have a `!ptx.reg` type)."""
    assert isinstance(value.type, RegType)
    return value.type.kind


# ----------------------------------------------------------------------------------------
# Attributes: entry parameters
# ----------------------------------------------------------------------------------------

PARAM_KINDS: dict[str, str] = {
    "u32": "u32",
    "s32": "s32",
    "b32": "b32",
    "f32": "f32",
    "u64": "u64",
    "s64": "s64",
    "b64": "b64",
    "f64": "f64",
    "ptr": "u64",
    "tmap": "",
}
"""Parameter kinds -> the register kind `ld.param` loads them into ("" for tensor maps,
which are 128-byte blobs whose address is taken with `ptx.addr_of`)."""

_IDENT = re.compile(r"^(?:[A-Za-z][A-Za-z0-9_$]*|[_$%][A-Za-z0-9_$]+)$")
"""A PTX identifier: a letter, or `_`, `$` or `%` and at least one more character, then
letters, digits, `_` and `$`."""


@irdl_attr_definition
class ParamAttr(ParametrizedAttribute):
    """One kernel parameter: `#ptx.param<a : ptr>` (scalar, pointer or 128-byte tensor map),
    with what the host passes for it where the lowering says (`ptr<role = input, ...>`,
    `tmap<arg = 0, box = [128, 64], ...>`: mmcomp.dialects.ptx.launch)."""

    name = "ptx.param"

    param_name: StringAttr
    """The parameter's name in PTX."""
    kind: StringAttr
    """A key of `PARAM_KINDS`."""
    info: Attribute
    """A pointer's #ptx.array, a runtime extent's #ptx.extent or a tensor map's
    #ptx.tensor_map; NoneAttr when unsaid."""

    def __init__(self, param_name: str, kind: str, info: Attribute | None = None):
        super().__init__(StringAttr(param_name), StringAttr(kind), info or NoneAttr())

    def verify(self) -> None:
        if self.kind.data not in PARAM_KINDS:
            raise VerifyException(
                f"#ptx.param '{self.param_name.data}': unknown kind '{self.kind.data}', "
                f"expected one of {', '.join(PARAM_KINDS)}"
            )
        _check_identifier("#ptx.param", self.param_name.data)
        expected = PARAM_INFO.get(self.kind.data)
        if isinstance(self.info, NoneAttr) or (expected and isinstance(self.info, expected)):
            return
        raise VerifyException(
            f"#ptx.param '{self.param_name.data}': a {self.kind.data} parameter cannot carry "
            f"{self.info}"
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        print_param(printer, self)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr, StringAttr, Attribute]:
        with parser.in_angle_brackets():
            name, kind, info = _parse_param(parser)
        return (StringAttr(name), StringAttr(kind), info)


PARAM_INFO: dict[str, type[KernelArrayAttr] | type[KernelExtentAttr] | type[TensorMapAttr]] = {
    "ptr": KernelArrayAttr,
    "u32": KernelExtentAttr,
    "tmap": TensorMapAttr,
}
"""The launch data each parameter kind may carry."""


def print_param(printer: Printer, param: ParamAttr) -> None:
    """`name : kind`, then the launch data's keys (`<role = input, ...>`) if any."""
    printer.print_string(f"{param.param_name.data} : {param.kind.data}")
    if isinstance(param.info, KernelArrayAttr | KernelExtentAttr | TensorMapAttr):
        print_fields(printer, param.info.data)


def _check_identifier(where: str, name: str) -> None:
    """Raise unless `name` is a valid PTX identifier (`where` names the op or attribute)."""
    if not _IDENT.match(name):
        raise VerifyException(f"{where}: '{name}' is not a valid PTX identifier")


def _parse_param(parser: AttrParser) -> tuple[str, str, Attribute]:
    name = parser.parse_identifier(context_msg=" (a parameter name)")
    parser.parse_punctuation(":")
    pos = parser.pos
    kind = parser.parse_identifier(context_msg=" (a parameter kind)")
    if parser.parse_optional_punctuation("<") is None:
        return name, kind, NoneAttr()
    attr = PARAM_INFO.get(kind)
    if attr is None:
        parser.raise_error(f"parameter '{name}': a {kind} parameter carries no launch data", pos)
    info = attr(parse_field_list(parser, attr.payload, f"parameter '{name}'"))
    parser.parse_punctuation(">")
    return name, kind, info
