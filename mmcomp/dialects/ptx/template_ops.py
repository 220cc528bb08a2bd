"""The escape hatch: `ptx.inst`, an instruction written as a PTX text template."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.irdl import var_operand_def as _var_operand_def
from xdsl.irdl import var_result_def as _var_result_def
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.ptx.syntax import NameOf, PtxInstruction
from mmcomp.dialects.ptx.types import RegType

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
