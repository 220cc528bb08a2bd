"""The `ptx` dialect: PTX assembly as ops on virtual registers.

A `ptx.module` holds the PTX header (version, target, address size), shared-memory
declarations and `ptx.entry` kernels. An entry's body is one flat block of instruction ops
in program order, with `ptx.label` and `ptx.bra` for control flow: PTX needs no structured
control flow and no register allocation (ptxas does both).

Every SSA value in an entry body *names a register* of type `!ptx.reg<KIND>` (`pred`,
`b16`, `u32`, `f32`, `bf16x2`, ...). At print time the registers are declared and named
per class with counters (`%p1`, `%rs1`, `%r1`, `%rd1`, `%f1`, `%fd1`). Because the values
are registers, a register may be written again: `ptx.assign %dst, %src` (a `mov`) updates
a loop-carried register, and `ptx.inst` (the escape hatch, an instruction written as a
text template) may write into its operands, e.g. wgmma accumulators.

Every instruction may be predicated: `%r = ptx.add %a, %b if %p : !ptx.reg<u32>` prints
`@%p1 add.u32 %r3, %r1, %r2;` and `if not %p` prints `@!%p1`.

Building a kernel in Python (see `KernelBuilder`):

    module = PtxModuleOp()
    k = KernelBuilder.create(module, "vadd", [("a", "ptr"), ("n", "u32")], reqntid=(128,))
    a, n = k.ld_param("a"), k.ld_param("n")      # registers are the returned SSA values
    tid = k.sreg("tid.x")
    with k.predicated(k.setp("lt", tid, n)):     # @%p guards what is appended inside
        ...
    k.ret()
    text = mmcomp.targets.emit_ptx(module)       # PTX text; mmcomp.ptxas.assemble(text)

Hopper ops (`ptx.tma_load`, `ptx.mbarrier_*`, `ptx.wgmma*`, `ptx.fence`, `ptx.setmaxnreg`,
`ptx.elect_sync`, `ptx.stmatrix`, ...) are built with their constructors and
`KernelBuilder.append`.
"""

from __future__ import annotations

import re
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, Self, TypeVar, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatData,
    FunctionType,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptOperandDef,
    OptResultDef,
    VarOperandDef,
    VarResultDef,
    irdl_attr_definition,
    irdl_op_definition,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.irdl import (
    operand_def as _operand_def,
)
from xdsl.irdl import (
    result_def as _result_def,
)
from xdsl.irdl import (
    var_operand_def as _var_operand_def,
)
from xdsl.irdl import (
    var_result_def as _var_result_def,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import AttrParser, Parser
from xdsl.parser.core import UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, NoTerminator
from xdsl.utils.exceptions import VerifyException

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
    `x` (packed pairs of 16-bit floats)."""
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

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


@irdl_attr_definition
class ParamAttr(ParametrizedAttribute):
    """One kernel parameter: `#ptx.param<a : ptr>` (scalar, pointer or 128-byte tensor map)."""

    name = "ptx.param"

    param_name: StringAttr
    """The parameter's name in PTX."""
    kind: StringAttr
    """A key of `PARAM_KINDS`."""

    def __init__(self, param_name: str, kind: str):
        super().__init__(StringAttr(param_name), StringAttr(kind))

    def verify(self) -> None:
        if self.kind.data not in PARAM_KINDS:
            raise VerifyException(
                f"#ptx.param '{self.param_name.data}': unknown kind '{self.kind.data}', "
                f"expected one of {', '.join(PARAM_KINDS)}"
            )
        _check_identifier("#ptx.param", self.param_name.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.param_name.data} : {self.kind.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr, StringAttr]:
        with parser.in_angle_brackets():
            name, kind = _parse_param(parser)
        return (StringAttr(name), StringAttr(kind))


def _check_identifier(where: str, name: str) -> None:
    """Raise unless `name` is a valid PTX identifier (`where` names the op or attribute)."""
    if not _IDENT.match(name):
        raise VerifyException(f"{where}: '{name}' is not a valid PTX identifier")


def _parse_param(parser: AttrParser) -> tuple[str, str]:
    name = parser.parse_identifier(context_msg=" (a parameter name)")
    parser.parse_punctuation(":")
    kind = parser.parse_identifier(context_msg=" (a parameter kind)")
    return name, kind


# ----------------------------------------------------------------------------------------
# Module structure
# ----------------------------------------------------------------------------------------


@irdl_op_definition
class PtxModuleOp(IRDLOperation):
    """A PTX module: header directives and a body of shared declarations and entries."""

    name = "ptx.module"

    version = prop_def(StringAttr, default_value=StringAttr("8.0"))
    """The `.version` directive (PTX ISA version, 8.0 or later for sm_90a)."""
    target = prop_def(StringAttr, default_value=StringAttr("sm_90a"))
    """The `.target` directive."""
    address_size = prop_def(IntAttr, default_value=IntAttr(64))
    """The `.address_size` directive."""
    body = region_def("single_block")
    """Shared declarations and entries."""

    traits = traits_def(NoTerminator())

    def __init__(self, ops: Iterable[Operation] = (), version: str = "8.0", target: str = "sm_90a"):
        super().__init__(
            properties={
                "version": StringAttr(version),
                "target": StringAttr(target),
                "address_size": IntAttr(64),
            },
            regions=[Region(Block(ops))],
        )

    def verify_(self) -> None:
        if not re.match(r"^\d+\.\d+$", self.version.data) or float(self.version.data) < 8.0:
            raise VerifyException(
                f"ptx.module: version '{self.version.data}' must be 8.0 or later for sm_90a"
            )
        if self.address_size.data != 64:
            raise VerifyException(
                f"ptx.module: address_size must be 64, found {self.address_size.data}"
            )
        names: set[str] = set()
        for op in self.body.block.ops:
            if not isinstance(op, EntryOp | SharedOp):
                raise VerifyException(
                    f"ptx.module: expected only ptx.entry and ptx.shared ops in the body, "
                    f"found {op.name}"
                )
            symbol = op.sym_name.data
            if symbol in names:
                raise VerifyException(f"ptx.module: symbol '{symbol}' is defined twice")
            names.add(symbol)

    def print(self, printer: Printer) -> None:
        printer.print_string(
            f" version {self.version.data} target {self.target.data} "
            f"address_size {self.address_size.data} "
        )
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        version, target = "8.0", "sm_90a"
        if parser.parse_optional_keyword("version"):
            number = parser.parse_number()
            version = f"{number:.1f}" if isinstance(number, float) else f"{number}.0"
        if parser.parse_optional_keyword("target"):
            target = parser.parse_identifier(context_msg=" (a PTX target such as sm_90a)")
        op = cls(version=version, target=target)
        if parser.parse_optional_keyword("address_size"):
            op.address_size = IntAttr(parser.parse_integer())
        _adopt_body(op.body, parser.parse_region())
        return op


@irdl_op_definition
class SharedOp(IRDLOperation):
    """A shared-memory array: static with a size, or dynamic (`.extern`, sized at launch)."""

    name = "ptx.shared"

    sym_name = prop_def(StringAttr)
    """The array's PTX name."""
    alignment = prop_def(IntAttr, default_value=IntAttr(16))
    """Alignment in bytes (1024 for 128-byte-swizzled TMA destinations)."""
    size = opt_prop_def(IntAttr)
    """Size in bytes; absent for dynamic shared memory."""

    traits = traits_def(HasParent(PtxModuleOp))

    def __init__(self, sym_name: str, alignment: int = 16, size: int | None = None):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "alignment": IntAttr(alignment),
                "size": None if size is None else IntAttr(size),
            }
        )

    def verify_(self) -> None:
        _check_identifier("ptx.shared", self.sym_name.data)
        align = self.alignment.data
        if align <= 0 or align & (align - 1):
            raise VerifyException(
                f"ptx.shared @{self.sym_name.data}: alignment must be a power of two, found {align}"
            )
        if self.size is not None and self.size.data <= 0:
            raise VerifyException(
                f"ptx.shared @{self.sym_name.data}: size must be positive, found {self.size.data}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(f" align {self.alignment.data}")
        if self.size is None:
            printer.print_string(" dynamic")
        else:
            printer.print_string(f" size {self.size.data}")

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name().data
        align = 16
        if parser.parse_optional_keyword("align"):
            align = parser.parse_integer()
        if parser.parse_optional_keyword("dynamic"):
            return cls(name, align)
        parser.parse_keyword("size", " (or 'dynamic')")
        return cls(name, align, parser.parse_integer())

    def ptx_decl(self) -> str:
        """The PTX declaration of this array."""
        if self.size is None:
            return f".extern .shared .align {self.alignment.data} .b8 {self.sym_name.data}[];"
        return f".shared .align {self.alignment.data} .b8 {self.sym_name.data}[{self.size.data}];"


@irdl_op_definition
class EntryOp(IRDLOperation):
    """A kernel (`.visible .entry`): parameters, performance directives and a flat body."""

    name = "ptx.entry"

    sym_name = prop_def(StringAttr)
    """The kernel's name."""
    params = prop_def(ArrayAttr[ParamAttr], default_value=ArrayAttr(()))
    """The kernel's parameters, in order."""
    maxnreg = opt_prop_def(IntAttr)
    """`.maxnreg N`: a register cap (needed for setmaxnreg to take effect)."""
    reqntid = opt_prop_def(ArrayAttr[IntAttr])
    """`.reqntid x[, y, z]`: the exact block size."""
    body = region_def("single_block")
    """The instructions, in program order."""

    traits = traits_def(NoTerminator(), IsolatedFromAbove(), HasParent(PtxModuleOp))

    def __init__(
        self,
        sym_name: str,
        params: Sequence[ParamAttr | tuple[str, str]] = (),
        *,
        maxnreg: int | None = None,
        reqntid: Sequence[int] | None = None,
        ops: Iterable[Operation] = (),
    ):
        param_attrs = [p if isinstance(p, ParamAttr) else ParamAttr(*p) for p in params]
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "params": ArrayAttr(param_attrs),
                "maxnreg": None if maxnreg is None else IntAttr(maxnreg),
                "reqntid": None if reqntid is None else ArrayAttr([IntAttr(n) for n in reqntid]),
            },
            regions=[Region(Block(ops))],
        )

    def param(self, name: str) -> ParamAttr | None:
        """The parameter of that name, if any."""
        for param in self.params.data:
            if param.param_name.data == name:
                return param
        return None

    def verify_(self) -> None:
        entry = f"ptx.entry @{self.sym_name.data}"
        if not _IDENT.match(self.sym_name.data):
            raise VerifyException(f"{entry}: the name is not a valid PTX identifier")
        seen: set[str] = set()
        for param in self.params.data:
            if param.param_name.data in seen:
                raise VerifyException(
                    f"{entry}: parameter '{param.param_name.data}' is declared twice"
                )
            seen.add(param.param_name.data)
        if self.maxnreg is not None and not 24 <= self.maxnreg.data <= 255:
            raise VerifyException(
                f"{entry}: maxnreg must be in [24, 255], found {self.maxnreg.data}"
            )
        if self.reqntid is not None:
            dims = [d.data for d in self.reqntid.data]
            if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
                raise VerifyException(
                    f"{entry}: reqntid must be 1 to 3 positive sizes, found {dims}"
                )
        labels: set[str] = set()
        for op in self.body.block.ops:
            if isinstance(op, LabelOp):
                if op.label.data in labels:
                    raise VerifyException(f"{entry}: label '{op.label.data}' is defined twice")
                labels.add(op.label.data)
            elif not isinstance(op, PtxInstruction):
                raise VerifyException(
                    f"{entry}: expected only ptx instructions and labels in the body, "
                    f"found {op.name}"
                )
        for op in self.body.block.ops:
            if isinstance(op, BraOp) and op.target.data not in labels:
                raise VerifyException(
                    f"{entry}: ptx.bra targets label '{op.target.data}', which is not "
                    "defined in this entry"
                )
            if isinstance(op, LdParamOp):
                op.verify_against(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(
            self.params.data,
            lambda p: printer.print_string(f"{p.param_name.data} : {p.kind.data}"),
        )
        printer.print_string(")")
        if self.maxnreg is not None:
            printer.print_string(f" maxnreg {self.maxnreg.data}")
        if self.reqntid is not None:
            dims = ", ".join(str(d.data) for d in self.reqntid.data)
            printer.print_string(f" reqntid [{dims}]")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        name = parser.parse_symbol_name().data
        params = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: ParamAttr(*_parse_param(parser))
        )
        maxnreg = None
        reqntid = None
        if parser.parse_optional_keyword("maxnreg"):
            maxnreg = parser.parse_integer()
        if parser.parse_optional_keyword("reqntid"):
            reqntid = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer
            )
        op = cls(name, params, maxnreg=maxnreg, reqntid=reqntid)
        _adopt_body(op.body, parser.parse_region())
        return op


