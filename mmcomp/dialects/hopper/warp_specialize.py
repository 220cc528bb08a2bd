"""`hopper.warp_specialize`: a kernel body split into the code of each warp role.

`partition-warp-roles` wraps the body of a materialized kernel in this op. Each region is
the program of one role, in the schedule's ops (index arithmetic, loops, tile ops):

    hopper.warp_specialize cooperative producer {
      // the persistent loop, its index arithmetic and the K loop's loads
    } consumer {
      // the whole kernel: the same loops, the K loop's mma, the epilogue, the stores
    }

- `producer`: what the producer warpgroup's elected thread runs: the mainloop loads
  (`sched.load_tile` with their ring slot, `hopper.slot`), the index arithmetic they need
  (with a grouped kernel's group lookups, `sched.group_tile` and `sched.group_rows`) and
  the loops and branches around them, and after `carry-ring-positions` the ring position
  they carry (`hopper.ring_start`, `hopper.ring_advance`, the loops' position iter_args).
  Nothing else: no accumulators, no stores, no epilogue;
- `consumer`: what the consumer warpgroups run: every op of the kernel. Its mainloop
  loads name the ring slot that the consumers wait for and read (the producer fills it).
  Under ping-pong, after `carry-ring-positions`, the turn on each tile is IR too: the
  tile counter (an `index` the loops over tiles carry), an `scf.if` marked `hopper.turn`
  on its parity and the consumer's index (`hopper.consumer_index`), whose then-block
  moves the position past the other consumer's tile and whose else-block holds the rest
  of this consumer's. Without warp specialization, thread 0's loads ahead of the
  consumers are IR too: a second ring position, `hopper.leader` (thread 0) and the loads
  in `scf.if`s marked `hopper.load_ahead`.

Both regions walk the same persistent tile sequence because each holds its own copy of
the index arithmetic. With `none` (no warp specialization) there is no producer region:
the consumer region is the whole kernel and its first thread also issues the loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import gpu, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, StringAttr, i1
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from mmcomp.dialects import sched
from mmcomp.dialects.hopper.base import HopperValueOp
from mmcomp.dialects.hopper.ring import RingAdvanceOp, RingPositionType, RingStartOp

SPECIALIZATIONS = ("cooperative", "pingpong", "none")
"""The warp specializations: two with a producer region, `none` without."""
SLOT_ATTR = "hopper.slot"
"""The op attribute giving a mainloop load its slot in a ring stage."""
LOAD_AHEAD_ATTR = "hopper.load_ahead"
"""The unit attribute of an `scf.if` that is thread 0's load of a K block ahead of the
consumers (without warp specialization): its then-block loads the K block at the load
position and advances it, its else-block returns the position unchanged."""
TURN_ATTR = "hopper.turn"
"""The unit attribute of the `scf.if` that is a ping-pong consumer's turn on a tile: its
then-block skips the other consumer's tile, its else-block is this consumer's."""
GRID_QUERIES = (gpu.BlockIdOp, gpu.GridDimOp)
"""The grid queries that index arithmetic starts from."""
GROUP_OPS = (sched.GroupTileOp, sched.GroupRowsOp)
"""A grouped kernel's lookups of its groups' rows, which both roles run."""
RING_OPS = (RingStartOp, RingAdvanceOp)
"""The ops of a role's ring position (carry-ring-positions), which both roles hold."""


def only_positions(values: Sequence[SSAValue]) -> bool:
    """Every value of `values` is a ring position (none at all included)."""
    return all(isinstance(value.type, RingPositionType) for value in values)


def is_index_arithmetic(op: Operation) -> bool:
    """An arith op on index values (i1 for comparisons), or a grid query."""
    if isinstance(op, GRID_QUERIES):
        return True
    if op.dialect_name() != "arith" or op.regions:
        return False
    types = [value.type for value in (*op.operands, *op.results)]
    return all(
        isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.bitwidth == 1) for t in types
    )


@irdl_op_definition
class ConsumerIndexOp(HopperValueOp):
    """The index of the consumer warpgroup that runs the consumer region (0 up to the
    consumer warpgroups), an `index`: `%consumer = hopper.consumer_index : index`."""

    name = "hopper.consumer_index"

    result = result_def(IndexType)
    """The consumer warpgroup's index (the lowering's value of it, made in the prologue)."""

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[IndexType()])


@irdl_op_definition
class LeaderOp(HopperValueOp):
    """Whether this thread is the CTA's thread 0 (which initializes the ring's barriers
    and, without warp specialization, issues the loads), an `i1`:
    `%leader = hopper.leader : i1`."""

    name = "hopper.leader"

    result = result_def(i1)
    """True in thread 0 (the lowering's comparison of it, made in the prologue)."""

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self):
        super().__init__(result_types=[i1])


