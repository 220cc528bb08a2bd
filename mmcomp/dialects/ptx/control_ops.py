"""Control flow and synchronization: labels, branches, `ret`, `exit` and `bar`."""

# The ptx dialect's modules share the private helpers of syntax.py and types.py.
# pyright: reportPrivateUsage=false

from __future__ import annotations

from typing import ClassVar, Self

from xdsl.dialects.builtin import IntAttr, StringAttr, UnitAttr
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.ptx.syntax import (
    FixedInstruction,
    NameOf,
    PtxInstruction,
    _print_keyword,
    check_below,
    check_choice,
    check_thread_count,
)
from mmcomp.dialects.ptx.types import _check_identifier


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