def _adopt_body(body: Region, parsed: Region) -> None:
    """Move the block of a parsed region into `body` (keeping its empty block if none)."""
    if not parsed.blocks:
        return
    body.detach_block(body.block).erase()
    body.add_block(parsed.detach_block(parsed.block))


# ----------------------------------------------------------------------------------------
# Instructions: shared syntax and emission
# ----------------------------------------------------------------------------------------

NameOf = Callable[[SSAValue], str]
"""Maps a register value to its PTX name (`%r3`) at print time."""

_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$.:]*$")
_RESERVED_WORDS = {"if", "not"}


def _operand_defs(cls: type[IRDLOperation]) -> list[tuple[str, object]]:
    return [(n, d) for n, d in cls.get_irdl_definition().operands if n != "guard"]


class PtxInstruction(IRDLOperation, ABC):
    """Base of the instruction ops: an optional guard predicate, one syntax, PTX text.

    Syntax: `%r... = ptx.NAME keyword... %operand, ... [if [not] %guard] [{extra}] : TYPES`
    where TYPES is one register type shared by all operands and results, or
    `(operand types) -> result types`.
    """

    KEYWORDS: ClassVar[tuple[str, ...]] = ()
    """Properties printed as bare words before the operands, in order (trailing ones may
    be absent)."""

    QUOTED: ClassVar[tuple[str, ...]] = ()
    """Keywords always printed as string literals."""

    guard = opt_operand_def(RegType)
    """The predicate guarding the instruction (`@%p`), if any."""
    negated = opt_prop_def(UnitAttr)
    """Present when the guard is negated (`@!%p`)."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @abstractmethod
    def ptx_text(self, name: NameOf) -> str:
        """The instruction's PTX text, without guard and trailing semicolon."""

    def ptx_line(self, name: NameOf) -> str:
        """The full PTX line: guard, instruction, semicolon."""
        text = self.ptx_text(name)
        if self.guard is None:
            return f"{text};"
        bang = "!" if self.negated is not None else ""
        return f"@{bang}{name(self.guard)} {text};"

    def data_operands(self) -> Sequence[SSAValue]:
        """The operands other than the guard."""
        if self.guard is None:
            return self.operands
        return self.operands[:-1]

    def set_guard(self, pred: SSAValue | None, negated: bool = False) -> Self:
        """Return a copy of this op guarded by `pred` (used by builders)."""
        operands = list(self.data_operands())
        groups = _group(type(self), operands, _operand_defs(type(self)), "operand")
        props = dict(self.properties)
        props.pop("operandSegmentSizes", None)
        props.pop("negated", None)
        if negated:
            props["negated"] = UnitAttr()
        groups.append([pred] if pred is not None else [])
        return type(self).build(
            operands=groups,
            result_types=_group(
                type(self),
                [r.type for r in self.results],
                list(type(self).get_irdl_definition().results),
                "result",
            ),
            properties=props,
            attributes=dict(self.attributes),
        )

    def verify_(self) -> None:
        if self.guard is not None and kind_of(self.guard).name != "pred":
            raise VerifyException(
                f"{self.name}: the guard must be a !ptx.reg<pred>, found {self.guard.type}"
            )
        if self.negated is not None and self.guard is None:
            raise VerifyException(f"{self.name}: 'not' given without a guard predicate")
        self.verify_kinds()

    def verify_kinds(self) -> None:
        """Check the register kinds of operands and results (per op)."""

    # ---- syntax ---------------------------------------------------------------------

    def print(self, printer: Printer) -> None:
        for key in self.KEYWORDS:
            value = self.properties.get(key)
            if value is None:
                break
            printer.print_string(" ")
            if key in self.QUOTED and isinstance(value, StringAttr):
                printer.print_string_literal(value.data)
            else:
                _print_keyword(printer, value)
        data = self.data_operands()
        if data:
            printer.print_string(" ")
            printer.print_list(data, printer.print_operand)
        if self.guard is not None:
            printer.print_string(" if not " if self.negated is not None else " if ")
            printer.print_operand(self.guard)
        extra = {
            k: v
            for k, v in self.properties.items()
            if k not in self.KEYWORDS and k not in ("operandSegmentSizes", "negated")
        }
        extra.update(self.attributes)
        if extra:
            printer.print_string(" {")
            printer.print_list(extra.items(), lambda kv: _print_entry(printer, *kv))
            printer.print_string("}")
        operand_types = [v.type for v in data]
        result_types = [r.type for r in self.results]
        types = operand_types + result_types
        if not types:
            return
        printer.print_string(" : ")
        has_var_results = any(
            isinstance(d, VarResultDef) for _, d in type(self).get_irdl_definition().results
        )
        if (
            types
            and all(t == types[0] for t in types)
            and not has_var_results
            and len(operand_types) == len(_fixed_defs(type(self)))
        ):
            printer.print_attribute(types[0])
        else:
            printer.print_attribute(FunctionType.from_lists(operand_types, result_types))

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        props: dict[str, Attribute] = {}
        guard_follows = False
        for key in cls.KEYWORDS:
            value = _parse_optional_keyword(parser, cls, key)
            if value is None:
                break
            if isinstance(value, StringAttr) and value.data == "if":
                guard_follows = True
                break
            props[key] = value
        unresolved: list[UnresolvedOperand] = []
        first = None
        if _operand_defs(cls) and not guard_follows and not _next_defines_results(parser):
            first = parser.parse_optional_unresolved_operand()
        if first is not None:
            unresolved.append(first)
            while parser.parse_optional_punctuation(","):
                unresolved.append(parser.parse_unresolved_operand())
        guard = None
        if guard_follows or parser.parse_optional_keyword("if"):
            if parser.parse_optional_keyword("not"):
                props["negated"] = UnitAttr()
            guard = parser.resolve_operand(parser.parse_unresolved_operand(), PRED)
        attrs: dict[str, Attribute] = {}
        prop_names = cls.get_irdl_definition().properties
        for key, value in parser.parse_optional_attr_dict().items():
            if isinstance(value, IntegerAttr):
                value = IntAttr(value.value.data)
            (props if key in prop_names else attrs)[key] = value
        pos = parser.pos
        if not parser.parse_optional_punctuation(":"):
            operand_types, result_types = [], []
        elif (function_type := parser.parse_optional_function_type()) is not None:
            operand_types = list(function_type.inputs.data)
            result_types = list(function_type.outputs.data)
        else:
            single = parser.parse_type()
            operand_types = [single] * len(unresolved)
            n_results = len(_fixed_result_defs(cls))
            result_types = [single] * n_results
        if len(operand_types) != len(unresolved):
            parser.raise_error(
                f"{cls.name}: {len(unresolved)} operands but {len(operand_types)} operand types",
                pos,
                parser.pos,
            )
        operands = [
            parser.resolve_operand(u, t) for u, t in zip(unresolved, operand_types, strict=True)
        ]
        try:
            groups = _group(cls, operands, _operand_defs(cls), "operand")
            result_groups = _group(
                cls, result_types, list(cls.get_irdl_definition().results), "result"
            )
        except VerifyException as error:
            parser.raise_error(str(error), pos, parser.pos)
        groups.append([guard] if guard is not None else [])
        return cls.build(
            operands=groups, result_types=result_groups, properties=props, attributes=attrs
        )


_T = TypeVar("_T")
_OpT = TypeVar("_OpT", bound=Operation)


def _fixed_defs(cls: type[IRDLOperation]) -> list[str]:
    return [n for n, d in _operand_defs(cls) if not isinstance(d, VarOperandDef)]


def _fixed_result_defs(cls: type[IRDLOperation]) -> list[str]:
    return [n for n, d in cls.get_irdl_definition().results if not isinstance(d, VarResultDef)]


def _group(
    cls: type[IRDLOperation], items: Sequence[_T], defs: Sequence[tuple[str, object]], what: str
) -> list[_T | list[_T]]:
    """Split a flat list of operands (or result types) over the op's definitions."""
    fixed = sum(1 for _, d in defs if not isinstance(d, VarOperandDef | VarResultDef))
    variadic = [n for n, d in defs if isinstance(d, VarOperandDef | VarResultDef)]
    optional = [n for n, d in defs if isinstance(d, OptOperandDef | OptResultDef)]
    spare = len(items) - fixed
    if spare < 0 or (not variadic and spare) or (optional and len(variadic) == 1 and spare > 1):
        names = ", ".join(n for n, _ in defs) or "none"
        count = f"{fixed} or more" if variadic else str(fixed)
        plural = "" if count == "1" else "s"
        raise VerifyException(
            f"{cls.name}: expected {count} {what}{plural} ({names}), found {len(items)}"
        )
    groups: list[_T | list[_T]] = []
    index = 0
    for _, d in defs:
        if isinstance(d, VarOperandDef | VarResultDef):
            groups.append(list(items[index : index + spare]))
            index += spare
        else:
            groups.append(items[index])
            index += 1
    return groups


_RESULT_DEFINITION = re.compile(r"%[\w$.-]+(\s*:\s*\d+)?(\s*,\s*%[\w$.-]+(\s*:\s*\d+)?)*\s*=")


def _next_defines_results(parser: Parser) -> bool:
    """Whether the next text is the result list of the following op (`%a, %b:2 =`).

    An op whose operands are all variadic (`ptx.inst` with none) is followed directly by
    the next op; its result names must not be taken for operands.
    """
    content = parser.lexer.input.content
    if not isinstance(content, str):
        return False
    return _RESULT_DEFINITION.match(content, parser.pos) is not None


def _print_keyword(printer: Printer, value: Attribute) -> None:
    if isinstance(value, StringAttr):
        if _BARE.match(value.data) and value.data not in _RESERVED_WORDS:
            printer.print_string(value.data)
        else:
            printer.print_string_literal(value.data)
    elif isinstance(value, IntAttr):
        printer.print_string(str(value.data))
    elif isinstance(value, FloatData):
        printer.print_string(repr(value.data))
    else:
        printer.print_attribute(value)


def _accepts(cls: type[IRDLOperation], key: str, sample: Attribute) -> bool:
    """Whether property `key` of `cls` admits attributes like `sample`."""
    try:
        cls.get_irdl_definition().properties[key].constr.verify(sample, VerificationContext())
    except VerifyException:
        return False
    return True


def _parse_optional_keyword(parser: Parser, cls: type[IRDLOperation], key: str) -> Attribute | None:
    if _accepts(cls, key, IntAttr(0)) or _accepts(cls, key, FloatData(0.0)):
        number = parser.parse_optional_number()
        if isinstance(number, int):
            return IntAttr(number)
        if isinstance(number, float):
            return FloatData(number)
        if not _accepts(cls, key, StringAttr("")):
            return None
    text = parser.parse_optional_str_literal()
    if text is not None:
        return StringAttr(text)
    word = parser.parse_optional_identifier()
    if word is None:
        return None
    return StringAttr(word)


def _print_entry(printer: Printer, key: str, value: Attribute) -> None:
    printer.print_string(key)
    if isinstance(value, UnitAttr):
        return
    printer.print_string(" = ")
    if isinstance(value, IntAttr):
        printer.print_string(str(value.data))
    else:
        printer.print_attribute(value)


# ---- helpers for verification ---------------------------------------------------------