@irdl_op_definition
class WarpSpecializeOp(IRDLOperation):
    """A kernel body as the programs of its warp roles: a producer and a consumer region."""

    name = "hopper.warp_specialize"
    ROLES: ClassVar[tuple[str, ...]] = ("producer", "consumer")

    specialization = prop_def(StringAttr)
    """`cooperative`, `pingpong` (with a producer region) or `none` (without)."""
    producer = region_def()
    """The producer's loads, their index arithmetic and loops (no block for `none`)."""
    consumer = region_def("single_block")
    """The consumers' program: the whole kernel."""

    traits = traits_def(NoTerminator())

    def __init__(self, specialization: str, producer: Region, consumer: Region):
        super().__init__(
            properties={"specialization": StringAttr(specialization)},
            regions=[producer, consumer],
        )

    @property
    def specialized(self) -> bool:
        """A producer warpgroup feeds the consumers."""
        return self.specialization.data != "none"

    def verify_(self) -> None:
        mode = self.specialization.data
        if mode not in SPECIALIZATIONS:
            raise VerifyException(
                f"{self.name}: specialization must be one of {', '.join(SPECIALIZATIONS)}, "
                f"found '{mode}'"
            )
        if not self.consumer.blocks or self.consumer.block.first_op is None:
            raise VerifyException(f"{self.name}: the consumer region is empty")
        if not self.specialized:
            if self.producer.blocks:
                raise VerifyException(
                    f"{self.name}: specialization none has no producer warpgroup, but the op "
                    "has a producer region"
                )
            return
        if len(self.producer.blocks) != 1:
            raise VerifyException(
                f"{self.name}: specialization {mode} needs a producer region of one block"
            )
        self._verify_producer()

    def _verify_producer(self) -> None:
        """The producer region holds only loads with a slot, index arithmetic and loops."""
        slots: list[int] = []
        for op in self.producer.walk():
            if isinstance(op, sched.LoadTileOp):
                slot = op.attributes.get(SLOT_ATTR)
                if not isinstance(slot, IntegerAttr):
                    raise VerifyException(
                        f"{self.name}: a load of the producer region has no {SLOT_ATTR}"
                    )
                slots.append(slot.value.data)
                continue
            if isinstance(op, scf.ForOp) and not only_positions(op.iter_args):
                raise VerifyException(
                    f"{self.name}: a loop of the producer region carries values other than "
                    "its ring position (iter_args); the producer holds no accumulators"
                )
            if isinstance(op, scf.IfOp) and not only_positions(op.results):
                raise VerifyException(
                    f"{self.name}: an scf.if of the producer region has results other than "
                    "its ring position"
                )
            if isinstance(op, (scf.ForOp, scf.IfOp, *GROUP_OPS, *RING_OPS)):
                continue
            if is_index_arithmetic(op):
                continue
            if isinstance(op, scf.YieldOp) and only_positions(op.operands):
                continue
            raise VerifyException(
                f"{self.name}: the producer region holds only mainloop loads, index "
                f"arithmetic, group lookups and loops, found {op.name}"
            )
        if not slots:
            raise VerifyException(f"{self.name}: the producer region loads nothing")
        if len(set(slots)) != len(slots):
            raise VerifyException(
                f"{self.name}: the producer region's loads repeat a {SLOT_ATTR}: {slots}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.specialization.data}")
        if self.specialized:
            printer.print_string(" producer ")
            printer.print_region(self.producer, print_entry_block_args=False)
        printer.print_string(" consumer ")
        printer.print_region(self.consumer, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> WarpSpecializeOp:
        pos = parser.pos
        mode = parser.parse_identifier(context_msg=" (cooperative, pingpong or none)")
        if mode not in SPECIALIZATIONS:
            parser.raise_error(
                f"expected a warp specialization ({', '.join(SPECIALIZATIONS)}), found '{mode}'",
                pos,
            )
        producer = Region()
        if mode != "none":
            parser.parse_keyword("producer")
            producer = _one_block(parser.parse_region())
        elif parser.parse_optional_keyword("producer") is not None:
            parser.raise_error("specialization none has no producer region")
        parser.parse_keyword("consumer")
        consumer = _one_block(parser.parse_region())
        op = cls(mode, producer, consumer)
        attributes = parser.parse_optional_attr_dict()
        op.attributes.update(attributes)
        return op


def _one_block(region: Region) -> Region:
    """A parsed region, given an empty block when it has none."""
    if not region.blocks:
        region.add_block(Block())
    return region
