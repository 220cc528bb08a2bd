"""The instruction syntax and emission shared by every ptx instruction op.

`PtxInstruction` gives each op one generic custom syntax (keywords, operands, guard,
extra properties, types) and the PTX line it emits; the helpers below check register
kinds and spell operands (addresses, vectors, float literals) in PTX.
"""

# Its private helpers (_require, _arith_type, ...) serve the sibling instruction modules.
# pyright: reportUnusedFunction=false

from __future__ import annotations

import re
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar, Self, TypeVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatData,
    FunctionType,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    i1,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptOperandDef,
    OptResultDef,
    VarOperandDef,
    VarResultDef,
    opt_operand_def,
    opt_prop_def,
)
from xdsl.irdl.constraints import VerificationContext
from xdsl.parser import Parser
from xdsl.parser.core import UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from mmcomp.dialects.ptx.types import KINDS, PRED, RegKind, kind_of
from mmcomp.ir.narrowing import is_int_attr

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

    guard = opt_operand_def()
    """The predicate guarding the instruction (`@%p`), if any: a `!ptx.reg<pred>`, or an
    `i1` at the levels above ptx (convert-arith-to-ptx puts it in a predicate register)."""
    negated = opt_prop_def(UnitAttr)
    """Present when the guard is negated (`@!%p`)."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @abstractmethod
    def ptx_text(self, name: NameOf) -> str:
        """The instruction's PTX text, without guard and trailing semicolon."""

    def ptx_line(self, name: NameOf) -> str:
        """The full PTX line: guard, instruction, semicolon."""
        text = self.ptx_text(name)
        self.check_guard_register()
        if self.guard is None:
            return f"{text};"
        bang = "!" if self.negated is not None else ""
        return f"@{bang}{name(self.guard)} {text};"

    def check_guard_register(self) -> None:
        """Raise unless the guard, if any, is a predicate register (what PTX text needs)."""
        if self.guard is None or self.guard.type == PRED:
            return
        raise DiagnosticException(
            f"{self.name}: the guard is an {self.guard.type} value, not a !ptx.reg<pred>: "
            "run convert-arith-to-ptx before emitting PTX"
        )

    def data_operands(self) -> Sequence[SSAValue]:
        """The operands other than the guard."""
        if self.guard is None:
            return self.operands
        return self.operands[:-1]

    def set_guard(self, pred: SSAValue | None, negated: bool = False) -> Self:
        """Return a copy of this op guarded by `pred` (used by builders)."""
        groups = self._operand_groups()
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

    def _operand_groups(self) -> list[SSAValue | list[SSAValue]]:
        """The operands but the guard, one entry per definition (a list for a variadic or
        an optional one), as the op's segment sizes split them."""
        sizes = self.properties.get("operandSegmentSizes")
        if not isinstance(sizes, DenseArrayBase):
            return _group(
                type(self), list(self.data_operands()), _operand_defs(type(self)), "operand"
            )
        groups: list[SSAValue | list[SSAValue]] = []
        start = 0
        for (name, definition), size in zip(
            type(self).get_irdl_definition().operands, sizes.get_values(), strict=True
        ):
            part = list(self.operands[start : start + size])
            start += size
            if name == "guard":
                continue
            several = isinstance(definition, VarOperandDef | OptOperandDef)
            groups.append(part if several else part[0])
        return groups

    def verify_(self) -> None:
        if self.guard is not None and self.guard.type not in (PRED, i1):
            raise VerifyException(
                f"{self.name}: the guard must be an i1 or a !ptx.reg<pred>, found {self.guard.type}"
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
            guard = parse_guard(parser)
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


def parse_guard(parser: Parser) -> SSAValue:
    """The guard after `if [not]`: a value defined before the op, of its own type (an i1 or
    a `!ptx.reg<pred>`); a value not defined yet is a forward reference to a predicate
    register."""
    unresolved = parser.parse_unresolved_operand()
    defined = parser.ssa_values.get(unresolved.operand_name)
    if defined is None or unresolved.index >= len(defined):
        return parser.resolve_operand(unresolved, PRED)
    found = defined[unresolved.index].type
    if found not in (PRED, i1):
        parser.raise_error(
            f"the guard must be an i1 or a !ptx.reg<pred>, found {found}", unresolved.span
        )
    return parser.resolve_operand(unresolved, found)


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
    elif is_int_attr(value):
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
    if is_int_attr(value):
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


def _braced(name: NameOf, values: Sequence[SSAValue]) -> str:
    """`{%r1, %r2, ...}`: registers in braces, however many."""
    return "{" + ", ".join(name(v) for v in values) + "}"


def _vector(name: NameOf, values: Sequence[SSAValue]) -> str:
    """One register as is, several as a braced vector."""
    if len(values) == 1:
        return name(values[0])
    return _braced(name, values)


class UnloweredInstruction(OpTrait):
    """An op of a level above ptx that an entry's body may hold, as it holds a
    `PtxInstruction`, until a pass lowers it: the hopper ops that only name a value (they
    take no guard, so they are no `PtxInstruction`)."""


class RegisterInstruction(PtxInstruction, ABC):
    """Base of the instructions on registers only: `MNEMONIC %result, %operand, ...`.

    The results come first, then the operands other than the guard, in definition order.
    """

    @abstractmethod
    def mnemonic(self) -> str:
        """The instruction name with its modifiers and type, e.g. `mul.lo.u32`."""

    def ptx_text(self, name: NameOf) -> str:
        registers = [*self.results, *self.data_operands()]
        return f"{self.mnemonic()} {', '.join(name(value) for value in registers)}"


class FixedInstruction(PtxInstruction, ABC):
    """Base of the instructions without operands, results or properties: fixed PTX text."""

    TEXT: ClassVar[str] = ""
    """The instruction's PTX text."""

    def __init__(self):
        super().__init__(operands=[[]])

    def ptx_text(self, name: NameOf) -> str:
        return self.TEXT
