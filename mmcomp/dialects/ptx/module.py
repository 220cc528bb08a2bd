"""The structural ops: `ptx.module` (header directives), `ptx.shared` (shared-memory
arrays) and `ptx.entry` (a kernel: parameters, performance directives, a flat body).
"""

# The ptx dialect's modules share the private helpers of syntax.py and types.py.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Self

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, NoTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from mmcomp.dialects.ptx.control_ops import BraOp, LabelOp
from mmcomp.dialects.ptx.launch import Launch, LaunchAttr, parse_fields, print_fields
from mmcomp.dialects.ptx.memory_ops import LdParamOp
from mmcomp.dialects.ptx.syntax import PtxInstruction, UnloweredInstruction
from mmcomp.dialects.ptx.types import (
    _IDENT,
    ParamAttr,
    _check_identifier,
    _parse_param,
    print_param,
)

# ---- ptx.module -----------------------------------------------------------------------


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

# ---- ptx.shared -----------------------------------------------------------------------


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


# ---- ptx.entry ------------------------------------------------------------------------

INDEX_ARITHMETIC = (
    "builtin.unrealized_conversion_cast",
    "gpu.block_id",
    "gpu.grid_dim",
    "gpu.thread_id",
)
"""The ops besides `arith` that an entry holds before convert-arith-to-ptx."""


STRUCTURED_CONTROL = ("scf.for", "scf.if", "scf.yield")
"""The structured control flow that an entry holds before convert-scf-to-ptx."""
LABELS_ATTR = "ptx.labels"
"""The label names that an `scf.for` / `scf.if` of an entry becomes (convert-scf-to-ptx)."""


def is_structured_control(op: Operation) -> bool:
    """The op is structured control flow that convert-scf-to-ptx lowers."""
    return op.name in STRUCTURED_CONTROL


def carried_labels(op: Operation) -> list[str] | None:
    """The label names an scf op carries in `ptx.labels`, in order; None without that
    array of strings."""
    attr = op.attributes.get(LABELS_ATTR)
    if attr is None:  # most ops: no need for `isa`'s costlier check
        return None
    if not isa(attr, ArrayAttr[StringAttr]):
        return None
    return [label.data for label in attr.data]


def carried_label_names(op: Operation) -> set[str]:
    """The label names an scf op carries in `ptx.labels` (none if it has no such array)."""
    return set(carried_labels(op) or ())


def is_index_arithmetic(op: Operation) -> bool:
    """The op is index arithmetic or the epilogue's float math (`arith`, `math`) that
    convert-arith-to-ptx lowers (or one of its casts)."""
    return op.name.startswith(("arith.", "math.")) or op.name in INDEX_ARITHMETIC


class KernelSignatureOp(IRDLOperation):
    """Base of the kernel ops (`ptx.entry`, `hopper.kernel`): a name, parameters with their
    launch data, performance directives, the launch, and a one-block body."""

    sym_name = prop_def(StringAttr)
    """The kernel's name (its PTX entry's)."""
    params = prop_def(ArrayAttr[ParamAttr], default_value=ArrayAttr(()))
    """The kernel's parameters, in order, with their launch data."""
    maxnreg = opt_prop_def(IntAttr)
    """`.maxnreg N`: a register cap (needed for setmaxnreg to take effect)."""
    reqntid = opt_prop_def(ArrayAttr[IntAttr])
    """`.reqntid x[, y, z]`: the exact block size."""
    launch = opt_prop_def(LaunchAttr)
    """The grid, cluster and dynamic shared memory of the launch (mmcomp.dialects.ptx.launch)."""
    body = region_def("single_block")
    """The kernel's program, in order."""

    def __init__(
        self,
        sym_name: str,
        params: Sequence[ParamAttr | tuple[str, str]] = (),
        *,
        maxnreg: int | None = None,
        reqntid: Sequence[int] | None = None,
        launch: Launch | None = None,
        ops: Iterable[Operation] = (),
        properties: dict[str, Attribute | None] | None = None,
    ):
        param_attrs = [p if isinstance(p, ParamAttr) else ParamAttr(*p) for p in params]
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "params": ArrayAttr(param_attrs),
                "maxnreg": None if maxnreg is None else IntAttr(maxnreg),
                "reqntid": None if reqntid is None else ArrayAttr([IntAttr(n) for n in reqntid]),
                "launch": None if launch is None else LaunchAttr(launch),
                **(properties or {}),
            },
            regions=[Region(Block(ops))],
        )

    def param(self, name: str) -> ParamAttr | None:
        """The parameter of that name, if any."""
        return find_param(self.params, name)


