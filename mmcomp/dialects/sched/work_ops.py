"""The tile work of a work unit, between the patterns of materialize-schedule.

materialize-schedule's strategy patterns write each work unit's tile as two ops at the
tile's starts, which its tile patterns then expand in place:

    %acc = sched.contract_tile (%a, %w) at [m = %m0, n = %n0] k_blocks %lo to %hi step %c1
             : (memref<...>, memref<...>) -> (tensor<128x128xf32>) {
    ^bb0(%a_tile: tensor<128x64xbf16>, %w_tile: tensor<128x64xbf16>):
      %y = fusion.mma %a_tile [m, k], %w_tile [n, k] -> [m, n] ...
      sched.yield %y : tensor<128x128xf32>
    }
    sched.write_tile (%acc) ins (%bias) outs (%out0) at [m = %m0, n = %n0]
      : (tensor<128x128xf32>), (memref<500xf32>), (memref<300x500xf32>) {
    ^bb0(%y: tensor<128x128xf32>, %bias_tile: tensor<128xf32>):
      ... fusion pointwise ops on tiles ...
      sched.yield %o : tensor<128x128xf32>
    }

`sched.contract_tile` becomes a zero tile per result and the K loop (`scf.for` over the
blocks, a `sched.load_tile` per input, a `sched.mma` per `fusion.mma`);
`sched.write_tile` becomes the loads of its inputs, a `sched.epilogue` of its region
and a `sched.store_tile` per output.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, MemRefType, TensorType
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.fusion import AxisRolesAttr
from mmcomp.dialects.sched.tile_ops import YieldOp
from mmcomp.dialects.syntax import with_attributes


def _parse_types(parser: Parser) -> list[Attribute]:
    """`(T1, T2, ...)`, possibly empty."""
    return parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)


def _parse_operands(parser: Parser) -> list[UnresolvedOperand]:
    """`(%a, %b, ...)`, possibly empty."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.PAREN, parser.parse_unresolved_operand
    )


def _parse_starts(parser: Parser) -> tuple[AxisRolesAttr, list[SSAValue]]:
    """`at [m = %m0, n = %n0]`: the roles and their starts."""
    parser.parse_keyword("at")

    def start() -> tuple[str, SSAValue]:
        role = parser.parse_identifier()
        parser.parse_punctuation("=")
        return role, parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())

    pairs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, start)
    return AxisRolesAttr(tuple(role for role, _ in pairs)), [value for _, value in pairs]


def _print_values(printer: Printer, values: Sequence[SSAValue]) -> None:
    """`(%a, %b, ...)`."""
    printer.print_string("(")
    printer.print_list(values, printer.print_ssa_value)
    printer.print_string(")")


def _print_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    """`(T1, T2, ...)`: the types of `values`."""
    printer.print_string("(")
    printer.print_list([value.type for value in values], printer.print_attribute)
    printer.print_string(")")


def _print_starts(printer: Printer, roles: AxisRolesAttr, starts: Sequence[SSAValue]) -> None:
    """` at [m = %m0, n = %n0]`."""
    printer.print_string(" at [")
    for index, (role, value) in enumerate(zip(roles.roles, starts, strict=True)):
        if index:
            printer.print_string(", ")
        printer.print_string(f"{role} = ")
        printer.print_ssa_value(value)
    printer.print_string("]")


def _check_starts(op: str, roles: AxisRolesAttr, starts: Sequence[SSAValue]) -> None:
    """One start per role."""
    if len(roles.roles) != len(starts):
        raise VerifyException(
            f"{op}: {len(starts)} starts for the {len(roles.roles)} roles "
            f"{list(roles.roles)}; one start per role"
        )


def _check_region(op: str, region: Region, arg_types: Sequence[Attribute]) -> list[Attribute]:
    """The region's block arguments have `arg_types` and it ends with sched.yield; the types
    it yields."""
    block = region.block
    found = [arg.type for arg in block.args]
    if found != list(arg_types):
        raise VerifyException(
            f"{op}: block argument types ({', '.join(map(str, found))}) differ from "
            f"({', '.join(map(str, arg_types))})"
        )
    last = block.last_op
    if not isinstance(last, YieldOp):
        raise VerifyException(f"{op}: the region must end with sched.yield")
    return [value.type for value in last.values]