def _fits(kind: RegKind, ptx_type: str) -> bool:
    """Whether a register of `kind` may be used where PTX expects type `ptx_type`."""
    want = KINDS[ptx_type]
    if kind.width != want.width:
        return False
    if kind.name == want.name or want.category == "b" or kind.category == "b":
        return True
    return kind.is_int and want.is_int


def _require(op: Operation, what: str, value: SSAValue, ptx_type: str) -> None:
    """Raise unless `value` can be used as a `ptx_type` operand (`what` names it)."""
    kind = kind_of(value)
    if not _fits(kind, ptx_type):
        raise VerifyException(
            f"{op.name}: {what} must be a {ptx_type}-compatible register, found "
            f"!ptx.reg<{kind.name}>"
        )


def _require_category(op: Operation, what: str, value: SSAValue, categories: str) -> RegKind:
    kind = kind_of(value)
    names = {"b": "bits", "u": "unsigned", "s": "signed", "f": "float", "pred": "predicate"}
    allowed = [names.get(c, c) for c in categories.split(",")]
    if kind.category not in categories.split(","):
        raise VerifyException(
            f"{op.name}: {what} must be a {'/'.join(allowed)} register, found !ptx.reg<{kind.name}>"
        )
    return kind


def _arith_type(kind: RegKind) -> str:
    """Instruction type for arithmetic on a kind: untyped bits count as unsigned."""
    if kind.category == "b":
        return f"u{kind.width}"
    return kind.name


def _bits_type(kind: RegKind) -> str:
    """Instruction type for moving or combining bits of a kind: `pred` or `bNN`."""
    return "pred" if kind.name == "pred" else f"b{kind.width}"


def _same_kind(op: Operation, values: Sequence[tuple[str, SSAValue]]) -> RegKind:
    first_name, first = values[0]
    kind = kind_of(first)
    for what, value in values[1:]:
        other = kind_of(value)
        if other != kind:
            raise VerifyException(
                f"{op.name}: {what} must have the same register kind as {first_name} "
                f"(!ptx.reg<{kind.name}>), found !ptx.reg<{other.name}>"
            )
    return kind


def check_choice(op: Operation, what: str, found: str, allowed: Sequence[str]) -> None:
    """Raise unless `found` is one of `allowed`: `OP: WHAT must be a or b, found 'c'`."""
    if found in allowed:
        return
    *rest, last = allowed
    expected = f"{', '.join(rest)} or {last}" if rest else last
    raise VerifyException(f"{op.name}: {what} must be {expected}, found '{found}'")


def check_range(op: Operation, what: str, found: int, low: int, high: int, step: int = 1) -> None:
    """Raise unless `found` is in [low, high] (and a multiple of `step`, if given)."""
    if low <= found <= high and found % step == 0:
        return
    multiple = f"a multiple of {step} " if step > 1 else ""
    raise VerifyException(f"{op.name}: {what} must be {multiple}in [{low}, {high}], found {found}")


def check_below(
    op: Operation, what: str, found: int, low: int, limit: int, limit_text: str
) -> None:
    """Raise unless low <= `found` < limit (`limit_text` spells the limit, e.g. `2^20`)."""
    if not low <= found < limit:
        raise VerifyException(f"{op.name}: {what} must be in [{low}, {limit_text}), found {found}")


def check_thread_count(op: Operation, count: int) -> None:
    """Raise unless a barrier's thread count is a positive multiple of 32 (whole warps)."""
    if count <= 0 or count % 32:
        raise VerifyException(
            f"{op.name}: thread count must be a positive multiple of 32, found {count}"
        )


def _f32_literal(value: float) -> str:
    return "0f" + struct.pack(">f", value).hex().upper()


def _f64_literal(value: float) -> str:
    return "0d" + struct.pack(">d", value).hex().upper()


def _address(name: NameOf, addr: SSAValue, offset: IntAttr | None) -> str:
    if offset is None or offset.data == 0:
        return f"[{name(addr)}]"
    return f"[{name(addr)}+{offset.data}]"


def _vector(name: NameOf, values: Sequence[SSAValue]) -> str:
    if len(values) == 1:
        return name(values[0])
    return "{" + ", ".join(name(v) for v in values) + "}"


class FixedInstruction(PtxInstruction, ABC):
    """Base of the instructions without operands, results or properties: fixed PTX text."""

    TEXT: ClassVar[str] = ""
    """The instruction's PTX text."""

    def __init__(self):
        super().__init__(operands=[[]])

    def ptx_text(self, name: NameOf) -> str:
        return self.TEXT


# ----------------------------------------------------------------------------------------
# Data movement
# ----------------------------------------------------------------------------------------


@irdl_op_definition
class ConstOp(PtxInstruction):
    """Move an immediate into a new register: `mov.u32 %r1, 5;`."""

    name = "ptx.const"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("value",)

    value = prop_def(IntAttr | FloatData)
    """The immediate (an integer, or a float for f32/f64 registers)."""
    result = _result_def(RegType)

    def __init__(self, value: int | float, type: RegType):
        attr = IntAttr(value) if isinstance(value, int) else FloatData(value)
        super().__init__(properties={"value": attr}, operands=[[]], result_types=[type])

    def verify_kinds(self) -> None:
        kind = kind_of(self.result)
        if isinstance(self.value, FloatData) and kind.category != "f":
            raise VerifyException(
                f"ptx.const: float value {self.value.data} needs an f32 or f64 register, "
                f"found !ptx.reg<{kind.name}>"
            )
        if isinstance(self.value, IntAttr) and kind.category in ("h", "x"):
            raise VerifyException(
                f"ptx.const: no immediate form for !ptx.reg<{kind.name}>; build it in a "
                "b16/b32 register and ptx.mov it"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        value = self.value.data
        if kind.category == "f":
            literal = _f32_literal(float(value)) if kind.width == 32 else _f64_literal(value)
        elif kind.name == "pred":
            literal = "1" if value else "0"
            return f"setp.ne.u32 {name(self.result)}, {literal}, 0"
        else:
            literal = str(int(value))
        return f"mov.{kind.name} {name(self.result)}, {literal}"


@irdl_op_definition
class MovOp(PtxInstruction):
    """Copy (or reinterpret) a register into a new one of the same width: `mov.b32`."""

    name = "ptx.mov"

    src = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, src: SSAValue, type: RegType | None = None):
        super().__init__(operands=[src, []], result_types=[type or src.type])

    def verify_kinds(self) -> None:
        src, dst = kind_of(self.src), kind_of(self.result)
        if src.width != dst.width:
            raise VerifyException(
                f"ptx.mov: source !ptx.reg<{src.name}> and result !ptx.reg<{dst.name}> "
                f"differ in width ({src.width} vs {dst.width} bits)"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        suffix = _bits_type(kind)
        return f"mov.{suffix} {name(self.result)}, {name(self.src)}"


@irdl_op_definition
class AssignOp(PtxInstruction):
    """Write a value into an existing register (for loop-carried values): `mov.b32`."""

    name = "ptx.assign"

    dst = _operand_def(RegType)
    """The register written."""
    src = _operand_def(RegType)
    """The value written."""

    def __init__(self, dst: SSAValue, src: SSAValue):
        super().__init__(operands=[dst, src, []])

    def verify_kinds(self) -> None:
        _same_kind(self, [("dst", self.dst), ("src", self.src)])

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.dst)
        suffix = _bits_type(kind)
        return f"mov.{suffix} {name(self.dst)}, {name(self.src)}"


SPECIAL_REGISTERS: dict[str, int] = {
    **{f"{r}.{d}": 32 for r in ("tid", "ntid", "ctaid", "nctaid") for d in "xyz"},
    **{
        f"{r}.{d}": 32
        for r in ("clusterid", "nclusterid", "cluster_ctaid", "cluster_nctaid")
        for d in "xyz"
    },
    "laneid": 32,
    "warpid": 32,
    "nwarpid": 32,
    "smid": 32,
    "nsmid": 32,
    "cluster_ctarank": 32,
    "cluster_nctarank": 32,
    "is_explicit_cluster": 1,
    "dynamic_smem_size": 32,
    "total_smem_size": 32,
    "clock": 32,
    "clock64": 64,
    "globaltimer": 64,
    "lanemask_lt": 32,
    "lanemask_eq": 32,
}
"""Special registers readable with `ptx.sreg`, and their width."""


