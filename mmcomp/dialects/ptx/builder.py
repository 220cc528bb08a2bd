"""`KernelBuilder`: appends instruction ops to a kernel's body (a `ptx.entry`, or the hopper
level's `hopper.kernel`) from Python."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import Protocol, TypeVar, cast

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.traits import IsTerminator

from mmcomp.dialects.ptx.arith_ops import (
    AddOp,
    BinaryOp,
    CvtOp,
    CvtPackOp,
    FmaOp,
    MadOp,
    MadWideOp,
    MulOp,
    MulWideOp,
    SelpOp,
    SetpOp,
    ShlOp,
    ShrOp,
    SubOp,
    UnaryOp,
)
from mmcomp.dialects.ptx.control_ops import BarOp, BraOp, ExitOp, LabelOp, RetOp
from mmcomp.dialects.ptx.memory_ops import (
    SPECIAL_REGISTERS,
    AddrOfOp,
    AssignOp,
    ConstOp,
    CvtaOp,
    LdOp,
    LdParamOp,
    MovOp,
    SregOp,
    StOp,
)
from mmcomp.dialects.ptx.module import EntryOp, PtxModuleOp
from mmcomp.dialects.ptx.syntax import PtxInstruction
from mmcomp.dialects.ptx.template_ops import InstOp
from mmcomp.dialects.ptx.types import BF16X2, PARAM_KINDS, PRED, U32, U64, ParamAttr, RegType

_OpT = TypeVar("_OpT", bound=Operation)


class Kernel(Protocol):
    """A kernel op whose body a `KernelBuilder` appends to (`ptx.entry`, `hopper.kernel`)."""

    @property
    def sym_name(self) -> StringAttr:
        """The kernel's name."""
        ...

    @property
    def body(self) -> Region:
        """The single-block region of its instructions."""
        ...

    def param(self, name: str) -> ParamAttr | None:
        """The parameter of that name, if any."""
        ...


def encloses(home: Block | None, block: Block | None) -> bool:
    """`home` is `block` or a block around it."""
    while block is not None:
        if block is home:
            return True
        parent = block.parent_op()
        block = None if parent is None else parent.parent_block()
    return False


class KernelBuilder:
    """Appends instructions to an entry's body; registers are the ops' results.

    Each method builds one op, appends it and returns its result (or the op when it has
    none). `with builder.predicated(p):` guards every instruction appended inside;
    `with builder.inside(block):` appends to a block of a region (before its terminator)
    instead of the body.

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

    def __init__(self, entry: Kernel):
        self.entry = entry
        """The kernel being built (a `ptx.entry`, or the hopper level's `hopper.kernel`)."""
        self._labels = 0
        self._guard: tuple[SSAValue, bool] | None = None
        self._blocks: list[Block] = []

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
        if not self._blocks:
            self.entry.body.block.add_op(op)
            return op
        block = self._blocks[-1]
        last = block.last_op
        if last is not None and last.has_trait(IsTerminator):
            block.insert_op_before(op, last)
        else:
            block.add_op(op)
        return op

    @property
    def block(self) -> Block:
        """The block that `append` adds to: the entry's body, or the innermost entered."""
        return self._blocks[-1] if self._blocks else self.entry.body.block

    def enter(self, block: Block) -> None:
        """Append to `block` (a block of a region in the body) until the matching `leave`."""
        if block.parent_op() is None:
            raise ValueError("KernelBuilder.enter: expected a block inside an op's region")
        self._blocks.append(block)

    def leave(self) -> None:
        """Go back to the block that was appended to before the last `enter`."""
        if not self._blocks:
            raise ValueError("KernelBuilder.leave: no block was entered")
        self._blocks.pop()

    @contextmanager
    def inside(self, block: Block) -> Generator[Block]:
        """Append to `block` in this `with` block (see `enter`)."""
        self.enter(block)
        try:
            yield block
        finally:
            self.leave()

    def sees(self, value: SSAValue) -> bool:
        """`value` is defined in the block appended to or in a block enclosing it."""
        owner = value.owner
        return encloses(owner if isinstance(owner, Block) else owner.parent_block(), self.block)

    @contextmanager
    def predicated(self, pred: SSAValue, negated: bool = False) -> Generator[None]:
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
