"""Data movement: immediates, moves, special registers, addresses, parameter loads,
loads, stores and address conversion.
"""

# The ptx dialect's modules share the private helpers of syntax.py and types.py.
# pyright: reportPrivateUsage=false

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import FloatData, IntAttr, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def
from xdsl.irdl import operand_def as _operand_def
from xdsl.irdl import result_def as _result_def
from xdsl.irdl import var_operand_def as _var_operand_def
from xdsl.irdl import var_result_def as _var_result_def
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.ptx.syntax import (
    NameOf,
    PtxInstruction,
    RegisterInstruction,
    _address,
    _arith_type,
    _bits_type,
    _f32_literal,
    _f64_literal,
    _require,
    _require_category,
    _same_kind,
    _vector,
)
from mmcomp.dialects.ptx.types import PARAM_KINDS, U32, U64, ParamAttr, RegType, kind_of


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
class MovOp(RegisterInstruction):
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

    def mnemonic(self) -> str:
        return f"mov.{_bits_type(kind_of(self.result))}"


@irdl_op_definition
class AssignOp(RegisterInstruction):
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

    def mnemonic(self) -> str:
        return f"mov.{_bits_type(kind_of(self.dst))}"


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

    def verify_param(self, entry: str, param: ParamAttr | None) -> None:
        """Check that the parameter exists in entry @`entry` (`param`, its declaration
        there) and fits the result register."""
        if param is None:
            raise VerifyException(
                f"ptx.ld_param: entry @{entry} has no parameter '{self.param.data}'"
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
        head: list[str] = ["ld"]
        tail: list[str] = []
        if self.qualifier is not None and self.qualifier.data == "nc":
            tail.append("nc")
        elif self.qualifier is not None:
            head.append(self.qualifier.data)
        mnemonic = _access_mnemonic(head, self.space.data, tail, self.values)
        return f"{mnemonic} {_vector(name, self.values)}, {_address(name, self.addr, self.offset)}"


@irdl_op_definition
class LdIntoOp(PtxInstruction):
    """Load 1, 2 or 4 registers from global memory into registers written before (which
    a guarded load leaves as they were where its guard fails): `ld.global.v2.b16 {%rs1,
    %rs2}, [%rd1+4];` of `ptx.ld_into global %rd1, %rs1, %rs2 {offset = 4}`."""

    name = "ptx.ld_into"
    KEYWORDS: ClassVar[tuple[str, ...]] = ("space",)

    space = prop_def(StringAttr)
    """State space (`global`, `shared`, ..., or `generic`)."""
    offset = opt_prop_def(IntAttr)
    """Byte offset added to the address."""
    addr = _operand_def(RegType)
    """The address (64-bit; 32-bit allowed for shared)."""
    targets = _var_operand_def(RegType)
    """The registers written (1, 2 or 4 of the same kind)."""

    def __init__(self, space: str, addr: SSAValue, targets: Sequence[SSAValue], offset: int = 0):
        super().__init__(
            properties={
                "space": StringAttr(space),
                "offset": IntAttr(offset) if offset else None,
            },
            operands=[addr, list(targets), []],
        )

    def verify_kinds(self) -> None:
        _verify_memory(self, self.space.data, self.addr, list(self.targets), "target")

    def ptx_text(self, name: NameOf) -> str:
        mnemonic = _access_mnemonic(["ld"], self.space.data, [], self.targets)
        return f"{mnemonic} {_vector(name, self.targets)}, {_address(name, self.addr, self.offset)}"


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
        mnemonic = _access_mnemonic(["st"], self.space.data, [], self.values)
        return f"{mnemonic} {_address(name, self.addr, self.offset)}, {_vector(name, self.values)}"


def _access_mnemonic(
    head: Sequence[str], space: str, tail: Sequence[str], values: Sequence[SSAValue]
) -> str:
    """`ld.global.v4.f32`: head, space (none for generic), tail, vector width, values' type."""
    parts = [*head, *([] if space == "generic" else [space]), *tail]
    if len(values) > 1:
        parts.append(f"v{len(values)}")
    kind = kind_of(values[0])
    parts.append(f"b{kind.width}" if kind.category in ("h", "x") else kind.name)
    return ".".join(parts)


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