@irdl_op_definition
class SregOp(PtxInstruction):
    """Read a special register: `mov.u32 %r1, %tid.x;`."""

    name = "ptx.sreg"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("sreg",)

    sreg = prop_def(StringAttr)
    """The special register, without `%` (a key of `SPECIAL_REGISTERS`)."""
    result = _result_def(RegType)

    def __init__(self, sreg: str, type: RegType = U32):
        super().__init__(properties={"sreg": StringAttr(sreg)}, operands=[[]], result_types=[type])

    def verify_kinds(self) -> None:
        width = SPECIAL_REGISTERS.get(self.sreg.data)
        if width is None:
            raise VerifyException(
                f"ptx.sreg: unknown special register '%{self.sreg.data}', expected one of "
                f"{', '.join(SPECIAL_REGISTERS)}"
            )
        kind = kind_of(self.result)
        if kind.width != width:
            raise VerifyException(
                f"ptx.sreg: %{self.sreg.data} is {width} bits wide, the result is "
                f"!ptx.reg<{kind.name}>"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        suffix = "pred" if kind.name == "pred" else _arith_type(kind)
        return f"mov.{suffix} {name(self.result)}, %{self.sreg.data}"


@irdl_op_definition
class AddrOfOp(PtxInstruction):
    """Take the address of a shared array or a parameter: `mov.u32 %r1, smem;`."""

    name = "ptx.addr_of"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("symbol",)

    symbol = prop_def(StringAttr)
    """The shared array's or parameter's name."""
    result = _result_def(RegType)

    def __init__(self, symbol: str, type: RegType = U32):
        super().__init__(
            properties={"symbol": StringAttr(symbol)}, operands=[[]], result_types=[type]
        )

    def verify_kinds(self) -> None:
        _require_category(self, "result", self.result, "b,u,s")
        if kind_of(self.result).width not in (32, 64):
            raise VerifyException(
                f"ptx.addr_of: the address of '{self.symbol.data}' needs a 32- or 64-bit "
                f"register, found !ptx.reg<{kind_of(self.result).name}>"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        return f"mov.{_arith_type(kind)} {name(self.result)}, {self.symbol.data}"


@irdl_op_definition
class LdParamOp(PtxInstruction):
    """Load a scalar kernel parameter: `ld.param.u64 %rd1, [a];`."""

    name = "ptx.ld_param"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("param",)

    param = prop_def(StringAttr)
    """The parameter's name."""
    result = _result_def(RegType)

    def __init__(self, param: str, type: RegType):
        super().__init__(
            properties={"param": StringAttr(param)}, operands=[[]], result_types=[type]
        )

    def verify_against(self, entry: EntryOp) -> None:
        """Check that the parameter exists in `entry` and fits the result register."""
        param = entry.param(self.param.data)
        if param is None:
            raise VerifyException(
                f"ptx.ld_param: entry @{entry.sym_name.data} has no parameter '{self.param.data}'"
            )
        load_kind = PARAM_KINDS[param.kind.data]
        if not load_kind:
            raise VerifyException(
                f"ptx.ld_param: parameter '{self.param.data}' is a tensor map; take its "
                "address with ptx.addr_of instead"
            )
        _require(self, f"result (parameter '{self.param.data}')", self.result, load_kind)

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        return f"ld.param.{kind.name} {name(self.result)}, [{self.param.data}]"


STATE_SPACES = ("global", "shared", "shared::cta", "shared::cluster", "local", "const", "param")
"""Memory state spaces for ld/st (plus `generic`, which prints none)."""

LOAD_QUALIFIERS = ("", "nc", "volatile", "relaxed.gpu", "acquire.gpu")


@irdl_op_definition
class LdOp(PtxInstruction):
    """Load 1, 2 or 4 registers from memory: `ld.global.v4.f32 {...}, [%rd1+16];`."""

    name = "ptx.ld"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("space",)

    space = prop_def(StringAttr)
    """State space (`global`, `shared`, ..., or `generic`)."""
    offset = opt_prop_def(IntAttr)
    """Byte offset added to the address."""
    qualifier = opt_prop_def(StringAttr)
    """Extra qualifier: `nc` (read-only global), `volatile`, ..."""
    addr = _operand_def(RegType)
    """The address (64-bit; 32-bit allowed for shared)."""
    values = _var_result_def(RegType)
    """The loaded registers (1, 2 or 4 of the same kind)."""

    def __init__(
        self,
        space: str,
        addr: SSAValue,
        type: RegType,
        count: int = 1,
        offset: int = 0,
        qualifier: str | None = None,
    ):
        super().__init__(
            properties={
                "space": StringAttr(space),
                "offset": IntAttr(offset) if offset else None,
                "qualifier": StringAttr(qualifier) if qualifier else None,
            },
            operands=[addr, []],
            result_types=[[type] * count],
        )

    def verify_kinds(self) -> None:
        _verify_memory(self, self.space.data, self.addr, list(self.values), "result")
        if self.qualifier is not None and self.qualifier.data not in LOAD_QUALIFIERS:
            raise VerifyException(
                f"ptx.ld: unknown qualifier '{self.qualifier.data}', expected one of "
                f"{', '.join(q for q in LOAD_QUALIFIERS if q)}"
            )

    def ptx_text(self, name: NameOf) -> str:
        values = list(self.values)
        parts = ["ld"]
        if self.qualifier is not None and self.qualifier.data != "nc":
            parts.append(self.qualifier.data)
        if self.space.data != "generic":
            parts.append(self.space.data)
        if self.qualifier is not None and self.qualifier.data == "nc":
            parts.append("nc")
        if len(values) > 1:
            parts.append(f"v{len(values)}")
        parts.append(_memory_type(kind_of(values[0])))
        return (
            f"{'.'.join(parts)} {_vector(name, values)}, {_address(name, self.addr, self.offset)}"
        )


@irdl_op_definition
class StOp(PtxInstruction):
    """Store 1, 2 or 4 registers to memory: `st.shared.v2.f32 [%r1+8], {%f1, %f2};`."""

    name = "ptx.st"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("space",)

    space = prop_def(StringAttr)
    """State space (`global`, `shared`, ..., or `generic`)."""
    offset = opt_prop_def(IntAttr)
    """Byte offset added to the address."""
    addr = _operand_def(RegType)
    """The address (64-bit; 32-bit allowed for shared)."""
    values = _var_operand_def(RegType)
    """The stored registers (1, 2 or 4 of the same kind)."""

    def __init__(self, space: str, addr: SSAValue, values: Sequence[SSAValue], offset: int = 0):
        super().__init__(
            properties={
                "space": StringAttr(space),
                "offset": IntAttr(offset) if offset else None,
            },
            operands=[addr, list(values), []],
        )

    def verify_kinds(self) -> None:
        _verify_memory(self, self.space.data, self.addr, list(self.values), "stored value")

    def ptx_text(self, name: NameOf) -> str:
        values = list(self.values)
        parts = ["st"]
        if self.space.data != "generic":
            parts.append(self.space.data)
        if len(values) > 1:
            parts.append(f"v{len(values)}")
        parts.append(_memory_type(kind_of(values[0])))
        return (
            f"{'.'.join(parts)} {_address(name, self.addr, self.offset)}, {_vector(name, values)}"
        )


def _memory_type(kind: RegKind) -> str:
    if kind.category in ("h", "x"):
        return f"b{kind.width}"
    return kind.name


def _verify_memory(
    op: Operation, space: str, addr: SSAValue, values: Sequence[SSAValue], what: str
) -> None:
    if space not in STATE_SPACES and space != "generic":
        raise VerifyException(
            f"{op.name}: unknown state space '{space}', expected one of "
            f"{', '.join(STATE_SPACES)}, generic"
        )
    addr_kind = _require_category(op, "the address", addr, "b,u,s")
    if addr_kind.width != 64 and not (addr_kind.width == 32 and space.startswith("shared")):
        raise VerifyException(
            f"{op.name}: a {space} address must be a 64-bit register (32-bit only for "
            f"shared), found !ptx.reg<{addr_kind.name}>"
        )
    if len(values) not in (1, 2, 4):
        raise VerifyException(f"{op.name}: expected 1, 2 or 4 {what}s, found {len(values)}")
    _same_kind(op, [(f"{what} {i}", v) for i, v in enumerate(values)])
    if kind_of(values[0]).name == "pred":
        raise VerifyException(f"{op.name}: predicates cannot be loaded or stored")


@irdl_op_definition
class CvtaOp(PtxInstruction):
    """Convert an address between a state space and generic: `cvta[.to].shared.u64`."""

    name = "ptx.cvta"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("space", "direction")

    space = prop_def(StringAttr)
    """`global`, `shared`, `local`, `const` or `param`."""
    direction = opt_prop_def(StringAttr)
    """`to` converts generic -> space; absent converts space -> generic."""
    src = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, space: str, src: SSAValue, type: RegType = U64, to: bool = False):
        super().__init__(
            properties={
                "space": StringAttr(space),
                "direction": StringAttr("to") if to else None,
            },
            operands=[src, []],
            result_types=[type],
        )

    def verify_kinds(self) -> None:
        if self.space.data not in ("global", "shared", "local", "const", "param"):
            raise VerifyException(
                f"ptx.cvta: unknown state space '{self.space.data}', expected global, "
                "shared, local, const or param"
            )
        if self.direction is not None and self.direction.data != "to":
            raise VerifyException(
                f"ptx.cvta: direction must be 'to' or absent, found '{self.direction.data}'"
            )
        for what, value in (("source", self.src), ("result", self.result)):
            kind = _require_category(self, what, value, "b,u,s")
            if kind.width != 64:
                raise VerifyException(
                    f"ptx.cvta: {what} must be a 64-bit register (sm_90 has no 32-bit "
                    f"addressing; cvt a shared address to u32 afterwards), found "
                    f"!ptx.reg<{kind.name}>"
                )

    def ptx_text(self, name: NameOf) -> str:
        to = ".to" if self.direction is not None else ""
        width = kind_of(self.result).width
        return f"cvta{to}.{self.space.data}.u{width} {name(self.result)}, {name(self.src)}"


# ----------------------------------------------------------------------------------------
# Arithmetic
# ----------------------------------------------------------------------------------------


class BinaryOp(PtxInstruction, ABC):
    """Base of two-operand ops whose operands and result share one kind."""

    lhs = _operand_def(RegType)
    rhs = _operand_def(RegType)
    result = _result_def(RegType)

    CATEGORIES: ClassVar[str] = "b,u,s,f"
    """Allowed kind categories."""

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs, []], result_types=[lhs.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("lhs", self.lhs), ("rhs", self.rhs), ("result", self.result)])
        _require_category(self, "lhs", self.lhs, self.CATEGORIES)

    def mnemonic(self, kind: RegKind) -> str:
        """The instruction name with modifiers, e.g. `mul.lo.u32`."""
        return f"{self.name.removeprefix('ptx.')}.{_arith_type(kind)}"

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        return f"{self.mnemonic(kind)} {name(self.result)}, {name(self.lhs)}, {name(self.rhs)}"


@irdl_op_definition
class AddOp(BinaryOp):
    """`add.{u,s,f}NN` (bits count as unsigned)."""

    name = "ptx.add"


