"""A role's position in the shared-memory ring as a value: its type and ops.

A position is a (stage, phase parity) pair of a ring of `stages` stages, held in two u32
registers by convert-hopper-to-ptx. `hopper.ring_start` makes one (stage 0, phase 0),
`hopper.ring_advance` returns the next (stage + 1, phase flipped at the wrap) and
`hopper.ring_advance_by` the one `count` (an `index`) stages on, `hopper.ring_skip` the one
past the K blocks of a loop (a ping-pong consumer's skip of the other's tile, at the
schedule's level: lower-schedule-to-hopper makes it the loop's trip count and a
`hopper.ring_advance_by`); `hopper.ring_stage` reads
its stage as an `index` (which `hopper.ring_barrier` takes) and `hopper.ring_phase` its
phase parity as an `i32` (which `hopper.mbarrier_wait` takes; an `arith.xori` with 1 flips
it), each the register that holds it.
A loop carries a position as an `iter_args` value; its lowering advances it in place, so
every later position of one start lives in that start's registers.

    %pos = hopper.ring_start : !hopper.ring_position<stages = 4>
    %stage = hopper.ring_stage %pos : !hopper.ring_position<stages = 4>
    %phase = hopper.ring_phase %pos : !hopper.ring_position<stages = 4>
    %next = hopper.ring_advance %pos : !hopper.ring_position<stages = 4>
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntAttr, i32
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects.hopper.base import FreshValueOp, HopperValueOp, Implied, typed_value


@irdl_attr_definition
class RingPositionType(ParametrizedAttribute, TypeAttribute):
    """A (stage, phase parity) position in a ring of `stages` stages:
    `!hopper.ring_position<stages = 4>`."""

    name = "hopper.ring_position"

    stages: IntAttr
    """Stages of the ring walked (the stage wraps to 0 after `stages - 1`)."""

    def __init__(self, stages: int):
        super().__init__(IntAttr(stages))

    def verify(self) -> None:
        if self.stages.data < 1:
            raise VerifyException(
                f"!hopper.ring_position: stages must be at least 1, found {self.stages.data}"
            )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<stages = {self.stages.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[IntAttr]:
        with parser.in_angle_brackets():
            parser.parse_keyword("stages")
            parser.parse_punctuation("=")
            stages = parser.parse_integer(allow_boolean=False)
        return (IntAttr(stages),)


@irdl_op_definition
class RingStartOp(FreshValueOp):
    """The first position of a ring walk, stage 0 and phase 0:
    `%pos = hopper.ring_start : !hopper.ring_position<stages = 4>`."""

    name = "hopper.ring_start"

    result = result_def(RingPositionType)
    """The position (two fresh registers, both 0)."""


_ON_POSITION = "$position attr-dict `:` custom<Typed>(type($position))"
"""The syntax of an op reading one position: `%pos : !hopper.ring_position<...>`."""


class _NextPosition(HopperValueOp):
    """Base of the ops that return a later position of the one they take."""

    def verify_(self) -> None:
        position = self.operands[0]
        if position.type != self.results[0].type:
            raise VerifyException(
                f"{self.name}: the result must be of the position's type {position.type}, "
                f"found {self.results[0].type}"
            )


@irdl_op_definition
class RingAdvanceOp(_NextPosition):
    """The next position: stage + 1, wrapped to 0 after the last stage, where the phase
    flips: `%next = hopper.ring_advance %pos : !hopper.ring_position<stages = 4>`."""

    name = "hopper.ring_advance"

    POSITION: ClassVar = VarConstraint("POSITION", base(RingPositionType))

    position = operand_def(POSITION)
    """The position moved on."""
    result = result_def(Implied(source="POSITION"))
    """The position one stage on (of the position's type)."""

    assembly_format = _ON_POSITION

    def __init__(self, position: SSAValue):
        super().__init__(operands=[position], result_types=[position.type])


@irdl_op_definition
class RingAdvanceByOp(_NextPosition):
    """The position `count` stages on (an `index`: the phase flips once per wrap):
    `%next = hopper.ring_advance_by %pos, %count : !hopper.ring_position<stages = 4>`."""

    name = "hopper.ring_advance_by"

    POSITION: ClassVar = VarConstraint("POSITION", base(RingPositionType))

    position = operand_def(POSITION)
    """The position moved on."""
    count = operand_def(Implied(IndexType()))
    """Stages to move on (an `index`)."""
    result = result_def(Implied(source="POSITION"))
    """The position `count` stages on (of the position's type)."""

    assembly_format = "$position `,` $count attr-dict `:` custom<Typed>(type($position))"

    def __init__(self, position: SSAValue, count: SSAValue):
        super().__init__(operands=[position, count], result_types=[position.type])

    def verify_(self) -> None:
        super().verify_()
        typed_value(self, "the count", self.count, IndexType())


@irdl_op_definition
class RingSkipOp(_NextPosition):
    """The position past the K blocks of a loop from `lower` to `upper` by `step`
    (`ceil((upper - lower) / step)` stages on, none where `lower >= upper`): `%next =
    hopper.ring_skip %pos, %lb to %ub step %step : !hopper.ring_position<stages = 4>`. An
    op of the partitioned kernel (a ping-pong turn), which lower-schedule-to-hopper makes
    the trip count's arithmetic and a `hopper.ring_advance_by`."""

    name = "hopper.ring_skip"

    POSITION: ClassVar = VarConstraint("POSITION", base(RingPositionType))

    position = operand_def(POSITION)
    """The position moved on."""
    lower = operand_def(Implied(IndexType()))
    """The loop's lower bound (an `index`)."""
    upper = operand_def(Implied(IndexType()))
    """The loop's upper bound (an `index`)."""
    step = operand_def(Implied(IndexType()))
    """The loop's step (an `index`)."""
    result = result_def(Implied(source="POSITION"))
    """The position past the loop's K blocks (of the position's type)."""

    assembly_format = (
        "$position `,` $lower `to` $upper `step` $step attr-dict `:` custom<Typed>(type($position))"
    )

    def __init__(self, position: SSAValue, lower: SSAValue, upper: SSAValue, step: SSAValue):
        super().__init__(operands=[position, lower, upper, step], result_types=[position.type])

    def verify_(self) -> None:
        super().verify_()
        for what, value in (
            ("the lower bound", self.lower),
            ("the upper bound", self.upper),
            ("the step", self.step),
        ):
            typed_value(self, what, value, IndexType())


class _PositionPart(HopperValueOp):
    """Base of the ops that read one part of a position (a value of `PART_TYPE`)."""

    PART_TYPE: ClassVar[Attribute]
    """The type of the part read."""

    assembly_format = _ON_POSITION

    def __init__(self, position: SSAValue):
        super().__init__(operands=[position], result_types=[self.PART_TYPE])

    def verify_(self) -> None:
        typed_value(self, "the result", self.results[0], self.PART_TYPE)


@irdl_op_definition
class RingStageOp(_PositionPart):
    """The stage of a position, an `index`:
    `%stage = hopper.ring_stage %pos : !hopper.ring_position<stages = 4>`."""

    name = "hopper.ring_stage"
    PART_TYPE: ClassVar[Attribute] = IndexType()

    position = operand_def(RingPositionType)
    """The position read."""
    result = result_def(Implied(IndexType()))
    """Its stage, in [0, stages) (an `index`)."""


@irdl_op_definition
class RingPhaseOp(_PositionPart):
    """The phase parity of a position, an `i32` (0 or 1, the 32-bit parity that
    `hopper.mbarrier_wait` takes):
    `%phase = hopper.ring_phase %pos : !hopper.ring_position<stages = 4>`."""

    name = "hopper.ring_phase"
    PART_TYPE: ClassVar[Attribute] = i32

    position = operand_def(RingPositionType)
    """The position read."""
    result = result_def(Implied(i32))
    """Its phase parity, 0 or 1 (an `i32`)."""