@irdl_op_definition
class ContractTileOp(IRDLOperation):
    """The contractions of one tile over the K blocks lower, lower + step, ... < upper, each
    sum from zero: the region is one K block's, on the tiles of the inputs."""

    name = "sched.contract_tile"

    inputs = var_operand_def(MemRefType)
    """The arrays whose tiles the region's block arguments are, in order."""
    starts = var_operand_def(IndexType)
    """The tile's first index along each of `roles` (k: the K block's, added per block)."""
    lower = operand_def(IndexType)
    """The first K block."""
    upper = operand_def(IndexType)
    """The K block bound (exclusive)."""
    step = operand_def(IndexType)
    """The K block step."""
    roles = prop_def(AxisRolesAttr)
    """The role of each start."""
    accumulators = var_result_def(TensorType)
    """The f32 sums, one per contraction, in the order of the region's yield."""
    body = region_def("single_block")
    """One K block: `fusion.mma` on the input tiles, `sched.yield` of the products."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        roles: AxisRolesAttr,
        starts: Sequence[SSAValue],
        bounds: tuple[SSAValue, SSAValue, SSAValue],
        accumulator_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[inputs, starts, *bounds],
            properties={"roles": roles},
            result_types=[accumulator_types],
            regions=[body],
        )

    @classmethod
    def parse(cls, parser: Parser) -> ContractTileOp:
        inputs = _parse_operands(parser)
        roles, starts = _parse_starts(parser)
        parser.parse_keyword("k_blocks")
        lower = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
        parser.parse_keyword("to")
        upper = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
        parser.parse_keyword("step")
        step = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        input_types = _parse_types(parser)
        parser.parse_punctuation("->")
        result_types = _parse_types(parser)
        body = parser.parse_region()
        resolved = parser.resolve_operands(inputs, input_types, parser.pos)
        op = cls(resolved, roles, starts, (lower, upper, step), result_types, body)
        return with_attributes(op, attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_values(printer, self.inputs)
        _print_starts(printer, self.roles, self.starts)
        printer.print_string(" k_blocks ")
        printer.print_ssa_value(self.lower)
        printer.print_string(" to ")
        printer.print_ssa_value(self.upper)
        printer.print_string(" step ")
        printer.print_ssa_value(self.step)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        _print_types(printer, self.inputs)
        printer.print_string(" -> ")
        _print_types(printer, self.accumulators)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    def verify_(self) -> None:
        _check_starts(self.name, self.roles, self.starts)
        if len(self.body.block.args) != len(self.inputs):
            raise VerifyException(
                f"{self.name}: {len(self.body.block.args)} block arguments for "
                f"{len(self.inputs)} inputs; one tile per input"
            )
        tile_types = [arg.type for arg in self.body.block.args]
        yielded = _check_region(self.name, self.body, tile_types)
        results = [value.type for value in self.accumulators]
        if yielded != results:
            raise VerifyException(
                f"{self.name} yields ({', '.join(map(str, yielded))}) but its results are "
                f"({', '.join(map(str, results))})"
            )


@irdl_op_definition
class WriteTileOp(IRDLOperation):
    """The epilogue of one tile and its stores: the region maps the accumulators and the
    tiles of `inputs` to the tiles of `outputs`."""

    name = "sched.write_tile"

    accumulators = var_operand_def(TensorType)
    """The tile's f32 sums, the region's first block arguments."""
    inputs = var_operand_def(MemRefType)
    """The epilogue operands, whose tiles are the region's other block arguments."""
    outputs = var_operand_def(MemRefType)
    """The arrays the region's yielded tiles are stored to, in order."""
    starts = var_operand_def(IndexType)
    """The tile's first index along each of `roles`."""
    roles = prop_def(AxisRolesAttr)
    """The role of each start."""
    rows = opt_operand_def(IndexType)
    """The row bound of the stores along the m axis, if any (a grouped tile's group end:
    `... at [m = %m0, n = %n0] rows %end`)."""
    body = region_def("single_block")
    """fusion-dialect pointwise ops on the tiles, `sched.yield` of the output tiles."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        accumulators: Sequence[SSAValue],
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        roles: AxisRolesAttr,
        starts: Sequence[SSAValue],
        body: Region,
        rows: SSAValue | None = None,
    ):
        super().__init__(
            operands=[accumulators, inputs, outputs, starts, [] if rows is None else [rows]],
            properties={"roles": roles},
            regions=[body],
        )

    @classmethod
    def parse(cls, parser: Parser) -> WriteTileOp:
        accumulators = _parse_operands(parser)
        parser.parse_keyword("ins")
        inputs = _parse_operands(parser)
        parser.parse_keyword("outs")
        outputs = _parse_operands(parser)
        roles, starts = _parse_starts(parser)
        rows = None
        if parser.parse_optional_keyword("rows") is not None:
            rows = parser.resolve_operand(parser.parse_unresolved_operand(), IndexType())
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operands: list[Sequence[SSAValue]] = []
        for index, unresolved in enumerate((accumulators, inputs, outputs)):
            if index:
                parser.parse_punctuation(",")
            operands.append(parser.resolve_operands(unresolved, _parse_types(parser), parser.pos))
        body = parser.parse_region()
        op = cls(operands[0], operands[1], operands[2], roles, starts, body, rows)
        return with_attributes(op, attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_values(printer, self.accumulators)
        printer.print_string(" ins ")
        _print_values(printer, self.inputs)
        printer.print_string(" outs ")
        _print_values(printer, self.outputs)
        _print_starts(printer, self.roles, self.starts)
        if self.rows is not None:
            printer.print_string(" rows ")
            printer.print_ssa_value(self.rows)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        _print_types(printer, self.accumulators)
        printer.print_string(", ")
        _print_types(printer, self.inputs)
        printer.print_string(", ")
        _print_types(printer, self.outputs)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)

    def verify_(self) -> None:
        _check_starts(self.name, self.roles, self.starts)
        args = self.body.block.args
        if len(args) != len(self.accumulators) + len(self.inputs):
            raise VerifyException(
                f"{self.name}: {len(args)} block arguments for {len(self.accumulators)} "
                f"accumulators and {len(self.inputs)} inputs"
            )
        accumulator_types = [value.type for value in self.accumulators]
        arg_types = [*accumulator_types, *(arg.type for arg in args[len(accumulator_types) :])]
        yielded = _check_region(self.name, self.body, arg_types)
        if len(yielded) != len(self.outputs):
            raise VerifyException(
                f"{self.name} yields {len(yielded)} tiles for {len(self.outputs)} outputs"
            )