@irdl_op_definition
class SubOp(BinaryOp):
    """`sub.{u,s,f}NN`."""

    name = "ptx.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """`mul.lo.{u,s}NN` for integers, `mul.f32` for floats."""

    name = "ptx.mul"

    def mnemonic(self, kind: RegKind) -> str:
        if kind.is_float:
            return f"mul.{kind.name}"
        return f"mul.lo.{_arith_type(kind)}"


@irdl_op_definition
class MulHiOp(BinaryOp):
    """`mul.hi.{u,s}NN`: the high half of an integer product."""

    name = "ptx.mul_hi"
    CATEGORIES: ClassVar[str] = "b,u,s"

    def mnemonic(self, kind: RegKind) -> str:
        return f"mul.hi.{_arith_type(kind)}"


@irdl_op_definition
class DivOp(BinaryOp):
    """`div.{u,s}NN` for integers, `div.rn.f32` for floats."""

    name = "ptx.div"

    def mnemonic(self, kind: RegKind) -> str:
        if kind.is_float:
            return f"div.rn.{kind.name}"
        return f"div.{_arith_type(kind)}"


@irdl_op_definition
class RemOp(BinaryOp):
    """`rem.{u,s}NN`."""

    name = "ptx.rem"
    CATEGORIES: ClassVar[str] = "b,u,s"


@irdl_op_definition
class MinOp(BinaryOp):
    """`min.{u,s,f}NN`."""

    name = "ptx.min"


@irdl_op_definition
class MaxOp(BinaryOp):
    """`max.{u,s,f}NN`."""

    name = "ptx.max"


class LogicOp(BinaryOp, ABC):
    """Base of bitwise ops: `.bNN` or `.pred`."""

    CATEGORIES: ClassVar[str] = "b,u,s,pred"

    def mnemonic(self, kind: RegKind) -> str:
        return f"{self.name.removeprefix('ptx.')}.{_bits_type(kind)}"


@irdl_op_definition
class AndOp(LogicOp):
    """`and.bNN` or `and.pred`."""

    name = "ptx.and"


@irdl_op_definition
class OrOp(LogicOp):
    """`or.bNN` or `or.pred`."""

    name = "ptx.or"


@irdl_op_definition
class XorOp(LogicOp):
    """`xor.bNN` or `xor.pred`."""

    name = "ptx.xor"


class ShiftOp(PtxInstruction, ABC):
    """Base of shifts: the amount is any 32-bit integer register."""

    value = _operand_def(RegType)
    amount = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, value: SSAValue, amount: SSAValue):
        super().__init__(operands=[value, amount, []], result_types=[value.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("value", self.value), ("result", self.result)])
        _require_category(self, "value", self.value, "b,u,s")
        _require(self, "amount", self.amount, "u32")

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        op = self.name.removeprefix("ptx.")
        suffix = f"b{kind.width}" if op == "shl" else kind.name
        return f"{op}.{suffix} {name(self.result)}, {name(self.value)}, {name(self.amount)}"


@irdl_op_definition
class ShlOp(ShiftOp):
    """`shl.bNN`."""

    name = "ptx.shl"


@irdl_op_definition
class ShrOp(ShiftOp):
    """`shr.{b,u,s}NN` (b and u shift in zeros, s the sign)."""

    name = "ptx.shr"


@irdl_op_definition
class MulWideOp(PtxInstruction):
    """`mul.wide.{u,s}NN`: the full double-width product."""

    name = "ptx.mul_wide"

    lhs = _operand_def(RegType)
    rhs = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, type: RegType | None = None):
        if type is None:
            kind = kind_of(lhs)
            wide = "s" if kind.category == "s" else "u"
            type = RegType(f"{wide}{kind.width * 2}")
        super().__init__(operands=[lhs, rhs, []], result_types=[type])

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("lhs", self.lhs), ("rhs", self.rhs)])
        _require_category(self, "lhs", self.lhs, "b,u,s")
        out = _require_category(self, "result", self.result, "b,u,s")
        if kind.width not in (16, 32) or out.width != 2 * kind.width:
            raise VerifyException(
                f"ptx.mul_wide: result must be twice as wide as the operands "
                f"(!ptx.reg<{kind.name}>), found !ptx.reg<{out.name}>"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.lhs)
        return (
            f"mul.wide.{_arith_type(kind)} {name(self.result)}, {name(self.lhs)}, {name(self.rhs)}"
        )


@irdl_op_definition
class MadWideOp(PtxInstruction):
    """`mad.wide.{u,s}NN`: the full double-width product plus a double-width addend."""

    name = "ptx.mad_wide"

    a = _operand_def(RegType)
    b = _operand_def(RegType)
    c = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue):
        super().__init__(operands=[a, b, c, []], result_types=[c.type])

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("a", self.a), ("b", self.b)])
        _require_category(self, "a", self.a, "b,u,s")
        out = _same_kind(self, [("c", self.c), ("result", self.result)])
        _require_category(self, "result", self.result, "b,u,s")
        if kind.width not in (16, 32) or out.width != 2 * kind.width:
            raise VerifyException(
                f"ptx.mad_wide: c and the result must be twice as wide as a and b "
                f"(!ptx.reg<{kind.name}>), found !ptx.reg<{out.name}>"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.a)
        return (
            f"mad.wide.{_arith_type(kind)} {name(self.result)}, {name(self.a)}, "
            f"{name(self.b)}, {name(self.c)}"
        )


class TernaryOp(PtxInstruction, ABC):
    """Base of `a * b + c` ops whose operands and result share one kind."""

    a = _operand_def(RegType)
    b = _operand_def(RegType)
    c = _operand_def(RegType)
    result = _result_def(RegType)

    CATEGORIES: ClassVar[str] = "b,u,s,f"
    """Allowed kind categories."""

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue):
        super().__init__(operands=[a, b, c, []], result_types=[a.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("a", self.a), ("b", self.b), ("c", self.c), ("result", self.result)])
        _require_category(self, "a", self.a, self.CATEGORIES)

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        op = self.name.removeprefix("ptx.")
        mnemonic = f"{op}.rn.{kind.name}" if kind.is_float else f"{op}.lo.{_arith_type(kind)}"
        return f"{mnemonic} {name(self.result)}, {name(self.a)}, {name(self.b)}, {name(self.c)}"


@irdl_op_definition
class MadOp(TernaryOp):
    """`mad.lo.{u,s}NN` for integers, `mad.rn.f32` for floats."""

    name = "ptx.mad"


@irdl_op_definition
class FmaOp(TernaryOp):
    """`fma.rn.f32`: fused multiply-add of floats."""

    name = "ptx.fma"
    CATEGORIES: ClassVar[str] = "f"


class UnaryOp(PtxInstruction, ABC):
    """Base of one-operand ops whose operand and result share one kind."""

    src = _operand_def(RegType)
    result = _result_def(RegType)

    CATEGORIES: ClassVar[str] = "f"
    """Allowed kind categories."""

    def __init__(self, src: SSAValue):
        super().__init__(operands=[src, []], result_types=[src.type])

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("src", self.src), ("result", self.result)])
        _require_category(self, "src", self.src, self.CATEGORIES)
        if self.CATEGORIES == "f" and kind.width != 32:
            raise VerifyException(
                f"{self.name}: only f32 is supported, found !ptx.reg<{kind.name}>"
            )

    def mnemonic(self, kind: RegKind) -> str:
        """The instruction name with modifiers."""
        return f"{self.name.removeprefix('ptx.')}.approx.{kind.name}"

    def ptx_text(self, name: NameOf) -> str:
        return f"{self.mnemonic(kind_of(self.result))} {name(self.result)}, {name(self.src)}"


@irdl_op_definition
class Ex2Op(UnaryOp):
    """`ex2.approx.f32`: 2 to the power x."""

    name = "ptx.ex2"


@irdl_op_definition
class Lg2Op(UnaryOp):
    """`lg2.approx.f32`: log base 2."""

    name = "ptx.lg2"


@irdl_op_definition
class TanhOp(UnaryOp):
    """`tanh.approx.f32`."""

    name = "ptx.tanh"


@irdl_op_definition
class RcpOp(UnaryOp):
    """`rcp.approx.f32`: reciprocal."""

    name = "ptx.rcp"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """`sqrt.approx.f32`."""

    name = "ptx.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    """`rsqrt.approx.f32`: reciprocal square root."""

    name = "ptx.rsqrt"


class SignedUnaryOp(UnaryOp, ABC):
    """Base of neg/abs: integers are treated as signed."""

    CATEGORIES: ClassVar[str] = "b,u,s,f"

    def mnemonic(self, kind: RegKind) -> str:
        op = self.name.removeprefix("ptx.")
        return f"{op}.{kind.name if kind.is_float else f's{kind.width}'}"


@irdl_op_definition
class NegOp(SignedUnaryOp):
    """`neg.{s,f}NN` (integers are negated as signed)."""

    name = "ptx.neg"


@irdl_op_definition
class AbsOp(SignedUnaryOp):
    """`abs.{s,f}NN`."""

    name = "ptx.abs"


@irdl_op_definition
class NotOp(UnaryOp):
    """`not.bNN` or `not.pred`."""

    name = "ptx.not"
    CATEGORIES: ClassVar[str] = "b,u,s,pred"

    def mnemonic(self, kind: RegKind) -> str:
        return f"not.{_bits_type(kind)}"


INT_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
FLOAT_COMPARISONS = (
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "equ",
    "neu",
    "ltu",
    "leu",
    "gtu",
    "geu",
    "num",
    "nan",
)


@irdl_op_definition
class SetpOp(PtxInstruction):
    """Compare two registers into a predicate: `setp.lt.s32 %p1, %r1, %r2;`."""

    name = "ptx.setp"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("cmp",)

    cmp = prop_def(StringAttr)
    """The comparison (`eq ne lt le gt ge`, unsigned `lo ls hi hs`, float `equ ... nan`)."""
    lhs = _operand_def(RegType)
    rhs = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, cmp: str, lhs: SSAValue, rhs: SSAValue):
        super().__init__(
            properties={"cmp": StringAttr(cmp)}, operands=[lhs, rhs, []], result_types=[PRED]
        )

    def verify_kinds(self) -> None:
        kind = _same_kind(self, [("lhs", self.lhs), ("rhs", self.rhs)])
        _require_category(self, "lhs", self.lhs, "b,u,s,f")
        _require_category(self, "result", self.result, "pred")
        cmp = self.cmp.data
        allowed = FLOAT_COMPARISONS if kind.is_float else INT_COMPARISONS
        if cmp not in allowed:
            raise VerifyException(
                f"ptx.setp: comparison '{cmp}' is not defined on !ptx.reg<{kind.name}>, "
                f"expected one of {', '.join(allowed)}"
            )
        if kind.category == "b" and cmp not in ("eq", "ne"):
            raise VerifyException(
                f"ptx.setp: comparison '{cmp}' on untyped !ptx.reg<{kind.name}> is "
                f"ambiguous; use u{kind.width} or s{kind.width} registers"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.lhs)
        return (
            f"setp.{self.cmp.data}.{kind.name} {name(self.result)}, {name(self.lhs)}, "
            f"{name(self.rhs)}"
        )


@irdl_op_definition
class SelpOp(PtxInstruction):
    """Select by predicate: `selp.b32 %r3, %r1, %r2, %p1;` (`if_true` when p holds)."""

    name = "ptx.selp"

    if_true = _operand_def(RegType)
    if_false = _operand_def(RegType)
    cond = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, if_true: SSAValue, if_false: SSAValue, cond: SSAValue):
        super().__init__(operands=[if_true, if_false, cond, []], result_types=[if_true.type])

    def verify_kinds(self) -> None:
        _same_kind(
            self,
            [("if_true", self.if_true), ("if_false", self.if_false), ("result", self.result)],
        )
        _require_category(self, "if_true", self.if_true, "b,u,s,f,x")
        _require_category(self, "cond", self.cond, "pred")

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        suffix = f"b{kind.width}" if kind.category == "x" else kind.name
        return (
            f"selp.{suffix} {name(self.result)}, {name(self.if_true)}, "
            f"{name(self.if_false)}, {name(self.cond)}"
        )


FLOAT_ROUNDING = ("rn", "rz", "rm", "rp")
INT_ROUNDING = ("rni", "rzi", "rmi", "rpi")


@irdl_op_definition
class CvtOp(PtxInstruction):
    """Convert between types: `cvt.rn.bf16.f32 %rs1, %f1;`, `cvt.u64.u32 %rd1, %r1;`."""

    name = "ptx.cvt"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("rounding",)

    rounding = opt_prop_def(StringAttr)
    """Rounding mode: rn/rz/rm/rp to a float, rni/rzi/rmi/rpi float to integer."""
    src = _operand_def(RegType)
    result = _result_def(RegType)

    def __init__(self, src: SSAValue, type: RegType, rounding: str | None = None):
        super().__init__(
            properties={"rounding": StringAttr(rounding) if rounding else None},
            operands=[src, []],
            result_types=[type],
        )

    def verify_kinds(self) -> None:
        src = _require_category(self, "source", self.src, "b,u,s,f,h")
        dst = _require_category(self, "result", self.result, "b,u,s,f,h")
        rounding = None if self.rounding is None else self.rounding.data
        src_float = src.category in ("f", "h")
        dst_float = dst.category in ("f", "h")
        if dst_float and (not src_float or dst.width < src.width):
            allowed: tuple[str, ...] = FLOAT_ROUNDING
            required = True
        elif src_float and not dst_float:
            allowed, required = INT_ROUNDING, True
        elif src_float and dst_float and dst.width > src.width:
            allowed, required = (), False
        elif src_float and dst_float:
            allowed, required = INT_ROUNDING, False
        else:
            allowed, required = (), False
        if rounding is None and required:
            raise VerifyException(
                f"ptx.cvt: converting !ptx.reg<{src.name}> to !ptx.reg<{dst.name}> needs a "
                f"rounding mode, one of {', '.join(allowed)}"
            )
        if rounding is not None and rounding not in allowed:
            expected = ", ".join(allowed) if allowed else "none"
            raise VerifyException(
                f"ptx.cvt: rounding '{rounding}' is not valid from !ptx.reg<{src.name}> to "
                f"!ptx.reg<{dst.name}>, expected {expected}"
            )

    def ptx_text(self, name: NameOf) -> str:
        src = _arith_type(kind_of(self.src))
        dst = _arith_type(kind_of(self.result))
        rnd = "" if self.rounding is None else f".{self.rounding.data}"
        return f"cvt{rnd}.{dst}.{src} {name(self.result)}, {name(self.src)}"


@irdl_op_definition
class CvtPackOp(PtxInstruction):
    """Pack two f32 into bf16x2/f16x2: `cvt.rn.bf16x2.f32 %r1, %f_hi, %f_lo;`."""

    name = "ptx.cvt_pack"

    hi = _operand_def(RegType)
    """Goes to the upper 16 bits."""
    lo = _operand_def(RegType)
    """Goes to the lower 16 bits."""
    result = _result_def(RegType)

    def __init__(self, hi: SSAValue, lo: SSAValue, type: RegType = BF16X2):
        super().__init__(operands=[hi, lo, []], result_types=[type])

    def verify_kinds(self) -> None:
        _require(self, "hi", self.hi, "f32")
        _require(self, "lo", self.lo, "f32")
        kind = kind_of(self.result)
        if kind.name not in ("bf16x2", "f16x2"):
            raise VerifyException(
                f"ptx.cvt_pack: result must be !ptx.reg<bf16x2> or !ptx.reg<f16x2>, found "
                f"!ptx.reg<{kind.name}>"
            )

    def ptx_text(self, name: NameOf) -> str:
        kind = kind_of(self.result)
        return f"cvt.rn.{kind.name}.f32 {name(self.result)}, {name(self.hi)}, {name(self.lo)}"


# ----------------------------------------------------------------------------------------
# Control flow and synchronization
# ----------------------------------------------------------------------------------------


@irdl_op_definition
class LabelOp(IRDLOperation):
    """A branch target: `L_loop:`."""

    name = "ptx.label"

    label = prop_def(StringAttr)
    """The label's name (a PTX identifier)."""

    def __init__(self, label: str):
        super().__init__(properties={"label": StringAttr(label)})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_keyword(printer, self.label)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        return cls(parser.parse_identifier_or_str_literal(" (a label name)"))

    def verify_(self) -> None:
        _check_identifier("ptx.label", self.label.data)