@irdl_op_definition
class EntryOp(KernelSignatureOp):
    """A kernel (`.visible .entry`): parameters, performance directives and a flat body."""

    name = "ptx.entry"

    traits = traits_def(NoTerminator(), IsolatedFromAbove(), HasParent(PtxModuleOp))

    def verify_(self) -> None:
        entry = f"ptx.entry @{self.sym_name.data}"
        verify_signature(entry, self.sym_name, self.params, self.maxnreg, self.reqntid)
        labels: set[str] = set()
        carried: set[str] = set()
        for op in self.body.walk():
            if isinstance(op, LabelOp):
                if op.label.data in labels:
                    raise VerifyException(f"{entry}: label '{op.label.data}' is defined twice")
                labels.add(op.label.data)
            elif is_structured_control(op):
                carried |= carried_label_names(op)
            elif (
                op.parent_op() is self
                and not isinstance(op, PtxInstruction)
                and not op.has_trait(UnloweredInstruction)
                and not is_index_arithmetic(op)
            ):
                raise VerifyException(
                    f"{entry}: expected only ptx instructions, labels, index arithmetic and "
                    f"(before convert-scf-to-ptx) scf.for / scf.if in the body, found {op.name}"
                )
        for op in self.body.walk():
            if isinstance(op, BraOp) and op.target.data not in labels | carried:
                raise VerifyException(
                    f"{entry}: ptx.bra targets label '{op.target.data}', which is not "
                    "defined in this entry"
                )
            if isinstance(op, LdParamOp):
                op.verify_param(self.sym_name.data, self.param(op.param.data))

    def print(self, printer: Printer) -> None:
        print_signature(
            printer, self.sym_name, self.params, self.maxnreg, self.reqntid, self.launch
        )
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        signature = Signature.parse(parser, "ptx.entry")
        op = cls(
            signature.name,
            signature.params,
            maxnreg=signature.maxnreg,
            reqntid=signature.reqntid,
            launch=signature.launch,
        )
        _adopt_body(op.body, parser.parse_region())
        return op


# ---- a kernel's signature, shared with the hopper level's kernel -------------------------


@dataclass(frozen=True)
class Signature:
    """What a kernel declares before its body (`ptx.entry`, `hopper.kernel`): its name,
    parameters, performance directives and launch."""

    name: str
    """The kernel's name."""
    params: list[ParamAttr]
    """The parameters, in order."""
    maxnreg: int | None
    """`maxnreg N`, if given."""
    reqntid: list[int] | None
    """`reqntid [x, ...]`, if given."""
    launch: Launch | None
    """`launch<...>`, if given."""

    @staticmethod
    def parse(parser: Parser, op: str) -> Signature:
        """`@name(params) [maxnreg N] [reqntid [x, ...]] [launch<...>]` (`op` names the op in
        errors)."""
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
        launch = None
        if parser.parse_optional_keyword("launch"):
            launch = parse_fields(parser, Launch, f"{op} @{name} launch")
        return Signature(name, params, maxnreg, reqntid, launch)


def print_signature(
    printer: Printer,
    sym_name: StringAttr,
    params: ArrayAttr[ParamAttr],
    maxnreg: IntAttr | None,
    reqntid: ArrayAttr[IntAttr] | None,
    launch: LaunchAttr | None,
) -> None:
    """` @name(params) [maxnreg N] [reqntid [x, ...]] [launch<...>]`: what `Signature.parse`
    reads."""
    printer.print_string(" ")
    printer.print_symbol_name(sym_name.data)
    printer.print_string("(")
    printer.print_list(params.data, lambda param: print_param(printer, param))
    printer.print_string(")")
    if maxnreg is not None:
        printer.print_string(f" maxnreg {maxnreg.data}")
    if reqntid is not None:
        dims = ", ".join(str(d.data) for d in reqntid.data)
        printer.print_string(f" reqntid [{dims}]")
    if launch is not None:
        printer.print_string(" launch")
        print_fields(printer, launch.data)


def verify_signature(
    where: str,
    sym_name: StringAttr,
    params: ArrayAttr[ParamAttr],
    maxnreg: IntAttr | None,
    reqntid: ArrayAttr[IntAttr] | None,
) -> None:
    """Raise unless the name is a PTX identifier, each parameter is declared once, maxnreg
    is in [24, 255] and reqntid is 1 to 3 positive sizes (`where` names the kernel)."""
    if not is_identifier(sym_name.data):
        raise VerifyException(f"{where}: the name is not a valid PTX identifier")
    seen: set[str] = set()
    for param in params.data:
        if param.param_name.data in seen:
            raise VerifyException(f"{where}: parameter '{param.param_name.data}' is declared twice")
        seen.add(param.param_name.data)
    if maxnreg is not None and not 24 <= maxnreg.data <= 255:
        raise VerifyException(f"{where}: maxnreg must be in [24, 255], found {maxnreg.data}")
    if reqntid is not None:
        dims = [d.data for d in reqntid.data]
        if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
            raise VerifyException(f"{where}: reqntid must be 1 to 3 positive sizes, found {dims}")


def is_identifier(name: str) -> bool:
    """`name` is a valid PTX identifier."""
    return bool(_IDENT.match(name))


def find_param(params: ArrayAttr[ParamAttr], name: str) -> ParamAttr | None:
    """The parameter of that name, if any."""
    for param in params.data:
        if param.param_name.data == name:
            return param
    return None


def _adopt_body(body: Region, parsed: Region) -> None:
    """Move the block of a parsed region into `body` (keeping its empty block if none)."""
    if not parsed.blocks:
        return
    body.detach_block(body.block).erase()
    body.add_block(parsed.detach_block(parsed.block))