@irdl_op_definition
class BraOp(PtxInstruction):
    """Branch to a label, usually predicated: `@%p1 bra L_loop;`."""

    name = "ptx.bra"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("target",)

    target = prop_def(StringAttr)
    """The label branched to."""
    uni = opt_prop_def(UnitAttr)
    """`bra.uni`: the branch is not divergent."""

    def __init__(self, target: str, uni: bool = False):
        super().__init__(
            properties={"target": StringAttr(target), "uni": UnitAttr() if uni else None},
            operands=[[]],
        )

    def ptx_text(self, name: NameOf) -> str:
        return f"bra{'.uni' if self.uni is not None else ''} {self.target.data}"


@irdl_op_definition
class RetOp(FixedInstruction):
    """`ret;`."""

    name = "ptx.ret"
    TEXT: ClassVar[str] = "ret"


@irdl_op_definition
class ExitOp(FixedInstruction):
    """`exit;`: terminate this thread."""

    name = "ptx.exit"
    TEXT: ClassVar[str] = "exit"


@irdl_op_definition
class BarOp(PtxInstruction):
    """Named barrier: `bar.sync 1, 256;` or `bar.arrive 1, 256;` (id 0 is `__syncthreads`)."""

    name = "ptx.bar"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("mode", "barrier_id", "count")

    mode = prop_def(StringAttr)
    """`sync` or `arrive`."""
    barrier_id = prop_def(IntAttr)
    """The barrier, 0 to 15."""
    count = opt_prop_def(IntAttr)
    """Number of threads (a multiple of 32); all threads of the CTA when absent."""

    def __init__(self, mode: str = "sync", barrier_id: int = 0, count: int | None = None):
        super().__init__(
            properties={
                "mode": StringAttr(mode),
                "barrier_id": IntAttr(barrier_id),
                "count": None if count is None else IntAttr(count),
            },
            operands=[[]],
        )

    def verify_kinds(self) -> None:
        check_choice(self, "mode", self.mode.data, ("sync", "arrive"))
        check_below(self, "barrier id", self.barrier_id.data, 0, 16, "16")
        if self.count is None and self.mode.data == "arrive":
            raise VerifyException("ptx.bar: bar.arrive needs a thread count")
        if self.count is not None:
            check_thread_count(self, self.count.data)

    def ptx_text(self, name: NameOf) -> str:
        count = "" if self.count is None else f", {self.count.data}"
        return f"bar.{self.mode.data} {self.barrier_id.data}{count}"


# ----------------------------------------------------------------------------------------
# Hopper: mbarrier, TMA, wgmma, fences, register reconfiguration, stmatrix
# ----------------------------------------------------------------------------------------


def _require_shared_address(op: Operation, what: str, value: SSAValue) -> None:
    kind = _require_category(op, what, value, "b,u,s")
    if kind.width not in (32, 64):
        raise VerifyException(
            f"{op.name}: {what} must be a 32-bit shared address (or 64-bit), found "
            f"!ptx.reg<{kind.name}>"
        )


@irdl_op_definition
class MbarrierInitOp(PtxInstruction):
    """`mbarrier.init.shared::cta.b64 [bar], count;`."""

    name = "ptx.mbarrier_init"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("count",)

    count = prop_def(IntAttr)
    """The number of arrivals that complete a phase."""
    bar = _operand_def(RegType)
    """Shared address of the 8-byte barrier."""

    def __init__(self, bar: SSAValue, count: int):
        super().__init__(properties={"count": IntAttr(count)}, operands=[bar, []])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the barrier address", self.bar)
        if self.count.data <= 0:
            raise VerifyException(
                f"ptx.mbarrier_init: count must be positive, found {self.count.data}"
            )

    def ptx_text(self, name: NameOf) -> str:
        return f"mbarrier.init.shared::cta.b64 [{name(self.bar)}], {self.count.data}"


@irdl_op_definition
class MbarrierArriveOp(PtxInstruction):
    """Arrive on an mbarrier, optionally announcing transaction bytes (`expect_tx`).

    `mbarrier.arrive[.expect_tx].shared::cta.b64 _, [bar][, tx];`; with `cluster`, arrive
    on a barrier of another CTA of the cluster (address from `ptx.mapa`):
    `mbarrier.arrive.shared::cluster.b64 _, [bar];` (release at CTA scope, the default:
    a `.release.cluster` arrive costs two memory barriers, MEMBAR.ALL.CTA and .GPU, in SASS).
    """

    name = "ptx.mbarrier_arrive"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("scope",)

    scope = opt_prop_def(StringAttr)
    """`cluster` for a remote arrive; absent for the own CTA."""
    tx_bytes = opt_prop_def(IntAttr)
    """Transaction bytes expected (`.expect_tx`), if any."""
    bar = _operand_def(RegType)
    """Shared address of the barrier."""

    def __init__(self, bar: SSAValue, tx_bytes: int | None = None, cluster: bool = False):
        super().__init__(
            properties={
                "tx_bytes": None if tx_bytes is None else IntAttr(tx_bytes),
                "scope": StringAttr("cluster") if cluster else None,
            },
            operands=[bar, []],
        )

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the barrier address", self.bar)
        if self.scope is not None and self.scope.data != "cluster":
            raise VerifyException(
                f"ptx.mbarrier_arrive: scope must be 'cluster' or absent, found '{self.scope.data}'"
            )
        if self.scope is not None and self.tx_bytes is not None:
            raise VerifyException(
                "ptx.mbarrier_arrive: a cluster arrive cannot carry expect_tx bytes"
            )
        if self.tx_bytes is not None:
            check_below(self, "tx_bytes", self.tx_bytes.data, 0, 1 << 20, "2^20")

    def ptx_text(self, name: NameOf) -> str:
        if self.scope is not None:
            return f"mbarrier.arrive.shared::cluster.b64 _, [{name(self.bar)}]"
        if self.tx_bytes is None:
            return f"mbarrier.arrive.shared::cta.b64 _, [{name(self.bar)}]"
        return (
            f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [{name(self.bar)}], {self.tx_bytes.data}"
        )


@irdl_op_definition
class MbarrierExpectTxOp(PtxInstruction):
    """`mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [bar], bytes;` (no arrival)."""

    name = "ptx.mbarrier_expect_tx"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("tx_bytes",)

    tx_bytes = prop_def(IntAttr)
    """Transaction bytes expected."""
    bar = _operand_def(RegType)
    """Shared address of the barrier."""

    def __init__(self, bar: SSAValue, tx_bytes: int):
        super().__init__(properties={"tx_bytes": IntAttr(tx_bytes)}, operands=[bar, []])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the barrier address", self.bar)

    def ptx_text(self, name: NameOf) -> str:
        return (
            f"mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [{name(self.bar)}], "
            f"{self.tx_bytes.data}"
        )


@irdl_op_definition
class MbarrierTryWaitOp(PtxInstruction):
    """Test for phase completion: `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], ph;`.

    Loop on it (label, try_wait, `@!p bra`) to wait.
    """

    name = "ptx.mbarrier_try_wait"

    bar = _operand_def(RegType)
    """Shared address of the barrier."""
    parity = _operand_def(RegType)
    """The phase parity waited for (0 or 1, a 32-bit register)."""
    result = _result_def(RegType)
    """True once the phase with that parity has completed."""

    def __init__(self, bar: SSAValue, parity: SSAValue):
        super().__init__(operands=[bar, parity, []], result_types=[PRED])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the barrier address", self.bar)
        _require(self, "parity", self.parity, "u32")
        _require_category(self, "result", self.result, "pred")

    def ptx_text(self, name: NameOf) -> str:
        return (
            f"mbarrier.try_wait.parity.shared::cta.b64 {name(self.result)}, "
            f"[{name(self.bar)}], {name(self.parity)}"
        )


@irdl_op_definition
class MapaOp(PtxInstruction):
    """Map a shared address to the same address in another CTA of the cluster.

    `mapa.shared::cluster.u32 d, a, rank;`.
    """

    name = "ptx.mapa"

    addr = _operand_def(RegType)
    rank = _operand_def(RegType)
    """The target CTA's rank in the cluster."""
    result = _result_def(RegType)

    def __init__(self, addr: SSAValue, rank: SSAValue):
        super().__init__(operands=[addr, rank, []], result_types=[addr.type])

    def verify_kinds(self) -> None:
        _same_kind(self, [("addr", self.addr), ("result", self.result)])
        _require_shared_address(self, "addr", self.addr)
        _require(self, "rank", self.rank, "u32")

    def ptx_text(self, name: NameOf) -> str:
        width = kind_of(self.addr).width
        return (
            f"mapa.shared::cluster.u{width} {name(self.result)}, {name(self.addr)}, "
            f"{name(self.rank)}"
        )


FENCES: dict[str, str] = {
    "proxy_async": "fence.proxy.async.shared::cta",
    "proxy_async_all": "fence.proxy.async",
    "mbarrier_init": "fence.mbarrier_init.release.cluster",
    "acq_rel_cta": "fence.acq_rel.cta",
    "acq_rel_cluster": "fence.acq_rel.cluster",
    "acq_rel_gpu": "fence.acq_rel.gpu",
    "sc_cta": "fence.sc.cta",
    "sc_gpu": "fence.sc.gpu",
}
"""Fence kinds of `ptx.fence` and their PTX."""


@irdl_op_definition
class FenceOp(PtxInstruction):
    """A memory or proxy fence: `ptx.fence proxy_async` is `fence.proxy.async.shared::cta;`."""

    name = "ptx.fence"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("kind",)

    kind = prop_def(StringAttr)
    """A key of `FENCES`."""

    def __init__(self, kind: str):
        super().__init__(properties={"kind": StringAttr(kind)}, operands=[[]])

    def verify_kinds(self) -> None:
        if self.kind.data not in FENCES:
            raise VerifyException(
                f"ptx.fence: unknown fence '{self.kind.data}', expected one of {', '.join(FENCES)}"
            )

    def ptx_text(self, name: NameOf) -> str:
        return FENCES[self.kind.data]


@irdl_op_definition
class ClusterBarrierOp(PtxInstruction):
    """`barrier.cluster.arrive.release.aligned;` or `barrier.cluster.wait.acquire.aligned;`."""

    name = "ptx.cluster_barrier"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("mode",)

    mode = prop_def(StringAttr)
    """`arrive` or `wait`."""

    def __init__(self, mode: str):
        super().__init__(properties={"mode": StringAttr(mode)}, operands=[[]])

    def verify_kinds(self) -> None:
        check_choice(self, "mode", self.mode.data, ("arrive", "wait"))

    def ptx_text(self, name: NameOf) -> str:
        if self.mode.data == "arrive":
            return "barrier.cluster.arrive.release.aligned"
        return "barrier.cluster.wait.acquire.aligned"


def _verify_coords(op: Operation, coords: Sequence[SSAValue]) -> None:
    if not 1 <= len(coords) <= 5:
        raise VerifyException(
            f"{op.name}: a tensor copy takes 1 to 5 coordinates, found {len(coords)}"
        )
    for i, coord in enumerate(coords):
        _require(op, f"coordinate {i}", coord, "s32")


def _require_address64(op: Operation, what: str, value: SSAValue) -> None:
    kind = _require_category(op, what, value, "b,u,s")
    if kind.width != 64:
        raise VerifyException(
            f"{op.name}: {what} must be a 64-bit register, found !ptx.reg<{kind.name}>"
        )


@irdl_op_definition
class TmaLoadOp(PtxInstruction):
    """A TMA tiled load into shared memory completing on an mbarrier.

    `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
    [dst], [tmap, {c0, c1}], [bar];` (coordinates innermost first).
    """

    name = "ptx.tma_load"

    dst = _operand_def(RegType)
    """Shared address of the destination tile."""
    tmap = _operand_def(RegType)
    """Generic address of the tensor map (cvta.param of the parameter's address)."""
    bar = _operand_def(RegType)
    """Shared address of the mbarrier that counts the bytes."""
    coords = _var_operand_def(RegType)
    """Tile coordinates in elements, innermost dimension first (s32)."""

    def __init__(self, dst: SSAValue, tmap: SSAValue, bar: SSAValue, coords: Sequence[SSAValue]):
        super().__init__(operands=[dst, tmap, bar, list(coords), []])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the destination", self.dst)
        _require_address64(self, "the tensor map address", self.tmap)
        _require_shared_address(self, "the barrier address", self.bar)
        _verify_coords(self, list(self.coords))

    def ptx_text(self, name: NameOf) -> str:
        coords = ", ".join(name(c) for c in self.coords)
        return (
            f"cp.async.bulk.tensor.{len(self.coords)}d.shared::cluster.global."
            f"mbarrier::complete_tx::bytes [{name(self.dst)}], [{name(self.tmap)}, "
            f"{{{coords}}}], [{name(self.bar)}]"
        )


@irdl_op_definition
class TmaLoadMulticastOp(PtxInstruction):
    """A TMA load multicast to the CTAs of a cluster named by a 16-bit mask.

    `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
    .multicast::cluster [dst], [tmap, {c0, c1}], [bar], mask;`.
    """

    name = "ptx.tma_load_multicast"

    dst = _operand_def(RegType)
    """Shared address of the destination tile (the same in every receiving CTA)."""
    tmap = _operand_def(RegType)
    """Generic address of the tensor map."""
    bar = _operand_def(RegType)
    """Shared address of the mbarrier (the same in every receiving CTA)."""
    mask = _operand_def(RegType)
    """The receiving CTAs, one bit per rank (b16)."""
    coords = _var_operand_def(RegType)
    """Tile coordinates, innermost first."""

    def __init__(
        self,
        dst: SSAValue,
        tmap: SSAValue,
        bar: SSAValue,
        mask: SSAValue,
        coords: Sequence[SSAValue],
    ):
        super().__init__(operands=[dst, tmap, bar, mask, list(coords), []])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the destination", self.dst)
        _require_address64(self, "the tensor map address", self.tmap)
        _require_shared_address(self, "the barrier address", self.bar)
        _require(self, "mask", self.mask, "b16")
        _verify_coords(self, list(self.coords))

    def ptx_text(self, name: NameOf) -> str:
        coords = ", ".join(name(c) for c in self.coords)
        return (
            f"cp.async.bulk.tensor.{len(self.coords)}d.shared::cluster.global."
            f"mbarrier::complete_tx::bytes.multicast::cluster [{name(self.dst)}], "
            f"[{name(self.tmap)}, {{{coords}}}], [{name(self.bar)}], {name(self.mask)}"
        )


@irdl_op_definition
class TmaStoreOp(PtxInstruction):
    """A TMA tiled store from shared memory in a bulk group (clipped at the bounds).

    `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [tmap, {c0, c1}], [src];`.
    """

    name = "ptx.tma_store"

    src = _operand_def(RegType)
    """Shared address of the source tile."""
    tmap = _operand_def(RegType)
    """Generic address of the tensor map."""
    coords = _var_operand_def(RegType)
    """Tile coordinates, innermost first."""

    def __init__(self, src: SSAValue, tmap: SSAValue, coords: Sequence[SSAValue]):
        super().__init__(operands=[src, tmap, list(coords), []])

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the source", self.src)
        _require_address64(self, "the tensor map address", self.tmap)
        _verify_coords(self, list(self.coords))

    def ptx_text(self, name: NameOf) -> str:
        coords = ", ".join(name(c) for c in self.coords)
        return (
            f"cp.async.bulk.tensor.{len(self.coords)}d.global.shared::cta.bulk_group "
            f"[{name(self.tmap)}, {{{coords}}}], [{name(self.src)}]"
        )


@irdl_op_definition
class BulkCommitOp(FixedInstruction):
    """`cp.async.bulk.commit_group;`: close the current bulk group of TMA stores."""

    name = "ptx.bulk_commit"
    TEXT: ClassVar[str] = "cp.async.bulk.commit_group"


class BulkWaitBase(PtxInstruction, ABC):
    """Fields, constructor and checks of a wait on bulk groups (`ptx` and `hopper` ops)."""

    KEYWORDS: ClassVar[tuple[str, ...]] = ("pending",)

    pending = prop_def(IntAttr)
    """Bulk groups that may stay in flight (0 to 63)."""
    read = opt_prop_def(UnitAttr)
    """Wait only until the sources have been read (the shared memory may be reused)."""

    def __init__(self, pending: int = 0, read: bool = True):
        super().__init__(
            properties={"pending": IntAttr(pending), "read": UnitAttr() if read else None},
            operands=[[]],
        )

    def verify_kinds(self) -> None:
        check_range(self, "pending", self.pending.data, 0, 63)


@irdl_op_definition
class BulkWaitOp(BulkWaitBase):
    """`cp.async.bulk.wait_group[.read] N;`: wait until at most N bulk groups are pending."""

    name = "ptx.bulk_wait"

    def ptx_text(self, name: NameOf) -> str:
        read = ".read" if self.read is not None else ""
        return f"cp.async.bulk.wait_group{read} {self.pending.data}"


@irdl_op_definition
class WgmmaFenceOp(FixedInstruction):
    """`wgmma.fence.sync.aligned;`: order register accesses before wgmma."""

    name = "ptx.wgmma_fence"
    TEXT: ClassVar[str] = "wgmma.fence.sync.aligned"


@irdl_op_definition
class WgmmaCommitOp(FixedInstruction):
    """`wgmma.commit_group.sync.aligned;`."""

    name = "ptx.wgmma_commit"
    TEXT: ClassVar[str] = "wgmma.commit_group.sync.aligned"


class WgmmaWaitBase(PtxInstruction, ABC):
    """Fields, constructor and checks of a wait on wgmma groups (`ptx` and `hopper` ops)."""

    KEYWORDS: ClassVar[tuple[str, ...]] = ("pending",)

    pending = prop_def(IntAttr)
    """wgmma groups that may stay in flight (0 to 7)."""

    def __init__(self, pending: int = 0):
        super().__init__(properties={"pending": IntAttr(pending)}, operands=[[]])

    def verify_kinds(self) -> None:
        check_range(self, "pending", self.pending.data, 0, 7)


@irdl_op_definition
class WgmmaWaitOp(WgmmaWaitBase):
    """`wgmma.wait_group.sync.aligned N;`: at most N wgmma groups stay in flight."""

    name = "ptx.wgmma_wait"

    def ptx_text(self, name: NameOf) -> str:
        return f"wgmma.wait_group.sync.aligned {self.pending.data}"


@irdl_op_definition
class WgmmaOp(PtxInstruction):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 {d...}, adesc, bdesc, p, 1, 1,
    ta, tb;`: D (+)= A * B with both operands in shared memory.

    The accumulators are read and written in place (N/2 f32 registers per thread).
    """

    name = "ptx.wgmma"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("n", "ab_type", "trans_a", "trans_b")

    n = prop_def(IntAttr)
    """N of the m64nNk16 shape: a multiple of 8 in [8, 256]."""
    ab_type = prop_def(StringAttr)
    """Element type of A and B: `bf16` or `f16`."""
    trans_a = prop_def(IntAttr)
    """0: A is K-major; 1: A is M-major."""
    trans_b = prop_def(IntAttr)
    """0: B is K-major; 1: B is N-major."""
    adesc = _operand_def(RegType)
    """Shared-memory matrix descriptor of A (b64)."""
    bdesc = _operand_def(RegType)
    """Shared-memory matrix descriptor of B (b64)."""
    scale_d = _operand_def(RegType)
    """Predicate: false computes D = A*B, true D += A*B."""
    acc = _var_operand_def(RegType)
    """The f32 accumulators, updated in place."""

    def __init__(
        self,
        acc: Sequence[SSAValue],
        adesc: SSAValue,
        bdesc: SSAValue,
        scale_d: SSAValue,
        *,
        n: int,
        ab_type: str = "bf16",
        trans_a: int = 0,
        trans_b: int = 0,
    ):
        super().__init__(
            properties={
                "n": IntAttr(n),
                "ab_type": StringAttr(ab_type),
                "trans_a": IntAttr(trans_a),
                "trans_b": IntAttr(trans_b),
            },
            operands=[adesc, bdesc, scale_d, list(acc), []],
        )

    def verify_kinds(self) -> None:
        n = self.n.data
        check_range(self, "N", n, 8, 256, step=8)
        check_choice(self, "ab_type", self.ab_type.data, ("bf16", "f16"))
        for what, bit in (("trans_a", self.trans_a), ("trans_b", self.trans_b)):
            if bit.data not in (0, 1):
                raise VerifyException(f"ptx.wgmma: {what} must be 0 or 1, found {bit.data}")
        _require_address64(self, "adesc", self.adesc)
        _require_address64(self, "bdesc", self.bdesc)
        _require_category(self, "scale_d", self.scale_d, "pred")
        if len(self.acc) != n // 2:
            raise VerifyException(
                f"ptx.wgmma: m64n{n}k16 needs {n // 2} f32 accumulators, found {len(self.acc)}"
            )
        for i, value in enumerate(self.acc):
            _require(self, f"accumulator {i}", value, "f32")

    def ptx_text(self, name: NameOf) -> str:
        acc = "{" + ", ".join(name(v) for v in self.acc) + "}"
        ab = self.ab_type.data
        return (
            f"wgmma.mma_async.sync.aligned.m64n{self.n.data}k16.f32.{ab}.{ab} {acc}, "
            f"{name(self.adesc)}, {name(self.bdesc)}, {name(self.scale_d)}, 1, 1, "
            f"{self.trans_a.data}, {self.trans_b.data}"
        )


class SetmaxnregBase(PtxInstruction, ABC):
    """Fields, constructor and checks of `setmaxnreg` (`ptx` and `hopper` ops)."""

    KEYWORDS: ClassVar[tuple[str, ...]] = ("action", "count")

    action = prop_def(StringAttr)
    """`inc` or `dec`."""
    count = prop_def(IntAttr)
    """The new register count per thread: a multiple of 8 in [24, 256]."""

    def __init__(self, action: str, count: int):
        super().__init__(
            properties={"action": StringAttr(action), "count": IntAttr(count)}, operands=[[]]
        )

    def verify_kinds(self) -> None:
        check_choice(self, "action", self.action.data, ("inc", "dec"))
        check_range(self, "count", self.count.data, 24, 256, step=8)


@irdl_op_definition
class SetmaxnregOp(SetmaxnregBase):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 N;` (by every thread of a warpgroup)."""

    name = "ptx.setmaxnreg"

    def ptx_text(self, name: NameOf) -> str:
        return f"setmaxnreg.{self.action.data}.sync.aligned.u32 {self.count.data}"


@irdl_op_definition
class ElectSyncOp(PtxInstruction):
    """`elect.sync _|%p, 0xffffffff;`: true in exactly one active lane of the warp."""

    name = "ptx.elect_sync"

    result = _result_def(RegType)

    def __init__(self):
        super().__init__(operands=[[]], result_types=[PRED])

    def verify_kinds(self) -> None:
        _require_category(self, "result", self.result, "pred")

    def ptx_text(self, name: NameOf) -> str:
        return f"elect.sync _|{name(self.result)}, 0xffffffff"


@irdl_op_definition
class StmatrixOp(PtxInstruction):
    """`stmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 [addr], {r0, r1, r2, r3};`."""

    name = "ptx.stmatrix"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("layout",)

    layout = opt_prop_def(StringAttr)
    """`trans` to store each 8x8 matrix transposed; absent for row-major."""
    addr = _operand_def(RegType)
    """This thread's row address in shared memory."""
    values = _var_operand_def(RegType)
    """1, 2 or 4 registers of packed 16-bit pairs (one per 8x8 matrix)."""

    def __init__(self, addr: SSAValue, values: Sequence[SSAValue], trans: bool = False):
        super().__init__(
            properties={"layout": StringAttr("trans") if trans else None},
            operands=[addr, list(values), []],
        )

    def verify_kinds(self) -> None:
        _require_shared_address(self, "the address", self.addr)
        if len(self.values) not in (1, 2, 4):
            raise VerifyException(
                f"ptx.stmatrix: expected 1, 2 or 4 registers, found {len(self.values)}"
            )
        for i, value in enumerate(self.values):
            _require(self, f"value {i}", value, "b32")
        if self.layout is not None and self.layout.data != "trans":
            raise VerifyException(
                f"ptx.stmatrix: layout must be 'trans' or absent, found '{self.layout.data}'"
            )

    def ptx_text(self, name: NameOf) -> str:
        trans = ".trans" if self.layout is not None else ""
        values = "{" + ", ".join(name(v) for v in self.values) + "}"
        return (
            f"stmatrix.sync.aligned.m8n8.x{len(self.values)}{trans}.shared.b16 "
            f"[{name(self.addr)}], {values}"
        )


# ----------------------------------------------------------------------------------------
# The escape hatch
# ----------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{(\d+)(?::(\d+))?\}")


@irdl_op_definition
class InstOp(PtxInstruction):
    """An instruction written as a text template over typed registers.

    Placeholders number the results first, then the operands: `{0}` is the first of them,
    `{2:6}` prints `{%r1, %r2, %r3, %r4}` (values 2 to 5 as a PTX vector). Any other
    text, braces included, is printed as is; the trailing `;` is added. Operands may be
    written by the instruction (e.g. wgmma accumulators): the registers are the values.
    """

    name = "ptx.inst"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("template",)
    QUOTED: ClassVar[tuple[str, ...]] = ("template",)

    template = prop_def(StringAttr)
    """The instruction text with placeholders."""
    args = _var_operand_def(RegType)
    """Registers read (or updated in place) by the instruction."""
    outs = _var_result_def(RegType)
    """Registers defined by the instruction."""

    def __init__(
        self,
        template: str,
        args: Sequence[SSAValue] = (),
        result_types: Sequence[RegType] = (),
    ):
        super().__init__(
            properties={"template": StringAttr(template)},
            operands=[list(args), []],
            result_types=[list(result_types)],
        )

    def verify_kinds(self) -> None:
        count = len(self.outs) + len(self.args)
        for match in _PLACEHOLDER.finditer(self.template.data):
            first = int(match.group(1))
            last = int(match.group(2)) - 1 if match.group(2) else first
            if last >= count or last < first:
                raise VerifyException(
                    f"ptx.inst: placeholder '{match.group(0)}' in '{self.template.data}' is "
                    f"out of range: the op has {len(self.outs)} results and "
                    f"{len(self.args)} operands"
                )
        if self.template.data.rstrip().endswith(";"):
            raise VerifyException(
                "ptx.inst: leave the trailing ';' out of the template (it is added)"
            )

    def ptx_text(self, name: NameOf) -> str:
        values = [*self.outs, *self.args]

        def substitute(match: re.Match[str]) -> str:
            first = int(match.group(1))
            if match.group(2) is None:
                return name(values[first])
            return "{" + ", ".join(name(v) for v in values[first : int(match.group(2))]) + "}"

        return _PLACEHOLDER.sub(substitute, self.template.data)


# ----------------------------------------------------------------------------------------
# Builder
# ----------------------------------------------------------------------------------------


class KernelBuilder:
    """Appends instructions to an entry's body; registers are the ops' results.

    Each method builds one op, appends it and returns its result (or the op when it has
    none). `with builder.predicated(p):` guards every instruction appended inside.

        module = PtxModuleOp()
        k = KernelBuilder.create(module, "scale", [("x", "ptr"), ("n", "u32")])
        x, n = k.ld_param("x"), k.ld_param("n")
        i = k.sreg("tid.x")
        with k.predicated(k.setp("lt", i, n)):
            addr = k.add(x, k.mul_wide(i, k.const(4)))
            (v,) = k.ld("global", addr, F32)
            k.st("global", addr, [k.add(v, v)])
        k.ret()
    """

    def __init__(self, entry: EntryOp):
        self.entry = entry
        """The entry being built."""
        self._labels = 0
        self._guard: tuple[SSAValue, bool] | None = None

    @classmethod
    def create(
        cls,
        module: PtxModuleOp,
        name: str,
        params: Sequence[tuple[str, str]] = (),
        *,
        maxnreg: int | None = None,
        reqntid: Sequence[int] | None = None,
    ) -> KernelBuilder:
        """Add a new entry to `module` and return a builder for its body."""
        entry = EntryOp(name, params, maxnreg=maxnreg, reqntid=reqntid)
        module.body.block.add_op(entry)
        return cls(entry)

    def append(self, op: _OpT) -> _OpT:
        """Append `op` to the body (guarded if inside `predicated`) and return it."""
        if self._guard is not None and isinstance(op, PtxInstruction) and op.guard is None:
            guarded = op.set_guard(*self._guard)
            op.erase()
            op = cast(_OpT, guarded)
        self.entry.body.block.add_op(op)
        return op

    @contextmanager
    def predicated(self, pred: SSAValue, negated: bool = False) -> Iterator[None]:
        """Guard the instructions appended in this block with `@pred` (`@!pred`)."""
        outer = self._guard
        self._guard = (pred, negated)
        try:
            yield
        finally:
            self._guard = outer

    def fresh_label(self, stem: str = "L") -> str:
        """A label name not used before by this builder."""
        self._labels += 1
        return f"{stem}_{self._labels}"

    # --- data movement ---
    def const(self, value: int | float, type: RegType = U32) -> SSAValue:
        """`mov` of an immediate."""
        return self.append(ConstOp(value, type)).result

    def mov(self, src: SSAValue, type: RegType | None = None) -> SSAValue:
        """Copy or reinterpret a register."""
        return self.append(MovOp(src, type)).result

    def assign(self, dst: SSAValue, src: SSAValue) -> AssignOp:
        """Overwrite register `dst` with `src`."""
        return self.append(AssignOp(dst, src))

    def sreg(self, sreg: str, type: RegType | None = None) -> SSAValue:
        """Read a special register (`tid.x`, `ctaid.x`, `laneid`, ...)."""
        width = SPECIAL_REGISTERS.get(sreg, 32)
        default = PRED if width == 1 else (U64 if width == 64 else U32)
        return self.append(SregOp(sreg, type or default)).result

    def addr_of(self, symbol: str, type: RegType = U32) -> SSAValue:
        """Address of a shared array (u32) or parameter (u64)."""
        return self.append(AddrOfOp(symbol, type)).result

    def ld_param(self, param: str, type: RegType | None = None) -> SSAValue:
        """Load a scalar parameter (its kind gives the default register type)."""
        if type is None:
            attr = self.entry.param(param)
            if attr is None:
                raise ValueError(f"entry @{self.entry.sym_name.data} has no parameter '{param}'")
            type = RegType(PARAM_KINDS[attr.kind.data] or "u64")
        return self.append(LdParamOp(param, type)).result

    def ld(
        self,
        space: str,
        addr: SSAValue,
        type: RegType,
        count: int = 1,
        offset: int = 0,
        qualifier: str | None = None,
    ) -> list[SSAValue]:
        """Load `count` registers (1, 2 or 4)."""
        return list(self.append(LdOp(space, addr, type, count, offset, qualifier)).values)

    def st(self, space: str, addr: SSAValue, values: Sequence[SSAValue], offset: int = 0) -> StOp:
        """Store registers (1, 2 or 4)."""
        return self.append(StOp(space, addr, values, offset))

    def cvta(self, space: str, src: SSAValue, to: bool = False) -> SSAValue:
        """`cvta[.to].space.u64`."""
        return self.append(CvtaOp(space, src, RegType("u64"), to)).result

    # --- arithmetic ---
    def binary(self, op_type: type[BinaryOp], lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """Any two-operand op (AddOp, MulOp, AndOp, MinOp, ...)."""
        return self.append(op_type(lhs, rhs)).result

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`add`."""
        return self.binary(AddOp, lhs, rhs)

    def sub(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`sub`."""
        return self.binary(SubOp, lhs, rhs)

    def mul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`mul.lo` (integers) or `mul` (floats)."""
        return self.binary(MulOp, lhs, rhs)

    def mul_wide(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`mul.wide`."""
        return self.append(MulWideOp(lhs, rhs)).result

    def mad_wide(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """`mad.wide`: a * b (full width) + c, c twice as wide as a and b."""
        return self.append(MadWideOp(a, b, c)).result

    def mad(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """`mad.lo` (integers) or `mad.rn` (floats)."""
        return self.append(MadOp(a, b, c)).result

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """`fma.rn.f32`."""
        return self.append(FmaOp(a, b, c)).result

    def shl(self, value: SSAValue, amount: SSAValue) -> SSAValue:
        """`shl`."""
        return self.append(ShlOp(value, amount)).result

    def shr(self, value: SSAValue, amount: SSAValue) -> SSAValue:
        """`shr`."""
        return self.append(ShrOp(value, amount)).result

    def setp(self, cmp: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`setp.cmp` into a new predicate."""
        return self.append(SetpOp(cmp, lhs, rhs)).result

    def selp(self, if_true: SSAValue, if_false: SSAValue, cond: SSAValue) -> SSAValue:
        """`selp`."""
        return self.append(SelpOp(if_true, if_false, cond)).result

    def cvt(self, src: SSAValue, type: RegType, rounding: str | None = None) -> SSAValue:
        """`cvt`."""
        return self.append(CvtOp(src, type, rounding)).result

    def cvt_pack(self, hi: SSAValue, lo: SSAValue, type: RegType = BF16X2) -> SSAValue:
        """`cvt.rn.bf16x2.f32`."""
        return self.append(CvtPackOp(hi, lo, type)).result

    def unary(self, op_type: type[UnaryOp], src: SSAValue) -> SSAValue:
        """Any one-operand op (Ex2Op, TanhOp, RcpOp, NegOp, NotOp, ...)."""
        return self.append(op_type(src)).result

    # --- control ---
    def label(self, label: str) -> LabelOp:
        """Place a label."""
        return self.append(LabelOp(label))

    def bra(self, target: str, guard: SSAValue | None = None, negated: bool = False) -> BraOp:
        """Branch, predicated by `guard` if given."""
        op = BraOp(target)
        if guard is not None:
            op = op.set_guard(guard, negated)
        return self.append(op)

    def bar(self, mode: str = "sync", barrier_id: int = 0, count: int | None = None) -> BarOp:
        """`bar.sync` / `bar.arrive`."""
        return self.append(BarOp(mode, barrier_id, count))

    def ret(self) -> RetOp:
        """`ret`."""
        return self.append(RetOp())

    def exit(self) -> ExitOp:
        """`exit`."""
        return self.append(ExitOp())

    def inst(
        self, template: str, args: Sequence[SSAValue] = (), result_types: Sequence[RegType] = ()
    ) -> InstOp:
        """An instruction written as a template (see `InstOp`)."""
        return self.append(InstOp(template, args, result_types))


PTX = Dialect(
    "ptx",
    [
        PtxModuleOp,
        SharedOp,
        EntryOp,
        ConstOp,
        MovOp,
        AssignOp,
        SregOp,
        AddrOfOp,
        LdParamOp,
        LdOp,
        StOp,
        CvtaOp,
        AddOp,
        SubOp,
        MulOp,
        MulHiOp,
        DivOp,
        RemOp,
        MinOp,
        MaxOp,
        AndOp,
        OrOp,
        XorOp,
        ShlOp,
        ShrOp,
        MulWideOp,
        MadWideOp,
        MadOp,
        FmaOp,
        Ex2Op,
        Lg2Op,
        TanhOp,
        RcpOp,
        SqrtOp,
        RsqrtOp,
        NegOp,
        AbsOp,
        NotOp,
        SetpOp,
        SelpOp,
        CvtOp,
        CvtPackOp,
        LabelOp,
        BraOp,
        RetOp,
        ExitOp,
        BarOp,
        MbarrierInitOp,
        MbarrierArriveOp,
        MbarrierExpectTxOp,
        MbarrierTryWaitOp,
        MapaOp,
        FenceOp,
        ClusterBarrierOp,
        TmaLoadOp,
        TmaLoadMulticastOp,
        TmaStoreOp,
        BulkCommitOp,
        BulkWaitOp,
        WgmmaFenceOp,
        WgmmaCommitOp,
        WgmmaWaitOp,
        WgmmaOp,
        SetmaxnregOp,
        ElectSyncOp,
        StmatrixOp,
        InstOp,
    ],
    [RegType, ParamAttr],
)
"""The ptx dialect."""
